//! Record encoding. Each batch covers a range of slots and is encoded by one
//! rayon task into its own buffer, with the key and framed length of every
//! record so that sub-sections can be cut on record boundaries afterwards.

use crate::strings::StringMap;
use nsimage_format::framing::put_record;
use nsimage_format::pb;
use nsimage_namespace::{Attrs, Inode, InodeKind, Namespace, Slot};

/// The framed length of a record as the index counts it.
#[inline]
fn framed(len: usize) -> u32 {
    debug_assert!(u64::try_from(len).is_ok_and(|l| l <= nsimage_format::consts::MAX_RECORD_LENGTH));
    // A record the readers accept is at most MAX_RECORD_LENGTH (1 GiB)
    // long; the model holds no inode whose record comes near it (names and
    // strings are at most 64 KiB, a file would need some 100 million
    // blocks).
    #[allow(clippy::cast_possible_truncation)]
    let l = len as u32;
    l
}

/// Encoded records of one slot range.
#[derive(Default)]
pub struct Encoded {
    /// The framed records, back to back.
    pub bytes: Vec<u8>,
    /// (key, framed length) of each record, in order.
    pub records: Vec<(u64, u32)>,
}

impl Encoded {
    fn with_capacity(records: usize) -> Self {
        Encoded {
            bytes: Vec::with_capacity(records * 64),
            records: Vec::with_capacity(records),
        }
    }

    /// Appends the framed record of `msg`, keyed `key` (an inode id, a
    /// parent id, a string id).
    pub fn put<M: prost::Message>(&mut self, key: u64, msg: &M) {
        let before = self.bytes.len();
        put_record(&mut self.bytes, msg);
        self.records.push((key, framed(self.bytes.len() - before)));
    }

    /// Appends the INODE_DIR record of directory `parent`, whose children
    /// are `children` (ids, in name order).
    pub fn put_dir(&mut self, parent: u64, children: impl Iterator<Item = u64> + Clone) {
        let before = self.bytes.len();
        crate::record::put_dir_ids(&mut self.bytes, parent, children);
        self.records
            .push((parent, framed(self.bytes.len() - before)));
    }

    /// Framed bytes of the INODE_DIR record [`put_dir`](Self::put_dir)
    /// appends for the same directory.
    pub fn dir_len(parent: u64, children: impl Iterator<Item = u64>) -> u64 {
        crate::record::dir_ids_len(parent, children) as u64
    }

    /// Appends a NAME_INDEX record (of older images): child `child` of
    /// `parent`, named `name`, of type `ty`.
    pub fn put_name_entry(&mut self, parent: u64, name: &[u8], child: u64, ty: pb::InodeType) {
        let before = self.bytes.len();
        crate::record::put_name_entry(&mut self.bytes, parent, name, child, ty);
        self.records
            .push((parent, framed(self.bytes.len() - before)));
    }

    /// Appends a NAME_RUNS record: `run`, children of `parent` in name
    /// order (FORMAT.md, "NAME_RUNS").
    pub fn put_run(&mut self, parent: u64, run: &[nsimage_format::name_runs::RunEntry<'_>]) {
        let before = self.bytes.len();
        nsimage_format::name_runs::put_run(&mut self.bytes, parent, run);
        self.records
            .push((parent, framed(self.bytes.len() - before)));
    }
}

/// Fills `msg` from `n`, its string ids rewritten by `strings`, reusing the
/// message's buffers.
pub(crate) fn fill_inode(n: &Inode<'_>, strings: &StringMap, msg: &mut pb::Inode) {
    msg.id = n.id();
    msg.name.clear();
    msg.name.extend_from_slice(n.name());
    msg.permission = strings.perm(n.perm());
    msg.mtime = n.mtime();
    msg.file = None;
    msg.directory = None;
    msg.symlink = None;
    msg.xattrs.clear();
    msg.acl.clear();
    match n.attrs() {
        Attrs::File(f) => {
            msg.r#type = pb::InodeType::File as i32;
            let uc = n.extra().and_then(|e| e.under_construction.as_ref());
            msg.file = Some(pb::FileAttrs {
                atime: f.atime,
                replication: u32::from(f.replication),
                preferred_block_size: f.preferred_block_size,
                blocks: f.blocks.iter().map(|b| pb::Block::from(&b)).collect(),
                storage_policy: u32::from(f.storage_policy),
                under_construction: uc.map(|u| pb::UnderConstruction::from(&**u)),
            });
        }
        Attrs::Directory { ns_quota, ds_quota } => {
            msg.r#type = pb::InodeType::Directory as i32;
            msg.directory = Some(pb::DirectoryAttrs { ns_quota, ds_quota });
        }
        Attrs::Symlink { target } => {
            msg.r#type = pb::InodeType::Symlink as i32;
            msg.symlink = Some(pb::SymlinkAttrs {
                target: target.to_vec(),
            });
        }
    }
    if let Some(e) = n.extra() {
        msg.xattrs.extend(e.xattrs.iter().map(|x| pb::XAttr {
            namespace: pb::XAttrNamespace::from(x.ns).into(),
            name: strings.id(x.name),
            value: x.value.to_vec(),
        }));
        // The model keeps xattrs sorted by its own name ids; written, they
        // are sorted by (namespace, written id), that is by name bytes.
        msg.xattrs.sort_unstable_by_key(|x| (x.namespace, x.name));
        msg.acl.extend(e.acl.iter().map(|a| pb::AclEntry {
            name: strings.id(a.name),
            r#type: i32::from(a.kind),
            default_scope: a.default_scope,
            permission: u32::from(a.perm),
        }));
    }
}

/// INODE records of the live inodes in `slots`.
pub fn inodes(ns: &Namespace, strings: &StringMap, slots: std::ops::Range<Slot>) -> Encoded {
    let mut out = Encoded::with_capacity(slots.len());
    let mut msg = pb::Inode::default();
    for s in slots {
        if let Some(n) = ns.at(s) {
            let before = out.bytes.len();
            if crate::record::put_inode(&n, strings, &mut out.bytes) {
                out.records.push((n.id(), framed(out.bytes.len() - before)));
            } else {
                fill_inode(&n, strings, &mut msg);
                out.put(msg.id, &msg);
            }
        }
    }
    out
}

/// INODE_DIR records of the non-empty directories in `slots`.
pub fn dirs(ns: &Namespace, slots: std::ops::Range<Slot>) -> Encoded {
    let mut out = Encoded::with_capacity(slots.len() / 8);
    let mut ids = Vec::new();
    for s in slots {
        let Some(n) = ns.at(s) else { continue };
        if n.kind() != InodeKind::Directory || n.child_slots().is_empty() {
            continue;
        }
        let before = out.bytes.len();
        crate::record::put_dir(ns, &n, &mut ids, &mut out.bytes);
        out.records.push((n.id(), framed(out.bytes.len() - before)));
    }
    out
}

/// The NAME_INDEX records of the directories in `slots`: one `NameEntry`
/// per child, in name order (the model keeps children sorted by name),
/// keyed by the parent id.
pub fn names(ns: &Namespace, slots: std::ops::Range<Slot>) -> Encoded {
    let mut out = Encoded::with_capacity(slots.len());
    for s in slots {
        let Some(n) = ns.at(s) else { continue };
        if n.kind() != InodeKind::Directory {
            continue;
        }
        let parent = n.id();
        for c in n.child_slots() {
            let Some(child) = ns.at(c) else { continue };
            let ty = match child.kind() {
                InodeKind::File => pb::InodeType::File,
                InodeKind::Directory => pb::InodeType::Directory,
                InodeKind::Symlink => pb::InodeType::Symlink,
            };
            let before = out.bytes.len();
            out.put_name_entry(parent, child.name(), child.id(), ty);
            debug_assert_eq!(
                &out.bytes[before..],
                {
                    let mut v = Vec::new();
                    let m = pb::NameEntry {
                        parent,
                        name: child.name().to_vec(),
                        child: child.id(),
                        r#type: ty as i32,
                    };
                    put_record(&mut v, &m);
                    v
                }
                .as_slice()
            );
        }
    }
    out
}

/// The NAME_RUNS records of the directories in `slots`: each directory's
/// children, in name order, in runs of at most
/// [`name_runs::MAX_ENTRIES`] (ended early once their names reach
/// [`name_runs::TARGET_NAME_BYTES`]), each keyed by the parent id.
pub fn name_runs(ns: &Namespace, slots: std::ops::Range<Slot>) -> Encoded {
    use nsimage_format::name_runs;
    let mut out = Encoded::with_capacity(slots.len() / 16);
    let mut run: Vec<name_runs::RunEntry<'_>> = Vec::with_capacity(name_runs::MAX_ENTRIES);
    for s in slots {
        let Some(n) = ns.at(s) else { continue };
        if n.kind() != InodeKind::Directory {
            continue;
        }
        let parent = n.id();
        let mut names = 0usize;
        let flush = |run: &mut Vec<name_runs::RunEntry<'_>>, out: &mut Encoded| {
            if !run.is_empty() {
                out.put_run(parent, run);
                run.clear();
            }
        };
        for c in n.child_slots() {
            let Some(child) = ns.at(c) else { continue };
            let ty = match child.kind() {
                InodeKind::File => pb::InodeType::File,
                InodeKind::Directory => pb::InodeType::Directory,
                InodeKind::Symlink => pb::InodeType::Symlink,
            };
            run.push((child.name(), child.id(), ty));
            names += child.name().len();
            if run.len() == name_runs::MAX_ENTRIES || names >= name_runs::TARGET_NAME_BYTES {
                flush(&mut run, &mut out);
                names = 0;
            }
        }
        flush(&mut run, &mut out);
    }
    out
}

/// Records and framed bytes of a section, as measured before it is written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Size {
    /// Number of records.
    pub records: u64,
    /// Framed bytes.
    pub bytes: u64,
}

impl std::ops::Add for Size {
    type Output = Size;
    fn add(self, o: Size) -> Size {
        Size {
            records: self.records + o.records,
            bytes: self.bytes + o.bytes,
        }
    }
}

/// What [`inodes`] writes for `slots`, measured without writing it.
pub fn inode_size(ns: &Namespace, strings: &StringMap, slots: std::ops::Range<Slot>) -> Size {
    let mut size = Size::default();
    let mut msg = pb::Inode::default();
    for s in slots {
        let Some(n) = ns.at(s) else { continue };
        let len = match crate::record::inode_record_len(&n, strings) {
            Some(len) => len,
            None => {
                fill_inode(&n, strings, &mut msg);
                let l = prost::Message::encoded_len(&msg);
                prost::encoding::encoded_len_varint(l as u64) + l
            }
        };
        size.records += 1;
        size.bytes += len as u64;
    }
    size
}

/// What [`dirs`] writes for `slots`, measured without writing it.
pub fn dir_size(ns: &Namespace, slots: std::ops::Range<Slot>) -> Size {
    let mut size = Size::default();
    for s in slots {
        let Some(n) = ns.at(s) else { continue };
        if n.kind() != InodeKind::Directory || n.child_slots().is_empty() {
            continue;
        }
        size.records += 1;
        size.bytes += crate::record::dir_record_len(ns, &n) as u64;
    }
    size
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record;
    use nsimage_format::framing::put_record;
    use nsimage_namespace::{Block, FileSpec, PermSpec};

    /// The hand-written record encoder writes the bytes prost writes for
    /// the same record.
    #[test]
    fn same_bytes_as_prost() {
        let p = PermSpec {
            user: b"u",
            group: b"g",
            mode: 0o755,
        };
        let mut ns = Namespace::default();
        let d = ns.mkdirs(b"/a/b", &p, 0).unwrap();
        ns.set_quota(d, 10, -1).unwrap();
        ns.set_quota(ns.resolve(b"/a").unwrap(), -1, 1 << 50)
            .unwrap();
        for (i, blocks) in [0u64, 1, 3].into_iter().enumerate() {
            let spec = FileSpec {
                replication: u16::try_from(i).unwrap(),
                preferred_block_size: [0, 1, 128 << 20][i],
                storage_policy: [0u8, 7, 255][i],
            };
            let f = ns
                .create_in(
                    d,
                    format!("f{i}").as_bytes(),
                    &p,
                    &spec,
                    [0, 1, u64::MAX][i],
                )
                .unwrap();
            for k in 0..blocks {
                let b = Block {
                    id: ns.info().last_block_id + 1,
                    generation_stamp: u64::MAX - k,
                    length: k * 1000,
                };
                ns.add_block(f, b).unwrap();
            }
        }
        ns.symlink(b"/a/l", b"/a/b", &p, 5).unwrap();
        let zero = PermSpec {
            user: b"",
            group: b"",
            mode: 0,
        };
        ns.create(
            b"/z",
            &zero,
            &FileSpec {
                replication: 0,
                preferred_block_size: 0,
                storage_policy: 0,
            },
            0,
        )
        .unwrap();
        // "u" was interned before "g": the written ids differ from the
        // namespace's, and both encoders rewrite them the same way.
        let (strings, _) = StringMap::of(&ns, std::slice::from_ref(&(0..ns.slot_count())));
        let u = ns.strings().lookup(b"u").unwrap();
        assert_eq!((u, strings.id(u)), (1, 2));
        let mut checked = 0;
        for n in ns.iter() {
            let mut fast = Vec::new();
            assert!(record::put_inode(&n, &strings, &mut fast));
            let mut msg = nsimage_format::pb::Inode::default();
            fill_inode(&n, &strings, &mut msg);
            let mut slow = Vec::new();
            put_record(&mut slow, &msg);
            assert_eq!(fast, slow, "inode {}", n.id());
            assert_eq!(record::inode_record_len(&n, &strings), Some(fast.len()));
            if !n.child_slots().is_empty() {
                let mut fast = Vec::new();
                record::put_dir(&ns, &n, &mut Vec::new(), &mut fast);
                let msg = nsimage_format::pb::DirEntry {
                    parent: n.id(),
                    children: n.child_slots().iter().map(|c| ns.id_of(c)).collect(),
                };
                let mut slow = Vec::new();
                put_record(&mut slow, &msg);
                assert_eq!(fast, slow, "directory {}", n.id());
                assert_eq!(record::dir_record_len(&ns, &n), fast.len());
            }
            checked += 1;
        }
        assert_eq!(checked, 8);
    }
}
