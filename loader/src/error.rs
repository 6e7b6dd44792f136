//! The loader's error type: every error names the file, and data errors
//! name the place in it (section, sub-section, offset).

use nsimage_format::{FormatError, Location};
use std::path::{Path, PathBuf};

/// Errors of the loader layer; each names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file could not be opened, mapped or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The image file.
        path: PathBuf,
        /// What the system reported.
        #[source]
        source: std::io::Error,
    },
    /// The image breaks a rule of the format at a known place.
    #[error("{}: corrupt at {at}: {detail}", path.display())]
    Corrupt {
        /// The image file.
        path: PathBuf,
        /// Where in the file: section, sub-section and byte offset.
        at: Location,
        /// Which rule the bytes break.
        detail: String,
    },
    /// An encrypted image without its key: none given, or another one.
    #[error("{}: {detail}", path.display())]
    Key {
        /// The image file.
        path: PathBuf,
        /// What is missing or wrong.
        detail: String,
    },
    /// A one-path lookup ([`load_path`](crate::load_path)) found no such
    /// path: a component is missing, or the path goes through a file or a
    /// symlink. The data does not hold it.
    #[error(
        "{}: no such path in the image{}",
        path.display(),
        why.as_deref().map(|w| format!(" ({w})")).unwrap_or_default()
    )]
    NoSuchPath {
        /// The image file.
        path: PathBuf,
        /// Why, when the walk stopped somewhere telling (a file on the way).
        why: Option<String>,
    },
    /// A whole load of the image needs more memory than the budget
    /// ([`Budget`](crate::budget::Budget), about
    /// [`LOAD_BYTES_PER_INODE`](crate::budget::LOAD_BYTES_PER_INODE) bytes
    /// an inode): refused before anything is sized from the image. Not the
    /// data's fault.
    #[error(
        "{}: loading it needs about {}, more than the memory limit of {} ({}); raise --memory-limit or use a larger machine",
        path.display(),
        crate::budget::human_size(*needed),
        crate::budget::human_size(*limit),
        if *given { "--memory-limit" } else { "the memory available" }
    )]
    TooLarge {
        /// The image file.
        path: PathBuf,
        /// Bytes its load needs, about.
        needed: u64,
        /// The budget, in bytes.
        limit: u64,
        /// Whether the user gave the budget.
        given: bool,
    },
    /// A Hadoop image's `.md5` sidecar names another file (the image was
    /// renamed, or copied with its sidecar under a new name): its digest
    /// is not this file's to check. Not the image's fault.
    #[error(
        "{}: the MD5 sidecar names file {names}, not {image}: the image was renamed or copied \
         under another name. Rename it back, fix the sidecar, or load it without the check \
         (--md5 ignore)",
        sidecar.display()
    )]
    Md5Names {
        /// The sidecar.
        sidecar: PathBuf,
        /// The file it names.
        names: String,
        /// The image's own file name.
        image: String,
    },
    /// The file is neither an nsimage image nor a Hadoop fsimage (no magic
    /// of either at its start, nor nsimage's at its end): a file of
    /// another kind, named as what it looks like, not as a damaged image.
    /// Still the data's fault (exit 1): it cannot be read as an image.
    #[error(
        "{}: not an image: neither an nsimage image nor a Hadoop fsimage ({looks_like})",
        path.display()
    )]
    NotAnImage {
        /// The file.
        path: PathBuf,
        /// What it looks like instead.
        looks_like: String,
    },
    /// A well-formed image this build cannot read (version, features, kinds).
    #[error("{}: {source}", path.display())]
    Unsupported {
        /// The image file.
        path: PathBuf,
        /// What this build does not support.
        #[source]
        source: FormatError,
    },
}

impl LoadError {
    /// Names the file in an error of the format layer: a corruption keeps
    /// its location, anything else is unsupported.
    pub fn from_format(path: &Path, e: FormatError) -> Self {
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

    /// True when the data is at fault (corrupt, unsupported, or without the
    /// path looked up), false for I/O and a memory shortfall.
    pub fn is_data_error(&self) -> bool {
        !matches!(
            self,
            LoadError::Io { .. } | LoadError::TooLarge { .. } | LoadError::Md5Names { .. }
        )
    }
}
