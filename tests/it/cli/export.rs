//! `nsimage export --format parquet`: the Parquet read back with the
//! parquet crate's own reader agrees with `load --json` (rows, bytes,
//! counts per type) and `dump --format jsonl` (every path, in id order);
//! 1 and 2 threads give the same bytes; a dataset directory holds the same
//! rows; an output that cannot be written leaves nothing behind.

use crate::common;

use crate::hdfs_common;

use common::{json, nsimage};
use parquet::basic::{LogicalType, TimeUnit, Type as PhysicalType};
use parquet::file::metadata::ParquetMetaData;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::{Field, Row};
use std::path::{Path, PathBuf};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The real Hadoop images (shared/data/hdfs, or the repository's copy).
fn hdfs_dir() -> PathBuf {
    hdfs_common::data()
}

fn reader(file: &Path) -> SerializedFileReader<std::fs::File> {
    SerializedFileReader::new(std::fs::File::open(file).unwrap()).unwrap()
}

fn metadata(file: &Path) -> ParquetMetaData {
    reader(file).metadata().clone()
}

/// Every row of `file`, all columns.
fn read(file: &Path) -> Vec<Row> {
    reader(file).into_iter().map(|r| r.unwrap()).collect()
}

/// The value of column `name` in `row`.
fn field<'a>(row: &'a Row, name: &str) -> &'a Field {
    row.get_column_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, f)| f)
        .unwrap_or_else(|| panic!("no column {name} in {row}"))
}

fn ulong(row: &Row, name: &str) -> u64 {
    match field(row, name) {
        Field::ULong(v) => *v,
        other => panic!("{name}: {other:?}"),
    }
}

fn string(row: &Row, name: &str) -> String {
    match field(row, name) {
        Field::Str(v) => v.clone(),
        other => panic!("{name}: {other:?}"),
    }
}

/// The rows of an export, the columns the checks need.
#[derive(Debug, Default, PartialEq)]
struct Rows {
    ids: Vec<u64>,
    paths: Vec<String>,
    sizes: Vec<u64>,
    kinds: Vec<String>,
}

fn rows(read: &[Row]) -> Rows {
    let mut r = Rows::default();
    for row in read {
        r.ids.push(ulong(row, "id"));
        r.paths.push(string(row, "path"));
        r.sizes.push(ulong(row, "size"));
        r.kinds.push(string(row, "type"));
    }
    r
}

fn export(img: &Path, out: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "export",
        s(img),
        "--format",
        "parquet",
        "-o",
        s(out),
        "--json",
    ];
    args.extend_from_slice(extra);
    json(&nsimage(&args))
}

/// Everything checked for one image.
fn check_image(img: &Path, dir: &Path, row_group_rows: &str) {
    let loaded = json(&nsimage(&["load", s(img), "--json"]));
    let one = dir.join("one.parquet");
    let two = dir.join("two.parquet");
    let st1 = export(
        img,
        &one,
        &["--threads", "1", "--row-group-rows", row_group_rows],
    );
    let st2 = export(
        img,
        &two,
        &["--threads", "2", "--row-group-rows", row_group_rows],
    );
    assert_eq!(st1["rows"], loaded["inodes"], "{st1}");
    assert_eq!(st1["files"], 1);
    assert_eq!(st2["rows"], st1["rows"]);
    let b1 = std::fs::read(&one).unwrap();
    let b2 = std::fs::read(&two).unwrap();
    assert!(b1 == b2, "1 and 2 threads wrote different bytes");
    let r = rows(&read(&one));
    assert_eq!(r.ids.len() as u64, loaded["inodes"].as_u64().unwrap());
    assert_eq!(
        r.sizes.iter().sum::<u64>(),
        loaded["bytes"].as_u64().unwrap()
    );
    for (kind, key) in [
        ("FILE", "files"),
        ("DIRECTORY", "directories"),
        ("SYMLINK", "symlinks"),
    ] {
        let n = r.kinds.iter().filter(|k| *k == kind).count() as u64;
        assert_eq!(n, loaded[key].as_u64().unwrap(), "{kind}");
    }
    // Every path, in id order, as the JSON-lines dump writes it.
    let dump = nsimage(&["dump", s(img), "--format", "jsonl"]);
    assert!(dump.status.success());
    let mut dumped = Vec::new();
    for line in dump.stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let v: serde_json::Value = serde_json::from_slice(line).unwrap();
        dumped.push((
            v["id"].as_u64().unwrap(),
            v["path"].as_str().unwrap().to_string(),
        ));
    }
    let ours: Vec<(u64, String)> = r.ids.iter().copied().zip(r.paths.iter().cloned()).collect();
    assert_eq!(ours, dumped);
    // The dataset form: the same rows in total, in part order.
    let ds = dir.join("ds/");
    let st = export(
        img,
        &ds,
        &["--threads", "2", "--row-group-rows", row_group_rows],
    );
    assert!(st["files"].as_u64().unwrap() >= 1);
    let mut parts = common::names(&ds);
    parts.retain(|n| n.starts_with("part-"));
    assert_eq!(
        parts.len() as u64,
        st["files"].as_u64().unwrap(),
        "{parts:?}"
    );
    let mut all = Vec::new();
    for p in &parts {
        all.extend(read(&ds.join(p)));
    }
    assert_eq!(rows(&all), r);
}

#[test]
fn generated_image_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("g.img");
    let out = nsimage(&["generate", "-o", s(&img), "--inodes", "50000"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check_image(&img, dir.path(), "4096");
    // Several row groups, so the parallel path was taken.
    let meta = metadata(&dir.path().join("one.parquet"));
    assert!(meta.num_row_groups() > 4, "{}", meta.num_row_groups());
}

#[test]
fn hadoop_image_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    check_image(&hdfs_dir().join("hfsa/fsi_small.img"), dir.path(), "2");
}

#[test]
fn typed_columns() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("g.img");
    assert!(nsimage(&["generate", "-o", s(&img), "--inodes", "2000"])
        .status
        .success());
    let out = dir.path().join("x.parquet");
    export(&img, &out, &[]);
    let meta = metadata(&out);
    let schema = meta.file_metadata().schema_descr();
    let column = |n: &str| {
        let i = schema
            .columns()
            .iter()
            .position(|c| c.name() == n)
            .unwrap_or_else(|| panic!("no column {n}"));
        (schema.column(i), i)
    };
    let (id, _) = column("id");
    assert_eq!(id.physical_type(), PhysicalType::INT64);
    assert_eq!(
        id.logical_type_ref(),
        Some(&LogicalType::Integer {
            bit_width: 64,
            is_signed: false
        })
    );
    let (mtime, _) = column("mtime");
    assert_eq!(mtime.physical_type(), PhysicalType::INT64);
    assert_eq!(
        mtime.logical_type_ref(),
        Some(&LogicalType::Timestamp {
            is_adjusted_to_u_t_c: true,
            unit: TimeUnit::MILLIS
        })
    );
    // The low-cardinality strings: STRING, dictionary-encoded.
    for n in ["owner", "type"] {
        let (c, i) = column(n);
        assert_eq!(c.physical_type(), PhysicalType::BYTE_ARRAY, "{n}");
        assert_eq!(c.logical_type_ref(), Some(&LogicalType::String), "{n}");
        let chunk = meta.row_group(0).column(i);
        assert!(
            chunk.dictionary_page_offset().is_some(),
            "{n}: no dictionary"
        );
    }
    // A column of distinct values is written plain.
    let (_, path) = column("path");
    assert!(meta
        .row_group(0)
        .column(path)
        .dictionary_page_offset()
        .is_none());
    let rows = read(&out);
    // The root: no parent, path "/", no atime (a directory).
    let root = &rows[0];
    assert_eq!(string(root, "path"), "/");
    assert_eq!(field(root, "parent_id"), &Field::Null);
    assert_eq!(field(root, "atime"), &Field::Null);
    let col = meta.row_group(0).column(0);
    assert!(
        matches!(col.compression(), parquet::basic::Compression::ZSTD(_)),
        "{:?}",
        col.compression()
    );
}

#[test]
fn unwritable_output_is_an_io_error_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("g.img");
    assert!(nsimage(&["generate", "-o", s(&img), "--inodes", "500"])
        .status
        .success());
    let out = dir.path().join("missing/x.parquet");
    let r = nsimage(&["export", s(&img), "--format", "parquet", "-o", s(&out)]);
    assert_eq!(r.status.code(), Some(2));
    assert!(!out.exists());
    let r = nsimage(&["export", s(&img), "--format", "csv", "-o", "x"]);
    assert_eq!(r.status.code(), Some(2));
    assert_eq!(common::names(dir.path()), vec!["g.img".to_string()]);
}
