//! Child lists: the sorted lists that mutations edit ([`OwnedChildren`]:
//! chunks of slots with their name keys, searched by key and by name only
//! when two keys tie), name keys, and [`Children`], the borrowed view of a
//! directory's children however they are stored.
//!
//! An owned list is cut into chunks of at most [`CHUNK`] entries so that an
//! insertion or a removal moves the rest of one chunk, not the rest of the
//! whole list: a chunk that overflows splits in two, one that empties is
//! dropped. Reading the names is the caller's business (a closure from slot
//! to name), so this module knows nothing of the namespace's tables.
//!
//! Each chunk is behind an [`Arc`]: a copy of a list (when a snapshot's
//! shard of lists is copied) shares the chunks, and an edit copies the one
//! chunk it changes if a copy still shares it.

use crate::consts::{Slot, ARC_HEADER};
use std::cmp::Ordering;
use triomphe::Arc;

/// Most entries one chunk of an owned list holds.
const CHUNK: usize = 512;

/// The search key of a name: its first eight bytes, big-endian, zero-padded.
/// Keys order like names do (a < b implies key(a) <= key(b)).
pub(crate) fn name_key(name: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = name.len().min(8);
    b[..n].copy_from_slice(&name[..n]);
    u64::from_be_bytes(b)
}

/// A run of consecutive children: slots in name order and, beside each,
/// its name key (the two vectors are always the same length, never zero).
#[derive(Clone, Debug, Default)]
pub(crate) struct Chunk {
    slots: Vec<Slot>,
    keys: Vec<u64>,
}

/// Where a child is, or would be inserted, in an owned list: a chunk and
/// the index within it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Place {
    chunk: usize,
    at: usize,
}

/// A child list that mutations have touched: chunks of child slots, in
/// name order across chunks, each slot beside the first eight bytes of its
/// name ([`name_key`]), so that a search compares keys and reads a name
/// only when two keys tie. Lists loaded from an image stay in the arena,
/// without keys.
#[derive(Clone, Debug, Default)]
pub(crate) struct OwnedChildren {
    /// Non-empty chunks, each of at most [`CHUNK`] entries, shared
    /// copy-on-write with copies of the list.
    chunks: Vec<Arc<Chunk>>,
    /// The last (key, slot) of each chunk, beside the chunks: a search
    /// finds its chunk in this one array instead of reaching into every
    /// chunk it compares with (each behind its own pointer).
    lasts: Vec<(u64, Slot)>,
    /// Entries in all chunks together.
    len: usize,
}

/// The last (key, slot) of a chunk (never empty).
fn last_of(c: &Chunk) -> (u64, Slot) {
    (
        c.keys.last().copied().unwrap_or_default(),
        c.slots.last().copied().unwrap_or_default(),
    )
}

impl OwnedChildren {
    /// The owned copy of a sorted list, chunks half full so that the first
    /// insertions into each do not split it.
    pub(crate) fn from_sorted(slots: &[Slot], mut key_of: impl FnMut(Slot) -> u64) -> Self {
        let chunks: Vec<Arc<Chunk>> = slots
            .chunks(CHUNK / 2)
            .map(|part| {
                Arc::new(Chunk {
                    slots: part.to_vec(),
                    keys: part.iter().map(|&s| key_of(s)).collect(),
                })
            })
            .collect();
        OwnedChildren {
            lasts: chunks.iter().map(|c| last_of(c)).collect(),
            chunks,
            len: slots.len(),
        }
    }

    /// The borrowed view of the list.
    pub(crate) fn view(&self) -> Children<'_> {
        Children {
            parts: Parts::Chunked(&self.chunks),
            len: self.len,
        }
    }

    /// The place of the child named `name` (whose key is `key`), or where
    /// it would be inserted; `name_of` reads a child's name.
    pub(crate) fn search<'n>(
        &self,
        key: u64,
        name: &[u8],
        name_of: impl Fn(Slot) -> &'n [u8],
    ) -> Result<Place, Place> {
        // Keys first; a name is read only when keys tie.
        let cmp = |k: u64, s: Slot| k.cmp(&key).then_with(|| name_of(s).cmp(name));
        let Some(&(k, s)) = self.lasts.last() else {
            return Err(Place { chunk: 0, at: 0 });
        };
        let n = self.lasts.len();
        // New names often sort last (sequential names, sorted bulk
        // creation): one comparison instead of a search.
        if cmp(k, s) == Ordering::Less {
            return Err(Place {
                chunk: n - 1,
                at: self.chunks[n - 1].keys.len(),
            });
        }
        // The first chunk whose last child does not sort before `name`; one
        // exists, since the last chunk's does not.
        let chunk = self.lasts[..n - 1].partition_point(|&(k, s)| cmp(k, s) == Ordering::Less);
        let c = &self.chunks[chunk];
        let (mut lo, mut hi) = (0, c.keys.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match cmp(c.keys[mid], c.slots[mid]) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Ok(Place { chunk, at: mid }),
            }
        }
        Err(Place { chunk, at: lo })
    }

    /// The place of child `slot`, by a scan of the slots (no name is read):
    /// for small lists, where a scan is cheaper than a search.
    pub(crate) fn scan(&self, slot: Slot) -> Option<Place> {
        self.chunks.iter().enumerate().find_map(|(chunk, c)| {
            let at = c.slots.iter().position(|&s| s == slot)?;
            Some(Place { chunk, at })
        })
    }

    /// The slot at `p`, a place [`search`](Self::search) found.
    pub(crate) fn slot(&self, p: Place) -> Option<Slot> {
        self.chunks.get(p.chunk)?.slots.get(p.at).copied()
    }

    /// Inserts `slot` with its name key at `p`, a place
    /// [`search`](Self::search) gave for its name, splitting a full chunk.
    pub(crate) fn insert(&mut self, p: Place, slot: Slot, key: u64) {
        let n = self.chunks.len();
        let Place { mut chunk, mut at } = p;
        if n == 0 {
            // An empty list: its first chunk, with room for one (most
            // directories are small).
            self.chunks.reserve_exact(1);
            self.chunks.push(Arc::default());
            self.lasts.reserve_exact(1);
            self.lasts.push((key, slot));
        } else if self.chunks[chunk].slots.len() >= CHUNK {
            if chunk + 1 == n && at >= CHUNK {
                // Past the end of the list: a new last chunk, so that names
                // added in order fill whole chunks.
                self.chunks.push(Arc::default());
                self.lasts.push((key, slot));
                chunk = n;
                at = 0;
            } else {
                // Split the full chunk in two halves and insert into the
                // half the place falls in.
                let c = &self.chunks[chunk];
                let tail = Chunk {
                    slots: c.slots[CHUNK / 2..].to_vec(),
                    keys: c.keys[CHUNK / 2..].to_vec(),
                };
                let c = Arc::make_mut(&mut self.chunks[chunk]);
                c.slots.truncate(CHUNK / 2);
                c.keys.truncate(CHUNK / 2);
                let head_last = last_of(c);
                self.lasts.insert(chunk + 1, last_of(&tail));
                self.lasts[chunk] = head_last;
                self.chunks.insert(chunk + 1, Arc::new(tail));
                if at > CHUNK / 2 {
                    chunk += 1;
                    at -= CHUNK / 2;
                }
            }
        }
        let c = Arc::make_mut(&mut self.chunks[chunk]);
        c.slots.insert(at, slot);
        c.keys.insert(at, key);
        if at + 1 == c.slots.len() {
            self.lasts[chunk] = (key, slot);
        }
        self.len += 1;
    }

    /// Removes the child at `p`, a place [`search`](Self::search) or
    /// [`scan`](Self::scan) found, dropping its chunk if that empties.
    pub(crate) fn remove(&mut self, p: Place) {
        let Some(c) = self.chunks.get_mut(p.chunk) else {
            return;
        };
        if p.at >= c.slots.len() {
            return;
        }
        if c.slots.len() == 1 {
            // Emptied: dropped without copying it first.
            self.chunks.remove(p.chunk);
            self.lasts.remove(p.chunk);
            self.len -= 1;
            return;
        }
        let c = Arc::make_mut(c);
        c.slots.remove(p.at);
        c.keys.remove(p.at);
        if c.slots.len() * 4 < c.slots.capacity() {
            // A chunk emptied by removals gives its memory back (to twice
            // what it holds, so that it does not shrink again at once).
            let keep = c.slots.len() * 2;
            c.slots.shrink_to(keep);
            c.keys.shrink_to(keep);
        }
        self.lasts[p.chunk] = last_of(c);
        self.len -= 1;
    }

    /// Bytes of heap the list references (capacity, not length); with
    /// `unique`, only its chunks no copy shares.
    pub(crate) fn heap_bytes(&self, unique: bool) -> usize {
        self.chunks.capacity() * size_of::<Arc<Chunk>>()
            + self.lasts.capacity() * size_of::<(u64, Slot)>()
            + self
                .chunks
                .iter()
                .filter(|c| !unique || Arc::strong_count(c) == 1)
                .map(|c| {
                    size_of::<Chunk>()
                        + ARC_HEADER
                        + c.slots.capacity() * size_of::<Slot>()
                        + c.keys.capacity() * 8
                })
                .sum::<usize>()
    }

    /// Number of chunks.
    #[cfg(test)]
    pub(crate) fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// How many chunks this list and `other` share (the same memory).
    #[cfg(test)]
    pub(crate) fn shared_chunks(&self, other: &OwnedChildren) -> usize {
        self.chunks
            .iter()
            .filter(|a| other.chunks.iter().any(|b| Arc::ptr_eq(a, b)))
            .count()
    }
}

/// A directory's child slots in name order, borrowed from the namespace:
/// a list loaded from an image (one slice of the child arena, or a run of
/// consecutive slots, which takes no arena at all) or the chunks of a list
/// mutations have edited.
#[derive(Clone, Copy, Debug)]
pub struct Children<'a> {
    parts: Parts<'a>,
    len: usize,
}

/// How a [`Children`] is stored.
#[derive(Clone, Copy, Debug)]
enum Parts<'a> {
    Flat(&'a [Slot]),
    /// Slots `first..first + len`.
    Run(Slot),
    Chunked(&'a [Arc<Chunk>]),
}

/// The slot `i` places after `first` in a run of consecutive slots: runs
/// are at most `u32::MAX` long (their lengths are spans' `u32`s), so `i`
/// fits, and they end within the slots, so the sum does.
#[allow(clippy::cast_possible_truncation)]
fn run_slot(first: Slot, i: usize) -> Slot {
    first.wrapping_add(i as u32)
}

impl<'a> Children<'a> {
    /// A list stored as one slice (sorted by name).
    pub(crate) fn flat(slots: &'a [Slot]) -> Self {
        Children {
            parts: Parts::Flat(slots),
            len: slots.len(),
        }
    }

    /// A list of `len` consecutive slots from `first` (sorted by name).
    pub(crate) fn run(first: Slot, len: u32) -> Self {
        Children {
            parts: Parts::Run(first),
            len: len as usize,
        }
    }

    /// Number of children.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The child slots in name order.
    pub fn iter(&self) -> ChildIter<'a> {
        match self.parts {
            Parts::Flat(s) => ChildIter {
                head: s,
                run: 0..0,
                rest: [].iter(),
                len: self.len,
            },
            Parts::Run(first) => ChildIter {
                head: &[],
                run: first..run_slot(first, self.len),
                rest: [].iter(),
                len: self.len,
            },
            Parts::Chunked(c) => ChildIter {
                head: &[],
                run: 0..0,
                rest: c.iter(),
                len: self.len,
            },
        }
    }

    /// The `i`th child's slot (a walk over the chunks of an edited list).
    pub fn get(&self, i: usize) -> Option<Slot> {
        self.iter().nth(i)
    }

    /// The slot of the child whose name sorts last.
    pub fn last(&self) -> Option<Slot> {
        match self.parts {
            Parts::Flat(s) => s.last().copied(),
            Parts::Run(first) => (self.len > 0).then(|| run_slot(first, self.len - 1)),
            Parts::Chunked(c) => c.last()?.slots.last().copied(),
        }
    }

    /// Binary search, as [`slice::binary_search_by`]: `f` orders a child
    /// against the one sought (by name, since children are sorted by name).
    pub fn binary_search_by(&self, mut f: impl FnMut(Slot) -> Ordering) -> Result<usize, usize> {
        match self.parts {
            Parts::Flat(s) => s.binary_search_by(|&c| f(c)),
            Parts::Run(first) => {
                // The slots are consecutive: search their positions.
                let at = self.partition_point(|c| f(c) == Ordering::Less);
                match at < self.len && f(run_slot(first, at)) == Ordering::Equal {
                    true => Ok(at),
                    false => Err(at),
                }
            }
            Parts::Chunked(chunks) => {
                let (before, c) = self.chunk_where(chunks, |s| f(s) == Ordering::Less);
                match c.map(|c| c.slots.binary_search_by(|&s| f(s))) {
                    Some(Ok(i)) => Ok(before + i),
                    Some(Err(i)) => Err(before + i),
                    None => Err(self.len),
                }
            }
        }
    }

    /// The number of leading children `pred` holds for, as
    /// [`slice::partition_point`]: `pred` must hold for a prefix of the
    /// children in name order.
    pub fn partition_point(&self, mut pred: impl FnMut(Slot) -> bool) -> usize {
        match self.parts {
            Parts::Flat(s) => s.partition_point(|&c| pred(c)),
            Parts::Run(first) => {
                let (mut lo, mut hi) = (0usize, self.len);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    if pred(run_slot(first, mid)) {
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
                lo
            }
            Parts::Chunked(chunks) => match self.chunk_where(chunks, &mut pred) {
                (before, Some(c)) => before + c.slots.partition_point(|&s| pred(s)),
                (_, None) => self.len,
            },
        }
    }

    /// The first chunk whose last child `before_it` does not hold for, and
    /// the number of children in the chunks ahead of it; `None` when it
    /// holds for every child.
    fn chunk_where(
        &self,
        chunks: &'a [Arc<Chunk>],
        mut before_it: impl FnMut(Slot) -> bool,
    ) -> (usize, Option<&'a Chunk>) {
        let i = chunks.partition_point(|c| c.slots.last().is_none_or(|&s| before_it(s)));
        let before = chunks[..i].iter().map(|c| c.slots.len()).sum();
        (before, chunks.get(i).map(|c| &**c))
    }
}

impl<'a> IntoIterator for Children<'a> {
    type Item = Slot;
    type IntoIter = ChildIter<'a>;
    fn into_iter(self) -> ChildIter<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for &Children<'a> {
    type Item = Slot;
    type IntoIter = ChildIter<'a>;
    fn into_iter(self) -> ChildIter<'a> {
        self.iter()
    }
}

/// The iterator of [`Children::iter`]: child slots in name order.
#[derive(Clone, Debug)]
pub struct ChildIter<'a> {
    /// What is left of the current chunk (or the whole of a flat list).
    head: &'a [Slot],
    /// What is left of a run of consecutive slots.
    run: std::ops::Range<Slot>,
    /// The chunks after it.
    rest: std::slice::Iter<'a, Arc<Chunk>>,
    /// Slots left in all.
    len: usize,
}

impl Iterator for ChildIter<'_> {
    type Item = Slot;

    fn next(&mut self) -> Option<Slot> {
        if let Some(s) = self.run.next() {
            self.len -= 1;
            return Some(s);
        }
        while self.head.is_empty() {
            self.head = &self.rest.next()?.slots;
        }
        let (&s, tail) = self.head.split_first()?;
        self.head = tail;
        self.len -= 1;
        Some(s)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.len, Some(self.len))
    }

    /// Skips whole chunks without visiting their slots.
    fn nth(&mut self, mut n: usize) -> Option<Slot> {
        if !self.run.is_empty() {
            let left = self.run.len();
            if n >= left {
                self.run = 0..0;
                self.len -= left;
                return None;
            }
            self.run.start = run_slot(self.run.start, n);
            self.len -= n;
            return self.next();
        }
        while n >= self.head.len() {
            n -= self.head.len();
            self.len -= self.head.len();
            // Emptied first: past the end, the iterator stays finished.
            self.head = &[];
            self.head = &self.rest.next()?.slots;
        }
        self.head = &self.head[n..];
        self.len -= n;
        self.next()
    }
}

impl ExactSizeIterator for ChildIter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn nth_skips_across_chunks_and_stays_finished_past_the_end() {
        let slots: Vec<Slot> = (0..1000).collect();
        let list = OwnedChildren::from_sorted(&slots, u64::from);
        assert!(list.chunks.len() > 2);
        let lasts: Vec<(u64, Slot)> = list.chunks.iter().map(|c| last_of(c)).collect();
        assert_eq!(list.lasts, lasts);
        for (start, n) in [(0, 0), (0, 255), (0, 256), (3, 600), (0, 999)] {
            let mut it = list.view().iter();
            for _ in 0..start {
                it.next();
            }
            let want = start + n;
            assert_eq!(it.nth(n as usize), Some(want));
            assert_eq!(it.len(), 999 - want as usize);
            assert_eq!(it.next(), (want < 999).then_some(want + 1));
        }
        let mut it = list.view().iter();
        assert_eq!(it.nth(1000), None);
        assert_eq!((it.len(), it.next(), it.next()), (0, None, None));
        let mut it = list.view().iter();
        assert_eq!(it.nth(5000), None);
        assert_eq!((it.len(), it.next()), (0, None));
    }

    /// Random inserts and removes of names (slot `i` is `names[i]`) against
    /// a sorted set, checking the chunks' shape after every step: none
    /// empty, none over [`CHUNK`], keys beside their slots, each chunk's
    /// last entry in `lasts`, the total right.
    /// (The same through the namespace's mutations is in `mutate.rs`.)
    #[test]
    fn chunks_stay_sorted_bounded_and_aligned() {
        let names: Vec<Vec<u8>> = (0..4_000u32)
            .map(|i| {
                format!(
                    "prefix{:02}{}",
                    i % 7,
                    i.wrapping_mul(2_654_435_761) % 9_973
                )
                .into_bytes()
            })
            .collect();
        let name_of = |s: Slot| names[s as usize].as_slice();
        let mut list = OwnedChildren::default();
        let mut model: BTreeSet<(&[u8], Slot)> = BTreeSet::new();
        let mut seed = 7u64;
        let mut below = |n: usize| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            ((seed >> 33) as usize) % n
        };
        for step in 0..30_000 {
            // Mostly inserts for the first half, mostly removes after.
            let grow = if step < 15_000 { 80 } else { 20 };
            let s = Slot::try_from(below(names.len())).unwrap();
            let (name, key) = (name_of(s), name_key(name_of(s)));
            let found = list.search(key, name, name_of);
            let present = model.iter().any(|&(n, _)| n == name);
            assert_eq!(found.is_ok(), present, "step {step}");
            match found {
                Err(p) if below(100) < grow => {
                    list.insert(p, s, key);
                    model.insert((name, s));
                }
                Ok(p) if below(100) >= grow => {
                    let slot = list.slot(p).unwrap();
                    list.remove(p);
                    model.remove(&(name_of(slot), slot));
                }
                _ => {}
            }
            for c in &list.chunks {
                assert!(!c.slots.is_empty() && c.slots.len() <= CHUNK);
                assert_eq!(c.keys.len(), c.slots.len());
            }
            let lasts: Vec<(u64, Slot)> = list.chunks.iter().map(|c| last_of(c)).collect();
            assert_eq!(
                list.lasts, lasts,
                "step {step}: each chunk's last beside it"
            );
            assert_eq!(list.len, model.len());
            if step == 15_000 {
                assert!(list.chunks.len() >= 6, "{} chunks", list.chunks.len());
            }
        }
        let got: Vec<Slot> = list.view().iter().collect();
        let want: Vec<Slot> = model.iter().map(|&(_, s)| s).collect();
        assert_eq!(got, want);
        // Drained in order from the front: every chunk empties and goes.
        for &(name, _) in &model {
            let p = list.search(name_key(name), name, name_of).unwrap();
            list.remove(p);
        }
        assert!(list.chunks.is_empty() && list.lasts.is_empty() && list.view().is_empty());
    }

    #[test]
    fn name_keys_order_like_names() {
        let mut names: Vec<&[u8]> = vec![
            b"a",
            b"a\0",
            b"a\0\0",
            b"ab",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefghi",
            b"b",
            b"\xff",
            b"\0",
            b"abcdefgg\xff",
        ];
        names.sort();
        for w in names.windows(2) {
            assert!(name_key(w[0]) <= name_key(w[1]), "{:?} {:?}", w[0], w[1]);
        }
    }
}
