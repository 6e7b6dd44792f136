//! The indexed path (mapped or bulk reads), serial or parallel: NS_INFO and
//! STRING_TABLE first, then the INODE phase (`inode_phase`), then the
//! INODE_DIR phase (`dir_phase`, which checks the optional sections too),
//! which needs every inode id. Pieces are the
//! unit of work (each worker takes the next one in file order), so balance
//! does not depend on how many sub-sections the writer chose; without a pool the same code
//! runs on this thread: the serial path.

use crate::decode;
use crate::dir_phase::dir_phase;
use crate::error::LoadError;
use crate::inode_phase::inode_phase;
use crate::sections::only_piece;
use crate::source::ImageSource;
use crate::stats::LoadStats;
use crate::trace::in_phase;
use nsimage_format::SectionKind;
use nsimage_namespace::{Interned, Namespace, NsInfo, StringTable};

/// Loads the namespace of `src` through its index, on `pool` when given.
pub(crate) fn load_indexed(
    src: &ImageSource,
    pool: Option<&rayon::ThreadPool>,
    stats: &mut LoadStats,
) -> Result<Namespace, LoadError> {
    let timeline = src.timeline();
    let (info, strings) = in_phase(timeline, "small sections", || small_sections(src))?;
    let builder = inode_phase(src, pool, info, Interned::new(strings), stats)?;
    // The optional sections a writer puts after INODE (NAME_RUNS) are
    // checked in the INODE_DIR step, in file order with its pieces: the
    // prefetch thread follows one front, and a cold load does not read
    // them at another place of the disk.
    dir_phase(src, pool, builder, stats)
}

/// The serial indexed path over an open source (used by `verify`).
pub(crate) fn load_serial(src: &ImageSource) -> Result<Namespace, LoadError> {
    load_indexed(src, None, &mut LoadStats::default())
}

/// NS_INFO and STRING_TABLE, each one piece.
pub(crate) fn small_sections(src: &ImageSource) -> Result<(NsInfo, StringTable), LoadError> {
    let fmt = |e| LoadError::from_format(src.path(), e);
    let mut buf = crate::source::PieceBuf::default();
    let start = src.timeline().map(|t| t.now());
    let record = |p, at| {
        if let (Some(t), Some(start)) = (src.timeline(), start) {
            t.record(crate::trace::piece(p, at), start);
        }
    };
    let info = {
        let (p, at) = only_piece(src, SectionKind::NS_INFO)?;
        let info = decode::ns_info(src.piece(&p, &at, &mut buf)?, &p, &at).map_err(fmt)?;
        record(&p, &at);
        info
    };
    let start = src.timeline().map(|t| t.now());
    let record = |p, at| {
        if let (Some(t), Some(start)) = (src.timeline(), start) {
            t.record(crate::trace::piece(p, at), start);
        }
    };
    let strings = {
        let (p, at) = only_piece(src, SectionKind::STRING_TABLE)?;
        let strings = decode::strings(src.piece(&p, &at, &mut buf)?, &p, &at).map_err(fmt)?;
        record(&p, &at);
        strings
    };
    Ok((info, strings))
}
