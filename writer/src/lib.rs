//! nsimage writer: namespace → image (format v1, `format-spec/FORMAT.md`).
//!
//! - `encode`: turns inodes and directories into framed protobuf records,
//!   in parallel batches (rayon), through the hand-written encoder of
//!   `fast` (byte-identical to prost's, tested) or prost for rare attributes;
//! - `strings`: the canonical string table (only strings in use, sorted by
//!   bytes) and the map from the namespace's string ids to the written ones;
//! - [`image`]: lays sections out, cuts record-aligned sub-sections by a byte
//!   target, computes checksums as bytes go out, writes index and footer.
//!
//! The writer turns a namespace into bytes on any `Write`
//! ([`write_image`]); the atomic save of an image to a file (temporary
//! file, fsync, rename, fsync of the directory) is the store's
//! (`nsimage_store::save`), so that its fault and power-cut tests cover it.
#![forbid(unsafe_code)]

mod encode;
mod image;
mod record;
mod strings;

pub use image::{sub_section_target, write_image, ImageSummary};

use std::path::PathBuf;

/// How images are laid out.
#[derive(Clone, Debug)]
pub struct WriteOptions {
    /// Largest sub-section target in bytes; the target of a section is a
    /// 64th of its bytes within 64 KiB..=this ([`sub_section_target`]), and
    /// a record that would take a sub-section past it starts the next one.
    pub sub_section_bytes: u64,
    /// Sections of namespaces with fewer live inodes than this get no
    /// sub-sections.
    pub sub_section_min_inodes: u64,
    /// Inodes encoded per parallel task.
    pub batch_inodes: usize,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            sub_section_bytes: 2 << 20,
            sub_section_min_inodes: 10_000,
            batch_inodes: 16_384,
        }
    }
}

/// Errors of the writer layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    #[error("writing {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The namespace held in memory breaks a rule of the format (a bug).
    #[error("namespace is corrupt: {detail}")]
    Corrupt { detail: String },
}
