//! The Hadoop image file: the magic, the summary from the tail, the counts
//! the image declares, and each region (section or sub-section) read as
//! its records come out (`inflate`: in blocks, or inflated a chunk at a
//! time, bounded by what a deflate stream of that many bytes can expand to
//! and by what the image's headers declare, see [`Rule`]).

use super::inflate::{Records, Rule, Source};
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

    /// The records of the region `[offset, offset + length)` (bounded by
    /// the summary's checks) as they come out of the file, inflated with
    /// the image's codec under the rule of its section (see
    /// [`Records`]); `what` ("piece" or "section") names the region in
    /// errors, `buf` is the window (reused from region to region).
    pub(crate) fn records<'b>(
        &'b self,
        offset: u64,
        length: u64,
        at: &Location,
        what: &'static str,
        buf: &'b mut Vec<u8>,
    ) -> Records<'b, Stored<'b>> {
        let stored = Stored {
            f: self,
            at: at.clone(),
            next: offset,
            end: offset.saturating_add(length),
            failed: None,
        };
        let rule = if self.summary.codec == Codec::None {
            Rule::default()
        } else {
            self.rule(at)
        };
        Records::new(
            stored,
            length,
            self.summary.codec,
            rule,
            &self.path,
            at,
            what,
            buf,
        )
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
            // Hadoop writes an entry only for a directory with children
            // (one per directory; nsimage's writer splits one of more than
            // 6,400,000 children, each part with one child at least): each
            // inode a child of one directory (at most 10 bytes of packed
            // id), each reference a refChild once (at most 5), and an
            // entry's framing (length prefix, parent, two packed fields'
            // tags and lengths) at most 28 bytes.
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

/// A region's stored bytes, read in order with positioned reads (counted
/// as the file's reads); a failed read keeps its located error for
/// [`Records`] to report.
pub(crate) struct Stored<'f> {
    f: &'f HdfsFile,
    at: Location,
    next: u64,
    end: u64,
    failed: Option<LoadError>,
}

impl Read for Stored<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = usize::try_from(self.end.saturating_sub(self.next)).unwrap_or(usize::MAX);
        let n = left.min(buf.len());
        let Some(dst) = buf.get_mut(..n).filter(|d| !d.is_empty()) else {
            return Ok(0);
        };
        match self.f.read_exact(self.next, dst, &self.at) {
            Ok(()) => {
                self.next = self.next.saturating_add(n as u64);
                Ok(n)
            }
            Err(e) => {
                self.failed = Some(e);
                Err(std::io::Error::other("the read failed"))
            }
        }
    }
}

impl Source for Stored<'_> {
    fn take_error(&mut self) -> Option<LoadError> {
        self.failed.take()
    }
}
