//! The names OIV gives to inode types, xattr namespaces and ACL entries,
//! shared by the XML and JSON-lines formats.

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
    s.extend_from_slice(match e.kind {
        0 => b"user:".as_slice(),
        1 => b"group:",
        2 => b"mask:",
        _ => b"other:",
    });
    if e.name != 0 {
        s.extend_from_slice(strings.get(e.name).unwrap_or_default());
    }
    s.push(b':');
    for (bit, c) in [(4, b'r'), (2, b'w'), (1, b'x')] {
        s.push(if e.perm & bit != 0 { c } else { b'-' });
    }
    s
}
