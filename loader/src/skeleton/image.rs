//! An nsimage image's tree: INODE_DIR read into links (`read_links`),
//! INODE's ids, types and names matched with them (`read_inodes`), the
//! sections the tree does not use checked as a load checks them, and the
//! children's names checked in FORMAT.md's order, through the name
//! section's sums or, where they differ, names in hand, a batch of
//! directories at a time (`check_order_exactly`).

use super::links::{link, sort_all, Link};
use super::names::{self, Seeds, Sums};
use super::{first_ids, new_links, Dir, Skeleton, Unstreamable, NONE};
use crate::decode::{self, bad, check_piece};
use crate::error::LoadError;
use crate::record;
use crate::run::run_pieces;
use crate::sections::{corrupt, pieces, section};
use crate::source::{ImageSource, PieceBuf};
use crate::streamable::Streamable;
use nsimage_format::framing::Records;
use nsimage_format::{Location, SectionKind, ROOT_ID};
use nsimage_namespace::{BuildError, Interned};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// What one name costs that check, bookkeeping included, before its bytes
/// (its place and id in the batch, its slot, its box and the allocator's
/// header, the gathered pair).
const NAME_CHECK_COST: usize = 128;

/// A batch of the exact names check whose names took more than its
/// budget.
struct OverBudget;

/// A window of a directory's list in the exact names check: the
/// directory, and the first and one past the last place of the children
/// it covers.
type Window = (u64, usize, usize);

/// Names by place in a batch of the exact names check (`None`: no record).
type Names = Vec<Option<Box<[u8]>>>;

/// A batch of windows `(parent, start, end)` cut in two: its windows in two
/// halves, or its one window in two that share a name (each of at least
/// two names; a window of two is never cut, see `check_batch`).
fn split_batch(mut batch: Vec<Window>) -> (Vec<Window>, Vec<Window>) {
    if batch.len() > 1 {
        let back = batch.split_off(batch.len() / 2);
        return (batch, back);
    }
    match batch.first().copied() {
        Some((p, start, end)) if end.saturating_sub(start) > 2 => {
            let mid = start.saturating_add(end.saturating_sub(start) / 2);
            (vec![(p, start, mid.saturating_add(1))], vec![(p, mid, end)])
        }
        _ => (batch, Vec::new()),
    }
}

impl Skeleton {
    /// An nsimage image's tree, and the sums of its names and lists (see
    /// `names.rs`) under `seeds`.
    pub(super) fn build_image(
        src: &ImageSource,
        pool: Option<&rayon::ThreadPool>,
        seeds: &Seeds,
    ) -> Result<Result<(Skeleton, Sums), Unstreamable>, LoadError> {
        let (info, strings) = crate::indexed::small_sections(src)?;
        let inode_pieces = pieces(section(src, SectionKind::INODE)?);
        let bases = first_ids(&inode_pieces);
        // One link per inode of each piece (the root's piece has one
        // fewer): sized from the index, bounded by the piece's bytes.
        let links = new_links(&inode_pieces, &bases, Some(info.last_inode_id));
        let mut s = Skeleton {
            info,
            tables: Interned::new(strings),
            dirs: Vec::new(),
            names: Vec::new(),
            links,
            inode_pieces,
            bases,
            inodes: 0,
            last_id: 0,
            hadoop_order: true,
        };
        let mut tree = Sums::default();
        if s.read_links(src, pool, seeds, &mut tree)?.is_err() {
            return Ok(Err(Unstreamable::TooSparse));
        }
        if s.read_inodes(src, pool, seeds, &mut tree)?.is_err() {
            return Ok(Err(Unstreamable::TooSparse));
        }
        if s.inodes == 0 {
            return Err(corrupt(
                src,
                Location::in_section(SectionKind::INODE, None, 0),
                BuildError::NoRoot.to_string(),
            ));
        }
        // The rules a load checks once every record is in.
        let whole = Location::in_section(SectionKind::INODE, None, 0);
        if s.last_id > s.info.last_inode_id {
            let e = BuildError::InodeIdTooLarge {
                id: s.last_id,
                last: s.info.last_inode_id,
            };
            return Err(corrupt(src, whole, e.to_string()));
        }
        // What a load reads of the sections it does not use: every piece's
        // checksum (and authentication, and codec), the Hadoop carry.
        // The name section's pieces are read (and checked) by the names'
        // check that follows.
        let names = [SectionKind::NAME_RUNS, SectionKind::NAME_INDEX];
        crate::sections::check_unknown_but(src, pool, &names)?;
        crate::sections::hdfs_carry(src)?;
        s.check_tree().map_err(|d| {
            corrupt(
                src,
                Location::in_section(SectionKind::INODE_DIR, None, 0),
                d,
            )
        })?;
        Ok(Ok((s, tree)))
    }

    /// FORMAT.md's order of every directory's children (strictly
    /// increasing names, so none repeats), as a load checks it: through
    /// the name section's sums when it agrees with the tree's (`tree`,
    /// under `seeds`), else exactly, names in hand, for the directories
    /// whose sums differ (every directory when the image has no usable
    /// name section). See `names.rs`.
    pub(super) fn check_names(
        &self,
        src: &Streamable,
        image: &ImageSource,
        pool: Option<&rayon::ThreadPool>,
        seeds: &Seeds,
        tree: &Sums,
        name_bytes: usize,
    ) -> Result<(), LoadError> {
        match names::section_sums(image, pool, seeds)? {
            Some(named) if !named.differs(tree) => Ok(()),
            Some(named) => {
                let differs = |parent| named.differs_at(tree, parent);
                self.check_order_exactly(src, pool, &differs, name_bytes)
            }
            None => self.check_order_exactly(src, pool, &|_| true, name_bytes),
        }
    }

    /// The children of each directory `want` selects, named from their
    /// INODE records, in strictly increasing name order: about `name_bytes`
    /// of names and bookkeeping held at once (a directory with more
    /// children is checked in overlapping windows), one pass over
    /// INODE_DIR and one over the INODE pieces that hold them per batch.
    /// Batches are first cut at `name_bytes / NAME_CHECK_COST` names; a
    /// batch whose names turn out longer is cut in two and read again.
    ///
    /// # Errors
    /// A located [`LoadError::Corrupt`]: the load's words for children out
    /// of order; a piece's read or checks.
    fn check_order_exactly(
        &self,
        src: &Streamable,
        pool: Option<&rayon::ThreadPool>,
        want: &(dyn Fn(u64) -> bool + Sync),
        name_bytes: usize,
    ) -> Result<(), LoadError> {
        let cap = (name_bytes / NAME_CHECK_COST).max(2);
        // Each wanted list's length, then windows of at most `cap` names,
        // each the next's first name too, then batches of windows.
        let mut lens: Vec<(u64, usize)> = Vec::new();
        self.for_each_dir_entry(src, |parent, kids| {
            if kids.len() > 1 && want(parent) {
                lens.push((parent, kids.len()));
            }
            Ok::<(), LoadError>(())
        })?;
        let mut batches: Vec<Vec<(u64, usize, usize)>> = vec![Vec::new()];
        let mut held = 0usize;
        for (parent, len) in lens {
            let mut start = 0usize;
            while start.saturating_add(1) < len {
                let end = len.min(start.saturating_add(cap));
                let n = end.saturating_sub(start);
                if held.saturating_add(n) > cap && held > 0 {
                    batches.push(Vec::new());
                    held = 0;
                }
                if let Some(b) = batches.last_mut() {
                    b.push((parent, start, end));
                }
                held = held.saturating_add(n);
                start = end.saturating_sub(1);
            }
        }
        // Batches to read, last first; one over the budget is cut in two.
        let mut todo: Vec<Vec<(u64, usize, usize)>> = batches.into_iter().rev().collect();
        while let Some(batch) = todo.pop() {
            if batch.is_empty() || self.check_batch(src, pool, &batch, name_bytes)?.is_ok() {
                continue;
            }
            let (a, b) = split_batch(batch);
            if b.is_empty() {
                // Not to be cut (two names): read whatever it takes.
                self.check_batch(src, pool, &a, usize::MAX)?.ok();
                continue;
            }
            todo.push(b);
            todo.push(a);
        }
        Ok(())
    }

    /// One batch of [`check_order_exactly`](Self::check_order_exactly):
    /// windows `(parent, start, end)` of lists, in file order; `Ok(Err(_))`
    /// when their names take more than `name_bytes` (a batch of one window
    /// of two names is read whatever it takes: at most two names of
    /// `MAX_NAME_LENGTH`).
    fn check_batch(
        &self,
        src: &Streamable,
        pool: Option<&rayon::ThreadPool>,
        batch: &[(u64, usize, usize)],
        name_bytes: usize,
    ) -> Result<Result<(), OverBudget>, LoadError> {
        // The windows' children, each with its place among the names.
        let mut wanted: Vec<(u64, usize)> = Vec::new();
        let mut lists: Vec<(u64, usize, usize)> = Vec::new();
        let mut next = 0usize;
        self.for_each_dir_entry(src, |parent, kids| {
            while let Some(&(p, start, end)) = batch.get(next) {
                if p != parent {
                    break;
                }
                let first = wanted.len();
                for &c in kids.get(start..end).unwrap_or_default() {
                    wanted.push((c, wanted.len()));
                }
                lists.push((parent, first, wanted.len()));
                next = next.saturating_add(1);
            }
            Ok::<(), LoadError>(())
        })?;
        let ids: Vec<u64> = wanted.iter().map(|w| w.0).collect();
        wanted.sort_unstable();
        let least = matches!(batch, [(_, s, e)] if e.saturating_sub(*s) <= 2);
        let budget = if least { usize::MAX } else { name_bytes };
        let Ok(names) = self.names_of(src, pool, &wanted, budget)? else {
            return Ok(Err(OverBudget));
        };
        for (parent, first, end) in lists {
            let list: Vec<&[u8]> = names
                .get(first..end)
                .unwrap_or_default()
                .iter()
                .map(|n| n.as_deref().unwrap_or_default())
                .collect();
            if let Some(i) = names::first_misplaced(&list, true) {
                let child = ids.get(first.saturating_add(i)).copied().unwrap_or(0);
                let e = BuildError::ChildrenOutOfOrder { parent, child };
                let at = self.dir_section_at(src);
                return Err(match src {
                    Streamable::Image(s) => corrupt(s, at, e.to_string()),
                    Streamable::Hdfs(h) => h.corrupt(at, e.to_string()),
                });
            }
        }
        Ok(Ok(()))
    }

    /// The names of the inodes `wanted` lists (sorted by id, each with its
    /// place), from the INODE pieces that may hold them, on `pool`: by
    /// place, `None` for an id no record has (the rows refuse it);
    /// `Ok(Err(_))` once they take more than `budget` bytes (each name's
    /// bytes and `NAME_CHECK_COST`), the names gathered so far dropped.
    fn names_of(
        &self,
        src: &Streamable,
        pool: Option<&rayon::ThreadPool>,
        wanted: &[(u64, usize)],
        budget: usize,
    ) -> Result<Result<Names, OverBudget>, LoadError> {
        let held = AtomicUsize::new(0);
        let over = AtomicBool::new(false);
        let holds = |i: usize| {
            if over.load(Ordering::Relaxed) {
                // Over the budget: the batch is cut and read again.
                return false;
            }
            let lo = self.bases.get(i).copied().unwrap_or(0);
            let hi = self.bases.get(i.saturating_add(1)).copied();
            let k = wanted.partition_point(|w| w.0 < lo);
            wanted.get(k).is_some_and(|w| hi.is_none_or(|h| w.0 < h))
        };
        let got = self.gather(src, pool, &holds, &|node, _| {
            let j = wanted.binary_search_by_key(&node.id, |w| w.0).ok()?;
            let cost = node.name.len().saturating_add(NAME_CHECK_COST);
            let before = held.fetch_add(cost, Ordering::Relaxed);
            if over.load(Ordering::Relaxed) || before.saturating_add(cost) > budget {
                over.store(true, Ordering::Relaxed);
                return None;
            }
            wanted
                .get(j)
                .map(|&(_, place)| (place, Box::<[u8]>::from(node.name)))
        })?;
        if over.load(Ordering::Relaxed) {
            return Ok(Err(OverBudget));
        }
        let mut names: Names = vec![None; wanted.len()];
        for (place, name) in got {
            if let Some(slot) = names.get_mut(place) {
                *slot = Some(name);
            }
        }
        Ok(Ok(names))
    }

    /// INODE_DIR: the directories with children, and each child's link.
    fn read_links(
        &mut self,
        src: &ImageSource,
        pool: Option<&rayon::ThreadPool>,
        seeds: &Seeds,
        tree: &mut Sums,
    ) -> Result<Result<(), Unstreamable>, LoadError> {
        let dir_pieces = pieces(section(src, SectionKind::INODE_DIR)?);
        let batch = pool
            .map_or(1, |p| p.current_num_threads())
            .saturating_mul(2)
            .max(1);
        let mut last_parent: Option<u64> = None;
        // Links so far, against the inodes the index declares (each piece's
        // count is checked when it is read).
        let mut links = 0u64;
        let inodes = section(src, SectionKind::INODE)?.records;
        for group in dir_pieces.chunks(batch) {
            // Each piece: its parents and, per parent, its children.
            let decoded = run_pieces(pool, group, PieceBuf::default, |buf, _, p, at| {
                let bytes = src.piece(p, at, buf)?;
                let mut parents: Vec<(u64, u64, usize)> = Vec::new();
                let mut children: Vec<u64> = Vec::new();
                let mut kids = Vec::new();
                let mut sums = Sums::default();
                let mut first = None;
                let mut n = 0u64;
                for r in Records::new(bytes, at.clone()) {
                    let (off, body) = r.map_err(|e| LoadError::from_format(src.path(), e))?;
                    let parent = record::dir_entry(body, &mut kids)
                        .map_err(|d| LoadError::from_format(src.path(), bad(at, off, d)))?;
                    if kids.is_empty() {
                        let e = BuildError::EmptyChildList(parent).to_string();
                        return Err(LoadError::from_format(src.path(), bad(at, off, e)));
                    }
                    first.get_or_insert(parent);
                    parents.push((parent, off, children.len()));
                    children.extend_from_slice(&kids);
                    sums.add_list(seeds, parent, &kids);
                    n = n.saturating_add(1);
                }
                check_piece(p, at, n, first).map_err(|e| LoadError::from_format(src.path(), e))?;
                Ok((parents, children, sums))
            })?;
            for ((parents, children, sums), (_, at)) in decoded.into_iter().zip(group) {
                tree.merge(&sums);
                for (k, &(parent, off, start)) in parents.iter().enumerate() {
                    if last_parent.is_some_and(|l| l >= parent) {
                        return Err(corrupt(
                            src,
                            Location {
                                offset: off,
                                ..at.clone()
                            },
                            "INODE_DIR records not in strictly increasing parent order".into(),
                        ));
                    }
                    last_parent = Some(parent);
                    let end = parents
                        .get(k.saturating_add(1))
                        .map_or(children.len(), |x| x.2);
                    let Ok(dir) = u32::try_from(self.dirs.len()) else {
                        return Ok(Err(Unstreamable::TooSparse));
                    };
                    if dir == NONE {
                        return Ok(Err(Unstreamable::TooSparse));
                    }
                    self.dirs.push(Dir {
                        id: parent,
                        parent: NONE,
                        name_at: 0,
                        name_len: 0,
                    });
                    let listed = end.saturating_sub(start) as u64;
                    links = links.saturating_add(listed);
                    if links >= inodes.max(1) {
                        // Every inode but the root has one parent: more
                        // links than that list some child twice.
                        return Err(corrupt(
                            src,
                            Location {
                                offset: off,
                                ..at.clone()
                            },
                            format!(
                                "INODE_DIR lists {links} children or more for {inodes} inodes: a child is listed twice"
                            ),
                        ));
                    }
                    for &child in children.get(start..end).unwrap_or_default() {
                        match link(&self.bases, &mut self.links, child, dir) {
                            Link::Yes => {}
                            Link::NotAnInode => {
                                return Err(corrupt(
                                    src,
                                    Location {
                                        offset: off,
                                        ..at.clone()
                                    },
                                    format!("child {child} of directory {parent} is not an inode"),
                                ))
                            }
                            Link::Twice => {
                                return Err(corrupt(
                                    src,
                                    Location {
                                        offset: off,
                                        ..at.clone()
                                    },
                                    format!("inode {child} has two parents"),
                                ))
                            }
                            Link::TooSparse => return Ok(Err(Unstreamable::TooSparse)),
                        }
                    }
                }
            }
        }
        if let Some((i, key)) = sort_all(&mut self.links, pool) {
            let id = self.bases.get(i).copied().unwrap_or(0).saturating_add(key);
            return Err(corrupt(
                src,
                Location::in_section(SectionKind::INODE_DIR, None, 0),
                format!("inode {id} has two parents"),
            ));
        }
        Ok(Ok(()))
    }

    /// INODE, its records' ids, types and names only (each checked in full
    /// when the rows are read, [`for_each_in_piece`](Self::for_each_in_piece)):
    /// ids in order from the root, which is a directory; each record
    /// matched with its link; the directories' names and parents.
    fn read_inodes(
        &mut self,
        src: &ImageSource,
        pool: Option<&rayon::ThreadPool>,
        seeds: &Seeds,
        tree: &mut Sums,
    ) -> Result<Result<(), Unstreamable>, LoadError> {
        let batch = pool
            .map_or(1, |p| p.current_num_threads())
            .saturating_mul(2)
            .max(1);
        let mut last_id: Option<u64> = None;
        let n_pieces = self.inode_pieces.len();
        let mut first_piece = 0usize;
        while first_piece < n_pieces {
            let end = first_piece.saturating_add(batch).min(n_pieces);
            let group = self.inode_pieces.get(first_piece..end).unwrap_or_default();
            let this = &*self;
            // Per piece: its last id, records, and the directories with
            // children it names (index, parent, name).
            let got = run_pieces(pool, group, PieceBuf::default, |buf, k, p, at| {
                let i = first_piece.saturating_add(k);
                let bytes = src.piece(p, at, buf)?;
                let located =
                    |off: u64, d: String| LoadError::from_format(src.path(), bad(at, off, d));
                let mut found: Vec<(u32, u32, Vec<u8>)> = Vec::new();
                let mut sums = Sums::default();
                let mut linker = this.linker(i);
                let (mut first, mut last, mut n) = (None, None::<u64>, 0u64);
                // Whether a name sorts differently as signed bytes.
                let mut high = false;
                for r in Records::new(bytes, at.clone()) {
                    let (off, body) = r.map_err(|e| LoadError::from_format(src.path(), e))?;
                    let (id, ty, name) = record::inode_head(body).map_err(|d| located(off, d))?;
                    if i == 0 && first.is_none() {
                        decode::check_root(id, at, off)
                            .map_err(|e| LoadError::from_format(src.path(), e))?;
                    }
                    if last.is_some_and(|l| l >= id) {
                        return Err(located(
                            off,
                            format!("inode id {id} is not greater than the previous one"),
                        ));
                    }
                    let dir = ty == nsimage_format::pb::InodeType::Directory as i32;
                    if id == ROOT_ID && !dir {
                        return Err(located(off, BuildError::NoRoot.to_string()));
                    }
                    let parent = linker.parent(id).map_err(|d| located(off, d))?;
                    if let Some(d) = parent.and_then(|d| this.dirs.get(d as usize)) {
                        sums.add_name(seeds, d.id, name, id);
                    }
                    high |= name.iter().any(|&b| b >= 0x80);
                    if dir {
                        if let Some(d) = this.dir_index(id) {
                            found.push((d, parent.unwrap_or(NONE), name.to_vec()));
                        }
                    }
                    first.get_or_insert(id);
                    last = Some(id);
                    n = n.saturating_add(1);
                }
                check_piece(p, at, n, first).map_err(|e| LoadError::from_format(src.path(), e))?;
                linker.finish().map_err(|d| corrupt(src, at.clone(), d))?;
                Ok((first, last, n, found, high, sums))
            })?;
            for ((first, last, n, found, high, sums), (_, at)) in got.into_iter().zip(group) {
                tree.merge(&sums);
                // The stored order is the unsigned one, Hadoop's unless a
                // name has a byte 0x80 or above.
                self.hadoop_order &= !high;
                if let (Some(l), Some(f)) = (last_id, first) {
                    if f <= l {
                        return Err(corrupt(
                            src,
                            at.clone(),
                            format!("inode {f} does not follow inode {l} in id order"),
                        ));
                    }
                }
                if let Some(l) = last {
                    last_id = Some(l);
                    self.last_id = l;
                }
                self.inodes = self.inodes.saturating_add(n);
                for (d, parent, name) in found {
                    let (Ok(at_name), Ok(len)) =
                        (u32::try_from(self.names.len()), u32::try_from(name.len()))
                    else {
                        return Ok(Err(Unstreamable::TooSparse));
                    };
                    if self.names.len().saturating_add(name.len()) > u32::MAX as usize {
                        return Ok(Err(Unstreamable::TooSparse));
                    }
                    self.names.extend_from_slice(&name);
                    if let Some(dir) = self.dirs.get_mut(d as usize) {
                        dir.parent = parent;
                        dir.name_at = at_name;
                        dir.name_len = len;
                    }
                }
            }
            first_piece = end;
        }
        self.names.shrink_to_fit();
        Ok(Ok(()))
    }
}
