//! Crash test: `nsimage store apply` runs as a child process and is killed
//! (SIGKILL) at random moments, and stopped at named failpoints inside
//! checkpoints, journal rolls and purges. After each stop the store must
//! recover to at least the last txid the child reported durable, with the
//! digest of a fresh namespace that applied exactly that many ops. The
//! second test does the same to a child whose writer threads keep
//! submitting while a background checkpointer saves, rolls and purges
//! (issue 26), killing it just after a checkpoint starts, too.

use nsimage_namespace::Namespace;
use nsimage_store::Store;
use nsimage_testkit::workload::Workload;
use rand::{RngExt, SeedableRng};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SEED: u64 = 11;
const FAILPOINTS: [&str; 9] = [
    "journal-before-sync",
    "segment-created",
    "segment-header-synced",
    "segment-dir-synced",
    "checkpoint-written",
    "checkpoint-renamed",
    "roll-renamed",
    "purge-image",
    "purge-segment",
];

/// Runs one child; kills it after `delay` unless it stops first. Returns the
/// highest durable txid it reported and whether it was killed. A child run
/// with a failpoint must die at it (SIGABRT).
fn run_child(dir: &std::path::Path, delay: Duration, failpoint: Option<&str>) -> (u64, bool) {
    use std::os::unix::process::ExitStatusExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nsimage"));
    cmd.args([
        "store",
        "apply",
        dir.to_str().unwrap(),
        "--ops",
        "40000",
        "--seed",
    ])
    .arg(SEED.to_string())
    .args([
        "--checkpoint-every",
        "900",
        "--batch",
        "50",
        "--print-durable",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    if let Some(f) = failpoint {
        cmd.env("NSIMAGE_FAILPOINT", f);
    }
    let mut child = cmd.spawn().expect("spawn nsimage");
    let durable = Arc::new(AtomicU64::new(0));
    let out = child.stdout.take().unwrap();
    let d = durable.clone();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Some(t) = line.strip_prefix("durable ") {
                d.fetch_max(t.parse().unwrap(), Ordering::SeqCst);
            }
        }
    });
    let started = Instant::now();
    let mut killed = false;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            if let Some(f) = failpoint {
                assert_eq!(
                    status.signal(),
                    Some(6),
                    "the child did not stop at failpoint {f}"
                );
            }
            break;
        }
        if failpoint.is_none() && started.elapsed() >= delay {
            child.kill().unwrap();
            killed = true;
            child.wait().unwrap();
            break;
        }
        std::thread::sleep(Duration::from_micros(300));
    }
    reader.join().unwrap();
    (durable.load(Ordering::SeqCst), killed)
}

#[test]
fn killed_stores_recover_every_acknowledged_op() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    Store::init(
        &dir,
        Arc::new(nsimage_store::fs::RealFs::default()),
        &Default::default(),
    )
    .unwrap();
    let w = Workload { seed: SEED };
    let mut reference = Namespace::default();
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(5);
    let (mut kills, mut aborts, mut acknowledged) = (0, 0, 0u64);
    let mut round = 0;
    let started = Instant::now();
    while kills < 50 || aborts < FAILPOINTS.len() {
        let fp = FAILPOINTS
            .get(round % 10)
            .filter(|_| aborts < FAILPOINTS.len())
            .copied();
        round += 1;
        let delay = Duration::from_micros(rng.random_range(500..40_000));
        let (durable, killed) = run_child(&dir, delay, fp);
        kills += killed as usize;
        aborts += fp.is_some() as usize;
        acknowledged = acknowledged.max(durable);
        let store = Store::open_default(&dir)
            .unwrap_or_else(|e| panic!("round {round}: recovery failed: {e}"));
        let txid = store.report().txid;
        assert!(
            txid >= acknowledged,
            "round {round}: recovered txid {txid} < acknowledged {acknowledged}"
        );
        w.advance(&mut reference, txid);
        let digest = store.with_namespace(|ns| ns.digest());
        assert_eq!(digest, reference.digest(), "round {round}: txid {txid}");
        assert!(
            started.elapsed() < Duration::from_secs(110),
            "crash test too slow"
        );
    }
    assert!(
        kills >= 50 && acknowledged > 0,
        "{kills} kills, {acknowledged} acknowledged"
    );
    eprintln!(
        "{round} rounds: {kills} kills, {aborts} failpoint stops, {acknowledged} acknowledged ops"
    );
}

/// How a background-checkpoint child is stopped.
#[derive(Clone, Copy, Debug)]
enum Stop {
    /// SIGKILL after this long.
    After(Duration),
    /// SIGKILL this long after the child reports that a background
    /// checkpoint started (its snapshot taken, its save under way).
    IntoCheckpoint(Duration),
    /// The child aborts at this failpoint (reached on the checkpointer's
    /// thread while the writers go on).
    Failpoint(&'static str),
}

/// Runs one child with 4 writer threads and a background checkpointer
/// every 300 ops; stops it as `stop` says. Returns every txid it reported
/// durable and whether it was killed inside a checkpoint it reported.
fn run_background_child(dir: &std::path::Path, stop: Stop) -> (Vec<u64>, bool) {
    use std::os::unix::process::ExitStatusExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nsimage"));
    cmd.args(["store", "apply", dir.to_str().unwrap(), "--ops", "40000"])
        .arg("--seed")
        .arg(SEED.to_string())
        .args([
            "--writers",
            "4",
            "--background-checkpoint-every-ops",
            "300",
            "--print-durable",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Stop::Failpoint(f) = stop {
        cmd.env("NSIMAGE_FAILPOINT", f);
    }
    let mut child = cmd.spawn().expect("spawn nsimage");
    let out = child.stdout.take().unwrap();
    // (durable txids, a checkpoint started and not finished, when the
    // first one started)
    type Seen = (Vec<u64>, bool, Option<Instant>);
    let seen: Arc<std::sync::Mutex<Seen>> = Default::default();
    let s = seen.clone();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let mut s = s.lock().unwrap();
            if let Some(t) = line.strip_prefix("durable ") {
                s.0.push(t.parse().unwrap());
            } else if line.starts_with("checkpoint started ") {
                s.1 = true;
                s.2.get_or_insert_with(Instant::now);
            } else if line.starts_with("checkpoint ") {
                s.1 = false;
            }
        }
    });
    let started = Instant::now();
    let mut in_checkpoint = false;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            if let Stop::Failpoint(f) = stop {
                assert_eq!(
                    status.signal(),
                    Some(6),
                    "the child did not stop at failpoint {f}"
                );
            }
            break;
        }
        let due = match stop {
            Stop::After(d) => started.elapsed() >= d,
            Stop::IntoCheckpoint(d) => seen.lock().unwrap().2.is_some_and(|t| t.elapsed() >= d),
            Stop::Failpoint(_) => false,
        };
        if due || started.elapsed() > Duration::from_secs(20) {
            in_checkpoint = seen.lock().unwrap().1;
            child.kill().unwrap();
            child.wait().unwrap();
            break;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    reader.join().unwrap();
    let durable = std::mem::take(&mut seen.lock().unwrap().0);
    (durable, in_checkpoint)
}

/// SIGKILLs and failpoint stops of a child whose 4 writer threads keep
/// submitting while background checkpoints run: at random moments, a few
/// milliseconds into a checkpoint, and at every failpoint of the
/// checkpoint, roll and purge. After each, every txid the child reported
/// durable is recovered, with the reference digest (so nothing it refused
/// is there).
#[test]
fn killed_stores_with_background_checkpoints_recover_every_acknowledged_op() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    Store::init(
        &dir,
        Arc::new(nsimage_store::fs::RealFs::default()),
        &Default::default(),
    )
    .unwrap();
    let w = Workload { seed: SEED };
    let mut reference = Namespace::default();
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(6);
    let checkpoint_points = [
        "checkpoint-written",
        "checkpoint-renamed",
        "roll-renamed",
        "segment-dir-synced",
        "purge-image",
        "purge-segment",
    ];
    let mut plan: Vec<Stop> = checkpoint_points
        .iter()
        .map(|&f| Stop::Failpoint(f))
        .collect();
    for k in 0..30 {
        plan.push(if k % 2 == 0 {
            Stop::After(Duration::from_micros(rng.random_range(2_000..60_000)))
        } else {
            Stop::IntoCheckpoint(Duration::from_micros(rng.random_range(0..4_000)))
        });
    }
    let started = Instant::now();
    let (mut acknowledged, mut kills_in_checkpoint) = (0u64, 0);
    for (round, &stop) in plan.iter().enumerate() {
        let (durable, in_checkpoint) = run_background_child(&dir, stop);
        kills_in_checkpoint += usize::from(in_checkpoint);
        let store = Store::open_default(&dir)
            .unwrap_or_else(|e| panic!("round {round} ({stop:?}): recovery failed: {e}"));
        let txid = store.report().txid;
        acknowledged = acknowledged.max(durable.iter().copied().max().unwrap_or(0));
        let lost: Vec<u64> = durable.iter().copied().filter(|&t| t > txid).collect();
        assert!(
            lost.is_empty() && txid >= acknowledged,
            "round {round} ({stop:?}): recovered txid {txid}, acknowledged {acknowledged}, lost {lost:?}"
        );
        w.advance(&mut reference, txid);
        let digest = store.with_namespace(|ns| ns.digest());
        assert_eq!(digest, reference.digest(), "round {round}: txid {txid}");
        assert!(
            started.elapsed() < Duration::from_secs(110),
            "crash test too slow"
        );
    }
    assert!(acknowledged > 0, "nothing acknowledged");
    assert!(
        kills_in_checkpoint > 0,
        "no kill came during a background checkpoint"
    );
    eprintln!(
        "{} rounds with background checkpoints: {kills_in_checkpoint} kills inside a checkpoint, \
         {} failpoint stops, {acknowledged} acknowledged ops",
        plan.len(),
        checkpoint_points.len()
    );
}
