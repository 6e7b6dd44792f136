//! The node table, filled in place by the INODE workers: each piece owns
//! the slot range its declared record count gives it, behind its own lock
//! (taken once per piece), and its decoder writes each node straight into
//! its slot, so every slot is written exactly once, by one thread, with no
//! placeholder pass over the memory beforehand and no copy afterwards.
//!
//! The table is the namespace's chunks ([`NODE_CHUNK`] nodes each, as
//! [`Nodes`] holds them), allocated by the first writer that reaches each
//! one, so that the memory is had in parallel and only for slots written;
//! a range's writer crosses from chunk to chunk, and two ranges may share
//! a chunk, each writing its own slots of it. [`NodeTable::finish`] hands
//! the chunks over as they are.
#![allow(unsafe_code)]

use nsimage_namespace::{Node, NodeChunk, NodeSink, Nodes, NODE_CHUNK, NODE_CHUNK_SHIFT};
use parking_lot::Mutex;
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use triomphe::Arc;

/// A chunk being filled: its nodes are written one by one through raw
/// pointers before it becomes a `NodeChunk`.
type Unfilled = MaybeUninit<NodeChunk>;

/// The node table of a load: one slot per inode, each written once.
pub struct NodeTable {
    len: usize,
    /// `len.div_ceil(NODE_CHUNK)` chunks, each null until a writer
    /// allocates it; a non-null one is an `Arc<Unfilled>` turned into a
    /// raw pointer (`Arc::into_raw`), this table's only reference to it.
    chunks: Box<[AtomicPtr<Unfilled>]>,
    /// Slots written so far, by ranges that were each written whole.
    filled: AtomicUsize,
}

/// The slot range of one piece, written once by the worker that decodes it.
pub struct Range<'a> {
    /// The range's slots, `start..end`, until a writer takes them.
    slots: Mutex<Option<(usize, usize)>>,
    chunks: &'a [AtomicPtr<Unfilled>],
    filled: &'a AtomicUsize,
}

impl NodeTable {
    /// An unfilled table of `len` slots; aborts the process if the memory
    /// cannot be had. For a `len` counted from nodes already in memory;
    /// one declared by a file goes through [`try_new`](Self::try_new).
    pub fn new(len: usize) -> Self {
        NodeTable {
            len,
            chunks: (0..len.div_ceil(NODE_CHUNK))
                .map(|_| AtomicPtr::new(ptr::null_mut()))
                .collect(),
            filled: AtomicUsize::new(0),
        }
    }

    /// An unfilled table of `len` slots, or `None` if their memory cannot
    /// be had (more than the address space, or refused by the system): a
    /// count declared by a file may ask for far more than its bytes hold
    /// before they are decompressed, and is refused here rather than
    /// aborting the process. The whole table is asked of the system once
    /// (and given back at once), as one allocation of its size would be;
    /// the chunks are then allocated as writers reach them.
    pub fn try_new(len: usize) -> Option<Self> {
        let mut probe: Vec<Node> = Vec::new();
        probe.try_reserve_exact(len).ok()?;
        drop(probe);
        let mut chunks: Vec<AtomicPtr<Unfilled>> = Vec::new();
        chunks.try_reserve_exact(len.div_ceil(NODE_CHUNK)).ok()?;
        chunks.resize_with(len.div_ceil(NODE_CHUNK), || AtomicPtr::new(ptr::null_mut()));
        Some(NodeTable {
            len,
            chunks: chunks.into_boxed_slice(),
            filled: AtomicUsize::new(0),
        })
    }

    /// The bytes of memory a table of `len` slots takes (saturating).
    pub fn bytes_for(len: usize) -> usize {
        len.saturating_mul(std::mem::size_of::<Node>())
    }

    /// Splits the table into consecutive ranges, `counts` long each; `None`
    /// unless the counts add up to the table's length. Only writes made
    /// through the ranges of the latest split count towards
    /// [`finish`](Self::finish).
    pub fn ranges(&mut self, counts: &[usize]) -> Option<Vec<Range<'_>>> {
        let total = counts.iter().try_fold(0usize, |a, &c| a.checked_add(c));
        if total != Some(self.len) {
            return None;
        }
        *self.filled.get_mut() = 0;
        let mut start = 0usize;
        let mut out = Vec::with_capacity(counts.len());
        for &c in counts {
            // The counts add up to `len` (checked above): no overflow.
            let end = start + c;
            out.push(Range {
                slots: Mutex::new(Some((start, end))),
                chunks: &self.chunks,
                filled: &self.filled,
            });
            start = end;
        }
        Some(out)
    }

    /// The filled table; `None` unless every slot has been written.
    pub fn finish(mut self) -> Option<Nodes> {
        if self.filled.load(Ordering::Acquire) != self.len {
            return None;
        }
        let used = self.len % NODE_CHUNK;
        let mut chunks: Vec<Arc<NodeChunk>> = Vec::with_capacity(self.chunks.len());
        let last = self.chunks.len().checked_sub(1);
        for (k, c) in self.chunks.iter_mut().enumerate() {
            let p = std::mem::replace(c.get_mut(), ptr::null_mut());
            if p.is_null() {
                // Not reached (every chunk holds a slot, and every slot
                // was written): the chunks taken so far are dropped whole,
                // the rest by `drop`.
                return None;
            }
            if Some(k) == last && used != 0 {
                // Safety: `p` came from `Arc::into_raw` of a chunk only
                // this table holds; its slots from `used` on belong to no
                // range (they are past the table's length) and are written
                // here, through the pointer, by this thread alone, which
                // owns the table.
                unsafe {
                    let first = p.cast::<Node>();
                    for i in used..NODE_CHUNK {
                        first.add(i).write(Node::PLACEHOLDER);
                    }
                }
            }
            // Safety: `p` came from `Arc::into_raw` of an `Arc<Unfilled>`
            // (taken out of the table just above, so that it is given back
            // once). Every slot of the chunk has been written: those below
            // the table's length by the ranges (`filled` equal to the
            // length means each range wrote each of its slots; ranges are
            // disjoint and cover the table; the Acquire load pairs with the
            // Release add in `commit`, so the writes of other threads are
            // visible), the rest just above. So the chunk is initialised.
            chunks.push(unsafe { Arc::from_raw(p).assume_init() });
        }
        Nodes::from_chunks(chunks, self.len)
    }
}

impl Drop for NodeTable {
    fn drop(&mut self) {
        for c in self.chunks.iter_mut() {
            let p = std::mem::replace(c.get_mut(), ptr::null_mut());
            if !p.is_null() {
                // Safety: a non-null pointer came from `Arc::into_raw` of
                // an `Arc<Unfilled>` that only this table holds; it is
                // dropped once (nulled here), as `MaybeUninit`, so no node
                // is read.
                drop(unsafe { Arc::from_raw(p) });
            }
        }
    }
}

/// The first node of chunk `k` of `chunks`, allocating the chunk if no
/// writer has yet: the first to publish its allocation wins, a loser frees
/// its own.
fn chunk_start(chunks: &[AtomicPtr<Unfilled>], k: usize) -> Option<*mut Node> {
    let slot = chunks.get(k)?;
    let p = slot.load(Ordering::Acquire);
    if !p.is_null() {
        return Some(p.cast());
    }
    let mine = Arc::into_raw(Arc::<Unfilled>::new_uninit()).cast_mut();
    match slot.compare_exchange(ptr::null_mut(), mine, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Some(mine.cast()),
        Err(theirs) => {
            // Safety: `mine` came from `Arc::into_raw` just above and was
            // never published: this is its only reference.
            drop(unsafe { Arc::from_raw(mine) });
            Some(theirs.cast())
        }
    }
}

impl<'a> Range<'a> {
    /// Writes `nodes` into the range; `false` (and nothing written) unless
    /// they fit it exactly and the range was not written before.
    pub fn fill(&self, nodes: &[Node]) -> bool {
        let Some(mut w) = self.writer() else {
            return false;
        };
        if w.end - w.start != nodes.len() {
            *self.slots.lock() = Some((w.start, w.end));
            return false;
        }
        for &n in nodes {
            w.push_node(n);
        }
        self.commit(w)
    }

    /// The range's slots to write in place, one node after the other; `None`
    /// if they were taken before. Only a writer given back full to
    /// [`commit`](Self::commit) counts its slots as filled.
    pub fn writer(&self) -> Option<RangeWriter<'a>> {
        self.slots.lock().take().map(|(start, end)| RangeWriter {
            chunks: self.chunks,
            start,
            next: start,
            end,
            chunk: ptr::null_mut(),
        })
    }

    /// Counts the writer's slots as filled if it wrote every one; `false`
    /// otherwise (the range then stays unfilled for good, and the table
    /// cannot finish).
    pub fn commit(&self, w: RangeWriter<'a>) -> bool {
        if w.next != w.end {
            return false;
        }
        self.filled.fetch_add(w.end - w.start, Ordering::Release);
        true
    }
}

/// Writes one range's slots in order (see [`Range::writer`]), chunk after
/// chunk.
pub struct RangeWriter<'a> {
    chunks: &'a [AtomicPtr<Unfilled>],
    start: usize,
    /// The next slot to write; `start..next` are written.
    next: usize,
    end: usize,
    /// The first node of the chunk `next` falls in; null until the first
    /// write, and when `next` starts a chunk not reached yet.
    chunk: *mut Node,
}

// Safety: a writer holds its range's slots alone (taken from the range's
// lock), whichever thread it is on; the chunk pointer it keeps points into
// memory the table owns for as long as the writer's borrow of it lasts.
unsafe impl Send for RangeWriter<'_> {}

impl NodeSink for RangeWriter<'_> {
    #[inline]
    fn push_node(&mut self, node: Node) -> bool {
        if self.next >= self.end {
            return false;
        }
        let off = self.next % NODE_CHUNK;
        if off == 0 || self.chunk.is_null() {
            match chunk_start(self.chunks, self.next >> NODE_CHUNK_SHIFT) {
                Some(c) => self.chunk = c,
                None => return false,
            }
        }
        // Safety: `self.chunk` is the first node of the chunk holding slot
        // `next` (set above when `next` entered it), a chunk of NODE_CHUNK
        // nodes the table owns and keeps until it finishes or drops, both
        // of which need the borrow this writer holds to end; `off` is below
        // NODE_CHUNK. Slot `next` is in this writer's range, which no other
        // range overlaps and which was taken from its lock once, so no
        // other thread writes it; no reference to the chunk's memory exists
        // while writers live (they write through raw pointers only).
        unsafe { self.chunk.add(off).write(node) };
        self.next += 1;
        true
    }

    fn node_count(&self) -> usize {
        self.next - self.start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_impossible_table_is_refused_not_aborted() {
        assert!(NodeTable::try_new(usize::MAX / 2).is_none());
        assert!(NodeTable::try_new(usize::MAX).is_none());
        let mut t = NodeTable::try_new(3).unwrap();
        assert!(t.ranges(&[3]).unwrap()[0].fill(&[Node::PLACEHOLDER; 3]));
        assert_eq!(t.finish().unwrap().len(), 3);
        assert_eq!(NodeTable::try_new(0).unwrap().finish().unwrap().len(), 0);
        // A count far past memory, asked chunk by chunk, would never fail
        // before the chunks are written: the probe refuses it at once.
        assert!(NodeTable::try_new(1 << 60).is_none());
    }

    #[test]
    fn only_a_fully_written_table_finishes() {
        let mut t = NodeTable::new(5);
        {
            let r = t.ranges(&[2, 3]).unwrap();
            assert!(!r[0].fill(&[Node::PLACEHOLDER; 3]));
            assert!(r[0].fill(&[Node::PLACEHOLDER; 2]));
            assert!(!r[0].fill(&[Node::PLACEHOLDER; 2]));
        }
        assert!(t.ranges(&[2, 2]).is_none());
        let t2 = NodeTable::new(5);
        assert!(t2.finish().is_none());
        {
            // A new split starts the count again.
            let r = t.ranges(&[2, 3]).unwrap();
            assert!(r[1].fill(&[Node::PLACEHOLDER; 3]));
        }
        let mut t = {
            assert!(t.finish().is_none());
            NodeTable::new(5)
        };
        {
            let r = t.ranges(&[2, 3]).unwrap();
            assert!(r[1].fill(&[Node::PLACEHOLDER; 3]));
            assert!(r[0].fill(&[Node::PLACEHOLDER; 2]));
        }
        assert_eq!(t.finish().unwrap().len(), 5);
    }

    #[test]
    fn a_writer_counts_only_when_it_wrote_every_slot() {
        let mut t = NodeTable::new(3);
        {
            let r = t.ranges(&[2, 1]).unwrap();
            let mut w = r[0].writer().unwrap();
            assert!(r[0].writer().is_none());
            assert!(w.push_node(Node::PLACEHOLDER));
            assert!(w.push_node(Node::PLACEHOLDER));
            assert!(!w.push_node(Node::PLACEHOLDER));
            assert_eq!(w.node_count(), 2);
            assert!(r[0].commit(w));
            // Half written: not counted, and the range cannot be taken again.
            assert!(!r[1].commit(r[1].writer().unwrap()));
            assert!(!r[1].fill(&[Node::PLACEHOLDER]));
        }
        assert!(t.finish().is_none());
    }

    /// Ranges that start and end anywhere in chunks, written from threads
    /// of their own: each slot holds what its range wrote, the chunks
    /// become the table's without a copy, and the last chunk's slots past
    /// the end read as placeholders.
    #[test]
    fn ranges_cross_and_share_chunks_from_threads() {
        let counts = [1, NODE_CHUNK - 1, 2 * NODE_CHUNK + 5, 3, 0, NODE_CHUNK];
        let total: usize = counts.iter().sum();
        let mut t = NodeTable::try_new(total).unwrap();
        {
            let ranges = t.ranges(&counts).unwrap();
            std::thread::scope(|s| {
                let mut first = 0;
                for (r, &c) in ranges.iter().zip(&counts) {
                    s.spawn(move || {
                        let mut w = r.writer().unwrap();
                        for i in first..first + c {
                            let mut n = Node::PLACEHOLDER;
                            n.parent = u32::try_from(i).unwrap();
                            assert!(w.push_node(n));
                        }
                        assert!(!w.push_node(Node::PLACEHOLDER));
                        assert_eq!(w.node_count(), c);
                        assert!(r.commit(w));
                    });
                    first += c;
                }
            });
        }
        let mut nodes = t.finish().unwrap();
        assert_eq!(nodes.len(), total);
        assert!(nodes
            .iter()
            .enumerate()
            .all(|(i, n)| n.parent as usize == i));
        // The padding of the last chunk is placeholders; the next push
        // goes there.
        nodes.push(Node::PLACEHOLDER);
        assert_eq!(nodes[total], Node::PLACEHOLDER);
    }

    /// A table dropped half written gives its chunks back (and reads none).
    #[test]
    fn a_half_written_table_drops() {
        let mut t = NodeTable::new(3 * NODE_CHUNK);
        {
            let r = t.ranges(&[3 * NODE_CHUNK]).unwrap();
            let mut w = r[0].writer().unwrap();
            for _ in 0..NODE_CHUNK + 10 {
                assert!(w.push_node(Node::PLACEHOLDER));
            }
            assert!(!r[0].commit(w));
        }
        assert!(t.finish().is_none());
    }
}
