//! The store's file I/O, behind a small trait so that tests can inject
//! failures (failed fsync, short write, no space left) or simulate a power
//! cut, and so that read calls can be counted. Everything the store and
//! the atomic save ([`crate::save`]) do to files goes through [`Fs`].

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// A file open for writing.
pub trait FsFile: Write + Send {
    /// Makes everything written so far durable (fsync).
    fn sync(&mut self) -> io::Result<()>;

    /// Starts writing the `len` bytes at `offset` (already written
    /// through [`Write`]) out to the disk, without waiting for them and
    /// without making them durable (only [`sync`](Self::sync) does that),
    /// and lets the page cache drop those of them already written out. A
    /// hint that keeps a large file's final fsync short and the page cache
    /// calm: Linux `posix_fadvise(POSIX_FADV_DONTNEED)`, which starts the
    /// writeback of the range's dirty pages (without the `REQ_SYNC` of an
    /// fsync's and without a commit of the file system's journal) and
    /// drops its clean ones. The default does nothing.
    fn write_back(&mut self, offset: u64, len: u64) -> io::Result<()> {
        let _ = (offset, len);
        Ok(())
    }
}

/// What the store does to files.
pub trait Fs: Send + Sync {
    /// Creates (or truncates) a file for writing.
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;
    /// Creates a new file for writing; fails with
    /// [`io::ErrorKind::AlreadyExists`] if anything (of any kind, a
    /// symbolic link included) is at `path`, which is then neither opened
    /// nor changed.
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;
    /// Opens an existing file to append to it.
    fn append(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;
    /// Reads a whole file with one read call.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Opens a file for streaming reads; each read call is counted.
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>>;
    /// Renames `from` to `to` (in one directory), replacing `to`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Fsyncs a directory, making renames and creations in it durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Cuts a file to `len` bytes and fsyncs it.
    fn truncate(&self, path: &Path, len: u64) -> io::Result<()>;
    /// Names of the entries of a directory.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// The file at `path`, held under an exclusive lock taken without
    /// waiting, when nothing else can be reading it: no reader holds the
    /// shared lock that [`nsimage_loader::source::open_regular`] takes for
    /// every file it opens (and keeps while a mapping lives), and the file
    /// has no other name (one link; a hard-linked backup shares its
    /// blocks). While the handle lives, readers that come later are
    /// refused, so the caller may cut the file in place. `None` when a
    /// reader or another name holds it, or the file system has no locks.
    /// The default is the real file system's.
    fn claim(&self, path: &Path) -> io::Result<Option<File>> {
        claim_file(path)
    }
    /// The length of a file in bytes.
    fn len(&self, path: &Path) -> io::Result<u64>;
    /// The type of what is at `path`, without following a symbolic link
    /// (a link is reported as a link); [`io::ErrorKind::NotFound`] when
    /// nothing is there.
    fn file_type(&self, path: &Path) -> io::Result<fs::FileType>;
    /// Read calls made so far (bulk reads count one each).
    fn read_calls(&self) -> u64;
    /// File fsyncs made so far.
    fn sync_calls(&self) -> u64;
}

/// The real file system, counting read calls and fsyncs.
#[derive(Default)]
pub struct RealFs {
    reads: Arc<AtomicU64>,
    syncs: Arc<AtomicU64>,
}

struct RealFile(File, Arc<AtomicU64>);

impl Write for RealFile {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.write(b)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl FsFile for RealFile {
    fn sync(&mut self) -> io::Result<()> {
        self.1.fetch_add(1, Ordering::Relaxed);
        self.0.sync_data()
    }

    /// A hint: a failed `posix_fadvise` only leaves the pages as they
    /// were, so it is not an error.
    fn write_back(&mut self, offset: u64, len: u64) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        if let Some(len) = std::num::NonZeroU64::new(len) {
            let _ = rustix::fs::fadvise(&self.0, offset, Some(len), rustix::fs::Advice::DontNeed);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (offset, len);
        Ok(())
    }
}

struct CountingRead {
    file: File,
    reads: Arc<AtomicU64>,
}

impl Read for CountingRead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.file.read(buf)
    }
}

impl Fs for RealFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(Box::new(RealFile(File::create(path)?, self.syncs.clone())))
    }
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(Box::new(RealFile(
            OpenOptions::new().write(true).create_new(true).open(path)?,
            self.syncs.clone(),
        )))
    }
    fn append(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(Box::new(RealFile(
            OpenOptions::new().append(true).open(path)?,
            self.syncs.clone(),
        )))
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        // Regular files only: a FIFO or a device named like a store file is
        // refused instead of blocking or being read without end.
        let mut f = nsimage_loader::source::open_regular(path)?;
        let len = f.metadata()?.len();
        let len = usize::try_from(len).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{len} bytes do not fit in memory"),
            )
        })?;
        let mut buf = vec![0u8; len];
        self.reads.fetch_add(1, Ordering::Relaxed);
        f.read_exact(&mut buf)?;
        Ok(buf)
    }
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>> {
        Ok(Box::new(CountingRead {
            file: nsimage_loader::source::open_regular(path)?,
            reads: self.reads.clone(),
        }))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
    fn truncate(&self, path: &Path, len: u64) -> io::Result<()> {
        let f = OpenOptions::new().write(true).open(path)?;
        f.set_len(len)?;
        f.sync_all()
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        list_names(dir)
    }
    fn len(&self, path: &Path) -> io::Result<u64> {
        Ok(fs::metadata(path)?.len())
    }
    fn file_type(&self, path: &Path) -> io::Result<fs::FileType> {
        Ok(fs::symlink_metadata(path)?.file_type())
    }
    fn read_calls(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }
    fn sync_calls(&self) -> u64 {
        self.syncs.load(Ordering::Relaxed)
    }
}

/// Which call a [`FaultyFs`] breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The n-th fsync (of a file) fails with EIO.
    Fsync,
    /// The n-th write writes half its bytes, then fails with WriteZero.
    ShortWrite,
    /// The n-th write fails with "no space left on device".
    NoSpace,
    /// The n-th bulk read fails with EIO.
    Read,
}

/// The real file system with one injected failure: the `after`-th call
/// (counting from 0) of the kind `fault` names fails; every later call of
/// that kind fails too (a broken disk stays broken).
pub struct FaultyFs {
    real: RealFs,
    fault: Fault,
    after: usize,
    count: Arc<AtomicUsize>,
}

impl FaultyFs {
    /// The real file system, with the `after`-th call (from 0) of the kind
    /// `fault` names failing, and every later one.
    pub fn new(fault: Fault, after: usize) -> Self {
        FaultyFs {
            real: RealFs::default(),
            fault,
            after,
            count: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn hit(count: &AtomicUsize, after: usize) -> bool {
        count.fetch_add(1, Ordering::SeqCst) >= after
    }
}

struct FaultyFile {
    inner: Box<dyn FsFile>,
    fault: Fault,
    after: usize,
    count: Arc<AtomicUsize>,
}

impl Write for FaultyFile {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self.fault {
            Fault::ShortWrite if FaultyFs::hit(&self.count, self.after) => {
                let half = b.len() / 2;
                if half > 0 {
                    self.inner.write_all(&b[..half])?;
                    return Ok(half);
                }
                Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "injected short write",
                ))
            }
            Fault::NoSpace if FaultyFs::hit(&self.count, self.after) => {
                Err(io::Error::other("injected: no space left on device"))
            }
            _ => self.inner.write(b),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl FsFile for FaultyFile {
    fn sync(&mut self) -> io::Result<()> {
        if self.fault == Fault::Fsync && FaultyFs::hit(&self.count, self.after) {
            return Err(io::Error::other("injected fsync failure"));
        }
        self.inner.sync()
    }
    fn write_back(&mut self, offset: u64, len: u64) -> io::Result<()> {
        self.inner.write_back(offset, len)
    }
}

impl Fs for FaultyFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(Box::new(FaultyFile {
            inner: self.real.create(path)?,
            fault: self.fault,
            after: self.after,
            count: self.count.clone(),
        }))
    }
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(Box::new(FaultyFile {
            inner: self.real.create_new(path)?,
            fault: self.fault,
            after: self.after,
            count: self.count.clone(),
        }))
    }
    fn append(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(Box::new(FaultyFile {
            inner: self.real.append(path)?,
            fault: self.fault,
            after: self.after,
            count: self.count.clone(),
        }))
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        if self.fault == Fault::Read && FaultyFs::hit(&self.count, self.after) {
            return Err(io::Error::other("injected read failure"));
        }
        self.real.read(path)
    }
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>> {
        self.real.open_read(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.real.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.real.remove(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.real.sync_dir(dir)
    }
    fn truncate(&self, path: &Path, len: u64) -> io::Result<()> {
        self.real.truncate(path, len)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.real.list(dir)
    }
    fn len(&self, path: &Path) -> io::Result<u64> {
        self.real.len(path)
    }
    fn file_type(&self, path: &Path) -> io::Result<fs::FileType> {
        self.real.file_type(path)
    }
    fn read_calls(&self) -> u64 {
        self.real.read_calls()
    }
    fn sync_calls(&self) -> u64 {
        self.real.sync_calls()
    }
}

/// [`Fs::claim`] on the real file system.
///
/// # Errors
/// The file cannot be opened or its metadata read.
pub fn claim_file(path: &Path) -> io::Result<Option<File>> {
    use std::os::unix::fs::MetadataExt;
    let file = File::open(path)?;
    if file.metadata()?.nlink() != 1 {
        return Ok(None);
    }
    Ok(file.try_lock().is_ok().then_some(file))
}

/// The UTF-8 names of the entries of `dir` (the store writes no others).
pub fn list_names(dir: &Path) -> io::Result<Vec<String>> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir)? {
        if let Some(n) = e?.file_name().to_str() {
            out.push(n.to_string());
        }
    }
    Ok(out)
}
