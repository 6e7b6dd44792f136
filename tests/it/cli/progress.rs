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
