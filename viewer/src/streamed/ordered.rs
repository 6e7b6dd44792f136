//! [`write_in_order`]: text made from each INODE piece on a pool, written
//! in file order while the next pieces are made, so the output is the
//! same bytes for any thread count and only two batches of pieces' text
//! are held at once.

use crate::error::ViewError;
use nsimage_loader::skeleton::{Skeleton, Worker};
use nsimage_namespace::BlockRules;
use rayon::prelude::*;
use std::io::Write;
use std::path::Path;

/// Text of a batch of pieces, at most (one batch is made while the one
/// before is written).
const TEXT_IN_FLIGHT: usize = 12 << 20;

/// What [`write_in_order`] wrote.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Written {
    pub(crate) bytes: u64,
    pub(crate) rows: u64,
}

/// Makes the text of every INODE piece of `skeleton` with `piece(state,
/// i, buf)` (which appends piece `i`'s text to `buf` and returns its rows
/// and what the block rules need of it) on `pool`, each worker with its
/// own state from `init`, and writes the pieces' text to `out` in file
/// order. A batch is two pieces per worker while their text is small next
/// to [`TEXT_IN_FLIGHT`], down to one per worker for text that is large,
/// judged from the batch before. The block rules are checked once every
/// piece is read, after the text (a file given with -o is never left).
///
/// # Errors
/// The first piece's error in file order, whatever the thread count; a
/// write error, naming `out_name`; a broken block rule.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_in_order<S: Send>(
    skeleton: &Skeleton,
    src: &nsimage_loader::Streamable,
    pool: &rayon::ThreadPool,
    out: &mut (dyn Write + Send),
    out_name: &Path,
    init: impl Fn() -> S + Sync,
    piece: impl Fn(&mut (Worker, S), usize, &mut Vec<u8>) -> Result<(u64, BlockRules), ViewError> + Sync,
) -> Result<Written, ViewError> {
    let io = |source: std::io::Error| ViewError::Io {
        path: out_name.to_path_buf(),
        source,
    };
    let threads = pool.current_num_threads().max(1);
    let mut batch = threads;
    let mut done = Written::default();
    // Text buffers, reused from batch to batch: two batches' worth are
    // allocated once, not one per piece (freed buffers of several MiB
    // left the allocator's arenas holding far more than the text).
    let spare: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());
    let recycle = |bufs: Vec<(Vec<u8>, u64)>| {
        if let Ok(mut s) = spare.lock() {
            s.extend(bufs.into_iter().map(|(mut b, _)| {
                b.clear();
                b
            }));
        }
    };
    // Each piece's text sized from its bytes, at the ratio of text to
    // record bytes of the batch before (half again more at first), so that
    // a buffer is not doubled past what it holds.
    let mut per_kib = 1536u64;
    let make = |per_kib: u64,
                state: &mut (Worker, S),
                i: usize|
     -> Result<((Vec<u8>, u64), BlockRules), ViewError> {
        let bytes = skeleton.piece_bytes(i).min(64 << 20);
        let hint = bytes.saturating_mul(per_kib) / 1024 + (64 << 10);
        let mut buf = spare
            .lock()
            .ok()
            .and_then(|mut s| s.pop())
            .unwrap_or_default();
        buf.reserve(usize::try_from(hint).unwrap_or(0));
        let (rows, rules) = piece(state, i, &mut buf)?;
        Ok(((buf, rows), rules))
    };
    let mut rules = BlockRules::default();
    pool.install(|| -> Result<(), ViewError> {
        let mut pending: Vec<(Vec<u8>, u64)> = Vec::new();
        let mut start = 0usize;
        while start < skeleton.piece_count() {
            let end = start.saturating_add(batch).min(skeleton.piece_count());
            let group: Vec<usize> = (start..end).collect();
            start = end;
            let written_before = std::mem::take(&mut pending);
            let (written, next) = rayon::join(
                || {
                    let w = write_all(out, &written_before);
                    recycle(written_before);
                    w
                },
                || {
                    group
                        .par_iter()
                        .map_init(
                            || (skeleton.worker(), init()),
                            |state, &i| make(per_kib, state, i),
                        )
                        .collect::<Vec<_>>()
                        // The first error in file order, whatever the
                        // thread count.
                        .into_iter()
                        .collect::<Result<Vec<_>, ViewError>>()
                },
            );
            done.add(written.map_err(io)?);
            pending = Vec::with_capacity(group.len());
            for (text, r) in next? {
                pending.push(text);
                rules.merge(r);
            }
            let text: usize = pending.iter().map(|(t, _)| t.len()).sum();
            let bytes: u64 = group.iter().map(|&i| skeleton.piece_bytes(i)).sum();
            // A quarter more than the ratio seen: pieces vary.
            if let Some(r) = (text as u64).saturating_mul(1280).checked_div(bytes) {
                per_kib = r;
            }
            let per_piece = text / pending.len().max(1);
            batch = (TEXT_IN_FLIGHT / per_piece.max(1)).clamp(threads, threads * 2);
        }
        done.add(write_all(out, &pending).map_err(io)?);
        Ok(())
    })?;
    skeleton.check_blocks(src, &rules)?;
    Ok(done)
}

impl Written {
    fn add(&mut self, o: Written) {
        self.bytes = self.bytes.saturating_add(o.bytes);
        self.rows = self.rows.saturating_add(o.rows);
    }
}

/// Writes pieces' text in order.
fn write_all(out: &mut (dyn Write + Send), bufs: &[(Vec<u8>, u64)]) -> std::io::Result<Written> {
    let mut w = Written::default();
    for (b, n) in bufs {
        out.write_all(b)?;
        w.add(Written {
            bytes: b.len() as u64,
            rows: *n,
        });
    }
    Ok(w)
}
