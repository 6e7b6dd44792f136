//! The node table's types: one fixed-size [`Node`] per inode with its
//! kind-specific [`Body`] and where a name lives in the name arena
//! ([`NameRef`]).

use crate::arena::Span;
use crate::classes::{Class, ClassId};
use crate::consts::{Slot, NO_SLOT};

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
/// Marks a directory whose children are consecutive slots: the span's
/// `start` is the first one, and no arena holds the list.
pub(crate) const RUN_CHILDREN: u32 = u32::MAX - 1;

/// What a node is: its kind, or a free slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    /// A slot whose inode was deleted.
    Free,
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A symbolic link.
    Symlink,
}

/// The kind-specific part of an inode, unpacked from its [`Node`] and
/// class: what [`Inode::body`](crate::Inode::body) returns.
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
        /// The file's blocks, in file order: where they start in the name
        /// arena (after the name) and how many there are.
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
        /// `u32::MAX` means the list was moved out for editing, one of
        /// `u32::MAX - 1` that the children are the `len` consecutive
        /// slots from `start` (no arena holds them).
        children: Span,
    },
    /// A symbolic link.
    Symlink {
        /// The target path, in the name arena after the link's name (1 to [`MAX_NAME_LENGTH`](crate::MAX_NAME_LENGTH)
        /// bytes, not resolved).
        target: NameRef,
    },
}

/// One inode's fixed-size part: 40 bytes. What many inodes share (owner,
/// group, mode, a file's block size, replication and storage policy, a
/// directory's quotas) is in its class (see `classes.rs`); what varies per
/// inode is here. An inode's variable part is one record in the name
/// arena: its name (a varint length, then the bytes), followed for a file
/// by its `count` blocks (`blocks.rs`) and for a symlink by
/// its target (a varint length, then the bytes), so that one reference
/// finds them all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node {
    /// Modification time, in milliseconds since the Unix epoch.
    pub(crate) mtime: u64,
    /// A file's access time; where a directory's child list starts in the
    /// child arena (chunk in the high half, [`OWNED_CHILDREN`] once moved
    /// out for editing; start in the low half); 0 for a symlink.
    pub(crate) aux: u64,
    /// The inode's record in the name arena (its name empty for the root).
    pub(crate) name: NameRef,
    /// The parent directory's slot; [`NO_SLOT`] for the root and for a
    /// free slot.
    pub parent: Slot,
    /// The inode's attribute class.
    pub(crate) class: ClassId,
    /// A file's number of blocks; the length of a directory's child list
    /// in the child arena; 0 otherwise.
    pub(crate) count: u32,
    /// File, directory, symlink or free.
    pub(crate) kind: Kind,
    /// Whether the inode has an [`Extra`](crate::Extra) in the side map.
    pub(crate) has_extra: bool,
}

// Resident memory per inode is a product requirement (README, "Load speed
// per core"): a node that grows fails the build.
const _: () = assert!(size_of::<Node>() == 40);

impl Node {
    /// What a node table holds before a loader fills the slot.
    pub const PLACEHOLDER: Node = Node {
        mtime: 0,
        aux: 0,
        name: NameRef { chunk: 0, off: 0 },
        parent: NO_SLOT,
        class: 0,
        count: 0,
        kind: Kind::Free,
        has_extra: false,
    };

    /// A node of `kind` and `class`, not yet named nor placed, with no
    /// blocks or children.
    pub(crate) fn new(kind: Kind, class: ClassId, mtime: u64, aux: u64) -> Node {
        Node {
            mtime,
            aux,
            class,
            kind,
            ..Node::PLACEHOLDER
        }
    }

    /// Whether the slot holds a directory.
    #[inline]
    pub(crate) fn is_dir(&self) -> bool {
        self.kind == Kind::Directory
    }

    /// A directory's child list in the child arena (chunk
    /// [`OWNED_CHILDREN`] once moved out for editing); empty for other
    /// kinds.
    #[inline]
    pub(crate) fn children(&self) -> Span {
        if self.kind != Kind::Directory {
            return Span::default();
        }
        let at = NameRef::unpack(self.aux);
        Span {
            chunk: at.chunk,
            start: at.off,
            len: self.count,
        }
    }

    /// Sets a directory's child list to `s`.
    #[inline]
    pub(crate) fn set_children(&mut self, s: Span) {
        self.aux = NameRef {
            chunk: s.chunk,
            off: s.start,
        }
        .pack();
        self.count = s.len;
    }

    /// Whether a directory's child list was moved out for editing.
    #[inline]
    pub(crate) fn owns_children(&self) -> bool {
        self.is_dir() && NameRef::unpack(self.aux).chunk == OWNED_CHILDREN
    }

    /// The body, with the class's fields filled in from `class`; `tail`
    /// is where the record's part after the name starts (see
    /// `Namespace::tail_of`).
    #[inline]
    pub(crate) fn body(&self, class: &Class, tail: NameRef) -> Body {
        match self.kind {
            Kind::Free => Body::Free,
            Kind::File => Body::File {
                atime: self.aux,
                preferred_block_size: class.a,
                blocks: Span {
                    chunk: tail.chunk,
                    start: tail.off,
                    len: self.count,
                },
                replication: class.replication,
                storage_policy: class.storage_policy,
            },
            Kind::Directory => Body::Directory {
                ns_quota: class.a.cast_signed(),
                ds_quota: class.b.cast_signed(),
                children: self.children(),
            },
            Kind::Symlink => Body::Symlink { target: tail },
        }
    }
}

impl NameRef {
    /// The reference as one `u64` (chunk in the high half).
    pub(crate) fn pack(self) -> u64 {
        (u64::from(self.chunk) << 32) | u64::from(self.off)
    }

    /// The reference [`pack`](Self::pack) made `v` from.
    // Each half is a u32 by construction.
    #[allow(clippy::cast_possible_truncation)]
    pub(crate) fn unpack(v: u64) -> NameRef {
        NameRef {
            chunk: (v >> 32) as u32,
            off: v as u32,
        }
    }
}
