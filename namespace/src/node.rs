//! The node table's types: one fixed-size [`Node`] per inode with its
//! kind-specific [`Body`] and where a name lives in the name arena
//! ([`NameRef`]).

use crate::arena::Span;
use crate::classes::{Class, ClassId, MAX_CLASS};
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
/// Marks, in [`Body::Directory`]'s span, children that are consecutive
/// slots: the span's `start` is the first one, and no arena holds them.
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

/// Where a directory's children are, as its node says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum List {
    /// No children yet (a directory made since the load, or not a
    /// directory).
    None,
    /// In the child arena: a `u32` length at (`chunk`, `off`), then the
    /// slots.
    Arena { chunk: u32, off: u32 },
    /// The `len` consecutive slots from `first`: no arena holds them.
    Run { first: Slot, len: u32 },
    /// Moved out for editing, into `Namespace::owned_children`.
    Owned,
}

/// The chunk of a directory's list that says it has none.
const NO_LIST: u32 = u32::MAX - 2;

/// Bits of [`Node::bits`]: the class id below them, then the kind, whether
/// the inode has an extra, whether a directory's children are a run.
const CLASS_BITS: u32 = 28;
const CLASS_MASK: u32 = (1 << CLASS_BITS) - 1;
const KIND_SHIFT: u32 = CLASS_BITS;
const EXTRA_BIT: u32 = 1 << 30;
const RUN_BIT: u32 = 1 << 31;
// The class table gives no id a node cannot hold.
const _: () = assert!(MAX_CLASS == CLASS_MASK);

/// One inode's fixed-size part: 32 bytes. What many inodes share (owner,
/// group, mode, a file's block size, replication and storage policy, a
/// directory's quotas) is in its class (see `classes.rs`); what varies per
/// inode is here. An inode's variable part is one record in the name
/// arena: its name (a varint length, then the bytes), followed for a file
/// by its access time (a varint: the zigzag of its distance from the
/// modification time, one byte when they are equal) and its blocks
/// (`blocks.rs`), and for a symlink by its target (a varint length, then
/// the bytes), so that one reference finds them all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node {
    /// Modification time, in milliseconds since the Unix epoch.
    pub(crate) mtime: u64,
    /// A file's number of blocks; where a directory's children are (see
    /// [`Node::list`]); 0 for a symlink.
    pub(crate) aux: u64,
    /// The inode's record in the name arena (its name empty for the root).
    pub(crate) name: NameRef,
    /// The parent directory's slot; [`NO_SLOT`] for the root and for a
    /// free slot.
    pub parent: Slot,
    /// The class id (the low 28 bits), the kind (2 bits), whether the inode
    /// has an [`Extra`](crate::Extra) in the side map, and whether a
    /// directory's children are a run of slots.
    pub(crate) bits: u32,
}

// Resident memory per inode is a product requirement (README, "Load speed
// per core"): a node that grows fails the build.
const _: () = assert!(size_of::<Node>() == 32);

impl Node {
    /// What a node table holds before a loader fills the slot.
    pub const PLACEHOLDER: Node = Node {
        mtime: 0,
        aux: 0,
        name: NameRef { chunk: 0, off: 0 },
        parent: NO_SLOT,
        bits: 0,
    };

    /// A node of `kind` and `class`, not yet named nor placed, with no
    /// blocks or children.
    pub(crate) fn new(kind: Kind, class: ClassId, mtime: u64) -> Node {
        let mut n = Node {
            mtime,
            ..Node::PLACEHOLDER
        };
        n.set_kind(kind);
        n.set_class(class);
        if kind == Kind::Directory {
            n.set_list(List::None);
        }
        n
    }

    /// File, directory, symlink or free.
    #[inline]
    pub(crate) fn kind(&self) -> Kind {
        match (self.bits >> KIND_SHIFT) & 3 {
            1 => Kind::File,
            2 => Kind::Directory,
            3 => Kind::Symlink,
            _ => Kind::Free,
        }
    }

    #[inline]
    pub(crate) fn set_kind(&mut self, k: Kind) {
        self.bits = (self.bits & !(3 << KIND_SHIFT)) | ((k as u32) << KIND_SHIFT);
    }

    /// The inode's attribute class.
    #[inline]
    pub(crate) fn class(&self) -> ClassId {
        self.bits & CLASS_MASK
    }

    /// Gives the node class `c` (at most [`MAX_CLASS`]; the class table
    /// refuses more).
    #[inline]
    pub(crate) fn set_class(&mut self, c: ClassId) {
        debug_assert!(c <= MAX_CLASS);
        self.bits = (self.bits & !CLASS_MASK) | (c & CLASS_MASK);
    }

    /// Whether the inode has an [`Extra`](crate::Extra) in the side map.
    #[inline]
    pub(crate) fn has_extra(&self) -> bool {
        self.bits & EXTRA_BIT != 0
    }

    #[inline]
    pub(crate) fn set_has_extra(&mut self, on: bool) {
        self.bits = if on {
            self.bits | EXTRA_BIT
        } else {
            self.bits & !EXTRA_BIT
        };
    }

    /// A file's number of blocks; 0 for other kinds.
    #[inline]
    pub(crate) fn count(&self) -> u32 {
        if self.kind() == Kind::File {
            // A file's aux is its block count, a u32.
            #[allow(clippy::cast_possible_truncation)]
            let c = self.aux as u32;
            c
        } else {
            0
        }
    }

    /// Sets a file's number of blocks.
    #[inline]
    pub(crate) fn set_count(&mut self, c: u32) {
        self.aux = u64::from(c);
    }

    /// Whether the slot holds a directory.
    #[inline]
    pub(crate) fn is_dir(&self) -> bool {
        self.kind() == Kind::Directory
    }

    /// Where a directory's children are; [`List::None`] for other kinds.
    #[inline]
    pub(crate) fn list(&self) -> List {
        if !self.is_dir() {
            return List::None;
        }
        let at = NameRef::unpack(self.aux);
        if self.bits & RUN_BIT != 0 {
            List::Run {
                first: at.off,
                len: at.chunk,
            }
        } else if at.chunk == OWNED_CHILDREN {
            List::Owned
        } else if at.chunk == NO_LIST {
            List::None
        } else {
            List::Arena {
                chunk: at.chunk,
                off: at.off,
            }
        }
    }

    /// Sets where a directory's children are.
    #[inline]
    pub(crate) fn set_list(&mut self, l: List) {
        let (aux, run) = match l {
            List::None => (
                NameRef {
                    chunk: NO_LIST,
                    off: 0,
                }
                .pack(),
                false,
            ),
            List::Arena { chunk, off } => (NameRef { chunk, off }.pack(), false),
            List::Run { first, len } => (
                NameRef {
                    chunk: len,
                    off: first,
                }
                .pack(),
                true,
            ),
            List::Owned => (
                NameRef {
                    chunk: OWNED_CHILDREN,
                    off: 0,
                }
                .pack(),
                false,
            ),
        };
        self.aux = aux;
        self.bits = if run {
            self.bits | RUN_BIT
        } else {
            self.bits & !RUN_BIT
        };
    }

    /// Whether a directory's child list was moved out for editing.
    #[inline]
    pub(crate) fn owns_children(&self) -> bool {
        self.list() == List::Owned
    }

    /// The body, with the class's fields filled in from `class`; `tail`
    /// is where a file's blocks or a symlink's target start in its record,
    /// `atime` a file's access time and `children` a directory's child
    /// list (see `Namespace::body_of`).
    #[inline]
    pub(crate) fn body(&self, class: &Class, tail: NameRef, atime: u64, children: Span) -> Body {
        match self.kind() {
            Kind::Free => Body::Free,
            Kind::File => Body::File {
                atime,
                preferred_block_size: class.a,
                blocks: Span {
                    chunk: tail.chunk,
                    start: tail.off,
                    len: self.count(),
                },
                replication: class.replication,
                storage_policy: class.storage_policy,
            },
            Kind::Directory => Body::Directory {
                ns_quota: class.a.cast_signed(),
                ds_quota: class.b.cast_signed(),
                children,
            },
            Kind::Symlink => Body::Symlink { target: tail },
        }
    }
}

/// A file's access time as its record keeps it: the zigzag of its
/// distance from the modification time (wrapping, so any pair of times is
/// kept exactly; 0 when they are equal).
#[inline]
pub(crate) fn atime_tag(atime: u64, mtime: u64) -> u64 {
    let d = atime.wrapping_sub(mtime).cast_signed();
    ((d << 1) ^ (d >> 63)).cast_unsigned()
}

/// The access time a tag of [`atime_tag`] and `mtime` stand for.
#[inline]
pub(crate) fn atime_of_tag(tag: u64, mtime: u64) -> u64 {
    let d = (tag >> 1).cast_signed() ^ -((tag & 1).cast_signed());
    mtime.wrapping_add(d.cast_unsigned())
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
