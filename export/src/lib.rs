//! `nsimage export`: every inode of a namespace as Parquet, one file or a
//! dataset of several files, for DuckDB, Spark and other engines.
//!
//! The node table is cut into ranges of slots (id order), one row group
//! each; a pool of workers builds the column values of its ranges and
//! encodes their column chunks (zstd) into memory with the parquet
//! crate's own column writers, and the writer appends the encoded row
//! groups in order, so the rows (and the bytes) are the same for any
//! thread count. Full paths are rebuilt from the namespace's parent links
//! (the viewer's `dump::PathCache`, shared with the dumps), never held per
//! inode. The columns are in [`schema`]
//! (`columns.rs`); the files are written beside their final names and
//! renamed into place (`output.rs`). Options and stats are in `options.rs`, the parallel
//! encoder in `write.rs`, one column chunk's encoding in `chunk.rs`. An
//! nsimage image can also be exported without loading it (`stream.rs`):
//! each row group built from the INODE pieces that hold its records, the
//! same bytes.

mod chunk;
mod columns;
mod error;
mod options;
mod output;
mod stream;
mod write;

pub use columns::schema;
pub use error::ExportError;
pub use options::{ExportOptions, ExportStats, DEFAULT_ROW_GROUP_ROWS};
pub use output::{export_to_path, is_dataset_target, part_name};
pub use stream::export_streamed_to_path;
pub use write::{row_group_ranges, write_parts};
