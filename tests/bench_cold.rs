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

/// `bench` with the smallest work: one small size, one thread, one run, no
/// peers and no at-rest copies.
fn small_bench(dir: &std::path::Path, plot: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nsimage"));
    c.args([
        "bench",
        "--inodes",
        "2000",
        "--threads",
        "1",
        "--repeat",
        "1",
        "--no-peers",
        "--no-at-rest",
        "--json",
        "--dir",
    ])
    .arg(dir)
    .arg("--plot")
    .arg(plot);
    c
}

/// Runs `c` for at most a minute (a writer blocked on a FIFO with no
/// reader would otherwise hang the test): its exit code, stderr.
fn bounded(mut c: Command) -> (Option<i32>, String) {
    use std::io::Read;
    let mut child = c
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return (status.code(), err);
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("bench still running after 60 s (blocked on the plot target?)");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn the_plot_is_never_written_through_a_link_or_into_a_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let link = dir.path().join("link.svg");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let fifo = dir.path().join("fifo.svg");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let work = dir.path().join("work");
    for (target, kind) in [(&link, "symbolic link"), (&fifo, "FIFO")] {
        let (code, err) = bounded(small_bench(&work, target));
        assert_eq!(code, Some(2), "{}: {err}", target.display());
        assert!(
            err.contains(kind) && err.contains(&*target.to_string_lossy()),
            "{err}"
        );
    }
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    {
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
    }
    // A regular file is replaced by the plot, and nothing is left beside it.
    let plot = dir.path().join("plot.svg");
    std::fs::write(&plot, b"old").unwrap();
    let (code, err) = bounded(small_bench(&work, &plot));
    assert_eq!(code, Some(0), "{err}");
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("load time"),
        "{svg}"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp."))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
