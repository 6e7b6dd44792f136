//! Reading real Hadoop fsimage files (`../shared/data/hdfs`, see its
//! README): every file loads and verifies with the README's counts, the
//! digest is stable across loads and thread counts, the `.md5` sidecar is
//! checked, sub-sectioned copies (cut here from the real files, plain, zlib
//! and gzip) load in parallel to the same digest, `info` lists every
//! section, and damaged files exit 1, never panic.

use crate::common;
use crate::hdfs_common;

use common::{json, nsimage};
use flate2::write::{GzEncoder, ZlibEncoder};
use hdfs_common::{data, delimited, inflate, messages, summary_of, GZIP, ZLIB};
use nsimage_format::hdfs_pb::i_node_directory_section::DirEntry;
use nsimage_format::hdfs_pb::i_node_reference_section::INodeReference;
use nsimage_format::hdfs_pb::i_node_section::{
    i_node, AclFeatureProto, FileUnderConstructionFeature, INode, INodeDirectory, INodeFile,
    INodeSymlink, XAttrCompactProto, XAttrFeatureProto,
};
use nsimage_format::hdfs_pb::snapshot_diff_section::{diff_entry, DiffEntry, DirectoryDiff};
use nsimage_format::hdfs_pb::snapshot_section::Snapshot;
use nsimage_format::hdfs_pb::string_table_section::Entry as StringEntry;
use nsimage_format::hdfs_pb::{
    file_summary::Section, BlockProto, FileSummary, INodeSection, NameSystemSection,
    SnapshotSection, StringTableSection,
};
use prost::Message;
use std::io::Write;
use std::path::Path;

/// (file, inodes, files, directories, blocks), from the README's table.
const EXPECTED: &[(&str, u64, u64, u64, u64)] = &[
    ("hadoop252/fsimage_0000000000000000000", 1, 0, 1, 0),
    ("hadoop252/fsimage_0000000000000000003", 2, 0, 2, 0),
    ("zero_block_size/fsimage_0000000000000000004", 3, 1, 2, 0),
    ("upgrade26/fsimage_0000000000000000026", 5, 4, 1, 4),
    ("hfsa/fsimage_0000000000000000000", 1, 0, 1, 0),
    ("hfsa/fsi_small.img", 19, 11, 8, 12),
    ("hfsa/fsi_small_h2x.img", 30, 16, 14, 17),
    (
        "hfsa/fsimage_d800_f210k_compressed.img",
        210_367,
        209_560,
        807,
        0,
    ),
    ("exporter/fsimage_0001", 30, 16, 14, 17),
];

/// Every image under the data directory (not the README, not sidecars).
fn every_image() -> Vec<String> {
    let root = data();
    let mut out = Vec::new();
    for d in std::fs::read_dir(&root).expect("the shared HDFS data") {
        let d = d.unwrap().path();
        if !d.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&d).unwrap() {
            let f = f.unwrap().path();
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".md5") {
                continue;
            }
            let rel = f
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            out.push(rel);
        }
    }
    out.sort();
    out
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn load(path: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["load", "--json", s(path)];
    args.extend_from_slice(extra);
    json(&nsimage(&args))
}

fn code(out: &std::process::Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

#[test]
fn every_shared_file_loads_with_the_readme_counts() {
    let all = every_image();
    let mut listed: Vec<String> = EXPECTED.iter().map(|e| e.0.to_string()).collect();
    listed.sort();
    assert_eq!(
        all, listed,
        "every file in shared/data/hdfs has expected counts here"
    );
    for &(rel, inodes, files, dirs, blocks) in EXPECTED {
        let path = data().join(rel);
        let v = load(&path, &[]);
        assert_eq!(v["inodes"], inodes, "{rel}");
        assert_eq!(v["files"], files, "{rel}");
        assert_eq!(v["directories"], dirs, "{rel}");
        assert_eq!(v["blocks"], blocks, "{rel}");
        let digest = v["digest"].clone();
        assert_eq!(load(&path, &[])["digest"], digest, "{rel}: a second load");
        for t in ["1", "2"] {
            let v = load(&path, &["--threads", t, "--parallel-threshold", "0"]);
            assert_eq!(v["digest"], digest, "{rel}: {t} threads");
        }
        let md5 = Path::new(&format!("{}.md5", path.display())).exists();
        assert_eq!(
            v["md5_checked"], md5,
            "{rel}: the sidecar is checked when present"
        );
        let out = nsimage(&["verify", s(&path)]);
        assert_eq!(
            code(&out),
            0,
            "{rel}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let out = nsimage(&["verify", "--json", s(&path)]);
        assert_eq!(json(&out)["ok"], true, "{rel}");
    }
}

/// The `.md5` sidecar's rules, on every command that reads a Hadoop image:
/// a wrong digest is damage (exit 1); a sidecar naming another file (an
/// image copied under a new name with its sidecar) is reported as that,
/// not as damage (exit 2, naming both files and `--md5 ignore`); `--md5
/// ignore` reads the image without the sidecar, whatever it holds; a
/// missing sidecar is no check.
#[test]
fn the_md5_sidecar_rules() {
    let dir = tempfile::tempdir().unwrap();
    let text = |out: &std::process::Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    for rel in [
        "hadoop252/fsimage_0000000000000000003",
        "upgrade26/fsimage_0000000000000000026",
    ] {
        let src = data().join(rel);
        let name = src.file_name().unwrap().to_string_lossy().into_owned();
        let img = dir.path().join(&name);
        std::fs::copy(&src, &img).unwrap();
        let side = dir.path().join(format!("{name}.md5"));
        std::fs::copy(format!("{}.md5", src.display()), &side).unwrap();
        assert_eq!(load(&img, &[])["md5_checked"], true);
        let commands: &[&[&str]] = &[
            &["load"],
            &["verify"],
            &["ls", "-R"],
            &["dump", "--format", "delimited"],
            &["du", "-d", "1"],
            &["stat"],
        ];
        let args = |cmd: &[&str], extra: &[&str]| -> Vec<String> {
            let mut v: Vec<String> = cmd.iter().map(|c| c.to_string()).collect();
            v.insert(1, s(&img).to_string());
            if matches!(cmd[0], "ls" | "du" | "stat") {
                v.insert(2, "/".into());
            }
            v.extend(extra.iter().map(|e| e.to_string()));
            v
        };
        let run = |cmd: &[&str], extra: &[&str]| {
            let a = args(cmd, extra);
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            nsimage(&a)
        };
        // A wrong digest: damage.
        std::fs::write(&side, format!("{} *{name}\n", "0".repeat(32))).unwrap();
        for cmd in commands {
            let out = run(cmd, &[]);
            assert_eq!(code(&out), 1, "{cmd:?} {rel}: {}", text(&out));
            assert!(text(&out).contains("MD5"), "{}", text(&out));
            let out = run(cmd, &["--md5", "ignore"]);
            assert_eq!(code(&out), 0, "{cmd:?} --md5 ignore {rel}: {}", text(&out));
        }
        // A sidecar naming another file: said as that, the way past named.
        std::fs::write(&side, format!("{} *fsimage_copy\n", "0".repeat(32))).unwrap();
        for cmd in commands {
            let out = run(cmd, &[]);
            let t = text(&out);
            assert_eq!(code(&out), 2, "{cmd:?} {rel}: {t}");
            assert!(
                t.contains("names file \"fsimage_copy\"") || t.contains("names file fsimage_copy"),
                "{t}"
            );
            assert!(t.contains("--md5 ignore") && !t.contains("corrupt"), "{t}");
            assert_eq!(code(&run(cmd, &["--md5", "ignore"])), 0, "{cmd:?} {rel}");
        }
        // The server refuses to start on it the same way (it would serve
        // with --md5 ignore, so that is not run here).
        let out = nsimage(&["serve", s(&img), "--addr", "127.0.0.1:0"]);
        assert_eq!(code(&out), 2, "serve {rel}: {}", text(&out));
        assert!(text(&out).contains("names file"), "{}", text(&out));
        assert_eq!(
            load(&img, &["--md5", "ignore"])["md5_checked"],
            false,
            "{rel}"
        );
        // No sidecar: nothing to check.
        std::fs::remove_file(&side).unwrap();
        assert_eq!(load(&img, &[])["md5_checked"], false);
        // Not a policy: a usage error.
        assert_eq!(code(&run(&["load"], &["--md5", "maybe"])), 2);
    }
}

/// A file of another kind given as an image is named as what it is, not
/// called corrupt (exit 1, as any input that is not an image); an image
/// damaged at its first byte is still called corrupt.
#[test]
fn a_file_of_another_kind_is_not_called_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &[u8], &str)] = &[
        (
            "passwd",
            b"root:x:0:0:root:/root:/bin/bash\n",
            "a text file",
        ),
        (
            "data.parquet",
            b"PAR1\x15\x04\x15\x10\x15\x14L\x15\x02PAR1",
            "a Parquet file",
        ),
        (
            "dump.xml",
            b"<?xml version=\"1.0\"?>\n<fsimage><version></version></fsimage>\n",
            "an XML file",
        ),
    ];
    for (name, bytes, kind) in cases {
        let f = dir.path().join(name);
        std::fs::write(&f, bytes).unwrap();
        for cmd in [
            &["load"][..],
            &["verify"],
            &["info"],
            &["ls"],
            &["dump", "--format", "xml"],
        ] {
            let mut a: Vec<&str> = cmd.to_vec();
            a.push(s(&f));
            let out = nsimage(&a);
            let t = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(code(&out), 1, "{a:?}: {t}");
            assert!(t.contains("not an image") && t.contains(kind), "{a:?}: {t}");
            assert!(!t.contains("corrupt"), "{a:?}: {t}");
        }
        // verify --json says it as a report, on stdout.
        let out = nsimage(&["verify", s(&f), "--json"]);
        assert_eq!(code(&out), 1);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["ok"], false);
        let detail = v["problems"][0]["detail"].as_str().unwrap_or("");
        assert!(
            detail.contains("not an image") && detail.contains(kind),
            "{v}"
        );
    }
    let img = dir.path().join("img.nsi");
    std::fs::write(&img, common::image(&common::sample(), &Default::default())).unwrap();
    let mut b = std::fs::read(&img).unwrap();
    b[0] ^= 0xff;
    std::fs::write(&img, &b).unwrap();
    let out = nsimage(&["load", s(&img)]);
    let t = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(code(&out), 1, "{t}");
    assert!(t.contains("corrupt") && !t.contains("not an image"), "{t}");
}

// ---- cutting sub-sectioned copies, as Hadoop's saver does (HDFS-14617) ----

#[derive(Clone, Copy, PartialEq)]
enum Codec {
    None,
    Zlib,
    Gzip,
}

fn deflate(codec: Codec, plain: &[u8]) -> Vec<u8> {
    match codec {
        Codec::None => plain.to_vec(),
        Codec::Zlib => {
            let mut e = ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(plain).unwrap();
            e.finish().unwrap()
        }
        Codec::Gzip => {
            let mut e = GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(plain).unwrap();
            e.finish().unwrap()
        }
    }
}

/// Byte ranges of the delimited records of `plain`.
fn records(plain: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < plain.len() {
        let mut cur = &plain[pos..];
        let before = cur.len();
        let len = prost::encoding::decode_varint(&mut cur).unwrap() as usize;
        let end = pos + (before - cur.len()) + len;
        out.push((pos, end));
        pos = end;
    }
    out
}

fn sec(name: &str, offset: usize, length: usize) -> Section {
    Section {
        name: Some(name.into()),
        offset: Some(offset as u64),
        length: Some(length as u64),
    }
}

/// A copy of `bytes` with `codec`, INODE and INODE_DIR cut into
/// sub-sections of `per` records (the first INODE_SUB holding the header),
/// each its own stream, listed before their section; `extra` sections
/// (name, bytes) are added before the summary.
fn recut(bytes: &[u8], codec: Codec, per: usize, extra: &[(&str, &[u8])]) -> Vec<u8> {
    recut_with(bytes, codec, per, extra, &|_, plain| plain)
}

/// [`recut`] with each section's plain bytes passed through `edit` first.
fn recut_with(
    bytes: &[u8],
    codec: Codec,
    per: usize,
    extra: &[(&str, &[u8])],
    edit: &dyn Fn(&str, Vec<u8>) -> Vec<u8>,
) -> Vec<u8> {
    let mut fs = summary_of(bytes);
    let codec_in = fs.codec.clone();
    let mut list: Vec<Section> = fs
        .sections
        .iter()
        .filter(|s| !s.name().ends_with("_SUB"))
        .cloned()
        .collect();
    list.sort_by_key(|s| s.offset());
    let mut out = b"HDFSIMG1".to_vec();
    let mut sections = Vec::new();
    for s in &list {
        let raw = &bytes[s.offset() as usize..(s.offset() + s.length()) as usize];
        let plain = edit(s.name(), inflate(codec_in.as_deref(), raw));
        let start = out.len();
        if s.name() == "INODE" || s.name() == "INODE_DIR" {
            let recs = records(&plain);
            let skip = usize::from(s.name() == "INODE");
            let body = &recs[skip.min(recs.len())..];
            let mut cuts: Vec<(usize, usize)> = body
                .chunks(per)
                .map(|c| (c[0].0, c[c.len() - 1].1))
                .collect();
            if cuts.is_empty() {
                cuts.push((0, plain.len()));
            }
            // The first piece starts at the section's start (the header).
            cuts[0].0 = 0;
            let sub = format!("{}_SUB", s.name());
            for (a, b) in cuts {
                let enc = deflate(codec, &plain[a..b]);
                sections.push(sec(&sub, out.len(), enc.len()));
                out.extend_from_slice(&enc);
            }
        } else {
            out.extend_from_slice(&deflate(codec, &plain));
        }
        sections.push(sec(s.name(), start, out.len() - start));
    }
    for (name, b) in extra {
        let at = out.len();
        out.extend_from_slice(b);
        sections.push(sec(name, at, b.len()));
    }
    fs.sections = sections;
    fs.codec = match codec {
        Codec::None => None,
        Codec::Zlib => Some(ZLIB.into()),
        Codec::Gzip => Some(GZIP.into()),
    };
    let d = fs.encode_length_delimited_to_vec();
    out.extend_from_slice(&d);
    out.extend_from_slice(&(d.len() as u32).to_be_bytes());
    out
}

#[test]
fn sub_sectioned_copies_load_in_parallel_to_the_same_digest() {
    let dir = tempfile::tempdir().unwrap();
    let big = data().join("hfsa/fsimage_d800_f210k_compressed.img");
    let want = load(&big, &[])["digest"].clone();
    let bytes = std::fs::read(&big).unwrap();
    for (codec, name) in [
        (Codec::None, "plain"),
        (Codec::Zlib, "zlib"),
        (Codec::Gzip, "gzip"),
    ] {
        let path = dir.path().join(format!("fsimage_{name}"));
        std::fs::write(&path, recut(&bytes, codec, 20_000, &[])).unwrap();
        let info = json(&nsimage(&["info", "--json", s(&path)]));
        let subs = info["sections"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["name"] == "INODE_SUB")
            .count();
        assert_eq!(subs, 11, "{name}");
        assert_eq!(
            info["inodes"], 210_367,
            "{name}: the header read from a piece's start"
        );
        let one = load(&path, &["--threads", "1"]);
        let two = load(&path, &["--threads", "2"]);
        assert_eq!(one["digest"], want, "{name}");
        assert_eq!(two["digest"], want, "{name}");
        assert_eq!(one["mode"], "serial");
        assert_eq!(
            two["mode"], "parallel",
            "{name}: sub-sections above the threshold"
        );
        assert_eq!(two["inodes"], 210_367);
        // Below the threshold: serial.
        let v = load(
            &path,
            &["--threads", "2", "--parallel-threshold", "1000000"],
        );
        assert_eq!(v["mode"], "serial");
        assert_eq!(v["digest"], want);
        assert_eq!(code(&nsimage(&["verify", s(&path)])), 0, "{name}");
    }
    // Small images cut in many pieces, forced parallel.
    for rel in [
        "hfsa/fsi_small_h2x.img",
        "exporter/fsimage_0001",
        "hfsa/fsi_small.img",
    ] {
        let src = data().join(rel);
        let want = load(&src, &[])["digest"].clone();
        let path = dir.path().join("small");
        std::fs::write(
            &path,
            recut(&std::fs::read(&src).unwrap(), Codec::Zlib, 3, &[]),
        )
        .unwrap();
        for t in ["1", "2"] {
            let v = load(&path, &["--threads", t, "--parallel-threshold", "0"]);
            assert_eq!(v["digest"], want, "{rel} {t}");
        }
    }
}

#[test]
fn info_lists_every_section_and_unknown_ones_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let src = data().join("hfsa/fsi_small.img");
    let want = load(&src, &[])["digest"].clone();
    let v = json(&nsimage(&["info", "--json", s(&src)]));
    assert_eq!(v["format"], "hdfs");
    assert_eq!(v["layout_version"], -63);
    assert_eq!(v["codec"], "none");
    let names: Vec<&str> = v["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    for n in [
        "NS_INFO",
        "INODE",
        "INODE_DIR",
        "SNAPSHOT",
        "SNAPSHOT_DIFF",
        "SECRET_MANAGER",
        "CACHE_MANAGER",
        "STRING_TABLE",
    ] {
        assert!(names.contains(&n), "{n} in {names:?}");
    }
    assert_eq!(v["snapshots"]["diffs"]["entries"], 1);
    assert_eq!(v["inodes"], 19);
    let text = nsimage(&["info", s(&src)]);
    assert_eq!(code(&text), 0);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("layout version -63") && text.contains("SECRET_MANAGER"),
        "{text}"
    );

    let path = dir.path().join("fsimage_unknown");
    std::fs::write(
        &path,
        recut(
            &std::fs::read(&src).unwrap(),
            Codec::None,
            1000,
            &[("NEW_FANCY_SECTION", b"\x01\x02\x03")],
        ),
    )
    .unwrap();
    let v = json(&nsimage(&["info", "--json", s(&path)]));
    let fancy = v["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "NEW_FANCY_SECTION")
        .expect("the unknown section is listed")
        .clone();
    assert_eq!(fancy["known"], false);
    assert_eq!(fancy["length"], 3);
    assert_eq!(load(&path, &[])["digest"], want);
}

fn with_summary(bytes: &[u8], f: impl FnOnce(&mut FileSummary)) -> Vec<u8> {
    let mut fs = summary_of(bytes);
    let n = bytes.len();
    let len = u32::from_be_bytes(bytes[n - 4..].try_into().unwrap()) as usize;
    let mut out = bytes[..n - 4 - len].to_vec();
    f(&mut fs);
    let d = fs.encode_length_delimited_to_vec();
    out.extend_from_slice(&d);
    out.extend_from_slice(&(d.len() as u32).to_be_bytes());
    out
}

#[test]
fn unsupported_versions_and_codecs_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(data().join("hfsa/fsi_small.img")).unwrap();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            with_summary(&bytes, |s| s.layout_version = (-56i32) as u32),
            "-56",
        ),
        (
            with_summary(&bytes, |s| s.layout_version = (-99i32) as u32),
            "-99",
        ),
        (
            with_summary(&bytes, |s| {
                s.codec = Some("org.apache.hadoop.io.compress.SnappyCodec".into())
            }),
            "SnappyCodec",
        ),
        (
            with_summary(&bytes, |s| s.sections[1].length = Some(u64::MAX - 3)),
            "INODE",
        ),
        (
            with_summary(&bytes, |s| s.sections.retain(|x| x.name() != "INODE")),
            "INODE",
        ),
    ];
    for (i, (b, word)) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("case{i}"));
        std::fs::write(&path, b).unwrap();
        for cmd in ["load", "verify", "info"] {
            let out = nsimage(&[cmd, s(&path)]);
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            if cmd == "info" && i == 4 {
                continue; // info reads no inodes
            }
            assert_eq!(code(&out), 1, "case {i} {cmd}: {text}");
            assert!(text.contains(word), "case {i} {cmd}: {text}");
        }
    }
}

/// Exit 0 or 1, never a panic (101) or a signal, for every truncation and
/// for flipped bytes across the file.
fn hostile(path: &Path, bytes: &[u8], step: usize) {
    let check = |b: &[u8], what: &str| {
        std::fs::write(path, b).unwrap();
        for args in [
            &["load"][..],
            &["verify"],
            &["load", "--threads", "2", "--parallel-threshold", "0"],
            &["info"],
        ] {
            let cmd = args[0];
            let mut a = args.to_vec();
            a.push(s(path));
            let out = nsimage(&a);
            let c = code(&out);
            assert!(
                c == 0 || c == 1,
                "{what}: {cmd} exit {c}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            if c == 1 && cmd == "load" {
                let err = String::from_utf8_lossy(&out.stderr);
                assert!(
                    err.contains("offset")
                        || err.contains("MD5")
                        || err.contains("version")
                        || err.contains("codec"),
                    "{what}: {err}"
                );
            }
        }
    };
    for cut in (0..bytes.len()).step_by(step) {
        check(&bytes[..cut], &format!("cut at {cut}"));
    }
    for (i, at) in (0..bytes.len()).step_by(step).enumerate() {
        let mut b = bytes.to_vec();
        b[at] ^= [0xff, 0x80, 0x01, 0x7f][i % 4];
        check(&b, &format!("flip at {at}"));
    }
}

#[test]
fn truncated_and_flipped_files_exit_1_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fsimage_hostile");
    let small = std::fs::read(data().join("hfsa/fsi_small_h2x.img")).unwrap();
    hostile(&path, &small, 5);
    let zlib = recut(&small, Codec::Zlib, 4, &[]);
    hostile(&path, &zlib, 11);
    let gzip = recut(&small, Codec::Gzip, 5, &[]);
    hostile(&path, &gzip, 13);
    // The large compressed file: a few cuts and flips inside its streams.
    let big = std::fs::read(data().join("hfsa/fsimage_d800_f210k_compressed.img")).unwrap();
    hostile(&path, &big, big.len() / 9);
}

/// Records in reverse order (INODE after its header; INODE_DIR entries
/// and each entry's children), as a Hadoop inode map may list them.
fn reversed(name: &str, plain: Vec<u8>) -> Vec<u8> {
    let mut ms = messages(&plain);
    match name {
        "INODE" => {
            ms[1..].reverse();
            let mut out = Vec::new();
            for m in ms {
                prost::encoding::encode_varint(m.len() as u64, &mut out);
                out.extend(m);
            }
            out
        }
        "INODE_DIR" => {
            let mut es: Vec<DirEntry> = ms
                .iter()
                .map(|m| DirEntry::decode(&m[..]).unwrap())
                .collect();
            es.reverse();
            for e in &mut es {
                e.children.reverse();
            }
            delimited(&es)
        }
        _ => plain,
    }
}

#[test]
fn records_out_of_hadoop_order_are_sorted() {
    let dir = tempfile::tempdir().unwrap();
    for rel in [
        "hfsa/fsi_small_h2x.img",
        "hfsa/fsimage_d800_f210k_compressed.img",
    ] {
        let src = data().join(rel);
        let want = load(&src, &[])["digest"].clone();
        let bytes = std::fs::read(&src).unwrap();
        for per in [1_000_000, 7, 50_000] {
            let path = dir.path().join("shuffled");
            std::fs::write(&path, recut_with(&bytes, Codec::None, per, &[], &reversed)).unwrap();
            for t in ["1", "2"] {
                let v = load(&path, &["--threads", t, "--parallel-threshold", "0"]);
                assert_eq!(v["digest"], want, "{rel} per {per} threads {t}");
            }
        }
    }
}

/// The first directory entry's first child moved to a reference
/// (INODE_REFERENCE entry 0): the current tree is unchanged.
fn referenced(name: &str, plain: Vec<u8>, moved: &std::cell::Cell<u64>) -> Vec<u8> {
    match name {
        "INODE_DIR" => {
            let mut es: Vec<DirEntry> = messages(&plain)
                .iter()
                .map(|m| DirEntry::decode(&m[..]).unwrap())
                .collect();
            let e = es.iter_mut().find(|e| !e.children.is_empty()).unwrap();
            moved.set(e.children.remove(0));
            e.ref_children.push(0);
            delimited(&es)
        }
        _ => plain,
    }
}

fn snapshot_section(root: u64, name: &str) -> Vec<u8> {
    let mut out = SnapshotSection {
        snapshot_counter: Some(1),
        snapshottable_dir: vec![root],
        num_snapshots: Some(1),
    }
    .encode_length_delimited_to_vec();
    out.extend(
        Snapshot {
            snapshot_id: Some(0),
            root: Some(INode {
                r#type: i_node::Type::Directory as i32,
                id: root,
                name: Some(name.as_bytes().to_vec()),
                directory: Some(INodeDirectory::default()),
                ..INode::default()
            }),
        }
        .encode_length_delimited_to_vec(),
    );
    out
}

#[test]
fn references_and_snapshot_only_inodes_keep_the_current_tree() {
    let dir = tempfile::tempdir().unwrap();
    let src = data().join("hfsa/fsi_small_h2x.img");
    let orig = load(&src, &[]);
    let bytes = std::fs::read(&src).unwrap();

    // A child reached through INODE_REFERENCE.
    let moved = std::cell::Cell::new(0);
    let edited = recut_with(&bytes, Codec::None, 1000, &[], &|n, p| {
        let p = referenced(n, p, &moved);
        if n == "INODE_REFERENCE" {
            INodeReference {
                referred_id: Some(moved.get()),
                ..INodeReference::default()
            }
            .encode_length_delimited_to_vec()
        } else {
            p
        }
    });
    let path = dir.path().join("fsimage_ref");
    std::fs::write(&path, &edited).unwrap();
    assert_eq!(load(&path, &[])["digest"], orig["digest"]);
    assert_eq!(
        json(&nsimage(&["info", "--json", s(&path)]))["references"],
        1
    );

    // An inode only a snapshot sees: left out of the current tree.
    let ghost = |n: &str, plain: Vec<u8>, snap: bool| -> Vec<u8> {
        match n {
            "INODE" => {
                let ms = messages(&plain);
                let mut h = INodeSection::decode(&ms[0][..]).unwrap();
                let used: Vec<u64> = ms[1..]
                    .iter()
                    .map(|m| INode::decode(&m[..]).unwrap().id)
                    .collect();
                let id = h.last_inode_id() + 1;
                assert!(!used.contains(&id));
                h.last_inode_id = Some(id);
                h.num_inodes = Some(h.num_inodes() + 1);
                let file: INode = ms[1..]
                    .iter()
                    .map(|m| INode::decode(&m[..]).unwrap())
                    .find(|i| i.file.is_some())
                    .unwrap();
                let g = INode {
                    id,
                    name: Some(b"ghost".to_vec()),
                    file: Some(INodeFile {
                        blocks: vec![],
                        ..file.file.unwrap()
                    }),
                    ..file
                };
                let mut out = h.encode_length_delimited_to_vec();
                for m in &ms[1..] {
                    prost::encoding::encode_varint(m.len() as u64, &mut out);
                    out.extend_from_slice(m);
                }
                out.extend(g.encode_length_delimited_to_vec());
                out
            }
            "SNAPSHOT" if snap => snapshot_section(16385, "s0"),
            _ => plain,
        }
    };
    // The snapshot reaches it: a diff of the root for snapshot 0 lists it
    // deleted (issue 24, defect 4: an inode no snapshot reaches is corrupt).
    let ghost_id = nsimage_loader::load(&src, &nsimage_loader::LoadOptions::default())
        .unwrap()
        .hdfs
        .unwrap()
        .inode_header
        .unwrap()
        .0
        + 1;
    let mut diff = DiffEntry {
        r#type: diff_entry::Type::Directorydiff as i32,
        inode_id: Some(16385),
        num_of_diff: Some(1),
    }
    .encode_length_delimited_to_vec();
    diff.extend(
        DirectoryDiff {
            snapshot_id: Some(0),
            deleted_inode: vec![ghost_id],
            ..DirectoryDiff::default()
        }
        .encode_length_delimited_to_vec(),
    );
    let path = dir.path().join("fsimage_ghost");
    std::fs::write(
        &path,
        recut_with(
            &bytes,
            Codec::None,
            1000,
            &[("SNAPSHOT_DIFF", &diff)],
            &|n, p| ghost(n, p, true),
        ),
    )
    .unwrap();
    let v = load(&path, &[]);
    for k in ["inodes", "files", "directories", "blocks"] {
        assert_eq!(v[k], orig[k], "{k}");
    }
    assert_eq!(code(&nsimage(&["verify", s(&path)])), 0);
    let loaded = nsimage_loader::load(&path, &nsimage_loader::LoadOptions::default()).unwrap();
    let h = loaded.hdfs.expect("the Hadoop side structure");
    assert_eq!(h.snapshots.snapshot_only_inodes, 1);
    assert_eq!(h.snapshots.snapshot_only[0].name(), b"ghost");
    assert_eq!(h.snapshots.records.len(), 1);
    assert_eq!(h.snapshots.snapshots[0].name, b"s0");
    assert_eq!(h.layout_version, -63);
    let info = json(&nsimage(&["info", "--json", s(&path)]));
    assert_eq!(info["snapshots"]["snapshots"][0]["name"], "s0");
    assert_eq!(info["snapshots"]["snapshottable_dirs"][0], 16385);
    // stat of the snapshottable directory lists its snapshots.
    let st = json(&nsimage(&["stat", "--json", s(&path), "/"]));
    assert_eq!(st["snapshottable"], true);
    assert_eq!(st["snapshots"][0]["name"], "s0");
    let st = String::from_utf8(nsimage(&["stat", s(&path), "/"]).stdout).unwrap();
    assert!(st.contains("snapshottable: yes, 1 snapshots"), "{st}");
    // convert carries the snapshots (tests/it/hdfs/snapshots.rs has the
    // details), and with --drop-snapshots writes the current tree, saying
    // what it dropped.
    let out_img = dir.path().join("converted.hdfs");
    let o = nsimage(&["convert", s(&path), s(&out_img), "--to", "hdfs"]);
    assert_eq!(code(&o), 0);
    let carried = json(&nsimage(&["info", "--json", s(&out_img)]));
    assert_eq!(carried["snapshots"]["snapshots"][0]["name"], "s0");
    assert_eq!(load(&out_img, &[])["digest"], v["digest"]);
    std::fs::remove_file(&out_img).unwrap();
    let o = nsimage(&[
        "convert",
        s(&path),
        s(&out_img),
        "--to",
        "hdfs",
        "--drop-snapshots",
    ]);
    assert_eq!(code(&o), 0);
    assert!(String::from_utf8_lossy(&o.stderr).contains("dropped 1 snapshots"));
    assert_eq!(load(&out_img, &[])["digest"], v["digest"]);
    // Without snapshots the same inode is in no directory: corrupt.
    std::fs::write(
        &path,
        recut_with(&bytes, Codec::None, 1000, &[], &|n, p| ghost(n, p, false)),
    )
    .unwrap();
    let out = nsimage(&["load", s(&path)]);
    assert_eq!(code(&out), 1);
    assert!(String::from_utf8_lossy(&out.stderr).contains("in no directory"));
}

#[test]
fn striped_files_count_block_groups() {
    let dir = tempfile::tempdir().unwrap();
    let src = data().join("hfsa/fsi_small_h2x.img");
    let orig = load(&src, &[]);
    let bytes = std::fs::read(&src).unwrap();
    let group = |k: u64| (i64::MIN as u64) + 16 * k;
    let old = std::cell::Cell::new((0u64, 0u64));
    let edit = |n: &str, plain: Vec<u8>, raise: bool| -> Vec<u8> {
        match n {
            "INODE" => {
                let ms = messages(&plain);
                let mut out = Vec::new();
                prost::encoding::encode_varint(ms[0].len() as u64, &mut out);
                out.extend_from_slice(&ms[0]);
                let mut done = false;
                for m in &ms[1..] {
                    let mut i = INode::decode(&m[..]).unwrap();
                    if let Some(f) = i.file.as_mut().filter(|f| !f.blocks.is_empty() && !done) {
                        done = true;
                        let gs = f.blocks[0].gen_stamp;
                        old.set((
                            f.blocks.len() as u64,
                            f.blocks.iter().map(|b| b.num_bytes()).sum(),
                        ));
                        f.blocks = vec![
                            BlockProto {
                                block_id: group(1),
                                gen_stamp: gs,
                                num_bytes: Some(1000),
                            },
                            BlockProto {
                                block_id: group(2),
                                gen_stamp: gs,
                                num_bytes: Some(500),
                            },
                        ];
                        f.replication = None;
                        f.block_type = Some(1);
                        f.erasure_coding_policy_id = Some(1);
                    }
                    out.extend(i.encode_length_delimited_to_vec());
                }
                out
            }
            "NS_INFO" if raise => {
                let mut ns = NameSystemSection::decode_length_delimited(&plain[..]).unwrap();
                ns.last_allocated_striped_block_id = Some(group(2));
                ns.encode_length_delimited_to_vec()
            }
            _ => plain,
        }
    };
    let path = dir.path().join("fsimage_striped");
    std::fs::write(
        &path,
        recut_with(&bytes, Codec::None, 1000, &[], &|n, p| edit(n, p, true)),
    )
    .unwrap();
    let v = load(&path, &[]);
    let (blocks, size) = old.get();
    assert_eq!(v["files"], orig["files"]);
    assert_eq!(
        v["blocks"].as_u64().unwrap(),
        orig["blocks"].as_u64().unwrap() - blocks + 2
    );
    assert_eq!(
        v["bytes"].as_u64().unwrap(),
        orig["bytes"].as_u64().unwrap() - size + 1500
    );
    assert_eq!(code(&nsimage(&["verify", s(&path)])), 0);
    // Block groups past lastAllocatedStripedBlockId are corrupt.
    std::fs::write(
        &path,
        recut_with(&bytes, Codec::None, 1000, &[], &|n, p| edit(n, p, false)),
    )
    .unwrap();
    assert_eq!(code(&nsimage(&["load", s(&path)])), 1);
}

/// ACL entries, xattrs (a raw one needing the namespace extension bit),
/// an under-construction file, a symlink and a name whose Hadoop order
/// (signed bytes) is not ours, all read through `dump --format jsonl`.
#[test]
fn acls_xattrs_leases_symlinks_and_high_byte_names() {
    use nsimage_format::hdfs::{AclBits, XAttrBits};
    let dir = tempfile::tempdir().unwrap();
    let src = data().join("hfsa/fsi_small_h2x.img");
    let orig = load(&src, &[]);
    let bytes = std::fs::read(&src).unwrap();
    let ids = std::cell::Cell::new(0u32);
    let picked = std::cell::RefCell::new(Vec::<u64>::new());
    let edit = |n: &str, plain: Vec<u8>| -> Vec<u8> {
        match n {
            "STRING_TABLE" => {
                let ms = messages(&plain);
                let mut h = StringTableSection::decode(&ms[0][..]).unwrap();
                assert_eq!(h.mask_bits(), 0);
                let es: Vec<StringEntry> = ms[1..]
                    .iter()
                    .map(|m| StringEntry::decode(&m[..]).unwrap())
                    .collect();
                let max = es.iter().map(|e| e.id()).max().unwrap();
                ids.set(max);
                h.num_entry = Some(h.num_entry() + 3);
                let mut out = h.encode_length_delimited_to_vec();
                out.extend(delimited(&es));
                for (i, w) in ["alice", "staff", "color"].iter().enumerate() {
                    out.extend(
                        StringEntry {
                            id: Some(max + 1 + i as u32),
                            str: Some(w.to_string()),
                        }
                        .encode_length_delimited_to_vec(),
                    );
                }
                out
            }
            "INODE" => {
                let base = ids.get();
                let ms = messages(&plain);
                let mut out = Vec::new();
                prost::encoding::encode_varint(ms[0].len() as u64, &mut out);
                out.extend_from_slice(&ms[0]);
                let mut files = 0;
                for m in &ms[1..] {
                    let mut i = INode::decode(&m[..]).unwrap();
                    if let Some(f) = i.file.as_mut() {
                        files += 1;
                        match files {
                            1 => {
                                picked.borrow_mut().push(i.id);
                                let acl = [
                                    AclBits {
                                        perm: 6,
                                        kind: 0,
                                        default_scope: false,
                                        name: base + 1,
                                    },
                                    AclBits {
                                        perm: 4,
                                        kind: 1,
                                        default_scope: false,
                                        name: base + 2,
                                    },
                                    AclBits {
                                        perm: 7,
                                        kind: 2,
                                        default_scope: false,
                                        name: 0,
                                    },
                                ];
                                f.acl = Some(AclFeatureProto {
                                    entries: acl.iter().map(|a| a.pack()).collect(),
                                });
                                f.x_attrs = Some(XAttrFeatureProto {
                                    x_attrs: vec![
                                        XAttrCompactProto {
                                            name: XAttrBits {
                                                ns: 0,
                                                name: base + 3,
                                            }
                                            .pack(),
                                            value: Some(b"blue".to_vec()),
                                        },
                                        XAttrCompactProto {
                                            name: XAttrBits {
                                                ns: 4,
                                                name: base + 3,
                                            }
                                            .pack(),
                                            value: None,
                                        },
                                    ],
                                });
                                f.file_uc = Some(FileUnderConstructionFeature {
                                    client_name: Some("DFSClient_7".into()),
                                    client_machine: Some("10.0.0.7".into()),
                                });
                                i.name = Some("\u{e9}t\u{e9}".as_bytes().to_vec());
                            }
                            _ if picked.borrow().len() == 1 => {
                                picked.borrow_mut().push(i.id);
                                let pm = f.permission;
                                i.file = None;
                                i.r#type = i_node::Type::Symlink as i32;
                                i.symlink = Some(INodeSymlink {
                                    permission: pm,
                                    target: Some(b"/somewhere/else".to_vec()),
                                    modification_time: Some(7),
                                    access_time: Some(8),
                                });
                            }
                            _ => {}
                        }
                    }
                    out.extend(i.encode_length_delimited_to_vec());
                }
                out
            }
            _ => plain,
        }
    };
    let path = dir.path().join("fsimage_features");
    // STRING_TABLE comes last: a first pass learns its largest id.
    recut_with(&bytes, Codec::None, 1000, &[], &edit);
    picked.borrow_mut().clear();
    std::fs::write(&path, recut_with(&bytes, Codec::None, 1000, &[], &edit)).unwrap();
    let picked = picked.borrow().clone();
    let v = load(&path, &[]);
    assert_eq!(v["inodes"], orig["inodes"]);
    assert_eq!(code(&nsimage(&["verify", s(&path)])), 0);
    let out = nsimage(&["dump", "--format", "jsonl", s(&path)]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<serde_json::Value> = out
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    let find = |id: u64| lines.iter().find(|l| l["id"] == id).unwrap().clone();
    let f = find(picked[0]);
    assert_eq!(f["name"], "\u{e9}t\u{e9}");
    let acl: Vec<&str> = f["acl"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["text"].as_str().unwrap())
        .collect();
    assert_eq!(acl, ["user:alice:rw-", "group:staff:r--", "mask::rwx"]);
    let xs = f["xattrs"].as_array().unwrap();
    assert_eq!(xs.len(), 2, "{f}");
    assert!(
        xs.iter()
            .any(|x| x["namespace"] == "user" && x["name"] == "color" && x["value"] == "blue"),
        "{f}"
    );
    assert!(
        xs.iter()
            .any(|x| x["namespace"] == "raw" && x["name"] == "color"),
        "{f}"
    );
    assert_eq!(f["under_construction"]["client_name"], "DFSClient_7");
    assert_eq!(picked.len(), 2, "a file became a symlink");
    let l = find(picked[1]);
    assert_eq!(l["type"], "symlink");
    assert_eq!(l["symlink_target"], "/somewhere/else");
    assert_eq!(v["symlinks"], 1);
}

/// A directory's children split over several entries (and sub-sections),
/// which Hadoop's loader accepts, load to the same tree.
#[test]
fn a_directory_split_over_entries_loads_whole() {
    let dir = tempfile::tempdir().unwrap();
    let src = data().join("hfsa/fsimage_d800_f210k_compressed.img");
    let want = load(&src, &[])["digest"].clone();
    let split = |n: &str, plain: Vec<u8>| -> Vec<u8> {
        if n != "INODE_DIR" {
            return plain;
        }
        let mut out = Vec::new();
        for m in messages(&plain) {
            let e = DirEntry::decode(&m[..]).unwrap();
            for c in e.children.chunks(97) {
                let part = DirEntry {
                    parent: e.parent,
                    children: c.to_vec(),
                    ref_children: vec![],
                };
                out.extend(part.encode_length_delimited_to_vec());
            }
        }
        out
    };
    let path = dir.path().join("fsimage_split");
    std::fs::write(
        &path,
        recut_with(
            &std::fs::read(&src).unwrap(),
            Codec::None,
            1000,
            &[],
            &split,
        ),
    )
    .unwrap();
    for t in ["1", "2"] {
        let v = load(&path, &["--threads", t, "--parallel-threshold", "0"]);
        assert_eq!(v["digest"], want, "{t} threads");
    }
}

/// The repository's copy of the real Hadoop images (`tests/data/hdfs`,
/// what a clean clone tests) holds exactly the files of
/// `shared/data/hdfs`, byte for byte, when that directory is there.
#[test]
fn vendored_copy_is_the_shared_data() {
    fn files(dir: &Path, base: &Path, out: &mut Vec<(std::path::PathBuf, Vec<u8>)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                files(&p, base, out);
            } else {
                out.push((
                    p.strip_prefix(base).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                ));
            }
        }
    }
    let v = hdfs_common::vendored();
    let mut ours = Vec::new();
    files(&v, &v, &mut ours);
    ours.sort();
    assert!(ours.len() >= 14, "{} files in {}", ours.len(), v.display());
    if let Some(shared) = hdfs_common::shared() {
        let mut theirs = Vec::new();
        files(&shared, &shared, &mut theirs);
        theirs.sort();
        let names =
            |f: &[(std::path::PathBuf, Vec<u8>)]| f.iter().map(|x| x.0.clone()).collect::<Vec<_>>();
        assert_eq!(names(&ours), names(&theirs));
        assert!(
            ours == theirs,
            "tests/data/hdfs differs from shared/data/hdfs"
        );
    }
}
