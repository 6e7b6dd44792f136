//! The node table, filled in place by the INODE workers: each piece owns
//! the slot range its declared record count gives it, behind its own lock
//! (taken once per piece), and its decoder writes each node straight into
//! its slot, so every slot is written exactly once, by one thread, with no
//! placeholder pass over the memory beforehand and no copy afterwards.
#![allow(unsafe_code)]

use nsimage_namespace::{Node, NodeSink};
use parking_lot::Mutex;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The node table of a load: one slot per inode, each written once.
pub struct NodeTable {
    slots: Box<[MaybeUninit<Node>]>,
    /// Slots written so far, by ranges that were each written whole.
    filled: AtomicUsize,
}

/// The slot range of one piece, written once by the worker that decodes it.
pub struct Range<'a> {
    slots: Mutex<Option<&'a mut [MaybeUninit<Node>]>>,
    filled: &'a AtomicUsize,
}

impl NodeTable {
    /// An unfilled table of `len` slots; aborts the process if the memory
    /// cannot be had. For a `len` counted from nodes already in memory;
    /// one declared by a file goes through [`try_new`](Self::try_new).
    pub fn new(len: usize) -> Self {
        NodeTable {
            slots: Box::new_uninit_slice(len),
            filled: AtomicUsize::new(0),
        }
    }

    /// An unfilled table of `len` slots, or `None` if their memory cannot
    /// be had (more than the address space, or refused by the system): a
    /// count declared by a file may ask for far more than its bytes hold
    /// before they are decompressed, and is refused here rather than
    /// aborting the process.
    pub fn try_new(len: usize) -> Option<Self> {
        let mut slots: Vec<MaybeUninit<Node>> = Vec::new();
        slots.try_reserve_exact(len).ok()?;
        // Safety: the capacity is at least `len` (reserved just above) and
        // a `MaybeUninit` slot needs no initialisation.
        unsafe { slots.set_len(len) };
        Some(NodeTable {
            slots: slots.into_boxed_slice(),
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
        if total != Some(self.slots.len()) {
            return None;
        }
        *self.filled.get_mut() = 0;
        let mut rest: &mut [MaybeUninit<Node>] = &mut self.slots;
        let filled = &self.filled;
        let mut out = Vec::with_capacity(counts.len());
        for &c in counts {
            let (head, tail) = rest.split_at_mut(c);
            out.push(Range {
                slots: Mutex::new(Some(head)),
                filled,
            });
            rest = tail;
        }
        Some(out)
    }

    /// The filled table; `None` unless every slot has been written.
    pub fn finish(self) -> Option<Vec<Node>> {
        if self.filled.load(Ordering::Acquire) != self.slots.len() {
            return None;
        }
        // Safety: ranges are disjoint and each can be written only once
        // (`writer` takes its slice); a writer writes its slots in order and
        // `commit` adds its length to `filled` only once every slot is
        // written. `filled` equal to the table's length therefore means
        // every slot was written. The Acquire load pairs with the Release
        // add in `fill`, so the writes of other threads are visible.
        Some(unsafe { self.slots.assume_init() }.into_vec())
    }
}

impl<'a> Range<'a> {
    /// Writes `nodes` into the range; `false` (and nothing written) unless
    /// they fit it exactly and the range was not written before.
    pub fn fill(&self, nodes: &[Node]) -> bool {
        let Some(mut w) = self.writer() else {
            return false;
        };
        if w.slots.len() != nodes.len() {
            *self.slots.lock() = Some(w.slots);
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
        self.slots
            .lock()
            .take()
            .map(|slots| RangeWriter { slots, len: 0 })
    }

    /// Counts the writer's slots as filled if it wrote every one; `false`
    /// otherwise (the range then stays unfilled for good, and the table
    /// cannot finish).
    pub fn commit(&self, w: RangeWriter<'a>) -> bool {
        if w.len != w.slots.len() {
            return false;
        }
        self.filled.fetch_add(w.len, Ordering::Release);
        true
    }
}

/// Writes one range's slots in order (see [`Range::writer`]).
pub struct RangeWriter<'a> {
    slots: &'a mut [MaybeUninit<Node>],
    len: usize,
}

impl NodeSink for RangeWriter<'_> {
    #[inline]
    fn push_node(&mut self, node: Node) -> bool {
        match self.slots.get_mut(self.len) {
            Some(slot) => {
                slot.write(node);
                self.len += 1;
                true
            }
            None => false,
        }
    }

    fn node_count(&self) -> usize {
        self.len
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
}
