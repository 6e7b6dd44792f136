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
//! inode. An nsimage image can also be exported without loading it: each
//! row group built from the INODE pieces that hold its records, the same
//! bytes.
//!
//! # Layering
//!
//! The export sits above the loader and the viewer (`nsimage-loader`,
//! `nsimage-viewer`), beside the server and the testkit. It must never
//! import the writer, the store, the server, the testkit or the command
//! line (`nsimage-writer`, `nsimage-store`, `nsimage-server`,
//! `nsimage-testkit`, `nsimage`), and no crate but the command line imports
//! it: the parquet crate's build cost stays out of the core crates.
//!
//! # Module map
//!
//! | file | what it holds |
//! |------|---------------|
//! | `lib.rs` | this page and the re-exports |
//! | `columns.rs` | the columns: [`schema`], and each column's values built from a range of slots |
//! | `options.rs` | [`ExportOptions`] and [`ExportStats`] |
//! | `write.rs` | the parallel encoder: [`row_group_ranges`], [`write_parts`] |
//! | `chunk.rs` | one column chunk's encoding |
//! | `output.rs` | the files, written beside their final names and renamed into place: [`export_to_path`] |
//! | `stream.rs` | an nsimage image exported without loading it: [`export_streamed_to_path`] |
//! | `error.rs` | [`ExportError`] |
//!
//! # Example
//!
//! A three-inode namespace exported to one Parquet file, one row per
//! inode:
//!
//! ```
//! use nsimage_export::{export_to_path, ExportOptions};
//! use nsimage_namespace::{Namespace, PermSpec};
//!
//! let perm = PermSpec { user: b"alice", group: b"staff", mode: 0o755 };
//! let mut ns = Namespace::default();
//! ns.mkdirs(b"/data/logs", &perm, 1)?;
//!
//! let dir = std::env::temp_dir().join(format!("nsimage-export-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let out = dir.join("inodes.parquet");
//! let stats = export_to_path(&ns, &ExportOptions::default(), &out)?;
//! assert_eq!(stats.rows, 3); // the root, /data and /data/logs
//! assert_eq!(stats.files, 1);
//! assert_eq!(std::fs::metadata(&out)?.len(), stats.bytes);
//! std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

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
