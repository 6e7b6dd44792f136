//! Maps inode ids to slots. Ids are allocated in increasing order and slots
//! follow id order, so the map is a short list of runs of consecutive ids:
//! one run for a freshly generated namespace, a few for one with gaps.

use crate::consts::Slot;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    first_id: u64,
    first_slot: Slot,
    len: u32,
}

/// The id <-> slot map of a namespace: runs of consecutive ids, each
/// starting at a slot. Holds at most `u32::MAX` slots.
#[derive(Clone, Debug, Default)]
pub struct IdIndex {
    runs: Vec<Run>,
    slots: u32,
}

impl IdIndex {
    /// Largest id ever given a slot.
    pub fn last_id(&self) -> Option<u64> {
        // A run's ids all exist, so its last one cannot overflow (a run
        // holds at least one id).
        self.runs.last().map(|r| {
            r.first_id
                .saturating_add(u64::from(r.len).saturating_sub(1))
        })
    }

    /// Gives the next slot to `id`, which must exceed every id given so far.
    pub fn push(&mut self, id: u64) -> Option<Slot> {
        if self.last_id().is_some_and(|l| id <= l) || self.slots == u32::MAX {
            return None;
        }
        let slot = self.slots;
        match self.runs.last_mut() {
            Some(r) if r.first_id.checked_add(u64::from(r.len)) == Some(id) => r.len += 1,
            _ => self.runs.push(Run {
                first_id: id,
                first_slot: slot,
                len: 1,
            }),
        }
        self.slots += 1;
        Some(slot)
    }

    /// The slot given to `id`; `None` if it was never given one.
    // `off < r.len`, a u32, so the cast keeps every bit.
    #[allow(clippy::cast_possible_truncation)]
    pub fn slot(&self, id: u64) -> Option<Slot> {
        let i = self.runs.partition_point(|r| r.first_id <= id);
        let r = self.runs.get(i.checked_sub(1)?)?;
        let off = id - r.first_id;
        (off < r.len as u64).then(|| r.first_slot + off as u32)
    }

    /// The id in `slot`. Panics if `slot` was never given out.
    pub fn id(&self, slot: Slot) -> u64 {
        let i = self.runs.partition_point(|r| r.first_slot <= slot);
        let r = &self.runs[i - 1];
        r.first_id + (slot - r.first_slot) as u64
    }

    /// Appends another index whose slots follow this one's; `None` (and no
    /// change) unless its ids all exceed this one's.
    pub fn extend(&mut self, other: &IdIndex) -> Option<()> {
        let first = other.runs.first()?;
        if self.last_id().is_some_and(|l| first.first_id <= l)
            || self.slots.checked_add(other.slots).is_none()
        {
            return None;
        }
        for r in &other.runs {
            let run = Run {
                first_slot: self.slots,
                ..*r
            };
            match self.runs.last_mut() {
                Some(l) if l.first_id.checked_add(u64::from(l.len)) == Some(r.first_id) => {
                    l.len += r.len
                }
                _ => self.runs.push(run),
            }
            self.slots += r.len;
        }
        Some(())
    }

    /// Bytes of heap held, for memory accounting.
    pub fn heap_bytes(&self) -> usize {
        self.runs.capacity() * size_of::<Run>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_map_both_ways() {
        let mut ix = IdIndex::default();
        for id in [5u64, 6, 7, 10, 11, 20] {
            ix.push(id).unwrap();
        }
        assert_eq!(ix.push(20), None);
        assert_eq!(ix.runs.len(), 3);
        for (slot, id) in (0u32..).zip([5u64, 6, 7, 10, 11, 20]) {
            assert_eq!(ix.slot(id), Some(slot));
            assert_eq!(ix.id(slot), id);
        }
        for missing in [0u64, 4, 8, 9, 12, 19, 21, u64::MAX] {
            assert_eq!(ix.slot(missing), None);
        }
    }

    /// Found by the image fuzz target: an inode id of u64::MAX overflowed
    /// the run arithmetic (a panic in debug builds, a wrap in release).
    #[test]
    fn ids_up_to_u64_max() {
        let mut ix = IdIndex::default();
        ix.push(u64::MAX - 1).unwrap();
        ix.push(u64::MAX).unwrap();
        assert_eq!(ix.last_id(), Some(u64::MAX));
        assert_eq!(ix.push(u64::MAX), None);
        assert_eq!(ix.slot(u64::MAX), Some(1));
        assert_eq!(ix.id(1), u64::MAX);
        let mut single = IdIndex::default();
        single.push(u64::MAX).unwrap();
        assert_eq!(single.last_id(), Some(u64::MAX));
        let mut joined = IdIndex::default();
        joined.push(7).unwrap();
        joined.extend(&single).unwrap();
        assert_eq!(joined.last_id(), Some(u64::MAX));
        assert_eq!(joined.slot(u64::MAX), Some(1));
    }
}
