//! The sub-section layout is a function of the namespace alone
//! (FORMAT.md, "Sub-sections"): the same namespace gives the same sections
//! and sub-sections whatever history produced it (string ids included: the
//! string table is canonical), and the rule's numbers
//! (no cut below 10,000 live inodes, at least 64 pieces unless the 64 KiB
//! floor binds) hold.

use crate::common;

use common::{image, F, P};
use nsimage_format::{Index, SectionKind};
use nsimage_loader::ImageSource;
use nsimage_namespace::Namespace;
use nsimage_testkit::generate::{generate, GenSpec};
use nsimage_writer::{sub_section_target, WriteOptions};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn nsimage(args: &[&str]) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_nsimage"))
        .args(args)
        .output()
        .expect("run nsimage");
    assert!(
        out.status.success(),
        "nsimage {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn info(image: &Path) -> Value {
    serde_json::from_slice(&nsimage(&["info", "--json", image.to_str().unwrap()])).unwrap()
}

fn section<'v>(info: &'v Value, kind: &str) -> &'v Value {
    info["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} section"))
}

/// The sections that must not depend on history, as `info --json` lists
/// them.
fn check_same_sections(ia: &Value, ib: &Value, what: &str) {
    for kind in ["STRING_TABLE", "INODE", "INODE_DIR"] {
        assert_eq!(section(ia, kind), section(ib, kind), "{kind}, {what}");
    }
    // NS_INFO holds the creation time of each store: its length alone must
    // agree, so that nothing after it shifts.
    assert_eq!(
        section(ia, "NS_INFO")["length"],
        section(ib, "NS_INFO")["length"],
        "{what}"
    );
}

/// 72,000 ops reached by three histories: one `store apply` process without
/// checkpoints, one process checkpointing every 3,000 ops, and 24 processes
/// of 3,000 ops each, each reopening the store from its newest image (so the
/// namespace in memory has allocated ids and interned strings only for what
/// was alive then). Each ends with `store checkpoint`. The namespace at txid
/// 72,000 has about 20,000 live inodes, so INODE (about 1.1 MB) and
/// INODE_DIR (about 80 KB, above the 64 KiB floor) are both cut; all three
/// images must have the same STRING_TABLE, INODE and INODE_DIR, sub-sections
/// included (offsets, lengths, records, first keys, checksums).
#[test]
fn same_namespace_same_layout_whatever_the_history() {
    const OPS: u64 = 72_000;
    const EVERY: u64 = 3_000;
    let dir = tempfile::tempdir().unwrap();
    let stores: Vec<PathBuf> = ["one_go", "checkpoints", "reopens"]
        .iter()
        .map(|n| dir.path().join(n))
        .collect();
    let paths: Vec<&str> = stores.iter().map(|s| s.to_str().unwrap()).collect();
    for s in &paths {
        nsimage(&["store", "init", s]);
    }
    let ops = OPS.to_string();
    let every = EVERY.to_string();
    nsimage(&["store", "apply", paths[0], "--ops", &ops]);
    nsimage(&[
        "store",
        "apply",
        paths[1],
        "--ops",
        &ops,
        "--checkpoint-every",
        &every,
    ]);
    for _ in 0..OPS / EVERY {
        nsimage(&[
            "store",
            "apply",
            paths[2],
            "--ops",
            &every,
            "--checkpoint-every",
            &every,
        ]);
    }
    for s in &paths {
        nsimage(&["store", "checkpoint", s]);
    }

    let images: Vec<PathBuf> = stores.iter().map(|s| common::newest_image(s)).collect();
    let infos: Vec<Value> = images.iter().map(|i| info(i)).collect();
    let name = format!("image_{OPS:020}");
    for (img, what) in images.iter().zip(["one go", "checkpoints", "reopens"]) {
        assert_eq!(img.file_name().unwrap(), name.as_str(), "{what}");
    }
    let live = section(&infos[0], "INODE")["records"].as_u64().unwrap();
    assert!(
        live >= 10_000,
        "{live} live inodes: the sections are not cut"
    );
    for kind in ["INODE", "INODE_DIR"] {
        let n = section(&infos[0], kind)["sub_sections"]
            .as_array()
            .unwrap()
            .len();
        assert!(n >= 2, "{kind}: {n} sub-sections");
    }
    check_same_sections(&infos[0], &infos[1], "one go vs checkpoints");
    check_same_sections(&infos[0], &infos[2], "one go vs reopens");
}

fn index(bytes: &[u8]) -> Index {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.nsi");
    std::fs::write(&p, bytes).unwrap();
    ImageSource::open(&p).unwrap().index
}

/// Every sub-section is at most the target long unless it holds one record,
/// and the sub-sections tile the section.
fn check_cut(idx: &Index, kind: SectionKind, max: u64) -> usize {
    let sec = idx.section(kind).unwrap();
    let target = sub_section_target(sec.length, max);
    let mut at = sec.offset;
    for u in &sec.sub_sections {
        assert_eq!(u.offset, at);
        assert!(
            u.length <= target || u.records == 1,
            "{kind} {u:?} > {target}"
        );
        at += u.length;
    }
    if !sec.sub_sections.is_empty() {
        assert_eq!(at, sec.offset + sec.length);
    }
    sec.sub_sections.len()
}

/// A namespace of 12,002 allocated inode ids of which 9,002 are alive is
/// written without sub-sections; with 10,000 alive, it is cut.
#[test]
fn live_inodes_not_allocated_ids_decide_the_cut() {
    let mut ns = Namespace::default();
    let d = ns.mkdirs(b"/d", &P, 1).unwrap();
    for i in 0..12_000u32 {
        ns.create_in(d, format!("f{i:05}").as_bytes(), &P, &F, 2)
            .unwrap();
    }
    for i in 0..3_000u32 {
        ns.delete(format!("/d/f{i:05}").as_bytes(), false, 3)
            .unwrap();
    }
    assert_eq!(ns.stats().inodes, 9_002);
    let idx = index(&image(&ns, &WriteOptions::default()));
    for kind in [SectionKind::INODE, SectionKind::INODE_DIR] {
        assert!(idx.section(kind).unwrap().sub_sections.is_empty(), "{kind}");
    }

    for i in 0..998u32 {
        ns.create_in(d, format!("g{i:05}").as_bytes(), &P, &F, 4)
            .unwrap();
    }
    assert_eq!(ns.stats().inodes, 10_000);
    let idx = index(&image(&ns, &WriteOptions::default()));
    // About 30 bytes a record: 300 KB, cut at the 64 KiB floor.
    assert!(check_cut(&idx, SectionKind::INODE, 2 << 20) >= 4);
}

/// A 300,000-inode namespace: INODE (about 23 MB) gets at least 64
/// sub-sections of at most a 64th of its bytes each (the old writer, which
/// planned from 80 bytes per id, made 60); INODE_DIR follows the same rule.
#[test]
fn a_large_section_gets_at_least_64_sub_sections() {
    let ns = generate(GenSpec {
        inodes: 300_000,
        seed: 3,
    });
    let opts = WriteOptions::default();
    let idx = index(&image(&ns, &opts));
    let inode = idx.section(SectionKind::INODE).unwrap();
    assert!(inode.length / 64 > 64 << 10, "the floor does not bind");
    assert!(check_cut(&idx, SectionKind::INODE, opts.sub_section_bytes) >= 64);
    let dirs = idx.section(SectionKind::INODE_DIR).unwrap();
    let n = check_cut(&idx, SectionKind::INODE_DIR, opts.sub_section_bytes);
    if dirs.length / 64 >= 64 << 10 {
        assert!(n >= 64);
    } else {
        assert!(n as u64 >= dirs.length / (64 << 10), "{n}");
    }
}

#[test]
fn target_rule() {
    let max = 2 << 20;
    assert_eq!(sub_section_target(0, max), 64 << 10);
    assert_eq!(sub_section_target(64 * 100_000, max), 100_000);
    assert_eq!(sub_section_target(64 * 100_000 + 63, max), 100_000);
    assert_eq!(sub_section_target(1 << 40, max), max);
    // An explicitly smaller maximum lowers the floor too.
    assert_eq!(sub_section_target(1 << 30, 100), 100);
    assert_eq!(sub_section_target(1 << 30, 0), 1);
}

/// Directories and files per directory of [`route`]'s namespace: 25,501
/// live inodes, so INODE (about 1 MB) and INODE_DIR (about 80 KB: 25,000
/// child ids of 3 bytes) are both cut with the default options.
const DIRS: u32 = 500;
const FILES: u32 = 50;

/// One namespace reached by two routes that intern strings differently.
/// Route A creates the directories as (etl, supergroup), the files as
/// (hive, g) and then gives every file to hdfs, which leaves "hive"
/// interned but used by no inode; it sets xattr "x.b" before "x.a" and the
/// ACLs last. Route B creates the directories as (hdfs, g), sets the ACLs
/// first, creates the files as (hdfs, g) directly, sets "x.a" before "x.b"
/// and gives the directories to (etl, supergroup) at the end.
fn route(a: bool) -> Namespace {
    use nsimage_namespace::{FileSpec, PermSpec, XAttrNs};
    let perm = |user: &'static [u8], group: &'static [u8], mode| PermSpec { user, group, mode };
    let spec = FileSpec {
        replication: 3,
        preferred_block_size: 128 << 20,
        storage_policy: 0,
    };
    let acl: [(&[u8], u8, bool, u8); 3] = [
        (b"", 0, false, 7),
        (b"bob", 0, false, 5),
        (b"ops", 1, false, 5),
    ];
    let mut ns = Namespace::default();
    let dir_owner = if a {
        perm(b"etl", b"supergroup", 0o755)
    } else {
        perm(b"hdfs", b"g", 0o755)
    };
    let dirs: Vec<u64> = (0..DIRS)
        .map(|d| {
            ns.mkdirs(format!("/d{d:03}").as_bytes(), &dir_owner, 1)
                .unwrap()
        })
        .collect();
    if !a {
        for &d in dirs.iter().step_by(7) {
            ns.set_acl(d, &acl).unwrap();
        }
    }
    let file_owner = if a {
        perm(b"hive", b"g", 0o644)
    } else {
        perm(b"hdfs", b"g", 0o644)
    };
    let mut files = Vec::new();
    for &d in &dirs {
        for f in 0..FILES {
            files.push(
                ns.create_in(d, format!("f{f:02}").as_bytes(), &file_owner, &spec, 2)
                    .unwrap(),
            );
        }
    }
    let xattrs: [&[u8]; 2] = if a {
        [b"x.b", b"x.a"]
    } else {
        [b"x.a", b"x.b"]
    };
    for &f in files.iter().step_by(11) {
        for name in xattrs {
            ns.set_xattr(f, XAttrNs::User, name, &name[2..]).unwrap();
        }
    }
    if a {
        for &f in &files {
            ns.set_owner(f, Some(b"hdfs"), None).unwrap();
        }
        for &d in dirs.iter().step_by(7) {
            ns.set_acl(d, &acl).unwrap();
        }
    } else {
        for &d in &dirs {
            ns.set_owner(d, Some(b"etl"), Some(b"supergroup")).unwrap();
        }
    }
    ns
}

/// The same namespace reached by two routes (different string ids, a dead
/// string on one side, xattr names interned in different orders) gives the
/// same image byte for byte with the default options: the same
/// STRING_TABLE (only the strings in use, sorted by bytes), INODE and
/// INODE_DIR, sub-sections included. The writer once wrote the string table
/// in interning order, dead strings included, and INODE records with the
/// in-memory ids.
#[test]
fn same_namespace_by_other_routes_same_sections() {
    let (na, nb) = (route(true), route(false));
    assert_eq!(na.digest(), nb.digest(), "one namespace");
    assert_ne!(
        na.strings().lookup(b"hdfs"),
        nb.strings().lookup(b"hdfs"),
        "the routes intern differently"
    );
    assert!(na.strings().lookup(b"hive").is_some());
    assert_eq!(na.stats().inodes, 1 + u64::from(DIRS * (FILES + 1)));

    let opts = WriteOptions::default();
    let (ia, ib) = (image(&na, &opts), image(&nb, &opts));
    let (xa, xb) = (index(&ia), index(&ib));
    for kind in [
        SectionKind::STRING_TABLE,
        SectionKind::INODE,
        SectionKind::INODE_DIR,
    ] {
        let (sa, sb) = (xa.section(kind).unwrap(), xb.section(kind).unwrap());
        if kind != SectionKind::STRING_TABLE {
            assert!(sa.sub_sections.len() >= 2, "{kind} is cut: {sa:?}");
        }
        assert_eq!(sa, sb, "{kind}");
    }
    assert_eq!(ia, ib, "the whole image");

    // The table holds the strings in use, sorted by bytes.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.nsi");
    std::fs::write(&p, &ia).unwrap();
    let back = nsimage_loader::load(&p, &Default::default())
        .unwrap()
        .namespace;
    assert_eq!(back.digest(), na.digest());
    let strings: Vec<&[u8]> = back.strings().iter().collect();
    let used: Vec<&[u8]> = vec![
        b"bob",
        b"etl",
        b"g",
        b"hdfs",
        b"ops",
        b"supergroup",
        b"x.a",
        b"x.b",
    ];
    assert_eq!(strings, used);
}
