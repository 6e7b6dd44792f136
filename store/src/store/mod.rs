//! The [`Store`]: one directory holding images and journal segments,
//! opened by one process at a time.
//!
//! - `recover`: what opening reads (image choice, replay, torn tail);
//! - `commit`: journal appends, group commit, durability, segment rolls;
//! - `checkpoint`: images at a snapshot's txid, saved with no lock that
//!   writers need, then the roll and retention;
//! - `background`: the background checkpointer's thread;
//! - `checkpointer`: the background [`Checkpointer`] and its
//!   [`CheckpointPolicy`];
//! - `files`: names, listing, version and lock, segment creation,
//!   retention and temporary-file cleanup, [`Status`];
//! - `options`: [`StoreOptions`];
//! - `at_rest`: [`AtRestSettings`], the store's compression and
//!   encryption recorded at init, and the key check.

mod at_rest;
mod background;
mod checkpoint;
mod checkpointer;
mod commit;
mod files;
#[cfg(feature = "serde")]
mod json;
mod options;
mod recover;

pub use at_rest::AtRestSettings;
pub use checkpointer::{CheckpointEvent, CheckpointPolicy, Checkpointer};
pub use files::{image_name, parse_image as image_txid, Status};
pub use options::StoreOptions;
pub use recover::RecoveryReport;

use self::recover::{Recovered, Tail};
use crate::error::{io_err, StoreError};
use crate::fs::{Fs, FsFile, RealFs};
use crate::journal::{Sealing, SegmentSealer};
use crate::save::{self, Temp};
use nsimage_namespace::Namespace;
use nsimage_writer::{AtRestOptions, WriteOptions};
use parking_lot::{Condvar, Mutex, RwLock};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// The journal's side of an open store (behind its own lock).
struct JournalState {
    file: Option<Box<dyn FsFile>>,
    /// First txid of the open segment.
    seg_first: u64,
    seg_bytes: u64,
    /// The open segment's sealer (an encrypted store).
    sealer: Option<Arc<SegmentSealer>>,
    /// Encoded records not yet written, the first and the last txid among
    /// them.
    pending: Vec<u8>,
    pending_first: u64,
    pending_last: u64,
    durable: u64,
    flushing: bool,
    failed: Option<String>,
}

/// An open store: the namespace at the last applied op, its journal, and
/// the exclusive lock on the directory. Ops are applied with
/// [`apply`](Self::apply) (or [`submit`](Self::submit) /
/// [`submit_with`](Self::submit_with) and
/// [`wait_durable`](Self::wait_durable) for group commit); a
/// [`checkpoint`](Self::checkpoint) saves an image and purges what
/// retention no longer needs, and a [`Checkpointer`]
/// ([`spawn_checkpointer`](Self::spawn_checkpointer)) takes them in the
/// background.
///
/// # Concurrency
///
/// A `Store` is `Sync`: share it (an `Arc<Store>`) between threads. The
/// namespace sits behind a reader-writer lock: [`with_namespace`]
/// (reads) takes it shared, so reads run concurrently with each other;
/// [`submit`] and [`submit_with`] take it exclusively for as long as it
/// takes to check and apply one op and queue its record (never for an
/// fsync: [`wait_durable`] waits outside it). A checkpoint holds it
/// (shared) only to take a snapshot of the namespace
/// ([`Namespace::clone`], a copy-on-write snapshot) and saves the image
/// with no lock that writers need. [`with_namespace`] sees every applied
/// op, durable or not (the writers' view); readers that must see only
/// durable ops take [`durable_namespace`] (with
/// [`StoreOptions::durable_view`]), which holds no lock at all.
///
/// [`with_namespace`]: Self::with_namespace
/// [`durable_namespace`]: Self::durable_namespace
/// [`submit`]: Self::submit
/// [`submit_with`]: Self::submit_with
/// [`wait_durable`]: Self::wait_durable
pub struct Store {
    dir: PathBuf,
    fs: Arc<dyn Fs>,
    opts: StoreOptions,
    at_rest: AtRestSettings,
    _lock: File,
    ns: RwLock<Namespace>,
    /// With [`StoreOptions::durable_view`]: the namespace as of the last
    /// durable op, published by each group commit once its fsync is done
    /// (`None` without it).
    durable_view: Mutex<Option<Arc<Namespace>>>,
    journal: Mutex<JournalState>,
    flushed: Condvar,
    report: RecoveryReport,
    /// The txid of the last applied op (the namespace's), readable without
    /// its lock (the background checkpointer polls it).
    applied: AtomicU64,
    /// The txid of the newest image this store has (found at open, or
    /// saved since).
    newest_image: AtomicU64,
    /// Held by the one checkpoint that runs at a time.
    checkpoint_lock: Mutex<()>,
    /// The txid of the checkpoint running now, if any.
    running: Mutex<Option<u64>>,
    /// The one-thread pool (lowered priority) that checkpoints save their
    /// images on; built at the first checkpoint (`None`: it could not be
    /// built, and the save runs on the caller's thread).
    save_pool: OnceLock<Option<rayon::ThreadPool>>,
    /// Where each group commit goes before the journal (`None`: nowhere,
    /// the journal alone makes an op durable).
    replica: RwLock<Option<Arc<dyn crate::replica::Replica>>>,
}

/// Saves `ns` as the store's image at `txid`, through the atomic save
/// with the checkpoint's temporary name (`image_<T>.tmp`).
fn save_checkpoint(
    fs: &dyn Fs,
    dir: &Path,
    ns: &Namespace,
    txid: u64,
    opts: &WriteOptions,
    limit: Option<u64>,
) -> Result<(), StoreError> {
    let path = dir.join(files::image_name(txid));
    let tmp = dir.join(files::temp_name(txid));
    save::save_as(fs, &path, Temp::Checkpoint(&tmp, limit), |out| {
        nsimage_writer::write_image(ns, out, opts)
    })
    .map(drop)
}

/// `opts` with the store's at-rest settings applied: checkpoints written
/// with its compression and (encrypted) its key, images loaded with the
/// key.
fn effective(opts: StoreOptions, at_rest: &AtRestSettings) -> StoreOptions {
    let mut o = opts;
    let key = if at_rest.is_encrypted() {
        o.key.clone()
    } else {
        None
    };
    o.write.at_rest = AtRestOptions {
        compression: at_rest.compression,
        key: key.clone(),
    };
    if key.is_some() {
        o.load.key = key;
    }
    o
}

impl Store {
    /// Creates a store in `dir` (created if missing; must hold no store):
    /// an empty namespace as image 0 and an open journal segment. Its
    /// checkpoint images are compressed with `at_rest.compression` and,
    /// with `at_rest.key`, encrypted, as are its journal batches
    /// (STORE.md, "At rest"). The settings are recorded in `AT_REST` (the
    /// key's fingerprint, never the key) and every later open follows
    /// them. Plain options (`AtRestOptions::default()`) make a plain
    /// (version 1) store.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] when `dir` already holds a store,
    /// [`StoreError::Locked`] when another process holds it, and
    /// [`StoreError::Io`] when a file cannot be written.
    pub fn init(dir: &Path, fs: Arc<dyn Fs>, at_rest: &AtRestOptions) -> Result<(), StoreError> {
        Store::init_from(dir, fs, at_rest, &Namespace::default())
    }

    /// Creates a store in `dir` as [`init`](Self::init) does, whose first
    /// image is `ns` at its txid `T = ns.info().last_txid` (`image_<T>`,
    /// written with the store's at-rest options) and whose open journal
    /// segment starts at `T + 1`: the store then continues `ns`'s txids.
    /// For a store holding an existing namespace (an image converted from a
    /// Hadoop fsimage, a generated one) without replaying it op by op.
    ///
    /// # Errors
    /// As [`init`](Self::init); [`StoreError::Invalid`] when `T` is the
    /// last txid (2^64 - 1: no op could follow).
    pub fn init_from(
        dir: &Path,
        fs: Arc<dyn Fs>,
        at_rest: &AtRestOptions,
        ns: &Namespace,
    ) -> Result<(), StoreError> {
        let t = ns.info().last_txid;
        let first = t.checked_add(1).ok_or_else(|| StoreError::Invalid {
            path: dir.to_path_buf(),
            detail: format!("the namespace is at txid {t}, the last one: no op can follow"),
        })?;
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
        let _lock = files::lock_dir(dir)?;
        let names = fs.list(dir).map_err(io_err(dir))?;
        if files::holds_store(&names) {
            return Err(StoreError::Invalid {
                path: dir.to_path_buf(),
                detail: "already holds a store".into(),
            });
        }
        let settings = AtRestSettings::new(at_rest.compression, at_rest.key.as_ref());
        let versioned = !settings.is_plain();
        if versioned {
            settings.write(&*fs, dir)?;
        }
        let write = WriteOptions {
            at_rest: at_rest.clone(),
            ..WriteOptions::default()
        };
        save_checkpoint(&*fs, dir, ns, t, &write, None)?;
        files::create_segment(&*fs, dir, first, at_rest.key.as_ref())?;
        files::write_version(&*fs, dir, versioned)
    }

    /// Opens the store in `dir` on the real file system.
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn open_default(dir: &Path) -> Result<Store, StoreError> {
        Store::open(dir, Arc::new(RealFs::default()), StoreOptions::default())
    }

    /// Reads the store in `dir` as [`open`](Self::open) would recover it,
    /// without the lock and without changing anything: no file is created,
    /// removed, truncated or written, so it works on a read-only mount. A
    /// torn tail is reported, not cut; temporary and unknown files are
    /// listed. While another process writes the store, what it shows is a
    /// snapshot that may include that process's unfinished last write.
    ///
    /// # Errors
    /// As [`open`](Self::open), less the lock and the writes.
    ///
    /// An encrypted store inspected without a key (`opts.key` `None`) is
    /// only listed: its files and at-rest settings, with
    /// [`Status::recovered`] false. With another key it is
    /// [`StoreError::Key`].
    pub fn inspect(dir: &Path, fs: &dyn Fs, opts: &StoreOptions) -> Result<Status, StoreError> {
        let at_rest = files::check_store(fs, dir)?;
        if at_rest.is_encrypted() && opts.key.is_none() {
            let listing = files::list_store(fs, dir, true)?;
            let mut st = files::status_of(fs, dir, &listing, 0);
            st.at_rest = at_rest;
            return Ok(st);
        }
        at_rest.check_key(dir, opts.key.as_ref())?;
        let opts = effective(opts.clone(), &at_rest);
        let rec = recover::recover(fs, dir, &opts, &at_rest)?;
        let mut st = files::status_of(fs, dir, &rec.listing, rec.ns.info().last_txid);
        st.image_txid = rec.report.image_txid;
        st.torn_tail_bytes = rec.report.torn_tail_bytes;
        st.torn_create = matches!(rec.tail, Tail::Replace { .. });
        st.digest = Some(rec.ns.digest().to_string());
        st.at_rest = at_rest;
        st.recovered = true;
        Ok(st)
    }

    /// Checks that `dir` holds a store of a version this build reads,
    /// reading only.
    ///
    /// # Errors
    /// [`StoreError::NotAStore`] for a path that is not a store,
    /// [`StoreError::Invalid`] for an unknown version or bad at-rest
    /// settings, [`StoreError::Io`].
    pub fn check_dir(dir: &Path) -> Result<(), StoreError> {
        Store::at_rest_of(dir).map(drop)
    }

    /// The at-rest settings of the store in `dir` (plain for a version 1
    /// store), reading only.
    ///
    /// # Errors
    /// As [`check_dir`](Self::check_dir).
    pub fn at_rest_of(dir: &Path) -> Result<AtRestSettings, StoreError> {
        files::check_store(&RealFs::default(), dir)
    }

    /// What the journal reader expects of this store's segments, with the
    /// key `key` ([`journal::read`](crate::journal::read)).
    pub fn journal_sealing(
        at_rest: &AtRestSettings,
        key: Option<&nsimage_format::cipher::Key>,
    ) -> Sealing {
        at_rest.sealing(key)
    }

    /// Opens (recovers) the store in `dir`: the newest image that loads,
    /// then every journal record after it. A torn tail of the open segment
    /// is cut off and reported, a torn create replaced, and the temporary
    /// files of unfinished checkpoints removed (`format-spec/STORE.md`,
    /// "Open").
    ///
    /// # Errors
    /// [`StoreError::NotAStore`], [`StoreError::Locked`],
    /// [`StoreError::NoImage`] when no image loads,
    /// [`StoreError::Corrupt`] for damage recovery must not repair (a gap,
    /// a bad record before the tail), [`StoreError::Key`] for an
    /// encrypted store opened without its key or with another (found
    /// before anything else is read or written), [`StoreError::Io`].
    pub fn open(dir: &Path, fs: Arc<dyn Fs>, opts: StoreOptions) -> Result<Store, StoreError> {
        let started = Instant::now();
        let at_rest = files::check_store(&*fs, dir)?;
        at_rest.check_key(dir, opts.key.as_ref())?;
        let opts = effective(opts, &at_rest);
        let lock = files::lock_dir(dir)?;
        let Recovered {
            ns,
            mut report,
            listing,
            tail,
        } = recover::recover(&*fs, dir, &opts, &at_rest)?;
        files::remove_temps(&*fs, dir, &listing);
        let txid = ns.info().last_txid;
        let key = opts.write.at_rest.key.as_ref();
        let (seg, seg_first) = recover::open_tail(&*fs, dir, tail, txid, key)?;
        report.seconds = started.elapsed().as_secs_f64();
        let newest_image = report.image_txid;
        // Recovered: everything in it is durable.
        let durable_view = opts.durable_view.then(|| Arc::new(ns.frequent_snapshot()));
        Ok(Store {
            dir: dir.to_path_buf(),
            fs,
            opts,
            at_rest,
            _lock: lock,
            ns: RwLock::new(ns),
            durable_view: Mutex::new(durable_view),
            journal: Mutex::new(JournalState {
                file: Some(seg.file),
                seg_first,
                seg_bytes: seg.len,
                sealer: seg.sealer,
                pending: Vec::new(),
                pending_first: txid.saturating_add(1),
                pending_last: txid,
                durable: txid,
                flushing: false,
                failed: None,
            }),
            flushed: Condvar::new(),
            report,
            applied: AtomicU64::new(txid),
            newest_image: AtomicU64::new(newest_image),
            checkpoint_lock: Mutex::new(()),
            running: Mutex::new(None),
            save_pool: OnceLock::new(),
            replica: RwLock::new(None),
        })
    }

    /// The key of an encrypted store, as it was opened with (`None` for a
    /// plain one).
    pub fn key(&self) -> Option<&nsimage_format::cipher::Key> {
        self.opts.key.as_ref()
    }

    /// The newest image this store has, with its txid (the one a peer
    /// fetches to catch up).
    pub fn newest_image(&self) -> (u64, PathBuf) {
        let t = self.newest_image.load(std::sync::atomic::Ordering::Acquire);
        (t, self.dir.join(files::image_name(t)))
    }

    /// Adopts the image at `image` (a peer's checkpoint at `txid`, checked
    /// by the caller to be of this store's namespace and at that txid) as
    /// this store's image at `txid`: copied in by the atomic save under the
    /// store's own checkpoint name, so the next [`open`](Self::open)
    /// recovers from it (and from the journal after it). The store must
    /// not be open: its directory's lock is taken for the copy.
    ///
    /// # Errors
    /// [`StoreError::NotAStore`], [`StoreError::Locked`] (the store is
    /// open), [`StoreError::Io`].
    pub fn adopt_image(
        dir: &Path,
        fs: &dyn Fs,
        txid: u64,
        image: &Path,
    ) -> Result<PathBuf, StoreError> {
        files::check_store(fs, dir)?;
        let _lock = files::lock_dir(dir)?;
        let path = dir.join(files::image_name(txid));
        let tmp = dir.join(files::temp_name(txid));
        let mut src = File::open(image).map_err(io_err(image))?;
        save::save_as(fs, &path, Temp::Checkpoint(&tmp, None), |out| {
            std::io::copy(&mut src, out)
        })?;
        Ok(path)
    }

    /// What opening this store did.
    pub fn report(&self) -> &RecoveryReport {
        &self.report
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Runs `f` on the namespace (the state after the last applied op),
    /// under the namespace's lock taken shared: reads on other threads run
    /// at the same time, ops wait until `f` returns (so keep it short).
    /// It sees every op submitted before it, durable or not yet: the
    /// writers' view. What is shown to readers who must never see an op
    /// that is not durable comes from
    /// [`durable_namespace`](Self::durable_namespace).
    pub fn with_namespace<R>(&self, f: impl FnOnce(&Namespace) -> R) -> R {
        f(&self.ns.read())
    }

    /// The namespace as of the last durable op (with
    /// [`StoreOptions::durable_view`]; `None` without it): every op whose
    /// [`wait_durable`](Self::wait_durable) has returned is in it, and no
    /// op that is not durable yet, or whose journal write failed. A
    /// copy-on-write snapshot, replaced (never changed) by each group
    /// commit; holding it holds no lock.
    pub fn durable_namespace(&self) -> Option<Arc<Namespace>> {
        self.durable_view.lock().clone()
    }

    /// The txid of the last applied op, without taking the namespace's
    /// lock.
    pub fn txid(&self) -> u64 {
        self.applied.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The store's files and txid (of this open store).
    ///
    /// # Errors
    /// [`StoreError::Io`] when the directory cannot be listed.
    pub fn status(&self) -> Result<Status, StoreError> {
        let listing = files::list_store(&*self.fs, &self.dir, !self.at_rest.is_plain())?;
        let txid = self.ns.read().info().last_txid;
        let mut st = files::status_of(&*self.fs, &self.dir, &listing, txid);
        st.at_rest = self.at_rest;
        st.recovered = true;
        Ok(st)
    }

    /// How this store keeps its files at rest.
    pub fn at_rest(&self) -> &AtRestSettings {
        &self.at_rest
    }
}
