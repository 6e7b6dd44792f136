//! The maps keyed by slot (a directory's edited child list, an inode's
//! extras), cut into [`SHARDS`] shards by the slot's low bits, each shard
//! behind an [`Arc`]: a clone of a map (a snapshot of the namespace) costs
//! one reference count per shard, and the first write to a shard after a
//! clone copies that shard alone ([`Arc::make_mut`]; its values are cloned,
//! and an edited child list's chunks are themselves shared).

use crate::consts::Slot;
use triomphe::Arc;

/// A map keyed by slot: foldhash, not the default SipHash (these keys
/// come from the namespace itself, not from an adversary choosing them to
/// collide, and journal replay hashes a slot several times per op).
pub(crate) type SlotMap<V> = foldhash::HashMap<Slot, V>;

/// Shards per map.
const SHARDS: usize = 256;

/// A map from slot to `V` in [`SHARDS`] shards shared copy-on-write
/// between clones.
#[derive(Clone, Debug)]
pub(crate) struct SlotShards<V> {
    shards: Vec<Arc<SlotMap<V>>>,
}

impl<V> Default for SlotShards<V> {
    fn default() -> Self {
        SlotShards {
            shards: (0..SHARDS).map(|_| Arc::default()).collect(),
        }
    }
}

/// The shard that holds `slot`.
#[inline]
fn shard(slot: Slot) -> usize {
    slot as usize & (SHARDS - 1)
}

impl<V: Clone> SlotShards<V> {
    /// The value of `slot`.
    #[inline]
    pub(crate) fn get(&self, slot: Slot) -> Option<&V> {
        self.shards[shard(slot)].get(&slot)
    }

    /// The value of `slot`, to change; its shard is copied first if a clone
    /// shares it (only when the slot has a value).
    pub(crate) fn get_mut(&mut self, slot: Slot) -> Option<&mut V> {
        let s = &mut self.shards[shard(slot)];
        if !s.contains_key(&slot) {
            return None;
        }
        Arc::make_mut(s).get_mut(&slot)
    }

    /// The value of `slot`, a default one added if there is none.
    pub(crate) fn get_or_default(&mut self, slot: Slot) -> &mut V
    where
        V: Default,
    {
        Arc::make_mut(&mut self.shards[shard(slot)])
            .entry(slot)
            .or_default()
    }

    /// Sets the value of `slot`, returning the one it replaces.
    pub(crate) fn insert(&mut self, slot: Slot, v: V) -> Option<V> {
        Arc::make_mut(&mut self.shards[shard(slot)]).insert(slot, v)
    }

    /// Inserts the values of `batches`, each a first slot and values keyed
    /// by their offset from it, with each shard sized first for what it
    /// gets (one allocation a shard, no rehash as it grows): for the many
    /// values of a load, gathered whole.
    pub(crate) fn extend_batches(&mut self, batches: Vec<(Slot, Vec<(u32, V)>)>) {
        if batches.is_empty() {
            return;
        }
        let mut counts = [0usize; SHARDS];
        for (base, list) in &batches {
            for (i, _) in list {
                counts[shard(base + i)] += 1;
            }
        }
        let mut shards: Vec<&mut SlotMap<V>> = self.shards.iter_mut().map(Arc::make_mut).collect();
        for (s, &n) in shards.iter_mut().zip(&counts) {
            s.reserve(n);
        }
        for (base, list) in batches {
            for (i, v) in list {
                shards[shard(base + i)].insert(base + i, v);
            }
        }
    }

    /// Removes the value of `slot` (its shard left alone when it has none).
    pub(crate) fn remove(&mut self, slot: Slot) -> Option<V> {
        let s = &mut self.shards[shard(slot)];
        if !s.contains_key(&slot) {
            return None;
        }
        Arc::make_mut(s).remove(&slot)
    }

    /// Number of values.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.len()).sum()
    }

    /// Every value, in no particular order.
    #[cfg(test)]
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.shards.iter().flat_map(|s| s.values())
    }

    /// Bytes of heap held: each shard's table (`entry` bytes per entry and
    /// the spare room) plus `value_bytes` of each value; with `unique`,
    /// only the shards no clone shares.
    pub(crate) fn heap_bytes(&self, unique: bool, value_bytes: impl Fn(&V) -> usize) -> usize {
        let entry = size_of::<(Slot, V)>() + 1;
        self.shards
            .iter()
            .filter(|s| !unique || Arc::strong_count(s) == 1)
            .map(|s| s.capacity() * entry + s.values().map(&value_bytes).sum::<usize>() + 64)
            .sum::<usize>()
            + self.shards.capacity() * size_of::<Arc<SlotMap<V>>>()
    }

    /// How many shards this map and `other` share (the same memory).
    #[cfg(test)]
    pub(crate) fn shared_shards(&self, other: &SlotShards<V>) -> usize {
        self.shards
            .iter()
            .zip(&other.shards)
            .filter(|(a, b)| Arc::ptr_eq(a, b))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_copies_one_shard_and_a_miss_none() {
        let mut a: SlotShards<u64> = SlotShards::default();
        // Two batches, the second from slot 4,000.
        a.extend_batches(vec![
            (0, (0..4_000u32).map(|s| (s, u64::from(s))).collect()),
            (
                4_000,
                (0..6_000u32).map(|s| (s, u64::from(s + 4_000))).collect(),
            ),
        ]);
        assert_eq!(a.len(), 10_000);
        assert_eq!(a.get(9_999), Some(&9_999));
        let b = a.clone();
        assert_eq!(a.shared_shards(&b), SHARDS);
        // Misses copy nothing.
        assert_eq!(a.get_mut(20_000), None);
        assert_eq!(a.remove(20_000), None);
        assert_eq!(a.shared_shards(&b), SHARDS);
        *a.get_mut(5).unwrap() = 50;
        a.remove(5 + 256);
        assert_eq!(a.shared_shards(&b), SHARDS - 1);
        a.insert(6, 60);
        *a.get_or_default(30_000 + 7) += 1;
        assert_eq!(a.shared_shards(&b), SHARDS - 3);
        assert_eq!((a.get(5), b.get(5)), (Some(&50), Some(&5)));
        assert_eq!((a.get(261), b.get(261)), (None, Some(&261)));
        assert_eq!((a.len(), b.len()), (10_000, 10_000));
        assert_eq!(b.values().sum::<u64>(), (0..10_000u64).sum());
    }
}
