//! Attribute classes: the attributes many inodes share (owner, group and
//! mode; a file's block size, replication and storage policy; a
//! directory's quotas), interned once per namespace so that a node holds a
//! 4-byte [`ClassId`] instead of 19 bytes of them. A namespace has few
//! distinct classes (a handful of owners, modes and block sizes); one where
//! every inode differs still works, at a cost of about 100 bytes per class
//! (a 32-byte entry in the list, a 40-byte one in its index, and the
//! index's spare room), and, during a load, the map of each batch being
//! decoded. A setter interns a new class and leaves the old one in
//! the table: classes no inode uses any more are dropped when the namespace
//! is next loaded from an image.

use crate::values::Perm;
use std::sync::{Mutex, PoisonError};
use triomphe::Arc;

/// Index of a [`Class`] in a [`Classes`] table.
pub type ClassId = u32;

/// Most class ids a table gives: a node keeps its class id in 28 bits
/// (beside its kind and flags).
pub(crate) const MAX_CLASS: ClassId = (1 << 28) - 1;

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
/// is rebuilt from an image. The table is behind an [`Arc`]: a clone (a
/// snapshot) shares it, and the first new class interned by either copy
/// afterwards copies it (classes are few, and new ones rare).
#[derive(Clone, Debug, Default)]
pub(crate) struct Classes {
    table: Arc<ClassTable>,
    /// The class interned last: loads and replays intern runs of equal
    /// classes, which this answers without hashing.
    last: Option<(Class, ClassId)>,
}

/// The classes and their index.
#[derive(Clone, Debug, Default)]
struct ClassTable {
    list: Vec<Class>,
    index: foldhash::HashMap<Class, ClassId>,
}

impl Classes {
    /// The id of `c`, interning it if new; `None` once the table holds
    /// as many classes as a node can name (2^28).
    #[inline]
    pub(crate) fn intern(&mut self, c: Class) -> Option<ClassId> {
        if let Some((l, id)) = self.last {
            if l == c {
                return Some(id);
            }
        }
        // A class already interned is found without making the shared
        // table writable.
        let id = match self.table.index.get(&c) {
            Some(&id) => id,
            None => {
                let id = ClassId::try_from(self.table.list.len())
                    .ok()
                    .filter(|&id| id <= MAX_CLASS)?;
                let t = Arc::make_mut(&mut self.table);
                t.list.push(c);
                t.index.insert(c, id);
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
        &self.table.list[id as usize]
    }

    /// Bytes of heap held, for memory accounting; with `unique`, none when
    /// a clone shares the table.
    pub(crate) fn heap_bytes(&self, unique: bool) -> usize {
        if unique && Arc::strong_count(&self.table) > 1 {
            return 0;
        }
        self.table.list.capacity() * size_of::<Class>()
            + self.table.index.capacity() * (size_of::<(Class, ClassId)>() + 1)
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

/// Entries of a batch's direct-mapped cache of class ids.
const RECENT: usize = 64;

/// A batch's memory of the ids a [`SharedClasses`] gave it: a small
/// direct-mapped cache (one multiply and one compare for a class seen
/// recently, the common case: a load meets a few classes over and over, in
/// no particular order), then a map of every class the batch has seen, then
/// the shared table.
#[derive(Debug)]
pub(crate) struct ClassCache {
    /// Entry `recent_slot(c)` holds `c` if it was the last class there;
    /// `ClassId::MAX` marks an empty entry (no table gives that id).
    recent: [(Class, ClassId); RECENT],
    seen: foldhash::HashMap<Class, ClassId>,
}

impl Default for ClassCache {
    fn default() -> Self {
        ClassCache {
            recent: [(Class::default(), ClassId::MAX); RECENT],
            seen: foldhash::HashMap::default(),
        }
    }
}

/// The cache entry of `c`: the high bits of a multiplicative hash of its
/// fields.
// The shift leaves 6 bits: below RECENT.
#[allow(clippy::cast_possible_truncation)]
#[inline]
fn recent_slot(c: &Class) -> usize {
    let h = c.perm.0
        ^ c.a.rotate_left(23)
        ^ c.b.rotate_left(47)
        ^ (u64::from(c.replication) << 8 | u64::from(c.storage_policy));
    (h.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - RECENT.trailing_zeros())) as usize
}

impl ClassCache {
    /// The id of `c` in `shared`.
    #[inline]
    pub(crate) fn intern(&mut self, shared: &SharedClasses, c: Class) -> Option<ClassId> {
        let i = recent_slot(&c);
        let (k, id) = self.recent[i];
        if id != ClassId::MAX && k == c {
            return Some(id);
        }
        let id = match self.seen.get(&c) {
            Some(&id) => id,
            None => {
                let id = shared.intern(c)?;
                self.seen.insert(c, id);
                id
            }
        };
        self.recent[i] = (c, id);
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_cache_gives_the_shared_ids() {
        let shared = SharedClasses::default();
        let (mut a, mut b) = (ClassCache::default(), ClassCache::default());
        // More classes than cache entries, so entries are replaced.
        let class = |i: u64| Class::file(Perm::new(1, 2, 0o644), i << 20, 3, 0);
        let ids_a: Vec<_> = (0..200)
            .map(|i| a.intern(&shared, class(i)).unwrap())
            .collect();
        let ids_b: Vec<_> = (0..200)
            .rev()
            .map(|i| b.intern(&shared, class(i)).unwrap())
            .collect();
        assert_eq!(ids_a, (0..200).collect::<Vec<_>>());
        assert!(ids_b.iter().rev().eq(ids_a.iter()));
        for (i, &id) in ids_a.iter().enumerate().step_by(7) {
            assert_eq!(a.intern(&shared, class(i as u64)), Some(id));
        }
        assert_eq!(shared.into_inner().table.list.len(), 200);
    }

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
        assert_eq!(t.table.list.len(), 3);
        // A clone shares the table until either interns a new class.
        let mut u = t.clone();
        assert_eq!(u.intern(d), Some(1));
        assert!(Arc::ptr_eq(&t.table, &u.table));
        assert_eq!(u.intern(Class::symlink(p)), Some(3));
        assert!(!Arc::ptr_eq(&t.table, &u.table));
        assert_eq!((t.table.list.len(), u.table.list.len()), (3, 4));
        assert_eq!(t.get(1), &d);
        assert_eq!(t.get(1).a, u64::MAX, "-1 kept as its bits");
    }
}
