//! The read view of an inode: [`Inode`], borrowed from its namespace, with
//! its type-specific attributes ([`Attrs`], [`FileAttrs`]); and the
//! [`Namespace`] methods that hand inodes out.

use crate::blocks::Blocks;
use crate::children::Children;
use crate::classes::Class;
use crate::consts::{Slot, NO_SLOT};
use crate::namespace::Namespace;
use crate::node::{Body, Kind, Node};
use crate::values::{Extra, InodeKind, Perm};

impl Namespace {
    /// A live inode by slot.
    pub fn at(&self, slot: Slot) -> Option<Inode<'_>> {
        let node = self.nodes.get(slot as usize)?;
        (node.kind() != Kind::Free).then_some(Inode {
            ns: self,
            slot,
            node,
        })
    }

    /// A live inode by id.
    pub fn inode(&self, id: u64) -> Option<Inode<'_>> {
        self.at(self.slot_of(id)?)
    }

    /// The root directory (slot 0, id [`ROOT_ID`](crate::ROOT_ID)).
    pub fn root(&self) -> Inode<'_> {
        Inode {
            ns: self,
            slot: 0,
            node: &self.nodes[0],
        }
    }

    /// Live inodes in increasing id order.
    pub fn iter(&self) -> impl Iterator<Item = Inode<'_>> + '_ {
        (0..self.slot_count()).filter_map(|s| self.at(s))
    }
}

/// A file's own attributes, with its blocks resolved: what readers of an
/// inode use instead of destructuring [`Body::File`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileAttrs<'a> {
    /// Last access time, milliseconds since the Unix epoch.
    pub atime: u64,
    /// The block size new blocks of the file get, in bytes.
    pub preferred_block_size: u64,
    /// Replicas per block.
    pub replication: u16,
    /// HDFS storage policy id (0: unspecified).
    pub storage_policy: u8,
    /// The file's blocks, in order.
    pub blocks: Blocks<'a>,
}

impl FileAttrs<'_> {
    /// The file's length: the sum of its block lengths (saturating, since
    /// block lengths come from images and journals).
    pub fn length(&self) -> u64 {
        self.blocks
            .iter()
            .fold(0u64, |sum, b| sum.saturating_add(b.length))
    }
}

/// What an inode holds beyond the fields every inode has, by type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attrs<'a> {
    /// A file.
    File(FileAttrs<'a>),
    /// A directory and its quotas (-1: none).
    Directory {
        /// Namespace quota: most inodes in the subtree, or -1.
        ns_quota: i64,
        /// Disk-space quota in bytes, or -1.
        ds_quota: i64,
    },
    /// A symbolic link.
    Symlink {
        /// The link's target, as stored.
        target: &'a [u8],
    },
}

/// A live inode, borrowed from its namespace.
#[derive(Clone, Copy)]
pub struct Inode<'a> {
    ns: &'a Namespace,
    slot: Slot,
    node: &'a Node,
}

impl<'a> Inode<'a> {
    /// The inode's slot in the node table.
    pub fn slot(&self) -> Slot {
        self.slot
    }
    /// The inode's id.
    pub fn id(&self) -> u64 {
        self.ns.ids.id(self.slot)
    }
    /// File, directory or symlink.
    pub fn kind(&self) -> InodeKind {
        match self.node.kind() {
            Kind::File => InodeKind::File,
            Kind::Symlink => InodeKind::Symlink,
            _ => InodeKind::Directory,
        }
    }
    /// The inode's name within its parent (empty for the root); any bytes
    /// but `/` and NUL, not necessarily UTF-8.
    pub fn name(&self) -> &'a [u8] {
        self.ns.name_bytes(self.node.name)
    }
    /// The parent's id; `None` for the root.
    pub fn parent(&self) -> Option<u64> {
        (self.node.parent != NO_SLOT).then(|| self.ns.ids.id(self.node.parent))
    }
    /// Owner, group and mode, packed.
    pub fn perm(&self) -> Perm {
        self.class().perm
    }
    /// The owning user's name.
    pub fn user(&self) -> &'a [u8] {
        self.ns.strings.get(self.perm().user()).unwrap_or_default()
    }
    /// The owning group's name.
    pub fn group(&self) -> &'a [u8] {
        self.ns.strings.get(self.perm().group()).unwrap_or_default()
    }
    /// Permission bits.
    pub fn mode(&self) -> u16 {
        self.perm().mode()
    }
    /// Modification time, in milliseconds since the Unix epoch.
    pub fn mtime(&self) -> u64 {
        self.node.mtime
    }
    /// The kind-specific part, unpacked.
    pub fn body(&self) -> Body {
        self.ns.body_of(self.node)
    }
    fn class(&self) -> &'a Class {
        self.ns.classes.get(self.node.class())
    }
    /// The type-specific attributes (file, directory or symlink).
    pub fn attrs(&self) -> Attrs<'a> {
        match self.body() {
            Body::File {
                atime,
                preferred_block_size,
                blocks,
                replication,
                storage_policy,
            } => Attrs::File(FileAttrs {
                atime,
                preferred_block_size,
                replication,
                storage_policy,
                blocks: self.ns.blocks_in(blocks, preferred_block_size),
            }),
            Body::Directory {
                ns_quota, ds_quota, ..
            } => Attrs::Directory { ns_quota, ds_quota },
            Body::Symlink { target } => Attrs::Symlink {
                target: self.ns.name_bytes(target),
            },
            // An `Inode` is never a free slot (`Namespace::at` refuses
            // them); read as `kind` reads it, a directory without quotas.
            Body::Free => Attrs::Directory {
                ns_quota: -1,
                ds_quota: -1,
            },
        }
    }
    /// A file's blocks in file order; empty for other kinds.
    pub fn blocks(&self) -> Blocks<'a> {
        match self.node.kind() {
            Kind::File => self.ns.blocks_of(self.node),
            _ => Blocks::empty(),
        }
    }
    /// Child slots, sorted by name (none unless a directory).
    pub fn child_slots(&self) -> Children<'a> {
        self.ns.child_slots(self.slot)
    }
    /// Children, in name order (none unless a directory).
    pub fn children(&self) -> impl Iterator<Item = Inode<'a>> + 'a {
        let ns = self.ns;
        self.child_slots().into_iter().filter_map(move |s| ns.at(s))
    }
    /// A symlink's target; `None` for other kinds.
    pub fn symlink_target(&self) -> Option<&'a [u8]> {
        match self.body() {
            Body::Symlink { target } => Some(self.ns.name_bytes(target)),
            _ => None,
        }
    }
    /// Xattrs, ACL and under-construction mark, if the inode has any.
    pub fn extra(&self) -> Option<&'a Extra> {
        if self.node.has_extra() {
            self.ns.extras.get(self.slot)
        } else {
            None
        }
    }
}
