//! `nsimage convert` both ways: the namespace survives every round trip
//! (same digest), for every real Hadoop image in shared/data/hdfs and for
//! generated namespaces, with and without sub-sections and codecs; the
//! Hadoop output follows the NameNode's conventions (file name, `.md5`).

use crate::common;
use crate::hdfs_common;

use md5::{Digest as _, Md5};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nsimage"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("running nsimage")
}

fn ok(args: &[&str]) -> Vec<u8> {
    let o = run(args);
    assert!(
        o.status.success(),
        "nsimage {}: exit {:?}\n{}",
        args.join(" "),
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn json(args: &[&str]) -> serde_json::Value {
    serde_json::from_slice(&ok(args)).unwrap()
}

/// The digest a load reports.
fn digest(img: &Path, threads: &str) -> String {
    let v = json(&["load", s(img), "--json", "--threads", threads]);
    v["digest"].as_str().unwrap().to_string()
}

/// Every image file under shared/data/hdfs (not the sidecars or README).
fn shared_images() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for d in std::fs::read_dir(hdfs_common::data()).unwrap() {
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

/// Checks the `.md5` sidecar beside `img`: the MD5 of the file, and its
/// own name.
fn check_sidecar(img: &Path) {
    let name = img.file_name().unwrap().to_str().unwrap();
    let side = std::fs::read_to_string(img.with_file_name(format!("{name}.md5"))).unwrap();
    let md5 = Md5::digest(std::fs::read(img).unwrap());
    let hex: String = md5.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(side, format!("{hex} *{name}\n"));
}

#[test]
fn every_shared_image_round_trips_through_nsimage_and_back() {
    let dir = tempfile::tempdir().unwrap();
    for (i, img) in shared_images().iter().enumerate() {
        let want = digest(img, "1");
        let nsi = dir.path().join(format!("{i}.nsi"));
        ok(&["convert", s(img), s(&nsi), "--to", "nsimage"]);
        assert_eq!(digest(&nsi, "1"), want, "{} -> nsimage", img.display());
        for (k, extra) in [
            &[][..],
            &["--sub-sections"][..],
            &["--codec", "zlib"][..],
            &[
                "--sub-sections",
                "--codec",
                "gzip",
                "--target-sections",
                "3",
            ][..],
        ]
        .iter()
        .enumerate()
        {
            let back = dir.path().join(format!("{i}-{k}.hdfs"));
            let mut args = vec!["convert", s(&nsi), s(&back), "--to", "hdfs"];
            args.extend_from_slice(extra);
            ok(&args);
            check_sidecar(&back);
            assert_eq!(
                digest(&back, "2"),
                want,
                "{} -> nsimage -> hdfs {extra:?}",
                img.display()
            );
            ok(&["verify", s(&back)]);
        }
    }
}

#[test]
fn generated_namespaces_round_trip_through_hdfs() {
    let dir = tempfile::tempdir().unwrap();
    for (n, seed) in [(2_000u64, 7u64), (200_000, 1), (1_000_000, 3)] {
        let nsi = dir.path().join(format!("g{n}.nsi"));
        let g = json(&[
            "generate",
            "-o",
            s(&nsi),
            "--inodes",
            &n.to_string(),
            "--seed",
            &seed.to_string(),
            "--json",
        ]);
        let want = g["digest"].as_str().unwrap().to_string();
        // Plain, then sub-sectioned and zlib (the largest only: the
        // parallel path at a size where it runs).
        let variants: &[&[&str]] = if n == 1_000_000 {
            &[&["--sub-sections", "--codec", "zlib"]]
        } else {
            &[&[], &["--sub-sections"], &["--codec", "gzip"]]
        };
        for (k, extra) in variants.iter().enumerate() {
            let hdfs = dir.path().join(format!("g{n}-{k}.hdfs"));
            let mut args = vec!["convert", s(&nsi), s(&hdfs), "--to", "hdfs"];
            args.extend_from_slice(extra);
            ok(&args);
            for t in ["1", "2"] {
                assert_eq!(digest(&hdfs, t), want, "{n} inodes {extra:?}, {t} threads");
            }
            let again = dir.path().join(format!("g{n}-{k}.nsi"));
            ok(&["convert", s(&hdfs), s(&again), "--to", "nsimage"]);
            assert_eq!(digest(&again, "2"), want, "{n} inodes back {extra:?}");
            std::fs::remove_file(&hdfs).unwrap();
            std::fs::remove_file(&again).unwrap();
        }
        std::fs::remove_file(&nsi).unwrap();
    }
}

#[test]
fn the_namenode_conventions_and_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let nsi = dir.path().join("s.nsi");
    std::fs::write(&nsi, common::image(&common::sample(), &Default::default())).unwrap();
    // A directory gets fsimage_<txid in 19 digits> and its sidecar.
    let out = dir.path().join("current");
    std::fs::create_dir(&out).unwrap();
    let v = json(&["convert", s(&nsi), s(&out), "--to", "hdfs", "--json"]);
    let written = PathBuf::from(v["output"].as_str().unwrap());
    let name = written.file_name().unwrap().to_str().unwrap().to_string();
    assert!(name.starts_with("fsimage_") && name.len() == "fsimage_".len() + 19);
    assert!(name["fsimage_".len()..].bytes().all(|b| b.is_ascii_digit()));
    check_sidecar(&written);
    assert_eq!(v["md5"].as_str().unwrap().len(), 32);
    // The Hadoop image starts with its magic and holds the sections a
    // NameNode writes, STRING_TABLE last.
    let bytes = std::fs::read(&written).unwrap();
    assert_eq!(&bytes[..8], b"HDFSIMG1");
    let names: Vec<&str> = v["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.first(), Some(&"NS_INFO"));
    assert_eq!(names.last(), Some(&"STRING_TABLE"));
    // A stale sidecar is replaced, never left beside a new image.
    std::fs::write(written.with_file_name(format!("{name}.md5")), "0 *x\n").unwrap();
    ok(&[
        "convert",
        s(&nsi),
        s(&written),
        "--to",
        "hdfs",
        "--codec",
        "zlib",
    ]);
    check_sidecar(&written);
    // Options of the Hadoop output only, asked for an nsimage output: a
    // usage error (exit 2), nothing written.
    let bad = dir.path().join("bad.nsi");
    let o = run(&[
        "convert",
        s(&nsi),
        s(&bad),
        "--to",
        "nsimage",
        "--codec",
        "zlib",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!bad.exists());
    // A corrupt input: exit 1, nothing written.
    let mut b = std::fs::read(&nsi).unwrap();
    let mid = b.len() / 2;
    b[mid] ^= 0xff;
    let broken = dir.path().join("broken.nsi");
    std::fs::write(&broken, &b).unwrap();
    let o = run(&["convert", s(&broken), s(&bad), "--to", "hdfs"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!bad.exists());
}
