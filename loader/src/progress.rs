//! What the workers of a load tell the prefetch thread
//! ([`prefetch`](crate::prefetch)): the offsets of the pieces they start.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};

/// What the workers tell the prefetch thread: the offsets of the pieces they
/// start. Inactive (one relaxed load per piece) when no prefetch thread runs.
#[derive(Default)]
pub struct Progress {
    active: AtomicBool,
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    started: Vec<u64>,
    done: bool,
}

impl Progress {
    /// A prefetch thread listens from now on.
    pub(crate) fn activate(&self) {
        self.active.store(true, Ordering::Relaxed);
    }

    /// A worker starts the piece stored at `offset`.
    pub(crate) fn started(&self, offset: u64) {
        if !self.active.load(Ordering::Relaxed) {
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
