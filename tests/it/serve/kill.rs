//! `nsimage serve STORE --writable` killed with SIGKILL 30 times at
//! seeded random moments under a 16-client write load, restarted each
//! time: after every restart each write a client saw acknowledged is
//! there, and nothing it saw refused is.
//!
//! Each client thread works in a directory of its own (`/k/c<i>`), with
//! names it never uses twice, on one keep-alive connection: MKDIRS,
//! CREATE (both WebHDFS steps, no data), SETPERMISSION, RENAME of files
//! and directories, DELETE of files and (recursively) directories, and
//! writes the server must refuse (CREATE over an existing file without
//! overwrite, DELETE of a non-empty directory without recursive, MKDIRS
//! under a file, RENAME of a missing source). It keeps a model of its
//! directory: the acknowledged writes applied, the refused ones not. The
//! one request in flight when the server dies may or may not have been
//! applied: the model keeps both outcomes until the restart says which.
//! After each restart the client lists its directory and each directory
//! in it (names, types, permissions set) and compares with its model, and
//! asks for the status of the paths its refused writes named (none may
//! exist). Every other kill is timed to land on a background checkpoint:
//! right after the server's `checkpoint started` line (the server
//! checkpoints every 40 ops). Bounded: a 20 000-inode store, a few hundred
//! milliseconds of load per kill.

use crate::common::nsimage;
use crate::serve_common::{self, Server};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

const CLIENTS: usize = 16;
const KILLS: usize = 30;
const SEED: u64 = 26;
/// How long a client may take to answer a command of the test.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
const IO_TIMEOUT: Duration = Duration::from_secs(20);
/// Paths of refused writes checked after each restart (the newest).
const REFUSED_KEPT: usize = 24;

/// An answer: status, `Location`, body.
struct Resp {
    status: u16,
    location: Option<String>,
    body: Vec<u8>,
}

impl Resp {
    fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    fn boolean(&self) -> Option<bool> {
        (self.status == 200)
            .then(|| self.json())
            .flatten()
            .and_then(|v| v.get("boolean").and_then(Value::as_bool))
    }

    /// A WebHDFS refusal: a 4xx status and a RemoteException body.
    fn refusal(&self) -> bool {
        (400..500).contains(&self.status)
            && self
                .json()
                .is_some_and(|v| v["RemoteException"]["exception"].is_string())
    }

    fn text(&self) -> String {
        format!(
            "{} {}",
            self.status,
            String::from_utf8_lossy(&self.body[..self.body.len().min(300)])
        )
    }
}

/// One keep-alive HTTP/1.1 connection, opened on demand, dropped after
/// any failure.
struct Conn {
    addr: SocketAddr,
    stream: Option<BufReader<TcpStream>>,
}

impl Conn {
    fn new(addr: SocketAddr) -> Conn {
        Conn { addr, stream: None }
    }

    fn request(&mut self, method: &str, target: &str) -> std::io::Result<Resp> {
        let r = self.try_request(method, target);
        if r.is_err() {
            self.stream = None;
        }
        r
    }

    fn try_request(&mut self, method: &str, target: &str) -> std::io::Result<Resp> {
        if self.stream.is_none() {
            let s = TcpStream::connect_timeout(&self.addr, IO_TIMEOUT)?;
            s.set_read_timeout(Some(IO_TIMEOUT))?;
            s.set_write_timeout(Some(IO_TIMEOUT))?;
            s.set_nodelay(true)?;
            self.stream = Some(BufReader::new(s));
        }
        let r = self
            .stream
            .as_mut()
            .ok_or_else(|| std::io::Error::other("no connection"))?;
        let req = format!(
            "{method} {target} HTTP/1.1\r\nHost: {}\r\nContent-Length: 0\r\n\r\n",
            self.addr
        );
        r.get_mut().write_all(req.as_bytes())?;
        let bad = |what: String| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "closed before an answer",
            ));
        }
        let status: u16 = line
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| bad(format!("status line {line:?}")))?;
        let (mut length, mut chunked, mut close, mut location) = (None, false, false, None);
        loop {
            let mut h = String::new();
            if r.read_line(&mut h)? == 0 {
                return Err(bad("closed in the head".into()));
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let Some((k, v)) = h.split_once(':') else {
                return Err(bad(format!("header {h:?}")));
            };
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
            match k.as_str() {
                "content-length" => length = v.parse::<usize>().ok(),
                "transfer-encoding" => chunked = v.eq_ignore_ascii_case("chunked"),
                "connection" => close = v.eq_ignore_ascii_case("close"),
                "location" => location = Some(v.to_string()),
                _ => {}
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                let mut size = String::new();
                r.read_line(&mut size)?;
                let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or(""), 16)
                    .map_err(|_| bad(format!("chunk size {size:?}")))?;
                if n == 0 {
                    // Trailers, up to the empty line.
                    loop {
                        let mut t = String::new();
                        if r.read_line(&mut t)? == 0 || t.trim_end().is_empty() {
                            break;
                        }
                    }
                    break;
                }
                let at = body.len();
                body.resize(at + n, 0);
                r.read_exact(&mut body[at..])?;
                let mut crlf = [0u8; 2];
                r.read_exact(&mut crlf)?;
            }
        } else if let Some(n) = length {
            body.resize(n, 0);
            r.read_exact(&mut body)?;
        } else {
            r.read_to_end(&mut body)?;
            close = true;
        }
        if close {
            self.stream = None;
        }
        Ok(Resp {
            status,
            location,
            body,
        })
    }
}

/// An entry of a client's model: a directory, or a file with the
/// permission a SETPERMISSION set (`None`: not set).
#[derive(Clone, Debug, PartialEq)]
enum Entry {
    Dir,
    File(Option<String>),
}

/// A client's directory: entries by path relative to it (`d3`, `d3/f9`).
type Tree = BTreeMap<String, Entry>;

/// Whether the tree read from the server matches the model (permissions
/// only where the model knows them).
fn matches(model: &Tree, seen: &Tree) -> bool {
    model.len() == seen.len()
        && model.iter().zip(seen).all(|((mp, me), (sp, se))| {
            mp == sp
                && match (me, se) {
                    (Entry::Dir, Entry::Dir) => true,
                    (Entry::File(None), Entry::File(_)) => true,
                    (Entry::File(Some(m)), Entry::File(Some(s))) => m == s,
                    _ => false,
                }
        })
}

/// What a client does next, from the test's thread.
enum Command {
    /// Write until the server dies (`killed` set).
    Run(SocketAddr),
    /// Compare the directory with the model on the restarted server.
    Verify(SocketAddr),
}

/// Counts over the whole test.
#[derive(Default)]
struct Counts {
    acknowledged: AtomicU64,
    refused: AtomicU64,
    in_flight: AtomicU64,
}

struct Client {
    dir: String,
    model: Tree,
    /// The outcome if the write in flight at the kill was applied (the
    /// model is the outcome if it was not).
    pending: Option<Tree>,
    refused: Vec<String>,
    next_name: u64,
    rng: Pcg64Mcg,
}

fn target(path: &str, op: &str, extra: &str) -> String {
    format!("/webhdfs/v1{path}?op={op}{extra}")
}

/// The request target of a `Location`.
fn location_target(loc: &str) -> Option<String> {
    let rest = loc.split_once("://").map_or(loc, |r| r.1);
    rest.find('/').map(|i| rest[i..].to_string())
}

/// Why a write's answer is neither what the model expects nor a
/// transport failure.
enum Failure {
    /// The connection failed: the server may have died.
    Transport(String),
    /// The answer contradicts the model.
    Wrong(String),
}

/// A write's expected answer.
#[derive(Clone, Copy, PartialEq)]
enum Expect {
    /// Acknowledged (200 + `{"boolean": true}`, 200, or 201 for CREATE).
    Ack,
    /// Refused (a 4xx RemoteException, or `{"boolean": false}`).
    Refusal,
}

impl Client {
    fn name(&mut self, prefix: &str) -> String {
        self.next_name += 1;
        format!("{prefix}{}", self.next_name)
    }

    fn abs(&self, rel: &str) -> String {
        format!("{}/{rel}", self.dir)
    }

    fn pick(&mut self, want: impl Fn(&str, &Entry) -> bool) -> Option<String> {
        let v: Vec<&String> = self
            .model
            .iter()
            .filter(|(p, e)| want(p, e))
            .map(|(p, _)| p)
            .collect();
        (!v.is_empty()).then(|| v[self.rng.random_range(0..v.len())].clone())
    }

    /// A write: CREATE's two steps, or one request.
    fn send(conn: &mut Conn, method: &str, t: &str, create: bool) -> Result<Resp, Failure> {
        let tr = |e: std::io::Error| Failure::Transport(format!("{method} {t}: {e}"));
        let r = conn.request(method, t).map_err(tr)?;
        if !create || r.status != 307 {
            return Ok(r);
        }
        let next = r
            .location
            .as_deref()
            .and_then(location_target)
            .ok_or_else(|| Failure::Wrong(format!("CREATE {t}: 307 without Location")))?;
        conn.request("PUT", &next)
            .map_err(|e| Failure::Transport(format!("PUT {next}: {e}")))
    }

    /// One random write; the model updated on its answer.
    fn step(&mut self, conn: &mut Conn, counts: &Counts) -> Result<(), Failure> {
        let files = self.model.values().filter(|e| **e != Entry::Dir).count();
        let dirs = self.model.len() - files;
        let crowded = self.model.len() > 40;
        let roll = self.rng.random_range(0..100u32);
        // (method, target, CREATE?, expectation, the model if acknowledged,
        // a path that must not exist if refused)
        let mut after = self.model.clone();
        let mut refused_path = None;
        let (method, t, create, expect) = match roll {
            0..=11 if !crowded || dirs == 0 => {
                let d = self.name("d");
                after.insert(d.clone(), Entry::Dir);
                (
                    "PUT",
                    target(&self.abs(&d), "MKDIRS", ""),
                    false,
                    Expect::Ack,
                )
            }
            12..=31 if !crowded || files == 0 => {
                let parent = match self.pick(|_, e| *e == Entry::Dir) {
                    Some(d) if self.rng.random_bool(0.5) => format!("{d}/"),
                    _ => String::new(),
                };
                let f = format!("{parent}{}", self.name("f"));
                after.insert(f.clone(), Entry::File(None));
                (
                    "PUT",
                    target(&self.abs(&f), "CREATE", "&overwrite=false"),
                    true,
                    Expect::Ack,
                )
            }
            32..=43 => {
                let Some(f) = self.pick(|_, e| *e != Entry::Dir) else {
                    return Ok(());
                };
                let perm = ["600", "640", "644", "700", "755"][self.rng.random_range(0..5)];
                after.insert(f.clone(), Entry::File(Some(perm.to_string())));
                (
                    "PUT",
                    target(
                        &self.abs(&f),
                        "SETPERMISSION",
                        &format!("&permission={perm}"),
                    ),
                    false,
                    Expect::Ack,
                )
            }
            44..=55 => {
                // A file renamed, into the top or a directory.
                let Some(f) = self.pick(|_, e| *e != Entry::Dir) else {
                    return Ok(());
                };
                let parent =
                    match self.pick(|p, e| *e == Entry::Dir && !f.starts_with(&format!("{p}/"))) {
                        Some(d) if self.rng.random_bool(0.5) => format!("{d}/"),
                        _ => String::new(),
                    };
                let to = format!("{parent}{}", self.name("f"));
                let e = after.remove(&f).unwrap_or(Entry::File(None));
                after.insert(to.clone(), e);
                (
                    "PUT",
                    target(
                        &self.abs(&f),
                        "RENAME",
                        &format!("&destination={}", self.abs(&to)),
                    ),
                    false,
                    Expect::Ack,
                )
            }
            56..=61 => {
                // A directory renamed, its files with it.
                let Some(d) = self.pick(|_, e| *e == Entry::Dir) else {
                    return Ok(());
                };
                let to = self.name("d");
                let inside: Vec<String> = after
                    .keys()
                    .filter(|p| p.starts_with(&format!("{d}/")))
                    .cloned()
                    .collect();
                for p in inside {
                    if let Some(e) = after.remove(&p) {
                        after.insert(format!("{to}{}", &p[d.len()..]), e);
                    }
                }
                after.remove(&d);
                after.insert(to.clone(), Entry::Dir);
                (
                    "PUT",
                    target(
                        &self.abs(&d),
                        "RENAME",
                        &format!("&destination={}", self.abs(&to)),
                    ),
                    false,
                    Expect::Ack,
                )
            }
            62..=73 => {
                let Some(f) = self.pick(|_, e| *e != Entry::Dir) else {
                    return Ok(());
                };
                after.remove(&f);
                (
                    "DELETE",
                    target(&self.abs(&f), "DELETE", ""),
                    false,
                    Expect::Ack,
                )
            }
            74..=81 => {
                let Some(d) = self.pick(|_, e| *e == Entry::Dir) else {
                    return Ok(());
                };
                after.retain(|p, _| p != &d && !p.starts_with(&format!("{d}/")));
                (
                    "DELETE",
                    target(&self.abs(&d), "DELETE", "&recursive=true"),
                    false,
                    Expect::Ack,
                )
            }
            82..=85 => {
                // CREATE over an existing file without overwrite.
                let Some(f) = self.pick(|_, e| *e != Entry::Dir) else {
                    return Ok(());
                };
                (
                    "PUT",
                    target(&self.abs(&f), "CREATE", "&overwrite=false"),
                    true,
                    Expect::Refusal,
                )
            }
            86..=89 => {
                // DELETE of a non-empty directory, not recursive.
                let keys: Vec<String> = self.model.keys().cloned().collect();
                let Some(d) = self.pick(|p, e| {
                    *e == Entry::Dir && keys.iter().any(|k| k.starts_with(&format!("{p}/")))
                }) else {
                    return Ok(());
                };
                (
                    "DELETE",
                    target(&self.abs(&d), "DELETE", "&recursive=false"),
                    false,
                    Expect::Refusal,
                )
            }
            90..=94 => {
                // MKDIRS under a file.
                let Some(f) = self.pick(|_, e| *e != Entry::Dir) else {
                    return Ok(());
                };
                let p = format!("{}/{}", self.abs(&f), self.name("x"));
                refused_path = Some(p.clone());
                ("PUT", target(&p, "MKDIRS", ""), false, Expect::Refusal)
            }
            95..=99 => {
                // RENAME of a source that does not exist.
                let (m, n) = (self.name("missing"), self.name("never"));
                let (from, to) = (self.abs(&m), self.abs(&n));
                refused_path = Some(to.clone());
                (
                    "PUT",
                    target(&from, "RENAME", &format!("&destination={to}")),
                    false,
                    Expect::Refusal,
                )
            }
            _ => {
                // Crowded: something is removed instead.
                let Some(p) = self.pick(|p, _| !p.contains('/')) else {
                    return Ok(());
                };
                after.retain(|k, _| k != &p && !k.starts_with(&format!("{p}/")));
                (
                    "DELETE",
                    target(&self.abs(&p), "DELETE", "&recursive=true"),
                    false,
                    Expect::Ack,
                )
            }
        };
        let r = match Self::send(conn, method, &t, create) {
            Ok(r) => r,
            Err(e) => {
                if expect == Expect::Ack {
                    self.pending = Some(after);
                }
                return Err(e);
            }
        };
        let acked = if create {
            r.status == 201
        } else if method == "DELETE" || t.contains("op=MKDIRS") || t.contains("op=RENAME") {
            r.boolean() == Some(true)
        } else {
            r.status == 200
        };
        let refused = r.refusal() || r.boolean() == Some(false);
        match expect {
            Expect::Ack if acked => {
                self.model = after;
                counts.acknowledged.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Expect::Refusal if refused => {
                counts.refused.fetch_add(1, Ordering::Relaxed);
                if let Some(p) = refused_path {
                    self.refused.push(p);
                    if self.refused.len() > REFUSED_KEPT {
                        self.refused.remove(0);
                    }
                }
                Ok(())
            }
            _ => Err(Failure::Wrong(format!(
                "{method} {t}: expected {}, got {}",
                if expect == Expect::Ack {
                    "an acknowledgement"
                } else {
                    "a refusal"
                },
                r.text()
            ))),
        }
    }

    /// The client's directory as the server lists it.
    fn read_tree(&self, conn: &mut Conn) -> Result<Tree, String> {
        let mut tree = Tree::new();
        let mut todo = vec![String::new()];
        while let Some(rel) = todo.pop() {
            let path = if rel.is_empty() {
                self.dir.clone()
            } else {
                self.abs(&rel)
            };
            let r = conn
                .request("GET", &target(&path, "LISTSTATUS", ""))
                .map_err(|e| format!("LISTSTATUS {path}: {e}"))?;
            let v = r
                .json()
                .filter(|_| r.status == 200)
                .ok_or_else(|| format!("LISTSTATUS {path}: {}", r.text()))?;
            let list = v["FileStatuses"]["FileStatus"]
                .as_array()
                .ok_or_else(|| format!("LISTSTATUS {path}: {v}"))?;
            for e in list {
                let name = e["pathSuffix"].as_str().unwrap_or_default();
                let key = if rel.is_empty() {
                    name.to_string()
                } else {
                    format!("{rel}/{name}")
                };
                let entry = if e["type"] == "DIRECTORY" {
                    todo.push(key.clone());
                    Entry::Dir
                } else {
                    Entry::File(e["permission"].as_str().map(str::to_string))
                };
                tree.insert(key, entry);
            }
        }
        Ok(tree)
    }

    /// After a restart: the directory is the model (or, for the write in
    /// flight at the kill, its outcome), and no refused path exists.
    fn verify(&mut self, conn: &mut Conn) -> Result<(), String> {
        let seen = self.read_tree(conn)?;
        if matches(&self.model, &seen) {
            self.pending = None;
        } else if let Some(after) = self.pending.take().filter(|a| matches(a, &seen)) {
            self.model = after;
        } else {
            return Err(format!(
                "{}: after the restart the server has\n{seen:?}\nthe acknowledged writes make\n{:?}",
                self.dir, self.model
            ));
        }
        // Permissions the server reports now are known from here on.
        for (p, e) in &seen {
            if let (Some(Entry::File(m)), Entry::File(Some(s))) = (self.model.get_mut(p), e) {
                *m = Some(s.clone());
            }
        }
        for p in &self.refused {
            let r = conn
                .request("GET", &target(p, "GETFILESTATUS", ""))
                .map_err(|e| format!("GETFILESTATUS {p}: {e}"))?;
            if r.status == 200 {
                return Err(format!(
                    "{p} exists, yet its write was refused: {}",
                    r.text()
                ));
            }
        }
        Ok(())
    }
}

/// A client thread: commands from the test, one reply each (`Ok` or what
/// went wrong).
fn client_thread(
    mut c: Client,
    rx: mpsc::Receiver<Command>,
    tx: mpsc::Sender<Result<(), String>>,
    killed: Arc<AtomicBool>,
    counts: Arc<Counts>,
) {
    let mut failed = false;
    while let Ok(cmd) = rx.recv() {
        let reply = match cmd {
            _ if failed => Err("failed earlier".to_string()),
            Command::Run(addr) => {
                let mut conn = Conn::new(addr);
                let mut r = Ok(());
                while !killed.load(Ordering::Acquire) {
                    match c.step(&mut conn, &counts) {
                        Ok(()) => {}
                        Err(Failure::Transport(e)) => {
                            if !killed.load(Ordering::Acquire) {
                                r = Err(format!("{e} (the server was not being killed)"));
                            } else {
                                counts.in_flight.fetch_add(1, Ordering::Relaxed);
                            }
                            break;
                        }
                        Err(Failure::Wrong(e)) => {
                            r = Err(e);
                            break;
                        }
                    }
                }
                r
            }
            Command::Verify(addr) => c.verify(&mut Conn::new(addr)),
        };
        failed |= reply.is_err();
        if tx.send(reply).is_err() {
            return;
        }
    }
}

/// Waits (bounded) for a `checkpoint started` line of the server's stderr;
/// whether one came, and whether its `finished` line had come by then.
fn await_checkpoint(server: &Server, within: Duration) -> Option<bool> {
    let t = Instant::now();
    let mut started: Option<String> = None;
    let mut finished = Vec::new();
    while t.elapsed() < within {
        for l in server.stderr_lines() {
            if let Some(txid) = l.strip_prefix("checkpoint started txid=") {
                started = Some(txid.trim().to_string());
            } else if let Some(rest) = l.strip_prefix("checkpoint finished txid=") {
                finished.push(rest.split_whitespace().next().unwrap_or("").to_string());
            }
        }
        if let Some(txid) = &started {
            return Some(finished.contains(txid));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    None
}

/// The test's ends of the client threads' channels.
type Link = (mpsc::Sender<Command>, mpsc::Receiver<Result<(), String>>);

/// Every client's reply to the command just sent; what went wrong.
fn replies(links: &[Link], what: &str) -> Vec<String> {
    let mut errors = Vec::new();
    for (i, (_, rx)) in links.iter().enumerate() {
        match rx.recv_timeout(COMMAND_TIMEOUT) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => errors.push(format!("client {i}: {e}")),
            Err(e) => errors.push(format!("client {i}: no reply to {what}: {e}")),
        }
    }
    errors
}

/// The server on `store`; its clients write as `dr.who`, made a superuser
/// (this test is about durability, not who may write).
fn start(store: &Path) -> Server {
    let dir = store.parent().unwrap_or(store);
    let groups = serve_common::superusers_file(dir, &["dr.who"]);
    Server::start(
        store,
        &[
            "--writable",
            "--checkpoint-every-ops",
            "40",
            "--groups-file",
            &groups,
            "--supergroup",
            serve_common::TEST_SUPERGROUP,
        ],
    )
}

#[test]
fn acknowledged_writes_survive_30_sigkills_under_load() {
    let began = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("img");
    let store = dir.path().join("store");
    let out = nsimage(&["generate", "-o", img.to_str().unwrap(), "--inodes", "20000"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    crate::common::store_from(&store, &img);

    let mut server = start(&store);
    let mut conn = Conn::new(server.addr);
    let r = conn.request("PUT", &target("/k", "MKDIRS", "")).unwrap();
    assert_eq!(r.boolean(), Some(true), "{}", r.text());

    let killed = Arc::new(AtomicBool::new(false));
    let counts = Arc::new(Counts::default());
    let mut rng = Pcg64Mcg::seed_from_u64(SEED);
    let mut links: Vec<Link> = Vec::new();
    for i in 0..CLIENTS {
        let d = format!("/k/c{i}");
        let r = conn.request("PUT", &target(&d, "MKDIRS", "")).unwrap();
        assert_eq!(r.boolean(), Some(true), "{}", r.text());
        let c = Client {
            dir: d,
            model: Tree::new(),
            pending: None,
            refused: Vec::new(),
            next_name: 0,
            rng: Pcg64Mcg::seed_from_u64(SEED ^ ((i as u64 + 1) * 0x9e37_79b9)),
        };
        let (ctx, crx) = mpsc::channel();
        let (rtx, rrx) = mpsc::channel();
        let (k, n) = (Arc::clone(&killed), Arc::clone(&counts));
        std::thread::spawn(move || client_thread(c, crx, rtx, k, n));
        links.push((ctx, rrx));
    }
    drop(conn);

    let (mut in_checkpoint, mut timed_on_checkpoint) = (0, 0);
    for kill in 0..KILLS {
        killed.store(false, Ordering::Release);
        // Lines from before the load (a checkpoint at the start) are old.
        let _ = server.stderr_lines();
        let addr = server.addr;
        for (tx, _) in &links {
            tx.send(Command::Run(addr)).unwrap();
        }
        if kill % 2 == 1 {
            if let Some(done) = await_checkpoint(&server, Duration::from_secs(5)) {
                timed_on_checkpoint += 1;
                in_checkpoint += usize::from(!done);
            }
        } else {
            std::thread::sleep(Duration::from_millis(rng.random_range(20..400)));
        }
        killed.store(true, Ordering::Release);
        server.child.kill().unwrap();
        server.child.wait().unwrap();
        let errors = replies(&links, "the run");
        assert!(errors.is_empty(), "kill {kill}: {}", errors.join("\n"));
        server = start(&store);
        for (tx, _) in &links {
            tx.send(Command::Verify(server.addr)).unwrap();
        }
        let errors = replies(&links, "the check");
        assert!(
            errors.is_empty(),
            "after kill {kill} and the restart: {}",
            errors.join("\n")
        );
    }
    drop(links);
    let acked = counts.acknowledged.load(Ordering::Relaxed);
    let refused = counts.refused.load(Ordering::Relaxed);
    eprintln!(
        "{KILLS} kills in {:.1} s: {acked} writes acknowledged, {refused} refused, {} in flight at a kill; \
         {timed_on_checkpoint} kills timed on a checkpoint's start, {in_checkpoint} before its finished line",
        began.elapsed().as_secs_f64(),
        counts.in_flight.load(Ordering::Relaxed)
    );
    assert!(acked > KILLS as u64 * 10, "too few writes: {acked}");
    assert!(refused > 0, "no refused write was tried");
    assert!(
        timed_on_checkpoint >= KILLS / 4,
        "the server printed few checkpoint lines: {timed_on_checkpoint}"
    );
    assert!(
        in_checkpoint > 0,
        "no kill landed before a checkpoint's finished line"
    );
}
