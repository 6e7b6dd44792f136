//! The background checkpointer: a thread that takes a
//! [`Store::checkpoint`] whenever its [`CheckpointPolicy`] says one is
//! due, reporting each as [`CheckpointEvent`]s, until its [`Checkpointer`]
//! handle stops it.

use super::Store;
use crate::error::StoreError;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the checkpointer looks at the txid when it counts ops.
const POLL: Duration = Duration::from_millis(10);
/// The least time between a failed checkpoint and the next try.
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(1);

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
struct Shared {
    stopped: Mutex<bool>,
    wake: Condvar,
    /// Set by `stop`: a save in progress gives up.
    cancel: Arc<AtomicBool>,
}

/// The handle of a background checkpointer
/// ([`Store::spawn_checkpointer`]): [`stop`](Self::stop) it, or drop it,
/// to end its thread. Stopping never takes a checkpoint; a checkpoint
/// being saved at that moment is abandoned (its temporary file removed,
/// [`CheckpointEvent::Cancelled`]), and the store keeps the images and
/// journal it had, so nothing acknowledged is lost.
pub struct Checkpointer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
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

impl Store {
    /// Starts a thread that checkpoints this store in the background as
    /// `policy` says ([`checkpoint`](Self::checkpoint): writers go on
    /// while it saves), calling `on_event` (on that thread) as each
    /// checkpoint starts and ends. The thread holds a reference to the
    /// store until the returned handle is stopped or dropped.
    ///
    /// # Errors
    /// [`StoreError::Io`] when the thread cannot be started.
    pub fn spawn_checkpointer(
        self: &Arc<Store>,
        policy: CheckpointPolicy,
        on_event: impl Fn(CheckpointEvent) + Send + 'static,
    ) -> Result<Checkpointer, StoreError> {
        let shared = Arc::new(Shared {
            stopped: Mutex::new(false),
            wake: Condvar::new(),
            cancel: Arc::new(AtomicBool::new(false)),
        });
        let store = Arc::clone(self);
        let sh = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("nsimage-checkpointer".into())
            .spawn(move || run(&store, policy, &sh, &on_event))
            .map_err(|e| StoreError::Io {
                path: self.dir.clone(),
                source: e,
            })?;
        Ok(Checkpointer {
            shared,
            thread: Some(thread),
        })
    }
}

/// The checkpointer's loop.
fn run(store: &Store, policy: CheckpointPolicy, sh: &Shared, on_event: &dyn Fn(CheckpointEvent)) {
    let every_ops = policy.every_ops.map(|n| n.max(1));
    let mut last_start = Instant::now();
    let mut not_before: Option<Instant> = None;
    loop {
        let now = Instant::now();
        let since_image = store
            .txid()
            .saturating_sub(store.newest_image.load(Ordering::Acquire));
        let ops_due = every_ops.is_some_and(|n| since_image >= n);
        let time_due = policy.every.is_some_and(|d| now >= last_start + d);
        let may = not_before.is_none_or(|t| now >= t);
        if (ops_due || time_due) && may {
            if since_image > 0 {
                last_start = now;
                not_before =
                    checkpoint_once(store, sh, on_event).then(|| now + RETRY_AFTER_FAILURE);
            } else {
                // Nothing new since the newest image: the period starts
                // again.
                last_start = now;
            }
        }
        let mut wait: Option<Duration> = None;
        if every_ops.is_some() {
            wait = Some(POLL);
        }
        if let Some(d) = policy.every {
            let left = (last_start + d).saturating_duration_since(Instant::now());
            wait = Some(wait.map_or(left, |w| w.min(left)));
        }
        if let Some(t) = not_before {
            // After a failure: no try before `t`.
            let left = t.saturating_duration_since(Instant::now());
            wait = wait.map(|w| w.max(left));
        }
        let mut stopped = sh.stopped.lock();
        if *stopped {
            return;
        }
        match wait {
            Some(w) => {
                sh.wake.wait_for(&mut stopped, w);
            }
            None => sh.wake.wait(&mut stopped),
        }
        if *stopped {
            return;
        }
    }
}

/// Takes one checkpoint, reporting it; true when it failed.
fn checkpoint_once(store: &Store, sh: &Shared, on_event: &dyn Fn(CheckpointEvent)) -> bool {
    let started = Instant::now();
    let mut txid = None;
    let res = store.checkpoint_observed(Some(&sh.cancel), &mut |t| {
        txid = Some(t);
        on_event(CheckpointEvent::Started { txid: t });
    });
    // The snapshot is taken before anything can fail: the txid is known.
    let t = txid.unwrap_or_else(|| store.txid());
    match res {
        Ok(t) => {
            on_event(CheckpointEvent::Finished {
                txid: t,
                seconds: started.elapsed().as_secs_f64(),
            });
            false
        }
        Err(_) if sh.cancel.load(Ordering::Acquire) => {
            on_event(CheckpointEvent::Cancelled { txid: t });
            false
        }
        Err(error) => {
            on_event(CheckpointEvent::Failed { txid: t, error });
            true
        }
    }
}
