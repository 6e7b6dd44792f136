//! `nsimage bench --cold`: every load runs warm and cold (the file taken
//! out of the page cache first), and the image's compressed and encrypted
//! copies appear with their sizes and ratios against the plain image.
//! Bounded: 20,000 inodes, one thread, one repeat.

use serde_json::Value;
use std::collections::BTreeSet;
use std::process::Command;

const AT_REST: [&str; 4] = [
    "nsimage-zstd",
    "nsimage-lz4",
    "nsimage-aes",
    "nsimage-zstd-aes",
];

#[test]
fn cold_runs_and_the_at_rest_copies() {
    // Under the target directory: a disk, where a file's pages can be
    // dropped (a tmpfs /tmp holds the only copy of its files).
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_nsimage"))
        .args([
            "bench",
            "--cold",
            "--inodes",
            "20000",
            "--threads",
            "1",
            "--repeat",
            "1",
            "--no-peers",
            "--json",
            "--dir",
        ])
        .arg(dir.path())
        .output()
        .expect("run nsimage bench --cold");
    let stderr = String::from_utf8_lossy(&o.stderr);
    if !o.status.success() {
        // A machine that cannot drop the file from its page cache (no
        // root and a file system that keeps it) says so clearly.
        assert_eq!(o.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("out of the page cache") && stderr.contains("drop_caches"),
            "{stderr}"
        );
        eprintln!("cold runs not possible here: {stderr}");
        return;
    }
    let v: Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    assert_eq!(v["cold"], true);
    let how = v["eviction"].as_str().unwrap();
    assert!(
        how.contains("fadvise") || how.contains("drop_caches"),
        "{how}"
    );
    let runs = v["runs"].as_array().unwrap();
    let got: BTreeSet<(String, String)> = runs
        .iter()
        .map(|r| {
            (
                r["strategy"].as_str().unwrap().to_string(),
                r["cache"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut want = BTreeSet::new();
    for s in ["stream", "bulk", "mmap", "hdfs", "hdfs-zlib"]
        .into_iter()
        .chain(AT_REST)
    {
        for c in ["warm", "cold"] {
            want.insert((s.to_string(), c.to_string()));
        }
    }
    assert_eq!(got, want);
    assert_eq!(runs.len(), want.len(), "one row per strategy and cache");
    let digest = &runs[0]["digest"];
    let plain = runs.iter().find(|r| r["strategy"] == "mmap").unwrap()["file_bytes"]
        .as_u64()
        .unwrap();
    for r in runs {
        assert_eq!(&r["digest"], digest, "{r}");
        assert!(r["seconds"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["vs_plain_seconds"].as_f64().unwrap() > 0.0, "{r}");
        let bytes = r["file_bytes"].as_u64().unwrap();
        assert!(bytes > 0, "{r}");
        let ratio = r["vs_plain_bytes"].as_f64().unwrap();
        assert!((ratio - bytes as f64 / plain as f64).abs() < 1e-9, "{r}");
        let name = r["strategy"].as_str().unwrap();
        if name.contains("zstd") || name.contains("lz4") {
            assert!(bytes < plain, "{r}");
        }
        if name == "nsimage-aes" {
            // A tag per piece and a nonce each in the index.
            assert!(bytes > plain, "{r}");
        }
    }
    assert!(dir.path().join("bench.key").exists());
    // The table form names the eviction method and the at-rest table.
    let t = Command::new(env!("CARGO_BIN_EXE_nsimage"))
        .args([
            "bench",
            "--cold",
            "--inodes",
            "20000",
            "--threads",
            "1",
            "--repeat",
            "1",
            "--no-peers",
            "--dir",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(t.status.success(), "{}", String::from_utf8_lossy(&t.stderr));
    let text = String::from_utf8_lossy(&t.stdout);
    assert!(text.contains("cold/warm") && text.contains(how), "{text}");
    for s in AT_REST {
        assert!(text.contains(s), "{text}");
    }
}

#[test]
fn cold_conflicts_with_the_other_benches() {
    for other in ["--lookup", "--serve"] {
        let o = Command::new(env!("CARGO_BIN_EXE_nsimage"))
            .args(["bench", "--cold", other])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{other}");
    }
}
