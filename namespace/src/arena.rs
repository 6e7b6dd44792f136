//! Chunked arenas that hold the variable-size parts of inodes (names, blocks,
//! child lists) without one heap allocation per inode.
//!
//! A loader fills one chunk per sub-section; mutations append to the last
//! chunk. Superseded ranges become garbage until the next checkpoint rewrites
//! the image.
//!
//! Each chunk is behind an [`Arc`], so that a clone of an arena (a snapshot
//! of the namespace) shares every chunk. No item in an arena is ever changed
//! in place: mutations only append, and only to a chunk no clone shares; a
//! shared last chunk is left as it is and a new chunk started instead. A
//! clone therefore never copies a chunk, whatever either copy does later.

use crate::consts::ARC_HEADER;
use triomphe::Arc;

/// A range inside an [`Arena`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Span {
    /// Index of the chunk.
    pub chunk: u32,
    /// Index of the first item within the chunk.
    pub start: u32,
    /// Number of items; an empty range reads as empty whatever `chunk` and
    /// `start` say.
    pub len: u32,
}

/// Largest chunk a mutation appends to before starting a new one.
const MAX_CHUNK: usize = 1 << 30;

/// Largest last chunk (in bytes) that
/// [`clone_keeping_tail`](Arena::clone_keeping_tail) copies instead of
/// sharing.
const SMALL_TAIL_BYTES: usize = 64 << 10;

/// Items of type `T` in chunks, addressed by [`Span`]s: a chunk per loaded
/// sub-section, then chunks of at most 2^30 items that mutations append to.
/// A clone shares the chunks (one reference count each) and neither copy
/// ever copies one: appends go to a chunk of their own.
#[derive(Clone, Debug)]
pub struct Arena<T> {
    chunks: Vec<Arc<Vec<T>>>,
}

impl<T> Default for Arena<T> {
    fn default() -> Self {
        Arena { chunks: Vec::new() }
    }
}

impl<T: Copy> Arena<T> {
    /// The items of range `s`. Panics if `s` is not a range of this arena
    /// (the builder and the mutations make only ranges that are).
    pub fn get(&self, s: Span) -> &[T] {
        if s.len == 0 {
            return &[];
        }
        let start = s.start as usize;
        &self.chunks[s.chunk as usize][start..start + s.len as usize]
    }

    /// A clone, as [`clone`](Clone::clone), but for a last chunk of at most
    /// 64 KiB, which the clone gets a copy of instead of sharing it: this
    /// arena then goes on appending to it in place. For clones taken after
    /// every few appends, each of which would otherwise close the last
    /// chunk and leave one more chunk per clone (for every later clone to
    /// count): chunks then start once per 64 KiB appended at most, whatever
    /// the number of clones, and a clone costs at most a 64 KiB copy more.
    pub(crate) fn clone_keeping_tail(&self) -> Arena<T> {
        let mut chunks = self.chunks.clone();
        if let Some(last) = chunks.last_mut() {
            if last.len().saturating_mul(size_of::<T>()) <= SMALL_TAIL_BYTES {
                *last = Arc::new(last.to_vec());
            }
        }
        Arena { chunks }
    }

    /// Every chunk, in order.
    pub fn chunks(&self) -> &[Arc<Vec<T>>] {
        &self.chunks
    }

    /// The whole chunk `n` (empty if there is none).
    #[inline]
    pub fn chunk(&self, n: u32) -> &[T] {
        self.chunks.get(n as usize).map_or(&[], |c| &c[..])
    }

    /// Sets chunk `n`, growing the chunk list as needed (for loaders that
    /// number chunks before filling them).
    pub fn set_chunk(&mut self, n: u32, chunk: Vec<T>) {
        let n = n as usize;
        if self.chunks.len() <= n {
            self.chunks.resize_with(n + 1, Arc::default);
        }
        self.chunks[n] = Arc::new(chunk);
    }

    /// The last chunk, once it is one that `need` more items may go to:
    /// with room for them and shared with no clone (else a new chunk).
    fn tail(&mut self, need: usize) -> u32 {
        // Only this arena holds a chunk whose count is one, so no other
        // thread can raise it: `make_mut` on it then copies nothing.
        let full = self
            .chunks
            .last()
            .is_none_or(|c| c.len() + need > MAX_CHUNK || !unique(c));
        if full {
            self.chunks.push(Arc::default());
        }
        u32::try_from(self.chunks.len() - 1).expect("an arena holds fewer than 2^32 chunks")
    }

    /// Chunk `n` to append to, which [`tail`](Self::tail) (or the caller)
    /// found unshared: no copy is made.
    fn unshared(&mut self, n: usize) -> &mut Vec<T> {
        Arc::make_mut(&mut self.chunks[n])
    }

    /// The items at `at..at + len` of chunk `chunk`, to overwrite in place,
    /// when no clone shares the chunk (`None` otherwise, or when the range
    /// is not in it).
    pub(crate) fn overwrite(&mut self, chunk: u32, at: usize, len: usize) -> Option<&mut [T]> {
        let c = self.chunks.get_mut(chunk as usize)?;
        let end = at.checked_add(len)?;
        Arc::get_mut(c)?.get_mut(at..end)
    }

    /// Appends `items` as a new range.
    pub fn push(&mut self, items: &[T]) -> Span {
        if items.is_empty() {
            return Span::default();
        }
        let chunk = self.tail(items.len());
        let c = self.unshared(chunk as usize);
        // `tail` left at most MAX_CHUNK - items.len() items in the chunk.
        #[allow(clippy::cast_possible_truncation)]
        let start = c.len() as u32;
        let len = u32::try_from(items.len()).expect("an arena range holds fewer than 2^32 items");
        c.extend_from_slice(items);
        Span { chunk, start, len }
    }

    /// Appends `parts` one after the other as one new range (no joined
    /// copy made first).
    pub fn push_parts(&mut self, parts: &[&[T]]) -> Span {
        let n: usize = parts.iter().map(|p| p.len()).sum();
        if n == 0 {
            return Span::default();
        }
        let chunk = self.tail(n);
        let c = self.unshared(chunk as usize);
        // `tail` left at most MAX_CHUNK - n items in the chunk.
        #[allow(clippy::cast_possible_truncation)]
        let start = c.len() as u32;
        let len = u32::try_from(n).expect("an arena range holds fewer than 2^32 items");
        for p in parts {
            c.extend_from_slice(p);
        }
        Span { chunk, start, len }
    }

    /// Appends `items` to range `s`, in place when `s` ends its chunk and
    /// no clone shares that chunk, else by copying the range to the tail
    /// first (chunk to chunk, no buffer in between).
    pub(crate) fn extend(&mut self, s: Span, items: &[T]) -> Span {
        if s.len == 0 {
            return self.push(items);
        }
        let (from, start, len) = (s.chunk as usize, s.start as usize, s.len as usize);
        let c = &self.chunks[from];
        if start + len == c.len() && c.len() + items.len() <= MAX_CHUNK && unique(c) {
            self.unshared(from).extend_from_slice(items);
            let len = u32::try_from(len + items.len())
                .expect("an arena range holds fewer than 2^32 items");
            return Span { len, ..s };
        }
        let n = len + items.len();
        let chunk = self.tail(n);
        let to = chunk as usize;
        let range = start..start + len;
        if from == to {
            self.unshared(to).extend_from_within(range);
        } else {
            // `tail` returns the last chunk, and `from` is another one.
            let (head, tail) = self.chunks.split_at_mut(to);
            Arc::make_mut(&mut tail[0]).extend_from_slice(&head[from][range]);
        }
        let c = self.unshared(to);
        c.extend_from_slice(items);
        // `tail` left at most MAX_CHUNK - n items in the chunk before these.
        #[allow(clippy::cast_possible_truncation)]
        let start = (c.len() - n) as u32;
        let len = u32::try_from(n).expect("an arena range holds fewer than 2^32 items");
        Span { chunk, start, len }
    }

    /// Bytes held, for memory accounting: every chunk this arena
    /// references, shared with a clone or not.
    pub fn heap_bytes(&self) -> usize {
        self.chunks.iter().map(|c| chunk_bytes(c)).sum::<usize>()
            + self.chunks.capacity() * size_of::<Arc<Vec<T>>>()
    }

    /// Bytes only this arena references (what dropping it frees): the
    /// chunks no clone shares, and the chunk list.
    pub fn unique_heap_bytes(&self) -> usize {
        self.chunks
            .iter()
            .filter(|c| unique(c))
            .map(|c| chunk_bytes(c))
            .sum::<usize>()
            + self.chunks.capacity() * size_of::<Arc<Vec<T>>>()
    }

    /// How many chunks this arena and `other` share (the same memory),
    /// position by position.
    #[cfg(test)]
    pub(crate) fn shared_chunks(&self, other: &Arena<T>) -> usize {
        self.chunks
            .iter()
            .zip(&other.chunks)
            .filter(|(a, b)| Arc::ptr_eq(a, b))
            .count()
    }
}

/// Whether no clone shares chunk `c`.
fn unique<T>(c: &Arc<Vec<T>>) -> bool {
    Arc::strong_count(c) == 1
}

/// Heap bytes of one chunk: its items' capacity and the shared header.
fn chunk_bytes<T>(c: &Arc<Vec<T>>) -> usize {
    c.capacity() * size_of::<T>() + size_of::<Vec<T>>() + ARC_HEADER
}

#[cfg(test)]
mod tests {
    use super::{Arena, Span};

    fn span(chunk: u32, start: u32, len: u32) -> Span {
        Span { chunk, start, len }
    }

    #[test]
    fn append_extends_in_place_or_copies_to_the_tail() {
        let mut a: Arena<u32> = Arena::default();
        a.set_chunk(0, vec![1, 2, 3, 4]);
        a.set_chunk(1, vec![5, 6, 7]);
        // (range, item, where the result lies, what it holds)
        let steps: [(Span, u32, Span, &[u32]); 4] = [
            // Ends its chunk: in place.
            (span(1, 1, 2), 8, span(1, 1, 3), &[6, 7, 8]),
            // In an earlier chunk: copied to the tail chunk, then extended.
            (span(0, 1, 2), 9, span(1, 4, 3), &[2, 3, 9]),
            // In the tail chunk but not at its end: copied within it.
            (span(1, 0, 2), 10, span(1, 7, 3), &[5, 6, 10]),
            // Empty: a new range of one.
            (Span::default(), 11, span(1, 10, 1), &[11]),
        ];
        for (from, item, to, holds) in steps {
            let s = a.extend(from, &[item]);
            assert_eq!((s, a.get(s)), (to, holds), "{from:?} + {item}");
        }
        // What the earlier ranges held is untouched.
        assert_eq!(a.chunk(0), &[1, 2, 3, 4]);
        assert_eq!(a.chunk(1), &[5, 6, 7, 8, 2, 3, 9, 5, 6, 10, 11]);
    }

    /// After a clone, appends never copy or change a shared chunk: they
    /// start a chunk of their own, and what the clone reads is unchanged.
    #[test]
    fn a_clone_shares_chunks_and_appends_leave_them_alone() {
        let mut a: Arena<u32> = Arena::default();
        a.set_chunk(0, vec![1, 2, 3]);
        let r = a.push(&[4, 5]);
        assert_eq!(r, span(0, 3, 2));
        let snap = a.clone();
        assert_eq!(a.shared_chunks(&snap), 1);
        assert_eq!(a.unique_heap_bytes(), a.chunks.capacity() * 8);
        // The range ends the last chunk, but that chunk is shared: copied
        // to a new chunk, not extended in place.
        let r2 = a.extend(r, &[6]);
        assert_eq!((r2, a.get(r2)), (span(1, 0, 3), &[4, 5, 6][..]));
        let r3 = a.push(&[7]);
        assert_eq!(r3, span(1, 3, 1));
        // Unshared now: in place.
        assert_eq!(a.extend(r3, &[8]), span(1, 3, 2));
        assert_eq!(a.shared_chunks(&snap), 1);
        assert_eq!((snap.chunks().len(), snap.get(r)), (1, &[4, 5][..]));
        assert_eq!(snap.chunk(0), &[1, 2, 3, 4, 5]);
        assert_eq!(a.chunk(0), &[1, 2, 3, 4, 5]);
        assert_eq!(a.chunk(1), &[4, 5, 6, 7, 8]);
        drop(snap);
        // The old tail is this arena's alone again, but appends go on in
        // the newest chunk.
        assert_eq!(a.push(&[9]), span(1, 5, 1));
    }

    /// Clones keeping the tail, one after every append: the appends go on
    /// in place in one chunk while it is small (each clone has its own copy
    /// and keeps what it read), then one shared big chunk is closed and a
    /// new one started, once.
    #[test]
    fn clones_keeping_the_tail_leave_no_chunk_per_clone() {
        let mut a: Arena<u8> = Arena::default();
        let mut clones = Vec::new();
        let mut spans = Vec::new();
        let item = [7u8; 1000];
        // 70 appends of 1,000 bytes: past the 64 KiB the copy stops at.
        for i in 0..70u8 {
            let mut it = item;
            it[0] = i;
            spans.push(a.push(&it));
            clones.push(a.clone_keeping_tail());
        }
        assert_eq!(a.chunks().len(), 2, "{:?}", spans.last());
        let first_in_second = spans.iter().position(|s| s.chunk == 1).unwrap();
        // Chunk 0 held the appends until it passed 64 KiB: the clone after
        // it shared it, and the next append started chunk 1.
        assert_eq!(first_in_second, 66);
        for (i, (c, s)) in (0u8..).zip(clones.iter().zip(&spans)) {
            assert_eq!(c.get(*s)[0], i, "clone {i}");
            assert_eq!(c.get(*s)[1..], item[1..]);
        }
        // Clones taken while it was small hold their own copy; the later
        // ones share it.
        assert_eq!(clones[10].shared_chunks(&a), 0);
        assert_eq!(clones[69].shared_chunks(&a), 1);
    }
}
