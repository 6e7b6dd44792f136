//! The background checkpointer's thread: started by
//! [`Store::spawn_checkpointer`], it takes a [`Store::checkpoint`] whenever
//! its policy says one is due (the types it reports with are in
//! `checkpointer`).

use super::checkpointer::{CheckpointEvent, CheckpointPolicy, Checkpointer, Shared};
use super::Store;
use crate::error::StoreError;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the checkpointer looks at the txid when it counts ops.
const POLL: Duration = Duration::from_millis(10);
/// The least time between a failed checkpoint and the next try.
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(1);

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
