//! The plain data a diff produces: [`Diff`] and its entries.

use crate::text::utc_iso8601;
use nsimage_namespace::{Block, InodeKind};
use std::fmt;

/// An attribute of an inode that a diff compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Attr {
    /// The owning user.
    Owner,
    /// The owning group.
    Group,
    /// The permission bits.
    Mode,
    /// The modification time.
    Mtime,
    /// A file's access time.
    Atime,
    /// A file's replication.
    Replication,
    /// A file's storage policy id.
    StoragePolicy,
    /// A file's preferred block size.
    PreferredBlockSize,
    /// A directory's namespace quota.
    NsQuota,
    /// A directory's disk-space quota.
    DsQuota,
    /// A symlink's target.
    SymlinkTarget,
    /// The extended attributes (any added, removed or changed).
    Xattrs,
    /// The ACL entries.
    Acl,
    /// The under-construction mark (a client holding the file open).
    UnderConstruction,
}

impl Attr {
    /// The attribute's name in text and JSON output (`mtime`,
    /// `preferred_block_size`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Attr::Owner => "owner",
            Attr::Group => "group",
            Attr::Mode => "mode",
            Attr::Mtime => "mtime",
            Attr::Atime => "atime",
            Attr::Replication => "replication",
            Attr::StoragePolicy => "storage_policy",
            Attr::PreferredBlockSize => "preferred_block_size",
            Attr::NsQuota => "ns_quota",
            Attr::DsQuota => "ds_quota",
            Attr::SymlinkTarget => "symlink_target",
            Attr::Xattrs => "xattrs",
            Attr::Acl => "acl",
            Attr::UnderConstruction => "under_construction",
        }
    }
}

/// The value of a compared attribute. Shown ([`Display`](fmt::Display)):
/// times in UTC ISO 8601 with the milliseconds, the mode in octal
/// (`0755`), a quota of -1 as `none`, the rest as is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttrValue {
    /// A time, in milliseconds since the Unix epoch (mtime, atime).
    Time(u64),
    /// A number (replication, storage policy, preferred block size).
    Number(u64),
    /// Permission bits.
    Mode(u16),
    /// A quota; -1 for none.
    Quota(i64),
    /// Anything else, as text: owner and group names, a symlink target,
    /// the xattrs (`user.name="value", ...`, values that are not printable
    /// text in hex), the ACL (`user:bob:r-x,...`), the under-construction
    /// mark (`client@host`); `(none)` when there is none.
    Text(String),
}

impl fmt::Display for AttrValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttrValue::Time(ms) => {
                let s = utc_iso8601(*ms);
                match s.strip_suffix('Z') {
                    Some(head) => write!(f, "{head}.{:03}Z", ms % 1000),
                    None => f.write_str(&s),
                }
            }
            AttrValue::Number(n) => write!(f, "{n}"),
            AttrValue::Mode(m) => write!(f, "{m:04o}"),
            AttrValue::Quota(q) if *q < 0 => f.write_str("none"),
            AttrValue::Quota(q) => write!(f, "{q}"),
            AttrValue::Text(t) => f.write_str(&crate::text::escaped(t.as_bytes())),
        }
    }
}

/// One changed attribute, with its old and new values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttrChange {
    /// Which attribute.
    pub attr: Attr,
    /// Its value in OLD.
    pub old: AttrValue,
    /// Its value in NEW.
    pub new: AttrValue,
}

/// A block whose id is in both versions of a file but whose length or
/// generation stamp changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockChange {
    /// The block in OLD.
    pub old: Block,
    /// The block in NEW.
    pub new: Block,
}

/// An inode live in NEW only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Created {
    /// Inode id.
    pub id: u64,
    /// Its path in NEW.
    pub path: Vec<u8>,
    /// File, directory or symlink.
    pub kind: InodeKind,
    /// Sum of its block lengths (files).
    pub bytes: u64,
    /// Its blocks (files).
    pub blocks: u64,
    /// Whether its parent existed in OLD (false inside a created subtree).
    pub top: bool,
}

/// An inode live in OLD only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deleted {
    /// Inode id.
    pub id: u64,
    /// Its path in OLD.
    pub path: Vec<u8>,
    /// File, directory or symlink.
    pub kind: InodeKind,
    /// Sum of its block lengths (files).
    pub bytes: u64,
    /// Its blocks (files).
    pub blocks: u64,
    /// Whether its parent is still live in NEW (false inside a deleted
    /// subtree): the roots of what was deleted.
    pub top: bool,
}

/// An inode whose own parent or name changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Renamed {
    /// Inode id.
    pub id: u64,
    /// Its path in OLD.
    pub old_path: Vec<u8>,
    /// Its path in NEW.
    pub new_path: Vec<u8>,
    /// File, directory or symlink.
    pub kind: InodeKind,
    /// Whether its parent changed (a move), not only its name.
    pub moved: bool,
}

/// An inode in both images whose attributes or blocks changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Modified {
    /// Inode id.
    pub id: u64,
    /// Its path in NEW.
    pub path: Vec<u8>,
    /// File, directory or symlink.
    pub kind: InodeKind,
    /// The changed attributes, in [`Attr`] order.
    pub changes: Vec<AttrChange>,
    /// Blocks in NEW whose id is not in OLD.
    pub blocks_added: Vec<Block>,
    /// Blocks in OLD whose id is not in NEW.
    pub blocks_removed: Vec<Block>,
    /// Blocks in both whose length or generation stamp changed.
    pub blocks_changed: Vec<BlockChange>,
}

impl Modified {
    /// Whether `attr` is among the changes.
    pub fn changed(&self, attr: Attr) -> bool {
        self.changes.iter().any(|c| c.attr == attr)
    }
    /// Whether any block was added, removed or changed.
    pub fn blocks_differ(&self) -> bool {
        !(self.blocks_added.is_empty()
            && self.blocks_removed.is_empty()
            && self.blocks_changed.is_empty())
    }
}

/// Counts of a diff. Every inode counts once per kind of change it had (a
/// renamed and modified inode counts in both `renamed` and `modified`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// The namespace both images belong to.
    pub namespace_id: u64,
    /// OLD's last transaction id.
    pub old_txid: u64,
    /// NEW's last transaction id.
    pub new_txid: u64,
    /// Inodes created.
    pub created: u64,
    /// Of which files.
    pub created_files: u64,
    /// Of which directories.
    pub created_directories: u64,
    /// Of which symlinks.
    pub created_symlinks: u64,
    /// Inodes deleted (each inode of a deleted subtree once).
    pub deleted: u64,
    /// Of which files.
    pub deleted_files: u64,
    /// Of which directories.
    pub deleted_directories: u64,
    /// Of which symlinks.
    pub deleted_symlinks: u64,
    /// Inodes renamed or moved.
    pub renamed: u64,
    /// Inodes modified.
    pub modified: u64,
    /// Blocks added (to created or modified files).
    pub blocks_added: u64,
    /// Blocks removed (from deleted or modified files).
    pub blocks_removed: u64,
    /// Blocks whose length or generation stamp changed.
    pub blocks_changed: u64,
    /// Bytes added: added blocks' lengths, plus the growth of changed blocks.
    pub bytes_added: u64,
    /// Bytes removed: removed blocks' lengths, plus the shrinkage of changed
    /// blocks.
    pub bytes_removed: u64,
}

/// What changed between two images; each list sorted by path (then id).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diff {
    /// The counts.
    pub summary: Summary,
    /// Inodes live in NEW only.
    pub created: Vec<Created>,
    /// Inodes live in OLD only.
    pub deleted: Vec<Deleted>,
    /// Inodes whose own parent or name changed.
    pub renamed: Vec<Renamed>,
    /// Inodes whose attributes or blocks changed.
    pub modified: Vec<Modified>,
    /// Things the caller should tell the user (NEW older than OLD).
    pub warnings: Vec<String>,
}

impl Diff {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.created.is_empty()
            && self.deleted.is_empty()
            && self.renamed.is_empty()
            && self.modified.is_empty()
    }
}

/// The order of paths in a diff: component by component (`/` sorts before
/// every byte a name may hold), so that a directory's subtree follows it
/// without other paths in between (`/a`, `/a/b`, `/a-b`; plain byte order
/// would put `/a-b` between `/a` and `/a/b`).
pub fn path_order(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let key = |c: &u8| if *c == b'/' { 0 } else { *c };
    a.iter().map(key).cmp(b.iter().map(key))
}
