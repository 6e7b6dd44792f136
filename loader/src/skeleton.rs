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
//! The nsimage image's tree is built in `image.rs`, the Hadoop image's in
//! `hadoop.rs`; this module holds what both share and the reads of the
//! rows.
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

use crate::decode::{self, bad};
use crate::error::LoadError;
use crate::hdfs::stream::ChunkBuf;
use crate::hdfs::HdfsUnstreamable;
use crate::record;
pub use crate::record::InodeScratch;
use crate::sections::{corrupt, pieces, section};
use crate::source::PieceBuf;
use crate::streamable::Streamable;
use nsimage_format::framing::Records;
use nsimage_format::{Location, SectionKind, SubSectionInfo, ROOT_ID};
use nsimage_namespace::{Block, BlockRules, BuildError, Interned, LoadedNode, NsInfo};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

mod hadoop;
mod image;
mod links;
mod names;
use links::{Linker, Links};
use names::Seeds;

/// Bytes of names the exact check of the children's order holds at once
/// (more passes over INODE when it needs more): see
/// [`Skeleton::check_order_exactly`].
const NAME_CHECK_BYTES: usize = 64 << 20;
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
