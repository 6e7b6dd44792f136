//! Background checkpoints and the server's side of the store (issue 26):
//! a checkpoint whose image write is held does not block writers or
//! readers; `submit_with` builds and applies an op atomically; the
//! checkpointer's events, its stop (which never checkpoints and abandons
//! a save in progress); one checkpoint at a time; `init_from`; and the
//! journal's ACL op through journal replay and a checkpoint.

use nsimage_format::pb::{self, journal_op::Op, CreateOp};
use nsimage_namespace::{Namespace, ROOT_ID};
use nsimage_store::fs::{Fs, FsFile, RealFs};
use nsimage_store::{
    CheckpointEvent, CheckpointPolicy, Store, StoreError, StoreOptions, SubmitError,
};
use nsimage_testkit::workload::Workload;
use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a test waits for something that must happen at once.
const PATIENCE: Duration = Duration::from_secs(10);

/// A gate that checkpoint image writes stop at until it is opened.
#[derive(Default)]
struct Gate {
    /// (a write is held at the gate, the gate is open)
    state: Mutex<(bool, bool)>,
    cv: Condvar,
}

impl Gate {
    /// Holds the caller until the gate opens; marks that a write is held.
    fn pass(&self) {
        let mut s = self.state.lock().unwrap();
        s.0 = true;
        self.cv.notify_all();
        while !s.1 {
            s = self.cv.wait(s).unwrap();
        }
    }

    /// Waits (at most [`PATIENCE`]) until a write is held at the gate.
    fn wait_held(&self) {
        let (s, timeout) = self
            .cv
            .wait_timeout_while(self.state.lock().unwrap(), PATIENCE, |s| !s.0)
            .unwrap();
        assert!(
            !timeout.timed_out() && s.0,
            "no checkpoint write reached the gate"
        );
    }

    fn open(&self) {
        self.state.lock().unwrap().1 = true;
        self.cv.notify_all();
    }
}

/// The real file system, except that the first write to a checkpoint's
/// temporary image (`image_<T>.tmp`) waits at a [`Gate`]: a checkpoint
/// held in the middle of its save.
struct GatedFs {
    inner: RealFs,
    gate: Arc<Gate>,
    /// Gate the rename that finishes an open segment instead (a roll held
    /// before it renames).
    roll: bool,
}

struct GatedFile {
    inner: Box<dyn FsFile>,
    gate: Option<Arc<Gate>>,
}

impl Write for GatedFile {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        if let Some(g) = self.gate.take() {
            g.pass();
        }
        self.inner.write(b)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl FsFile for GatedFile {
    fn sync(&mut self) -> io::Result<()> {
        self.inner.sync()
    }
}

impl GatedFs {
    fn new() -> (Arc<GatedFs>, Arc<Gate>) {
        GatedFs::gating(false)
    }

    fn gating(roll: bool) -> (Arc<GatedFs>, Arc<Gate>) {
        let gate = Arc::new(Gate::default());
        let fs = Arc::new(GatedFs {
            inner: RealFs::default(),
            gate: gate.clone(),
            roll,
        });
        (fs, gate)
    }

    fn wrap(&self, path: &Path, f: Box<dyn FsFile>) -> Box<dyn FsFile> {
        let name = path.file_name().unwrap().to_string_lossy();
        let gated = !self.roll && name.starts_with("image_") && name.ends_with(".tmp");
        Box::new(GatedFile {
            inner: f,
            gate: gated.then(|| self.gate.clone()),
        })
    }
}

impl Fs for GatedFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let f = self.inner.create(path)?;
        Ok(self.wrap(path, f))
    }
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let f = self.inner.create_new(path)?;
        Ok(self.wrap(path, f))
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
        let name = from.file_name().unwrap().to_string_lossy();
        if self.roll && name.starts_with("edits_inprogress_") {
            self.gate.pass();
        }
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

fn options() -> StoreOptions {
    StoreOptions {
        segment_bytes: 4096,
        ..StoreOptions::default()
    }
}

/// A new store in `tmp` holding the workload's first `ops` ops, opened on
/// `fs`.
fn store_with(tmp: &Path, fs: Arc<dyn Fs>, w: &Workload, ops: u64) -> Arc<Store> {
    let dir = tmp.join("store");
    Store::init(&dir, Arc::new(RealFs::default()), &Default::default()).unwrap();
    let store = Arc::new(Store::open(&dir, fs, options()).unwrap());
    for _ in 0..ops {
        apply_next(&store, w).unwrap();
    }
    store
}

/// Submits the workload's next op (built under the namespace's lock) and
/// waits until it is durable; its txid.
pub(super) fn apply_next(store: &Store, w: &Workload) -> Result<u64, StoreError> {
    let txid = store
        .submit_with(|ns| {
            let next = ns.info().last_txid + 1;
            Ok::<_, std::convert::Infallible>(Some(w.op(ns, next)))
        })
        .map_err(|e| match e {
            SubmitError::Store(e) => e,
            SubmitError::Build(never) => match never {},
        })?
        .expect("an op");
    store.wait_durable(txid)?;
    Ok(txid)
}

fn reference(w: &Workload, txid: u64) -> Namespace {
    let mut ns = Namespace::default();
    w.advance(&mut ns, txid);
    ns
}

/// The nice values of this process's checkpoint save threads (named
/// `nsimage-ckpt-save`, which the kernel cuts to 15 bytes).
#[cfg(target_os = "linux")]
fn save_thread_nices() -> Vec<i64> {
    let mut out = Vec::new();
    for t in std::fs::read_dir("/proc/self/task").unwrap() {
        let t = t.unwrap().path();
        let comm = std::fs::read_to_string(t.join("comm")).unwrap_or_default();
        if comm.trim_end() != "nsimage-ckpt-sa" {
            continue;
        }
        let stat = std::fs::read_to_string(t.join("stat")).unwrap();
        // Fields after the command's closing parenthesis start at field 3
        // (state); nice is field 19.
        let rest = &stat[stat.rfind(')').unwrap() + 1..];
        out.push(rest.split_whitespace().nth(16).unwrap().parse().unwrap());
    }
    out
}

/// A checkpoint held in the middle of its image write: on other threads,
/// writers still get ops applied and durable (200 of them, each within
/// the patience) and readers still read; the checkpoint is still running
/// meanwhile, at the txid of its snapshot. Released, it finishes with an
/// image at that txid, and a restart finds every op. With a checkpoint
/// that holds the namespace's lock for its save (the store before issue
/// 26), the first write would wait for the gate and the test fails after
/// the patience instead of hanging.
#[test]
fn writers_are_not_blocked_by_a_running_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let (fs, gate) = GatedFs::new();
    let w = Workload { seed: 3 };
    let store = store_with(tmp.path(), fs, &w, 100);

    let s = store.clone();
    let checkpoint = std::thread::spawn(move || s.checkpoint());
    gate.wait_held();
    assert_eq!(store.checkpoint_running(), Some(100));
    // The save runs on its own thread at nice 10.
    #[cfg(target_os = "linux")]
    {
        let nice = save_thread_nices();
        assert!(
            !nice.is_empty() && nice.iter().all(|&n| n == 10),
            "{nice:?}"
        );
    }

    // Writers on two threads and a reader on a third, each within bounds.
    let (tx, rx) = mpsc::channel();
    for k in 0..2 {
        let (s, w, tx) = (store.clone(), w, tx.clone());
        std::thread::spawn(move || {
            let mut last = 0;
            for _ in 0..100 {
                last = last.max(apply_next(&s, &w).unwrap());
            }
            tx.send(format!("writer {k} durable to {last}")).unwrap();
        });
    }
    let (s, t) = (store.clone(), tx.clone());
    std::thread::spawn(move || {
        let mut reads = 0u64;
        while reads < 1000 {
            s.with_namespace(|ns| assert!(ns.info().last_txid >= 100));
            reads += 1;
        }
        t.send(format!("reader: {reads} reads")).unwrap();
    });
    drop(tx);
    let started = Instant::now();
    for _ in 0..3 {
        let what = rx
            .recv_timeout(PATIENCE)
            .expect("a writer or reader was blocked by the running checkpoint");
        eprintln!("{what} while the checkpoint is held");
    }
    assert_eq!(store.txid(), 300);
    assert_eq!(store.sync().unwrap(), 300);
    // The checkpoint is still where the gate holds it.
    assert_eq!(store.checkpoint_running(), Some(100));
    assert!(!checkpoint.is_finished());
    eprintln!(
        "200 durable ops and 1000 reads in {:.3} s during the checkpoint",
        started.elapsed().as_secs_f64()
    );

    gate.open();
    assert_eq!(checkpoint.join().unwrap().unwrap(), 100);
    assert_eq!(store.checkpoint_running(), None);
    let digest = store.with_namespace(|ns| ns.digest());
    let dir = store.dir().to_path_buf();
    drop(store);
    assert!(dir.join("image_00000000000000000100").exists());
    let store = Store::open_default(&dir).unwrap();
    assert_eq!(store.report().image_txid, 100);
    assert_eq!(store.report().txid, 300);
    assert_eq!(store.report().replayed, 200);
    assert_eq!(store.with_namespace(|ns| ns.digest()), digest);
    assert_eq!(digest, reference(&w, 300).digest());
}

/// A checkpoint's journal roll held before its rename: ops are still
/// submitted and applied, and reads go on (the roll holds no lock they
/// take); their durability waits for the roll, and their records go to
/// the new segment.
#[test]
fn a_checkpoints_roll_does_not_block_submits() {
    let tmp = tempfile::tempdir().unwrap();
    let (fs, gate) = GatedFs::gating(true);
    let w = Workload { seed: 10 };
    let dir = tmp.path().join("store");
    Store::init(&dir, Arc::new(RealFs::default()), &Default::default()).unwrap();
    // Segments large enough that only the checkpoint rolls.
    let store = Arc::new(Store::open(&dir, fs, StoreOptions::default()).unwrap());
    for _ in 0..50 {
        apply_next(&store, &w).unwrap();
    }
    let s = store.clone();
    let checkpoint = std::thread::spawn(move || s.checkpoint());
    gate.wait_held();
    let (tx, rx) = mpsc::channel();
    let s = store.clone();
    std::thread::spawn(move || {
        for _ in 0..20 {
            s.submit_with(|ns| {
                let next = ns.info().last_txid + 1;
                Ok::<_, String>(Some(w.op(ns, next)))
            })
            .unwrap();
            s.with_namespace(|ns| ns.info().last_txid);
        }
        tx.send(s.txid()).unwrap();
    });
    let txid = rx
        .recv_timeout(PATIENCE)
        .expect("submits were blocked by the checkpoint's roll");
    assert_eq!(txid, 70);
    assert!(!checkpoint.is_finished());
    gate.open();
    assert_eq!(checkpoint.join().unwrap().unwrap(), 50);
    assert_eq!(store.sync().unwrap(), 70);
    let segments: Vec<String> = store
        .status()
        .unwrap()
        .segments
        .into_iter()
        .map(|s| s.0)
        .collect();
    assert_eq!(
        segments,
        [
            "edits_00000000000000000001-00000000000000000050",
            "edits_inprogress_00000000000000000051"
        ]
    );
    drop(store);
    let store = Store::open_default(&dir).unwrap();
    assert_eq!((store.report().image_txid, store.report().txid), (50, 70));
    assert_eq!(
        store.with_namespace(|ns| ns.digest()),
        reference(&w, 70).digest()
    );
}

/// A second checkpoint asked for while one runs waits for it, then takes
/// its own at the txid of its call: never two saves at once.
#[test]
fn checkpoints_run_one_at_a_time() {
    let tmp = tempfile::tempdir().unwrap();
    let (fs, gate) = GatedFs::new();
    let w = Workload { seed: 4 };
    let store = store_with(tmp.path(), fs, &w, 20);
    let s = store.clone();
    let first = std::thread::spawn(move || s.checkpoint());
    gate.wait_held();
    for _ in 0..10 {
        apply_next(&store, &w).unwrap();
    }
    let s = store.clone();
    let second = std::thread::spawn(move || s.checkpoint());
    std::thread::sleep(Duration::from_millis(100));
    // The second has not started: the first still runs, at 20.
    assert_eq!(store.checkpoint_running(), Some(20));
    assert!(!second.is_finished());
    gate.open();
    assert_eq!(first.join().unwrap().unwrap(), 20);
    assert_eq!(second.join().unwrap().unwrap(), 30);
    let st = store.status().unwrap();
    let images: Vec<u64> = st.images.iter().map(|i| i.0).collect();
    assert_eq!(images, [20, 30]);
}

/// `submit_with`: the builder sees the namespace with every earlier op
/// applied and nothing can come between its check and the op; `None`
/// applies nothing and takes no txid; the builder's error and a refused
/// op change nothing.
#[test]
fn submit_with_builds_and_applies_atomically() {
    let tmp = tempfile::tempdir().unwrap();
    let w = Workload { seed: 5 };
    let store = store_with(tmp.path(), Arc::new(RealFs::default()), &w, 0);
    let mkdir = |name: &str| {
        Op::Mkdir(CreateOp {
            parent: ROOT_ID,
            name: name.as_bytes().to_vec(),
            user: b"hdfs".to_vec(),
            group: b"supergroup".to_vec(),
            mode: 0o755,
            ..Default::default()
        })
    };
    // Eight threads race to create the same 50 names, each only if it is
    // free: every name is created exactly once, no op is refused.
    let created: Vec<_> = (0..8)
        .map(|_| {
            let s = store.clone();
            std::thread::spawn(move || {
                let mut mine = 0u64;
                for i in 0..50 {
                    let name = format!("d{i}");
                    let got = s.submit_with(|ns| {
                        Ok::<_, String>(
                            ns.resolve(format!("/{name}").as_bytes())
                                .is_err()
                                .then(|| mkdir(&name)),
                        )
                    });
                    if let Some(txid) = got.unwrap() {
                        s.wait_durable(txid).unwrap();
                        mine += 1;
                    }
                }
                mine
            })
        })
        .collect();
    let total: u64 = created.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(total, 50);
    assert_eq!(store.txid(), 50);
    // The builder's error, a refused op: nothing changes, no txid taken.
    let e = store.submit_with(|_| Err::<Option<Op>, _>("no such path".to_string()));
    assert!(matches!(e, Err(SubmitError::Build(ref m)) if m == "no such path"));
    let e = store.submit_with(|_| Ok::<_, String>(Some(mkdir("d7"))));
    assert!(
        matches!(e, Err(SubmitError::Store(StoreError::Refused(_)))),
        "{e:?}"
    );
    assert_eq!(store.txid(), 50);
    assert_eq!(store.submit(mkdir("e")).unwrap(), 51);
}

/// `submit_chain_with`: the builder is called again after each op it
/// returned applied, under the same lock (a reader or another writer
/// never sees the chain half done), until `None`; an error stops the chain
/// and leaves the ops before it applied, with the last one's txid.
#[test]
fn submit_chain_with_applies_ops_with_nothing_between_them() {
    let tmp = tempfile::tempdir().unwrap();
    let w = Workload { seed: 7 };
    let store = store_with(tmp.path(), Arc::new(RealFs::default()), &w, 0);
    let mkdir = |parent: u64, name: &str| {
        Op::Mkdir(CreateOp {
            parent,
            name: name.as_bytes().to_vec(),
            user: b"hdfs".to_vec(),
            group: b"supergroup".to_vec(),
            mode: 0o755,
            ..Default::default()
        })
    };
    // Four writers each make a chain /cK/x/y/z, one directory per op, while
    // a reader checks that a chain is never seen half made.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (s, stop) = (store.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut looks = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) || looks == 0 {
                s.with_namespace(|ns| {
                    for k in 0..4 {
                        let top = ns.resolve(format!("/c{k}").as_bytes()).is_ok();
                        let all = ns.resolve(format!("/c{k}/x/y/z").as_bytes()).is_ok();
                        assert_eq!(top, all, "chain {k} seen half made");
                    }
                });
                looks += 1;
            }
        })
    };
    let writers: Vec<_> = (0..4)
        .map(|k| {
            let s = store.clone();
            std::thread::spawn(move || {
                let names = [format!("c{k}"), "x".into(), "y".into(), "z".into()];
                let mut i = 0;
                let (last, r) = s.submit_chain_with(|ns| {
                    if i == names.len() {
                        return Ok::<_, String>(None);
                    }
                    let parent = if i == 0 {
                        ROOT_ID
                    } else {
                        let path = format!("/{}", names[..i].join("/"));
                        ns.resolve(path.as_bytes()).map_err(|e| e.to_string())?
                    };
                    i += 1;
                    Ok(Some(mkdir(parent, &names[i - 1])))
                });
                r.unwrap();
                s.wait_durable(last.unwrap()).unwrap();
            })
        })
        .collect();
    for t in writers {
        t.join().unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    reader.join().unwrap();
    assert_eq!(store.txid(), 16);
    // An error after two ops: both stay, the last txid is the second's.
    let mut n = 0;
    let (last, r) = store.submit_chain_with(|_| {
        n += 1;
        match n {
            1 => Ok(Some(mkdir(ROOT_ID, "e1"))),
            2 => Ok(Some(mkdir(ROOT_ID, "e2"))),
            _ => Err("stop".to_string()),
        }
    });
    assert!(matches!(r, Err(SubmitError::Build(ref m)) if m == "stop"));
    assert_eq!(last, Some(18));
    // A refused op stops it too; nothing is applied for it.
    let (last, r) = store.submit_chain_with(|_| Ok::<_, String>(Some(mkdir(ROOT_ID, "e1"))));
    assert!(
        matches!(r, Err(SubmitError::Store(StoreError::Refused(_)))),
        "{r:?}"
    );
    assert_eq!((last, store.txid()), (None, 18));
}

/// The checkpointer takes checkpoints as its policy says while writers
/// go on, reporting Started then Finished for each; a store that applies
/// nothing gets none; stopping it takes none.
#[test]
fn the_checkpointer_follows_its_policy() {
    let tmp = tempfile::tempdir().unwrap();
    let w = Workload { seed: 6 };
    let store = store_with(tmp.path(), Arc::new(RealFs::default()), &w, 0);
    let (tx, rx) = mpsc::channel();
    let policy = CheckpointPolicy {
        every_ops: Some(40),
        every: None,
    };
    let c = store
        .spawn_checkpointer(policy, move |e| tx.send(e).unwrap())
        .unwrap();
    for _ in 0..200 {
        apply_next(&store, &w).unwrap();
    }
    let mut finished = Vec::new();
    let mut started = None;
    let deadline = Instant::now() + PATIENCE;
    while finished.last().is_none_or(|&t| t < 160) {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx
            .recv_timeout(left)
            .expect("a checkpoint due was not taken")
        {
            CheckpointEvent::Started { txid } => {
                assert!(started.is_none());
                started = Some(txid);
            }
            CheckpointEvent::Finished { txid, seconds } => {
                assert_eq!(started.take(), Some(txid));
                assert!(seconds >= 0.0);
                finished.push(txid);
            }
            other => panic!("{other:?}"),
        }
    }
    // Idle: nothing more than what the last 40 ops make due.
    std::thread::sleep(Duration::from_millis(200));
    let idle: Vec<_> = rx.try_iter().collect();
    assert!(idle.len() <= 2, "{idle:?}");
    c.stop();
    assert!(rx.try_recv().is_err(), "stopping took a checkpoint");
    assert!(
        finished.windows(2).all(|p| p[1] - p[0] >= 40),
        "{finished:?}"
    );

    // A time policy: one checkpoint of the new ops, none while idle.
    let (tx, rx) = mpsc::channel();
    let policy = CheckpointPolicy {
        every_ops: None,
        every: Some(Duration::from_millis(50)),
    };
    apply_next(&store, &w).unwrap();
    let c = store
        .spawn_checkpointer(policy, move |e| tx.send(e).unwrap())
        .unwrap();
    std::thread::sleep(Duration::from_millis(400));
    drop(c);
    let events: Vec<_> = rx.try_iter().collect();
    assert!(
        matches!(
            events[..],
            [
                CheckpointEvent::Started { txid: 201 },
                CheckpointEvent::Finished { txid: 201, .. }
            ]
        ),
        "{events:?}"
    );
}

/// Stopping the checkpointer while its save is held abandons the save:
/// Cancelled, its temporary file gone, no image at that txid, and the
/// store reopens with every op.
#[test]
fn stopping_the_checkpointer_abandons_its_save() {
    let tmp = tempfile::tempdir().unwrap();
    let (fs, gate) = GatedFs::new();
    let w = Workload { seed: 7 };
    let store = store_with(tmp.path(), fs, &w, 30);
    let (tx, rx) = mpsc::channel();
    let policy = CheckpointPolicy {
        every_ops: Some(10),
        every: None,
    };
    let c = store
        .spawn_checkpointer(policy, move |e| tx.send(e).unwrap())
        .unwrap();
    gate.wait_held();
    assert!(matches!(
        rx.recv_timeout(PATIENCE).unwrap(),
        CheckpointEvent::Started { txid: 30 }
    ));
    // Stopping sets the flag first; the held write then fails.
    let stopper = std::thread::spawn(move || c.stop());
    std::thread::sleep(Duration::from_millis(50));
    gate.open();
    stopper.join().unwrap();
    let ev = rx.recv_timeout(PATIENCE).unwrap();
    assert!(
        matches!(ev, CheckpointEvent::Cancelled { txid: 30 }),
        "{ev:?}"
    );
    let dir = store.dir().to_path_buf();
    assert_eq!(store.checkpoint_running(), None);
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("image_00000000000000000030")),
        "{names:?}"
    );
    apply_next(&store, &w).unwrap();
    drop(store);
    let store = Store::open_default(&dir).unwrap();
    assert_eq!(store.report().image_txid, 0);
    assert_eq!(store.report().txid, 31);
    assert_eq!(
        store.with_namespace(|ns| ns.digest()),
        reference(&w, 31).digest()
    );
}

/// `init_from`: a store whose first image is a namespace at its txid; it
/// opens there and goes on from the next txid.
#[test]
fn init_from_starts_a_store_at_a_namespaces_txid() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let w = Workload { seed: 8 };
    let ns = reference(&w, 500);
    Store::init_from(&dir, Arc::new(RealFs::default()), &Default::default(), &ns).unwrap();
    // A second init of the same directory is refused.
    let again = Store::init_from(&dir, Arc::new(RealFs::default()), &Default::default(), &ns);
    assert!(
        matches!(again, Err(StoreError::Invalid { .. })),
        "{again:?}"
    );
    let store = Store::open_default(&dir).unwrap();
    assert_eq!(store.report().image_txid, 500);
    assert_eq!(store.report().replayed, 0);
    assert_eq!(store.with_namespace(|ns| ns.digest()), ns.digest());
    assert_eq!(apply_next(&store, &w).unwrap(), 501);
    drop(store);
    let store = Store::open_default(&dir).unwrap();
    assert_eq!(store.report().txid, 501);
    assert_eq!(
        store.with_namespace(|ns| ns.digest()),
        reference(&w, 501).digest()
    );
    // A namespace at the last txid: no op could follow.
    let mut last = Namespace::default();
    last.info_mut().last_txid = u64::MAX;
    let e = Store::init_from(
        &tmp.path().join("last"),
        Arc::new(RealFs::default()),
        &Default::default(),
        &last,
    );
    assert!(matches!(e, Err(StoreError::Invalid { .. })), "{e:?}");
}

/// The ACL of inode `id` as (name, type, default scope, rwx).
fn acl_of(store: &Store, id: u64) -> Vec<(Vec<u8>, u8, bool, u8)> {
    store.with_namespace(|ns| {
        let n = ns.inode(id).expect("the inode");
        n.extra()
            .map(|x| {
                x.acl
                    .iter()
                    .map(|e| {
                        let name = ns.strings().get(e.name).unwrap_or_default().to_vec();
                        (name, e.kind, e.default_scope, e.perm)
                    })
                    .collect()
            })
            .unwrap_or_default()
    })
}

fn entry(name: &str, kind: i32, default_scope: bool, permission: u32) -> pb::JournalAclEntry {
    pb::JournalAclEntry {
        name: name.as_bytes().to_vec(),
        r#type: kind,
        default_scope,
        permission,
    }
}

/// The ACL op: journaled, replayed at open, kept by a checkpoint,
/// removed by an empty list; entries out of range or against the rules
/// refused, taking no txid.
#[test]
fn acl_ops_are_journaled_replayed_and_checkpointed() {
    let tmp = tempfile::tempdir().unwrap();
    let w = Workload { seed: 9 };
    let store = store_with(tmp.path(), Arc::new(RealFs::default()), &w, 0);
    let dir = store.dir().to_path_buf();
    store
        .apply(Op::Mkdir(CreateOp {
            parent: ROOT_ID,
            name: b"shared".to_vec(),
            user: b"hdfs".to_vec(),
            group: b"supergroup".to_vec(),
            mode: 0o775,
            ..Default::default()
        }))
        .unwrap();
    let id = store.with_namespace(|ns| ns.resolve(b"/shared").unwrap());
    let set = |entries| Op::SetAcl(pb::SetAclOp { id, entries });
    let acl = vec![
        entry("alice", 0, false, 6),
        entry("", 2, false, 7),
        entry("analysts", 1, true, 5),
    ];
    let want: Vec<(Vec<u8>, u8, bool, u8)> = vec![
        (b"alice".to_vec(), 0, false, 6),
        (Vec::new(), 2, false, 7),
        (b"analysts".to_vec(), 1, true, 5),
    ];
    assert_eq!(store.apply(set(acl.clone())).unwrap(), 2);
    assert_eq!(acl_of(&store, id), want);
    for bad in [
        vec![entry("x", 4, false, 1)],
        vec![entry("x", 0, false, 8)],
        vec![entry("x", -1, false, 1)],
        vec![entry("named-mask", 2, false, 7)],
        vec![entry("bob", 0, false, 1), entry("bob", 0, false, 2)],
    ] {
        let e = store.apply(set(bad.clone()));
        assert!(matches!(e, Err(StoreError::Refused(_))), "{bad:?}: {e:?}");
    }
    assert_eq!(store.txid(), 2);
    // Replayed from the journal.
    drop(store);
    let store = Store::open_default(&dir).unwrap();
    assert_eq!(store.report().replayed, 2);
    assert_eq!(acl_of(&store, id), want);
    // Kept by a checkpoint (the image), then removed by an empty list.
    assert_eq!(store.checkpoint().unwrap(), 2);
    drop(store);
    let store = Store::open_default(&dir).unwrap();
    assert_eq!((store.report().image_txid, store.report().replayed), (2, 0));
    assert_eq!(acl_of(&store, id), want);
    assert_eq!(store.apply(set(Vec::new())).unwrap(), 3);
    drop(store);
    let store = Store::open_default(&dir).unwrap();
    assert_eq!(acl_of(&store, id), Vec::new());
}

/// The real file system, recording the renames, claims, cuts and removals
/// of files named `image_*` and every directory fsync: (call, file name,
/// length or 0).
#[derive(Default)]
struct ImageCalls {
    inner: RealFs,
    calls: Mutex<Vec<(&'static str, String, u64)>>,
}

impl ImageCalls {
    fn note(&self, call: &'static str, path: &Path, len: u64) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("image_") || call == "sync_dir" {
            self.calls.lock().unwrap().push((call, name, len));
        }
    }
}

impl Fs for ImageCalls {
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.inner.create(path)
    }
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.inner.create_new(path)
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
        self.note("rename", from, 0);
        self.note("renamed to", to, 0);
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.note("remove", path, 0);
        self.inner.remove(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.note("sync_dir", dir, 0);
        self.inner.sync_dir(dir)
    }
    fn claim(&self, path: &Path) -> io::Result<Option<std::fs::File>> {
        let got = nsimage_store::fs::claim_file(path)?;
        self.note(
            if got.is_some() {
                "claimed"
            } else {
                "not claimed"
            },
            path,
            0,
        );
        Ok(got)
    }
    fn truncate(&self, path: &Path, len: u64) -> io::Result<()> {
        self.note("truncate", path, len);
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

/// A store on [`ImageCalls`] with one image kept and 4 KiB purge steps,
/// its first checkpoint taken after 2000 ops of `w`: the store, the
/// first image's name and length.
fn store_for_purges(dir: &Path, w: &Workload, fs: Arc<ImageCalls>) -> (Store, String, u64) {
    Store::init(dir, Arc::new(RealFs::default()), &Default::default()).unwrap();
    let opts = StoreOptions {
        keep_images: 1,
        purge_step_bytes: PURGE_STEP,
        ..options()
    };
    let store = Store::open(dir, fs, opts).unwrap();
    for _ in 0..2000 {
        apply_next(&store, w).unwrap();
    }
    let first = store.checkpoint().unwrap();
    let old = format!("image_{first:020}");
    let len = std::fs::metadata(dir.join(&old)).unwrap().len();
    assert!(
        len > 3 * PURGE_STEP,
        "an image of {len} bytes is too small here"
    );
    for _ in 0..100 {
        apply_next(&store, w).unwrap();
    }
    (store, old, len)
}

const PURGE_STEP: u64 = 4096;

#[test]
fn an_old_image_is_renamed_then_cut_in_steps_before_its_removal() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let w = Workload { seed: 5 };
    let fs = Arc::new(ImageCalls::default());
    let (store, old, len) = store_for_purges(&dir, &w, fs.clone());
    let step = PURGE_STEP;
    fs.calls.lock().unwrap().clear();
    let second = store.checkpoint().unwrap();

    // The new image renamed into place, then the old one renamed to its
    // temporary name (the rename made durable), claimed, cut a step at a
    // time, and removed.
    let calls = fs.calls.lock().unwrap().clone();
    let tmp_name = format!("{old}.tmp");
    let from = calls
        .iter()
        .position(|c| *c == ("rename", old.clone(), 0))
        .unwrap_or_else(|| panic!("{old} not renamed: {calls:?}"));
    assert_eq!(calls[from + 1], ("renamed to", tmp_name.clone(), 0));
    let mut expect = vec![
        ("sync_dir", "store".to_string(), 0),
        ("claimed", tmp_name.clone(), 0),
    ];
    let mut left = len;
    while left > step {
        left -= step;
        expect.push(("truncate", tmp_name.clone(), left));
    }
    expect.push(("remove", tmp_name.clone(), 0));
    expect.push(("sync_dir", "store".to_string(), 0));
    assert_eq!(calls[from + 2..], expect[..], "{calls:?}");
    let mut names = nsimage_store::fs::list_names(&dir).unwrap();
    names.retain(|n| n.starts_with("image_"));
    assert_eq!(names, [format!("image_{second:020}")]);
    drop(store);

    // A store whose purge stopped halfway (its old image renamed and cut)
    // opens from its newest image and removes the rest.
    std::fs::write(dir.join(&tmp_name), b"what a cut left").unwrap();
    let store = Store::open(&dir, Arc::new(RealFs::default()), options()).unwrap();
    assert_eq!(store.report().txid, second);
    assert_eq!(
        store.with_namespace(|ns| ns.digest()),
        reference(&w, second).digest()
    );
    assert!(!dir.join(&tmp_name).exists());
}

#[test]
fn an_old_image_a_reader_holds_is_removed_whole_and_stays_whole_for_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let w = Workload { seed: 6 };
    let fs = Arc::new(ImageCalls::default());
    let (store, old, len) = store_for_purges(&dir, &w, fs.clone());
    let bytes = std::fs::read(dir.join(&old)).unwrap();
    // A reader (the loader's open: the shared lock) holds the old image.
    let mut reader = nsimage_loader::source::open_regular(&dir.join(&old)).unwrap();
    fs.calls.lock().unwrap().clear();
    store.checkpoint().unwrap();
    let calls = fs.calls.lock().unwrap().clone();
    let tmp_name = format!("{old}.tmp");
    assert!(
        calls.contains(&("not claimed", tmp_name.clone(), 0))
            && calls.contains(&("remove", tmp_name.clone(), 0))
            && !calls.iter().any(|c| c.0 == "truncate"),
        "{calls:?}"
    );
    assert!(!dir.join(&tmp_name).exists());
    let mut read = Vec::new();
    reader.read_to_end(&mut read).unwrap();
    assert_eq!(read.len() as u64, len);
    assert!(read == bytes, "the reader's image changed under it");
}

#[test]
fn the_readers_lock_and_the_purges_claim_exclude_each_other() {
    use nsimage_loader::source::open_regular;
    use nsimage_store::fs::claim_file;
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("image");
    std::fs::write(&f, b"an image").unwrap();
    // A reader holds it: no claim; once it is gone, a claim.
    let reader = open_regular(&f).unwrap();
    assert!(claim_file(&f).unwrap().is_none());
    drop(reader);
    let claim = claim_file(&f).unwrap().expect("no reader: claimed");
    // A reader that comes while it is claimed is refused.
    let e = open_regular(&f).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::ResourceBusy, "{e}");
    assert!(e.to_string().contains("purge removing it"), "{e}");
    drop(claim);
    open_regular(&f).unwrap();
    // A file with a second name is never claimed.
    std::fs::hard_link(&f, tmp.path().join("backup")).unwrap();
    assert!(claim_file(&f).unwrap().is_none());
}
