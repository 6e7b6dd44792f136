//! Failover of an HA group (`serve --writable --ha-etcd`, issue 41) under
//! 16 writing clients of the PyPI `hdfs` package, each configured with
//! both servers' URLs (`tests/python/ha_writers.py`: unique paths per
//! client, every acknowledged op recorded client side with the URL that
//! answered and when). Three runs, one group each (a 3-member etcd and two
//! servers on loopback ports of their own, lease 2 s, etcd timeout 1 s):
//!
//! - 30 SIGKILLs of the active at varied moments (some while the standby
//!   checkpoints), the killed one restarted at once as a standby that must
//!   catch up;
//! - 10 SIGSTOPs of the active for longer than its lease, until the
//!   standby has taken over, then SIGCONT: it must find itself deposed;
//! - SIGKILL of 1 etcd member of 3 (writes still acknowledged), of 2 of 3
//!   (every write refused within etcd timeout × 3 + lease, none
//!   acknowledged until they are back, service back then), and a full
//!   restart of etcd and both servers.
//!
//! After each run the servers are stopped with SIGTERM and: every
//! acknowledged op's effect (and nothing else) is in both servers' live
//! answers (GETFILESTATUS, before the stop) and in `nsimage ls -R` of each
//! store's checkpoint + journal; both stores recover to one digest and
//! txid; each store's journal has contiguous txids and creates each name
//! at most once (no op applied twice); and every write a paused active
//! acknowledged after its SIGCONT was committed at or below the txid its
//! successor became active at (the pause run takes no checkpoint, so the
//! journals hold every txid): no deposed active acknowledged a write. That
//! check fails on a build whose appends skip the leadership compare
//! (`EtcdJournal::commit`). Every wait has a deadline; every process is
//! killed on drop.

use crate::common::{self, nsimage};
use crate::python_env;
use nsimage_testkit::etcd::EtcdCluster;
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const CLIENTS: usize = 16;
const LEASE_SECS: u64 = 2;
const ETCD_TIMEOUT_MS: u64 = 1000;
/// The hdfs client's timeout per request: longer than a pause, so that
/// the writes in flight to a paused active wait for its answer.
const CLIENT_TIMEOUT_S: u64 = 8;
/// How long a write may wait before it is refused while etcd has no
/// quorum: each of 3 endpoints tried for the etcd timeout, plus a lease.
const REFUSAL_BOUND_S: f64 = 3.0 * ETCD_TIMEOUT_MS as f64 / 1000.0 + LEASE_SECS as f64;
/// Slack on that bound for two busy cores.
const SLACK_S: f64 = 2.0;

/// The runs share two cores: one at a time, so their timings mean something.
static SERIAL: Mutex<()> = Mutex::new(());

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The etcd binary, installed by `tests/ha/setup.sh` when missing.
fn etcd_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let setup = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ha/setup.sh");
        let out = Command::new("bash").arg(&setup).output().unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            setup.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .last()
                .unwrap()
                .trim(),
        )
    })
}

fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

fn signal(pid: u32, sig: &str) {
    let st = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success(), "kill -{sig} {pid}");
}

/// `GET target` on its own connection, every step bounded; `None` when
/// the server does not answer.
fn get(addr: SocketAddr, target: &str, timeout: Duration) -> Option<(u16, Value)> {
    let mut s = TcpStream::connect_timeout(&addr, timeout).ok()?;
    s.set_read_timeout(Some(timeout)).ok()?;
    s.set_write_timeout(Some(timeout)).ok()?;
    let req = format!("GET {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).ok()?;
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).ok()?;
    let end = resp.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&resp[..end]).to_string();
    let status = head.split(' ').nth(1)?.parse().ok()?;
    let mut body = resp[end + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = crate::serve_common::dechunk(&body);
    }
    Some((status, serde_json::from_slice(&body).ok()?))
}

/// One server of the group: a fixed address (the clients know it), its
/// own store; killed on drop.
struct Member {
    id: String,
    addr: SocketAddr,
    store: PathBuf,
    log: PathBuf,
    child: Option<Child>,
    checkpoint_every: u64,
    /// More `serve` arguments.
    extra: Vec<String>,
}

impl Member {
    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Starts the server (retrying while its port is not free yet) and
    /// waits for its `listening on` line.
    fn start(&mut self, endpoints: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let mut log = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.log)
                .unwrap();
            writeln!(log, "--- start at {:.3}", now()).unwrap();
            let mut child = Command::new(env!("CARGO_BIN_EXE_nsimage"))
                .arg("serve")
                .arg(&self.store)
                .args(["--writable", "--addr", &self.addr.to_string()])
                .args(["--ha-etcd", endpoints, "--ha-id", &self.id])
                .args(["--ha-lease-secs", &LEASE_SECS.to_string()])
                .args(["--ha-etcd-timeout-ms", &ETCD_TIMEOUT_MS.to_string()])
                .args(["--standby-reads", "--checkpoint-every-ops"])
                .arg(self.checkpoint_every.to_string())
                .args(&self.extra)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(log)
                .spawn()
                .unwrap();
            let stdout = child.stdout.take().unwrap();
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || {
                let mut r = BufReader::new(stdout);
                let mut line = String::new();
                let _ = r.read_line(&mut line);
                let _ = tx.send(line);
                let _ = std::io::copy(&mut r, &mut std::io::sink());
            });
            let line = rx.recv_timeout(Duration::from_secs(60)).unwrap_or_default();
            if line.starts_with("listening on") {
                self.child = Some(child);
                return;
            }
            let _ = child.kill();
            let _ = child.wait();
            assert!(
                Instant::now() < deadline,
                "{} did not start: {line:?}; its log: {}",
                self.id,
                self.log.display()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM, and a clean exit within 30 s.
    fn terminate(&mut self) {
        let Some(mut c) = self.child.take() else {
            return;
        };
        signal(c.id(), "TERM");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(st) = c.try_wait().unwrap() {
                assert!(st.success(), "{} exited {st} on SIGTERM", self.id);
                return;
            }
            if Instant::now() > deadline {
                let _ = c.kill();
                let _ = c.wait();
                panic!("{} did not stop within 30 s of SIGTERM", self.id);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The txids its log says it became active at, in order.
    fn promotions(&self) -> Vec<u64> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines()
            .filter_map(|l| {
                l.split_once(": active at txid ")?
                    .1
                    .split(' ')
                    .next()?
                    .parse()
                    .ok()
            })
            .collect()
    }

    fn status(&self) -> Option<Value> {
        self.child.as_ref()?;
        get(self.addr, "/nsimage/ha/status", Duration::from_secs(2))
            .filter(|(s, _)| *s == 200)
            .map(|(_, v)| v)
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The writers' process, killed on drop.
struct Writers {
    child: Child,
    out: PathBuf,
    stop: PathBuf,
    stderr: PathBuf,
}

impl Writers {
    /// Stops the clients (each ends the op it is in) and waits for them.
    fn stop(&mut self) {
        std::fs::write(&self.stop, b"").unwrap();
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                let err = std::fs::read_to_string(&self.stderr).unwrap_or_default();
                let tail = &err[err.len().saturating_sub(4000)..];
                assert!(st.success(), "ha_writers.py exited {st}: {tail}");
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the writers did not stop in 120 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Writers {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The clients' records, read as they grow.
#[derive(Default)]
struct Records {
    offsets: BTreeMap<PathBuf, usize>,
    /// Per client, its ops in order.
    ops: BTreeMap<u64, Vec<Value>>,
    /// Failed calls.
    attempts: Vec<Value>,
    other: Vec<Value>,
}

impl Records {
    fn refresh(&mut self, dir: &Path) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(bytes) = std::fs::read(&p) else {
                continue;
            };
            let at = self.offsets.entry(p).or_insert(0);
            let Some(end) = bytes[*at..].iter().rposition(|&b| b == b'\n') else {
                continue;
            };
            for line in bytes[*at..*at + end].split(|&b| b == b'\n') {
                let v: Value = serde_json::from_slice(line).unwrap();
                match v["kind"].as_str() {
                    Some("op") => self
                        .ops
                        .entry(v["c"].as_u64().unwrap())
                        .or_default()
                        .push(v),
                    Some("attempt") => self.attempts.push(v),
                    _ => self.other.push(v),
                }
            }
            *at += end + 1;
        }
    }

    fn acks(&self) -> impl Iterator<Item = &Value> {
        self.ops
            .values()
            .flatten()
            .filter(|v| v["outcome"] == "ack")
    }

    /// The first ack of a call that began at or after `t`: its end.
    fn first_ack_after(&self, t: f64) -> Option<f64> {
        self.acks()
            .filter(|v| v["t0"].as_f64().unwrap() >= t)
            .map(|v| v["t1"].as_f64().unwrap())
            .min_by(f64::total_cmp)
    }
}

/// A window in which a member was paused (SIGSTOP to SIGCONT).
struct Pause {
    url: String,
    stopped: f64,
    resumed: f64,
    /// The txid the member that took over became active at: every write
    /// the paused one committed is at or below it.
    promoted_at: u64,
}

/// One HA group under load.
struct Group {
    // Fields drop in order: the processes first, then their directory.
    members: Vec<Member>,
    writers: Option<Writers>,
    etcd: EtcdCluster,
    records: Records,
    pauses: Vec<Pause>,
    began: Instant,
    dir: tempfile::TempDir,
}

impl Group {
    /// A 3-member etcd, two servers on copies of one store (made before
    /// either ran), one of them active; the writers started.
    fn start(inodes: u64, seed: u64, checkpoint_every: u64) -> Group {
        let began = Instant::now();
        let dir = tempfile::tempdir().unwrap();
        let etcd = EtcdCluster::start(etcd_bin(), &dir.path().join("etcd"), 3).unwrap();
        let img = dir.path().join("img");
        let out = nsimage(&[
            "generate",
            "-o",
            img.to_str().unwrap(),
            "--inodes",
            &inodes.to_string(),
        ]);
        assert!(out.status.success());
        let a = dir.path().join("a");
        common::store_from(&a, &img);
        let b = dir.path().join("b");
        let st = Command::new("cp")
            .arg("-a")
            .arg(&a)
            .arg(&b)
            .status()
            .unwrap();
        assert!(st.success());
        let mut members: Vec<Member> = ["a", "b"]
            .iter()
            .map(|id| Member {
                id: id.to_string(),
                addr: free_addr(),
                store: dir.path().join(id),
                log: dir.path().join(format!("{id}.log")),
                child: None,
                checkpoint_every: 0,
                extra: Vec::new(),
            })
            .collect();
        for m in &mut members {
            m.checkpoint_every = checkpoint_every;
            m.start(&etcd.endpoints());
        }
        let mut g = Group {
            members,
            writers: None,
            etcd,
            records: Records::default(),
            pauses: Vec::new(),
            began,
            dir,
        };
        let act = g.active(Duration::from_secs(30));
        g.caught_up(1 - act, Duration::from_secs(30));
        let out = g.dir.path().join("records");
        let stop = g.dir.path().join("stop");
        // The client logs a warning whenever every URL failed: a file, not
        // a pipe that could fill.
        let stderr = g.dir.path().join("writers.log");
        let urls = g
            .members
            .iter()
            .map(Member::url)
            .collect::<Vec<_>>()
            .join(";");
        let py = python_env::python();
        let child = Command::new(py)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/ha_writers.py"))
            .args([
                &urls,
                out.to_str().unwrap(),
                &CLIENTS.to_string(),
                &seed.to_string(),
                &CLIENT_TIMEOUT_S.to_string(),
                stop.to_str().unwrap(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        g.writers = Some(Writers {
            child,
            out,
            stop,
            stderr,
        });
        g.wait_acks_after(now(), 50, Duration::from_secs(60));
        g
    }

    fn logs(&self) -> String {
        format!("(server logs in {})", self.dir.path().display())
    }

    fn statuses(&self) -> Vec<Option<Value>> {
        self.members.iter().map(Member::status).collect()
    }

    /// The one active member, once there is one and the others are
    /// standbys (at most `within`).
    fn active(&self, within: Duration) -> usize {
        let deadline = Instant::now() + within;
        loop {
            let st = self.statuses();
            let roles: Vec<&str> = st
                .iter()
                .map(|s| {
                    s.as_ref()
                        .and_then(|v| v["role"].as_str())
                        .unwrap_or("down")
                })
                .collect();
            if roles.iter().filter(|r| **r == "active").count() == 1
                && roles.iter().all(|r| *r == "active" || *r == "standby")
            {
                return roles.iter().position(|r| *r == "active").unwrap();
            }
            assert!(
                Instant::now() < deadline,
                "no single active within {within:?}: {st:?} {}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until member `i` (a standby) has applied what the active had
    /// committed when this began.
    fn caught_up(&self, i: usize, within: Duration) {
        let deadline = Instant::now() + within;
        let target = loop {
            if let Some(t) = self
                .statuses()
                .iter()
                .flatten()
                .find(|s| s["role"] == "active")
                .and_then(|s| s["durable_txid"].as_u64())
            {
                break t;
            }
            assert!(Instant::now() < deadline, "no active {}", self.logs());
            std::thread::sleep(Duration::from_millis(20));
        };
        loop {
            let st = self.members[i].status();
            if st
                .as_ref()
                .and_then(|s| s["durable_txid"].as_u64())
                .is_some_and(|t| t >= target)
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{} did not reach txid {target} within {within:?}: {st:?} {}",
                self.members[i].id,
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn refresh(&mut self) {
        let out = self.writers.as_ref().unwrap().out.clone();
        self.records.refresh(&out);
    }

    /// Waits until `n` acks of calls begun at or after `t` are recorded.
    fn wait_acks_after(&mut self, t: f64, n: usize, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            self.refresh();
            let k = self
                .records
                .acks()
                .filter(|v| v["t0"].as_f64().unwrap() >= t)
                .count();
            if k >= n {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "only {k} acks of writes begun after {t:.3} within {within:?}: {:?} {}",
                self.statuses(),
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the writers, checks the live answers, stops the servers
    /// (SIGTERM) and checks their stores. Returns the records.
    fn finish(mut self) -> Records {
        self.writers.as_mut().unwrap().stop();
        self.refresh();
        let r = &self.records;
        assert!(r.other.is_empty(), "the writers reported {:?}", r.other);
        let errors: Vec<&Value> = r
            .ops
            .values()
            .flatten()
            .filter(|v| v["outcome"] == "error")
            .collect();
        assert!(errors.is_empty(), "answers no server may give: {errors:?}");
        let model = Model::of(&self.records);

        // Live answers: both members at one txid, each path as the model says.
        let act = self.active(Duration::from_secs(30));
        self.caught_up(1 - act, Duration::from_secs(30));
        for m in &self.members {
            let mut conn = KeepAlive::new(m.addr);
            model.check(&format!("{} live", m.id), |p| conn.status(p), None);
        }
        for m in &mut self.members {
            m.terminate();
        }

        // The stores: ls -R of checkpoint + journal, digests, journals.
        let mut digests = BTreeSet::new();
        let mut journals = Vec::new();
        for m in &self.members {
            let copy = self.dir.path().join(format!("{}-copy", m.id));
            let st = Command::new("cp")
                .arg("-a")
                .arg(&m.store)
                .arg(&copy)
                .status()
                .unwrap();
            assert!(st.success());
            let rec = json_out(&["store", "recover", copy.to_str().unwrap(), "--json"]);
            digests.insert((
                rec[0]["digest"].as_str().unwrap().to_string(),
                rec[0]["txid"].as_u64().unwrap(),
            ));
            journals.push(check_journal(&m.id, &copy));
            let out = nsimage(&["store", "checkpoint", copy.to_str().unwrap()]);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let img = common::newest_image(&copy);
            let listed = json_out(&["ls", img.to_str().unwrap(), "/ha", "-R", "--json"]);
            let mut by_path = BTreeMap::new();
            for e in &listed {
                let p = e["path"].as_str().unwrap().to_string();
                let kind = if e["type"] == "directory" {
                    Kind::Dir
                } else {
                    Kind::File
                };
                let mode = mode_of(e["permission"]["octal"].as_str().unwrap());
                by_path.insert(p, (kind, mode));
            }
            model.check(
                &format!("{}'s store", m.id),
                |p| by_path.get(p).copied(),
                Some(by_path.keys().cloned().collect()),
            );
        }
        assert_eq!(digests.len(), 1, "the stores differ: {digests:?}");
        if !self.pauses.is_empty() {
            self.no_deposed_acks(&journals[0]);
        }
        eprintln!(
            "ha: {} acknowledged ops, {} unknown, txid {:?}, run {:.1} s",
            self.records.acks().count(),
            self.records
                .ops
                .values()
                .flatten()
                .filter(|v| v["outcome"] == "unknown")
                .count(),
            digests.iter().next().map(|d| d.1),
            self.began.elapsed().as_secs_f64()
        );
        std::mem::take(&mut self.records)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // The processes go; their logs and stores stay for a look.
            for m in &mut self.members {
                m.kill();
            }
            self.writers = None;
            let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap());
            eprintln!("ha: the group's files are kept in {}", dir.keep().display());
        }
    }
}

impl Group {
    /// No write acknowledged by a deposed active: each write a paused
    /// member acknowledged after its SIGCONT (sent before it, or while it
    /// was stopped) must have been committed at or below the txid its
    /// successor became active at, while it still led. `journal` is a
    /// store's whole journal (this run takes no checkpoint).
    fn no_deposed_acks(&self, journal: &[Value]) {
        assert_eq!(
            journal.first().and_then(|o| o["txid"].as_u64()),
            Some(5001),
            "the journal does not reach back to the start"
        );
        // Names (unique) to the txid that made them; each mode set and
        // delete with the name of the inode it changed (the leaf of its
        // path, or for an op the dump names by id, the name that id was
        // made with).
        let (mut made, mut name_of, mut by_name) = (BTreeMap::new(), BTreeMap::new(), Vec::new());
        for o in journal {
            let t = o["txid"].as_u64().unwrap();
            if let Some(n) = made_name(o) {
                made.insert(n.clone(), t);
                if let Some(id) = o["inodeid"].as_u64() {
                    name_of.insert(id, n);
                }
                continue;
            }
            let target = ["src", "path"]
                .iter()
                .find_map(|k| o[k].as_str().map(leaf_of))
                .or_else(|| {
                    o["inodeid"]
                        .as_u64()
                        .and_then(|id| name_of.get(&id).cloned())
                });
            match (o["opcode"].as_str(), target) {
                (Some("OP_SET_PERMISSIONS"), Some(n)) => {
                    by_name.push((n, o["mode"].as_u64().map(|m| m as u32), t))
                }
                (Some("OP_DELETE"), Some(n)) => by_name.push((n, None, t)),
                _ => {}
            }
        }
        let leaf = |p: &str| p.rsplit('/').next().unwrap().to_string();
        let mut late = 0;
        for p in &self.pauses {
            for v in self.records.acks() {
                let (t0, t1) = (v["t0"].as_f64().unwrap(), v["t1"].as_f64().unwrap());
                if v["server"].as_str() != Some(&p.url) || t0 >= p.resumed || t1 <= p.resumed {
                    continue;
                }
                late += 1;
                let path = v["path"].as_str().unwrap();
                // The txids that may be this op's (a mode set twice is
                // ambiguous: any one at or below is enough).
                let txids: Vec<u64> = match v["op"].as_str().unwrap() {
                    "mkdirs" | "create" => made.get(&leaf(path)).copied().into_iter().collect(),
                    "rename" => made
                        .get(&leaf(v["to"].as_str().unwrap()))
                        .copied()
                        .into_iter()
                        .collect(),
                    op => {
                        let name = leaf(path);
                        let mode =
                            (op == "set_permission").then(|| mode_of(v["mode"].as_str().unwrap()));
                        by_name
                            .iter()
                            .filter(|(n, m, _)| *n == name && *m == mode)
                            .map(|(_, _, t)| *t)
                            .collect()
                    }
                };
                assert!(
                    !txids.is_empty(),
                    "an acknowledged write is not in the journal: {v}"
                );
                assert!(
                    txids.iter().any(|&t| t <= p.promoted_at),
                    "a write acknowledged by {} after its SIGCONT was committed at txid {txids:?}, \
                     after its successor became active at txid {}: a deposed active \
                     acknowledged it: {v}",
                    p.url,
                    p.promoted_at
                );
            }
        }
        eprintln!("ha: {late} writes acknowledged by a paused active after its SIGCONT, each committed before it lost the leadership");
        // Not vacuous: over the pauses, some acknowledgement came after a
        // SIGCONT and was checked (a build without fencing acknowledges
        // writes it committed after its successor took over).
        assert!(
            late > 0,
            "no write acknowledged after a SIGCONT: the fencing check checked nothing"
        );
    }
}

fn json_out(args: &[&str]) -> Vec<Value> {
    let out = nsimage(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A store's journal: txids contiguous, and each name the clients use
/// (they never use one twice) created at most once, so no op was applied
/// twice.
fn check_journal(id: &str, store: &Path) -> Vec<Value> {
    let ops = json_out(&["journal", "dump", store.to_str().unwrap(), "--json"]);
    let mut last: Option<u64> = None;
    let mut made = BTreeMap::new();
    for o in &ops {
        let t = o["txid"].as_u64().unwrap();
        if let Some(l) = last {
            assert_eq!(t, l + 1, "{id}: txid {t} after {l}");
        }
        last = Some(t);
        let name = made_name(o);
        if let Some(n) = name.filter(|n| n.starts_with('c') && n.contains('-')) {
            if let Some(first) = made.insert(n.clone(), t) {
                panic!("{id}: {n} made at txid {first} and again at {t}");
            }
        }
    }
    assert!(!made.is_empty(), "{id}: no name made in the journal kept");
    ops
}

/// The last component of `path`.
fn leaf_of(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_string()
}

/// The name a journal op (`journal dump --json`, oev's fields) gives an
/// inode: a mkdir's or create's, a rename's new one; by path where the
/// dump resolved it, else the op's own name field.
fn made_name(o: &Value) -> Option<String> {
    let (path, name) = match o["opcode"].as_str()? {
        "OP_MKDIR" | "OP_ADD" => ("path", "name"),
        "OP_RENAME_OLD" => ("dst", "dst_name"),
        _ => return None,
    };
    o[path]
        .as_str()
        .map(leaf_of)
        .or_else(|| o[name].as_str().map(str::to_string))
}

fn mode_of(text: &str) -> u32 {
    u32::from_str_radix(text, 8).unwrap()
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Dir,
    File,
}

/// What a path must be at the end.
#[derive(Clone, Debug)]
enum Want {
    Absent,
    Dir,
    /// A file; its mode one of these (`None`: any).
    File(Option<Vec<u32>>),
    /// Absent, or as the inner (an op whose outcome is unknown).
    Maybe(Box<Want>),
}

impl Want {
    fn allows(&self, seen: Option<(Kind, u32)>) -> bool {
        match (self, seen) {
            (Want::Absent, None) => true,
            (Want::Dir, Some((Kind::Dir, _))) => true,
            (Want::File(None), Some((Kind::File, _))) => true,
            (Want::File(Some(ms)), Some((Kind::File, m))) => ms.contains(&m),
            (Want::Maybe(_), None) => true,
            (Want::Maybe(w), s) => w.allows(s),
            _ => false,
        }
    }

    fn modes(&self) -> Option<Vec<u32>> {
        match self {
            Want::File(m) => m.clone(),
            Want::Maybe(w) => w.modes(),
            _ => None,
        }
    }
}

/// The final namespace under `/ha` the clients' records allow.
struct Model {
    paths: BTreeMap<String, Want>,
    /// A rename of unknown outcome: exactly one of the two is the file.
    either: Vec<(String, String, Want)>,
}

impl Model {
    fn of(r: &Records) -> Model {
        let mut m = Model {
            paths: BTreeMap::new(),
            either: Vec::new(),
        };
        for ops in r.ops.values() {
            for v in ops {
                let ack = v["outcome"] == "ack";
                let path = v["path"].as_str().unwrap().to_string();
                let prev = m.paths.get(&path).cloned();
                match v["op"].as_str().unwrap() {
                    "mkdirs" => {
                        let w = if ack {
                            Want::Dir
                        } else {
                            Want::Maybe(Box::new(Want::Dir))
                        };
                        // A retried top directory is acknowledged in the end.
                        if !matches!(prev, Some(Want::Dir)) {
                            m.paths.insert(path, w);
                        }
                    }
                    "create" => {
                        let f = Want::File(None);
                        m.paths
                            .insert(path, if ack { f } else { Want::Maybe(Box::new(f)) });
                    }
                    "set_permission" => {
                        let mode = mode_of(v["mode"].as_str().unwrap());
                        let w = if ack {
                            Want::File(Some(vec![mode]))
                        } else {
                            let modes = prev.as_ref().and_then(Want::modes);
                            Want::File(modes.map(|mut ms| {
                                ms.push(mode);
                                ms
                            }))
                        };
                        m.paths.insert(path, w);
                    }
                    "rename" => {
                        let to = v["to"].as_str().unwrap().to_string();
                        let w = Want::File(prev.as_ref().and_then(Want::modes));
                        m.paths.remove(&path);
                        if ack {
                            m.paths.insert(path, Want::Absent);
                            m.paths.insert(to, w);
                        } else {
                            m.either.push((path, to, w));
                        }
                    }
                    "delete" => {
                        let w = Want::File(prev.as_ref().and_then(Want::modes));
                        m.paths.insert(
                            path,
                            if ack {
                                Want::Absent
                            } else {
                                Want::Maybe(Box::new(w))
                            },
                        );
                    }
                    op => panic!("unknown op {op}"),
                }
            }
        }
        m
    }

    /// Checks what `look` sees (kind and mode of a path, `None`: absent)
    /// against the model; `all`, when given, is every path below `/ha`,
    /// each of which the model must account for.
    fn check(
        &self,
        what: &str,
        mut look: impl FnMut(&str) -> Option<(Kind, u32)>,
        all: Option<BTreeSet<String>>,
    ) {
        let mut wrong = Vec::new();
        for (p, w) in &self.paths {
            let seen = look(p);
            if !w.allows(seen) {
                wrong.push(format!("{p}: want {w:?}, seen {seen:?}"));
            }
        }
        for (from, to, w) in &self.either {
            let (a, b) = (look(from), look(to));
            let ok = (a.is_none() && w.allows(b)) || (b.is_none() && w.allows(a));
            if !ok {
                wrong.push(format!(
                    "rename {from} -> {to} ({w:?}): seen {a:?} and {b:?}"
                ));
            }
        }
        if let Some(all) = all {
            for p in all {
                let top = p.matches('/').count() == 2; // /ha/cN
                let known = self
                    .paths
                    .get(&p)
                    .is_some_and(|w| !matches!(w, Want::Absent))
                    || self.either.iter().any(|(f, t, _)| *f == p || *t == p);
                if !top && !known {
                    wrong.push(format!("{p}: present, yet no client made it"));
                }
            }
        }
        assert!(
            wrong.is_empty(),
            "{what}: {} paths wrong, the first: {:#?}",
            wrong.len(),
            &wrong[..wrong.len().min(10)]
        );
    }
}

/// GETFILESTATUS on one keep-alive connection.
struct KeepAlive {
    addr: SocketAddr,
    r: BufReader<TcpStream>,
}

impl KeepAlive {
    fn new(addr: SocketAddr) -> KeepAlive {
        let s = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s.set_nodelay(true).unwrap();
        KeepAlive {
            addr,
            r: BufReader::new(s),
        }
    }

    fn status(&mut self, path: &str) -> Option<(Kind, u32)> {
        let req = format!(
            "GET /webhdfs/v1{path}?op=GETFILESTATUS&user.name=hdfs HTTP/1.1\r\nHost: {}\r\n\r\n",
            self.addr
        );
        self.r.get_mut().write_all(req.as_bytes()).unwrap();
        let mut line = String::new();
        self.r.read_line(&mut line).unwrap();
        let status: u16 = line.split(' ').nth(1).unwrap().parse().unwrap();
        let (mut length, mut chunked) = (0, false);
        loop {
            let mut h = String::new();
            self.r.read_line(&mut h).unwrap();
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap();
                } else if k.eq_ignore_ascii_case("transfer-encoding") {
                    chunked = v.trim().eq_ignore_ascii_case("chunked");
                }
            }
        }
        let mut body = vec![0; length];
        self.r.read_exact(&mut body).unwrap();
        if chunked {
            loop {
                let mut size = String::new();
                self.r.read_line(&mut size).unwrap();
                let n = usize::from_str_radix(size.trim(), 16).unwrap();
                let mut chunk = vec![0; n + 2];
                self.r.read_exact(&mut chunk).unwrap();
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..n]);
            }
        }
        let v: Value = serde_json::from_slice(&body).unwrap();
        match status {
            200 => {
                let fs = &v["FileStatus"];
                let kind = if fs["type"] == "DIRECTORY" {
                    Kind::Dir
                } else {
                    Kind::File
                };
                Some((kind, mode_of(fs["permission"].as_str().unwrap())))
            }
            404 => None,
            _ => panic!("GETFILESTATUS {path} on {}: {status} {v}", self.addr),
        }
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
fn thirty_sigkills_of_the_active_under_16_hdfs_clients() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut g = Group::start(5000, 41, 400);
    let mut rng = Pcg64Mcg::seed_from_u64(41);
    let (mut to_active, mut to_write, mut in_checkpoint) = (Vec::new(), Vec::new(), 0);
    let mut restarted_at_once = Vec::new();
    for kill in 0..30 {
        let act = g.active(Duration::from_secs(30));
        let standby = 1 - act;
        g.caught_up(standby, Duration::from_secs(30));
        // Varied moments: while the standby checkpoints (every third), or
        // after 0-700 ms of load.
        let mut timed = false;
        if kill % 3 == 0 {
            let deadline = Instant::now() + Duration::from_secs(3);
            while Instant::now() < deadline {
                if g.members[standby]
                    .status()
                    .is_some_and(|s| s["checkpointing"] == true)
                {
                    timed = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        if !timed {
            std::thread::sleep(Duration::from_millis(rng.random_range(0..700)));
        }
        in_checkpoint += usize::from(timed);
        let t_kill = now();
        let killed = Instant::now();
        g.members[act].kill();
        let endpoints = g.etcd.endpoints();
        if kill % 4 == 3 {
            // Restarted at once: it finds its predecessor's leadership in
            // etcd and lets it go.
            g.members[act].start(&endpoints);
            g.active(Duration::from_secs(30));
            restarted_at_once.push(killed.elapsed().as_secs_f64());
        } else {
            // The standby takes over when the lease expires; then the
            // killed one comes back as a standby.
            while g.members[standby]
                .status()
                .is_none_or(|s| s["role"] != "active")
            {
                assert!(
                    killed.elapsed() < Duration::from_secs(30),
                    "no takeover after kill {kill} {}",
                    g.logs()
                );
                std::thread::sleep(Duration::from_millis(10));
            }
            to_active.push(killed.elapsed().as_secs_f64());
            g.members[act].start(&endpoints);
        }
        let new = g.active(Duration::from_secs(30));
        g.wait_acks_after(t_kill, 1, Duration::from_secs(30));
        to_write.push(g.records.first_ack_after(t_kill).unwrap() - t_kill);
        g.caught_up(1 - new, Duration::from_secs(30));
    }
    let records = g.finish();
    eprintln!(
        "ha: 30 SIGKILLs ({in_checkpoint} while the standby checkpointed): the standby active \
         after median {:.2} s (max {:.2}; {} kills), or the killed one restarted at once and \
         active again after median {:.2} s ({} kills); first acknowledged write after median \
         {:.2} s (max {:.2}); {} acks",
        median(&mut to_active),
        to_active.iter().copied().fold(0.0, f64::max),
        to_active.len(),
        median(&mut restarted_at_once),
        restarted_at_once.len(),
        median(&mut to_write),
        to_write.iter().copied().fold(0.0, f64::max),
        records.acks().count()
    );
    assert!(
        in_checkpoint > 0,
        "no kill landed on a standby's checkpoint"
    );
    for t in &to_write {
        assert!(
            *t < LEASE_SECS as f64 + 2.0 + SLACK_S,
            "a failover took {t:.2} s to the first acknowledged write"
        );
    }
}

#[test]
fn ten_sigstops_of_the_active_longer_than_its_lease() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // No checkpoints: the stores' journals keep every write, with the
    // txid it was committed at.
    let mut g = Group::start(5000, 42, 1 << 40);
    let mut deposed_in = Vec::new();
    for pause in 0..10 {
        let act = g.active(Duration::from_secs(30));
        let standby = 1 - act;
        g.caught_up(standby, Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(200 + 50 * pause));
        let promotions = g.members[standby].promotions().len();
        let pid = g.members[act].pid();
        let stopped = now();
        signal(pid, "STOP");
        // Longer than the lease, and until the standby has taken over.
        std::thread::sleep(Duration::from_millis(LEASE_SECS * 1000 + 500));
        let deadline = Instant::now() + Duration::from_secs(20);
        while g.members[standby]
            .status()
            .is_none_or(|s| s["role"] != "active")
        {
            if Instant::now() > deadline {
                signal(pid, "CONT");
                panic!(
                    "the standby did not take over during pause {pause} {}",
                    g.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let promoted_at = loop {
            let p = g.members[standby].promotions();
            if p.len() > promotions {
                break p[promotions];
            }
            assert!(Instant::now() < deadline, "no promotion line {}", g.logs());
            std::thread::sleep(Duration::from_millis(10));
        };
        let resumed = now();
        let t = Instant::now();
        signal(pid, "CONT");
        g.pauses.push(Pause {
            url: g.members[act].url(),
            stopped,
            resumed,
            promoted_at,
        });
        // It finds itself deposed.
        while g.members[act]
            .status()
            .is_none_or(|s| s["role"] != "standby")
        {
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "{} did not step down after SIGCONT {}",
                g.members[act].id,
                g.logs()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        deposed_in.push(t.elapsed().as_secs_f64());
        g.wait_acks_after(resumed, 1, Duration::from_secs(30));
    }
    let spans: Vec<f64> = g.pauses.iter().map(|p| p.resumed - p.stopped).collect();
    let records = g.finish();
    eprintln!(
        "ha: 10 SIGSTOPs of {:.2}-{:.2} s; the paused active a standby {:.3}-{:.3} s after \
         SIGCONT; {} acks",
        spans.iter().copied().fold(f64::MAX, f64::min),
        spans.iter().copied().fold(0.0, f64::max),
        deposed_in.iter().copied().fold(f64::MAX, f64::min),
        deposed_in.iter().copied().fold(0.0, f64::max),
        records.acks().count()
    );
}

#[test]
fn etcd_members_lost_and_a_full_restart() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut g = Group::start(5000, 43, 400);

    // One member of three: writes go on.
    let t1 = now();
    g.etcd.kill(0);
    g.wait_acks_after(t1, 20, Duration::from_secs(15));
    let one_down = g.records.first_ack_after(t1).unwrap() - t1;
    std::thread::sleep(Duration::from_secs(2));
    g.etcd.restart(0).unwrap();
    g.etcd.wait_ready(Duration::from_secs(30)).unwrap();
    g.active(Duration::from_secs(30));

    // Two of three: every write refused within the bound, none
    // acknowledged until they are back.
    std::thread::sleep(Duration::from_secs(1));
    g.etcd.kill(1);
    g.etcd.kill(2);
    let lost = now();
    std::thread::sleep(Duration::from_secs_f64(REFUSAL_BOUND_S + 3.0));
    g.refresh();
    let refused_by = g
        .records
        .attempts
        .iter()
        .filter(|a| a["t0"].as_f64().unwrap() >= lost)
        .map(|a| a["t1"].as_f64().unwrap() - lost)
        .fold(f64::MAX, f64::min);
    let statuses = g.statuses();
    let back = now();
    g.etcd.restart(1).unwrap();
    g.etcd.restart(2).unwrap();
    g.etcd.wait_ready(Duration::from_secs(30)).unwrap();
    g.wait_acks_after(back, 20, Duration::from_secs(30));
    let service_back = g.records.first_ack_after(back).unwrap() - back;
    g.refresh();
    let during: Vec<&Value> = g
        .records
        .acks()
        .filter(|v| v["t0"].as_f64().unwrap() >= lost && v["t1"].as_f64().unwrap() < back)
        .collect();
    assert!(
        during.is_empty(),
        "writes acknowledged while 2 of 3 etcd members were down: {during:?}"
    );
    let last_ack = g
        .records
        .acks()
        .map(|v| v["t1"].as_f64().unwrap())
        .filter(|t| *t < back)
        .fold(0.0, f64::max)
        - lost;
    // The longest a write waited after the quorum was lost before it was
    // refused (those in flight at the loss counted from the loss).
    let longest = g
        .records
        .attempts
        .iter()
        .filter(|a| a["t1"].as_f64().unwrap() > lost && a["t1"].as_f64().unwrap() < back)
        .map(|a| a["t1"].as_f64().unwrap() - a["t0"].as_f64().unwrap().max(lost))
        .fold(0.0, f64::max);
    assert!(
        refused_by < REFUSAL_BOUND_S + SLACK_S,
        "the first refusal came {refused_by:.2} s after the quorum was lost"
    );
    assert!(
        longest < REFUSAL_BOUND_S + SLACK_S,
        "a write waited {longest:.2} s before it was refused (bound {REFUSAL_BOUND_S} s)"
    );
    assert!(
        statuses
            .iter()
            .flatten()
            .all(|s| s["role"] != "active" && s["etcd_reachable"] == false),
        "a member still active or reaching etcd without a quorum: {statuses:?}"
    );

    // Everything restarted: etcd and both servers.
    for m in &mut g.members {
        m.terminate();
    }
    for i in 0..3 {
        g.etcd.kill(i);
    }
    let restart = now();
    for i in 0..3 {
        g.etcd.restart(i).unwrap();
    }
    g.etcd.wait_ready(Duration::from_secs(30)).unwrap();
    let endpoints = g.etcd.endpoints();
    for m in &mut g.members {
        m.start(&endpoints);
    }
    g.active(Duration::from_secs(30));
    g.wait_acks_after(restart, 50, Duration::from_secs(60));
    let restarted = g.records.first_ack_after(restart).unwrap() - restart;
    g.finish();
    eprintln!(
        "ha: 1 of 3 etcd members down: first ack after {one_down:.2} s; 2 of 3 down: the first \
         refusal after {refused_by:.2} s, the last ack {last_ack:.2} s after, the longest \
         refused call {longest:.2} s (bound {REFUSAL_BOUND_S} s), writes back {service_back:.2} s \
         after the quorum; full restart to the first ack {restarted:.2} s"
    );
}

/// A member down while the journal in etcd was trimmed past its store
/// catches up from a peer's checkpoint: the active alone takes its own
/// checkpoint (no healthy standby) after 600 one-op batches and trims
/// them (three trim transactions of at most 256 batches); the
/// other member, started from a copy of the store as it was before any
/// of them, fetches the active's checkpoint, adopts it, applies the rest
/// and answers every path.
#[test]
fn a_member_behind_the_trim_catches_up_from_a_peers_checkpoint() {
    const MKDIRS: usize = 700;
    let dir = tempfile::tempdir().unwrap();
    let etcd = EtcdCluster::start(etcd_bin(), &dir.path().join("etcd"), 1).unwrap();
    let img = dir.path().join("img");
    let out = nsimage(&["generate", "-o", img.to_str().unwrap(), "--inodes", "2000"]);
    assert!(out.status.success());
    let member = |id: &str| Member {
        id: id.to_string(),
        addr: free_addr(),
        store: dir.path().join(id),
        log: dir.path().join(format!("{id}.log")),
        child: None,
        checkpoint_every: 600,
        extra: Vec::new(),
    };
    let (mut a, mut b) = (member("a"), member("b"));
    common::store_from(&a.store, &img);
    let st = Command::new("cp")
        .arg("-a")
        .arg(&a.store)
        .arg(&b.store)
        .status()
        .unwrap();
    assert!(st.success());
    let endpoints = etcd.endpoints();
    let wait = |what: &str, ok: &mut dyn FnMut() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !ok() {
            assert!(
                Instant::now() < deadline,
                "{what} within 60 s (logs in {})",
                dir.path().display()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    a.start(&endpoints);
    wait("a active", &mut || {
        a.status().is_some_and(|s| s["role"] == "active")
    });
    let base = a.status().unwrap()["durable_txid"].as_u64().unwrap();
    // One client, one op at a time: a batch in etcd per op.
    for i in 0..MKDIRS {
        let target = format!("/webhdfs/v1/trim/d{i}?op=MKDIRS&user.name=hdfs");
        let (status, body) = crate::serve_common::request(a.addr, "PUT", target.as_bytes());
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    }
    let group = || {
        json_out(&["ha", "status", "--ha-etcd", &endpoints, "--json"])
            .pop()
            .unwrap()
    };
    // Trimmed past 500 batches, and the trim done: what is left is the
    // batches after the checkpoint, one txid each (only the first MKDIRS
    // made two directories, in a batch trimmed). A trim deletes in
    // transactions of at most 256 batches after it moves `trimmed`, so a
    // read between them sees more batches: waited out, not asserted once.
    let mut last = Value::Null;
    let mut head = 0;
    wait("the journal in etcd trimmed past 500 batches", &mut || {
        last = group();
        head = a.status().unwrap()["durable_txid"].as_u64().unwrap();
        let trimmed = last["trimmed"].as_u64().unwrap_or(0);
        trimmed > base + 500
            && last["journal_batches"].as_u64() == Some(head.saturating_sub(trimmed))
    });
    let trimmed = last["trimmed"].as_u64().unwrap();
    let batches = last["journal_batches"].as_u64().unwrap();

    // Under a limit that holds b's own namespace but not a's checkpoint
    // beside it, the fetched checkpoint is refused as one that does not
    // fit (not as a bad image), and b stays behind.
    b.extra = vec!["--memory-limit".into(), "300K".into()];
    b.start(&endpoints);
    wait("b refusing a's checkpoint for want of memory", &mut || {
        std::fs::read_to_string(&b.log).is_ok_and(|l| l.contains("does not fit"))
    });
    let log = std::fs::read_to_string(&b.log).unwrap();
    assert!(!log.contains("not usable"), "{log}");
    assert!(
        b.status()
            .is_some_and(|s| s["durable_txid"].as_u64().is_some_and(|t| t < head)),
        "b caught up past its limit: {log}"
    );
    b.terminate();
    b.extra.clear();
    b.start(&endpoints);
    wait("b caught up as a standby", &mut || {
        b.status().is_some_and(|s| {
            s["role"] == "standby" && s["durable_txid"].as_u64().is_some_and(|t| t >= head)
        })
    });
    let log = std::fs::read_to_string(&b.log).unwrap();
    assert!(
        log.contains(&format!("fetched {}'s checkpoint at txid", a.url())),
        "b did not fetch a's checkpoint: {log}"
    );
    for i in [0, MKDIRS / 2, MKDIRS - 1] {
        let target = format!("/webhdfs/v1/trim/d{i}?op=GETFILESTATUS&user.name=hdfs");
        let got = get(b.addr, &target, Duration::from_secs(5));
        assert!(
            got.as_ref()
                .is_some_and(|(s, v)| *s == 200 && v["FileStatus"]["type"] == "DIRECTORY"),
            "/trim/d{i} on b: {got:?}"
        );
    }
    eprintln!(
        "ha: {MKDIRS} one-op batches, etcd's journal trimmed below txid {trimmed} ({batches} \
         batches left); a member started behind it caught up from a's checkpoint"
    );
}
