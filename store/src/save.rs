//! The atomic save of an image, the one sequence that both the store's
//! checkpoint and `nsimage generate` use: the image is written to a
//! temporary file beside the target, fsynced, renamed over the target, and
//! the directory fsynced, so a crash (or a failed call) at any point leaves
//! either the old file or the new one, never a part of one.
//!
//! Every step goes through an [`Fs`], so the fault-injecting
//! [`FaultyFs`](crate::fs::FaultyFs) and the power-cut simulation of the
//! tests cover it. Only a missing path or a regular file is replaced: a
//! directory, FIFO, socket, device or symbolic link at the target is
//! refused, never renamed over (see [`check_target`]).

use crate::error::{io_err, StoreError};
use crate::failpoint;
use crate::fs::{Fs, FsFile};
use nsimage_format::hdfs::SnapshotCarry;
use nsimage_namespace::Namespace;
use nsimage_writer::hdfs::{
    md5_sidecar_line, md5_sidecar_name, write_hdfs_image_with_carry, HdfsWriteOptions, HdfsWritten,
};
use nsimage_writer::{write_image_with_carry, ImageSummary, WriteOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// How [`save_image`] writes an image.
#[derive(Clone, Debug, Default)]
pub struct SaveOptions<'a> {
    /// The image's layout, compression and encryption.
    pub write: WriteOptions,
    /// A Hadoop image's snapshots, kept in the image's optional
    /// HDFS_SNAPSHOTS section ([`write_image_with_carry`]).
    pub carry: Option<&'a SnapshotCarry>,
}

impl From<&WriteOptions> for SaveOptions<'_> {
    /// `write`, with no snapshots carried.
    fn from(write: &WriteOptions) -> Self {
        SaveOptions {
            write: write.clone(),
            carry: None,
        }
    }
}

/// How [`save_hdfs_image`] writes a Hadoop fsimage.
#[derive(Clone, Debug, Default)]
pub struct HdfsSaveOptions<'a> {
    /// The fsimage's layout and compression.
    pub write: HdfsWriteOptions,
    /// The snapshots of the Hadoop image the namespace came from, written
    /// back ([`write_hdfs_image_with_carry`]).
    pub carry: Option<&'a SnapshotCarry>,
}

impl From<&HdfsWriteOptions> for HdfsSaveOptions<'_> {
    /// `write`, with no snapshots carried.
    fn from(write: &HdfsWriteOptions) -> Self {
        HdfsSaveOptions {
            write: write.clone(),
            carry: None,
        }
    }
}

/// Temporary names tried by [`save_image`] before it gives up.
const ATTEMPTS: u32 = 64;

/// A checkpoint's writeback is started every this many bytes written
/// ([`Paced`]).
const CHECKPOINT_WRITE_BACK_EVERY: u64 = 1 << 20;

/// How far behind the bytes written a writeback call of [`Paced`] reaches,
/// so that pages written out since the last calls are dropped.
const CHECKPOINT_DROP_BEHIND: u64 = 4 << 20;

/// A checkpoint's temporary file is fsynced every this many bytes: a bound
/// on what the kernel may hold unwritten should the disk fall behind (the
/// writeback started before makes each of these fsyncs short).
const CHECKPOINT_SYNC_EVERY: u64 = 64 << 20;

/// A checkpoint's temporary file, handed to the disk as it is written
/// (issue 41): every [`CHECKPOINT_WRITE_BACK_EVERY`] bytes, the writeback
/// of the bytes since the last [`CHECKPOINT_DROP_BEHIND`] is started
/// ([`FsFile::write_back`]: asynchronous, no fsync, no commit of the file
/// system's journal; pages already written out are dropped), and every
/// [`CHECKPOINT_SYNC_EVERY`] bytes the file is fsynced. The store's
/// journal fsyncs, on the same disk, then find about a megabyte of the
/// checkpoint ahead of them at any time, not the 8 MiB bursts of
/// synchronous writes (and a commit of the file system's journal for each)
/// that fsyncing every 8 MiB made, which they queued behind for up to
/// 186 ms (`docs/performance.md`). Only the final fsync makes the file
/// durable; it is temporary until renamed, so none of this changes what a
/// crash leaves.
struct Paced {
    file: Box<dyn FsFile>,
    /// Whether to pace at all (a checkpoint).
    on: bool,
    /// Bytes written so far.
    written: u64,
    /// Bytes written when the last writeback was started.
    started: u64,
    /// Bytes written at the last fsync.
    synced: u64,
    /// At most this many bytes a second (a standby's checkpoint may leave
    /// the disk to the active's journal): the write sleeps while it is
    /// ahead.
    limit: Option<u64>,
    /// When the first byte was written.
    began: Option<std::time::Instant>,
}

impl Paced {
    fn new(file: Box<dyn FsFile>, on: bool) -> Self {
        Paced {
            file,
            on,
            written: 0,
            started: 0,
            synced: 0,
            limit: None,
            began: None,
        }
    }

    /// The writeback and fsync due before the next write.
    fn pace(&mut self) -> std::io::Result<()> {
        if !self.on {
            return Ok(());
        }
        if self.written - self.started >= CHECKPOINT_WRITE_BACK_EVERY {
            let from = self.started.saturating_sub(CHECKPOINT_DROP_BEHIND);
            self.file.write_back(from, self.written - from)?;
            self.started = self.written;
        }
        if self.written - self.synced >= CHECKPOINT_SYNC_EVERY {
            self.file.sync()?;
            self.synced = self.written;
        }
        Ok(())
    }
}

impl Write for Paced {
    /// What is due comes before the next write, so that a count of bytes
    /// returned always means they were written, and a failed writeback or
    /// fsync is the error of a write that wrote nothing.
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pace()?;
        let began = *self.began.get_or_insert_with(std::time::Instant::now);
        let n = self.file.write(buf)?;
        self.written = self.written.saturating_add(n as u64);
        if let Some(rate) = self.limit {
            #[allow(clippy::cast_precision_loss)]
            let due = std::time::Duration::from_secs_f64(self.written as f64 / rate as f64);
            let ahead = due.saturating_sub(began.elapsed());
            if ahead > std::time::Duration::from_millis(2) {
                std::thread::sleep(ahead);
            }
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// A check of a file written and synced under its temporary name, before
/// it takes its final one (an error refuses it).
pub type FileCheck<'a> = dyn Fn(&Path) -> std::io::Result<()> + 'a;

/// How a save names its temporary file.
#[derive(Clone, Copy)]
pub(crate) enum Temp<'a> {
    /// Fresh names ([`temp_path`]), each created new: a name someone else
    /// holds is neither opened nor removed, the next one is tried. Errors
    /// name the target.
    Fresh,
    /// A fresh name, whose file, once written and synced, is handed to the
    /// check before it is renamed into place: a refusal leaves the target
    /// as it was.
    Checked(&'a FileCheck<'a>),
    /// The store's checkpoint: this one name (`image_<T>.tmp`), created or
    /// truncated (opening the store removes leftovers of that name), with
    /// the failpoints `checkpoint-written` (after the fsync of the
    /// temporary file) and `checkpoint-renamed` (after the rename). Errors
    /// name the temporary file, or the directory for its fsync. With a
    /// limit, the image is written at no more than that many bytes a
    /// second (see [`Paced`]).
    Checkpoint(&'a Path, Option<u64>),
}

/// The `attempt`-th temporary name for `path` (beside it, so the rename
/// stays in one directory): `NAME.tmp.PID.ATTEMPT`.
pub fn temp_path(path: &Path, attempt: u32) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp.{}.{attempt}", std::process::id()));
    path.with_file_name(name)
}

/// The directory holding `path` (`.` for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Refuses a target that a save must not replace: anything but a missing
/// path or a regular file (a symbolic link is refused, not followed, even
/// to a regular file). A save repeats the check just before its rename.
///
/// # Errors
/// [`StoreError::Io`] naming `path`: `InvalidInput` for a refused kind of
/// file, or the error of looking at it.
pub fn check_target(fs: &dyn Fs, path: &Path) -> Result<(), StoreError> {
    match fs.file_type(path) {
        Ok(t) if t.is_file() => Ok(()),
        Ok(t) => Err(StoreError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "is {}; only a missing path or a regular file is replaced",
                    nsimage_format::file_type::describe(t)
                ),
            ),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err(path)(e)),
    }
}

/// Saves `ns` to `path` atomically through `fs` as `opts` says (a
/// `&WriteOptions` for an image without snapshots), with a fresh
/// temporary name ([`temp_path`]) that is removed if the save fails; see
/// [`check_target`] for what `path` may hold. Errors name `path`, never
/// the temporary file.
///
/// # Errors
/// [`StoreError::Io`] naming `path` when the target is refused, no
/// temporary name is free, or a write, fsync or rename fails.
pub fn save_image<'a>(
    fs: &dyn Fs,
    path: &Path,
    ns: &Namespace,
    opts: impl Into<SaveOptions<'a>>,
) -> Result<ImageSummary, StoreError> {
    let opts = opts.into();
    save_as(fs, path, Temp::Fresh, |out| {
        write_image_with_carry(ns, out, &opts.write, opts.carry)
    })
}

/// Saves whatever `write` writes to `path` atomically through `fs`, as
/// [`save_image`] saves an image (the same temporary names, fsyncs, rename
/// and directory fsync): for files in other formats, such as a Hadoop
/// fsimage and its `.md5` sidecar. `write` gets a buffered writer of the
/// temporary file; what it returns is returned once the file is in place.
///
/// # Errors
/// As [`save_image`]; an error `write` returns is reported naming `path`.
pub fn save_file<S>(
    fs: &dyn Fs,
    path: &Path,
    write: impl FnOnce(&mut (dyn Write + Send)) -> std::io::Result<S>,
) -> Result<S, StoreError> {
    save_as(fs, path, Temp::Fresh, write)
}

/// The one atomic save sequence, with the temporary file `temp` names and
/// the bytes `write` writes.
pub(crate) fn save_as<S>(
    fs: &dyn Fs,
    path: &Path,
    temp: Temp<'_>,
    write: impl FnOnce(&mut (dyn Write + Send)) -> std::io::Result<S>,
) -> Result<S, StoreError> {
    check_target(fs, path)?;
    let dir = parent_dir(path);
    let (tmp, file) = match temp {
        Temp::Fresh | Temp::Checked(_) => create_fresh(fs, path)?,
        Temp::Checkpoint(tmp, _) => (tmp.to_path_buf(), fs.create(tmp).map_err(io_err(tmp))?),
    };
    let (checkpoint, limit) = match temp {
        Temp::Checkpoint(_, limit) => (true, limit),
        Temp::Fresh | Temp::Checked(_) => (false, None),
    };
    // Errors of the file name the target for a fresh name (the caller's
    // path, not a temporary one), the temporary file for a checkpoint.
    let (file_err, dir_err) = if checkpoint {
        (tmp.as_path(), dir)
    } else {
        (path, path)
    };
    let mut renamed = false;
    let result = (|| {
        let mut paced = Paced::new(file, checkpoint);
        paced.limit = limit.filter(|&l| l > 0);
        let mut out = BufWriter::with_capacity(1 << 20, paced);
        let summary = write(&mut out).map_err(io_err(file_err))?;
        let mut file = out
            .into_inner()
            .map_err(|e| io_err(file_err)(e.into_error()))?
            .file;
        file.sync().map_err(io_err(file_err))?;
        drop(file);
        if checkpoint {
            failpoint("checkpoint-written");
        }
        if let Temp::Checked(check) = temp {
            check(&tmp).map_err(io_err(file_err))?;
        }
        check_target(fs, path)?;
        fs.rename(&tmp, path).map_err(io_err(file_err))?;
        renamed = true;
        if checkpoint {
            failpoint("checkpoint-renamed");
        }
        fs.sync_dir(dir).map_err(io_err(dir_err))?;
        Ok(summary)
    })();
    // After the rename the temporary name is no longer ours: never remove
    // what someone may have created there since.
    if result.is_err() && !renamed {
        let _ = fs.remove(&tmp);
    }
    result
}

/// Creates a new temporary file beside `path`. A file left at one name (by
/// a crashed run that had the same process id, say) is neither opened nor
/// removed: the next name is tried.
fn create_fresh(fs: &dyn Fs, path: &Path) -> Result<(PathBuf, Box<dyn FsFile>), StoreError> {
    for attempt in 0..ATTEMPTS {
        let tmp = temp_path(path, attempt);
        match fs.create_new(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_err(path)(e)),
        }
    }
    Err(io_err(path)(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        format!(
            "{ATTEMPTS} temporary names like {} are taken",
            temp_path(path, 0).display()
        ),
    )))
}

/// Saves `ns` as a Hadoop fsimage at `path`, atomically, with the
/// NameNode's `.md5` sidecar beside it (`PATH.md5`, one line:
/// `<md5> *<file name>`), as a NameNode writes them.
///
/// The order keeps every crash point loadable: the image is written to
/// its temporary file and synced, an old sidecar is removed (and the
/// removal made durable), the image is renamed into place, then the new
/// sidecar is saved. A crash in between leaves an image without a sidecar (a
/// load then checks nothing), never an image beside a sidecar of another.
///
/// # Errors
/// As [`save_image`], naming the image or the sidecar; a sidecar that
/// cannot be removed is an error before anything is written.
pub fn save_hdfs_image<'a>(
    fs: &dyn Fs,
    path: &Path,
    ns: &Namespace,
    opts: impl Into<HdfsSaveOptions<'a>>,
) -> Result<HdfsWritten, StoreError> {
    let opts = opts.into();
    save_hdfs_with(
        fs,
        path,
        |out| write_hdfs_image_with_carry(ns, out, &opts.write, opts.carry),
        None,
    )
}

/// The atomic save of a Hadoop fsimage whose bytes `write` writes (and
/// whose MD5 it returns, in [`HdfsWritten`]), then its `.md5` sidecar, as
/// [`save_hdfs_image`] saves one: the image written and synced under a
/// temporary name, handed to `check` (if any: a refusal leaves the old
/// image and sidecar as they were), an old sidecar removed, the image
/// renamed into place, the sidecar saved after it.
///
/// # Errors
/// As [`save_hdfs_image`]; `write`'s and `check`'s errors, naming the
/// image.
pub fn save_hdfs_with(
    fs: &dyn Fs,
    path: &Path,
    write: impl FnOnce(&mut (dyn Write + Send)) -> std::io::Result<HdfsWritten>,
    check: Option<&FileCheck<'_>>,
) -> Result<HdfsWritten, StoreError> {
    check_target(fs, path)?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| {
            io_err(path)(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "an fsimage needs a UTF-8 file name (its .md5 sidecar names it)",
            ))
        })?
        .to_string();
    let sidecar = path.with_file_name(md5_sidecar_name(&name));
    check_target(fs, &sidecar)?;
    // Once the new image is written, synced and checked, and before it
    // replaces the old one, the old sidecar goes (durably): a crash then
    // leaves an image without a sidecar, never one beside another's.
    let before_rename = |tmp: &Path| -> std::io::Result<()> {
        if let Some(check) = check {
            check(tmp)?;
        }
        let named = |e: std::io::Error| {
            std::io::Error::new(e.kind(), format!("removing {}: {e}", sidecar.display()))
        };
        match fs.remove(&sidecar) {
            Ok(()) => fs.sync_dir(parent_dir(path)).map_err(named),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(named(e)),
        }
    };
    let written = save_as(fs, path, Temp::Checked(&before_rename), write)?;
    let line = md5_sidecar_line(&written.md5, &name);
    save_file(fs, &sidecar, |out| out.write_all(line.as_bytes()))?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;
    use std::sync::Arc;

    /// What a [`Paced`] file was asked, in order.
    #[derive(Debug, PartialEq)]
    enum Call {
        /// `write_back(offset, len)`, with the bytes written before it.
        WriteBack { offset: u64, len: u64, at: u64 },
        /// `sync`, with the bytes written before it.
        Sync { at: u64 },
    }

    /// A file that keeps no bytes, only the calls.
    struct Rec {
        calls: Arc<Mutex<Vec<Call>>>,
        written: u64,
    }

    impl Write for Rec {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.written += b.len() as u64;
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl FsFile for Rec {
        fn sync(&mut self) -> std::io::Result<()> {
            self.calls.lock().push(Call::Sync { at: self.written });
            Ok(())
        }
        fn write_back(&mut self, offset: u64, len: u64) -> std::io::Result<()> {
            let at = self.written;
            self.calls.lock().push(Call::WriteBack { offset, len, at });
            Ok(())
        }
    }

    /// Writes `total` bytes through a [`Paced`] in writes of `step`; the
    /// calls its file got.
    fn paced(on: bool, total: u64, step: usize) -> Vec<Call> {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let file = Rec {
            calls: calls.clone(),
            written: 0,
        };
        let mut p = Paced::new(Box::new(file), on);
        let buf = vec![0u8; step];
        let mut left = total;
        while left > 0 {
            let n = usize::try_from(left).map_or(step, |l| l.min(step));
            p.write_all(&buf[..n]).unwrap();
            left -= n as u64;
        }
        let mut calls = calls.lock();
        std::mem::take(&mut *calls)
    }

    #[test]
    fn a_checkpoint_is_written_back_every_mebibyte() {
        const MIB: u64 = 1 << 20;
        let calls = paced(true, 20 * MIB + 5, 256 << 10);
        let wb: Vec<(u64, u64, u64)> = calls
            .iter()
            .filter_map(|c| match *c {
                Call::WriteBack { offset, len, at } => Some((offset, len, at)),
                Call::Sync { .. } => None,
            })
            .collect();
        // One call per whole MiB written, each before the next write.
        assert_eq!(wb.len(), 20, "{wb:?}");
        for (i, &(offset, len, at)) in wb.iter().enumerate() {
            let end = (i as u64 + 1) * MIB;
            // Each call reaches the bytes written so far, and the last
            // CHECKPOINT_DROP_BEHIND before the previous call's end.
            assert_eq!((offset + len, at), (end, end), "call {i}");
            assert_eq!(offset, (end - MIB).saturating_sub(CHECKPOINT_DROP_BEHIND));
        }
        // No fsync before 64 MiB: the final one is the save's.
        assert!(!calls.iter().any(|c| matches!(c, Call::Sync { .. })));
    }

    #[test]
    fn a_checkpoint_is_fsynced_every_64_mib_after_its_writeback() {
        let total = 2 * CHECKPOINT_SYNC_EVERY + 1;
        let calls = paced(true, total, 1 << 20);
        let syncs: Vec<usize> = calls
            .iter()
            .enumerate()
            .filter_map(|(i, c)| matches!(c, Call::Sync { .. }).then_some(i))
            .collect();
        assert_eq!(syncs.len(), 2);
        for (k, &i) in syncs.iter().enumerate() {
            let at = (k as u64 + 1) * CHECKPOINT_SYNC_EVERY;
            assert_eq!(calls[i], Call::Sync { at });
            // The writeback of everything before it was started first.
            assert!(
                matches!(calls[i - 1], Call::WriteBack { offset, len, at: a } if a == at && offset + len == at),
                "{:?}",
                calls[i - 1]
            );
        }
    }

    #[test]
    fn a_limited_checkpoint_is_written_no_faster_than_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("image_6");
        let tmp = dir.path().join("image_6.tmp");
        let fs = crate::fs::RealFs::default();
        let bytes = vec![7u8; 3 << 20];
        let started = std::time::Instant::now();
        // 3 MiB at 10 MiB a second: at least 0.3 s (a floor, not a
        // speed: a slower machine only takes longer).
        save_as(&fs, &path, Temp::Checkpoint(&tmp, Some(10 << 20)), |out| {
            out.write_all(&bytes)
        })
        .unwrap();
        assert!(started.elapsed() >= std::time::Duration::from_millis(290));
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
    }

    #[test]
    fn other_saves_are_not_paced() {
        assert!(paced(false, 70 << 20, 1 << 20).is_empty());
    }

    #[test]
    fn a_paced_checkpoint_saves_every_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("image_5");
        let tmp = dir.path().join("image_5.tmp");
        let fs = crate::fs::RealFs::default();
        let bytes: Vec<u8> = (0..(3 << 20) + 17).map(|i: u32| (i % 251) as u8).collect();
        save_as(&fs, &path, Temp::Checkpoint(&tmp, None), |out| {
            out.write_all(&bytes)
        })
        .unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        assert!(!tmp.exists());
        assert_eq!(fs.sync_calls(), 1);
    }
}
