//! What the journal's readers decide about the last record of the open
//! segment (STORE.md, "Open", step 4), each case seen by the three of
//! them alike: `store status` (reading only), `nsimage journal dump` and
//! the open that recovers (`store recover`, the server's start):
//!
//! - a record whose checksum fails is read for its shape and its txid
//!   only to refuse: damage whose bytes still name the txid that belongs
//!   there is a torn tail (cut), damage that makes them name another is
//!   refused, nothing cut;
//! - an op field this build does not know: a record written whole (its
//!   checksum matches) is refused and never cut, even with damage before
//!   it; torn (its checksum fails), it is cut like any torn last write;
//! - a record making `/.reserved` is an op that does not apply: refused.

use crate::common;

use nsimage_format::framing::put_frame;
use nsimage_format::pb::{self, journal_op::Op};
use nsimage_format::wire::read_varint;
use nsimage_store::fs::RealFs;
use nsimage_store::journal::{self, Segment};
use nsimage_store::{Store, StoreError, StoreOptions};
use nsimage_testkit::workload::Workload;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use xxhash_rust::xxh3::xxh3_64;

const W: Workload = Workload { seed: 11 };
/// Ops applied before each case's damage.
const OPS: u64 = 10;

/// A store in `tmp` holding [`OPS`] acknowledged ops, and the path of its
/// open segment.
fn store(tmp: &Path) -> (PathBuf, PathBuf) {
    let dir = tmp.join("s");
    Store::init(&dir, Arc::new(RealFs::default()), &Default::default()).unwrap();
    let s = Store::open_default(&dir).unwrap();
    for _ in 0..OPS {
        let t = s.txid() + 1;
        let op = s.with_namespace(|ns| W.op(ns, t));
        s.apply(op).unwrap();
    }
    drop(s);
    let mut segs: Vec<Segment> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| Segment::parse(&dir, &e.unwrap().file_name().to_string_lossy()))
        .collect();
    segs.sort_by_key(|s| s.first);
    let open = segs.pop().unwrap();
    assert!(open.last.is_none());
    (dir, open.path)
}

/// The offsets of the records of a plain segment's bytes.
fn frames(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = journal::HEADER_LEN;
    while at < bytes.len() {
        let (len, w) = read_varint(&bytes[at..]).unwrap();
        let end = at + w + len as usize;
        out.push((at, end));
        at = end;
    }
    out
}

/// A framed record (checksum, message) whose message is `msg`.
fn record(msg: &[u8], good_checksum: bool) -> Vec<u8> {
    let mut sum = xxh3_64(msg);
    if !good_checksum {
        sum ^= 1;
    }
    let mut body = sum.to_le_bytes().to_vec();
    body.extend_from_slice(msg);
    let mut out = Vec::new();
    put_frame(&mut out, &body);
    out
}

/// A record's message whose op is field `field` (any number), holding
/// `payload`, at `txid`.
fn message(txid: u64, field: u64, payload: &[u8]) -> Vec<u8> {
    let mut m = vec![0x08];
    nsimage_format::wire::varint::put_varint(&mut m, txid);
    nsimage_format::wire::varint::put_varint(&mut m, (field << 3) | 2);
    nsimage_format::wire::varint::put_varint(&mut m, payload.len() as u64);
    m.extend_from_slice(payload);
    m
}

/// What the three readers said about a store.
#[derive(Debug)]
enum Verdict {
    /// Torn tail of this many bytes, cut by the open, which recovered to
    /// this txid.
    Cut(u64, u64),
    /// Refused by all, each error holding `detail`; nothing cut.
    Refused,
}

/// Asks `store status`, `journal dump` and an open about `dir`, whose open
/// segment is `seg`, and checks they agree; the open's error when refused
/// must hold every one of `refused_says`.
fn verdict(case: &str, dir: &Path, seg: &Path, refused_says: &[&str]) -> Verdict {
    let before = std::fs::read(seg).unwrap();
    let d = dir.to_str().unwrap();
    let status = common::nsimage(&["store", "status", d, "--json"]);
    let dump = common::nsimage(&["journal", "dump", d]);
    assert_eq!(
        std::fs::read(seg).unwrap(),
        before,
        "{case}: reading changed it"
    );
    let text = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).to_string();
    match Store::open(dir, Arc::new(RealFs::default()), StoreOptions::default()) {
        Ok(s) => {
            let (txid, torn) = (s.report().txid, s.report().torn_tail_bytes);
            assert!(torn > 0, "{case}: nothing was torn");
            assert!(status.status.success(), "{case}: {}", text(&status));
            let st: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
            assert_eq!(st["torn_tail_bytes"], torn, "{case}: status");
            assert!(dump.status.success(), "{case}: {}", text(&dump));
            assert!(
                text(&dump).contains(&format!("{torn} torn bytes")),
                "{case}: dump: {}",
                text(&dump)
            );
            drop(s);
            let after = std::fs::read(seg).unwrap();
            assert_eq!(after.len() as u64, before.len() as u64 - torn, "{case}");
            Verdict::Cut(torn, txid)
        }
        Err(e) => {
            assert!(matches!(e, StoreError::Corrupt { .. }), "{case}: {e}");
            let e = e.to_string();
            for says in refused_says {
                assert!(e.contains(says), "{case}: {e}");
            }
            assert_eq!(status.status.code(), Some(1), "{case}: {}", text(&status));
            assert_eq!(dump.status.code(), Some(1), "{case}: {}", text(&dump));
            for out in [&status, &dump] {
                assert!(text(out).contains(&e), "{case}: {} / {e}", text(out));
            }
            assert_eq!(std::fs::read(seg).unwrap(), before, "{case}: cut");
            Verdict::Refused
        }
    }
}

#[test]
fn a_record_whose_checksum_fails_is_read_only_to_refuse() {
    // (case, how the last record's bytes are changed, refused?)
    type Damage = fn(&mut [u8], usize, usize);
    let cases: [(&str, Damage, bool); 4] = [
        // Its op's last byte: the shape still names txid 10.
        ("payload flipped", |b, _, end| b[end - 1] ^= 0x40, false),
        // The checksum itself.
        (
            "checksum flipped",
            |b, start, _| b[start + 2] ^= 0x01,
            false,
        ),
        // The txid byte: it now names txid 12 where 10 belongs, which no
        // torn write leaves.
        ("txid changed", |b, start, _| b[start + 10] = 12, true),
        // Txid 0 is not the writer's shape (txids start at 1): the walk
        // decides nothing, and nothing good follows.
        ("txid zeroed", |b, start, _| b[start + 10] = 0, false),
    ];
    for (case, damage, refused) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let (dir, seg) = store(tmp.path());
        let mut bytes = std::fs::read(&seg).unwrap();
        let (start, end) = *frames(&bytes).last().unwrap();
        // One-byte length, eight checksum bytes, then 0x08 and the txid.
        assert_eq!((bytes[start + 9], bytes[start + 10]), (0x08, OPS as u8));
        damage(&mut bytes, start, end);
        std::fs::write(&seg, &bytes).unwrap();
        match verdict(case, &dir, &seg, &["names txid 12 where txid 10 belongs"]) {
            Verdict::Cut(torn, txid) => {
                assert!(!refused, "{case}: cut");
                assert_eq!((torn, txid), ((end - start) as u64, OPS - 1), "{case}");
            }
            Verdict::Refused => assert!(refused, "{case}: refused"),
        }
    }
}

#[test]
fn an_unknown_op_field_is_refused_when_written_whole_and_cut_when_torn() {
    let next = OPS + 1;
    // Field 15 (one key byte) and 16 (two): neither is an op this build
    // knows (2 to 14).
    for field in [15u64, 16] {
        let unknown = message(next, field, b"\x08\x01\x12\x03new");
        let tmp = tempfile::tempdir().unwrap();
        let (dir, seg) = store(tmp.path());
        let good = std::fs::read(&seg).unwrap();
        let cases = [
            // Whole, last: written whole, never a torn write.
            ("whole", record(&unknown, true), true),
            // Torn: its checksum fails, its shape is no writer's of this
            // build: the torn last write, cut.
            ("torn", record(&unknown, false), false),
            // Torn bytes, then the whole record: something written whole
            // follows the damage, so the damage is not a torn tail.
            (
                "damage before it",
                [b"\x05\x00\x00".as_slice(), &record(&unknown, true)].concat(),
                true,
            ),
        ];
        for (what, tail, refused) in cases {
            let case = format!("field {field}, {what}");
            let mut bytes = good.clone();
            bytes.extend_from_slice(&tail);
            std::fs::write(&seg, &bytes).unwrap();
            let says = if what == "whole" {
                vec![format!("op field {field}")]
            } else {
                vec!["not a torn tail".to_string()]
            };
            let says: Vec<&str> = says.iter().map(String::as_str).collect();
            match verdict(&case, &dir, &seg, &says) {
                Verdict::Cut(torn, txid) => {
                    assert!(!refused, "{case}: cut");
                    assert_eq!((torn, txid), (tail.len() as u64, OPS), "{case}");
                }
                Verdict::Refused => assert!(refused, "{case}: refused"),
            }
            std::fs::write(&seg, &good).unwrap();
        }
    }
}

#[test]
fn a_record_making_the_reserved_name_is_refused_at_replay() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, seg) = store(tmp.path());
    // The store refuses it as an op (no txid taken)...
    let mkdir = Op::Mkdir(pb::CreateOp {
        parent: nsimage_namespace::ROOT_ID,
        name: b".reserved".to_vec(),
        user: b"u".to_vec(),
        group: b"g".to_vec(),
        mode: 0o755,
        ..Default::default()
    });
    let s = Store::open_default(&dir).unwrap();
    let e = s.submit(mkdir.clone()).unwrap_err();
    assert!(matches!(e, StoreError::Refused(_)), "{e}");
    assert_eq!(s.txid(), OPS);
    drop(s);
    // ...and a journal holding it, written by hand, does not replay.
    let mut bytes = std::fs::read(&seg).unwrap();
    let at = bytes.len() as u64;
    journal::encode(
        &pb::JournalOp {
            txid: OPS + 1,
            op: Some(mkdir),
        },
        &mut bytes,
    );
    std::fs::write(&seg, &bytes).unwrap();
    match Store::open_default(&dir) {
        Err(StoreError::Corrupt {
            path,
            at: loc,
            detail,
        }) => {
            assert_eq!((path, loc.offset), (seg.clone(), at), "{detail}");
            assert!(detail.contains("reserved"), "{detail}");
        }
        Err(e) => panic!("expected a corruption error, got {e}"),
        Ok(_) => panic!("a record making /.reserved was replayed"),
    }
    let d = dir.to_str().unwrap();
    assert_eq!(
        common::nsimage(&["store", "status", d]).status.code(),
        Some(1)
    );
    assert_eq!(std::fs::read(&seg).unwrap(), bytes);
}
