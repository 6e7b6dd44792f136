//! The wire rules of FORMAT.md ("Protobuf wire rules") as a schema-driven
//! check. Readers that decode a message with prost run this check on the
//! same bytes first, so that they accept exactly what the zero-copy walker
//! of the loader accepts: prost alone skips groups and truncates a uint32
//! or enum field that holds more than 32 bits, which the format refuses.
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use super::cursor::Cursor;
use super::keys::{FIXED32, FIXED64, LEN, VARINT};

/// The type of a known field, as far as the wire rules go.
#[derive(Clone, Copy, Debug)]
pub enum Ty {
    /// uint64 or int64: any varint.
    U64,
    /// uint32: a varint below 2^32.
    U32,
    /// An enum (or int32): the varint of a value in i32's range.
    Enum,
    /// bool: a varint of 0 or 1.
    Bool,
    /// fixed64: eight bytes.
    Fixed64,
    /// bytes or string: a length-delimited field.
    Bytes,
    /// A nested message with its fields.
    Msg(&'static [(u32, Ty)]),
    /// A repeated uint64, packed or not.
    RepeatedU64,
}

/// Checks a varint field's value against its type.
#[inline]
pub fn varint_fits(ty: Ty, v: u64) -> bool {
    match ty {
        Ty::U32 => v <= u64::from(u32::MAX),
        // int32 values are sign-extended to 64 bits on the wire.
        #[allow(clippy::cast_possible_wrap)]
        Ty::Enum => i32::try_from(v as i64).is_ok(),
        Ty::Bool => v <= 1,
        _ => true,
    }
}

/// Checks that `buf` is a message with fields `schema` that follows the wire
/// rules: every key has a field number of 1 or more and a wire type of 0, 1,
/// 2 or 5 (groups, 3 and 4, are refused); a known field has its declared
/// wire type and, for varints, a value its type can hold; nested messages
/// follow the same rules; unknown fields are skipped.
pub fn check(buf: &[u8], schema: &[(u32, Ty)]) -> Result<(), &'static str> {
    let mut c = Cursor::new(buf);
    while !c.done() {
        let (field, wt) = c.key()?;
        let ty = schema.iter().find(|f| f.0 == field).map(|f| f.1);
        match (ty, wt) {
            (Some(Ty::RepeatedU64), VARINT) => {
                c.varint()?;
            }
            (Some(Ty::RepeatedU64), LEN) => {
                c.each_varint(LEN, |_| Ok(()))?;
            }
            (Some(t @ (Ty::U64 | Ty::U32 | Ty::Enum | Ty::Bool)), VARINT) => {
                if !varint_fits(t, c.varint()?) {
                    return Err("a varint field holds a value out of its type's range");
                }
            }
            (Some(Ty::Fixed64), FIXED64) => {
                c.take(8)?;
            }
            (Some(Ty::Bytes), LEN) => {
                c.bytes()?;
            }
            (Some(Ty::Msg(fields)), LEN) => {
                check(c.bytes()?, fields)?;
            }
            (Some(_), _) => return Err("a known field has the wrong wire type"),
            (None, VARINT | FIXED64 | LEN | FIXED32) => c.skip(wt)?,
            (None, _) => return Err("unsupported wire type (groups are refused)"),
        }
    }
    Ok(())
}

/// Field tables of the messages in `proto/nsimage.proto`, by the field
/// numbers of [`super::fields`].
pub mod schema {
    use super::Ty::{self, *};
    use crate::wire::fields as f;

    /// `NsInfo`.
    pub const NS_INFO: &[(u32, Ty)] = &[
        (f::ns_info::NAMESPACE_ID, U64),
        (f::ns_info::LAST_TXID, U64),
        (f::ns_info::LAST_INODE_ID, U64),
        (f::ns_info::LAST_BLOCK_ID, U64),
        (f::ns_info::GENERATION_STAMP, U64),
        (f::ns_info::CREATION_TIME, U64),
    ];
    /// `StringEntry`.
    pub const STRING_ENTRY: &[(u32, Ty)] = &[(f::string_entry::VALUE, Bytes)];
    const BLOCK: &[(u32, Ty)] = &[
        (f::block::ID, U64),
        (f::block::GENERATION_STAMP, U64),
        (f::block::LENGTH, U64),
    ];
    const UC: &[(u32, Ty)] = &[
        (f::under_construction::CLIENT_NAME, Bytes),
        (f::under_construction::CLIENT_MACHINE, Bytes),
    ];
    const FILE: &[(u32, Ty)] = &[
        (f::file_attrs::ATIME, U64),
        (f::file_attrs::REPLICATION, U32),
        (f::file_attrs::PREFERRED_BLOCK_SIZE, U64),
        (f::file_attrs::BLOCKS, Msg(BLOCK)),
        (f::file_attrs::STORAGE_POLICY, U32),
        (f::file_attrs::UNDER_CONSTRUCTION, Msg(UC)),
    ];
    const DIRECTORY: &[(u32, Ty)] = &[
        (f::directory_attrs::NS_QUOTA, U64),
        (f::directory_attrs::DS_QUOTA, U64),
    ];
    const SYMLINK: &[(u32, Ty)] = &[(f::symlink_attrs::TARGET, Bytes)];
    const XATTR: &[(u32, Ty)] = &[
        (f::xattr::NAMESPACE, Enum),
        (f::xattr::NAME, U32),
        (f::xattr::VALUE, Bytes),
    ];
    const ACL: &[(u32, Ty)] = &[
        (f::acl_entry::NAME, U32),
        (f::acl_entry::TYPE, Enum),
        (f::acl_entry::DEFAULT_SCOPE, Bool),
        (f::acl_entry::PERMISSION, U32),
    ];
    /// `Inode`, with its nested messages.
    pub const INODE: &[(u32, Ty)] = &[
        (f::inode::ID, U64),
        (f::inode::TYPE, Enum),
        (f::inode::NAME, Bytes),
        (f::inode::PERMISSION, Fixed64),
        (f::inode::MTIME, U64),
        (f::inode::FILE, Msg(FILE)),
        (f::inode::DIRECTORY, Msg(DIRECTORY)),
        (f::inode::SYMLINK, Msg(SYMLINK)),
        (f::inode::XATTRS, Msg(XATTR)),
        (f::inode::ACL, Msg(ACL)),
    ];
    /// `DirEntry`.
    pub const DIR_ENTRY: &[(u32, Ty)] = &[
        (f::dir_entry::PARENT, U64),
        (f::dir_entry::CHILDREN, RepeatedU64),
    ];
    /// `NameRun` (the optional NAME_RUNS section).
    pub const NAME_RUN: &[(u32, Ty)] = &[
        (f::name_run::PARENT, U64),
        (f::name_run::NAMES, Bytes),
        (f::name_run::CHILDREN, RepeatedU64),
    ];
    /// `NameEntry` (the optional NAME_INDEX section).
    pub const NAME_ENTRY: &[(u32, Ty)] = &[
        (f::name_entry::PARENT, U64),
        (f::name_entry::NAME, Bytes),
        (f::name_entry::CHILD, U64),
        (f::name_entry::TYPE, Enum),
    ];
    const SUB_SECTION: &[(u32, Ty)] = &[
        (f::sub_section::OFFSET, U64),
        (f::sub_section::LENGTH, U64),
        (f::sub_section::RECORDS, U64),
        (f::sub_section::FIRST_KEY, U64),
        (f::sub_section::CHECKSUM, Fixed64),
        (f::sub_section::CODEC, U32),
        (f::sub_section::RAW_LENGTH, U64),
        (f::sub_section::NONCE, Bytes),
    ];
    const SECTION: &[(u32, Ty)] = &[
        (f::section::KIND, U32),
        (f::section::OPTIONAL, Bool),
        (f::section::OFFSET, U64),
        (f::section::LENGTH, U64),
        (f::section::RECORDS, U64),
        (f::section::CHECKSUM, Fixed64),
        (f::section::SUB_SECTIONS, Msg(SUB_SECTION)),
        (f::section::CODEC, U32),
        (f::section::RAW_LENGTH, U64),
        (f::section::NONCE, Bytes),
    ];
    const ENCRYPTION: &[(u32, Ty)] = &[
        (f::encryption::CIPHER, U32),
        (f::encryption::IMAGE_ID, Bytes),
        (f::encryption::KEY_FINGERPRINT, Bytes),
    ];
    /// `Index`, with its nested messages.
    pub const INDEX: &[(u32, Ty)] = &[
        (f::index::SECTIONS, Msg(SECTION)),
        (f::index::ENCRYPTION, Msg(ENCRYPTION)),
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_wide_values_and_wrong_types_are_refused() {
        let s = schema::INODE;
        assert!(check(&[0x08, 0x81, 0x80, 0x01], s).is_ok());
        // Unknown field 11 as a group start / end.
        assert!(check(&[0x5b, 0x5c], s).is_err());
        assert!(check(&[0x5c], s).is_err());
        // Field number 0.
        assert!(check(&[0x00, 0x01], s).is_err());
        // type = 2^32 + 2.
        assert!(check(&[0x10, 0x82, 0x80, 0x80, 0x80, 0x10], s).is_err());
        // name as a varint.
        assert!(check(&[0x18, 0x01], s).is_err());
        // Unknown fixed32 and varint fields are skipped.
        assert!(check(&[0x5d, 1, 2, 3, 4, 0x60, 0x05], s).is_ok());
        // Packed and unpacked children.
        assert!(check(&[0x10, 0x05, 0x12, 0x02, 0x01, 0x02], schema::DIR_ENTRY).is_ok());
        assert!(check(&[0x12, 0x02, 0x01, 0x82], schema::DIR_ENTRY).is_err());
    }
}
