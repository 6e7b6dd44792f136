//! The canonical digest of a namespace: xxh3-64 over a canonical serialization
//! of the namespace info and every live inode in id order. Names of users,
//! groups and xattrs are hashed as strings, so the digest does not depend on
//! string-table ids, insertion order, image layout or thread count.

use crate::namespace::Namespace;
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

struct Canon {
    buf: Vec<u8>,
    hash: Xxh3,
}

impl Canon {
    fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        self.buf.extend_from_slice(b);
    }
    fn flush_if_full(&mut self) {
        if self.buf.len() >= 1 << 16 {
            self.hash.update(&self.buf);
            self.buf.clear();
        }
    }
}

impl Namespace {
    /// The namespace's canonical digest: equal for two namespaces with the
    /// same counters and the same live inodes (ids, names, owners, times,
    /// blocks, attributes), however they were built, loaded or laid out.
    pub fn digest(&self) -> Digest {
        let mut c = Canon {
            buf: Vec::with_capacity(1 << 17),
            hash: Xxh3::new(),
        };
        let i = &self.info;
        for v in [
            i.namespace_id,
            i.last_txid,
            i.last_inode_id,
            i.last_block_id,
            i.generation_stamp,
            i.creation_time,
        ] {
            c.u64(v);
        }
        for n in self.iter() {
            c.u64(n.id());
            c.u64(n.parent().unwrap_or(0));
            c.bytes(n.name());
            c.bytes(n.user());
            c.bytes(n.group());
            c.u64(n.mode() as u64);
            c.u64(n.mtime());
            match n.attrs() {
                Attrs::File(f) => {
                    c.u64(1);
                    c.u64(f.atime);
                    c.u64(f.preferred_block_size);
                    c.u64(f.replication as u64);
                    c.u64(f.storage_policy as u64);
                    c.u64(f.blocks.len() as u64);
                    for b in f.blocks {
                        c.u64(b.id);
                        c.u64(b.generation_stamp);
                        c.u64(b.length);
                    }
                }
                Attrs::Directory { ns_quota, ds_quota } => {
                    c.u64(2);
                    c.u64(ns_quota.cast_unsigned());
                    c.u64(ds_quota.cast_unsigned());
                }
                Attrs::Symlink { target } => {
                    c.u64(3);
                    c.bytes(target);
                }
            }
            match n.extra() {
                None => c.u64(0),
                Some(e) => {
                    c.u64(1);
                    c.u64(e.xattrs.len() as u64);
                    let mut xattrs: Vec<_> = e.xattrs.iter().collect();
                    xattrs.sort_by_key(|x| (x.ns, self.strings.get(x.name)));
                    for x in xattrs {
                        c.u64(x.ns as u64);
                        c.bytes(self.strings.get(x.name).unwrap_or_default());
                        c.bytes(&x.value);
                    }
                    c.u64(e.acl.len() as u64);
                    for a in &e.acl {
                        c.bytes(self.strings.get(a.name).unwrap_or_default());
                        c.u64(
                            ((a.kind as u64) << 16)
                                | ((a.default_scope as u64) << 8)
                                | a.perm as u64,
                        );
                    }
                    match &e.under_construction {
                        None => c.u64(0),
                        Some(uc) => {
                            c.u64(1);
                            c.bytes(&uc.client_name);
                            c.bytes(&uc.client_machine);
                        }
                    }
                }
            }
            c.flush_if_full();
        }
        c.hash.update(&c.buf);
        Digest(c.hash.digest())
    }
}
