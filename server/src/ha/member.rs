//! One member of an HA group: its store (a [`Live`], reopened from its
//! own directory whenever it must forget what etcd did not commit), its
//! role, and two threads:
//!
//! - the **supervisor** renews the member's lease and record, and, as a
//!   standby, campaigns for the leadership when no one holds it (once it
//!   has applied everything etcd's journal holds), or fetches a peer's
//!   checkpoint when the journal no longer reaches back to its txid; as
//!   the active, it steps down when its lease or its store fails or an
//!   operator hands over (`nsimage ha transfer`), trims etcd's journal
//!   below the newest checkpoint a member has, and runs its own
//!   checkpointer only while no standby is healthy;
//! - the **tailer** (a standby's) applies the journal's batches as etcd's
//!   watch delivers them, each made durable in the member's own journal.
//!
//! Promotion: the leadership key is created on the member's lease (a
//! transaction that succeeds only when no one holds it); the new active
//! then applies every batch etcd holds, and only then takes writes, its
//! appends fenced by the key's create revision ([`EtcdJournal`]).
//! Demotion: writes are refused at once, the store's appends refused
//! whatever they are, and the store reopened from its own directory (its
//! checkpoint and journal: only what etcd committed), then tailing goes
//! on.

use super::etcd::{created_at, delete_key_op, prefix_end, put_op, revision_of, Etcd};
use super::journal::{now_ms, Batch, EtcdJournal};
use super::{admin, fetch, HaConfig, HaError, Keys, Role};
use crate::error::RemoteError;
use crate::live::Live;
use nsimage_store::replica::Replica;
use nsimage_store::StoreError;
use parking_lot::{Mutex, RwLock};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How a member (re)opens its store.
pub type Opener = Arc<dyn Fn() -> Result<Live, StoreError> + Send + Sync>;

/// How often the supervisor looks at the leadership.
const TICK: Duration = Duration::from_millis(100);
/// How long the tailer's watch waits for a batch before it looks again.
const WATCH_IDLE: Duration = Duration::from_millis(500);
/// Batches read from etcd at a time when catching up: at most 32 MiB of
/// records (a batch holds at most 1 MiB), base64 in the answer, within
/// the client's 64 MiB answer limit.
const PAGE: i64 = 32;
/// Batches deleted by one transaction of a trim ([`Member::trim`]): a few
/// milliseconds of etcd's apply loop each.
const TRIM_CHUNK: i64 = 256;
/// How often `--log` prints a member's lag line.
const LAG_LINE_EVERY: Duration = Duration::from_secs(10);
/// Lags kept for the status's percentiles.
const LAGS_KEPT: usize = 4096;
/// A standby this many txids behind the active is not healthy (the
/// active checkpoints itself).
const HEALTHY_LAG_TXIDS: u64 = 100_000;

/// A store whose appends are all refused: installed when a member steps
/// down, so nothing more reaches its own journal before it reopens.
struct Refusing;

impl Replica for Refusing {
    fn commit(&self, first: u64, _: u64, _: &[u8]) -> Result<(), String> {
        Err(format!(
            "fenced: this member stepped down; txid {first} is not committed"
        ))
    }
}

/// Why catching up stopped short.
enum Behind {
    /// etcd's journal no longer holds the txid after ours: a peer's
    /// checkpoint is needed.
    Gap { have: u64, trimmed: u64 },
    /// Anything else.
    Failed(HaError),
}

impl From<HaError> for Behind {
    fn from(e: HaError) -> Self {
        Behind::Failed(e)
    }
}

impl From<StoreError> for Behind {
    fn from(e: StoreError) -> Self {
        Behind::Failed(e.into())
    }
}

/// One member of an HA group.
pub struct Member {
    cfg: HaConfig,
    keys: Keys,
    etcd: Arc<Etcd>,
    dir: PathBuf,
    opener: Opener,
    /// The store, `None` while it is reopened.
    live: RwLock<Option<Arc<Live>>>,
    role: RwLock<Role>,
    /// Held while batches are applied or the store is swapped.
    apply: Mutex<()>,
    /// This member's URL, once bound.
    url: OnceLock<String>,
    namespace_id: u64,
    /// The member's lease.
    lease: Mutex<i64>,
    /// The leadership key's create revision while this member is active.
    leader_revision: Mutex<i64>,
    /// The leader as last read, and when etcd last answered.
    leader: Mutex<Option<String>>,
    etcd_ok: Mutex<Option<Instant>>,
    /// The journal no longer reaches back to this member's txid.
    needs_checkpoint: AtomicBool,
    /// Recent lags (commit on the active to durable here), milliseconds.
    lags: Mutex<VecDeque<u64>>,
    applied_batches: AtomicU64,
    promotions: AtomicU64,
    stop: AtomicBool,
    /// Set when the member cannot go on (its store will not reopen).
    fatal: tokio::sync::watch::Sender<Option<String>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    log: bool,
    /// Why the tailer could not apply etcd's journal last (cleared once it
    /// catches up), and when that was last said on stderr.
    apply_error: Mutex<Option<String>>,
    failure_said: Mutex<Option<Instant>>,
    /// The user peers' checkpoints are fetched as.
    fetch_user: Mutex<String>,
}

impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Member")
            .field("id", &self.cfg.id)
            .field("role", &self.role())
            .finish_non_exhaustive()
    }
}

impl Member {
    /// Opens the store in `dir` with `opener` and joins the group: the
    /// group's namespace recorded in etcd at the first member's start (or
    /// checked against this store's), a lease granted. Starts as a
    /// standby; [`start`](Self::start) runs it.
    ///
    /// # Errors
    /// The store's, etcd unreachable, or a group of another namespace.
    pub fn join(
        cfg: HaConfig,
        dir: PathBuf,
        opener: Opener,
        log: bool,
    ) -> Result<Arc<Member>, HaError> {
        let live = opener()?;
        let (namespace_id, txid) = live
            .store
            .with_namespace(|ns| (ns.info().namespace_id, ns.info().last_txid));
        if live.store.at_rest().is_encrypted() {
            return Err(HaError::Mismatch(format!(
                "{}: an encrypted store cannot join an HA group: its journal's records would \
                 be kept in etcd unencrypted",
                dir.display()
            )));
        }
        let etcd = Arc::new(Etcd::new(cfg.endpoints.clone(), cfg.etcd_timeout));
        let keys = Keys::new(&cfg.prefix);
        let meta = json!({ "namespace_id": namespace_id }).to_string();
        // The first member's start records the namespace and where the
        // journal begins: at its txid.
        etcd.txn(
            vec![created_at(&keys.meta(), 0)],
            vec![
                put_op(&keys.meta(), meta.as_bytes(), 0),
                put_op(&keys.trimmed(), txid.to_string().as_bytes(), 0),
            ],
            vec![],
        )?;
        let got = etcd
            .get(&keys.meta())?
            .ok_or_else(|| HaError::Etcd("the group's meta key vanished".into()))?;
        let theirs: Value = serde_json::from_slice(&got.value).map_err(|e| HaError::Corrupt {
            key: String::from_utf8_lossy(&keys.meta()).into_owned(),
            detail: e.to_string(),
        })?;
        if theirs["namespace_id"].as_u64() != Some(namespace_id) {
            return Err(HaError::Mismatch(format!(
                "the group under {} in etcd serves namespace {}, this store holds namespace \
                 {namespace_id}",
                cfg.prefix, theirs["namespace_id"]
            )));
        }
        let head = group_head(&etcd, &keys)?;
        if txid > head {
            return Err(HaError::Mismatch(format!(
                "this store is at txid {txid}, ahead of the group's journal in etcd (txid                  {head}): it holds ops the group never committed"
            )));
        }
        let lease = etcd.grant(cfg.lease)?;
        Ok(Arc::new(Member {
            keys,
            etcd,
            dir,
            opener,
            live: RwLock::new(Some(Arc::new(live))),
            role: RwLock::new(Role::Standby),
            apply: Mutex::new(()),
            url: OnceLock::new(),
            namespace_id,
            lease: Mutex::new(lease),
            leader_revision: Mutex::new(0),
            leader: Mutex::new(None),
            etcd_ok: Mutex::new(Some(Instant::now())),
            needs_checkpoint: AtomicBool::new(false),
            lags: Mutex::new(VecDeque::new()),
            applied_batches: AtomicU64::new(0),
            promotions: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            fatal: tokio::sync::watch::Sender::new(None),
            threads: Mutex::new(Vec::new()),
            log,
            cfg,
            apply_error: Mutex::new(None),
            failure_said: Mutex::new(None),
            fetch_user: Mutex::new("hdfs".into()),
        }))
    }

    /// Runs the member (its supervisor and tailer threads), known to its
    /// peers at `url`.
    ///
    /// # Errors
    /// Starting a thread.
    pub fn start(self: &Arc<Self>, url: String) -> std::io::Result<()> {
        let _ = self.url.set(url);
        let mut threads = self.threads.lock();
        let m = Arc::clone(self);
        threads.push(
            std::thread::Builder::new()
                .name("nsimage-ha-supervisor".into())
                .spawn(move || m.supervise())?,
        );
        let m = Arc::clone(self);
        threads.push(
            std::thread::Builder::new()
                .name("nsimage-ha-tailer".into())
                .spawn(move || m.tail())?,
        );
        Ok(())
    }

    /// Stops the threads and gives the lease back (an active's leadership
    /// passes at once); returns the store to close.
    pub fn stop(&self) -> Option<Arc<Live>> {
        self.stop.store(true, Ordering::Release);
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
        *self.role.write() = Role::Standby;
        let live = self.live.read().clone();
        if let Some(l) = &live {
            l.store.set_replica(Some(Arc::new(Refusing)));
        }
        let _ = self.etcd.revoke(*self.lease.lock());
        live
    }

    /// Fetch peers' checkpoints as `user` (the superuser).
    pub fn set_fetch_user(&self, user: &str) {
        user.clone_into(&mut self.fetch_user.lock());
    }

    /// The member's role now.
    pub fn role(&self) -> Role {
        *self.role.read()
    }

    /// The store now, if open.
    pub fn live(&self) -> Option<Arc<Live>> {
        self.live.read().clone()
    }

    /// Resolves once the member cannot go on, with why.
    pub async fn failed(&self) -> String {
        let mut rx = self.fatal.subscribe();
        let why = match rx.wait_for(Option::is_some).await {
            Ok(v) => v.clone().unwrap_or_default(),
            Err(_) => String::new(),
        };
        why
    }

    /// The store a request is answered from: the active's for anything;
    /// a standby's for reads with `--standby-reads`. Otherwise
    /// `StandbyException` (403), or 503 for a write while etcd is out of
    /// reach (no member can take it).
    ///
    /// # Errors
    /// As above; 503 while the store is reopened.
    pub fn serving(&self, writes: bool) -> Result<Arc<Live>, RemoteError> {
        let role = self.role();
        let reachable = self
            .etcd_ok
            .lock()
            .is_some_and(|t| t.elapsed() < self.cfg.lease);
        match (role, writes) {
            (Role::Active, _) => {}
            (_, true) if !reachable => {
                return Err(RemoteError::no_quorum(
                    "this member cannot reach etcd's quorum: no write can be acknowledged now",
                ))
            }
            (_, true) => return Err(RemoteError::standby("WRITE")),
            (_, false) if !self.cfg.standby_reads => return Err(RemoteError::standby("READ")),
            _ => {}
        }
        self.live()
            .ok_or_else(|| RemoteError::no_quorum("this member is reopening its store"))
    }

    /// The answer to a write that was applied but not acknowledged: 403
    /// `StandbyException` when etcd refused its batch (fenced: it was
    /// certainly not committed, the client may send it to the active), 503
    /// `RetriableException` otherwise (etcd out of reach or too slow: it
    /// may or may not have been committed, which the message says).
    pub fn write_failed(&self, e: RemoteError) -> RemoteError {
        if e.message.contains("fenced") {
            let mut s = RemoteError::standby("WRITE");
            s.message = format!("{}: {}", s.message, e.message);
            return s;
        }
        RemoteError::no_quorum(format!(
            "the write was not acknowledged, and may or may not have been committed (the \
             group's journal in etcd did not answer in time): {}",
            e.message
        ))
    }

    /// The member's status (the `/nsimage/ha/status` document).
    pub fn status(&self) -> Value {
        let live = self.live();
        let (txid, durable, image) = live.as_ref().map_or((0, 0, 0), |l| {
            (
                l.store.txid(),
                l.store.durable_txid(),
                l.store.newest_image().0,
            )
        });
        let lags: Vec<u64> = self.lags.lock().iter().copied().collect();
        json!({
            "id": self.cfg.id,
            "role": self.role().name(),
            "url": self.url.get(),
            "leader": *self.leader.lock(),
            "namespace_id": self.namespace_id,
            "txid": txid,
            "durable_txid": durable,
            "checkpoint_txid": image,
            "checkpointing": live.as_ref().is_some_and(|l| l.checkpointing()),
            "checkpoints_taken": live.as_ref().map_or(0, |l| l.checkpoints_taken()),
            "applied_batches": self.applied_batches.load(Ordering::Relaxed),
            "promotions": self.promotions.load(Ordering::Relaxed),
            "lag_ms": lags.last(),
            "lag_p50_ms": percentile(&lags, 50),
            "lag_p99_ms": percentile(&lags, 99),
            "lag_max_ms": lags.iter().max(),
            "etcd_reachable": self.etcd_ok.lock().is_some_and(|t| t.elapsed() < self.cfg.lease),
            "apply_error": *self.apply_error.lock(),
        })
    }

    fn say(&self, line: &str) {
        // Role changes are always worth a line; `--log` adds the rest.
        eprintln!("nsimage serve: ha {}: {line}", self.cfg.id);
    }

    /// The supervisor's loop.
    fn supervise(self: Arc<Self>) {
        let renew_every = self.cfg.lease / 6;
        let mut renewed: Option<Instant> = None;
        let mut housekeeping = Instant::now();
        let mut reported = Instant::now();
        while !self.stop.load(Ordering::Acquire) {
            if self.log && reported.elapsed() >= LAG_LINE_EVERY {
                reported = Instant::now();
                self.lag_line();
            }
            if renewed.is_none_or(|t| t.elapsed() >= renew_every) {
                renewed = Some(Instant::now());
                self.renew();
            }
            let role = self.role();
            if role == Role::Active {
                if let Some(why) = self.live().and_then(|l| l.store.failure()) {
                    self.step_down(&format!("the journal failed: {why}"));
                } else if housekeeping.elapsed() >= Duration::from_millis(500) {
                    housekeeping = Instant::now();
                    self.as_active();
                }
            } else if role == Role::Standby {
                if self.needs_checkpoint.load(Ordering::Acquire) {
                    self.catch_up_from_peer();
                } else {
                    self.maybe_campaign();
                }
            }
            std::thread::sleep(TICK);
        }
    }

    /// `--log`'s periodic line: role, txid and the lag of the batches
    /// applied since the last line.
    fn lag_line(&self) {
        let lags: Vec<u64> = self.lags.lock().iter().copied().collect();
        let txid = self.live().map_or(0, |l| l.store.durable_txid());
        let ms = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
        self.say(&format!(
            "{} at txid {txid}, lag ms p50 {} p99 {} max {} (last {} batches)",
            self.role().name(),
            ms(percentile(&lags, 50)),
            ms(percentile(&lags, 99)),
            ms(lags.iter().max().copied()),
            lags.len()
        ));
    }

    /// Renews the lease and the member's record; an active whose lease is
    /// gone, or that cannot reach etcd for a lease's time, steps down.
    fn renew(&self) {
        let lease = *self.lease.lock();
        match self.etcd.keepalive(lease) {
            Ok(ttl) if ttl > 0 => {
                *self.etcd_ok.lock() = Some(Instant::now());
            }
            Ok(_) => {
                *self.etcd_ok.lock() = Some(Instant::now());
                if self.role() != Role::Standby {
                    self.step_down("its lease expired");
                }
                match self.etcd.grant(self.cfg.lease) {
                    Ok(id) => *self.lease.lock() = id,
                    Err(e) => self.say(&format!("no new lease: {e}")),
                }
            }
            Err(e) => {
                let lost = self
                    .etcd_ok
                    .lock()
                    .is_none_or(|t| t.elapsed() >= self.cfg.lease);
                if lost && self.role() != Role::Standby {
                    self.step_down(&format!("etcd out of reach for a lease's time: {e}"));
                }
            }
        }
        let record = self.record();
        let _ = self.etcd.put(
            &self.keys.member(&self.cfg.id),
            record.to_string().as_bytes(),
            *self.lease.lock(),
        );
    }

    /// The member's record in etcd.
    fn record(&self) -> Value {
        let live = self.live();
        // A standby that needs a peer's checkpoint is "behind": not a
        // healthy standby (the active then checkpoints itself, so that
        // there is a checkpoint to fetch).
        let role = match self.role() {
            Role::Standby if self.needs_checkpoint.load(Ordering::Acquire) => "behind",
            r => r.name(),
        };
        json!({
            "id": self.cfg.id,
            "url": self.url.get(),
            "role": role,
            "txid": live.as_ref().map_or(0, |l| l.store.durable_txid()),
            "checkpoint_txid": live.as_ref().map_or(0, |l| l.store.newest_image().0),
            "lag_ms": self.lags.lock().back(),
            "at_ms": now_ms(),
        })
    }

    /// The members' records.
    fn members(&self) -> Result<Vec<Value>, HaError> {
        admin::member_records(&self.etcd, &self.keys)
    }

    /// A standby's look at the leadership: when no one holds it, no
    /// handover names another member, and this member is not behind what
    /// etcd keeps, it campaigns.
    fn maybe_campaign(&self) {
        let leader = match self.etcd.get(&self.keys.leader()) {
            Ok(l) => l,
            Err(_) => return,
        };
        *self.etcd_ok.lock() = Some(Instant::now());
        *self.leader.lock() = leader
            .as_ref()
            .map(|kv| String::from_utf8_lossy(&kv.value).into_owned());
        if let Some(kv) = &leader {
            // This member's own leadership, though it is a standby: its
            // step-down could not delete the key while etcd was out of
            // reach, and the lease the key is on lives on (renewed by this
            // member, or by etcd extending leases when a quorum is back):
            // let it go, or no one would ever campaign.
            if kv.value == self.cfg.id.as_bytes() {
                let _ = self.etcd.txn(
                    vec![created_at(&self.keys.leader(), kv.create_revision)],
                    vec![delete_key_op(&self.keys.leader())],
                    vec![],
                );
                self.say("standby: deleted a leadership of its own left in etcd");
            }
            return;
        }
        if let Ok(Some(t)) = self.etcd.get(&self.keys.transfer()) {
            if t.value != self.cfg.id.as_bytes() {
                return;
            }
        }
        // Only a member that has applied every batch etcd holds campaigns
        // (a lagging one would hold the leadership while it catches up).
        let Some(have) = self.live().map(|l| l.store.durable_txid()) else {
            return;
        };
        match group_head(&self.etcd, &self.keys) {
            Ok(head) if have >= head => {}
            _ => return,
        }
        let lease = *self.lease.lock();
        let won = self.etcd.txn(
            vec![created_at(&self.keys.leader(), 0)],
            vec![put_op(&self.keys.leader(), self.cfg.id.as_bytes(), lease)],
            vec![],
        );
        let Ok((true, answer)) = won else {
            return;
        };
        let revision = revision_of(&answer);
        if revision <= 0 {
            // No revision to fence the appends with: give it back (the key
            // is on this member's lease, no one else can hold it now).
            let _ = self
                .etcd
                .txn(vec![], vec![delete_key_op(&self.keys.leader())], vec![]);
            self.say(&format!(
                "won the leadership but etcd named no revision: {answer}"
            ));
            return;
        }
        self.promote(revision);
    }

    /// Takes writes as the leader whose key was created at `revision`,
    /// once every batch etcd holds is applied.
    fn promote(&self, revision: i64) {
        let started = Instant::now();
        *self.role.write() = Role::Promoting;
        *self.leader.lock() = Some(self.cfg.id.clone());
        let _g = self.apply.lock();
        let Some(live) = self.live() else {
            self.resign(revision, "its store is reopening");
            return;
        };
        match self.catch_up(&live) {
            Ok(_) => {}
            Err(Behind::Gap { have, trimmed }) => {
                self.needs_checkpoint.store(true, Ordering::Release);
                self.resign(
                    revision,
                    &format!("it is at txid {have}, and etcd's journal starts after {trimmed}"),
                );
                return;
            }
            Err(Behind::Failed(e)) => {
                self.resign(revision, &format!("catching up failed: {e}"));
                return;
            }
        }
        *self.leader_revision.lock() = revision;
        live.store.set_replica(Some(Arc::new(EtcdJournal {
            etcd: Arc::clone(&self.etcd),
            keys: self.keys.clone(),
            leader_revision: revision,
        })));
        *self.role.write() = Role::Active;
        self.promotions.fetch_add(1, Ordering::Relaxed);
        self.say(&format!(
            "active at txid {} (leadership at etcd revision {revision}; caught up in {:.3} s)",
            live.store.txid(),
            started.elapsed().as_secs_f64()
        ));
    }

    /// Gives up a leadership won at `revision` before taking writes.
    fn resign(&self, revision: i64, why: &str) {
        let _ = self.etcd.txn(
            vec![created_at(&self.keys.leader(), revision)],
            vec![delete_key_op(&self.keys.leader())],
            vec![],
        );
        *self.role.write() = Role::Standby;
        self.say(&format!("won the leadership but gave it up: {why}"));
    }

    /// The active's housekeeping: a handover asked for, the journal's
    /// trim, and its own checkpointer run only while no standby is
    /// healthy.
    fn as_active(&self) {
        let Ok(members) = self.members() else {
            return;
        };
        let Some(live) = self.live() else {
            return;
        };
        let txid = live.store.txid();
        let healthy = |m: &Value| {
            m["id"].as_str() != Some(self.cfg.id.as_str())
                && m["role"].as_str() == Some("standby")
                && m["txid"]
                    .as_u64()
                    .is_some_and(|t| t.saturating_add(HEALTHY_LAG_TXIDS) >= txid)
        };
        let any_healthy = members.iter().any(healthy);
        if let Err(e) = live.set_checkpointing(!any_healthy) {
            self.say(&format!("checkpointer: {e}"));
        }
        if let Ok(Some(t)) = self.etcd.get(&self.keys.transfer()) {
            let to = String::from_utf8_lossy(&t.value).into_owned();
            if to != self.cfg.id
                && members
                    .iter()
                    .any(|m| m["id"].as_str() == Some(to.as_str()) && healthy(m))
            {
                self.hand_over(live, &to);
                return;
            }
        }
        let newest = members
            .iter()
            .filter_map(|m| m["checkpoint_txid"].as_u64())
            .chain([live.store.newest_image().0])
            .max()
            .unwrap_or(0);
        if let Err(e) = self.trim(newest) {
            if self.log {
                self.say(&format!("trim: {e}"));
            }
        }
    }

    /// Deletes the journal's batches that end at or below `checkpoint`
    /// (a member's newest image: whoever needs older txids fetches it),
    /// records the new start in `P/trimmed`, and compacts etcd's history.
    /// The batches go [`TRIM_CHUNK`] at a time, oldest first, each chunk
    /// one transaction fenced on the leadership, the first one with the
    /// new `P/trimmed` (so a reader that meets a missing batch always
    /// finds the start that explains it): one transaction deleting the
    /// thousands of batches written during a checkpoint holds every
    /// append behind it for tens of milliseconds.
    fn trim(&self, checkpoint: u64) -> Result<(), HaError> {
        let dir = self.keys.journal_dir();
        let upto = self.keys.batch(checkpoint.saturating_add(2));
        // The batch holding `checkpoint + 1` (the newest with a first txid
        // at or below it) stays with every batch after it.
        let keep = self.etcd.range_ordered(&dir, Some(&upto), 1, true, true)?;
        let Some(kv) = keep.kvs.first() else {
            return Ok(());
        };
        let Some(first) = self.keys.batch_first(&kv.key) else {
            return Ok(());
        };
        let rev = *self.leader_revision.lock();
        let mut revision = 0;
        let mut chunks = 0u32;
        loop {
            let older = self.etcd.range(&dir, Some(&kv.key), TRIM_CHUNK + 1, true)?;
            if older.kvs.is_empty() {
                break;
            }
            // Up to the chunk's end (exclusive), or to the batch kept.
            let end = usize::try_from(TRIM_CHUNK)
                .ok()
                .and_then(|n| older.kvs.get(n))
                .map_or(kv.key.as_slice(), |k| k.key.as_slice());
            let mut ops = vec![super::etcd::delete_op(&dir, end)];
            if chunks == 0 {
                ops.push(put_op(
                    &self.keys.trimmed(),
                    first.saturating_sub(1).to_string().as_bytes(),
                    0,
                ));
            }
            let (ok, answer) =
                self.etcd
                    .txn(vec![created_at(&self.keys.leader(), rev)], ops, vec![])?;
            if !ok {
                // Deposed: the new active trims.
                return Ok(());
            }
            revision = revision_of(&answer);
            chunks += 1;
        }
        if revision > 0 {
            self.etcd.compact(revision)?;
        }
        if chunks > 0 && self.log {
            self.say(&format!("journal in etcd trimmed below txid {first}"));
        }
        Ok(())
    }

    /// A handover to `to` (a healthy standby): writes refused from now,
    /// the writes in flight made durable, `to` given time to apply them,
    /// then the leadership let go.
    fn hand_over(&self, live: Arc<Live>, to: &str) {
        *self.role.write() = Role::Standby;
        let deadline = Instant::now() + Duration::from_secs(5);
        while live.store.durable_txid() < live.store.txid() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let txid = live.store.durable_txid();
        while Instant::now() < deadline {
            let caught_up = self.members().ok().is_some_and(|ms| {
                ms.iter().any(|m| {
                    m["id"].as_str() == Some(to) && m["txid"].as_u64().is_some_and(|t| t >= txid)
                })
            });
            if caught_up {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.say(&format!("handing over to {to} at txid {txid}"));
        // The store is reopened by the step down: no reference kept here.
        drop(live);
        self.step_down(&format!("handed over to {to}"));
    }

    /// Refuses writes from now, lets the leadership go, and reopens the
    /// store from its own directory (forgetting whatever etcd did not
    /// commit), as a standby.
    fn step_down(&self, why: &str) {
        *self.role.write() = Role::Standby;
        self.say(&format!("standby: {why}"));
        if let Some(l) = self.live() {
            l.store.set_replica(Some(Arc::new(Refusing)));
        }
        let rev = std::mem::take(&mut *self.leader_revision.lock());
        let _ = self.etcd.txn(
            vec![created_at(&self.keys.leader(), rev)],
            vec![delete_key_op(&self.keys.leader())],
            vec![],
        );
        self.reopen(None);
    }

    /// Closes the store and opens it again from its directory (after
    /// adopting `image`, a peer's checkpoint at a txid, when given).
    fn reopen(&self, image: Option<(u64, PathBuf)>) {
        let _g = self.apply.lock();
        let old = self.live.write().take();
        if let Some(old) = old {
            let _ = old.close(false);
            // Requests in flight hold the store until they end.
            let deadline = Instant::now() + Duration::from_secs(60);
            while Arc::strong_count(&old) > 1 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let started = Instant::now();
        loop {
            let adopted = match &image {
                Some((txid, path)) => nsimage_store::Store::adopt_image(
                    &self.dir,
                    &nsimage_store::fs::RealFs::default(),
                    *txid,
                    path,
                )
                .map(drop),
                None => Ok(()),
            };
            match adopted.and_then(|()| (self.opener)()) {
                Ok(live) => {
                    if self.log {
                        self.say(&format!(
                            "store reopened at txid {} in {:.3} s",
                            live.store.txid(),
                            started.elapsed().as_secs_f64()
                        ));
                    }
                    *self.live.write() = Some(Arc::new(live));
                    if let Some((_, p)) = &image {
                        let _ = std::fs::remove_file(p);
                    }
                    return;
                }
                Err(StoreError::Locked { .. }) if started.elapsed() < Duration::from_secs(180) => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => {
                    let why = format!("the store does not reopen: {e}");
                    self.say(&why);
                    self.fatal.send_replace(Some(why));
                    self.stop.store(true, Ordering::Release);
                    return;
                }
            }
        }
    }

    /// Applies every batch etcd holds after this store's txid; returns the
    /// etcd revision the reads saw.
    fn catch_up(&self, live: &Live) -> Result<i64, Behind> {
        let dir = self.keys.journal_dir();
        let end = prefix_end(&dir);
        let mut revision;
        let mut races = 0u32;
        loop {
            let next = live.store.txid().saturating_add(1);
            // A batch holding `next` that started before it (a store
            // whose txid came from a checkpoint taken inside a batch),
            // then the batches from `next` on.
            let head =
                self.etcd
                    .range_ordered(&dir, Some(&self.keys.batch(next)), 1, false, true)?;
            let rest = self
                .etcd
                .range(&self.keys.batch(next), Some(&end), PAGE, false)?;
            revision = rest.revision;
            let mut any = false;
            let mut raced = false;
            for kv in head.kvs.into_iter().chain(rest.kvs) {
                let batch = Batch::of(&self.keys, kv)?;
                match self.apply_batch(live, &batch) {
                    Ok(applied) => any |= applied,
                    // A batch committed between the two reads, or one
                    // truly gone: only `P/trimmed` tells.
                    Err(Behind::Gap { have, .. }) => {
                        let trimmed = self.trimmed()?;
                        if have < trimmed {
                            return Err(Behind::Gap { have, trimmed });
                        }
                        raced = true;
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
            // The lease is renewed between pages: a long catch-up of the
            // supervisor's (a promotion) must not let it expire.
            let _ = self.etcd.keepalive(*self.lease.lock());
            if raced {
                races += 1;
                if races > 3 {
                    return Err(Behind::Failed(HaError::Corrupt {
                        key: String::from_utf8_lossy(&self.keys.batch(next)).into_owned(),
                        detail: format!(
                            "etcd's journal holds no batch with txid {next}, though it \
                             starts below it (P/trimmed)"
                        ),
                    }));
                }
                continue;
            }
            if !any {
                let trimmed = self.trimmed()?;
                let have = live.store.txid();
                if have < trimmed {
                    return Err(Behind::Gap { have, trimmed });
                }
                break;
            }
            live.store.wait_durable(live.store.txid())?;
            if !rest.more {
                break;
            }
        }
        live.store.wait_durable(live.store.txid())?;
        Ok(revision)
    }

    /// Where etcd's journal begins.
    fn trimmed(&self) -> Result<u64, HaError> {
        Ok(admin::trimmed(&self.etcd, &self.keys)?.unwrap_or(0))
    }

    /// Applies one batch (the records this store has already skipped);
    /// whether it applied any.
    fn apply_batch(&self, live: &Live, batch: &Batch) -> Result<bool, Behind> {
        let have = live.store.txid();
        if batch.first > have.saturating_add(1) {
            return Err(Behind::Gap {
                have,
                trimmed: batch.first.saturating_sub(1),
            });
        }
        let key = String::from_utf8_lossy(&self.keys.batch(batch.first)).into_owned();
        let last = live.store.submit_replicated(&batch.records, &key)?;
        if last <= have {
            return Ok(false);
        }
        self.applied_batches.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }

    /// Notes the lag of a batch made durable here.
    fn note_lag(&self, committed_ms: u64) {
        let lag = now_ms().saturating_sub(committed_ms);
        let mut lags = self.lags.lock();
        if lags.len() >= LAGS_KEPT {
            lags.pop_front();
        }
        lags.push_back(lag);
    }

    /// The tailer's loop: a standby catches up, then applies what the
    /// watch delivers.
    fn tail(self: Arc<Self>) {
        let dir = self.keys.journal_dir();
        let end = prefix_end(&dir);
        while !self.stop.load(Ordering::Acquire) {
            if self.role() != Role::Standby || self.needs_checkpoint.load(Ordering::Acquire) {
                std::thread::sleep(TICK);
                continue;
            }
            let revision = {
                let _g = self.apply.lock();
                let Some(live) = self.live() else {
                    drop(_g);
                    std::thread::sleep(TICK);
                    continue;
                };
                if self.role() != Role::Standby {
                    continue;
                }
                match self.catch_up(&live) {
                    Ok(r) => {
                        *self.apply_error.lock() = None;
                        r
                    }
                    Err(Behind::Gap { have, trimmed }) => {
                        self.say(&format!(
                            "at txid {have}, and etcd's journal starts after {trimmed}: \
                             fetching a peer's checkpoint"
                        ));
                        self.needs_checkpoint.store(true, Ordering::Release);
                        continue;
                    }
                    Err(Behind::Failed(e)) => {
                        // Always said (at most every 10 s): a standby that
                        // cannot apply the journal is not a healthy one.
                        let mut last = self.failure_said.lock();
                        if last.is_none_or(|t| t.elapsed() >= LAG_LINE_EVERY) {
                            *last = Some(Instant::now());
                            self.say(&format!("cannot apply etcd's journal: {e}"));
                        }
                        *self.apply_error.lock() = Some(e.to_string());
                        drop(last);
                        drop(_g);
                        std::thread::sleep(Duration::from_millis(200));
                        continue;
                    }
                }
            };
            let watched = self
                .etcd
                .watch(&dir, &end, revision + 1, WATCH_IDLE, |kvs| {
                    let _g = self.apply.lock();
                    if self.role() != Role::Standby || self.stop.load(Ordering::Acquire) {
                        return Ok(false);
                    }
                    let Some(live) = self.live() else {
                        return Ok(false);
                    };
                    let mut stamps = Vec::new();
                    for kv in kvs {
                        let batch = Batch::of(&self.keys, kv)?;
                        match self.apply_batch(&live, &batch) {
                            Ok(true) => stamps.push(batch.committed_ms),
                            Ok(false) => {}
                            // Caught up again by range on the next turn.
                            Err(_) => return Ok(false),
                        }
                    }
                    live.store
                        .wait_durable(live.store.txid())
                        .map_err(HaError::Store)?;
                    for s in stamps {
                        self.note_lag(s);
                    }
                    Ok(true)
                });
            if let Err(e) = watched {
                if self.log {
                    self.say(&format!("watch: {e}"));
                }
                std::thread::sleep(TICK);
            }
        }
    }

    /// A standby behind etcd's journal fetches the newest checkpoint a
    /// peer advertises (at or after where the journal starts), checks it,
    /// and reopens its store from it.
    fn catch_up_from_peer(&self) {
        let (Ok(members), Ok(trimmed)) = (self.members(), self.trimmed()) else {
            return;
        };
        let Some(peer) = members
            .iter()
            .filter(|m| m["id"].as_str() != Some(self.cfg.id.as_str()))
            .filter(|m| m["checkpoint_txid"].as_u64().is_some_and(|t| t >= trimmed))
            .max_by_key(|m| m["checkpoint_txid"].as_u64())
            .and_then(|m| m["url"].as_str().map(str::to_string))
        else {
            std::thread::sleep(Duration::from_secs(1));
            return;
        };
        let live = self.live();
        let encrypted = live
            .as_ref()
            .is_some_and(|l| l.store.at_rest().is_encrypted());
        // The member's live namespace is still held while the fetched one
        // loads beside it (its store's own budget applies again when it
        // reopens from the checkpoint).
        let room = self.cfg.memory.map(|b| {
            b.beside(|| {
                live.as_ref()
                    .map_or(0, |l| l.store.with_namespace(|ns| ns.heap_bytes()) as u64)
            })
        });
        drop(live);
        match fetch::fetch_checkpoint(
            &peer,
            &self.fetch_user.lock().clone(),
            &self.dir,
            self.namespace_id,
            encrypted,
            self.key(),
            room,
        ) {
            Ok((txid, path, served)) => {
                drop(served);
                self.say(&format!("fetched {peer}'s checkpoint at txid {txid}"));
                self.reopen(Some((txid, path)));
                self.needs_checkpoint.store(false, Ordering::Release);
            }
            Err(e) => {
                self.say(&e.to_string());
                // A checkpoint that does not fit is not fetched again until
                // memory may have been freed.
                let wait = if matches!(e, HaError::TooLarge { .. }) {
                    crate::source::RETRY_TOO_LARGE
                } else {
                    Duration::from_secs(1)
                };
                self.sleep_unless_stopped(wait);
            }
        }
    }

    /// Sleeps `wait`, or less when the member is stopped meanwhile.
    fn sleep_unless_stopped(&self, wait: Duration) {
        let until = Instant::now() + wait;
        while !self.stop.load(Ordering::Acquire) {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            std::thread::sleep(left.min(TICK));
        }
    }

    /// The key of an encrypted store.
    fn key(&self) -> Option<nsimage_format::cipher::Key> {
        self.live().and_then(|l| l.store.key().cloned())
    }
}

/// The newest txid the group's journal holds (its last batch's last
/// record; `P/trimmed` when it holds none).
fn group_head(etcd: &Etcd, keys: &Keys) -> Result<u64, HaError> {
    let dir = keys.journal_dir();
    let last = etcd.range_ordered(&dir, Some(&prefix_end(&dir)), 1, false, true)?;
    if let Some(kv) = last.kvs.into_iter().next() {
        let batch = Batch::of(keys, kv)?;
        let records =
            super::journal::count_records(&batch.records).map_err(|detail| HaError::Corrupt {
                key: String::from_utf8_lossy(&keys.batch(batch.first)).into_owned(),
                detail,
            })?;
        return Ok(batch.first.saturating_add(records).saturating_sub(1));
    }
    Ok(admin::trimmed(etcd, keys)?.unwrap_or(0))
}

/// The `p`th percentile of `v` (nearest rank).
fn percentile(v: &[u64], p: usize) -> Option<u64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_unstable();
    let rank = (s.len() * p).div_ceil(100).clamp(1, s.len());
    s.get(rank - 1).copied()
}
