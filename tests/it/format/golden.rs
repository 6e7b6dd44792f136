//! The golden v1 image under `tests/data/` must keep loading with the same
//! counts and digest in every later version of this crate. It was written by
//! `nsimage generate --inodes 3000 --seed 42 --sub-section-bytes 4096
//! --sub-section-min-inodes 0` at format version 1.

use nsimage_format::SectionKind;
use nsimage_loader::{load, verify, ImageSource};
use std::path::Path;

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/golden_v1.nsi");

#[test]
fn golden_v1_loads_with_its_recorded_counts_and_digest() {
    let loaded = load(Path::new(GOLDEN), &Default::default()).expect("golden image loads");
    let ns = &loaded.namespace;
    let st = ns.stats();
    assert_eq!(
        (
            st.inodes,
            st.files,
            st.directories,
            st.symlinks,
            st.blocks,
            st.bytes
        ),
        (3000, 2700, 285, 15, 3406, 139_859_014_691)
    );
    assert_eq!(ns.digest().to_string(), "5acd6a0d25e90588");
    assert!(verify(Path::new(GOLDEN), &Default::default())
        .unwrap()
        .is_ok());
}

#[test]
fn golden_v1_index_has_sub_sections() {
    let src = ImageSource::open(Path::new(GOLDEN)).unwrap();
    assert_eq!(src.header.version, 1);
    assert_eq!(
        src.index
            .section(SectionKind::INODE)
            .unwrap()
            .sub_sections
            .len(),
        53
    );
    assert_eq!(
        src.index
            .section(SectionKind::INODE_DIR)
            .unwrap()
            .sub_sections
            .len(),
        3
    );
}

#[test]
fn generator_is_deterministic() {
    use nsimage_testkit::generate::{generate, GenSpec};
    let a = generate(GenSpec {
        inodes: 20_000,
        seed: 9,
    });
    let b = generate(GenSpec {
        inodes: 20_000,
        seed: 9,
    });
    let c = generate(GenSpec {
        inodes: 20_000,
        seed: 10,
    });
    assert_eq!(a.digest(), b.digest());
    assert_ne!(a.digest(), c.digest());
    assert_eq!(a.stats().inodes, 20_000);
}

#[test]
fn generator_shape_is_realistic() {
    use nsimage_testkit::generate::{generate, GenSpec};
    let ns = generate(GenSpec {
        inodes: 200_000,
        seed: 1,
    });
    let st = ns.stats();
    let files = st.files as f64 / st.inodes as f64;
    assert!((0.85..0.95).contains(&files), "file share {files}");
    let per_file = st.blocks as f64 / st.files as f64;
    assert!((1.0..2.0).contains(&per_file), "blocks per file {per_file}");
    let widest = ns.iter().map(|n| n.child_slots().len()).max().unwrap();
    assert!(widest >= 15_000, "widest directory has {widest} children");
    let depth = ns
        .iter()
        .filter_map(|n| ns.path_of(n.id()))
        .map(|p| p.iter().filter(|&&b| b == b'/').count())
        .max()
        .unwrap();
    assert!(depth >= 4, "max depth {depth}");
    assert!(ns
        .iter()
        .any(|n| n.extra().is_some_and(|e| !e.xattrs.is_empty())));
    assert!(ns
        .iter()
        .any(|n| n.extra().is_some_and(|e| !e.acl.is_empty())));
}
