//! The connection registry: the open connections, oldest first, each
//! idle, busy (a request in flight, until its answer's body is sent) or
//! evicted, so that past the cap (or out of descriptors) the oldest idle
//! one gives its place to a new one.

use axum::body::Body;
use hyper::body::{Bytes, Frame, SizeHint};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::Notify;

/// The open connections, oldest first, each with whether it has a request
/// in flight.
#[derive(Default)]
pub(crate) struct Connections {
    slots: Mutex<BTreeMap<u64, Arc<Slot>>>,
    next_id: Mutex<u64>,
    /// Signalled when a connection closes or finishes a request.
    pub(crate) changed: Notify,
}

/// One connection's state: [`IDLE`], [`BUSY`] or [`EVICTED`].
pub(crate) struct Slot {
    pub(crate) id: u64,
    state: AtomicU8,
    pub(crate) evicted: Notify,
}

const IDLE: u8 = 0;
const BUSY: u8 = 1;
const EVICTED: u8 = 2;

impl Connections {
    pub(crate) fn open(&self) -> usize {
        self.slots.lock().len()
    }

    pub(crate) fn add(&self) -> Arc<Slot> {
        let id = {
            let mut next = self.next_id.lock();
            *next = next.wrapping_add(1);
            *next
        };
        let slot = Arc::new(Slot {
            id,
            state: AtomicU8::new(IDLE),
            evicted: Notify::new(),
        });
        self.slots.lock().insert(id, Arc::clone(&slot));
        slot
    }

    pub(crate) fn remove(&self, id: u64) {
        self.slots.lock().remove(&id);
        self.changed.notify_one();
    }

    /// Closes the oldest connection with no request in flight; false when
    /// every connection has one.
    pub(crate) fn evict_oldest_idle(&self) -> bool {
        let mut slots = self.slots.lock();
        let victim = slots.iter().find_map(|(&id, s)| {
            s.state
                .compare_exchange(IDLE, EVICTED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
                .then_some(id)
        });
        match victim.and_then(|id| slots.remove(&id)) {
            Some(s) => {
                s.evicted.notify_one();
                true
            }
            None => false,
        }
    }
}

/// A request in flight on a connection (from its head to the end of its
/// answer's body): that connection is not evicted meanwhile.
pub(crate) struct Busy {
    slot: Arc<Slot>,
    conns: Arc<Connections>,
}

impl Busy {
    pub(crate) fn begin(slot: &Arc<Slot>, conns: &Arc<Connections>) -> Busy {
        // An evicted connection is closing: its state stays EVICTED.
        let _ = slot
            .state
            .compare_exchange(IDLE, BUSY, Ordering::AcqRel, Ordering::Acquire);
        Busy {
            slot: Arc::clone(slot),
            conns: Arc::clone(conns),
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let _ = self
            .slot
            .state
            .compare_exchange(BUSY, IDLE, Ordering::AcqRel, Ordering::Acquire);
        self.conns.changed.notify_one();
    }
}

/// An answer's body that keeps its connection [`Busy`] until it is sent.
pub(crate) struct Guarded {
    pub(crate) body: Body,
    pub(crate) _busy: Busy,
}

impl hyper::body::Body for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
