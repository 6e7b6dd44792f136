//! `load --trace`: the timeline of a 5M-inode load as a Chrome trace-event
//! file, and the figures `load --json` computes from it.

use crate::common;
use serde_json::Value;
use std::collections::BTreeMap;

/// A complete event: track, start and end (microseconds), category, name.
struct Slice {
    tid: u64,
    start: f64,
    end: f64,
    cat: String,
    args: Value,
}

/// A 5M-inode load on 2 threads writes valid trace-event JSON: complete
/// events whose slices nest and never overlap on a track, one per worker
/// and one coordinator track named, and one piece slice for every piece
/// `info --json` lists, one for one; `--json` gives the phases' figures.
#[test]
fn a_load_traces_every_piece_on_nesting_tracks() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("5m.nsi");
    let trace = dir.path().join("load.json");
    let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let o = common::nsimage(&["generate", "--inodes", "5000000", "-o", &s(&img)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = common::nsimage(&[
        "load",
        &s(&img),
        "--threads",
        "2",
        "--json",
        "--trace",
        &s(&trace),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stats = common::json(&o);
    let t: Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let events = t["traceEvents"].as_array().expect("traceEvents");
    let mut slices = Vec::new();
    let mut named = Vec::new();
    for e in events {
        match e["ph"].as_str() {
            Some("X") => {
                let start = e["ts"].as_f64().expect("ts");
                let dur = e["dur"].as_f64().expect("dur");
                assert!(dur >= 0.0 && start >= 0.0, "{e}");
                slices.push(Slice {
                    tid: e["tid"].as_u64().expect("tid"),
                    start,
                    end: start + dur,
                    cat: e["cat"].as_str().expect("cat").to_string(),
                    args: e["args"].clone(),
                });
            }
            Some("M") => {
                if e["name"] == "thread_name" {
                    named.push(e["tid"].as_u64().expect("tid"));
                }
            }
            other => panic!("an event of phase {other:?}: {e}"),
        }
    }
    // Tracks: the coordinator (0) and both workers, each named.
    let tracks: std::collections::BTreeSet<u64> = slices.iter().map(|s| s.tid).collect();
    assert!(
        tracks.contains(&0) && tracks.contains(&1) && tracks.contains(&2),
        "{tracks:?}"
    );
    for t in &tracks {
        assert!(named.contains(t), "track {t} has no name");
    }
    // On each track, slices nest: each lies within the one open around it,
    // or starts after it ends.
    let mut by_track: BTreeMap<u64, Vec<&Slice>> = BTreeMap::new();
    for s in &slices {
        by_track.entry(s.tid).or_default().push(s);
    }
    const EPS: f64 = 0.01;
    for (tid, mut list) in by_track {
        list.sort_by(|a, b| a.start.total_cmp(&b.start).then(b.end.total_cmp(&a.end)));
        let mut open: Vec<&Slice> = Vec::new();
        for s in list {
            while open.last().is_some_and(|o| o.end <= s.start + EPS) {
                open.pop();
            }
            if let Some(o) = open.last() {
                assert!(
                    s.end <= o.end + EPS,
                    "track {tid}: a {} slice at {}-{} overlaps a {} one at {}-{}",
                    s.cat,
                    s.start,
                    s.end,
                    o.cat,
                    o.start,
                    o.end
                );
            }
            open.push(s);
        }
    }
    // The pieces decoded are those of the index, one for one.
    let mut traced: Vec<(String, Option<u64>, u64, u64)> = slices
        .iter()
        .filter(|s| s.cat == "piece")
        .map(|s| {
            (
                s.args["section"].as_str().unwrap().to_string(),
                s.args["sub_section"].as_u64(),
                s.args["bytes"].as_u64().unwrap(),
                s.args["records"].as_u64().unwrap(),
            )
        })
        .collect();
    traced.sort();
    let o = common::nsimage(&["info", "--json", &s(&img)]);
    assert!(o.status.success());
    let info = common::json(&o);
    let mut listed = Vec::new();
    for sec in info["sections"].as_array().unwrap() {
        let kind = sec["kind"].as_str().unwrap().to_string();
        let subs = sec["sub_sections"].as_array().unwrap();
        if subs.is_empty() {
            let (len, n) = (
                sec["length"].as_u64().unwrap(),
                sec["records"].as_u64().unwrap(),
            );
            listed.push((kind.clone(), None, len, n));
        }
        for (i, sub) in subs.iter().enumerate() {
            let (len, n) = (
                sub["length"].as_u64().unwrap(),
                sub["records"].as_u64().unwrap(),
            );
            listed.push((kind.clone(), Some(i as u64), len, n));
        }
    }
    listed.sort();
    assert!(listed.len() > 100, "{} pieces", listed.len());
    assert_eq!(traced, listed);
    // The figures from the same timeline.
    let eff = stats["parallel_efficiency"].as_f64().unwrap();
    let serial = stats["serial_seconds"].as_f64().unwrap();
    let secs = stats["seconds"].as_f64().unwrap();
    assert!(eff > 0.0 && eff <= 1.0 + 1e-9, "{stats}");
    assert!(serial >= 0.0 && serial <= secs, "{stats}");
    let phases = stats["phases"].as_array().unwrap();
    assert_eq!(phases.last().unwrap()["name"], "load");
    for name in ["inode: decode", "dir: decode", "dir: link"] {
        assert!(
            phases.iter().any(|p| p["name"] == name),
            "no phase {name}: {phases:?}"
        );
    }
}
