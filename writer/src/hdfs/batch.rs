//! Parallel encoding of a pass over the inodes: slot ranges are encoded
//! by rayon tasks, a bounded window at a time, each into its own buffer
//! of varint-delimited records with their end offsets and weights (what
//! a record counts toward the next sub-section cut); the caller takes the
//! buffers in slot (= id) order.

use nsimage_namespace::{Inode, Namespace};
use rayon::prelude::*;
use std::io;

/// Slots per parallel task.
const BATCH_SLOTS: u32 = 16_384;

/// The records one task encoded.
#[derive(Default)]
pub(crate) struct Encoded {
    /// The records, each varint-delimited, one after another.
    pub(crate) bytes: Vec<u8>,
    /// The end offset of each record in `bytes`.
    pub(crate) ends: Vec<usize>,
    /// What each record counts toward a sub-section cut (1 per inode, the
    /// children of a directory entry).
    pub(crate) weights: Vec<u64>,
}

impl Encoded {
    /// Appends `m`, varint-delimited, with its weight.
    pub(crate) fn push(&mut self, m: &impl prost::Message, weight: u64) -> io::Result<()> {
        m.encode_length_delimited(&mut self.bytes)
            .map_err(|e| io::Error::other(format!("encoding a record: {e}")))?;
        self.ends.push(self.bytes.len());
        self.weights.push(weight);
        Ok(())
    }
}

/// Encodes the live inodes of slots `lo..hi` of each range, in parallel.
fn encode_window<F>(ns: &Namespace, ranges: &[(u32, u32)], encode: &F) -> Vec<io::Result<Encoded>>
where
    F: Fn(&Inode<'_>, &mut Encoded) -> io::Result<()> + Sync,
{
    ranges
        .par_iter()
        .map(|&(lo, hi)| {
            let mut e = Encoded::default();
            for s in lo..hi {
                if let Some(inode) = ns.at(s) {
                    encode(&inode, &mut e)?;
                }
            }
            Ok(e)
        })
        .collect()
}

/// Encodes every live inode of `ns` with `encode` (which may skip some),
/// in parallel, and hands the results to `consume` in id order, on the
/// calling thread, while the pool encodes the next window.
pub(crate) fn encode_in_order<F, G>(ns: &Namespace, encode: F, mut consume: G) -> io::Result<()>
where
    F: Fn(&Inode<'_>, &mut Encoded) -> io::Result<()> + Sync,
    G: FnMut(Encoded) -> io::Result<()>,
{
    let slots = ns.slot_count();
    let window = u32::try_from(4 * rayon::current_num_threads().max(1)).unwrap_or(64);
    let next_ranges = |start: u32| -> Vec<(u32, u32)> {
        (0..window)
            .map(|k| start.saturating_add(k.saturating_mul(BATCH_SLOTS)))
            .take_while(|&lo| lo < slots)
            .map(|lo| (lo, lo.saturating_add(BATCH_SLOTS).min(slots)))
            .collect()
    };
    let mut ranges = next_ranges(0);
    let mut pending = encode_window(ns, &ranges, &encode);
    while !pending.is_empty() {
        let start = ranges.last().map_or(slots, |r| r.1);
        ranges = next_ranges(start);
        let mut next = Vec::new();
        let mut consumed = Ok(());
        rayon::in_place_scope(|scope| {
            let (ranges, encode, next) = (&ranges, &encode, &mut next);
            scope.spawn(move |_| *next = encode_window(ns, ranges, encode));
            consumed = pending.into_iter().try_for_each(|e| consume(e?));
        });
        consumed?;
        pending = next;
    }
    Ok(())
}
