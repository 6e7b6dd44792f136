//! The errors of an export.

use std::path::PathBuf;

/// What can go wrong in an export. Only [`ExportError::Load`] is a data
/// error (an image streamed piece by piece, refused as a load refuses it);
/// a loaded namespace was checked before.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// The final name of an output holds something that is not a regular
    /// file (a symbolic link, FIFO, device node, socket or directory); it
    /// is left as it is.
    #[error("{}: is {kind}; only a missing path or a regular file is replaced", path.display())]
    TargetRefused {
        /// The final name.
        path: PathBuf,
        /// What it holds.
        kind: &'static str,
    },
    /// The image streamed was refused (a located [`LoadError::Corrupt`]
    /// for damage). The load's error is this one's source (not
    /// `transparent`, which would hand on the load error's own source and
    /// hide it): the command line finds it there for its exit code.
    ///
    /// [`LoadError::Corrupt`]: nsimage_loader::LoadError::Corrupt
    #[error("{0}")]
    Load(#[from] nsimage_loader::LoadError),
    /// The Parquet encoder refused what it was given.
    #[error("parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    /// An option is out of range.
    #[error("{detail}")]
    BadArgument {
        /// What is wrong.
        detail: String,
    },
    /// A rule of the encoder itself was broken (a bug).
    #[error("internal error: {detail}")]
    Internal {
        /// What is wrong.
        detail: String,
    },
}
