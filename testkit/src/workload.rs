//! The deterministic mixed workload of `nsimage store apply`. The op with
//! txid `t` depends only on the seed, `t` and the namespace after `t - 1`
//! (itself a function of the seed and `t - 1`), so every store that applied
//! the same seed up to `t` holds the same state, whatever its history of
//! checkpoints, restarts and kills. Every generated op is valid; a second
//! generator makes ops that must be refused.

use nsimage_format::pb::journal_op::Op;
use nsimage_format::pb::{self, XAttrNamespace};
use nsimage_namespace::ROOT_ID;
use nsimage_namespace::{Body, InodeKind, Namespace};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;

const USERS: [&[u8]; 4] = [b"hdfs", b"hive", b"spark", b"etl"];
/// 2025-01-01T00:00:00Z in milliseconds.
const EPOCH_MS: u64 = 1_735_689_600_000;

/// The time of txid `t` in milliseconds (saturating: a txid read from a
/// store may be anywhere up to u64::MAX).
fn at_ms(t: u64) -> u64 {
    EPOCH_MS.saturating_add(t.saturating_mul(1000))
}

/// The workload of one seed.
#[derive(Clone, Copy, Debug)]
pub struct Workload {
    /// Every op follows from the seed and its txid.
    pub seed: u64,
}

fn rng(seed: u64, t: u64, salt: u64) -> Pcg64Mcg {
    Pcg64Mcg::seed_from_u64(seed ^ t.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ salt)
}

/// A live inode near a random id that `want` accepts; `None` after a
/// bounded probe.
fn pick(ns: &Namespace, r: &mut Pcg64Mcg, want: impl Fn(InodeKind) -> bool) -> Option<u64> {
    let last = ns.info().last_inode_id;
    let start = r.random_range(ROOT_ID..=last.max(ROOT_ID));
    // In u128: `last` comes from an image and may be u64::MAX.
    let span = u128::from(last.max(ROOT_ID) - ROOT_ID) + 1;
    (0..64u128)
        .filter_map(|k| {
            let off = (u128::from(start - ROOT_ID) + k) % span;
            u64::try_from(off).ok()?.checked_add(ROOT_ID)
        })
        .find(|&id| ns.inode(id).is_some_and(|n| want(n.kind())))
}

fn dir(ns: &Namespace, r: &mut Pcg64Mcg) -> u64 {
    pick(ns, r, |k| k == InodeKind::Directory).unwrap_or(ROOT_ID)
}

fn create(kind: u8, parent: u64, name: String, t: u64, r: &mut Pcg64Mcg) -> Op {
    let c = pb::CreateOp {
        parent,
        name: name.into_bytes(),
        user: USERS[r.random_range(0..USERS.len())].to_vec(),
        group: b"hadoop".to_vec(),
        mode: if kind == 0 { 0o755 } else { 0o644 },
        mtime: at_ms(t),
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

/// True if `a` is `b` or one of its ancestors.
fn is_ancestor(ns: &Namespace, a: u64, b: u64) -> bool {
    let mut cur = Some(b);
    while let Some(c) = cur {
        if c == a {
            return true;
        }
        cur = ns.inode(c).and_then(|n| n.parent());
    }
    false
}

impl Workload {
    /// The op with txid `t`, valid against `ns` (the state after `t - 1`).
    pub fn op(&self, ns: &Namespace, t: u64) -> Op {
        let mut r = rng(self.seed, t, 0);
        let roll = r.random_range(0..100u32);
        let time = at_ms(t);
        match roll {
            0..=9 => create(0, dir(ns, &mut r), format!("d{t}"), t, &mut r),
            10..=39 => create(1, dir(ns, &mut r), format!("f{t}"), t, &mut r),
            40..=42 => create(2, dir(ns, &mut r), format!("l{t}"), t, &mut r),
            43..=67 => match pick(ns, &mut r, |k| k == InodeKind::File) {
                Some(id) => Op::AddBlock(pb::AddBlockOp {
                    id,
                    block: Some(pb::Block {
                        id: ns.info().last_block_id.max(1 << 30).saturating_add(1),
                        generation_stamp: ns.info().generation_stamp.max(1000).saturating_add(1),
                        length: 1 + r.random_range(0..128u64 << 20),
                    }),
                }),
                None => create(1, ROOT_ID, format!("f{t}"), t, &mut r),
            },
            68..=75 => match pick(ns, &mut r, |_| true) {
                Some(id) => Op::SetTimes(pb::SetTimesOp {
                    id,
                    mtime: time,
                    atime: time,
                }),
                None => create(0, ROOT_ID, format!("d{t}"), t, &mut r),
            },
            76..=79 => Op::SetOwner(pb::SetOwnerOp {
                id: pick(ns, &mut r, |_| true).unwrap_or(ROOT_ID),
                user: USERS[r.random_range(0..USERS.len())].to_vec(),
                group: b"analysts".to_vec(),
            }),
            80..=83 => Op::SetXattr(pb::SetXAttrOp {
                id: pick(ns, &mut r, |_| true).unwrap_or(ROOT_ID),
                namespace: XAttrNamespace::User as i32,
                name: format!("k{}", t % 5).into_bytes(),
                value: t.to_le_bytes().to_vec(),
            }),
            84..=89 => {
                let src = pick(ns, &mut r, |_| true).filter(|&s| s != ROOT_ID);
                let to = dir(ns, &mut r);
                match src {
                    Some(src) => Op::Rename(pb::RenameOp {
                        id: src,
                        new_parent: if is_ancestor(ns, src, to) {
                            ROOT_ID
                        } else {
                            to
                        },
                        new_name: format!("r{t}").into_bytes(),
                        mtime: time,
                    }),
                    None => create(1, ROOT_ID, format!("f{t}"), t, &mut r),
                }
            }
            _ => {
                // Files, links and empty directories; a rare small subtree.
                let victim = pick(ns, &mut r, |_| true).filter(|&v| {
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
                        mtime: time,
                    }),
                    None => create(0, ROOT_ID, format!("d{t}"), t, &mut r),
                }
            }
        }
    }

    /// An op that the namespace must refuse (tried before txid `t`).
    pub fn bad_op(&self, ns: &Namespace, t: u64) -> Op {
        let mut r = rng(self.seed, t, 0x5eed);
        let any = pick(ns, &mut r, |_| true).unwrap_or(ROOT_ID);
        match r.random_range(0..5u32) {
            // A name that exists: every inode's own name in its parent.
            0 if any != ROOT_ID => {
                let n = ns.inode(any).expect("picked a live inode");
                let mut op = create(1, n.parent().unwrap_or(ROOT_ID), String::new(), t, &mut r);
                if let Op::Create(c) = &mut op {
                    c.name = n.name().to_vec();
                }
                op
            }
            1 => create(0, ROOT_ID, "..".into(), t, &mut r),
            2 => Op::Rename(pb::RenameOp {
                id: ROOT_ID,
                new_parent: ROOT_ID,
                new_name: b"x".to_vec(),
                mtime: 0,
            }),
            3 => Op::Delete(pb::DeleteOp {
                id: ROOT_ID,
                recursive: true,
                mtime: 0,
            }),
            _ => Op::AddBlock(pb::AddBlockOp {
                id: ns.info().last_inode_id.saturating_add(1000),
                block: None,
            }),
        }
    }

    /// The namespace a fresh store holds after this workload's first
    /// `txids` ops (the reference that tests compare recoveries against).
    pub fn advance(&self, ns: &mut Namespace, to_txid: u64) {
        while ns.info().last_txid < to_txid {
            // last_txid < to_txid <= u64::MAX: no overflow.
            let t = ns.info().last_txid + 1;
            let mut op = self.op(ns, t);
            nsimage_store::edit::apply(ns, &mut op).expect("workload ops are valid");
            ns.info_mut().last_txid = t;
        }
    }
}
