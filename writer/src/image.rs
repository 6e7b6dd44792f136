//! Section layout and the image stream: header, sections (with sub-sections
//! cut by bytes on record boundaries), index, footer. Checksums are computed
//! as the bytes go out.

use crate::at_rest::Transform;
use crate::encode::{self, Encoded, Size};
use crate::options::WriteOptions;
use crate::strings::StringMap;
use nsimage_format::cipher::PiecePlace;
use nsimage_format::consts::{header, name_index};
use nsimage_format::hdfs::SnapshotCarry;
use nsimage_format::{pb, Footer, Header, Index, SectionInfo, SectionKind, SubSectionInfo};
use nsimage_namespace::{Namespace, Slot};
use prost::Message as _;
use std::io::{self, Write};
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

/// Sub-sections a large section is cut into at least, so that one image
/// balances on anything from 2 to 64 threads.
const MIN_PIECES: u64 = 64;
/// Sub-sections are not made smaller than this to reach `MIN_PIECES`
/// (an explicitly smaller `sub_section_bytes` still applies).
const MIN_SUB_SECTION_BYTES: u64 = 64 << 10;

/// What a write produced.
#[derive(Clone, Debug)]
pub struct ImageSummary {
    /// Total bytes of the image.
    pub bytes: u64,
    /// The index written at its end.
    pub index: Index,
}

/// The output stream with the running section and sub-section checksums.
/// With pieces at rest transformed (compressed, encrypted), a piece's
/// plain bytes are gathered and written transformed when it ends.
struct Sink<W: Write> {
    out: W,
    pos: u64,
    section: Xxh3,
    sub: Xxh3,
    transform: Option<Transform>,
    /// The open piece's plain bytes (with a transform only).
    plain: Vec<u8>,
}

/// Where a transformed piece went and how it is stored.
struct Stored {
    offset: u64,
    length: u64,
    checksum: u64,
    at_rest: nsimage_format::AtRest,
}

impl<W: Write> Sink<W> {
    /// Section bytes: written, or gathered for the piece's transform.
    fn write(&mut self, b: &[u8]) -> io::Result<()> {
        if self.transform.is_some() {
            self.plain.extend_from_slice(b);
            return Ok(());
        }
        self.raw(b)
    }

    /// Bytes written as they are.
    fn raw(&mut self, b: &[u8]) -> io::Result<()> {
        self.out.write_all(b)?;
        self.section.update(b);
        self.sub.update(b);
        self.pos += b.len() as u64;
        Ok(())
    }

    /// Ends the open piece: with a transform, its gathered plain bytes are
    /// compressed and sealed for `place` (kind, section and piece
    /// positions) and written; `None` without one.
    fn end_piece(&mut self, place: PiecePlace, records: u64) -> io::Result<Option<Stored>> {
        let Some(mut t) = self.transform.take() else {
            return Ok(None);
        };
        let offset = self.pos;
        let at_rest = t.piece(&self.plain, records, PiecePlace { offset, ..place });
        self.plain.clear();
        let r = self.raw(&t.out);
        let stored = Stored {
            offset,
            length: t.out.len() as u64,
            checksum: xxh3_64(&t.out),
            at_rest,
        };
        self.transform = Some(t);
        r.map(|()| Some(stored))
    }
}

/// A section being written.
struct SectionOut {
    info: SectionInfo,
    /// Its position in the index.
    position: u32,
    split: bool,
    target: u64,
    /// The sub-section being filled.
    open: Option<SubSectionInfo>,
    /// NAME_INDEX only: the parent of the open sub-section's first record
    /// and its `seq` (FORMAT.md, "NAME_INDEX"), for its first keys.
    name_keys: Option<(u64, u64)>,
}

impl SectionOut {
    fn begin<W: Write>(
        sink: &mut Sink<W>,
        sections: &[SectionInfo],
        kind: SectionKind,
        split: bool,
        target: u64,
    ) -> Self {
        sink.section.reset();
        SectionOut {
            info: SectionInfo {
                kind,
                optional: false,
                offset: sink.pos,
                length: 0,
                records: 0,
                checksum: 0,
                sub_sections: Vec::new(),
                at_rest: nsimage_format::AtRest::default(),
            },
            position: u32::try_from(sections.len()).unwrap_or(u32::MAX),
            split,
            target: target.max(1),
            open: None,
            name_keys: None,
        }
    }

    /// A NAME_INDEX section: optional, first keys `parent << 20 | seq`.
    fn begin_names<W: Write>(
        sink: &mut Sink<W>,
        sections: &[SectionInfo],
        kind: SectionKind,
        target: u64,
    ) -> Self {
        let mut sec = Self::begin(sink, sections, kind, true, target);
        sec.info.optional = true;
        sec.name_keys = Some((u64::MAX, 0));
        sec
    }

    /// The first key of a sub-section starting with a record keyed `key`,
    /// and whether it may start here at all (NAME_INDEX: not a 2^20-th
    /// sub-section of one parent; the open one grows instead).
    fn first_key(&self, key: u64) -> Option<u64> {
        match self.name_keys {
            None => Some(key),
            Some((parent, seq)) if parent == key => name_index::key(key, seq.checked_add(1)?),
            Some(_) => name_index::key(key, 0),
        }
    }

    /// Writes encoded records. A record that would take the open
    /// sub-section past the target starts the next one, so no sub-section
    /// exceeds the target unless it holds a single record.
    fn put<W: Write>(&mut self, sink: &mut Sink<W>, enc: &Encoded) -> io::Result<()> {
        let mut written = 0usize;
        let mut cursor = 0usize;
        for &(key, len) in &enc.records {
            let len64 = u64::from(len);
            if self.split {
                let full = self
                    .open
                    .as_ref()
                    .is_some_and(|sub| sub.length + len64 > self.target)
                    && (self.name_keys.is_none() || self.first_key(key).is_some());
                if full {
                    sink.write(&enc.bytes[written..cursor])?;
                    written = cursor;
                    self.close_sub(sink)?;
                }
                if self.open.is_none() {
                    sink.sub.reset();
                    // Only NAME_INDEX keys can fail to fit, and the writer
                    // checks every parent id fits before writing it.
                    let first_key = self.first_key(key).unwrap_or(key);
                    if let Some(k) = &mut self.name_keys {
                        *k = (key, name_index::seq(first_key));
                    }
                    self.open = Some(SubSectionInfo {
                        offset: sink.pos + (cursor - written) as u64,
                        length: 0,
                        records: 0,
                        first_key,
                        checksum: 0,
                        at_rest: nsimage_format::AtRest::default(),
                    });
                }
            }
            cursor += len as usize;
            self.info.records += 1;
            if let Some(sub) = &mut self.open {
                sub.records += 1;
                sub.length += len64;
            }
        }
        sink.write(&enc.bytes[written..])
    }

    /// Where the piece numbered `piece` of this section is bound to.
    fn place(&self, piece: usize) -> PiecePlace {
        PiecePlace {
            kind: self.info.kind.0,
            section: self.position,
            piece: u32::try_from(piece).unwrap_or(u32::MAX),
            offset: 0,
            raw_length: 0,
            codec: 0,
        }
    }

    fn close_sub<W: Write>(&mut self, sink: &mut Sink<W>) -> io::Result<()> {
        if let Some(mut sub) = self.open.take() {
            let place = self.place(self.info.sub_sections.len());
            match sink.end_piece(place, sub.records)? {
                Some(st) => {
                    sub.offset = st.offset;
                    sub.length = st.length;
                    sub.checksum = st.checksum;
                    sub.at_rest = st.at_rest;
                }
                None => sub.checksum = sink.sub.digest(),
            }
            self.info.sub_sections.push(sub);
        }
        Ok(())
    }

    fn end<W: Write>(mut self, sink: &mut Sink<W>) -> io::Result<SectionInfo> {
        self.close_sub(sink)?;
        if self.info.sub_sections.is_empty() {
            // Unsplit: the section is its one piece.
            if let Some(st) = sink.end_piece(self.place(0), self.info.records)? {
                self.info.at_rest = st.at_rest;
            }
        } else if self.info.sub_sections.len() == 1 {
            // One piece is the whole section: no sub-sections to list (its
            // piece position, 0, is the same either way).
            if let Some(sub) = self.info.sub_sections.pop() {
                self.info.at_rest = sub.at_rest;
            }
        } else if self.info.sub_sections.iter().any(|u| !u.at_rest.is_plain()) {
            self.info.at_rest.raw_length = self
                .info
                .sub_sections
                .iter()
                .map(SubSectionInfo::plain_length)
                .sum();
        }
        self.info.length = sink.pos - self.info.offset;
        self.info.checksum = sink.section.digest();
        Ok(self.info)
    }
}

/// The target size of the sub-sections of a section of `section_bytes`
/// bytes (FORMAT.md, "Sub-sections"): a 64th of the section, at least
/// 64 KiB and at most `max` (the floor is lowered to `max` when `max` is
/// smaller).
pub fn sub_section_target(section_bytes: u64, max: u64) -> u64 {
    let max = max.max(1);
    (section_bytes / MIN_PIECES)
        .max(MIN_SUB_SECTION_BYTES.min(max))
        .min(max)
}

/// The slot ranges encoded by one parallel task each.
fn batches(ns: &Namespace, opts: &WriteOptions) -> Vec<std::ops::Range<Slot>> {
    let n = ns.slot_count();
    let batch = u32::try_from(opts.batch_inodes.max(1)).unwrap_or(u32::MAX);
    (0..n.div_ceil(batch))
        .map(|b| b * batch..b.saturating_add(1).saturating_mul(batch).min(n))
        .collect()
}

/// Measures a section before it is written, in parallel over `ranges`.
fn measure(
    ranges: &[std::ops::Range<Slot>],
    size: impl Fn(std::ops::Range<Slot>) -> Size + Sync,
) -> Size {
    use rayon::prelude::*;
    ranges
        .par_iter()
        .map(|r| size(r.clone()))
        .reduce(Size::default, |a, b| a + b)
}

/// Writes a section whose records are produced by `encode` over slot ranges,
/// encoding the next window of batches while the current one is written.
fn write_batched<W: Write + Send>(
    sink: &mut Sink<W>,
    sec: &mut SectionOut,
    ranges: &[std::ops::Range<Slot>],
    encode: impl Fn(std::ops::Range<Slot>) -> Encoded + Sync,
) -> io::Result<()> {
    use rayon::prelude::*;
    let window = 4 * rayon::current_num_threads().max(1);
    let encode_window = |w: &[std::ops::Range<Slot>]| -> Vec<Encoded> {
        w.par_iter().map(|r| encode(r.clone())).collect()
    };
    let mut chunks = ranges.chunks(window);
    let mut ready = chunks.next().map(encode_window).unwrap_or_default();
    loop {
        let next = chunks.next();
        let (written, upcoming) = rayon::join(
            || -> io::Result<()> {
                for e in &ready {
                    sec.put(sink, e)?;
                }
                Ok(())
            },
            || next.map(encode_window),
        );
        written?;
        match upcoming {
            Some(u) => ready = u,
            None => return Ok(()),
        }
    }
}

/// The target of a section cut by `plan` (measured size, target), or none.
fn plan_target(plan: Option<(Size, u64)>) -> u64 {
    plan.map_or(u64::MAX, |(_, t)| t)
}

/// A section as written; in debug builds, checked against its measure.
fn check_plan(info: SectionInfo, plan: Option<(Size, u64)>) -> SectionInfo {
    if let Some((size, _)) = plan {
        debug_assert_eq!(
            (info.records, info.plain_length()),
            (size.records, size.bytes)
        );
    }
    info
}

/// Writes `ns` as an image to `out` and returns its index and size.
pub fn write_image<W: Write + Send>(
    ns: &Namespace,
    out: W,
    opts: &WriteOptions,
) -> io::Result<ImageSummary> {
    write_image_with_carry(ns, out, opts, None)
}

/// [`write_image`], with the snapshots of the Hadoop image `ns` came from
/// (`carry`, see [`SnapshotCarry`]) kept in the optional HDFS_SNAPSHOTS
/// section after INODE_DIR (FORMAT.md, "HDFS_SNAPSHOTS"), for a later
/// conversion back to Hadoop. With `None` it is `write_image`.
pub fn write_image_with_carry<W: Write + Send>(
    ns: &Namespace,
    out: W,
    opts: &WriteOptions,
    carry: Option<&SnapshotCarry>,
) -> io::Result<ImageSummary> {
    let mut sink = Sink {
        out,
        pos: 0,
        section: Xxh3::new(),
        sub: Xxh3::new(),
        transform: Transform::new(&opts.at_rest),
        plain: Vec::new(),
    };
    let head = Header {
        required_features: opts.at_rest.required_features(),
        ..Header::current()
    };
    sink.raw(&head.encode())?;
    debug_assert_eq!(sink.pos, header::SIZE as u64);
    let mut sections = Vec::new();

    let i = ns.info();
    let mut enc = Encoded::default();
    enc.put(0, &pb::NsInfo::from(i));
    let mut sec = SectionOut::begin(&mut sink, &sections, SectionKind::NS_INFO, false, 0);
    sec.put(&mut sink, &enc)?;
    sections.push(sec.end(&mut sink)?);

    // The canonical string table: only the strings live inodes use, sorted
    // by bytes; INODE records carry the ids it gives them. The same pass
    // counts the live inodes.
    let ranges = batches(ns, opts);
    let (strings, live) = StringMap::of(ns, &ranges);
    let mut enc = Encoded::default();
    let mut entry = pb::StringEntry::default();
    for (k, s) in strings.strings(ns).enumerate() {
        entry.value.clear();
        entry.value.extend_from_slice(s);
        enc.put(k as u64 + 1, &entry);
    }
    let mut sec = SectionOut::begin(&mut sink, &sections, SectionKind::STRING_TABLE, false, 0);
    sec.put(&mut sink, &enc)?;
    sections.push(sec.end(&mut sink)?);

    // The layout depends on the namespace alone: whether to cut on its
    // number of live inodes, the target on each section's exact size. The
    // sizes are measured only when the sections are cut; INODE_DIR's is
    // measured while INODE is written.
    let split = live >= opts.sub_section_min_inodes;
    let plan = |size: &(dyn Fn(std::ops::Range<Slot>) -> Size + Sync)| {
        split.then(|| {
            let size = measure(&ranges, size);
            (size, sub_section_target(size.bytes, opts.sub_section_bytes))
        })
    };
    let inode_plan = plan(&|r| encode::inode_size(ns, &strings, r));
    let mut sec = SectionOut::begin(
        &mut sink,
        &sections,
        SectionKind::INODE,
        split,
        plan_target(inode_plan),
    );
    let (written, dir_plan) = rayon::join(
        || {
            write_batched(&mut sink, &mut sec, &ranges, |r| {
                encode::inodes(ns, &strings, r)
            })
        },
        || plan(&|r| encode::dir_size(ns, r)),
    );
    written?;
    sections.push(check_plan(sec.end(&mut sink)?, inode_plan));
    // The optional one-path lookup index, NAME_RUNS (NAME_INDEX in older
    // images), between INODE and INODE_DIR so that INODE_DIR stays the
    // last section, when the image is cut into sub-sections (small images
    // are loaded whole anyway) and every id fits its first keys.
    if split && ns.info().last_inode_id <= name_index::MAX_PARENT {
        let target = name_index::TARGET_BYTES.min(opts.sub_section_bytes);
        let kind = if opts.legacy_name_index {
            SectionKind::NAME_INDEX
        } else {
            SectionKind::NAME_RUNS
        };
        let mut sec = SectionOut::begin_names(&mut sink, &sections, kind, target);
        write_batched(&mut sink, &mut sec, &ranges, |r| {
            if opts.legacy_name_index {
                encode::names(ns, r)
            } else {
                encode::name_runs(ns, r)
            }
        })?;
        sections.push(sec.end(&mut sink)?);
    }

    let mut sec = SectionOut::begin(
        &mut sink,
        &sections,
        SectionKind::INODE_DIR,
        split,
        plan_target(dir_plan),
    );
    write_batched(&mut sink, &mut sec, &ranges, |r| encode::dirs(ns, r))?;
    sections.push(check_plan(sec.end(&mut sink)?, dir_plan));

    if let Some(c) = carry {
        write_carry(&mut sink, &mut sections, c)?;
    }
    write_index(sink, sections, &head)
}

/// The optional HDFS_SNAPSHOTS section: the carry `c` as one record.
fn write_carry<W: Write>(
    sink: &mut Sink<W>,
    sections: &mut Vec<SectionInfo>,
    c: &SnapshotCarry,
) -> io::Result<()> {
    let len = c.encoded_len() as u64;
    if len > nsimage_format::consts::MAX_RECORD_LENGTH {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("the snapshot carry of {len} bytes does not fit one record"),
        ));
    }
    let mut enc = Encoded::default();
    enc.put(0, c);
    let mut sec = SectionOut::begin(sink, sections, SectionKind::HDFS_SNAPSHOTS, false, 0);
    sec.info.optional = true;
    sec.put(sink, &enc)?;
    sections.push(sec.end(sink)?);
    Ok(())
}

/// The index of `sections`, checked by the reader's own rules, then the
/// footer; the writer flushed.
fn write_index<W: Write>(
    mut sink: Sink<W>,
    sections: Vec<SectionInfo>,
    head: &Header,
) -> io::Result<ImageSummary> {
    let index = Index {
        sections,
        encryption: sink.transform.as_ref().and_then(Transform::encryption),
    };
    let bytes = index.encode();
    let index_offset = sink.pos;
    // The index goes through the reader's own checks (every rule a reader
    // applies from the index: record bounds, expansion, tiling, nonces,
    // features), so that a rule broken here fails the write instead of
    // making an image nsimage refuses. Per piece, not per record.
    Index::decode(&bytes, index_offset, xxh3_64(&bytes))
        .and_then(|i| i.check_features(head.required_features))
        .map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the image's index breaks a rule of its reader: {e}"),
            )
        })?;
    sink.raw(&bytes)?;
    let footer = Footer {
        index_offset,
        index_length: bytes.len() as u64,
        index_checksum: xxh3_64(&bytes),
        file_length: sink.pos + nsimage_format::consts::footer::SIZE as u64,
    };
    sink.raw(&footer.encode())?;
    sink.out.flush()?;
    Ok(ImageSummary {
        bytes: sink.pos,
        index,
    })
}
