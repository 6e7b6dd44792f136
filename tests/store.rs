//! The checkpoint store: injected I/O faults, damaged images and journals,
//! torn tails, the process lock, bulk and streamed replay, group commit.

use nsimage::store::io::{Fault, FaultyFs, Fs, RealFs};
use nsimage::store::journal::{self, Segment};
use nsimage::store::workload::Workload;
use nsimage::store::{Store, StoreError, StoreOptions};
use nsimage::Namespace;
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
    Store::init(dir, real()).unwrap();
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

#[test]
fn a_torn_tail_or_trailing_zeros_are_cut_and_reported() {
    for tail in [&b"\x40\x01\x02\x03"[..], &[0u8; 300][..]] {
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
                        nsimage::format::pb::journal_op::Op::Mkdir(nsimage::format::pb::CreateOp {
                            parent: nsimage::format::ROOT_ID,
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
    let dump = journal::read(
        &RealFs::default(),
        &segments(&dir)[0],
        true,
        u64::MAX,
        &mut |op| {
            txids.push(op.txid);
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(dump.ops, 800);
    assert_eq!(txids, (1..=800).collect::<Vec<_>>());
}
