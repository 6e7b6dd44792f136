//! The sub-section layout is a function of the namespace alone
//! (FORMAT.md, "Sub-sections"): the same namespace gives the same sections
//! and sub-sections whatever history produced it, and the rule's numbers
//! (no cut below 10,000 live inodes, at least 64 pieces unless the 64 KiB
//! floor binds) hold.

mod common;

use common::{image, F, P};
use nsimage::format::model::Namespace;
use nsimage::format::{Index, SectionKind};
use nsimage::generate::{generate, GenSpec};
use nsimage::loader::ImageSource;
use nsimage::writer::{sub_section_target, WriteOptions};
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

/// The newest image of a store.
fn newest_image(store: &Path) -> PathBuf {
    let mut images: Vec<_> = std::fs::read_dir(store)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("image_") && !n.contains(".tmp"))
        })
        .collect();
    images.sort();
    images.pop().expect("the store holds an image")
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

/// 30,000 ops reached in one `store apply` process, and in ten processes of
/// 3,000 ops each with a checkpoint after each (each reopen loads the
/// newest image, so the namespace in memory has allocated ids only for the
/// inodes alive then). The namespace at txid 30,000 has about 6,800 live
/// inodes and, in the single process, more than 10,000 allocated ids:
/// before the layout depended on the namespace alone, one image had six
/// INODE sub-sections and the other none.
#[test]
fn same_namespace_same_layout_whatever_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one");
    let many = dir.path().join("many");
    for s in [&one, &many] {
        nsimage(&["store", "init", s.to_str().unwrap()]);
    }
    let one_s = one.to_str().unwrap();
    nsimage(&["store", "apply", one_s, "--ops", "30000"]);
    nsimage(&["store", "checkpoint", one_s]);
    let many_s = many.to_str().unwrap();
    for _ in 0..10 {
        nsimage(&[
            "store",
            "apply",
            many_s,
            "--ops",
            "3000",
            "--checkpoint-every",
            "3000",
        ]);
    }
    nsimage(&["store", "checkpoint", many_s]);

    let (a, b) = (newest_image(&one), newest_image(&many));
    assert_eq!(a.file_name(), b.file_name(), "both at the same txid");
    let (ia, ib) = (info(&a), info(&b));
    for kind in ["INODE", "INODE_DIR"] {
        assert_eq!(section(&ia, kind), section(&ib, kind), "{kind}");
    }
    // Everything before INODE has the same length, so nothing shifts.
    for kind in ["NS_INFO", "STRING_TABLE"] {
        assert_eq!(section(&ia, kind)["length"], section(&ib, kind)["length"]);
    }
    let live = section(&ia, "INODE")["records"].as_u64().unwrap();
    assert!((1_000..10_000).contains(&live), "{live} live inodes");
    assert!(section(&ia, "INODE")["sub_sections"]
        .as_array()
        .unwrap()
        .is_empty());
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
