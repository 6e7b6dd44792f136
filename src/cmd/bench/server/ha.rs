//! `nsimage bench --server --ha`: the writable server alone against an HA
//! group on etcd (issue 41), side by side in one run, and the group's
//! failover.
//!
//! For each size of `--inodes`, on the store of `bench --server` (made or
//! reused the same way), `--repeat` rounds, each a single run then an HA
//! run (interleaved, so that both see the same machine):
//!
//! - the single run is `bench --server`'s measured run (the server alone
//!   on the store, the same clients and workload, stopped with SIGTERM);
//! - the HA run: the store copied twice (`cp -a`) under
//!   `DIR/server-N-sSEED-ha/` (the copies are made anew each round, after
//!   the single run), 3 etcd members on loopback (their data beside the
//!   copies), server `a` on the first copy started alone until it says it
//!   is active, then server `b` on the second as its standby; once the
//!   standby is healthy (its status says standby and the active's says its
//!   own checkpointer is off), the same measured load against the active.
//!   Both members run with `--checkpoint-every-secs` and the default lease
//!   ([`LEASE_SECS`]). After the load the members' statuses give the
//!   standby's lag percentiles and each member's checkpoints taken during
//!   the load. Then the failover: one client writes (MKDIRS, as the
//!   superuser) through the active, the active is killed (SIGKILL), and
//!   the client tries both servers' URLs in turn (a refused connection or
//!   an answer other than success moves it to the next) until a write is
//!   acknowledged; meanwhile it polls the standby's status. The failover's
//!   seconds run from the kill to that acknowledgement; its parts: lease
//!   expiry (from the kill to the first status saying `promoting` or
//!   `active`, or, when no poll saw it, to the `active at` line's arrival
//!   less its catch-up), catch-up (the `caught up in S s` of the new
//!   active's `active at` line), first write (from that line's arrival to
//!   the acknowledgement).
//!
//! The active's write p99.9 while the standby checkpoints is that of the
//! writes sent inside the standby's checkpoint windows (its `checkpoint
//! started/finished` lines on stderr, as `bench --server` pairs them);
//! "none" is that of the writes sent outside every window of either
//! member.
//!
//! Figures are medians over the rounds (nearest rank: the middle one of 3);
//! the ratios are ratios of the medians, but for the p99.9 ratio, the
//! median of the rounds' ratios; the failover's parts are those of the
//! round whose failover is the median one, so that they add up; active and
//! standby checkpoints are summed over the rounds.

use super::child::{Proc, BENCH_SUPERUSER};
use super::{
    analyse, check, figures, measured_load, measured_run, prepare, ratio, secs_between, windows,
    Check, Span, ERRORS_KEPT,
};
use crate::cmd::bench::webhdfs::{connect, exchange, Targets};
use crate::cmd::bench::Args;
use anyhow::{bail, Context};
use nsimage_testkit::etcd::EtcdCluster;
use serde::Serialize;
use serde_json::Value;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The members' lease (`serve --ha-lease-secs`, its default).
pub const LEASE_SECS: u64 = 3;
/// The bound on a failover: the lease and this many seconds.
const FAILOVER_SLACK_SECS: f64 = 2.0;
/// How long one request of the failover's client or a status poll may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long after the kill a write may take to be acknowledged.
const FAILOVER_LIMIT: Duration = Duration::from_secs(60);
/// How long a member may take to become active, or the standby healthy.
const READY_LIMIT: Duration = Duration::from_secs(900);
/// The pause between two rounds of the failover's client.
const PROBE_PAUSE: Duration = Duration::from_millis(5);

/// The etcd binary: `NSIMAGE_ETCD`, else `etcd` on PATH.
pub fn etcd_binary() -> anyhow::Result<PathBuf> {
    if let Some(p) = std::env::var_os("NSIMAGE_ETCD").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        if !p.is_file() {
            bail!(
                "NSIMAGE_ETCD names {}, which is not a file: tests/ha/setup.sh installs etcd",
                p.display()
            );
        }
        return Ok(p);
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join("etcd"))
        .find(|p| p.is_file())
        .context(
            "bench --server --ha needs etcd (3.4 or newer): no `etcd` on PATH and no \
             NSIMAGE_ETCD; run tests/ha/setup.sh, which installs Debian's etcd-server",
        )
}

/// One single-server round.
#[derive(Clone, Debug, Serialize)]
pub struct SingleRound {
    /// Requests per second over the run.
    pub ops_per_s: Option<f64>,
    /// Write p99, ms.
    pub write_p99_ms: Option<f64>,
    /// Write p99.9, ms.
    pub write_p999_ms: Option<f64>,
    /// Checkpoint windows of the server within the run.
    pub checkpoints: usize,
}

/// One failover.
#[derive(Clone, Debug, Serialize)]
pub struct Failover {
    /// From the SIGKILL of the active to the first write acknowledged
    /// through the new active.
    pub seconds: f64,
    /// From the kill to the standby's promotion (see the module's page).
    pub lease_expiry_seconds: Option<f64>,
    /// The new active's catch-up, from its `active at` line.
    pub catch_up_seconds: Option<f64>,
    /// From the new active's `active at` line to the acknowledgement.
    pub first_write_seconds: Option<f64>,
    /// Whether a status poll saw the promotion (else the line gave it).
    pub promotion_seen_by_status: bool,
    /// The txid the new active took writes at.
    pub active_at_txid: Option<u64>,
    /// Writes the failover's client tried after the kill.
    pub attempts: u64,
}

/// One HA round.
#[derive(Clone, Debug, Serialize)]
pub struct HaRound {
    /// Seconds from the standby's spawn to its being healthy.
    pub standby_ready_seconds: f64,
    /// Requests per second over the run, against the active.
    pub ops_per_s: Option<f64>,
    /// Write p99, ms.
    pub write_p99_ms: Option<f64>,
    /// Write p99.9, ms.
    pub write_p999_ms: Option<f64>,
    /// Write p99.9 of the writes sent while the standby checkpointed, ms.
    pub write_p999_during_standby_checkpoint_ms: Option<f64>,
    /// Write p99.9 of the writes sent while no member checkpointed, ms.
    pub write_p999_no_checkpoint_ms: Option<f64>,
    /// The ratio of the two.
    pub write_p999_during_standby_checkpoint_vs_none: Option<f64>,
    /// Writes sent while the standby checkpointed.
    pub writes_during_standby_checkpoint: u64,
    /// Seconds of the run inside a checkpoint of the standby.
    pub standby_checkpoint_seconds: f64,
    /// The standby's lag percentiles after the load, ms.
    pub standby_lag_p50_ms: Option<f64>,
    /// See `standby_lag_p50_ms`.
    pub standby_lag_p99_ms: Option<f64>,
    /// See `standby_lag_p50_ms`.
    pub standby_lag_max_ms: Option<f64>,
    /// Checkpoints the active's checkpointer took during the load.
    pub active_checkpoints: u64,
    /// Checkpoints the standby's checkpointer took during the load.
    pub standby_checkpoints: u64,
    /// The failover after the load.
    pub failover: Failover,
}

/// The result of one size.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Inodes of the generated namespace.
    pub inodes: u64,
    /// The single server's store (the HA members run on copies of it).
    pub store: String,
    /// Whether the store was reused from an earlier run.
    pub store_reused: bool,
    /// Seconds making the store took (0 when reused).
    pub store_make_seconds: f64,
    /// The etcd binary.
    pub etcd: String,
    /// Clients, one connection each.
    pub clients: u64,
    /// Seconds of each measured load.
    pub seconds: u64,
    /// Percent of writes asked for.
    pub writes_percent: u64,
    /// The servers' --checkpoint-every-secs.
    pub checkpoint_every_secs: u64,
    /// The HA members' lease.
    pub lease_secs: u64,
    /// Rounds (a single run and an HA run each).
    pub rounds: usize,
    /// Each single run.
    pub single: Vec<SingleRound>,
    /// Each HA run.
    pub ha: Vec<HaRound>,
    /// Median ops/s of the single runs.
    pub single_ops_per_s: Option<f64>,
    /// Median ops/s of the HA runs.
    pub ha_ops_per_s: Option<f64>,
    /// Median write p99 of the single runs, ms.
    pub single_write_p99_ms: Option<f64>,
    /// Median write p99 of the HA runs, ms.
    pub ha_write_p99_ms: Option<f64>,
    /// `ha_ops_per_s / single_ops_per_s`.
    pub ha_ops_per_s_vs_single: Option<f64>,
    /// `ha_write_p99_ms / single_write_p99_ms`.
    pub ha_write_p99_vs_single: Option<f64>,
    /// The median failover.
    pub failover_seconds: Option<f64>,
    /// Its lease expiry.
    pub failover_lease_expiry_seconds: Option<f64>,
    /// Its catch-up.
    pub failover_catch_up_seconds: Option<f64>,
    /// Its first write.
    pub failover_first_write_seconds: Option<f64>,
    /// Median of the standby's lag p99 after each HA load, ms.
    pub standby_lag_p99_ms: Option<f64>,
    /// The active's checkpoints during the HA loads, all rounds.
    pub active_checkpoints: u64,
    /// The standby's checkpoints during the HA loads, all rounds.
    pub standby_checkpoints: u64,
    /// Median of the rounds' write p99.9 while the standby checkpoints /
    /// while no one does.
    pub ha_write_p999_during_standby_checkpoint_vs_none: Option<f64>,
    /// The checks.
    pub checks: Vec<Check>,
    /// The first errors, described.
    pub first_errors: Vec<String>,
}

/// The median of the values there (the lower middle of an even count).
fn median(v: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    let mut v: Vec<f64> = v.into_iter().flatten().collect();
    v.sort_unstable_by(f64::total_cmp);
    v.get(v.len().saturating_sub(1) / 2).copied()
}

/// One request on a new connection, within [`PROBE_TIMEOUT`]: the
/// answer's status and body.
fn ask(
    rt: &tokio::runtime::Runtime,
    addr: SocketAddr,
    method: hyper::Method,
    target: &str,
) -> anyhow::Result<(u16, Vec<u8>)> {
    rt.block_on(async {
        tokio::time::timeout(PROBE_TIMEOUT, async {
            let mut s = connect(addr).await?;
            let a = exchange(&mut s, method, &addr.to_string(), target).await?;
            Ok((a.status, a.body.to_vec()))
        })
        .await
        .context("no answer in time")?
    })
}

/// A member's `/nsimage/ha/status`.
fn status(rt: &tokio::runtime::Runtime, addr: SocketAddr) -> anyhow::Result<Value> {
    let (code, body) = ask(
        rt,
        addr,
        hyper::Method::GET,
        nsimage_server::ha::fetch::STATUS_PATH,
    )?;
    if code != 200 {
        bail!("status {code} from {addr}");
    }
    Ok(serde_json::from_slice(&body)?)
}

/// Whether a MKDIRS of `path` through `addr` was acknowledged.
fn write_acked(rt: &tokio::runtime::Runtime, addr: SocketAddr, path: &str) -> bool {
    let target = format!("/webhdfs/v1{path}?op=MKDIRS&user.name={BENCH_SUPERUSER}");
    matches!(
        ask(rt, addr, hyper::Method::PUT, &target),
        Ok((200, body)) if serde_json::from_slice::<Value>(&body)
            .is_ok_and(|v| v == serde_json::json!({ "boolean": true }))
    )
}

/// Waits until `ready` says yes (it fails when a server is gone), at
/// most [`READY_LIMIT`].
fn wait_for(what: &str, mut ready: impl FnMut() -> anyhow::Result<bool>) -> anyhow::Result<()> {
    let t = Instant::now();
    loop {
        if ready().with_context(|| format!("waiting for {what}"))? {
            return Ok(());
        }
        if t.elapsed() > READY_LIMIT {
            bail!("{what}: not within {} s", READY_LIMIT.as_secs());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Fails when `p` has exited, with its stderr's tail.
fn alive(name: &str, p: &mut Proc) -> anyhow::Result<()> {
    if p.exited() {
        bail!("server {name} exited: {}", p.stderr_tail());
    }
    Ok(())
}

/// A copy of `from` at `to` (`cp -a`, reflinks where the file system has
/// them).
fn copy_store(from: &Path, to: &Path) -> anyhow::Result<()> {
    let o = Command::new("cp")
        .args(["-a", "--reflink=auto"])
        .arg(from)
        .arg(to)
        .output()
        .context("running cp")?;
    if !o.status.success() {
        bail!(
            "cp -a {} {}: {}",
            from.display(),
            to.display(),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    Ok(())
}

/// Writes out everything dirty on the file system holding `dir` (`sync
/// -f`): the copies just made, and the blocks freed by a removal (their
/// discards). Left to the kernel, the gigabyte of a store's two copies is
/// written back 30 s later (`vm.dirty_expire_centisecs`), in a burst
/// that stalls every fsync on the disk for a second, in the middle of the
/// measured run.
fn settle(dir: &Path) -> anyhow::Result<()> {
    let o = Command::new("sync")
        .arg("-f")
        .arg(dir)
        .output()
        .context("running sync -f")?;
    if !o.status.success() {
        bail!(
            "sync -f {}: {}",
            dir.display(),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    Ok(())
}

/// The failover: a write through the active, its SIGKILL, and a client
/// trying both URLs until a write is acknowledged.
fn failover(
    rt: &tokio::runtime::Runtime,
    active: &mut Proc,
    standby: &mut Proc,
    round: usize,
) -> anyhow::Result<Failover> {
    let root = format!("{}/failover-{round}", super::workload::BENCH_ROOT);
    if !write_acked(rt, active.addr, &format!("{root}/before")) {
        bail!("no write acknowledged by the active before the failover");
    }
    let addrs = [active.addr, standby.addr];
    let killed = Instant::now();
    active.kill();
    let mut promoted: Option<Instant> = None;
    let mut attempts = 0u64;
    let acked = 'done: loop {
        for addr in addrs {
            if killed.elapsed() > FAILOVER_LIMIT {
                bail!(
                    "no write acknowledged within {} s of the active's SIGKILL: {}",
                    FAILOVER_LIMIT.as_secs(),
                    standby.stderr_tail()
                );
            }
            if promoted.is_none() {
                let role = status(rt, standby.addr).ok();
                let role = role.as_ref().and_then(|s| s["role"].as_str());
                if matches!(role, Some("promoting" | "active")) {
                    promoted = Some(Instant::now());
                }
            }
            attempts += 1;
            if write_acked(rt, addr, &format!("{root}/after-{attempts}")) {
                break 'done Instant::now();
            }
        }
        std::thread::sleep(PROBE_PAUSE);
    };
    let seconds = secs_between(killed, acked);
    // The line may still be on its way through the stderr reader.
    let t = Instant::now();
    while standby.active().is_none() && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let line = standby.active();
    let catch_up_seconds = line.and_then(|l| l.caught_up_seconds);
    let lease_expiry_seconds = match promoted {
        Some(p) => Some(secs_between(killed, p)),
        None => {
            line.map(|l| (secs_between(killed, l.at) - catch_up_seconds.unwrap_or(0.0)).max(0.0))
        }
    };
    Ok(Failover {
        seconds,
        lease_expiry_seconds,
        catch_up_seconds,
        first_write_seconds: line.map(|l| secs_between(l.at, acked)),
        promotion_seen_by_status: promoted.is_some(),
        active_at_txid: line.map(|l| l.txid),
        attempts,
    })
}

/// A member's `checkpoints_taken`.
fn taken(s: &Value) -> u64 {
    s["checkpoints_taken"].as_u64().unwrap_or(0)
}

/// One HA round on copies of `store`.
#[allow(clippy::too_many_arguments)]
fn ha_round(
    a: &Args,
    exe: &Path,
    etcd: &Path,
    rt: &tokio::runtime::Runtime,
    store: &Path,
    n: u64,
    round: usize,
    targets: &Arc<Targets>,
    clients: usize,
    errors: &mut Vec<String>,
) -> anyhow::Result<HaRound> {
    let dir = a.dir.join(format!("server-{n}-s{}-ha", a.seed));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let (store_a, store_b) = (dir.join("a"), dir.join("b"));
    copy_store(store, &store_a)?;
    copy_store(store, &store_b)?;
    settle(&dir)?;
    let cluster = EtcdCluster::start(etcd, &dir.join("etcd"), 3)
        .with_context(|| format!("starting 3 etcd members ({})", etcd.display()))?;
    let member = |id: &str| -> Vec<String> {
        [
            "--ha-etcd",
            &cluster.endpoints(),
            "--ha-id",
            id,
            "--ha-lease-secs",
            &LEASE_SECS.to_string(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let every = Some(a.checkpoint_every_secs);
    let mut active = Proc::start_with(exe, &store_a, every, &member("a"))?;
    wait_for("server a to become active", || {
        alive("a", &mut active)?;
        Ok(active.active().is_some())
    })?;
    let mut standby = Proc::start_with(exe, &store_b, every, &member("b"))?;
    let mut before = (Value::Null, Value::Null);
    wait_for("server b to be a healthy standby", || {
        alive("a", &mut active)?;
        alive("b", &mut standby)?;
        let (Ok(sa), Ok(sb)) = (status(rt, active.addr), status(rt, standby.addr)) else {
            return Ok(false);
        };
        let ok = sa["role"] == "active"
            && sa["checkpointing"] == false
            && sb["role"] == "standby"
            && sb["durable_txid"].as_u64() >= sa["durable_txid"].as_u64();
        before = (sa, sb);
        Ok(ok)
    })?;
    let standby_ready_seconds = standby.spawned.elapsed().as_secs_f64();
    let m = measured_load(a, rt, &active, targets, clients, errors)?;
    let (sa, sb) = (status(rt, active.addr)?, status(rt, standby.addr)?);
    let an = analyse(a, &m)?;
    // The writes sent while the standby checkpointed, and while no one did.
    let within = |w: &[Span]| -> Vec<Span> {
        w.iter()
            .filter(|w| w.end > m.clock && w.start < m.end)
            .copied()
            .collect()
    };
    let standby_wins = within(&windows(&standby.marks(), m.end));
    let active_wins = within(&windows(&m.marks, m.end));
    let inside = |w: &[Span], t: Instant| w.iter().any(|w| w.start <= t && t < w.end);
    let (mut during, mut none) = (Vec::new(), Vec::new());
    for s in m.samples.iter().filter(|s| s.op.is_write()) {
        if inside(&active_wins, s.sent) {
            continue;
        }
        if inside(&standby_wins, s.sent) {
            during.push(s.nanos);
        } else {
            none.push(s.nanos);
        }
    }
    let writes_during_standby_checkpoint = during.len() as u64;
    let during = figures(during, 0.0).p999_ms;
    let none = figures(none, 0.0).p999_ms;
    let standby_checkpoint_seconds = standby_wins
        .iter()
        .map(|w| secs_between(w.start.max(m.clock), w.end.min(m.end)))
        .sum();
    let lag = |k: &str| sb[k].as_f64();
    let f = failover(rt, &mut active, &mut standby, round)?;
    standby.kill();
    drop(cluster);
    std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    settle(&a.dir)?;
    Ok(HaRound {
        standby_ready_seconds,
        ops_per_s: an.every.all.ops_per_s,
        write_p99_ms: an.write.all.p99_ms,
        write_p999_ms: an.write.all.p999_ms,
        write_p999_during_standby_checkpoint_ms: during,
        write_p999_no_checkpoint_ms: none,
        write_p999_during_standby_checkpoint_vs_none: ratio(during, none),
        writes_during_standby_checkpoint,
        standby_checkpoint_seconds,
        standby_lag_p50_ms: lag("lag_p50_ms"),
        standby_lag_p99_ms: lag("lag_p99_ms"),
        standby_lag_max_ms: lag("lag_max_ms"),
        active_checkpoints: taken(&sa).saturating_sub(taken(&before.0)),
        standby_checkpoints: taken(&sb).saturating_sub(taken(&before.1)),
        failover: f,
    })
}

/// One size: `--repeat` rounds of a single run and an HA run.
fn one(a: &Args, exe: &Path, etcd: &Path, n: u64) -> anyhow::Result<Report> {
    let (store, targets, store_reused, store_make_seconds) = prepare(a, n)?;
    let targets = Arc::new(targets);
    let clients = usize::try_from(a.clients).context("--clients")?;
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cores)
        .enable_all()
        .build()?;
    let mut errors = Vec::new();
    let (mut single, mut ha) = (Vec::new(), Vec::new());
    for round in 0..a.repeat {
        eprintln!("round {}/{}: the single server", round + 1, a.repeat);
        let m = measured_run(a, exe, &rt, &store, &targets, clients, &mut errors)?;
        let an = analyse(a, &m)?;
        single.push(SingleRound {
            ops_per_s: an.every.all.ops_per_s,
            write_p99_ms: an.write.all.p99_ms,
            write_p999_ms: an.write.all.p999_ms,
            checkpoints: an.checkpoints.len(),
        });
        eprintln!("round {}/{}: the HA group", round + 1, a.repeat);
        ha.push(ha_round(
            a,
            exe,
            etcd,
            &rt,
            &store,
            n,
            round,
            &targets,
            clients,
            &mut errors,
        )?);
    }
    let single_ops_per_s = median(single.iter().map(|r| r.ops_per_s));
    let ha_ops_per_s = median(ha.iter().map(|r| r.ops_per_s));
    let single_write_p99_ms = median(single.iter().map(|r| r.write_p99_ms));
    let ha_write_p99_ms = median(ha.iter().map(|r| r.write_p99_ms));
    let mut by_failover: Vec<&HaRound> = ha.iter().collect();
    by_failover.sort_unstable_by(|x, y| x.failover.seconds.total_cmp(&y.failover.seconds));
    let mid = by_failover
        .get(by_failover.len().saturating_sub(1) / 2)
        .map(|r| &r.failover);
    let p999 = median(
        ha.iter()
            .map(|r| r.write_p999_during_standby_checkpoint_vs_none),
    );
    let standby_lag_p99_ms = median(ha.iter().map(|r| r.standby_lag_p99_ms));
    let active_checkpoints = ha.iter().map(|r| r.active_checkpoints).sum();
    let lease = LEASE_SECS as f64;
    let ha_ops_per_s_vs_single = ratio(ha_ops_per_s, single_ops_per_s);
    let ha_write_p99_vs_single = ratio(ha_write_p99_ms, single_write_p99_ms);
    let checks = vec![
        check("HA ops/s / single ops/s", ha_ops_per_s_vs_single, ">=", 0.5),
        check(
            "HA write p99 / single write p99",
            ha_write_p99_vs_single,
            "<=",
            3.0,
        ),
        check(
            "failover seconds (lease + 2 s)",
            mid.map(|f| f.seconds),
            "<=",
            lease + FAILOVER_SLACK_SECS,
        ),
        check("standby lag p99 ms", standby_lag_p99_ms, "<=", 100.0),
        check(
            "active checkpoints with a healthy standby",
            Some(active_checkpoints as f64),
            "<=",
            0.0,
        ),
        check(
            "write p99.9 during standby checkpoint / none",
            p999,
            "<=",
            1.2,
        ),
    ];
    errors.truncate(ERRORS_KEPT);
    Ok(Report {
        inodes: n,
        store: store.display().to_string(),
        store_reused,
        store_make_seconds,
        etcd: etcd.display().to_string(),
        clients: a.clients,
        seconds: a.seconds(),
        writes_percent: a.writes,
        checkpoint_every_secs: a.checkpoint_every_secs,
        lease_secs: LEASE_SECS,
        rounds: a.repeat,
        single_ops_per_s,
        ha_ops_per_s,
        single_write_p99_ms,
        ha_write_p99_ms,
        ha_ops_per_s_vs_single,
        ha_write_p99_vs_single,
        failover_seconds: mid.map(|f| f.seconds),
        failover_lease_expiry_seconds: mid.and_then(|f| f.lease_expiry_seconds),
        failover_catch_up_seconds: mid.and_then(|f| f.catch_up_seconds),
        failover_first_write_seconds: mid.and_then(|f| f.first_write_seconds),
        standby_lag_p99_ms,
        active_checkpoints,
        standby_checkpoints: ha.iter().map(|r| r.standby_checkpoints).sum(),
        ha_write_p999_during_standby_checkpoint_vs_none: p999,
        single,
        ha,
        checks,
        first_errors: errors,
    })
}

fn print_text(r: &Report) {
    let num =
        |v: Option<f64>, digits: usize| v.map_or("-".to_string(), |x| format!("{x:.digits$}"));
    out!(
        "server bench --ha: {} inodes, {} clients x {} s, {}% writes, a checkpoint every {} s, lease {} s; {} rounds of a single server then an HA group (3 etcd members, an active and a standby); store {} ({}); etcd {}",
        r.inodes,
        r.clients,
        r.seconds,
        r.writes_percent,
        r.checkpoint_every_secs,
        r.lease_secs,
        r.rounds,
        r.store,
        if r.store_reused { "reused" } else { "made" },
        r.etcd
    );
    out!(
        "{:<6} {:<7} {:>9} {:>13} {:>15} {:>11} {:>12} {:>12}",
        "round",
        "setup",
        "ops/s",
        "write p99 ms",
        "write p99.9 ms",
        "lag p99 ms",
        "checkpoints",
        "failover s"
    );
    for (i, (s, h)) in r.single.iter().zip(&r.ha).enumerate() {
        out!(
            "{:<6} {:<7} {:>9} {:>13} {:>15} {:>11} {:>12} {:>12}",
            i + 1,
            "single",
            num(s.ops_per_s, 0),
            num(s.write_p99_ms, 2),
            num(s.write_p999_ms, 2),
            "-",
            s.checkpoints,
            "-"
        );
        out!(
            "{:<6} {:<7} {:>9} {:>13} {:>15} {:>11} {:>12} {:>12}",
            i + 1,
            "ha",
            num(h.ops_per_s, 0),
            num(h.write_p99_ms, 2),
            num(h.write_p999_ms, 2),
            num(h.standby_lag_p99_ms, 0),
            format!("{}+{}", h.active_checkpoints, h.standby_checkpoints),
            format!("{:.3}", h.failover.seconds)
        );
    }
    out!("(HA checkpoints: the active's + the standby's, during the load)");
    for (i, h) in r.ha.iter().enumerate() {
        let f = &h.failover;
        out!(
            "round {}: failover {:.3} s = lease expiry {} s + catch-up {} s + first write {} s ({}; active at txid {}); write p99.9 during the standby's checkpoints {} ms ({} writes, {:.1} s) vs none {} ms",
            i + 1,
            f.seconds,
            num(f.lease_expiry_seconds, 3),
            num(f.catch_up_seconds, 3),
            num(f.first_write_seconds, 3),
            if f.promotion_seen_by_status {
                "promotion seen by status"
            } else {
                "promotion from the active-at line"
            },
            f.active_at_txid.map_or("-".into(), |t| t.to_string()),
            num(h.write_p999_during_standby_checkpoint_ms, 2),
            h.writes_during_standby_checkpoint,
            h.standby_checkpoint_seconds,
            num(h.write_p999_no_checkpoint_ms, 2)
        );
    }
    out!(
        "medians: single {} ops/s, write p99 {} ms; HA {} ops/s, write p99 {} ms; failover {} s (lease expiry {} s, catch-up {} s, first write {} s); standby lag p99 {} ms",
        num(r.single_ops_per_s, 0),
        num(r.single_write_p99_ms, 2),
        num(r.ha_ops_per_s, 0),
        num(r.ha_write_p99_ms, 2),
        num(r.failover_seconds, 3),
        num(r.failover_lease_expiry_seconds, 3),
        num(r.failover_catch_up_seconds, 3),
        num(r.failover_first_write_seconds, 3),
        num(r.standby_lag_p99_ms, 0)
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

/// The HA bench, for each size of `--inodes`.
pub fn run(a: &Args, exe: &Path) -> anyhow::Result<()> {
    let etcd = etcd_binary()?;
    for &n in &a.inodes {
        let r = one(a, exe, &etcd, n)?;
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
    fn medians_take_the_middle_of_what_is_there() {
        assert_eq!(median([Some(3.0), None, Some(1.0), Some(2.0)]), Some(2.0));
        assert_eq!(median([Some(2.0), Some(1.0)]), Some(1.0));
        assert_eq!(median([None]), None);
    }
}
