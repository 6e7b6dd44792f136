//! The shape of a version 2 namespace: the tree of directories, the files
//! and links of each, drawn once and kept as a few numbers per directory;
//! the names of a directory's entries, drawn again whenever a pass needs
//! them; the walks of the passes over it.

use super::draw::{candidates, draw, Drawn, Encoder};
use crate::generate::{
    dir_name, draw_blocks, spread_files, Decoration, GenSpec, ACL, BLOCK_SIZE, EXTS, GROUPS, USERS,
    XATTR_NAMES,
};
use nsimage_format::wire::varint::varint_len;
use nsimage_namespace::{Stats, ROOT_ID};
use nsimage_writer::Size;
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::io::Write as _;
use std::ops::Range;

/// Entries a piece of parallel work covers, about.
const PIECE_ENTRIES: u64 = 1 << 16;

/// A random stream of directory `k`: 0 draws its name, 1 its entries'
/// names, 2 their attributes, 3 its files' blocks.
pub(super) fn dir_rng(seed: u64, k: u32, stream: u64) -> Pcg64Mcg {
    let key = (u64::from(k) << 2 | stream).to_le_bytes();
    Pcg64Mcg::seed_from_u64(xxhash_rust::xxh3::xxh3_64_with_seed(&key, seed))
}

/// Decimal digits of `n`.
pub(super) fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// The tree and the spread of files: a few numbers per directory.
pub(super) struct Shape {
    pub(super) seed: u64,
    /// Directory `k`'s subdirectories are `kids[k]..kids[k + 1]`
    /// (breadth-first numbering; 0 is the root).
    pub(super) kids: Vec<u32>,
    /// Files of each directory.
    pub(super) files: Vec<u32>,
    /// The directory of each symlink, sorted.
    pub(super) links: Vec<u32>,
    pub(super) namespace_id: u64,
}

impl Shape {
    /// Draws the shape of `spec`'s namespace (version 1's plan, without the
    /// names).
    pub(super) fn plan(spec: GenSpec) -> Shape {
        let mut rng = Pcg64Mcg::seed_from_u64(spec.seed);
        let n = spec.inodes.max(1);
        // At most MAX_INODES inodes: the counts fit u32.
        let dirs = u32::try_from(((n as f64 * 0.095) as u64).max(1)).unwrap_or(u32::MAX);
        let links = (n as f64 * 0.005) as u64;
        let files = n.saturating_sub(u64::from(dirs) + links);
        let mut kids = Vec::with_capacity(dirs as usize + 1);
        let mut made = 1u32;
        for at in 0..dirs {
            kids.push(made);
            if made < dirs {
                // Heavy-tailed fan-out: most directories have few
                // subdirectories.
                let u: f64 = rng.random::<f64>().max(1e-9);
                let fan = if at == 0 {
                    8
                } else {
                    ((1.5 / u.powf(0.8)) as u32).clamp(1, 2_000)
                };
                made = made.saturating_add(fan).min(dirs);
            }
        }
        kids.push(made);
        // Files: weight 1/rank^1.1 over a random order of the non-root
        // directories, so a few directories get a large share.
        let mut spread = vec![0u32; dirs as usize];
        let mut order: Vec<u32> = (1..dirs).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.random_range(0..=i));
        }
        spread_files(files, order.len(), &mut rng, |rank, k| {
            let dir = rank.and_then(|r| order.get(r)).copied().unwrap_or(0);
            // A directory's share is at most the inodes: it fits u32.
            spread[dir as usize] += u32::try_from(k).unwrap_or(u32::MAX);
        });
        drop(order);
        let mut link_dirs: Vec<u32> = (0..links).map(|_| rng.random_range(0..dirs)).collect();
        link_dirs.sort_unstable();
        Shape {
            seed: spec.seed,
            kids,
            files: spread,
            links: link_dirs,
            namespace_id: u64::from(rng.random::<u32>()),
        }
    }

    pub(super) fn dirs(&self) -> u32 {
        // One more entry than directories, which fit u32.
        u32::try_from(self.kids.len() - 1).unwrap_or(u32::MAX)
    }

    pub(super) fn kids_of(&self, k: u32) -> Range<u32> {
        self.kids[k as usize]..self.kids[k as usize + 1]
    }

    pub(super) fn links_of(&self, k: u32) -> u32 {
        let a = self.links.partition_point(|&d| d < k);
        let b = self.links.partition_point(|&d| d <= k);
        u32::try_from(b - a).unwrap_or(u32::MAX)
    }

    /// Entries (children) of directory `k`.
    pub(super) fn entries(&self, k: u32) -> u64 {
        let kids = self.kids_of(k);
        u64::from(kids.end - kids.start)
            + u64::from(self.files[k as usize])
            + u64::from(self.links_of(k))
    }

    /// Pieces of parallel work: ranges of directories of about
    /// [`PIECE_ENTRIES`] entries, with the id of each one's first entry.
    pub(super) fn pieces(&self) -> Vec<(Range<u32>, u64)> {
        let mut out = Vec::new();
        let (mut start, mut base, mut acc) = (0u32, ROOT_ID + 1, 0u64);
        for k in 0..self.dirs() {
            acc += self.entries(k);
            if acc >= PIECE_ENTRIES || k + 1 == self.dirs() {
                out.push((start..k + 1, base));
                base += acc;
                start = k + 1;
                acc = 0;
            }
        }
        out
    }

    /// The names of directory `k`'s entries in name order, with their kind
    /// (0 directory, 1 file, 2 symlink) and, for a directory, its number:
    /// `each(position, name, kind, number)`. `kid_names` is scratch.
    pub(super) fn names(
        &self,
        k: u32,
        kid_names: &mut Vec<(Vec<u8>, u32)>,
        mut each: impl FnMut(u64, &[u8], u8, u32),
    ) {
        kid_names.clear();
        let depth = if k == 0 { 1 } else { 2 };
        for c in self.kids_of(k) {
            kid_names.push((
                dir_name(&mut dir_rng(self.seed, c, 0), depth, c as usize),
                c,
            ));
        }
        kid_names.sort_unstable();
        // Version 1 names batch directories by a random number alone: two
        // siblings that draw the same one get their numbers appended.
        let again: Vec<bool> = (0..kid_names.len())
            .map(|i| i > 0 && kid_names[i].0 == kid_names[i - 1].0)
            .collect();
        for (i, _) in again.iter().enumerate().filter(|(_, &a)| a) {
            let c = kid_names[i].1;
            kid_names[i].0.extend_from_slice(format!(".{c}").as_bytes());
        }
        kid_names.sort_unstable();
        // Files and links: one stream per name pattern, each in order, the
        // patterns in the order of their first bytes.
        let mut rng = dir_rng(self.seed, k, 1);
        let mut count = [0u32; 6];
        for _ in 0..self.files[k as usize] {
            count[rng.random_range(0..6usize)] += 1;
        }
        let streams: [(u32, usize); 6] = [
            (count[2], 6),            // 000042_0
            (count[5], 1),            // data_42.csv
            (count[4], 1),            // f42
            (self.links_of(k), 1),    // link_42
            (count[3], 1),            // log.42.gz
            (count[0] + count[1], 5), // part-00042-1a2b3c4d.orc
        ];
        let mut kids = kid_names.iter().peekable();
        let mut name = Vec::with_capacity(64);
        let mut pos = 0u64;
        for (pattern, &(n, min_width)) in streams.iter().enumerate() {
            let w = digits(u64::from(n.saturating_sub(1))).max(min_width);
            for j in 0..n {
                name.clear();
                let hex = if pattern == 5 { rng.random::<u32>() } else { 0 };
                let ext = EXTS[j as usize % EXTS.len()];
                let _ = match pattern {
                    0 => write!(name, "{j:0w$}_0"),
                    1 => write!(name, "data_{j:0w$}.csv"),
                    2 => write!(name, "f{j:0w$}"),
                    3 => write!(name, "link_{j:0w$}"),
                    4 => write!(name, "log.{j:0w$}.gz"),
                    _ => write!(name, "part-{j:0w$}-{hex:08x}{ext}"),
                };
                // Directory names never take the patterns of file names
                // (see `dir_name`), so no two entries share a name.
                while let Some((d, c)) = kids.next_if(|(d, _)| d.as_slice() < name.as_slice()) {
                    each(pos, d, 0, *c);
                    pos += 1;
                }
                debug_assert!(kids.peek().is_none_or(|(d, _)| d != &name));
                each(pos, &name, if pattern == 3 { 2 } else { 1 }, 0);
                pos += 1;
            }
        }
        for (d, c) in kids {
            each(pos, d, 0, *c);
            pos += 1;
        }
    }
}

/// What the first pass measured of one piece.
#[derive(Default)]
pub(super) struct Measured {
    pub(super) inodes: Size,
    pub(super) stats: Stats,
    /// Candidate strings in use, one bit each.
    pub(super) used: u64,
}

impl Shape {
    /// Draws every entry of the directories `dirs`, whose first entry has
    /// id `base`, in id order: `each(directory, entry id, name, kind,
    /// subdirectory number, attributes)`.
    pub(super) fn walk(
        &self,
        dirs: Range<u32>,
        base: u64,
        mut each: impl FnMut(u32, u64, &[u8], u8, u32, &Drawn) -> bool,
    ) {
        let mut kid_names = Vec::new();
        let mut base = base;
        let mut go = true;
        for k in dirs {
            let mut rng = dir_rng(self.seed, k, 2);
            let mut blocks_rng = dir_rng(self.seed, k, 3);
            self.names(k, &mut kid_names, |pos, name, kind, c| {
                if go {
                    let d = draw(&mut rng, &mut blocks_rng, kind);
                    go = each(k, base + pos, name, kind, c, &d);
                }
            });
            if !go {
                return;
            }
            base += self.entries(k);
        }
    }

    /// Blocks of the files of directories `dirs`.
    pub(super) fn blocks(&self, dirs: Range<u32>) -> u64 {
        dirs.map(|k| {
            let mut rng = dir_rng(self.seed, k, 3);
            (0..self.files[k as usize])
                .map(|_| u64::from(draw_blocks(&mut rng).0))
                .sum::<u64>()
        })
        .sum()
    }

    /// The second pass over one piece (whose first block is `first_block`
    /// of the namespace): records and bytes, counts, strings
    /// in use, and the id of every subdirectory of its directories (into
    /// `ids`, which starts at subdirectory `first_kid`).
    pub(super) fn measure(
        &self,
        dirs: Range<u32>,
        base: u64,
        first_block: u64,
        ids: &mut [u32],
        first_kid: u32,
    ) -> Measured {
        // Any non-zero string ids below 128 give records of the final
        // lengths.
        let strings = candidates();
        let mut enc = Encoder::new(
            vec![1; strings.len()],
            (1 << 30) + 1 + first_block,
            1001 + first_block,
        );
        let mut m = Measured::default();
        let mark = |m: &mut Measured, s: &[u8]| {
            if let Ok(i) = strings.binary_search(&s) {
                m.used |= 1 << i;
            }
        };
        self.walk(dirs, base, |_, id, name, kind, c, d| {
            if kind == 0 {
                // Ids fit u32 (MAX_INODES).
                ids[(c - first_kid) as usize] = u32::try_from(id).unwrap_or(u32::MAX);
            }
            enc.fill(id, name, kind, d);
            let len = prost::Message::encoded_len(&enc.msg);
            m.inodes.records += 1;
            m.inodes.bytes += (varint_len(len as u64) + len) as u64;
            mark(&mut m, USERS[d.perm.0]);
            mark(&mut m, GROUPS[d.perm.1]);
            match d.decoration {
                Decoration::UserXattr => mark(&mut m, XATTR_NAMES[0]),
                Decoration::TrustedXattr(_) => mark(&mut m, XATTR_NAMES[1]),
                Decoration::Acl => ACL.iter().for_each(|a| mark(&mut m, a.0)),
                _ => {}
            }
            let st = &mut m.stats;
            st.inodes += 1;
            match kind {
                0 => st.directories += 1,
                1 => {
                    let (count, last) = d.blocks;
                    st.files += 1;
                    st.blocks += u64::from(count);
                    if count > 0 {
                        st.bytes += u64::from(count - 1) * BLOCK_SIZE + last;
                    }
                }
                _ => st.symlinks += 1,
            }
            true
        });
        m
    }

    /// Calls `each(directory, its id, id of its first entry, entries)` for
    /// the directories whose parents are `parents`, in id order (a parent's
    /// subdirectories are numbered together, and their ids follow their
    /// names); the root first when `parents` starts at it. `base_of_first`
    /// is the id of the first entry of `parents`' first subdirectory.
    pub(super) fn dirs_in_id_order(
        &self,
        parents: Range<u32>,
        ids: &[u32],
        base_of_first: u64,
        mut each: impl FnMut(u32, u64, u64, u64) -> bool,
    ) {
        if parents.start == 0 && !each(0, ROOT_ID, ROOT_ID + 1, self.entries(0)) {
            return;
        }
        let mut base = base_of_first;
        let mut group: Vec<(u32, u32, u64)> = Vec::new();
        for p in parents {
            group.clear();
            for c in self.kids_of(p) {
                group.push((ids[c as usize], c, base));
                base += self.entries(c);
            }
            group.sort_unstable();
            for &(id, c, b) in &group {
                if !each(c, u64::from(id), b, self.entries(c)) {
                    return;
                }
            }
        }
    }
}
