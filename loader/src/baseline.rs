//! The streaming baseline: what a loader without sub-sections does. One
//! buffered reader goes through each section record by record: read the
//! varint length a byte at a time, read the body, decode it with prost into
//! a fresh message. It builds the same namespace through the same builder,
//! so the bench compares reading and decoding strategies, nothing else.
//! It applies every rule the indexed readers apply, so that both give the
//! same verdict on every file: the wire rules (`wire::check`, which prost
//! alone does not enforce), and each sub-section's bounds, record count,
//! first key and checksum as the stream passes it.

#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use crate::assemble::Assembly;
use crate::decode::{self, bad, check_piece, loaded_from_pb};
use crate::error::LoadError;
use crate::sections::{check_unknown, corrupt, pieces, section};
use crate::source::ImageSource;
use nsimage_format::framing::{put_frame, Records};
use nsimage_format::wire::{self, schema, FrameReader, Ty};
use nsimage_format::{pb, FormatError, Location, SectionInfo, SectionKind, SubSectionInfo};
use nsimage_namespace::{Interned, Namespace};
use prost::Message;
use std::io::{BufReader, Read, Seek, SeekFrom};
use xxhash_rust::xxh3::Xxh3;

/// Counts read calls that reach the file.
struct Counting<'a> {
    file: &'a std::fs::File,
    calls: u64,
    bytes: u64,
}

impl Read for Counting<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.calls = self.calls.saturating_add(1);
        let n = (&*self.file).read(buf)?;
        self.bytes = self.bytes.saturating_add(n as u64);
        Ok(n)
    }
}

/// Streams one section's records, calling `f(offset, location, body)` for
/// each; `f` returns the record's key (INODE id, INODE_DIR parent) or
/// `None`. Records are read in file order, but counted, keyed and
/// checksummed per piece (sub-section), with the same rules as the indexed
/// readers: no record may cross a sub-section's end, and each sub-section's
/// checksum, record count and first key must match the index.
fn stream_section(
    src: &ImageSource,
    sec: &SectionInfo,
    mut f: impl FnMut(u64, &Location, &[u8]) -> Result<Option<u64>, LoadError>,
) -> Result<(), LoadError> {
    let io = |source| LoadError::Io {
        path: src.path().to_path_buf(),
        source,
    };
    let fmt = |e| LoadError::from_format(src.path(), e);
    if sec.pieces().iter().any(|p| !p.at_rest.is_plain()) {
        // Compressed or encrypted pieces cannot be framed from the byte
        // stream: each is read whole, opened, and its records walked.
        return section_in_pieces(src, sec, f);
    }
    let mut file = src.file();
    file.seek(SeekFrom::Start(sec.offset)).map_err(io)?;
    let mut counting = Counting {
        file,
        calls: 0,
        bytes: 0,
    };
    let mut rd = BufReader::with_capacity(64 << 10, &mut counting);
    let split = !sec.sub_sections.is_empty();
    for (piece, at) in pieces(sec) {
        // Each sub-section's checksum, or the section's when it is not
        // split (FORMAT.md, "Checksum coverage": the sub-sections' decide).
        let mut hash = Xxh3::new();
        // Validated by the index: sub-sections lie inside their section.
        let end = piece.offset.checked_add(piece.length).ok_or_else(|| {
            fmt(bad(
                &at,
                piece.offset,
                "piece runs past the end of the file",
            ))
        })?;
        let mut records: u64 = 0;
        let mut first = None;
        // The varint length a byte at a time, never past the piece, then
        // the body.
        let mut frames = FrameReader::new(&mut rd, piece.offset).with_end(end);
        loop {
            // A fresh buffer per record, as a message-at-a-time parser has.
            let mut body = Vec::new();
            let pos = match frames.read_frame(&mut body) {
                Ok(Some(pos)) => pos,
                Ok(None) => break,
                Err(FormatError::Io { source, .. }) => return Err(io(source)),
                // The piece lies inside the file (checked against the
                // index): the file was cut while being read.
                Err(FormatError::Truncated { .. }) => {
                    return Err(io(std::io::ErrorKind::UnexpectedEof.into()))
                }
                // Located within the piece: its section and sub-section.
                Err(FormatError::Corrupt { at: frame, detail }) => {
                    return Err(fmt(bad(&at, frame.offset, detail)))
                }
                Err(e) => return Err(fmt(e)),
            };
            hash.update(frames.prefix());
            hash.update(&body);
            let key = f(pos, &at, &body)?;
            if first.is_none() {
                first = Some(key);
            }
            records = records.saturating_add(1);
        }
        let sum = hash.digest();
        if sum != piece.checksum {
            let what = if split { "sub-section" } else { "section" };
            return Err(corrupt(
                src,
                at,
                format!(
                    "{what} checksum mismatch (stored {:016x}, computed {sum:016x})",
                    piece.checksum
                ),
            ));
        }
        check_piece(&piece, &at, records, first.flatten()).map_err(fmt)?;
    }
    drop(rd);
    src.count_reads(counting.calls, counting.bytes);
    Ok(())
}

/// [`stream_section`] for a section whose pieces are stored compressed or
/// encrypted: each piece read whole and opened, then its records in order,
/// with the same checks (records within the piece, count, first key).
fn section_in_pieces(
    src: &ImageSource,
    sec: &SectionInfo,
    mut f: impl FnMut(u64, &Location, &[u8]) -> Result<Option<u64>, LoadError>,
) -> Result<(), LoadError> {
    let fmt = |e| LoadError::from_format(src.path(), e);
    let mut buf = crate::source::PieceBuf::default();
    for (piece, at) in pieces(sec) {
        let bytes = src.piece(&piece, &at, &mut buf)?;
        let mut records: u64 = 0;
        let mut first = None;
        for r in Records::new(bytes, at.clone()) {
            let (pos, body) = r.map_err(fmt)?;
            let key = f(pos, &at, body)?;
            if first.is_none() {
                first = Some(key);
            }
            records = records.saturating_add(1);
        }
        check_piece(&piece, &at, records, first.flatten()).map_err(fmt)?;
    }
    Ok(())
}

fn whole(sec: &SectionInfo) -> (SubSectionInfo, Location) {
    let p = SubSectionInfo {
        offset: sec.offset,
        length: sec.length,
        records: sec.records,
        first_key: 0,
        checksum: sec.checksum,
        at_rest: sec.at_rest.clone(),
    };
    (p, Location::in_section(sec.kind, None, sec.offset))
}

/// Checks a record against the wire rules, then decodes it with prost.
fn decode_pb<M: Message + Default>(
    schema: &[(u32, Ty)],
    body: &[u8],
    at: &Location,
    off: u64,
) -> Result<M, FormatError> {
    wire::check(body, schema).map_err(|e| bad(at, off, format!("undecodable record: {e}")))?;
    M::decode(body).map_err(|e| bad(at, off, format!("undecodable record: {e}")))
}

/// Loads the namespace of `src` with the streaming baseline.
pub(crate) fn load_stream(src: &ImageSource) -> Result<Namespace, LoadError> {
    let fmt = |e| LoadError::from_format(src.path(), e);
    let mut small = Vec::new();
    for kind in [SectionKind::NS_INFO, SectionKind::STRING_TABLE] {
        let sec = section(src, kind)?;
        let mut bytes = Vec::new();
        stream_section(src, sec, |_, _, body| {
            put_frame(&mut bytes, body);
            Ok(None)
        })?;
        small.push((whole(sec), bytes));
    }
    let info = decode::ns_info(&small[0].1, &small[0].0 .0, &small[0].0 .1).map_err(fmt)?;
    let strings = decode::strings(&small[1].1, &small[1].0 .0, &small[1].0 .1).map_err(fmt)?;
    let tables = Interned::new(strings);

    let sec = section(src, SectionKind::INODE)?;
    let (_, at) = whole(sec);
    let mut batch = Assembly::batch();
    let mut blocks = Vec::new();
    stream_section(src, sec, |off, at, body| {
        let msg: pb::Inode = decode_pb(schema::INODE, body, at, off).map_err(fmt)?;
        let node = loaded_from_pb(&msg, &mut blocks).map_err(|d| fmt(bad(at, off, d)))?;
        if batch.is_empty() {
            decode::check_root(node.id, at, off).map_err(fmt)?;
        }
        batch
            .push(node, &tables)
            .map_err(|d| fmt(bad(at, off, d)))?;
        Ok(Some(msg.id))
    })?;
    let mut asm = Assembly::new(info, tables, batch).map_err(|d| corrupt(src, at.clone(), d))?;
    // Between INODE and INODE_DIR, as on the indexed path, so that both
    // name the same place first in an image damaged in several.
    check_unknown(src, None)?;

    let sec = section(src, SectionKind::INODE_DIR)?;
    let (_, at) = whole(sec);
    stream_section(src, sec, |off, at, body| {
        let msg: pb::DirEntry = decode_pb(schema::DIR_ENTRY, body, at, off).map_err(fmt)?;
        asm.dir(msg.parent, msg.children.iter().copied())
            .map_err(|d| fmt(bad(at, off, d)))?;
        Ok(Some(msg.parent))
    })?;
    asm.finish().map_err(|d| corrupt(src, at, d))
}
