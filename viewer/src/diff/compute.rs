//! [`diff`]: one walk of both node tables in id order.

use crate::diff::model::{
    path_order, Attr, AttrChange, AttrValue, BlockChange, Created, Deleted, Diff, Modified,
    Renamed, Summary,
};
use crate::error::ViewError;
use nsimage_namespace::{Attrs, Block, Blocks, Inode, InodeKind, Namespace, XAttrNs};
use std::collections::HashMap;

/// Compares two namespaces by inode id: what NEW holds that OLD did not,
/// what it lost, what moved and what changed (see the [module
/// page](crate::diff)). Refuses two namespaces with different namespace
/// ids ([`ViewError::DifferentNamespaces`]); a NEW whose last transaction
/// id is below OLD's is compared anyway, with a warning in
/// [`Diff::warnings`].
///
/// One pass over each node table (both are in id order), no allocation per
/// unchanged inode; paths are built only for the inodes reported.
pub fn diff(old: &Namespace, new: &Namespace) -> Result<Diff, ViewError> {
    let (oi, ni) = (old.info(), new.info());
    if oi.namespace_id != ni.namespace_id {
        return Err(ViewError::DifferentNamespaces {
            old: oi.namespace_id,
            new: ni.namespace_id,
        });
    }
    let mut d = Diff {
        summary: Summary {
            namespace_id: oi.namespace_id,
            old_txid: oi.last_txid,
            new_txid: ni.last_txid,
            ..Summary::default()
        },
        ..Diff::default()
    };
    if ni.last_txid < oi.last_txid {
        d.warnings.push(format!(
            "NEW's last transaction id ({}) is below OLD's ({}): NEW is the older image; \
             the diff shows how to go from OLD back to NEW",
            ni.last_txid, oi.last_txid
        ));
    }
    let mut a = old.iter().peekable();
    let mut b = new.iter().peekable();
    loop {
        match (a.peek().copied(), b.peek().copied()) {
            (None, None) => break,
            (Some(x), Some(y)) if x.id() == y.id() => {
                a.next();
                b.next();
                if x.kind() == y.kind() {
                    compare(old, new, x, y, &mut d);
                } else {
                    deleted(old, new, x, &mut d);
                    created(old, new, y, &mut d);
                }
            }
            (Some(x), Some(y)) if x.id() < y.id() => {
                a.next();
                deleted(old, new, x, &mut d);
            }
            (Some(x), None) => {
                a.next();
                deleted(old, new, x, &mut d);
            }
            (_, Some(y)) => {
                b.next();
                created(old, new, y, &mut d);
            }
        }
    }
    d.created
        .sort_by(|p, q| path_order(&p.path, &q.path).then(p.id.cmp(&q.id)));
    d.deleted
        .sort_by(|p, q| path_order(&p.path, &q.path).then(p.id.cmp(&q.id)));
    d.renamed
        .sort_by(|p, q| path_order(&p.old_path, &q.old_path).then(p.id.cmp(&q.id)));
    d.modified
        .sort_by(|p, q| path_order(&p.path, &q.path).then(p.id.cmp(&q.id)));
    Ok(d)
}

/// The path of a live inode (the namespace's own walk up the parents).
fn path(ns: &Namespace, id: u64) -> Vec<u8> {
    ns.path_of(id)
        .unwrap_or_else(|| format!("<inode {id}>").into_bytes())
}

fn block_bytes(blocks: Blocks<'_>) -> u64 {
    blocks.fold(0u64, |s, b| s.saturating_add(b.length))
}

fn created(old: &Namespace, new: &Namespace, y: Inode<'_>, d: &mut Diff) {
    let s = &mut d.summary;
    s.created += 1;
    match y.kind() {
        InodeKind::File => s.created_files += 1,
        InodeKind::Directory => s.created_directories += 1,
        InodeKind::Symlink => s.created_symlinks += 1,
    }
    let blocks = y.blocks();
    let bytes = block_bytes(blocks);
    s.blocks_added += blocks.len() as u64;
    s.bytes_added = s.bytes_added.saturating_add(bytes);
    d.created.push(Created {
        id: y.id(),
        path: path(new, y.id()),
        kind: y.kind(),
        bytes,
        blocks: blocks.len() as u64,
        top: y.parent().is_some_and(|p| old.inode(p).is_some()),
    });
}

fn deleted(old: &Namespace, new: &Namespace, x: Inode<'_>, d: &mut Diff) {
    let s = &mut d.summary;
    s.deleted += 1;
    match x.kind() {
        InodeKind::File => s.deleted_files += 1,
        InodeKind::Directory => s.deleted_directories += 1,
        InodeKind::Symlink => s.deleted_symlinks += 1,
    }
    let blocks = x.blocks();
    let bytes = block_bytes(blocks);
    s.blocks_removed += blocks.len() as u64;
    s.bytes_removed = s.bytes_removed.saturating_add(bytes);
    d.deleted.push(Deleted {
        id: x.id(),
        path: path(old, x.id()),
        kind: x.kind(),
        bytes,
        blocks: blocks.len() as u64,
        top: x.parent().is_some_and(|p| new.inode(p).is_some()),
    });
}

/// An inode present in both: its own move or rename, its attributes, its
/// blocks.
fn compare(old: &Namespace, new: &Namespace, x: Inode<'_>, y: Inode<'_>, d: &mut Diff) {
    let id = x.id();
    if x.parent() != y.parent() || x.name() != y.name() {
        d.summary.renamed += 1;
        d.renamed.push(Renamed {
            id,
            old_path: path(old, id),
            new_path: path(new, id),
            kind: y.kind(),
            moved: x.parent() != y.parent(),
        });
    }
    let mut changes = Vec::new();
    let mut change = |attr: Attr, o: AttrValue, n: AttrValue| {
        changes.push(AttrChange {
            attr,
            old: o,
            new: n,
        });
    };
    if x.user() != y.user() {
        change(Attr::Owner, text(x.user()), text(y.user()));
    }
    if x.group() != y.group() {
        change(Attr::Group, text(x.group()), text(y.group()));
    }
    if x.mode() != y.mode() {
        change(
            Attr::Mode,
            AttrValue::Mode(x.mode()),
            AttrValue::Mode(y.mode()),
        );
    }
    if x.mtime() != y.mtime() {
        change(
            Attr::Mtime,
            AttrValue::Time(x.mtime()),
            AttrValue::Time(y.mtime()),
        );
    }
    let (mut added, mut removed, mut changed) = (Vec::new(), Vec::new(), Vec::new());
    match (x.attrs(), y.attrs()) {
        (Attrs::File(f), Attrs::File(g)) => {
            if f.atime != g.atime {
                change(
                    Attr::Atime,
                    AttrValue::Time(f.atime),
                    AttrValue::Time(g.atime),
                );
            }
            if f.replication != g.replication {
                change(
                    Attr::Replication,
                    AttrValue::Number(f.replication.into()),
                    AttrValue::Number(g.replication.into()),
                );
            }
            if f.storage_policy != g.storage_policy {
                change(
                    Attr::StoragePolicy,
                    AttrValue::Number(f.storage_policy.into()),
                    AttrValue::Number(g.storage_policy.into()),
                );
            }
            if f.preferred_block_size != g.preferred_block_size {
                change(
                    Attr::PreferredBlockSize,
                    AttrValue::Number(f.preferred_block_size),
                    AttrValue::Number(g.preferred_block_size),
                );
            }
            if f.blocks != g.blocks {
                block_diff(
                    &f.blocks.to_vec(),
                    &g.blocks.to_vec(),
                    &mut added,
                    &mut removed,
                    &mut changed,
                );
            }
        }
        (
            Attrs::Directory {
                ns_quota: on,
                ds_quota: od,
            },
            Attrs::Directory {
                ns_quota: nn,
                ds_quota: nd,
            },
        ) => {
            if on != nn {
                change(Attr::NsQuota, AttrValue::Quota(on), AttrValue::Quota(nn));
            }
            if od != nd {
                change(Attr::DsQuota, AttrValue::Quota(od), AttrValue::Quota(nd));
            }
        }
        (Attrs::Symlink { target: t }, Attrs::Symlink { target: u }) if t != u => {
            change(Attr::SymlinkTarget, text(t), text(u));
        }
        // Same target; or kinds differ (the caller reports a delete and a
        // create instead).
        _ => {}
    }
    if x.extra().is_some() || y.extra().is_some() {
        let (xo, yo) = (xattrs(old, x), xattrs(new, y));
        if xo != yo {
            change(
                Attr::Xattrs,
                AttrValue::Text(show_xattrs(&xo)),
                AttrValue::Text(show_xattrs(&yo)),
            );
        }
        let (ao, an) = (acl(old, x), acl(new, y));
        if ao != an {
            change(Attr::Acl, AttrValue::Text(ao), AttrValue::Text(an));
        }
        let (uo, un) = (uc(x), uc(y));
        if uo != un {
            change(
                Attr::UnderConstruction,
                AttrValue::Text(uo),
                AttrValue::Text(un),
            );
        }
    }
    if changes.is_empty() && added.is_empty() && removed.is_empty() && changed.is_empty() {
        return;
    }
    let s = &mut d.summary;
    s.modified += 1;
    s.blocks_added += added.len() as u64;
    s.blocks_removed += removed.len() as u64;
    s.blocks_changed += changed.len() as u64;
    s.bytes_added = s
        .bytes_added
        .saturating_add(block_bytes(Blocks::from(&added[..])));
    s.bytes_removed = s
        .bytes_removed
        .saturating_add(block_bytes(Blocks::from(&removed[..])));
    for c in &changed {
        let (o, n) = (c.old.length, c.new.length);
        if n > o {
            s.bytes_added = s.bytes_added.saturating_add(n - o);
        } else {
            s.bytes_removed = s.bytes_removed.saturating_add(o - n);
        }
    }
    d.modified.push(Modified {
        id,
        path: path(new, id),
        kind: y.kind(),
        changes,
        blocks_added: added,
        blocks_removed: removed,
        blocks_changed: changed,
    });
}

/// Blocks matched by id: added (NEW only), removed (OLD only), changed
/// (same id, other length or generation stamp); each in its file's order.
fn block_diff(
    old: &[Block],
    new: &[Block],
    added: &mut Vec<Block>,
    removed: &mut Vec<Block>,
    changed: &mut Vec<BlockChange>,
) {
    // The common case: blocks appended to the file.
    if let Some(tail) = new.strip_prefix(old) {
        added.extend_from_slice(tail);
        return;
    }
    let by_id: HashMap<u64, Block> = old.iter().map(|b| (b.id, *b)).collect();
    let new_ids: HashMap<u64, ()> = new.iter().map(|b| (b.id, ())).collect();
    for b in new {
        match by_id.get(&b.id) {
            None => added.push(*b),
            Some(o) if o != b => changed.push(BlockChange { old: *o, new: *b }),
            Some(_) => {}
        }
    }
    removed.extend(old.iter().filter(|b| !new_ids.contains_key(&b.id)));
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn text(b: &[u8]) -> AttrValue {
    AttrValue::Text(lossy(b))
}

fn xattr_prefix(ns: XAttrNs) -> &'static str {
    match ns {
        XAttrNs::User => "user",
        XAttrNs::Trusted => "trusted",
        XAttrNs::Security => "security",
        XAttrNs::System => "system",
        XAttrNs::Raw => "raw",
    }
}

/// An inode's xattrs with their names resolved (string ids differ from one
/// image to another), sorted.
fn xattrs<'a>(ns: &'a Namespace, n: Inode<'a>) -> Vec<(XAttrNs, &'a [u8], &'a [u8])> {
    let mut v: Vec<_> = n
        .extra()
        .map(|e| {
            e.xattrs
                .iter()
                .map(|x| {
                    (
                        x.ns,
                        ns.strings().get(x.name).unwrap_or_default(),
                        &x.value[..],
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn show_xattrs(v: &[(XAttrNs, &[u8], &[u8])]) -> String {
    if v.is_empty() {
        return "(none)".to_string();
    }
    let value = |b: &[u8]| match crate::text::printable(b) {
        Some(s) => format!("{s:?}"),
        None => String::from_utf8_lossy(&crate::dump::escape::hex0x(b)).into_owned(),
    };
    v.iter()
        .map(|(ns, name, val)| format!("{}.{}={}", xattr_prefix(*ns), lossy(name), value(val)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// An inode's ACL in `getfacl`'s short form (`user:bob:r-x,...`), names
/// resolved; entries in the order the image holds them.
fn acl(ns: &Namespace, n: Inode<'_>) -> String {
    let Some(e) = n.extra().filter(|e| !e.acl.is_empty()) else {
        return "(none)".to_string();
    };
    e.acl
        .iter()
        .map(|a| {
            let kind = match a.kind {
                0 => "user",
                1 => "group",
                2 => "mask",
                _ => "other",
            };
            let name = if a.name == 0 {
                String::new()
            } else {
                lossy(ns.strings().get(a.name).unwrap_or_default())
            };
            let rwx: String = [(4, 'r'), (2, 'w'), (1, 'x')]
                .iter()
                .map(|&(bit, c)| if a.perm & bit != 0 { c } else { '-' })
                .collect();
            format!(
                "{}{kind}:{name}:{rwx}",
                if a.default_scope { "default:" } else { "" }
            )
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn uc(n: Inode<'_>) -> String {
    match n.extra().and_then(|e| e.under_construction.as_ref()) {
        Some(u) => format!("{}@{}", lossy(&u.client_name), lossy(&u.client_machine)),
        None => "(none)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::diff;
    use crate::diff::model::path_order;
    use crate::diff::model::Attr;
    use crate::error::ViewError;
    use nsimage_namespace::{Block, FileSpec, Namespace, NsInfo, PermSpec, XAttrNs};

    const P: PermSpec<'static> = PermSpec {
        user: b"hdfs",
        group: b"supergroup",
        mode: 0o755,
    };
    const F: FileSpec = FileSpec {
        replication: 3,
        preferred_block_size: 1 << 20,
        storage_policy: 0,
    };

    /// The same inodes (same ids) in both; `gs` and `len` pick the second
    /// block's generation stamp and length, `spec` the file's attributes.
    fn build(gs: u64, len: u64, spec: &FileSpec) -> (Namespace, u64, u64, u64) {
        let mut ns = Namespace::new(NsInfo {
            namespace_id: 42,
            last_txid: 9,
            ..NsInfo::default()
        });
        let d = ns.mkdirs(b"/d", &P, 1).unwrap();
        let f = ns.create(b"/d/f", &P, spec, 2).unwrap();
        ns.add_block(
            f,
            Block {
                id: 1,
                generation_stamp: 1,
                length: 10,
            },
        )
        .unwrap();
        ns.add_block(
            f,
            Block {
                id: 2,
                generation_stamp: gs,
                length: len,
            },
        )
        .unwrap();
        let l = ns.symlink(b"/d/l", b"/d/f", &P, 3).unwrap();
        ns.set_times(d, Some(5), None).unwrap();
        (ns, d, f, l)
    }

    #[test]
    fn every_attribute_is_compared() {
        let (old, ..) = build(1, 20, &F);
        let spec = FileSpec {
            replication: 2,
            preferred_block_size: 2 << 20,
            storage_policy: 7,
        };
        let (mut new, d, f, l) = build(3, 25, &spec);
        new.set_owner(f, Some(b"alice"), Some(b"staff")).unwrap();
        new.set_mode(f, 0o600).unwrap();
        new.set_times(f, Some(100), Some(200)).unwrap();
        new.set_xattr(f, XAttrNs::User, b"k", b"v").unwrap();
        new.set_under_construction(f, Some((b"client", b"host")))
            .unwrap();
        new.set_quota(d, 10, -1).unwrap();
        new.set_acl(d, &[(b"", 0, false, 7), (b"bob", 0, false, 5)])
            .unwrap();
        new.set_owner(l, None, Some(b"other")).unwrap();
        let g = diff(&old, &new).unwrap();
        assert!(g.created.is_empty() && g.deleted.is_empty() && g.renamed.is_empty());
        let attrs = |id: u64| -> Vec<Attr> {
            let m = g.modified.iter().find(|m| m.id == id).unwrap();
            m.changes.iter().map(|c| c.attr).collect()
        };
        assert_eq!(
            attrs(f),
            [
                Attr::Owner,
                Attr::Group,
                Attr::Mode,
                Attr::Mtime,
                Attr::Atime,
                Attr::Replication,
                Attr::StoragePolicy,
                Attr::PreferredBlockSize,
                Attr::Xattrs,
                Attr::UnderConstruction
            ]
        );
        assert_eq!(attrs(d), [Attr::NsQuota, Attr::Acl]);
        assert_eq!(attrs(l), [Attr::Group]);
        let m = g.modified.iter().find(|m| m.id == f).unwrap();
        assert!(m.blocks_added.is_empty() && m.blocks_removed.is_empty());
        assert_eq!(m.blocks_changed.len(), 1);
        assert_eq!(m.blocks_changed[0].old.generation_stamp, 1);
        assert_eq!(m.blocks_changed[0].new.length, 25);
        let mode = m.changes.iter().find(|c| c.attr == Attr::Mode).unwrap();
        assert_eq!(
            (mode.old.to_string(), mode.new.to_string()),
            ("0755".into(), "0600".into())
        );
        let t = m.changes.iter().find(|c| c.attr == Attr::Mtime).unwrap();
        assert_eq!(t.new.to_string(), "1970-01-01T00:00:00.100Z");
        assert_eq!(g.summary.bytes_added, 5);
        assert_eq!(g.summary.blocks_changed, 1);
        assert_eq!(g.summary.modified, 3);
        assert!(g.warnings.is_empty());
        // Against itself: nothing; backwards: the same inodes.
        assert!(diff(&new, &new).unwrap().is_empty());
        assert_eq!(diff(&new, &old).unwrap().summary.bytes_removed, 5);
    }

    #[test]
    fn other_namespaces_are_refused_and_an_older_new_warned_about() {
        let (old, ..) = build(1, 20, &F);
        let mut other = old.clone();
        other.info_mut().namespace_id = 43;
        assert!(matches!(
            diff(&old, &other),
            Err(ViewError::DifferentNamespaces { old: 42, new: 43 })
        ));
        let mut older = old.clone();
        older.info_mut().last_txid = 3;
        let g = diff(&old, &older).unwrap();
        assert!(g.is_empty());
        assert_eq!(g.warnings.len(), 1);
    }

    #[test]
    fn paths_sort_component_by_component() {
        let mut v: Vec<&[u8]> = vec![b"/a-b", b"/a/b", b"/a", b"/", b"/a/b/c", b"/a0"];
        v.sort_by(|a, b| path_order(a, b));
        assert_eq!(v, [&b"/"[..], b"/a", b"/a/b", b"/a/b/c", b"/a-b", b"/a0"]);
    }

    #[test]
    fn blocks_removed_and_replaced() {
        let (old, _, f, _) = build(1, 20, &F);
        let mut new = Namespace::new(NsInfo {
            namespace_id: 42,
            ..NsInfo::default()
        });
        new.mkdirs(b"/d", &P, 1).unwrap();
        let g = new.create(b"/d/f", &P, &F, 2).unwrap();
        assert_eq!(g, f);
        new.add_block(
            g,
            Block {
                id: 1,
                generation_stamp: 1,
                length: 10,
            },
        )
        .unwrap();
        new.add_block(
            g,
            Block {
                id: 9,
                generation_stamp: 1,
                length: 4,
            },
        )
        .unwrap();
        let d = diff(&old, &new).unwrap();
        let m = d.modified.iter().find(|m| m.id == f).unwrap();
        assert_eq!(m.blocks_added.iter().map(|b| b.id).collect::<Vec<_>>(), [9]);
        assert_eq!(
            m.blocks_removed.iter().map(|b| b.id).collect::<Vec<_>>(),
            [2]
        );
        assert!(m.blocks_changed.is_empty());
        // The symlink is gone (not created in `new`).
        assert_eq!(d.deleted.len(), 1);
        assert_eq!(d.summary.deleted_symlinks, 1);
        assert_eq!((d.summary.bytes_added, d.summary.bytes_removed), (4, 20));
    }
}
