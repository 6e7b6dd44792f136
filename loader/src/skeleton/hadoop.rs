//! A Hadoop image's tree: its INODE records scanned and cut into chunks,
//! INODE_DIR read into links, only the directories with children kept
//! (`build_hdfs`); no two children of one name, through one keyed hash of
//! each name (`check_siblings`); its block rules and `.md5` sidecar
//! (`check_hdfs_blocks`).

use super::links::{link, sort_all, Link, Links};
use super::names::{self, Seeds};
use super::{new_links, Dir, Skeleton, Unstreamable, NONE};
use crate::error::LoadError;
use crate::hdfs::stream::ChunkBuf;
use crate::hdfs::{HdfsSource, HdfsUnstreamable};
use crate::sections::corrupt;
use crate::streamable::Streamable;
use nsimage_namespace::{BlockRules, BuildError, Interned};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// Keys of a Hadoop image's names that repeat, read again a batch at a
/// time: see [`Skeleton::check_siblings`].
const SIBLING_BATCH: usize = 100_000;

/// Records of one repeated key the sibling check keeps (their names'
/// digests); a key with more, none of them sharing a name, is left to the
/// load.
const SIBLING_KEPT: u8 = 8;

/// A Hadoop scan's name hashes: per INODE piece of the file, its chunks
/// and its records' hashes.
type NameHashes = Vec<(usize, Vec<u64>)>;

impl Skeleton {
    /// A Hadoop image's tree: its INODE records scanned (ids, types and
    /// names; every directory kept for now) and cut into chunks, INODE_DIR
    /// read into links, the directories' parents found among the links,
    /// then only the directories with children kept.
    pub(super) fn build_hdfs(
        h: &HdfsSource,
        pool: Option<&rayon::ThreadPool>,
        seeds: &Seeds,
    ) -> Result<Result<(Skeleton, NameHashes), Unstreamable>, LoadError> {
        if let Some(why) = h.unstreamable() {
            return Ok(Err(Unstreamable::Hdfs(why)));
        }
        let Some(scan) = h.scan(pool, seeds.name_seed())? else {
            return Ok(Err(Unstreamable::Hdfs(HdfsUnstreamable::OutOfIdOrder)));
        };
        let bases: Vec<u64> = scan.chunks.iter().map(|c| c.0.first_key).collect();
        let mut links = new_links(&scan.chunks, &bases, Some(scan.last_id));
        let mut names = scan.names;
        if names.len() > u32::MAX as usize
            || u32::try_from(scan.dirs.len()).map_or(true, |n| n == NONE)
        {
            return Ok(Err(Unstreamable::TooSparse));
        }
        // Every directory, its name's place in `names` (below 2^32, checked
        // above); the scan's list turned into this one in place.
        #[allow(clippy::cast_possible_truncation)]
        let mut all: Vec<Dir> = scan
            .dirs
            .into_iter()
            .map(|(id, at, len)| Dir {
                id,
                parent: NONE,
                name_at: at as u32,
                name_len: len as u32,
            })
            .collect();
        let Some(listed) = link_children(h, &all, &bases, &mut links, scan.inodes)? else {
            return Ok(Err(Unstreamable::TooSparse));
        };
        let Listed {
            has_children,
            hadoop_order,
        } = listed;
        // A child listed twice is refused here, before any row.
        if let Some((i, key)) = sort_all(&mut links, pool) {
            let id = bases.get(i).copied().unwrap_or(0).saturating_add(key);
            return Err(h.corrupt(h.dir_section_at(), format!("inode {id} has two parents")));
        }
        set_parents(&mut all, &bases, &links);
        if keep_dirs_with_children(&mut all, &mut names, has_children, &mut links, pool).is_none() {
            return Ok(Err(Unstreamable::TooSparse));
        }
        let dirs = all;
        let s = Skeleton {
            info: h.info(),
            tables: Interned::new(h.strings().clone()),
            dirs,
            names,
            links,
            inode_pieces: scan.chunks,
            bases,
            inodes: scan.inodes,
            last_id: scan.last_id,
            hadoop_order,
        };
        if s.last_id > s.info.last_inode_id {
            let e = BuildError::InodeIdTooLarge {
                id: s.last_id,
                last: s.info.last_inode_id,
            };
            return Err(h.corrupt(
                s.inode_pieces
                    .first()
                    .map(|p| p.1.clone())
                    .unwrap_or_default(),
                e.to_string(),
            ));
        }
        s.check_tree()
            .map_err(|d| h.corrupt(h.dir_section_at(), d))?;
        Ok(Ok((s, scan.name_hashes)))
    }

    /// No directory of a Hadoop image holds two children of one name (its
    /// lists need no order: a load sorts them): each record's name hash
    /// (`pieces`: per INODE piece of the file, its chunks and its records'
    /// hashes, from the scan) keyed in place with its parent from the
    /// links, each piece's keys sorted in place, then gathered and sorted
    /// a top byte at a time (8 bytes an inode, for this check only); the
    /// records whose keys repeat are read again, each name's keyed digest
    /// taken (the names decide, to a chance of 2^-64; no name is held), at
    /// most `SIBLING_KEPT` a key: a key with more and no two of one name
    /// leaves the image to the load (`Unstreamable::NameKeysRepeat`).
    ///
    /// # Errors
    /// A located [`LoadError::Corrupt`] with the load's words for two
    /// children of one name; a piece's read or checks.
    pub(super) fn check_siblings(
        &self,
        src: &Streamable,
        pool: Option<&rayon::ThreadPool>,
        seeds: &Seeds,
        mut pieces: NameHashes,
    ) -> Result<Result<(), Unstreamable>, LoadError> {
        // Each chunk's records, in id order, are its linked ids in id order
        // (the root first, unlinked): when the counts differ the rows
        // refuse the chunk, and its records get keys of their own.
        let mut chunk = 0usize;
        let mut own = 0u64;
        for (chunks, keys) in &mut pieces {
            let mut k = 0usize;
            for i in chunk..chunk.saturating_add(*chunks) {
                let n = self
                    .inode_pieces
                    .get(i)
                    .map_or(0, |p| usize::try_from(p.0.records).unwrap_or(usize::MAX));
                let end = k.saturating_add(n).min(keys.len());
                let root = usize::from(i == 0);
                let links = self.links.get(i);
                let linked = links.map_or(0, |l| l.parents().count());
                let slice = keys.get_mut(k..end).unwrap_or_default();
                let aligned = linked.saturating_add(root) == slice.len();
                let skip = if aligned {
                    root.min(slice.len())
                } else {
                    slice.len()
                };
                let (head, tail) = slice.split_at_mut(skip);
                for (key, dir) in tail
                    .iter_mut()
                    .zip(links.into_iter().flat_map(Links::parents))
                {
                    *key = seeds.sibling_key(*key, dir);
                }
                for key in head {
                    *key = !own;
                    own = own.saturating_add(1);
                }
                k = end;
            }
            chunk = chunk.saturating_add(*chunks);
        }
        // Each piece's keys sorted in place; then, a top byte at a time,
        // the pieces' keys of that byte gathered (about 1/256 of them) and
        // sorted: keys that repeat lie in one gathering.
        match pool {
            Some(p) => p.install(|| {
                use rayon::prelude::*;
                pieces.par_iter_mut().for_each(|k| k.1.sort_unstable());
            }),
            None => pieces.iter_mut().for_each(|k| k.1.sort_unstable()),
        }
        let gather = |tmp: &mut Vec<u64>, byte: u64| {
            tmp.clear();
            for (_, k) in &pieces {
                let lo = k.partition_point(|&x| (x >> 56) < byte);
                let hi = k.partition_point(|&x| (x >> 56) <= byte);
                tmp.extend_from_slice(k.get(lo..hi).unwrap_or_default());
            }
            tmp.sort_unstable();
            let mut out: Vec<u64> = tmp
                .windows(2)
                .filter(|w| w[0] == w[1])
                .map(|w| w[0])
                .collect();
            out.dedup();
            out
        };
        let twice: Vec<u64> = match pool {
            Some(p) => p.install(|| {
                use rayon::prelude::*;
                (0..256u64)
                    .into_par_iter()
                    .map_init(Vec::new, gather)
                    .flatten_iter()
                    .collect()
            }),
            None => {
                let mut tmp = Vec::new();
                (0..256u64).flat_map(|b| gather(&mut tmp, b)).collect()
            }
        };
        drop(pieces);
        let mut twice = twice;
        twice.sort_unstable();
        // A batch of keys at a time: each record whose key repeats, its
        // name's keyed hash in hand (equal for equal names, and otherwise
        // with a chance of 2^-64 whatever the names), at most
        // SIBLING_KEPT records a key.
        for batch in twice.chunks(SIBLING_BATCH) {
            let kept: Vec<AtomicU8> = batch.iter().map(|_| AtomicU8::new(0)).collect();
            let more = AtomicBool::new(false);
            let mut found = self.gather(src, pool, &|_| true, &|node, parent| {
                let dir = parent?;
                let key = seeds.sibling_key(names::name_hash(seeds.name_seed(), node.name), dir);
                let j = batch.binary_search(&key).ok()?;
                let n = kept.get(j)?.fetch_add(1, Ordering::Relaxed);
                if n >= SIBLING_KEPT {
                    kept.get(j)?.store(SIBLING_KEPT, Ordering::Relaxed);
                    more.store(true, Ordering::Relaxed);
                    return None;
                }
                Some((dir, seeds.name_digest(node.name), node.id))
            })?;
            found.sort_unstable();
            if let Some(w) = found
                .windows(2)
                .find(|w| w[0].0 == w[1].0 && w[0].1 == w[1].1)
            {
                let e = BuildError::ChildrenOutOfOrder {
                    parent: self.dir_id(w[1].0),
                    child: w[1].2,
                };
                return Err(match src {
                    Streamable::Image(s) => corrupt(s, self.dir_section_at(src), e.to_string()),
                    Streamable::Hdfs(h) => h.corrupt(self.dir_section_at(src), e.to_string()),
                });
            }
            if more.load(Ordering::Relaxed) {
                // SIBLING_KEPT different names under one key, and more
                // unread: the load decides.
                return Ok(Err(Unstreamable::NameKeysRepeat));
            }
        }
        Ok(Ok(()))
    }

    /// [`check_blocks`](Self::check_blocks) of a Hadoop image, then its
    /// `.md5` sidecar's verdict.
    pub(super) fn check_hdfs_blocks(
        &self,
        h: &HdfsSource,
        rules: &BlockRules,
    ) -> Result<(), LoadError> {
        let whole = || {
            self.inode_pieces
                .first()
                .map(|p| p.1.clone())
                .unwrap_or_default()
        };
        // NS_INFO's block id limit depends on whether a file read was
        // erasure-coded.
        let unique = match rules.check(&h.info()) {
            Ok(true) => true,
            Ok(false) => false,
            Err(e) => return Err(h.corrupt(whole(), e.to_string())),
        };
        if !unique {
            let mut ids: Vec<u64> = Vec::new();
            let mut buf = ChunkBuf::default();
            for (i, (p, at)) in self.inode_pieces.iter().enumerate() {
                h.block_ids(i, p, at, &mut buf, &mut ids)?;
            }
            ids.sort_unstable();
            if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
                return Err(h.corrupt(whole(), BuildError::DuplicateBlock(w[0]).to_string()));
            }
        }
        h.finish()
    }
}

/// What INODE_DIR says of a Hadoop image's directories, from
/// [`link_children`].
struct Listed {
    /// Per directory of the scan, whether it lists children.
    has_children: Vec<bool>,
    /// Whether its entries come in increasing parent order.
    hadoop_order: bool,
}

/// INODE_DIR's entries read into `links` (each child linked to its
/// directory's index in `all`, every directory of the scan in id order):
/// a parent that is not a directory, a child that is not an inode or has
/// two parents, or more children than `inodes` refused; `None` when the
/// ids are too sparse for the links.
fn link_children(
    h: &HdfsSource,
    all: &[Dir],
    bases: &[u64],
    links: &mut [Links],
    inodes: u64,
) -> Result<Option<Listed>, LoadError> {
    let mut has_children = vec![false; all.len()];
    let mut listed = 0u64;
    let mut sparse = false;
    let mut last_parent = None;
    let mut hadoop_order = true;
    h.each_dir_entry(|parent, kids, at| {
        // Hadoop may cut a large directory's list into consecutive
        // entries.
        hadoop_order &= last_parent.is_none_or(|l| l <= parent);
        last_parent = Some(parent);
        let Ok(d) = all.binary_search_by_key(&parent, |d| d.id) else {
            return Err(h.corrupt(at, format!("parent {parent} is not a directory inode")));
        };
        if let Some(k) = has_children.get_mut(d) {
            *k = true;
        }
        listed = listed.saturating_add(kids.len() as u64);
        if listed >= inodes {
            return Err(h.corrupt(
                at,
                format!("INODE_DIR lists {listed} children or more for {inodes} inodes: a child is listed twice"),
            ));
        }
        // d < all.len() <= u32::MAX - 1, checked by the caller.
        #[allow(clippy::cast_possible_truncation)]
        let dir = d as u32;
        for &child in kids {
            match link(bases, links, child, dir) {
                Link::Yes => {}
                Link::NotAnInode => {
                    return Err(h.corrupt(
                        at,
                        format!("child {child} of directory {parent} is not an inode"),
                    ))
                }
                Link::Twice => {
                    return Err(h.corrupt(at, format!("inode {child} has two parents")))
                }
                Link::TooSparse => {
                    sparse = true;
                    break;
                }
            }
        }
        Ok(())
    })?;
    Ok((!sparse).then_some(Listed {
        has_children,
        hadoop_order,
    }))
}

/// Each directory's parent (its index in `all`), from its chunk's links.
fn set_parents(all: &mut [Dir], bases: &[u64], links: &[Links]) {
    for d in all {
        let i = bases.partition_point(|&b| b <= d.id).saturating_sub(1);
        let key = d.id.saturating_sub(bases.get(i).copied().unwrap_or(0));
        if let Some(parent) = links.get(i).and_then(|l| l.parent_of(key)) {
            d.parent = parent;
        }
    }
}

/// Only the directories with children kept, in place (`has_children`, per
/// directory of `all`): indexes renumbered in `all`'s parents and in
/// `links`, names moved down in `names` (they lie in id order, as the
/// directories do); `None` when a name lies outside `names` or out of
/// order.
fn keep_dirs_with_children(
    all: &mut Vec<Dir>,
    names: &mut Vec<u8>,
    has_children: Vec<bool>,
    links: &mut [Links],
    pool: Option<&rayon::ThreadPool>,
) -> Option<()> {
    let mut renumber = vec![NONE; all.len()];
    let (mut kept, mut name_end) = (0usize, 0usize);
    for k in 0..all.len() {
        if !has_children.get(k).copied().unwrap_or(false) {
            continue;
        }
        let Some(d) = all.get(k).copied() else { break };
        let (a, n) = (d.name_at as usize, d.name_len as usize);
        if a.checked_add(n).is_none_or(|e| e > names.len()) || a < name_end {
            return None;
        }
        names.copy_within(a..a.saturating_add(n), name_end);
        #[allow(clippy::cast_possible_truncation)]
        let (index, name_at) = (kept as u32, name_end as u32);
        if let Some(r) = renumber.get_mut(k) {
            *r = index;
        }
        if let Some(slot) = all.get_mut(kept) {
            *slot = Dir { name_at, ..d };
        }
        kept = kept.saturating_add(1);
        name_end = name_end.saturating_add(n);
    }
    all.truncate(kept);
    all.shrink_to_fit();
    names.truncate(name_end);
    names.shrink_to_fit();
    drop(has_children);
    for d in all.iter_mut() {
        if d.parent != NONE {
            d.parent = renumber.get(d.parent as usize).copied().unwrap_or(NONE);
        }
    }
    let renumbered = |d: u32| renumber.get(d as usize).copied().unwrap_or(NONE);
    match pool {
        Some(p) => p.install(|| {
            use rayon::prelude::*;
            links.par_iter_mut().for_each(|l| l.renumber(renumbered));
        }),
        None => links.iter_mut().for_each(|l| l.renumber(renumbered)),
    }
    Some(())
}
