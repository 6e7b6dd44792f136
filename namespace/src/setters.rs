//! Setters of the attributes of existing inodes: owner, group and mode,
//! times, replication, quotas, extended attributes, ACLs and the
//! under-construction mark; and the interning of the owner a new inode is
//! created with ([`PermSpec`]).

use crate::classes::Class;
use crate::consts::{Slot, MAX_NAME_LENGTH};
use crate::errors::{NsError, Result};
use crate::namespace::Namespace;
use crate::node::{atime_tag, Kind};
use crate::values::{AclEntry, Extra, Perm, PermSpec, UnderConstruction, XAttr, XAttrNs};

impl Namespace {
    /// Interns a user, group, xattr or ACL name: at most
    /// `MAX_NAME_LENGTH` bytes, as every reader requires of a string.
    fn intern(&mut self, s: &[u8]) -> Result<u32> {
        if s.len() > MAX_NAME_LENGTH {
            return Err(NsError::StringTooLong(s.len()));
        }
        self.strings.intern(s).ok_or(NsError::StringTableFull)
    }

    pub(crate) fn intern_perm(&mut self, p: &PermSpec<'_>) -> Result<Perm> {
        // Both checked before either is interned.
        for s in [p.user, p.group] {
            if s.len() > MAX_NAME_LENGTH {
                return Err(NsError::StringTooLong(s.len()));
            }
        }
        let u = self.intern(p.user)?;
        let g = self.intern(p.group)?;
        Ok(Perm::new(u, g, p.mode))
    }

    /// Changes the owning user, group or both (`None` keeps one).
    pub fn set_owner(&mut self, id: u64, user: Option<&[u8]>, group: Option<&[u8]>) -> Result<()> {
        let s = self.live_slot(id)?;
        for n in user.iter().chain(group.iter()) {
            if n.len() > MAX_NAME_LENGTH {
                return Err(NsError::StringTooLong(n.len()));
            }
        }
        let c = *self.class_of(s);
        let p = c.perm;
        let u = match user {
            Some(u) => self.intern(u)?,
            None => p.user(),
        };
        let g = match group {
            Some(g) => self.intern(g)?,
            None => p.group(),
        };
        self.set_class(s, c.with_perm(Perm::new(u, g, p.mode())))
    }

    /// Sets the permission bits.
    pub fn set_mode(&mut self, id: u64, mode: u16) -> Result<()> {
        let s = self.live_slot(id)?;
        let c = *self.class_of(s);
        let p = c.perm;
        self.set_class(s, c.with_perm(Perm::new(p.user(), p.group(), mode)))
    }

    /// Sets modification and (files only) access time.
    pub fn set_times(&mut self, id: u64, mtime: Option<u64>, atime: Option<u64>) -> Result<()> {
        let s = self.live_slot(id)?;
        let n = self.nodes[s as usize];
        if n.kind() == Kind::File {
            // The access time is kept beside the modification time: a new
            // pair that keeps another distance rewrites the record.
            let old = self.atime_of(&n);
            let tag = atime_tag(atime.unwrap_or(old), mtime.unwrap_or(n.mtime));
            let was = atime_tag(old, n.mtime);
            if tag != was {
                let mut tail = Vec::with_capacity(16);
                prost::encoding::encode_varint(tag, &mut tail);
                let len = prost::encoding::encoded_len_varint(was);
                let at = self.tail_of_name(&n);
                // In place when the tag keeps its length and no snapshot
                // shares the chunk; else the record is copied.
                match self.names.overwrite(at.chunk, at.off as usize, len) {
                    Some(bytes) if bytes.len() == tail.len() => bytes.copy_from_slice(&tail),
                    _ => {
                        tail.extend_from_slice(self.blocks_bytes(&n));
                        let name = self.name_bytes(n.name).to_vec();
                        self.nodes[s as usize].name = self.put_record(&name, &tail);
                    }
                }
            }
        }
        if let Some(m) = mtime {
            self.nodes[s as usize].mtime = m;
        }
        Ok(())
    }

    /// Sets a file's replication.
    pub fn set_replication(&mut self, id: u64, replication: u16) -> Result<()> {
        let s = self.live_slot(id)?;
        if self.nodes[s as usize].kind() != Kind::File {
            return Err(NsError::NotAFile(format!("inode {id}")));
        }
        let c = *self.class_of(s);
        self.set_class(s, Class { replication, ..c })
    }

    /// Sets directory quotas; -1 removes one.
    pub fn set_quota(&mut self, id: u64, ns_quota: i64, ds_quota: i64) -> Result<()> {
        let s = self.dir_slot(id)?;
        if ns_quota < -1 || ds_quota < -1 {
            return Err(NsError::Invalid("quota below -1".into()));
        }
        let perm = self.class_of(s).perm;
        self.set_class(s, Class::directory(perm, ns_quota, ds_quota))
    }

    fn extra_mut(&mut self, s: Slot) -> &mut Extra {
        // Marked only when it was not (its chunk then left unshared).
        if !self.nodes[s as usize].has_extra() {
            self.nodes[s as usize].set_has_extra(true);
        }
        self.extras.get_or_default(s)
    }

    fn tidy_extra(&mut self, s: Slot) {
        if self.extras.get(s).is_some_and(Extra::is_empty) {
            self.extras.remove(s);
            self.nodes[s as usize].set_has_extra(false);
        }
    }

    /// Sets (adds or replaces) an extended attribute.
    pub fn set_xattr(&mut self, id: u64, ns: XAttrNs, name: &[u8], value: &[u8]) -> Result<()> {
        let s = self.live_slot(id)?;
        if name.is_empty() || name.len() > MAX_NAME_LENGTH || value.len() > MAX_NAME_LENGTH {
            return Err(NsError::Invalid(
                "xattr name empty, or name or value too long".into(),
            ));
        }
        let name = self.intern(name)?;
        let attr = XAttr {
            ns,
            name,
            value: value.into(),
        };
        let e = self.extra_mut(s);
        match e
            .xattrs
            .binary_search_by(|x| (x.ns, x.name).cmp(&(ns, name)))
        {
            Ok(i) => e.xattrs[i] = attr,
            Err(i) => e.xattrs.insert(i, attr),
        }
        Ok(())
    }

    /// Removes an extended attribute; `Ok(false)` if it was not set.
    pub fn remove_xattr(&mut self, id: u64, ns: XAttrNs, name: &[u8]) -> Result<bool> {
        let s = self.live_slot(id)?;
        let Some(name) = self.strings.lookup(name) else {
            return Ok(false);
        };
        let Some(e) = self.extras.get_mut(s) else {
            return Ok(false);
        };
        let found = match e
            .xattrs
            .binary_search_by(|x| (x.ns, x.name).cmp(&(ns, name)))
        {
            Ok(i) => {
                e.xattrs.remove(i);
                true
            }
            Err(_) => false,
        };
        self.tidy_extra(s);
        Ok(found)
    }

    /// Replaces the ACL: entries are (name, kind 0..=3, default scope, rwx).
    pub fn set_acl(&mut self, id: u64, entries: &[(&[u8], u8, bool, u8)]) -> Result<()> {
        let s = self.live_slot(id)?;
        if entries.iter().any(|e| e.1 > 3 || e.3 > 7) {
            return Err(NsError::Invalid(
                "ACL entry kind or permission out of range".into(),
            ));
        }
        // The same rules the readers apply, checked on the names before any
        // is interned, so that a refused call changes nothing.
        for (i, e) in entries.iter().enumerate() {
            if e.0.len() > MAX_NAME_LENGTH {
                return Err(NsError::StringTooLong(e.0.len()));
            }
            if e.1 >= 2 && !e.0.is_empty() {
                return Err(NsError::Invalid(
                    "a mask or other ACL entry has a name".into(),
                ));
            }
            if entries[..i]
                .iter()
                .any(|o| (o.0, o.1, o.2) == (e.0, e.1, e.2))
            {
                return Err(NsError::Invalid(
                    "two ACL entries have the same scope, type and name".into(),
                ));
            }
        }
        let mut acl = Vec::with_capacity(entries.len());
        for &(name, kind, default_scope, perm) in entries {
            let name = self.intern(name)?;
            acl.push(AclEntry {
                name,
                kind,
                default_scope,
                perm,
            });
        }
        self.extra_mut(s).acl = acl;
        self.tidy_extra(s);
        Ok(())
    }

    /// Marks file `id` as being written by a client, or clears the mark.
    pub fn set_under_construction(
        &mut self,
        id: u64,
        client: Option<(&[u8], &[u8])>,
    ) -> Result<()> {
        let s = self.live_slot(id)?;
        if self.nodes[s as usize].kind() != Kind::File {
            return Err(NsError::NotAFile(format!("inode {id}")));
        }
        self.extra_mut(s).under_construction = client.map(|(n, m)| {
            Box::new(UnderConstruction {
                client_name: n.into(),
                client_machine: m.into(),
            })
        });
        self.tidy_extra(s);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::fixtures::{F, P};
    use crate::namespace::Namespace;
    use crate::view::{Attrs, Inode};

    fn file_attrs(n: Inode<'_>) -> (u16, u64, u8, u64) {
        match n.attrs() {
            Attrs::File(f) => (
                f.replication,
                f.preferred_block_size,
                f.storage_policy,
                f.atime,
            ),
            other => panic!("not a file: {other:?}"),
        }
    }

    /// Inodes with equal attributes share one class: a setter gives the
    /// inode it changes a class of its own and leaves the others as they
    /// were.
    /// A file's access time lives in its record: a change that keeps the
    /// tag's length is written in place, one that does not (or one under a
    /// snapshot sharing the chunk) moves the record; every view agrees.
    #[test]
    fn access_times_are_rewritten_in_place_unless_shared_or_longer() {
        let mut ns = Namespace::default();
        let f = ns.create(b"/f", &P, &F, 1000).unwrap();
        let s = ns.live_slot(f).unwrap();
        let atime = |ns: &Namespace| file_attrs(ns.inode(f).unwrap()).3;
        let record = |ns: &Namespace| ns.nodes[s as usize].name;
        let before = record(&ns);
        ns.set_times(f, None, Some(1001)).unwrap();
        assert_eq!((atime(&ns), record(&ns)), (1001, before), "in place");
        ns.set_times(f, None, Some(1_000_000)).unwrap();
        assert_eq!(atime(&ns), 1_000_000);
        assert_ne!(record(&ns), before, "a longer tag moves the record");
        let snap = ns.snapshot();
        ns.set_times(f, Some(5), Some(7)).unwrap();
        assert_eq!((atime(&ns), ns.inode(f).unwrap().mtime()), (7, 5));
        assert_eq!(
            (atime(&snap), snap.inode(f).unwrap().mtime()),
            (1_000_000, 1000)
        );
        assert_eq!(ns.inode(f).unwrap().name(), b"f");
    }

    #[test]
    fn setters_change_one_inode_not_its_class_mates() {
        let mut ns = Namespace::default();
        let a = ns.create(b"/a", &P, &F, 1).unwrap();
        let b = ns.create(b"/b", &P, &F, 1).unwrap();
        let d = ns.mkdirs(b"/d", &P, 1).unwrap();
        let e = ns.mkdirs(b"/e", &P, 1).unwrap();
        let before_b = file_attrs(ns.inode(b).unwrap());

        ns.set_mode(a, 0o600).unwrap();
        ns.set_owner(a, Some(b"etl"), None).unwrap();
        ns.set_replication(a, 7).unwrap();
        ns.set_times(a, Some(5), Some(6)).unwrap();
        ns.set_quota(d, 10, 20).unwrap();

        let (ia, ib) = (ns.inode(a).unwrap(), ns.inode(b).unwrap());
        assert_eq!(
            (ia.mode(), ia.user(), ia.group()),
            (0o600, &b"etl"[..], &b"supergroup"[..])
        );
        assert_eq!(file_attrs(ia), (7, F.preferred_block_size, 0, 6));
        assert_eq!(ia.mtime(), 5);
        assert_eq!((ib.mode(), ib.user()), (0o755, &b"hdfs"[..]));
        assert_eq!(file_attrs(ib), before_b);
        assert_eq!(ib.mtime(), 1);
        let quotas = |id| match ns.inode(id).unwrap().attrs() {
            Attrs::Directory { ns_quota, ds_quota } => (ns_quota, ds_quota),
            other => panic!("not a directory: {other:?}"),
        };
        assert_eq!(quotas(d), (10, 20));
        assert_eq!(quotas(e), (-1, -1));
        assert_eq!(ns.inode(d).unwrap().mode(), 0o755, "a quota keeps the mode");

        // Setting it back makes the inodes equal again: the same digest as
        // a namespace where nothing was changed.
        let mut same = ns.clone();
        same.set_mode(a, 0o755).unwrap();
        same.set_owner(a, Some(b"hdfs"), None).unwrap();
        same.set_replication(a, 3).unwrap();
        same.set_times(a, Some(1), Some(1)).unwrap();
        same.set_quota(d, -1, -1).unwrap();
        let mut fresh = Namespace::default();
        fresh.create(b"/a", &P, &F, 1).unwrap();
        fresh.create(b"/b", &P, &F, 1).unwrap();
        fresh.mkdirs(b"/d", &P, 1).unwrap();
        fresh.mkdirs(b"/e", &P, 1).unwrap();
        assert_eq!(same.digest(), fresh.digest());
    }
}
