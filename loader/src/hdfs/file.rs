//! The Hadoop image file: the magic, the summary from the tail, and each
//! region (section or sub-section) brought into memory with one positioned
//! read and, with a codec, inflated with its output bounded by what a
//! deflate stream of that many bytes can expand to.

use crate::error::LoadError;
use crate::source::open_regular;
use flate2::read::{MultiGzDecoder, ZlibDecoder};
use nsimage_format::hdfs::{is_hdfs, Codec, HdfsSection, HdfsSummary, MAGIC};
use nsimage_format::hdfs_pb::{INodeSection, StringTableSection};
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
}

/// Record counts the image declares in section headers: the records a
/// compressed section may inflate to.
#[derive(Clone, Copy, Default)]
struct Declared {
    /// INODE's `numInodes` (its records, header excluded).
    inodes: Option<u64>,
    /// STRING_TABLE's `numEntry`.
    strings: Option<u64>,
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

    fn read_exact(&self, offset: u64, buf: &mut [u8], at: &Location) -> Result<(), LoadError> {
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
        let guard = Guard::new(self.record_bound(at));
        inflate(codec, raw, max, guard, out).map_err(|d| self.corrupt(at.clone(), d))?;
        Ok(out)
    }

    /// The most varint-delimited records the section at `at` may hold,
    /// where its header declares a count: INODE's `numInodes` and
    /// STRING_TABLE's `numEntry`, each plus the header record itself.
    fn record_bound(&self, at: &Location) -> Option<u64> {
        let d = self.declared.get_or_init(|| self.read_declared());
        let kind = at.section?;
        let n = if kind == HdfsSection::Inode.kind() {
            d.inodes
        } else if kind == HdfsSection::StringTable.kind() {
            d.strings
        } else {
            None
        };
        n.map(|n| n.saturating_add(1))
    }

    /// The declared counts, from the headers alone (a header that does
    /// not decode declares nothing here: its own decoder reports it).
    fn read_declared(&self) -> Declared {
        let head = |s: HdfsSection| -> Option<Vec<u8>> {
            let sec = self.summary.find(s)?;
            let bytes = self.prefix(sec.offset, sec.length, &sec.at(), 64).ok()?;
            let (_, body) = crate::wire::Delimited::new(&bytes, 0)
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
/// length prefix is read as soon as it is out, a record that cannot fit
/// in what the stream may still inflate to is refused before its bytes
/// are inflated, and so is a record past the count the section declares.
struct Guard {
    /// Where the next record's length prefix starts in the output.
    pos: usize,
    /// Records whose prefix has been read.
    records: u64,
    /// The most records the section may hold, where it declares it.
    bound: Option<u64>,
}

impl Guard {
    fn new(bound: Option<u64>) -> Self {
        Guard {
            pos: 0,
            records: 0,
            bound,
        }
    }

    /// Walks the records whose prefixes `out` now holds; `max` is the
    /// most output the stream may have.
    fn advance(&mut self, out: &[u8], max: u64) -> Result<(), String> {
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
            let end = u64::try_from(self.pos)
                .unwrap_or(u64::MAX)
                .saturating_add(w as u64)
                .saturating_add(len);
            if end > max {
                return Err(format!(
                    "record {} at byte {} of the inflated stream declares {len} bytes, past the {max} bytes the stream may inflate to",
                    self.records, self.pos
                ));
            }
            self.records = self.records.saturating_add(1);
            if let Some(b) = self.bound.filter(|&b| self.records > b) {
                return Err(format!(
                    "more than {b} records (the count the section's header declares, with the header) at byte {} of the inflated stream",
                    self.pos
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
        inflate(Codec::Zlib, &raw, 1000, Guard::new(None), &mut out).unwrap();
        assert_eq!(out, b"hello world");
        let mut e = GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&[0u8; 100_000]).unwrap();
        let gz = e.finish().unwrap();
        let mut out = Vec::new();
        assert!(inflate(Codec::Gzip, &gz, 1000, Guard::new(None), &mut out).is_err());
        let mut out = Vec::new();
        inflate(Codec::Gzip, &gz, 100_000, Guard::new(None), &mut out).unwrap();
        assert_eq!(out.len(), 100_000);
        let mut out = Vec::new();
        assert!(inflate(
            Codec::Zlib,
            &raw[..raw.len() - 3],
            1000,
            Guard::new(None),
            &mut out
        )
        .is_err());
        assert!(inflate(Codec::Zlib, b"garbage!", 1000, Guard::new(None), &mut out).is_err());
    }
}
