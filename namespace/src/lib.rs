//! The in-memory namespace: what a metadata server holds and what an image
//! stores. Shared by the writer (which reads it), the loader (which builds it)
//! and the journal (which mutates it).
//!
//! # What this crate owns
//!
//! The model of an HDFS-like namespace ([`Namespace`]: inodes, names,
//! blocks, owners, attributes), every mutation a metadata server journals
//! (each validated in full before anything changes, so a refused one leaves
//! the namespace as it was), the bulk builder a loader fills from decoded
//! records while checking the structural rules of the image format, and the
//! canonical [`Digest`] that tells whether two namespaces hold the same
//! thing.
//!
//! Layout, chosen for resident memory: one 64-byte [`Node`] per inode in a
//! `Vec` indexed by slot (slots follow id order); names, blocks and child
//! lists live in chunked arenas, not in per-inode allocations; rare
//! attributes (xattrs, ACLs, under-construction info) sit in a side map.
//!
//! This crate is the ground floor: it imports no other nsimage crate, and
//! must never do so. The image format, the HDFS reader and the journal all
//! build or mutate the same [`Namespace`]; none of them is known here.
//!
//! # Module map
//!
//! | file | what it holds |
//! |------|---------------|
//! | `lib.rs` | [`Namespace`], [`Node`], [`Body`], [`Inode`] (the read view) and the small value types |
//! | `arena.rs` | [`Arena`] and [`Span`]: chunked storage of names, blocks and child lists |
//! | `ids.rs` | [`IdIndex`]: inode id to slot and back |
//! | `strings.rs` | [`StringTable`]: interned user, group and attribute names |
//! | `lookup.rs` | paths: [`Namespace::resolve`], [`Namespace::path_of`] |
//! | `children.rs` | searching and editing a directory's sorted child list |
//! | `mutate.rs` | [`Namespace::mkdirs`], [`create`](Namespace::create), [`symlink`](Namespace::symlink), [`add_block`](Namespace::add_block), [`rename`](Namespace::rename), [`delete`](Namespace::delete) and their by-id forms |
//! | `attrs.rs` | [`PermSpec`], [`FileSpec`]; owner, mode, times, replication, quota, xattr, ACL and under-construction setters |
//! | `errors.rs` | [`NsError`]: why a mutation was refused |
//! | `rules.rs` | [`valid_name`], [`acl_error`]: per-record rules shared by loads and mutations |
//! | `inode_batch.rs` | the inode phase of a load: [`LoadedNode`], [`InodeBatch`], [`InodeParts`], [`BlockStats`] |
//! | `build.rs` | the directory phase and whole-tree checks: [`DirBatch`], [`NamespaceBuilder`] |
//! | `digest.rs` | [`Digest`] and [`Namespace::digest`] |
//!
//! # Example
//!
//! Build a small namespace, look a path up, rename, and compare digests:
//! the digest covers what the namespace holds, not how it got there.
//!
//! ```
//! use nsimage_namespace::{Block, FileSpec, Namespace, NsError, NsInfo, PermSpec, XAttrNs};
//!
//! let hdfs = PermSpec { user: b"hdfs", group: b"supergroup", mode: 0o755 };
//! let spec = FileSpec { replication: 3, preferred_block_size: 128 << 20, storage_policy: 0 };
//! let block = Block { id: 1, generation_stamp: 1001, length: 42 };
//!
//! // Times are milliseconds since the Unix epoch.
//! let mut a = Namespace::new(NsInfo::default());
//! a.mkdirs(b"/data/logs", &hdfs, 1_000)?;
//! let f = a.create(b"/data/logs/today", &hdfs, &spec, 2_000)?;
//! a.add_block(f, block)?;
//! a.set_xattr(f, XAttrNs::User, b"color", b"blue")?;
//! a.set_xattr(f, XAttrNs::User, b"size", b"small")?;
//! assert_eq!(a.resolve(b"/data/logs/today")?, f);
//!
//! // A rename moves the inode: same id, new path; the old path is gone.
//! a.rename(b"/data/logs/today", b"/data/yesterday", 3_000)?;
//! assert_eq!(a.path_of(f).as_deref(), Some(&b"/data/yesterday"[..]));
//! assert!(matches!(a.resolve(b"/data/logs/today"), Err(NsError::NotFound(_))));
//!
//! // The same tree built another way: the file made under its final name,
//! // its attributes set (and their names interned) in the other order, the
//! // directories' times set directly instead of by the rename.
//! let mut b = Namespace::new(NsInfo::default());
//! b.mkdirs(b"/data/logs", &hdfs, 1_000)?;
//! let g = b.create(b"/data/yesterday", &hdfs, &spec, 2_000)?;
//! b.add_block(g, block)?;
//! b.set_xattr(g, XAttrNs::User, b"size", b"small")?;
//! b.set_xattr(g, XAttrNs::User, b"color", b"blue")?;
//! for dir in [&b"/data"[..], b"/data/logs"] {
//!     let id = b.resolve(dir)?;
//!     b.set_times(id, Some(3_000), None)?;
//! }
//! assert_eq!(g, f);
//! assert_eq!(b.digest(), a.digest());
//!
//! // One changed attribute changes the digest.
//! b.set_mode(g, 0o700)?;
//! assert_ne!(b.digest(), a.digest());
//! # Ok::<(), NsError>(())
//! ```
#![forbid(unsafe_code)]

mod arena;
mod attrs;
mod build;
mod children;
mod digest;
mod errors;
mod ids;
mod inode_batch;
mod lookup;
mod mutate;
mod rules;
mod strings;

pub use arena::{Arena, Span};
pub use attrs::{FileSpec, PermSpec};
pub use build::{DirBatch, NamespaceBuilder};
pub use digest::Digest;
pub use errors::NsError;
pub use ids::IdIndex;
pub use inode_batch::{BlockStats, InodeBatch, InodeParts, LoadedBody, LoadedNode};
pub use rules::{acl_error, valid_name};
pub use strings::StringTable;

use std::collections::HashMap;

/// Id of the root directory (the same as HDFS's `ROOT_INODE_ID`).
pub const ROOT_ID: u64 = 16385;
/// Longest name, symlink target, user, group or attribute string the
/// namespace holds, in bytes.
pub const MAX_NAME_LENGTH: usize = 64 << 10;

/// Index of an inode in the node table.
pub type Slot = u32;
/// "No slot": the parent of the root, or of an inode not attached yet.
pub const NO_SLOT: Slot = u32::MAX;

/// Namespace-wide counters, as in HDFS's NameSystemSection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NsInfo {
    /// The namespace's id (HDFS's `namespaceId`).
    pub namespace_id: u64,
    /// Id of the last journal transaction applied to this namespace.
    pub last_txid: u64,
    /// Largest inode id ever allocated (live or deleted); new inodes get ids
    /// above it, and no inode's id exceeds it. At least [`ROOT_ID`].
    pub last_inode_id: u64,
    /// Largest block id ever allocated; a new block's id must be above it,
    /// and no block's id exceeds it.
    pub last_block_id: u64,
    /// Highest block generation stamp; no block's stamp exceeds it.
    pub generation_stamp: u64,
    /// When the namespace was created, in milliseconds since the Unix epoch
    /// (also the root's mtime in [`Namespace::new`]).
    pub creation_time: u64,
}

/// One block of a file, as the metadata server knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Block {
    /// Block id, unique across the namespace and at most
    /// [`NsInfo::last_block_id`].
    pub id: u64,
    /// The block's generation stamp, at most [`NsInfo::generation_stamp`].
    pub generation_stamp: u64,
    /// Length of the block's data, in bytes.
    pub length: u64,
}

/// Packed permission: bits 0-15 mode, 16-39 group string id, 40-63 user string id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Perm(pub u64);

impl Perm {
    /// Packs string ids `user` and `group` (only their low 24 bits are
    /// kept; [`StringTable`] ids fit) and a mode.
    pub fn new(user: u32, group: u32, mode: u16) -> Perm {
        Perm(((user as u64 & 0xff_ffff) << 40) | ((group as u64 & 0xff_ffff) << 16) | mode as u64)
    }
    /// String id of the owning user.
    pub fn user(self) -> u32 {
        (self.0 >> 40) as u32
    }
    /// String id of the owning group.
    pub fn group(self) -> u32 {
        ((self.0 >> 16) & 0xff_ffff) as u32
    }
    /// Permission bits (as in `chmod`, e.g. `0o755`).
    #[allow(clippy::cast_possible_truncation)] // the mode is the low 16 bits, by design
    pub fn mode(self) -> u16 {
        self.0 as u16
    }
}

/// What an inode is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InodeKind {
    /// A regular file: blocks, replication, access time.
    File,
    /// A directory: children and quotas.
    Directory,
    /// A symbolic link: a target path.
    Symlink,
}

/// Extended attribute namespaces (the HDFS ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum XAttrNs {
    /// `user.`: set by users.
    User = 0,
    /// `trusted.`: visible to the superuser only.
    Trusted = 1,
    /// `security.`: used by the server for security features.
    Security = 2,
    /// `system.`: used by the server itself.
    System = 3,
    /// `raw.`: internal attributes, e.g. of encryption zones.
    Raw = 4,
}

impl XAttrNs {
    /// The namespace with wire number `v` (0 to 4); `None` for any other.
    pub fn from_u32(v: u32) -> Option<XAttrNs> {
        Some(match v {
            0 => XAttrNs::User,
            1 => XAttrNs::Trusted,
            2 => XAttrNs::Security,
            3 => XAttrNs::System,
            4 => XAttrNs::Raw,
            _ => return None,
        })
    }
}

/// One extended attribute of an inode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XAttr {
    /// The attribute's namespace.
    pub ns: XAttrNs,
    /// String table id of the name.
    pub name: u32,
    /// The value, at most [`MAX_NAME_LENGTH`] bytes (possibly empty).
    pub value: Box<[u8]>,
}

/// One entry of an inode's access control list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AclEntry {
    /// String table id of the user or group; 0 for the unnamed entry.
    pub name: u32,
    /// 0 user, 1 group, 2 mask, 3 other.
    pub kind: u8,
    /// Whether the entry is part of the default ACL (inherited by new
    /// children of a directory) rather than the access ACL.
    pub default_scope: bool,
    /// rwx bits.
    pub perm: u8,
}

/// The mark of a file a client holds open for writing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnderConstruction {
    /// Name of the client that holds the lease.
    pub client_name: Box<[u8]>,
    /// Host the client runs on.
    pub client_machine: Box<[u8]>,
}

/// Attributes few inodes have, kept out of [`Node`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Extra {
    /// Sorted by (namespace, name id), names unique.
    pub xattrs: Vec<XAttr>,
    /// ACL entries, in the order they were set; no two share (default
    /// scope, kind, name), and mask and other entries are unnamed.
    pub acl: Vec<AclEntry>,
    /// Set while a client holds the file open (files only).
    pub under_construction: Option<UnderConstruction>,
}

impl Extra {
    /// Whether there is nothing here (no xattr, no ACL entry, not under
    /// construction): an empty `Extra` is never stored.
    pub fn is_empty(&self) -> bool {
        self.xattrs.is_empty() && self.acl.is_empty() && self.under_construction.is_none()
    }
}

/// Where an inode's name (or a symlink's target) lives in the name arena:
/// a varint length followed by the bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct NameRef {
    /// Arena chunk holding the name.
    pub chunk: u32,
    /// Byte offset of the length prefix within the chunk.
    pub off: u32,
}

/// A child list that mutations have touched: child slots in name order and,
/// beside each, the first eight bytes of its name (big-endian, zero-padded),
/// so that a search compares keys in one array and reads a name only when
/// two keys tie. Lists loaded from an image stay in the arena, without keys.
#[derive(Clone, Debug, Default)]
pub(crate) struct OwnedChildren {
    pub(crate) slots: Vec<Slot>,
    pub(crate) keys: Vec<u64>,
}

/// The search key of a name: its first eight bytes, big-endian, zero-padded.
/// Keys order like names do (a < b implies key(a) <= key(b)).
pub(crate) fn name_key(name: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = name.len().min(8);
    b[..n].copy_from_slice(&name[..n]);
    u64::from_be_bytes(b)
}

/// Marks a directory whose child list lives in `Namespace::owned_children`.
const OWNED_CHILDREN: u32 = u32::MAX;

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
        /// The target path, in the name arena (1 to [`MAX_NAME_LENGTH`]
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
    /// Whether the inode has an [`Extra`] in the side map.
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

/// A metadata server's namespace.
#[derive(Clone, Debug)]
pub struct Namespace {
    info: NsInfo,
    strings: StringTable,
    ids: IdIndex,
    nodes: Vec<Node>,
    names: Arena<u8>,
    blocks: Arena<Block>,
    children: Arena<Slot>,
    owned_children: HashMap<Slot, OwnedChildren>,
    extras: HashMap<Slot, Extra>,
}

/// Counts of what a namespace holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Live inodes, the root included.
    pub inodes: u64,
    /// Live files.
    pub files: u64,
    /// Live directories, the root included.
    pub directories: u64,
    /// Live symbolic links.
    pub symlinks: u64,
    /// Blocks of live files.
    pub blocks: u64,
    /// Sum of block lengths.
    pub bytes: u64,
}

impl Default for Namespace {
    fn default() -> Self {
        Self::new(NsInfo::default())
    }
}

impl Namespace {
    /// An empty namespace: the root directory alone, owned by the empty user.
    pub fn new(info: NsInfo) -> Self {
        let mut ns = Namespace {
            info: NsInfo {
                last_inode_id: info.last_inode_id.max(ROOT_ID),
                ..info
            },
            strings: StringTable::default(),
            ids: IdIndex::default(),
            nodes: Vec::new(),
            names: Arena::default(),
            blocks: Arena::default(),
            children: Arena::default(),
            owned_children: HashMap::new(),
            extras: HashMap::new(),
        };
        let name = ns.put_name(b"");
        ns.ids.push(ROOT_ID);
        ns.nodes.push(Node {
            mtime: info.creation_time,
            perm: Perm::new(0, 0, 0o755),
            name,
            parent: NO_SLOT,
            has_extra: false,
            body: Body::Directory {
                ns_quota: -1,
                ds_quota: -1,
                children: Span::default(),
            },
        });
        ns
    }

    /// The namespace-wide counters.
    pub fn info(&self) -> &NsInfo {
        &self.info
    }

    /// The counters, for a journal replaying a transaction (which sets
    /// `last_txid`); the mutations keep the id counters up to date.
    pub fn info_mut(&mut self) -> &mut NsInfo {
        &mut self.info
    }

    /// The interned user, group, xattr and ACL names.
    pub fn strings(&self) -> &StringTable {
        &self.strings
    }

    /// Number of slots, live or freed; slots are `0..slot_count()`.
    // Every slot was given by an `IdIndex`, which stops at u32::MAX slots
    // (and the builder checks its node table against one).
    #[allow(clippy::cast_possible_truncation)]
    pub fn slot_count(&self) -> u32 {
        self.nodes.len() as u32
    }

    /// The slot of live inode `id`; `None` if there is none.
    pub fn slot_of(&self, id: u64) -> Option<Slot> {
        self.ids
            .slot(id)
            .filter(|&s| self.nodes[s as usize].body != Body::Free)
    }

    /// The id of the inode in `slot`, live or freed. Panics if `slot` is
    /// not below [`slot_count`](Self::slot_count).
    pub fn id_of(&self, slot: Slot) -> u64 {
        self.ids.id(slot)
    }

    /// A live inode by slot.
    pub fn at(&self, slot: Slot) -> Option<Inode<'_>> {
        let node = self.nodes.get(slot as usize)?;
        (node.body != Body::Free).then_some(Inode {
            ns: self,
            slot,
            node,
        })
    }

    /// A live inode by id.
    pub fn inode(&self, id: u64) -> Option<Inode<'_>> {
        self.at(self.slot_of(id)?)
    }

    /// The root directory (slot 0, id [`ROOT_ID`]).
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

    /// Counts the live inodes and their blocks (one pass over the nodes).
    pub fn stats(&self) -> Stats {
        let mut st = Stats::default();
        for n in &self.nodes {
            match n.body {
                Body::Free => continue,
                Body::File { blocks, .. } => {
                    st.files += 1;
                    st.blocks += blocks.len as u64;
                    st.bytes += self
                        .blocks
                        .get(blocks)
                        .iter()
                        .map(|b| b.length)
                        .sum::<u64>();
                }
                Body::Directory { .. } => st.directories += 1,
                Body::Symlink { .. } => st.symlinks += 1,
            }
            st.inodes += 1;
        }
        st
    }

    /// Bytes of heap this namespace holds (capacity, not length).
    pub fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * size_of::<Node>()
            + self.names.heap_bytes()
            + self.blocks.heap_bytes()
            + self.children.heap_bytes()
            + self.ids.heap_bytes()
            + self.strings.heap_bytes()
            + self
                .owned_children
                .values()
                .map(|v| v.slots.capacity() * 4 + v.keys.capacity() * 8 + 64)
                .sum::<usize>()
            + self.extras.len() * (size_of::<Extra>() + 16)
    }

    fn put_name(&mut self, name: &[u8]) -> NameRef {
        let mut buf = Vec::with_capacity(name.len() + 3);
        prost::encoding::encode_varint(name.len() as u64, &mut buf);
        buf.extend_from_slice(name);
        let s = self.names.push(&buf);
        NameRef {
            chunk: s.chunk,
            off: s.start,
        }
    }

    fn name_bytes(&self, r: NameRef) -> &[u8] {
        read_name(&self.names, r)
    }

    fn child_slots(&self, slot: Slot) -> &[Slot] {
        match self.nodes[slot as usize].body {
            Body::Directory { children, .. } if children.chunk == OWNED_CHILDREN => {
                self.owned_children.get(&slot).map_or(&[], |v| &v.slots[..])
            }
            Body::Directory { children, .. } => self.children.get(children),
            _ => &[],
        }
    }
}

/// Reads a length-prefixed name from the name arena. A reference that does
/// not resolve (which the builder never makes) reads as the empty name.
#[inline]
fn read_name(names: &Arena<u8>, r: NameRef) -> &[u8] {
    let c = names.chunk(r.chunk);
    let rest = c.get(r.off as usize..).unwrap_or_default();
    let mut cursor = rest;
    match prost::encoding::decode_varint(&mut cursor) {
        Ok(len) => usize::try_from(len)
            .ok()
            .and_then(|len| cursor.get(..len))
            .unwrap_or_default(),
        Err(_) => &[],
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
    pub blocks: &'a [Block],
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
        match self.node.body {
            Body::File { .. } => InodeKind::File,
            Body::Symlink { .. } => InodeKind::Symlink,
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
        self.node.perm
    }
    /// The owning user's name.
    pub fn user(&self) -> &'a [u8] {
        self.ns
            .strings
            .get(self.node.perm.user())
            .unwrap_or_default()
    }
    /// The owning group's name.
    pub fn group(&self) -> &'a [u8] {
        self.ns
            .strings
            .get(self.node.perm.group())
            .unwrap_or_default()
    }
    /// Permission bits.
    pub fn mode(&self) -> u16 {
        self.node.perm.mode()
    }
    /// Modification time, in milliseconds since the Unix epoch.
    pub fn mtime(&self) -> u64 {
        self.node.mtime
    }
    /// The kind-specific part.
    pub fn body(&self) -> &'a Body {
        &self.node.body
    }
    /// The type-specific attributes (file, directory or symlink).
    pub fn attrs(&self) -> Attrs<'a> {
        match self.node.body {
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
                blocks: self.ns.blocks.get(blocks),
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
    pub fn blocks(&self) -> &'a [Block] {
        match self.node.body {
            Body::File { blocks, .. } => self.ns.blocks.get(blocks),
            _ => &[],
        }
    }
    /// Child slots, sorted by name.
    pub fn child_slots(&self) -> &'a [Slot] {
        self.ns.child_slots(self.slot)
    }
    /// Children, in name order (none unless a directory).
    pub fn children(&self) -> impl Iterator<Item = Inode<'a>> + 'a {
        let ns = self.ns;
        self.child_slots().iter().filter_map(move |&s| ns.at(s))
    }
    /// A symlink's target; `None` for other kinds.
    pub fn symlink_target(&self) -> Option<&'a [u8]> {
        match self.node.body {
            Body::Symlink { target } => Some(self.ns.name_bytes(target)),
            _ => None,
        }
    }
    /// Xattrs, ACL and under-construction mark, if the inode has any.
    pub fn extra(&self) -> Option<&'a Extra> {
        if self.node.has_extra {
            self.ns.extras.get(&self.slot)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_keys_order_like_names() {
        let mut names: Vec<&[u8]> = vec![
            b"a",
            b"a\0",
            b"a\0\0",
            b"ab",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefghi",
            b"b",
            b"\xff",
            b"\0",
            b"abcdefgg\xff",
        ];
        names.sort();
        for w in names.windows(2) {
            assert!(name_key(w[0]) <= name_key(w[1]), "{:?} {:?}", w[0], w[1]);
        }
    }

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
