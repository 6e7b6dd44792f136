//! The pieces of a plain (uncompressed) Hadoop image read whole on the
//! pool, in blocks of [`BLOCK`] bytes that any worker takes: Hadoop writes
//! few sub-sections (12 by default), so reading them one per worker leaves
//! one worker reading the last alone, for tens of milliseconds at a few
//! million inodes. A compressed piece is one stream, inflated from its
//! start: those are read by the worker that decodes them.

use super::file::HdfsFile;
use crate::error::LoadError;
use crate::trace::in_task;
use nsimage_format::{Location, SubSectionInfo};
use rayon::prelude::*;

/// The bytes one read takes.
pub(crate) const BLOCK: usize = 4 << 20;

/// The bytes of each of `pieces`, read in blocks on `pool` (their lengths
/// were checked against the file by the summary's decoder).
pub(crate) fn read_plain(
    f: &HdfsFile,
    pool: &rayon::ThreadPool,
    pieces: &[(SubSectionInfo, Location)],
) -> Result<Vec<Vec<u8>>, LoadError> {
    let mut bufs = Vec::with_capacity(pieces.len());
    for (p, at) in pieces {
        let n = usize::try_from(p.length).map_err(|_| {
            f.corrupt(
                at.clone(),
                format!("{} bytes do not fit in memory", p.length),
            )
        })?;
        // Zeroed pages are had from the system untouched: each worker
        // faults in the pages its reads fill.
        bufs.push(vec![0u8; n]);
    }
    let mut blocks: Vec<(u64, &Location, &mut [u8])> = Vec::new();
    for (buf, (p, at)) in bufs.iter_mut().zip(pieces) {
        let mut offset = p.offset;
        for b in buf.chunks_mut(BLOCK) {
            let len = b.len() as u64;
            blocks.push((offset, at, b));
            offset = offset.saturating_add(len);
        }
    }
    let timeline = f.timeline();
    // Every block read, so that a failure reported is the first in the
    // file, whichever worker met it first.
    let results: Vec<Result<(), LoadError>> = pool.install(|| {
        blocks
            .into_par_iter()
            .with_max_len(1)
            .map(|(offset, at, b)| {
                in_task(timeline, "read a block", || f.read_exact(offset, b, at))
            })
            .collect()
    });
    results.into_iter().collect::<Result<(), _>>()?;
    Ok(bufs)
}
