//! How a file's blocks are held: in the name arena, right after the
//! file's name in its record, each [`Block`] as three varints (id,
//! generation stamp, length), in file order; and [`Blocks`], the iterator
//! that reads them back.
//!
//! Varints, not the 24-byte struct: ids and stamps are large but lengths
//! of small last blocks are not, and a block then takes about 12 bytes
//! instead of 24 (at the generator's default shape, 27.4 bytes of blocks
//! per inode became 13.7). The node keeps the number of blocks; where
//! they start is where the name ends, and where they end is found by
//! reading them, so nothing else is stored. The arena's bytes are
//! the namespace's own (written by [`encode`] alone), so reading them back
//! cannot fail; a truncated range (which no code path makes) reads as
//! fewer blocks, never as a panic.

use crate::consts::Slot;
use crate::node::NameRef;
use crate::values::Block;
use std::fmt;

/// Files a namespace remembers the end of (see [`Appends`]).
const RECENT_APPENDS: usize = 8;

/// Where the records of the last few files a block was appended to end,
/// and their last block's id: the next append to one of them then writes
/// its block at once, where finding both means reading every block the
/// file has (a file written block by block would cost the square of its
/// blocks). An entry holds while the file's record is where it was and
/// has as many blocks: records are only ever appended to, so the bytes
/// are then the same.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Appends {
    recent: [Option<Append>; RECENT_APPENDS],
    next: usize,
}

#[derive(Clone, Copy, Debug)]
struct Append {
    slot: Slot,
    record: NameRef,
    count: u32,
    end: u32,
    last_id: u64,
}

impl Appends {
    /// Where the record of file `slot` at `record`, with `count` blocks,
    /// ends, and its last block's id, if remembered.
    pub(crate) fn find(&self, slot: Slot, record: NameRef, count: u32) -> Option<(u32, u64)> {
        self.recent
            .iter()
            .flatten()
            .find(|a| a.slot == slot && a.record == record && a.count == count)
            .map(|a| (a.end, a.last_id))
    }

    /// Remembers that file `slot`'s record at `record`, with `count`
    /// blocks, ends at `end`, its last block's id `last_id`.
    pub(crate) fn note(&mut self, slot: Slot, record: NameRef, count: u32, end: u32, last_id: u64) {
        let at = self
            .recent
            .iter()
            .position(|a| a.is_some_and(|a| a.slot == slot))
            .unwrap_or_else(|| {
                let k = self.next;
                self.next = (k + 1) % RECENT_APPENDS;
                k
            });
        self.recent[at] = Some(Append {
            slot,
            record,
            count,
            end,
            last_id,
        });
    }
}

/// What HDFS reserves below the first block id (2^30) less what it
/// reserves below the first generation stamp (1000): a block's stamp is
/// kept as its distance from `id - ID_STAMP_GAP`, which is small while
/// ids and stamps are drawn together (each new block takes the next of
/// both) and any value at all otherwise.
const ID_STAMP_GAP: u64 = (1 << 30) - 1000;

/// Zigzag: small distances of either sign as small numbers.
#[inline]
fn zig(v: u64) -> u64 {
    (v << 1) ^ (v.cast_signed() >> 63).cast_unsigned()
}

#[inline]
fn unzig(v: u64) -> u64 {
    (v >> 1) ^ (v & 1).wrapping_neg()
}

/// Appends `b`, the block after the one of id `prev` in its file (`None`
/// for a file's first), to `out` as the arena holds it, for a file whose
/// preferred block size is `pbs`:
/// - the id: the first block's as it is, a later one's distance from the
///   block before's plus one (zigzag);
/// - the stamp: its distance from `id - ID_STAMP_GAP` (zigzag);
/// - the length: 0 for `pbs`, 1 and the length for a length of
///   `u64::MAX - 1` or more, the length plus 2 otherwise.
///
/// Every value reads back exactly; the usual ones (sequential ids, stamps
/// drawn with them, full blocks) take a byte each.
#[inline]
pub(crate) fn encode(b: &Block, prev: Option<u64>, pbs: u64, out: &mut Vec<u8>) {
    // One copy into `out` rather than a push per byte: this runs once per
    // block of every load.
    let mut buf = [0u8; 40];
    let id = match prev {
        None => b.id,
        Some(p) => zig(b.id.wrapping_sub(p).wrapping_sub(1)),
    };
    let mut n = put(&mut buf, 0, id);
    let stamp = b.id.wrapping_sub(ID_STAMP_GAP);
    n = put(&mut buf, n, zig(b.generation_stamp.wrapping_sub(stamp)));
    n = if b.length == pbs {
        put(&mut buf, n, 0)
    } else if let Some(v) = b.length.checked_add(2) {
        put(&mut buf, n, v)
    } else {
        let n = put(&mut buf, n, 1);
        put(&mut buf, n, b.length)
    };
    // A copy of a constant size is a few stores where one of `n` bytes is a
    // call; the bytes past `n` are cut again at once.
    let at = out.len();
    out.extend_from_slice(&buf);
    out.truncate(at + n);
}

/// Writes `v` as a varint at `buf[at..]` (at most 10 bytes, and `at` is at
/// most 30); the position after it.
#[inline]
// Each cast keeps the low 7 bits, by design.
#[allow(clippy::cast_possible_truncation)]
fn put(buf: &mut [u8; 40], mut at: usize, mut v: u64) -> usize {
    while v >= 0x80 {
        buf[at] = (v as u8) | 0x80;
        v >>= 7;
        at += 1;
    }
    buf[at] = v as u8;
    at + 1
}

/// Reads one varint from the front of `bytes`; 0 (and nothing left) at a
/// truncated or overlong end.
#[inline]
fn read(bytes: &mut &[u8]) -> u64 {
    // Most values are one byte (steps between ids, stamps beside ids, full
    // blocks).
    if let Some((&b, rest)) = bytes.split_first() {
        if b < 0x80 {
            *bytes = rest;
            return u64::from(b);
        }
    }
    let mut v = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            *bytes = &bytes[i + 1..];
            return v;
        }
    }
    *bytes = &[];
    0
}

/// The byte length of the first `count` blocks encoded at the front of
/// `bytes` (at most `bytes.len()`).
pub(crate) fn byte_len(bytes: &[u8], count: u32) -> usize {
    end_and_last(bytes, count).0
}

/// [`byte_len`], and the id of the last of those blocks (`None` for
/// none), in one pass.
pub(crate) fn end_and_last(bytes: &[u8], count: u32) -> (usize, Option<u64>) {
    // Where a value ends, and ids, do not depend on the block size.
    let mut it = Blocks::new(bytes, count, 0);
    let last = it.by_ref().last().map(|b| b.id);
    (bytes.len() - it.rest().len(), last)
}

/// A file's blocks, in file order: read from the name arena, or from a
/// decoded record's list (`From<&[Block]>`). An [`ExactSizeIterator`] of
/// [`Block`]s that is `Copy`, so that a caller may walk them as often as
/// it likes ([`iter`](Self::iter)).
#[derive(Clone, Copy)]
pub struct Blocks<'a>(Repr<'a>);

#[derive(Clone, Copy)]
enum Repr<'a> {
    /// `left` blocks encoded at the front of `bytes`, of a file whose
    /// preferred block size is `pbs`; `prev` is the id of the block read
    /// last (`None` before the first).
    Encoded {
        bytes: &'a [u8],
        left: u32,
        pbs: u64,
        prev: Option<u64>,
    },
    /// Blocks as decoded from a record.
    Decoded(&'a [Block]),
}

impl Default for Blocks<'_> {
    fn default() -> Self {
        Blocks(Repr::Decoded(&[]))
    }
}

impl<'a> From<&'a [Block]> for Blocks<'a> {
    fn from(blocks: &'a [Block]) -> Blocks<'a> {
        Blocks(Repr::Decoded(blocks))
    }
}

impl<'a> Blocks<'a> {
    /// The `count` blocks encoded at the front of `bytes`, of a file whose
    /// preferred block size is `pbs`.
    pub(crate) fn new(bytes: &'a [u8], count: u32, pbs: u64) -> Blocks<'a> {
        Blocks(Repr::Encoded {
            bytes,
            left: if bytes.is_empty() { 0 } else { count },
            pbs,
            prev: None,
        })
    }

    /// No blocks.
    pub fn empty() -> Blocks<'static> {
        Blocks::default()
    }

    /// A copy to iterate, leaving `self` where it is.
    pub fn iter(&self) -> Blocks<'a> {
        *self
    }

    /// Whether there are no blocks left.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The blocks, collected.
    pub fn to_vec(&self) -> Vec<Block> {
        self.iter().collect()
    }

    /// What is left of the encoded bytes (empty for decoded blocks).
    fn rest(&self) -> &'a [u8] {
        match self.0 {
            Repr::Encoded { bytes, .. } => bytes,
            Repr::Decoded(_) => &[],
        }
    }
}

impl Iterator for Blocks<'_> {
    type Item = Block;

    #[inline]
    fn next(&mut self) -> Option<Block> {
        match &mut self.0 {
            Repr::Decoded(list) => {
                let (first, rest) = list.split_first()?;
                *list = rest;
                Some(*first)
            }
            Repr::Encoded {
                bytes,
                left,
                pbs,
                prev,
            } => {
                if *left == 0 {
                    return None;
                }
                *left -= 1;
                let v = read(bytes);
                let id = match *prev {
                    None => v,
                    Some(p) => p.wrapping_add(1).wrapping_add(unzig(v)),
                };
                *prev = Some(id);
                let generation_stamp = id
                    .wrapping_sub(ID_STAMP_GAP)
                    .wrapping_add(unzig(read(bytes)));
                let length = match read(bytes) {
                    0 => *pbs,
                    1 => read(bytes),
                    v => v - 2,
                };
                if bytes.is_empty() {
                    // The arena's end: nothing more can follow.
                    *left = 0;
                }
                Some(Block {
                    id,
                    generation_stamp,
                    length,
                })
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match self.0 {
            Repr::Encoded { left, .. } => left as usize,
            Repr::Decoded(list) => list.len(),
        };
        (n, Some(n))
    }
}

impl ExactSizeIterator for Blocks<'_> {}

impl PartialEq for Blocks<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Blocks<'_> {}

impl PartialEq<[Block]> for Blocks<'_> {
    fn eq(&self, other: &[Block]) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter().copied())
    }
}

impl PartialEq<&[Block]> for Blocks<'_> {
    fn eq(&self, other: &&[Block]) -> bool {
        *self == **other
    }
}

impl fmt::Debug for Blocks<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::{byte_len, encode, Blocks};
    use crate::values::Block;

    fn encoded(blocks: &[Block], pbs: u64) -> Vec<u8> {
        let mut out = Vec::new();
        let mut prev = None;
        for b in blocks {
            encode(b, prev, pbs, &mut out);
            prev = Some(b.id);
        }
        out
    }

    const EDGE: [u64; 12] = [
        0,
        1,
        0x7f,
        0x80,
        1000,
        0x3fff,
        1 << 30,
        (1 << 30) + 1,
        0xffff_ffff,
        u64::MAX - 2,
        u64::MAX - 1,
        u64::MAX,
    ];

    #[test]
    fn blocks_read_back_as_written_whatever_their_values() {
        // Every edge value in every field, next to every other, for block
        // sizes at the edges too.
        for pbs in [0, 128 << 20, u64::MAX - 1, u64::MAX] {
            let mut want = Vec::new();
            for &a in &EDGE {
                for &b in &EDGE {
                    want.push(Block {
                        id: a,
                        generation_stamp: b,
                        length: b.wrapping_add(a),
                    });
                    want.push(Block {
                        id: b,
                        generation_stamp: a,
                        length: if a % 2 == 0 { pbs } else { a },
                    });
                }
            }
            let bytes = encoded(&want, pbs);
            let n = u32::try_from(want.len()).unwrap();
            let got = Blocks::new(&bytes, n, pbs);
            assert_eq!(got.len(), want.len());
            assert_eq!(got.to_vec(), want, "block size {pbs}");
            assert!(got == want[..]);
            assert_eq!(byte_len(&bytes, n), bytes.len());
            // A range stops at its count, whatever follows it.
            assert_eq!(Blocks::new(&bytes, 2, pbs).to_vec(), want[..2]);
            let first = encoded(&want[..1], pbs).len();
            assert_eq!(byte_len(&bytes, 1), first);
        }
    }

    #[test]
    fn blocks_as_hdfs_allocates_them_take_a_few_bytes() {
        let pbs = 128 << 20;
        // Ids and stamps drawn together, full blocks then a short last one.
        let blocks: Vec<Block> = (0..3)
            .map(|k| Block {
                id: (1 << 30) + 5_000 + k,
                generation_stamp: 1000 + 5_000 + k,
                length: if k < 2 { pbs } else { 300 },
            })
            .collect();
        let bytes = encoded(&blocks, pbs);
        // 5 bytes of first id, then one byte a value but the last length.
        assert_eq!(bytes.len(), (5 + 1 + 1) + (1 + 1 + 1) + (1 + 1 + 2));
        assert_eq!(Blocks::new(&bytes, 3, pbs).to_vec(), blocks);
    }

    #[test]
    fn a_truncated_range_reads_as_fewer_blocks_never_a_panic() {
        let b = Block {
            id: u64::MAX,
            generation_stamp: 1 << 40,
            length: u64::MAX,
        };
        let bytes = encoded(&[b, b], 7);
        for cut in 0..bytes.len() {
            let got = Blocks::new(&bytes[..cut], 2, 7).to_vec();
            assert!(got.len() <= 2, "cut at {cut}");
        }
        assert_eq!(Blocks::new(&[], 5, 7).len(), 0);
    }
}
