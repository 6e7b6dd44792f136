//! The string table: user, group, xattr and ACL names, interned to small ids.
//! Id 0 is the empty string.
//!
//! Its index hashes with foldhash, randomly seeded, like the class table:
//! replay interns an owner and a group for every creation, and SipHash
//! (the default) made that a visible part of replay's time. The strings
//! come from images and journals. foldhash claims only minimal resistance
//! to inputs crafted to collide (one a long-running process could be
//! studied for); the trade is taken for speed, as for the class table.

use foldhash::{HashMap, HashMapExt};
use triomphe::Arc;

/// Ids must fit the 24-bit fields of a packed permission.
pub const MAX_STRINGS: usize = (1 << 24) - 1;

/// Interned strings (user, group, xattr and ACL names), each with a small id
/// that fits the 24-bit fields of a [`Perm`](crate::Perm). Id 0 is the
/// empty string; ids are given in interning order.
///
/// The strings are behind an [`Arc`]: a clone (a namespace's snapshot)
/// shares them, and the first new string either copy interns afterwards
/// copies the table (strings are few, and new ones rare); interning one
/// already there never copies.
#[derive(Clone, Debug)]
pub struct StringTable {
    inner: Arc<Strings>,
}

/// The strings and their index.
#[derive(Clone, Debug)]
struct Strings {
    values: Vec<Box<[u8]>>,
    ids: HashMap<Box<[u8]>, u32>,
}

impl Default for StringTable {
    fn default() -> Self {
        let mut t = Strings {
            values: Vec::new(),
            ids: HashMap::new(),
        };
        t.values.push(Box::from(&b""[..]));
        t.ids.insert(Box::from(&b""[..]), 0);
        StringTable { inner: Arc::new(t) }
    }
}

impl StringTable {
    /// Returns the id of `s`, adding it if new; `None` when the table is full.
    pub fn intern(&mut self, s: &[u8]) -> Option<u32> {
        if let Some(&id) = self.inner.ids.get(s) {
            return Some(id);
        }
        if self.inner.values.len() > MAX_STRINGS {
            return None;
        }
        // At most MAX_STRINGS (< 2^24) strings, checked just above.
        #[allow(clippy::cast_possible_truncation)]
        let id = self.inner.values.len() as u32;
        let t = Arc::make_mut(&mut self.inner);
        t.values.push(Box::from(s));
        t.ids.insert(Box::from(s), id);
        Some(id)
    }

    /// Appends the next string as read from an image; `false` if it is a
    /// duplicate or the table is full.
    pub fn push_loaded(&mut self, s: &[u8]) -> bool {
        if self.inner.ids.contains_key(s) || self.inner.values.len() > MAX_STRINGS {
            return false;
        }
        self.intern(s).is_some()
    }

    /// The string with id `id`; `None` if there is none.
    pub fn get(&self, id: u32) -> Option<&[u8]> {
        self.inner.values.get(id as usize).map(|b| &b[..])
    }

    /// The id of `s` if it is interned (never adds it).
    pub fn lookup(&self, s: &[u8]) -> Option<u32> {
        self.inner.ids.get(s).copied()
    }

    /// Number of strings, the empty string included.
    pub fn len(&self) -> usize {
        self.inner.values.len()
    }

    /// Whether the table holds nothing but the empty string.
    pub fn is_empty(&self) -> bool {
        self.inner.values.len() <= 1
    }

    /// Strings with ids 1.., in id order (what the STRING_TABLE section holds).
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        self.inner.values.iter().skip(1).map(|b| &b[..])
    }

    /// Bytes of heap held (an estimate: each string is stored twice, plus
    /// per-entry overhead), for memory accounting; shared with a clone or
    /// not.
    pub fn heap_bytes(&self) -> usize {
        self.inner.values.iter().map(|v| 2 * v.len() + 48).sum()
    }

    /// Whether a clone shares the strings (so that they are counted once
    /// for the two).
    pub(crate) fn is_shared(&self) -> bool {
        Arc::strong_count(&self.inner) > 1
    }
}
