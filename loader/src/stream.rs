//! The streaming baseline: what a loader without sub-sections does. One
//! buffered reader goes through each section record by record: read the
//! varint length a byte at a time, read the body, decode it with prost into
//! a fresh message. It builds the same namespace through the same builder,
//! so the bench compares reading and decoding strategies, nothing else.

use crate::decode::{self, bad, check_piece, loaded_from_pb};
use crate::load::{corrupt, section};
use crate::source::ImageSource;
use crate::Assembly;
use crate::LoadError;
use nsimage_format::consts::MAX_RECORD_LENGTH;
use nsimage_format::model::InodeBatch;
use nsimage_format::{pb, Location, Namespace, SectionInfo, SectionKind, SubSectionInfo};
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
        self.calls += 1;
        let n = (&*self.file).read(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
}

/// Streams one section's records, calling `f(offset, body)` for each.
fn stream_section(
    src: &ImageSource,
    sec: &SectionInfo,
    mut f: impl FnMut(u64, &[u8]) -> Result<(), LoadError>,
) -> Result<(), LoadError> {
    let io = |source| LoadError::Io {
        path: src.path().to_path_buf(),
        source,
    };
    let at = Location::in_section(sec.kind, None, sec.offset);
    let mut file = src.file();
    file.seek(SeekFrom::Start(sec.offset)).map_err(io)?;
    let mut counting = Counting {
        file,
        calls: 0,
        bytes: 0,
    };
    let mut rd = BufReader::with_capacity(64 << 10, &mut counting);
    let mut hash = Xxh3::new();
    let mut pos = sec.offset;
    let end = sec.end();
    while pos < end {
        // The varint length, one byte at a time.
        let mut len: u64 = 0;
        let mut width = 0;
        loop {
            let mut b = [0u8; 1];
            rd.read_exact(&mut b).map_err(io)?;
            hash.update(&b);
            len |= ((b[0] & 0x7f) as u64) << (7 * width);
            width += 1;
            if b[0] & 0x80 == 0 {
                break;
            }
            if width == 10 {
                return Err(LoadError::from_format(
                    src.path(),
                    bad(&at, pos, "bad record length prefix"),
                ));
            }
        }
        let left = end - pos - width as u64;
        if len > left || len > MAX_RECORD_LENGTH {
            return Err(LoadError::from_format(
                src.path(),
                bad(
                    &at,
                    pos,
                    format!(
                        "record length {len} runs past the end of its region ({left} bytes left)"
                    ),
                ),
            ));
        }
        // A fresh buffer per record, as a message-at-a-time parser has.
        let mut body = vec![0u8; len as usize];
        rd.read_exact(&mut body).map_err(io)?;
        hash.update(&body);
        f(pos, &body)?;
        pos += width as u64 + len;
    }
    drop(rd);
    src.count_reads(counting.calls, counting.bytes);
    let sum = hash.digest();
    if sum != sec.checksum {
        return Err(corrupt(
            src,
            at,
            format!(
                "section checksum mismatch (stored {:016x}, computed {sum:016x})",
                sec.checksum
            ),
        ));
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
    };
    (p, Location::in_section(sec.kind, None, sec.offset))
}

pub fn load_stream(src: &ImageSource) -> Result<Namespace, LoadError> {
    let fmt = |e| LoadError::from_format(src.path(), e);
    let mut small = Vec::new();
    for kind in [SectionKind::NS_INFO, SectionKind::STRING_TABLE] {
        let sec = section(src, kind)?;
        let mut bytes = Vec::new();
        stream_section(src, sec, |_, body| {
            prost::encoding::encode_varint(body.len() as u64, &mut bytes);
            bytes.extend_from_slice(body);
            Ok(())
        })?;
        small.push((whole(sec), bytes));
    }
    let info = decode::ns_info(&small[0].1, &small[0].0 .0, &small[0].0 .1).map_err(fmt)?;
    let strings = decode::strings(&small[1].1, &small[1].0 .0, &small[1].0 .1).map_err(fmt)?;

    let sec = section(src, SectionKind::INODE)?;
    let (piece, at) = whole(sec);
    let mut batch = InodeBatch::new(0, (sec.records as usize).min(sec.length as usize), 0);
    let mut blocks = Vec::new();
    let mut first = None;
    stream_section(src, sec, |off, body| {
        let msg = pb::Inode::decode(body)
            .map_err(|e| fmt(bad(&at, off, format!("undecodable record: {e}"))))?;
        first.get_or_insert(msg.id);
        let node = loaded_from_pb(&msg, &mut blocks).map_err(|d| fmt(bad(&at, off, d)))?;
        batch
            .push(node, &strings)
            .map_err(|d| fmt(bad(&at, off, d)))
    })?;
    check_piece(&piece, &at, batch.len() as u64, first).map_err(fmt)?;
    let mut asm = Assembly::new(info, strings, batch).map_err(|d| corrupt(src, at.clone(), d))?;

    let sec = section(src, SectionKind::INODE_DIR)?;
    let (piece, at) = whole(sec);
    let mut n = 0;
    stream_section(src, sec, |off, body| {
        let msg = pb::DirEntry::decode(body)
            .map_err(|e| fmt(bad(&at, off, format!("undecodable record: {e}"))))?;
        n += 1;
        asm.dir(msg.parent, msg.children.iter().copied())
            .map_err(|d| fmt(bad(&at, off, d)))
    })?;
    check_piece(&piece, &at, n, None).map_err(fmt)?;
    asm.finish().map_err(|d| corrupt(src, at, d))
}
