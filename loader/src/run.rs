//! Runs one function over the pieces of a section: on a thread pool whose
//! workers take the pieces in file order, or in order on this thread; and
//! builds that pool.

use crate::error::LoadError;
use crate::progress::Progress;
use crate::trace::{Timeline, What};
use nsimage_format::{Location, SubSectionInfo};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// What the pieces of a step report to as they run: the prefetch thread
/// (each piece's offset as it starts) and the load's timeline (each
/// piece's span; and, when tracing, each worker's wait for the step's
/// end).
#[derive(Clone, Copy, Default)]
pub(crate) struct Tracked<'a> {
    pub(crate) progress: Option<&'a Progress>,
    pub(crate) timeline: Option<&'a Timeline>,
    /// The pieces' spans leave the timeline's progress as it is (a step
    /// that advances it itself: [`Timeline::advance`]).
    pub(crate) quiet: bool,
}

/// Runs `f` over every piece, on `pool` when given (every worker taking
/// the next piece in file order until none is left) or in order on this
/// thread. `init` makes each worker's scratch. The first failure stops the
/// workers from starting new pieces; since pieces are handed out in order,
/// every piece before a failed one has run, and the error of the
/// lowest-numbered failed piece is returned.
pub(crate) fn run_pieces<T: Send, S>(
    pool: Option<&rayon::ThreadPool>,
    pieces: &[(SubSectionInfo, Location)],
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(&mut S, usize, &SubSectionInfo, &Location) -> Result<T, LoadError> + Sync + Send,
) -> Result<Vec<T>, LoadError> {
    run_pieces_tracked(Tracked::default(), pool, pieces, init, f)
}

/// [`run_pieces`], telling `tracked` each piece as its worker runs it.
pub(crate) fn run_pieces_tracked<T: Send, S>(
    tracked: Tracked<'_>,
    pool: Option<&rayon::ThreadPool>,
    pieces: &[(SubSectionInfo, Location)],
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(&mut S, usize, &SubSectionInfo, &Location) -> Result<T, LoadError> + Sync + Send,
) -> Result<Vec<T>, LoadError> {
    let f = |s: &mut S, i: usize, p: &SubSectionInfo, at: &Location| {
        if let Some(progress) = tracked.progress {
            progress.started(p.offset);
        }
        let Some(timeline) = tracked.timeline else {
            return f(s, i, p, at);
        };
        let start = timeline.now();
        let r = f(s, i, p, at);
        if tracked.quiet {
            timeline.record_quiet(crate::trace::piece(p, at), start);
        } else {
            timeline.record(crate::trace::piece(p, at), start);
        }
        r
    };
    let Some(pool) = pool else {
        let mut scratch = init();
        return pieces
            .iter()
            .enumerate()
            .map(|(i, (p, at))| f(&mut scratch, i, p, at))
            .collect();
    };
    // One shared counter hands out pieces in file order: the workers read
    // the file as one front moving forward (what the kernel's read-ahead
    // and the prefetch thread's window serve best on a cold cache), and a
    // worker that finishes early takes the next piece (balance as good as
    // work stealing's, for pieces of a few MiB).
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    type Ran<T> = Vec<(usize, Result<T, LoadError>)>;
    type Done = Option<(crate::trace::Track, std::time::Duration)>;
    let per_worker: Vec<(Ran<T>, Done)> = pool.broadcast(|_| {
        let mut scratch = init();
        let mut out = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some((p, at)) = pieces.get(i) else { break };
            let r = f(&mut scratch, i, p, at);
            if r.is_err() {
                stop.store(true, Ordering::Relaxed);
            }
            out.push((i, r));
        }
        let done = tracked.timeline.map(|t| (Timeline::track(), t.now()));
        (out, done)
    });
    // When tracing, each worker's wait for the slowest one.
    if let Some(t) = tracked.timeline.filter(|t| t.detailed()) {
        let end = t.now();
        for (track, done) in per_worker.iter().filter_map(|w| w.1) {
            t.record_on(track, What::Wait("the step's last piece"), done, end);
        }
    }
    let per_worker = per_worker.into_iter().map(|w| w.0);
    let mut results: Vec<Option<Result<T, LoadError>>> = Vec::new();
    results.resize_with(pieces.len(), || None);
    for (i, r) in per_worker.flatten() {
        if let Some(slot) = results.get_mut(i) {
            *slot = Some(r);
        }
    }
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
