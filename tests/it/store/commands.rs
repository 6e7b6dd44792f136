//! The checkpoint store: injected I/O faults, damaged images and journals,
//! torn tails, the process lock, bulk and streamed replay, group commit.

use crate::common;

use common::names;
use nsimage_format::cipher::Key;
use nsimage_namespace::Namespace;
use nsimage_store::fs::{Fault, FaultyFs, Fs, RealFs};
use nsimage_store::journal::{self, Segment, SegmentSealer};
use nsimage_store::{Store, StoreError, StoreOptions};
use nsimage_testkit::workload::Workload;
use std::path::Path;
use std::sync::Arc;

const W: Workload = Workload { seed: 3 };

fn real() -> Arc<dyn Fs> {
    Arc::new(RealFs::default())
}

fn apply_n(s: &Store, n: u64) -> u64 {
    let mut last = 0;
    for _ in 0..n {
        let t = s.with_namespace(|ns| ns.info().last_txid) + 1;
        let op = s.with_namespace(|ns| W.op(ns, t));
        last = s.apply(op).unwrap();
    }
    last
}

fn reference(txid: u64) -> Namespace {
    let mut ns = Namespace::default();
    W.advance(&mut ns, txid);
    ns
}

fn new_store(dir: &Path) {
    Store::init(dir, real(), &Default::default()).unwrap();
}

/// A store (in `TEMP/s`) that applied 10 ops, and its open segment.
fn store_after_10_ops() -> (tempfile::TempDir, Segment) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    new_store(&dir);
    let s = Store::open_default(&dir).unwrap();
    apply_n(&s, 10);
    drop(s);
    let seg = segments(&dir).pop().unwrap();
    (tmp, seg)
}

fn segments(dir: &Path) -> Vec<Segment> {
    let mut v: Vec<Segment> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| Segment::parse(dir, &e.unwrap().file_name().to_string_lossy()))
        .collect();
    v.sort_by_key(|s| s.first);
    v
}

#[test]
fn faults_reach_the_caller_and_the_store_stays_at_its_durable_state() {
    for fault in [Fault::Fsync, Fault::ShortWrite, Fault::NoSpace] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("s");
        new_store(&dir);
        let acknowledged = {
            let s = Store::open(
                &dir,
                Arc::new(FaultyFs::new(fault, 40)),
                StoreOptions::default(),
            )
            .unwrap();
            let mut acked = 0;
            let mut failure = None;
            for _ in 0..200 {
                let t = s.with_namespace(|ns| ns.info().last_txid) + 1;
                let op = s.with_namespace(|ns| W.op(ns, t));
                match s.apply(op) {
                    Ok(t) => acked = t,
                    Err(e) => {
                        failure = Some(e);
                        break;
                    }
                }
            }
            let e = failure.unwrap_or_else(|| panic!("{fault:?} was never reported"));
            assert!(matches!(e, StoreError::Poisoned(_)), "{fault:?}: {e}");
            // Nothing more is accepted: a failed fsync is not retried as if
            // it had worked.
            let t = s.with_namespace(|ns| ns.info().last_txid) + 1;
            let op = s.with_namespace(|ns| W.op(ns, t));
            assert!(matches!(s.apply(op), Err(StoreError::Poisoned(_))));
            assert!(s.checkpoint().is_err());
            acked
        };
        let s = Store::open(&dir, real(), StoreOptions::default()).unwrap();
        let txid = s.report().txid;
        assert!(
            txid >= acknowledged,
            "{fault:?}: recovered {txid} < acknowledged {acknowledged}"
        );
        assert_eq!(
            s.with_namespace(|ns| ns.digest()),
            reference(txid).digest(),
            "{fault:?}"
        );
    }
}

#[test]
fn a_failing_checkpoint_leaves_the_last_image() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    new_store(&dir);
    let acked = {
        let s = Store::open_default(&dir).unwrap();
        apply_n(&s, 300)
    };
    {
        // The image write hits "no space left" part-way.
        let s = Store::open(
            &dir,
            Arc::new(FaultyFs::new(Fault::NoSpace, 0)),
            StoreOptions::default(),
        )
        .unwrap();
        assert!(s.checkpoint().is_err());
    }
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.contains(".tmp")), "{names:?}");
    let s = Store::open_default(&dir).unwrap();
    assert_eq!(s.report().txid, acked);
    assert_eq!(s.report().image_txid, 0);
}

#[test]
fn a_corrupt_newest_image_falls_back_to_the_older_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    new_store(&dir);
    let (older, newest, last) = {
        let s = Store::open_default(&dir).unwrap();
        apply_n(&s, 200);
        let older = s.checkpoint().unwrap();
        apply_n(&s, 200);
        let newest = s.checkpoint().unwrap();
        (older, newest, apply_n(&s, 50))
    };
    let img = dir.join(format!("image_{newest:020}"));
    let mut bytes = std::fs::read(&img).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&img, &bytes).unwrap();
    let s = Store::open_default(&dir).unwrap();
    let r = s.report();
    assert_eq!(r.image_txid, older);
    assert_eq!(r.skipped_images.len(), 1);
    assert_eq!(r.txid, last);
    assert_eq!(r.replayed, last - older);
    assert_eq!(s.with_namespace(|ns| ns.digest()), reference(last).digest());
}

#[test]
fn damage_inside_the_journal_is_an_error_naming_segment_and_offset() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    new_store(&dir);
    {
        let s = Store::open_default(&dir).unwrap();
        apply_n(&s, 100);
    }
    let seg = segments(&dir).pop().unwrap();
    let mut bytes = std::fs::read(&seg.path).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    std::fs::write(&seg.path, &bytes).unwrap();
    match Store::open_default(&dir) {
        Err(StoreError::Corrupt {
            path,
            at: loc,
            detail,
        }) => {
            assert_eq!(path, seg.path);
            assert!(
                loc.offset <= at as u64 && loc.offset >= 16,
                "{loc} {detail}"
            );
        }
        Err(e) => panic!("expected a corruption error, got {e}"),
        Ok(_) => panic!("a damaged journal was replayed"),
    }
}

/// A record that decodes (and, sealed, authenticates) but whose op cannot
/// apply, a mkdir under a parent that does not exist, is damage named at
/// its own frame: the error names the segment file and the offset the
/// frame starts at (a good record follows it), read in bulk or streamed,
/// plain or sealed; nothing is changed.
#[test]
fn a_record_whose_op_cannot_apply_is_named_at_its_frame() {
    use nsimage_format::pb::{journal_op::Op, CreateOp, JournalOp, SetTimesOp};
    let key = Key::generate();
    let orphan = JournalOp {
        txid: 11,
        op: Some(Op::Mkdir(CreateOp {
            parent: 1 << 40,
            name: b"orphan".to_vec(),
            user: b"u".to_vec(),
            group: b"g".to_vec(),
            mode: 0o755,
            ..Default::default()
        })),
    };
    let good = JournalOp {
        txid: 12,
        op: Some(Op::SetTimes(SetTimesOp {
            id: nsimage_namespace::ROOT_ID,
            mtime: 5,
            atime: 5,
        })),
    };
    for sealed in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("s");
        let at_rest = nsimage_writer::AtRestOptions {
            key: sealed.then(|| key.clone()),
            ..Default::default()
        };
        Store::init(&dir, real(), &at_rest).unwrap();
        let opts = StoreOptions {
            key: at_rest.key.clone(),
            ..StoreOptions::default()
        };
        apply_n(&Store::open(&dir, real(), opts.clone()).unwrap(), 10);
        let seg = segments(&dir).pop().unwrap();
        let mut bytes = std::fs::read(&seg.path).unwrap();
        let at = bytes.len() as u64;
        for rec in [&orphan, &good] {
            let mut plain = Vec::new();
            journal::encode(rec, &mut plain);
            if sealed {
                let mut id = [0u8; 16];
                id.copy_from_slice(&bytes[16..32]);
                let here = bytes.len() as u64;
                SegmentSealer::new(&key, id, seg.first).seal(&plain, rec.txid, here, &mut bytes);
            } else {
                bytes.extend_from_slice(&plain);
            }
        }
        std::fs::write(&seg.path, &bytes).unwrap();
        for bulk_replay_bytes in [u64::MAX, 0] {
            let opts = StoreOptions {
                bulk_replay_bytes,
                ..opts.clone()
            };
            let case = format!("sealed {sealed}, bulk limit {bulk_replay_bytes}");
            match Store::open(&dir, real(), opts) {
                Err(StoreError::Corrupt {
                    path,
                    at: loc,
                    detail,
                }) => {
                    assert_eq!(path, seg.path, "{case}: {detail}");
                    assert_eq!(loc.offset, at, "{case}: {detail}");
                    assert!(detail.contains("txid 11"), "{case}: {detail}");
                }
                Err(e) => panic!("{case}: expected a corruption error, got {e}"),
                Ok(_) => panic!("{case}: an op that cannot apply was replayed"),
            }
            assert_eq!(std::fs::read(&seg.path).unwrap(), bytes, "{case}");
        }
    }
}

#[test]
fn a_torn_tail_or_trailing_zeros_are_cut_and_reported() {
    // A long tail of noise: the scan for a good record after the damage
    // must not hash a frame at every byte (seconds per MiB if it did).
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let noise: Vec<u8> = (0..512 << 10)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    for tail in [&b"\x40\x01\x02\x03"[..], &[0u8; 300][..], &noise[..]] {
        let started = std::time::Instant::now();
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("s");
        new_store(&dir);
        let acked = {
            let s = Store::open_default(&dir).unwrap();
            apply_n(&s, 60)
        };
        let seg = segments(&dir).pop().unwrap();
        let mut bytes = std::fs::read(&seg.path).unwrap();
        let good = bytes.len();
        bytes.extend_from_slice(tail);
        std::fs::write(&seg.path, &bytes).unwrap();
        let s = Store::open_default(&dir).unwrap();
        assert_eq!(s.report().txid, acked);
        assert_eq!(s.report().torn_tail_bytes, tail.len() as u64);
        drop(s);
        assert_eq!(std::fs::metadata(&seg.path).unwrap().len(), good as u64);
        // The store goes on appending after the cut.
        let s = Store::open_default(&dir).unwrap();
        assert_eq!(s.report().torn_tail_bytes, 0);
        let t = apply_n(&s, 5);
        drop(s);
        let s = Store::open_default(&dir).unwrap();
        assert_eq!(s.report().txid, t);
        assert_eq!(s.with_namespace(|ns| ns.digest()), reference(t).digest());
        eprintln!(
            "{} tail bytes: {:.2} s",
            tail.len(),
            started.elapsed().as_secs_f64()
        );
    }
}

#[test]
fn one_process_at_a_time() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    new_store(&dir);
    let _s = Store::open_default(&dir).unwrap();
    assert!(matches!(
        Store::open_default(&dir),
        Err(StoreError::Locked { .. })
    ));
}

#[test]
fn bulk_replay_reads_once_per_segment_streaming_per_buffer() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    new_store(&dir);
    let opts = StoreOptions {
        segment_bytes: 8 << 10,
        ..StoreOptions::default()
    };
    let last = {
        let s = Store::open(&dir, real(), opts.clone()).unwrap();
        apply_n(&s, 3000)
    };
    let nseg = segments(&dir).len();
    assert!(nseg > 5, "{nseg} segments");
    let bulk = Store::open(&dir, real(), opts.clone())
        .unwrap()
        .report()
        .clone();
    assert_eq!(bulk.txid, last);
    assert_eq!(bulk.bulk_segments, bulk.segments);
    // One read per segment, whatever the number of records.
    assert_eq!(bulk.read_calls, bulk.segments as u64);
    let streamed = Store::open(
        &dir,
        real(),
        StoreOptions {
            bulk_replay_bytes: 0,
            ..opts.clone()
        },
    )
    .unwrap()
    .report()
    .clone();
    assert_eq!(streamed.bulk_segments, 0);
    assert_eq!(streamed.txid, last);
    assert!(streamed.read_calls > bulk.read_calls);
    // A failing bulk read falls back to streaming.
    let fallback = Store::open(&dir, Arc::new(FaultyFs::new(Fault::Read, 1)), opts).unwrap();
    assert_eq!(fallback.report().txid, last);
    assert_eq!(fallback.report().bulk_segments, 0);
    assert_eq!(
        fallback.with_namespace(|ns| ns.digest()),
        reference(last).digest()
    );
}

#[test]
fn concurrent_appliers_share_fsyncs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    new_store(&dir);
    let fs = Arc::new(RealFs::default());
    let s = Arc::new(Store::open(&dir, fs.clone(), StoreOptions::default()).unwrap());
    let syncs_before = fs.sync_calls();
    let threads: Vec<_> = (0..4)
        .map(|k| {
            let s = s.clone();
            std::thread::spawn(move || {
                let mut txids = Vec::new();
                for i in 0..200u64 {
                    let op =
                        nsimage_format::pb::journal_op::Op::Mkdir(nsimage_format::pb::CreateOp {
                            parent: nsimage_namespace::ROOT_ID,
                            name: format!("t{k}-{i}").into_bytes(),
                            user: b"u".to_vec(),
                            group: b"g".to_vec(),
                            mode: 0o755,
                            ..Default::default()
                        });
                    txids.push(s.apply(op).unwrap());
                }
                txids
            })
        })
        .collect();
    let mut all: Vec<u64> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    all.sort_unstable();
    assert_eq!(all, (1..=800).collect::<Vec<_>>());
    // Group commit: callers waiting together share one fsync.
    let syncs = fs.sync_calls() - syncs_before;
    assert!(syncs < 800, "{syncs} fsyncs for 800 acknowledged ops");
    eprintln!("{syncs} fsyncs for 800 ops from 4 threads");
    let digest = s.with_namespace(|ns| ns.digest());
    drop(s);
    let s = Store::open_default(&dir).unwrap();
    assert_eq!(s.report().txid, 800);
    assert_eq!(s.with_namespace(|ns| ns.digest()), digest);
    let mut txids = Vec::new();
    let open = journal::ReadOptions {
        open: true,
        ..Default::default()
    };
    let fs = RealFs::default();
    let dump = journal::read(
        journal::Source::File(&fs),
        &segments(&dir)[0],
        &open,
        &mut |_, op| {
            txids.push(op.txid);
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(dump.ops, 800);
    assert_eq!(txids, (1..=800).collect::<Vec<_>>());
}

/// Writes `ns` as the store image `image_<txid>` (replacing any).
fn put_image(dir: &Path, ns: &Namespace, txid: u64) {
    let mut bytes = Vec::new();
    nsimage_writer::write_image(ns, &mut bytes, &nsimage_writer::WriteOptions::default()).unwrap();
    std::fs::write(dir.join(format!("image_{txid:020}")), bytes).unwrap();
}

#[test]
fn a_headerless_newest_segment_is_a_torn_create_and_is_replaced() {
    let header = journal::header();
    let mut holed = header;
    holed[3..9].fill(0);
    for (k, left) in [&b""[..], &header[..5], &[0u8; 16][..], &holed[..]]
        .into_iter()
        .enumerate()
    {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("s");
        new_store(&dir);
        let acked = {
            let s = Store::open_default(&dir).unwrap();
            apply_n(&s, 10);
            s.checkpoint().unwrap()
        };
        // A crash while the checkpoint's roll created the next segment.
        let torn = dir.join(journal::open_name(acked + 1));
        std::fs::write(&torn, left).unwrap();
        let last = {
            let s = Store::open_default(&dir).unwrap_or_else(|e| panic!("case {k}: {e}"));
            assert_eq!(s.report().txid, acked, "case {k}");
            apply_n(&s, 5)
        };
        // The ops went into a segment with its header: the next open reads them.
        let bytes = std::fs::read(&torn).unwrap();
        assert_eq!(bytes[..16], header, "case {k}");
        let s = Store::open_default(&dir).unwrap_or_else(|e| panic!("case {k}: {e}"));
        assert_eq!(s.report().txid, last, "case {k}");
        assert_eq!(s.with_namespace(|ns| ns.digest()), reference(last).digest());
    }
}

#[test]
fn a_headerless_open_segment_that_is_not_the_newest_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    new_store(&dir);
    {
        let s = Store::open_default(&dir).unwrap();
        apply_n(&s, 10);
        s.checkpoint().unwrap();
        apply_n(&s, 3);
    }
    let stray = dir.join(journal::open_name(5));
    std::fs::write(&stray, b"").unwrap();
    let before = names(&dir);
    assert!(matches!(
        Store::open_default(&dir),
        Err(StoreError::Corrupt { .. })
    ));
    assert_eq!(names(&dir), before, "nothing removed");
}

#[test]
fn open_removes_only_the_stores_own_temp_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    new_store(&dir);
    std::fs::write(dir.join("notes.tmp.txt"), b"mine").unwrap();
    std::fs::write(dir.join("image_5.tmp"), b"not 20 digits").unwrap();
    std::fs::create_dir(dir.join("x.tmp")).unwrap();
    // The store's exact temp name, but a directory: not the store's file.
    std::fs::create_dir(dir.join("image_00000000000000000007.tmp")).unwrap();
    std::fs::write(dir.join("image_00000000000000000009.tmp"), b"unfinished").unwrap();
    let s = Store::open_default(&dir).unwrap();
    let left = names(&dir);
    for n in [
        "notes.tmp.txt",
        "image_5.tmp",
        "x.tmp",
        "image_00000000000000000007.tmp",
    ] {
        assert!(left.iter().any(|l| l == n), "{n} was removed: {left:?}");
    }
    assert!(!left.iter().any(|l| l == "image_00000000000000000009.tmp"));
    let st = s.status().unwrap();
    assert_eq!(st.unknown, ["image_5.tmp", "notes.tmp.txt", "x.tmp"]);
    assert_eq!(st.temps, ["image_00000000000000000007.tmp"]);
}

#[test]
fn txids_and_ids_at_u64_max_are_refused_not_wrapped() {
    let root_times = || {
        nsimage_format::pb::journal_op::Op::SetTimes(nsimage_format::pb::SetTimesOp {
            id: nsimage_namespace::ROOT_ID,
            mtime: 5,
            atime: 5,
        })
    };
    // An image named and holding txid u64::MAX: readable, takes no op.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    new_store(&dir);
    let mut ns = Namespace::default();
    ns.info_mut().last_txid = u64::MAX;
    put_image(&dir, &ns, u64::MAX);
    {
        let s = Store::open_default(&dir).unwrap();
        assert_eq!(s.report().txid, u64::MAX);
        let e = s.apply(root_times()).unwrap_err();
        assert!(e.is_data_error(), "{e}");
        assert_eq!(s.with_namespace(|n| n.digest()), ns.digest(), "unchanged");
    }
    // Without an open segment, none can be started after u64::MAX.
    std::fs::remove_file(dir.join(journal::open_name(1))).unwrap();
    let e = Store::open_default(&dir)
        .err()
        .expect("no segment after u64::MAX");
    assert!(e.is_data_error(), "{e}");

    // A record with txid u64::MAX after an image at u64::MAX - 1.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    new_store(&dir);
    std::fs::remove_file(dir.join(journal::open_name(1))).unwrap();
    let mut ns = Namespace::default();
    ns.info_mut().last_txid = u64::MAX - 1;
    put_image(&dir, &ns, u64::MAX - 1);
    let mut seg = journal::header().to_vec();
    let rec = nsimage_format::pb::JournalOp {
        txid: u64::MAX,
        op: Some(root_times()),
    };
    journal::encode(&rec, &mut seg);
    std::fs::write(dir.join(journal::open_name(u64::MAX)), &seg).unwrap();
    {
        let s = Store::open_default(&dir).unwrap();
        assert_eq!(s.report().txid, u64::MAX);
        assert_eq!(s.report().replayed, 1);
        assert!(s.apply(root_times()).is_err());
    }
    assert_eq!(Store::open_default(&dir).unwrap().report().txid, u64::MAX);

    // Segment names: u64::MAX is a txid, one more is not a segment name; a
    // finished segment that ends before it starts is an error.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    new_store(&dir);
    let over = "edits_99999999999999999999-99999999999999999999";
    std::fs::write(dir.join(over), b"").unwrap();
    assert_eq!(
        Store::open_default(&dir).unwrap().status().unwrap().unknown,
        [over]
    );
    let backwards = dir.join(journal::finished_name(u64::MAX, 1));
    std::fs::write(&backwards, journal::header()).unwrap();
    match Store::open_default(&dir) {
        Err(StoreError::Corrupt { path, .. }) => assert_eq!(path, backwards),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a segment ending before it starts was accepted"),
    }

    // last_inode_id = u64::MAX in NS_INFO: creating an inode is refused,
    // other ops still apply.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    new_store(&dir);
    let mut ns = Namespace::default();
    ns.info_mut().last_inode_id = u64::MAX;
    put_image(&dir, &ns, 0);
    let s = Store::open_default(&dir).unwrap();
    let before = s.with_namespace(|n| n.digest());
    let mkdir = nsimage_format::pb::journal_op::Op::Mkdir(nsimage_format::pb::CreateOp {
        parent: nsimage_namespace::ROOT_ID,
        name: b"d".to_vec(),
        user: b"u".to_vec(),
        group: b"g".to_vec(),
        mode: 0o755,
        ..Default::default()
    });
    assert!(matches!(s.apply(mkdir), Err(StoreError::Refused(_))));
    assert_eq!(s.with_namespace(|n| n.digest()), before);
    assert_eq!(s.with_namespace(|n| n.info().last_txid), 0);
    // The workload's generator copes with the id too.
    for t in 1..=20 {
        let op = s.with_namespace(|n| W.op(n, t));
        let _ = s.apply(op);
    }
    let before = s.with_namespace(|n| n.info().last_txid);
    assert_eq!(s.apply(root_times()).unwrap(), before + 1);
}

/// A user name longer than any reader accepts is refused by the store (it
/// takes no txid), so no checkpoint can hold what its own open refuses:
/// after two checkpoints (the second purges the journal behind the first)
/// the store still opens with every acknowledged op.
#[test]
fn an_op_whose_strings_no_reader_accepts_is_refused_and_checkpoints_stay_loadable() {
    use nsimage_format::pb::{journal_op::Op, SetOwnerOp};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    new_store(dir);
    let s = Store::open(dir, real(), StoreOptions::default()).unwrap();
    let acked = apply_n(&s, 20);
    for (user, group) in [
        (vec![b'u'; 65_537], b"g".to_vec()),
        (b"u".to_vec(), vec![b'g'; 70_000]),
    ] {
        let r = s.apply(Op::SetOwner(SetOwnerOp {
            id: nsimage_namespace::ROOT_ID,
            user,
            group,
        }));
        assert!(matches!(r, Err(StoreError::Refused(_))), "{r:?}");
    }
    assert_eq!(s.checkpoint().unwrap(), acked);
    let acked = apply_n(&s, 5);
    assert_eq!(s.checkpoint().unwrap(), acked);
    drop(s);
    let s = Store::open(dir, real(), StoreOptions::default()).unwrap();
    assert_eq!(s.report().txid, acked);
    assert_eq!(
        s.with_namespace(|ns| ns.digest()),
        reference(acked).digest()
    );
}

/// An open segment longer than its header whose header is gone (all zeros,
/// say) once held records: damage, not a torn create. The open refuses it,
/// naming the segment, and changes nothing.
#[test]
fn a_zeroed_segment_longer_than_its_header_is_refused_not_replaced() {
    let (tmp, seg) = store_after_10_ops();
    let dir = tmp.path().join("s");
    let len = std::fs::metadata(&seg.path).unwrap().len() as usize;
    assert!(len > 16);
    std::fs::write(&seg.path, vec![0u8; len]).unwrap();
    let before = names(&dir);
    match Store::open_default(&dir) {
        Err(StoreError::Corrupt { path, .. }) => assert_eq!(path, seg.path),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a zeroed segment that held 10 acknowledged ops was accepted"),
    }
    assert_eq!(names(&dir), before);
    assert_eq!(std::fs::read(&seg.path).unwrap(), vec![0u8; len]);
}

/// A tail crafted so that a great many positions look like the start of a
/// large record (a 4 MiB length followed by the txid tag) cannot make the
/// scan for good records after damage hash without end: the scan has a
/// budget, and when it runs out the damage is refused, nothing cut. (Without
/// the budget this open hashes about a terabyte.)
#[test]
fn a_crafted_tail_cannot_make_the_damage_scan_quadratic() {
    let (tmp, seg) = store_after_10_ops();
    let dir = tmp.path().join("s");
    let mut bytes = std::fs::read(&seg.path).unwrap();
    // A record with a bad checksum, then the crafted pattern: every 19
    // bytes a frame of 4 MiB whose message has a record's shape (the txid
    // field, then one operation field running exactly to the end), so that
    // each must be hashed to be told from a good record.
    bytes.extend_from_slice(&[12, 1, 2, 3, 4, 5, 6, 7, 8, 0x08, 1, 0, 0]);
    let big = 4u32 << 20;
    let varint4 = |v: u32| {
        [
            (v & 0x7f) as u8 | 0x80,
            ((v >> 7) & 0x7f) as u8 | 0x80,
            ((v >> 14) & 0x7f) as u8 | 0x80,
            (v >> 21) as u8,
        ]
    };
    let mut unit = varint4(big).to_vec();
    unit.extend_from_slice(&[0; 8]);
    unit.extend_from_slice(&[0x08, 0x01, 0x12]);
    unit.extend_from_slice(&varint4(big - 15));
    for _ in 0..(8 << 20) / unit.len() {
        bytes.extend_from_slice(&unit);
    }
    std::fs::write(&seg.path, &bytes).unwrap();
    let started = std::time::Instant::now();
    match Store::open_default(&dir) {
        Err(StoreError::Corrupt { path, detail, .. }) => {
            assert_eq!(path, seg.path);
            assert!(detail.contains("nothing was cut"), "{detail}");
        }
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("the crafted tail was cut as a torn tail"),
    }
    // A hang guard, not a performance target: the bounded scan takes well
    // under a second; the unbounded one would take hours.
    assert!(started.elapsed() < std::time::Duration::from_secs(120));
    assert_eq!(std::fs::read(&seg.path).unwrap(), bytes);
}

/// An op whose record would be larger than the journal's largest record (a
/// mkdir carrying a 65 MiB symlink target it does not use) is refused before
/// it changes anything: replay would refuse such a record.
#[test]
fn an_op_too_large_for_the_journal_is_refused() {
    use nsimage_format::pb::{journal_op::Op, CreateOp};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    new_store(dir);
    let s = Store::open(dir, real(), StoreOptions::default()).unwrap();
    let acked = apply_n(&s, 3);
    let before = s.with_namespace(|ns| ns.digest());
    let r = s.apply(Op::Mkdir(CreateOp {
        parent: nsimage_namespace::ROOT_ID,
        name: b"big".to_vec(),
        target: vec![b't'; 65 << 20],
        ..Default::default()
    }));
    assert!(matches!(r, Err(StoreError::Refused(_))), "{r:?}");
    assert_eq!(s.with_namespace(|ns| ns.digest()), before);
    let t = apply_n(&s, 2);
    assert_eq!(t, acked + 2);
    drop(s);
    let s = Store::open(dir, real(), StoreOptions::default()).unwrap();
    assert_eq!(s.report().txid, t);
}

/// `store init DIR --from IMAGE`: a store whose first image is IMAGE's
/// namespace at its txid; `store apply` goes on from the next txid, and
/// recovery gives the reference namespace. A file that is not an image is
/// refused and leaves no store.
#[test]
fn store_init_from_an_image_continues_its_txids() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    new_store(&a);
    let s = Store::open_default(&a).unwrap();
    assert_eq!(apply_n(&s, 300), 300);
    assert_eq!(s.checkpoint().unwrap(), 300);
    drop(s);
    let image = a.join("image_00000000000000000300");
    let b = tmp.path().join("b");
    let out = common::store_from(&b, &image);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("at txid 300"), "{text}");
    assert_eq!(
        names(&b),
        [
            "LOCK",
            "VERSION",
            "edits_inprogress_00000000000000000301",
            "image_00000000000000000300"
        ]
    );
    let out = common::nsimage(&[
        "store",
        "apply",
        b.to_str().unwrap(),
        "--ops",
        "20",
        "--seed",
        "3",
    ]);
    assert!(out.status.success());
    let rec = common::json(&common::nsimage(&[
        "store",
        "recover",
        b.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(rec["image_txid"], 300);
    assert_eq!(rec["txid"], 320);
    assert_eq!(rec["digest"], reference(320).digest().to_string());

    // Not an image: refused, no store made.
    let junk = tmp.path().join("junk");
    std::fs::write(&junk, b"not an image").unwrap();
    let c = tmp.path().join("c");
    let out = common::nsimage(&[
        "store",
        "init",
        c.to_str().unwrap(),
        "--from",
        junk.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(!c.join("VERSION").exists());
}
