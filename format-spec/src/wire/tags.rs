//! The one-byte key (`field << 3 | wire type`, FORMAT.md "Protobuf wire
//! rules") of every field of `proto/nsimage.proto` with its declared wire
//! type, one module per message. Every field number of the schema is below
//! 16, so every key is one byte; [`key`](super::key) refuses to build one
//! that is not. The hand-written record encoder and the zero-copy decoder
//! write and match these constants instead of literal bytes.

/// One-byte keys of the fields of `NsInfo`, each with its declared wire type.
pub mod ns_info {
    use crate::wire::fields::ns_info as f;
    use crate::wire::{key, VARINT};
    /// `namespace_id`: field 1, wire type `VARINT`.
    pub const NAMESPACE_ID: u8 = key(f::NAMESPACE_ID, VARINT);
    /// `last_txid`: field 2, wire type `VARINT`.
    pub const LAST_TXID: u8 = key(f::LAST_TXID, VARINT);
    /// `last_inode_id`: field 3, wire type `VARINT`.
    pub const LAST_INODE_ID: u8 = key(f::LAST_INODE_ID, VARINT);
    /// `last_block_id`: field 4, wire type `VARINT`.
    pub const LAST_BLOCK_ID: u8 = key(f::LAST_BLOCK_ID, VARINT);
    /// `generation_stamp`: field 5, wire type `VARINT`.
    pub const GENERATION_STAMP: u8 = key(f::GENERATION_STAMP, VARINT);
    /// `creation_time`: field 6, wire type `VARINT`.
    pub const CREATION_TIME: u8 = key(f::CREATION_TIME, VARINT);
}

/// One-byte keys of the fields of `StringEntry`, each with its declared wire type.
pub mod string_entry {
    use crate::wire::fields::string_entry as f;
    use crate::wire::{key, LEN};
    /// `value`: field 1, wire type `LEN`.
    pub const VALUE: u8 = key(f::VALUE, LEN);
}

/// One-byte keys of the fields of `Block`, each with its declared wire type.
pub mod block {
    use crate::wire::fields::block as f;
    use crate::wire::{key, VARINT};
    /// `id`: field 1, wire type `VARINT`.
    pub const ID: u8 = key(f::ID, VARINT);
    /// `generation_stamp`: field 2, wire type `VARINT`.
    pub const GENERATION_STAMP: u8 = key(f::GENERATION_STAMP, VARINT);
    /// `length`: field 3, wire type `VARINT`.
    pub const LENGTH: u8 = key(f::LENGTH, VARINT);
}

/// One-byte keys of the fields of `UnderConstruction`, each with its declared wire type.
pub mod under_construction {
    use crate::wire::fields::under_construction as f;
    use crate::wire::{key, LEN};
    /// `client_name`: field 1, wire type `LEN`.
    pub const CLIENT_NAME: u8 = key(f::CLIENT_NAME, LEN);
    /// `client_machine`: field 2, wire type `LEN`.
    pub const CLIENT_MACHINE: u8 = key(f::CLIENT_MACHINE, LEN);
}

/// One-byte keys of the fields of `FileAttrs`, each with its declared wire type.
pub mod file_attrs {
    use crate::wire::fields::file_attrs as f;
    use crate::wire::{key, LEN, VARINT};
    /// `atime`: field 1, wire type `VARINT`.
    pub const ATIME: u8 = key(f::ATIME, VARINT);
    /// `replication`: field 2, wire type `VARINT`.
    pub const REPLICATION: u8 = key(f::REPLICATION, VARINT);
    /// `preferred_block_size`: field 3, wire type `VARINT`.
    pub const PREFERRED_BLOCK_SIZE: u8 = key(f::PREFERRED_BLOCK_SIZE, VARINT);
    /// `blocks`: field 4, wire type `LEN`.
    pub const BLOCKS: u8 = key(f::BLOCKS, LEN);
    /// `storage_policy`: field 5, wire type `VARINT`.
    pub const STORAGE_POLICY: u8 = key(f::STORAGE_POLICY, VARINT);
    /// `under_construction`: field 6, wire type `LEN`.
    pub const UNDER_CONSTRUCTION: u8 = key(f::UNDER_CONSTRUCTION, LEN);
}

/// One-byte keys of the fields of `DirectoryAttrs`, each with its declared wire type.
pub mod directory_attrs {
    use crate::wire::fields::directory_attrs as f;
    use crate::wire::{key, VARINT};
    /// `ns_quota`: field 1, wire type `VARINT`.
    pub const NS_QUOTA: u8 = key(f::NS_QUOTA, VARINT);
    /// `ds_quota`: field 2, wire type `VARINT`.
    pub const DS_QUOTA: u8 = key(f::DS_QUOTA, VARINT);
}

/// One-byte keys of the fields of `SymlinkAttrs`, each with its declared wire type.
pub mod symlink_attrs {
    use crate::wire::fields::symlink_attrs as f;
    use crate::wire::{key, LEN};
    /// `target`: field 1, wire type `LEN`.
    pub const TARGET: u8 = key(f::TARGET, LEN);
}

/// One-byte keys of the fields of `XAttr`, each with its declared wire type.
pub mod xattr {
    use crate::wire::fields::xattr as f;
    use crate::wire::{key, LEN, VARINT};
    /// `namespace`: field 1, wire type `VARINT`.
    pub const NAMESPACE: u8 = key(f::NAMESPACE, VARINT);
    /// `name`: field 2, wire type `VARINT`.
    pub const NAME: u8 = key(f::NAME, VARINT);
    /// `value`: field 3, wire type `LEN`.
    pub const VALUE: u8 = key(f::VALUE, LEN);
}

/// One-byte keys of the fields of `AclEntry`, each with its declared wire type.
pub mod acl_entry {
    use crate::wire::fields::acl_entry as f;
    use crate::wire::{key, VARINT};
    /// `name`: field 1, wire type `VARINT`.
    pub const NAME: u8 = key(f::NAME, VARINT);
    /// `type`: field 2, wire type `VARINT`.
    pub const TYPE: u8 = key(f::TYPE, VARINT);
    /// `default_scope`: field 3, wire type `VARINT`.
    pub const DEFAULT_SCOPE: u8 = key(f::DEFAULT_SCOPE, VARINT);
    /// `permission`: field 4, wire type `VARINT`.
    pub const PERMISSION: u8 = key(f::PERMISSION, VARINT);
}

/// One-byte keys of the fields of `Inode`, each with its declared wire type.
pub mod inode {
    use crate::wire::fields::inode as f;
    use crate::wire::{key, FIXED64, LEN, VARINT};
    /// `id`: field 1, wire type `VARINT`.
    pub const ID: u8 = key(f::ID, VARINT);
    /// `type`: field 2, wire type `VARINT`.
    pub const TYPE: u8 = key(f::TYPE, VARINT);
    /// `name`: field 3, wire type `LEN`.
    pub const NAME: u8 = key(f::NAME, LEN);
    /// `permission`: field 4, wire type `FIXED64`.
    pub const PERMISSION: u8 = key(f::PERMISSION, FIXED64);
    /// `mtime`: field 5, wire type `VARINT`.
    pub const MTIME: u8 = key(f::MTIME, VARINT);
    /// `file`: field 6, wire type `LEN`.
    pub const FILE: u8 = key(f::FILE, LEN);
    /// `directory`: field 7, wire type `LEN`.
    pub const DIRECTORY: u8 = key(f::DIRECTORY, LEN);
    /// `symlink`: field 8, wire type `LEN`.
    pub const SYMLINK: u8 = key(f::SYMLINK, LEN);
    /// `xattrs`: field 9, wire type `LEN`.
    pub const XATTRS: u8 = key(f::XATTRS, LEN);
    /// `acl`: field 10, wire type `LEN`.
    pub const ACL: u8 = key(f::ACL, LEN);
}

/// One-byte keys of the fields of `DirEntry`, each with its declared wire type.
pub mod dir_entry {
    use crate::wire::fields::dir_entry as f;
    use crate::wire::{key, LEN, VARINT};
    /// `parent`: field 1, wire type `VARINT`.
    pub const PARENT: u8 = key(f::PARENT, VARINT);
    /// `children`: field 2, wire type `LEN` (packed; an unpacked element has `key(f::CHILDREN, VARINT)`).
    pub const CHILDREN: u8 = key(f::CHILDREN, LEN);
}

/// One-byte keys of the fields of `SubSection`, each with its declared wire type.
pub mod sub_section {
    use crate::wire::fields::sub_section as f;
    use crate::wire::{key, FIXED64, VARINT};
    /// `offset`: field 1, wire type `VARINT`.
    pub const OFFSET: u8 = key(f::OFFSET, VARINT);
    /// `length`: field 2, wire type `VARINT`.
    pub const LENGTH: u8 = key(f::LENGTH, VARINT);
    /// `records`: field 3, wire type `VARINT`.
    pub const RECORDS: u8 = key(f::RECORDS, VARINT);
    /// `first_key`: field 4, wire type `VARINT`.
    pub const FIRST_KEY: u8 = key(f::FIRST_KEY, VARINT);
    /// `checksum`: field 5, wire type `FIXED64`.
    pub const CHECKSUM: u8 = key(f::CHECKSUM, FIXED64);
}

/// One-byte keys of the fields of `Section`, each with its declared wire type.
pub mod section {
    use crate::wire::fields::section as f;
    use crate::wire::{key, FIXED64, LEN, VARINT};
    /// `kind`: field 1, wire type `VARINT`.
    pub const KIND: u8 = key(f::KIND, VARINT);
    /// `optional`: field 2, wire type `VARINT`.
    pub const OPTIONAL: u8 = key(f::OPTIONAL, VARINT);
    /// `offset`: field 3, wire type `VARINT`.
    pub const OFFSET: u8 = key(f::OFFSET, VARINT);
    /// `length`: field 4, wire type `VARINT`.
    pub const LENGTH: u8 = key(f::LENGTH, VARINT);
    /// `records`: field 5, wire type `VARINT`.
    pub const RECORDS: u8 = key(f::RECORDS, VARINT);
    /// `checksum`: field 6, wire type `FIXED64`.
    pub const CHECKSUM: u8 = key(f::CHECKSUM, FIXED64);
    /// `sub_sections`: field 7, wire type `LEN`.
    pub const SUB_SECTIONS: u8 = key(f::SUB_SECTIONS, LEN);
}

/// One-byte keys of the fields of `Index`, each with its declared wire type.
pub mod index {
    use crate::wire::fields::index as f;
    use crate::wire::{key, LEN};
    /// `sections`: field 1, wire type `LEN`.
    pub const SECTIONS: u8 = key(f::SECTIONS, LEN);
}

/// One-byte keys of the fields of `JournalOp`, each with its declared wire type.
pub mod journal_op {
    use crate::wire::fields::journal_op as f;
    use crate::wire::{key, LEN, VARINT};
    /// `txid`: field 1, wire type `VARINT`.
    pub const TXID: u8 = key(f::TXID, VARINT);
    /// `mkdir`: field 2, wire type `LEN`.
    pub const MKDIR: u8 = key(f::MKDIR, LEN);
    /// `create`: field 3, wire type `LEN`.
    pub const CREATE: u8 = key(f::CREATE, LEN);
    /// `symlink`: field 4, wire type `LEN`.
    pub const SYMLINK: u8 = key(f::SYMLINK, LEN);
    /// `add_block`: field 5, wire type `LEN`.
    pub const ADD_BLOCK: u8 = key(f::ADD_BLOCK, LEN);
    /// `rename`: field 6, wire type `LEN`.
    pub const RENAME: u8 = key(f::RENAME, LEN);
    /// `delete`: field 7, wire type `LEN`.
    pub const DELETE: u8 = key(f::DELETE, LEN);
    /// `set_times`: field 8, wire type `LEN`.
    pub const SET_TIMES: u8 = key(f::SET_TIMES, LEN);
    /// `set_owner`: field 9, wire type `LEN`.
    pub const SET_OWNER: u8 = key(f::SET_OWNER, LEN);
    /// `set_mode`: field 10, wire type `LEN`.
    pub const SET_MODE: u8 = key(f::SET_MODE, LEN);
    /// `set_replication`: field 11, wire type `LEN`.
    pub const SET_REPLICATION: u8 = key(f::SET_REPLICATION, LEN);
    /// `set_xattr`: field 12, wire type `LEN`.
    pub const SET_XATTR: u8 = key(f::SET_XATTR, LEN);
    /// `remove_xattr`: field 13, wire type `LEN`.
    pub const REMOVE_XATTR: u8 = key(f::REMOVE_XATTR, LEN);
}

/// One-byte keys of the fields of `CreateOp`, each with its declared wire type.
pub mod create_op {
    use crate::wire::fields::create_op as f;
    use crate::wire::{key, LEN, VARINT};
    /// `parent`: field 1, wire type `VARINT`.
    pub const PARENT: u8 = key(f::PARENT, VARINT);
    /// `name`: field 2, wire type `LEN`.
    pub const NAME: u8 = key(f::NAME, LEN);
    /// `user`: field 3, wire type `LEN`.
    pub const USER: u8 = key(f::USER, LEN);
    /// `group`: field 4, wire type `LEN`.
    pub const GROUP: u8 = key(f::GROUP, LEN);
    /// `mode`: field 5, wire type `VARINT`.
    pub const MODE: u8 = key(f::MODE, VARINT);
    /// `mtime`: field 6, wire type `VARINT`.
    pub const MTIME: u8 = key(f::MTIME, VARINT);
    /// `replication`: field 7, wire type `VARINT`.
    pub const REPLICATION: u8 = key(f::REPLICATION, VARINT);
    /// `preferred_block_size`: field 8, wire type `VARINT`.
    pub const PREFERRED_BLOCK_SIZE: u8 = key(f::PREFERRED_BLOCK_SIZE, VARINT);
    /// `storage_policy`: field 9, wire type `VARINT`.
    pub const STORAGE_POLICY: u8 = key(f::STORAGE_POLICY, VARINT);
    /// `target`: field 10, wire type `LEN`.
    pub const TARGET: u8 = key(f::TARGET, LEN);
    /// `new_id`: field 11, wire type `VARINT`.
    pub const NEW_ID: u8 = key(f::NEW_ID, VARINT);
}

/// One-byte keys of the fields of `AddBlockOp`, each with its declared wire type.
pub mod add_block_op {
    use crate::wire::fields::add_block_op as f;
    use crate::wire::{key, LEN, VARINT};
    /// `id`: field 1, wire type `VARINT`.
    pub const ID: u8 = key(f::ID, VARINT);
    /// `block`: field 2, wire type `LEN`.
    pub const BLOCK: u8 = key(f::BLOCK, LEN);
}

/// One-byte keys of the fields of `RenameOp`, each with its declared wire type.
pub mod rename_op {
    use crate::wire::fields::rename_op as f;
    use crate::wire::{key, LEN, VARINT};
    /// `id`: field 1, wire type `VARINT`.
    pub const ID: u8 = key(f::ID, VARINT);
    /// `new_parent`: field 2, wire type `VARINT`.
    pub const NEW_PARENT: u8 = key(f::NEW_PARENT, VARINT);
    /// `new_name`: field 3, wire type `LEN`.
    pub const NEW_NAME: u8 = key(f::NEW_NAME, LEN);
    /// `mtime`: field 4, wire type `VARINT`.
    pub const MTIME: u8 = key(f::MTIME, VARINT);
}

/// One-byte keys of the fields of `DeleteOp`, each with its declared wire type.
pub mod delete_op {
    use crate::wire::fields::delete_op as f;
    use crate::wire::{key, VARINT};
    /// `id`: field 1, wire type `VARINT`.
    pub const ID: u8 = key(f::ID, VARINT);
    /// `recursive`: field 2, wire type `VARINT`.
    pub const RECURSIVE: u8 = key(f::RECURSIVE, VARINT);
    /// `mtime`: field 3, wire type `VARINT`.
    pub const MTIME: u8 = key(f::MTIME, VARINT);
}

/// One-byte keys of the fields of `SetTimesOp`, each with its declared wire type.
pub mod set_times_op {
    use crate::wire::fields::set_times_op as f;
    use crate::wire::{key, VARINT};
    /// `id`: field 1, wire type `VARINT`.
    pub const ID: u8 = key(f::ID, VARINT);
    /// `mtime`: field 2, wire type `VARINT`.
    pub const MTIME: u8 = key(f::MTIME, VARINT);
    /// `atime`: field 3, wire type `VARINT`.
    pub const ATIME: u8 = key(f::ATIME, VARINT);
}

/// One-byte keys of the fields of `SetOwnerOp`, each with its declared wire type.
pub mod set_owner_op {
    use crate::wire::fields::set_owner_op as f;
    use crate::wire::{key, LEN, VARINT};
    /// `id`: field 1, wire type `VARINT`.
    pub const ID: u8 = key(f::ID, VARINT);
    /// `user`: field 2, wire type `LEN`.
    pub const USER: u8 = key(f::USER, LEN);
    /// `group`: field 3, wire type `LEN`.
    pub const GROUP: u8 = key(f::GROUP, LEN);
}

/// One-byte keys of the fields of `SetModeOp`, each with its declared wire type.
pub mod set_mode_op {
    use crate::wire::fields::set_mode_op as f;
    use crate::wire::{key, VARINT};
    /// `id`: field 1, wire type `VARINT`.
    pub const ID: u8 = key(f::ID, VARINT);
    /// `mode`: field 2, wire type `VARINT`.
    pub const MODE: u8 = key(f::MODE, VARINT);
}

/// One-byte keys of the fields of `SetReplicationOp`, each with its declared wire type.
pub mod set_replication_op {
    use crate::wire::fields::set_replication_op as f;
    use crate::wire::{key, VARINT};
    /// `id`: field 1, wire type `VARINT`.
    pub const ID: u8 = key(f::ID, VARINT);
    /// `replication`: field 2, wire type `VARINT`.
    pub const REPLICATION: u8 = key(f::REPLICATION, VARINT);
}

/// One-byte keys of the fields of `SetXAttrOp`, each with its declared wire type.
pub mod set_xattr_op {
    use crate::wire::fields::set_xattr_op as f;
    use crate::wire::{key, LEN, VARINT};
    /// `id`: field 1, wire type `VARINT`.
    pub const ID: u8 = key(f::ID, VARINT);
    /// `namespace`: field 2, wire type `VARINT`.
    pub const NAMESPACE: u8 = key(f::NAMESPACE, VARINT);
    /// `name`: field 3, wire type `LEN`.
    pub const NAME: u8 = key(f::NAME, LEN);
    /// `value`: field 4, wire type `LEN`.
    pub const VALUE: u8 = key(f::VALUE, LEN);
}

/// One-byte keys of the fields of `RemoveXAttrOp`, each with its declared wire type.
pub mod remove_xattr_op {
    use crate::wire::fields::remove_xattr_op as f;
    use crate::wire::{key, LEN, VARINT};
    /// `id`: field 1, wire type `VARINT`.
    pub const ID: u8 = key(f::ID, VARINT);
    /// `namespace`: field 2, wire type `VARINT`.
    pub const NAMESPACE: u8 = key(f::NAMESPACE, VARINT);
    /// `name`: field 3, wire type `LEN`.
    pub const NAME: u8 = key(f::NAME, LEN);
}

#[cfg(test)]
mod tests {
    use crate::pb;
    use prost::Message;

    /// The first byte prost writes for a message with one field set.
    fn first<M: Message>(m: &M) -> u8 {
        m.encode_to_vec()[0]
    }

    #[test]
    fn keys_are_the_ones_prost_writes() {
        let b = pb::Block {
            id: 1,
            ..Default::default()
        };
        assert_eq!(first(&b), super::block::ID);
        let b = pb::Block {
            length: 1,
            ..Default::default()
        };
        assert_eq!(first(&b), super::block::LENGTH);
        let i = pb::Inode {
            permission: 1,
            ..Default::default()
        };
        assert_eq!(first(&i), super::inode::PERMISSION);
        let i = pb::Inode {
            symlink: Some(pb::SymlinkAttrs::default()),
            ..Default::default()
        };
        assert_eq!(first(&i), super::inode::SYMLINK);
        let i = pb::Inode {
            acl: vec![pb::AclEntry::default()],
            ..Default::default()
        };
        assert_eq!(first(&i), super::inode::ACL);
        let f = pb::FileAttrs {
            blocks: vec![pb::Block::default()],
            ..Default::default()
        };
        assert_eq!(first(&f), super::file_attrs::BLOCKS);
        let d = pb::DirEntry {
            children: vec![1],
            ..Default::default()
        };
        assert_eq!(first(&d), super::dir_entry::CHILDREN);
        let d = pb::DirectoryAttrs {
            ds_quota: -1,
            ..Default::default()
        };
        assert_eq!(first(&d), super::directory_attrs::DS_QUOTA);
        let op = pb::JournalOp {
            txid: 1,
            ..Default::default()
        };
        assert_eq!(first(&op), super::journal_op::TXID);
        let op = pb::JournalOp {
            op: Some(pb::journal_op::Op::RemoveXattr(Default::default())),
            ..Default::default()
        };
        assert_eq!(first(&op), super::journal_op::REMOVE_XATTR);
        let s = pb::Section {
            sub_sections: vec![Default::default()],
            ..Default::default()
        };
        assert_eq!(first(&s), super::section::SUB_SECTIONS);
    }
}
