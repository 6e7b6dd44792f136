//! Conversions between the prost messages of the format ([`crate::pb`]) and
//! the namespace model ([`nsimage_namespace`]), written once for the writer,
//! the loader's prost path and the store's journal. Conversions to the
//! messages cannot fail; those from them check every value the model holds
//! in a narrower type, since messages come from disk.
//!
//! Record-level decoding (which attribute group an inode has, the range
//! checks shared with the zero-copy decoder) stays with the loader; these
//! are the leaf types both sides spell the same way.

use crate::consts;
use crate::error::FormatError;
use crate::pb;
use nsimage_namespace::{Block, FileSpec, NsInfo, UnderConstruction, XAttr, XAttrNs};

// The format's rules and the model's limits are the same numbers: an image
// holds exactly the namespaces the model can.
const _: () = assert!(consts::ROOT_ID == nsimage_namespace::ROOT_ID);
const _: () = assert!(consts::MAX_NAME_LENGTH == nsimage_namespace::MAX_NAME_LENGTH);

impl From<&NsInfo> for pb::NsInfo {
    fn from(i: &NsInfo) -> Self {
        pb::NsInfo {
            namespace_id: i.namespace_id,
            last_txid: i.last_txid,
            last_inode_id: i.last_inode_id,
            last_block_id: i.last_block_id,
            generation_stamp: i.generation_stamp,
            creation_time: i.creation_time,
        }
    }
}

impl From<&pb::NsInfo> for NsInfo {
    fn from(m: &pb::NsInfo) -> Self {
        NsInfo {
            namespace_id: m.namespace_id,
            last_txid: m.last_txid,
            last_inode_id: m.last_inode_id,
            last_block_id: m.last_block_id,
            generation_stamp: m.generation_stamp,
            creation_time: m.creation_time,
        }
    }
}

impl From<&Block> for pb::Block {
    #[inline]
    fn from(b: &Block) -> Self {
        pb::Block {
            id: b.id,
            generation_stamp: b.generation_stamp,
            length: b.length,
        }
    }
}

impl From<&pb::Block> for Block {
    #[inline]
    fn from(b: &pb::Block) -> Self {
        Block {
            id: b.id,
            generation_stamp: b.generation_stamp,
            length: b.length,
        }
    }
}

impl From<pb::Block> for Block {
    #[inline]
    fn from(b: pb::Block) -> Self {
        Block::from(&b)
    }
}

impl From<XAttrNs> for pb::XAttrNamespace {
    fn from(ns: XAttrNs) -> Self {
        match ns {
            XAttrNs::User => pb::XAttrNamespace::User,
            XAttrNs::Trusted => pb::XAttrNamespace::Trusted,
            XAttrNs::Security => pb::XAttrNamespace::Security,
            XAttrNs::System => pb::XAttrNamespace::System,
            XAttrNs::Raw => pb::XAttrNamespace::Raw,
        }
    }
}

impl From<pb::XAttrNamespace> for XAttrNs {
    fn from(ns: pb::XAttrNamespace) -> Self {
        match ns {
            pb::XAttrNamespace::User => XAttrNs::User,
            pb::XAttrNamespace::Trusted => XAttrNs::Trusted,
            pb::XAttrNamespace::Security => XAttrNs::Security,
            pb::XAttrNamespace::System => XAttrNs::System,
            pb::XAttrNamespace::Raw => XAttrNs::Raw,
        }
    }
}

/// The model's xattr namespace of an enum value as decoded (`i32`).
pub fn xattr_ns(v: i32) -> Result<XAttrNs, FormatError> {
    pb::XAttrNamespace::try_from(v)
        .map(XAttrNs::from)
        .map_err(|_| FormatError::XAttrNamespace(v))
}

impl TryFrom<&pb::XAttr> for XAttr {
    type Error = FormatError;

    /// The name stays a string id of the image it was read from.
    fn try_from(x: &pb::XAttr) -> Result<Self, FormatError> {
        Ok(XAttr {
            ns: xattr_ns(x.namespace)?,
            name: x.name,
            value: x.value.as_slice().into(),
        })
    }
}

impl From<&UnderConstruction> for pb::UnderConstruction {
    fn from(u: &UnderConstruction) -> Self {
        pb::UnderConstruction {
            client_name: u.client_name.to_vec(),
            client_machine: u.client_machine.to_vec(),
        }
    }
}

impl From<&pb::UnderConstruction> for UnderConstruction {
    fn from(u: &pb::UnderConstruction) -> Self {
        UnderConstruction {
            client_name: u.client_name.as_slice().into(),
            client_machine: u.client_machine.as_slice().into(),
        }
    }
}

/// A replication factor as the model holds it.
pub fn replication(v: u32) -> Result<u16, FormatError> {
    u16::try_from(v).map_err(|_| FormatError::OutOfRange {
        field: "replication",
        value: u64::from(v),
    })
}

/// A storage policy as the model holds it.
pub fn storage_policy(v: u32) -> Result<u8, FormatError> {
    u8::try_from(v).map_err(|_| FormatError::OutOfRange {
        field: "storage policy",
        value: u64::from(v),
    })
}

impl TryFrom<&pb::CreateOp> for FileSpec {
    type Error = FormatError;

    /// The file attributes of a journaled `create`.
    fn try_from(c: &pb::CreateOp) -> Result<Self, FormatError> {
        Ok(FileSpec {
            replication: replication(c.replication)?,
            preferred_block_size: c.preferred_block_size,
            storage_policy: storage_policy(c.storage_policy)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let info = NsInfo {
            namespace_id: 1,
            last_txid: 2,
            last_inode_id: 3,
            last_block_id: 4,
            generation_stamp: 5,
            creation_time: 6,
        };
        assert_eq!(NsInfo::from(&pb::NsInfo::from(&info)), info);
        let b = Block {
            id: 7,
            generation_stamp: 8,
            length: 9,
        };
        assert_eq!(Block::from(pb::Block::from(&b)), b);
        for v in 0..=4 {
            let ns = xattr_ns(v).unwrap();
            assert_eq!(ns as i32, v);
            assert_eq!(pb::XAttrNamespace::from(ns) as i32, v);
            assert_eq!(XAttrNs::from_u32(v.unsigned_abs()), Some(ns));
        }
        assert!(matches!(xattr_ns(5), Err(FormatError::XAttrNamespace(5))));
        assert!(matches!(xattr_ns(-1), Err(FormatError::XAttrNamespace(-1))));
        let c = pb::CreateOp {
            replication: 70_000,
            ..pb::CreateOp::default()
        };
        assert_eq!(
            FileSpec::try_from(&c).unwrap_err().to_string(),
            "replication 70000 out of range"
        );
    }
}
