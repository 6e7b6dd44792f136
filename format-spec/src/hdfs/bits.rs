//! Packed fields of Hadoop inodes (see `FSImageFormatPBINode` and
//! `SerialNumberManager` in Hadoop): the permission fixed64, ACL entries
//! and xattr names (fixed32), and string ids with their table tag.
#![deny(clippy::cast_possible_truncation)]

/// The 24-bit string-id fields of the packed forms.
const ID_MASK: u64 = (1 << 24) - 1;

/// A permission fixed64: bits 40-63 the user's string id, 16-39 the
/// group's, 0-15 the mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PermBits {
    /// Serial id of the user (in the USER table).
    pub user: u32,
    /// Serial id of the group (in the GROUP table).
    pub group: u32,
    /// Permission bits.
    pub mode: u16,
}

impl PermBits {
    /// Unpacks a permission fixed64.
    pub fn unpack(v: u64) -> PermBits {
        PermBits {
            user: low24(v >> 40),
            group: low24(v >> 16),
            mode: u16::from_le_bytes([v.to_le_bytes()[0], v.to_le_bytes()[1]]),
        }
    }

    /// Packs it back.
    pub fn pack(self) -> u64 {
        ((u64::from(self.user) & ID_MASK) << 40)
            | ((u64::from(self.group) & ID_MASK) << 16)
            | u64::from(self.mode)
    }
}

fn low24(v: u64) -> u32 {
    let b = (v & ID_MASK).to_le_bytes();
    u32::from_le_bytes([b[0], b[1], b[2], 0])
}

/// The low byte of a value masked to fit it.
fn byte(v: u32) -> u8 {
    v.to_le_bytes()[0]
}

/// An ACL entry fixed32: bits 0-2 permission (rwx), 3-4 type (0 user,
/// 1 group, 2 mask, 3 other), 5 scope (0 access, 1 default), 6-29 the
/// name's string id (0: unnamed; a user entry's name is in the USER table,
/// the others' in GROUP).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AclBits {
    /// rwx bits.
    pub perm: u8,
    /// 0 user, 1 group, 2 mask, 3 other.
    pub kind: u8,
    /// Whether the entry is of the default ACL.
    pub default_scope: bool,
    /// Serial id of the name; 0 for none.
    pub name: u32,
}

impl AclBits {
    /// Unpacks an ACL entry.
    pub fn unpack(v: u32) -> AclBits {
        AclBits {
            perm: byte(v & 7),
            kind: byte((v >> 3) & 3),
            default_scope: (v >> 5) & 1 == 1,
            name: low24(u64::from(v >> 6)),
        }
    }

    /// Packs it back.
    pub fn pack(self) -> u32 {
        (u32::from(self.perm) & 7)
            | ((u32::from(self.kind) & 3) << 3)
            | (u32::from(self.default_scope) << 5)
            | ((self.name & 0xff_ffff) << 6)
    }

    /// The string table the name is looked up in.
    pub fn name_tag(self) -> StringTag {
        if self.kind == 0 {
            StringTag::User
        } else {
            StringTag::Group
        }
    }
}

/// An xattr name fixed32: bits 30-31 the namespace's low two bits, bit 5
/// its third bit (`XATTRS_NAMESPACE_EXT`), bits 6-29 the name's string id
/// (XATTR table). Namespaces: 0 user, 1 trusted, 2 security, 3 system, 4 raw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XAttrBits {
    /// Namespace number (0 to 7 on the wire; 0 to 4 defined).
    pub ns: u8,
    /// Serial id of the name.
    pub name: u32,
}

impl XAttrBits {
    /// Unpacks an xattr name.
    pub fn unpack(v: u32) -> XAttrBits {
        let low = (v >> 30) & 3;
        let ext = (v >> 5) & 1;
        XAttrBits {
            ns: byte((ext << 2) | low),
            name: low24(u64::from(v >> 6)),
        }
    }

    /// Packs it back.
    pub fn pack(self) -> u32 {
        let ns = u32::from(self.ns);
        ((ns & 3) << 30) | (((ns >> 2) & 1) << 5) | ((self.name & 0xff_ffff) << 6)
    }
}

/// Which of Hadoop's serial-number tables a string id belongs to
/// (`SerialNumberManager`'s ordinals: GLOBAL 0, USER 1, GROUP 2, XATTR 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StringTag {
    /// User names (owners, named user ACL entries).
    User = 1,
    /// Group names (groups, named group ACL entries).
    Group = 2,
    /// Xattr names.
    XAttr = 3,
}

/// The most `maskBits` a string table may declare (Hadoop refuses more):
/// 32 minus the leading zeros of the four tables' count.
pub const MAX_MASK_BITS: u32 = 3;

impl StringTag {
    /// The key of serial id `serial` in a STRING_TABLE section whose header
    /// declares `mask_bits`: with 0 (one global table, Hadoop's default)
    /// the serial id itself; else the id with the table's ordinal in its
    /// top `mask_bits` bits (Hadoop 3.2+'s expanded tables).
    pub fn key(self, serial: u32, mask_bits: u32) -> u32 {
        if mask_bits == 0 || mask_bits > MAX_MASK_BITS {
            serial
        } else {
            serial | ((self as u32) << (32 - mask_bits))
        }
    }

    /// The table and serial id of a STRING_TABLE entry's id; with
    /// `mask_bits` 0 the table is unknown (global), `None`.
    pub fn split(id: u32, mask_bits: u32) -> (Option<StringTag>, u32) {
        if mask_bits == 0 || mask_bits > MAX_MASK_BITS {
            return (None, id);
        }
        let tag = id >> (32 - mask_bits);
        let serial = id & (u32::MAX >> mask_bits);
        let tag = match tag {
            1 => Some(StringTag::User),
            2 => Some(StringTag::Group),
            3 => Some(StringTag::XAttr),
            _ => None,
        };
        (tag, serial)
    }
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::unusual_byte_groupings
)]
mod tests {
    use super::*;

    #[test]
    fn packed_forms_round_trip() {
        let p = PermBits {
            user: 0xabcdef,
            group: 0x123456,
            mode: 0o1755,
        };
        assert_eq!(PermBits::unpack(p.pack()), p);
        assert_eq!(
            PermBits::unpack(0x000001_000002_01ed),
            PermBits {
                user: 1,
                group: 2,
                mode: 0o755
            }
        );
        let a = AclBits {
            perm: 5,
            kind: 1,
            default_scope: true,
            name: 77,
        };
        assert_eq!(AclBits::unpack(a.pack()), a);
        for ns in 0..5 {
            let x = XAttrBits { ns, name: 4242 };
            assert_eq!(XAttrBits::unpack(x.pack()), x);
        }
        // raw (4) sets the extension bit only.
        assert_eq!(XAttrBits { ns: 4, name: 0 }.pack(), 1 << 5);
        assert_eq!(StringTag::Group.key(5, 3), 5 | (2 << 29));
        assert_eq!(
            StringTag::split(5 | (2 << 29), 3),
            (Some(StringTag::Group), 5)
        );
        assert_eq!(StringTag::User.key(5, 0), 5);
    }
}
