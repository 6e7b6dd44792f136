//! The INODE phase of a Hadoop image: each piece (the section, or its
//! INODE_SUB sub-sections, HDFS-14617) decoded into its own
//! [`InodeBatch`] through the loader's `run_pieces` (a pool, or this
//! thread), then the node tables joined in id order.
//!
//! Hadoop writes inodes in its inode map's iteration order, which is not
//! guaranteed to be id order. Each piece checks its own order as it goes
//! (no extra pass); pieces in order but listed out of order are reordered;
//! only an image whose records really are out of order takes the slow
//! path: every record's id read, the records sorted, then decoded.

use super::delimited::Delimited;
use super::file::HdfsFile;
use super::record::{decode_inode, RecordNotes};
use super::strings::StringIds;
use crate::error::LoadError;
use crate::table::NodeTable;
use nsimage_format::hdfs::Codec;
use nsimage_format::hdfs_pb::i_node_section::INode;
use nsimage_format::hdfs_pb::INodeSection;
use nsimage_format::{Location, SubSectionInfo};
use nsimage_namespace::{Block, InodeBatch, InodeParts, Interned, Node, Nodes};
use prost::Message;
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The INODE section's header (in the first piece).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct InodeHeader {
    /// `lastInodeId`.
    pub(crate) last_inode_id: u64,
    /// `numInodes`.
    pub(crate) num_inodes: u64,
}

/// What the phase gives the builder, and its counters.
pub(crate) struct Inodes {
    pub(crate) header: InodeHeader,
    /// The node table, in id order.
    pub(crate) nodes: Nodes,
    /// Each batch's other parts, in id order.
    pub(crate) parts: Vec<InodeParts>,
    /// Striped (erasure-coded) files.
    pub(crate) striped_files: u64,
    /// Directories with quotas by storage type (not kept by the model).
    pub(crate) type_quota_dirs: u64,
    /// Inodes left out: in snapshots only, not in the current tree.
    pub(crate) skipped: u64,
    /// Whether the records were out of id order (the slow path ran).
    pub(crate) resorted: bool,
    /// The records left out, decoded whole, by id.
    pub(crate) snapshot_only: Vec<INode>,
    /// Node table ranges filled, each behind its own lock taken once by
    /// the one worker that fills it (the load's lock traffic).
    pub(crate) range_locks: u64,
}

/// Inodes to keep (the current tree), when the image has snapshots.
pub(crate) type Keep = HashSet<u64>;

struct PieceOut {
    header: Option<InodeHeader>,
    /// `None` when the piece's records are out of id order.
    batch: Option<(Vec<Node>, InodeParts)>,
    first: u64,
    last: u64,
    records: u64,
    notes: Counts,
    /// Records left out (snapshots only), decoded whole.
    others: Vec<INode>,
}

#[derive(Default, Clone, Copy)]
struct Counts {
    striped: u64,
    type_quotas: u64,
    skipped: u64,
}

impl Counts {
    fn note(&mut self, n: RecordNotes) {
        self.striped += u64::from(n.striped);
        self.type_quotas += u64::from(n.type_quotas);
    }
    fn add(&mut self, o: Counts) {
        self.striped += o.striped;
        self.type_quotas += o.type_quotas;
        self.skipped += o.skipped;
    }
}

/// Where a record's error points: in a plain piece the record's own offset,
/// in an inflated one the piece's (with the inflated offset in the text).
pub(crate) fn record_at(f: &HdfsFile, at: &Location, pos: usize) -> (Location, String) {
    if f.summary.codec == nsimage_format::hdfs::Codec::None {
        let mut l = at.clone();
        l.offset = at.offset.saturating_add(pos as u64);
        (l, String::new())
    } else {
        (at.clone(), format!(" (byte {pos} of the inflated piece)"))
    }
}

fn bad(f: &HdfsFile, at: &Location, pos: usize, why: String) -> LoadError {
    let (l, suffix) = record_at(f, at, pos);
    f.corrupt(l, format!("{why}{suffix}"))
}

/// Decodes every INODE piece: a plain image's without snapshots counted
/// and cut, then decoded straight into the node table (`direct`); the
/// others each decoded as its records come out of the file (`decode_piece`:
/// a compressed piece is inflated a chunk at a time, never held whole),
/// then the pieces' node tables joined.
pub(crate) fn inode_phase(
    f: &HdfsFile,
    pool: Option<&rayon::ThreadPool>,
    pieces: &[(SubSectionInfo, Location)],
    tables: &Interned,
    ids: &StringIds,
    keep: Option<&Keep>,
) -> Result<Inodes, LoadError> {
    if keep.is_none() && f.summary.codec == Codec::None {
        return direct(f, pool, pieces, tables, ids);
    }
    let init = || (Vec::new(), Vec::new());
    let mut outs = crate::run::run_pieces_tracked(
        f.tracked(),
        pool,
        pieces,
        init,
        |(buf, blocks), i, p, at| decode_piece(f, (p, at), i, buf, tables, ids, keep, blocks),
    )?;
    let mut counts = Counts::default();
    let mut records = 0u64;
    let mut header = None;
    for o in &outs {
        counts.add(o.notes);
        records = records.saturating_add(o.records);
        header = header.or(o.header);
    }
    let at0 = pieces.first().map(|(_, a)| a.clone()).unwrap_or_default();
    let header =
        header.ok_or_else(|| f.corrupt(at0.clone(), "the INODE section has no header".into()))?;
    // In order within each piece; pieces in order once sorted by first id?
    // (A piece out of order stopped at its first record out of order: the
    // slow path reads every piece again and counts the records.)
    let mut order: Vec<usize> = (0..outs.len())
        .filter(|&i| outs[i].batch.as_ref().is_some_and(|b| !b.0.is_empty()))
        .collect();
    order.sort_by_key(|&i| outs[i].first);
    let in_order = outs.iter().all(|o| o.batch.is_some())
        && order.windows(2).all(|w| outs[w[0]].last < outs[w[1]].first);
    if !in_order {
        drop(outs);
        return resort(f, pieces, tables, ids, keep, header, counts);
    }
    if records != header.num_inodes {
        return Err(f.corrupt(
            at0.clone(),
            format!(
                "{records} inode records, the header declares {}",
                header.num_inodes
            ),
        ));
    }
    let mut snapshot_only: Vec<INode> = Vec::new();
    for o in outs.iter_mut() {
        snapshot_only.append(&mut o.others);
    }
    snapshot_only.sort_by_key(|n| n.id);
    let mut outs: Vec<Option<PieceOut>> = outs.into_iter().map(Some).collect();
    let (node_tables, parts): (Vec<Vec<Node>>, Vec<InodeParts>) = order
        .into_iter()
        .filter_map(|i| outs[i].take().and_then(|o| o.batch))
        .unzip();
    let range_locks = if node_tables.len() > 1 {
        node_tables.len() as u64
    } else {
        0
    };
    let nodes = join(f, pool, node_tables, &at0)?;
    Ok(Inodes {
        header,
        nodes,
        parts,
        striped_files: counts.striped,
        type_quota_dirs: counts.type_quotas,
        skipped: counts.skipped,
        resorted: false,
        snapshot_only,
        range_locks,
    })
}

/// One piece's records, counted and cut (its bytes are not kept: each cut
/// is read again by the worker that decodes it).
struct Counted {
    records: usize,
    header: Option<InodeHeader>,
    /// The piece's records cut on record boundaries into runs of about
    /// [`CUT_BYTES`]: `(start, end, records)`, from after the header (in
    /// the first piece) to the end, one cut at least.
    cuts: Vec<(usize, usize, usize)>,
}

/// The bytes of records a decode task takes. Hadoop writes few
/// sub-sections (`dfs.image.parallel.target.sections`, 12 by default),
/// tens of MiB each at a few million inodes: decoded whole, a worker
/// finishing the last one alone would wait for the other for up to a
/// piece's time. Cut into tasks of about 1 MiB (a millisecond or two of
/// decoding), the workers finish together. The cuts are found as the
/// records are counted, a walk over their length prefixes that is needed
/// anyway.
const CUT_BYTES: usize = 1 << 20;

/// Counts and cuts piece `i` (`p` at `at`), its records read as they come
/// out of the file through the window `buf`: what the piece holds at once
/// is a window and a record, whatever its size.
fn count_piece(
    f: &HdfsFile,
    p: &SubSectionInfo,
    i: usize,
    at: &Location,
    buf: &mut Vec<u8>,
) -> Result<Counted, LoadError> {
    let mut recs = f.records(p.offset, p.length, at, "piece", buf);
    let header = if i == 0 {
        Some(read_header(f, at, recs.next()?)?)
    } else {
        None
    };
    let mut start = recs.pos();
    let (mut records, mut in_cut) = (0usize, 0usize);
    let mut cuts = Vec::new();
    while inode_rec(f, at, recs.next()?)?.is_some() {
        records += 1;
        in_cut += 1;
        let end = recs.pos();
        if end.saturating_sub(start) >= CUT_BYTES {
            cuts.push((start, end, in_cut));
            (start, in_cut) = (end, 0);
        }
    }
    if in_cut > 0 || cuts.is_empty() {
        cuts.push((start, recs.pos(), in_cut));
    }
    Ok(Counted {
        records,
        header,
        cuts,
    })
}

/// Every piece of a plain image read as its records are counted and cut,
/// on the pool. The pieces count as done in the load's progress as their
/// cuts are decoded, not here. Nothing of the section is kept: at 316M
/// inodes it is larger than the namespace it loads into (issue 42).
fn read_and_count(
    f: &HdfsFile,
    quiet: crate::run::Tracked<'_>,
    pool: Option<&rayon::ThreadPool>,
    pieces: &[(SubSectionInfo, Location)],
) -> Result<Vec<Counted>, LoadError> {
    crate::run::run_pieces_tracked(quiet, pool, pieces, Vec::new, |buf, i, p, at| {
        count_piece(f, p, i, at, buf)
    })
}

/// What a piece's decode into its range of the table gives: its parts,
/// first and last id, and counters; `None` when its records are out of id
/// order.
type Decoded = Option<(InodeParts, u64, u64, Counts)>;

/// The decode tasks of [`direct`]: every cut of every piece, in file
/// order, each with its piece's location (errors name the piece and the
/// record's offset in it).
struct Tasks {
    /// Each task's place in the file and its piece's location.
    tasks: Vec<(SubSectionInfo, Location)>,
    /// Each task's records in its piece's bytes: `(start, end)`.
    cuts: Vec<(usize, usize)>,
    /// Each task's records.
    counts: Vec<usize>,
    /// Each task's piece.
    piece_of: Vec<usize>,
    /// The cuts of each piece not decoded yet: a piece is done when its
    /// last cut is.
    left: Vec<AtomicUsize>,
}

/// The tasks of the `counted` pieces (see [`Tasks`]).
fn cut_tasks(counted: Vec<Counted>, pieces: &[(SubSectionInfo, Location)]) -> Tasks {
    let mut tasks: Vec<(SubSectionInfo, Location)> = Vec::new();
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    let mut counts: Vec<usize> = Vec::new();
    // Each task's piece, and the cuts of each piece not decoded yet: a
    // piece is done when its last cut is.
    let mut piece_of: Vec<usize> = Vec::new();
    let mut left: Vec<AtomicUsize> = Vec::new();
    for (i, (c, (p, at))) in counted.into_iter().zip(pieces).enumerate() {
        let len = usize::try_from(p.length).unwrap_or(usize::MAX);
        left.push(AtomicUsize::new(c.cuts.len()));
        let last = c.cuts.len().saturating_sub(1);
        for (k, &(start, end, records)) in c.cuts.iter().enumerate() {
            piece_of.push(i);
            // Where the cut lies in the file (progress and the timeline
            // count its bytes), the first from the piece's start (with the
            // header) and the last to its end, so that the cuts of a piece
            // add up to it.
            let lo = if k == 0 { 0 } else { start };
            let hi = if k == last { len } else { end };
            let (offset, length) = (
                p.offset.saturating_add(lo as u64),
                hi.saturating_sub(lo) as u64,
            );
            tasks.push((
                SubSectionInfo {
                    offset,
                    length,
                    records: records as u64,
                    ..p.clone()
                },
                at.clone(),
            ));
            cuts.push((start, end));
            counts.push(records);
        }
    }
    Tasks {
        tasks,
        cuts,
        counts,
        piece_of,
        left,
    }
}

/// The path of plain images without snapshots: every piece read and its
/// records counted (a walk over the length prefixes), which cuts it into
/// tasks of about [`CUT_BYTES`], then each task decoded straight into its
/// range of the node table (`table`), as nsimage images load; out-of-order
/// records take the slow path.
fn direct(
    f: &HdfsFile,
    pool: Option<&rayon::ThreadPool>,
    pieces: &[(SubSectionInfo, Location)],
    tables: &Interned,
    ids: &StringIds,
) -> Result<Inodes, LoadError> {
    let at0 = pieces.first().map(|(_, a)| a.clone()).unwrap_or_default();
    let timeline = f.timeline();
    // Both steps' pieces leave the progress alone: it moves as each cut
    // is decoded.
    let quiet = crate::run::Tracked {
        quiet: true,
        ..f.tracked()
    };
    let counted = crate::trace::in_phase(timeline, "inode: count", || {
        read_and_count(f, quiet, pool, pieces)
    })?;
    let header = counted
        .first()
        .and_then(|c| c.header)
        .ok_or_else(|| f.corrupt(at0.clone(), "the INODE section has no header".into()))?;
    let total = counted
        .iter()
        .try_fold(0usize, |a, c| a.checked_add(c.records));
    if total.map(|t| t as u64) != Some(header.num_inodes) {
        return Err(f.corrupt(
            at0.clone(),
            format!(
                "{} inode records, the header declares {}",
                total.unwrap_or(usize::MAX),
                header.num_inodes
            ),
        ));
    }
    let Tasks {
        tasks,
        cuts,
        counts,
        piece_of,
        left,
    } = cut_tasks(counted, pieces);
    let mut table = NodeTable::new(total.unwrap_or(0));
    let decoded: Vec<Decoded> = {
        let ranges = table
            .ranges(&counts)
            .ok_or_else(|| f.corrupt(at0.clone(), "piece counts do not add up".into()))?;
        let init = || (Vec::new(), Vec::new(), Vec::new());
        crate::run::run_pieces_tracked(
            quiet,
            pool,
            &tasks,
            init,
            |(blocks, nodes, read), j, task, at| {
                let Some(&(start, end)) = cuts.get(j) else {
                    return Err(f.corrupt(at.clone(), "a task past the cuts".into()));
                };
                // The cut's records read again (the count kept none of
                // them), from where they start in the file: `at` moved
                // there, so that an error names a record's own offset.
                let piece = piece_of.get(j).and_then(|&i| pieces.get(i));
                let (Some((p, _)), Some(len)) = (piece, end.checked_sub(start)) else {
                    return Err(f.corrupt(at.clone(), "a cut past its piece".into()));
                };
                let here = p.offset.saturating_add(start as u64);
                read.resize(len, 0);
                let at = &Location {
                    offset: at.offset.saturating_add(start as u64),
                    ..at.clone()
                };
                f.read_exact(here, read, at)?;
                let bytes = &read[..];
                // Each task fills an arena chunk of its own.
                let chunk = u32::try_from(j)
                    .map_err(|_| f.corrupt(at.clone(), "too many pieces".into()))?;
                let mut buf = std::mem::take(nodes);
                buf.reserve(usize::try_from(task.records).unwrap_or(0));
                let mut batch = InodeBatch::with_buffer(chunk, buf, len);
                let mut recs = Delimited::new(bytes, 0);
                let (mut first, mut last) = (None::<u64>, 0u64);
                let mut notes = Counts::default();
                while let Some((pos, body)) = next_rec(f, at, &mut recs)? {
                    let mut n = RecordNotes::default();
                    let node = decode_inode(body, ids, blocks, &mut n)
                        .map_err(|e| bad(f, at, pos, format!("inode record: {}", e.text())))?;
                    if first.is_some() && node.id <= last {
                        return Ok(None);
                    }
                    first.get_or_insert(node.id);
                    last = node.id;
                    notes.note(n);
                    batch.push(node, tables).map_err(|d| bad(f, at, pos, d))?;
                }
                if !ranges.get(j).is_some_and(|r| r.fill(batch.nodes())) {
                    return Err(
                        f.corrupt(at.clone(), "records do not fill the piece's slots".into())
                    );
                }
                let (parts, buffer) = batch.into_parts_and_buffer();
                *nodes = buffer;
                if let Some(t) = timeline {
                    let piece = piece_of.get(j).and_then(|&i| left.get(i));
                    let done = piece.is_some_and(|n| n.fetch_sub(1, Ordering::Relaxed) == 1);
                    t.advance(u64::from(done), task.length);
                }
                Ok(Some((parts, first.unwrap_or(u64::MAX), last, notes)))
            },
        )?
    };
    // In id order within each task, and from task to task in the table's
    // (the tasks', so the pieces') order?
    let in_order = decoded.iter().all(Option::is_some) && {
        let spans: Vec<(u64, u64)> = decoded
            .iter()
            .flatten()
            .filter(|d| d.1 != u64::MAX)
            .map(|d| (d.1, d.2))
            .collect();
        spans.windows(2).all(|w| w[0].1 < w[1].0)
    };
    if !in_order {
        return resort(f, pieces, tables, ids, None, header, Counts::default());
    }
    let nodes = table
        .finish()
        .ok_or_else(|| f.corrupt(at0.clone(), "some inode slots were not filled".into()))?;
    let mut all = Counts::default();
    let parts = decoded
        .into_iter()
        .flatten()
        .map(|(p, _, _, n)| {
            all.add(n);
            p
        })
        .collect();
    Ok(Inodes {
        header,
        nodes,
        parts,
        striped_files: all.striped,
        type_quota_dirs: all.type_quotas,
        skipped: 0,
        resorted: false,
        snapshot_only: Vec::new(),
        range_locks: counts.len() as u64,
    })
}

/// The pieces' node tables as one, in order: the pieces copy their nodes
/// into their own ranges of the node table (`table`), in parallel on the
/// pool; a single piece's table is copied into chunks (the same one copy).
fn join(
    f: &HdfsFile,
    pool: Option<&rayon::ThreadPool>,
    mut tables: Vec<Vec<Node>>,
    at0: &Location,
) -> Result<Nodes, LoadError> {
    if tables.len() <= 1 {
        return Ok(tables.pop().unwrap_or_default().into());
    }
    let counts: Vec<usize> = tables.iter().map(Vec::len).collect();
    let total = counts.iter().try_fold(0usize, |a, &c| a.checked_add(c));
    let total = total.ok_or_else(|| f.corrupt(at0.clone(), "too many inodes".into()))?;
    let mut table = NodeTable::new(total);
    let filled = {
        let ranges = table
            .ranges(&counts)
            .ok_or_else(|| f.corrupt(at0.clone(), "piece counts do not add up".into()))?;
        let fill = |(r, t): (&crate::table::Range<'_>, Vec<Node>)| r.fill(&t);
        match pool {
            Some(pool) => pool.install(|| {
                use rayon::prelude::*;
                ranges
                    .par_iter()
                    .zip(tables.into_par_iter())
                    .with_max_len(1)
                    .map(fill)
                    .collect::<Vec<bool>>()
            }),
            None => ranges.iter().zip(tables).map(fill).collect(),
        }
    };
    if filled.contains(&false) {
        return Err(f.corrupt(at0.clone(), "a piece did not fill its node range".into()));
    }
    table
        .finish()
        .ok_or_else(|| f.corrupt(at0.clone(), "some inode slots were not filled".into()))
}

/// One piece decoded as its records come out of the file (a compressed
/// piece inflated a chunk at a time): each record is checked (decoded, in
/// id order, not the previous one's id again) before the next is
/// inflated, so what the piece holds of its bytes at once is a chunk and a
/// record; the nodes decoded are what the load keeps. At the first record
/// out of id order it stops: the slow path reads every piece again.
#[allow(clippy::too_many_arguments)]
fn decode_piece(
    f: &HdfsFile,
    (p, at): (&SubSectionInfo, &Location),
    i: usize,
    buf: &mut Vec<u8>,
    tables: &Interned,
    ids: &StringIds,
    keep: Option<&Keep>,
    blocks: &mut Vec<Block>,
) -> Result<PieceOut, LoadError> {
    let mut recs = f.records(p.offset, p.length, at, "piece", buf);
    let header = if i == 0 {
        Some(read_header(f, at, recs.next()?)?)
    } else {
        None
    };
    let chunk = u32::try_from(i).map_err(|_| f.corrupt(at.clone(), "too many pieces".into()))?;
    // Capacity hints from the piece's stored bytes (inflated, a record
    // takes a few tens of bytes); the batch grows past them as needed.
    let hint = usize::try_from(p.length)
        .unwrap_or(usize::MAX)
        .saturating_mul(4)
        .min(HINT_BYTES);
    let mut batch = InodeBatch::with_buffer(chunk, Vec::with_capacity(hint / 48), hint);
    let (mut first, mut last, mut records) = (None::<u64>, 0u64, 0u64);
    let mut previous = None::<u64>;
    let mut notes = Counts::default();
    let mut others = Vec::new();
    while let Some((pos, body)) = inode_rec(f, at, recs.next()?)? {
        records += 1;
        let mut n = RecordNotes::default();
        let node = decode_inode(body, ids, blocks, &mut n)
            .map_err(|e| bad(f, at, pos, format!("inode record: {}", e.text())))?;
        // The same id twice in a row is never an order to sort: refused
        // here, whether the current tree holds the inode or not.
        if previous == Some(node.id) {
            return Err(bad(f, at, pos, repeated(node.id)));
        }
        previous = Some(node.id);
        if keep.is_some_and(|k| !k.contains(&node.id)) {
            notes.skipped += 1;
            others.push(whole(f, at, pos, body)?);
            continue;
        }
        if first.is_some() && node.id < last {
            // Out of id order: the caller takes the slow path.
            return Ok(PieceOut {
                header,
                batch: None,
                first: 0,
                last: 0,
                records,
                notes,
                others: Vec::new(),
            });
        }
        first.get_or_insert(node.id);
        last = node.id;
        notes.note(n);
        batch.push(node, tables).map_err(|d| bad(f, at, pos, d))?;
    }
    Ok(PieceOut {
        header,
        batch: Some(batch.into_nodes_and_parts()),
        first: first.unwrap_or(u64::MAX),
        last,
        records,
        notes,
        others,
    })
}

/// The most bytes a piece's capacity hints take from its stored length.
const HINT_BYTES: usize = 64 << 20;

/// The error for an inode record whose id is its predecessor's, worded as
/// the batch words an id out of order (every reader gives this text).
pub(crate) fn repeated(id: u64) -> String {
    format!("inode id {id} is not greater than the previous one")
}

/// A record left out of the current tree, kept whole (prost) for the
/// side structure.
fn whole(f: &HdfsFile, at: &Location, pos: usize, body: &[u8]) -> Result<INode, LoadError> {
    INode::decode(body).map_err(|e| bad(f, at, pos, format!("inode record: {e}")))
}

/// The fewest bytes an inode record can have: its type and its id, two
/// bytes each (key and a one-byte varint). A shorter record is refused while
/// the records are counted, before anything is sized from the count: the
/// node table's slots (tens of bytes each) are then bounded by a fraction of
/// the piece's bytes, not by one per byte (a deflate stream of zeros inflates
/// to millions of empty records).
pub(crate) const MIN_INODE_RECORD: usize = 4;

/// `r`, an inode record (not the header) or the end, refused when too
/// short to hold an inode.
pub(crate) fn inode_rec<'b>(
    f: &HdfsFile,
    at: &Location,
    r: Option<(usize, &'b [u8])>,
) -> Result<Option<(usize, &'b [u8])>, LoadError> {
    if let Some((pos, body)) = r {
        if body.len() < MIN_INODE_RECORD {
            return Err(bad(
                f,
                at,
                pos,
                format!(
                    "an inode record of {} bytes cannot hold an inode's type and id",
                    body.len()
                ),
            ));
        }
    }
    Ok(r)
}

fn next_rec<'b>(
    f: &HdfsFile,
    at: &Location,
    recs: &mut Delimited<'b>,
) -> Result<Option<(usize, &'b [u8])>, LoadError> {
    recs.next_record()
        .map_err(|(o, why)| bad(f, at, o, why.into()))
}

pub(crate) fn read_header(
    f: &HdfsFile,
    at: &Location,
    rec: Option<(usize, &[u8])>,
) -> Result<InodeHeader, LoadError> {
    let Some((pos, body)) = rec else {
        return Err(bad(f, at, 0, "the INODE section has no header".into()));
    };
    let h = INodeSection::decode(body).map_err(|e| {
        bad(
            f,
            at,
            pos,
            format!("the INODE section header does not decode: {e}"),
        )
    })?;
    Ok(InodeHeader {
        last_inode_id: h.last_inode_id(),
        num_inodes: h.num_inodes(),
    })
}

/// The slow path for records out of id order: every piece read again,
/// each record checked as it comes out (decoded, its id not seen before)
/// and its bytes kept, the records counted against the header, sorted by
/// id and decoded into one batch.
fn resort(
    f: &HdfsFile,
    pieces: &[(SubSectionInfo, Location)],
    tables: &Interned,
    ids: &StringIds,
    keep: Option<&Keep>,
    header: InodeHeader,
    mut counts: Counts,
) -> Result<Inodes, LoadError> {
    // Each piece's kept records' bytes, one after another.
    let mut bufs: Vec<Vec<u8>> = Vec::with_capacity(pieces.len());
    // (id, piece, start, end in the piece's kept bytes, place in the
    // piece) of each record kept.
    let mut index: Vec<(u64, usize, usize, usize, usize)> = Vec::new();
    let mut snapshot_only = Vec::new();
    let mut seen: HashSet<u64> = HashSet::new();
    let (mut window, mut blocks) = (Vec::new(), Vec::new());
    let mut records = 0u64;
    for (i, (p, at)) in pieces.iter().enumerate() {
        let mut kept: Vec<u8> = Vec::new();
        let mut recs = f.records(p.offset, p.length, at, "piece", &mut window);
        if i == 0 {
            let _ = recs.next()?;
        }
        while let Some((pos, body)) = inode_rec(f, at, recs.next()?)? {
            records += 1;
            let mut n = RecordNotes::default();
            let id = decode_inode(body, ids, &mut blocks, &mut n)
                .map_err(|e| bad(f, at, pos, format!("inode record: {}", e.text())))?
                .id;
            if !seen.insert(id) {
                return Err(bad(f, at, pos, format!("inode id {id} is listed twice")));
            }
            if keep.is_some_and(|k| !k.contains(&id)) {
                snapshot_only.push(whole(f, at, pos, body)?);
                continue;
            }
            let start = kept.len();
            kept.extend_from_slice(body);
            index.push((id, i, start, kept.len(), pos));
        }
        bufs.push(kept);
    }
    drop(seen);
    if records != header.num_inodes {
        let at0 = pieces.first().map(|(_, a)| a.clone()).unwrap_or_default();
        return Err(f.corrupt(
            at0,
            format!(
                "{records} inode records, the header declares {}",
                header.num_inodes
            ),
        ));
    }
    index.sort_unstable_by_key(|r| r.0);
    let total_bytes: usize = bufs.iter().map(Vec::len).sum();
    let mut batch = InodeBatch::with_buffer(0, Vec::with_capacity(index.len()), total_bytes);
    counts.striped = 0;
    counts.type_quotas = 0;
    counts.skipped = snapshot_only.len() as u64;
    for &(_, i, s, e, pos) in &index {
        let at = &pieces[i].1;
        let body = &bufs[i][s..e];
        let mut n = RecordNotes::default();
        // Decoded again: the first decode's node borrowed the window.
        let node = decode_inode(body, ids, &mut blocks, &mut n)
            .map_err(|er| bad(f, at, pos, format!("inode record: {}", er.text())))?;
        counts.note(n);
        batch.push(node, tables).map_err(|d| bad(f, at, pos, d))?;
    }
    let (nodes, parts) = batch.into_nodes_and_parts();
    Ok(Inodes {
        header,
        // One copy of the sorted nodes into the table's chunks.
        nodes: nodes.into(),
        parts: vec![parts],
        striped_files: counts.striped,
        type_quota_dirs: counts.type_quotas,
        skipped: counts.skipped,
        resorted: true,
        snapshot_only: {
            snapshot_only.sort_by_key(|n: &INode| n.id);
            snapshot_only
        },
        range_locks: 0,
    })
}
