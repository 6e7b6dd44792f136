//! Why a mutation of the namespace was refused ([`NsError`]), why a
//! namespace could not be built from decoded records ([`BuildError`]), and
//! the helpers that build their messages.

use crate::consts::{Slot, MAX_NAME_LENGTH, ROOT_ID};

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
    /// [`RESERVED_NAME`](crate::RESERVED_NAME) made or renamed to under
    /// the root.
    #[error("{0:?} is reserved under the root: no inode is created or renamed to it")]
    Reserved(String),
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

/// Why [`NamespaceBuilder`](crate::NamespaceBuilder) or
/// [`DirBatch`](crate::DirBatch) refused the records it was given: a rule
/// of FORMAT.md that involves more than one record. Ids are inode ids,
/// slots positions in the node table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A directory record whose parent id is not above the previous
    /// record's, within one piece.
    #[error("directory {0} is not greater than the previous one")]
    DirectoryOutOfOrder(u64),
    /// The first directory of a piece is not above the last of the
    /// previous piece.
    #[error("directory {dir} is not greater than the previous one {previous}")]
    DirectoryAfter {
        /// The directory's id.
        dir: u64,
        /// The previous piece's last directory's id.
        previous: u64,
    },
    /// A directory record's parent id names no inode (a dangling parent).
    #[error("parent {0} is not an inode")]
    ParentNotAnInode(u64),
    /// A directory record's parent is a file or symlink.
    #[error("parent {0} is not a directory")]
    ParentNotADirectory(u64),
    /// A listed child id names no inode (a dangling child).
    #[error("child {child} of {parent} is not an inode")]
    ChildNotAnInode {
        /// The directory's id.
        parent: u64,
        /// The child's id.
        child: u64,
    },
    /// The root listed as a child (of the directory named).
    #[error("the root is listed as a child of {0}")]
    RootListed(u64),
    /// Children not in strictly increasing name order (a duplicate name
    /// among them, or a misordering), at the child named.
    #[error("children of {parent} are not in strictly increasing name order at {child}")]
    ChildrenOutOfOrder {
        /// The directory's id.
        parent: u64,
        /// The first child out of order.
        child: u64,
    },
    /// A directory record with no children.
    #[error("directory {0} has an empty child list")]
    EmptyChildList(u64),
    /// A piece's child lists hold more than `u32::MAX` entries.
    #[error("child list over 4G entries")]
    ChildListTooLong,
    /// A child slot past the node table.
    #[error("slot {slot} outside the table of {total}")]
    SlotOutOfRange {
        /// The slot.
        slot: Slot,
        /// The node table's length.
        total: usize,
    },
    /// An inode listed in two directories (a duplicate listing).
    #[error("inode in slot {0} is listed in two directories")]
    ListedTwice(Slot),
    /// A directory with two records.
    #[error("directory {0} is listed twice")]
    DirectoryListedTwice(u64),
    /// A piece of inodes whose ids do not follow the previous piece's.
    #[error("inode ids of this piece do not follow the previous piece's (last id {0})")]
    PieceIdsOutOfOrder(u64),
    /// More inodes added than the node table holds.
    #[error("more inodes than the node table holds")]
    TooManyInodes,
    /// Fewer inodes added than the node table holds.
    #[error("{decoded} inodes decoded, {expected} expected")]
    InodeCount {
        /// Inodes added.
        decoded: u32,
        /// The node table's length.
        expected: usize,
    },
    /// The first inode is not the root directory.
    #[error("the first inode is not the root directory {ROOT_ID}")]
    NoRoot,
    /// An inode id above NS_INFO's `last_inode_id`.
    #[error("inode id {id} exceeds last_inode_id {last}")]
    InodeIdTooLarge {
        /// The largest inode id.
        id: u64,
        /// NS_INFO's `last_inode_id`.
        last: u64,
    },
    /// A block id above NS_INFO's `last_block_id`.
    #[error("block id {id} exceeds last_block_id {last}")]
    BlockIdTooLarge {
        /// The largest block id.
        id: u64,
        /// NS_INFO's `last_block_id`.
        last: u64,
    },
    /// A block generation stamp above NS_INFO's.
    #[error("block generation stamp {stamp} exceeds the namespace's {max}")]
    GenerationStampTooLarge {
        /// The largest block generation stamp.
        stamp: u64,
        /// NS_INFO's `generation_stamp`.
        max: u64,
    },
    /// Two blocks with one id.
    #[error("block id {0} is used twice")]
    DuplicateBlock(u64),
    /// A block id range too wide for this machine's memory.
    #[error("too many blocks")]
    TooManyBlocks,
    /// An inode not reachable from the root, listed in no directory.
    #[error("inode {0} is in no directory")]
    Orphan(u64),
    /// Every inode is listed once, yet some are not reachable from the
    /// root.
    #[error("the directory tree has a cycle")]
    Cycle,
}

pub(crate) type Result<T> = std::result::Result<T, NsError>;

/// A name or path as an error message shows it (lossy UTF-8).
pub(crate) fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
