//! The row groups: built and encoded in parallel by slot ranges, appended
//! in order to one file or to the parts of a dataset.

use crate::chunk::{append, encode, Chunk};
use crate::columns::{build, schema, Column};
use crate::error::ExportError;
use crate::options::{ExportOptions, ExportStats};
use nsimage_namespace::Namespace;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{WriterProperties, WriterPropertiesPtr};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{ColumnPath, SchemaDescriptor};
use rayon::prelude::*;
use std::io::Write;
use std::ops::Range;
use std::sync::Arc;

/// The slot ranges of the row groups, in order.
pub fn row_group_ranges(ns: &Namespace, row_group_rows: u32) -> Vec<Range<u32>> {
    let step = row_group_rows.max(1);
    let slots = ns.slot_count();
    let mut out = Vec::new();
    let mut a = 0u32;
    while a < slots {
        let b = a.saturating_add(step).min(slots);
        out.push(a..b);
        a = b;
    }
    out
}

/// Columns whose values are (nearly) all distinct: dictionary encoding
/// would build a hash table per column chunk only to fall back to plain
/// encoding when the dictionary page fills, so they are written plain.
const DISTINCT_COLUMNS: [&str; 8] = [
    "id",
    "parent_id",
    "path",
    "path_raw",
    "name",
    "size",
    "mtime",
    "atime",
];

/// The writer properties of every file: zstd, no row group cut by size
/// (a row group is one range of slots).
fn properties(opts: &ExportOptions) -> Result<WriterPropertiesPtr, ExportError> {
    let level = ZstdLevel::try_new(opts.zstd_level).map_err(|e| ExportError::BadArgument {
        detail: format!("zstd level {}: {e}", opts.zstd_level),
    })?;
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(level))
        .set_max_row_group_size(usize::MAX)
        .set_created_by(format!("nsimage {}", env!("CARGO_PKG_VERSION")));
    for c in DISTINCT_COLUMNS {
        b = b.set_column_dictionary_enabled(ColumnPath::from(c), false);
    }
    Ok(Arc::new(b.build()))
}

/// What every row group is encoded with: the columns of the schema and
/// the writer properties (the same for every file of an export).
struct Encoder {
    schema: SchemaDescriptor,
    props: WriterPropertiesPtr,
}

/// One row group, encoded: its column chunks (in schema order) and its rows.
struct Encoded {
    chunks: Vec<Chunk>,
    rows: u64,
}

/// Where the row groups' columns come from: a loaded namespace's slot
/// ranges ([`Slots`]) or an image streamed piece by piece.
pub(crate) trait Groups: Sync {
    /// Row groups.
    fn count(&self) -> usize;
    /// The columns of row group `g`.
    fn build(&self, g: usize) -> Result<Vec<Column>, ExportError>;
    /// Row groups each worker builds at once: two keep the workers busy
    /// while the writer appends; one halves the memory in flight.
    fn per_worker(&self) -> usize {
        2
    }
    /// Called once every row group is built, before the last file is
    /// closed: the checks that need every row.
    fn finish(&self) -> Result<(), ExportError> {
        Ok(())
    }
}

/// The row groups of a loaded namespace: ranges of slots.
struct Slots<'a> {
    ns: &'a Namespace,
    ranges: Vec<Range<u32>>,
}

impl Groups for Slots<'_> {
    fn count(&self) -> usize {
        self.ranges.len()
    }
    fn build(&self, g: usize) -> Result<Vec<Column>, ExportError> {
        let r = self.ranges.get(g).cloned().unwrap_or(0..0);
        Ok(build(self.ns, r))
    }
}

/// Builds the columns of row group `g` and encodes them into column chunks.
fn encode_group(groups: &dyn Groups, enc: &Encoder, g: usize) -> Result<Encoded, ExportError> {
    let columns = groups.build(g)?;
    let descrs = enc.schema.columns();
    if columns.len() != descrs.len() {
        return Err(ExportError::Internal {
            detail: format!(
                "{} columns built for a schema of {}",
                columns.len(),
                descrs.len()
            ),
        });
    }
    let chunks = descrs
        .iter()
        .zip(columns)
        .map(|(d, c)| encode(d.clone(), &enc.props, c))
        .collect::<Result<Vec<_>, _>>()?;
    let rows = chunks.first().map_or(0, Chunk::rows);
    if let Some(c) = chunks.iter().find(|c| c.rows() != rows) {
        return Err(ExportError::Internal {
            detail: format!(
                "a column chunk of {} rows in a row group of {rows}",
                c.rows()
            ),
        });
    }
    Ok(Encoded { chunks, rows })
}

/// A file writer of the export's schema.
fn file_writer<W: Write + Send>(
    w: W,
    props: &WriterPropertiesPtr,
) -> Result<SerializedFileWriter<W>, ExportError> {
    Ok(SerializedFileWriter::new(w, schema()?, props.clone())?)
}

/// Appends an encoded row group to a file.
fn append_group<W: Write + Send>(
    writer: &mut SerializedFileWriter<W>,
    e: Encoded,
) -> Result<(), ExportError> {
    let mut rg = writer.next_row_group()?;
    for c in e.chunks {
        append(&mut rg, c)?;
    }
    rg.close()?;
    Ok(())
}

/// Encodes the row groups of `groups` in parallel on `pool`, batch by
/// batch (two per worker), handing each to `sink` in order while the next
/// batch is encoded.
fn run_groups(
    groups: &dyn Groups,
    pool: &rayon::ThreadPool,
    enc: &Encoder,
    sink: &mut (dyn FnMut(Encoded) -> Result<(), ExportError> + Send),
) -> Result<(), ExportError> {
    let batch = pool.current_num_threads().max(1) * groups.per_worker().max(1);
    let all: Vec<usize> = (0..groups.count()).collect();
    pool.install(|| {
        let mut pending: Vec<Encoded> = Vec::new();
        for group in all.chunks(batch) {
            let (written, next) = rayon::join(
                || {
                    std::mem::take(&mut pending)
                        .into_iter()
                        .try_for_each(&mut *sink)
                },
                || {
                    group
                        .par_iter()
                        .map(|&g| encode_group(groups, enc, g))
                        .collect::<Result<Vec<_>, _>>()
                },
            );
            written?;
            pending = next?;
        }
        pending.into_iter().try_for_each(&mut *sink)
    })
}

pub(crate) fn pool(threads: usize) -> Result<rayon::ThreadPool, ExportError> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| ExportError::Internal {
            detail: format!("starting the worker threads: {e}"),
        })
}

/// Writes every live inode of `ns` as Parquet, in id order, into files of
/// `groups_per_file` row groups each (`None`: one file): `open(k)` gives
/// the writer of file `k` (0, 1, ...), `close(k, w)` takes it back once
/// the file is complete (to sync and rename it) and says its size.
pub fn write_parts<W: Write + Send>(
    ns: &Namespace,
    opts: &ExportOptions,
    groups_per_file: Option<u32>,
    open: &mut (dyn FnMut(usize) -> Result<W, ExportError> + Send),
    close: &mut (dyn FnMut(usize, W) -> Result<u64, ExportError> + Send),
) -> Result<ExportStats, ExportError> {
    let pool = pool(opts.threads)?;
    let slots = Slots {
        ns,
        ranges: row_group_ranges(ns, opts.row_group_rows),
    };
    write_groups(&slots, &pool, opts, groups_per_file, open, close)
}

/// [`write_parts`] of any [`Groups`], on `pool`.
pub(crate) fn write_groups<W: Write + Send>(
    groups: &dyn Groups,
    pool: &rayon::ThreadPool,
    opts: &ExportOptions,
    groups_per_file: Option<u32>,
    open: &mut (dyn FnMut(usize) -> Result<W, ExportError> + Send),
    close: &mut (dyn FnMut(usize, W) -> Result<u64, ExportError> + Send),
) -> Result<ExportStats, ExportError> {
    let props = properties(opts)?;
    let enc = Encoder {
        schema: SchemaDescriptor::new(schema()?),
        props: props.clone(),
    };
    let per_file = match groups_per_file {
        Some(n) => n.max(1) as usize,
        None => groups.count().max(1),
    };
    let mut stats = ExportStats {
        threads: pool.current_num_threads(),
        ..ExportStats::default()
    };
    let mut current: Option<SerializedFileWriter<W>> = None;
    let finish = |stats: &mut ExportStats,
                  w: SerializedFileWriter<W>,
                  close: &mut (dyn FnMut(usize, W) -> Result<u64, ExportError> + Send)|
     -> Result<(), ExportError> {
        let inner = w.into_inner()?;
        let k = usize::try_from(stats.files).unwrap_or(usize::MAX);
        stats.bytes += close(k, inner)?;
        stats.files += 1;
        Ok(())
    };
    let mut index = 0usize;
    run_groups(groups, pool, &enc, &mut |e: Encoded| {
        if index.is_multiple_of(per_file) {
            if let Some(w) = current.take() {
                finish(&mut stats, w, close)?;
            }
            let k = index / per_file;
            let w = open(k)?;
            current = Some(file_writer(w, &props)?);
        }
        index += 1;
        stats.rows += e.rows;
        stats.row_groups += 1;
        match current.as_mut() {
            Some(w) => append_group(w, e),
            None => Err(ExportError::Internal {
                detail: "no file open for a row group".into(),
            }),
        }
    })?;
    groups.finish()?;
    if current.is_none() {
        // An empty namespace (no slots): one file with no row groups.
        let w = open(0)?;
        current = Some(file_writer(w, &props)?);
    }
    if let Some(w) = current.take() {
        finish(&mut stats, w, close)?;
    }
    Ok(stats)
}
