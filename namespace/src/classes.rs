//! Attribute classes: the attributes many inodes share (owner, group and
//! mode; a file's block size, replication and storage policy; a
//! directory's quotas), interned once per namespace so that a node holds a
//! 4-byte [`ClassId`] instead of 19 bytes of them. A namespace has few
//! distinct classes (a handful of owners, modes and block sizes); a
//! namespace where every inode differs still works, at the cost of a table
//! as long as the node table.

use crate::values::Perm;
use std::sync::{Mutex, PoisonError};

/// Index of a [`Class`] in a [`Classes`] table.
pub type ClassId = u32;

/// The attributes a node keeps in its class. Which fields mean what depends
/// on the node's kind; fields its kind does not use are zero, so that equal
/// attributes intern to one class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub(crate) struct Class {
    /// Owner, group and mode (every kind).
    pub(crate) perm: Perm,
    /// File: preferred block size. Directory: namespace quota, as `u64`.
    pub(crate) a: u64,
    /// Directory: disk-space quota, as `u64`.
    pub(crate) b: u64,
    /// File: replication.
    pub(crate) replication: u16,
    /// File: storage policy.
    pub(crate) storage_policy: u8,
}

impl Class {
    /// A file's class.
    pub(crate) fn file(
        perm: Perm,
        preferred_block_size: u64,
        replication: u16,
        storage_policy: u8,
    ) -> Class {
        Class {
            perm,
            a: preferred_block_size,
            b: 0,
            replication,
            storage_policy,
        }
    }

    /// A directory's class.
    pub(crate) fn directory(perm: Perm, ns_quota: i64, ds_quota: i64) -> Class {
        Class {
            perm,
            a: ns_quota.cast_unsigned(),
            b: ds_quota.cast_unsigned(),
            replication: 0,
            storage_policy: 0,
        }
    }

    /// A symlink's class (or a free slot's).
    pub(crate) fn symlink(perm: Perm) -> Class {
        Class {
            perm,
            ..Class::default()
        }
    }

    /// The same class with another owner, group and mode.
    pub(crate) fn with_perm(self, perm: Perm) -> Class {
        Class { perm, ..self }
    }
}

/// An interning table of classes: ids are given in first-seen order and
/// never change; a class no node uses any more stays until the namespace
/// is rebuilt from an image.
#[derive(Clone, Debug, Default)]
pub(crate) struct Classes {
    list: Vec<Class>,
    index: foldhash::HashMap<Class, ClassId>,
    /// The class interned last: loads and replays intern runs of equal
    /// classes, which this answers without hashing.
    last: Option<(Class, ClassId)>,
}

impl Classes {
    /// The id of `c`, interning it if new; `None` once the table holds
    /// `u32::MAX` classes.
    #[inline]
    pub(crate) fn intern(&mut self, c: Class) -> Option<ClassId> {
        if let Some((l, id)) = self.last {
            if l == c {
                return Some(id);
            }
        }
        let id = match self.index.get(&c) {
            Some(&id) => id,
            None => {
                let id = ClassId::try_from(self.list.len())
                    .ok()
                    .filter(|&id| id != ClassId::MAX)?;
                self.list.push(c);
                self.index.insert(c, id);
                id
            }
        };
        self.last = Some((c, id));
        Some(id)
    }

    /// Class `id`. Panics if `id` was not given by this table (nodes only
    /// hold ids their namespace's table gave).
    #[inline]
    pub(crate) fn get(&self, id: ClassId) -> &Class {
        &self.list[id as usize]
    }

    /// Bytes of heap held, for memory accounting.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.list.capacity() * size_of::<Class>()
            + self.index.capacity() * (size_of::<Class>() + size_of::<ClassId>() + 1)
    }
}

/// The class table of a load, shared by the workers that decode INODE
/// pieces in parallel: each batch keeps the ids it has seen and locks the
/// table only for a class new to it (a few times per piece).
#[derive(Debug, Default)]
pub(crate) struct SharedClasses(Mutex<Classes>);

impl SharedClasses {
    /// The id of `c`, interning it if new.
    pub(crate) fn intern(&self, c: Class) -> Option<ClassId> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .intern(c)
    }

    /// The table, once the workers are done.
    pub(crate) fn into_inner(self) -> Classes {
        self.0.into_inner().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A batch's memory of the ids a [`SharedClasses`] gave it.
#[derive(Debug, Default)]
pub(crate) struct ClassCache {
    seen: foldhash::HashMap<Class, ClassId>,
    last: Option<(Class, ClassId)>,
}

impl ClassCache {
    /// The id of `c` in `shared`.
    #[inline]
    pub(crate) fn intern(&mut self, shared: &SharedClasses, c: Class) -> Option<ClassId> {
        if let Some((l, id)) = self.last {
            if l == c {
                return Some(id);
            }
        }
        let id = match self.seen.get(&c) {
            Some(&id) => id,
            None => {
                let id = shared.intern(c)?;
                self.seen.insert(c, id);
                id
            }
        };
        self.last = Some((c, id));
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_classes_share_an_id_in_first_seen_order() {
        let mut t = Classes::default();
        let p = Perm::new(1, 2, 0o644);
        let f = Class::file(p, 128 << 20, 3, 0);
        let d = Class::directory(p, -1, -1);
        assert_eq!(t.intern(f), Some(0));
        assert_eq!(t.intern(d), Some(1));
        assert_eq!(t.intern(f), Some(0));
        assert_eq!(t.intern(f.with_perm(Perm::new(1, 2, 0o600))), Some(2));
        assert_eq!(t.intern(d), Some(1));
        assert_eq!(t.list.len(), 3);
        assert_eq!(t.get(1), &d);
        assert_eq!(t.get(1).a, u64::MAX, "-1 kept as its bits");
    }
}
