//! Every bit of a small open journal segment flipped in turn (header
//! included), recovered through both replay paths (bulk and streamed) and
//! through the read-only `Store::inspect`. Recovery either refuses, naming
//! the segment, with every file left as it was, or succeeds having kept
//! every op acknowledged before the damaged record, at the digest of a
//! reference namespace at its txid. It never succeeds with fewer.

use nsimage_format::framing::read_varint;
use nsimage_loader::LoadOptions;
use nsimage_namespace::{Digest, Namespace};
use nsimage_store::fs::{Fs, RealFs};
use nsimage_store::journal::HEADER_LEN;
use nsimage_store::{Store, StoreOptions};
use nsimage_testkit::workload::Workload;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

const OPS: u64 = 20;
const W: Workload = Workload { seed: 7 };

/// Every file of the directory with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect()
}

/// Overwrites `p` with `b` in place. Not `fs::write`: truncating a file to
/// zero makes ext4 flush it on close (auto_da_alloc), milliseconds a call.
fn overwrite(p: &Path, b: &[u8]) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
    f.write_all(b).unwrap();
    f.set_len(b.len() as u64).unwrap();
}

/// Puts the directory back to `snap`: removes files it did not hold and
/// rewrites the rest.
fn restore(dir: &Path, snap: &BTreeMap<PathBuf, Vec<u8>>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if !snap.contains_key(&p) {
            std::fs::remove_file(&p).unwrap();
        }
    }
    for (p, b) in snap {
        if std::fs::read(p).ok().as_deref() != Some(&b[..]) {
            overwrite(p, b);
        }
    }
}

#[test]
fn every_flipped_bit_of_the_open_segment_is_refused_or_loses_nothing_acknowledged() {
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    Store::init(&dir, Arc::new(RealFs::default()), &Default::default()).unwrap();
    {
        let s = Store::open_default(&dir).unwrap();
        for _ in 0..OPS {
            let t = s.with_namespace(|ns| ns.info().last_txid) + 1;
            let op = s.with_namespace(|ns| W.op(ns, t));
            s.apply(op).unwrap();
        }
    }
    // The reference digest at every txid.
    let mut refs: Vec<Digest> = Vec::new();
    let mut ns = Namespace::default();
    for t in 0..=OPS {
        W.advance(&mut ns, t);
        refs.push(ns.digest());
    }
    let seg = dir.join(nsimage_store::journal::open_name(1));
    let pristine = std::fs::read(&seg).unwrap();
    // Where each record starts: record k holds txid k + 1.
    let mut starts = Vec::new();
    let mut pos = HEADER_LEN;
    while pos < pristine.len() {
        starts.push(pos);
        let (len, w) = read_varint(&pristine[pos..]).unwrap();
        pos += w + len as usize;
    }
    assert_eq!(starts.len() as u64, OPS);
    let snap = snapshot(&dir);
    let fs: Arc<dyn Fs> = Arc::new(RealFs::default());
    // One thread: asking for the core count reads cgroup files each load.
    let bulk = StoreOptions {
        load: LoadOptions {
            threads: 1,
            serial: true,
            ..LoadOptions::default()
        },
        ..StoreOptions::default()
    };
    let streamed = StoreOptions {
        bulk_replay_bytes: 0,
        ..bulk.clone()
    };
    let (mut refused, mut recovered, mut cut) = (0u64, 0u64, 0u64);
    for bit in 0..pristine.len() * 8 {
        let byte = bit / 8;
        // Txid of the last record that ends before the damaged byte: every
        // op up to it was acknowledged before the damaged record.
        let kept_before = starts
            .iter()
            .filter(|&&s| s <= byte)
            .count()
            .saturating_sub(1) as u64;
        // Every op of this segment was acknowledged (fsynced), so success
        // must keep them all, but for the damaged record itself when it is
        // the last one (a bit flipped in it cannot be told from a torn
        // write of it). Keeping only those before the damage would accept
        // the very loss this test is for: a flipped length prefix taken for
        // a torn tail and every later acknowledged record cut.
        let must_keep = if kept_before + 1 == OPS { OPS - 1 } else { OPS };
        let mut bytes = pristine.clone();
        bytes[byte] ^= 1 << (bit % 8);
        for opts in [&bulk, &streamed] {
            overwrite(&seg, &bytes);
            let mut damaged = snap.clone();
            damaged.insert(seg.clone(), bytes.clone());
            let what = format!(
                "bit {bit} (byte {byte}), bulk limit {}",
                opts.bulk_replay_bytes
            );
            // The read-only path: same verdict, nothing changed.
            let inspected = Store::inspect(&dir, &*fs, opts);
            if inspected.is_ok() {
                assert_eq!(snapshot(&dir), damaged, "{what}: inspect changed the store");
            }
            match Store::open(&dir, fs.clone(), opts.clone()) {
                Err(e) => {
                    refused += 1;
                    assert!(e.is_data_error(), "{what}: {e}");
                    assert!(e.to_string().contains("edits_inprogress"), "{what}: {e}");
                    assert!(
                        inspected.is_err(),
                        "{what}: inspect accepted what open refuses"
                    );
                    assert_eq!(
                        snapshot(&dir),
                        damaged,
                        "{what}: a refusal changed the store"
                    );
                }
                Ok(s) => {
                    recovered += 1;
                    let r = s.report().clone();
                    cut += u64::from(r.torn_tail_bytes > 0);
                    assert!(
                        r.txid >= must_keep && r.txid >= kept_before,
                        "{what}: recovered to txid {} but txid {must_keep} was acknowledged",
                        r.txid
                    );
                    assert!(r.txid <= OPS, "{what}");
                    let digest = s.with_namespace(|ns| ns.digest());
                    assert_eq!(digest, refs[r.txid as usize], "{what}: txid {}", r.txid);
                    let st = inspected.unwrap_or_else(|e| panic!("{what}: inspect: {e}"));
                    assert_eq!(st.txid, r.txid, "{what}");
                    assert_eq!(st.torn_tail_bytes, r.torn_tail_bytes, "{what}");
                    drop(s);
                    restore(&dir, &snap);
                }
            }
        }
    }
    std::fs::write(&seg, &pristine).unwrap();
    eprintln!(
        "{} bits x 2 paths: {refused} refused, {recovered} recovered ({cut} with a cut tail) in {:.1} s",
        pristine.len() * 8,
        started.elapsed().as_secs_f64()
    );
    // Both verdicts occur: flips in the last record are torn tails, flips in
    // a length prefix mid-segment are refused.
    assert!(refused > 0 && cut > 0, "{refused} refused, {cut} cut");
}
