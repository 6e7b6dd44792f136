//! Criterion bench of journal replay: a segment of `OPS` records (a mix
//! like the store's test workload: creates into random directories,
//! blocks, times, owners, xattrs, renames, deletes) is built once, then
//! timed while it is parsed and applied onto a fresh empty namespace, the
//! way recovery replays it, through the borrowing reader
//! (`parse_views_with` and `edit::apply_view`) and, for comparison,
//! through the owned one (`parse` and `edit::apply`).

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use nsimage_format::pb::journal_op::Op;
use nsimage_format::pb::{self, XAttrNamespace};
use nsimage_namespace::{Body, InodeKind, Namespace, ROOT_ID};
use nsimage_store::edit;
use nsimage_store::journal::{self, Sealing, Segment};
use std::path::PathBuf;

const OPS: u64 = 100_000;

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A live inode near a random id that `want` accepts.
fn pick(ns: &Namespace, r: &mut Rng, want: impl Fn(InodeKind) -> bool) -> Option<u64> {
    let last = ns.info().last_inode_id.max(ROOT_ID);
    let start = ROOT_ID + r.below(last - ROOT_ID + 1);
    (0..64)
        .map(|k| ROOT_ID + (start - ROOT_ID + k) % (last - ROOT_ID + 1))
        .find(|&id| ns.inode(id).is_some_and(|n| want(n.kind())))
}

fn create(kind: u8, parent: u64, name: String, t: u64) -> Op {
    let c = pb::CreateOp {
        parent,
        name: name.into_bytes(),
        user: [&b"hdfs"[..], b"hive", b"spark", b"etl"][(t % 4) as usize].to_vec(),
        group: b"hadoop".to_vec(),
        mode: if kind == 0 { 0o755 } else { 0o644 },
        mtime: t * 1000,
        replication: 3,
        preferred_block_size: 128 << 20,
        storage_policy: 0,
        target: if kind == 2 {
            b"/data/latest".to_vec()
        } else {
            Vec::new()
        },
        new_id: 0,
    };
    match kind {
        0 => Op::Mkdir(c),
        1 => Op::Create(c),
        _ => Op::Symlink(c),
    }
}

fn op(ns: &Namespace, r: &mut Rng, t: u64) -> Op {
    let dir = |r: &mut Rng| pick(ns, r, |k| k == InodeKind::Directory).unwrap_or(ROOT_ID);
    match r.below(100) {
        0..=9 => create(0, dir(r), format!("d{t}"), t),
        10..=39 => create(1, dir(r), format!("f{t}"), t),
        40..=42 => create(2, dir(r), format!("l{t}"), t),
        43..=67 => match pick(ns, r, |k| k == InodeKind::File) {
            Some(id) => Op::AddBlock(pb::AddBlockOp {
                id,
                block: Some(pb::Block {
                    id: ns.info().last_block_id.max(1 << 30) + 1,
                    generation_stamp: ns.info().generation_stamp.max(1000) + 1,
                    length: 1 + r.below(128 << 20),
                }),
            }),
            None => create(1, ROOT_ID, format!("f{t}"), t),
        },
        68..=75 => match pick(ns, r, |_| true) {
            Some(id) => Op::SetTimes(pb::SetTimesOp {
                id,
                mtime: t,
                atime: t,
            }),
            None => create(0, ROOT_ID, format!("d{t}"), t),
        },
        76..=79 => Op::SetOwner(pb::SetOwnerOp {
            id: pick(ns, r, |_| true).unwrap_or(ROOT_ID),
            user: b"etl".to_vec(),
            group: b"analysts".to_vec(),
        }),
        80..=83 => Op::SetXattr(pb::SetXAttrOp {
            id: pick(ns, r, |_| true).unwrap_or(ROOT_ID),
            namespace: XAttrNamespace::User as i32,
            name: format!("k{}", t % 5).into_bytes(),
            value: t.to_le_bytes().to_vec(),
        }),
        84..=89 => match pick(ns, r, |_| true).filter(|&s| s != ROOT_ID) {
            // A move into a directory that may lie below it is refused
            // and skipped by the builder.
            Some(id) => Op::Rename(pb::RenameOp {
                id,
                new_parent: dir(r),
                new_name: format!("r{t}").into_bytes(),
                mtime: t,
            }),
            None => create(1, ROOT_ID, format!("f{t}"), t),
        },
        _ => {
            let victim = pick(ns, r, |_| true).filter(|&v| {
                v != ROOT_ID
                    && ns.inode(v).is_some_and(|n| match n.body() {
                        Body::Directory { .. } => n.child_slots().len() <= 8,
                        _ => true,
                    })
            });
            match victim {
                Some(id) => Op::Delete(pb::DeleteOp {
                    id,
                    recursive: true,
                    mtime: t,
                }),
                None => create(0, ROOT_ID, format!("d{t}"), t),
            }
        }
    }
}

/// A plain segment of `n` valid records and the namespace they lead to.
fn segment(n: u64) -> (Vec<u8>, Namespace) {
    let mut ns = Namespace::default();
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut bytes = journal::header().to_vec();
    let mut t = 1;
    while t <= n {
        let mut o = op(&ns, &mut r, t);
        if edit::apply(&mut ns, &mut o).is_err() {
            continue;
        }
        ns.info_mut().last_txid = t;
        journal::encode(
            &pb::JournalOp {
                txid: t,
                op: Some(o),
            },
            &mut bytes,
        );
        t += 1;
    }
    (bytes, ns)
}

fn bench(c: &mut Criterion) {
    let (bytes, want) = segment(OPS);
    let seg = Segment {
        path: PathBuf::from("edits_inprogress_00000000000000000001"),
        first: 1,
        last: None,
    };
    let replay_views = |mut ns: Namespace| {
        journal::parse_views_with(&seg, &bytes, true, &Sealing::plain(), &mut |rec| {
            edit::apply_view(&mut ns, &rec.op)?;
            ns.info_mut().last_txid = rec.txid;
            Ok(())
        })
        .unwrap();
        ns
    };
    let replay_owned = |mut ns: Namespace| {
        journal::parse(&seg, &bytes, true, &mut |mut rec| {
            edit::apply(&mut ns, rec.op.as_mut().unwrap())?;
            ns.info_mut().last_txid = rec.txid;
            Ok(())
        })
        .unwrap();
        ns
    };
    assert_eq!(replay_views(Namespace::default()).digest(), want.digest());
    assert_eq!(replay_owned(Namespace::default()).digest(), want.digest());

    let mut g = c.benchmark_group("replay");
    g.throughput(Throughput::Elements(OPS));
    g.bench_function("views_100k_ops", |b| {
        b.iter_batched(Namespace::default, &replay_views, BatchSize::LargeInput)
    });
    g.bench_function("owned_100k_ops", |b| {
        b.iter_batched(Namespace::default, &replay_owned, BatchSize::LargeInput)
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
