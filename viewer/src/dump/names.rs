//! The names OIV gives to inode types, xattr namespaces and ACL entries,
//! shared by the XML and JSON-lines formats.

use crate::text::{acl_kind_name, rwx};
use nsimage_namespace::{AclEntry, InodeKind, StringTable, XAttrNs};

/// OIV's name of an inode type.
pub(crate) fn kind_name(k: InodeKind) -> &'static str {
    match k {
        InodeKind::File => "FILE",
        InodeKind::Directory => "DIRECTORY",
        InodeKind::Symlink => "SYMLINK",
    }
}

/// OIV's name of an xattr namespace.
pub(crate) fn xattr_ns_name(n: XAttrNs) -> &'static str {
    match n {
        XAttrNs::User => "USER",
        XAttrNs::Trusted => "TRUSTED",
        XAttrNs::Security => "SECURITY",
        XAttrNs::System => "SYSTEM",
        XAttrNs::Raw => "RAW",
    }
}

/// An ACL entry as HDFS prints it: `[default:]user:bob:r-x`.
pub(crate) fn acl_text(strings: &StringTable, e: &AclEntry) -> Vec<u8> {
    let mut s = Vec::new();
    if e.default_scope {
        s.extend_from_slice(b"default:");
    }
    s.extend_from_slice(acl_kind_name(e.kind).as_bytes());
    s.push(b':');
    if e.name != 0 {
        s.extend_from_slice(strings.get(e.name).unwrap_or_default());
    }
    s.push(b':');
    s.extend_from_slice(&rwx(u32::from(e.perm)));
    s
}
