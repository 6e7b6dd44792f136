//! The `Store`: one directory holding images and journal segments, opened by
//! one process at a time.

use crate::edit;
use crate::fs::{Fs, FsFile, RealFs};
use crate::journal::{self, Segment};
use crate::{failpoint, StoreError};
use nsimage_format::pb;
use nsimage_format::pb::journal_op::Op;
use nsimage_format::Location;
use nsimage_loader::{load, LoadOptions};
use nsimage_namespace::Namespace;
use nsimage_namespace::NsError;
use nsimage_writer::{write_image, WriteOptions};
use parking_lot::{Condvar, Mutex};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

const VERSION_FILE: &str = "VERSION";
const VERSION_TEXT: &str = "nsimage-store 1\n";
const LOCK_FILE: &str = "LOCK";

/// How a store behaves.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// Images kept after a checkpoint (the newest ones).
    pub keep_images: usize,
    /// An open segment is finished once it reaches this many bytes.
    pub segment_bytes: u64,
    /// Segments up to this size are replayed from one bulk read.
    pub bulk_replay_bytes: u64,
    pub write: WriteOptions,
    pub load: LoadOptions,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            keep_images: 2,
            segment_bytes: 64 << 20,
            bulk_replay_bytes: 64 << 20,
            write: WriteOptions::default(),
            load: LoadOptions::default(),
        }
    }
}

/// What opening (recovering) a store did.
#[derive(Clone, Debug, Default)]
pub struct RecoveryReport {
    pub image: PathBuf,
    pub image_txid: u64,
    /// Newer images that did not load, with why.
    pub skipped_images: Vec<(PathBuf, String)>,
    pub replayed: u64,
    pub segments: usize,
    /// Segments read with one bulk read (the rest were streamed).
    pub bulk_segments: usize,
    pub read_calls: u64,
    pub torn_tail_bytes: u64,
    pub txid: u64,
    pub load_seconds: f64,
    pub replay_seconds: f64,
    pub seconds: f64,
}

/// A summary of the store's files.
#[derive(Clone, Debug, Default)]
pub struct Status {
    pub txid: u64,
    /// The txid of the image recovery starts from ([`Store::inspect`] only).
    pub image_txid: u64,
    /// `(txid, bytes)` of every image, oldest first.
    pub images: Vec<(u64, u64)>,
    /// `(name, bytes)` of every journal segment, in txid order.
    pub segments: Vec<(String, u64)>,
    /// Temporary files of checkpoints that did not finish (`image_<T>.tmp`).
    pub temps: Vec<String>,
    /// Names in the directory that are not the store's: never read, never
    /// removed.
    pub unknown: Vec<String>,
    /// Bytes of a torn tail that opening would cut ([`Store::inspect`] only).
    pub torn_tail_bytes: u64,
    /// The open segment is a torn create that opening would replace
    /// ([`Store::inspect`] only).
    pub torn_create: bool,
    /// The namespace digest at `txid` ([`Store::inspect`] only).
    pub digest: Option<String>,
}

struct JournalState {
    file: Option<Box<dyn FsFile>>,
    /// First txid of the open segment.
    seg_first: u64,
    seg_bytes: u64,
    /// Encoded records not yet written, and the last txid among them.
    pending: Vec<u8>,
    pending_last: u64,
    durable: u64,
    flushing: bool,
    failed: Option<String>,
}

pub struct Store {
    dir: PathBuf,
    fs: Arc<dyn Fs>,
    opts: StoreOptions,
    _lock: File,
    ns: Mutex<Namespace>,
    journal: Mutex<JournalState>,
    flushed: Condvar,
    report: RecoveryReport,
}

fn image_name(txid: u64) -> String {
    format!("image_{txid:020}")
}

/// The name of the temporary file a checkpoint at `txid` writes.
fn temp_name(txid: u64) -> String {
    format!("{}.tmp", image_name(txid))
}

/// `image_<20 digits>`: an image's txid; `None` for any other name.
fn parse_image(name: &str) -> Option<u64> {
    journal::parse_txid20(name.strip_prefix("image_")?)
}

/// `image_<20 digits>.tmp`: a checkpoint that did not finish.
fn parse_temp(name: &str) -> Option<u64> {
    parse_image(name.strip_suffix(".tmp")?)
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Checks that `dir` is a directory holding a store of this version.
/// Errors name `dir` (the path the user gave) unless a file in it is at
/// fault.
fn check_store(fs: &dyn Fs, dir: &Path) -> Result<(), StoreError> {
    let not_a_store = |detail: &str| StoreError::NotAStore {
        path: dir.to_path_buf(),
        detail: detail.into(),
    };
    // Through `fs` (not std::fs) so that a simulated file system works too.
    if let Err(e) = fs.list(dir) {
        return Err(if e.kind() == std::io::ErrorKind::NotADirectory {
            not_a_store("not a directory")
        } else {
            io_err(dir)(e)
        });
    }
    let vpath = dir.join(VERSION_FILE);
    let len = match fs.len(&vpath) {
        Ok(len) => len,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(not_a_store("no VERSION file: not a store"));
        }
        Err(e) => return Err(io_err(&vpath)(e)),
    };
    let version = if len == VERSION_TEXT.len() as u64 {
        fs.read(&vpath).map_err(io_err(&vpath))?
    } else {
        Vec::new()
    };
    if version != VERSION_TEXT.as_bytes() {
        return Err(StoreError::Invalid {
            path: vpath,
            detail: format!(
                "unknown store version {:?} ({len} bytes)",
                String::from_utf8_lossy(&version)
            ),
        });
    }
    Ok(())
}

/// Takes the store's exclusive lock. Errors name the store directory.
fn lock_dir(dir: &Path) -> Result<File, StoreError> {
    let path = dir.join(LOCK_FILE);
    let f = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io_err(dir))?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(std::fs::TryLockError::WouldBlock) => Err(StoreError::Locked {
            path: dir.to_path_buf(),
        }),
        Err(std::fs::TryLockError::Error(e)) => Err(io_err(dir)(e)),
    }
}

/// The entries of a store directory, by kind.
#[derive(Debug, Default)]
struct Listing {
    /// Image txids, newest first.
    images: Vec<u64>,
    /// Segments in txid order (at equal first txids, finished before open).
    segments: Vec<Segment>,
    /// `image_<T>.tmp` names: checkpoints that did not finish.
    temps: Vec<String>,
    /// Every other name except `VERSION` and `LOCK`: never read or removed.
    unknown: Vec<String>,
}

fn list_store(fs: &dyn Fs, dir: &Path) -> Result<Listing, StoreError> {
    let mut names = fs.list(dir).map_err(io_err(dir))?;
    names.sort();
    let mut l = Listing::default();
    for n in names {
        if n == VERSION_FILE || n == LOCK_FILE {
            continue;
        }
        if let Some(t) = parse_image(&n) {
            l.images.push(t);
        } else if parse_temp(&n).is_some() {
            l.temps.push(n);
        } else if let Some(s) = Segment::parse(dir, &n) {
            l.segments.push(s);
        } else {
            l.unknown.push(n);
        }
    }
    l.images.sort_unstable_by(|a, b| b.cmp(a));
    l.segments.sort_by_key(|s| (s.first, s.last.is_none()));
    Ok(l)
}

/// What opening must do to the open segment once recovery has read it.
#[derive(Debug)]
enum Tail {
    /// No open segment holds txids after the namespace: start a new one.
    Create,
    /// Go on appending to the open segment (first txid `first`) after its
    /// first `len` bytes; `torn` bytes after them are a torn tail to cut.
    Append { first: u64, len: u64, torn: u64 },
    /// The open segment is a torn create (no complete header, nothing
    /// else): remove it and start a new one.
    Replace { path: PathBuf },
}

/// The state recovery reaches, found without changing any file.
struct Recovered {
    ns: Namespace,
    report: RecoveryReport,
    listing: Listing,
    tail: Tail,
}

/// Reads the store in `dir`: the newest image that loads, then every
/// journal record after it. Reads only: what the files need (a cut, a
/// replaced segment) is returned in `tail` for [`Store::open`] to do.
fn recover(fs: &dyn Fs, dir: &Path, opts: &StoreOptions) -> Result<Recovered, StoreError> {
    let started = Instant::now();
    let reads_before = fs.read_calls();
    let listing = list_store(fs, dir)?;

    let mut report = RecoveryReport::default();
    let mut ns = None;
    for &t in &listing.images {
        let path = dir.join(image_name(t));
        match load(&path, &opts.load) {
            Ok(l) if l.namespace.info().last_txid == t => {
                report.image = path;
                report.image_txid = t;
                ns = Some(l.namespace);
                break;
            }
            Ok(l) => report.skipped_images.push((
                path,
                format!(
                    "holds txid {}, its name says {t}",
                    l.namespace.info().last_txid
                ),
            )),
            Err(e) => {
                // The load error names the image already: keep its cause
                // only, the path is beside it.
                let text = e.to_string();
                let prefix = format!("{}: ", path.display());
                let cause = text.strip_prefix(&prefix).unwrap_or(&text).to_string();
                report.skipped_images.push((path, cause))
            }
        }
    }
    let Some(mut ns) = ns else {
        let detail = report
            .skipped_images
            .iter()
            .map(|(p, e)| format!("{}: {e}", p.display()))
            .collect::<Vec<_>>()
            .join("; ");
        return Err(StoreError::NoImage {
            path: dir.to_path_buf(),
            detail: if detail.is_empty() {
                "no images".into()
            } else {
                detail
            },
        });
    };
    report.load_seconds = started.elapsed().as_secs_f64();

    let replay_started = Instant::now();
    let base = report.image_txid;
    let mut tail = Tail::Create;
    for seg in &listing.segments {
        if let Some(last) = seg.last.filter(|&l| l < seg.first) {
            return Err(StoreError::Corrupt {
                path: seg.path.clone(),
                at: Location::at(0),
                detail: format!(
                    "segment name says it ends at txid {last}, before its first txid {}",
                    seg.first
                ),
            });
        }
    }
    let n_segments = listing.segments.len();
    for (k, seg) in listing.segments.iter().enumerate() {
        let at0 = |detail: String| StoreError::Corrupt {
            path: seg.path.clone(),
            at: Location::at(0),
            detail,
        };
        if seg.last.is_some_and(|last| last <= base) {
            continue;
        }
        let is_open = seg.last.is_none();
        if is_open && k + 1 != n_segments {
            return Err(at0("an open segment is followed by another segment".into()));
        }
        // A gap: the segment starts after the txid that comes next.
        if seg.first.saturating_sub(1) > ns.info().last_txid {
            return Err(at0(format!(
                "journal gap: segment starts at txid {}, the namespace is at {}",
                seg.first,
                ns.info().last_txid
            )));
        }
        let mut replayed = 0u64;
        let mut replay = |mut rec: pb::JournalOp| -> Result<(), StoreError> {
            let now = ns.info().last_txid;
            if rec.txid <= now {
                return Ok(());
            }
            let bad = |detail: String| StoreError::Corrupt {
                path: seg.path.clone(),
                at: Location::at(0),
                detail,
            };
            // rec.txid > now, so now < u64::MAX and this never fails.
            let want = now
                .checked_add(1)
                .ok_or_else(|| bad("txid overflow".into()))?;
            if rec.txid != want {
                return Err(bad(format!(
                    "journal gap: txid {} where {want} was expected",
                    rec.txid
                )));
            }
            let Some(o) = rec.op.as_mut() else {
                return Err(bad(format!("txid {} holds no operation", rec.txid)));
            };
            edit::apply(&mut ns, o)
                .map_err(|e| bad(format!("replaying txid {}: {e}", rec.txid)))?;
            ns.info_mut().last_txid = rec.txid;
            replayed += 1;
            Ok(())
        };
        let r = journal::read(fs, seg, is_open, opts.bulk_replay_bytes, &mut replay)?;
        report.replayed += replayed;
        report.segments += 1;
        report.bulk_segments += usize::from(r.bulk);
        if let Some(last) = seg.last {
            if ns.info().last_txid < last {
                return Err(StoreError::Corrupt {
                    path: seg.path.clone(),
                    at: Location::at(r.valid_len),
                    detail: format!(
                        "finished segment ends at txid {} but its name says {last}",
                        ns.info().last_txid
                    ),
                });
            }
        }
        if is_open {
            report.torn_tail_bytes += r.torn_bytes;
            tail = if r.headerless {
                Tail::Replace {
                    path: seg.path.clone(),
                }
            } else {
                Tail::Append {
                    first: seg.first,
                    len: r.valid_len,
                    torn: r.torn_bytes,
                }
            };
        }
    }
    report.replay_seconds = replay_started.elapsed().as_secs_f64();
    report.txid = ns.info().last_txid;
    report.read_calls = fs.read_calls() - reads_before;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(Recovered {
        ns,
        report,
        listing,
        tail,
    })
}

/// The status of the files in `listing`, at `txid`.
fn status_of(fs: &dyn Fs, dir: &Path, listing: &Listing, txid: u64) -> Status {
    let len = |n: &str| fs.len(&dir.join(n)).unwrap_or(0);
    let mut images: Vec<(u64, u64)> = listing
        .images
        .iter()
        .map(|&t| (t, len(&image_name(t))))
        .collect();
    images.sort_unstable();
    Status {
        txid,
        images,
        segments: listing
            .segments
            .iter()
            .map(|s| {
                let n = s.name();
                let l = len(&n);
                (n, l)
            })
            .collect(),
        temps: listing.temps.clone(),
        unknown: listing.unknown.clone(),
        ..Status::default()
    }
}

impl Store {
    /// Creates a store in `dir` (created if missing; must hold no store):
    /// an empty namespace as image 0 and an open journal segment.
    pub fn init(dir: &Path, fs: Arc<dyn Fs>) -> Result<(), StoreError> {
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
        let _lock = lock_dir(dir)?;
        let names = fs.list(dir).map_err(io_err(dir))?;
        if names
            .iter()
            .any(|n| n == VERSION_FILE || parse_image(n).is_some())
        {
            return Err(StoreError::Invalid {
                path: dir.to_path_buf(),
                detail: "already holds a store".into(),
            });
        }
        let ns = Namespace::default();
        save_image(&*fs, dir, &ns, 0, &WriteOptions::default())?;
        create_segment(&*fs, dir, 1)?;
        let vpath = dir.join(VERSION_FILE);
        let mut f = fs.create(&vpath).map_err(io_err(&vpath))?;
        f.write_all(VERSION_TEXT.as_bytes())
            .map_err(io_err(&vpath))?;
        f.sync().map_err(io_err(&vpath))?;
        fs.sync_dir(dir).map_err(io_err(dir))
    }

    /// Opens the store in `dir` on the real file system.
    pub fn open_default(dir: &Path) -> Result<Store, StoreError> {
        Store::open(dir, Arc::new(RealFs::default()), StoreOptions::default())
    }

    /// Reads the store in `dir` as [`open`](Self::open) would recover it,
    /// without the lock and without changing anything: no file is created,
    /// removed, truncated or written, so it works on a read-only mount. A
    /// torn tail is reported, not cut; temporary and unknown files are
    /// listed. While another process writes the store, what it shows is a
    /// snapshot that may include that process's unfinished last write.
    pub fn inspect(dir: &Path, fs: &dyn Fs, opts: &StoreOptions) -> Result<Status, StoreError> {
        check_store(fs, dir)?;
        let rec = recover(fs, dir, opts)?;
        let mut st = status_of(fs, dir, &rec.listing, rec.ns.info().last_txid);
        st.image_txid = rec.report.image_txid;
        st.torn_tail_bytes = rec.report.torn_tail_bytes;
        st.torn_create = matches!(rec.tail, Tail::Replace { .. });
        st.digest = Some(rec.ns.digest().to_string());
        Ok(st)
    }

    /// Checks that `dir` holds a store of this version, reading only.
    pub fn check_dir(dir: &Path) -> Result<(), StoreError> {
        check_store(&RealFs::default(), dir)
    }

    /// Opens (recovers) the store in `dir`: the newest image that loads,
    /// then every journal record after it. A torn tail of the open segment
    /// is cut off and reported, a torn create replaced, and the temporary
    /// files of unfinished checkpoints removed (`format-spec/STORE.md`,
    /// "Open").
    pub fn open(dir: &Path, fs: Arc<dyn Fs>, opts: StoreOptions) -> Result<Store, StoreError> {
        let started = Instant::now();
        check_store(&*fs, dir)?;
        let lock = lock_dir(dir)?;
        let Recovered {
            ns,
            mut report,
            listing,
            tail,
        } = recover(&*fs, dir, &opts)?;
        for n in &listing.temps {
            // A checkpoint that did not finish; it was never renamed, and is
            // never read. One that cannot be removed (a directory of that
            // name: not the store's) is left and listed by `status`.
            let _ = fs.remove(&dir.join(n));
        }
        let txid = ns.info().last_txid;
        let new_segment = |fs: &dyn Fs| {
            let first = txid.checked_add(1).ok_or_else(|| StoreError::Invalid {
                path: dir.to_path_buf(),
                detail: format!("the namespace is at txid {txid}, the last one: no op can follow"),
            })?;
            let f = create_segment(fs, dir, first)?;
            Ok::<_, StoreError>((f, first, journal::HEADER_LEN as u64))
        };
        let (file, seg_first, seg_bytes) = match tail {
            Tail::Append { first, len, torn } => {
                let p = dir.join(journal::open_name(first));
                if torn > 0 {
                    fs.truncate(&p, len).map_err(io_err(&p))?;
                }
                (fs.append(&p).map_err(io_err(&p))?, first, len)
            }
            Tail::Replace { path } => {
                fs.remove(&path).map_err(io_err(&path))?;
                fs.sync_dir(dir).map_err(io_err(dir))?;
                new_segment(&*fs)?
            }
            Tail::Create => new_segment(&*fs)?,
        };
        report.seconds = started.elapsed().as_secs_f64();
        Ok(Store {
            dir: dir.to_path_buf(),
            fs,
            opts,
            _lock: lock,
            ns: Mutex::new(ns),
            journal: Mutex::new(JournalState {
                file: Some(file),
                seg_first,
                seg_bytes,
                pending: Vec::new(),
                pending_last: txid,
                durable: txid,
                flushing: false,
                failed: None,
            }),
            flushed: Condvar::new(),
            report,
        })
    }

    pub fn report(&self) -> &RecoveryReport {
        &self.report
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Runs `f` on the namespace (the state after the last applied op).
    pub fn with_namespace<R>(&self, f: impl FnOnce(&Namespace) -> R) -> R {
        f(&self.ns.lock())
    }

    /// Applies `op` and journals it; returns its txid once it is durable.
    pub fn apply(&self, op: Op) -> Result<u64, StoreError> {
        let txid = self.submit(op)?;
        self.wait_durable(txid)?;
        Ok(txid)
    }

    /// Applies `op` and queues its journal record; returns its txid, which
    /// is durable only after [`wait_durable`](Self::wait_durable) or
    /// [`sync`](Self::sync) returns.
    pub fn submit(&self, mut op: Op) -> Result<u64, StoreError> {
        let mut ns = self.ns.lock();
        if let Some(e) = &self.journal.lock().failed {
            return Err(StoreError::Poisoned(e.clone()));
        }
        // Checked before the op changes the namespace: a refused op takes
        // no txid.
        let txid = ns
            .info()
            .last_txid
            .checked_add(1)
            .ok_or_else(|| StoreError::Invalid {
                path: self.dir.clone(),
                detail: format!("txid {} is the last txid: no op can follow", u64::MAX),
            })?;
        // A record the replay would refuse is refused here, before the op
        // changes anything (applying may add `new_id`: a few bytes more).
        let size = op.encoded_len();
        if !journal::fits(size.saturating_add(64)) {
            return Err(StoreError::Refused(NsError::Invalid(format!(
                "a journal record of {size} bytes exceeds the largest the journal holds"
            ))));
        }
        edit::apply(&mut ns, &mut op)?;
        ns.info_mut().last_txid = txid;
        let rec = pb::JournalOp { txid, op: Some(op) };
        let mut j = self.journal.lock();
        journal::encode(&rec, &mut j.pending);
        j.pending_last = txid;
        Ok(txid)
    }

    /// Makes every submitted op durable; returns the durable txid.
    pub fn sync(&self) -> Result<u64, StoreError> {
        let last = self.journal.lock().pending_last;
        self.wait_durable(last)?;
        Ok(last)
    }

    /// Waits until `txid` is durable. One waiter at a time writes and
    /// fsyncs everything queued so far (group commit); the others wait for
    /// it. A failed write or fsync poisons the store: it is never retried
    /// as if it had succeeded.
    pub fn wait_durable(&self, txid: u64) -> Result<(), StoreError> {
        let mut j = self.journal.lock();
        loop {
            if j.durable >= txid {
                return Ok(());
            }
            if let Some(e) = &j.failed {
                return Err(StoreError::Poisoned(e.clone()));
            }
            if j.flushing {
                self.flushed.wait(&mut j);
                continue;
            }
            let buf = std::mem::take(&mut j.pending);
            let last = j.pending_last;
            let Some(mut file) = j.file.take() else {
                return Err(StoreError::Poisoned("no open segment".into()));
            };
            j.flushing = true;
            drop(j);
            let res = file.write_all(&buf).and_then(|()| {
                failpoint("journal-before-sync");
                file.sync()
            });
            j = self.journal.lock();
            j.file = Some(file);
            j.flushing = false;
            match res {
                Ok(()) => {
                    j.durable = last;
                    j.seg_bytes += buf.len() as u64;
                    if j.seg_bytes >= self.opts.segment_bytes {
                        if let Err(e) = self.roll(&mut j) {
                            j.failed = Some(e.to_string());
                        }
                    }
                }
                Err(e) => {
                    let path = self.dir.join(journal::open_name(j.seg_first));
                    j.failed = Some(format!("{}: {e}", path.display()));
                }
            }
            self.flushed.notify_all();
        }
    }

    /// Finishes the open segment at the durable txid and opens the next one.
    /// Called with everything up to `durable` written and fsynced.
    fn roll(&self, j: &mut JournalState) -> Result<(), StoreError> {
        if j.durable < j.seg_first {
            return Ok(()); // nothing in the open segment yet
        }
        let from = self.dir.join(journal::open_name(j.seg_first));
        let to = self
            .dir
            .join(journal::finished_name(j.seg_first, j.durable));
        j.file = None;
        self.fs.rename(&from, &to).map_err(io_err(&from))?;
        self.fs.sync_dir(&self.dir).map_err(io_err(&self.dir))?;
        failpoint("roll-renamed");
        let next = j
            .durable
            .checked_add(1)
            .ok_or_else(|| StoreError::Invalid {
                path: self.dir.clone(),
                detail: format!("txid {} is the last txid: no segment can follow", j.durable),
            })?;
        j.file = Some(create_segment(&*self.fs, &self.dir, next)?);
        j.seg_first = next;
        j.seg_bytes = journal::HEADER_LEN as u64;
        Ok(())
    }

    /// Saves the namespace as an image at the current txid (atomically),
    /// finishes the journal segment there, and purges what retention no
    /// longer needs. Returns the image's txid.
    pub fn checkpoint(&self) -> Result<u64, StoreError> {
        let ns = self.ns.lock();
        let t = ns.info().last_txid;
        self.wait_durable(t)?;
        let path = self.dir.join(image_name(t));
        if self.fs.len(&path).is_err() {
            save_image(&*self.fs, &self.dir, &ns, t, &self.opts.write)?;
        }
        drop(ns);
        {
            let mut j = self.journal.lock();
            // Finish the segment at t unless ops submitted after the image
            // was taken are already durable in it (then it stays open; replay
            // skips what the image holds).
            if j.durable >= j.seg_first && j.durable == t {
                if let Err(e) = self.roll(&mut j) {
                    j.failed = Some(e.to_string());
                    return Err(e);
                }
            }
        }
        self.purge()?;
        Ok(t)
    }

    /// Keeps the newest `keep_images` images and the segments needed to
    /// replay from the oldest of them.
    fn purge(&self) -> Result<(), StoreError> {
        let dir = &self.dir;
        let names = self.fs.list(dir).map_err(io_err(dir))?;
        let mut images: Vec<u64> = names.iter().filter_map(|n| parse_image(n)).collect();
        images.sort_unstable_by(|a, b| b.cmp(a));
        let keep = self.opts.keep_images.max(1);
        if images.len() <= keep {
            return Ok(());
        }
        let oldest_kept = images[keep - 1];
        for &t in &images[keep..] {
            let p = dir.join(image_name(t));
            self.fs.remove(&p).map_err(io_err(&p))?;
            failpoint("purge-image");
        }
        for seg in names.iter().filter_map(|n| Segment::parse(dir, n)) {
            if seg.last.is_some_and(|l| l <= oldest_kept) {
                self.fs.remove(&seg.path).map_err(io_err(&seg.path))?;
                failpoint("purge-segment");
            }
        }
        self.fs.sync_dir(dir).map_err(io_err(dir))
    }

    /// The store's files and txid (of this open store).
    pub fn status(&self) -> Result<Status, StoreError> {
        let listing = list_store(&*self.fs, &self.dir)?;
        let txid = self.ns.lock().info().last_txid;
        Ok(status_of(&*self.fs, &self.dir, &listing, txid))
    }
}

/// Writes a new open segment holding only its header, durably: the header
/// written and fsynced and the directory fsynced before the segment is
/// returned, so no op is acknowledged into a segment that a crash could
/// leave without its header or its name. A crash at any step leaves a torn
/// create (empty, zeros or part of the header), which opening replaces.
fn create_segment(fs: &dyn Fs, dir: &Path, first: u64) -> Result<Box<dyn FsFile>, StoreError> {
    let p = dir.join(journal::open_name(first));
    let mut f = fs.create(&p).map_err(io_err(&p))?;
    failpoint("segment-created");
    f.write_all(&journal::header()).map_err(io_err(&p))?;
    f.sync().map_err(io_err(&p))?;
    failpoint("segment-header-synced");
    fs.sync_dir(dir).map_err(io_err(dir))?;
    failpoint("segment-dir-synced");
    Ok(f)
}

/// Saves `ns` as `image_<txid>`: temporary file, fsync, rename, fsync of
/// the directory.
fn save_image(
    fs: &dyn Fs,
    dir: &Path,
    ns: &Namespace,
    txid: u64,
    opts: &WriteOptions,
) -> Result<(), StoreError> {
    let path = dir.join(image_name(txid));
    let tmp = dir.join(temp_name(txid));
    let result = (|| {
        let file = fs.create(&tmp).map_err(io_err(&tmp))?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        write_image(ns, &mut out, opts).map_err(io_err(&tmp))?;
        let mut file = out.into_inner().map_err(|e| io_err(&tmp)(e.into_error()))?;
        file.sync().map_err(io_err(&tmp))?;
        drop(file);
        failpoint("checkpoint-written");
        fs.rename(&tmp, &path).map_err(io_err(&tmp))?;
        failpoint("checkpoint-renamed");
        fs.sync_dir(dir).map_err(io_err(dir))
    })();
    if result.is_err() {
        let _ = fs.remove(&tmp);
    }
    result
}
