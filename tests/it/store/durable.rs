//! The store's durable view (`StoreOptions::durable_view`), what a server
//! answers readers from: an op is in it once durable and never before,
//! never when its journal write fails (a full disk), and every view is the
//! namespace exactly as of its txid while writers run.

use nsimage_format::pb::{journal_op::Op, CreateOp};
use nsimage_namespace::{Namespace, ROOT_ID};
use nsimage_store::fs::{Fault, FaultyFs, RealFs};
use nsimage_store::{Store, StoreError, StoreOptions, SubmitError};
use nsimage_testkit::workload::Workload;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn mkdir(name: &str) -> Op {
    Op::Mkdir(CreateOp {
        parent: ROOT_ID,
        name: name.as_bytes().to_vec(),
        user: b"hdfs".to_vec(),
        group: b"supergroup".to_vec(),
        mode: 0o755,
        ..Default::default()
    })
}

fn viewed() -> StoreOptions {
    StoreOptions {
        durable_view: true,
        ..StoreOptions::default()
    }
}

fn init(dir: &Path) {
    Store::init(dir, Arc::new(RealFs::default()), &Default::default()).unwrap();
}

#[test]
fn an_op_is_in_the_durable_view_once_durable_and_never_when_its_write_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    init(&dir);
    // Without the option there is no view (and no snapshot kept).
    let plain = Store::open(&dir, Arc::new(RealFs::default()), StoreOptions::default()).unwrap();
    assert!(plain.durable_namespace().is_none());
    drop(plain);

    // The journal's second write fails as a full disk fails it.
    let fs = Arc::new(FaultyFs::new(Fault::NoSpace, 1));
    let store = Store::open(&dir, fs, viewed()).unwrap();
    let seen = |p: &[u8]| store.durable_namespace().unwrap().resolve(p).is_ok();
    let a = store.submit(mkdir("a")).unwrap();
    assert!(!seen(b"/a"), "applied, not durable: not in the view");
    assert!(store.with_namespace(|ns| ns.resolve(b"/a").is_ok()));
    store.wait_durable(a).unwrap();
    assert!(seen(b"/a"));
    assert_eq!(store.durable_namespace().unwrap().info().last_txid, a);

    let b = store.submit(mkdir("b")).unwrap();
    let e = store.wait_durable(b).unwrap_err();
    assert!(matches!(e, StoreError::Poisoned(_)), "{e}");
    assert!(
        store.failure().is_some_and(|f| f.contains("no space")),
        "{:?}",
        store.failure()
    );
    assert!(!seen(b"/b"), "a failed write is never in the view");
    assert!(seen(b"/a"));
    assert_eq!(store.durable_txid(), a);
    drop(store);

    let reopened = Store::open(&dir, Arc::new(RealFs::default()), viewed()).unwrap();
    let ns = reopened.durable_namespace().unwrap();
    assert!(ns.resolve(b"/a").is_ok() && ns.resolve(b"/b").is_err());
    assert_eq!(ns.info().last_txid, a);
}

#[test]
fn every_durable_view_is_the_namespace_at_its_txid_while_writers_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    init(&dir);
    let store = Arc::new(Store::open(&dir, Arc::new(RealFs::default()), viewed()).unwrap());
    let w = Workload { seed: 7 };
    let stop = Arc::new(AtomicBool::new(false));
    // A reader: each view is no newer than what is durable, never goes
    // back, and equals the workload's namespace at its txid.
    let reader = {
        let (store, stop) = (Arc::clone(&store), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut last = 0;
            let mut checked = 0u32;
            while !stop.load(Ordering::Acquire) {
                let view = store.durable_namespace().unwrap();
                let t = view.info().last_txid;
                assert!(t <= store.durable_txid(), "view {t} is not durable");
                assert!(t >= last, "view went back from {last} to {t}");
                if t != last {
                    let mut reference = Namespace::default();
                    w.advance(&mut reference, t);
                    assert_eq!(view.digest(), reference.digest(), "txid {t}");
                    checked += 1;
                }
                last = t;
            }
            checked
        })
    };
    let writers: Vec<_> = (0..4)
        .map(|_| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                for _ in 0..60 {
                    let txid = store
                        .submit_with(|ns| {
                            let next = ns.info().last_txid + 1;
                            Ok::<_, std::convert::Infallible>(Some(w.op(ns, next)))
                        })
                        .map_err(|e| match e {
                            SubmitError::Store(e) => e,
                            SubmitError::Build(never) => match never {},
                        })
                        .unwrap()
                        .unwrap();
                    store.wait_durable(txid).unwrap();
                    // Acknowledged: every view from now on holds it.
                    let t = store.durable_namespace().unwrap().info().last_txid;
                    assert!(t >= txid, "acknowledged {txid}, view at {t}");
                }
            })
        })
        .collect();
    for t in writers {
        t.join().unwrap();
    }
    stop.store(true, Ordering::Release);
    let checked = reader.join().unwrap();
    assert!(checked >= 1);
    let view = store.durable_namespace().unwrap();
    assert_eq!(view.info().last_txid, 240);
    assert_eq!(view.digest(), store.with_namespace(Namespace::digest));
}
