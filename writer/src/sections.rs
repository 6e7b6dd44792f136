//! The machinery every image write goes through: the output stream with
//! its running checksums and pieces at rest ([`Sink`]), a section cut into
//! record-aligned sub-sections by a byte target ([`SectionOut`]), and the
//! index and footer that end an image.

use crate::at_rest::Transform;
use crate::encode::Encoded;
use nsimage_format::cipher::PiecePlace;
use nsimage_format::consts::name_index;
use nsimage_format::{Footer, Header, Index, SectionInfo, SectionKind, SubSectionInfo};
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
pub(crate) struct Sink<W: Write> {
    out: W,
    pub(crate) pos: u64,
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
    /// A sink at the start of `out`, transforming pieces as `at_rest` says.
    pub(crate) fn new(out: W, at_rest: &crate::AtRestOptions) -> Self {
        Sink {
            out,
            pos: 0,
            section: Xxh3::new(),
            sub: Xxh3::new(),
            transform: Transform::new(at_rest),
            plain: Vec::new(),
        }
    }

    /// Section bytes: written, or gathered for the piece's transform.
    fn write(&mut self, b: &[u8]) -> io::Result<()> {
        if self.transform.is_some() {
            self.plain.extend_from_slice(b);
            return Ok(());
        }
        self.raw(b)
    }

    /// Bytes written as they are.
    pub(crate) fn raw(&mut self, b: &[u8]) -> io::Result<()> {
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
pub(crate) struct SectionOut {
    pub(crate) info: SectionInfo,
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
    pub(crate) fn begin<W: Write>(
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
    pub(crate) fn begin_names<W: Write>(
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
    pub(crate) fn put<W: Write>(&mut self, sink: &mut Sink<W>, enc: &Encoded) -> io::Result<()> {
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

    pub(crate) fn end<W: Write>(mut self, sink: &mut Sink<W>) -> io::Result<SectionInfo> {
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

/// The index of `sections`, checked by the reader's own rules, then the
/// footer; the writer flushed.
pub(crate) fn write_index<W: Write>(
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
