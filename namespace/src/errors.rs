//! Why a mutation of the namespace was refused: [`NsError`], and the
//! helpers that build its messages.

use crate::MAX_NAME_LENGTH;

/// Why a mutation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NsError {
    #[error("no such file or directory: {0}")]
    NotFound(String),
    #[error("already exists: {0}")]
    AlreadyExists(String),
    #[error("not a directory: {0}")]
    NotADirectory(String),
    #[error("not a file: {0}")]
    NotAFile(String),
    #[error("invalid name {0:?}: empty, '.', '..', containing '/' or NUL, or too long")]
    InvalidName(String),
    #[error("invalid path {0:?}: paths are absolute")]
    InvalidPath(String),
    #[error("cannot move {0} into its own subtree")]
    IntoOwnSubtree(String),
    #[error("cannot {0} the root directory")]
    Root(&'static str),
    #[error("directory not empty: {0}")]
    NotEmpty(String),
    #[error("no inode with id {0}")]
    NoInode(u64),
    #[error("string table is full")]
    StringTableFull,
    #[error("a user, group or attribute name of {0} bytes (at most {MAX_NAME_LENGTH})")]
    StringTooLong(usize),
    #[error("inode ids exhausted")]
    IdsExhausted,
    #[error("invalid argument: {0}")]
    Invalid(String),
}

pub(crate) type Result<T> = std::result::Result<T, NsError>;

/// A name or path as an error message shows it (lossy UTF-8).
pub(crate) fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
