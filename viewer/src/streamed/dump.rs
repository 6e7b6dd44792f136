//! `dump` streamed from an image (issue 28): every inode as OIV XML, OIV
//! Delimited text or JSON lines with the formatters of `crate::dump`, read
//! from the image's tree and INODE pieces in bounded memory, never
//! building the namespace; XML's later sections are `dump_xml.rs`'s.

use super::{pool, write_in_order, Fallback};
use crate::dump::formatter::Head;
use crate::dump::row::{Row, Streamed};
use crate::dump::scratch::Scratch;
use crate::dump::xml::Xml;
use crate::dump::{formatter, DumpFormat, DumpOptions, DumpStats};
use crate::error::ViewError;
use nsimage_loader::skeleton::Skeleton;
use nsimage_loader::Streamable;
use std::io::Write;
use std::path::Path;

/// Dumps every inode of the image `src` in id order, streamed (see
/// [`nsimage_loader::skeleton`]): its tree read and checked on `opts.threads`
/// workers, then its INODE pieces formatted a batch at a time (two pieces
/// per worker) while the batch before is written, in order (XML then
/// writes INODE_DIR's lists, read in file order, and the files under
/// construction, from the INODE pieces read again when there are any).
/// The same bytes as [`crate::dump::dump`] of the loaded namespace, for any thread
/// count. [`Fallback::Unstreamable`] (nothing written) for an image the
/// stream cannot take, and for XML of an image whose lists are not stored in Hadoop's order
/// ([`Skeleton::lists_in_hadoop_order`]): the caller loads it whole.
///
/// # Errors
/// As [`crate::dump::dump`]; anything a load refuses but the children's name order
/// (see [`Skeleton`]).
pub fn dump_streamed(
    src: &Streamable,
    opts: &DumpOptions,
    out: &mut (dyn Write + Send),
    out_name: &Path,
) -> Result<Result<DumpStats, Fallback>, ViewError> {
    let io = |source: std::io::Error| ViewError::Io {
        path: out_name.to_path_buf(),
        source,
    };
    let f = formatter(opts);
    let pool = pool(opts.threads)?;
    let Ok(skeleton) = Skeleton::build(src, Some(&pool))? else {
        return Ok(Err(Fallback::Unstreamable));
    };
    let mut stats = DumpStats {
        threads: pool.current_num_threads(),
        ..DumpStats::default()
    };
    if opts.format == DumpFormat::Xml {
        let xml = Xml {
            format_version: opts.format_version,
        };
        if !skeleton.lists_in_hadoop_order() {
            return Ok(Err(Fallback::Unstreamable));
        }
        super::dump_xml::dump(&xml, &skeleton, src, &pool, out, out_name, &mut stats)?;
        return Ok(Ok(stats));
    }
    if !f.streams() {
        return Ok(Err(Fallback::Unstreamable));
    }
    let head_of = Head {
        info: &skeleton.info,
        inodes: skeleton.inode_count(),
    };
    let mut head = Vec::new();
    f.begin(&head_of, 0, &mut head);
    out.write_all(&head).map_err(io)?;
    stats.bytes += head.len() as u64;
    let written = write_in_order(
        &skeleton,
        src,
        &pool,
        out,
        out_name,
        Scratch::new,
        |(work, scratch), i, buf| {
            let mut n = 0u64;
            let rules = skeleton.for_each_in_piece(src, i, work, |node, parent, _| {
                let row = Streamed::new(node, parent, &skeleton);
                f.inode(0, &Row::Stream(&row), scratch, buf);
                n += 1;
                Ok(())
            })?;
            Ok((n, rules))
        },
    )?;
    stats.bytes += written.bytes;
    stats.rows += written.rows;
    let mut tail = Vec::new();
    f.end(0, &mut tail);
    out.write_all(&tail).map_err(io)?;
    stats.bytes += tail.len() as u64;
    out.flush().map_err(io)?;
    Ok(Ok(stats))
}
