//! The canonical digest of a namespace: xxh3-64 over a canonical serialization
//! of the namespace info and every live inode in id order. Names of users,
//! groups and xattrs are hashed as strings, so the digest does not depend on
//! string-table ids, insertion order, image layout or thread count.

use crate::namespace::Namespace;
use crate::values::{NsInfo, XAttrNs};
use crate::view::Attrs;
use std::fmt;
use xxhash_rust::xxh3::Xxh3;

/// A namespace digest, shown as 16 hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Digest(pub u64);

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// One inode as the digest reads it: what [`canon_inode`] serializes.
#[derive(Clone, Copy, Debug)]
pub struct CanonInode<'a> {
    /// The inode's id.
    pub id: u64,
    /// Its parent's id; 0 for the root.
    pub parent: u64,
    /// Its name (empty for the root).
    pub name: &'a [u8],
    /// Owner, as a string.
    pub user: &'a [u8],
    /// Group, as a string.
    pub group: &'a [u8],
    /// Permission bits.
    pub mode: u16,
    /// Modification time, milliseconds since the Unix epoch.
    pub mtime: u64,
    /// Kind and kind-specific attributes.
    pub attrs: Attrs<'a>,
    /// Rare attributes, if any.
    pub extra: Option<CanonExtra<'a>>,
}

/// An inode's rare attributes as the digest reads them.
#[derive(Clone, Copy, Debug)]
pub struct CanonExtra<'a> {
    /// Extended attributes (namespace, name, value), sorted by namespace
    /// then name bytes.
    pub xattrs: &'a [(XAttrNs, &'a [u8], &'a [u8])],
    /// ACL entries (name, kind, default scope, permission bits), in order.
    pub acl: &'a [(&'a [u8], u8, bool, u8)],
    /// Client name and machine of a file under construction.
    pub under_construction: Option<(&'a [u8], &'a [u8])>,
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_u64(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Appends the canonical serialization of `n` to `out`; a namespace's
/// digest hashes those of its live inodes in id order, after its
/// counters ([`Digester`]).
pub fn canon_inode(out: &mut Vec<u8>, n: &CanonInode<'_>) {
    for v in [n.id, n.parent] {
        put_u64(out, v);
    }
    put_bytes(out, n.name);
    put_bytes(out, n.user);
    put_bytes(out, n.group);
    put_u64(out, u64::from(n.mode));
    put_u64(out, n.mtime);
    match n.attrs {
        Attrs::File(f) => {
            for v in [
                1,
                f.atime,
                f.preferred_block_size,
                u64::from(f.replication),
                u64::from(f.storage_policy),
                f.blocks.len() as u64,
            ] {
                put_u64(out, v);
            }
            for b in f.blocks {
                for v in [b.id, b.generation_stamp, b.length] {
                    put_u64(out, v);
                }
            }
        }
        Attrs::Directory { ns_quota, ds_quota } => {
            for v in [2, ns_quota.cast_unsigned(), ds_quota.cast_unsigned()] {
                put_u64(out, v);
            }
        }
        Attrs::Symlink { target } => {
            put_u64(out, 3);
            put_bytes(out, target);
        }
    }
    match &n.extra {
        None => put_u64(out, 0),
        Some(e) => {
            put_u64(out, 1);
            put_u64(out, e.xattrs.len() as u64);
            for &(ns, name, value) in e.xattrs {
                put_u64(out, ns as u64);
                put_bytes(out, name);
                put_bytes(out, value);
            }
            put_u64(out, e.acl.len() as u64);
            for &(name, kind, default_scope, perm) in e.acl {
                put_bytes(out, name);
                put_u64(
                    out,
                    (u64::from(kind) << 16) | (u64::from(default_scope) << 8) | u64::from(perm),
                );
            }
            match e.under_construction {
                None => put_u64(out, 0),
                Some((client, machine)) => {
                    put_u64(out, 1);
                    put_bytes(out, client);
                    put_bytes(out, machine);
                }
            }
        }
    }
}

/// A digest computed as a namespace streams by: its counters, then the
/// canonical bytes of its live inodes in id order ([`canon_inode`]), in
/// pieces of any size. [`Namespace::digest`] is one; a writer that never
/// holds the namespace computes the same value with another.
pub struct Digester {
    hash: Xxh3,
}

impl Digester {
    /// A digest of a namespace whose counters are `i`.
    pub fn new(i: &NsInfo) -> Self {
        let mut head = Vec::with_capacity(48);
        for v in [
            i.namespace_id,
            i.last_txid,
            i.last_inode_id,
            i.last_block_id,
            i.generation_stamp,
            i.creation_time,
        ] {
            put_u64(&mut head, v);
        }
        let mut hash = Xxh3::new();
        hash.update(&head);
        Digester { hash }
    }

    /// Hashes the next canonical bytes.
    pub fn update(&mut self, canon: &[u8]) {
        self.hash.update(canon);
    }

    /// The digest.
    pub fn finish(&self) -> Digest {
        Digest(self.hash.digest())
    }
}

impl Namespace {
    /// The namespace's canonical digest: equal for two namespaces with the
    /// same counters and the same live inodes (ids, names, owners, times,
    /// blocks, attributes), however they were built, loaded or laid out.
    pub fn digest(&self) -> Digest {
        let mut d = Digester::new(&self.info);
        let mut buf = Vec::with_capacity(1 << 17);
        let mut xattrs = Vec::new();
        let mut acl = Vec::new();
        for n in self.iter() {
            let s = |id: u32| self.strings.get(id).unwrap_or_default();
            let extra = n.extra().map(|e| {
                xattrs.clear();
                xattrs.extend(e.xattrs.iter().map(|x| (x.ns, s(x.name), &*x.value)));
                xattrs.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
                acl.clear();
                acl.extend(
                    e.acl
                        .iter()
                        .map(|a| (s(a.name), a.kind, a.default_scope, a.perm)),
                );
                let uc = e.under_construction.as_ref();
                (
                    uc.map(|u| (&*u.client_name, &*u.client_machine)),
                    &xattrs,
                    &acl,
                )
            });
            let c = CanonInode {
                id: n.id(),
                parent: n.parent().unwrap_or(0),
                name: n.name(),
                user: n.user(),
                group: n.group(),
                mode: n.mode(),
                mtime: n.mtime(),
                attrs: n.attrs(),
                extra: extra.map(|(under_construction, xattrs, acl)| CanonExtra {
                    xattrs,
                    acl,
                    under_construction,
                }),
            };
            canon_inode(&mut buf, &c);
            if buf.len() >= 1 << 16 {
                d.update(&buf);
                buf.clear();
            }
        }
        d.update(&buf);
        d.finish()
    }
}
