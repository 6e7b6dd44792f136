//! The files of a store directory: their names, the listing by kind, the
//! version check and the lock, segment creation, retention (purge) and the
//! cleanup of unfinished checkpoints, and the [`Status`] summary.

use super::at_rest::{AtRestSettings, AT_REST_FILE};
use crate::error::{io_err, StoreError};
use crate::failpoint;
use crate::fs::{Fs, FsFile};
use crate::journal::{self, Segment, SegmentSealer};
use nsimage_format::cipher::{random_image_id, Key};
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub(super) const VERSION_FILE: &str = "VERSION";
pub(super) const VERSION_TEXT: &str = "nsimage-store 1\n";
/// The version of a store whose files are compressed or encrypted at rest
/// (its settings are in `AT_REST`).
pub(super) const VERSION_TEXT_AT_REST: &str = "nsimage-store 2\n";
const LOCK_FILE: &str = "LOCK";

/// A summary of the store's files. With the feature `serde` it serializes
/// as `nsimage store status --json` prints it (see `json.rs`).
#[derive(Clone, Debug, Default)]
pub struct Status {
    /// The txid of the namespace (the last applied op).
    pub txid: u64,
    /// The txid of the image recovery starts from ([`Store::inspect`] only).
    ///
    /// [`Store::inspect`]: crate::Store::inspect
    pub image_txid: u64,
    /// `(txid, bytes)` of every image, oldest first.
    pub images: Vec<(u64, u64)>,
    /// `(name, bytes)` of every journal segment, in txid order.
    pub segments: Vec<(String, u64)>,
    /// Temporary files (`image_<T>.tmp`): checkpoints that did not finish,
    /// or old images whose removal did not.
    pub temps: Vec<String>,
    /// Names in the directory that are not the store's: never read, never
    /// removed.
    pub unknown: Vec<String>,
    /// Bytes of a torn tail that opening would cut ([`Store::inspect`]
    /// only).
    ///
    /// [`Store::inspect`]: crate::Store::inspect
    pub torn_tail_bytes: u64,
    /// The open segment is a torn create that opening would replace
    /// ([`Store::inspect`] only).
    ///
    /// [`Store::inspect`]: crate::Store::inspect
    pub torn_create: bool,
    /// The namespace digest at `txid` ([`Store::inspect`] only).
    ///
    /// [`Store::inspect`]: crate::Store::inspect
    pub digest: Option<String>,
    /// How the store keeps its files at rest.
    pub at_rest: AtRestSettings,
    /// False when [`Store::inspect`] listed the files of an encrypted
    /// store without its key: nothing was read, so `txid`, `image_txid`,
    /// `digest` and the torn fields are not known (zero, `None`, false).
    ///
    /// [`Store::inspect`]: crate::Store::inspect
    pub recovered: bool,
}

/// A checkpoint image's file name in a store: `image_<txid, 20 digits>`.
pub fn image_name(txid: u64) -> String {
    format!("image_{txid:020}")
}

/// The name of the temporary file a checkpoint at `txid` writes.
pub(super) fn temp_name(txid: u64) -> String {
    format!("{}.tmp", image_name(txid))
}

/// `image_<20 digits>`: an image's txid; `None` for any other name.
pub fn parse_image(name: &str) -> Option<u64> {
    journal::parse_txid20(name.strip_prefix("image_")?)
}

/// `image_<20 digits>.tmp`: a checkpoint that did not finish.
fn parse_temp(name: &str) -> Option<u64> {
    parse_image(name.strip_suffix(".tmp")?)
}

/// True when one of `names` says a store is already there.
pub(super) fn holds_store(names: &[String]) -> bool {
    names
        .iter()
        .any(|n| n == VERSION_FILE || parse_image(n).is_some())
}

/// Checks that `dir` is a directory holding a store of a version this
/// build reads, and returns its at-rest settings (plain for version 1).
/// Errors name `dir` (the path the user gave) unless a file in it is at
/// fault.
pub(super) fn check_store(fs: &dyn Fs, dir: &Path) -> Result<AtRestSettings, StoreError> {
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
    let version = if usize::try_from(len) == Ok(VERSION_TEXT.len()) {
        fs.read(&vpath).map_err(io_err(&vpath))?
    } else {
        Vec::new()
    };
    if version == VERSION_TEXT_AT_REST.as_bytes() {
        let settings = AtRestSettings::read(fs, dir)?;
        if settings.is_plain() {
            return Err(StoreError::Invalid {
                path: dir.join(AT_REST_FILE),
                detail: "a version 2 store whose at-rest settings are plain \
                         (a plain store is version 1)"
                    .into(),
            });
        }
        return Ok(settings);
    }
    if version != VERSION_TEXT.as_bytes() {
        return Err(StoreError::Invalid {
            path: vpath,
            detail: format!(
                "unknown store version {:?} ({len} bytes)",
                String::from_utf8_lossy(&version)
            ),
        });
    }
    Ok(AtRestSettings::default())
}

/// How long a busy lock is retried before the store is reported locked.
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_millis(250);

/// Takes the store's exclusive lock. Errors name the store directory.
///
/// A lock its holder has just let go of can stay taken for a moment: a
/// child process that another thread of this process is starting holds a
/// copy of the lock file's descriptor from its fork until its exec closes
/// it. So a busy lock is tried again for [`LOCK_PATIENCE`] before the store
/// is reported [`StoreError::Locked`]; a store really open elsewhere is
/// still refused, that much later.
pub(super) fn lock_dir(dir: &Path) -> Result<File, StoreError> {
    let path = dir.join(LOCK_FILE);
    let f = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io_err(dir))?;
    let started = std::time::Instant::now();
    loop {
        match f.try_lock() {
            Ok(()) => return Ok(f),
            Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < LOCK_PATIENCE => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(StoreError::Locked {
                    path: dir.to_path_buf(),
                })
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io_err(dir)(e)),
        }
    }
}

/// The entries of a store directory, by kind.
#[derive(Debug, Default)]
pub(super) struct Listing {
    /// Image txids, newest first.
    pub(super) images: Vec<u64>,
    /// Segments in txid order (at equal first txids, finished before open).
    pub(super) segments: Vec<Segment>,
    /// `image_<T>.tmp` names: checkpoints that did not finish.
    pub(super) temps: Vec<String>,
    /// Every other name except `VERSION`, `LOCK` and (in a version 2
    /// store) `AT_REST`: never read or removed.
    pub(super) unknown: Vec<String>,
}

/// Lists the store in `dir` by kind of file; `at_rest` when it is a
/// version 2 store (whose `AT_REST` is its own).
pub(super) fn list_store(fs: &dyn Fs, dir: &Path, at_rest: bool) -> Result<Listing, StoreError> {
    let mut names = fs.list(dir).map_err(io_err(dir))?;
    names.sort();
    let mut l = Listing::default();
    for n in names {
        if n == VERSION_FILE || n == LOCK_FILE || at_rest && n == AT_REST_FILE {
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

/// The status of the files in `listing`, at `txid`.
pub(super) fn status_of(fs: &dyn Fs, dir: &Path, listing: &Listing, txid: u64) -> Status {
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

/// Removes the temporary files of checkpoints that did not finish: they
/// were never renamed, and are never read. One that cannot be removed (a
/// directory of that name: not the store's) is left and listed by
/// `status`.
pub(super) fn remove_temps(fs: &dyn Fs, dir: &Path, listing: &Listing) {
    for n in &listing.temps {
        let _ = fs.remove(&dir.join(n));
    }
}

/// Removes the image at `txid`. One longer than `step` bytes (`step` >
/// 0) is renamed to its temporary name (the rename made durable: from
/// here on it is no image, and opening removes it), then, if the store
/// can [claim](Fs::claim) it (no reader has it open or mapped, no other
/// name shares it), cut `step` bytes at a time, each cut fsynced and
/// followed by a pause ([`PURGE_BYTES_PER_SEC`]), so that its blocks are
/// freed (and, on a disk that takes discards, discarded) over many
/// commits of the file system's journal instead of one that every other
/// fsync waits behind. A file it cannot claim is removed whole (its
/// readers keep it until they close it), as is the rest once `cancel`
/// is set.
fn remove_image(
    fs: &dyn Fs,
    dir: &Path,
    txid: u64,
    step: u64,
    cancel: Option<&AtomicBool>,
) -> Result<(), StoreError> {
    let p = dir.join(image_name(txid));
    let len = fs.len(&p).map_err(io_err(&p))?;
    if step == 0 || len <= step {
        return fs.remove(&p).map_err(io_err(&p));
    }
    let tmp = dir.join(temp_name(txid));
    fs.rename(&p, &tmp).map_err(io_err(&p))?;
    fs.sync_dir(dir).map_err(io_err(dir))?;
    failpoint("purge-image-renamed");
    if let Some(_held) = fs.claim(&tmp).map_err(io_err(&tmp))? {
        let pause = std::time::Duration::from_secs_f64(step as f64 / PURGE_BYTES_PER_SEC);
        let mut left = len;
        while left > step && !cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            left -= step;
            fs.truncate(&tmp, left).map_err(io_err(&tmp))?;
            failpoint("purge-image-cut");
            std::thread::sleep(pause);
        }
    }
    fs.remove(&tmp).map_err(io_err(&tmp))
}

/// Writes the `VERSION` file durably (the last step of creating a
/// store): version 1 for a plain store, 2 for one with at-rest settings.
pub(super) fn write_version(fs: &dyn Fs, dir: &Path, at_rest: bool) -> Result<(), StoreError> {
    let vpath = dir.join(VERSION_FILE);
    let mut f = fs.create(&vpath).map_err(io_err(&vpath))?;
    let text = if at_rest {
        VERSION_TEXT_AT_REST
    } else {
        VERSION_TEXT
    };
    f.write_all(text.as_bytes()).map_err(io_err(&vpath))?;
    f.sync().map_err(io_err(&vpath))?;
    fs.sync_dir(dir).map_err(io_err(dir))
}

/// Writes a new open segment holding only its header, durably: the header
/// written and fsynced and the directory fsynced before the segment is
/// returned, so no op is acknowledged into a segment that a crash could
/// leave without its header or its name. A crash at any step leaves a torn
/// create (empty, zeros or part of the header), which opening replaces.
/// With `key` (an encrypted store) the segment is sealed: a fresh random
/// segment id in its header, and its sealer returned.
pub(super) fn create_segment(
    fs: &dyn Fs,
    dir: &Path,
    first: u64,
    key: Option<&Key>,
) -> Result<NewSegment, StoreError> {
    let p = dir.join(journal::open_name(first));
    let (header, sealer) = match key {
        None => (journal::header().to_vec(), None),
        Some(k) => {
            let id = random_image_id();
            (
                journal::sealed_header(&id, &k.fingerprint()).to_vec(),
                Some(Arc::new(SegmentSealer::new(k, id, first))),
            )
        }
    };
    let mut f = fs.create(&p).map_err(io_err(&p))?;
    failpoint("segment-created");
    f.write_all(&header).map_err(io_err(&p))?;
    f.sync().map_err(io_err(&p))?;
    failpoint("segment-header-synced");
    fs.sync_dir(dir).map_err(io_err(dir))?;
    failpoint("segment-dir-synced");
    Ok(NewSegment {
        file: f,
        sealer,
        len: header.len() as u64,
    })
}

/// A segment just created: its file, its sealer (encrypted stores) and
/// its length (its header's).
pub(super) struct NewSegment {
    pub(super) file: Box<dyn FsFile>,
    pub(super) sealer: Option<Arc<SegmentSealer>>,
    pub(super) len: u64,
}

/// How fast an old image is cut
/// ([`StoreOptions::purge_step_bytes`](crate::StoreOptions::purge_step_bytes)):
/// after each step, a pause of the step's bytes at this rate (10 ms for
/// 16 MiB), which leaves the disk to other fsyncs between two steps'
/// discards.
const PURGE_BYTES_PER_SEC: f64 = 1600.0 * 1024.0 * 1024.0;

/// Retention: keeps the newest `keep` images (at least one) and the
/// segments needed to replay from the oldest of them; removes the rest,
/// an image longer than `step` bytes cut `step` bytes at a time first
/// ([`remove_image`]; removed at once when `cancel` is set), and the
/// temporary file of an image below the oldest kept whose cut stopped
/// halfway.
pub(super) fn purge(
    fs: &dyn Fs,
    dir: &Path,
    keep: usize,
    step: u64,
    cancel: Option<&AtomicBool>,
) -> Result<(), StoreError> {
    let names = fs.list(dir).map_err(io_err(dir))?;
    let mut images: Vec<u64> = names.iter().filter_map(|n| parse_image(n)).collect();
    images.sort_unstable_by(|a, b| b.cmp(a));
    let keep = keep.max(1);
    let (Some(&oldest_kept), Some(old)) = (images.get(keep - 1), images.get(keep..)) else {
        return Ok(());
    };
    // A checkpoint's own temporary file is at or above the newest image
    // (and renamed before its purge runs, under the same lock): one below
    // the oldest kept is what a cut left.
    for n in &names {
        if parse_temp(n).is_some_and(|t| t < oldest_kept) {
            let p = dir.join(n);
            fs.remove(&p).map_err(io_err(&p))?;
        }
    }
    if old.is_empty() {
        return Ok(());
    }
    for &t in old {
        remove_image(fs, dir, t, step, cancel)?;
        failpoint("purge-image");
    }
    for seg in names.iter().filter_map(|n| Segment::parse(dir, n)) {
        if seg.last.is_some_and(|l| l <= oldest_kept) {
            fs.remove(&seg.path).map_err(io_err(&seg.path))?;
            failpoint("purge-segment");
        }
    }
    fs.sync_dir(dir).map_err(io_err(dir))
}
