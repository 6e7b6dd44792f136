//! Crash test: `nsimage store apply` runs as a child process and is killed
//! (SIGKILL) at random moments, and stopped at named failpoints inside
//! checkpoints, journal rolls and purges. After each stop the store must
//! recover to at least the last txid the child reported durable, with the
//! digest of a fresh namespace that applied exactly that many ops.

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
