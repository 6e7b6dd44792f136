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
    for (i, img) in hdfs_common::shared_images().iter().enumerate() {
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
        // Straight from Hadoop to Hadoop: the input's own layout version
        // is kept (a NameNode of its release reads the output), or the
        // one asked for among those the writer knows.
        let layout = |p: &Path| json(&["info", s(p), "--json"])["layout_version"].as_i64();
        let own = layout(img);
        let same = dir.path().join(format!("{i}-same.hdfs"));
        let v = json(&["convert", s(img), s(&same), "--to", "hdfs", "--json"]);
        assert_eq!(v["layout_version"].as_i64(), own, "{}", img.display());
        assert_eq!(layout(&same), own, "{}", img.display());
        assert_eq!(digest(&same, "2"), want, "{} -> hdfs", img.display());
        let asked = dir.path().join(format!("{i}-64.hdfs"));
        ok(&[
            "convert",
            s(img),
            s(&asked),
            "--to",
            "hdfs",
            "--layout-version",
            "-64",
        ]);
        assert_eq!(layout(&asked), Some(-64), "{}", img.display());
        assert_eq!(digest(&asked, "2"), want, "{} -> hdfs -64", img.display());
    }
    // Layout versions the writer does not write, and one asked of an
    // nsimage output: usage errors, nothing written.
    let img = &hdfs_common::shared_images()[0];
    let bad = dir.path().join("bad.hdfs");
    for extra in [
        &["--to", "hdfs", "--layout-version", "-50"][..],
        &["--to", "hdfs", "--layout-version", "-68"][..],
        &["--to", "nsimage", "--layout-version", "-64"][..],
    ] {
        let mut args = vec!["convert", s(img), s(&bad)];
        args.extend_from_slice(extra);
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {o:?}");
        assert!(!bad.exists(), "{extra:?}");
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

/// A directory with more children than one INODE_DIR entry may list (the
/// writer's `dir_entry_children`; by default the 6,400,000 Hadoop allows,
/// here 97) is written as several entries of the same parent, all in one
/// sub-section (the reader's fast path takes a directory from one piece);
/// every read path joins them: the loads
/// on 1 and 2 threads give the namespace's digest, and the streamed
/// commands answer as for the nsimage image of the same namespace.
#[test]
fn a_directory_wider_than_an_entry_is_split_and_read_back_whole() {
    use nsimage_namespace::{FileSpec, Namespace, NsInfo, PermSpec};
    use nsimage_writer::hdfs::{write_hdfs_image, HdfsWriteOptions};
    let spec = FileSpec {
        replication: 3,
        preferred_block_size: 128 << 20,
        storage_policy: 0,
    };
    let perm = PermSpec {
        user: b"hdfs",
        group: b"supergroup",
        mode: 0o755,
    };
    let mut ns = Namespace::new(NsInfo::default());
    ns.mkdirs(b"/wide", &perm, 1).unwrap();
    ns.mkdirs(b"/after/x", &perm, 1).unwrap();
    for i in 0..1_000 {
        ns.create(format!("/wide/f{i:04}").as_bytes(), &perm, &spec, 2)
            .unwrap();
    }
    for i in 0..30 {
        ns.mkdirs(format!("/wide/d{i:02}/sub").as_bytes(), &perm, 3)
            .unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let hdfs = dir.path().join("fsimage_0000000000000000001");
    let opts = HdfsWriteOptions {
        dir_entry_children: 97,
        sub_sections: true,
        inode_threshold: 0,
        target_sections: 200,
        ..HdfsWriteOptions::default()
    };
    let w = write_hdfs_image(&ns, std::fs::File::create(&hdfs).unwrap(), &opts).unwrap();
    // The wide directory's entries: ceil(1,030 / 97) = 11 of them, in one
    // of the many INODE_DIR sub-sections.
    let bytes = std::fs::read(&hdfs).unwrap();
    let subs: Vec<_> = w
        .sections
        .iter()
        .filter(|s| s.name == "INODE_DIR_SUB")
        .collect();
    let wide = ns.resolve(b"/wide").unwrap();
    let mut pieces_with_wide = 0;
    let mut entries = 0;
    for s in &subs {
        let at = s.offset as usize..(s.offset + s.length) as usize;
        let mut here = 0;
        for m in hdfs_common::messages(&bytes[at]) {
            use prost::Message as _;
            let e = nsimage_format::hdfs_pb::i_node_directory_section::DirEntry::decode(&m[..])
                .unwrap();
            assert!(e.children.len() + e.ref_children.len() <= 97);
            if e.parent == Some(wide) {
                here += 1;
            }
        }
        entries += here;
        pieces_with_wide += usize::from(here > 0);
    }
    assert_eq!(entries, 11);
    assert!(subs.len() > 3, "{} sub-sections", subs.len());
    assert_eq!(
        pieces_with_wide, 1,
        "a directory's entries in two sub-sections"
    );
    // The same namespace written with one entry a directory (Hadoop's
    // form) loads to the same digest.
    let whole = dir.path().join("fsimage_0000000000000000002");
    let one = HdfsWriteOptions {
        sub_sections: true,
        inode_threshold: 0,
        ..HdfsWriteOptions::default()
    };
    write_hdfs_image(&ns, std::fs::File::create(&whole).unwrap(), &one).unwrap();
    let want = digest(&whole, "1");
    for t in ["1", "2"] {
        assert_eq!(digest(&hdfs, t), want, "{t} threads");
    }
    let nsi = dir.path().join("same.nsi");
    std::fs::write(
        &nsi,
        common::image(&ns, &nsimage_writer::WriteOptions::default()),
    )
    .unwrap();
    for args in [
        &["du", "/", "-d", "2"][..],
        &["find", "/", "--name", "f00*"][..],
        &["ls", "/wide"][..],
        &["distribution"][..],
    ] {
        // Each output with its image's name taken out.
        let with = |img: &Path| {
            let mut a = vec![args[0], s(img)];
            a.extend_from_slice(&args[1..]);
            String::from_utf8_lossy(&ok(&a)).replace(s(img), "IMAGE")
        };
        assert_eq!(with(&hdfs), with(&nsi), "{args:?}");
    }
}
