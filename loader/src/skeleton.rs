//! An image read piece by piece in bounded memory (issue 28): what the
//! viewer's whole-namespace commands need of the tree, without the
//! namespace. A [`Skeleton`] holds the directories that have children
//! (their ids, names and parents) and one parent link per inode, nothing
//! of the files' names, blocks, xattrs or ACLs; the INODE pieces are then
//! read again, in file order on the pool, and each record is handed to the
//! caller with its parent directory, whose full path the skeleton gives.
//!
//! Building it reads INODE_DIR (the links: its records, batch by batch,
//! become per-INODE-piece lists of `(child id, parent directory)`), then
//! each INODE record's id, type and name (ids in order from the root, each
//! record matched with its link: the root has none, every other inode
//! exactly one; the directories' names and parents), checksums every other
//! section's pieces as a load does, and checks the tree's shape as a load
//! checks it: every parent is a directory, no directory is its own
//! ancestor, so every inode is reachable from the root. Reading the rows
//! ([`Skeleton::for_each_in_piece`], [`Skeleton::fold_pieces`]) decodes
//! each record with the load's own decoder, so every rule a load applies
//! to a record is applied there, and the block rules once every piece is
//! read ([`Skeleton::check_blocks`]). The children's names, which the tree
//! does not keep, are checked as a load checks them before any row (issue
//! 39): in an nsimage image, each list in strictly increasing name order,
//! shown through sums of hashes against the name section, or, where the
//! sums differ or there is no usable name section, names in hand, a batch
//! of directories at a time (`names.rs`, `Skeleton::check_order_exactly`);
//! in a Hadoop image (whose lists a load sorts), no two children of one
//! name, through one sorted 8-byte key per inode
//! (`Skeleton::check_siblings`). Every streamed command therefore gives
//! the load's verdict.
//!
//! Memory: 4 bytes per inode (its link; 8 in a piece whose ids are
//! sparse, see `links.rs`), 24 bytes and the name per directory with
//! children, the pieces being read; while a Hadoop image's tree is built,
//! 8 bytes per inode more for the keys of its names; the exact check of
//! names holds at most about 64 MiB of them. See [`Skeleton::estimate`].
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use crate::decode::{self, bad, check_piece};
use crate::error::LoadError;
use crate::hdfs::stream::ChunkBuf;
use crate::hdfs::{HdfsSource, HdfsUnstreamable};
use crate::record;
pub use crate::record::InodeScratch;
use crate::run::run_pieces;
use crate::sections::{corrupt, pieces, section};
use crate::source::{ImageSource, PieceBuf};
use crate::streamable::Streamable;
use nsimage_format::framing::Records;
use nsimage_format::{Location, SectionKind, SubSectionInfo, ROOT_ID};
use nsimage_namespace::{Block, BlockRules, BuildError, Interned, LoadedNode, NsInfo};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

mod links;
mod names;
use links::{link, sort_all, Link, Linker, Links};
use names::{Seeds, Sums};

/// Bytes of names the exact check of the children's order holds at once
/// (more passes over INODE when it needs more): see
/// [`Skeleton::check_order_exactly`].
const NAME_CHECK_BYTES: usize = 64 << 20;
/// What one name costs that check, bookkeeping included, before its bytes
/// (its place and id in the batch, its slot, its box and the allocator's
/// header, the gathered pair).
const NAME_CHECK_COST: usize = 128;
/// Keys of a Hadoop image's names that repeat, read again a batch at a
/// time: see [`Skeleton::check_siblings`].
const SIBLING_BATCH: usize = 100_000;
/// Records of one repeated key the sibling check keeps (their names'
/// digests); a key with more, none of them sharing a name, is left to the
/// load.
const SIBLING_KEPT: u8 = 8;

/// "No directory": the root's parent.
const NONE: u32 = u32::MAX;

/// One directory with children.
#[derive(Clone, Copy, Debug)]
struct Dir {
    id: u64,
    /// Its parent's index, [`NONE`] for the root (and until known).
    parent: u32,
    name_at: u32,
    name_len: u32,
}

/// The tree of an image without its files: see the module documentation.
pub struct Skeleton {
    /// NS_INFO.
    pub info: NsInfo,
    /// STRING_TABLE, as the load interns it.
    pub tables: Interned,
    dirs: Vec<Dir>,
    names: Vec<u8>,
    /// Per INODE piece, each inode's parent directory.
    links: Vec<Links>,
    /// The INODE pieces, with the first id each may hold.
    inode_pieces: Vec<(SubSectionInfo, Location)>,
    bases: Vec<u64>,
    inodes: u64,
    last_id: u64,
    /// Whether INODE_DIR, read in file order, gives each directory with
    /// children once (or in consecutive entries) in id order, its children
    /// in Hadoop's name order: see [`Skeleton::for_each_dir_entry`].
    hadoop_order: bool,
}

/// Why an image cannot be streamed (the caller loads it whole instead).
#[derive(Debug)]
pub enum Unstreamable {
    /// Ids spread over more than 2^32 within one INODE piece, more than
    /// 2^32 - 1 directories, or 4 GiB of directory names.
    TooSparse,
    /// A Hadoop image this cannot stream, and why.
    Hdfs(HdfsUnstreamable),
    /// More than a few children of one directory whose names share the
    /// key of the sibling check without sharing a name (a chance no image
    /// meets unless it was built to): the load decides.
    NameKeysRepeat,
}

/// One worker's buffer and tables, from [`Skeleton::worker`].
pub struct Worker {
    buf: PieceBuf,
    chunk: ChunkBuf,
    blocks: Vec<Block>,
    tables: Interned,
}

/// A Hadoop scan's name hashes: per INODE piece of the file, its chunks
/// and its records' hashes.
type NameHashes = Vec<(usize, Vec<u64>)>;

/// A directory path, built by [`Skeleton::push_dir_path`].
pub type DirIndex = u32;

impl Skeleton {
    /// An estimate, before reading it, of the bytes [`build`](Self::build)
    /// holds for `src`: for an nsimage image, from its index, the links
    /// (4 bytes an inode in a piece with dense ids, 8 in one with sparse
    /// ids and in the last, whose id range the index does not bound) and 64 per INODE_DIR record (a directory with children: its
    /// entry and a name of up to 40 bytes); for a Hadoop image, whose
    /// pieces and directories are known only once read, 32 per inode (8
    /// for the keys of its names while the tree is built, 8
    /// for the links at worst, and 64 per directory for up to a quarter
    /// of the inodes).
    pub fn estimate(src: &Streamable) -> u64 {
        let src = match src {
            Streamable::Image(s) => s,
            Streamable::Hdfs(h) => return h.inode_count().saturating_mul(32),
        };
        let links: usize = match section(src, SectionKind::INODE) {
            Ok(s) => {
                let pieces = pieces(s);
                let bases = first_ids(&pieces);
                spans(&bases, None)
                    .zip(&pieces)
                    .map(|(span, (p, _))| Links::size(p.records, p.length, span))
                    .fold(0usize, usize::saturating_add)
            }
            Err(_) => 0,
        };
        let records = |k| src.index.section(k).map_or(0, |s| s.records);
        (links as u64).saturating_add(records(SectionKind::INODE_DIR).saturating_mul(64))
    }

    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        let links: usize = self.links.iter().map(Links::bytes).sum();
        links
            .saturating_add(
                self.dirs
                    .capacity()
                    .saturating_mul(std::mem::size_of::<Dir>()),
            )
            .saturating_add(self.names.capacity()) as u64
    }

    /// Inodes in the image.
    pub fn inode_count(&self) -> u64 {
        self.inodes
    }

    /// INODE pieces, for [`for_each_in_piece`](Self::for_each_in_piece).
    pub fn piece_count(&self) -> usize {
        self.inode_pieces.len()
    }

    /// The records of INODE piece `i` as the index gives them (a read of
    /// the piece refuses any other count), 0 past the last.
    pub fn piece_records(&self, i: usize) -> u64 {
        self.inode_pieces.get(i).map_or(0, |(p, _)| p.records)
    }

    /// The plain bytes of INODE piece `i` (what its records take once
    /// read), 0 past the last.
    pub fn piece_bytes(&self, i: usize) -> u64 {
        self.inode_pieces
            .get(i)
            .map_or(0, |(p, _)| p.plain_length())
    }

    /// Reads `src`'s tree (see the module documentation) on `pool`, or on
    /// this thread without one.
    ///
    /// # Errors
    /// A located [`LoadError::Corrupt`] for anything a load refuses;
    /// `Ok(Err(_))` for an image this cannot stream.
    pub fn build(
        src: &Streamable,
        pool: Option<&rayon::ThreadPool>,
    ) -> Result<Result<Skeleton, Unstreamable>, LoadError> {
        Self::build_within(src, pool, NAME_CHECK_BYTES)
    }

    /// [`build`](Self::build), the exact check of the children's names
    /// holding at most about `name_bytes` of them at once (more passes
    /// over INODE when it needs more; `build` gives it 64 MiB).
    ///
    /// # Errors
    /// As [`build`](Self::build).
    pub fn build_within(
        src: &Streamable,
        pool: Option<&rayon::ThreadPool>,
        name_bytes: usize,
    ) -> Result<Result<Skeleton, Unstreamable>, LoadError> {
        match src {
            Streamable::Image(s) => {
                let seeds = Seeds::draw();
                let (skeleton, tree) = match Self::build_image(s, pool, &seeds)? {
                    Ok(built) => built,
                    Err(why) => return Ok(Err(why)),
                };
                skeleton.check_names(src, s, pool, &seeds, &tree, name_bytes)?;
                Ok(Ok(skeleton))
            }
            Streamable::Hdfs(h) => {
                let seeds = Seeds::draw();
                let built = match Self::build_hdfs(h, pool, &seeds) {
                    Ok(Ok((s, hashes))) => s
                        .check_siblings(src, pool, &seeds, hashes)
                        .map(|r| r.map(|()| s)),
                    Ok(Err(why)) => Ok(Err(why)),
                    Err(e) => Err(e),
                };
                if !matches!(built, Ok(Ok(_))) {
                    // Not streamed: a load reads the file (and its
                    // sidecar) instead, or nothing does.
                    h.abandon();
                }
                built
            }
        }
    }

    /// An nsimage image's tree, and the sums of its names and lists (see
    /// `names.rs`) under `seeds`.
    fn build_image(
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
    fn check_names(
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

    /// What `pick` takes of each inode of the INODE pieces `read` selects
    /// (each record with its parent directory, decoded and checked as the
    /// rows are), on `pool`'s workers, in no particular order.
    fn gather<T: Send>(
        &self,
        src: &Streamable,
        pool: Option<&rayon::ThreadPool>,
        read: &(dyn Fn(usize) -> bool + Sync),
        pick: &(dyn Fn(&LoadedNode<'_>, Option<DirIndex>) -> Option<T> + Sync),
    ) -> Result<Vec<T>, LoadError> {
        let piece = |work: &mut Worker, i: usize| {
            let mut got: Vec<T> = Vec::new();
            if read(i) {
                self.for_each_in_piece(src, i, work, |node, parent, _| {
                    got.extend(pick(node, parent));
                    Ok(())
                })?;
            }
            Ok::<_, LoadError>(got)
        };
        let n = self.inode_pieces.len();
        let parts: Vec<Result<Vec<T>, LoadError>> = match pool {
            Some(p) => p.install(|| {
                use rayon::prelude::*;
                (0..n)
                    .into_par_iter()
                    .map_init(|| self.worker(), |w, i| piece(w, i))
                    .collect()
            }),
            None => {
                let mut w = self.worker();
                (0..n).map(|i| piece(&mut w, i)).collect()
            }
        };
        let mut out = Vec::new();
        for part in parts {
            out.extend(part?);
        }
        Ok(out)
    }

    /// Where INODE_DIR is, for an error about it.
    fn dir_section_at(&self, src: &Streamable) -> Location {
        match src {
            Streamable::Image(s) => section(s, SectionKind::INODE_DIR)
                .map(|d| Location::in_section(SectionKind::INODE_DIR, None, d.offset))
                .unwrap_or_default(),
            Streamable::Hdfs(h) => h.dir_section_at(),
        }
    }

    /// A Hadoop image's tree: its INODE records scanned (ids, types and
    /// names; every directory kept for now) and cut into chunks, INODE_DIR
    /// read into links, the directories' parents found among the links,
    /// then only the directories with children kept.
    fn build_hdfs(
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
        let mut has_children = vec![false; all.len()];
        let mut listed = 0u64;
        let mut sparse = false;
        let mut last_parent = None;
        let mut hadoop_order = true;
        let inodes = scan.inodes;
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
            // d < all.len() <= u32::MAX - 1, checked above.
            #[allow(clippy::cast_possible_truncation)]
            let dir = d as u32;
            for &child in kids {
                match link(&bases, &mut links, child, dir) {
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
        if sparse {
            return Ok(Err(Unstreamable::TooSparse));
        }
        // A child listed twice is refused here, before any row.
        if let Some((i, key)) = sort_all(&mut links, pool) {
            let id = bases.get(i).copied().unwrap_or(0).saturating_add(key);
            return Err(h.corrupt(h.dir_section_at(), format!("inode {id} has two parents")));
        }
        // Each directory's parent, from its chunk's links.
        for d in &mut all {
            let i = bases.partition_point(|&b| b <= d.id).saturating_sub(1);
            let key = d.id.saturating_sub(bases.get(i).copied().unwrap_or(0));
            if let Some(parent) = links.get(i).and_then(|l| l.parent_of(key)) {
                d.parent = parent;
            }
        }
        // Only the directories with children, in place: indexes renumbered,
        // names moved down (they lie in id order, as the directories do).
        let mut renumber = vec![NONE; all.len()];
        let (mut kept, mut name_end) = (0usize, 0usize);
        for k in 0..all.len() {
            if !has_children.get(k).copied().unwrap_or(false) {
                continue;
            }
            let Some(d) = all.get(k).copied() else { break };
            let (a, n) = (d.name_at as usize, d.name_len as usize);
            if a.checked_add(n).is_none_or(|e| e > names.len()) || a < name_end {
                return Ok(Err(Unstreamable::TooSparse));
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
        let mut dirs = all;
        for d in &mut dirs {
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
        drop(renumber);
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
    fn check_siblings(
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

    /// Every directory with children is a directory record, none is its
    /// own ancestor.
    fn check_tree(&self) -> Result<(), String> {
        // 0: not seen, 1: on the walk, 2: reaches the root.
        let mut state = vec![0u8; self.dirs.len()];
        let mut walk = Vec::new();
        for start in 0..self.dirs.len() {
            let mut cur = start;
            walk.clear();
            loop {
                match state.get(cur).copied() {
                    Some(2) => break,
                    Some(1) => {
                        return Err(format!(
                            "directory {} is its own ancestor",
                            self.dirs.get(cur).map_or(0, |d| d.id)
                        ))
                    }
                    _ => {}
                }
                let Some(d) = self.dirs.get(cur) else { break };
                if d.id != ROOT_ID && d.name_len == 0 {
                    return Err(format!("parent {} is not a directory inode", d.id));
                }
                if let Some(s) = state.get_mut(cur) {
                    *s = 1;
                }
                walk.push(cur);
                if d.parent == NONE {
                    if d.id != ROOT_ID {
                        return Err(format!("directory {} is not reachable from the root", d.id));
                    }
                    break;
                }
                cur = d.parent as usize;
            }
            for &w in &walk {
                if let Some(s) = state.get_mut(w) {
                    *s = 2;
                }
            }
        }
        Ok(())
    }

    /// The index of the directory with children `id`.
    fn dir_index(&self, id: u64) -> Option<u32> {
        let i = self.dirs.binary_search_by_key(&id, |d| d.id).ok()?;
        u32::try_from(i).ok()
    }

    /// The directory with children whose inode is `id`; `None` for any
    /// other inode (a file, a symlink, an empty directory).
    pub fn dir_of(&self, id: u64) -> Option<DirIndex> {
        self.dir_index(id)
    }

    /// Directories with children; their indexes are `0..dir_count()`.
    pub fn dir_count(&self) -> usize {
        self.dirs.len()
    }

    /// The parent of directory `dir`; `None` for the root.
    pub fn dir_parent(&self, dir: DirIndex) -> Option<DirIndex> {
        self.dirs
            .get(dir as usize)
            .and_then(|d| (d.parent != NONE).then_some(d.parent))
    }

    /// The name of directory `dir` within its parent (empty for the root).
    pub fn dir_name(&self, dir: DirIndex) -> &[u8] {
        self.dirs
            .get(dir as usize)
            .map_or(&[][..], |d| self.dir_name_at(d))
    }

    /// The directory with children at the end of `components` (names
    /// from the root): `None` where a component is missing or is not a
    /// directory with children. One pass over the directories per
    /// component.
    pub fn find_dir<C: AsRef<[u8]>>(&self, components: &[C]) -> Option<DirIndex> {
        let mut cur = self.dir_index(ROOT_ID)?;
        for c in components {
            let i = self
                .dirs
                .iter()
                .enumerate()
                .find(|(i, d)| {
                    d.parent == cur && *i != cur as usize && self.dir_name_at(d) == c.as_ref()
                })?
                .0;
            cur = u32::try_from(i).ok()?;
        }
        Some(cur)
    }

    fn dir_name_at(&self, d: &Dir) -> &[u8] {
        let (a, n) = (d.name_at as usize, d.name_len as usize);
        self.names.get(a..a.saturating_add(n)).unwrap_or_default()
    }

    /// What one worker of the rows pass keeps from piece to piece: its
    /// read buffer and its own tables (the string table, and the classes
    /// of the piece at hand).
    pub fn worker(&self) -> Worker {
        Worker {
            buf: PieceBuf::default(),
            chunk: ChunkBuf::default(),
            blocks: Vec::new(),
            tables: Interned::new(self.tables.strings().clone()),
        }
    }

    /// The id of directory `dir`.
    pub fn dir_id(&self, dir: DirIndex) -> u64 {
        self.dirs.get(dir as usize).map_or(0, |d| d.id)
    }

    /// Appends the path of directory `dir` without a trailing slash (empty
    /// for the root).
    pub fn push_dir_path(&self, dir: DirIndex, out: &mut Vec<u8>) {
        let mut chain = Vec::new();
        let mut cur = dir;
        while let Some(d) = self.dirs.get(cur as usize) {
            if d.parent == NONE || chain.len() > self.dirs.len() {
                break;
            }
            chain.push(d);
            cur = d.parent;
        }
        for d in chain.iter().rev() {
            out.push(b'/');
            out.extend_from_slice(self.dir_name_at(d));
        }
    }

    /// Reads INODE piece `i` (its checksum checked) into `buf` and calls
    /// `f` with each inode, its parent directory (`None` for the root) and
    /// the record's offset, each record checked by the load's own decoder
    /// (a record it refuses fails the piece, after `f` saw the ones before
    /// it); returns what the block rules need of the piece, for
    /// [`check_blocks`](Self::check_blocks).
    ///
    /// # Errors
    /// The piece's read or checks, a record without its one link, or `f`'s.
    pub fn for_each_in_piece(
        &self,
        src: &Streamable,
        i: usize,
        work: &mut Worker,
        mut f: impl FnMut(&LoadedNode<'_>, Option<DirIndex>, u64) -> Result<(), LoadError>,
    ) -> Result<BlockRules, LoadError> {
        let Worker {
            buf,
            chunk,
            blocks,
            tables,
        } = work;
        // The classes of one piece only: the table never grows with the
        // image.
        tables.forget_classes();
        let mut rules = BlockRules::default();
        let Some((p, at)) = self.inode_pieces.get(i) else {
            return Ok(rules);
        };
        let src = match src {
            Streamable::Image(s) => s,
            Streamable::Hdfs(h) => {
                let mut linker = self.linker(i);
                let parts = h.visit_chunk(i, p, at, chunk, tables, blocks, |node, here| {
                    let parent = linker
                        .parent(node.id)
                        .map_err(|d| h.corrupt(here.clone(), d))?;
                    f(node, parent, here.offset)
                })?;
                linker.finish().map_err(|d| h.corrupt(at.clone(), d))?;
                rules.merge(parts);
                return Ok(rules);
            }
        };
        let bytes = src.piece(p, at, buf)?;
        let mut linker = self.linker(i);
        let mut failed: Option<LoadError> = None;
        let chunk = u32::try_from(i).unwrap_or(u32::MAX);
        let batch = decode::inodes_visiting(
            bytes,
            p,
            at,
            tables,
            chunk,
            Vec::new(),
            false,
            |node, off, at| {
                let parent = linker.parent(node.id).map_err(|d| bad(at, off, d))?;
                f(node, parent, off).map_err(|e| {
                    let stop = bad(at, off, e.to_string());
                    failed = Some(e);
                    stop
                })
            },
        );
        if let Some(e) = failed {
            return Err(e);
        }
        let batch = batch.map_err(|e| LoadError::from_format(src.path(), e))?;
        linker.finish().map_err(|d| corrupt(src, at.clone(), d))?;
        rules.add(batch.into_parts());
        Ok(rules)
    }

    /// The block rules of every piece read (their [`BlockRules`] merged)
    /// against NS_INFO. When the ids are too sparse for the pieces' bitmaps
    /// (old Hadoop clusters gave blocks random ids) they are read again and
    /// sorted, as a load sorts them (8 bytes a block, for this check only).
    ///
    /// # Errors
    /// A located [`LoadError::Corrupt`] naming the broken rule.
    pub fn check_blocks(&self, src: &Streamable, rules: &BlockRules) -> Result<(), LoadError> {
        let src = match src {
            Streamable::Image(s) => s,
            Streamable::Hdfs(h) => return self.check_hdfs_blocks(h, rules),
        };
        let whole = || Location::in_section(SectionKind::INODE, None, 0);
        match rules.check(&self.info) {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => return Err(corrupt(src, whole(), e.to_string())),
        }
        let mut ids: Vec<u64> = Vec::new();
        let (mut buf, mut scratch) = (PieceBuf::default(), InodeScratch::default());
        for (p, at) in &self.inode_pieces {
            let bytes = src.piece(p, at, &mut buf)?;
            for r in Records::new(bytes, at.clone()) {
                let (off, body) = r.map_err(|e| LoadError::from_format(src.path(), e))?;
                let node = record::inode(body, &mut scratch)
                    .map_err(|d| LoadError::from_format(src.path(), bad(at, off, d)))?;
                if let nsimage_namespace::LoadedBody::File { blocks, .. } = node.body {
                    ids.extend(blocks.iter().map(|b| b.id));
                }
            }
        }
        ids.sort_unstable();
        match ids.windows(2).find(|w| w[0] == w[1]) {
            Some(w) => Err(corrupt(
                src,
                whole(),
                BuildError::DuplicateBlock(w[0]).to_string(),
            )),
            None => Ok(()),
        }
    }

    /// [`check_blocks`](Self::check_blocks) of a Hadoop image, then its
    /// `.md5` sidecar's verdict.
    fn check_hdfs_blocks(&self, h: &HdfsSource, rules: &BlockRules) -> Result<(), LoadError> {
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

    /// Every INODE piece on `pool`'s workers (each taking the next piece in
    /// file order, with one buffer of its own; in order on this thread
    /// without a pool), each inode given to `f` with its parent directory
    /// and the worker's state from `init`; then the block rules. Returns
    /// the states, one per worker, for the caller to merge. Memory: a piece
    /// and a state per worker.
    ///
    /// # Errors
    /// The first error of a piece in file order (workers start no piece
    /// after one failed), `f`'s, or a broken block rule.
    pub fn fold_pieces<S: Send>(
        &self,
        src: &Streamable,
        pool: Option<&rayon::ThreadPool>,
        init: impl Fn() -> S + Sync,
        f: impl Fn(&mut S, &LoadedNode<'_>, Option<DirIndex>) -> Result<(), LoadError> + Sync,
    ) -> Result<Vec<S>, LoadError> {
        let Some(pool) = pool else {
            // In order on this thread.
            let mut state = init();
            let mut rules = BlockRules::default();
            let mut work = self.worker();
            for i in 0..self.inode_pieces.len() {
                rules.merge(self.for_each_in_piece(src, i, &mut work, |n, parent, _| {
                    f(&mut state, n, parent)
                })?);
            }
            self.check_blocks(src, &rules)?;
            return Ok(vec![state]);
        };
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        type Worker<S> = (S, BlockRules, Option<(usize, LoadError)>);
        let per_worker: Vec<Worker<S>> = pool.broadcast(|_| {
            let mut state = init();
            let mut rules = BlockRules::default();
            let mut work = self.worker();
            while !stop.load(Ordering::Relaxed) {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= self.inode_pieces.len() {
                    break;
                }
                match self
                    .for_each_in_piece(src, i, &mut work, |n, parent, _| f(&mut state, n, parent))
                {
                    Ok(r) => rules.merge(r),
                    Err(e) => {
                        stop.store(true, Ordering::Relaxed);
                        return (state, rules, Some((i, e)));
                    }
                }
            }
            (state, rules, None)
        });
        let mut states = Vec::with_capacity(per_worker.len());
        let mut all = BlockRules::default();
        let mut first: Option<(usize, LoadError)> = None;
        for (s, r, e) in per_worker {
            states.push(s);
            all.merge(r);
            if let Some((i, e)) = e {
                if first.as_ref().is_none_or(|(j, _)| i < *j) {
                    first = Some((i, e));
                }
            }
        }
        if let Some((_, e)) = first {
            return Err(e);
        }
        self.check_blocks(src, &all)?;
        Ok(states)
    }

    /// Whether [`for_each_dir_entry`](Self::for_each_dir_entry) gives the
    /// directories in id order and each one's children in Hadoop's name
    /// order (names compared as signed bytes, `hdfs oiv`'s order): for a
    /// Hadoop image, whenever its INODE_DIR entries come in increasing
    /// parent order (Hadoop's lists are in its own order); for an nsimage
    /// image (lists in unsigned name order), when no name has a byte 0x80
    /// or above, where the two orders part.
    pub fn lists_in_hadoop_order(&self) -> bool {
        self.hadoop_order
    }

    /// INODE_DIR's entries, in file order, on this thread: each
    /// directory's id and its children's ids as stored. A Hadoop image may
    /// give a directory in consecutive entries; an nsimage image gives each
    /// once, in strictly increasing id order (checked by
    /// [`build`](Self::build)).
    ///
    /// # Errors
    /// A piece's read or a record the load refuses, or `f`'s.
    pub fn for_each_dir_entry<E: From<LoadError>>(
        &self,
        src: &Streamable,
        mut f: impl FnMut(u64, &[u64]) -> Result<(), E>,
    ) -> Result<(), E> {
        let src = match src {
            Streamable::Image(s) => s,
            Streamable::Hdfs(h) => {
                let mut failed: Option<E> = None;
                let walked = h.each_dir_entry(|parent, kids, at| {
                    f(parent, kids).map_err(|e| {
                        failed = Some(e);
                        h.corrupt(at, "stopped".into())
                    })
                });
                return match failed {
                    Some(e) => Err(e),
                    None => walked.map_err(E::from),
                };
            }
        };
        let (mut buf, mut kids) = (PieceBuf::default(), Vec::new());
        for (p, at) in pieces(section(src, SectionKind::INODE_DIR)?) {
            let bytes = src.piece(&p, &at, &mut buf)?;
            for r in Records::new(bytes, at.clone()) {
                let (off, body) = r.map_err(|e| LoadError::from_format(src.path(), e))?;
                let parent = record::dir_entry(body, &mut kids)
                    .map_err(|d| LoadError::from_format(src.path(), bad(&at, off, d)))?;
                f(parent, &kids)?;
            }
        }
        Ok(())
    }

    /// Matches INODE piece `i`'s records, in id order, with its links.
    fn linker(&self, i: usize) -> Linked<'_> {
        static NO_LINKS: Links = Links::Sparse(Vec::new());
        Linked {
            linker: Linker::new(
                self.links.get(i).unwrap_or(&NO_LINKS),
                self.bases.get(i).copied().unwrap_or(0),
            ),
            dirs: &self.dirs,
        }
    }
}

/// One INODE piece's links with the directories they name: refuses a
/// directory listed as its own child.
struct Linked<'s> {
    linker: Linker<'s>,
    dirs: &'s [Dir],
}

impl Linked<'_> {
    /// See [`Linker::parent`]; a directory that lists itself is refused.
    fn parent(&mut self, id: u64) -> Result<Option<DirIndex>, String> {
        let parent = self.linker.parent(id)?;
        if parent
            .and_then(|d| self.dirs.get(d as usize))
            .is_some_and(|d| d.id == id)
        {
            return Err(format!("directory {id} lists itself"));
        }
        Ok(parent)
    }

    /// See [`Linker::finish`].
    fn finish(&self) -> Result<(), String> {
        self.linker.finish()
    }
}

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

/// The first id each INODE piece may hold: its first key, or the root's
/// (the smallest id of an image) for an unsplit section.
fn first_ids(pieces: &[(SubSectionInfo, Location)]) -> Vec<u64> {
    pieces
        .iter()
        .map(|(p, at)| {
            if at.sub_section.is_some() {
                p.first_key
            } else {
                ROOT_ID
            }
        })
        .collect()
}

/// The id range of each INODE piece (`bases`: each one's first id; `last`:
/// the largest id the image may hold, `None`: not known).
fn spans(bases: &[u64], last: Option<u64>) -> impl Iterator<Item = Option<u64>> + '_ {
    bases.iter().enumerate().map(move |(i, &base)| {
        let end = match bases.get(i.saturating_add(1)) {
            Some(&next) => Some(next),
            None => last.and_then(|l| l.checked_add(1)),
        };
        end.and_then(|e| e.checked_sub(base))
    })
}

/// Empty links for each INODE piece, dense where its ids are.
fn new_links(
    pieces: &[(SubSectionInfo, Location)],
    bases: &[u64],
    last: Option<u64>,
) -> Vec<Links> {
    spans(bases, last)
        .zip(pieces)
        .map(|(span, (p, _))| Links::new(p.records, p.length, span))
        .collect()
}
