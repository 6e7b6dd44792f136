//! nsimage loader: image → in-memory namespace (format v1,
//! `format-spec/FORMAT.md`).
//!
//! - [`source`]: the image file: one read of the tail for footer and index,
//!   then one read per piece (section or sub-section), never one per record;
//! - [`walk`]: the zero-copy protobuf record walker of the hot path;
//! - [`decode`]: records of each section kind into builder batches; the unit
//!   of work is one piece, so the serial and parallel paths share it;
//! - `load`: plans the pieces and runs them on a thread pool, merging into
//!   sharded tables ([`shard`]); one thread runs the same code serially;
//! - `stream`: the streaming baseline (buffered reader, prost per record);
//! - [`verify`]: checks every checksum and structural rule, listing each bad
//!   region.
#![deny(unsafe_code)]

mod assemble;
pub mod decode;
mod load;
mod mmap;
pub mod record;
pub mod shard;
pub mod source;
mod stream;
mod table;
mod trim;
mod verify;

pub use assemble::Assembly;
pub use load::{load, LoadOptions, LoadStats, Loaded, DEFAULT_PARALLEL_THRESHOLD};
pub use shard::LockStats;
pub use source::{ImageSource, ReadStrategy};
pub use verify::{verify, Problem, VerifyReport};

use nsimage_format::{FormatError, Location};
use std::path::PathBuf;

/// Errors of the loader layer; each names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The image breaks a rule of the format at a known place.
    #[error("{}: corrupt at {at}: {detail}", path.display())]
    Corrupt {
        path: PathBuf,
        at: Location,
        detail: String,
    },
    /// A well-formed image this build cannot read (version, features, kinds).
    #[error("{}: {source}", path.display())]
    Unsupported {
        path: PathBuf,
        #[source]
        source: FormatError,
    },
}

impl LoadError {
    pub fn from_format(path: &std::path::Path, e: FormatError) -> Self {
        match e {
            FormatError::Corrupt { at, detail } => LoadError::Corrupt {
                path: path.to_path_buf(),
                at,
                detail,
            },
            other => LoadError::Unsupported {
                path: path.to_path_buf(),
                source: other,
            },
        }
    }

    /// True when the data is at fault (corrupt or unsupported), false for I/O.
    pub fn is_data_error(&self) -> bool {
        !matches!(self, LoadError::Io { .. })
    }
}
