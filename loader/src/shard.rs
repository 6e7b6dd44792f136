//! Sharded shared state for the parallel loader: a table split into
//! contiguous slot ranges, each behind its own `parking_lot` mutex. Workers
//! decode into local batches and take each shard lock once per batch, never
//! once per record; contention is counted so the bench can show it stays
//! small as threads grow. Slot numbers come from decoded records, so the
//! arithmetic on them is checked, or allowed where a bound is proven.
#![deny(clippy::arithmetic_side_effects)]

use parking_lot::{Mutex, MutexGuard};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Lock traffic of one load.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockStats {
    /// Lock acquisitions.
    pub acquisitions: u64,
    /// Acquisitions that found the lock held and had to wait.
    pub contended: u64,
    /// Total time spent waiting, in nanoseconds.
    pub wait_ns: u64,
}

impl LockStats {
    /// Adds the traffic of `o` to this one.
    pub fn add(&mut self, o: LockStats) {
        self.acquisitions = self.acquisitions.saturating_add(o.acquisitions);
        self.contended = self.contended.saturating_add(o.contended);
        self.wait_ns = self.wait_ns.saturating_add(o.wait_ns);
    }
}

/// A table split into contiguous shards, each behind its own mutex, with
/// the lock traffic counted.
pub struct Sharded<'a, T> {
    shards: Vec<Mutex<&'a mut [T]>>,
    shard_len: usize,
    len: usize,
    acquisitions: AtomicU64,
    contended: AtomicU64,
    wait_ns: AtomicU64,
}

impl<'a, T: Copy> Sharded<'a, T> {
    /// Splits `data` into about `shards` equal ranges.
    pub fn new(data: &'a mut [T], shards: usize) -> Self {
        let len = data.len();
        let shard_len = len.div_ceil(shards.max(1)).max(1);
        Sharded {
            shards: data.chunks_mut(shard_len).map(Mutex::new).collect(),
            shard_len,
            len,
            acquisitions: AtomicU64::new(0),
            contended: AtomicU64::new(0),
            wait_ns: AtomicU64::new(0),
        }
    }

    fn lock(&self, i: usize) -> MutexGuard<'_, &'a mut [T]> {
        self.acquisitions.fetch_add(1, Ordering::Relaxed);
        if let Some(g) = self.shards[i].try_lock() {
            return g;
        }
        self.contended.fetch_add(1, Ordering::Relaxed);
        let t = Instant::now();
        let g = self.shards[i].lock();
        self.wait_ns.fetch_add(
            u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        g
    }

    /// Copies `items` to positions `base..base + items.len()`, locking each
    /// shard the range touches once.
    // Bounds: base <= pos < end <= len (checked first) and shard_len >= 1,
    // so every quotient, product and difference below lies in 0..=len.
    // Used by the benches (`bench-internals`) alone.
    #[allow(clippy::arithmetic_side_effects)]
    #[cfg_attr(not(feature = "bench-internals"), allow(dead_code))]
    pub fn put(&self, base: usize, items: &[T]) -> Result<(), String> {
        let end = base
            .checked_add(items.len())
            .filter(|&e| e <= self.len)
            .ok_or_else(|| {
                format!(
                    "slots {base}+{} outside the table of {}",
                    items.len(),
                    self.len
                )
            })?;
        let mut pos = base;
        while pos < end {
            let shard = pos / self.shard_len;
            let shard_end = ((shard + 1) * self.shard_len).min(end);
            let mut g = self.lock(shard);
            let off = pos - shard * self.shard_len;
            g[off..off + (shard_end - pos)].copy_from_slice(&items[pos - base..shard_end - base]);
            pos = shard_end;
        }
        Ok(())
    }

    /// Applies `f(&mut table[slot], value)` to every `(slot, value)`,
    /// grouping by shard first so that each shard is locked once.
    // Bounds: every slot is below len (checked first) and shard_len >= 1;
    // a slot in shard k is at least k * shard_len, so `s - base` cannot
    // underflow. Unchecked, as this runs once per directory child.
    #[allow(clippy::arithmetic_side_effects)]
    pub fn apply<U: Copy>(
        &self,
        items: impl Iterator<Item = (u32, U)>,
        f: impl Fn(&mut T, u32, U) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut items: Vec<(u32, U)> = items.collect();
        if let Some(&(s, _)) = items.iter().find(|&&(s, _)| s as usize >= self.len) {
            return Err(format!("slot {s} outside the table of {}", self.len));
        }
        // Group by shard (children of one directory are mostly in slot
        // order already, so this sort is cheap), then lock each shard once.
        let shard_of = |s: u32| s as usize / self.shard_len;
        items.sort_unstable_by_key(|&(s, _)| shard_of(s));
        for run in items.chunk_by(|a, b| shard_of(a.0) == shard_of(b.0)) {
            let shard = shard_of(run[0].0);
            let mut g = self.lock(shard);
            let base = shard * self.shard_len;
            for &(s, u) in run {
                f(&mut g[s as usize - base], s, u)?;
            }
        }
        Ok(())
    }

    /// The lock traffic so far.
    pub fn stats(&self) -> LockStats {
        LockStats {
            acquisitions: self.acquisitions.load(Ordering::Relaxed),
            contended: self.contended.load(Ordering::Relaxed),
            wait_ns: self.wait_ns.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_and_apply_cross_shard_borders() {
        let mut data = vec![0u32; 100];
        {
            let t = Sharded::new(&mut data, 7);
            t.put(10, &[1; 40]).unwrap();
            assert!(t.put(90, &[1; 11]).is_err());
            t.apply([(99u32, 5u32), (0, 6), (50, 7)].into_iter(), |x, _, v| {
                *x = v;
                Ok(())
            })
            .unwrap();
            let st = t.stats();
            assert_eq!(st.contended, 0);
            assert!(st.acquisitions >= 3 + 3);
        }
        assert_eq!(&data[10..50], &[1; 40][..]);
        assert_eq!((data[0], data[50], data[99], data[9]), (6, 7, 5, 0));
    }
}
