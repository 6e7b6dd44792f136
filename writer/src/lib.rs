//! nsimage writer: namespace → image (format v1, `format-spec/FORMAT.md`).
//!
//! This crate owns turning an in-memory namespace (`nsimage-namespace`)
//! into the bytes of an image, and the same namespace into a Hadoop
//! fsimage.
//!
//! # Module map
//!
//! | file | what it holds |
//! |------|---------------|
//! | `lib.rs` | this page and the re-exports |
//! | `encode.rs` | inodes and directories turned into framed protobuf records, in parallel batches (rayon), through `record.rs` or prost for rare attributes |
//! | `record.rs` | the hand-written record encoder, byte-identical to prost's (tested); it writes the keys of `nsimage_format::wire::tags` |
//! | `strings.rs` | the canonical string table (only strings in use, sorted by bytes) and the map from the namespace's string ids to the written ones |
//! | `sections.rs` | the machinery of every write: the output with its running checksums and pieces at rest, a section cut into record-aligned sub-sections by a byte target, the index and footer |
//! | `stream.rs` | [`StreamWriter`]: an image written section by section from records its caller encodes (announced sizes and key order checked), with no namespace in memory |
//! | `image.rs` | [`write_image`]: a namespace written through a [`StreamWriter`], its records encoded in parallel batches, each section measured first when it is cut |
//! | `options.rs` | [`WriteOptions`], how an image is laid out (sub-section sizes, inodes per parallel batch) and stored ([`AtRestOptions`]) |
//! | `at_rest.rs` | pieces compressed (zstd, LZ4) and sealed (AES-256-GCM) as they end, when [`AtRestOptions`] asks (FORMAT.md, "Pieces at rest") |
//! | `hdfs/` | [`hdfs`]: the other format the writer writes, Hadoop's fsimage (`HDFSIMG1`), as a Hadoop NameNode and `hdfs oiv` load it ([`hdfs::write_hdfs_image`]), with its file name and `.md5` sidecar conventions |
//!
//! A folder module's own page lists its modules.
//!
//! The writer turns a namespace into bytes on any `Write`
//! ([`write_image`]); the atomic save of an image to a file (temporary
//! file, fsync, rename, fsync of the directory) is the store's
//! (`nsimage_store::save`), so that its fault and power-cut tests cover it.
//! The writer reads nothing from disk, and the namespace it reads upholds
//! the format's rules by construction (its mutations and its builder refuse
//! what an image may not hold), so the only error it returns is the output's
//! `std::io::Error`.
//!
//! Layering: the writer depends on the namespace model and on the format
//! (`nsimage-format`) only. It must never import the loader, the store, the
//! testkit or the command line (`nsimage-loader`, `nsimage-store`,
//! `nsimage-testkit`, `nsimage`); the loader and the writer stand side by
//! side and meet only in the format.
//!
//! # Example
//!
//! A two-inode namespace written into memory, then its footer and index
//! read back with `nsimage_format`:
//!
//! ```
//! use nsimage_format::consts::footer;
//! use nsimage_format::{Footer, Index, SectionKind};
//! use nsimage_namespace::{FileSpec, Namespace, PermSpec};
//! use nsimage_writer::{write_image, WriteOptions};
//!
//! let perm = PermSpec { user: b"alice", group: b"staff", mode: 0o755 };
//! let mut ns = Namespace::default();
//! ns.mkdirs(b"/data", &perm, 1)?;
//! let spec = FileSpec { replication: 3, preferred_block_size: 128 << 20, storage_policy: 0 };
//! ns.create(b"/data/a.txt", &perm, &spec, 2)?;
//!
//! let mut image = Vec::new();
//! let summary = write_image(&ns, &mut image, &WriteOptions::default())?;
//! assert_eq!(summary.bytes, image.len() as u64);
//!
//! let len = image.len() as u64;
//! let foot = Footer::decode(&image[image.len() - footer::SIZE..], len)?;
//! let start = usize::try_from(foot.index_offset)?;
//! let end = start + usize::try_from(foot.index_length)?;
//! let index = Index::decode(&image[start..end], foot.index_offset, foot.index_checksum)?;
//! assert_eq!(index, summary.index);
//! // The root, /data and /data/a.txt.
//! assert_eq!(index.section(SectionKind::INODE).map(|s| s.records), Some(3));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

mod at_rest;
mod encode;
pub mod hdfs;
mod image;
mod options;
mod record;
mod sections;
mod stream;
mod strings;

pub use encode::{Encoded, Size};
pub use image::{write_image, write_image_with_carry};
pub use options::{AtRestOptions, WriteOptions};
pub use sections::{sub_section_target, ImageSummary};
pub use stream::StreamWriter;
