//! Work done in parallel pieces and consumed in piece order, in bounded
//! memory.

use crossbeam_channel::{bounded, Sender};
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Batches of one piece waiting for the writer, at most.
const QUEUE: usize = 4;

/// Runs `produce(piece, emit)` for pieces `0..pieces` on `threads`
/// threads, and hands what they emit to `consume` in piece order, each
/// piece's items in the order emitted. At most [`QUEUE`] items of a piece
/// wait; `emit` returns `false` once `consume` has failed (the producer
/// then stops early).
pub(super) fn ordered<T: Send>(
    pieces: usize,
    threads: usize,
    produce: impl Fn(usize, &mut dyn FnMut(T) -> bool) + Sync,
    mut consume: impl FnMut(T) -> io::Result<()>,
) -> io::Result<()> {
    // `None` ends a piece: the senders live as long as the workers.
    type Queue<T> = (Sender<Option<T>>, crossbeam_channel::Receiver<Option<T>>);
    let (senders, receivers): (Vec<_>, Vec<_>) =
        (0..pieces).map(|_| -> Queue<T> { bounded(QUEUE) }).unzip();
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| loop {
                let p = next.fetch_add(1, Ordering::Relaxed);
                let Some(tx) = senders.get(p) else { break };
                produce(p, &mut |item| tx.send(Some(item)).is_ok());
                let _ = tx.send(None);
            });
        }
        // A failed `consume` drops every receiver left, so that the
        // producers' sends fail and they stop.
        for rx in receivers {
            while let Ok(Some(item)) = rx.recv() {
                consume(item)?;
            }
        }
        Ok(())
    })
}
