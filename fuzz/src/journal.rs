//! The journal target, model-based.
//!
//! A store is built from a workload seed, a number of ops (1 to 60),
//! checkpoints every 3, 7 or 16 ops or never, segments of 512 B to 64 MiB
//! and 1 or 2 images kept: every op goes through `Store::apply` and is
//! acknowledged. Building a store costs far more than recovering it, so the
//! target builds each of [`SHAPES`] such stores once per process (when an
//! input first asks for it), keeps its files' bytes and where each journal
//! record is, and the reference digest at every txid. An input picks a
//! shape and bulk or streamed replay, the shape's files are written to a
//! fresh temporary directory (tmpfs when there is one), and the input
//! damages the journal files: bit flips (any byte, or a record's length
//! prefix), truncation, zeroed tails, overwritten bytes, appended bytes.
//! Then the store is opened (recovered).
//!
//! The model knows which record (txid) every journal byte belongs to, so it
//! knows the first damaged record. The property:
//! - a recovery that succeeds holds at least every op acknowledged before the
//!   first damaged record, and every op whose record the damage left intact
//!   (a torn tail can only be the end of the last write: an intact record
//!   after the damage shows the damage is not one, so cutting there loses
//!   acknowledged ops; issue 7, item 1), at most the acknowledged ones, and
//!   its digest is the reference namespace's (a fresh namespace applying the
//!   same ops) at the recovered txid; it then acknowledges two more ops, and
//!   opening it again gives exactly those;
//! - a recovery that fails says the data is corrupt (never an I/O error).

use crate::input::Input;
use nsimage_format::framing::Records;
use nsimage_format::Location;
use nsimage_loader::LoadOptions;
use nsimage_namespace::{Digest, Namespace};
use nsimage_store::fs::{Fs, RealFs};
use nsimage_store::journal::{Segment, HEADER_LEN};
use nsimage_store::{Store, StoreError, StoreOptions};
use nsimage_testkit::workload::Workload;
use std::sync::{Arc, OnceLock};

/// How many pristine stores an input can choose from (one input byte).
pub const SHAPES: usize = 256;

/// One journal file before the damage: its bytes and where each record is.
struct SegFile {
    name: String,
    first: u64,
    bytes: Vec<u8>,
    /// (start, end) of each record frame; record `i` holds txid `first + i`.
    frames: Vec<(usize, usize)>,
}

/// A pristine store: what building it acknowledged, its files, and the
/// reference digests.
struct Shape {
    w: Workload,
    plan: String,
    /// `segment_bytes` and `keep_images` as the store was built with.
    opts: StoreOptions,
    acked: u64,
    /// Every file of the store directory but the journal segments.
    others: Vec<(String, Vec<u8>)>,
    /// The journal segments, oldest first.
    segs: Vec<SegFile>,
    /// The reference namespace's digest at txids `0..=acked + 2`.
    digests: Vec<Digest>,
}

fn fs() -> Arc<dyn Fs> {
    Arc::new(RealFs::default())
}

/// The file name of `n` as a string.
fn name_of(n: &std::ffi::OsStr) -> String {
    n.to_string_lossy().into_owned()
}

fn segment_file(s: Segment) -> SegFile {
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
        name: s.path.file_name().map(name_of).unwrap_or_default(),
        first: s.first,
        bytes,
        frames,
    }
}

/// Builds shape `i`: a store that acknowledged a workload's ops, read back
/// into memory.
fn build(i: usize) -> Shape {
    let w = Workload { seed: i as u64 };
    // 37 is prime to 60: the op counts run over 1..=60 as `i` does.
    let n_ops = 1 + (i as u64 * 37 + 5) % 60;
    let checkpoint_every = [0u64, 3, 7, 16][(i / 4) % 4];
    let opts = StoreOptions {
        segment_bytes: [64 << 20, 512, 1500, 4096][i % 4],
        keep_images: 1 + (i / 16) % 2,
        // A thread count, not 0 (the cores): asking the system for the
        // cores on every open reads cgroup files, 5% of the target's time.
        // These small images load serially either way (below the
        // parallel threshold).
        load: LoadOptions {
            threads: 2,
            ..LoadOptions::default()
        },
        ..StoreOptions::default()
    };
    let plan = format!(
        "shape {i}: seed {}, {n_ops} ops, checkpoint every {checkpoint_every}, segments of {} \
         bytes, keep {} images",
        w.seed, opts.segment_bytes, opts.keep_images
    );

    let tmp = crate::input::scratch_dir();
    let dir = tmp.path().join("store");
    Store::init(&dir, fs(), &Default::default()).expect("init");
    let acked = {
        let s = Store::open(&dir, fs(), opts.clone()).expect("opening a new store");
        let mut last = 0;
        for k in 1..=n_ops {
            let t = s.with_namespace(|ns| ns.info().last_txid) + 1;
            if t.is_multiple_of(10) {
                let bad = s.with_namespace(|ns| w.bad_op(ns, t));
                assert!(
                    matches!(s.apply(bad), Err(StoreError::Refused(_))),
                    "a bad op was not refused ({plan})"
                );
            }
            let op = s.with_namespace(|ns| w.op(ns, t));
            last = s.apply(op).expect("applying a workload op");
            assert_eq!(last, t);
            if checkpoint_every > 0 && k % checkpoint_every == 0 {
                s.checkpoint().expect("checkpoint");
            }
        }
        last
    };

    let mut segs = Vec::new();
    let mut others = Vec::new();
    for e in std::fs::read_dir(&dir).expect("listing the store") {
        let e = e.expect("entry");
        let n = name_of(&e.file_name());
        match Segment::parse(&dir, &n) {
            Some(s) => segs.push(s),
            None => others.push((n, std::fs::read(e.path()).expect("reading a store file"))),
        }
    }
    segs.sort_by_key(|s| (s.first, s.last.is_none()));
    let segs = segs.into_iter().map(segment_file).collect();

    let mut ns = Namespace::default();
    let digests = (0..=acked + 2)
        .map(|t| {
            w.advance(&mut ns, t);
            ns.digest()
        })
        .collect();
    Shape {
        w,
        plan,
        opts,
        acked,
        others,
        segs,
        digests,
    }
}

/// Shape `i`, built on first use.
fn shape(i: usize) -> &'static Shape {
    static SHAPE: OnceLock<Vec<OnceLock<Shape>>> = OnceLock::new();
    let all = SHAPE.get_or_init(|| (0..SHAPES).map(|_| OnceLock::new()).collect());
    all[i % SHAPES].get_or_init(|| build(i % SHAPES))
}

/// The reference digest at `txid`.
fn reference(sh: &Shape, txid: u64) -> Digest {
    match usize::try_from(txid).ok().and_then(|t| sh.digests.get(t)) {
        Some(d) => *d,
        None => {
            let mut ns = Namespace::default();
            sh.w.advance(&mut ns, txid);
            ns.digest()
        }
    }
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

/// The fuzz target's body. Input: a shape (one byte, see [`build`]), a
/// byte whose low bit chooses bulk (0) or streamed (1) replay, then up to 4
/// damages, each a segment (two bytes), a kind and its arguments.
pub fn run(data: &[u8]) {
    let mut inp = Input::new(data);
    let sh = shape(inp.u8() as usize);
    let opts = StoreOptions {
        bulk_replay_bytes: if inp.u8() & 1 != 0 { 0 } else { 64 << 20 },
        ..sh.opts.clone()
    };
    let acked = sh.acked;
    let segs = &sh.segs;

    let mut damaged: Vec<Vec<u8>> = segs.iter().map(|s| s.bytes.clone()).collect();
    let mut done = Vec::new();
    while !inp.done() && done.len() < 4 && !segs.is_empty() {
        let k = inp.below(segs.len());
        let what = damage(&mut inp, &segs[k], &mut damaged[k]);
        done.push(format!("{}: {what}", segs[k].name));
    }

    let tmp = crate::input::scratch_dir();
    let dir = tmp.path();
    for (n, bytes) in &sh.others {
        std::fs::write(dir.join(n), bytes).expect("writing a store file");
    }
    // Every op before the first damaged record must survive, and so must
    // every record the damage left intact: a torn tail can only be the end
    // of the last write, so an intact record after the damage proves that
    // the damage is not one, and cutting there would lose acknowledged ops.
    let mut required = acked;
    let mut intact = 0;
    for (seg, new) in segs.iter().zip(&damaged) {
        std::fs::write(dir.join(&seg.name), new).expect("writing a segment");
        if let Some(t) = first_damaged(seg, new) {
            required = required.min(t.saturating_sub(1));
        }
        intact = intact.max(last_intact(seg, new));
    }
    let story = format!(
        "{}, bulk replay up to {} bytes; acknowledged {acked}; damage: {done:?}",
        sh.plan, opts.bulk_replay_bytes
    );

    let t = match Store::open(dir, fs(), opts.clone()) {
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
                reference(sh, t),
                "digest at txid {t} differs from the reference ({story})"
            );
            // The recovered store goes on: two more acknowledged ops.
            for k in 1..=2 {
                let op = s.with_namespace(|ns| sh.w.op(ns, t + k));
                let got = s.apply(op).unwrap_or_else(|e| {
                    panic!("applying after recovery at txid {t}: {e} ({story})")
                });
                assert_eq!(got, t + k);
            }
            t + 2
        }
    };
    let s = Store::open(dir, fs(), opts).unwrap_or_else(|e| {
        panic!(
            "reopening after a recovery at txid {}: {e} ({story})",
            t - 2
        )
    });
    assert_eq!(s.report().txid, t, "reopened at another txid ({story})");
    assert_eq!(
        s.with_namespace(|ns| ns.digest()),
        reference(sh, t),
        "({story})"
    );
}
