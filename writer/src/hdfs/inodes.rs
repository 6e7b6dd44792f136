//! One inode as Hadoop's INODE section holds it, and one directory's
//! INODE_DIR entry, from the namespace's read view.
//!
//! Bit layouts (Hadoop's `FSImageFormatPBINode`, `AclEntryStatusFormat`,
//! `XAttrFormat`, `PermissionStatusFormat`):
//! - permission (fixed64): user serial << 40 | group serial << 16 | mode;
//! - ACL entry (fixed32): name serial << 6 | scope << 5 | type << 3 | perm,
//!   scope 0 access / 1 default, type 0 user / 1 group / 2 mask / 3 other;
//! - xattr name (fixed32): (namespace & 3) << 30 | name serial << 6 |
//!   (namespace >> 2) << 5, namespaces user 0, trusted 1, security 2,
//!   system 3, raw 4.

use super::options::{
    HdfsWriteOptions, ERASURE_CODING_LAYOUT_VERSION, STORAGE_POLICY_LAYOUT_VERSION,
    XATTR_NAMESPACE_EXT_LAYOUT_VERSION,
};
use super::serials::{Kind, Serials};
use nsimage_format::hdfs_pb::i_node_directory_section::DirEntry;
use nsimage_format::hdfs_pb::i_node_section::{
    i_node, AclFeatureProto, FileUnderConstructionFeature, INode, INodeDirectory, INodeFile,
    INodeSymlink, XAttrCompactProto, XAttrFeatureProto,
};
use nsimage_format::hdfs_pb::BlockProto;
use nsimage_namespace::{Attrs, Extra, Inode, Perm, XAttrNs};
use std::cmp::Ordering;
use std::io;

/// A quota as Hadoop's uint64 field holds the Java long (-1: none).
fn quota(q: i64) -> u64 {
    // Two's complement, as Java writes a long into a uint64.
    q.cast_unsigned()
}

/// The permission with Hadoop's serials in place of the namespace's ids.
pub(crate) fn permission(p: Perm, s: &Serials) -> u64 {
    (u64::from(s.serial(Kind::User, p.user())) << 40)
        | (u64::from(s.serial(Kind::Group, p.group())) << 16)
        | u64::from(p.mode())
}

fn acl(x: &Extra, s: &Serials) -> Option<AclFeatureProto> {
    if x.acl.is_empty() {
        return None;
    }
    let entries = x
        .acl
        .iter()
        .map(|a| {
            let name = match (a.kind, a.name) {
                (_, 0) => 0,
                (0, n) => s.serial(Kind::User, n),
                (1, n) => s.serial(Kind::Group, n),
                _ => 0,
            };
            (name << 6)
                | (u32::from(a.default_scope) << 5)
                | (u32::from(a.kind & 3) << 3)
                | u32::from(a.perm & 7)
        })
        .collect();
    Some(AclFeatureProto { entries })
}

fn xattrs(
    x: &Extra,
    s: &Serials,
    opts: &HdfsWriteOptions,
) -> io::Result<Option<XAttrFeatureProto>> {
    if x.xattrs.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(x.xattrs.len());
    for a in &x.xattrs {
        let ns = a.ns as u32;
        if a.ns == XAttrNs::Raw && !opts.has(XATTR_NAMESPACE_EXT_LAYOUT_VERSION) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "layout version {} has no raw. xattr namespace (it came with -59)",
                    opts.layout_version
                ),
            ));
        }
        let name = ((ns & 3) << 30) | (s.serial(Kind::XAttr, a.name) << 6) | (((ns >> 2) & 1) << 5);
        out.push(XAttrCompactProto {
            name,
            value: Some(a.value.to_vec()),
        });
    }
    Ok(Some(XAttrFeatureProto { x_attrs: out }))
}

/// The INODE section's message for `inode`.
pub(crate) fn inode_message(
    inode: &Inode<'_>,
    s: &Serials,
    opts: &HdfsWriteOptions,
) -> io::Result<INode> {
    let perm = Some(permission(inode.perm(), s));
    let extra = inode.extra();
    let mut m = INode {
        r#type: 0,
        id: inode.id(),
        name: Some(inode.name().to_vec()),
        file: None,
        directory: None,
        symlink: None,
    };
    match inode.attrs() {
        Attrs::File(f) => {
            m.r#type = i_node::Type::File as i32;
            let mut file = INodeFile {
                replication: Some(u32::from(f.replication)),
                modification_time: Some(inode.mtime()),
                access_time: Some(f.atime),
                preferred_block_size: Some(f.preferred_block_size),
                permission: perm,
                blocks: f
                    .blocks
                    .iter()
                    .map(|b| BlockProto {
                        block_id: b.id,
                        gen_stamp: b.generation_stamp,
                        num_bytes: Some(b.length),
                    })
                    .collect(),
                ..Default::default()
            };
            if opts.has(STORAGE_POLICY_LAYOUT_VERSION) {
                file.storage_policy_id = Some(u32::from(f.storage_policy));
            }
            if opts.has(ERASURE_CODING_LAYOUT_VERSION) {
                // CONTIGUOUS: Hadoop 3 names the block type of every file.
                file.block_type = Some(0);
            }
            if let Some(x) = extra {
                file.acl = acl(x, s);
                file.x_attrs = xattrs(x, s, opts)?;
                file.file_uc =
                    x.under_construction
                        .as_ref()
                        .map(|uc| FileUnderConstructionFeature {
                            client_name: Some(
                                String::from_utf8_lossy(&uc.client_name).into_owned(),
                            ),
                            client_machine: Some(
                                String::from_utf8_lossy(&uc.client_machine).into_owned(),
                            ),
                        });
            }
            m.file = Some(file);
        }
        Attrs::Directory { ns_quota, ds_quota } => {
            m.r#type = i_node::Type::Directory as i32;
            let mut dir = INodeDirectory {
                modification_time: Some(inode.mtime()),
                ns_quota: Some(quota(ns_quota)),
                ds_quota: Some(quota(ds_quota)),
                permission: perm,
                ..Default::default()
            };
            if let Some(x) = extra {
                dir.acl = acl(x, s);
                dir.x_attrs = xattrs(x, s, opts)?;
            }
            m.directory = Some(dir);
        }
        Attrs::Symlink { target } => {
            if extra.is_some_and(|x| !x.is_empty()) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "symlink {} has xattrs or an ACL, which Hadoop's fsimage cannot hold",
                        inode.id()
                    ),
                ));
            }
            m.r#type = i_node::Type::Symlink as i32;
            // Hadoop gives a new link an access time equal to its
            // modification time; the namespace keeps no other.
            m.symlink = Some(INodeSymlink {
                permission: perm,
                target: Some(target.to_vec()),
                modification_time: Some(inode.mtime()),
                access_time: Some(inode.mtime()),
            });
        }
    }
    Ok(m)
}

/// Hadoop's order of names (`DFSUtilClient.compareBytes`, Guava's
/// `SignedBytes.lexicographicalComparator`): bytes compared as signed,
/// a prefix first.
pub(crate) fn signed_cmp(a: &[u8], b: &[u8]) -> Ordering {
    let sa = a.iter().map(|&x| x as i8);
    let sb = b.iter().map(|&x| x as i8);
    sa.cmp(sb)
}

/// The INODE_DIR entry of directory `dir`, its children in Hadoop's
/// order; `None` when it has no children (Hadoop writes no entry then).
pub(crate) fn dir_entry(dir: &Inode<'_>) -> Option<DirEntry> {
    let slots = dir.child_slots();
    if slots.is_empty() {
        return None;
    }
    // The namespace orders children by unsigned bytes, which is Hadoop's
    // signed order unless a name has a byte of 0x80 or more.
    let high = dir.children().any(|c| c.name().iter().any(|&b| b >= 0x80));
    let children = if high {
        let mut v: Vec<(&[u8], u64)> = dir.children().map(|c| (c.name(), c.id())).collect();
        v.sort_by(|a, b| signed_cmp(a.0, b.0));
        v.into_iter().map(|(_, id)| id).collect()
    } else {
        dir.children().map(|c| c.id()).collect::<Vec<u64>>()
    };
    if children.is_empty() {
        return None;
    }
    Some(DirEntry {
        parent: Some(dir.id()),
        children,
        ref_children: Vec::new(),
    })
}
