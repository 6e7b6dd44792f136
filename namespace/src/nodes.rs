//! The node table: one [`Node`] per slot, in chunks of [`NODE_CHUNK`]
//! nodes, each chunk behind an [`Arc`] so that a clone of the table (a
//! snapshot of the namespace) shares every chunk, and a write to a chunk
//! that is shared copies that chunk alone first ([`Arc::make_mut`]).
//!
//! Slot `i` is node `i & (NODE_CHUNK - 1)` of chunk `i >> NODE_CHUNK_SHIFT`:
//! a read is one bounds check (of the chunk index) and two loads. Every
//! chunk is full size; the slots of the last one past [`Nodes::len`] hold
//! [`Node::PLACEHOLDER`] (a free slot) until a push fills them.
//!
//! The size, 256 nodes (12 KiB), is a trade between what a snapshot
//! costs and what writes cost after it. After a snapshot, each write
//! copies the chunk of each node it changes, once (a new inode's chunk is
//! the last one; its parent's, whose time changes, is anywhere), so that
//! while a checkpoint runs the copies grow with the number of distinct
//! chunks written: 10,000 creates in 1,000 random directories of a
//! 5M-inode namespace copied 13 MB of node chunks at 256 nodes a chunk, 50
//! MB at 1,024 (and random writes all over a table copy a fraction
//! 1 - e^(-writes/chunks) of it). The snapshot itself costs one reference
//! count per chunk, in the chunk's own first cache line: for 5M inodes
//! (20,000 chunks) about 0.2 ms warm and up to 9 ms with every chunk cold,
//! against 0.07 and 0.4 ms at 1,024 nodes a chunk. Chunks this small come
//! from the C allocator's heaps, never a memory mapping each, and a load
//! allocates each in the worker that first writes it.

use crate::consts::ARC_HEADER;
use crate::node::Node;
use std::ops::{Index, IndexMut};
use triomphe::Arc;

/// Log2 of [`NODE_CHUNK`] (see the module's page for the choice).
pub const NODE_CHUNK_SHIFT: u32 = 8;

/// Nodes per chunk of a [`Nodes`] table.
pub const NODE_CHUNK: usize = 1 << NODE_CHUNK_SHIFT;

/// Mask of a slot's index within its chunk.
const MASK: usize = NODE_CHUNK - 1;

/// One chunk of a node table.
pub type NodeChunk = [Node; NODE_CHUNK];

/// A namespace's node table, indexed by slot: chunks of [`NODE_CHUNK`]
/// nodes shared copy-on-write between clones. A clone costs one reference
/// count increment per chunk; a later write through either copy copies
/// the one chunk it touches if the other still shares it.
#[derive(Clone, Debug, Default)]
pub struct Nodes {
    /// `len.div_ceil(NODE_CHUNK)` chunks, each full size.
    chunks: Vec<Arc<NodeChunk>>,
    len: usize,
}

/// A fresh chunk of placeholders.
fn new_chunk() -> Arc<NodeChunk> {
    Arc::new([Node::PLACEHOLDER; NODE_CHUNK])
}

impl Nodes {
    /// A table of `len` slots made of `chunks` (as a loader fills them in
    /// place); `None` unless there are exactly `len.div_ceil(NODE_CHUNK)`
    /// chunks. The last chunk's slots past `len` are reset to
    /// [`Node::PLACEHOLDER`].
    pub fn from_chunks(mut chunks: Vec<Arc<NodeChunk>>, len: usize) -> Option<Nodes> {
        if chunks.len() != len.div_ceil(NODE_CHUNK) {
            return None;
        }
        let used = len & MASK;
        if used != 0 {
            if let Some(last) = chunks.last_mut() {
                Arc::make_mut(last)[used..].fill(Node::PLACEHOLDER);
            }
        }
        Some(Nodes { chunks, len })
    }

    /// Number of slots.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no slots.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The node in slot `i`; `None` past the end.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&Node> {
        if i >= self.len {
            return None;
        }
        self.chunks.get(i >> NODE_CHUNK_SHIFT).map(|c| &c[i & MASK])
    }

    /// The node in slot 0.
    pub fn first(&self) -> Option<&Node> {
        self.get(0)
    }

    /// Every node, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = &Node> + '_ {
        self.slices().flatten()
    }

    /// The nodes chunk by chunk, in slot order: each chunk's slots below
    /// [`len`](Self::len).
    pub fn slices(&self) -> impl Iterator<Item = &[Node]> + '_ {
        let len = self.len;
        self.chunks.iter().enumerate().map(move |(k, c)| {
            let n = (len - k * NODE_CHUNK).min(NODE_CHUNK);
            &c[..n]
        })
    }

    /// Appends a node as the next slot (copying the last chunk first if a
    /// clone shares it).
    pub fn push(&mut self, node: Node) {
        if self.len == self.chunks.len() * NODE_CHUNK {
            self.chunks.push(new_chunk());
        }
        let i = self.len;
        Arc::make_mut(&mut self.chunks[i >> NODE_CHUNK_SHIFT])[i & MASK] = node;
        self.len += 1;
    }

    /// The table cut into at most `parts` ranges of whole chunks, each
    /// borrowed mutably (so that threads can write each its own); a chunk
    /// shared with a clone is copied first. Always at least one range (an
    /// empty one for an empty table).
    pub fn ranges_mut(&mut self, parts: usize) -> Vec<NodeRange<'_>> {
        let per = self.chunks.len().div_ceil(parts.max(1)).max(1);
        let len = self.len;
        let mut out: Vec<NodeRange<'_>> = self
            .chunks
            .chunks_mut(per)
            .enumerate()
            .map(|(k, group)| {
                let base = k * per * NODE_CHUNK;
                NodeRange {
                    base,
                    len: (len - base).min(group.len() * NODE_CHUNK),
                    chunks: group.iter_mut().map(Arc::make_mut).collect(),
                }
            })
            .collect();
        if out.is_empty() {
            out.push(NodeRange {
                base: 0,
                len: 0,
                chunks: Vec::new(),
            });
        }
        out
    }

    /// Number of chunks.
    #[cfg(test)]
    pub(crate) fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// How many chunks this table and `other` share (the same memory, not
    /// equal contents), position by position.
    #[cfg(test)]
    pub(crate) fn shared_chunks(&self, other: &Nodes) -> usize {
        self.chunks
            .iter()
            .zip(&other.chunks)
            .filter(|(a, b)| Arc::ptr_eq(a, b))
            .count()
    }

    /// Bytes of heap this table references, shared chunks included.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.chunks.len() * (size_of::<NodeChunk>() + ARC_HEADER)
            + self.chunks.capacity() * size_of::<Arc<NodeChunk>>()
    }

    /// Bytes of heap only this table references (what dropping it frees):
    /// chunks no clone shares, and the chunk list.
    pub(crate) fn unique_heap_bytes(&self) -> usize {
        self.chunks
            .iter()
            .filter(|c| Arc::strong_count(c) == 1)
            .count()
            * (size_of::<NodeChunk>() + ARC_HEADER)
            + self.chunks.capacity() * size_of::<Arc<NodeChunk>>()
    }
}

impl From<Vec<Node>> for Nodes {
    /// The table holding `v`'s nodes, copied chunk by chunk from the end,
    /// the vector shrunk as it goes so that the two together stay within
    /// about an eighth more than the nodes (a path that decodes into one
    /// vector pays this one copy; the indexed loader fills chunks in
    /// place).
    fn from(mut v: Vec<Node>) -> Nodes {
        let len = v.len();
        let mut chunks = Vec::with_capacity(len.div_ceil(NODE_CHUNK));
        let step = (len / 8).max(64 * NODE_CHUNK);
        while !v.is_empty() {
            let start = (v.len() - 1) & !MASK;
            let mut c = new_chunk();
            Arc::make_mut(&mut c)[..v.len() - start].copy_from_slice(&v[start..]);
            chunks.push(c);
            v.truncate(start);
            if v.capacity() - v.len() >= step {
                v.shrink_to_fit();
            }
        }
        chunks.reverse();
        Nodes { chunks, len }
    }
}

impl Index<usize> for Nodes {
    type Output = Node;

    /// Slot `i`. Panics past the last chunk; a slot past
    /// [`len`](Nodes::len) in the last chunk reads as a placeholder (a
    /// free slot).
    #[inline]
    fn index(&self, i: usize) -> &Node {
        debug_assert!(i < self.len, "slot {i} of {}", self.len);
        &self.chunks[i >> NODE_CHUNK_SHIFT][i & MASK]
    }
}

impl IndexMut<usize> for Nodes {
    /// Slot `i`, its chunk copied first if a clone shares it. Panics past
    /// the last chunk.
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut Node {
        debug_assert!(i < self.len, "slot {i} of {}", self.len);
        &mut Arc::make_mut(&mut self.chunks[i >> NODE_CHUNK_SHIFT])[i & MASK]
    }
}

/// Consecutive slots `base..base + len` of a [`Nodes`] table, borrowed
/// mutably as whole chunks (see [`Nodes::ranges_mut`]): writes through it
/// check no reference count.
#[derive(Debug)]
pub struct NodeRange<'a> {
    /// First slot, a multiple of [`NODE_CHUNK`].
    base: usize,
    len: usize,
    chunks: Vec<&'a mut NodeChunk>,
}

impl<'a> NodeRange<'a> {
    /// The first slot of the range.
    pub fn base(&self) -> usize {
        self.base
    }

    /// Number of slots in the range.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the range holds no slot.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The node in `slot` (a slot of the whole table); `None` unless the
    /// range holds it.
    #[inline]
    pub fn get_mut(&mut self, slot: usize) -> Option<&mut Node> {
        let off = slot.checked_sub(self.base)?;
        if off >= self.len {
            return None;
        }
        self.chunks
            .get_mut(off >> NODE_CHUNK_SHIFT)
            .map(|c| &mut c[off & MASK])
    }

    /// The range's slots chunk by chunk, each with its first slot (of the
    /// whole table).
    pub fn parts_mut(&mut self) -> impl Iterator<Item = (usize, &mut [Node])> + use<'_, 'a> {
        let (base, len) = (self.base, self.len);
        self.chunks.iter_mut().enumerate().map(move |(k, c)| {
            let off = k * NODE_CHUNK;
            let n = (len - off).min(NODE_CHUNK);
            (base + off, &mut c[..n])
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(mtime: u64) -> Node {
        Node {
            mtime,
            ..Node::PLACEHOLDER
        }
    }

    #[test]
    fn slots_cross_chunks_and_vectors_convert() {
        for len in [
            0,
            1,
            NODE_CHUNK - 1,
            NODE_CHUNK,
            NODE_CHUNK + 1,
            3 * NODE_CHUNK + 7,
        ] {
            let v: Vec<Node> = (0..len as u64).map(node).collect();
            let from = Nodes::from(v.clone());
            let mut pushed = Nodes::default();
            for &n in &v {
                pushed.push(n);
            }
            for t in [&from, &pushed] {
                assert_eq!(t.len(), len);
                assert_eq!(t.chunk_count(), len.div_ceil(NODE_CHUNK));
                assert!(t.iter().copied().eq(v.iter().copied()), "{len}");
                for (i, n) in v.iter().enumerate() {
                    assert_eq!(t[i], *n);
                    assert_eq!(t.get(i), Some(n));
                }
                assert_eq!(t.get(len), None);
            }
            let mut ranged = from.clone();
            let mut seen = 0;
            for mut r in ranged.ranges_mut(3) {
                assert_eq!(r.base(), seen);
                for (base, part) in r.parts_mut() {
                    for (j, n) in part.iter_mut().enumerate() {
                        assert_eq!(n.mtime, (base + j) as u64);
                        n.mtime += 1;
                    }
                }
                seen += r.len();
                assert_eq!(r.get_mut(seen), None);
            }
            assert_eq!(seen, len);
            assert!(ranged.iter().map(|n| n.mtime).eq(1..=len as u64));
            // The clone it was made from is untouched.
            assert!(from.iter().map(|n| n.mtime).eq(0..len as u64));
        }
    }

    #[test]
    fn a_write_copies_only_the_chunk_it_touches() {
        let mut a = Nodes::from((0..5 * NODE_CHUNK as u64).map(node).collect::<Vec<_>>());
        let b = a.clone();
        assert_eq!(a.shared_chunks(&b), 5);
        assert_eq!(a.unique_heap_bytes(), a.chunks.capacity() * 8);
        a[2 * NODE_CHUNK + 3].mtime = 99;
        assert_eq!(a.shared_chunks(&b), 4);
        assert!(!Arc::ptr_eq(&a.chunks[2], &b.chunks[2]));
        assert_eq!(
            (a[2 * NODE_CHUNK + 3].mtime, b[2 * NODE_CHUNK + 3].mtime),
            (99, 2 * NODE_CHUNK as u64 + 3)
        );
        a.push(node(7));
        assert_eq!(
            (a.len(), b.len(), a.shared_chunks(&b)),
            (5 * NODE_CHUNK + 1, 5 * NODE_CHUNK, 4)
        );
        assert!(Nodes::from_chunks(a.chunks.clone(), 5 * NODE_CHUNK).is_none());
        let mut c = Nodes::from_chunks(b.chunks.clone(), 4 * NODE_CHUNK + 1).unwrap();
        // Padding reset: the last chunk was copied to do it.
        assert_eq!((c.len(), c.shared_chunks(&b)), (4 * NODE_CHUNK + 1, 4));
        assert_eq!(c.chunks[4][1], Node::PLACEHOLDER);
        c.push(node(1));
        assert_eq!(c[4 * NODE_CHUNK + 1].mtime, 1);
    }
}
