//! What the workers of a load tell the prefetch thread
//! ([`prefetch`](crate::prefetch)): the offsets of the pieces they start.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};

/// Process-wide: pieces started by every load, and the furthest offset one
/// started at, for a progress bar polled from outside (the CLI loads one
/// image at a time). One relaxed add and one relaxed max per piece.
static PIECES_STARTED: AtomicU64 = AtomicU64::new(0);
static FRONT: AtomicU64 = AtomicU64::new(0);

/// How far the loads of this process have got: see [`Progress::front`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Front {
    /// Pieces (sub-sections) started.
    pub pieces: u64,
    /// The furthest file offset a piece started at.
    pub offset: u64,
}

/// What the workers tell the prefetch thread: the offsets of the pieces they
/// start. Inactive (one relaxed load per piece) when no prefetch thread runs.
///
/// The thread is woken only for a piece that starts at or past `wake_from`
/// or before `wake_below`, two offsets it sets after each hint: the front
/// of the workers has moved a step since, or jumped back. Pieces of a few
/// KiB (NAME_INDEX's) would otherwise wake it thousands of times for
/// nothing to ask. Both start at 0: until the thread sets them, every
/// piece wakes it.
#[derive(Default)]
pub struct Progress {
    active: AtomicBool,
    wake_from: AtomicU64,
    wake_below: AtomicU64,
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    started: Vec<u64>,
    done: bool,
}

impl Progress {
    /// Pieces started by the loads of this process since the last
    /// [`reset_front`](Self::reset_front), and the furthest offset one
    /// started at: what a progress bar of a load shows (the pieces of the
    /// parallel phases; a serial load reports none).
    pub fn front() -> Front {
        Front {
            pieces: PIECES_STARTED.load(Ordering::Relaxed),
            offset: FRONT.load(Ordering::Relaxed),
        }
    }

    /// Starts [`front`](Self::front) again from nothing, before a load.
    pub fn reset_front() {
        PIECES_STARTED.store(0, Ordering::Relaxed);
        FRONT.store(0, Ordering::Relaxed);
    }

    /// A prefetch thread listens from now on.
    pub(crate) fn activate(&self) {
        self.active.store(true, Ordering::Relaxed);
    }

    /// A worker starts the piece stored at `offset`.
    pub(crate) fn started(&self, offset: u64) {
        PIECES_STARTED.fetch_add(1, Ordering::Relaxed);
        FRONT.fetch_max(offset, Ordering::Relaxed);
        if !self.active.load(Ordering::Relaxed) {
            return;
        }
        let ahead = offset >= self.wake_from.load(Ordering::Relaxed);
        let back = offset < self.wake_below.load(Ordering::Relaxed);
        if !(ahead || back) {
            return;
        }
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.started.push(offset);
        self.wake.notify_one();
    }

    /// The load is over (or failed): the prefetch thread stops after the
    /// hint it is giving.
    pub(crate) fn finish(&self) {
        self.active.store(false, Ordering::Relaxed);
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.done = true;
        self.wake.notify_one();
    }

    /// From now on, wake the thread only for a piece starting at or past
    /// `from`, or before `below`.
    pub(crate) fn wake_outside(&self, below: u64, from: u64) {
        self.wake_below.store(below, Ordering::Relaxed);
        self.wake_from.store(from, Ordering::Relaxed);
    }

    /// The offsets started since the last call; `None` once finished.
    pub(crate) fn wait(&self) -> Option<Vec<u64>> {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        while s.started.is_empty() && !s.done {
            s = self.wake.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
        if s.done {
            return None;
        }
        Some(std::mem::take(&mut s.started))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_pieces_outside_the_thresholds_wake_the_thread() {
        let p = Progress::default();
        // Inactive: nothing is recorded.
        p.started(5);
        p.activate();
        // Before any threshold is set, every piece counts.
        p.started(10);
        p.started(20);
        assert_eq!(p.wait(), Some(vec![10, 20]));
        p.wake_outside(100, 200);
        for o in [100, 150, 199] {
            p.started(o);
        }
        // At or past `from`, and before `below`.
        p.started(200);
        p.started(99);
        assert_eq!(p.wait(), Some(vec![200, 99]));
        p.finish();
        assert_eq!(p.wait(), None);
        // Finished: inactive again.
        p.started(1000);
        assert!(p.state.lock().unwrap().started.is_empty());
    }

    #[test]
    fn the_front_counts_every_started_piece_active_or_not() {
        // Process-wide: other tests' pieces may add to it, never take away.
        let p = Progress::default();
        p.started(1 << 40);
        p.started(7);
        let f = Progress::front();
        assert!(f.pieces >= 2);
        assert!(f.offset >= 1 << 40);
    }
}
