//! One-path lookups through NAME_RUNS (and the NAME_INDEX of images written
//! before it): the same inodes as a full load, a small part of the image
//! read, the bad paths refused, corrupt pieces on the way reported with
//! their place, and images without the section still answered (by a full
//! load).

use crate::common;

use nsimage_format::{Index, Location, SectionKind};
use nsimage_loader::{LoadError, LoadOptions};
use nsimage_namespace::{Inode, Namespace};
use nsimage_testkit::generate::{generate, GenSpec};
use nsimage_viewer::lookup::{load_path, PathOptions, PathView};
use nsimage_viewer::paths::ImagePath;
use nsimage_viewer::ViewError;
use nsimage_writer::WriteOptions;
use std::path::{Path, PathBuf};

fn write(dir: &Path, name: &str, ns: &Namespace, opts: &WriteOptions) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, common::image(ns, opts)).unwrap();
    p
}

/// The lookup index's kind in an image written with `legacy`.
fn names_kind(legacy: bool) -> SectionKind {
    if legacy {
        SectionKind::NAME_INDEX
    } else {
        SectionKind::NAME_RUNS
    }
}

/// 20k inodes, small sub-sections: many pieces.
fn setup() -> (tempfile::TempDir, PathBuf, Namespace) {
    setup_with(false)
}

/// As [`setup`], the lookup index NAME_INDEX (as images written before
/// NAME_RUNS have it) when `legacy`.
fn setup_with(legacy: bool) -> (tempfile::TempDir, PathBuf, Namespace) {
    let dir = tempfile::tempdir().unwrap();
    let ns = generate(GenSpec {
        inodes: 20_000,
        seed: 9,
    });
    let opts = WriteOptions {
        sub_section_bytes: 8 << 10,
        legacy_name_index: legacy,
        ..WriteOptions::default()
    };
    let img = write(dir.path(), "a.nsi", &ns, &opts);
    let full = nsimage_loader::load(&img, &LoadOptions::default())
        .unwrap()
        .namespace;
    (dir, img, full)
}

fn lookup(img: &Path, path: &str, children: bool) -> Result<PathView, ViewError> {
    let opts = PathOptions {
        md5: nsimage_loader::hdfs::Md5Policy::Check,
        with_children: children,
        key: None,
        budget: None,
    };
    load_path(img, &ImagePath::parse(path).unwrap(), &opts)
}

fn show(n: &Inode<'_>) -> String {
    format!(
        "{} {:?} {:?} {:?} {:?} {:o} {} {:?} {:?} {:?}",
        n.id(),
        n.kind(),
        n.name(),
        n.user(),
        n.group(),
        n.mode(),
        n.mtime(),
        n.attrs(),
        n.extra(),
        n.parent()
    )
}

fn target<'a>(ns: &'a Namespace, path: &str) -> Inode<'a> {
    let id = ns.resolve(path.as_bytes()).unwrap();
    ns.inode(id).unwrap()
}

fn location(e: &ViewError) -> Option<Location> {
    match e {
        ViewError::Load(LoadError::Corrupt { at, .. }) | ViewError::Corrupt { at, .. } => {
            Some(at.clone())
        }
        _ => None,
    }
}

#[test]
fn lookups_agree_with_the_full_load_and_read_little() {
    for legacy in [false, true] {
        lookups_agree(legacy);
    }
}

fn lookups_agree(legacy: bool) {
    let (_d, img, full) = setup_with(legacy);
    let size = std::fs::metadata(&img).unwrap().len();
    let index = common::index_of(&std::fs::read(&img).unwrap());
    assert!(index.section(names_kind(legacy)).is_some());
    assert!(index.section(names_kind(!legacy)).is_none());
    let mut checked = 0;
    for n in full.iter().step_by(37) {
        let path = String::from_utf8(full.path_of(n.id()).unwrap()).unwrap();
        let dir = n.kind() == nsimage_namespace::InodeKind::Directory;
        let view = lookup(&img, &path, dir).unwrap();
        assert!(view.indexed);
        let got = target(&view.namespace, &path);
        assert_eq!(show(&got), show(&n), "{path}");
        if dir {
            let want: Vec<String> = n.children().map(|c| show(&c)).collect();
            let have: Vec<String> = got.children().map(|c| show(&c)).collect();
            assert_eq!(have, want, "children of {path}");
        } else {
            // A file: the pieces on the way only (the open's tail read of
            // up to 256 KiB aside).
            assert!(
                view.bytes_read < (256 << 10) + size / 5,
                "{path}: read {} of {size}",
                view.bytes_read
            );
        }
        checked += 1;
    }
    assert!(checked > 400);
}

#[test]
fn missing_paths_and_paths_through_files_are_no_such_path() {
    let (_d, img, full) = setup();
    let e = lookup(&img, "/no/such/thing", false).err().unwrap();
    assert!(matches!(e, ViewError::NoSuchPath { .. }), "{e}");
    assert!(e.is_data_error());
    let file = full
        .iter()
        .find(|n| n.kind() == nsimage_namespace::InodeKind::File)
        .unwrap();
    let p = String::from_utf8(full.path_of(file.id()).unwrap()).unwrap();
    let e = lookup(&img, &format!("{p}/x"), false).err().unwrap();
    match &e {
        ViewError::NoSuchPath { why: Some(w), .. } => assert!(w.contains("not a directory"), "{w}"),
        other => panic!("{other}"),
    }
    let e = lookup(&img, &format!("{p}zzz"), false).err().unwrap();
    assert!(matches!(e, ViewError::NoSuchPath { .. }), "{e}");
}

/// The deepest file of the namespace and its path.
fn deep_file(full: &Namespace) -> (u64, String) {
    full.iter()
        .filter(|n| n.kind() == nsimage_namespace::InodeKind::File)
        .map(|n| {
            (
                n.id(),
                String::from_utf8(full.path_of(n.id()).unwrap()).unwrap(),
            )
        })
        .max_by_key(|(_, p)| p.matches('/').count())
        .unwrap()
}

#[test]
fn corrupt_pieces_on_the_way_are_located() {
    for legacy in [false, true] {
        corrupt_pieces(legacy);
    }
}

fn corrupt_pieces(legacy: bool) {
    let (d, img, full) = setup_with(legacy);
    let bytes = std::fs::read(&img).unwrap();
    let index: Index = common::index_of(&bytes);
    let (id, path) = deep_file(&full);
    let bad = d.path().join("bad.nsi");

    // The INODE piece holding the target.
    let inode = index.section(SectionKind::INODE).unwrap();
    let i = inode
        .sub_sections
        .partition_point(|s| s.first_key <= id)
        .checked_sub(1)
        .unwrap();
    let sub = &inode.sub_sections[i];
    let mut b = bytes.clone();
    b[usize::try_from(sub.offset + sub.length / 2).unwrap()] ^= 0x40;
    std::fs::write(&bad, &b).unwrap();
    let e = lookup(&bad, &path, false).err().unwrap();
    let at = location(&e).unwrap_or_else(|| panic!("{e}"));
    assert_eq!(
        (at.section, at.sub_section),
        (Some(SectionKind::INODE), Some(i)),
        "{e}"
    );
    assert!(e.is_data_error());

    // Every NAME_INDEX sub-section in turn: a lookup either gives the
    // same answer or fails located in that sub-section; those on the path
    // fail.
    let names = index.section(names_kind(legacy)).unwrap();
    let mut failed = 0;
    for (k, sub) in names.sub_sections.iter().enumerate() {
        for at_byte in [
            sub.offset,
            sub.offset + sub.length / 2,
            sub.offset + sub.length - 1,
        ] {
            let mut b = bytes.clone();
            b[usize::try_from(at_byte).unwrap()] ^= 0x08;
            std::fs::write(&bad, &b).unwrap();
            match lookup(&bad, &path, false) {
                Ok(v) => assert_eq!(target(&v.namespace, &path).id(), id),
                Err(e) => {
                    let at = location(&e).unwrap_or_else(|| panic!("sub-section {k}: {e}"));
                    assert_eq!(at.section, Some(names_kind(legacy)), "{e}");
                    assert_eq!(at.sub_section, Some(k), "{e}");
                    failed += 1;
                }
            }
        }
    }
    let depth = path.matches('/').count();
    assert!(failed >= depth, "{failed} failures for a path {depth} deep");
}

#[test]
fn images_without_the_section_are_loaded_whole() {
    let dir = tempfile::tempdir().unwrap();
    let ns = generate(GenSpec {
        inodes: 3_000,
        seed: 4,
    });
    let img = write(dir.path(), "small.nsi", &ns, &WriteOptions::default());
    let index = common::index_of(&std::fs::read(&img).unwrap());
    assert!(index.section(SectionKind::NAME_INDEX).is_none());
    assert!(index.section(SectionKind::NAME_RUNS).is_none());
    let full = nsimage_loader::load(&img, &LoadOptions::default())
        .unwrap()
        .namespace;
    let (_, path) = deep_file(&full);
    let view = lookup(&img, &path, false).unwrap();
    assert!(!view.indexed);
    assert_eq!(
        show(&target(&view.namespace, &path)),
        show(&target(&full, &path))
    );
    let e = lookup(&img, "/nope", false).err().unwrap();
    assert!(matches!(e, ViewError::NoSuchPath { .. }), "{e}");
}

#[test]
fn the_cli_reports_what_it_read() {
    let (_d, img, full) = setup();
    let (_, path) = deep_file(&full);
    let out = common::nsimage(&["lookup", img.to_str().unwrap(), &path, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = common::json(&out);
    assert_eq!(v["type"], "file");
    assert!(v["bytes_read"].as_u64().unwrap() > 0);
    assert!(v["fraction_read"].as_f64().unwrap() < 1.0);
    let out = common::nsimage(&["lookup", img.to_str().unwrap(), "/nope"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn verify_checks_that_the_name_index_agrees() {
    for legacy in [false, true] {
        verify_checks(legacy);
    }
}

fn verify_checks(legacy: bool) {
    use prost::Message;
    let (d, img, _) = setup_with(legacy);
    let bytes = std::fs::read(&img).unwrap();
    assert!(nsimage_loader::verify(&img, &Default::default())
        .unwrap()
        .is_ok());
    let kind = names_kind(legacy);
    let mut n = 0;
    let bad = common::rewrite_records(&bytes, &[kind], |_, body| {
        n += 1;
        if legacy {
            let mut e = nsimage_format::pb::NameEntry::decode(body).unwrap();
            if n == 500 {
                e.name.push(b'x');
            }
            e.encode_to_vec()
        } else {
            // Run 50's first child one id further (its delta + 1).
            let mut r = nsimage_format::pb::NameRun::decode(body).unwrap();
            if n == 50 {
                r.children[0] += 8;
            }
            r.encode_to_vec()
        }
    });
    let p = d.path().join("wrong.nsi");
    std::fs::write(&p, &bad).unwrap();
    // Every checksum is right: only the agreement check finds it. No load
    // reads the section, so the image stays valid (every read path gives
    // one verdict): a located warning.
    let report = nsimage_loader::verify(&p, &Default::default()).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
    let at = &report.warnings[0].at;
    assert_eq!(at.section, Some(kind));
    assert!(at.sub_section.is_some());
    assert!(
        report.warnings[0].detail.contains("disagrees"),
        "{:?}",
        report.warnings
    );
    let out = common::nsimage(&["verify", p.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains(kind.name().unwrap()));
}
