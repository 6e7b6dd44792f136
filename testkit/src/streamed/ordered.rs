//! Work done in parallel pieces and consumed in piece order, in bounded
//! memory.

use crossbeam_channel::{bounded, Sender};
use parking_lot::Mutex;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Batches of one piece waiting for the writer, at most.
const QUEUE: usize = 4;

/// Runs `produce(piece, emit)` for pieces `0..pieces` on `threads`
/// threads, and hands what they emit to `consume` in piece order, each
/// piece's items in the order emitted. At most [`QUEUE`] items of a piece
/// wait; `emit` returns `false` once `consume` has failed (the producer
/// then stops early, and no worker takes another piece).
///
/// # Errors
/// The first error of `consume`; an error naming the piece whose producer
/// stopped before it ended it (it panicked: the panic is then raised when
/// the workers are joined).
pub(super) fn ordered<T: Send>(
    pieces: usize,
    threads: usize,
    produce: impl Fn(usize, &mut dyn FnMut(T) -> bool) + Sync,
    mut consume: impl FnMut(T) -> io::Result<()>,
) -> io::Result<()> {
    // `None` ends a piece. Each worker takes its piece's sender, so that a
    // producer that panics drops it and the consumer sees the piece cut
    // short instead of waiting for it forever.
    type Queue<T> = (Sender<Option<T>>, crossbeam_channel::Receiver<Option<T>>);
    let (senders, receivers): (Vec<_>, Vec<_>) =
        (0..pieces).map(|_| -> Queue<T> { bounded(QUEUE) }).unzip();
    let senders: Vec<Mutex<Option<Sender<Option<T>>>>> =
        senders.into_iter().map(|s| Mutex::new(Some(s))).collect();
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let p = next.fetch_add(1, Ordering::Relaxed);
                    let Some(tx) = senders.get(p).and_then(|s| s.lock().take()) else {
                        break;
                    };
                    produce(p, &mut |item| {
                        !stop.load(Ordering::Relaxed) && tx.send(Some(item)).is_ok()
                    });
                    let _ = tx.send(None);
                }
            });
        }
        // A failed `consume` stops the workers and drops every receiver
        // left, so that their sends fail.
        let result = (|| {
            for (p, rx) in receivers.into_iter().enumerate() {
                loop {
                    match rx.recv() {
                        Ok(Some(item)) => consume(item)?,
                        Ok(None) => break,
                        Err(_) => {
                            return Err(io::Error::other(format!(
                                "the worker drawing piece {p} stopped before its end"
                            )))
                        }
                    }
                }
            }
            Ok(())
        })();
        if result.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        result
    })
}
