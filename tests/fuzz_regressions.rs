//! Inputs found by fuzzing, replayed through the same checks as the fuzz
//! targets. The targets' bodies live in `fuzz/src/` as plain functions that
//! panic when a property fails; they are compiled here too (stable
//! toolchain, no libFuzzer), so a reproducer saved under
//! `fuzz/regressions/TARGET/NAME` fails here exactly as it crashed there.
//!
//! Names starting with `itemN-` reproduce defect N of issue 7; `new-` ones
//! are defects the fuzzers found that the issue does not list. The committed
//! seeds (`fuzz/corpus/`) are replayed too: they are valid inputs that
//! reach deep, so they must pass the same checks.

#[allow(dead_code)]
#[path = "../fuzz/src/input.rs"]
mod input;

#[allow(dead_code)]
#[path = "../fuzz/src/image.rs"]
mod image;

#[allow(dead_code)]
#[path = "../fuzz/src/at_rest.rs"]
mod at_rest;

#[allow(dead_code)]
#[path = "../fuzz/src/journal.rs"]
mod journal;

#[allow(dead_code)]
#[path = "../fuzz/src/walker.rs"]
mod walker;

#[allow(dead_code)]
#[path = "../fuzz/src/hdfs.rs"]
mod hdfs;

#[path = "../fuzz/src/streamed.rs"]
mod streamed;

/// The largest single allocation any test of this binary made: the hdfs
/// reproducers allocated gigabytes from a few kilobytes of file (libFuzzer's
/// `-malloc_limit_mb=512` caught them), so their tests check it stays below
/// that limit.
mod largest {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicUsize, Ordering};

    pub static LARGEST: AtomicUsize = AtomicUsize::new(0);

    pub struct Tracking;

    // SAFETY: every call is passed to the system allocator unchanged.
    unsafe impl GlobalAlloc for Tracking {
        unsafe fn alloc(&self, l: Layout) -> *mut u8 {
            LARGEST.fetch_max(l.size(), Ordering::Relaxed);
            // SAFETY: the caller's contract, passed on.
            unsafe { System.alloc(l) }
        }
        unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
            LARGEST.fetch_max(l.size(), Ordering::Relaxed);
            // SAFETY: the caller's contract, passed on.
            unsafe { System.alloc_zeroed(l) }
        }
        unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
            // SAFETY: the caller's contract, passed on.
            unsafe { System.dealloc(p, l) }
        }
        unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
            LARGEST.fetch_max(new, Ordering::Relaxed);
            // SAFETY: the caller's contract, passed on.
            unsafe { System.realloc(p, l, new) }
        }
    }

    #[global_allocator]
    static GLOBAL: Tracking = Tracking;

    /// The fuzz runs' `-malloc_limit_mb`.
    pub const LIMIT: usize = 512 << 20;
}

use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

fn reproducer(target: &str, name: &str) -> Vec<u8> {
    let path = fuzz_dir().join("regressions").join(target).join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every reproducer on disk has a test below (and every test its file).
#[test]
fn every_reproducer_has_a_test() {
    let tested = [
        "hdfs/new-zlib-empty-directory-diffs",
        "hdfs/new-zlib-empty-file-diffs",
        "hdfs/new-zlib-empty-files-under-construction",
        "hdfs/new-zlib-empty-inode-records-size-node-table",
        "hdfs/new-zlib-empty-inode-references",
        "hdfs/new-zlib-empty-snapshot-diff-entries",
        "hdfs/new-zlib-empty-snapshots",
        "image/item6-parents-out-of-order-across-sub-sections",
        "image/item8-group-in-dir-entry",
        "image/item8-group-in-inode",
        "image/item9-stream-length-underflow",
        "image/new-field-number-past-2-29",
        "image/new-inode-id-u64-max",
        "image/new-stream-ignores-sub-section-first-key",
        "journal/item1-length-prefix-flip-cuts-intact-records",
        "journal/item2-headerless-open-segment",
        "walker/new-field-number-past-2-29",
    ];
    let mut found = Vec::new();
    for target in ["image", "journal", "walker", "hdfs", "at_rest"] {
        let dir = fuzz_dir().join("regressions").join(target);
        if target == "at_rest" && !dir.exists() {
            continue;
        }
        for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            found.push(format!(
                "{target}/{}",
                e.expect("entry").file_name().to_string_lossy()
            ));
        }
    }
    found.sort();
    assert_eq!(found, tested);
}

#[test]
fn seeds_pass_every_check() {
    for (target, run) in [
        ("image", image::run as fn(&[u8])),
        ("journal", journal::run),
        ("walker", walker::run),
        ("hdfs", hdfs::run),
        ("at_rest", at_rest::run),
    ] {
        let dir = fuzz_dir().join("corpus").join(target);
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = e.expect("entry").path();
            run(&std::fs::read(&path).expect("reading a seed"));
            n += 1;
        }
        assert!(n >= 10, "{target}: only {n} seeds");
    }
}

/// The at_rest target's structured inputs without mutations: each base
/// image laid out by the target in every storage loads, through every path
/// given the key, to the plain image's digest, as does the image the writer
/// writes of the same namespace in that storage (so the target lays pieces
/// out as the writer does); the independent check finds nothing to refuse;
/// and nothing allocates near the fuzz runs' limit.
#[test]
fn at_rest_base_images_pass_every_path() {
    for (b, img) in image::bases().iter().enumerate() {
        let plain = image::verdicts(img)[0].1.clone().expect("a base loads");
        for storage in at_rest::Storage::ALL {
            let built = at_rest::Plan::new(&image::Model::parse(img), storage).build();
            assert_eq!(at_rest::must_refuse(&built), None, "{b} {storage:?}");
            let v = at_rest::check(&built.img, Some(&built));
            assert!(v.iter().all(|(_, r)| r.is_ok()), "{b} {storage:?}: {v:?}");
            assert_eq!(v[0].1, Ok(plain), "{b} {storage:?}");
            let written = at_rest::written(b, storage);
            let w = at_rest::check(&written, None);
            assert!(w.iter().all(|(_, r)| r.is_ok()), "{b} {storage:?}: {w:?}");
            assert_eq!(w[0].1, Ok(plain), "{b} {storage:?}, written");
        }
    }
    let largest = largest::LARGEST.load(std::sync::atomic::Ordering::Relaxed);
    assert!(largest < largest::LIMIT, "an allocation of {largest} bytes");
}

/// Rewrites the at_rest target's generated seeds (`fuzz/corpus/at_rest/`):
/// `NSIMAGE_FUZZ_WRITE_SEEDS=1 cargo test --test fuzz_regressions --
/// --ignored write_at_rest_seeds`.
#[test]
#[ignore]
fn write_at_rest_seeds() {
    if std::env::var_os("NSIMAGE_FUZZ_WRITE_SEEDS").is_none() {
        return;
    }
    let dir = fuzz_dir().join("corpus").join("at_rest");
    std::fs::create_dir_all(&dir).expect("corpus directory");
    for (name, data) in at_rest::seeds() {
        std::fs::write(dir.join(name), data).expect("writing a seed");
    }
}

/// The structured seeds start from valid images that every path accepts.
#[test]
fn base_images_pass_every_path() {
    for img in image::bases() {
        let v = image::verdicts(img);
        assert!(v.iter().all(|(_, r)| r.is_ok()), "{v:?}");
        image::check(img);
        // Laid out again by the target's model (NAME_INDEX's first keys
        // included), without a mutation, it loads to the same digest.
        let again = image::verdicts(&image::Model::parse(img).build());
        assert_eq!(v, again);
    }
}

// Issue 7, item 1: a flipped bit in the length prefix of a record in the
// middle of the open segment is taken for a torn tail; recovery succeeds
// and discards every later intact, acknowledged record.
#[test]
fn journal_item1_length_prefix_flip_cuts_intact_records() {
    journal::run(&reproducer(
        "journal",
        "item1-length-prefix-flip-cuts-intact-records",
    ));
}

// Issue 7, item 2: the open segment truncated below its header is accepted;
// ops are then acknowledged into the headerless file and the next open
// refuses the store.
#[test]
fn journal_item2_headerless_open_segment() {
    journal::run(&reproducer("journal", "item2-headerless-open-segment"));
}

// Issue 7, item 6: INODE_DIR records sorted within each sub-section but
// not across them (a cut and a swap of two records) pass mmap, bulk and
// verify; only the stream path refuses them.
#[test]
fn image_item6_parents_out_of_order_across_sub_sections() {
    image::run(&reproducer(
        "image",
        "item6-parents-out-of-order-across-sub-sections",
    ));
}

// Issue 7, item 8: an unknown group field (wire types 3 and 4) in an INODE
// record is accepted by the stream path and refused by mmap, bulk, verify.
#[test]
fn image_item8_group_in_inode() {
    image::run(&reproducer("image", "item8-group-in-inode"));
}

// Issue 7, item 8, in an INODE_DIR record.
#[test]
fn image_item8_group_in_dir_entry() {
    image::run(&reproducer("image", "item8-group-in-dir-entry"));
}

// Issue 7, item 9: a length prefix that runs past the end of its region
// underflows `end - pos - width` in the stream reader (a panic with
// overflow checks, which the test profile and the fuzz build keep on).
#[test]
fn image_item9_stream_length_underflow() {
    image::run(&reproducer("image", "item9-stream-length-underflow"));
}

// New: the stream path ignores the index's sub-sections, so a sub-section
// whose declared first key is not its first record's id passes `load --read
// stream` while mmap, bulk and verify refuse it. The read paths must agree
// (the stream path checks the sub-section table, or no path does).
#[test]
fn image_new_stream_ignores_sub_section_first_key() {
    image::run(&reproducer(
        "image",
        "new-stream-ignores-sub-section-first-key",
    ));
}

// New: the same in an image: an INODE record with a field number past
// 2^29 - 1 passes mmap, bulk and verify, and the stream path refuses it.
#[test]
fn image_new_field_number_past_2_29() {
    image::run(&reproducer("image", "new-field-number-past-2-29"));
}

// New: a field number above protobuf's 2^29 - 1 (a key above 2^32 - 1) is
// skipped as unknown by the walker, and prost (the stream path) refuses the
// record: the read paths disagree.
#[test]
fn walker_new_field_number_past_2_29() {
    walker::run(&reproducer("walker", "new-field-number-past-2-29"));
}

// Found by the 2M-execution image campaign after the issue-7 fixes: an
// inode id of u64::MAX overflowed the id index's run arithmetic
// (`format-spec/src/model/ids.rs`, a panic with overflow checks).
#[test]
fn image_new_inode_id_u64_max() {
    image::run(&reproducer("image", "new-inode-id-u64-max"));
}

/// The hdfs target's structured inputs start from valid images: each loads,
/// and laid out again by the target's model (every piece deflated anew,
/// every summary entry placed again) it loads to the same digest.
#[test]
fn hdfs_base_images_load_and_survive_the_model() {
    for img in hdfs::bases() {
        let v = hdfs::verdicts(img);
        assert!(v.iter().all(|(_, r)| r.is_ok()), "{v:?}");
        let again = hdfs::verdicts(&hdfs::Model::parse(img).build());
        assert_eq!(v, again);
        hdfs::check(img);
    }
}

/// Replays an hdfs reproducer and checks that no single allocation reached
/// the fuzz runs' limit.
fn hdfs_bounded(name: &str) {
    hdfs::run(&reproducer("hdfs", name));
    let largest = largest::LARGEST.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        largest < largest::LIMIT,
        "{name}: an allocation of {largest} bytes"
    );
}

// New: a 16 KiB zlib INODE section inflating to 16 MiB of empty records
// (one byte each) with a header declaring as many: the records were counted
// and the node table (64 bytes a slot) sized from the count, 1 GiB, before
// the first record was decoded. Records too short for a type and an id are
// now refused while counting.
#[test]
fn hdfs_new_zlib_empty_inode_records_size_node_table() {
    hdfs_bounded("new-zlib-empty-inode-records-size-node-table");
}

// New: the same bomb in INODE_REFERENCE: every empty message became a
// reference (40 bytes each, a 640 MiB vector). An entry must name its
// referred inode, as Hadoop writes it.
#[test]
fn hdfs_new_zlib_empty_inode_references() {
    hdfs_bounded("new-zlib-empty-inode-references");
}

// New: in SNAPSHOT_DIFF, each empty message an entry (80 bytes each). An
// entry must name its inode.
#[test]
fn hdfs_new_zlib_empty_snapshot_diff_entries() {
    hdfs_bounded("new-zlib-empty-snapshot-diff-entries");
}

// New: in FILES_UNDERCONSTRUCTION, each empty message an entry. An entry
// must name its inode.
#[test]
fn hdfs_new_zlib_empty_files_under_construction() {
    hdfs_bounded("new-zlib-empty-files-under-construction");
}

// New: a SNAPSHOT header declaring 16M snapshots, each an empty message
// (472 bytes each in memory, twice). A snapshot must have its root.
#[test]
fn hdfs_new_zlib_empty_snapshots() {
    hdfs_bounded("new-zlib-empty-snapshots");
}

// New: a SNAPSHOT_DIFF entry declaring 16M file diffs, each an empty
// message (288 bytes each: 1.1 GiB asked at once, found by
// tests/it/hdfs/hostile.rs under a memory limit). A diff must have its
// snapshot id.
#[test]
fn hdfs_new_zlib_empty_file_diffs() {
    hdfs_bounded("new-zlib-empty-file-diffs");
}

// New: the same with directory diffs (240 bytes each).
#[test]
fn hdfs_new_zlib_empty_directory_diffs() {
    hdfs_bounded("new-zlib-empty-directory-diffs");
}
