//! The store's side of high availability (issue 41): a group commit goes
//! to the store's `Replica` before its own journal, and a batch the
//! replica refuses is neither written nor acknowledged; another store
//! applies the batches the replica saw (`submit_replicated`: same
//! namespace, batches seen twice skipped, gaps and damage refused); and a
//! store adopts a peer's checkpoint (`adopt_image`), its open segment
//! finished below the image so that its journal goes on without a jump.

use nsimage_namespace::Namespace;
use nsimage_store::fs::RealFs;
use nsimage_store::replica::Replica;
use nsimage_store::{Store, StoreError, StoreOptions};
use nsimage_testkit::workload::Workload;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A replica that keeps every batch it is given, or refuses them all.
#[derive(Default)]
struct Recorder {
    batches: Mutex<Vec<(u64, u64, Vec<u8>)>>,
    refuse: AtomicBool,
}

impl Replica for Recorder {
    fn commit(&self, first: u64, last: u64, records: &[u8]) -> Result<(), String> {
        if self.refuse.load(Ordering::Acquire) {
            return Err("fenced: a test refuses".into());
        }
        self.batches
            .lock()
            .unwrap()
            .push((first, last, records.to_vec()));
        Ok(())
    }
}

fn open(dir: &Path) -> Store {
    Store::open(dir, Arc::new(RealFs::default()), StoreOptions::default()).unwrap()
}

fn init(dir: &Path) {
    Store::init(dir, Arc::new(RealFs::default()), &Default::default()).unwrap();
}

/// Applies the workload's next `n` ops, each made durable.
fn apply(store: &Store, w: &Workload, n: u64) -> Result<u64, StoreError> {
    let mut last = store.txid();
    for _ in 0..n {
        last = super::background::apply_next(store, w)?;
    }
    Ok(last)
}

fn digest(store: &Store) -> String {
    store.with_namespace(|ns| ns.digest().to_string())
}

#[test]
fn batches_go_to_the_replica_first_and_a_refused_one_is_never_written() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    init(&a);
    init(&b);
    let w = Workload { seed: 41 };
    let rec = Arc::new(Recorder::default());
    let leader = open(&a);
    leader.set_replica(Some(rec.clone() as Arc<dyn Replica>));
    apply(&leader, &w, 60).unwrap();
    let acknowledged = digest(&leader);

    // The follower applies what the replica saw: the same namespace.
    let follower = open(&b);
    let batches = rec.batches.lock().unwrap().clone();
    assert_eq!(batches.len(), 60, "one batch per fsync");
    for (first, last, records) in &batches {
        assert_eq!(
            follower.submit_replicated(records, "test").unwrap(),
            *last,
            "batch {first}..={last}"
        );
    }
    // Seen twice: skipped.
    let (_, last, records) = &batches[10];
    assert_eq!(follower.submit_replicated(records, "test").unwrap(), 60);
    assert!(*last < 60);
    follower.sync().unwrap();
    assert_eq!(digest(&follower), acknowledged);

    // A refused batch: not acknowledged, the store poisoned, and after a
    // reopen the op is not there.
    rec.refuse.store(true, Ordering::Release);
    let err = apply(&leader, &w, 1).unwrap_err();
    assert!(
        err.to_string().contains("not committed by the replica"),
        "{err}"
    );
    assert!(leader.failure().is_some());
    drop(leader);
    let again = open(&a);
    assert_eq!(again.txid(), 60);
    assert_eq!(digest(&again), acknowledged);
}

#[test]
fn replicated_batches_with_a_gap_or_damage_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    init(&a);
    init(&b);
    let w = Workload { seed: 42 };
    let rec = Arc::new(Recorder::default());
    let leader = open(&a);
    leader.set_replica(Some(rec.clone() as Arc<dyn Replica>));
    apply(&leader, &w, 5).unwrap();
    let batches = rec.batches.lock().unwrap().clone();
    let follower = open(&b);
    // Batch 2 before batch 1: a gap.
    let gap = follower.submit_replicated(&batches[1].2, "k").unwrap_err();
    assert!(matches!(gap, StoreError::Corrupt { .. }), "{gap}");
    assert!(gap.to_string().contains("gap"), "{gap}");
    assert_eq!(follower.txid(), 0);
    // A flipped byte in the record: its checksum fails.
    let mut bad = batches[0].2.clone();
    let at = bad.len() - 1;
    bad[at] ^= 0x40;
    let e = follower.submit_replicated(&bad, "k").unwrap_err();
    assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
    // Cut short.
    let e = follower
        .submit_replicated(&batches[0].2[..batches[0].2.len() - 2], "k")
        .unwrap_err();
    assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
    assert_eq!(follower.txid(), 0);
    assert_eq!(follower.submit_replicated(&batches[0].2, "k").unwrap(), 1);
}

#[test]
fn a_store_adopts_a_peers_checkpoint_and_its_journal_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    init(&a);
    init(&b);
    let w = Workload { seed: 43 };
    // The behind store: 20 ops in its open segment.
    {
        let s = open(&a);
        apply(&s, &w, 20).unwrap();
    }
    // The peer: 80 ops and a checkpoint at 80.
    let peer = open(&b);
    apply(&peer, &w, 80).unwrap();
    assert_eq!(peer.checkpoint().unwrap(), 80);
    let (txid, image) = peer.newest_image();
    assert_eq!(txid, 80);
    let copy = tmp.path().join("fetched");
    std::fs::copy(&image, &copy).unwrap();
    let want = digest(&peer);

    // Not while the store is open.
    let held = open(&a);
    let e = Store::adopt_image(&a, &RealFs::default(), txid, &copy).unwrap_err();
    assert!(matches!(e, StoreError::Locked { .. }), "{e}");
    drop(held);

    Store::adopt_image(&a, &RealFs::default(), txid, &copy).unwrap();
    let s = open(&a);
    assert_eq!(s.txid(), 80);
    assert_eq!(digest(&s), want);
    apply(&s, &w, 7).unwrap();
    let after: String = digest(&s);
    drop(s);
    let names: Vec<String> = std::fs::read_dir(&a)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.contains(&"edits_00000000000000000001-00000000000000000020".to_string()),
        "the old open segment is finished at its last record: {names:?}"
    );
    let s = open(&a);
    assert_eq!(s.txid(), 87);
    assert_eq!(digest(&s), after);
    let mut reference = Namespace::default();
    w.advance(&mut reference, 87);
    assert_eq!(after, reference.digest().to_string());
}
