//! The uniqueness of block ids across a loaded image, checked with bitmaps
//! over the id range: one per INODE batch, built by the worker that decoded
//! it, then merged word by word, so that the whole-image check is a merge
//! of small bitmaps rather than a serial pass over every block. A batch
//! whose ids are sparse (more than 64 ids of range per block) gets no
//! bitmap, and the image is then checked by a sort (see `build.rs`).

/// The ids of one batch's blocks, as bits from `min` on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct BlockIdBits {
    min: u64,
    words: Vec<u64>,
}

/// What a batch's blocks give the whole-image check.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum BatchIds {
    /// The batch has no blocks.
    #[default]
    Empty,
    /// Its ids as bits.
    Bits(BlockIdBits),
    /// Its ids are too sparse for bits.
    Sparse,
    /// It holds this id twice.
    Twice(u64),
}

/// Whether ids over `span + 1` values, `count` of them, are dense enough
/// for a bitmap: one of span/8 bytes is allowed up to 8 bytes per id (what
/// a sorted copy of the ids would take), so memory is bounded by the count,
/// never by values read from an image.
pub(crate) fn dense(span: u64, count: u64) -> bool {
    span / 64 <= count
}

/// Sets bit `id - min` of `words`; `false` if it was set already.
// `off / 64 < words.len()` for every id within the range the words cover.
#[allow(clippy::cast_possible_truncation)]
fn set(words: &mut [u64], min: u64, id: u64) -> bool {
    let off = id - min;
    let (w, bit) = ((off / 64) as usize, 1u64 << (off % 64));
    let had = words[w] & bit != 0;
    words[w] |= bit;
    !had
}

impl BatchIds {
    /// The block ids `ids`, `count` of them, whose smallest and largest
    /// are `min` and `max`.
    pub(crate) fn of(ids: impl Iterator<Item = u64>, count: u64, min: u64, max: u64) -> BatchIds {
        if count == 0 {
            return BatchIds::Empty;
        }
        let span = max.saturating_sub(min);
        let Some(words) = usize::try_from(span / 64 + 1)
            .ok()
            .filter(|_| dense(span, count))
        else {
            return BatchIds::Sparse;
        };
        let mut bits = vec![0u64; words];
        for id in ids {
            if !set(&mut bits, min, id) {
                return BatchIds::Twice(id);
            }
        }
        BatchIds::Bits(BlockIdBits { min, words: bits })
    }
}

/// The whole image's check from its batches' ids, all of them between
/// `min` and `max`, `count` in all: `Some(Ok(()))` when every id is
/// unique, `Some(Err(id))` for an id used twice, `None` when some batch or
/// the whole range is too sparse for bits (the caller sorts instead).
// Shifts are by `s % 64` and `64 - s % 64` with `s % 64 != 0`; indices are
// within the words the range [min, max] needs (each batch lies in it).
#[allow(clippy::cast_possible_truncation)]
pub(crate) fn unique(
    batches: &[BatchIds],
    min: u64,
    max: u64,
    count: u64,
) -> Option<Result<(), u64>> {
    let span = max.saturating_sub(min);
    if !dense(span, count) {
        return None;
    }
    let mut all = vec![0u64; usize::try_from(span / 64 + 2).ok()?];
    for b in batches {
        let bits = match b {
            BatchIds::Empty => continue,
            BatchIds::Sparse => return None,
            BatchIds::Twice(id) => return Some(Err(*id)),
            BatchIds::Bits(bits) => bits,
        };
        let shift = bits.min - min;
        let (at, s) = ((shift / 64) as usize, shift % 64);
        for (j, &w) in bits.words.iter().enumerate() {
            let parts = if s == 0 {
                [(at + j, w), (at + j + 1, 0)]
            } else {
                [(at + j, w << s), (at + j + 1, w >> (64 - s))]
            };
            for (k, v) in parts {
                let clash = all[k] & v;
                if clash != 0 {
                    return Some(Err(min + k as u64 * 64 + u64::from(clash.trailing_zeros())));
                }
                all[k] |= v;
            }
        }
    }
    Some(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::{unique, BatchIds};

    fn ids(list: &[u64]) -> BatchIds {
        let min = list.iter().copied().min().unwrap_or(0);
        let max = list.iter().copied().max().unwrap_or(0);
        BatchIds::of(list.iter().copied(), list.len() as u64, min, max)
    }

    /// Merged bitmaps agree with a set, for batches at every alignment.
    #[test]
    fn merged_bits_find_what_a_set_finds() {
        let cases: Vec<Vec<Vec<u64>>> = vec![
            vec![vec![1000, 1001, 1002], vec![1003, 1100]],
            vec![vec![1000, 1001], vec![1063, 1064, 1065], vec![1200]],
            vec![vec![1000, 1001], vec![1001]],
            vec![vec![5, 70, 133], vec![6, 71, 134, 200], vec![70]],
            vec![vec![64, 65], vec![127, 128], vec![191, 192, 64]],
            vec![vec![7, 7]],
            vec![vec![], vec![9]],
        ];
        for case in cases {
            let all: Vec<u64> = case.iter().flatten().copied().collect();
            let mut seen = std::collections::HashSet::new();
            let want = all.iter().find(|&&id| !seen.insert(id)).copied();
            let batches: Vec<BatchIds> = case.iter().map(|c| ids(c)).collect();
            let (min, max) = (*all.iter().min().unwrap(), *all.iter().max().unwrap());
            let got = unique(&batches, min, max, all.len() as u64).expect("dense");
            match want {
                None => assert_eq!(got, Ok(()), "{case:?}"),
                // The id reported is one used twice (not necessarily the
                // set's first).
                Some(_) => {
                    let id = got.expect_err("a duplicate");
                    assert!(
                        all.iter().filter(|&&x| x == id).count() > 1,
                        "{case:?}: {id}"
                    );
                }
            }
        }
    }

    #[test]
    fn sparse_ids_are_left_to_the_sort() {
        let far = ids(&[1, 1 << 40]);
        assert_eq!(far, BatchIds::Sparse);
        assert_eq!(unique(&[far], 1, 1 << 40, 2), None);
        // Dense batches far apart: the whole range is sparse.
        assert_eq!(
            unique(&[ids(&[1, 2]), ids(&[1 << 40])], 1, 1 << 40, 3),
            None
        );
        assert_eq!(
            ids(&[u64::MAX - 1, u64::MAX]),
            ids(&[u64::MAX, u64::MAX - 1])
        );
    }
}
