//! `nsimage bench --serve`: a short run of concurrent clients against
//! `nsimage serve` on loopback; the JSON report holds both operations, no
//! error and ordered percentiles. Bounded: 2 s of requests on a small image.

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
    // The image is reused by a second run from the same directory.
    let again = bench(dir.path());
    assert_eq!(again["image_bytes"], r["image_bytes"]);
    assert_eq!(again["sampled_paths"], r["sampled_paths"]);
}
