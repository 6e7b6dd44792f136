//! Namespaces shaped to be hard to store rather than typical ones: one huge
//! directory, thousands of directories whose children all have the same
//! names, names that share a long prefix, names made of any byte a name may
//! hold, deep chains, files without blocks, all-zero extended attributes as
//! long as a value may be. Such namespaces compress far better (or far
//! worse) than a production one, which is what the writer's at-rest
//! transforms and the readers' bounds must both survive.
//!
//! A [`Shape`] says what to build and [`build`] builds it; the same shape
//! always gives the same namespace (same digest), so a failing shape found
//! by a property test is a complete, printable reproduction.
//!
//! ```
//! use nsimage_testkit::shapes::{build, Names, Shape, Tree};
//!
//! let shape = Shape {
//!     inodes: 300,
//!     tree: Tree::Spread { dirs: 100 },
//!     names: Names::Identical,
//!     ..Shape::default()
//! };
//! let ns = build(&shape);
//! assert_eq!(ns.stats().inodes, 300);
//! assert_eq!(ns.digest(), build(&shape).digest());
//! ```

use nsimage_namespace::{
    Block, FileSpec, Namespace, NsError, NsInfo, PermSpec, XAttrNs, MAX_NAME_LENGTH, ROOT_ID,
};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// How the inodes hang together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tree {
    /// One directory under the root holding every other inode.
    Wide,
    /// `dirs` directories under the root (fewer if the namespace is
    /// smaller), the other inodes dealt over them in turn.
    Spread {
        /// Directories under the root (at least one is made).
        dirs: u32,
    },
    /// A chain of directories, each the only directory in its parent, with
    /// one file beside each link while inodes last.
    Chain,
    /// Each inode under a directory drawn from those made so far; one in
    /// `dir_every` is a directory.
    Random {
        /// One inode in this many is a directory (1: all of them).
        dir_every: u32,
    },
}

/// How children are named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Names {
    /// The k-th child of every directory has the same name
    /// (`part-00000.parquet`, `part-00001.parquet`, ...), as in the many
    /// partitions of one table; a chain's links are all named `d`.
    Identical,
    /// A fixed prefix of `prefix` bytes (at most [`MAX_NAME_LENGTH`] less
    /// the counter's), then a counter unique over the namespace.
    NearIdentical {
        /// Bytes of the shared prefix.
        prefix: u32,
    },
    /// Random names of 1 to `max_len` bytes (at most [`MAX_NAME_LENGTH`]),
    /// each byte any value a name may hold: everything but `/` and NUL.
    AnyBytes {
        /// Longest name drawn.
        max_len: u32,
    },
}

/// What to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Draws everything random: names of [`Names::AnyBytes`], the parents of
    /// [`Tree::Random`], block lengths, times and owners.
    pub seed: u64,
    /// Live inodes, the root included (at least 1).
    pub inodes: u32,
    /// How the inodes hang together.
    pub tree: Tree,
    /// How children are named.
    pub names: Names,
    /// Most blocks per file (each file gets 0 to this many); 0: no blocks
    /// at all.
    pub max_blocks: u8,
    /// Inodes (the root first, then the earliest made) that carry
    /// all-zero extended attributes.
    pub zero_xattr_inodes: u32,
    /// All-zero attributes per such inode (`user.zero.0`, `user.zero.1`,
    /// ...).
    pub zero_xattrs_each: u32,
    /// Bytes of each all-zero value (at most [`MAX_NAME_LENGTH`], the
    /// longest value a namespace holds).
    pub zero_xattr_len: u32,
    /// Every inode with the same owner, mode and time (the most
    /// compressible records), or drawn ones with now and then a symlink,
    /// an ACL, a quota or a file under construction.
    pub uniform: bool,
}

impl Default for Shape {
    fn default() -> Self {
        Shape {
            seed: 1,
            inodes: 100,
            tree: Tree::Wide,
            names: Names::Identical,
            max_blocks: 0,
            zero_xattr_inodes: 0,
            zero_xattrs_each: 0,
            zero_xattr_len: 0,
            uniform: true,
        }
    }
}

/// 2024-01-01T00:00:00Z in milliseconds.
const EPOCH_MS: u64 = 1_704_067_200_000;
const USERS: [&[u8]; 3] = [b"hdfs", b"etl", b"alice"];
const GROUPS: [&[u8]; 2] = [b"supergroup", b"analysts"];
/// Tries at a fresh random name before a taken one gets a counter.
const NAME_TRIES: u32 = 8;

/// Builds the namespace `shape` describes.
///
/// # Panics
/// Never for any shape: sizes are clamped (names and values to
/// [`MAX_NAME_LENGTH`]); a namespace mutation that fails is a bug here and
/// panics with the shape.
pub fn build(shape: &Shape) -> Namespace {
    let mut b = Builder {
        ns: Namespace::new(NsInfo {
            namespace_id: shape.seed ^ 0x6e73_696d,
            creation_time: EPOCH_MS,
            ..NsInfo::default()
        }),
        rng: Pcg64Mcg::seed_from_u64(shape.seed),
        shape: *shape,
        counter: 0,
        next_block: 1,
    };
    b.tree();
    b.zero_xattrs();
    b.ns.info_mut().last_txid = b.ns.stats().inodes;
    b.ns
}

struct Builder {
    ns: Namespace,
    rng: Pcg64Mcg,
    shape: Shape,
    /// Names made so far (the counter of [`Names::NearIdentical`]).
    counter: u64,
    next_block: u64,
}

impl Builder {
    fn left(&self) -> u64 {
        u64::from(self.shape.inodes.max(1)).saturating_sub(self.ns.stats().inodes)
    }

    fn tree(&mut self) {
        match self.shape.tree {
            Tree::Wide => {
                if self.left() > 0 {
                    let d = self.dir(ROOT_ID, 0);
                    let mut k = 0;
                    while self.left() > 0 {
                        self.leaf(d, k);
                        k += 1;
                    }
                }
            }
            Tree::Spread { dirs } => {
                let n = u64::from(dirs.max(1)).min(self.left());
                let ds: Vec<u64> = (0..n).map(|k| self.dir(ROOT_ID, k)).collect();
                let mut k = 0;
                while self.left() > 0 {
                    for &d in &ds {
                        if self.left() == 0 {
                            break;
                        }
                        self.leaf(d, k);
                    }
                    k += 1;
                }
            }
            Tree::Chain => {
                let mut at = ROOT_ID;
                while self.left() > 0 {
                    let next = self.dir(at, 0);
                    if self.left() > 0 {
                        self.leaf(at, 1);
                    }
                    at = next;
                }
            }
            Tree::Random { dir_every } => {
                let mut dirs = vec![ROOT_ID];
                let mut count: Vec<u64> = vec![0];
                while self.left() > 0 {
                    let i = self.rng.random_range(0..dirs.len());
                    let (parent, k) = (dirs[i], count[i]);
                    count[i] += 1;
                    if self.rng.random_range(0..dir_every.max(1)) == 0 {
                        dirs.push(self.dir(parent, k));
                        count.push(0);
                    } else {
                        self.leaf(parent, k);
                    }
                }
            }
        }
    }

    /// The name of child `k` of a directory, per [`Names`] (the caller
    /// makes another on a clash).
    fn name(&mut self, k: u64, is_dir: bool) -> Vec<u8> {
        self.counter += 1;
        match self.shape.names {
            Names::Identical if self.shape.tree == Tree::Chain && is_dir => b"d".to_vec(),
            Names::Identical if is_dir => format!("dt=2024-01-{k:05}").into_bytes(),
            Names::Identical => format!("part-{k:05}.parquet").into_bytes(),
            Names::NearIdentical { prefix } => {
                let tail = format!("{:010}", self.counter);
                let room = MAX_NAME_LENGTH - tail.len();
                let len = (prefix as usize).min(room);
                let mut n: Vec<u8> = b"warehouse_table_partition_"
                    .iter()
                    .copied()
                    .cycle()
                    .take(len)
                    .collect();
                n.extend_from_slice(tail.as_bytes());
                n
            }
            Names::AnyBytes { max_len } => {
                let max = (max_len as usize).clamp(1, MAX_NAME_LENGTH);
                let len = self.rng.random_range(1..=max);
                let mut n: Vec<u8> = (0..len).map(|_| self.rng.random_range(1..=255u8)).collect();
                for c in &mut n {
                    if *c == b'/' {
                        *c = b'\\';
                    }
                }
                if n == b"." || n == b".." {
                    n[0] = b'_';
                }
                n
            }
        }
    }

    /// Makes an inode named for child `k` of `parent` with `make`, drawing
    /// another name when the first is taken (random names may clash) and,
    /// after [`NAME_TRIES`], one with a counter that cannot be.
    fn named(
        &mut self,
        k: u64,
        is_dir: bool,
        make: impl Fn(&mut Namespace, &[u8]) -> Result<u64, NsError>,
    ) -> u64 {
        for _ in 0..NAME_TRIES {
            let name = self.name(k, is_dir);
            match make(&mut self.ns, &name) {
                Ok(id) => return id,
                Err(NsError::AlreadyExists(_)) => {}
                Err(e) => panic!("{:?}: {e}", self.shape),
            }
        }
        let name = format!("taken-{}", self.counter).into_bytes();
        make(&mut self.ns, &name).unwrap_or_else(|e| panic!("{:?}: {e}", self.shape))
    }

    fn perm(&mut self, dir: bool) -> PermSpec<'static> {
        if self.shape.uniform {
            return PermSpec {
                user: USERS[0],
                group: GROUPS[0],
                mode: if dir { 0o755 } else { 0o644 },
            };
        }
        let u = self.rng.random_range(0..USERS.len());
        PermSpec {
            user: USERS[u],
            group: GROUPS[u % GROUPS.len()],
            mode: self.rng.random_range(0..=0o7777u16),
        }
    }

    fn mtime(&mut self) -> u64 {
        if self.shape.uniform {
            EPOCH_MS
        } else {
            EPOCH_MS + self.rng.random_range(0..63_072_000_000u64)
        }
    }

    /// A directory, child `k` of `parent`; now and then (not uniform) with
    /// a quota or an ACL.
    fn dir(&mut self, parent: u64, k: u64) -> u64 {
        let (perm, mtime) = (self.perm(true), self.mtime());
        let id = self.named(k, true, |ns, n| ns.mkdir_in(parent, n, &perm, mtime));
        if !self.shape.uniform {
            let r: f64 = self.rng.random();
            let done = if r < 0.05 {
                self.ns.set_quota(id, self.rng.random_range(-1..1_000), -1)
            } else if r < 0.1 {
                self.ns.set_acl(
                    id,
                    &[
                        (b"", 0, false, 7),
                        (b"analysts", 1, false, 5),
                        (b"", 2, true, 5),
                        (b"", 3, false, 0),
                    ],
                )
            } else {
                Ok(())
            };
            done.unwrap_or_else(|e| panic!("{:?}: {e}", self.shape));
        }
        id
    }

    /// A file (or, now and then when not uniform, a symlink), child `k`
    /// of `parent`, with its blocks.
    fn leaf(&mut self, parent: u64, k: u64) {
        let (perm, mtime) = (self.perm(false), self.mtime());
        if !self.shape.uniform && self.rng.random_bool(0.03) {
            let target = self.name(k, false);
            self.named(k, false, |ns, n| {
                ns.symlink_in(parent, n, &target, &perm, mtime)
            });
            return;
        }
        let spec = FileSpec {
            replication: if self.shape.uniform {
                3
            } else {
                self.rng.random_range(1..=6)
            },
            preferred_block_size: 128 << 20,
            storage_policy: 0,
        };
        let id = self.named(k, false, |ns, n| {
            ns.create_in(parent, n, &perm, &spec, mtime)
        });
        let blocks = if self.shape.max_blocks == 0 {
            0
        } else {
            self.rng.random_range(0..=self.shape.max_blocks)
        };
        for b in 0..blocks {
            let length = if b + 1 == blocks {
                self.rng.random_range(1..=128u64 << 20)
            } else {
                128 << 20
            };
            let block = Block {
                id: self.next_block,
                generation_stamp: 1000 + self.next_block,
                length,
            };
            self.next_block += 1;
            self.ns
                .add_block(id, block)
                .unwrap_or_else(|e| panic!("{:?}: {e}", self.shape));
        }
        if !self.shape.uniform && self.rng.random_bool(0.02) {
            self.ns
                .set_under_construction(id, Some((b"DFSClient_1", b"10.0.0.7")))
                .unwrap_or_else(|e| panic!("{:?}: {e}", self.shape));
        }
    }

    /// All-zero attributes on the root and the earliest inodes made.
    fn zero_xattrs(&mut self) {
        let s = self.shape;
        if s.zero_xattrs_each == 0 {
            return;
        }
        let value = vec![0u8; (s.zero_xattr_len as usize).min(MAX_NAME_LENGTH)];
        let count = u64::from(s.zero_xattr_inodes).min(self.ns.stats().inodes);
        let ids: Vec<u64> = self
            .ns
            .iter()
            .take(count as usize)
            .map(|n| n.id())
            .collect();
        for id in ids {
            for a in 0..s.zero_xattrs_each {
                self.ns
                    .set_xattr(id, XAttrNs::User, format!("zero.{a}").as_bytes(), &value)
                    .unwrap_or_else(|e| panic!("{s:?}: {e}"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shapes() -> Vec<Shape> {
        let mut v = Vec::new();
        for tree in [
            Tree::Wide,
            Tree::Spread { dirs: 7 },
            Tree::Chain,
            Tree::Random { dir_every: 3 },
        ] {
            for names in [
                Names::Identical,
                Names::NearIdentical { prefix: 200 },
                Names::AnyBytes { max_len: 3 },
            ] {
                for uniform in [true, false] {
                    v.push(Shape {
                        seed: 9,
                        inodes: 157,
                        tree,
                        names,
                        max_blocks: 2,
                        zero_xattr_inodes: 2,
                        zero_xattrs_each: 2,
                        zero_xattr_len: 100,
                        uniform,
                    });
                }
            }
        }
        v
    }

    #[test]
    fn every_shape_has_its_inode_count_and_one_digest() {
        for s in shapes() {
            let ns = build(&s);
            assert_eq!(ns.stats().inodes, 157, "{s:?}");
            assert_eq!(ns.digest(), build(&s).digest(), "{s:?}");
        }
        let one = Shape {
            inodes: 0,
            ..Shape::default()
        };
        assert_eq!(build(&one).stats().inodes, 1);
    }

    #[test]
    fn identical_names_repeat_across_directories() {
        let ns = build(&Shape {
            inodes: 1 + 50 + 50 * 4,
            tree: Tree::Spread { dirs: 50 },
            names: Names::Identical,
            ..Shape::default()
        });
        for d in 0..50u64 {
            for k in 0..4u64 {
                let path = format!("/dt=2024-01-{d:05}/part-{k:05}.parquet");
                assert!(ns.resolve(path.as_bytes()).is_ok(), "{path}");
            }
        }
    }

    #[test]
    fn a_chain_is_as_deep_as_half_its_inodes() {
        let ns = build(&Shape {
            inodes: 201,
            tree: Tree::Chain,
            ..Shape::default()
        });
        let path = b"/d".repeat(100);
        assert!(ns.resolve(&path).is_ok());
        assert!(ns.resolve(&b"/d".repeat(101)).is_err());
    }

    #[test]
    fn zero_xattrs_are_as_long_as_asked_and_names_may_be_any_byte() {
        let s = Shape {
            inodes: 2_000,
            names: Names::AnyBytes { max_len: u32::MAX },
            zero_xattr_inodes: 3,
            zero_xattrs_each: 2,
            zero_xattr_len: u32::MAX,
            ..Shape::default()
        };
        let ns = build(&s);
        assert_eq!(ns.stats().inodes, 2_000);
        let x = &ns.root().extra().expect("the root's xattrs").xattrs;
        assert_eq!(x.len(), 2);
        assert!(x.iter().all(|a| a.value.len() == MAX_NAME_LENGTH));
        assert!(x.iter().all(|a| a.value.iter().all(|&b| b == 0)));
        // Bytes above 0x7f and control bytes both occur in names.
        let mut seen = [false; 256];
        for n in ns.iter() {
            for &b in n.name() {
                seen[b as usize] = true;
            }
        }
        assert!(!seen[0] && !seen[b'/' as usize]);
        assert!(seen[1] && seen[0x7f] && seen[0x80] && seen[0xff]);
    }
}
