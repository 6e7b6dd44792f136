//! The writable server's store: opened with recovery (the newest image
//! that verifies and the journal replayed), a syncer thread that makes
//! the writes of every request durable together (one fsync for all the
//! requests waiting, whatever their number: group commit without a thread
//! per waiting request), the background checkpointer, and the lines it
//! prints on stderr (`checkpoint started txid=T`, `checkpoint finished
//! txid=T seconds=S`, `checkpoint failed txid=T: ERR`), and at close
//! `journal: N ops in M fsyncs` (the ops made durable since the open, and
//! the syncer's writes and fsyncs of the journal that made them durable).
//!
//! Readers are answered from the store's durable view
//! ([`Live::reader`]): the namespace as of the last durable op, so that no
//! reader sees a write before it is acknowledged, or one whose journal
//! write failed. A journal failure (a full disk, an I/O error) poisons
//! the store; the server then stops ([`Live::journal_failed`]), as HDFS's
//! NameNode does when it cannot sync its edits.

use crate::error::RemoteError;
use nsimage_store::fs::Fs;
use nsimage_store::{
    CheckpointEvent, CheckpointPolicy, Checkpointer, Store, StoreError, StoreOptions,
};
use parking_lot::Mutex;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::{oneshot, watch};

/// A request waiting for its txid to be durable, with its ticket (given
/// back when the syncer takes the wait).
type Waiter = (u64, oneshot::Sender<Result<(), String>>, WriteTicket);

/// The store a writable server serves, with its syncer and checkpointer.
pub struct Live {
    /// The store: reads take its namespace's shared lock, writes submit
    /// ops to it.
    pub store: Arc<Store>,
    waiters: Mutex<Option<mpsc::Sender<Waiter>>>,
    syncer: Mutex<Option<JoinHandle<()>>>,
    checkpointer: Mutex<Option<Checkpointer>>,
    /// The txid recovery ended at.
    opened_at: u64,
    /// Journal flushes (a write and an fsync) the syncer asked for.
    flushes: Arc<AtomicU64>,
    /// Why the journal failed, once it has (the server then stops).
    failed: Arc<watch::Sender<Option<String>>>,
    /// Write requests started and their tickets given back (see
    /// [`WriteTicket`]).
    tickets: Arc<Tickets>,
    /// When the background checkpointer takes a checkpoint.
    policy: CheckpointPolicy,
    /// Checkpoints the background checkpointer finished.
    checkpoints: Arc<AtomicU64>,
}

/// Counts of write tickets: taken (by requests that started) and given
/// back (by the syncer taking their waits, or by requests that ended
/// without one).
#[derive(Default)]
struct Tickets {
    taken: AtomicU64,
    given_back: AtomicU64,
}

impl Tickets {
    /// Whether a ticket is out: a write under way whose wait the syncer
    /// has not taken yet.
    fn out(&self) -> bool {
        // Given back is read first: a ticket is taken before it is given
        // back, so this never counts more given back than taken.
        let back = self.given_back.load(Ordering::Acquire);
        self.taken.load(Ordering::Acquire) > back
    }
}

/// Longest the syncer holds a flush back for writes still being applied.
const MAX_COMMIT_DELAY: Duration = Duration::from_millis(4);
/// Most waiters one flush answers before it goes without waiting.
const MAX_BATCH: usize = 256;

/// A write request on its way: taken before its op is built
/// ([`Live::begin_write`]), it travels with the request's wait for
/// durability ([`Live::durable`]) and is given back when the syncer takes
/// that wait, or when the request ends without one. While tickets are out
/// a flush waits for their writes (at most 4 ms after its first wait
/// arrived), so that they join the same fsync: a commit delay only while
/// more writes are known to be coming, never for a lone writer. (Waiting
/// only for the tickets out when the first wait arrived, which under a
/// steady load waits less, measured fewer ops per fsync, 10-11 against
/// 16-18, and lower throughput in `bench --server`.)
#[must_use = "a ticket dropped at once tells the syncer the write is done"]
pub struct WriteTicket {
    tickets: Arc<Tickets>,
}

impl Drop for WriteTicket {
    fn drop(&mut self) {
        self.tickets.given_back.fetch_add(1, Ordering::AcqRel);
    }
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("txid", &self.store.txid())
            .finish()
    }
}

/// The line a checkpoint event prints (`None` for events that print
/// none).
pub fn checkpoint_line(e: &CheckpointEvent) -> Option<String> {
    match e {
        CheckpointEvent::Started { txid } => Some(format!("checkpoint started txid={txid}")),
        CheckpointEvent::Finished { txid, seconds } => Some(format!(
            "checkpoint finished txid={txid} seconds={seconds:.3}"
        )),
        CheckpointEvent::Failed { txid, error } => {
            Some(format!("checkpoint failed txid={txid}: {error}"))
        }
        CheckpointEvent::Cancelled { txid } => Some(format!("checkpoint cancelled txid={txid}")),
        _ => None,
    }
}

impl Live {
    /// Opens (recovers) the store in `dir` (its files reached through
    /// `fs`) with `opts` and starts its syncer and, when `policy` asks for
    /// checkpoints, its checkpointer.
    ///
    /// # Errors
    /// The store's, opening or starting a thread.
    pub fn open(
        dir: &Path,
        fs: Arc<dyn Fs>,
        opts: StoreOptions,
        policy: CheckpointPolicy,
    ) -> Result<Live, StoreError> {
        let opts = StoreOptions {
            durable_view: true,
            ..opts
        };
        let store = Arc::new(Store::open(dir, fs, opts)?);
        let opened_at = store.txid();
        let failed = Arc::new(watch::Sender::new(None));
        let (tx, rx) = mpsc::channel::<Waiter>();
        let s = Arc::clone(&store);
        let flushes = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&flushes);
        let tickets = Arc::new(Tickets::default());
        let out = Arc::clone(&tickets);
        let fail = Arc::clone(&failed);
        let syncer = std::thread::Builder::new()
            .name("nsimage-syncer".into())
            .spawn(move || sync_loop(&s, opened_at, &rx, &counted, &out, &fail))
            .map_err(|source| StoreError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        let checkpoints = Arc::new(AtomicU64::new(0));
        let checkpointer = spawn_checkpointer(&store, policy, &checkpoints)?;
        Ok(Live {
            store,
            waiters: Mutex::new(Some(tx)),
            syncer: Mutex::new(Some(syncer)),
            checkpointer: Mutex::new(checkpointer),
            opened_at,
            flushes,
            failed,
            tickets,
            policy,
            checkpoints,
        })
    }

    /// Starts (`true`) or stops (`false`) the background checkpointer, as
    /// the policy the store was opened with says (a checkpoint being saved
    /// when it stops is abandoned). An HA group's active stops its own
    /// while a standby takes them.
    ///
    /// # Errors
    /// Starting the checkpointer's thread.
    pub fn set_checkpointing(&self, on: bool) -> Result<(), StoreError> {
        let mut c = self.checkpointer.lock();
        match (on, c.is_some()) {
            (true, false) => *c = spawn_checkpointer(&self.store, self.policy, &self.checkpoints)?,
            (false, true) => {
                if let Some(c) = c.take() {
                    c.stop();
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Whether the background checkpointer runs.
    pub fn checkpointing(&self) -> bool {
        self.checkpointer.lock().is_some()
    }

    /// Checkpoints the background checkpointer finished since the open.
    pub fn checkpoints_taken(&self) -> u64 {
        self.checkpoints.load(Ordering::Relaxed)
    }

    /// The namespace readers are answered from: as of the last durable op
    /// (every acknowledged write in it, no write that is not durable).
    ///
    /// # Errors
    /// 500 when the store keeps no durable view (it always does when
    /// opened by [`open`](Self::open)).
    pub fn reader(&self) -> Result<Arc<nsimage_namespace::Namespace>, RemoteError> {
        self.store
            .durable_namespace()
            .ok_or_else(|| RemoteError::internal("the store keeps no durable view"))
    }

    /// Notes a journal failure if the store is poisoned (by a write's
    /// journal write or fsync, or a checkpoint's segment roll): the server
    /// stops. Cheap; called after each write.
    pub fn check_failed(&self) {
        if let Some(e) = self.store.failure() {
            note_failure(&self.failed, e);
        }
    }

    /// Why the journal failed, once it has.
    pub fn failure(&self) -> Option<String> {
        self.failed.borrow().clone()
    }

    /// Resolves once the journal has failed (at once if it has).
    pub async fn journal_failed(&self) {
        let mut rx = self.failed.subscribe();
        let _ = rx.wait_for(Option::is_some).await;
    }

    /// Marks a write request as started: its ticket goes with its wait
    /// for durability ([`durable`](Self::durable)), or is dropped if the
    /// request ends before.
    pub fn begin_write(&self) -> WriteTicket {
        self.tickets.taken.fetch_add(1, Ordering::AcqRel);
        WriteTicket {
            tickets: Arc::clone(&self.tickets),
        }
    }

    /// Resolves once `txid` is durable; `ticket` is the request's, handed
    /// to the syncer with the wait.
    ///
    /// # Errors
    /// 500 IOException when the journal failed (the store is poisoned) or
    /// the server is closing.
    pub async fn durable(&self, ticket: WriteTicket, txid: u64) -> Result<(), RemoteError> {
        let (tx, rx) = oneshot::channel();
        let sent = self
            .waiters
            .lock()
            .as_ref()
            .is_some_and(|w| w.send((txid, tx, ticket)).is_ok());
        if !sent {
            return Err(RemoteError::internal("the server is shutting down"));
        }
        let r = rx.await;
        self.check_failed();
        match r {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(RemoteError::internal(format!(
                "the write is not durable: {e}"
            ))),
            Err(_) => Err(RemoteError::internal("the syncer stopped")),
        }
    }

    /// Ends the syncer (after the waits queued) and the checkpointer (a
    /// checkpoint being saved is abandoned); then, when
    /// `checkpoint_on_exit` and the journal has not failed, takes a
    /// checkpoint, printing its lines.
    ///
    /// # Errors
    /// The checkpoint's.
    pub fn close(&self, checkpoint_on_exit: bool) -> Result<(), StoreError> {
        drop(self.waiters.lock().take());
        if let Some(t) = self.syncer.lock().take() {
            let _ = t.join();
        }
        eprintln!(
            "journal: {} ops in {} fsyncs",
            self.store.durable_txid().saturating_sub(self.opened_at),
            self.flushes.load(Ordering::Relaxed)
        );
        if let Some(c) = self.checkpointer.lock().take() {
            c.stop();
        }
        if !checkpoint_on_exit || self.failure().is_some() {
            return Ok(());
        }
        let txid = self.store.txid();
        eprintln!("checkpoint started txid={txid}");
        let started = Instant::now();
        match self.store.checkpoint() {
            Ok(t) => {
                eprintln!(
                    "checkpoint finished txid={t} seconds={:.3}",
                    started.elapsed().as_secs_f64()
                );
                Ok(())
            }
            Err(e) => {
                eprintln!("checkpoint failed txid={txid}: {e}");
                Err(e)
            }
        }
    }
}

/// Starts `store`'s background checkpointer when `policy` asks for
/// checkpoints, printing its lines and counting those finished in `done`.
fn spawn_checkpointer(
    store: &Arc<Store>,
    policy: CheckpointPolicy,
    done: &Arc<AtomicU64>,
) -> Result<Option<Checkpointer>, StoreError> {
    if policy.every_ops.is_none() && policy.every.is_none() {
        return Ok(None);
    }
    let done = Arc::clone(done);
    store
        .spawn_checkpointer(policy, move |e| {
            if matches!(e, CheckpointEvent::Finished { .. }) {
                done.fetch_add(1, Ordering::Relaxed);
            }
            if let Some(l) = checkpoint_line(&e) {
                eprintln!("{l}");
            }
        })
        .map(Some)
}

/// The syncer: takes every waiter queued, makes the newest of their txids
/// durable (one write and fsync for all), answers them, and again.
/// `flushes` counts the batches that had something to make durable. Before
/// a flush, writes under way may join it: while any ticket is out the
/// syncer waits for more waiters, for at most [`MAX_COMMIT_DELAY`] after
/// the first (and for no more than [`MAX_BATCH`] waiters). Each waiter's
/// ticket is given back as the syncer takes it, so a lone writer's own
/// ticket never holds its flush back.
fn sync_loop(
    store: &Store,
    opened_at: u64,
    rx: &mpsc::Receiver<Waiter>,
    flushes: &AtomicU64,
    tickets: &Tickets,
    failed: &watch::Sender<Option<String>>,
) {
    // Durable at the open (read before this thread started: a write may
    // have been applied before it runs, and its flush must count).
    let mut durable = opened_at;
    let take = |batch: &mut Vec<_>, (txid, tx, ticket): Waiter| {
        drop(ticket);
        batch.push((txid, tx));
    };
    while let Ok(first) = rx.recv() {
        let since = Instant::now();
        let mut batch = Vec::new();
        take(&mut batch, first);
        for w in rx.try_iter() {
            take(&mut batch, w);
        }
        while tickets.out() && batch.len() < MAX_BATCH {
            let left = MAX_COMMIT_DELAY.saturating_sub(since.elapsed());
            if left.is_zero() {
                break;
            }
            match rx.recv_timeout(left.min(Duration::from_micros(200))) {
                Ok(w) => take(&mut batch, w),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            for w in rx.try_iter() {
                take(&mut batch, w);
            }
        }
        let newest = batch.iter().map(|w| w.0).max().unwrap_or(0);
        if newest > durable {
            flushes.fetch_add(1, Ordering::Relaxed);
            durable = newest;
        }
        let r = store.wait_durable(newest).map_err(|e| e.to_string());
        if r.is_err() {
            if let Some(e) = store.failure() {
                note_failure(failed, e);
            }
        }
        for (_, tx) in batch {
            let _ = tx.send(r.clone());
        }
    }
}

/// Records the journal's failure `e` (the first one), saying on stderr
/// that the server stops.
fn note_failure(failed: &watch::Sender<Option<String>>, e: String) {
    failed.send_if_modified(|f| {
        if f.is_some() {
            return false;
        }
        eprintln!(
            "nsimage serve: the journal failed: {e}; stopping (every acknowledged write is durable)"
        );
        *f = Some(e);
        true
    });
}
