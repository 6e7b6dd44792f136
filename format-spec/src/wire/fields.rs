//! Field numbers of every message of `proto/nsimage.proto`, one module per
//! message (named after it in snake case), one constant per field (named
//! after it in upper case). The keys with their wire types are in
//! [`super::tags`]. Generated from the schema once and checked against
//! prost's encoding by the tests of [`super::tags`]; a field added to the
//! schema gets its constant here by hand.

/// Field numbers of `NsInfo`.
pub mod ns_info {
    /// `uint64 namespace_id = 1`.
    pub const NAMESPACE_ID: u32 = 1;
    /// `uint64 last_txid = 2`.
    pub const LAST_TXID: u32 = 2;
    /// `uint64 last_inode_id = 3`.
    pub const LAST_INODE_ID: u32 = 3;
    /// `uint64 last_block_id = 4`.
    pub const LAST_BLOCK_ID: u32 = 4;
    /// `uint64 generation_stamp = 5`.
    pub const GENERATION_STAMP: u32 = 5;
    /// `uint64 creation_time = 6`.
    pub const CREATION_TIME: u32 = 6;
}

/// Field numbers of `StringEntry`.
pub mod string_entry {
    /// `bytes value = 1`.
    pub const VALUE: u32 = 1;
}

/// Field numbers of `Block`.
pub mod block {
    /// `uint64 id = 1`.
    pub const ID: u32 = 1;
    /// `uint64 generation_stamp = 2`.
    pub const GENERATION_STAMP: u32 = 2;
    /// `uint64 length = 3`.
    pub const LENGTH: u32 = 3;
}

/// Field numbers of `UnderConstruction`.
pub mod under_construction {
    /// `bytes client_name = 1`.
    pub const CLIENT_NAME: u32 = 1;
    /// `bytes client_machine = 2`.
    pub const CLIENT_MACHINE: u32 = 2;
}

/// Field numbers of `FileAttrs`.
pub mod file_attrs {
    /// `uint64 atime = 1`.
    pub const ATIME: u32 = 1;
    /// `uint32 replication = 2`.
    pub const REPLICATION: u32 = 2;
    /// `uint64 preferred_block_size = 3`.
    pub const PREFERRED_BLOCK_SIZE: u32 = 3;
    /// `repeated Block blocks = 4`.
    pub const BLOCKS: u32 = 4;
    /// `uint32 storage_policy = 5`.
    pub const STORAGE_POLICY: u32 = 5;
    /// `UnderConstruction under_construction = 6`.
    pub const UNDER_CONSTRUCTION: u32 = 6;
}

/// Field numbers of `DirectoryAttrs`.
pub mod directory_attrs {
    /// `int64 ns_quota = 1`.
    pub const NS_QUOTA: u32 = 1;
    /// `int64 ds_quota = 2`.
    pub const DS_QUOTA: u32 = 2;
}

/// Field numbers of `SymlinkAttrs`.
pub mod symlink_attrs {
    /// `bytes target = 1`.
    pub const TARGET: u32 = 1;
}

/// Field numbers of `XAttr`.
pub mod xattr {
    /// `XAttrNamespace namespace = 1`.
    pub const NAMESPACE: u32 = 1;
    /// `uint32 name = 2`.
    pub const NAME: u32 = 2;
    /// `bytes value = 3`.
    pub const VALUE: u32 = 3;
}

/// Field numbers of `AclEntry`.
pub mod acl_entry {
    /// `uint32 name = 1`.
    pub const NAME: u32 = 1;
    /// `AclType type = 2`.
    pub const TYPE: u32 = 2;
    /// `bool default_scope = 3`.
    pub const DEFAULT_SCOPE: u32 = 3;
    /// `uint32 permission = 4`.
    pub const PERMISSION: u32 = 4;
}

/// Field numbers of `Inode`.
pub mod inode {
    /// `uint64 id = 1`.
    pub const ID: u32 = 1;
    /// `InodeType type = 2`.
    pub const TYPE: u32 = 2;
    /// `bytes name = 3`.
    pub const NAME: u32 = 3;
    /// `fixed64 permission = 4`.
    pub const PERMISSION: u32 = 4;
    /// `uint64 mtime = 5`.
    pub const MTIME: u32 = 5;
    /// `FileAttrs file = 6`.
    pub const FILE: u32 = 6;
    /// `DirectoryAttrs directory = 7`.
    pub const DIRECTORY: u32 = 7;
    /// `SymlinkAttrs symlink = 8`.
    pub const SYMLINK: u32 = 8;
    /// `repeated XAttr xattrs = 9`.
    pub const XATTRS: u32 = 9;
    /// `repeated AclEntry acl = 10`.
    pub const ACL: u32 = 10;
}

/// Field numbers of `DirEntry`.
pub mod dir_entry {
    /// `uint64 parent = 1`.
    pub const PARENT: u32 = 1;
    /// `repeated uint64 children = 2`.
    pub const CHILDREN: u32 = 2;
}

/// Field numbers of `SubSection`.
pub mod sub_section {
    /// `uint64 offset = 1`.
    pub const OFFSET: u32 = 1;
    /// `uint64 length = 2`.
    pub const LENGTH: u32 = 2;
    /// `uint64 records = 3`.
    pub const RECORDS: u32 = 3;
    /// `uint64 first_key = 4`.
    pub const FIRST_KEY: u32 = 4;
    /// `fixed64 checksum = 5`.
    pub const CHECKSUM: u32 = 5;
}

/// Field numbers of `Section`.
pub mod section {
    /// `uint32 kind = 1`.
    pub const KIND: u32 = 1;
    /// `bool optional = 2`.
    pub const OPTIONAL: u32 = 2;
    /// `uint64 offset = 3`.
    pub const OFFSET: u32 = 3;
    /// `uint64 length = 4`.
    pub const LENGTH: u32 = 4;
    /// `uint64 records = 5`.
    pub const RECORDS: u32 = 5;
    /// `fixed64 checksum = 6`.
    pub const CHECKSUM: u32 = 6;
    /// `repeated SubSection sub_sections = 7`.
    pub const SUB_SECTIONS: u32 = 7;
}

/// Field numbers of `Index`.
pub mod index {
    /// `repeated Section sections = 1`.
    pub const SECTIONS: u32 = 1;
}

/// Field numbers of `JournalOp`.
pub mod journal_op {
    /// `uint64 txid = 1`.
    pub const TXID: u32 = 1;
    /// `CreateOp mkdir = 2`.
    pub const MKDIR: u32 = 2;
    /// `CreateOp create = 3`.
    pub const CREATE: u32 = 3;
    /// `CreateOp symlink = 4`.
    pub const SYMLINK: u32 = 4;
    /// `AddBlockOp add_block = 5`.
    pub const ADD_BLOCK: u32 = 5;
    /// `RenameOp rename = 6`.
    pub const RENAME: u32 = 6;
    /// `DeleteOp delete = 7`.
    pub const DELETE: u32 = 7;
    /// `SetTimesOp set_times = 8`.
    pub const SET_TIMES: u32 = 8;
    /// `SetOwnerOp set_owner = 9`.
    pub const SET_OWNER: u32 = 9;
    /// `SetModeOp set_mode = 10`.
    pub const SET_MODE: u32 = 10;
    /// `SetReplicationOp set_replication = 11`.
    pub const SET_REPLICATION: u32 = 11;
    /// `SetXAttrOp set_xattr = 12`.
    pub const SET_XATTR: u32 = 12;
    /// `RemoveXAttrOp remove_xattr = 13`.
    pub const REMOVE_XATTR: u32 = 13;
}

/// Field numbers of `CreateOp`.
pub mod create_op {
    /// `uint64 parent = 1`.
    pub const PARENT: u32 = 1;
    /// `bytes name = 2`.
    pub const NAME: u32 = 2;
    /// `bytes user = 3`.
    pub const USER: u32 = 3;
    /// `bytes group = 4`.
    pub const GROUP: u32 = 4;
    /// `uint32 mode = 5`.
    pub const MODE: u32 = 5;
    /// `uint64 mtime = 6`.
    pub const MTIME: u32 = 6;
    /// `uint32 replication = 7`.
    pub const REPLICATION: u32 = 7;
    /// `uint64 preferred_block_size = 8`.
    pub const PREFERRED_BLOCK_SIZE: u32 = 8;
    /// `uint32 storage_policy = 9`.
    pub const STORAGE_POLICY: u32 = 9;
    /// `bytes target = 10`.
    pub const TARGET: u32 = 10;
    /// `uint64 new_id = 11`.
    pub const NEW_ID: u32 = 11;
}

/// Field numbers of `AddBlockOp`.
pub mod add_block_op {
    /// `uint64 id = 1`.
    pub const ID: u32 = 1;
    /// `Block block = 2`.
    pub const BLOCK: u32 = 2;
}

/// Field numbers of `RenameOp`.
pub mod rename_op {
    /// `uint64 id = 1`.
    pub const ID: u32 = 1;
    /// `uint64 new_parent = 2`.
    pub const NEW_PARENT: u32 = 2;
    /// `bytes new_name = 3`.
    pub const NEW_NAME: u32 = 3;
    /// `uint64 mtime = 4`.
    pub const MTIME: u32 = 4;
}

/// Field numbers of `DeleteOp`.
pub mod delete_op {
    /// `uint64 id = 1`.
    pub const ID: u32 = 1;
    /// `bool recursive = 2`.
    pub const RECURSIVE: u32 = 2;
    /// `uint64 mtime = 3`.
    pub const MTIME: u32 = 3;
}

/// Field numbers of `SetTimesOp`.
pub mod set_times_op {
    /// `uint64 id = 1`.
    pub const ID: u32 = 1;
    /// `uint64 mtime = 2`.
    pub const MTIME: u32 = 2;
    /// `uint64 atime = 3`.
    pub const ATIME: u32 = 3;
}

/// Field numbers of `SetOwnerOp`.
pub mod set_owner_op {
    /// `uint64 id = 1`.
    pub const ID: u32 = 1;
    /// `bytes user = 2`.
    pub const USER: u32 = 2;
    /// `bytes group = 3`.
    pub const GROUP: u32 = 3;
}

/// Field numbers of `SetModeOp`.
pub mod set_mode_op {
    /// `uint64 id = 1`.
    pub const ID: u32 = 1;
    /// `uint32 mode = 2`.
    pub const MODE: u32 = 2;
}

/// Field numbers of `SetReplicationOp`.
pub mod set_replication_op {
    /// `uint64 id = 1`.
    pub const ID: u32 = 1;
    /// `uint32 replication = 2`.
    pub const REPLICATION: u32 = 2;
}

/// Field numbers of `SetXAttrOp`.
pub mod set_xattr_op {
    /// `uint64 id = 1`.
    pub const ID: u32 = 1;
    /// `XAttrNamespace namespace = 2`.
    pub const NAMESPACE: u32 = 2;
    /// `bytes name = 3`.
    pub const NAME: u32 = 3;
    /// `bytes value = 4`.
    pub const VALUE: u32 = 4;
}

/// Field numbers of `RemoveXAttrOp`.
pub mod remove_xattr_op {
    /// `uint64 id = 1`.
    pub const ID: u32 = 1;
    /// `XAttrNamespace namespace = 2`.
    pub const NAMESPACE: u32 = 2;
    /// `bytes name = 3`.
    pub const NAME: u32 = 3;
}
