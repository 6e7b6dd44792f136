//! Criterion bench of journal replay: a segment of `OPS` records of the
//! store's test workload (creates into random directories, blocks, times,
//! owners, xattrs, renames, deletes; `nsimage_testkit::workload`) is built
//! once, then timed while it is parsed and applied onto a fresh empty
//! namespace, the way recovery replays it, through the borrowing reader
//! (`journal::read` and `edit::apply_view`) and, for comparison,
//! through owned ops (`view.to_owned()` and `edit::apply`).
//!
//! A second group times one large directory alone: `WIDE` files with
//! random (seeded) names created in it, then deleted in another random
//! order, which is what editing a sorted child list costs.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use nsimage_format::pb;
use nsimage_namespace::{FileSpec, Namespace, PermSpec, ROOT_ID};
use nsimage_store::edit;
use nsimage_store::journal::{self, ReadOptions, Segment, Source};
use nsimage_testkit::workload::Workload;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::path::PathBuf;

const OPS: u64 = 100_000;

/// Files created, then deleted, in the one directory of the wide bench.
const WIDE: usize = 100_000;

/// A plain segment of `n` records and the namespace they lead to.
fn segment(n: u64) -> (Vec<u8>, Namespace) {
    let mut ns = Namespace::default();
    let w = Workload { seed: 1 };
    let mut bytes = journal::header().to_vec();
    for t in 1..=n {
        let mut o = w.op(&ns, t);
        edit::apply(&mut ns, &mut o).expect("the workload's ops are valid");
        ns.info_mut().last_txid = t;
        journal::encode(
            &pb::JournalOp {
                txid: t,
                op: Some(o),
            },
            &mut bytes,
        );
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
    let open = ReadOptions {
        open: true,
        ..ReadOptions::default()
    };
    let replay_views = |mut ns: Namespace| {
        journal::read(Source::Bytes(&bytes), &seg, &open, &mut |_, rec| {
            edit::apply_view(&mut ns, &rec.op)?;
            ns.info_mut().last_txid = rec.txid;
            Ok(())
        })
        .unwrap();
        ns
    };
    let replay_owned = |mut ns: Namespace| {
        journal::read(Source::Bytes(&bytes), &seg, &open, &mut |_, rec| {
            let mut rec = rec.to_owned();
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

/// `WIDE` files created in one directory in random name order, then all
/// deleted in another random order.
fn bench_wide_dir(c: &mut Criterion) {
    let mut r = Pcg64Mcg::seed_from_u64(7);
    // Names share their first five bytes, so name keys often tie on a
    // shorter prefix and the search reads names.
    let names: Vec<Vec<u8>> = (0..WIDE)
        .map(|_| format!("part-{:012x}", r.random::<u64>() >> 16).into_bytes())
        .collect();
    let mut order: Vec<usize> = (0..WIDE).collect();
    order.shuffle(&mut r);
    let perm = PermSpec {
        user: b"hdfs",
        group: b"supergroup",
        mode: 0o644,
    };
    let spec = FileSpec {
        replication: 3,
        preferred_block_size: 128 << 20,
        storage_policy: 0,
    };
    let run = |mut ns: Namespace| {
        let dir = ns.mkdir_in(ROOT_ID, b"wide", &perm, 1).unwrap();
        let mut ids = Vec::with_capacity(WIDE);
        for n in &names {
            // Random names may repeat; a repeat is refused and skipped.
            if let Ok(id) = ns.create_in(dir, n, &perm, &spec, 2) {
                ids.push(id);
            }
        }
        for &i in &order {
            if let Some(&id) = ids.get(i) {
                ns.delete_id(id, false, 3).unwrap();
            }
        }
        ns
    };
    let mut g = c.benchmark_group("wide_dir");
    g.sample_size(10);
    g.throughput(Throughput::Elements(2 * WIDE as u64));
    g.bench_function("create_delete_100k", |b| {
        b.iter_batched(Namespace::default, &run, BatchSize::LargeInput)
    });
    g.finish();
}

criterion_group!(benches, bench, bench_wide_dir);
criterion_main!(benches);
