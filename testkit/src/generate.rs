//! A deterministic synthetic namespace shaped like a production cluster:
//! a few top-level trees (users, warehouse tables with date partitions,
//! logs, tmp), heavy-tailed fan-out with some directories holding a large
//! share of all files, ~90% files of 0-3 blocks with mostly-small last
//! blocks, a handful of users and groups, and a sprinkling of symlinks,
//! xattrs, ACLs, quotas and files under construction.
//!
//! The same `(inodes, seed)` always gives the same namespace (same digest).

use nsimage_namespace::ROOT_ID;
use nsimage_namespace::{Block, FileSpec, Namespace, NsInfo, PermSpec, XAttrNs};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;

pub(crate) const USERS: [&[u8]; 8] = [
    b"hdfs",
    b"hive",
    b"spark",
    b"yarn",
    b"etl",
    b"alice",
    b"bob",
    b"analytics",
];
pub(crate) const GROUPS: [&[u8]; 4] = [b"supergroup", b"hadoop", b"analysts", b"etl"];
pub(crate) const EXTS: [&str; 6] = [".parquet", ".orc", ".gz", ".csv", "", ".snappy.parquet"];
pub(crate) const BLOCK_SIZE: u64 = 128 << 20;
/// 2024-01-01T00:00:00Z in milliseconds.
pub(crate) const EPOCH_MS: u64 = 1_704_067_200_000;

/// Memory a generated namespace takes per inode, at most: about 185 bytes
/// were measured at 1,000,000 inodes (namespace, plan and write buffers,
/// peak resident), rounded up.
pub const BYTES_PER_INODE: u64 = 256;

/// Most inodes a namespace can hold (its slots are 32-bit).
pub const MAX_INODES: u64 = u32::MAX as u64 - 1;

/// A namespace too large to generate here.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SizeError {
    /// More inodes than a namespace's slots can number.
    #[error("{inodes} inodes: a namespace holds at most {max}")]
    TooMany {
        /// The inodes asked for.
        inodes: u64,
        /// The most this generator makes.
        max: u64,
    },
    #[error(
        "{inodes} inodes need about {need} bytes of memory; this machine has {available} available"
    )]
    /// More memory than the machine has available.
    NoMemory {
        /// The inodes asked for.
        inodes: u64,
        /// Bytes the namespace and its image would need.
        need: u64,
        /// Bytes available (`MemAvailable`).
        available: u64,
    },
}

/// Refuses up front a namespace of `inodes` inodes that cannot fit this
/// machine's available memory (`MemAvailable` of `/proc/meminfo`; where it
/// cannot be read, only [`MAX_INODES`] applies).
pub fn check_fits(inodes: u64) -> Result<(), SizeError> {
    check_fits_in(inodes, available_memory())
}

/// [`check_fits`] against a given number of available bytes.
pub fn check_fits_in(inodes: u64, available: Option<u64>) -> Result<(), SizeError> {
    if inodes > MAX_INODES {
        return Err(SizeError::TooMany {
            inodes,
            max: MAX_INODES,
        });
    }
    let need = inodes.saturating_mul(BYTES_PER_INODE);
    match available {
        Some(available) if need > available => Err(SizeError::NoMemory {
            inodes,
            need,
            available,
        }),
        _ => Ok(()),
    }
}

/// Bytes of memory available to a new allocation: the least of the
/// machine's available memory (`/proc/meminfo`) and what this process's
/// control group still allows (cgroup v2 `memory.max - memory.current`, or
/// v1 `memory.limit_in_bytes - memory.usage_in_bytes`), so that a container
/// refuses what it cannot hold instead of being killed for it.
pub(crate) fn available_memory() -> Option<u64> {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let number = |s: Option<String>| s?.trim().parse::<u64>().ok();
    let meminfo = read("/proc/meminfo").and_then(|s| {
        let kb: u64 = s
            .lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))?
            .split_whitespace()
            .next()?
            .parse()
            .ok()?;
        kb.checked_mul(1024)
    });
    let room = |limit: &str, usage: &str| {
        // "max" (no limit) does not parse: no bound from this group.
        let limit = number(read(limit))?;
        Some(limit.saturating_sub(number(read(usage)).unwrap_or(0)))
    };
    let cgroup = room("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current").or_else(|| {
        room(
            "/sys/fs/cgroup/memory/memory.limit_in_bytes",
            "/sys/fs/cgroup/memory/memory.usage_in_bytes",
        )
    });
    match (meminfo, cgroup) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// What to generate.
#[derive(Clone, Copy, Debug)]
pub struct GenSpec {
    /// Live inodes, the root included.
    pub inodes: u64,
    /// The seed: the same `(inodes, seed)` gives the same namespace.
    pub seed: u64,
}

impl Default for GenSpec {
    fn default() -> Self {
        GenSpec {
            inodes: 1_000_000,
            seed: 1,
        }
    }
}

struct Plan {
    /// Parent (index into this list) of each directory; entry 0 is the root.
    parent: Vec<u32>,
    name: Vec<Vec<u8>>,
    files: Vec<u32>,
    symlinks: Vec<u32>,
}

/// A directory name; `k` (the directory's number) keeps names unique.
pub(crate) fn dir_name(rng: &mut Pcg64Mcg, depth: usize, k: usize) -> Vec<u8> {
    let day = rng.random_range(0..730u64);
    let (y, d) = (2024 + day / 365, day % 365);
    match (depth, rng.random_range(0..5u32)) {
        (1, _) => [
            "user",
            "warehouse",
            "logs",
            "tmp",
            "apps",
            "data",
            "backup",
            "staging",
        ]
        .get(k.wrapping_sub(1))
        .map_or_else(|| format!("vol{k}"), |s| s.to_string()),
        (_, 0) => format!("dt={y}-{:02}-{:02}.{k}", d / 31 + 1, d % 28 + 1),
        (_, 1) => format!("hour={:02}_{k}", k % 24),
        (_, 2) => format!("{}_{k}", ["job", "table", "project", "run"][k % 4]),
        (_, 3) => format!("{}{k}", String::from_utf8_lossy(USERS[k % USERS.len()])),
        _ => format!("batch_{:x}", rng.random::<u32>()),
    }
    .into_bytes()
}

fn file_name(rng: &mut Pcg64Mcg, k: u32) -> Vec<u8> {
    match rng.random_range(0..6u32) {
        0 | 1 => format!(
            "part-{k:05}-{:08x}{}",
            rng.random::<u32>(),
            EXTS[k as usize % EXTS.len()]
        ),
        2 => format!("{k:06}_0"),
        3 => format!("log.{k}.gz"),
        4 => format!("f{k}"),
        _ => format!("data_{k}.csv"),
    }
    .into_bytes()
}

/// Shapes the tree: directories first (breadth-first, heavy-tailed fan-out),
/// then files per directory with Zipf-like weights.
fn plan(spec: GenSpec, rng: &mut Pcg64Mcg) -> Plan {
    let n = spec.inodes.max(1);
    let dirs = ((n as f64 * 0.095) as u64).max(1) as usize;
    let links = (n as f64 * 0.005) as u64;
    let files = n.saturating_sub(dirs as u64 + links);
    let mut p = Plan {
        parent: vec![u32::MAX],
        name: vec![Vec::new()],
        files: vec![0],
        symlinks: vec![0],
    };
    let mut depth = vec![0usize];
    let mut next = 0usize;
    while p.parent.len() < dirs {
        let at = next.min(p.parent.len() - 1);
        next += 1;
        let d = depth[at] + 1;
        // Heavy-tailed fan-out: most directories have few subdirectories.
        let u: f64 = rng.random::<f64>().max(1e-9);
        let fan = if d == 1 {
            8
        } else {
            ((1.5 / u.powf(0.8)) as usize).min(2_000)
        };
        for _ in 0..fan {
            if p.parent.len() >= dirs {
                break;
            }
            let k = p.parent.len();
            p.parent.push(at as u32);
            p.name.push(dir_name(rng, d, k));
            p.files.push(0);
            p.symlinks.push(0);
            depth.push(d);
        }
        if next >= p.parent.len() {
            next = 0;
        }
    }
    // Files: weight 1/rank^1.1 over a random order of the non-root directories,
    // so a few directories get a large share (100k+ at a million inodes).
    let d = p.parent.len();
    let mut order: Vec<usize> = (1.max(d.min(2) - 1)..d).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.random_range(0..=i));
    }
    spread_files(files, order.len(), rng, |rank, k| {
        let dir = rank.and_then(|r| order.get(r)).copied().unwrap_or(0);
        p.files[dir] += k as u32;
    });
    for _ in 0..links {
        let dir = rng.random_range(0..d);
        p.symlinks[dir] += 1;
    }
    p
}

/// Spreads `files` files over `n` directories taken in rank order, rank r
/// weighing 1/r^1.1, then what rounding left one by one over random ranks:
/// `add(rank, files)`, the rank `None` when there is none to give them to.
pub(crate) fn spread_files(
    files: u64,
    n: usize,
    rng: &mut Pcg64Mcg,
    mut add: impl FnMut(Option<usize>, u64),
) {
    let weight = |r: usize| 1.0 / (r as f64).powf(1.1);
    let total: f64 = (1..=n).map(weight).sum();
    let mut left = files;
    for r in 0..n {
        let k = ((files as f64 * weight(r + 1) / total) as u64).min(left);
        add(Some(r), k);
        left -= k;
    }
    for _ in 0..left {
        let r = rng.random_range(0..n.max(1));
        add((r < n).then_some(r), 1);
    }
}

pub(crate) fn perm<'a>(rng: &mut Pcg64Mcg, dir: bool) -> PermSpec<'a> {
    let u = (rng.random::<f64>().powi(2) * USERS.len() as f64) as usize;
    PermSpec {
        user: USERS[u.min(USERS.len() - 1)],
        group: GROUPS[u % GROUPS.len()],
        mode: if dir {
            0o755
        } else {
            [0o644, 0o640, 0o600][u % 3]
        },
    }
}

/// Builds the namespace described by `spec`.
///
/// # Panics
/// If `spec.inodes` exceeds [`MAX_INODES`] (callers check with
/// [`check_fits`]).
pub fn generate(spec: GenSpec) -> Namespace {
    assert!(
        spec.inodes <= MAX_INODES,
        "{}",
        SizeError::TooMany {
            inodes: spec.inodes,
            max: MAX_INODES,
        }
    );
    let mut rng = Pcg64Mcg::seed_from_u64(spec.seed);
    let p = plan(spec, &mut rng);
    let mut ns = Namespace::new(NsInfo {
        namespace_id: rng.random::<u32>() as u64,
        creation_time: EPOCH_MS,
        last_block_id: 1 << 30,
        generation_stamp: 1000,
        ..NsInfo::default()
    });
    let mut ids = vec![0u64; p.parent.len()];
    ids[0] = ROOT_ID;
    let mut kids: Vec<Vec<usize>> = vec![Vec::new(); p.parent.len()];
    for (i, &par) in p.parent.iter().enumerate().skip(1) {
        kids[par as usize].push(i);
    }
    let mut next_block = (1u64 << 30) + 1;
    let mut gs = 1001u64;
    let mut entries: Vec<(Vec<u8>, u8, usize)> = Vec::new();
    for dir in 0..p.parent.len() {
        // Children of one directory are created in name order, so every
        // insertion appends.
        entries.clear();
        entries.extend(kids[dir].iter().map(|&k| (p.name[k].clone(), 0u8, k)));
        for f in 0..p.files[dir] {
            entries.push((file_name(&mut rng, f), 1, 0));
        }
        for s in 0..p.symlinks[dir] {
            entries.push((format!("link_{s}").into_bytes(), 2, 0));
        }
        // Directory names are unique; a file or link that happens to share
        // a name with an earlier entry is dropped (directories sort first).
        entries.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        entries.dedup_by(|a, b| a.0 == b.0);
        let parent = ids[dir];
        for (name, kind, k) in entries.drain(..) {
            let mtime = EPOCH_MS + rng.random_range(0..63_072_000_000u64);
            let made = match kind {
                0 => ns.mkdir_in(parent, &name, &perm(&mut rng, true), mtime),
                1 => ns.create_in(
                    parent,
                    &name,
                    &perm(&mut rng, false),
                    &FileSpec {
                        replication: if rng.random_bool(0.9) { 3 } else { 2 },
                        preferred_block_size: BLOCK_SIZE,
                        storage_policy: if rng.random_bool(0.05) { 12 } else { 0 },
                    },
                    mtime,
                ),
                _ => ns.symlink_in(parent, &name, LINK_TARGET, &perm(&mut rng, false), mtime),
            };
            // The plan only makes valid, unique names: a failure is a bug.
            let id = made.expect("generator plan yields valid names");
            match kind {
                0 => ids[k] = id,
                1 => add_blocks(&mut ns, &mut rng, id, &mut next_block, &mut gs),
                _ => {}
            }
            decorate(&mut ns, &mut rng, id, kind);
        }
    }
    ns.info_mut().last_txid = ns.stats().inodes;
    ns
}

/// How many blocks a new file gets (0 to 3) and the length of its last
/// one; the others are full.
pub(crate) fn draw_blocks(rng: &mut Pcg64Mcg) -> (u32, u64) {
    let r: f64 = rng.random();
    let count = if r < 0.05 {
        0
    } else if r < 0.75 {
        1
    } else if r < 0.93 {
        2
    } else {
        3
    };
    // Last blocks are mostly small (log-uniform from 1 KiB to a full block).
    let last = if count > 0 {
        (1024.0 * (BLOCK_SIZE as f64 / 1024.0).powf(rng.random::<f64>())) as u64
    } else {
        0
    };
    (count, last)
}

fn add_blocks(ns: &mut Namespace, rng: &mut Pcg64Mcg, id: u64, next: &mut u64, gs: &mut u64) {
    let (count, last) = draw_blocks(rng);
    for b in 0..count {
        *gs += 1;
        let block = Block {
            id: *next,
            generation_stamp: *gs,
            length: if b + 1 == count { last } else { BLOCK_SIZE },
        };
        *next += 1;
        ns.add_block(id, block).expect("file just created");
    }
}

/// A rare attribute an inode gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decoration {
    None,
    /// A directory's quotas, [`QUOTA`].
    Quota,
    /// A directory's ACL, [`ACL`].
    Acl,
    /// A file's `user.checksum.type` xattr.
    UserXattr,
    /// A file's `trusted.encryption.zone` xattr, with this value.
    TrustedXattr([u8; 16]),
    /// A file under construction by [`CLIENT`].
    UnderConstruction,
}

/// The quotas of a directory with [`Decoration::Quota`].
pub(crate) const QUOTA: (i64, i64) = (1_000_000, 1 << 40);
/// The ACL of a directory with [`Decoration::Acl`].
pub(crate) const ACL: [(&[u8], u8, bool, u8); 4] = [
    (b"", 0, false, 7),
    (b"analysts", 1, false, 5),
    (b"", 2, false, 5),
    (b"", 3, false, 0),
];
/// The xattr names of [`Decoration::UserXattr`] and
/// [`Decoration::TrustedXattr`], and the first one's value.
pub(crate) const XATTR_NAMES: [&[u8]; 2] = [b"checksum.type", b"encryption.zone"];
pub(crate) const CHECKSUM_TYPE: &[u8] = b"crc32c";
/// The client name and machine of a file under construction.
pub(crate) const CLIENT: (&[u8], &[u8]) = (b"DFSClient_NONMAPREDUCE_1", b"10.0.0.7");
/// The target of every generated symlink.
pub(crate) const LINK_TARGET: &[u8] = b"/data/current";

/// Draws the rare attribute of an inode of `kind` (0 directory, 1 file,
/// 2 symlink), if any.
pub(crate) fn draw_decoration(rng: &mut Pcg64Mcg, kind: u8) -> Decoration {
    let r: f64 = rng.random();
    match kind {
        0 if r < 0.02 => Decoration::Quota,
        0 if r < 0.04 => Decoration::Acl,
        1 if r < 0.005 => Decoration::UserXattr,
        1 if r < 0.008 => Decoration::TrustedXattr(rng.random::<[u8; 16]>()),
        1 if r < 0.009 => Decoration::UnderConstruction,
        _ => Decoration::None,
    }
}

/// Rare attributes: xattrs, ACLs, quotas, under-construction files.
fn decorate(ns: &mut Namespace, rng: &mut Pcg64Mcg, id: u64, kind: u8) {
    let ok = match draw_decoration(rng, kind) {
        Decoration::None => Ok(()),
        Decoration::Quota => ns.set_quota(id, QUOTA.0, QUOTA.1),
        Decoration::Acl => ns.set_acl(id, &ACL),
        Decoration::UserXattr => ns.set_xattr(id, XAttrNs::User, XATTR_NAMES[0], CHECKSUM_TYPE),
        Decoration::TrustedXattr(v) => ns.set_xattr(id, XAttrNs::Trusted, XATTR_NAMES[1], &v),
        Decoration::UnderConstruction => ns.set_under_construction(id, Some(CLIENT)),
    };
    ok.expect("decorating a live inode");
}
