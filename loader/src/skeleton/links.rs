//! Each inode's parent directory, kept per INODE piece as INODE_DIR gives
//! it and consumed as the piece's records come, in id order.
//!
//! A piece whose ids are dense (its id range at most twice its records)
//! keeps one `u32` per id of its range, indexed by `id - base`: 4 bytes an
//! inode, no sort, and a child listed twice found as it is linked. A piece
//! with sparse ids keeps its links as sorted `(id - base) << 32 | dir`
//! pairs (8 bytes an inode). Both are bounded by the piece's record count
//! as its index declares it, itself bounded by the piece's bytes.

use nsimage_format::ROOT_ID;

/// One INODE piece's links.
pub(super) enum Links {
    /// Indexed by `id - base`: the directory plus one, 0 where no
    /// INODE_DIR entry lists the id.
    Dense(Vec<u32>),
    /// Sorted `(id - base) << 32 | dir`.
    Sparse(Vec<u64>),
}

/// Where [`link`] put a child.
pub(super) enum Link {
    /// In its piece's links.
    Yes,
    /// Below every piece's first id, or above the last id an image may
    /// hold: an inode that cannot exist.
    NotAnInode,
    /// Listed before, in this directory or another.
    Twice,
    /// More than 2^32 above its piece's first id.
    TooSparse,
}

impl Links {
    /// Empty links for a piece of `records` records (at most `length`, its
    /// bytes) whose ids lie in `base..base + span` (`None`: not known).
    pub(super) fn new(records: u64, length: u64, span: Option<u64>) -> Links {
        match Self::dense_span(records, length, span) {
            Some(s) => Links::Dense(vec![0; s]),
            None => Links::Sparse(Vec::with_capacity(Self::records(records, length))),
        }
    }

    /// The bytes [`new`](Self::new) takes for such a piece, once filled.
    pub(super) fn size(records: u64, length: u64, span: Option<u64>) -> usize {
        match Self::dense_span(records, length, span) {
            Some(s) => s.saturating_mul(4),
            None => Self::records(records, length).saturating_mul(8),
        }
    }

    /// The piece's records as the index declares them, at most one a byte.
    fn records(records: u64, length: u64) -> usize {
        usize::try_from(records.min(length)).unwrap_or(0)
    }

    /// The dense array's length, when ids are dense enough for one.
    fn dense_span(records: u64, length: u64, span: Option<u64>) -> Option<usize> {
        let records = records.min(length);
        span.filter(|&s| s <= records.saturating_mul(2))
            .and_then(|s| usize::try_from(s).ok())
    }

    /// Bytes held.
    pub(super) fn bytes(&self) -> usize {
        match self {
            Links::Dense(v) => v.capacity().saturating_mul(4),
            Links::Sparse(v) => v.capacity().saturating_mul(8),
        }
    }

    /// The parent directory linked to `id - base`, if any.
    pub(super) fn parent_of(&self, key: u64) -> Option<u32> {
        match self {
            Links::Dense(v) => usize::try_from(key)
                .ok()
                .and_then(|k| v.get(k))
                .and_then(|&d| d.checked_sub(1)),
            Links::Sparse(v) => {
                let i = v.partition_point(|&l| (l >> 32) < key);
                v.get(i).filter(|&&l| (l >> 32) == key).map(|&l| low(l))
            }
        }
    }

    /// The parent directory of each linked id, in id order (sparse links
    /// sorted first).
    pub(super) fn parents(&self) -> Box<dyn Iterator<Item = u32> + '_> {
        match self {
            Links::Dense(v) => Box::new(v.iter().filter_map(|&d| d.checked_sub(1))),
            Links::Sparse(v) => Box::new(v.iter().map(|&l| low(l))),
        }
    }

    /// Sorts sparse links (in child order); the first child listed twice.
    pub(super) fn sort(&mut self) -> Option<u64> {
        let Links::Sparse(v) = self else { return None };
        v.sort_unstable();
        v.shrink_to_fit();
        v.windows(2)
            .find(|w| w[0] >> 32 == w[1] >> 32)
            .map(|w| w[0] >> 32)
    }

    /// Every directory index `d` replaced with `f(d)`.
    pub(super) fn renumber(&mut self, f: impl Fn(u32) -> u32) {
        match self {
            Links::Dense(v) => v.iter_mut().filter(|d| **d != 0).for_each(|d| {
                *d = f(d.saturating_sub(1)).saturating_add(1);
            }),
            Links::Sparse(v) => v.iter_mut().for_each(|l| {
                *l = (*l >> 32) << 32 | u64::from(f(low(*l)));
            }),
        }
    }
}

/// The directory half of a sparse link.
fn low(l: u64) -> u32 {
    #[allow(clippy::cast_possible_truncation)]
    let d = l as u32;
    d
}

/// Links `child` to directory `dir` in the links of the piece whose ids it
/// falls among (`bases`: each piece's first id).
pub(super) fn link(bases: &[u64], links: &mut [Links], child: u64, dir: u32) -> Link {
    let i = bases.partition_point(|&b| b <= child).saturating_sub(1);
    let (Some(&base), Some(list)) = (bases.get(i), links.get_mut(i)) else {
        return Link::Yes;
    };
    let Some(offset) = child.checked_sub(base) else {
        return Link::NotAnInode;
    };
    match list {
        Links::Dense(v) => match usize::try_from(offset).ok().and_then(|o| v.get_mut(o)) {
            None => Link::NotAnInode,
            Some(slot) if *slot != 0 => Link::Twice,
            Some(slot) => {
                // dir < NONE = u32::MAX.
                *slot = dir.saturating_add(1);
                Link::Yes
            }
        },
        Links::Sparse(v) => match u32::try_from(offset) {
            Err(_) => Link::TooSparse,
            Ok(offset) => {
                v.push(u64::from(offset) << 32 | u64::from(dir));
                Link::Yes
            }
        },
    }
}

/// Sorts each piece's sparse links, on `pool` when given; the first child
/// listed twice (piece, `id - base`).
pub(super) fn sort_all(
    links: &mut [Links],
    pool: Option<&rayon::ThreadPool>,
) -> Option<(usize, u64)> {
    let twice: Vec<Option<u64>> = match pool {
        Some(p) => p.install(|| {
            use rayon::prelude::*;
            links.par_iter_mut().map(Links::sort).collect()
        }),
        None => links.iter_mut().map(Links::sort).collect(),
    };
    twice
        .into_iter()
        .enumerate()
        .find_map(|(i, t)| t.map(|k| (i, k)))
}

/// One INODE piece's links, consumed as its records come (in id order).
pub(super) struct Linker<'s> {
    links: &'s Links,
    base: u64,
    /// Sparse: the next link; dense: the next id (less the base) whose
    /// link is not yet checked.
    next: usize,
}

impl<'s> Linker<'s> {
    pub(super) fn new(links: &'s Links, base: u64) -> Linker<'s> {
        Linker {
            links,
            base,
            next: 0,
        }
    }

    /// The parent directory (its index) of inode `id` (the next record):
    /// `None` for the root; an error for an inode with no link, or two, or
    /// a link to an id no record has.
    pub(super) fn parent(&mut self, id: u64) -> Result<Option<u32>, String> {
        let key = id.checked_sub(self.base);
        let parent = match self.links {
            Links::Dense(v) => {
                let k = key.and_then(|k| usize::try_from(k).ok());
                // Ids skipped since the last record hold no inode.
                let upto = k.unwrap_or(0).min(v.len());
                if let Some(gap) = v
                    .get(self.next..upto)
                    .and_then(|g| g.iter().position(|&d| d != 0))
                {
                    return Err(not_an_inode(
                        self.base,
                        self.next.saturating_add(gap) as u64,
                    ));
                }
                let slot = k.and_then(|k| v.get(k)).copied().unwrap_or(0);
                if let Some(k) = k.filter(|&k| k >= self.next) {
                    self.next = k.saturating_add(1).min(v.len());
                }
                slot.checked_sub(1)
            }
            Links::Sparse(v) => {
                let key = key.and_then(|k| u32::try_from(k).ok());
                // A link below this record names no inode.
                if let Some(&l) = v
                    .get(self.next)
                    .filter(|&&l| key.is_none_or(|k| (l >> 32) < u64::from(k)))
                {
                    return Err(not_an_inode(self.base, l >> 32));
                }
                let mut parent = None;
                while let Some(&l) = v.get(self.next) {
                    if key.is_none_or(|k| (l >> 32) != u64::from(k)) {
                        break;
                    }
                    if parent.is_some() {
                        return Err(format!("inode {id} has two parents"));
                    }
                    parent = Some(low(l));
                    self.next = self.next.saturating_add(1);
                }
                parent
            }
        };
        match (id == ROOT_ID, parent) {
            (true, Some(_)) => Err("the root directory has a parent".into()),
            (false, None) => Err(format!("inode {id} is not reachable from the root")),
            _ => Ok(parent),
        }
    }

    /// Every link was matched.
    pub(super) fn finish(&self) -> Result<(), String> {
        let left = match self.links {
            Links::Dense(v) => v.get(self.next..).and_then(|rest| {
                rest.iter()
                    .position(|&d| d != 0)
                    .map(|k| self.next.saturating_add(k) as u64)
            }),
            Links::Sparse(v) => v.get(self.next).map(|&l| l >> 32),
        };
        match left {
            Some(k) => Err(not_an_inode(self.base, k)),
            None => Ok(()),
        }
    }
}

fn not_an_inode(base: u64, key: u64) -> String {
    format!(
        "inode {} listed as a child is not an inode",
        base.saturating_add(key)
    )
}
