//! Progress on stderr: a bar with its total, rate and ETA when stderr is a
//! terminal (a pseudo-terminal from util-linux `script`), nothing when not.

use crate::common;

use common::nsimage;
use std::path::Path;
use std::process::Command;

/// Runs `nsimage args` under a pseudo-terminal; what the terminal showed.
fn on_a_terminal(args: &[&str]) -> String {
    let mut line = String::from(env!("CARGO_BIN_EXE_nsimage"));
    for a in args {
        line.push_str(" '");
        line.push_str(a);
        line.push('\'');
    }
    let out = Command::new("script")
        .args(["-qfec", &line, "/dev/null"])
        .output()
        .expect("run util-linux script");
    assert!(out.status.success(), "{line}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn generate(path: &Path) {
    let out = nsimage(&[
        "generate",
        "-o",
        path.to_str().unwrap(),
        "--inodes",
        "20000",
        "--sub-section-bytes",
        "65536",
        "--sub-section-min-inodes",
        "0",
    ]);
    assert!(out.status.success(), "{out:?}");
    // Not a terminal: no progress at all.
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn bars_show_their_total_on_a_terminal_and_nothing_off_one() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("p.nsi");
    generate(&img);
    let img = img.to_str().unwrap();

    let off = nsimage(&["load", img, "--json"]);
    assert!(off.status.success(), "{off:?}");
    assert!(
        off.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&off.stderr)
    );

    let shown = on_a_terminal(&["load", img]);
    assert!(shown.contains("loading"), "{shown}");
    assert!(shown.contains("ETA"), "{shown}");
    assert!(shown.contains("B/s"), "a byte rate: {shown}");

    let out = dir.path().join("p.jsonl");
    let shown = on_a_terminal(&[
        "dump",
        img,
        "--format",
        "jsonl",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(shown.contains("/20000 rows"), "the rows' total: {shown}");
    assert!(shown.contains("ETA"), "{shown}");
    let off = nsimage(&[
        "dump",
        img,
        "--format",
        "jsonl",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(off.status.success(), "{off:?}");
    assert!(
        off.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&off.stderr)
    );
}

/// The JSON lines of `--progress json` on stderr: every line an object
/// with its fields, time never going back, done never past total, and the
/// last line `done` with every planned piece and byte done; the phases
/// named (none empty). Returns the phases seen, in order.
fn json_lines_reach_their_totals(what: &str, stderr: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(stderr);
    let mut phases: Vec<String> = Vec::new();
    let mut last: Option<serde_json::Value> = None;
    let mut elapsed = 0.0;
    for line in text.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{what}: {e}: {line}"));
        let n = |k: &str| {
            v[k].as_u64()
                .unwrap_or_else(|| panic!("{what}: {k} in {line}"))
        };
        let (done, total) = (n("done"), n("total"));
        let (bytes_done, bytes_total) = (n("bytes_done"), n("bytes_total"));
        assert_eq!(v["unit"], "pieces", "{what}: {line}");
        if total > 0 {
            assert!(done <= total, "{what}: {line}");
            assert!(bytes_done <= bytes_total, "{what}: {line}");
        }
        let t = v["elapsed_seconds"].as_f64().expect("elapsed_seconds");
        assert!(t >= elapsed, "{what}: time went back: {line}");
        elapsed = t;
        let phase = v["phase"].as_str().expect("phase").to_string();
        assert!(!phase.is_empty(), "{what}: {line}");
        if phases.last() != Some(&phase) {
            phases.push(phase);
        }
        last = Some(v);
    }
    let last = last.unwrap_or_else(|| panic!("{what}: no progress line"));
    assert_eq!(last["phase"], "done", "{what}: {last}");
    assert!(last["total"].as_u64().unwrap() > 0, "{what}: {last}");
    assert_eq!(last["done"], last["total"], "{what}: {last}");
    assert!(last["bytes_total"].as_u64().unwrap() > 0, "{what}: {last}");
    assert_eq!(last["bytes_done"], last["bytes_total"], "{what}: {last}");
    phases
}

/// `load --progress json` and `store recover --progress json` write JSON
/// lines that end with every piece done, for an nsimage image and for the
/// same namespace as a Hadoop image with sub-sections, plain and zlib
/// (whose INODE pieces are counted in one pass and decoded in cuts: done
/// as their last cut is), on one thread and two; stdout keeps `--json`.
#[test]
fn progress_as_json_lines_reaches_every_total() {
    let dir = tempfile::tempdir().unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let img = dir.path().join("p.nsi");
    let o = nsimage(&["generate", "-o", &s(&img), "--inodes", "300000"]);
    assert!(o.status.success(), "{o:?}");
    let plain = dir.path().join("p.hdfs");
    let zlib = dir.path().join("z.hdfs");
    for (out, codec) in [(&plain, "none"), (&zlib, "zlib")] {
        let o = nsimage(&[
            "convert",
            &s(&img),
            &s(out),
            "--to",
            "hdfs",
            "--sub-sections",
            "--codec",
            codec,
        ]);
        assert!(o.status.success(), "{o:?}");
    }
    for path in [&img, &plain, &zlib] {
        for threads in ["1", "2"] {
            let o = nsimage(&[
                "load",
                &s(path),
                "--threads",
                threads,
                "--json",
                "--progress",
                "json",
            ]);
            let stats = common::json(&o);
            assert!(stats["inodes"].as_u64().unwrap() >= 300_000, "{stats}");
            let what = format!("{} on {threads} threads", s(path));
            let phases = json_lines_reach_their_totals(&what, &o.stderr);
            assert!(
                phases.iter().any(|p| p.starts_with("inode")),
                "{what}: {phases:?}"
            );
        }
    }
    let store = dir.path().join("store");
    let o = nsimage(&["store", "init", &s(&store), "--from", &s(&img)]);
    assert!(o.status.success(), "{o:?}");
    let o = nsimage(&["store", "apply", &s(&store), "--ops", "20"]);
    assert!(o.status.success(), "{o:?}");
    let o = nsimage(&["store", "recover", &s(&store), "--progress", "json"]);
    assert!(o.status.success(), "{o:?}");
    json_lines_reach_their_totals("store recover", &o.stderr);
}
