//! The background checkpointer: a thread that takes a
//! [`Store::checkpoint`](crate::Store::checkpoint) whenever its [`CheckpointPolicy`] says one is
//! due, reporting each as [`CheckpointEvent`]s, until its [`Checkpointer`]
//! handle stops it.

use crate::error::StoreError;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// When a [`Checkpointer`] takes a checkpoint: when either condition
/// holds (neither set: never), and only when ops were applied since the
/// newest image (an idle store takes none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckpointPolicy {
    /// Once this many ops were applied after the newest image (at least
    /// 1). Counted from the newest image the store has, so a store that
    /// replayed more than this many ops at open checkpoints at once.
    pub every_ops: Option<u64>,
    /// Once this long has passed since the last checkpoint began (or since
    /// the checkpointer started); a checkpoint that takes longer is
    /// followed by the next one at once.
    pub every: Option<Duration>,
}

/// What the checkpointer reports, from its own thread.
#[derive(Debug)]
#[non_exhaustive]
pub enum CheckpointEvent {
    /// A checkpoint took its snapshot at `txid` and is saving it.
    Started {
        /// The image's txid.
        txid: u64,
    },
    /// The checkpoint at `txid` is saved, the journal rolled and
    /// retention applied, in `seconds`.
    Finished {
        /// The image's txid.
        txid: u64,
        /// From its snapshot to the end of the purge.
        seconds: f64,
    },
    /// The checkpoint at `txid` failed (the store keeps its previous
    /// images and journal; the next try comes when the policy says, and
    /// not before a second has passed).
    Failed {
        /// The image's txid.
        txid: u64,
        /// Why.
        error: StoreError,
    },
    /// The checkpoint at `txid` was abandoned because the checkpointer was
    /// stopped while it saved (its temporary file removed; nothing else
    /// changed).
    Cancelled {
        /// The image's txid.
        txid: u64,
    },
}

/// What the checkpointer's thread and its handle share.
pub(super) struct Shared {
    pub(super) stopped: Mutex<bool>,
    pub(super) wake: Condvar,
    /// Set by `stop`: a save in progress gives up.
    pub(super) cancel: Arc<AtomicBool>,
}

/// The handle of a background checkpointer
/// ([`Store::spawn_checkpointer`](crate::Store::spawn_checkpointer)): [`stop`](Self::stop) it, or drop it,
/// to end its thread. Stopping never takes a checkpoint; a checkpoint
/// being saved at that moment is abandoned (its temporary file removed,
/// [`CheckpointEvent::Cancelled`]), and the store keeps the images and
/// journal it had, so nothing acknowledged is lost.
pub struct Checkpointer {
    pub(super) shared: Arc<Shared>,
    pub(super) thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Stops the thread and waits for it to end (a save in progress gives
    /// up at its next write).
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        *self.shared.stopped.lock() = true;
        self.shared.cancel.store(true, Ordering::Release);
        self.shared.wake.notify_all();
        if let Some(t) = self.thread.take() {
            // A panic in `on_event` ended the thread already; nothing to
            // report from a drop.
            let _ = t.join();
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.halt();
    }
}
