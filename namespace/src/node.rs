//! The node table's types: one fixed-size [`Node`] per inode with its
//! kind-specific [`Body`] and where a name lives in the name arena
//! ([`NameRef`]).

use crate::arena::Span;
use crate::consts::{Slot, NO_SLOT};
use crate::values::Perm;

/// Where an inode's name (or a symlink's target) lives in the name arena:
/// a varint length followed by the bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct NameRef {
    /// Arena chunk holding the name.
    pub chunk: u32,
    /// Byte offset of the length prefix within the chunk.
    pub off: u32,
}

/// Marks a directory whose child list lives in `Namespace::owned_children`.
pub(crate) const OWNED_CHILDREN: u32 = u32::MAX;

/// The kind-specific part of an inode, with what only that kind has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    /// A slot whose inode was deleted.
    Free,
    /// A regular file.
    File {
        /// Last access time, in milliseconds since the Unix epoch.
        atime: u64,
        /// Block size new blocks are cut to, in bytes.
        preferred_block_size: u64,
        /// The file's blocks, in file order, in the block arena.
        blocks: Span,
        /// Number of replicas each block should have.
        replication: u16,
        /// HDFS storage policy id (0: unspecified).
        storage_policy: u8,
    },
    /// A directory.
    Directory {
        /// Most inodes the subtree may hold; -1 for no quota.
        ns_quota: i64,
        /// Most bytes (counting replicas) the subtree may hold; -1 for no
        /// quota.
        ds_quota: i64,
        /// Child slots in name order, in the child arena; a chunk of
        /// `u32::MAX` means the list was moved out for editing.
        children: Span,
    },
    /// A symbolic link.
    Symlink {
        /// The target path, in the name arena (1 to [`MAX_NAME_LENGTH`](crate::MAX_NAME_LENGTH)
        /// bytes, not resolved).
        target: NameRef,
    },
}

/// One inode's fixed-size part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node {
    /// Modification time, in milliseconds since the Unix epoch.
    pub mtime: u64,
    /// Owner, group and mode.
    pub perm: Perm,
    /// The inode's name in the name arena (empty for the root).
    pub name: NameRef,
    /// The parent directory's slot; [`NO_SLOT`] for the root and for a
    /// free slot.
    pub parent: Slot,
    /// Whether the inode has an [`Extra`](crate::Extra) in the side map.
    pub has_extra: bool,
    /// What only this kind of inode has.
    pub body: Body,
}

impl Node {
    /// What a node table holds before a loader fills the slot.
    pub const PLACEHOLDER: Node = Node {
        mtime: 0,
        perm: Perm(0),
        name: NameRef { chunk: 0, off: 0 },
        parent: NO_SLOT,
        has_extra: false,
        body: Body::Free,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_stays_small() {
        // Resident memory per inode is a product requirement (README, "Memory").
        assert!(
            size_of::<Node>() <= 64,
            "Node is {} bytes",
            size_of::<Node>()
        );
    }
}
