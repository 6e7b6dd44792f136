//! `nsimage bench --serve`: a short run of concurrent clients against
//! `nsimage serve` on loopback; the JSON report holds both operations, no
//! error and ordered percentiles. Bounded: 2 s of requests on a small image.
//! `nsimage bench --server`: 3 s of 4 clients on a writable server with a
//! checkpoint every second, then the kill and restart; the JSON report
//! names every figure of issue 26.
//! `nsimage bench --server --ha`: one round of 3 s against a single server
//! and an HA group on etcd, then its failover; the report names every
//! figure of issue 41.

use serde_json::Value;
use std::process::Command;

fn bench(dir: &std::path::Path) -> Value {
    let o = Command::new(env!("CARGO_BIN_EXE_nsimage"))
        .args([
            "bench",
            "--serve",
            "--inodes",
            "20000",
            "--clients",
            "8",
            "--seconds",
            "2",
            "--json",
            "--dir",
        ])
        .arg(dir)
        .output()
        .expect("run nsimage bench --serve");
    assert!(
        o.status.success(),
        "bench --serve failed: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "one JSON document per size: {text}");
    serde_json::from_str(lines[0]).unwrap()
}

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64()
        .unwrap_or_else(|| panic!("{k} is not a number in {v}"))
}

#[test]
fn serve_bench_reports_both_operations_without_error() {
    let dir = tempfile::tempdir().unwrap();
    let r = bench(dir.path());
    assert_eq!(r["inodes"], 20000);
    assert_eq!(r["clients"], 8);
    assert_eq!(r["seconds"], 2);
    assert!(dir.path().join("serve-20000-s1.nsi").exists());
    assert!(f(&r, "elapsed_seconds") >= 2.0);
    assert!(f(&r, "sampled_directories") > 0.0);
    assert!(f(&r, "sampled_paths") >= f(&r, "sampled_directories"));
    assert!(f(&r, "entries_listed") > 0.0);
    assert!(f(&r, "connections") >= 8.0);
    assert_eq!(r["server_clean_stop"], true);
    assert_eq!(r["first_errors"], serde_json::json!([]));
    if cfg!(target_os = "linux") {
        let peak = f(&r, "server_peak_rss_bytes");
        assert!(peak > 0.0 && peak >= f(&r, "server_rss_end_bytes"));
    }
    let ops = r["ops"].as_object().unwrap();
    assert_eq!(ops.len(), 2, "{r}");
    for name in ["GETFILESTATUS", "LISTSTATUS"] {
        let op = &ops[name];
        assert!(f(op, "requests") > 0.0, "{name}: {op}");
        assert_eq!(op["errors"], 0, "{name}: {op}");
        assert!(f(op, "requests_per_second") > 0.0, "{name}: {op}");
        assert!(f(op, "body_bytes") > 0.0, "{name}: {op}");
        let p: Vec<f64> = ["p50_us", "p90_us", "p99_us", "p999_us", "max_us"]
            .iter()
            .map(|k| f(op, k))
            .collect();
        assert!(p[0] > 0.0, "{name}: {op}");
        assert!(p.windows(2).all(|w| w[0] <= w[1]), "{name}: {op}");
        let mean = f(op, "mean_us");
        assert!(mean > 0.0 && mean <= p[4], "{name}: {op}");
    }
    // Side by side: the same operations with --no-permissions, and the
    // ratio of each one's rate with checks on to off; paths as deep as the
    // small namespace has (6+ where it has them).
    assert!((1.0..=6.0).contains(&f(&r, "min_depth")), "{r}");
    let off = r["permissions_off"].as_object().unwrap();
    for name in ["GETFILESTATUS", "LISTSTATUS"] {
        assert!(f(&off[name], "requests_per_second") > 0.0, "{r}");
        assert_eq!(off[name]["errors"], 0, "{r}");
        let ratio = f(&r["permissions_on_vs_off"], name);
        let want = f(&ops[name], "requests_per_second") / f(&off[name], "requests_per_second");
        assert!((ratio - want).abs() <= 1e-9 * want.max(1.0), "{r}");
    }
    // The image is reused by a second run from the same directory.
    let again = bench(dir.path());
    assert_eq!(again["image_bytes"], r["image_bytes"]);
    assert_eq!(again["sampled_paths"], r["sampled_paths"]);
}

/// `nsimage bench --server` with tiny figures: the JSON report names the
/// issue's figures, each a number (a figure that needs checkpoint samples
/// may be null only when the run had none), with the restart measured
/// against `store recover`.
#[test]
fn server_bench_reports_the_checkpoint_and_restart_figures() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_nsimage"))
        .args([
            "bench",
            "--server",
            "--inodes",
            "20000",
            "--clients",
            "4",
            "--seconds",
            "3",
            "--checkpoint-every-secs",
            "1",
            "--json",
            "--dir",
        ])
        .arg(dir.path())
        .output()
        .expect("run nsimage bench --server");
    assert!(
        o.status.success(),
        "bench --server failed: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "one JSON document per size: {text}");
    let r: Value = serde_json::from_str(lines[0]).unwrap();
    assert!(dir.path().join("server-20000-s1").is_dir(), "{r}");
    assert_eq!(r["store_reused"], false);
    assert_eq!(r["first_errors"], serde_json::json!([]));
    assert_eq!(r["server_clean_stop"], true);
    let checkpoints = r["checkpoints"].as_array().unwrap();
    assert!(checkpoints.len() >= 2, "a checkpoint every second: {r}");
    for k in [
        "write_p99_outside_checkpoint_ms",
        "ops_per_s_during_checkpoint",
        "ops_per_s_outside_checkpoint",
        "rss_outside_checkpoint_bytes",
        "peak_rss_during_checkpoint_bytes",
        "restart_seconds",
        "store_recover_seconds",
    ] {
        assert!(f(&r, k) > 0.0, "{k}: {r}");
    }
    // Writes sent during a checkpoint window: there are some in 2+ windows
    // of 4 clients at 30% writes, unless the windows were all too short.
    let during = &r["ops"]["write"]["during_checkpoint"];
    if f(during, "requests") > 0.0 {
        let p99 = f(&r, "write_p99_during_checkpoint_ms");
        assert!(
            p99 > 0.0 && p99 <= f(&r, "write_max_during_checkpoint_ms"),
            "{r}"
        );
    } else {
        assert!(r["write_p99_during_checkpoint_ms"].is_null(), "{r}");
    }
    // Ops per fsync come from the server's `journal: N ops in M fsyncs`
    // line at its stop.
    assert!(
        r["journal_fsyncs"].is_number(),
        "the server printed no `journal: N ops in M fsyncs` line at its stop: {r}"
    );
    let fsyncs = f(&r, "journal_fsyncs");
    assert!(fsyncs > 0.0, "{r}");
    let expected = f(&r, "journal_ops") / fsyncs;
    assert!(
        (f(&r, "ops_per_fsync") - expected).abs() <= 1e-9 * expected.max(1.0),
        "ops_per_fsync is not journal_ops / journal_fsyncs: {r}"
    );
    assert!(f(&r, "kill_load_requests") > 0.0, "{r}");
    let ops = r["ops"].as_object().unwrap();
    for name in [
        "write",
        "read",
        "GETFILESTATUS",
        "LISTSTATUS",
        "MKDIRS",
        "CREATE",
        "SETPERMISSION",
        "SETTIMES",
        "RENAME",
    ] {
        let all = &ops[name]["all"];
        assert!(f(all, "requests") > 0.0, "{name}: {r}");
        let p: Vec<f64> = ["p50_ms", "p99_ms", "p999_ms", "max_ms"]
            .iter()
            .map(|k| f(all, k))
            .collect();
        assert!(
            p[0] > 0.0 && p.windows(2).all(|w| w[0] <= w[1]),
            "{name}: {all}"
        );
    }
    let checks = r["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 6, "{r}");
    assert!(checks.iter().all(|c| c["pass"].is_boolean()), "{r}");
}

/// The etcd binary, installed by `tests/ha/setup.sh` when missing (its
/// last line names it).
fn etcd() -> String {
    let o = Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ha/setup.sh"))
        .output()
        .expect("run tests/ha/setup.sh");
    assert!(
        o.status.success(),
        "tests/ha/setup.sh failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = String::from_utf8(o.stdout).unwrap();
    out.lines().last().expect("setup.sh names etcd").to_string()
}

/// `nsimage bench --server --ha` with tiny figures, one round: a single
/// server and an HA group (3 etcd members, an active and a standby that
/// checkpoints every second) side by side, then the failover; the JSON
/// report carries every figure of issue 41, each sane.
#[test]
fn server_ha_bench_reports_the_failover_and_the_standby() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_nsimage"))
        .env("NSIMAGE_ETCD", etcd())
        .args([
            "bench",
            "--server",
            "--ha",
            "--inodes",
            "20000",
            "--clients",
            "4",
            "--seconds",
            "3",
            "--repeat",
            "1",
            "--checkpoint-every-secs",
            "1",
            "--json",
            "--dir",
        ])
        .arg(dir.path())
        .output()
        .expect("run nsimage bench --server --ha");
    assert!(
        o.status.success(),
        "bench --server --ha failed: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "one JSON document per size: {text}");
    let r: Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(r["first_errors"], serde_json::json!([]));
    assert_eq!(r["rounds"], 1);
    assert_eq!(r["lease_secs"], 3);
    assert_eq!(r["single"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(r["ha"].as_array().unwrap().len(), 1, "{r}");
    // The copies and the etcd members' data are gone after the round.
    assert!(!dir.path().join("server-20000-s1-ha").exists(), "{r}");
    for k in [
        "single_ops_per_s",
        "ha_ops_per_s",
        "single_write_p99_ms",
        "ha_write_p99_ms",
        "ha_ops_per_s_vs_single",
        "ha_write_p99_vs_single",
        "failover_seconds",
    ] {
        assert!(f(&r, k) > 0.0, "{k}: {r}");
    }
    let ops = f(&r, "ha_ops_per_s") / f(&r, "single_ops_per_s");
    assert!((f(&r, "ha_ops_per_s_vs_single") - ops).abs() < 1e-9, "{r}");
    // The failover waits for the lease (3 s, renewed every 0.5 s) to run
    // out, and its parts add up to about the whole.
    let total = f(&r, "failover_seconds");
    assert!((2.0..60.0).contains(&total), "{r}");
    let parts: Vec<f64> = [
        "failover_lease_expiry_seconds",
        "failover_catch_up_seconds",
        "failover_first_write_seconds",
    ]
    .iter()
    .map(|k| f(&r, k))
    .collect();
    assert!(parts.iter().all(|p| *p >= 0.0), "{r}");
    assert!(parts[0] >= 2.0 && parts[0] <= total, "{r}");
    assert!(parts.iter().sum::<f64>() <= total + 0.5, "{r}");
    assert!(f(&r, "standby_lag_p99_ms") >= 0.0, "{r}");
    // The active never checkpoints while its standby is healthy; the
    // standby, checkpointing every second, did within 3 s.
    assert_eq!(r["active_checkpoints"], 0, "{r}");
    assert!(f(&r, "standby_checkpoints") >= 1.0, "{r}");
    let p999 = &r["ha_write_p999_during_standby_checkpoint_vs_none"];
    assert!(
        p999.is_null() || p999.as_f64().is_some_and(|x| x > 0.0),
        "{r}"
    );
    let checks = r["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 6, "{r}");
    assert!(checks.iter().all(|c| c["pass"].is_boolean()), "{r}");
}
