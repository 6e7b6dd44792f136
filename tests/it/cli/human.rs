//! `-h/--human` on `du`, `ls`, `stat`, `info` and `distribution`: sizes in
//! Hadoop's binary prefixes (`1.5 K`, as `hdfs dfs -h`) where the plain
//! output prints byte counts, `--help` still
//! the usage, `--json` the same with and without `-h`; on no command is
//! `-h` help.

use crate::common;

use common::nsimage;
use std::path::Path;

/// Runs a command that must succeed; its stdout as text.
fn text(args: &[&str]) -> String {
    let o = nsimage(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("stdout is UTF-8")
}

fn generate(img: &Path) {
    text(&[
        "generate",
        "-o",
        img.to_str().unwrap(),
        "--inodes",
        "2000",
        "--seed",
        "7",
    ]);
}

/// The path and length of the first non-empty file of the image.
fn some_file(img: &str) -> (String, u64) {
    text(&["ls", img, "/", "-R", "--json"])
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["type"] == "file" && e["length"].as_u64().unwrap() >= 1 << 20)
        .map(|e| {
            let p = e["path"].as_str().unwrap().to_string();
            (p, e["length"].as_u64().unwrap())
        })
        .expect("a file of 1 MiB or more")
}

/// Whether `s` has a size in Hadoop's binary prefixes above bytes (`1.5
/// K`, `2 G`).
fn has_unit(s: &str) -> bool {
    let words: Vec<&str> = s.split_whitespace().collect();
    words
        .windows(2)
        .any(|w| w[0].parse::<f64>().is_ok() && ["K", "M", "G", "T", "P", "E"].contains(&w[1]))
}

fn hadoop(n: u64) -> String {
    nsimage_viewer::text::hadoop_size(i128::from(n))
}

#[test]
fn human_sizes_where_plain_output_has_byte_counts() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("x.nsi");
    generate(&img);
    let img = img.to_str().unwrap();
    let (file, length) = some_file(img);
    let human = hadoop(length);

    // ls: the length column.
    let plain = text(&["ls", img, &file]);
    assert!(plain.contains(&format!(" {length} ")), "{plain}");
    assert!(!has_unit(&plain), "{plain}");
    for flag in ["-h", "--human"] {
        let h = text(&["ls", flag, img, &file]);
        assert!(h.contains(&format!(" {human} ")), "{h}");
        assert!(!h.contains(&length.to_string()), "{h}");
    }
    assert!(has_unit(&text(&["ls", "-h", "-R", img, "/"])));

    // stat: the length and each block's.
    let plain = text(&["stat", img, &file]);
    assert!(plain.contains(&format!("  length: {length}\n")), "{plain}");
    let h = text(&["stat", "-h", img, &file]);
    assert!(h.contains(&format!("  length: {human}\n")), "{h}");
    assert!(
        h.lines()
            .any(|l| l.starts_with("    block ") && has_unit(l)),
        "{h}"
    );

    // du: bytes and space consumed; counts of files stay counts.
    let total = common::json(&nsimage(&["du", img, "-d", "0", "--json"]));
    let bytes = total["rows"][0]["bytes"].as_u64().unwrap();
    let files = total["rows"][0]["files"].as_u64().unwrap();
    let plain = text(&["du", img, "-d", "0"]);
    assert!(plain.contains(&bytes.to_string()) && !has_unit(&plain));
    let h = text(&["du", "-h", img, "-d", "0"]);
    assert!(h.contains(&hadoop(bytes)), "{h}");
    assert!(!h.contains(&bytes.to_string()), "{h}");
    assert!(h.contains(&format!(" {files} ")), "{h}");
    let by = text(&["du", "-h", img, "--by", "owner"]);
    assert!(has_unit(&by), "{by}");
    assert!(!has_unit(&text(&["du", img, "--by", "owner"])));

    // info: the file size as a summary beside the count; the section
    // lengths in units with -h.
    let image_bytes = std::fs::metadata(img).unwrap().len();
    let summary = format!(
        "{image_bytes} bytes ({})",
        nsimage_viewer::text::human_size(image_bytes)
    );
    let plain = text(&["info", img]);
    let first = plain.lines().next().unwrap();
    assert!(first.ends_with(&summary), "{first}");
    assert!(!plain.lines().skip(1).any(has_unit), "{plain}");
    // With -h the summary's readable form is in Hadoop's units too: one
    // output, one kind of unit.
    let h = text(&["info", "-h", img]);
    let h_summary = nsimage_viewer::text::bytes_summary(image_bytes, true);
    assert!(h.lines().next().unwrap().ends_with(&h_summary), "{h}");
    assert!(!h.contains("iB"), "{h}");
    assert!(
        h.lines().any(|l| l.starts_with("INODE ") && has_unit(l)),
        "{h}"
    );

    // distribution: the bytes per bucket.
    let d = common::json(&nsimage(&["distribution", img, "--json"]));
    let total = d["bytes"].as_u64().unwrap();
    let plain = text(&["distribution", img]);
    let first = plain.lines().next().unwrap();
    assert!(
        first.contains(&format!(
            "{total} bytes ({})",
            nsimage_viewer::text::human_size(total)
        )),
        "{first}"
    );
    let rows = |t: &str| t.lines().skip(2).map(str::to_string).collect::<Vec<_>>();
    let last_col = |l: &String| l.rsplit("  ").next().unwrap_or("").trim().to_string();
    assert!(
        rows(&plain)
            .iter()
            .all(|l| last_col(l).parse::<u64>().is_ok()),
        "{plain}"
    );
    let h = text(&["distribution", "-h", img]);
    assert!(rows(&h).iter().any(|l| has_unit(&last_col(l))), "{h}");
    // Bucket bounds and the summary in Hadoop's units as well.
    assert!(!h.contains("iB"), "{h}");
    assert!(
        h.contains(&nsimage_viewer::text::bytes_summary(total, true)),
        "{h}"
    );
}

#[test]
fn help_still_prints_usage() {
    for cmd in ["du", "ls", "stat", "info", "distribution"] {
        let long = text(&[cmd, "--help"]);
        assert!(long.contains(&format!("Usage: nsimage {cmd}")), "{long}");
        assert!(long.contains("-h, --human"), "{long}");
        assert_eq!(text(&["help", cmd]), long, "{cmd}");
    }
}

#[test]
fn json_is_the_same_with_and_without_human() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("x.nsi");
    generate(&img);
    let img = img.to_str().unwrap();
    let (file, _) = some_file(img);
    let cases: [Vec<&str>; 6] = [
        vec!["du", img, "--json"],
        vec!["du", img, "--by", "group", "--json"],
        vec!["ls", img, "/", "-R", "--json"],
        vec!["stat", img, &file, "--json"],
        vec!["info", img, "--json"],
        vec!["distribution", img, "--json"],
    ];
    for args in cases {
        let plain = text(&args);
        let mut with_h = args.clone();
        with_h.insert(1, "-h");
        assert_eq!(text(&with_h), plain, "{args:?}");
        assert!(!has_unit(&plain) || args[0] == "distribution", "{args:?}");
    }
}

/// `-h` never means help: on the commands that print sizes it is
/// `--human`, on every other command (and subcommand) an unknown argument
/// (exit 2) that names `--help`, which prints the usage everywhere.
#[test]
fn dash_h_is_never_help_and_double_dash_help_always_is() {
    let human = ["ls", "du", "stat", "info", "distribution"];
    let mut commands: Vec<Vec<&str>> = [
        "generate",
        "info",
        "load",
        "verify",
        "ls",
        "stat",
        "du",
        "find",
        "convert",
        "dump",
        "export",
        "distribution",
        "diff",
        "bench",
        "serve",
        "keygen",
    ]
    .iter()
    .map(|c| vec![*c])
    .collect();
    for sub in ["init", "apply", "checkpoint", "status", "recover"] {
        commands.push(vec!["store", sub]);
    }
    commands.push(vec!["store"]);
    commands.push(vec![]);
    for cmd in &commands {
        let mut help = cmd.clone();
        help.push("--help");
        let o = nsimage(&help);
        assert!(o.status.success(), "{help:?}");
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("Usage:"),
            "{help:?}"
        );
        if cmd.first().is_some_and(|c| human.contains(c)) {
            continue;
        }
        let mut h = cmd.clone();
        h.push("-h");
        let o = nsimage(&h);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{h:?}: {err}");
        assert!(
            !String::from_utf8_lossy(&o.stdout).contains("Usage:"),
            "{h:?}"
        );
        assert!(
            err.contains("'-h'") && err.contains("--help"),
            "{h:?}: {err}"
        );
    }
}

/// `count` prints `hdfs dfs -count`'s columns with `du`'s figures: the
/// directories (the path's own included), files and symlinks, bytes; `-q`
/// the quotas (`none`/`inf` where unset), `-v` Hadoop's header, `-h`
/// Hadoop's prefixes; one line per path, in the order given.
#[test]
fn count_is_hdfs_dfs_count_over_dus_figures() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("x.nsi");
    generate(&img);
    let img = img.to_str().unwrap();
    let du = |p: &str| -> serde_json::Value {
        let v: serde_json::Value =
            serde_json::from_str(&text(&["du", img, p, "-d", "0", "--json"])).unwrap();
        v["rows"][0].clone()
    };
    let top = text(&["ls", img, "/", "--json"]);
    let first: serde_json::Value = serde_json::from_str(top.lines().next().unwrap()).unwrap();
    let sub = first["path"].as_str().unwrap().to_string();
    let out = text(&["count", "-v", img, "/", &sub]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "   DIR_COUNT   FILE_COUNT       CONTENT_SIZE PATHNAME"
    );
    for (line, p) in lines[1..].iter().zip(["/", sub.as_str()]) {
        let r = du(p);
        let n = |k: &str| r[k].as_u64().unwrap();
        let want = format!(
            "{:>12} {:>12} {:>18} {p}",
            n("directories"),
            n("files") + n("symlinks"),
            n("bytes")
        );
        assert_eq!(*line, want, "{r}");
    }
    let q = text(&["count", "-q", img, "/"]);
    assert!(
        q.starts_with(&format!(
            "{:>12} {:>15} {:>15} {:>15} ",
            "none", "inf", "none", "inf"
        )),
        "{q}"
    );
    let h = text(&["count", "-h", img, "/"]);
    let r = du("/");
    let hs = |k: &str| nsimage_viewer::text::hadoop_size(i128::from(r[k].as_u64().unwrap()));
    let files = nsimage_viewer::text::hadoop_size(i128::from(
        r["files"].as_u64().unwrap() + r["symlinks"].as_u64().unwrap(),
    ));
    assert_eq!(
        h.trim_end(),
        format!(
            "{:>12} {:>12} {:>18} /",
            hs("directories"),
            files,
            hs("bytes")
        )
    );
    assert!(h.contains(" T ") || h.contains(" G "), "{h}");
}

/// `du --help` defines its columns, SMALL_FILES among them, and shows
/// examples.
#[test]
fn du_help_defines_its_columns() {
    let help = text(&["du", "--help"]);
    for word in [
        "SMALL_FILES, files shorter than their preferred block size",
        "Examples:",
    ] {
        assert!(help.contains(word), "{word}: {help}");
    }
}
