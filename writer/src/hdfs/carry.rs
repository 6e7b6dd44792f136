//! A [`SnapshotCarry`] made ready for one image: its strings added to the
//! namespace's and numbered with them ([`Serials`]), its string ids
//! rewritten into those serials, and its snapshot-only inodes and
//! directory entries placed among the namespace's (in id order, by
//! parent), so that the passes over the inodes write them where Hadoop's
//! order puts them.

use super::serials::{Kind, Serials};
use nsimage_format::hdfs::{map_string_ids, SnapshotCarry, StringTag};
use nsimage_format::hdfs_pb::i_node_directory_section::DirEntry;
use nsimage_namespace::{Namespace, StringTable};
use std::collections::{HashMap, HashSet};
use std::io;

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

fn kind(tag: StringTag) -> Kind {
    match tag {
        StringTag::User => Kind::User,
        StringTag::Group => Kind::Group,
        StringTag::XAttr => Kind::XAttr,
    }
}

/// Indexes into a carry list by the namespace inode id they go before,
/// and those after the last inode.
type Placed = (HashMap<u64, Vec<usize>>, Vec<usize>);

/// The carry, ready to write.
pub(crate) struct Carried {
    /// The carry, its string ids the image's serials.
    pub(crate) c: SnapshotCarry,
    /// The namespace's strings and the carry's.
    pub(crate) strings: StringTable,
    /// The serials of both.
    pub(crate) serials: Serials,
    /// Snapshot-only inodes (indexes into `c.inodes`) to write just before
    /// the namespace inode of the key's id; `inode_tail` after the last.
    inode_at: HashMap<u64, Vec<usize>>,
    inode_tail: Vec<usize>,
    /// The same for snapshot-only directory entries (`c.dirs`).
    dir_at: HashMap<u64, Vec<usize>>,
    dir_tail: Vec<usize>,
    /// Directory id -> (its refChildren, the ids they refer to).
    refs: HashMap<u64, (Vec<u32>, HashSet<u64>)>,
}

/// For keys sorted ascending, the namespace inode each goes before (the
/// first with a larger id, or an equal one when `equal_ok`), and the keys
/// after the last inode.
fn place(ns: &Namespace, keys: &[(u64, usize)], equal_ok: bool, what: &str) -> io::Result<Placed> {
    if !equal_ok {
        if let Some(w) = keys.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(invalid(format!(
                "the snapshot carry lists {what} {} twice",
                w[0].0
            )));
        }
    }
    let mut at: HashMap<u64, Vec<usize>> = HashMap::new();
    let mut k = 0;
    if !keys.is_empty() {
        for inode in ns.iter() {
            let id = inode.id();
            while let Some(&(key, i)) = keys.get(k) {
                if key > id {
                    break;
                }
                if key == id && !equal_ok {
                    return Err(invalid(format!(
                        "the snapshot carry's {what} {id} is also an inode of the namespace"
                    )));
                }
                at.entry(id).or_default().push(i);
                k += 1;
            }
            if k == keys.len() {
                break;
            }
        }
    }
    Ok((at, keys[k..].iter().map(|&(_, i)| i).collect()))
}

impl Carried {
    /// Prepares `carry` for writing `ns` with a string table of
    /// `mask_bits`.
    pub(crate) fn prepare(
        ns: &Namespace,
        carry: &SnapshotCarry,
        mask_bits: u32,
    ) -> io::Result<Carried> {
        let mut strings = ns.strings().clone();
        let ids: Vec<u32> = carry
            .strings
            .iter()
            .map(|s| {
                strings
                    .intern(s)
                    .ok_or_else(|| invalid("the string table is full".to_owned()))
            })
            .collect::<io::Result<_>>()?;
        let lookup = |i: u32| -> io::Result<u32> {
            i.checked_sub(1)
                .and_then(|i| ids.get(i as usize).copied())
                .ok_or_else(|| {
                    invalid(format!(
                        "string index {i} in the snapshot carry, which has {} strings",
                        ids.len()
                    ))
                })
        };
        let mut c = carry.clone();
        let mut uses: Vec<(Kind, u32)> = Vec::new();
        map_string_ids(&mut c, |tag, i| {
            uses.push((kind(tag), lookup(i)?));
            Ok::<u32, io::Error>(i)
        })?;
        let serials = Serials::collect_with(ns, mask_bits, strings.len(), &uses)?;
        map_string_ids(&mut c, |tag, i| {
            Ok::<u32, io::Error>(serials.serial(kind(tag), lookup(i)?))
        })?;
        let mut keys: Vec<(u64, usize)> = c
            .inodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id, i))
            .collect();
        keys.sort_unstable();
        let (inode_at, inode_tail) = place(ns, &keys, false, "inode")?;
        let mut keys: Vec<(u64, usize)> = c
            .dirs
            .iter()
            .enumerate()
            .map(|(i, d)| (d.parent(), i))
            .collect();
        keys.sort_unstable();
        let (dir_at, dir_tail) = place(ns, &keys, true, "directory entry")?;
        let mut refs: HashMap<u64, (Vec<u32>, HashSet<u64>)> = HashMap::new();
        for r in &c.ref_children {
            let e = refs.entry(r.parent()).or_default();
            for &k in &r.refs {
                let referred = c
                    .references
                    .get(k as usize)
                    .ok_or_else(|| {
                        invalid(format!(
                            "refChildren of {} name reference {k}, past the carry's {} references",
                            r.parent(),
                            c.references.len()
                        ))
                    })?
                    .referred_id();
                e.0.push(k);
                e.1.insert(referred);
            }
        }
        Ok(Carried {
            c,
            strings,
            serials,
            inode_at,
            inode_tail,
            dir_at,
            dir_tail,
            refs,
        })
    }

    /// The snapshot-only inodes to write before namespace inode `id`.
    pub(crate) fn inodes_before(
        &self,
        id: u64,
    ) -> impl Iterator<Item = &nsimage_format::hdfs_pb::i_node_section::INode> {
        self.inode_at
            .get(&id)
            .into_iter()
            .flatten()
            .filter_map(|&i| self.c.inodes.get(i))
    }

    /// The snapshot-only inodes after the namespace's last.
    pub(crate) fn inodes_after(
        &self,
    ) -> impl Iterator<Item = &nsimage_format::hdfs_pb::i_node_section::INode> {
        self.inode_tail.iter().filter_map(|&i| self.c.inodes.get(i))
    }

    /// The snapshot-only directory entries to write before the namespace's
    /// entry of directory `id` (or where it would be).
    pub(crate) fn dirs_before(&self, id: u64) -> impl Iterator<Item = &DirEntry> {
        self.dir_at
            .get(&id)
            .into_iter()
            .flatten()
            .filter_map(|&i| self.c.dirs.get(i))
    }

    /// The snapshot-only directory entries after the namespace's last.
    pub(crate) fn dirs_after(&self) -> impl Iterator<Item = &DirEntry> {
        self.dir_tail.iter().filter_map(|&i| self.c.dirs.get(i))
    }

    /// Directory `id`'s entry with its refChildren put back: the children
    /// they refer to listed as references, not as plain children. `entry`
    /// is the namespace's entry (`None`: no children).
    pub(crate) fn with_refs(&self, id: u64, entry: Option<DirEntry>) -> Option<DirEntry> {
        let Some((list, referred)) = self.refs.get(&id) else {
            return entry;
        };
        let mut d = entry.unwrap_or(DirEntry {
            parent: Some(id),
            children: Vec::new(),
            ref_children: Vec::new(),
        });
        d.children.retain(|c| !referred.contains(c));
        d.ref_children.clone_from(list);
        Some(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsimage_format::hdfs::PermBits;
    use nsimage_format::hdfs_pb::i_node_reference_section::INodeReference;
    use nsimage_format::hdfs_pb::i_node_section::{INode, INodeFile};
    use nsimage_format::hdfs_pb::snapshot_carry::RefChildren;
    use nsimage_namespace::PermSpec;

    const P: PermSpec<'static> = PermSpec {
        user: b"hdfs",
        group: b"supergroup",
        mode: 0o755,
    };

    fn inode(id: u64, user: u32) -> INode {
        INode {
            id,
            file: Some(INodeFile {
                permission: Some(
                    PermBits {
                        user,
                        group: 0,
                        mode: 0o644,
                    }
                    .pack(),
                ),
                ..INodeFile::default()
            }),
            ..INode::default()
        }
    }

    #[test]
    fn places_strings_inodes_entries_and_references() {
        let mut ns = Namespace::default();
        let gone = ns.mkdirs(b"/gone", &P, 1).unwrap();
        let a = ns.mkdirs(b"/a", &P, 1).unwrap();
        let b = ns.mkdirs(b"/a/b", &P, 1).unwrap();
        ns.delete(b"/gone", false, 2).unwrap();
        assert_eq!(a - 1, gone);
        let carry = SnapshotCarry {
            inodes: vec![inode(b + 10, 1), inode(a - 1, 2), inode(b + 20, 1)],
            dirs: vec![DirEntry {
                parent: Some(b + 10),
                children: vec![b + 20],
                ref_children: vec![],
            }],
            references: vec![INodeReference {
                referred_id: Some(b),
                ..INodeReference::default()
            }],
            ref_children: vec![RefChildren {
                parent: Some(a),
                refs: vec![0],
            }],
            strings: vec![b"hdfs".to_vec(), b"ghost".to_vec()],
            ..SnapshotCarry::default()
        };
        let c = Carried::prepare(&ns, &carry, 3).unwrap();
        let ids = |it: &mut dyn Iterator<Item = &INode>| it.map(|n| n.id).collect::<Vec<_>>();
        assert_eq!(ids(&mut c.inodes_before(a)), [a - 1]);
        assert_eq!(ids(&mut c.inodes_after()), [b + 10, b + 20]);
        assert_eq!(c.dirs_after().count(), 1);
        // "ghost" got a user serial of its own; "hdfs" kept the namespace's.
        let user = |n: &INode| PermBits::unpack(n.file.as_ref().unwrap().permission.unwrap()).user;
        let hdfs = c
            .serials
            .serial(Kind::User, ns.strings().lookup(b"hdfs").unwrap());
        assert_eq!(user(&c.c.inodes[0]), hdfs);
        let ghost = c.strings.lookup(b"ghost").unwrap();
        assert_eq!(user(&c.c.inodes[1]), c.serials.serial(Kind::User, ghost));
        assert_ne!(user(&c.c.inodes[1]), hdfs);
        // /a lists /a/b as reference 0, not as a plain child.
        let root = ns.iter().find(|i| i.id() == a).unwrap();
        let d = c
            .with_refs(a, super::super::inodes::dir_entry(&root))
            .unwrap();
        assert!(d.children.is_empty());
        assert_eq!(d.ref_children, [0]);
        // A carried inode with a namespace inode's id is refused.
        let mut clash = carry.clone();
        clash.inodes.push(inode(b, 1));
        assert!(Carried::prepare(&ns, &clash, 3).is_err());
        let mut bad = carry;
        bad.ref_children[0].refs.push(7);
        assert!(Carried::prepare(&ns, &bad, 0).is_err());
    }
}
