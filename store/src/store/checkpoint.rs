//! Checkpoints that never stall writers: a snapshot of the namespace taken
//! under its lock (a copy-on-write clone), the image of that snapshot saved
//! with no lock that writers need (on a one-thread pool at a lowered
//! priority), then the journal segment finished and retention applied.

#[cfg(doc)]
use super::StoreOptions;
use super::{files, save_checkpoint, Store};
use crate::error::StoreError;
use crate::fs::{Fs, FsFile};
use nsimage_namespace::Namespace;
use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Clears the store's "checkpoint running" mark when the checkpoint ends,
/// however it ends.
struct Running<'a>(&'a parking_lot::Mutex<Option<u64>>);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        *self.0.lock() = None;
    }
}

impl Store {
    /// Saves an image of the namespace as it is now and purges what
    /// retention no longer needs; returns the image's txid `T` (the last
    /// op applied when the checkpoint began). Writers are not stalled:
    ///
    /// 1. the namespace's lock is taken (shared) only to take a snapshot
    ///    (`ns.clone()`, copy-on-write) and its txid `T`;
    /// 2. the journal is made durable up to `T` (group commit, as
    ///    [`wait_durable`](Self::wait_durable));
    /// 3. the snapshot is saved as `image_<T>` (the atomic save:
    ///    `image_<T>.tmp`, fsync, rename, directory fsync) holding no lock
    ///    that ops or reads take, on a dedicated one-thread pool whose
    ///    thread runs at nice 10 on Linux
    ///    ([`StoreOptions::checkpoint_nice`]), so the save takes at most
    ///    one core and yields it to the store's writers and readers; an
    ///    `image_<T>` already there is kept;
    /// 4. the open journal segment is finished at the durable txid `D >=
    ///    T` (after a group commit in flight) when it holds any op: its
    ///    rename, the directory fsync and the next segment's create run
    ///    without the journal's lock, as a roll by size does, so ops go on
    ///    being submitted and applied; only their durability waits for
    ///    those few fsyncs;
    /// 5. retention: the newest `keep_images` images stay, with every
    ///    segment holding an op after the oldest of them (a finished
    ///    segment is removed only when its last txid is at most that
    ///    image's).
    ///
    /// Ops submitted during the checkpoint go on to the journal as usual
    /// (after step 4, into the new segment); the image holds none of them
    /// and replay applies them after it. A crash at any point leaves the
    /// previous images with the journal that reaches every acknowledged op
    /// from each.
    ///
    /// One checkpoint runs at a time: a second caller waits for the
    /// running one to finish, then takes its own (at the txid of that
    /// moment, so its image holds every op applied before it was called).
    /// [`checkpoint_running`](Self::checkpoint_running) tells whether one
    /// runs.
    ///
    /// # Errors
    /// [`StoreError::Poisoned`] after an earlier journal failure,
    /// [`StoreError::Io`] when the image cannot be saved or a file removed
    /// (the store goes on; a failed roll poisons it as a failed roll by
    /// size does).
    pub fn checkpoint(&self) -> Result<u64, StoreError> {
        self.checkpoint_observed(None, &mut |_| {})
    }

    /// The txid of the checkpoint running now (taken by
    /// [`checkpoint`](Self::checkpoint) or a [`Checkpointer`]), if one
    /// runs.
    ///
    /// [`Checkpointer`]: crate::Checkpointer
    pub fn checkpoint_running(&self) -> Option<u64> {
        *self.running.lock()
    }

    /// [`checkpoint`](Self::checkpoint), calling `on_start` with the txid
    /// once the snapshot is taken; with `cancel`, the save stops with an
    /// I/O error (its temporary file removed) once it is set, and a purge
    /// under way removes what is left of an old image at once.
    pub(super) fn checkpoint_observed(
        &self,
        cancel: Option<&Arc<AtomicBool>>,
        on_start: &mut dyn FnMut(u64),
    ) -> Result<u64, StoreError> {
        let _one = self.checkpoint_lock.lock();
        // Shared is enough: no op applies while it is held, so the snapshot
        // is the namespace at exactly `t`; reads go on meanwhile.
        let snap: Namespace = self.ns.read().clone();
        let t = snap.info().last_txid;
        *self.running.lock() = Some(t);
        let _running = Running(&self.running);
        on_start(t);
        self.wait_durable(t)?;
        let path = self.dir.join(files::image_name(t));
        if self.fs.len(&path).is_err() {
            self.save_snapshot(&snap, t, cancel)?;
        }
        // The snapshot's chunks stop being shared before the purge: writers
        // copy less from here on.
        drop(snap);
        self.newest_image.fetch_max(t, Ordering::AcqRel);
        self.roll_for_checkpoint()?;
        files::purge(
            &*self.fs,
            &self.dir,
            self.opts.keep_images,
            self.opts.purge_step_bytes,
            cancel.map(|c| &**c),
        )?;
        Ok(t)
    }

    /// Saves `snap` as `image_<t>` on the save pool (or, when it could not
    /// be built, on this thread).
    fn save_snapshot(
        &self,
        snap: &Namespace,
        t: u64,
        cancel: Option<&Arc<AtomicBool>>,
    ) -> Result<(), StoreError> {
        let fs: &dyn Fs = match cancel {
            Some(flag) => &Cancellable {
                inner: &*self.fs,
                cancel: flag,
            },
            None => &*self.fs,
        };
        let save = || {
            save_checkpoint(
                fs,
                &self.dir,
                snap,
                t,
                &self.opts.write,
                self.opts.checkpoint_write_limit,
            )
        };
        let nice = self.opts.checkpoint_nice;
        match self.save_pool.get_or_init(|| build_save_pool(nice)) {
            Some(pool) => pool.install(save),
            None => save(),
        }
    }

    /// Step 4 of [`checkpoint`](Self::checkpoint): finishes the open
    /// segment at the durable txid when it holds any op. Records queued
    /// after that txid stay queued; they go to the new segment.
    fn roll_for_checkpoint(&self) -> Result<(), StoreError> {
        let mut j = self.journal.lock();
        while j.flushing {
            self.flushed.wait(&mut j);
        }
        if let Some(e) = &j.failed {
            return Err(StoreError::Poisoned(e.clone()));
        }
        if j.durable >= j.seg_first {
            if let Err(e) = self.roll(&mut j) {
                j.failed = Some(e.to_string());
                return Err(e);
            }
        }
        Ok(())
    }
}

/// The pool checkpoints save on: one thread, at nice `nice` on Linux (a
/// lowered priority: the thread yields its core to the store's writers
/// and readers; the priority is the thread's own, set once when it starts,
/// and never raised again). `None` when no thread can be started.
fn build_save_pool(nice: u8) -> Option<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .thread_name(|_| "nsimage-ckpt-save".into())
        .start_handler(move |_| lower_priority(nice))
        .build()
        .ok()
}

/// Lowers the calling thread's priority to nice `nice` (at most 19; 0:
/// unchanged). Linux: `setpriority(PRIO_PROCESS, gettid())` sets one
/// thread's nice value, without unsafe code (rustix). A failure leaves the
/// priority as it was: the save only yields less.
fn lower_priority(nice: u8) {
    #[cfg(target_os = "linux")]
    if nice > 0 {
        let nice = i32::from(nice.min(19));
        let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), nice);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
}

/// The save's file system with a stop flag: once `cancel` is set, every
/// write or fsync of a file it created fails (with `Other`: never
/// `Interrupted`, which `write_all` retries for ever), so the atomic save
/// gives up and removes its temporary file.
struct Cancellable<'a> {
    inner: &'a dyn Fs,
    cancel: &'a Arc<AtomicBool>,
}

/// A file of a [`Cancellable`] file system.
struct CancellableFile {
    inner: Box<dyn FsFile>,
    cancel: Arc<AtomicBool>,
}

impl CancellableFile {
    fn check(&self) -> io::Result<()> {
        if self.cancel.load(Ordering::Acquire) {
            return Err(io::Error::other(
                "checkpoint stopped: its checkpointer was stopped",
            ));
        }
        Ok(())
    }
}

impl Write for CancellableFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.check()?;
        self.inner.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl FsFile for CancellableFile {
    fn sync(&mut self) -> io::Result<()> {
        self.check()?;
        self.inner.sync()
    }
    fn write_back(&mut self, offset: u64, len: u64) -> io::Result<()> {
        self.check()?;
        self.inner.write_back(offset, len)
    }
}

impl Fs for Cancellable<'_> {
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let f = self.inner.create(path)?;
        Ok(Box::new(CancellableFile {
            inner: f,
            cancel: self.cancel.clone(),
        }))
    }
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let f = self.inner.create_new(path)?;
        Ok(Box::new(CancellableFile {
            inner: f,
            cancel: self.cancel.clone(),
        }))
    }
    fn append(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.inner.append(path)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.inner.read(path)
    }
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>> {
        self.inner.open_read(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.remove(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn truncate(&self, path: &Path, len: u64) -> io::Result<()> {
        self.inner.truncate(path, len)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn len(&self, path: &Path) -> io::Result<u64> {
        self.inner.len(path)
    }
    fn file_type(&self, path: &Path) -> io::Result<std::fs::FileType> {
        self.inner.file_type(path)
    }
    fn read_calls(&self) -> u64 {
        self.inner.read_calls()
    }
    fn sync_calls(&self) -> u64 {
        self.inner.sync_calls()
    }
}
