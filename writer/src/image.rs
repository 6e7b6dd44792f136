//! [`write_image`]: a namespace written through [`StreamWriter`], its
//! records encoded in parallel batches over slot ranges while the batches
//! before them are written, each section measured first when it is cut.

use crate::encode::{self, Encoded, Size};
use crate::options::WriteOptions;
use crate::sections::ImageSummary;
use crate::stream::StreamWriter;
use crate::strings::StringMap;
use nsimage_format::hdfs::SnapshotCarry;
use nsimage_namespace::{Namespace, Slot};
use std::io::{self, Write};

/// The slot ranges encoded by one parallel task each.
fn batches(ns: &Namespace, opts: &WriteOptions) -> Vec<std::ops::Range<Slot>> {
    let n = ns.slot_count();
    let batch = u32::try_from(opts.batch_inodes.max(1)).unwrap_or(u32::MAX);
    (0..n.div_ceil(batch))
        .map(|b| b * batch..b.saturating_add(1).saturating_mul(batch).min(n))
        .collect()
}

/// Measures a section before it is written, in parallel over `ranges`.
fn measure(
    ranges: &[std::ops::Range<Slot>],
    size: impl Fn(std::ops::Range<Slot>) -> Size + Sync,
) -> Size {
    use rayon::prelude::*;
    ranges
        .par_iter()
        .map(|r| size(r.clone()))
        .reduce(Size::default, |a, b| a + b)
}

/// Writes records produced by `encode` over slot ranges into `w`'s open
/// section, encoding the next window of batches while the current one is
/// written.
fn write_batched<W: Write + Send>(
    w: &mut StreamWriter<W>,
    ranges: &[std::ops::Range<Slot>],
    encode: impl Fn(std::ops::Range<Slot>) -> Encoded + Sync,
) -> io::Result<()> {
    use rayon::prelude::*;
    let window = 4 * rayon::current_num_threads().max(1);
    let encode_window = |w: &[std::ops::Range<Slot>]| -> Vec<Encoded> {
        w.par_iter().map(|r| encode(r.clone())).collect()
    };
    let mut chunks = ranges.chunks(window);
    let mut ready = chunks.next().map(encode_window).unwrap_or_default();
    loop {
        let next = chunks.next();
        let (written, upcoming) = rayon::join(
            || -> io::Result<()> {
                for e in &ready {
                    w.put(e)?;
                }
                Ok(())
            },
            || next.map(encode_window),
        );
        written?;
        match upcoming {
            Some(u) => ready = u,
            None => return Ok(()),
        }
    }
}

/// Writes `ns` as an image to `out` and returns its index and size.
pub fn write_image<W: Write + Send>(
    ns: &Namespace,
    out: W,
    opts: &WriteOptions,
) -> io::Result<ImageSummary> {
    write_image_with_carry(ns, out, opts, None)
}

/// [`write_image`], with the snapshots of the Hadoop image `ns` came from
/// (`carry`, see [`SnapshotCarry`]) kept in the optional HDFS_SNAPSHOTS
/// section after INODE_DIR (FORMAT.md, "HDFS_SNAPSHOTS"), for a later
/// conversion back to Hadoop. With `None` it is `write_image`.
pub fn write_image_with_carry<W: Write + Send>(
    ns: &Namespace,
    out: W,
    opts: &WriteOptions,
    carry: Option<&SnapshotCarry>,
) -> io::Result<ImageSummary> {
    // The canonical string table: only the strings live inodes use, sorted
    // by bytes; INODE records carry the ids it gives them. The same pass
    // counts the live inodes.
    let ranges = batches(ns, opts);
    let (strings, live) = StringMap::of(ns, &ranges);
    let mut w = StreamWriter::new(out, opts, ns.info(), live, strings.strings(ns))?;

    // The layout depends on the namespace alone: whether to cut on its
    // number of live inodes, the target on each section's exact size. The
    // sizes are measured only when the sections are cut; INODE_DIR's is
    // measured while INODE is written.
    let split = w.split();
    let plan = |size: &(dyn Fn(std::ops::Range<Slot>) -> Size + Sync)| {
        split.then(|| measure(&ranges, size))
    };
    w.begin_inodes(plan(&|r| encode::inode_size(ns, &strings, r)))?;
    let plan_dirs = || plan(&|r| encode::dir_size(ns, r));
    let (written, dir_size) = rayon::join(
        || write_batched(&mut w, &ranges, |r| encode::inodes(ns, &strings, r)),
        plan_dirs,
    );
    written?;
    // The optional one-path lookup index, NAME_RUNS (NAME_INDEX in older
    // images), between INODE and INODE_DIR so that INODE_DIR stays the
    // last section.
    if w.begin_name_runs()? {
        write_batched(&mut w, &ranges, |r| {
            if opts.legacy_name_index {
                encode::names(ns, r)
            } else {
                encode::name_runs(ns, r)
            }
        })?;
    }
    w.begin_dirs(dir_size)?;
    write_batched(&mut w, &ranges, |r| encode::dirs(ns, r))?;
    w.finish(carry)
}
