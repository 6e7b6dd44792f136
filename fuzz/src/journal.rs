//! The journal target, model-based.
//!
//! The input chooses a workload seed, a number of ops, checkpoints, segment
//! size, bulk or streamed replay and retention; the ops are applied to a
//! `Store` in a temporary directory (tmpfs when there is one) and each is
//! acknowledged. Then the input damages the journal files: bit flips (any
//! byte, or a record's length prefix), truncation, zeroed tails, overwritten
//! bytes, appended bytes. Then the store is opened (recovered).
//!
//! The model knows which record (txid) every journal byte belongs to, so it
//! knows the first damaged record. The property:
//! - a recovery that succeeds holds at least every op acknowledged before the
//!   first damaged record, and every op whose record the damage left intact
//!   (a torn tail can only be the end of the last write: an intact record
//!   after the damage shows the damage is not one, so cutting there loses
//!   acknowledged ops; issue 7, item 1), at most the acknowledged ones, and
//!   its digest is
//!   the reference namespace's (a fresh namespace applying the same ops) at
//!   the recovered txid; it then acknowledges more ops, and opening it again
//!   gives exactly those;
//! - a recovery that fails says the data is corrupt (never an I/O error).

use crate::input::Input;
use nsimage::format::framing::Records;
use nsimage::format::Location;
use nsimage::store::io::{Fs, RealFs};
use nsimage::store::journal::{Segment, HEADER_LEN};
use nsimage::store::workload::Workload;
use nsimage::store::{Store, StoreError, StoreOptions};
use nsimage::Namespace;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One journal file before the damage: its bytes and where each record is.
struct SegFile {
    path: PathBuf,
    first: u64,
    bytes: Vec<u8>,
    /// (start, end) of each record frame; record `i` holds txid `first + i`.
    frames: Vec<(usize, usize)>,
}

fn name(path: &Path) -> String {
    path.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

fn fs() -> Arc<dyn Fs> {
    Arc::new(RealFs::default())
}

fn reference(w: &Workload, txid: u64) -> nsimage::Digest {
    let mut ns = Namespace::default();
    w.advance(&mut ns, txid);
    ns.digest()
}

fn segment_files(dir: &Path) -> Vec<SegFile> {
    let mut segs: Vec<Segment> = std::fs::read_dir(dir)
        .expect("listing the store")
        .filter_map(|e| Segment::parse(dir, &e.expect("entry").file_name().to_string_lossy()))
        .collect();
    segs.sort_by_key(|s| (s.first, s.last.is_none()));
    segs.into_iter()
        .map(|s| {
            let bytes = std::fs::read(&s.path).expect("reading a segment");
            let mut frames = Vec::new();
            if bytes.len() >= HEADER_LEN {
                for r in Records::new(&bytes[HEADER_LEN..], Location::at(HEADER_LEN as u64)) {
                    let (start, body) = r.expect("an undamaged segment frames");
                    let width = prost::encoding::encoded_len_varint(body.len() as u64);
                    let start = start as usize;
                    frames.push((start, start + width + body.len()));
                }
            }
            SegFile {
                path: s.path,
                first: s.first,
                bytes,
                frames,
            }
        })
        .collect()
}

/// The first txid whose record (or segment header) differs between `old`
/// and `new`; `None` when only bytes after the last record changed.
fn first_damaged(seg: &SegFile, new: &[u8]) -> Option<u64> {
    let old = &seg.bytes;
    let common = old.len().min(new.len());
    let diff = (0..common).find(|&i| old[i] != new[i]);
    let at = match diff {
        Some(i) => i,
        None if new.len() < old.len() => new.len(),
        None => return None,
    };
    if at < HEADER_LEN {
        return Some(seg.first);
    }
    seg.frames
        .iter()
        .position(|&(_, end)| at < end)
        .map(|i| seg.first + i as u64)
}

/// The last txid whose record frame is byte for byte what it was (0 if
/// none).
fn last_intact(seg: &SegFile, new: &[u8]) -> u64 {
    seg.frames
        .iter()
        .enumerate()
        .rev()
        .find(|(_, &(start, end))| new.get(start..end) == Some(&seg.bytes[start..end]))
        .map_or(0, |(i, _)| seg.first + i as u64)
}

/// Applies one damage read from `inp` to `bytes`; returns what it did.
fn damage(inp: &mut Input, seg: &SegFile, bytes: &mut Vec<u8>) -> String {
    let len = bytes.len();
    match inp.u8() % 6 {
        0 if len > 0 => {
            let (pos, bit) = (inp.u16() as usize % len, inp.u8() % 8);
            bytes[pos] ^= 1 << bit;
            format!("flip bit {bit} of byte {pos}")
        }
        1 => {
            let at = inp.u16() as usize % (len + 1);
            bytes.truncate(at);
            format!("truncate to {at}")
        }
        2 => {
            let at = inp.u16() as usize % (len + 1);
            bytes[at..].fill(0);
            format!("zeros from {at}")
        }
        3 if len > 0 => {
            let pos = inp.u16() as usize % len;
            let n = 1 + inp.u8() as usize % 8;
            let new = inp.bytes(n);
            let end = (pos + n).min(len);
            bytes[pos..end].copy_from_slice(&new[..end - pos]);
            format!("overwrite {pos}..{end} with {:02x?}", &new[..end - pos])
        }
        4 => {
            let n = 1 + inp.u8() as usize % 16;
            let new = inp.bytes(n);
            bytes.extend_from_slice(&new);
            format!("append {new:02x?}")
        }
        _ => {
            // A bit of a record's length prefix (the first byte of its frame).
            let r = inp.below(seg.frames.len());
            let bit = inp.u8() % 8;
            match seg.frames.get(r) {
                Some(&(start, _)) if start < len => {
                    bytes[start] ^= 1 << bit;
                    format!("flip bit {bit} of the length prefix of record {r} (byte {start})")
                }
                _ => "nothing".into(),
            }
        }
    }
}

/// The fuzz target's body.
pub fn run(data: &[u8]) {
    let mut inp = Input::new(data);
    let w = Workload {
        seed: inp.u8() as u64,
    };
    let n_ops = 1 + inp.u8() as u64 % 40;
    let cfg = inp.u8();
    let checkpoint_every = [0u64, 0, 3, 7, 11, 16][cfg as usize % 6];
    let opts = StoreOptions {
        segment_bytes: [64 << 20, 512, 1500, 4096][(cfg as usize / 8) % 4],
        bulk_replay_bytes: if cfg & 0x40 != 0 { 0 } else { 64 << 20 },
        keep_images: 1 + (cfg >> 7) as usize,
        ..StoreOptions::default()
    };
    let plan = format!(
        "seed {}, {n_ops} ops, checkpoint every {checkpoint_every}, segments of {} bytes, \
         bulk replay up to {}, keep {} images",
        w.seed, opts.segment_bytes, opts.bulk_replay_bytes, opts.keep_images
    );

    let shm = Path::new("/dev/shm");
    let tmp = if shm.is_dir() {
        tempfile::tempdir_in(shm)
    } else {
        tempfile::tempdir()
    }
    .expect("temporary directory");
    let dir = tmp.path().join("store");
    Store::init(&dir, fs()).expect("init");

    let acked = {
        let s = Store::open(&dir, fs(), opts.clone()).expect("opening a new store");
        let mut last = 0;
        for i in 1..=n_ops {
            let t = s.with_namespace(|ns| ns.info().last_txid) + 1;
            if t.is_multiple_of(10) {
                let bad = s.with_namespace(|ns| w.bad_op(ns, t));
                assert!(
                    matches!(s.apply(bad), Err(StoreError::Refused(_))),
                    "a bad op was not refused"
                );
            }
            let op = s.with_namespace(|ns| w.op(ns, t));
            last = s.apply(op).expect("applying a workload op");
            assert_eq!(last, t);
            if checkpoint_every > 0 && i % checkpoint_every == 0 {
                s.checkpoint().expect("checkpoint");
            }
        }
        last
    };

    let segs = segment_files(&dir);
    let mut damaged: Vec<Vec<u8>> = segs.iter().map(|s| s.bytes.clone()).collect();
    let mut done = Vec::new();
    while !inp.done() && done.len() < 4 && !segs.is_empty() {
        let k = inp.below(segs.len());
        let what = damage(&mut inp, &segs[k], &mut damaged[k]);
        done.push(format!("{}: {what}", name(&segs[k].path)));
    }
    // Every op before the first damaged record must survive, and so must
    // every record the damage left intact: a torn tail can only be the end
    // of the last write, so an intact record after the damage proves that
    // the damage is not one, and cutting there would lose acknowledged ops.
    let mut required = acked;
    let mut intact = 0;
    for (seg, new) in segs.iter().zip(&damaged) {
        if *new != seg.bytes {
            std::fs::write(&seg.path, new).expect("writing the damage");
        }
        if let Some(t) = first_damaged(seg, new) {
            required = required.min(t.saturating_sub(1));
        }
        intact = intact.max(last_intact(seg, new));
    }
    let story = format!("{plan}; acknowledged {acked}; damage: {done:?}");

    let t = match Store::open(&dir, fs(), opts.clone()) {
        Err(e) => {
            assert!(
                e.is_data_error(),
                "recovery fails with a non-data error: {e} ({story})"
            );
            return;
        }
        Ok(s) => {
            let t = s.report().txid;
            assert!(
                t >= required,
                "recovery succeeded at txid {t}, but ops up to {required} were acknowledged \
                 before the first damaged record ({story})"
            );
            assert!(
                t >= intact,
                "recovery succeeded at txid {t}, but the record of txid {intact} is intact: \
                 acknowledged ops after the damage were discarded ({story})"
            );
            assert!(
                t <= acked,
                "recovery reached txid {t} past the acknowledged {acked} ({story})"
            );
            let got = s.with_namespace(|ns| ns.digest());
            assert_eq!(
                got,
                reference(&w, t),
                "digest at txid {t} differs from the reference ({story})"
            );
            // The recovered store goes on: two more acknowledged ops.
            for k in 1..=2 {
                let op = s.with_namespace(|ns| w.op(ns, t + k));
                let got = s.apply(op).unwrap_or_else(|e| {
                    panic!("applying after recovery at txid {t}: {e} ({story})")
                });
                assert_eq!(got, t + k);
            }
            t + 2
        }
    };
    let s = Store::open(&dir, fs(), opts).unwrap_or_else(|e| {
        panic!(
            "reopening after a recovery at txid {}: {e} ({story})",
            t - 2
        )
    });
    assert_eq!(s.report().txid, t, "reopened at another txid ({story})");
    assert_eq!(
        s.with_namespace(|ns| ns.digest()),
        reference(&w, t),
        "({story})"
    );
}
