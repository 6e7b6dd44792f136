//! Helpers shared by the tests that take Hadoop fsimages apart
//! (`hdfs_read.rs`, `hdfs_snapshots.rs`): where the real images are, the
//! summary at the tail, a section's codec, and delimited records.
#![allow(dead_code)]

use flate2::read::{GzDecoder, ZlibDecoder};
use nsimage_format::hdfs_pb::FileSummary;
use prost::Message;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Hadoop's class names of the two codecs nsimage reads.
pub const ZLIB: &str = "org.apache.hadoop.io.compress.DefaultCodec";
pub const GZIP: &str = "org.apache.hadoop.io.compress.GzipCodec";

/// The real Hadoop images: `shared/data/hdfs` beside the repository (or
/// above a git worktree) when there is one, else the copy of the same
/// files the repository keeps in `tests/data/hdfs` (so a clean clone tests
/// them too; `vendored_copy_is_the_shared_data` checks that they agree).
pub fn data() -> PathBuf {
    shared().unwrap_or_else(vendored)
}

/// `shared/data/hdfs` above the package root, if present.
pub fn shared() -> Option<PathBuf> {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .skip(1)
        .map(|a| a.join("shared/data/hdfs"))
        .find(|p| p.join("README.md").is_file())
}

/// Every image file under [`data`] (one folder down; not the `.md5`
/// sidecars or the README), sorted: at least the nine the README lists.
pub fn shared_images() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for d in std::fs::read_dir(data()).unwrap() {
        let d = d.unwrap().path();
        if !d.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&d).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_none_or(|e| e != "md5") {
                out.push(f);
            }
        }
    }
    out.sort();
    assert!(out.len() >= 9, "{out:?}");
    out
}

/// The repository's copy, `tests/data/hdfs`.
pub fn vendored() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hdfs")
}

pub fn summary_of(bytes: &[u8]) -> FileSummary {
    let n = bytes.len();
    let len = u32::from_be_bytes(bytes[n - 4..].try_into().unwrap()) as usize;
    let mut d = &bytes[n - 4 - len..n - 4];
    FileSummary::decode_length_delimited(&mut d).unwrap()
}

pub fn inflate(codec: Option<&str>, raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match codec {
        None => out.extend_from_slice(raw),
        Some(ZLIB) => {
            ZlibDecoder::new(raw).read_to_end(&mut out).unwrap();
        }
        Some(GZIP) => {
            GzDecoder::new(raw).read_to_end(&mut out).unwrap();
        }
        Some(c) => panic!("codec {c}"),
    }
    out
}

pub fn delimited<M: Message>(ms: &[M]) -> Vec<u8> {
    let mut out = Vec::new();
    for m in ms {
        out.extend(m.encode_length_delimited_to_vec());
    }
    out
}

/// The delimited messages of `plain`, as byte vectors.
pub fn messages(plain: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut cur = plain;
    while !cur.is_empty() {
        let len = prost::encoding::decode_varint(&mut cur).unwrap() as usize;
        out.push(cur[..len].to_vec());
        cur = &cur[len..];
    }
    out
}

/// Every command that reads a Hadoop image whole or streamed, with its
/// arguments for `image` (outputs, if any, written under `out_dir`):
/// `load` on 1 and 2 threads, `verify`, and the streamed viewer commands
/// (which load an image with snapshots whole).
pub fn read_commands(image: &Path, out_dir: &Path) -> Vec<Vec<String>> {
    let p = image.to_str().unwrap().to_string();
    let out = |name: &str| out_dir.join(name).to_str().unwrap().to_string();
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    vec![
        v(&["load", &p, "--threads", "1"]),
        v(&["load", &p, "--threads", "2", "--parallel-threshold", "0"]),
        v(&["verify", &p]),
        v(&["dump", &p, "--format", "delimited", "-o", &out("dump.tsv")]),
        v(&["dump", &p, "--format", "jsonl", "-o", &out("dump.jsonl")]),
        v(&["du", &p, "/"]),
        v(&["find", &p, "/"]),
        v(&["distribution", &p]),
        v(&["export", &p, "--output", &out("export.parquet")]),
    ]
}

/// Runs every command of [`read_commands`] on `image` and asserts each
/// refuses it as corrupt (exit 1) with an error that holds every one of
/// `want` (the section, the id, ...).
pub fn every_command_refuses(image: &Path, want: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    for args in read_commands(image, dir.path()) {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_nsimage"))
            .args(&args)
            .output()
            .expect("running nsimage");
        // `verify` reports on stdout, the others on stderr.
        let err = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        for w in want {
            assert!(err.contains(w), "{args:?}: no {w:?} in: {err}");
        }
    }
}
