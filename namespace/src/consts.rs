//! The namespace's fixed numbers: the root's id, the name reserved under
//! it, the longest name it holds,
//! the slot type that indexes the node table, with its "none" value, and
//! the header a shared chunk carries.

/// Id of the root directory (the same as HDFS's `ROOT_INODE_ID`).
pub const ROOT_ID: u64 = 16385;
/// The one name the root may not hold (HDFS's `/.reserved`, where
/// `/.reserved/.inodes/<id>` names an inode by its id): no mutation
/// creates or renames an inode to it under the root, whatever route the
/// mutation comes by (a server's write, an op applied to a store, a
/// journal replayed).
pub const RESERVED_NAME: &[u8] = b".reserved";
/// Longest name, symlink target, user, group or attribute string the
/// namespace holds, in bytes.
pub const MAX_NAME_LENGTH: usize = 64 << 10;

/// Index of an inode in the node table.
pub type Slot = u32;
/// "No slot": the parent of the root, or of an inode not attached yet.
pub const NO_SLOT: Slot = u32::MAX;

/// Bytes a shared chunk's `triomphe::Arc` adds to it: its one reference
/// count (no weak count), for the memory counts.
pub(crate) const ARC_HEADER: usize = size_of::<usize>();
