//! `nsimage bench --serve`: the latency of the read-only WebHDFS server
//! under concurrent clients.
//!
//! For each size of `--inodes`, an image is generated (or reused from
//! `--dir` as `serve-{n}-s{seed}.nsi`) and loaded here once to draw a
//! seeded sample of paths: directories for LISTSTATUS, files and
//! directories for GETFILESTATUS. Then `nsimage serve IMAGE --addr
//! 127.0.0.1:0` runs as a child process and `--clients` threads, each with
//! one keep-alive HTTP/1.1 connection (opened again if the server closes
//! it), alternate GETFILESTATUS and LISTSTATUS on random sampled paths for
//! `--seconds`. A request succeeds when its answer has status 200 and a
//! JSON body whose one top key is `FileStatus` (GETFILESTATUS) or
//! `FileStatuses` (LISTSTATUS); anything else, a transport failure or an
//! answer slower than [`REQUEST_TIMEOUT`], is an error, and any error makes
//! the bench fail once the figures are printed.
//!
//! Permission checks: the clients send no `user.name`, so every request is
//! checked as `dr.who`'s (traverse on each ancestor, READ_EXECUTE on a
//! listed directory), and the sampled paths are at least
//! [`MIN_DEPTH`] components deep. The run alternates rounds with checks
//! on (the server's default) and with `--no-permissions`, `--seconds` of
//! each in [`ROUNDS`] rounds, so that both see the same machine; the
//! report's top-level figures are those with checks on, `permissions_off`
//! holds the others, and `permissions_on_vs_off` each operation's
//! requests per second on against off.
//!
//! Latency is the time from sending the request to having read its whole
//! body, per successful request. Percentiles are exact, by the nearest-rank
//! definition over the sorted samples: the p-th percentile of n samples is
//! the ⌈p/100 · n⌉-th smallest. The server's peak resident memory (VmHWM of
//! /proc/PID/status, Linux) is read before it is stopped with SIGTERM.

use super::webhdfs::{connect, exchange, nearest_rank, proc_status, sample, Rng, Targets};
use super::Args;
use anyhow::{bail, Context};
use serde::Serialize;
use serde_json::Value;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

/// The slowest answer still counted as one; a slower one is an error.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the server may take to load the image and listen.
const START_TIMEOUT: Duration = Duration::from_secs(600);
/// How long the server may take to stop after SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);
/// Error descriptions kept (per client and in all).
const ERRORS_KEPT: usize = 5;
/// Fewest path components of a sampled path.
pub const MIN_DEPTH: usize = 6;
/// Rounds of each permission setting, alternating.
pub const ROUNDS: u64 = 2;

/// The two operations, in the order the clients alternate them.
const OPS: [Op; 2] = [Op::GetFileStatus, Op::ListStatus];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    GetFileStatus,
    ListStatus,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::GetFileStatus => "GETFILESTATUS",
            Op::ListStatus => "LISTSTATUS",
        }
    }

    /// The one top key of a good answer's JSON body.
    fn key(self) -> &'static str {
        match self {
            Op::GetFileStatus => "FileStatus",
            Op::ListStatus => "FileStatuses",
        }
    }

    fn index(self) -> usize {
        match self {
            Op::GetFileStatus => 0,
            Op::ListStatus => 1,
        }
    }
}

/// What one client thread saw.
#[derive(Default)]
struct ClientOut {
    /// Latencies of successful requests in nanoseconds, per operation.
    lat: [Vec<u64>; 2],
    errors: [u64; 2],
    bytes: [u64; 2],
    entries: u64,
    connects: u64,
    first_errors: Vec<String>,
}

impl ClientOut {
    fn error(&mut self, op: Op, what: String) {
        self.errors[op.index()] += 1;
        if self.first_errors.len() < ERRORS_KEPT {
            self.first_errors.push(format!("{}: {what}", op.name()));
        }
    }
}

/// Checks a completed answer; on success, the number of entries listed
/// (0 for GETFILESTATUS).
fn check(op: Op, status: u16, body: &[u8]) -> Result<u64, String> {
    let excerpt = || {
        let s = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
        s.replace('\n', " ")
    };
    if status != 200 {
        return Err(format!("status {status}: {}", excerpt()));
    }
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| format!("body is not JSON ({e}): {}", excerpt()))?;
    let top = v
        .as_object()
        .filter(|o| o.len() == 1)
        .and_then(|o| o.get(op.key()))
        .ok_or_else(|| format!("body's top key is not {}: {}", op.key(), excerpt()))?;
    match op {
        Op::GetFileStatus => Ok(0),
        Op::ListStatus => top["FileStatus"]
            .as_array()
            .map(|a| a.len() as u64)
            .ok_or_else(|| format!("FileStatuses has no FileStatus array: {}", excerpt())),
    }
}

/// One client: a connection, then requests until `seconds` after the start.
async fn client(
    addr: SocketAddr,
    targets: Arc<Targets>,
    index: usize,
    seed: u64,
    seconds: u64,
    start: Arc<Barrier>,
) -> ClientOut {
    let host = addr.to_string();
    let mut out = ClientOut::default();
    let mut rng = Rng(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ index as u64);
    let mut conn = connect(addr).await.ok();
    out.connects += u64::from(conn.is_some());
    // Every client is connected (or has failed to) when the clock starts.
    start.wait();
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut k = index;
    while Instant::now() < deadline {
        let op = OPS[k % OPS.len()];
        k += 1;
        let list = match op {
            Op::GetFileStatus => &targets.stats,
            Op::ListStatus => &targets.dirs,
        };
        let target = format!("{}?op={}", list[rng.below(list.len())], op.name());
        // A connection the server closed between requests is opened again;
        // that is not an error.
        let live = match conn.take() {
            Some(mut s) if !s.is_closed() => s.ready().await.is_ok().then_some(s),
            _ => None,
        };
        let mut sender = match live {
            Some(s) => s,
            None => match connect(addr).await {
                Ok(s) => {
                    out.connects += 1;
                    s
                }
                Err(e) => {
                    out.error(op, format!("connecting to {addr}: {e}"));
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        let t = Instant::now();
        let r = tokio::time::timeout(
            REQUEST_TIMEOUT,
            exchange(&mut sender, hyper::Method::GET, &host, &target),
        )
        .await;
        let ns = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
        match r {
            Ok(Ok(answer)) => {
                conn = Some(sender);
                let body = answer.body;
                match check(op, answer.status, &body) {
                    Ok(entries) => {
                        out.lat[op.index()].push(ns);
                        out.bytes[op.index()] += body.len() as u64;
                        out.entries += entries;
                    }
                    Err(e) => out.error(op, format!("{target}: {e}")),
                }
            }
            Ok(Err(e)) => out.error(op, format!("{target}: {e}")),
            Err(_) => out.error(
                op,
                format!("{target}: no answer within {} s", REQUEST_TIMEOUT.as_secs()),
            ),
        }
    }
    out
}

/// The figures of one operation. Latencies in microseconds, over the
/// successful requests; percentiles by nearest rank.
#[derive(Clone, Debug, Serialize)]
pub struct OpStats {
    /// Requests sent (successful and failed).
    pub requests: u64,
    /// Requests that failed.
    pub errors: u64,
    /// Successful requests per second of the run.
    pub requests_per_second: f64,
    /// Mean latency.
    pub mean_us: f64,
    /// Median latency.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Slowest request.
    pub max_us: f64,
    /// Bytes of the successful answers' bodies.
    pub body_bytes: u64,
}

fn op_stats(mut lat: Vec<u64>, errors: u64, bytes: u64, elapsed: f64) -> OpStats {
    lat.sort_unstable();
    let us = |ns: u64| ns as f64 / 1e3;
    let ok = lat.len() as u64;
    let mean = if lat.is_empty() {
        0.0
    } else {
        lat.iter().map(|&x| x as f64).sum::<f64>() / lat.len() as f64 / 1e3
    };
    OpStats {
        requests: ok + errors,
        errors,
        requests_per_second: ok as f64 / elapsed.max(1e-9),
        mean_us: mean,
        p50_us: us(nearest_rank(&lat, 500)),
        p90_us: us(nearest_rank(&lat, 900)),
        p99_us: us(nearest_rank(&lat, 990)),
        p999_us: us(nearest_rank(&lat, 999)),
        max_us: us(lat.last().copied().unwrap_or(0)),
        body_bytes: bytes,
    }
}

/// The result of one size.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Inodes of the generated namespace.
    pub inodes: u64,
    /// The image served.
    pub image: String,
    /// Its size in bytes.
    pub image_bytes: u64,
    /// Client threads, one connection each.
    pub clients: u64,
    /// Seconds asked for, each round.
    pub seconds: u64,
    /// Seconds from the start to the last client's end, over the rounds
    /// with checks on.
    pub elapsed_seconds: f64,
    /// Seconds from starting the server to its listening line (the load).
    pub server_ready_seconds: f64,
    /// Directories sampled (LISTSTATUS targets).
    pub sampled_directories: usize,
    /// Files and directories sampled (GETFILESTATUS targets).
    pub sampled_paths: usize,
    /// GETFILESTATUS and LISTSTATUS, by name.
    pub ops: serde_json::Map<String, Value>,
    /// Entries listed by all successful LISTSTATUS requests.
    pub entries_listed: u64,
    /// Connections opened (one per client, more if the server closed some).
    pub connections: u64,
    /// Server's resident memory once listening (Linux; 0 elsewhere).
    pub server_rss_ready_bytes: u64,
    /// Server's resident memory at the end.
    pub server_rss_end_bytes: u64,
    /// Server's peak resident memory (VmHWM).
    pub server_peak_rss_bytes: u64,
    /// Whether the server stopped by itself on SIGTERM, with status 0.
    pub server_clean_stop: bool,
    /// The first errors, described.
    pub first_errors: Vec<String>,
    /// Fewest components of a sampled path ([`MIN_DEPTH`], or less in a
    /// namespace with no path so deep).
    pub min_depth: usize,
    /// The same operations with `--no-permissions`, side by side.
    pub permissions_off: serde_json::Map<String, Value>,
    /// Each operation's requests per second with checks on against off.
    pub permissions_on_vs_off: serde_json::Map<String, Value>,
}

/// The `nsimage serve` child, killed and reaped if dropped still running.
struct Server {
    child: Child,
    addr: SocketAddr,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl Server {
    fn start(exe: &Path, image: &Path, permissions: bool) -> anyhow::Result<Server> {
        let mut cmd = Command::new(exe);
        cmd.arg("serve").arg(image).args(["--addr", "127.0.0.1:0"]);
        if !permissions {
            cmd.arg("--no-permissions");
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {} serve", exe.display()))?;
        let stdout = child.stdout.take().context("the server's stdout")?;
        let stderr = child.stderr.take().context("the server's stderr")?;
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let keep = Arc::clone(&tail);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Ok(mut t) = keep.lock() {
                    if t.len() == 20 {
                        t.pop_front();
                    }
                    t.push_back(line);
                }
            }
        });
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(first)) = lines.next() {
                let _ = tx.send(first);
            }
            for _ in lines.map_while(Result::ok) {}
        });
        let mut server = Server {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            stderr: tail,
        };
        let t = Instant::now();
        let line = loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(line) => break line,
                Err(mpsc::RecvTimeoutError::Timeout) if t.elapsed() < START_TIMEOUT => {
                    if let Some(status) = server.child.try_wait()? {
                        bail!("the server exited ({status}): {}", server.stderr_tail());
                    }
                }
                Err(_) => bail!(
                    "the server printed no listening line within {} s: {}",
                    START_TIMEOUT.as_secs(),
                    server.stderr_tail()
                ),
            }
        };
        server.addr = nsimage_server::http::Listening::parse_line(&line)
            .map(|(a, _)| a)
            .with_context(|| format!("unexpected first line from the server: {line:?}"))?;
        Ok(server)
    }

    fn stderr_tail(&self) -> String {
        // The reader thread may still be taking the last lines.
        std::thread::sleep(Duration::from_millis(50));
        self.stderr
            .lock()
            .map(|t| t.iter().cloned().collect::<Vec<_>>().join("\n"))
            .unwrap_or_default()
    }

    /// SIGTERM, then a bounded wait; a kill if it does not stop. Whether
    /// it stopped by itself with status 0.
    fn stop(&mut self) -> bool {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if sent {
            let t = Instant::now();
            while t.elapsed() < STOP_TIMEOUT {
                match self.child.try_wait() {
                    Ok(Some(status)) => return status.success(),
                    Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                    Err(_) => break,
                }
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        false
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The image of `n` inodes, generated and saved unless already in `dir`;
/// the sampled targets, [`MIN_DEPTH`] components deep or, in a namespace
/// with none so deep (a small one), as deep as it has; that depth.
fn prepare(a: &Args, n: u64) -> anyhow::Result<(PathBuf, Targets, usize)> {
    let (image, ns) = super::reused_image(a, "serve", n)?;
    for depth in (0..=MIN_DEPTH).rev() {
        let targets = sample(&ns, a.seed, depth);
        if !targets.dirs.is_empty() && !targets.stats.is_empty() {
            return Ok((image, targets, depth));
        }
    }
    bail!("{}: no path the server can name", image.display())
}

/// One round: the server started (with permission checks or without),
/// the clients run for `--seconds`, the server stopped.
struct Round {
    outs: Vec<ClientOut>,
    elapsed_seconds: f64,
    server_ready_seconds: f64,
    server_rss_ready_bytes: u64,
    server_rss_end_bytes: u64,
    server_peak_rss_bytes: u64,
    server_clean_stop: bool,
    stderr_tail: String,
}

fn round(
    a: &Args,
    exe: &Path,
    image: &Path,
    targets: &Arc<Targets>,
    permissions: bool,
) -> anyhow::Result<Round> {
    let t = Instant::now();
    let mut server = Server::start(exe, image, permissions)?;
    let server_ready_seconds = t.elapsed().as_secs_f64();
    let pid = server.child.id();
    let server_rss_ready_bytes = proc_status(pid, "VmRSS");
    let clients = usize::try_from(a.clients).context("--clients")?;
    let start = Arc::new(Barrier::new(clients + 1));
    let mut handles = Vec::with_capacity(clients);
    for index in 0..clients {
        let (targets, go) = (Arc::clone(targets), Arc::clone(&start));
        let (addr, seed, seconds) = (server.addr, a.seed, a.seconds());
        let h = std::thread::Builder::new()
            .name(format!("client-{index}"))
            .spawn(move || -> anyhow::Result<ClientOut> {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                let rt = match rt {
                    Ok(rt) => rt,
                    Err(e) => {
                        // The others wait for this one at the start.
                        go.wait();
                        return Err(e.into());
                    }
                };
                Ok(rt.block_on(client(addr, targets, index, seed, seconds, go)))
            });
        match h {
            Ok(h) => handles.push(h),
            Err(e) => {
                // Release the threads already waiting, then give up.
                for _ in index..clients {
                    let s = Arc::clone(&start);
                    std::thread::spawn(move || s.wait());
                }
                start.wait();
                for h in handles {
                    let _ = h.join();
                }
                return Err(e).context("starting a client thread");
            }
        }
    }
    start.wait();
    let t = Instant::now();
    let mut outs = Vec::with_capacity(clients);
    for h in handles {
        match h.join() {
            Ok(r) => outs.push(r?),
            Err(_) => bail!("a client thread panicked"),
        }
    }
    let elapsed_seconds = t.elapsed().as_secs_f64();
    let server_rss_end_bytes = proc_status(pid, "VmRSS");
    let server_peak_rss_bytes = proc_status(pid, "VmHWM");
    let server_clean_stop = server.stop();
    Ok(Round {
        outs,
        elapsed_seconds,
        server_ready_seconds,
        server_rss_ready_bytes,
        server_rss_end_bytes,
        server_peak_rss_bytes,
        server_clean_stop,
        stderr_tail: server.stderr_tail(),
    })
}

/// Each operation's figures over `rounds`.
fn op_figures(rounds: &mut [Round]) -> anyhow::Result<serde_json::Map<String, Value>> {
    let elapsed: f64 = rounds.iter().map(|r| r.elapsed_seconds).sum();
    let mut ops = serde_json::Map::new();
    for op in OPS {
        let i = op.index();
        let outs = rounds.iter_mut().flat_map(|r| r.outs.iter_mut());
        let (mut lat, mut errors, mut bytes) = (Vec::new(), 0, 0);
        for o in outs {
            lat.append(&mut o.lat[i]);
            errors += o.errors[i];
            bytes += o.bytes[i];
        }
        let s = op_stats(lat, errors, bytes, elapsed);
        ops.insert(op.name().to_string(), serde_json::to_value(s)?);
    }
    Ok(ops)
}

/// One size: [`ROUNDS`] rounds with permission checks and as many
/// without, alternating.
fn one(a: &Args, exe: &Path, n: u64) -> anyhow::Result<Report> {
    let (image, targets, min_depth) = prepare(a, n)?;
    let image_bytes = std::fs::metadata(&image)?.len();
    let (sampled_directories, sampled_paths) = (targets.dirs.len(), targets.stats.len());
    let targets = Arc::new(targets);
    let (mut on, mut off) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        on.push(round(a, exe, &image, &targets, true)?);
        off.push(round(a, exe, &image, &targets, false)?);
    }
    let mut first_errors: Vec<String> = on
        .iter()
        .chain(&off)
        .flat_map(|r| r.outs.iter().flat_map(|o| o.first_errors.iter().cloned()))
        .take(ERRORS_KEPT)
        .collect();
    for r in on.iter().chain(&off).filter(|r| !r.server_clean_stop) {
        first_errors.push(format!(
            "the server did not stop cleanly on SIGTERM: {}",
            r.stderr_tail
        ));
    }
    let server_clean_stop = on.iter().chain(&off).all(|r| r.server_clean_stop);
    let entries_listed = on
        .iter()
        .flat_map(|r| r.outs.iter().map(|o| o.entries))
        .sum();
    let connections = on
        .iter()
        .flat_map(|r| r.outs.iter().map(|o| o.connects))
        .sum();
    let ops = op_figures(&mut on)?;
    let permissions_off = op_figures(&mut off)?;
    let mut permissions_on_vs_off = serde_json::Map::new();
    for name in ops.keys() {
        let rate = |m: &serde_json::Map<String, Value>| {
            m.get(name)
                .and_then(|x| x["requests_per_second"].as_f64())
                .unwrap_or(0.0)
        };
        let (a_on, a_off) = (rate(&ops), rate(&permissions_off));
        permissions_on_vs_off.insert(
            name.clone(),
            serde_json::json!(if a_off > 0.0 { a_on / a_off } else { 0.0 }),
        );
    }
    let max = |f: &dyn Fn(&Round) -> u64| on.iter().map(f).max().unwrap_or(0);
    Ok(Report {
        inodes: n,
        image: image.display().to_string(),
        image_bytes,
        clients: a.clients,
        seconds: a.seconds(),
        elapsed_seconds: on.iter().map(|r| r.elapsed_seconds).sum(),
        server_ready_seconds: on.first().map_or(0.0, |r| r.server_ready_seconds),
        sampled_directories,
        sampled_paths,
        ops,
        entries_listed,
        connections,
        server_rss_ready_bytes: max(&|r| r.server_rss_ready_bytes),
        server_rss_end_bytes: max(&|r| r.server_rss_end_bytes),
        server_peak_rss_bytes: max(&|r| r.server_peak_rss_bytes),
        server_clean_stop,
        first_errors,
        min_depth,
        permissions_off,
        permissions_on_vs_off,
    })
}

fn print_text(r: &Report) {
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    out!(
        "serve bench: {} inodes, {} clients x {} s x {ROUNDS} rounds with permission checks (as dr.who) and as many without, alternating; image {} ({} bytes), server ready in {:.2} s; {} directories and {} paths sampled, {}+ components deep",
        r.inodes,
        r.clients,
        r.seconds,
        r.image,
        r.image_bytes,
        r.server_ready_seconds,
        r.sampled_directories,
        r.sampled_paths,
        r.min_depth
    );
    let ms = |v: &Value, k: &str| v[k].as_f64().unwrap_or(0.0) / 1e3;
    for (name, v) in &r.ops {
        out!(
            "{name}: {} requests, {} errors, {:.0} req/s, p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms, max {:.2} ms",
            v["requests"],
            v["errors"],
            v["requests_per_second"].as_f64().unwrap_or(0.0),
            ms(v, "p50_us"),
            ms(v, "p90_us"),
            ms(v, "p99_us"),
            ms(v, "p999_us"),
            ms(v, "max_us")
        );
    }
    for (name, v) in &r.permissions_off {
        out!(
            "{name} with --no-permissions: {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms; with checks on {:.3}x of that",
            v["requests_per_second"].as_f64().unwrap_or(0.0),
            ms(v, "p50_us"),
            ms(v, "p99_us"),
            r.permissions_on_vs_off[name].as_f64().unwrap_or(0.0)
        );
    }
    out!(
        "server RSS: {:.1} MiB when ready, {:.1} MiB at the end, peak {:.1} MiB; {} connections, {} entries listed (percentiles by nearest rank)",
        mib(r.server_rss_ready_bytes),
        mib(r.server_rss_end_bytes),
        mib(r.server_peak_rss_bytes),
        r.connections,
        r.entries_listed
    );
}

/// The serve bench, for each size of `--inodes`.
pub fn run(a: &Args, exe: &Path) -> anyhow::Result<()> {
    for &n in &a.inodes {
        let r = one(a, exe, n)?;
        if a.json {
            out!("{}", serde_json::to_string(&r)?);
        } else {
            print_text(&r);
        }
        let errors: u64 = r
            .ops
            .values()
            .map(|v| v["errors"].as_u64().unwrap_or(0))
            .sum();
        if errors > 0 || !r.server_clean_stop {
            bail!(
                "{n} inodes: {errors} failed requests{}; first: {}",
                if r.server_clean_stop {
                    ""
                } else {
                    ", the server did not stop cleanly"
                },
                r.first_errors.join("; ")
            );
        }
    }
    Ok(())
}
