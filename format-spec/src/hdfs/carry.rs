//! [`SnapshotCarry`]: nsimage's own message (not Hadoop's) that carries a
//! Hadoop image's snapshots, their diffs, the references and the inodes
//! only snapshots see from one image to another (`convert`), whole, in
//! Hadoop's message types. Its string ids are indexes into its own
//! `strings` (from 1; 0 is "no name"), so it does not depend on any image's
//! string table: [`map_string_ids`] rewrites them (a loader from its
//! STRING_TABLE's serials into the carry's indexes, a writer from those
//! into its own serials). See `hdfs_fsimage.proto` and FORMAT.md's
//! `HDFS_SNAPSHOTS`.

use super::bits::{AclBits, PermBits, StringTag, XAttrBits};
use crate::error::{FormatError, Location};
use crate::hdfs_pb::i_node_section::{AclFeatureProto, INode, XAttrFeatureProto};
use prost::Message;

pub use crate::hdfs_pb::SnapshotCarry;

/// The largest carry [`decode_carry`] accepts (what one nsimage record
/// holds).
pub const MAX_CARRY_BYTES: u64 = crate::consts::MAX_RECORD_LENGTH;

/// The carry's bytes.
pub fn encode_carry(c: &SnapshotCarry) -> Vec<u8> {
    c.encode_to_vec()
}

/// Decodes a carry from `bytes` (found at `at`), checking that every string
/// id inside it indexes its `strings` and that every record the writers
/// need is whole: a diff record has its entry, a directory diff its diff.
///
/// # Errors
/// [`FormatError::Corrupt`] at `at` when the bytes do not decode or break
/// one of those rules.
pub fn decode_carry(bytes: &[u8], at: &Location) -> Result<SnapshotCarry, FormatError> {
    let bad = |d: String| FormatError::corrupt(at.clone(), d);
    if bytes.len() as u64 > MAX_CARRY_BYTES {
        return Err(bad(format!("snapshot carry of {} bytes", bytes.len())));
    }
    let mut c = SnapshotCarry::decode(bytes)
        .map_err(|e| bad(format!("the snapshot carry does not decode: {e}")))?;
    let n = c.strings.len();
    map_string_ids(&mut c, |_, i| {
        if (i as usize) <= n {
            Ok(i)
        } else {
            Err(bad(format!(
                "string index {i} in the snapshot carry, which has {n} strings"
            )))
        }
    })?;
    for (k, d) in c.diffs.iter().enumerate() {
        if d.entry.is_none() || d.dir_diffs.iter().any(|x| x.diff.is_none()) {
            return Err(bad(format!("snapshot carry diff record {k} is not whole")));
        }
    }
    for (k, s) in c.strings.iter().enumerate() {
        if s.len() > crate::consts::MAX_NAME_LENGTH {
            return Err(bad(format!(
                "snapshot carry string {k} of {} bytes",
                s.len()
            )));
        }
    }
    Ok(c)
}

/// Rewrites every string id of the carried records (permissions' users
/// and groups, ACL entries' names, xattr names; 0, "no name", is left
/// alone) through `f`, given the id's kind and value; the first error
/// stops the walk.
///
/// # Errors
/// What `f` returns.
pub fn map_string_ids<E>(
    c: &mut SnapshotCarry,
    mut f: impl FnMut(StringTag, u32) -> Result<u32, E>,
) -> Result<(), E> {
    let f = &mut f;
    for n in &mut c.inodes {
        map_inode(n, f)?;
    }
    for s in &mut c.snapshots {
        if let Some(n) = &mut s.root {
            map_inode(n, f)?;
        }
    }
    for d in &mut c.diffs {
        for fd in &mut d.file_diffs {
            if let Some(x) = &mut fd.snapshot_copy {
                map_parts(&mut x.permission, x.acl.as_mut(), x.x_attrs.as_mut(), f)?;
            }
        }
        for dd in &mut d.dir_diffs {
            if let Some(x) = dd.diff.as_mut().and_then(|d| d.snapshot_copy.as_mut()) {
                map_parts(&mut x.permission, x.acl.as_mut(), x.x_attrs.as_mut(), f)?;
            }
        }
    }
    Ok(())
}

type IdMap<'a, E> = &'a mut dyn FnMut(StringTag, u32) -> Result<u32, E>;

fn map_inode<E>(n: &mut INode, f: IdMap<'_, E>) -> Result<(), E> {
    if let Some(x) = &mut n.file {
        map_parts(&mut x.permission, x.acl.as_mut(), x.x_attrs.as_mut(), f)?;
    }
    if let Some(x) = &mut n.directory {
        map_parts(&mut x.permission, x.acl.as_mut(), x.x_attrs.as_mut(), f)?;
    }
    if let Some(x) = &mut n.symlink {
        map_parts(&mut x.permission, None, None, f)?;
    }
    Ok(())
}

fn map_one<E>(tag: StringTag, id: u32, f: IdMap<'_, E>) -> Result<u32, E> {
    if id == 0 {
        Ok(0)
    } else {
        f(tag, id)
    }
}

fn map_parts<E>(
    perm: &mut Option<u64>,
    acl: Option<&mut AclFeatureProto>,
    xattrs: Option<&mut XAttrFeatureProto>,
    f: IdMap<'_, E>,
) -> Result<(), E> {
    if let Some(p) = perm {
        let mut b = PermBits::unpack(*p);
        b.user = map_one(StringTag::User, b.user, f)?;
        b.group = map_one(StringTag::Group, b.group, f)?;
        *p = b.pack();
    }
    if let Some(a) = acl {
        for e in &mut a.entries {
            let mut b = AclBits::unpack(*e);
            b.name = map_one(b.name_tag(), b.name, f)?;
            *e = b.pack();
        }
    }
    if let Some(x) = xattrs {
        for e in &mut x.x_attrs {
            let mut b = XAttrBits::unpack(e.name);
            b.name = map_one(StringTag::XAttr, b.name, f)?;
            e.name = b.pack();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hdfs_pb::i_node_section::{i_node, INodeFile, XAttrCompactProto};

    fn sample() -> SnapshotCarry {
        SnapshotCarry {
            inodes: vec![INode {
                r#type: i_node::Type::File as i32,
                id: 16390,
                name: Some(b"gone".to_vec()),
                file: Some(INodeFile {
                    permission: Some(
                        PermBits {
                            user: 1,
                            group: 2,
                            mode: 0o644,
                        }
                        .pack(),
                    ),
                    acl: Some(AclFeatureProto {
                        entries: vec![AclBits {
                            perm: 5,
                            kind: 0,
                            default_scope: false,
                            name: 3,
                        }
                        .pack()],
                    }),
                    x_attrs: Some(XAttrFeatureProto {
                        x_attrs: vec![XAttrCompactProto {
                            name: XAttrBits { ns: 4, name: 3 }.pack(),
                            value: None,
                        }],
                    }),
                    ..INodeFile::default()
                }),
                ..INode::default()
            }],
            strings: vec![b"alice".to_vec(), b"staff".to_vec(), b"bob".to_vec()],
            ..SnapshotCarry::default()
        }
    }

    #[test]
    fn round_trips_and_maps_every_id() {
        let c = sample();
        let at = Location::default();
        assert_eq!(decode_carry(&encode_carry(&c), &at).unwrap(), c);
        let mut seen = Vec::new();
        let mut m = c.clone();
        map_string_ids(&mut m, |t, i| -> Result<u32, ()> {
            seen.push((t, i));
            Ok(i + 10)
        })
        .unwrap();
        assert_eq!(
            seen,
            [
                (StringTag::User, 1),
                (StringTag::Group, 2),
                (StringTag::User, 3),
                (StringTag::XAttr, 3)
            ]
        );
        let f = m.inodes[0].file.as_ref().unwrap();
        assert_eq!(PermBits::unpack(f.permission.unwrap()).user, 11);
        assert_eq!(PermBits::unpack(f.permission.unwrap()).mode, 0o644);
        let x = XAttrBits::unpack(f.x_attrs.as_ref().unwrap().x_attrs[0].name);
        assert_eq!((x.ns, x.name), (4, 13));
    }

    #[test]
    fn bad_bytes_and_indexes_are_refused() {
        let at = Location::default();
        assert!(decode_carry(&[0xff, 0xff, 0xff], &at).is_err());
        let mut c = sample();
        c.strings.truncate(2);
        assert!(decode_carry(&encode_carry(&c), &at).is_err());
    }
}
