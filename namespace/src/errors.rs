//! Why a mutation of the namespace was refused: [`NsError`], and the
//! helpers that build its messages.

use crate::consts::MAX_NAME_LENGTH;

/// Why a mutation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NsError {
    /// The path (shown) names no inode.
    #[error("no such file or directory: {0}")]
    NotFound(String),
    /// A name to create or rename to is taken in its directory.
    #[error("already exists: {0}")]
    AlreadyExists(String),
    /// A path component or parent inode is not a directory.
    #[error("not a directory: {0}")]
    NotADirectory(String),
    /// A file-only operation (blocks, replication, under construction) on
    /// another kind.
    #[error("not a file: {0}")]
    NotAFile(String),
    /// A name an image may not hold (see `valid_name` in `rules.rs`).
    #[error("invalid name {0:?}: empty, '.', '..', containing '/' or NUL, or too long")]
    InvalidName(String),
    /// A path that does not start with `/`.
    #[error("invalid path {0:?}: paths are absolute")]
    InvalidPath(String),
    /// A rename of a directory into its own subtree.
    #[error("cannot move {0} into its own subtree")]
    IntoOwnSubtree(String),
    /// An operation the root does not allow (named): rename, delete, or
    /// giving it a name.
    #[error("cannot {0} the root directory")]
    Root(&'static str),
    /// A non-recursive delete of a directory with children.
    #[error("directory not empty: {0}")]
    NotEmpty(String),
    /// No live inode has this id.
    #[error("no inode with id {0}")]
    NoInode(u64),
    /// The string table already holds its 2^24 - 1 strings.
    #[error("string table is full")]
    StringTableFull,
    /// The table of attribute classes (owner, mode, block size,
    /// replication, quotas) already holds `u32::MAX` of them.
    #[error("attribute class table is full")]
    ClassTableFull,
    /// A user, group or attribute name over [`MAX_NAME_LENGTH`] bytes (the
    /// length).
    #[error("a user, group or attribute name of {0} bytes (at most {MAX_NAME_LENGTH})")]
    StringTooLong(usize),
    /// No inode id or slot is left to give.
    #[error("inode ids exhausted")]
    IdsExhausted,
    /// Any other refused argument (block id, quota, xattr, ACL, symlink
    /// target), explained.
    #[error("invalid argument: {0}")]
    Invalid(String),
}

pub(crate) type Result<T> = std::result::Result<T, NsError>;

/// A name or path as an error message shows it (lossy UTF-8).
pub(crate) fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
