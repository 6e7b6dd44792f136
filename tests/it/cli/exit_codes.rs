//! docs/cli.md's exit-code table, row by row: each example is run against
//! the fixtures the table names and must exit with the row's code, so the
//! table stays what the binary does.

use crate::common::nsimage;
use std::path::Path;
use std::process::{Command, Stdio};

const CLI_MD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/cli.md");

/// The table's rows: (code, when, example).
fn rows() -> Vec<(i32, String, String)> {
    let doc = std::fs::read_to_string(CLI_MD).unwrap();
    let section = doc
        .split("\n## Exit codes\n")
        .nth(1)
        .expect("docs/cli.md has an `## Exit codes` section");
    let section = section.split("\n## ").next().unwrap();
    section
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| code"))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split(" | ").map(str::trim).collect();
            assert_eq!(cells.len(), 3, "{l}");
            let example = cells[2].trim_matches('`').to_string();
            (cells[0].parse().unwrap(), cells[1].to_string(), example)
        })
        .collect()
}

/// The fixtures the table names, in `dir`.
fn fixtures(dir: &Path) {
    let run = |args: &[&str]| {
        let out = nsimage(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let at = |n: &str| dir.join(n).to_str().unwrap().to_string();
    run(&[
        "generate",
        "-o",
        &at("IMG"),
        "--inodes",
        "500",
        "--seed",
        "1",
    ]);
    run(&[
        "generate",
        "-o",
        &at("OTHER"),
        "--inodes",
        "500",
        "--seed",
        "2",
    ]);
    let mut damaged = std::fs::read(at("IMG")).unwrap();
    let mid = damaged.len() / 2;
    damaged[mid..mid + 8].copy_from_slice(b"XXXXXXXX");
    std::fs::write(at("DAMAGED"), damaged).unwrap();
    std::fs::write(at("TEXT"), "not an image\n").unwrap();
    // OIV XML whose INodeSection promises an inode it does not hold.
    std::fs::write(
        at("BAD_XML"),
        "<?xml version=\"1.0\"?>\n<fsimage><version><layoutVersion>-66</layoutVersion></version>\n<INodeSection><lastInodeId>16385</lastInodeId><numInodes>1</numInodes></INodeSection>\n</fsimage>\n",
    )
    .unwrap();
    run(&["convert", &at("IMG"), &at("HADOOP"), "--to", "hdfs"]);
    std::fs::copy(at("HADOOP"), at("RENAMED")).unwrap();
    std::fs::copy(at("HADOOP.md5"), at("RENAMED.md5")).unwrap();
    std::fs::copy(at("HADOOP"), at("BAD_MD5")).unwrap();
    let sidecar = std::fs::read_to_string(at("HADOOP.md5")).unwrap();
    let other_digest = format!(
        "{}{}",
        if sidecar.starts_with('0') { '1' } else { '0' },
        &sidecar[1..].replace("HADOOP", "BAD_MD5")
    );
    std::fs::write(at("BAD_MD5.md5"), other_digest).unwrap();
    run(&["keygen", &at("KEY")]);
    run(&[
        "--key-file",
        &at("KEY"),
        "generate",
        "-o",
        &at("ENC"),
        "--inodes",
        "100",
        "--encrypt",
    ]);
}

#[test]
fn every_row_of_the_table_exits_with_its_code() {
    let rows = rows();
    assert!(rows.len() >= 10, "{rows:?}");
    for code in [0, 1, 2] {
        assert!(
            rows.iter().any(|r| r.0 == code),
            "no row for exit code {code}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    fixtures(dir.path());
    for (code, when, example) in &rows {
        let (command, to_full) = match example.split_once(" > ") {
            Some((c, "/dev/full")) => (c, true),
            Some((_, other)) => panic!("{example}: only `> /dev/full` is understood, not {other}"),
            None => (example.as_str(), false),
        };
        let words: Vec<&str> = command.split_whitespace().collect();
        assert_eq!(words[0], "nsimage", "{example}");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_nsimage"));
        cmd.args(&words[1..])
            .current_dir(dir.path())
            .env_remove("NSIMAGE_KEY_FILE")
            .stdin(Stdio::null())
            .stderr(Stdio::piped());
        if to_full {
            cmd.stdout(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open("/dev/full")
                    .unwrap(),
            );
        } else {
            cmd.stdout(Stdio::null());
        }
        let out = cmd.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(*code),
            "{example} ({when}): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // A success says nothing on stderr.
        if *code == 0 {
            assert!(
                out.stderr.is_empty(),
                "{example}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
