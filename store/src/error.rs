//! [`StoreError`], the errors of the store layer.

use nsimage_format::Location;
use nsimage_namespace::NsError;
use std::path::{Path, PathBuf};

/// Errors of the store layer. Each names the file or directory at fault
/// (the path the user gave where one was given).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A file-system call failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory the call was about.
        path: PathBuf,
        /// What the operating system (or an injected fault) said.
        #[source]
        source: std::io::Error,
    },
    /// A journal segment or image is damaged where damage is not expected.
    #[error("{}: corrupt at {at}: {detail}", path.display())]
    Corrupt {
        /// The damaged file.
        path: PathBuf,
        /// Where in it.
        at: Location,
        /// What is wrong.
        detail: String,
    },
    /// The namespace refused the operation; nothing was journaled.
    #[error("operation refused: {0}")]
    Refused(#[from] NsError),
    /// An earlier write or fsync of the journal failed: what is durable is
    /// unknown past the last acknowledged op, so the store accepts nothing
    /// more until it is reopened (which recovers the durable state).
    #[error("the journal failed earlier ({0}); reopen the store to recover")]
    Poisoned(String),
    /// Another process holds the store.
    #[error("{}: the store is locked by another process", path.display())]
    Locked {
        /// The store directory.
        path: PathBuf,
    },
    /// The store holds something it must not (an unknown version, a txid
    /// past the last one, a second store in one directory): a data error.
    #[error("{}: {detail}", path.display())]
    Invalid {
        /// The store directory or the file at fault.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// The path is not a store (missing VERSION, not a directory): a usage
    /// error.
    #[error("{}: {detail}", path.display())]
    NotAStore {
        /// The path given as a store.
        path: PathBuf,
        /// Why it is not one.
        detail: String,
    },
    /// No image in the store loads.
    #[error("{}: no image verifies: {detail}", path.display())]
    NoImage {
        /// The store directory.
        path: PathBuf,
        /// Each image tried, with why it did not load.
        detail: String,
    },
    /// An encrypted store (or segment) without its key: none given, or
    /// another one. Found before anything is read past the at-rest
    /// settings or a segment's header, and before anything is written.
    #[error("{}: {detail}", path.display())]
    Key {
        /// The store directory or the segment.
        path: PathBuf,
        /// What is missing or wrong.
        detail: String,
    },
    /// Loading an image failed outside recovery's fallback.
    #[error(transparent)]
    Load(#[from] nsimage_loader::LoadError),
}

impl StoreError {
    /// True when stored data is at fault (exit code 1 in the CLI).
    pub fn is_data_error(&self) -> bool {
        matches!(
            self,
            StoreError::Corrupt { .. }
                | StoreError::NoImage { .. }
                | StoreError::Invalid { .. }
                | StoreError::Key { .. }
        ) || matches!(self, StoreError::Load(l) if l.is_data_error())
    }
}

/// The error of [`Store::submit_with`](crate::Store::submit_with): the
/// builder's own error, or the store's.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError<E> {
    /// The builder refused: nothing was applied, no txid taken.
    #[error("{0}")]
    Build(E),
    /// The store refused or failed: as [`Store::submit`](crate::Store::submit).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Maps an I/O error to [`StoreError::Io`] naming `path`.
pub(crate) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}
