//! The canonical string table (FORMAT.md, "STRING_TABLE"): nsimage writes
//! only the strings that live inodes use (users, groups, xattr names, ACL
//! entry names), sorted by bytes, with ids 1..=n in that order. The ids the
//! namespace holds in memory depend on its history (interning order, strings
//! no longer used); the written ones depend only on the strings in use, so
//! the same namespace gives the same STRING_TABLE and INODE bytes whatever
//! history produced it.

use nsimage_namespace::{Namespace, Perm, Slot};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The written string table and the map from the namespace's string ids to
/// the written ones.
pub(crate) struct StringMap {
    /// Written id of each in-memory id; 0 for the empty string and for ids
    /// not in use (which no live inode holds).
    new: Vec<u32>,
    /// In-memory ids of the written strings, in written order (written id
    /// k + 1 is `order[k]`).
    order: Vec<u32>,
}

impl StringMap {
    /// The map for `ns`, whose live inodes are scanned in parallel over
    /// `ranges` (which cover every slot), and the number of live inodes
    /// (counted in the same pass).
    pub(crate) fn of(ns: &Namespace, ranges: &[Range<Slot>]) -> (StringMap, u64) {
        use rayon::prelude::*;
        let table = ns.strings();
        let count = table.len();
        let used: Vec<AtomicU64> = (0..count.div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
        let mark = |id: u32| {
            let id = id as usize;
            if id == 0 || id >= count {
                // The empty string is never written; an id the table does not
                // define reads as the empty string (as for the digest).
                return;
            }
            let (word, bit) = (&used[id / 64], 1u64 << (id % 64));
            // Most inodes share a few owners: read before writing, so that
            // the tasks do not fight over the same cache lines.
            if word.load(Relaxed) & bit == 0 {
                word.fetch_or(bit, Relaxed);
            }
        };
        let live = ranges
            .par_iter()
            .map(|r| {
                // Neighbouring inodes mostly have the same user and group.
                let mut last_owner = u64::MAX;
                let mut live = 0u64;
                for s in r.clone() {
                    let Some(n) = ns.at(s) else { continue };
                    live += 1;
                    let perm = n.perm();
                    let owner = perm.0 >> 16;
                    if owner != last_owner {
                        last_owner = owner;
                        mark(perm.user());
                        mark(perm.group());
                    }
                    if let Some(e) = n.extra() {
                        e.xattrs.iter().for_each(|x| mark(x.name));
                        e.acl.iter().for_each(|a| mark(a.name));
                    }
                }
                live
            })
            .sum();
        let mut order: Vec<u32> = used
            .iter()
            .enumerate()
            .flat_map(|(w, word)| {
                let bits = word.load(Relaxed);
                // Word w holds the bits of ids 64w..64w+63, all ids of a
                // table whose ids are u32: in range.
                #[allow(clippy::cast_possible_truncation)]
                let base = w as u32 * 64;
                (0..64u32)
                    .filter(move |b| bits & (1u64 << b) != 0)
                    .map(move |b| base + b)
            })
            .collect();
        // Strings are pairwise distinct, so the order is total.
        order.sort_unstable_by(|&a, &b| table.get(a).cmp(&table.get(b)));
        let mut new = vec![0u32; count];
        for (k, &old) in order.iter().enumerate() {
            // At most one written string per in-memory id, a u32.
            #[allow(clippy::cast_possible_truncation)]
            let k = k as u32;
            new[old as usize] = k + 1;
        }
        (StringMap { new, order }, live)
    }

    /// The written id of in-memory string id `old`.
    #[inline]
    pub(crate) fn id(&self, old: u32) -> u32 {
        self.new.get(old as usize).copied().unwrap_or(0)
    }

    /// `p` with its user and group ids rewritten.
    #[inline]
    pub(crate) fn perm(&self, p: Perm) -> u64 {
        Perm::new(self.id(p.user()), self.id(p.group()), p.mode()).0
    }

    /// The written strings, in written order.
    pub(crate) fn strings<'a>(&'a self, ns: &'a Namespace) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.order
            .iter()
            .map(|&old| ns.strings().get(old).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsimage_namespace::{FileSpec, PermSpec, XAttrNs};

    fn perm<'a>(user: &'a [u8], group: &'a [u8]) -> PermSpec<'a> {
        PermSpec {
            user,
            group,
            mode: 0o644,
        }
    }

    const F: FileSpec = FileSpec {
        replication: 1,
        preferred_block_size: 1 << 20,
        storage_policy: 0,
    };

    #[test]
    fn only_strings_in_use_sorted_by_bytes() {
        let mut ns = Namespace::default();
        let d = ns.mkdirs(b"/d", &perm(b"zed", b"\xffg"), 1).unwrap();
        let f = ns.create_in(d, b"f", &perm(b"dead", b"g"), &F, 2).unwrap();
        ns.create_in(d, b"h", &perm(b"ann", b"g"), &F, 2).unwrap();
        ns.set_xattr(f, XAttrNs::User, b"x.b", b"1").unwrap();
        ns.set_acl(f, &[(b"acl-user", 0, false, 7), (b"", 3, false, 0)])
            .unwrap();
        // "dead" owned f only: after this no live inode uses it.
        ns.set_owner(f, Some(b"ann"), None).unwrap();
        let used: Vec<&[u8]> = vec![b"acl-user", b"ann", b"g", b"x.b", b"zed", b"\xffg"];
        let n = ns.slot_count();
        for ranges in [
            std::iter::once(0..n).collect(),
            (0..n).map(|s| s..s + 1).collect::<Vec<_>>(),
        ] {
            let (map, live) = StringMap::of(&ns, &ranges);
            assert_eq!(live, 4);
            assert_eq!(map.strings(&ns).collect::<Vec<_>>(), used);
            let t = ns.strings();
            for (k, s) in used.iter().enumerate() {
                assert_eq!(map.id(t.lookup(s).unwrap()), u32::try_from(k).unwrap() + 1);
            }
            assert_eq!(map.id(t.lookup(b"dead").unwrap()), 0);
            assert_eq!(map.id(0), 0);
            assert_eq!(map.id(u32::MAX), 0);
            let p = ns.inode(f).unwrap().perm();
            assert_eq!(
                map.perm(p),
                Perm::new(2, 3, 0o644).0,
                "user ann = 2, group g = 3"
            );
        }
    }
}
