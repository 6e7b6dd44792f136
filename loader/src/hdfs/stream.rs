//! A Hadoop image read for the streamed viewer (issue 28): what
//! [`Skeleton`](crate::skeleton::Skeleton) needs of one, in bounded memory.
//!
//! - `HdfsSource::scan`: every INODE record's id, type and name, each piece
//!   read as its records come out of the file (a plain piece in blocks, a
//!   compressed one inflated a chunk at a time: never held whole); the
//!   records' ids must increase in file order (the load's order: an image
//!   whose records do not is loaded whole, as the load sorts them; an id
//!   that repeats its predecessor's is refused), and a plain piece is cut
//!   into chunks of about [`CHUNK`] bytes on record boundaries, which the
//!   rows pass reads on the pool like an nsimage image's sub-sections. A
//!   compressed piece cannot be entered in the middle: it is one chunk,
//!   inflated again by the worker that takes it, its records decoded as
//!   they come out.
//! - `HdfsSource::each_dir_entry`: INODE_DIR's entries, as they come out
//!   too.
//! - `HdfsSource::visit_chunk`: one chunk's records decoded by the load's
//!   own decoder.
//!
//! What a reader holds of a piece's bytes at once is a block or chunk and
//! the record being read (`inflate`), whatever the piece's size: the
//! streamed commands' `--memory-limit` bounds the tree and these buffers
//! together. The load's other checks are made where they fall: the INODE
//! header's count, the files under construction (each names a file INODE
//! holds), the `.md5` sidecar (hashed on its own thread, compared at the
//! end). An image with snapshots (or references, their by-product) is
//! loaded whole: its INODE section also holds inodes only snapshots see.
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use super::dirs::dir_entry;
use super::file::HdfsFile;
use super::image::HdfsImage;
use super::inodes::{inode_rec, read_header, record_at, repeated, InodeHeader, MIN_INODE_RECORD};
use super::md5::{self, Md5Check};
use super::reach::section_at;
use super::record::{decode_inode, record_head, RecordNotes};
use super::run::{inode_header, ns_info, pieces, side_and_strings};
use super::strings::StringIds;
use crate::error::LoadError;
use nsimage_format::error::shown;
use nsimage_format::hdfs::{Codec, HdfsSection};
use nsimage_format::{Location, SubSectionInfo, ROOT_ID};
use nsimage_namespace::{Block, BlockRules, InodeBatch, Interned, LoadedNode, NsInfo, StringTable};
use parking_lot::Mutex;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// The bytes of records a chunk of a plain piece holds (a record may take
/// it past), and the bytes of records of a compressed piece decoded into
/// one batch before its parts are handed to the block rules.
pub const CHUNK: u64 = 2 << 20;

/// A Hadoop image opened to be streamed.
pub struct HdfsSource {
    f: HdfsFile,
    img: HdfsImage,
    strings: StringTable,
    ids: StringIds,
    inode_pieces: Vec<(SubSectionInfo, Location)>,
    dir_pieces: Vec<(SubSectionInfo, Location)>,
    /// `lastInodeId` and `numInodes`, read from the section's start.
    header: Option<(u64, u64)>,
    md5: Mutex<Option<Md5Check>>,
    /// Whether a record read was an erasure-coded file.
    striped: AtomicBool,
}

/// Why a Hadoop image is not streamed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HdfsUnstreamable {
    /// It has snapshots (or references).
    Snapshots,
    /// Its INODE records are not in id order.
    OutOfIdOrder,
}

/// What [`HdfsSource::scan`] found.
pub(crate) struct Scanned {
    /// The chunks: offset, length, records and first id of each (a
    /// compressed piece's offset and length are its stored ones).
    pub(crate) chunks: Vec<(SubSectionInfo, Location)>,
    /// Every directory: id and name (a range of `names`).
    pub(crate) dirs: Vec<(u64, usize, usize)>,
    pub(crate) names: Vec<u8>,
    pub(crate) inodes: u64,
    pub(crate) last_id: u64,
    /// Every record's name hashed under the caller's seed, per piece in
    /// file order, with the number of chunks the piece was cut into (the
    /// check that no directory holds a name twice).
    pub(crate) name_hashes: Vec<(usize, Vec<u64>)>,
}

/// The most bytes a deflate stream (zlib's or gzip's) inflates to per byte
/// stored: a DEFLATE block's longest matches give 258 bytes for about two
/// bits, about 1,032 to 1.
const MAX_DEFLATE_RATIO: u64 = 1032;

/// One piece's scan.
#[derive(Default)]
struct PieceScan {
    header: Option<InodeHeader>,
    chunks: Vec<(SubSectionInfo, Location)>,
    dirs: Vec<(u64, usize, usize)>,
    names: Vec<u8>,
    first: Option<(u64, bool)>,
    last: Option<u64>,
    records: u64,
    in_order: bool,
    under_construction: Vec<u64>,
    name_hashes: Vec<u64>,
}

/// A reader's window on a piece's bytes, reused from piece to piece.
#[derive(Default)]
pub struct ChunkBuf {
    window: Vec<u8>,
}

impl HdfsSource {
    /// Opens `path` (a Hadoop fsimage: summary, small sections, string
    /// table) and starts its `.md5` sidecar's check, if it has one and
    /// `md5` checks it.
    ///
    /// # Errors
    /// What a load of the image refuses in those parts; a sidecar that
    /// names another file ([`LoadError::Md5Names`]).
    pub fn open(path: &Path, md5: md5::Md5Policy) -> Result<HdfsSource, LoadError> {
        let f = HdfsFile::open(path)?;
        let (img, strings, ids) = side_and_strings(&f)?;
        let inode_pieces = pieces(&f, HdfsSection::Inode)?;
        if inode_pieces.is_empty() {
            return Err(f.corrupt(
                nsimage_format::hdfs::version::summary_at(f.summary.summary_offset),
                "the summary lists no INODE section".into(),
            ));
        }
        let dir_pieces = pieces(&f, HdfsSection::InodeDir)?;
        let header = inode_pieces.first().and_then(|p| inode_header(&f, p));
        if let (Some((_, declared)), Some((_, at))) = (header, inode_pieces.first()) {
            // A count the section's bytes cannot hold is the image's lie,
            // refused before anything is sized from it (never a memory
            // shortfall): each record takes a length byte and at least
            // MIN_INODE_RECORD more, a deflate stream at most 1,032 bytes
            // per stored byte.
            let stored = inode_pieces
                .iter()
                .fold(0u64, |n, p| n.saturating_add(p.0.length));
            let ratio = if f.summary.codec == Codec::None {
                1
            } else {
                MAX_DEFLATE_RATIO
            };
            let most = stored
                .saturating_mul(ratio)
                .checked_div((MIN_INODE_RECORD as u64).saturating_add(1))
                .unwrap_or(0);
            if declared > most {
                return Err(f.corrupt(
                    at.clone(),
                    format!(
                        "the INODE header declares {declared} inodes; the section's {stored} stored bytes hold at most {most}"
                    ),
                ));
            }
        }
        let md5 = md5::start(path, md5)?;
        Ok(HdfsSource {
            f,
            img,
            strings,
            ids,
            inode_pieces,
            dir_pieces,
            header,
            md5: Mutex::new(md5),
            striped: AtomicBool::new(false),
        })
    }

    /// The image's path.
    pub fn path(&self) -> &Path {
        self.f.path()
    }

    /// The inodes the INODE header declares (0 where it cannot be read).
    pub fn inode_count(&self) -> u64 {
        self.header.map_or(0, |h| h.1)
    }

    /// The string table, for the skeleton's tables.
    pub(crate) fn strings(&self) -> &StringTable {
        &self.strings
    }

    /// NS_INFO, as a load gives it (the block id limit once
    /// [`finish`](Self::finish) knows whether any file is erasure-coded).
    pub(crate) fn info(&self) -> NsInfo {
        ns_info(
            &self.img,
            self.header.map_or(0, |h| h.0),
            self.striped.load(Ordering::Relaxed),
        )
    }

    /// Counts the INODE records, one piece at a time through a bounded
    /// window, against the count the header declares (what the streamed
    /// commands size their memory from): a count that lies is the image's
    /// damage, reported as a load reports it, never a memory shortfall.
    ///
    /// # Errors
    /// A located [`LoadError::Corrupt`] for a record that cannot be framed
    /// or a count that is not the header's.
    pub fn check_count(&self) -> Result<(), LoadError> {
        let mut buf = ChunkBuf::default();
        let mut records = 0u64;
        for (i, (p, at)) in self.inode_pieces.iter().enumerate() {
            let mut header_due = i == 0;
            self.walk(p, at, &mut buf, |_, _, _| {
                if header_due {
                    header_due = false;
                } else {
                    records = records.saturating_add(1);
                }
                Ok(true)
            })?;
        }
        let declared = self.inode_count();
        if records != declared {
            let at0 = self
                .inode_pieces
                .first()
                .map(|p| p.1.clone())
                .unwrap_or_default();
            return Err(self.f.corrupt(
                at0,
                format!("{records} inode records, the header declares {declared}"),
            ));
        }
        Ok(())
    }

    /// Why this image is not streamed, if it is not (its records' order
    /// is known only once its records are read).
    pub fn unstreamable(&self) -> Option<HdfsUnstreamable> {
        self.img
            .has_snapshots()
            .then_some(HdfsUnstreamable::Snapshots)
    }

    fn corrupt_at(&self, at: &Location, pos: usize, why: String) -> LoadError {
        let (l, suffix) = record_at(&self.f, at, pos);
        self.f.corrupt(l, format!("{why}{suffix}"))
    }

    /// Calls `g` with each record of piece `p` (its position in the piece's
    /// plain bytes, the position after it, and its bytes) as it comes out
    /// of the file, until `g` says stop.
    fn walk(
        &self,
        p: &SubSectionInfo,
        at: &Location,
        buf: &mut ChunkBuf,
        mut g: impl FnMut(usize, usize, &[u8]) -> Result<bool, LoadError>,
    ) -> Result<(), LoadError> {
        let mut recs = self
            .f
            .records(p.offset, p.length, at, "piece", &mut buf.window);
        while let Some((pos, after, body)) = recs.next_framed()? {
            if !g(pos, after, body)? {
                break;
            }
        }
        Ok(())
    }

    /// Reads every INODE record's id, type and name (see the module
    /// documentation) on `pool`; `Ok(None)` when the records are not in
    /// id order.
    ///
    /// # Errors
    /// A located [`LoadError::Corrupt`] for a record or header the load
    /// refuses, a count that is not the header's, a file under
    /// construction that is not a file INODE holds, or a first inode that
    /// is not the root directory.
    pub(crate) fn scan(
        &self,
        pool: Option<&rayon::ThreadPool>,
        name_seed: u64,
    ) -> Result<Option<Scanned>, LoadError> {
        let mut uc: Vec<u64> = self
            .img
            .files_under_construction
            .iter()
            .map(|u| u.0)
            .collect();
        uc.sort_unstable();
        uc.dedup();
        let scans = crate::run::run_pieces(
            pool,
            &self.inode_pieces,
            ChunkBuf::default,
            |buf, i, p, at| self.scan_piece(buf, i, p, at, &uc, name_seed),
        )?;
        self.join_scans(scans, &uc)
    }

    /// One INODE piece of [`scan`](Self::scan) (`i`: its place): its
    /// records' ids, types and names, the directories' names, the files
    /// under construction among `uc`, and the chunks it is cut into (on
    /// record boundaries in an uncompressed image, else the piece whole);
    /// `in_order` false, the rest left unread, at an id below the last.
    fn scan_piece(
        &self,
        buf: &mut ChunkBuf,
        i: usize,
        p: &SubSectionInfo,
        at: &Location,
        uc: &[u64],
        name_seed: u64,
    ) -> Result<PieceScan, LoadError> {
        let compressed = self.f.summary.codec != Codec::None;
        let mut s = PieceScan {
            in_order: true,
            ..PieceScan::default()
        };
        // The chunk being cut: its start, first id, records.
        let mut open: Option<(usize, u64, u64)> = None;
        let mut end = 0usize;
        let mut header_due = i == 0;
        let cut = |s: &mut PieceScan, (start, first, n): (usize, u64, u64), end: usize| {
            let offset = p.offset.saturating_add(start as u64);
            let length = end.saturating_sub(start) as u64;
            s.chunks.push((
                SubSectionInfo {
                    offset,
                    length,
                    records: n,
                    first_key: first,
                    checksum: 0,
                    at_rest: Default::default(),
                },
                Location {
                    offset,
                    ..at.clone()
                },
            ));
        };
        self.walk(p, at, buf, |pos, after, body| {
            if header_due {
                header_due = false;
                s.header = Some(read_header(&self.f, at, Some((pos, body)))?);
                return Ok(true);
            }
            if body.len() < MIN_INODE_RECORD {
                return Err(self.corrupt_at(
                    at,
                    pos,
                    format!(
                        "an inode record of {} bytes cannot hold an inode's type and id",
                        body.len()
                    ),
                ));
            }
            let (id, ty, name) = record_head(body)
                .map_err(|e| self.corrupt_at(at, pos, format!("inode record: {}", e.text())))?;
            if s.last == Some(id) {
                // Never an order to sort: the load refuses it too.
                return Err(self.corrupt_at(at, pos, repeated(id)));
            }
            if s.last.is_some_and(|l| id < l) {
                s.in_order = false;
                return Ok(false);
            }
            let dir = ty == 2;
            s.first.get_or_insert((id, dir));
            s.last = Some(id);
            s.records = s.records.saturating_add(1);
            s.name_hashes
                .push(xxhash_rust::xxh3::xxh3_64_with_seed(name, name_seed));
            if dir {
                let from = s.names.len();
                s.names.extend_from_slice(name);
                s.dirs.push((id, from, name.len()));
            }
            if uc.binary_search(&id).is_ok() {
                if dir {
                    return Err(self.bad_under_construction(id, "a directory"));
                }
                s.under_construction.push(id);
            }
            // Chunks of a plain piece: cut on record boundaries.
            if !compressed {
                match open.as_mut() {
                    Some((_, _, n)) => *n = n.saturating_add(1),
                    None => open = Some((pos, id, 1)),
                }
                end = after;
                if let Some(o) = open.filter(|o| (after.saturating_sub(o.0) as u64) >= CHUNK) {
                    cut(&mut s, o, after);
                    open = None;
                }
            }
            Ok(true)
        })?;
        if compressed {
            if let Some((first, _)) = s.first {
                s.chunks.push((
                    SubSectionInfo {
                        records: s.records,
                        first_key: first,
                        ..p.clone()
                    },
                    at.clone(),
                ));
            }
        } else if let Some(o) = open {
            cut(&mut s, o, end);
        }
        Ok(s)
    }

    /// The pieces' scans of [`scan`](Self::scan), in file order, joined:
    /// `Ok(None)` when the ids are not in order across them; the first
    /// inode the root directory, the count the header's, every file under
    /// construction of `uc` found.
    fn join_scans(&self, scans: Vec<PieceScan>, uc: &[u64]) -> Result<Option<Scanned>, LoadError> {
        let at0 = self
            .inode_pieces
            .first()
            .map(|p| p.1.clone())
            .unwrap_or_default();
        let mut out = Scanned {
            chunks: Vec::new(),
            dirs: Vec::new(),
            names: Vec::new(),
            inodes: 0,
            last_id: 0,
            name_hashes: Vec::new(),
        };
        let mut header = None;
        let mut found: Vec<u64> = Vec::new();
        let mut last: Option<u64> = None;
        for (k, s) in scans.into_iter().enumerate() {
            if !s.in_order {
                return Ok(None);
            }
            header = header.or(s.header);
            if let Some((first, dir)) = s.first {
                if last.is_some_and(|l| first <= l) {
                    return Ok(None);
                }
                if last.is_none() && (first != ROOT_ID || !dir) {
                    let at = self
                        .inode_pieces
                        .get(k)
                        .map_or_else(|| at0.clone(), |p| p.1.clone());
                    return Err(self
                        .f
                        .corrupt(at, nsimage_namespace::BuildError::NoRoot.to_string()));
                }
            }
            if s.last.is_some() {
                last = s.last;
            }
            out.inodes = out.inodes.saturating_add(s.records);
            let base = out.names.len();
            out.names.extend_from_slice(&s.names);
            out.dirs.extend(
                s.dirs
                    .iter()
                    .map(|&(id, a, n)| (id, base.saturating_add(a), n)),
            );
            out.name_hashes.push((s.chunks.len(), s.name_hashes));
            out.chunks.extend(s.chunks);
            found.extend(s.under_construction);
        }
        out.last_id = last.unwrap_or(0);
        let header = header.ok_or_else(|| {
            self.f
                .corrupt(at0.clone(), "the INODE section has no header".into())
        })?;
        if out.inodes != header.num_inodes {
            return Err(self.f.corrupt(
                at0,
                format!(
                    "{} inode records, the header declares {}",
                    out.inodes, header.num_inodes
                ),
            ));
        }
        if out.inodes == 0 {
            return Err(self
                .f
                .corrupt(at0, nsimage_namespace::BuildError::NoRoot.to_string()));
        }
        found.sort_unstable();
        found.dedup();
        if let Some(&id) = uc.iter().find(|id| found.binary_search(id).is_err()) {
            return Err(self.bad_under_construction(id, "which INODE does not hold"));
        }
        out.names.shrink_to_fit();
        Ok(Some(out))
    }

    /// The error for file under construction `id` that INODE does not
    /// hold as a file (`what`: what it is instead), as the load words it.
    fn bad_under_construction(&self, id: u64, what: &str) -> LoadError {
        let named = self
            .img
            .files_under_construction
            .iter()
            .find(|u| u.0 == id)
            .map(|u| shown(&u.1))
            .unwrap_or_default();
        self.f.corrupt(
            section_at(&self.f, HdfsSection::FilesUnderConstruction),
            format!("a file under construction ({named}) names inode {id}, {what}"),
        )
    }

    /// Calls `g` with each INODE_DIR entry that lists children (its
    /// parent, its children, where it is), in file order on this thread.
    /// An entry with an empty list is skipped, as the load skips it.
    ///
    /// # Errors
    /// A located [`LoadError::Corrupt`] for an entry the load refuses
    /// (`refChildren` too: an image without references has none), or
    /// `g`'s.
    pub(crate) fn each_dir_entry(
        &self,
        mut g: impl FnMut(u64, &[u64], Location) -> Result<(), LoadError>,
    ) -> Result<(), LoadError> {
        let mut buf = ChunkBuf::default();
        let mut kids = Vec::new();
        for (p, at) in &self.dir_pieces {
            self.walk(p, at, &mut buf, |pos, _, body| {
                kids.clear();
                let parent = dir_entry(body, &[], &mut kids)
                    .map_err(|why| self.corrupt_at(at, pos, format!("directory record: {why}")))?;
                if !kids.is_empty() {
                    g(parent, &kids, record_at(&self.f, at, pos).0)?;
                }
                Ok(true)
            })?;
        }
        Ok(())
    }

    /// Decodes chunk `i` (`p`, `at`: as [`scan`](Self::scan) cut it) with
    /// the load's decoder as its records come out of the file, giving
    /// `visit` each inode and where its record is; returns what the block
    /// rules need of the chunk (the records of a compressed piece, one
    /// chunk however large, go to the rules a batch of about [`CHUNK`]
    /// bytes at a time: nothing of the chunk is held whole).
    ///
    /// # Errors
    /// What the load refuses in a record, a count other than the scan's,
    /// or `visit`'s.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn visit_chunk(
        &self,
        i: usize,
        p: &SubSectionInfo,
        at: &Location,
        buf: &mut ChunkBuf,
        tables: &Interned,
        blocks: &mut Vec<Block>,
        mut visit: impl FnMut(&LoadedNode<'_>, &Location) -> Result<(), LoadError>,
    ) -> Result<BlockRules, LoadError> {
        let mut recs = self
            .f
            .records(p.offset, p.length, at, "piece", &mut buf.window);
        // A compressed image's first chunk is its first piece: the header
        // first.
        if i == 0 && self.f.summary.codec != Codec::None {
            let _ = recs.next()?;
        }
        let chunk = u32::try_from(i).unwrap_or(u32::MAX);
        let size = usize::try_from(p.length.min(CHUNK)).unwrap_or(0);
        let mut batch = InodeBatch::with_buffer(chunk, Vec::new(), size);
        let mut rules = BlockRules::default();
        let (mut n, mut held) = (0u64, 0u64);
        while let Some((pos, body)) = inode_rec(&self.f, at, recs.next()?)? {
            held = held.saturating_add(body.len() as u64);
            let mut notes = RecordNotes::default();
            let node = decode_inode(body, &self.ids, blocks, &mut notes)
                .map_err(|e| self.corrupt_at(at, pos, format!("inode record: {}", e.text())))?;
            if notes.striped {
                self.striped.store(true, Ordering::Relaxed);
            }
            let (here, _) = record_at(&self.f, at, pos);
            visit(&node, &here)?;
            batch
                .push(node, tables)
                .map_err(|d| self.corrupt_at(at, pos, d))?;
            n = n.saturating_add(1);
            if held >= CHUNK {
                // The ids of the next batch follow this one's (the scan
                // found them in order).
                let (parts, nodes) = batch.into_parts_and_buffer();
                rules.add(parts);
                batch = InodeBatch::with_buffer(chunk, nodes, size);
                held = 0;
            }
        }
        rules.add(batch.into_parts());
        if n != p.records {
            return Err(self.f.corrupt(
                at.clone(),
                format!(
                    "{n} inode records where the first read found {}: the file changed",
                    p.records
                ),
            ));
        }
        Ok(rules)
    }

    /// Appends the block ids of chunk `i`'s files to `ids`.
    ///
    /// # Errors
    /// As [`visit_chunk`](Self::visit_chunk).
    pub(crate) fn block_ids(
        &self,
        i: usize,
        p: &SubSectionInfo,
        at: &Location,
        buf: &mut ChunkBuf,
        ids: &mut Vec<u64>,
    ) -> Result<(), LoadError> {
        let mut recs = self
            .f
            .records(p.offset, p.length, at, "piece", &mut buf.window);
        if i == 0 && self.f.summary.codec != Codec::None {
            let _ = recs.next()?;
        }
        let mut blocks = Vec::new();
        while let Some((pos, body)) = inode_rec(&self.f, at, recs.next()?)? {
            let mut notes = RecordNotes::default();
            decode_inode(body, &self.ids, &mut blocks, &mut notes)
                .map_err(|e| self.corrupt_at(at, pos, format!("inode record: {}", e.text())))?;
            ids.extend(blocks.iter().map(|b| b.id));
        }
        Ok(())
    }

    /// The `.md5` sidecar's verdict, once every byte is read (a second
    /// call has nothing left to check).
    ///
    /// # Errors
    /// A digest that is not the sidecar's, or the hashing's I/O error.
    pub(crate) fn finish(&self) -> Result<(), LoadError> {
        match self.md5.lock().take() {
            Some(c) => c.finish(self.f.path()).map(|_| ()),
            None => Ok(()),
        }
    }

    /// Stops the `.md5` sidecar's check unfinished (the image is not
    /// streamed after all).
    pub(crate) fn abandon(&self) {
        if let Some(c) = self.md5.lock().take() {
            c.abandon();
        }
    }

    /// A corrupt-image error at `at`, for the skeleton's checks.
    pub(crate) fn corrupt(&self, at: Location, detail: String) -> LoadError {
        self.f.corrupt(at, detail)
    }

    /// Where an error about INODE_DIR as a whole points.
    pub(crate) fn dir_section_at(&self) -> Location {
        self.dir_pieces.first().map_or_else(
            || Location::in_section(HdfsSection::InodeDir.kind(), None, 0),
            |p| p.1.clone(),
        )
    }
}
