//! [`ViewError`]: the viewer layer's errors.

use nsimage_format::Location;
use nsimage_loader::LoadError;
use std::path::PathBuf;

/// Errors of the viewer layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ViewError {
    /// The image could not be read or decoded.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A path the user gave is not one the viewer accepts (relative, with
    /// `.` or `..` segments, a NUL byte): a usage error.
    #[error("{path:?}: {detail}")]
    BadPath {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        detail: String,
    },
    /// The path names nothing in the image, or goes through a file or a
    /// symlink: the data does not hold it.
    #[error(
        "{}: no such path in the image{}",
        crate::text::escaped(path.as_bytes()),
        why.as_deref().map(|w| format!(" ({})", crate::text::escaped(w.as_bytes()))).unwrap_or_default()
    )]
    NoSuchPath {
        /// The path as given.
        path: String,
        /// Why, when the walk stopped somewhere telling (a file on the way).
        why: Option<String>,
    },
    /// An option's value is out of range (e.g. a histogram step of 0): a
    /// usage error.
    #[error("{detail}")]
    BadArgument {
        /// What is wrong.
        detail: String,
    },
    /// Writing an output failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file written.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// Two images given to `diff` belong to different namespaces: their
    /// inode ids do not name the same inodes.
    #[error("the images belong to different namespaces (OLD's namespace id is {old}, NEW's {new}): a diff matches inodes by id, which only means something within one namespace")]
    DifferentNamespaces {
        /// OLD's namespace id.
        old: u64,
        /// NEW's namespace id.
        new: u64,
    },
    /// Streaming the image's tree needs more memory than the budget
    /// ([`crate::input::Budget`]): a refusal before any output, not a
    /// fault of the image (whose counts were checked first).
    #[error(
        "{}: streaming its tree needs about {}, more than the memory limit of {} ({}); raise --memory-limit or use a larger machine",
        image.display(),
        nsimage_loader::budget::human_size(*needed),
        nsimage_loader::budget::human_size(*limit),
        if *given { "--memory-limit" } else { "the memory available" }
    )]
    TooLarge {
        /// The image.
        image: PathBuf,
        /// Bytes its tree needs, about.
        needed: u64,
        /// The budget, in bytes.
        limit: u64,
        /// Whether the user gave the budget.
        given: bool,
    },
    /// An image the stream cannot take needs more memory to load whole
    /// than the budget (about 72 bytes an inode).
    #[error(
        "{}: this image cannot be streamed and loading it whole needs about {}, more than the memory limit of {}",
        image.display(),
        nsimage_loader::budget::human_size(*needed),
        nsimage_loader::budget::human_size(*limit)
    )]
    TooLargeToLoad {
        /// The image.
        image: PathBuf,
        /// Bytes its load needs, about.
        needed: u64,
        /// The budget, in bytes.
        limit: u64,
    },
    /// The image breaks a rule of the format at a known place.
    #[error("{}: corrupt at {at}: {detail}", path.display())]
    Corrupt {
        /// The image.
        path: PathBuf,
        /// Where.
        at: Location,
        /// The rule broken.
        detail: String,
    },
    /// An OIV XML document read back breaks a rule of the format.
    #[error("{path}: not OIV XML nsimage can read back, at byte offset {offset}: {detail}", path = .path.display())]
    Xml {
        /// The document.
        path: PathBuf,
        /// The byte offset of the event that broke the rule.
        offset: u64,
        /// The rule broken.
        detail: String,
    },
}

impl ViewError {
    /// True when the image's data is at fault or lacks what was asked (exit
    /// code 1 in the CLI), false for usage and I/O errors and a memory
    /// shortfall (exit code 2).
    pub fn is_data_error(&self) -> bool {
        match self {
            ViewError::Load(l) => l.is_data_error(),
            ViewError::NoSuchPath { .. }
            | ViewError::Corrupt { .. }
            | ViewError::Xml { .. }
            | ViewError::DifferentNamespaces { .. } => true,
            ViewError::BadPath { .. }
            | ViewError::BadArgument { .. }
            | ViewError::Io { .. }
            | ViewError::TooLarge { .. }
            | ViewError::TooLargeToLoad { .. } => false,
        }
    }
}
