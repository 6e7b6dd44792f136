//! The writable server never lets a reader see a write before it is
//! durable, and stops when the journal cannot be made durable (a full
//! disk, injected through the store's `Fs` into a server run in this
//! process): the failed write is never seen, every acknowledged one is
//! kept, and a server started again once there is space goes on.
//! Loopback only; every wait is bounded.

use crate::serve_common;

use nsimage_server::http::{self, Config, PermissionConfig, ServeError, Writable};
use nsimage_store::fs::{Fs, FsFile, RealFs};
use nsimage_store::{Store, StoreOptions};
use serde_json::Value;
use std::fs::FileType;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Longest any wait of these tests lasts.
const WAIT: Duration = Duration::from_secs(30);

/// What the [`GateFs`] does to writes: hold them (each waits until
/// released), and fail them as a full disk does (nothing written).
#[derive(Default)]
struct GateState {
    hold: bool,
    full: bool,
    /// Writes waiting while held.
    held: usize,
}

#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

impl Gate {
    fn set(&self, f: impl FnOnce(&mut GateState)) {
        f(&mut self.state.lock().unwrap());
        self.changed.notify_all();
    }

    /// Waits until a write is held.
    fn wait_held(&self) {
        let deadline = Instant::now() + WAIT;
        let mut st = self.state.lock().unwrap();
        while st.held == 0 {
            let left = deadline
                .checked_duration_since(Instant::now())
                .expect("a journal write was held within the wait");
            st = self.changed.wait_timeout(st, left).unwrap().0;
        }
    }

    /// A write's turn: waits while held, then fails when the disk is full.
    fn pass(&self) -> io::Result<()> {
        let mut st = self.state.lock().unwrap();
        if st.hold {
            st.held += 1;
            self.changed.notify_all();
            while st.hold {
                st = self.changed.wait(st).unwrap();
            }
            st.held -= 1;
        }
        if st.full {
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "no space left on device (injected)",
            ));
        }
        Ok(())
    }
}

/// The real file system, its files' writes going through a [`Gate`].
struct GateFs {
    real: RealFs,
    gate: Arc<Gate>,
}

struct GateFile {
    inner: Box<dyn FsFile>,
    gate: Arc<Gate>,
}

impl Write for GateFile {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.gate.pass()?;
        self.inner.write(b)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl FsFile for GateFile {
    fn sync(&mut self) -> io::Result<()> {
        self.inner.sync()
    }
}

impl GateFs {
    fn wrap(&self, f: io::Result<Box<dyn FsFile>>) -> io::Result<Box<dyn FsFile>> {
        Ok(Box::new(GateFile {
            inner: f?,
            gate: Arc::clone(&self.gate),
        }))
    }
}

impl Fs for GateFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.wrap(self.real.create(path))
    }
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.wrap(self.real.create_new(path))
    }
    fn append(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        self.wrap(self.real.append(path))
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
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
    fn file_type(&self, path: &Path) -> io::Result<FileType> {
        self.real.file_type(path)
    }
    fn read_calls(&self) -> u64 {
        self.real.read_calls()
    }
    fn sync_calls(&self) -> u64 {
        self.real.sync_calls()
    }
}

/// A writable server on `dir` run in this process (its store's writes
/// through `gate`), permissions off: every request is `dr.who`'s.
struct InProcess {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<Result<(), ServeError>>>,
}

impl InProcess {
    fn start(dir: &Path, gate: &Arc<Gate>) -> InProcess {
        let fs: Arc<dyn Fs> = Arc::new(GateFs {
            real: RealFs::default(),
            gate: Arc::clone(gate),
        });
        let config = Config {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            shutdown_grace: Duration::from_secs(5),
            writable: Some(Writable {
                fs: Some(fs),
                ..Writable::default()
            }),
            permissions: PermissionConfig {
                enabled: false,
                ..PermissionConfig::default()
            },
            ..Config::default()
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (bound, addr) = mpsc::channel();
        let dir: PathBuf = dir.to_path_buf();
        let thread = std::thread::spawn(move || {
            http::run_until(
                dir,
                config,
                |l| {
                    let _ = bound.send(l.addr);
                },
                async move {
                    let _ = stopped.await;
                },
            )
        });
        let addr = addr.recv_timeout(WAIT).expect("the server started");
        InProcess {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// What the server's run returned, once it has (bounded).
    fn ended(&mut self) -> Result<(), ServeError> {
        let t = self.thread.take().expect("not ended yet");
        let deadline = Instant::now() + WAIT;
        while !t.is_finished() {
            assert!(
                Instant::now() < deadline,
                "the server did not stop within {WAIT:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        t.join().expect("the server's thread did not panic")
    }

    /// Stops the server; what its run returned.
    fn stop(&mut self) -> Result<(), ServeError> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        self.ended()
    }

    fn call(&self, method: &str, path: &str, query: &str) -> (u16, Value) {
        call(self.addr, method, path, query)
    }

    fn status(&self, path: &str) -> (u16, Value) {
        self.call("GET", path, "op=GETFILESTATUS")
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            // Bounded: a server that does not stop is left running, not
            // waited for forever.
            let deadline = Instant::now() + WAIT;
            while !t.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if t.is_finished() {
                let _ = t.join();
            }
        }
    }
}

fn call(addr: SocketAddr, method: &str, path: &str, query: &str) -> (u16, Value) {
    let target = format!("/webhdfs/v1{path}?{query}");
    let (status, body) = serve_common::request(addr, method, target.as_bytes());
    let v = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("{target}: {e}: {}", String::from_utf8_lossy(&body)))
    };
    (status, v)
}

/// A fresh plain store in a temporary directory.
fn new_store() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    Store::init(
        dir.path(),
        Arc::new(RealFs::default()),
        &nsimage_writer::AtRestOptions::default(),
    )
    .unwrap();
    dir
}

/// The names `LISTSTATUS /` lists.
fn root_names(s: &InProcess) -> Vec<String> {
    let (status, v) = s.call("GET", "/", "op=LISTSTATUS");
    assert_eq!(status, 200, "{v}");
    v["FileStatuses"]["FileStatus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["pathSuffix"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn reads_never_see_a_write_before_it_is_durable() {
    let st = new_store();
    let gate = Arc::new(Gate::default());
    let mut s = InProcess::start(st.path(), &gate);
    assert_eq!(s.call("PUT", "/acked", "op=MKDIRS").0, 200);

    // The next write is applied, its journal write held: not durable yet.
    gate.set(|g| g.hold = true);
    let addr = s.addr;
    let writer = std::thread::spawn(move || call(addr, "PUT", "/pending", "op=MKDIRS"));
    gate.wait_held();
    let (status, v) = s.status("/pending");
    assert_eq!(
        status, 404,
        "a write not yet durable is visible to a reader: {v}"
    );
    assert_eq!(root_names(&s), ["acked"]);
    assert_eq!(s.status("/acked").0, 200);

    // Durable: answered, and seen from then on.
    gate.set(|g| g.hold = false);
    let (status, v) = writer.join().unwrap();
    assert_eq!((status, v), (200, serde_json::json!({ "boolean": true })));
    assert_eq!(s.status("/pending").0, 200, "an acknowledged write is seen");
    assert_eq!(root_names(&s), ["acked", "pending"]);
    s.stop().expect("a clean stop");
}

/// The state `check` expects before the write, read through `s`.
type Check = fn(&InProcess);

#[test]
fn a_write_the_journal_cannot_take_is_never_seen_and_the_server_stops() {
    // (op, path, query, what the namespace shows before the op and must
    // show after it failed).
    let cases: [(&str, &str, &str, &str, Check); 4] = [
        ("MKDIRS", "PUT", "/x", "op=MKDIRS", |s| {
            assert_eq!(s.status("/x").0, 404);
        }),
        ("RENAME", "PUT", "/a", "op=RENAME&destination=/r", |s| {
            assert_eq!(s.status("/a").0, 200);
            assert_eq!(s.status("/a/b").0, 200);
            assert_eq!(s.status("/r").0, 404);
        }),
        ("DELETE", "DELETE", "/c", "op=DELETE&recursive=true", |s| {
            assert_eq!(s.status("/c").0, 200);
        }),
        (
            "SETPERMISSION",
            "PUT",
            "/c",
            "op=SETPERMISSION&permission=700",
            |s| {
                let (status, v) = s.status("/c");
                assert_eq!(status, 200);
                assert_eq!(v["FileStatus"]["permission"], "755", "{v}");
            },
        ),
    ];
    for (name, method, path, query, before) in cases {
        let st = new_store();
        let gate = Arc::new(Gate::default());
        let mut s = InProcess::start(st.path(), &gate);
        for acked in ["/a/b", "/c"] {
            assert_eq!(s.call("PUT", acked, "op=MKDIRS").0, 200, "{name}");
        }
        before(&s);

        // The disk fills while the op's journal write is on its way.
        gate.set(|g| {
            g.hold = true;
            g.full = true;
        });
        let addr = s.addr;
        let (m, p, q) = (method.to_string(), path.to_string(), query.to_string());
        let writer = std::thread::spawn(move || call(addr, &m, &p, &q));
        gate.wait_held();
        // Applied, not durable: readers see the namespace as it was.
        before(&s);
        gate.set(|g| g.hold = false);
        let (status, v) = writer.join().unwrap();
        assert_eq!(status, 500, "{name}: {v}");
        let msg = v["RemoteException"]["message"].as_str().unwrap_or("");
        assert!(msg.contains("not durable"), "{name}: {v}");

        // The server stops by itself, saying why, as the NameNode exits
        // when it cannot sync its edits.
        let e = s.ended().expect_err("the server stops with an error");
        assert!(matches!(e, ServeError::JournalFailed(_)), "{name}: {e:?}");
        let text = e.to_string();
        assert!(
            text.contains("no space left on device") && text.contains("acknowledged"),
            "{name}: {text}"
        );

        // Space comes back: a restart recovers every acknowledged write,
        // not the failed one, and goes on taking writes.
        gate.set(|g| g.full = false);
        let mut again = InProcess::start(st.path(), &gate);
        before(&again);
        assert_eq!(again.status("/a/b").0, 200, "{name}");
        assert_eq!(again.call("PUT", "/after", "op=MKDIRS").0, 200, "{name}");
        assert_eq!(again.status("/after").0, 200, "{name}");
        again.stop().expect("a clean stop");
        let reopened = Store::open(
            st.path(),
            Arc::new(RealFs::default()),
            StoreOptions::default(),
        )
        .expect("the store opens");
        reopened.with_namespace(|ns| {
            assert!(ns.resolve(b"/a/b").is_ok() && ns.resolve(b"/after").is_ok());
        });
    }
}
