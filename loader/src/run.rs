//! Runs one function over the pieces of a section: one task per piece on a
//! thread pool (work-stealing), or in order on this thread; and builds
//! that pool.

use crate::error::LoadError;
use crate::progress::Progress;
use nsimage_format::{Location, SubSectionInfo};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// Runs `f` over every piece, on `pool` when given (one task per piece,
/// work-stealing) or in order on this thread. `init` makes each worker's
/// scratch. The first failure stops the workers from starting new pieces;
/// the error of the lowest-numbered failed piece is returned.
pub(crate) fn run_pieces<T: Send, S>(
    pool: Option<&rayon::ThreadPool>,
    pieces: &[(SubSectionInfo, Location)],
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(&mut S, usize, &SubSectionInfo, &Location) -> Result<T, LoadError> + Sync + Send,
) -> Result<Vec<T>, LoadError> {
    run_pieces_tracked(&Progress::default(), pool, pieces, init, f)
}

/// [`run_pieces`], telling `progress` (the prefetch thread) the offset of
/// each piece as its worker starts it.
pub(crate) fn run_pieces_tracked<T: Send, S>(
    progress: &Progress,
    pool: Option<&rayon::ThreadPool>,
    pieces: &[(SubSectionInfo, Location)],
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(&mut S, usize, &SubSectionInfo, &Location) -> Result<T, LoadError> + Sync + Send,
) -> Result<Vec<T>, LoadError> {
    let f = |s: &mut S, i: usize, p: &SubSectionInfo, at: &Location| {
        progress.started(p.offset);
        f(s, i, p, at)
    };
    let Some(pool) = pool else {
        let mut scratch = init();
        return pieces
            .iter()
            .enumerate()
            .map(|(i, (p, at))| f(&mut scratch, i, p, at))
            .collect();
    };
    let stop = AtomicBool::new(false);
    let results: Vec<Option<Result<T, LoadError>>> = pool.install(|| {
        pieces
            .par_iter()
            .with_max_len(1)
            .enumerate()
            .map_init(&init, |scratch, (i, (p, at))| {
                if stop.load(Ordering::Relaxed) {
                    return None;
                }
                let r = f(scratch, i, p, at);
                if r.is_err() {
                    stop.store(true, Ordering::Relaxed);
                }
                Some(r)
            })
            .collect()
    });
    first_error(results)
}

/// The results in piece order, or the first error in piece order.
fn first_error<T>(results: Vec<Option<Result<T, LoadError>>>) -> Result<Vec<T>, LoadError> {
    let mut out = Vec::with_capacity(results.len());
    let mut skipped = false;
    for r in results {
        match r {
            Some(Ok(v)) => out.push(v),
            Some(Err(e)) => return Err(e),
            None => skipped = true,
        }
    }
    debug_assert!(!skipped, "pieces are only skipped after an error");
    Ok(out)
}

/// A pool of `threads` workers, or none for the serial path.
pub(crate) fn pool(
    path: &std::path::Path,
    threads: usize,
) -> Result<Option<rayon::ThreadPool>, LoadError> {
    if threads <= 1 {
        return Ok(None);
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("nsimage-load-{i}"))
        .build()
        .map(Some)
        .map_err(|e| LoadError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::other(e),
        })
}
