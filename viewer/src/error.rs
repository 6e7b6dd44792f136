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
}

impl ViewError {
    /// True when the image's data is at fault or lacks what was asked (exit
    /// code 1 in the CLI), false for usage and I/O errors (exit code 2).
    pub fn is_data_error(&self) -> bool {
        match self {
            ViewError::Load(l) => l.is_data_error(),
            ViewError::NoSuchPath { .. }
            | ViewError::Corrupt { .. }
            | ViewError::DifferentNamespaces { .. } => true,
            ViewError::BadPath { .. } | ViewError::BadArgument { .. } | ViewError::Io { .. } => {
                false
            }
        }
    }
}
