//! nsimage loader: image → in-memory namespace (format v1,
//! `format-spec/FORMAT.md`).
//!
//! # What this crate owns
//!
//! Reading an image: opening it (header, footer, index), bringing each
//! piece's bytes into memory (bulk reads, or a mapping the caller opted in
//! to), checking every checksum and structural rule, decoding the records
//! and building the [`Namespace`](nsimage_namespace::Namespace), serially or
//! on a thread pool; [`verify`], which lists every bad region instead of
//! stopping at the first; one-path lookups ([`load_path`]) that read only
//! the pieces on the way, through the NAME_RUNS section (the NAME_INDEX
//! section of images written before it); and the [`skeleton`], the tree of
//! an image read piece by piece in bounded memory. Every byte read from disk is untrusted: errors are
//! located ([`LoadError::Corrupt`] names section, sub-section and offset).
//!
//! # Layering
//!
//! The loader depends on `nsimage-namespace` (the model it builds) and
//! `nsimage-format` (the format it reads) only. It must never import the
//! writer (`nsimage-writer`, its sibling: the two meet only in the format),
//! the store (`nsimage-store`, above it), the tooling crate
//! (`nsimage-testkit`) or the CLI. The writer is a dev-dependency, for the
//! examples and tests alone.
//!
//! # Module map
//!
//! | file | what it holds |
//! |------|---------------|
//! | `lib.rs` | this page and the re-exports |
//! | `source.rs` | [`source`]: the image file: one read of the tail for footer and index, then one positioned read per piece (section or sub-section), or slices of a mapping |
//! | `kind.rs` | what a file that is not an image looks like (a Parquet file, an XML dump, text), for the error that names it |
//! | `mmap.rs` | the one place a file is mapped, and [`MmapOptIn`], the caller's `unsafe` promise that makes [`ReadStrategy::Mmap`] possible |
//! | `ahead.rs` | a piece's checksum computed just ahead of its decoder, in blocks that stay in the core's cache |
//! | `record.rs` | the zero-copy record decoder of the hot path (`Inode` and `DirEntry` records), walking them with `nsimage_format::wire::Cursor`, the one wire-format walker, which the Hadoop reader (`hdfs`) uses too (public with the `bench-internals` feature) |
//! | `decode.rs` | records of each section kind into builder batches; the unit of work is one piece, so the serial and parallel paths share it (public with `bench-internals`) |
//! | `load.rs` | the entry point, [`load`]: chooses the serial or parallel path and the read strategy |
//! | `options.rs` | [`LoadOptions`]: threads, read strategy, the serial threshold |
//! | `stats.rs` | what a load gives back: [`Loaded`] and [`LoadStats`] |
//! | `indexed.rs` | the indexed path: the small sections, then the INODE phase and the INODE_DIR phase |
//! | `inode_phase.rs` | inodes decoded into the node table's slots, each piece owning the range its record count gives it |
//! | `dir_phase.rs` | parents set in the nodes, by node-table range on a pool, as each piece decodes on one thread; then the tree checked from the parent links |
//! | `table.rs` | the node table filled in place by the INODE workers, a lock per slot range (public with `bench-internals`) |
//! | `run.rs` | one function run over a section's pieces: on a pool whose workers take them in file order, or in order on this thread |
//! | `lock_stats.rs` | [`LockStats`]: the lock traffic of a load, counted for the bench |
//! | `prefetch.rs` | [`prefetch`]: reading ahead of the workers, and the page-cache tools of cold-cache benchmarks |
//! | `progress.rs` | what the workers tell the prefetch thread: the offsets of the pieces they start |
//! | `trace.rs` | [`trace`]: where a load's time goes, a [`trace::Timeline`] of spans per phase and per piece (`load --trace`) |
//! | `sections.rs` | what every read path shares: a section's pieces with their locations, the located errors, the check of unknown sections, the optional HDFS_SNAPSHOTS carry |
//! | `baseline.rs` | the streaming baseline (buffered reader, prost per record), [`ReadStrategy::Stream`] |
//! | `assemble.rs` | [`Assembly`]: single-threaded assembly, for the baseline and the peers |
//! | `lookup.rs` | [`load_path`]: one path looked up reading only the pieces on the way, down the optional NAME_RUNS section, or the NAME_INDEX of images written before it ([`PathView`]) |
//! | `name_index.rs` | `verify`'s check of NAME_RUNS (or NAME_INDEX) against INODE_DIR and INODE |
//! | `skeleton.rs` | [`skeleton`]: an image read piece by piece in bounded memory, the tree without the namespace ([`skeleton::Skeleton`]), for the viewer's streamed commands and the streamed export; its own modules in `skeleton/`: the nsimage tree (`image.rs`), the Hadoop tree (`hadoop.rs`), the links (`links.rs`), the names check (`names.rs`) |
//! | `streamable.rs` | [`Streamable`]: an nsimage image or a Hadoop fsimage opened for the skeleton |
//! | `verify.rs` | [`verify`]: every checksum and structural rule checked, each bad region listed |
//! | `budget.rs` | [`budget`]: the memory a command may take ([`budget::Budget`]: `--memory-limit`, or what the machine has) and what a whole load takes an inode |
//! | `need.rs` | a whole load sized from the inodes an image declares ([`load_need`]) and refused before it starts where the budget cannot hold it ([`refuse_over`]), once the count is found honest ([`check_declared`]) |
//! | `trim.rs` | [`release_free_memory`], the caller's choice of giving the allocator's free pages back after a load |
//! | `hdfs/` | [`hdfs`]: Hadoop fsimage files (magic `HDFSIMG1`), loaded into the same namespace through the same phases; [`hdfs::HdfsImage`] holds what they have beside it (snapshots, references, the summary); its own page lists its modules |
//! | `error.rs` | [`LoadError`] |
//!
//! A folder module's own page lists its modules.
//!
//! # Example
//!
//! A tiny namespace, written with the writer and loaded back, gives the
//! same digest:
//!
//! ```
//! use nsimage_loader::{load, LoadOptions};
//! use nsimage_namespace::{Namespace, NsInfo, PermSpec};
//! use nsimage_writer::{write_image, WriteOptions};
//!
//! let mut ns = Namespace::new(NsInfo::default());
//! let perm = PermSpec { user: b"hdfs", group: b"supergroup", mode: 0o755 };
//! ns.mkdirs(b"/user/alice", &perm, 1_700_000_000_000)?;
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("fsimage");
//! write_image(&ns, std::fs::File::create(&path)?, &WriteOptions::default())?;
//!
//! // The default reads the file with positioned reads; mapping it is an
//! // `unsafe` opt-in (`ReadStrategy::mmap`).
//! let loaded = load(&path, &LoadOptions::default())?;
//! assert_eq!(loaded.namespace.digest(), ns.digest());
//! assert_eq!(loaded.stats.read, "bulk");
//!
//! // Optional, process-wide: give the load's freed pages back.
//! nsimage_loader::release_free_memory();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(unsafe_code)]

// `decode`, `record` and `table` are the loader's internals. The
// non-default feature `bench-internals` makes them public for the
// criterion benches (`benches/` at the workspace root) and the fuzz
// targets alone: they are not an API, and change without notice.

mod ahead;
mod assemble;
mod baseline;
pub mod budget;
#[cfg(feature = "bench-internals")]
pub mod decode;
#[cfg(not(feature = "bench-internals"))]
mod decode;
mod dir_phase;
mod error;
pub mod hdfs;
mod indexed;
mod inode_phase;
mod kind;
mod load;
mod lock_stats;
mod lookup;
mod mmap;
mod name_index;
mod need;
mod options;
pub mod prefetch;
mod progress;
#[cfg(feature = "bench-internals")]
pub mod record;
#[cfg(not(feature = "bench-internals"))]
mod record;
mod run;
mod sections;
pub mod skeleton;
pub mod source;
mod stats;
mod streamable;
#[cfg(feature = "bench-internals")]
pub mod table;
#[cfg(not(feature = "bench-internals"))]
mod table;
pub mod trace;
mod trim;
mod verify;

pub use assemble::Assembly;
pub use error::LoadError;
pub use load::load;
pub use lock_stats::LockStats;
pub use lookup::{load_path, PathOptions, PathView};
pub use mmap::MmapOptIn;
pub use need::{check_declared, load_need, refuse_over};
pub use options::{LoadOptions, DEFAULT_PARALLEL_THRESHOLD};
pub use source::{ImageSource, PieceBuf, ReadStrategy};
pub use stats::{LoadStats, Loaded};
pub use streamable::Streamable;
pub use trim::release_free_memory;
pub use verify::{verify, Problem, VerifyOptions, VerifyReport};
