//! The INODE_DIR phase of a Hadoop image: each piece (the section, or its
//! INODE_DIR_SUB sub-sections) decoded into a [`DirBatch`] through
//! `run_pieces`; then, as for an nsimage image (`dir_phase`), each worker
//! sets the parents of its own range of the node table, the lists are
//! attached and the tree checked from the parent links.
//!
//! Hadoop lists children in its own order (names compared as signed
//! bytes) and directories in its inode map's order; the namespace wants
//! names in byte order and directories by id, so each piece sorts what is
//! out of order (checked first: ASCII names are already in both orders).
//! References (`refChildren`) resolve through INODE_REFERENCE to the inode
//! they refer to.

use super::file::HdfsFile;
use super::inodes::{record_at, Keep};
use crate::error::LoadError;
use crate::trace::in_phase;
use nsimage_format::hdfs::fields::inode_directory_section::dir_entry as dir_entry_f;
use nsimage_format::hdfs_pb::i_node_directory_section::DirEntry;
use nsimage_format::hdfs_pb::i_node_section::{i_node, INode};
use nsimage_format::wire::Cursor;
use nsimage_format::wire::VARINT;
use nsimage_format::{Location, SubSectionInfo};
use nsimage_namespace::{BuildError, DirBatch, Namespace, NamespaceBuilder, ROOT_ID};
use prost::Message;
use std::collections::{HashMap, HashSet};

fn bad(f: &HdfsFile, at: &Location, pos: usize, why: String) -> LoadError {
    let (l, suffix) = record_at(f, at, pos);
    f.corrupt(l, format!("{why}{suffix}"))
}

/// One piece's directory entries: (parent, start, end) into `kids`.
#[derive(Default)]
struct Entries {
    dirs: Vec<(u64, usize, usize, usize)>,
    kids: Vec<u64>,
    /// Entries of directories outside the current tree, kept whole.
    others: Vec<DirEntry>,
}

/// The inodes outside the current tree, for the checks of the entries of
/// directories there: Hadoop's loader wants every entry's parent to be a
/// directory inode and every child an inode, whether or not the current
/// tree reaches it.
pub(crate) struct Outside<'a> {
    /// The current tree's inodes (reached from the root through INODE_DIR).
    pub(crate) tree: &'a Keep,
    /// The inodes only snapshots see, by id.
    pub(crate) others: &'a [INode],
}

impl Outside<'_> {
    /// Whether `id` is an inode outside the current tree, and a directory.
    fn other(&self, id: u64) -> Option<bool> {
        let i = self.others.binary_search_by_key(&id, |n| n.id).ok()?;
        self.others
            .get(i)
            .map(|n| n.r#type() == i_node::Type::Directory)
    }

    /// Checks an entry of a directory outside the current tree (its
    /// children are `kids`), as the builder checks the tree's.
    fn check(&self, parent: u64, kids: &[u64]) -> Result<(), BuildError> {
        match self.other(parent) {
            None => return Err(BuildError::ParentNotAnInode(parent)),
            Some(false) => return Err(BuildError::ParentNotADirectory(parent)),
            Some(true) => {}
        }
        match kids
            .iter()
            .find(|&&c| !self.tree.contains(&c) && self.other(c).is_none())
        {
            Some(&child) => Err(BuildError::ChildNotAnInode { parent, child }),
            None => Ok(()),
        }
    }
}

/// Decodes a piece's DirEntry records (children and resolved references)
/// as they come out of the file; with `outside`, an entry whose parent the
/// current tree does not hold is checked and kept whole.
fn entries(
    f: &HdfsFile,
    p: &SubSectionInfo,
    at: &Location,
    buf: &mut Vec<u8>,
    refs: &[u64],
    outside: Option<&Outside<'_>>,
) -> Result<Entries, LoadError> {
    let mut e = Entries::default();
    let mut recs = f.records(p.offset, p.length, at, "piece", buf);
    while let Some((pos, body)) = recs.next()? {
        let start = e.kids.len();
        let parent = dir_entry(body, refs, &mut e.kids)
            .map_err(|why| bad(f, at, pos, format!("directory record: {why}")))?;
        if let Some(o) = outside.filter(|o| !o.tree.contains(&parent)) {
            o.check(parent, e.kids.get(start..).unwrap_or_default())
                .map_err(|d| bad(f, at, pos, d.to_string()))?;
            e.kids.truncate(start);
            let whole = DirEntry::decode(body)
                .map_err(|er| bad(f, at, pos, format!("directory record: {er}")))?;
            e.others.push(whole);
            continue;
        }
        if e.kids.len() == start {
            continue;
        }
        e.dirs.push((parent, start, e.kids.len(), pos));
    }
    Ok(e)
}

/// One DirEntry: its parent; children and resolved references appended to
/// `kids`.
pub(crate) fn dir_entry(body: &[u8], refs: &[u64], kids: &mut Vec<u64>) -> Result<u64, String> {
    let mut w = Cursor::new(body);
    let mut parent = None;
    while !w.done() {
        let (field, wt) = w.key()?;
        match field {
            dir_entry_f::PARENT => {
                Cursor::expect(wt, VARINT)?;
                parent = Some(w.varint()?);
            }
            dir_entry_f::CHILDREN => w.each_varint(wt, |c| {
                kids.push(c);
                Ok(())
            })?,
            dir_entry_f::REF_CHILDREN => {
                let mut missing = None;
                w.each_varint(wt, |r| {
                    match usize::try_from(r).ok().and_then(|r| refs.get(r)) {
                        Some(&id) => kids.push(id),
                        None => missing = missing.or(Some(r)),
                    }
                    Ok(())
                })?;
                if let Some(r) = missing {
                    return Err(format!(
                        "reference {r} is not in INODE_REFERENCE ({} references)",
                        refs.len()
                    ));
                }
            }
            _ => w.skip(wt)?,
        }
    }
    parent.ok_or_else(|| "no parent".to_string())
}

/// Sorts the entries by parent, joins the entries of a directory listed
/// more than once (Hadoop's loader adds each entry's children to the
/// directory, so a writer may split a large one), and sorts each entry's
/// children into the namespace's name order, where they are not already.
fn order(e: &mut Entries, b: &NamespaceBuilder) {
    if !e.dirs.windows(2).all(|w| w[0].0 < w[1].0) {
        e.dirs.sort_by_key(|d| d.0);
    }
    if e.dirs.windows(2).any(|w| w[0].0 == w[1].0) {
        let mut kids = Vec::with_capacity(e.kids.len());
        let mut dirs: Vec<(u64, usize, usize, usize)> = Vec::with_capacity(e.dirs.len());
        for &(d, s, t, pos) in &e.dirs {
            let start = kids.len();
            kids.extend_from_slice(&e.kids[s..t]);
            match dirs.last_mut() {
                Some(last) if last.0 == d => last.2 = kids.len(),
                _ => dirs.push((d, start, kids.len(), pos)),
            }
        }
        e.kids = kids;
        e.dirs = dirs;
    }
    let name = |id: &u64| b.name_of_id(*id).unwrap_or_default();
    for &(_, s, t, _) in &e.dirs {
        let kids = &mut e.kids[s..t];
        // One name lookup per child to see whether Hadoop's order is ours
        // (always, for ASCII names).
        let mut prev: Option<&[u8]> = None;
        let sorted = kids.iter().all(|k| {
            let n = name(k);
            let ok = prev.is_none_or(|p| p < n);
            prev = Some(n);
            ok
        });
        if !sorted {
            kids.sort_unstable_by(|x, y| name(x).cmp(name(y)));
        }
    }
}

/// The batch of one piece's entries, with its links applied. Hadoop's
/// order is nearly always the namespace's (ASCII names, directories by id):
/// the batch is built as the entries come, the builder checking the order;
/// only if that fails are the entries sorted (a name lookup per child) and
/// the batch built again, whose failure then is the image's.
fn batch(
    f: &HdfsFile,
    e: &mut Entries,
    chunk: u32,
    at: &Location,
    b: &NamespaceBuilder,
) -> Result<DirBatch, LoadError> {
    match build(f, e, chunk, at, b) {
        Ok(batch) => Ok(batch),
        Err(_) => {
            order(e, b);
            build(f, e, chunk, at, b)
        }
    }
}

fn build(
    f: &HdfsFile,
    e: &Entries,
    chunk: u32,
    at: &Location,
    b: &NamespaceBuilder,
) -> Result<DirBatch, LoadError> {
    let mut batch = DirBatch::new(
        chunk,
        e.dirs.len(),
        e.kids.len().saturating_add(e.dirs.len()),
    );
    for &(parent, s, t, pos) in &e.dirs {
        batch
            .push(b, parent, e.kids[s..t].iter().copied())
            .map_err(|d| bad(f, at, pos, d.to_string()))?;
    }
    batch.shrink_to_fit();
    Ok(batch)
}

/// Links every inode to its directory and finishes the namespace: the
/// pieces decoded into batches (on the pool), then the parents set as an
/// nsimage image's are (each worker its own range of the node table), the
/// lists attached and the tree checked from the parent links.
pub(crate) fn dir_phase(
    f: &HdfsFile,
    pool: Option<&rayon::ThreadPool>,
    pieces: &[(SubSectionInfo, Location)],
    mut builder: NamespaceBuilder,
    refs: &[u64],
    outside: Option<&Outside<'_>>,
) -> Result<(Namespace, Vec<DirEntry>), LoadError> {
    let at0 = pieces.first().map(|(_, a)| a.clone()).unwrap_or_default();
    let timeline = f.timeline();
    let b = &builder;
    // (first parent, last parent, batch, entries kept whole, piece).
    type Decoded = (u64, u64, DirBatch, Vec<DirEntry>, usize);
    let mut batches: Vec<Decoded> = in_phase(timeline, "dir: decode", || {
        crate::run::run_pieces_tracked(f.tracked(), pool, pieces, Vec::new, |buf, i, p, at| {
            let mut e = entries(f, p, at, buf, refs, outside)?;
            let chunk =
                u32::try_from(i).map_err(|_| f.corrupt(at.clone(), "too many pieces".into()))?;
            let others = std::mem::take(&mut e.others);
            let batch = batch(f, &mut e, chunk, at, b)?;
            let first = e.dirs.first().map_or(u64::MAX, |d| d.0);
            let last = e.dirs.last().map_or(0, |d| d.0);
            Ok((first, last, batch, others, i))
        })
    })?;
    let mut others: Vec<DirEntry> = Vec::new();
    for x in batches.iter_mut() {
        others.append(&mut x.3);
    }
    batches.retain(|x| x.0 != u64::MAX);
    batches.sort_by_key(|x| x.0);
    let in_order = batches.windows(2).all(|w| w[0].1 < w[1].0);
    let (batches, from): (Vec<DirBatch>, Vec<usize>) = if in_order {
        batches.into_iter().map(|x| (x.2, x.4)).unzip()
    } else {
        // Directories interleaved across pieces: all entries as one batch.
        drop(batches);
        let mut all = Entries::default();
        let mut buf = Vec::new();
        for (p, at) in pieces {
            let e = entries(f, p, at, &mut buf, refs, outside)?;
            let base = all.kids.len();
            all.others.extend(e.others);
            all.kids.extend_from_slice(&e.kids);
            all.dirs.extend(
                e.dirs
                    .iter()
                    .map(|&(d, s, t, pos)| (d, s + base, t + base, pos)),
            );
        }
        others = std::mem::take(&mut all.others);
        (vec![batch(f, &mut all, 0, &at0, b)?], vec![0])
    };
    // A child listed twice is reported in the piece that lists it again.
    let listed_twice = |(i, d): (usize, BuildError)| {
        let at = from
            .get(i)
            .and_then(|&p| pieces.get(p))
            .map_or_else(|| at0.clone(), |p| p.1.clone());
        f.corrupt(at, d.to_string())
    };
    match pool {
        Some(pool) => in_phase(timeline, "dir: link", || {
            let total = builder.inode_count();
            let ranges = builder.node_ranges_mut(crate::dir_phase::link_ranges_for(pool));
            crate::dir_phase::link_ranges(pool, ranges, total, &batches, timeline)
        }),
        None => in_phase(timeline, "dir: link", || builder.link_all(&batches)),
    }
    .map_err(listed_twice)?;
    in_phase(timeline, "dir: attach", || builder.attach(batches))
        .map_err(|d| f.corrupt(at0.clone(), d.to_string()))?;
    let ns = in_phase(timeline, "dir: check tree", || {
        crate::dir_phase::finish(builder, pool, timeline)
    })
    .map_err(|d| f.corrupt(at0, d.to_string()))?;
    others.sort_by_key(|d| d.parent());
    Ok((ns, others))
}

/// The inodes of the current tree (reachable from the root through
/// INODE_DIR), for images with snapshots, whose INODE section also holds
/// inodes that only snapshots still see.
pub(crate) fn current_tree(
    f: &HdfsFile,
    pieces: &[(SubSectionInfo, Location)],
    refs: &[u64],
) -> Result<Keep, LoadError> {
    let mut children: HashMap<u64, Vec<u64>> = HashMap::new();
    let mut buf = Vec::new();
    for (p, at) in pieces {
        let e = entries(f, p, at, &mut buf, refs, None)?;
        for &(d, s, t, _) in &e.dirs {
            children
                .entry(d)
                .or_default()
                .extend_from_slice(&e.kids[s..t]);
        }
    }
    let mut keep: HashSet<u64> = HashSet::new();
    keep.insert(ROOT_ID);
    let mut frontier = vec![ROOT_ID];
    while let Some(d) = frontier.pop() {
        if let Some(kids) = children.get(&d) {
            for &k in kids {
                if keep.insert(k) {
                    frontier.push(k);
                }
            }
        }
    }
    Ok(keep)
}
