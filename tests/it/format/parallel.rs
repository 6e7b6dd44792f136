//! The parallel loader: the same namespace for every thread count, read
//! strategy and sub-section size; read calls in proportion to pieces, not
//! records; a bad piece stops a parallel load with a located error.

use crate::common;

use common::{image, index_of, mmap, tiny, with_index};
use nsimage_format::SectionKind;
use nsimage_loader::{load, LoadError, LoadOptions, ReadStrategy};
use nsimage_testkit::generate::{generate, GenSpec};
use std::path::Path;

fn opts(threads: usize, read: ReadStrategy) -> LoadOptions {
    LoadOptions {
        md5: nsimage_loader::hdfs::Md5Policy::Check,
        threads,
        read,
        serial: false,
        parallel_threshold: 0,
        key: None,
        timeline: None,
        budget: None,
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn same_digest_for_every_thread_count_strategy_and_sub_section_size() {
    let ns = generate(GenSpec {
        inodes: 30_000,
        seed: 5,
    });
    let want = ns.digest();
    let dir = tempfile::tempdir().unwrap();
    for sub in [97u64, 4096, 1 << 20] {
        let path = write(dir.path(), &format!("s{sub}.nsi"), &image(&ns, &tiny(sub)));
        for read in [mmap(), ReadStrategy::Bulk, ReadStrategy::Stream] {
            for threads in [1, 2, 3, 8, 17] {
                let l = load(&path, &opts(threads, read)).unwrap();
                assert_eq!(
                    l.namespace.digest(),
                    want,
                    "sub {sub}, {read:?}, {threads} threads"
                );
                assert_eq!(l.namespace.stats(), ns.stats());
                if read != ReadStrategy::Stream && threads > 1 {
                    assert_eq!(l.stats.mode, "parallel");
                    assert_eq!(l.stats.threads, threads);
                }
            }
        }
    }
}

#[test]
fn serial_below_the_threshold_and_when_forced() {
    let ns = generate(GenSpec {
        inodes: 2_000,
        seed: 1,
    });
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "a.nsi", &image(&ns, &tiny(512)));
    let mut o = opts(4, ReadStrategy::Bulk);
    o.parallel_threshold = 2_001;
    assert_eq!(load(&path, &o).unwrap().stats.mode, "serial");
    o.parallel_threshold = 2_000;
    assert_eq!(load(&path, &o).unwrap().stats.mode, "parallel");
    o.serial = true;
    assert_eq!(load(&path, &o).unwrap().stats.mode, "serial");
}

#[test]
fn read_calls_follow_pieces_not_records() {
    let dir = tempfile::tempdir().unwrap();
    for (inodes, sub) in [(5_000u64, 8192u64), (40_000, 65_536)] {
        let ns = generate(GenSpec { inodes, seed: 2 });
        let path = write(
            dir.path(),
            &format!("{inodes}.nsi"),
            &image(&ns, &tiny(sub)),
        );
        let bulk = load(&path, &opts(2, ReadStrategy::Bulk)).unwrap().stats;
        // Header, tail, then one read per piece.
        assert_eq!(bulk.read_calls, 2 + bulk.pieces, "{inodes} inodes");
        let mmap = load(&path, &opts(2, mmap())).unwrap().stats;
        assert_eq!(mmap.read_calls, 3, "{inodes} inodes");
    }
}

/// Rewrites the index so that the checksums match the (damaged) bytes: the
/// damage then reaches the decoders instead of the checksum check.
fn rechecksum(bytes: &mut Vec<u8>) {
    use xxhash_rust::xxh3::xxh3_64;
    let mut idx = index_of(bytes);
    for s in &mut idx.sections {
        s.checksum = xxh3_64(&bytes[s.offset as usize..s.end() as usize]);
        for u in &mut s.sub_sections {
            u.checksum = xxh3_64(&bytes[u.offset as usize..(u.offset + u.length) as usize]);
        }
    }
    let end = idx.sections.last().unwrap().end() as usize;
    *bytes = with_index(bytes[..end].to_vec(), &idx);
}

#[test]
fn a_corrupt_sub_section_stops_a_parallel_load_with_its_location() {
    let ns = generate(GenSpec {
        inodes: 20_000,
        seed: 3,
    });
    let good = image(&ns, &tiny(2048));
    let idx = index_of(&good);
    let dir = tempfile::tempdir().unwrap();
    for kind in [SectionKind::INODE, SectionKind::INODE_DIR] {
        let sec = idx.section(kind).unwrap();
        let target = sec.sub_sections.len() / 2;
        let sub = &sec.sub_sections[target];
        // A checksum failure, then bytes that pass the checksum but do not decode.
        for recheck in [false, true] {
            let mut bad = good.clone();
            // The first record's length prefix claims more than the piece holds.
            bad[sub.offset as usize] = 0xff;
            bad[sub.offset as usize + 1] = 0x7f;
            if recheck {
                rechecksum(&mut bad);
            }
            let path = write(dir.path(), "bad.nsi", &bad);
            for threads in [1, 2, 8] {
                for read in [mmap(), ReadStrategy::Bulk] {
                    match load(&path, &opts(threads, read)) {
                        Err(LoadError::Corrupt { at, detail, .. }) => {
                            assert_eq!(at.section, Some(kind), "{detail}");
                            assert_eq!(at.sub_section, Some(target), "{detail}");
                            assert!(at.offset >= sub.offset && at.offset < sub.offset + sub.length);
                        }
                        Err(e) => panic!("expected a corruption error, got {e}"),
                        Ok(_) => panic!("corrupt sub-section loaded"),
                    }
                }
            }
        }
    }
}

/// The image of `ns` with its INODE_DIR section replaced by `dirs`
/// (parent, children) records, encoded by hand, as one piece.
fn with_dir_records(ns: &nsimage_namespace::Namespace, dirs: &[(u64, Vec<u64>)]) -> Vec<u8> {
    with_dir_pieces(ns, &[dirs])
}

/// [`with_dir_records`] with the records cut into the sub-sections
/// `pieces` (more than one: a sub-section per element).
fn with_dir_pieces(ns: &nsimage_namespace::Namespace, pieces: &[&[(u64, Vec<u64>)]]) -> Vec<u8> {
    use nsimage_format::framing::put_record;
    use nsimage_format::pb;
    let good = image(ns, &tiny(1));
    let idx = index_of(&good);
    let dirsec = idx.section(SectionKind::INODE_DIR).unwrap();
    let mut bad = good[..dirsec.offset as usize].to_vec();
    let mut subs = Vec::new();
    for dirs in pieces {
        let start = bad.len() as u64;
        for (parent, children) in dirs.iter() {
            let (parent, children) = (*parent, children.clone());
            put_record(&mut bad, &pb::DirEntry { parent, children });
        }
        subs.push(nsimage_format::SubSectionInfo {
            offset: start,
            length: bad.len() as u64 - start,
            records: dirs.len() as u64,
            first_key: dirs[0].0,
            checksum: 0,
            at_rest: Default::default(),
        });
    }
    let mut idx2 = idx.clone();
    let s = idx2.section_mut(SectionKind::INODE_DIR).unwrap();
    s.length = bad.len() as u64 - dirsec.offset;
    s.records = pieces.iter().map(|p| p.len() as u64).sum();
    s.sub_sections = if pieces.len() > 1 { subs } else { Vec::new() };
    let mut bad = with_index(bad, &idx2);
    rechecksum(&mut bad);
    bad
}

/// Loads `bytes` serially (links set as each piece decodes) and in
/// parallel (links set by node-table range, one range per worker, after
/// decoding); each must fail in INODE_DIR (in sub-section `sub` when
/// given) with `why`.
fn refused_at_every_thread_count(bytes: &[u8], why: &str, sub: Option<usize>) {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "bad.nsi", bytes);
    for threads in [1, 2, 3, 8] {
        match load(&path, &opts(threads, ReadStrategy::Bulk)) {
            Err(LoadError::Corrupt { at, detail, .. }) => {
                assert_eq!(at.section, Some(SectionKind::INODE_DIR));
                assert!(detail.contains(why), "{threads} threads: {detail}");
                if sub.is_some() {
                    assert_eq!(at.sub_section, sub, "{threads} threads: {detail}");
                }
            }
            other => panic!("expected a corruption error, got {:?}", other.err()),
        }
    }
}

#[test]
fn a_child_in_two_directories_is_refused_in_parallel() {
    let mut ns = nsimage_namespace::Namespace::default();
    let a = ns.mkdirs(b"/a", &common::P, 1).unwrap();
    let b = ns.mkdirs(b"/b", &common::P, 1).unwrap();
    let f = ns.create(b"/a/f", &common::P, &common::F, 1).unwrap();
    // root -> a, b; a -> f; b -> f.
    let root = nsimage_namespace::ROOT_ID;
    let bad = with_dir_records(&ns, &[(root, vec![a, b]), (a, vec![f]), (b, vec![f])]);
    refused_at_every_thread_count(&bad, "two directories", None);
    // The same records in three sub-sections: the second listing, in the
    // last one, is the one reported, whichever worker set f's parent.
    let one = [(root, vec![a, b])];
    let two = [(a, vec![f])];
    let three = [(b, vec![f])];
    let cut = with_dir_pieces(&ns, &[&one, &two, &three]);
    refused_at_every_thread_count(&cut, "two directories", Some(2));
}

/// A directory whose children are listed in two records, one at the end
/// of a sub-section and one at the start of the next, in a namespace of
/// several node chunks (so that 2 to 8 workers link it in several ranges,
/// its children straddling them): refused at every thread count, when the
/// same records with the directory listed once load.
#[test]
fn a_directory_split_across_sub_sections_is_refused() {
    let mut ns = nsimage_namespace::Namespace::default();
    let d = ns.mkdirs(b"/d", &common::P, 1).unwrap();
    let e = ns.mkdirs(b"/e", &common::P, 1).unwrap();
    let mut in_d = Vec::new();
    for i in 0..1_500 {
        let path = format!("/d/f{i:04}");
        in_d.push(
            ns.create(path.as_bytes(), &common::P, &common::F, 1)
                .unwrap(),
        );
    }
    let in_e: Vec<u64> = (0..20)
        .map(|i| {
            let path = format!("/e/g{i:02}");
            ns.create(path.as_bytes(), &common::P, &common::F, 1)
                .unwrap()
        })
        .collect();
    let root = nsimage_namespace::ROOT_ID;
    let whole_first = [(root, vec![d, e]), (d, in_d.clone())];
    let whole_second = [(e, in_e.clone())];
    let good = with_dir_pieces(&ns, &[&whole_first, &whole_second]);
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "good.nsi", &good);
    for threads in [1, 2, 3, 8] {
        let loaded = load(&path, &opts(threads, ReadStrategy::Bulk)).unwrap();
        assert_eq!(loaded.namespace.digest(), ns.digest(), "{threads} threads");
    }
    let first = [(root, vec![d, e]), (d, in_d[..700].to_vec())];
    let second = [(d, in_d[700..].to_vec()), (e, in_e)];
    let split = with_dir_pieces(&ns, &[&first, &second]);
    refused_at_every_thread_count(&split, &format!("directory {d} is listed twice"), None);
}

#[test]
fn directories_in_a_cycle_or_in_none_are_refused() {
    let mut ns = nsimage_namespace::Namespace::default();
    let a = ns.mkdirs(b"/a", &common::P, 1).unwrap();
    let b = ns.mkdirs(b"/b", &common::P, 1).unwrap();
    let c = ns.mkdirs(b"/b/c", &common::P, 1).unwrap();
    let f = ns.create(b"/b/c/f", &common::P, &common::F, 1).unwrap();
    let root = nsimage_namespace::ROOT_ID;
    // Every inode but the root listed once, but b and c list each other
    // (with f under c): nothing of them hangs from the root.
    let cycle = with_dir_records(&ns, &[(root, vec![a]), (b, vec![c]), (c, vec![b, f])]);
    refused_at_every_thread_count(&cycle, "cycle", None);
    // A cycle of three, a -> b -> c -> a, and the root lists nothing.
    let longer = with_dir_records(&ns, &[(a, vec![b]), (b, vec![c]), (c, vec![a, f])]);
    refused_at_every_thread_count(&longer, "cycle", None);
    // f is in no directory (every directory hangs from the root).
    let leaf = with_dir_records(&ns, &[(root, vec![a, b]), (b, vec![c])]);
    refused_at_every_thread_count(&leaf, "in no directory", None);
    // b is in no directory (c and f hang from it).
    let orphan = with_dir_records(&ns, &[(root, vec![a]), (b, vec![c]), (c, vec![f])]);
    refused_at_every_thread_count(&orphan, "in no directory", None);
}

/// Every inode with attributes of its own (block size, replication, mode,
/// quotas): as many attribute classes as inodes, met in a different order
/// by every worker. Loads the same for every thread count, and a loaded
/// namespace changes like the original.
#[test]
fn inodes_sharing_no_attributes_load_and_change_alike() {
    use nsimage_namespace::{FileSpec, Namespace, PermSpec};
    let mut ns = Namespace::default();
    for i in 0..3_000u16 {
        let perm = PermSpec {
            user: b"u",
            group: b"g",
            mode: i % 0o1000,
        };
        let spec = FileSpec {
            replication: i % 9 + 1,
            preferred_block_size: (1 << 20) + u64::from(i),
            storage_policy: (i % 3) as u8,
        };
        if i % 10 == 0 {
            let d = ns.mkdirs(format!("/d{i}").as_bytes(), &perm, 1).unwrap();
            ns.set_quota(d, i64::from(i), i64::from(i) * 2).unwrap();
        } else {
            ns.create(format!("/f{i}").as_bytes(), &perm, &spec, 1)
                .unwrap();
        }
    }
    let want = ns.digest();
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "a.nsi", &image(&ns, &tiny(97)));
    let change = |ns: &mut Namespace| {
        let f = ns.resolve(b"/f1").unwrap();
        ns.set_mode(f, 0o700).unwrap();
        ns.set_replication(f, 2).unwrap();
        let d = ns.resolve(b"/d10").unwrap();
        ns.set_quota(d, -1, -1).unwrap();
        ns.create(
            b"/f1-copy",
            &PermSpec {
                user: b"u",
                group: b"g",
                mode: 1,
            },
            &FileSpec {
                replication: 2,
                preferred_block_size: (1 << 20) + 1,
                storage_policy: 1,
            },
            2,
        )
        .unwrap();
        ns.digest()
    };
    let changed = change(&mut ns.clone());
    for threads in [1, 2, 5] {
        let mut l = load(&path, &opts(threads, mmap())).unwrap().namespace;
        assert_eq!(l.digest(), want, "{threads} threads");
        assert_eq!(change(&mut l), changed, "{threads} threads");
        let f2 = l.inode(l.resolve(b"/f2").unwrap()).unwrap();
        assert_eq!(f2.mode(), 2, "{threads} threads");
    }
}
