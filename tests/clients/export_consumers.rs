//! `nsimage export` read by real consumers: DuckDB (tests/python/
//! duckdb_check.py) counts the rows, sums the sizes, counts per type and
//! sums per owner, which must equal `load` and `du --by owner`; the Spark
//! example (examples/spark/namespace_report.py, Spark in local mode) prints
//! the top directories by bytes and the small files per owner, which must
//! equal `du --sort bytes` and `du --by owner`.

use crate::common;
use crate::hdfs_common;
use crate::python_env;

use common::{json, nsimage};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn generated(dir: &Path, inodes: &str) -> PathBuf {
    let img = dir.join("g.img");
    let out = nsimage(&["generate", "-o", s(&img), "--inodes", inodes, "--seed", "3"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    img
}

/// Exports `img` to `out` (a file, or a dataset when it ends in `/`).
fn export(img: &Path, out: &str, extra: &[&str]) -> Value {
    let mut args = vec!["export", s(img), "-o", out, "--json"];
    args.extend_from_slice(extra);
    json(&nsimage(&args))
}

/// DuckDB's view of the export of `img` at `out` against `load` and
/// `du --by owner` of the image; the number of owners.
fn duckdb_agrees(img: &Path, out: &str) -> usize {
    let loaded = json(&nsimage(&["load", s(img), "--json"]));
    let by_owner = json(&nsimage(&["du", s(img), "--by", "owner", "--json"]));
    let seen = python_env::run_json("tests/python/duckdb_check.py", &[out]);
    assert_eq!(seen["rows"], loaded["inodes"], "{seen}");
    assert_eq!(seen["size"], loaded["bytes"]);
    assert_eq!(seen["blocks"], loaded["blocks"]);
    assert_eq!(seen["ids_unique"], true);
    assert_eq!(seen["roots"], serde_json::json!(["/"]));
    for (kind, key) in [
        ("FILE", "files"),
        ("DIRECTORY", "directories"),
        ("SYMLINK", "symlinks"),
    ] {
        let n = seen["by_type"][kind].as_u64().unwrap_or(0);
        assert_eq!(n, loaded[key].as_u64().unwrap(), "{kind}");
    }
    // Typed columns, as DuckDB sees them.
    let types = &seen["types"];
    assert_eq!(types["id"], "UBIGINT");
    assert_eq!(types["size"], "UBIGINT");
    assert_eq!(types["replication"], "USMALLINT");
    assert_eq!(types["owner"], "VARCHAR");
    assert!(
        types["mtime"].as_str().unwrap().starts_with("TIMESTAMP"),
        "{types}"
    );
    // Per owner: DuckDB's GROUP BY equals du --by owner, row for row.
    let mut want: Vec<Value> = by_owner["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            serde_json::json!({
                "owner": r["name"],
                "inodes": r["inodes"],
                "files": r["files"],
                "bytes": r["bytes"],
                "space_consumed": r["space_consumed"],
                "small_files": r["small_files"],
            })
        })
        .collect();
    want.sort_by(|a, b| a["owner"].as_str().cmp(&b["owner"].as_str()));
    assert_eq!(seen["by_owner"].as_array().unwrap(), &want);
    want.len()
}

#[test]
fn duckdb_reads_a_dataset_and_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let img = generated(dir.path(), "30000");
    let ds = format!("{}/", dir.path().join("ds").display());
    let st = export(
        &img,
        &ds,
        &["--row-group-rows", "4096", "--row-groups-per-file", "2"],
    );
    assert!(st["files"].as_u64().unwrap() > 2, "{st}");
    assert!(duckdb_agrees(&img, &ds) > 1);
    let one = dir.path().join("one.parquet");
    export(&img, s(&one), &[]);
    duckdb_agrees(&img, s(&one));
}

#[test]
fn duckdb_reads_the_export_of_a_real_hadoop_image() {
    let dir = tempfile::tempdir().unwrap();
    let img = hdfs_common::data().join("hfsa/fsimage_d800_f210k_compressed.img");
    let out = dir.path().join("h.parquet");
    export(&img, s(&out), &[]);
    duckdb_agrees(&img, s(&out));
}

/// The rows of one of the example's tables: the lines after `title` and
/// its header, up to a blank line, split on whitespace.
fn table(stdout: &str, title: &str) -> Vec<Vec<String>> {
    let mut lines = stdout.lines().skip_while(|l| *l != title);
    assert!(lines.next().is_some(), "no {title:?} in:\n{stdout}");
    lines.next(); // the header
    lines
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

#[test]
fn the_spark_example_agrees_with_du() {
    let dir = tempfile::tempdir().unwrap();
    let img = generated(dir.path(), "20000");
    let ds = format!("{}/", dir.path().join("ds").display());
    export(&img, &ds, &["--row-group-rows", "8192"]);
    let out = python_env::run("examples/spark/namespace_report.py", &[&ds]);
    let stdout = String::from_utf8_lossy(&out.stdout);

    // Top 20 directories by bytes: du's directory rows, sorted by bytes.
    let top = table(&stdout, "Top 20 directories by bytes");
    let du = json(&nsimage(&[
        "du",
        s(&img),
        "--depth",
        "1000",
        "--sort",
        "bytes",
        "--json",
    ]));
    let want: Vec<Vec<String>> = du["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["type"] == "directory")
        .take(20)
        .map(|r| {
            vec![
                r["bytes"].to_string(),
                r["files"].to_string(),
                r["path"].as_str().unwrap().to_string(),
            ]
        })
        .collect();
    assert_eq!(want.len(), 20);
    assert_eq!(top, want, "{stdout}");

    // Small files per owner (owners of at least one file), most first.
    let small = table(
        &stdout,
        "Small files (shorter than their block size) per owner",
    );
    let by_owner = json(&nsimage(&["du", s(&img), "--by", "owner", "--json"]));
    let mut want: Vec<(u64, u64, String)> = by_owner["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["files"].as_u64().unwrap() > 0)
        .map(|r| {
            (
                r["small_files"].as_u64().unwrap(),
                r["files"].as_u64().unwrap(),
                r["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    want.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.2.cmp(&b.2)));
    let want: Vec<Vec<String>> = want
        .into_iter()
        .map(|(s, f, o)| vec![s.to_string(), f.to_string(), o])
        .collect();
    assert!(want.len() > 1);
    assert_eq!(small, want, "{stdout}");
}
