//! The Hadoop image file: the magic, the summary from the tail, and each
//! region (section or sub-section) brought into memory with one positioned
//! read and, with a codec, inflated a chunk at a time with its records
//! checked as they come out: bounded by what a deflate stream of that many
//! bytes can expand to and by what the image's headers declare (see
//! `Rule`).

use crate::error::LoadError;
use crate::source::open_regular;
use flate2::read::{MultiGzDecoder, ZlibDecoder};
use nsimage_format::hdfs::{is_hdfs, Codec, HdfsSection, HdfsSummary, MAGIC};
use nsimage_format::hdfs_pb::{INodeSection, SnapshotSection, StringTableSection};
use nsimage_format::{FormatError, Location};
use prost::Message;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Bytes inflated at a time: the framing of what came out is checked
/// after each chunk, so a bomb is refused within one chunk of its first
/// bad record rather than after it has been inflated whole.
const CHUNK: usize = 256 << 10;

/// An open Hadoop image with its summary.
pub(crate) struct HdfsFile {
    path: PathBuf,
    file: File,
    /// The file's length in bytes.
    pub(crate) len: u64,
    /// The decoded, bounds-checked summary.
    pub(crate) summary: HdfsSummary,
    reads: AtomicU64,
    bytes: AtomicU64,
    /// What the image declares of its record counts (read on first use).
    declared: OnceLock<Declared>,
    /// The load's timeline, when a load reads this file.
    timeline: Option<std::sync::Arc<crate::trace::Timeline>>,
}

/// Record counts the image declares in section headers: the records a
/// compressed section may inflate to.
#[derive(Clone, Copy, Default)]
struct Declared {
    /// INODE's `numInodes` (its records, header excluded).
    inodes: Option<u64>,
    /// STRING_TABLE's `numEntry`.
    strings: Option<u64>,
    /// SNAPSHOT's `numSnapshots` (0 without the section).
    snapshots: u64,
}

/// Whether the file at `path` starts with Hadoop's magic (`HDFSIMG1`).
/// Like every reader, it opens regular files only (never blocking on a
/// FIFO): anything else is the I/O error the other readers give.
pub fn is_hdfs_file(path: &Path) -> Result<bool, LoadError> {
    let file = open_regular(path).map_err(|e| io(path, e))?;
    let mut head = [0u8; 8];
    let mut got = 0;
    while got < head.len() {
        match file.read_at(&mut head[got..], got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io(path, e)),
        }
    }
    Ok(is_hdfs(&head[..got]))
}

fn io(path: &Path, e: std::io::Error) -> LoadError {
    LoadError::Io {
        path: path.to_path_buf(),
        source: e,
    }
}

impl HdfsFile {
    /// Records this file's pieces in `timeline` from now on.
    pub(crate) fn set_timeline(&mut self, timeline: std::sync::Arc<crate::trace::Timeline>) {
        self.timeline = Some(timeline);
    }

    /// The load's timeline, if one is kept.
    pub(crate) fn timeline(&self) -> Option<&crate::trace::Timeline> {
        self.timeline.as_deref()
    }

    /// What the pieces of a step report to (the timeline; a Hadoop load
    /// has no prefetch thread).
    pub(crate) fn tracked(&self) -> crate::run::Tracked<'_> {
        crate::run::Tracked {
            progress: None,
            timeline: self.timeline(),
            quiet: false,
        }
    }

    /// Opens the image: checks the magic, reads and decodes the summary.
    pub(crate) fn open(path: &Path) -> Result<HdfsFile, LoadError> {
        let file = open_regular(path).map_err(|e| io(path, e))?;
        let len = file.metadata().map_err(|e| io(path, e))?.len();
        let mut f = HdfsFile {
            path: path.to_path_buf(),
            file,
            len,
            summary: HdfsSummary {
                ondisk_version: 0,
                layout_version: 0,
                codec: Codec::None,
                sections: Vec::new(),
                summary_offset: 0,
                summary_length: 0,
            },
            reads: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            declared: OnceLock::new(),
            timeline: None,
        };
        if len < MAGIC.len() as u64 {
            return Err(f.corrupt(
                Location::at(0),
                format!("{len} bytes: too short for a Hadoop image"),
            ));
        }
        let mut head = vec![0u8; MAGIC.len()];
        f.read_exact(0, &mut head, &Location::at(0))?;
        if !is_hdfs(&head) {
            return Err(f.corrupt(
                Location::at(0),
                "not a Hadoop image (no HDFSIMG1 magic)".into(),
            ));
        }
        let mut tail = [0u8; 4];
        let tail_at = len.saturating_sub(4);
        let loc = nsimage_format::hdfs::version::summary_at(tail_at);
        if len >= 12 {
            f.read_exact(tail_at, &mut tail, &loc)?;
        }
        let (off, slen) = HdfsSummary::locate(len, tail).map_err(|e| f.fmt(e))?;
        let mut buf = vec![0u8; usize::try_from(slen).unwrap_or(0)];
        f.read_exact(off, &mut buf, &loc)?;
        f.summary = HdfsSummary::decode(&buf, off, len).map_err(|e| f.fmt(e))?;
        Ok(f)
    }

    /// The image's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// A corruption at `at`.
    pub(crate) fn corrupt(&self, at: Location, detail: String) -> LoadError {
        LoadError::Corrupt {
            path: self.path.clone(),
            at,
            detail,
        }
    }

    /// A format error, naming the file.
    pub(crate) fn fmt(&self, e: FormatError) -> LoadError {
        LoadError::from_format(&self.path, e)
    }

    /// Read calls made (the open's included).
    pub(crate) fn read_calls(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// Bytes those calls read.
    pub(crate) fn bytes_read(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    pub(crate) fn read_exact(
        &self,
        offset: u64,
        buf: &mut [u8],
        at: &Location,
    ) -> Result<(), LoadError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(buf.len() as u64, Ordering::Relaxed);
        self.file.read_exact_at(buf, offset).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                self.corrupt(
                    at.clone(),
                    format!(
                        "the file ends inside {} bytes at offset {offset}",
                        buf.len()
                    ),
                )
            } else {
                io(&self.path, e)
            }
        })
    }

    /// The bytes of the region `[offset, offset + length)` (bounded by the
    /// summary's checks), inflated with the image's codec into `out`;
    /// `raw` is scratch for the compressed bytes. A region may hold several
    /// streams one after another (a section whose sub-sections are each
    /// their own stream); each is inflated in turn.
    pub(crate) fn region<'b>(
        &self,
        offset: u64,
        length: u64,
        at: &Location,
        raw: &mut Vec<u8>,
        out: &'b mut Vec<u8>,
    ) -> Result<&'b [u8], LoadError> {
        let n = usize::try_from(length).map_err(|_| {
            self.corrupt(at.clone(), format!("{length} bytes do not fit in memory"))
        })?;
        out.clear();
        let codec = self.summary.codec;
        if codec == Codec::None {
            out.resize(n, 0);
            self.read_exact(offset, out, at)?;
            return Ok(out);
        }
        raw.clear();
        raw.resize(n, 0);
        self.read_exact(offset, raw, at)?;
        let max = codec.max_output(length);
        let guard = Guard::new(self.rule(at));
        inflate(codec, raw, max, guard, out).map_err(|d| self.corrupt(at.clone(), d))?;
        Ok(out)
    }

    /// What the section at `at` may inflate to, from the counts the image
    /// declares (see [`Rule`]); no rule for a region outside a section.
    fn rule(&self, at: &Location) -> Rule {
        let d = self.declared.get_or_init(|| self.read_declared());
        let Some(kind) = at.section else {
            return Rule::default();
        };
        let is = |s: HdfsSection| kind == s.kind();
        // A count the image does not declare (a missing or undecodable
        // header) bounds at zero: such an image does not load anyway, and
        // nothing of it is inflated unbounded before that is found.
        let inodes = d.inodes.unwrap_or(0);
        let snaps = d.snapshots;
        // Hadoop keeps one reference per rename under a snapshot: at most
        // one per inode and snapshot, plus the current one.
        let refs = inodes.saturating_mul(snaps.saturating_add(1));
        let of_inodes = "the INODE header's numInodes";
        if is(HdfsSection::Inode) {
            Rule::headed(d.inodes.map(|n| n.saturating_add(1)), of_inodes)
        } else if is(HdfsSection::StringTable) {
            Rule::headed(
                d.strings.map(|n| n.saturating_add(1)),
                "the STRING_TABLE header's numEntry",
            )
        } else if is(HdfsSection::InodeDir) {
            // Hadoop writes an entry only for a directory with children:
            // one per directory, each inode a child of one directory (at
            // most 10 bytes of packed id), each reference a refChild once
            // (at most 5), and an entry's framing (length prefix, parent,
            // two packed fields' tags and lengths) at most 28 bytes.
            Rule {
                records: Some(inodes),
                bytes: Some(
                    inodes
                        .saturating_mul(38)
                        .saturating_add(refs.saturating_mul(5)),
                ),
                record: None,
                empty_from: Some(0),
                basis: "numInodes (INODE header) and numSnapshots (SNAPSHOT header)",
            }
        } else if is(HdfsSection::FilesUnderConstruction) {
            // One entry per open file: an inode id and a path (Hadoop's
            // paths are at most 8000 characters).
            Rule::entries(inodes, Some(32 << 10), of_inodes)
        } else if is(HdfsSection::InodeReference) {
            Rule::entries(
                refs,
                Some(64 << 10),
                "numInodes x (numSnapshots + 1) (the INODE and SNAPSHOT headers)",
            )
        } else if is(HdfsSection::SnapshotDiff) {
            // An entry per inode with diffs, at most one diff per snapshot
            // and inode, and per directory diff at most one created-list
            // entry per inode created since.
            Rule::entries(
                inodes.saturating_mul(snaps.saturating_mul(2).saturating_add(1)),
                None,
                "numInodes x (2 x numSnapshots + 1) (the INODE and SNAPSHOT headers)",
            )
        } else if is(HdfsSection::Snapshot) {
            Rule::headed(
                Some(snaps.saturating_add(1)),
                "the SNAPSHOT header's numSnapshots",
            )
        } else if is(HdfsSection::NsInfo) || is(HdfsSection::ErasureCoding) {
            // One message, of scalars (NS_INFO) or of the few policies a
            // cluster may define (ERASURE_CODING).
            Rule {
                records: Some(1),
                bytes: None,
                record: Some(16 << 20),
                empty_from: None,
                basis: "one message",
            }
        } else {
            Rule::default()
        }
    }

    /// The declared counts, from the headers alone (a header that does
    /// not decode declares nothing here: its own decoder reports it).
    fn read_declared(&self) -> Declared {
        let head = |s: HdfsSection| -> Option<Vec<u8>> {
            let sec = self.summary.find(s)?;
            let bytes = self.prefix(sec.offset, sec.length, &sec.at(), 64).ok()?;
            let (_, body) = super::delimited::Delimited::new(&bytes, 0)
                .next_record()
                .ok()??;
            Some(body.to_vec())
        };
        Declared {
            inodes: head(HdfsSection::Inode)
                .and_then(|b| INodeSection::decode(&b[..]).ok())
                .map(|h| h.num_inodes()),
            strings: head(HdfsSection::StringTable)
                .and_then(|b| StringTableSection::decode(&b[..]).ok())
                .map(|h| u64::from(h.num_entry())),
            snapshots: head(HdfsSection::Snapshot)
                .and_then(|b| SnapshotSection::decode(&b[..]).ok())
                .map_or(0, |h| u64::from(h.num_snapshots())),
        }
    }
}

/// What a compressed section may inflate to, checked as it inflates.
#[derive(Clone, Copy, Default)]
struct Rule {
    /// The most varint-delimited records (a header included).
    records: Option<u64>,
    /// The most inflated bytes in all.
    bytes: Option<u64>,
    /// The most bytes one record may declare.
    record: Option<u64>,
    /// The first record from which an empty one is refused: every record
    /// past a header is a message Hadoop always writes fields of.
    empty_from: Option<u64>,
    /// Where the bounds come from, for the error.
    basis: &'static str,
}

impl Rule {
    /// A header, then records that each have content.
    fn headed(records: Option<u64>, basis: &'static str) -> Rule {
        Rule {
            records,
            bytes: None,
            record: None,
            empty_from: Some(1),
            basis,
        }
    }

    /// Records with content, no header.
    fn entries(records: u64, record: Option<u64>, basis: &'static str) -> Rule {
        Rule {
            records: Some(records),
            bytes: None,
            record,
            empty_from: Some(0),
            basis,
        }
    }
}

impl HdfsFile {
    /// Up to `n` bytes from the start of the region (inflated): for a
    /// header, without reading or inflating the whole region.
    pub(crate) fn prefix(
        &self,
        offset: u64,
        length: u64,
        at: &Location,
        n: usize,
    ) -> Result<Vec<u8>, LoadError> {
        // A header's few bytes take far fewer input bytes than 64 KiB.
        let raw_len = length.min(64 << 10);
        let mut raw = vec![0u8; usize::try_from(raw_len).unwrap_or(0)];
        self.read_exact(offset, &mut raw, at)?;
        let mut out = Vec::new();
        let limit = u64::try_from(n).unwrap_or(u64::MAX);
        let r = match self.summary.codec {
            Codec::None => {
                raw.truncate(n);
                return Ok(raw);
            }
            Codec::Zlib => ZlibDecoder::new(&raw[..]).take(limit).read_to_end(&mut out),
            Codec::Gzip => MultiGzDecoder::new(&raw[..])
                .take(limit)
                .read_to_end(&mut out),
        };
        // A stream cut short by the input limit still gave its prefix.
        match r {
            Ok(_) => Ok(out),
            Err(_) if !out.is_empty() => Ok(out),
            Err(e) => Err(self.corrupt(
                at.clone(),
                format!("{} stream: {e}", self.summary.codec.name()),
            )),
        }
    }
}

/// The framing check run on inflated output as it grows: every record's
/// length prefix is read as soon as it is out, and a record is refused
/// before its bytes are inflated when it cannot fit in what the stream may
/// still inflate to, when it is past the records, the bytes or the record
/// size the section's [`Rule`] allows, or when it is empty where the rule
/// wants content.
struct Guard {
    /// Where the next record's length prefix starts in the output.
    pos: usize,
    /// Records whose prefix has been read.
    records: u64,
    /// The bounds.
    rule: Rule,
}

impl Guard {
    fn new(rule: Rule) -> Self {
        Guard {
            pos: 0,
            records: 0,
            rule,
        }
    }

    /// Walks the records whose prefixes `out` now holds; `max` is the
    /// most output the stream may have.
    fn advance(&mut self, out: &[u8], max: u64) -> Result<(), String> {
        let r = self.rule;
        let max = r.bytes.map_or(max, |b| b.min(max));
        while let Some(rest) = out.get(self.pos..).filter(|r| !r.is_empty()) {
            let Some((len, w)) = nsimage_format::wire::read_varint(rest) else {
                if rest.len() < 10 {
                    // The prefix may not be all out yet.
                    return Ok(());
                }
                return Err(format!(
                    "record {} at byte {} of the inflated stream: the length prefix is not a varint",
                    self.records, self.pos
                ));
            };
            let (n, at) = (self.records, self.pos);
            if len == 0 && r.empty_from.is_some_and(|e| n >= e) {
                return Err(format!(
                    "record {n} at byte {at} of the inflated stream is empty (each record of this section has content)"
                ));
            }
            if let Some(cap) = r.record.filter(|&c| len > c) {
                return Err(format!(
                    "record {n} at byte {at} of the inflated stream declares {len} bytes, more than the {cap} one may hold"
                ));
            }
            let end = u64::try_from(at)
                .unwrap_or(u64::MAX)
                .saturating_add(w as u64)
                .saturating_add(len);
            if end > max {
                let why = if r.bytes.is_some_and(|b| b <= max) {
                    format!(" (the bound from {})", r.basis)
                } else {
                    String::new()
                };
                return Err(format!(
                    "record {n} at byte {at} of the inflated stream declares {len} bytes, past the {max} bytes the stream may inflate to{why}"
                ));
            }
            self.records = n.saturating_add(1);
            if let Some(b) = r.records.filter(|&b| self.records > b) {
                return Err(format!(
                    "more than {b} records (the count {} allows) at byte {at} of the inflated stream",
                    r.basis
                ));
            }
            // end <= max, and max bounds out's length below.
            self.pos = usize::try_from(end).unwrap_or(usize::MAX);
        }
        Ok(())
    }
}

/// Inflates every stream in `raw` into `out` a chunk at a time, refusing
/// more than `max` bytes of output and whatever `guard` refuses, each as
/// soon as the chunk holding it is out.
fn inflate(
    codec: Codec,
    raw: &[u8],
    max: u64,
    mut guard: Guard,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let name = codec.name();
    let mut rest = raw;
    let mut chunk = vec![0u8; CHUNK.min(usize::try_from(max).unwrap_or(CHUNK)).max(1)];
    while !rest.is_empty() {
        let before = out.len();
        let used = match codec {
            // A multi-member reader: every member to the end of the input.
            Codec::Gzip => {
                let mut d = MultiGzDecoder::new(rest);
                pump(&mut d, name, raw.len(), max, &mut chunk, &mut guard, out)?;
                rest.len()
            }
            _ => {
                let mut d = ZlibDecoder::new(rest);
                pump(&mut d, name, raw.len(), max, &mut chunk, &mut guard, out)?;
                usize::try_from(d.total_in()).unwrap_or(usize::MAX)
            }
        };
        if used == 0 {
            return Err(format!(
                "{name} stream: no progress {} bytes in ({} bytes of output)",
                raw.len().saturating_sub(rest.len()),
                out.len().saturating_sub(before)
            ));
        }
        rest = rest.get(used..).unwrap_or_default();
    }
    Ok(())
}

/// Reads one decoder to its end a chunk at a time into `out`, checking
/// the total against `max` and the framing with `guard` after each chunk.
fn pump(
    d: &mut dyn Read,
    name: &str,
    raw_len: usize,
    max: u64,
    chunk: &mut [u8],
    guard: &mut Guard,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    loop {
        let got = match d.read(chunk) {
            Ok(0) => return Ok(()),
            Ok(g) => g,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(format!(
                    "{name} stream: {e} (after {} bytes of output)",
                    out.len()
                ))
            }
        };
        if (out.len() as u64).saturating_add(got as u64) > max {
            return Err(format!(
                "{name} stream inflates past {max} bytes, more than {raw_len} compressed bytes can hold"
            ));
        }
        out.extend_from_slice(chunk.get(..got).unwrap_or_default());
        guard.advance(out, max)?;
    }
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::unusual_byte_groupings
)]
mod tests {
    use super::*;
    use flate2::write::{GzEncoder, ZlibEncoder};
    use std::io::Write;

    #[test]
    fn concatenated_streams_inflate_and_bombs_are_refused() {
        let mut raw = Vec::new();
        for part in [&b"hello "[..], b"world"] {
            let mut e = ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(part).unwrap();
            raw.extend(e.finish().unwrap());
        }
        let mut out = Vec::new();
        inflate(
            Codec::Zlib,
            &raw,
            1000,
            Guard::new(Rule::default()),
            &mut out,
        )
        .unwrap();
        assert_eq!(out, b"hello world");
        let mut e = GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&[0u8; 100_000]).unwrap();
        let gz = e.finish().unwrap();
        let mut out = Vec::new();
        assert!(inflate(
            Codec::Gzip,
            &gz,
            1000,
            Guard::new(Rule::default()),
            &mut out
        )
        .is_err());
        let mut out = Vec::new();
        inflate(
            Codec::Gzip,
            &gz,
            100_000,
            Guard::new(Rule::default()),
            &mut out,
        )
        .unwrap();
        assert_eq!(out.len(), 100_000);
        let mut out = Vec::new();
        assert!(inflate(
            Codec::Zlib,
            &raw[..raw.len() - 3],
            1000,
            Guard::new(Rule::default()),
            &mut out
        )
        .is_err());
        assert!(inflate(
            Codec::Zlib,
            b"garbage!",
            1000,
            Guard::new(Rule::default()),
            &mut out
        )
        .is_err());
    }
}
