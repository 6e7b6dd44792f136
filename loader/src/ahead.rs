//! A piece's checksum computed just ahead of its decoder, in blocks that
//! stay in the core's cache, instead of a separate pass over the whole
//! piece before decoding it: the decoder then reads bytes the checksum has
//! just brought into the cache, and the memory is read once.
//!
//! The decoder reaches each record's end ([`Ahead::reach`]) before it reads
//! the record; nothing it decodes is kept until [`Ahead::finish`] has
//! compared the checksum with the index's. A piece whose bytes fail to
//! decode is hashed to its end all the same, so that damage is reported as a
//! checksum mismatch, as when the checksum is checked first.

use xxhash_rust::xxh3::Xxh3;

/// Bytes hashed at a time ahead of the decoder: well within a core's L2.
const BLOCK: usize = 64 << 10;

/// The running checksum of one piece's bytes.
pub(crate) struct Ahead<'a> {
    bytes: &'a [u8],
    hasher: Xxh3,
    done: usize,
}

impl<'a> Ahead<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Ahead {
            bytes,
            hasher: Xxh3::new(),
            done: 0,
        }
    }

    /// Hashes at least up to byte `end` of the piece (and a block more when
    /// it has to hash at all).
    #[inline]
    pub(crate) fn reach(&mut self, end: usize) {
        if end > self.done {
            self.advance(end);
        }
    }

    #[cold]
    fn advance(&mut self, end: usize) {
        let to = end
            .max(self.done.saturating_add(BLOCK))
            .min(self.bytes.len());
        if let Some(block) = self.bytes.get(self.done..to) {
            self.hasher.update(block);
            self.done = to;
        }
    }

    /// The checksum of the whole piece (hashing what is left).
    pub(crate) fn finish(mut self) -> u64 {
        self.reach(self.bytes.len());
        self.hasher.digest()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_running_checksum_is_the_whole_pieces() {
        let bytes: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for steps in [
            &[][..],
            &[1, 2, 70_000, 69_999, 200_000][..],
            &[300_000, 400_000],
        ] {
            let mut a = Ahead::new(&bytes);
            for &s in steps {
                a.reach(s);
            }
            assert_eq!(a.finish(), xxhash_rust::xxh3::xxh3_64(&bytes));
        }
        assert_eq!(Ahead::new(&[]).finish(), xxhash_rust::xxh3::xxh3_64(&[]));
    }
}
