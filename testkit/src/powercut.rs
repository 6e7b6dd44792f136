//! A simulated power cut for tests: [`PowerCutFs`] is the real file system
//! plus a record of what fsync has made durable, so that at a chosen
//! operation the machine can "lose power": the directories it touched are
//! rewritten on disk to what would survive, and every later call (from the
//! store instance that was running) fails, as if the machine were off.
//!
//! What survives a cut:
//! - a file's bytes up to its last fsync (appends after it are lost, or
//!   torn: a random prefix of them survives, possibly followed by zeros
//!   where the size reached the disk but the data did not, or by a sector
//!   of garbage);
//! - a directory's entries as of its last fsync: creates, renames and
//!   removes after it are undone (or, with
//!   [`PowerCutOptions::dir_ops_may_persist`], an in-order prefix of them
//!   persists, as a metadata journal committing in the background would).
//!
//! The simulation works on a real directory because the store's image
//! loader and its `LOCK` file use the disk directly: after a cut the disk
//! holds exactly the surviving state, and a new [`PowerCutFs`] (a new
//! "boot") takes everything it finds there as durable. A run is
//! reproducible from [`PowerCutOptions::seed`] and the countdown given to
//! [`PowerCutFs::arm`].
//!
//! Limits: only regular files directly inside directories touched through
//! the `Fs` calls are tracked (the store has no subdirectories); files made
//! by other means (the store's `LOCK`) are adopted as durable when first
//! seen and are never rewritten unless an `Fs` call changed them.

use nsimage_store::fs::{Fs, FsFile};
use parking_lot::Mutex;
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How adversarial a [`PowerCutFs`] is.
#[derive(Clone, Copy, Debug)]
pub struct PowerCutOptions {
    /// Seeds the choice of what survives (tears, persisted prefixes).
    pub seed: u64,
    /// Unsynced appends may survive in part (a random prefix, possibly
    /// followed by zeros); when false they are always lost whole.
    pub torn_tails: bool,
    /// A torn tail may end in up to one sector (512 bytes) of garbage.
    pub garbage: bool,
    /// An in-order prefix of a directory's unsynced creates, renames and
    /// removes may persist; when false all of them are undone.
    pub dir_ops_may_persist: bool,
}

impl PowerCutOptions {
    /// The model of issue 7: unsynced appends lost or torn (prefix, zeros
    /// or a garbage sector), unsynced directory changes undone.
    pub fn new(seed: u64) -> Self {
        PowerCutOptions {
            seed,
            torn_tails: true,
            garbage: true,
            dir_ops_may_persist: false,
        }
    }
}

/// What one power cut did to the disk.
#[derive(Clone, Debug, Default)]
pub struct CutReport {
    /// Index of the `Fs` operation that did not happen (the cut came just
    /// before it).
    pub at_op: u64,
    /// Its kind (`"write"`, `"rename"`, ...).
    pub op: &'static str,
    /// Files whose unsynced appends were lost or torn.
    pub files_torn: usize,
    /// Unsynced bytes lost over all files.
    pub bytes_lost: u64,
    /// Files that ended with zeros or garbage that was never written.
    pub files_with_junk: usize,
    /// Directory operations (create, rename, remove) undone.
    pub dir_ops_undone: usize,
    /// Directory operations kept (see
    /// [`PowerCutOptions::dir_ops_may_persist`]).
    pub dir_ops_kept: usize,
}

type FileId = u64;

#[derive(Default)]
struct FileState {
    /// Contents as of the last fsync.
    durable: Vec<u8>,
    /// Contents now (what the page cache holds; equal to the disk).
    current: Vec<u8>,
}

#[derive(Clone, Debug)]
enum DirOp {
    Link(String, FileId),
    Unlink(String),
    Rename(String, String, FileId),
}

#[derive(Default)]
struct DirState {
    durable: BTreeMap<String, FileId>,
    current: BTreeMap<String, FileId>,
    /// Changes since the last fsync of the directory, in order.
    log: Vec<DirOp>,
}

struct State {
    opts: PowerCutOptions,
    rng: Pcg64Mcg,
    dirs: BTreeMap<PathBuf, DirState>,
    files: HashMap<FileId, FileState>,
    next_id: FileId,
    ops: u64,
    cut_at: Option<u64>,
    report: Option<CutReport>,
}

struct Shared {
    state: Mutex<State>,
    reads: AtomicU64,
    syncs: AtomicU64,
}

/// The real file system with a simulated power cut (see the module docs).
pub struct PowerCutFs {
    shared: Arc<Shared>,
}

fn off_error() -> io::Error {
    io::Error::other("simulated power cut: the machine is off")
}

fn split(path: &Path) -> io::Result<(PathBuf, String)> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((dir, name.to_string()))
}

impl State {
    /// Counts one operation; cuts the power if it is the armed one.
    fn step(&mut self, op: &'static str) -> io::Result<()> {
        if self.report.is_some() {
            return Err(off_error());
        }
        let n = self.ops;
        self.ops += 1;
        if self.cut_at == Some(n) {
            self.cut(n, op)?;
            return Err(off_error());
        }
        Ok(())
    }

    fn new_file(&mut self, durable: Vec<u8>) -> FileId {
        let id = self.next_id;
        self.next_id += 1;
        self.files.insert(
            id,
            FileState {
                current: durable.clone(),
                durable,
            },
        );
        id
    }

    /// The directory's state, scanning it (everything there is durable)
    /// the first time it is seen.
    fn dir(&mut self, dir: &Path) -> io::Result<&mut DirState> {
        if !self.dirs.contains_key(dir) {
            let mut d = DirState::default();
            for e in fs::read_dir(dir)? {
                let e = e?;
                let Some(name) = e.file_name().to_str().map(str::to_string) else {
                    continue;
                };
                if e.file_type()?.is_file() {
                    let id = self.new_file(fs::read(e.path())?);
                    d.durable.insert(name.clone(), id);
                    d.current.insert(name, id);
                }
            }
            self.dirs.insert(dir.to_path_buf(), d);
        }
        Ok(self.dirs.get_mut(dir).expect("inserted above"))
    }

    /// The file now named `path`; a file made outside the `Fs` calls is
    /// adopted as durable.
    fn lookup(&mut self, path: &Path) -> io::Result<FileId> {
        let (dir, name) = split(path)?;
        if let Some(&id) = self.dir(&dir)?.current.get(&name) {
            return Ok(id);
        }
        let meta = fs::metadata(path)?; // NotFound for a missing file
        if !meta.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file",
            ));
        }
        let id = self.new_file(fs::read(path)?);
        let d = self.dir(&dir)?;
        d.durable.insert(name.clone(), id);
        d.current.insert(name, id);
        Ok(id)
    }

    /// Picks what survives of one file: its durable bytes plus, maybe, a
    /// torn part of what was written after them.
    fn survivor(&mut self, id: FileId, report: &mut CutReport) -> Vec<u8> {
        let f = &self.files[&id];
        if f.current == f.durable {
            return f.durable.clone();
        }
        let (base, unsynced) = if f.current.starts_with(&f.durable) {
            (f.durable.clone(), f.current[f.durable.len()..].to_vec())
        } else if self.rng.random_bool(0.5) {
            // Recreated (truncated) since the last fsync: the truncation
            // was lost.
            report.files_torn += 1;
            return f.durable.clone();
        } else {
            (Vec::new(), f.current.clone())
        };
        report.files_torn += 1;
        let n = unsynced.len();
        let mut out = base;
        let mode = if self.opts.torn_tails {
            self.rng.random_range(0..4u32)
        } else {
            0
        };
        let keep = match mode {
            0 => 0,
            _ => self.rng.random_range(0..=n),
        };
        out.extend_from_slice(&unsynced[..keep]);
        match mode {
            2 => {
                // The size reached the disk, the data did not.
                let to = self.rng.random_range(keep..=n);
                out.resize(out.len() + (to - keep), 0);
                report.files_with_junk += usize::from(to > keep);
            }
            3 if self.opts.garbage && keep < n => {
                // A torn sector: garbage where the last bytes should be.
                let g = self.rng.random_range(1..=(n - keep).min(512));
                let mut junk = vec![0u8; g];
                self.rng.fill(&mut junk[..]);
                out.extend_from_slice(&junk);
                report.files_with_junk += 1;
            }
            _ => {}
        }
        report.bytes_lost += (n - keep) as u64;
        out
    }

    /// Cuts the power: rewrites every tracked directory on disk to what
    /// survives, and marks the machine off.
    fn cut(&mut self, at_op: u64, op: &'static str) -> io::Result<()> {
        let mut report = CutReport {
            at_op,
            op,
            ..CutReport::default()
        };
        // Mark off first: whatever happens below, nothing runs after.
        self.report = Some(report.clone());
        let dirs: Vec<PathBuf> = self.dirs.keys().cloned().collect();
        for dir in dirs {
            let (durable, current, log) = {
                let d = &self.dirs[&dir];
                (d.durable.clone(), d.current.clone(), d.log.clone())
            };
            let kept = if self.opts.dir_ops_may_persist && !log.is_empty() {
                match self.rng.random_range(0..3u32) {
                    0 => 0,
                    1 => log.len(),
                    _ => self.rng.random_range(0..=log.len()),
                }
            } else {
                0
            };
            report.dir_ops_kept += kept;
            report.dir_ops_undone += log.len() - kept;
            let mut survived = durable;
            for o in &log[..kept] {
                apply_dir_op(&mut survived, o);
            }
            // Names that no longer exist, or now name another file.
            for (name, id) in &current {
                if survived.get(name) != Some(id) {
                    match fs::remove_file(dir.join(name)) {
                        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                        _ => {}
                    }
                }
            }
            for (name, &id) in &survived {
                let bytes = self.survivor(id, &mut report);
                let path = dir.join(name);
                if current.get(name) == Some(&id) {
                    let now = &self.files[&id].current;
                    if *now == bytes {
                        continue; // unchanged: leave the file alone
                    }
                    if now.starts_with(&bytes) {
                        OpenOptions::new()
                            .write(true)
                            .open(&path)?
                            .set_len(bytes.len() as u64)?;
                        continue;
                    }
                }
                fs::write(&path, &bytes)?;
            }
        }
        self.report = Some(report);
        Ok(())
    }
}

fn apply_dir_op(map: &mut BTreeMap<String, FileId>, op: &DirOp) {
    match op {
        DirOp::Link(name, id) => {
            map.insert(name.clone(), *id);
        }
        DirOp::Unlink(name) => {
            map.remove(name);
        }
        DirOp::Rename(from, to, id) => {
            map.remove(from);
            map.insert(to.clone(), *id);
        }
    }
}

impl PowerCutFs {
    /// A machine that has just booted: what is on disk is durable. It does
    /// not cut until [`arm`](Self::arm)ed.
    pub fn new(opts: PowerCutOptions) -> Self {
        PowerCutFs {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    opts,
                    rng: Pcg64Mcg::seed_from_u64(opts.seed),
                    dirs: BTreeMap::new(),
                    files: HashMap::new(),
                    next_id: 0,
                    ops: 0,
                    cut_at: None,
                    report: None,
                }),
                reads: AtomicU64::new(0),
                syncs: AtomicU64::new(0),
            }),
        }
    }

    /// Cuts the power just before the operation that comes `after` more
    /// operations from now (0: the next one). Operations are every `Fs`
    /// call and every write or fsync of an open file.
    pub fn arm(&self, after: u64) {
        let mut s = self.shared.state.lock();
        s.cut_at = Some(s.ops + after);
    }

    /// Cuts the power now (if it is still on).
    pub fn cut_now(&self) -> io::Result<CutReport> {
        let mut s = self.shared.state.lock();
        if s.report.is_none() {
            let at = s.ops;
            s.cut(at, "cut_now")?;
        }
        Ok(s.report.clone().unwrap_or_default())
    }

    /// True once the power has been cut.
    pub fn is_off(&self) -> bool {
        self.shared.state.lock().report.is_some()
    }

    /// What the cut did, once it happened.
    pub fn cut_report(&self) -> Option<CutReport> {
        self.shared.state.lock().report.clone()
    }

    /// Operations counted so far.
    pub fn ops(&self) -> u64 {
        self.shared.state.lock().ops
    }

    /// Creates a file that must not exist (nothing of any kind at its
    /// name, on disk, which equals the page cache): a new directory entry,
    /// durable only after an fsync of the directory, as for `create`.
    fn create_new_file(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let mut s = self.shared.state.lock();
        s.step("create_new")?;
        let (dir, name) = split(path)?;
        // Scan the directory first: the file made below is new, not
        // adopted as durable.
        s.dir(&dir)?;
        let file = OpenOptions::new().write(true).create_new(true).open(path)?;
        let id = s.new_file(Vec::new());
        let d = s.dir(&dir)?;
        d.current.insert(name.clone(), id);
        d.log.push(DirOp::Link(name, id));
        Ok(Box::new(SimFile {
            shared: self.shared.clone(),
            id,
            file,
        }))
    }

    fn open_file(&self, path: &Path, create: bool) -> io::Result<Box<dyn FsFile>> {
        let mut s = self.shared.state.lock();
        s.step(if create { "create" } else { "append" })?;
        if !create {
            let id = s.lookup(path)?;
            let file = OpenOptions::new().append(true).open(path)?;
            return Ok(Box::new(SimFile {
                shared: self.shared.clone(),
                id,
                file,
            }));
        }
        let (dir, name) = split(path)?;
        let existing = s.dir(&dir)?.current.get(&name).copied();
        let file = File::create(path)?;
        let id = match existing {
            Some(id) => {
                // Truncated in place: same file, contents gone (until an
                // fsync, only in the page cache).
                s.files.get_mut(&id).expect("tracked").current.clear();
                id
            }
            None => {
                let id = s.new_file(Vec::new());
                let d = s.dir(&dir)?;
                d.current.insert(name.clone(), id);
                d.log.push(DirOp::Link(name, id));
                id
            }
        };
        Ok(Box::new(SimFile {
            shared: self.shared.clone(),
            id,
            file,
        }))
    }
}

/// A file open for writing through a [`PowerCutFs`].
struct SimFile {
    shared: Arc<Shared>,
    id: FileId,
    file: File,
}

impl Write for SimFile {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        let mut s = self.shared.state.lock();
        s.step("write")?;
        let n = self.file.write(b)?;
        if let Some(f) = s.files.get_mut(&self.id) {
            f.current.extend_from_slice(&b[..n]);
        }
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        let s = self.shared.state.lock();
        if s.report.is_some() {
            return Err(off_error());
        }
        Ok(())
    }
}

impl FsFile for SimFile {
    fn sync(&mut self) -> io::Result<()> {
        let mut s = self.shared.state.lock();
        s.step("fsync")?;
        self.shared.syncs.fetch_add(1, Ordering::Relaxed);
        if let Some(f) = s.files.get_mut(&self.id) {
            f.durable = f.current.clone();
        }
        Ok(())
    }
}

/// Reads through a [`PowerCutFs`]: each read call fails once the power is
/// off.
struct SimRead {
    shared: Arc<Shared>,
    file: File,
}

impl Read for SimRead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.shared.state.lock().step("read")?;
        self.shared.reads.fetch_add(1, Ordering::Relaxed);
        self.file.read(buf)
    }
}

impl Fs for PowerCutFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.open_file(path, true)
    }
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.create_new_file(path)
    }
    fn append(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.open_file(path, false)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.shared.state.lock().step("read")?;
        self.shared.reads.fetch_add(1, Ordering::Relaxed);
        fs::read(path)
    }
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>> {
        self.shared.state.lock().step("open_read")?;
        Ok(Box::new(SimRead {
            shared: self.shared.clone(),
            file: File::open(path)?,
        }))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut s = self.shared.state.lock();
        s.step("rename")?;
        let (fdir, fname) = split(from)?;
        let (tdir, tname) = split(to)?;
        if fdir != tdir {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the power-cut simulation renames only within a directory",
            ));
        }
        let id = s.lookup(from)?;
        fs::rename(from, to)?;
        let d = s.dir(&fdir)?;
        d.current.remove(&fname);
        d.current.insert(tname.clone(), id);
        d.log.push(DirOp::Rename(fname, tname, id));
        Ok(())
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut s = self.shared.state.lock();
        s.step("remove")?;
        let (dir, name) = split(path)?;
        s.lookup(path)?;
        fs::remove_file(path)?;
        let d = s.dir(&dir)?;
        d.current.remove(&name);
        d.log.push(DirOp::Unlink(name));
        Ok(())
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut s = self.shared.state.lock();
        s.step("sync_dir")?;
        let d = s.dir(dir)?;
        d.durable = d.current.clone();
        d.log.clear();
        // Forget files no directory names any more (open handles to them
        // keep writing to the disk; nothing of them can survive).
        let live: std::collections::HashSet<FileId> = s
            .dirs
            .values()
            .flat_map(|d| {
                let logged = d.log.iter().map(|o| match o {
                    DirOp::Link(_, id) | DirOp::Rename(_, _, id) => *id,
                    DirOp::Unlink(_) => FileId::MAX,
                });
                d.durable
                    .values()
                    .chain(d.current.values())
                    .copied()
                    .chain(logged)
            })
            .collect();
        s.files.retain(|id, _| live.contains(id));
        Ok(())
    }
    fn truncate(&self, path: &Path, len: u64) -> io::Result<()> {
        let mut s = self.shared.state.lock();
        s.step("truncate")?;
        let id = s.lookup(path)?;
        let f = OpenOptions::new().write(true).open(path)?;
        f.set_len(len)?;
        let n = usize::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "length too large"))?;
        let st = s.files.get_mut(&id).expect("tracked by lookup");
        st.current.resize(n, 0);
        st.durable = st.current.clone(); // the Fs contract: cut and fsynced
        Ok(())
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.shared.state.lock().step("list")?;
        nsimage_store::fs::list_names(dir)
    }
    fn len(&self, path: &Path) -> io::Result<u64> {
        self.shared.state.lock().step("len")?;
        Ok(fs::metadata(path)?.len())
    }
    fn file_type(&self, path: &Path) -> io::Result<fs::FileType> {
        // The disk equals the page cache (what the running machine sees).
        self.shared.state.lock().step("file_type")?;
        Ok(fs::symlink_metadata(path)?.file_type())
    }
    fn read_calls(&self) -> u64 {
        self.shared.reads.load(Ordering::Relaxed)
    }
    fn sync_calls(&self) -> u64 {
        self.shared.syncs.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strict(seed: u64) -> PowerCutOptions {
        PowerCutOptions {
            seed,
            torn_tails: false,
            garbage: false,
            dir_ops_may_persist: false,
        }
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn unsynced_bytes_are_lost() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("a");
        let sim = PowerCutFs::new(strict(1));
        let mut f = sim.create(&p).unwrap();
        f.write_all(b"durable").unwrap();
        f.sync().unwrap();
        sim.sync_dir(tmp.path()).unwrap();
        f.write_all(b" and lost").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"durable and lost");
        let r = sim.cut_now().unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"durable");
        assert_eq!((r.files_torn, r.bytes_lost), (1, 9));
        // The machine is off: the old handle and the Fs refuse everything.
        assert!(f.write_all(b"x").is_err());
        assert!(f.sync().is_err());
        assert!(sim.read(&p).is_err());
        assert!(sim.create(&tmp.path().join("b")).is_err());
        assert_eq!(fs::read(&p).unwrap(), b"durable");
    }

    #[test]
    fn create_without_dir_sync_is_undone() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("new");
        let sim = PowerCutFs::new(strict(2));
        let mut f = sim.create(&p).unwrap();
        f.write_all(b"synced data").unwrap();
        f.sync().unwrap(); // the file, not its directory entry
        sim.cut_now().unwrap();
        assert!(!p.exists());
    }

    #[test]
    fn rename_and_remove_without_dir_sync_are_undone() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            tmp.path().join("a"),
            tmp.path().join("b"),
            tmp.path().join("c"),
        );
        fs::write(&a, b"old a").unwrap();
        fs::write(&b, b"old b").unwrap();
        fs::write(&c, b"old c").unwrap();
        let sim = PowerCutFs::new(strict(3));
        sim.rename(&a, &b).unwrap(); // over b
        sim.remove(&c).unwrap();
        assert_eq!(names(tmp.path()), ["b"]);
        sim.cut_now().unwrap();
        assert_eq!(names(tmp.path()), ["a", "b", "c"]);
        assert_eq!(fs::read(&a).unwrap(), b"old a");
        assert_eq!(fs::read(&b).unwrap(), b"old b");
        assert_eq!(fs::read(&c).unwrap(), b"old c");
    }

    #[test]
    fn dir_sync_makes_renames_durable_but_not_unsynced_data() {
        let tmp = tempfile::tempdir().unwrap();
        let (tmpf, img) = (tmp.path().join("img.tmp"), tmp.path().join("img"));
        let sim = PowerCutFs::new(strict(4));
        let mut f = sim.create(&tmpf).unwrap();
        f.write_all(b"image bytes").unwrap();
        drop(f); // no fsync of the data: the classic bug
        sim.rename(&tmpf, &img).unwrap();
        sim.sync_dir(tmp.path()).unwrap();
        sim.cut_now().unwrap();
        assert_eq!(names(tmp.path()), ["img"]);
        assert_eq!(fs::read(&img).unwrap(), b"", "unsynced data survived");
    }

    #[test]
    fn countdown_cuts_before_the_armed_operation() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("j");
        let sim = PowerCutFs::new(strict(5));
        let mut f = sim.create(&p).unwrap();
        sim.sync_dir(tmp.path()).unwrap();
        sim.arm(2); // write, fsync, then the cut before the next write
        f.write_all(b"one").unwrap();
        f.sync().unwrap();
        assert!(!sim.is_off());
        assert!(f.write_all(b"two").is_err());
        let r = sim.cut_report().expect("cut");
        assert_eq!((r.at_op, r.op), (4, "write"));
        assert_eq!(fs::read(&p).unwrap(), b"one");
        // A new boot sees the survivors as durable.
        let boot = PowerCutFs::new(strict(6));
        let mut f = boot.append(&p).unwrap();
        f.write_all(b"three").unwrap();
        boot.cut_now().unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"one");
    }

    #[test]
    fn torn_tails_keep_a_prefix_or_end_in_zeros_or_garbage() {
        let data: Vec<u8> = (1..=200u8).cycle().take(3000).collect();
        let (mut prefix, mut junk, mut whole_loss) = (0, 0, 0);
        for seed in 0..200 {
            let tmp = tempfile::tempdir().unwrap();
            let p = tmp.path().join("seg");
            fs::write(&p, b"HEAD").unwrap();
            let sim = PowerCutFs::new(PowerCutOptions::new(seed));
            let mut f = sim.append(&p).unwrap();
            f.write_all(&data).unwrap();
            let r = sim.cut_now().unwrap();
            let got = fs::read(&p).unwrap();
            assert!(got.starts_with(b"HEAD"), "seed {seed}: synced bytes lost");
            assert!(got.len() <= 4 + data.len(), "seed {seed}: file grew");
            let tail = &got[4..];
            let good = tail.iter().zip(&data).take_while(|(a, b)| a == b).count();
            if good == tail.len() {
                if tail.is_empty() {
                    whole_loss += 1;
                } else {
                    prefix += 1;
                }
            } else {
                junk += 1;
                assert!(r.files_with_junk == 1, "seed {seed}: junk not reported");
            }
        }
        assert!(prefix > 20 && junk > 20 && whole_loss > 20);
    }

    #[test]
    fn dir_ops_may_persist_in_order() {
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..60 {
            let tmp = tempfile::tempdir().unwrap();
            let sim = PowerCutFs::new(PowerCutOptions {
                dir_ops_may_persist: true,
                ..strict(seed)
            });
            for n in ["a", "b", "c"] {
                sim.create(&tmp.path().join(n)).unwrap();
            }
            sim.cut_now().unwrap();
            let got = names(tmp.path()).join("");
            assert!(["", "a", "ab", "abc"].contains(&got.as_str()), "{got}");
            seen.insert(got);
        }
        assert_eq!(seen.len(), 4, "every prefix happens: {seen:?}");
    }
}
