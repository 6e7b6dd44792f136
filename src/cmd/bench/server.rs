//! `nsimage bench --server`: the writable metadata server under concurrent
//! clients, during background checkpoints and outside them, and its
//! restart after a SIGKILL.
//!
//! For each size `N` of `--inodes`: a store `DIR/server-N-sSEED` holding
//! the generated namespace of `N` inodes (the testkit generator, seed
//! `--seed`), made with `Store::init_from` and reused by later runs while
//! it is a store and its sample of paths (`DIR/server-N-sSEED.paths.json`,
//! written once the store is made) is there for the same size and seed.
//!
//! 1. The measured run: `nsimage serve STORE --writable --addr
//!    127.0.0.1:0 --checkpoint-every-secs S` as a child process; `/bench`
//!    is deleted (a previous run's entries), then `--clients` tokio tasks,
//!    one keep-alive connection each, send for `--seconds` a mix of
//!    `--writes` percent writes (a job's output pattern in each client's
//!    own directory, see the `workload` module) and reads. Every answer is
//!    checked; any error fails the bench once the figures are printed. The
//!    server is then stopped with SIGTERM (it must stop cleanly) and its
//!    last `journal: N ops in M fsyncs` line on stderr gives the ops per
//!    fsync (N / M).
//! 2. The kill: the server started again, the same clients load it for 2
//!    s, and it is killed with SIGKILL while they run.
//! 3. The restart: a new server process on the store, timed from its spawn
//!    to its first successful answer (GETFILESTATUS /); it is then stopped
//!    (SIGTERM) and `nsimage store recover STORE --json` recovers the same
//!    store: its own timing of the open (`seconds`: image load, journal
//!    replay, tail) is the figure restart is compared with, the whole
//!    process's wall time is reported beside it.
//!
//! Checkpoint windows run from the arrival of the server's `checkpoint
//! started txid=T` line to that of its `checkpoint finished txid=T` line
//! (or the end of the run). A request is "during a checkpoint" when it was
//! sent inside a window, else "outside one"; ops/s during checkpoints are
//! the requests sent during windows over the windows' total length within
//! the run, ops/s outside the others over the rest of the run. Latency is
//! from sending a request (CREATE: its first step) to having read its
//! answer's whole body, for successful requests; percentiles are exact by
//! nearest rank (the p-th of n samples is the ⌈p/100 · n⌉-th smallest).
//!
//! Memory: the server's VmRSS is sampled every 50 ms (and at each
//! checkpoint line); at each checkpoint line its peak (VmHWM) is read and
//! reset (Linux `clear_refs`), so the peak at a finished line is that
//! checkpoint's. Peak RSS during checkpoints is the largest of these peaks
//! and of the samples inside windows; RSS outside is the median of the
//! samples outside windows from 1 s after the start (warm-up).
//!
//! The checks the "Must show" names are printed with pass or
//! fail: write p99 during / outside <= 2, slowest write during a
//! checkpoint / write p99 outside <= 10, ops/s during / outside >= 0.7,
//! peak RSS during / RSS outside <= 1.5, ops per fsync >= 8, restart /
//! store recover <= 1.2. A failed check does not fail the command; an
//! error does.
//!
//! With `--ha`, the module `ha` runs instead: this bench's measured run
//! beside an HA group on etcd (see its page).

mod child;
pub mod ha;
mod workload;

use super::webhdfs::{connect, exchange, nearest_rank, sample, Targets};
use super::Args;
use crate::cmd::output::{check_output, write_atomically};
use anyhow::{bail, Context};
use child::{Mark, Proc, RssSampler, BENCH_SUPERUSER};
use nsimage_store::fs::RealFs;
use nsimage_store::Store;
use nsimage_testkit::generate::{generate, GenSpec};
use nsimage_writer::AtRestOptions;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use workload::{client, ClientOut, Ctx, Op, Sample, BENCH_ROOT, REQUEST_TIMEOUT};

/// How often the server's VmRSS is sampled.
const RSS_EVERY: Duration = Duration::from_millis(50);
/// RSS samples this long after the start are left out of "outside".
const WARM_UP: Duration = Duration::from_secs(1);
/// How long the clients load the server before the SIGKILL.
const KILL_LOAD: Duration = Duration::from_secs(2);
/// Errors described in the report, in all.
const ERRORS_KEPT: usize = 8;

/// The sample of paths kept beside the store, for its size and seed.
#[derive(Serialize, Deserialize)]
struct PathsFile {
    inodes: u64,
    seed: u64,
    #[serde(flatten)]
    targets: Targets,
}

/// The store of `n` inodes in `a.dir` and its sampled paths: reused when
/// both are there for this size and seed, else (re)made. Whether it was
/// reused, and the seconds making it took.
fn prepare(a: &Args, n: u64) -> anyhow::Result<(PathBuf, Targets, bool, f64)> {
    let store = a.dir.join(format!("server-{n}-s{}", a.seed));
    let paths = a.dir.join(format!("server-{n}-s{}.paths.json", a.seed));
    check_output(&paths)?;
    if Store::check_dir(&store).is_ok() {
        let kept = std::fs::read(&paths)
            .ok()
            .and_then(|b| serde_json::from_slice::<PathsFile>(&b).ok())
            .filter(|p| p.inodes == n && p.seed == a.seed);
        if let Some(p) = kept {
            if !p.targets.dirs.is_empty() && !p.targets.stats.is_empty() {
                return Ok((store, p.targets, true, 0.0));
            }
        }
    }
    if store.exists() {
        let empty = std::fs::read_dir(&store).is_ok_and(|mut d| d.next().is_none());
        if Store::check_dir(&store).is_err() && !empty {
            bail!(
                "{} exists and is not a store: remove it or choose another --dir",
                store.display()
            );
        }
        std::fs::remove_dir_all(&store)
            .with_context(|| format!("removing the old store {}", store.display()))?;
    }
    if paths.exists() {
        std::fs::remove_file(&paths).with_context(|| format!("removing {}", paths.display()))?;
    }
    nsimage_testkit::generate::check_fits(n)?;
    let t = Instant::now();
    let ns = generate(GenSpec {
        inodes: n,
        seed: a.seed,
    });
    let targets = sample(&ns, a.seed, 0);
    if targets.dirs.is_empty() || targets.stats.is_empty() {
        bail!("{n} inodes: no path the server can name");
    }
    Store::init_from(
        &store,
        Arc::new(RealFs::default()),
        &AtRestOptions::default(),
        &ns,
    )
    .with_context(|| format!("making the store {}", store.display()))?;
    drop(ns);
    let file = PathsFile {
        inodes: n,
        seed: a.seed,
        targets,
    };
    write_atomically(&paths, |w| {
        serde_json::to_writer(&mut *w, &file)?;
        w.flush()?;
        Ok(())
    })?;
    let secs = t.elapsed().as_secs_f64();
    // On stderr: with --json, stdout holds the JSON documents alone.
    eprintln!(
        "made the store {} ({n} inodes) in {secs:.2} s",
        store.display()
    );
    Ok((store, file.targets, false, secs))
}

/// The figures of some requests. Latencies in milliseconds; `None` when
/// there is no request (or, for the rate, no time).
#[derive(Clone, Debug, Serialize)]
pub struct Figures {
    /// Successful requests.
    pub requests: u64,
    /// Successful requests per second of the period.
    pub ops_per_s: Option<f64>,
    /// Median latency.
    pub p50_ms: Option<f64>,
    /// 99th percentile.
    pub p99_ms: Option<f64>,
    /// 99.9th percentile.
    pub p999_ms: Option<f64>,
    /// Slowest request.
    pub max_ms: Option<f64>,
}

fn figures(mut nanos: Vec<u64>, seconds: f64) -> Figures {
    nanos.sort_unstable();
    let ms =
        |per_mille: u64| (!nanos.is_empty()).then(|| nearest_rank(&nanos, per_mille) as f64 / 1e6);
    Figures {
        requests: nanos.len() as u64,
        ops_per_s: (seconds > 0.0).then(|| nanos.len() as f64 / seconds),
        p50_ms: ms(500),
        p99_ms: ms(990),
        p999_ms: ms(999),
        max_ms: nanos.last().map(|&x| x as f64 / 1e6),
    }
}

/// One kind of request over the run, during checkpoints and outside.
#[derive(Clone, Debug, Serialize)]
pub struct Split {
    /// Every request.
    pub all: Figures,
    /// Requests sent during a checkpoint.
    pub during_checkpoint: Figures,
    /// Requests sent outside one.
    pub outside_checkpoint: Figures,
}

/// One checkpoint window, in seconds from the start of the run.
#[derive(Clone, Debug, Serialize)]
pub struct Window {
    /// The checkpoint's txid.
    pub txid: u64,
    /// When its started line arrived.
    pub started_s: f64,
    /// When its finished line arrived (`None`: still running at the end).
    pub finished_s: Option<f64>,
    /// The seconds the server says it took.
    pub server_seconds: Option<f64>,
    /// The server's peak RSS during it (`None`: not measured).
    pub peak_rss_bytes: Option<u64>,
}

/// One of the checks.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    /// What is compared.
    pub name: &'static str,
    /// The ratio measured (`None`: a figure is missing).
    pub value: Option<f64>,
    /// `<=` or `>=`.
    pub relation: &'static str,
    /// The limit.
    pub limit: f64,
    /// Whether it holds (false when a figure is missing).
    pub pass: bool,
}

/// The result of one size.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Inodes of the generated namespace.
    pub inodes: u64,
    /// The store.
    pub store: String,
    /// Whether the store was reused from an earlier run.
    pub store_reused: bool,
    /// Seconds making the store took (0 when reused).
    pub store_make_seconds: f64,
    /// Clients, one connection each.
    pub clients: u64,
    /// Seconds asked for.
    pub seconds: u64,
    /// Percent of writes asked for.
    pub writes_percent: u64,
    /// The server's --checkpoint-every-secs.
    pub checkpoint_every_secs: u64,
    /// Seconds from spawning the first server to its listening line.
    pub server_ready_seconds: f64,
    /// Write p99 of requests sent during checkpoints, ms.
    pub write_p99_during_checkpoint_ms: Option<f64>,
    /// Write p99 of requests sent outside checkpoints, ms.
    pub write_p99_outside_checkpoint_ms: Option<f64>,
    /// The slowest write sent during a checkpoint, ms.
    pub write_max_during_checkpoint_ms: Option<f64>,
    /// Requests (reads and writes) per second during checkpoints.
    pub ops_per_s_during_checkpoint: Option<f64>,
    /// Requests per second outside checkpoints.
    pub ops_per_s_outside_checkpoint: Option<f64>,
    /// The server's peak RSS during checkpoints.
    pub peak_rss_during_checkpoint_bytes: Option<u64>,
    /// The median of the server's RSS outside checkpoints (after warm-up).
    pub rss_outside_checkpoint_bytes: Option<u64>,
    /// The largest RSS sample outside checkpoints (after warm-up).
    pub peak_rss_outside_checkpoint_bytes: Option<u64>,
    /// Journal ops per fsync of the measured run's server.
    pub ops_per_fsync: Option<f64>,
    /// The journal ops and fsyncs of the measured run's server.
    pub journal_ops: Option<u64>,
    /// See `journal_ops`.
    pub journal_fsyncs: Option<u64>,
    /// Seconds from spawning the server after the SIGKILL to its first
    /// answer.
    pub restart_seconds: f64,
    /// Seconds from that spawn to its listening line.
    pub restart_listening_seconds: f64,
    /// `store recover`'s own timing of the open of the same store.
    pub store_recover_seconds: f64,
    /// The wall time of the whole `store recover` process.
    pub store_recover_process_seconds: f64,
    /// Journal ops `store recover` replayed.
    pub store_recover_replayed: u64,
    /// Seconds of checkpoint windows within the run.
    pub checkpoint_seconds: f64,
    /// The checkpoint windows.
    pub checkpoints: Vec<Window>,
    /// The slowest writes of the measured run, slowest first: where in
    /// the run the tail comes from.
    pub slowest_writes: Vec<Slow>,
    /// All writes, reads, and each operation by name.
    pub ops: serde_json::Map<String, Value>,
    /// Successful requests of the load the SIGKILL landed in.
    pub kill_load_requests: u64,
    /// Connections opened in the measured run.
    pub connections: u64,
    /// Whether the measured run's server stopped cleanly on SIGTERM.
    pub server_clean_stop: bool,
    /// The checks.
    pub checks: Vec<Check>,
    /// The first errors, described.
    pub first_errors: Vec<String>,
}

/// One slow write: when it was sent, how long it took, what it was.
#[derive(Clone, Debug, Serialize)]
pub struct Slow {
    /// Seconds from the run's start to the request's sending.
    pub sent_s: f64,
    /// Milliseconds until its answer was read.
    pub ms: f64,
    /// The operation.
    pub op: &'static str,
    /// Whether it was sent during a checkpoint.
    pub during_checkpoint: bool,
}

/// Slow writes the report lists.
const SLOWEST_KEPT: usize = 10;

/// The clients of one run, on a runtime of as many workers as cores: set
/// up (each makes its directory), then started together; `during` runs on
/// this thread from the start (the run's clock) and returns when the run
/// ends. Returns the clients' outcomes and the clock.
fn run_clients(
    rt: &tokio::runtime::Runtime,
    ctx: &Arc<Ctx>,
    clients: usize,
    seconds: Duration,
    during: impl FnOnce(Instant),
) -> anyhow::Result<(Vec<ClientOut>, Instant)> {
    let ready = Arc::new(tokio::sync::Barrier::new(clients + 1));
    let go = Arc::new(tokio::sync::Barrier::new(clients + 1));
    let mut set = tokio::task::JoinSet::new();
    rt.block_on(async {
        for i in 0..clients {
            set.spawn(client(
                Arc::clone(ctx),
                i,
                Arc::clone(&ready),
                Arc::clone(&go),
            ));
        }
        ready.wait().await;
    });
    let clock = Instant::now();
    let _ = ctx.deadline.set(clock + seconds);
    rt.block_on(go.wait());
    during(clock);
    let outs = rt.block_on(async {
        let mut outs = Vec::with_capacity(clients);
        while let Some(r) = set.join_next().await {
            outs.push(r);
        }
        outs
    });
    let mut v = Vec::with_capacity(clients);
    for r in outs {
        match r {
            Ok(o) => v.push(o),
            Err(e) => bail!("a client task failed: {e}"),
        }
    }
    Ok((v, clock))
}

/// One request on a new connection: the answer's status and body.
fn once(
    rt: &tokio::runtime::Runtime,
    addr: std::net::SocketAddr,
    method: hyper::Method,
    target: &str,
) -> anyhow::Result<(u16, Vec<u8>)> {
    rt.block_on(async {
        let mut s = connect(addr).await?;
        let a = tokio::time::timeout(
            REQUEST_TIMEOUT,
            exchange(&mut s, method, &addr.to_string(), target),
        )
        .await
        .context("no answer in time")??;
        Ok((a.status, a.body.to_vec()))
    })
}

/// A checkpoint window, as instants.
#[derive(Clone, Copy, Debug)]
struct Span {
    txid: u64,
    start: Instant,
    /// The finished line's arrival, or the end of the run.
    end: Instant,
    finished: bool,
    server_seconds: Option<f64>,
    /// The VmHWM read at the finished line, when the peak was reset at the
    /// started line: the checkpoint's peak.
    peak: Option<u64>,
}

/// The checkpoint windows of `marks`; one still running ends at `end`.
fn windows(marks: &[Mark], end: Instant) -> Vec<Span> {
    let mut out = Vec::new();
    for (i, m) in marks.iter().enumerate() {
        if !m.started {
            continue;
        }
        let fin = marks[i + 1..]
            .iter()
            .find(|f| !f.started && f.txid == m.txid);
        out.push(Span {
            txid: m.txid,
            start: m.at,
            end: fin.map_or(end, |f| f.at),
            finished: fin.is_some(),
            server_seconds: fin.and_then(|f| f.server_seconds),
            peak: fin
                .filter(|f| m.reset && f.hwm > 0)
                .map(|f| f.hwm.max(m.rss)),
        });
    }
    out
}

fn secs_between(from: Instant, to: Instant) -> f64 {
    to.saturating_duration_since(from).as_secs_f64()
}

/// The ratio `a / b` when both are there and `b` is positive.
fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

fn check(name: &'static str, value: Option<f64>, relation: &'static str, limit: f64) -> Check {
    let pass = value.is_some_and(|v| {
        if relation == "<=" {
            v <= limit
        } else {
            v >= limit
        }
    });
    Check {
        name,
        value,
        relation,
        limit,
        pass,
    }
}

/// One size: the store made or reused, the measured run, the kill, the
/// restart and `store recover`.
fn one(a: &Args, exe: &Path, n: u64) -> anyhow::Result<Report> {
    let (store, targets, store_reused, store_make_seconds) = prepare(a, n)?;
    let targets = Arc::new(targets);
    let clients = usize::try_from(a.clients).context("--clients")?;
    let seconds = a.seconds();
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cores)
        .enable_all()
        .build()?;
    let mut errors: Vec<String> = Vec::new();
    // 1. The measured run.
    let run = measured_run(a, exe, &rt, &store, &targets, clients, &mut errors)?;
    let m = analyse(a, &run)?;
    // 2. The kill under load.
    let kill_load_requests = kill_under_load(a, exe, &rt, &store, &targets, clients, &mut errors)?;
    // 3. The restart, then store recover.
    let r = restart(a, exe, &rt, &store, &mut errors)?;
    let ops_per_fsync = run
        .journal
        .and_then(|(ops, fsyncs)| (fsyncs > 0).then(|| ops as f64 / fsyncs as f64));
    if run.journal.is_none() {
        eprintln!(
            "warning: the server printed no `journal: N ops in M fsyncs` line at its stop: ops per fsync unknown"
        );
    }
    let checks = checks(&m, ops_per_fsync, &r);
    errors.truncate(ERRORS_KEPT);
    Ok(Report {
        inodes: n,
        store: store.display().to_string(),
        store_reused,
        store_make_seconds,
        clients: a.clients,
        seconds,
        writes_percent: a.writes,
        checkpoint_every_secs: a.checkpoint_every_secs,
        server_ready_seconds: run.server_ready_seconds,
        write_p99_during_checkpoint_ms: m.write.during_checkpoint.p99_ms,
        write_p99_outside_checkpoint_ms: m.write.outside_checkpoint.p99_ms,
        write_max_during_checkpoint_ms: m.write.during_checkpoint.max_ms,
        ops_per_s_during_checkpoint: m.every.during_checkpoint.ops_per_s,
        ops_per_s_outside_checkpoint: m.every.outside_checkpoint.ops_per_s,
        peak_rss_during_checkpoint_bytes: m.peak_during,
        rss_outside_checkpoint_bytes: m.rss_outside,
        peak_rss_outside_checkpoint_bytes: m.peak_outside,
        ops_per_fsync,
        journal_ops: run.journal.map(|j| j.0),
        journal_fsyncs: run.journal.map(|j| j.1),
        restart_seconds: r.restart_seconds,
        restart_listening_seconds: r.restart_listening_seconds,
        store_recover_seconds: r.store_recover_seconds,
        store_recover_process_seconds: r.store_recover_process_seconds,
        store_recover_replayed: r.store_recover_replayed,
        checkpoint_seconds: m.checkpoint_seconds,
        checkpoints: m.checkpoints,
        slowest_writes: m.slowest_writes,
        ops: m.ops,
        kill_load_requests,
        connections: run.connections,
        server_clean_stop: run.server_clean_stop,
        checks,
        first_errors: errors,
    })
}

/// As the superuser, on the server at `addr`: the previous run's entries
/// gone, and the clients' root open to them (they write as dr.who, with
/// permission checks on).
fn open_bench_root(rt: &tokio::runtime::Runtime, addr: std::net::SocketAddr) -> anyhow::Result<()> {
    for (method, query, what) in [
        (
            hyper::Method::DELETE,
            "op=DELETE&recursive=true",
            "the previous run's entries",
        ),
        (
            hyper::Method::PUT,
            "op=MKDIRS&permission=777",
            "the clients' root",
        ),
    ] {
        let target = format!("/webhdfs/v1{BENCH_ROOT}?{query}&user.name={BENCH_SUPERUSER}");
        let (status, body) = once(rt, addr, method.clone(), &target)?;
        if status != 200 {
            bail!(
                "{method} {BENCH_ROOT} ({what}): status {status}: {}",
                String::from_utf8_lossy(&body)
            );
        }
    }
    Ok(())
}

/// The measured run's raw figures, for [`analyse`].
struct Measured {
    /// Seconds from the server's spawn to its listening.
    server_ready_seconds: f64,
    /// Whether the server stopped cleanly on SIGTERM.
    server_clean_stop: bool,
    /// The server's journal figures at its stop: ops and fsyncs.
    journal: Option<(u64, u64)>,
    /// Connections the clients opened.
    connections: u64,
    /// Every request's sample.
    samples: Vec<Sample>,
    /// The server's RSS as sampled.
    rss: Vec<(Instant, u64)>,
    /// The server's checkpoint lines.
    marks: Vec<Mark>,
    /// The run's start.
    clock: Instant,
    /// The run's end.
    end: Instant,
    /// How long the clients ran.
    run: Duration,
}

/// The measured run: the server started on `store` with background
/// checkpoints, its RSS sampled while `clients` run for `--seconds`, then
/// stopped with SIGTERM (what went wrong added to `errors`).
fn measured_run(
    a: &Args,
    exe: &Path,
    rt: &tokio::runtime::Runtime,
    store: &Path,
    targets: &Arc<Targets>,
    clients: usize,
    errors: &mut Vec<String>,
) -> anyhow::Result<Measured> {
    let mut server = Proc::start(exe, store, Some(a.checkpoint_every_secs))?;
    let mut m = measured_load(a, rt, &server, targets, clients, errors)?;
    m.server_clean_stop = server.stop();
    if !m.server_clean_stop {
        errors.push(format!(
            "the server did not stop cleanly on SIGTERM: {}",
            server.stderr_tail()
        ));
    }
    m.journal = server.journal();
    Ok(m)
}

/// The measured load on a running `server`: the bench's root opened, its
/// RSS sampled while `clients` run for `--seconds`; the server is left
/// running (`server_clean_stop` false and `journal` unknown until the
/// caller stops it).
fn measured_load(
    a: &Args,
    rt: &tokio::runtime::Runtime,
    server: &Proc,
    targets: &Arc<Targets>,
    clients: usize,
    errors: &mut Vec<String>,
) -> anyhow::Result<Measured> {
    let seconds = a.seconds();
    let server_ready_seconds = secs_between(server.spawned, server.listening);
    let pid = server.pid();
    open_bench_root(rt, server.addr)?;
    let ctx = Arc::new(Ctx {
        addr: server.addr,
        targets: Arc::clone(targets),
        writes: a.writes,
        seed: a.seed,
        phase: "m",
        deadline: OnceLock::new(),
        killed: AtomicBool::new(false),
    });
    let sampler = RssSampler::start(pid, RSS_EVERY)?;
    let run = Duration::from_secs(seconds);
    let (mut outs, clock) = run_clients(rt, &ctx, clients, run, |clock| {
        child::reset_peak(pid);
        std::thread::sleep(run.saturating_sub(clock.elapsed()));
    })?;
    let end = clock + run;
    let rss = sampler.finish();
    let marks = server.marks();
    for o in &outs {
        errors.extend(o.first_errors.iter().cloned());
    }
    let connections = outs.iter().map(|o| o.connects).sum();
    let samples: Vec<Sample> = outs
        .iter_mut()
        .flat_map(|o| std::mem::take(&mut o.samples))
        .collect();
    Ok(Measured {
        server_ready_seconds,
        server_clean_stop: false,
        journal: None,
        connections,
        samples,
        rss,
        marks,
        clock,
        end,
        run,
    })
}

/// The measured run's figures: per kind of request, over the run, during
/// checkpoints and outside them; the slowest writes; the server's RSS
/// during checkpoints and outside them; the checkpoints' windows.
struct Analysis {
    write: Split,
    every: Split,
    ops: serde_json::Map<String, Value>,
    slowest_writes: Vec<Slow>,
    rss_outside: Option<u64>,
    peak_outside: Option<u64>,
    peak_during: Option<u64>,
    checkpoints: Vec<Window>,
    checkpoint_seconds: f64,
}

/// The figures of the measured run `m` (see [`Analysis`]).
fn analyse(a: &Args, m: &Measured) -> anyhow::Result<Analysis> {
    let Measured {
        ref samples,
        ref rss,
        ref marks,
        clock,
        end,
        run,
        ..
    } = *m;
    let wins = windows(marks, end);
    // The windows that overlap the run.
    let wins: Vec<Span> = wins
        .into_iter()
        .filter(|w| w.end > clock && w.start < end)
        .collect();
    let inside = |t: Instant| wins.iter().any(|w| w.start <= t && t < w.end);
    let checkpoint_seconds: f64 = wins
        .iter()
        .map(|w| secs_between(w.start.max(clock), w.end.min(end)))
        .sum();
    let outside_seconds = (run.as_secs_f64() - checkpoint_seconds).max(0.0);
    let split = |keep: &dyn Fn(&Sample) -> bool| -> Split {
        let (mut all, mut dur, mut out) = (Vec::new(), Vec::new(), Vec::new());
        for s in samples.iter().filter(|s| keep(s)) {
            all.push(s.nanos);
            if inside(s.sent) {
                dur.push(s.nanos);
            } else {
                out.push(s.nanos);
            }
        }
        Split {
            all: figures(all, run.as_secs_f64()),
            during_checkpoint: figures(dur, checkpoint_seconds),
            outside_checkpoint: figures(out, outside_seconds),
        }
    };
    let write = split(&|s| s.op.is_write());
    let mut writes: Vec<&Sample> = samples.iter().filter(|s| s.op.is_write()).collect();
    writes.sort_unstable_by_key(|s| std::cmp::Reverse(s.nanos));
    let slowest_writes = writes
        .iter()
        .take(SLOWEST_KEPT)
        .map(|s| Slow {
            sent_s: secs_between(clock, s.sent),
            ms: s.nanos as f64 / 1e6,
            op: s.op.name(),
            during_checkpoint: inside(s.sent),
        })
        .collect();
    let read = split(&|s| !s.op.is_write());
    let every = split(&|_| true);
    let mut ops = serde_json::Map::new();
    ops.insert("write".into(), serde_json::to_value(&write)?);
    ops.insert("read".into(), serde_json::to_value(&read)?);
    ops.insert("all".into(), serde_json::to_value(&every)?);
    for op in Op::ALL {
        let s = split(&|s| s.op == op);
        if s.all.requests > 0 || (op.is_write() == (a.writes > 0)) {
            ops.insert(op.name().into(), serde_json::to_value(&s)?);
        }
    }
    let warm = clock + WARM_UP;
    let mut outside_rss: Vec<u64> = rss
        .iter()
        .filter(|(t, _)| *t >= warm && *t < end && !inside(*t))
        .map(|&(_, b)| b)
        .collect();
    outside_rss.sort_unstable();
    let rss_outside = (!outside_rss.is_empty()).then(|| nearest_rank(&outside_rss, 500));
    let peak_outside = outside_rss.last().copied();
    let peak_during = rss
        .iter()
        .filter(|(t, _)| inside(*t))
        .map(|&(_, b)| b)
        .chain(wins.iter().filter_map(|w| w.peak))
        .chain(
            marks
                .iter()
                .filter(|m| m.started && m.at >= clock && m.at < end && m.rss > 0)
                .map(|m| m.rss),
        )
        .max();
    let offset = |t: Instant| match t.checked_duration_since(clock) {
        Some(d) => d.as_secs_f64(),
        None => -clock.duration_since(t).as_secs_f64(),
    };
    let checkpoints: Vec<Window> = wins
        .iter()
        .map(|w| Window {
            txid: w.txid,
            started_s: offset(w.start),
            finished_s: w.finished.then(|| offset(w.end)),
            server_seconds: w.server_seconds,
            peak_rss_bytes: w.peak,
        })
        .collect();
    Ok(Analysis {
        write,
        every,
        ops,
        slowest_writes,
        rss_outside,
        peak_outside,
        peak_during,
        checkpoints,
        checkpoint_seconds,
    })
}

/// The kill under load: the server started again on `store`, killed
/// (SIGKILL) while `clients` write; returns the requests sent (what went
/// wrong added to `errors`).
fn kill_under_load(
    a: &Args,
    exe: &Path,
    rt: &tokio::runtime::Runtime,
    store: &Path,
    targets: &Arc<Targets>,
    clients: usize,
    errors: &mut Vec<String>,
) -> anyhow::Result<u64> {
    let mut server = Proc::start(exe, store, Some(a.checkpoint_every_secs))?;
    let kctx = Arc::new(Ctx {
        addr: server.addr,
        targets: Arc::clone(targets),
        writes: a.writes.max(1),
        seed: a.seed ^ 0x6b69_6c6c,
        phase: "k",
        deadline: OnceLock::new(),
        killed: AtomicBool::new(false),
    });
    // The deadline is far: the clients run until the kill.
    let kill_ctx = Arc::clone(&kctx);
    let (kouts, _) = run_clients(rt, &kctx, clients, Duration::from_secs(86_400), |clock| {
        std::thread::sleep(KILL_LOAD.saturating_sub(clock.elapsed()));
        kill_ctx.killed.store(true, Ordering::Release);
        server.kill();
    })?;
    drop(server);
    for o in &kouts {
        errors.extend(o.first_errors.iter().cloned());
    }
    Ok(kouts.iter().map(|o| o.samples.len() as u64).sum())
}

/// The restart after the kill and `store recover`'s figures.
struct Restart {
    /// Seconds from the spawn to the first answer.
    restart_seconds: f64,
    /// Seconds from the spawn to listening.
    restart_listening_seconds: f64,
    /// `store recover --json`'s seconds.
    store_recover_seconds: f64,
    /// The seconds of `store recover`'s process.
    store_recover_process_seconds: f64,
    /// `store recover --json`'s replayed ops.
    store_recover_replayed: u64,
}

/// The restart on `store` after the kill, timed to its first answer, then
/// `store recover` on it (what went wrong added to `errors`).
fn restart(
    a: &Args,
    exe: &Path,
    rt: &tokio::runtime::Runtime,
    store: &Path,
    errors: &mut Vec<String>,
) -> anyhow::Result<Restart> {
    let mut server = Proc::start(exe, store, Some(a.checkpoint_every_secs))?;
    let restart_listening_seconds = secs_between(server.spawned, server.listening);
    let restart_seconds = loop {
        match once(
            rt,
            server.addr,
            hyper::Method::GET,
            "/webhdfs/v1/?op=GETFILESTATUS",
        ) {
            Ok((200, _)) => break server.spawned.elapsed().as_secs_f64(),
            Ok((status, body)) => bail!(
                "GETFILESTATUS / after the restart: status {status}: {}",
                String::from_utf8_lossy(&body)
            ),
            // Listening, yet not answering: tried again for a while.
            Err(_) if server.listening.elapsed() < REQUEST_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => bail!("no answer to GETFILESTATUS / after the restart: {e}"),
        }
    };
    if !server.stop() {
        errors.push(format!(
            "the restarted server did not stop cleanly on SIGTERM: {}",
            server.stderr_tail()
        ));
    }
    drop(server);
    let t = Instant::now();
    let o = Command::new(exe)
        .args(["store", "recover"])
        .arg(store)
        .arg("--json")
        .output()
        .with_context(|| format!("running {} store recover", exe.display()))?;
    let store_recover_process_seconds = t.elapsed().as_secs_f64();
    if !o.status.success() {
        bail!(
            "store recover {}: {}",
            store.display(),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let rec: Value = serde_json::from_slice(&o.stdout).context("store recover --json")?;
    let store_recover_seconds = rec["seconds"]
        .as_f64()
        .context("store recover --json has no seconds")?;
    Ok(Restart {
        restart_seconds,
        restart_listening_seconds,
        store_recover_seconds,
        store_recover_process_seconds,
        store_recover_replayed: rec["replayed"].as_u64().unwrap_or(0),
    })
}

/// The checks of one size's figures.
fn checks(m: &Analysis, ops_per_fsync: Option<f64>, r: &Restart) -> Vec<Check> {
    vec![
        check(
            "write p99 during / outside checkpoints",
            ratio(
                m.write.during_checkpoint.p99_ms,
                m.write.outside_checkpoint.p99_ms,
            ),
            "<=",
            2.0,
        ),
        check(
            "slowest write during a checkpoint / write p99 outside",
            ratio(
                m.write.during_checkpoint.max_ms,
                m.write.outside_checkpoint.p99_ms,
            ),
            "<=",
            10.0,
        ),
        check(
            "ops/s during / outside checkpoints",
            ratio(
                m.every.during_checkpoint.ops_per_s,
                m.every.outside_checkpoint.ops_per_s,
            ),
            ">=",
            0.7,
        ),
        check(
            "peak RSS during checkpoints / RSS outside",
            ratio(
                m.peak_during.map(|b| b as f64),
                m.rss_outside.map(|b| b as f64),
            ),
            "<=",
            1.5,
        ),
        check("ops per fsync", ops_per_fsync, ">=", 8.0),
        check(
            "restart to first answer / store recover",
            ratio(Some(r.restart_seconds), Some(r.store_recover_seconds)),
            "<=",
            1.2,
        ),
    ]
}

fn print_text(r: &Report) {
    let mib = |b: Option<u64>| {
        b.map_or("-".to_string(), |b| {
            format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
        })
    };
    let ms = |v: &Value| v.as_f64().map_or("-".to_string(), |x| format!("{x:.2}"));
    let rate = |v: &Value| v.as_f64().map_or("-".to_string(), |x| format!("{x:.0}"));
    out!(
        "server bench: {} inodes, {} clients x {} s, {}% writes, a checkpoint every {} s; store {} ({}), server ready in {:.2} s",
        r.inodes,
        r.clients,
        r.seconds,
        r.writes_percent,
        r.checkpoint_every_secs,
        r.store,
        if r.store_reused { "reused" } else { "made" },
        r.server_ready_seconds
    );
    out!(
        "{} checkpoints, {:.2} s of the run inside one:",
        r.checkpoints.len(),
        r.checkpoint_seconds
    );
    for w in &r.checkpoints {
        out!(
            "  txid {}: from {:.2} s to {}, {} by the server, peak RSS {}",
            w.txid,
            w.started_s,
            w.finished_s
                .map_or("the end".into(), |f| format!("{f:.2} s")),
            w.server_seconds.map_or("-".into(), |s| format!("{s:.2} s")),
            mib(w.peak_rss_bytes)
        );
    }
    out!(
        "{:<14} {:<8} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "op",
        "when",
        "requests",
        "ops/s",
        "p50 ms",
        "p99 ms",
        "p99.9 ms",
        "max ms"
    );
    let names = ["write", "read", "all"]
        .into_iter()
        .chain(Op::ALL.iter().map(|o| o.name()));
    for name in names {
        let Some(v) = r.ops.get(name) else { continue };
        for (when, key) in [
            ("all", "all"),
            ("during", "during_checkpoint"),
            ("outside", "outside_checkpoint"),
        ] {
            let f = &v[key];
            out!(
                "{:<14} {:<8} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9}",
                name,
                when,
                f["requests"].as_u64().unwrap_or(0),
                rate(&f["ops_per_s"]),
                ms(&f["p50_ms"]),
                ms(&f["p99_ms"]),
                ms(&f["p999_ms"]),
                ms(&f["max_ms"])
            );
        }
    }
    out!(
        "server RSS: peak during checkpoints {}, median outside {} (peak outside {})",
        mib(r.peak_rss_during_checkpoint_bytes),
        mib(r.rss_outside_checkpoint_bytes),
        mib(r.peak_rss_outside_checkpoint_bytes)
    );
    match (r.journal_ops, r.journal_fsyncs) {
        (Some(o), Some(f)) => out!("journal: {o} ops in {f} fsyncs"),
        _ => out!("journal: the server did not say (no `journal: N ops in M fsyncs` line)"),
    }
    out!(
        "restart after SIGKILL ({} requests in the killed load): first answer {:.3} s after the spawn (listening at {:.3} s); store recover of the same store {:.3} s ({:.3} s as a whole process, {} ops replayed)",
        r.kill_load_requests,
        r.restart_seconds,
        r.restart_listening_seconds,
        r.store_recover_seconds,
        r.store_recover_process_seconds,
        r.store_recover_replayed
    );
    for c in &r.checks {
        out!(
            "{:<56} {:>8} {} {:<4} {}",
            c.name,
            c.value.map_or("-".to_string(), |v| format!("{v:.2}")),
            c.relation,
            c.limit,
            if c.pass { "pass" } else { "fail" }
        );
    }
}

/// The server bench, for each size of `--inodes`.
pub fn run(a: &Args, exe: &Path) -> anyhow::Result<()> {
    for &n in &a.inodes {
        let r = one(a, exe, n)?;
        if a.json {
            out!("{}", serde_json::to_string(&r)?);
        } else {
            print_text(&r);
        }
        if !r.first_errors.is_empty() {
            bail!("{n} inodes: errors: {}", r.first_errors.join("; "));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_by_nearest_rank() {
        let f = figures((1..=1000).map(|x| x * 1_000_000).collect(), 10.0);
        assert_eq!(f.requests, 1000);
        assert_eq!(f.ops_per_s, Some(100.0));
        assert_eq!(f.p50_ms, Some(500.0));
        assert_eq!(f.p99_ms, Some(990.0));
        assert_eq!(f.p999_ms, Some(999.0));
        assert_eq!(f.max_ms, Some(1000.0));
        let e = figures(Vec::new(), 0.0);
        assert_eq!((e.requests, e.ops_per_s, e.p99_ms), (0, None, None));
    }

    #[test]
    fn windows_pair_started_and_finished_lines() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let mark = |ms, started, txid, hwm| Mark {
            at: at(ms),
            started,
            txid,
            server_seconds: (!started).then_some(0.5),
            rss: 100,
            hwm,
            reset: true,
        };
        let marks = [
            mark(100, true, 5, 90),
            mark(600, false, 5, 150),
            mark(900, true, 9, 120),
        ];
        let w = windows(&marks, at(1000));
        assert_eq!(w.len(), 2);
        assert_eq!(
            (w[0].start, w[0].end, w[0].finished),
            (at(100), at(600), true)
        );
        assert_eq!((w[0].txid, w[0].peak), (5, Some(150)));
        assert_eq!(w[0].server_seconds, Some(0.5));
        // Still running at the end: the window ends there, no peak known.
        assert_eq!(
            (w[1].start, w[1].end, w[1].finished),
            (at(900), at(1000), false)
        );
        assert_eq!(w[1].peak, None);
    }

    #[test]
    fn checks_pass_and_fail() {
        assert!(check("x", Some(1.9), "<=", 2.0).pass);
        assert!(!check("x", Some(2.1), "<=", 2.0).pass);
        assert!(check("x", Some(0.7), ">=", 0.7).pass);
        assert!(!check("x", None, ">=", 0.7).pass);
        assert_eq!(ratio(Some(1.0), Some(0.0)), None);
        assert_eq!(ratio(Some(3.0), Some(2.0)), Some(1.5));
    }
}
