//! The small value types of the namespace: its counters ([`NsInfo`]),
//! blocks, packed permissions, inode kinds, extended attributes, ACL
//! entries, the under-construction mark and the side-map record of rare
//! attributes ([`Extra`]); and what a new inode is created with
//! ([`PermSpec`], [`FileSpec`]).

/// Namespace-wide counters, as in HDFS's NameSystemSection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NsInfo {
    /// The namespace's id (HDFS's `namespaceId`).
    pub namespace_id: u64,
    /// Id of the last journal transaction applied to this namespace.
    pub last_txid: u64,
    /// Largest inode id ever allocated (live or deleted); new inodes get ids
    /// above it, and no inode's id exceeds it. At least [`ROOT_ID`](crate::ROOT_ID).
    pub last_inode_id: u64,
    /// Largest block id ever allocated; a new block's id must be above it,
    /// and no block's id exceeds it.
    pub last_block_id: u64,
    /// Highest block generation stamp; no block's stamp exceeds it.
    pub generation_stamp: u64,
    /// When the namespace was created, in milliseconds since the Unix epoch
    /// (also the root's mtime in [`Namespace::new`](crate::Namespace::new)).
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Perm(pub u64);

impl Perm {
    /// Packs string ids `user` and `group` (only their low 24 bits are
    /// kept; [`StringTable`](crate::StringTable) ids fit) and a mode.
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
    /// The value, at most [`MAX_NAME_LENGTH`](crate::MAX_NAME_LENGTH) bytes (possibly empty).
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

/// Attributes few inodes have, kept out of [`Node`](crate::Node).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Extra {
    /// Sorted by (namespace, name id), names unique.
    pub xattrs: Vec<XAttr>,
    /// ACL entries, in the order they were set; no two share (default
    /// scope, kind, name), and mask and other entries are unnamed.
    pub acl: Vec<AclEntry>,
    /// Set while a client holds the file open (files only).
    /// Boxed: few inodes are open, and every extra pays for this field's
    /// width in its map's table.
    pub under_construction: Option<Box<UnderConstruction>>,
}

impl Extra {
    /// Whether there is nothing here (no xattr, no ACL entry, not under
    /// construction): an empty `Extra` is never stored.
    pub fn is_empty(&self) -> bool {
        self.xattrs.is_empty() && self.acl.is_empty() && self.under_construction.is_none()
    }
}

/// Owner, group and mode of a new inode.
#[derive(Clone, Copy, Debug)]
pub struct PermSpec<'a> {
    /// Owning user's name, at most [`MAX_NAME_LENGTH`](crate::MAX_NAME_LENGTH) bytes (interned).
    pub user: &'a [u8],
    /// Owning group's name, at most [`MAX_NAME_LENGTH`](crate::MAX_NAME_LENGTH) bytes (interned).
    pub group: &'a [u8],
    /// Permission bits, e.g. `0o755`.
    pub mode: u16,
}

/// File attributes of a new file.
#[derive(Clone, Copy, Debug)]
pub struct FileSpec {
    /// Number of replicas each block should have.
    pub replication: u16,
    /// Block size new blocks are cut to, in bytes.
    pub preferred_block_size: u64,
    /// HDFS storage policy id (0: unspecified).
    pub storage_policy: u8,
}
