//! `nsimage bench --serve`: a short run of concurrent clients against
//! `nsimage serve` on loopback; the JSON report holds both operations, no
//! error and ordered percentiles. Bounded: 2 s of requests on a small image.
//! `nsimage bench --server`: 3 s of 4 clients on a writable server with a
//! checkpoint every second, then the kill and restart; the JSON report
//! names every figure of issue 26.

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
