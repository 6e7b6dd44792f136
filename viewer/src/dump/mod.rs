//! `dump`: every inode of a namespace as OIV XML (`xml.rs`), OIV Delimited
//! text (`delimited.rs`, columns [`DELIMITED_COLUMNS`]) or JSON lines
//! (`jsonl.rs`); each file's page says what it writes and how bytes that
//! the format cannot hold are escaped.
//!
//! The node table is cut into ranges of slots (id order); a pool of
//! workers formats the ranges of one batch into buffers while the previous
//! batch is written, in order, so the output is the same bytes for any
//! thread count and at most two batches (two ranges per worker each) are
//! held at once. Full paths are rebuilt from the namespace's parent links
//! (`paths.rs`), never kept per inode. The same formats streamed from an
//! image, without the namespace, are `crate::streamed::dump`'s.

mod delimited;
pub(crate) mod escape;
pub(crate) mod formatter;
pub mod hadoop_xml;
mod jsonl;
pub(crate) mod names;
mod paths;
pub(crate) mod row;
pub(crate) mod scratch;
pub(crate) mod xml;

pub use delimited::COLUMNS as DELIMITED_COLUMNS;

use crate::error::ViewError;
use formatter::{Formatter, Head};
use nsimage_namespace::Namespace;
pub use paths::PathCache;
use rayon::prelude::*;
use row::Row;
use scratch::Scratch;
use std::io::Write;
use std::path::Path;

/// Slots per range a worker formats at once.
const CHUNK_SLOTS: u32 = 16_384;

/// The output format of a dump.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DumpFormat {
    /// The element layout of Hadoop's OIV XML processor.
    Xml,
    /// The columns of Hadoop's OIV Delimited processor.
    Delimited,
    /// One JSON object per inode, with its full path.
    Jsonl,
}

impl std::str::FromStr for DumpFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<DumpFormat, String> {
        match s {
            "xml" => Ok(DumpFormat::Xml),
            "delimited" => Ok(DumpFormat::Delimited),
            "jsonl" => Ok(DumpFormat::Jsonl),
            _ => Err(format!("unknown format {s:?} (xml, delimited or jsonl)")),
        }
    }
}

/// How to dump.
#[derive(Clone, Copy, Debug)]
pub struct DumpOptions {
    /// The format.
    pub format: DumpFormat,
    /// The delimited format's column separator (OIV's default: a tab).
    pub delimiter: u8,
    /// Whether the delimited format starts with a header row.
    pub header: bool,
    /// Worker threads; 0: the available cores.
    pub threads: usize,
    /// The image format version, written in the XML `version` element.
    pub format_version: u16,
}

impl Default for DumpOptions {
    fn default() -> Self {
        DumpOptions {
            format: DumpFormat::Delimited,
            delimiter: b'\t',
            header: false,
            threads: 0,
            format_version: nsimage_format::consts::CURRENT_VERSION,
        }
    }
}

/// What a dump wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DumpStats {
    /// Inodes written (one row, object or `inode` element each).
    pub rows: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Worker threads used.
    pub threads: usize,
}

/// Dumps every live inode of `ns` to `out` in id order; `out_name` names
/// the output in errors.
pub fn dump(
    ns: &Namespace,
    opts: &DumpOptions,
    out: &mut (dyn Write + Send),
    out_name: &Path,
) -> Result<DumpStats, ViewError> {
    let io = |source: std::io::Error| ViewError::Io {
        path: out_name.to_path_buf(),
        source,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.threads)
        .build()
        .map_err(|e| io(std::io::Error::other(e.to_string())))?;
    let f = formatter(opts);
    let mut stats = DumpStats {
        threads: pool.current_num_threads(),
        ..DumpStats::default()
    };
    pool.install(|| run(ns, f.as_ref(), stats.threads, out, &mut stats))
        .map_err(io)?;
    out.flush().map_err(io)?;
    Ok(stats)
}

/// The formatter of `opts.format`.
pub(crate) fn formatter(opts: &DumpOptions) -> Box<dyn Formatter> {
    match opts.format {
        DumpFormat::Xml => Box::new(xml::Xml {
            format_version: opts.format_version,
        }),
        DumpFormat::Delimited => Box::new(delimited::Delimited {
            delimiter: opts.delimiter,
            header: opts.header,
        }),
        DumpFormat::Jsonl => Box::new(jsonl::Jsonl),
    }
}

/// Formats one range of slots; the number of live inodes in it.
fn format_range(
    ns: &Namespace,
    f: &dyn Formatter,
    pass: usize,
    range: std::ops::Range<u32>,
) -> (Vec<u8>, u64) {
    let mut buf = Vec::with_capacity(range.len() * 192);
    let mut scratch = Scratch::new();
    let mut n = 0;
    for slot in range {
        if let Some(inode) = ns.at(slot) {
            f.inode(pass, &Row::Tree(ns, inode), &mut scratch, &mut buf);
            n += 1;
        }
    }
    (buf, n)
}

fn run(
    ns: &Namespace,
    f: &dyn Formatter,
    threads: usize,
    out: &mut (dyn Write + Send),
    stats: &mut DumpStats,
) -> std::io::Result<()> {
    let slots = ns.slot_count();
    let ranges: Vec<std::ops::Range<u32>> = (0..slots)
        .step_by(CHUNK_SLOTS as usize)
        .map(|a| a..a.saturating_add(CHUNK_SLOTS).min(slots))
        .collect();
    let batch = threads.max(1) * 2;
    let head_of = Head {
        info: ns.info(),
        inodes: (0..slots).filter(|&s| ns.at(s).is_some()).count() as u64,
    };
    for pass in 0..f.passes() {
        let mut head = Vec::new();
        f.begin(&head_of, pass, &mut head);
        out.write_all(&head)?;
        stats.bytes += head.len() as u64;
        let mut pending: Vec<(Vec<u8>, u64)> = Vec::new();
        for group in ranges.chunks(batch) {
            let (written, next) = rayon::join(
                || write_all(out, &pending),
                || {
                    group
                        .par_iter()
                        .map(|r| format_range(ns, f, pass, r.clone()))
                        .collect::<Vec<_>>()
                },
            );
            let (bytes, rows) = written?;
            stats.bytes += bytes;
            if pass == 0 {
                stats.rows += rows;
            }
            pending = next;
        }
        let (bytes, rows) = write_all(out, &pending)?;
        stats.bytes += bytes;
        if pass == 0 {
            stats.rows += rows;
        }
        let mut tail = Vec::new();
        f.end(pass, &mut tail);
        out.write_all(&tail)?;
        stats.bytes += tail.len() as u64;
    }
    Ok(())
}

/// Writes formatted ranges in order: (bytes, live inodes).
fn write_all(out: &mut (dyn Write + Send), bufs: &[(Vec<u8>, u64)]) -> std::io::Result<(u64, u64)> {
    let mut bytes = 0;
    let mut rows = 0;
    for (b, n) in bufs {
        out.write_all(b)?;
        bytes += b.len() as u64;
        rows += n;
    }
    Ok((bytes, rows))
}
