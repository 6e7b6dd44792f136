//! `distribution`: the file-size histogram of Hadoop's OIV FileDistribution
//! processor. Files only (directories and symlinks have no size); a file's
//! size is the sum of its block lengths.
//!
//! Buckets, as OIV cuts them: bucket 0 holds the empty files; bucket `i`
//! (1 to `n`, `n = ceil(max / step)`) the sizes in `((i-1)*step, i*step]`;
//! one last bucket the files larger than `n * step`.

use crate::error::ViewError;
use nsimage_namespace::{Attrs, Namespace};
use rayon::prelude::*;

/// OIV's default bucket width: 2 MiB.
pub const DEFAULT_STEP: u64 = 2 << 20;
/// OIV's default largest bucketed size: 128 GiB.
pub const DEFAULT_MAX: u64 = 128 << 30;
/// Most buckets a histogram may have (a step far below the maximum would
/// otherwise ask for billions).
pub const MAX_BUCKETS: u64 = 1 << 20;

/// One bucket: files with `low < size <= high` (bucket 0: `size == 0`,
/// `low == high == 0`; the overflow bucket: `high == u64::MAX`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bucket {
    /// Exclusive lower edge (0 for the first two buckets).
    pub low: u64,
    /// Inclusive upper edge; `u64::MAX` for the overflow bucket.
    pub high: u64,
    /// Files in the bucket.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// The histogram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Distribution {
    /// Bucket width in bytes.
    pub step: u64,
    /// Largest size with a bucket of its own.
    pub max: u64,
    /// Every bucket, in size order (empty ones included).
    pub buckets: Vec<Bucket>,
    /// Files counted.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// The largest file's size.
    pub largest: u64,
}

/// The file-size histogram of `ns` with buckets of `step` bytes up to
/// `max`, computed in parallel over the node table.
pub fn distribution(ns: &Namespace, step: u64, max: u64) -> Result<Distribution, ViewError> {
    let bad = |detail: String| ViewError::BadArgument { detail };
    if step == 0 {
        return Err(bad("the step must be at least 1 byte".into()));
    }
    if max == 0 {
        return Err(bad("the maximum must be at least 1 byte".into()));
    }
    let n = max.div_ceil(step);
    if n > MAX_BUCKETS {
        return Err(bad(format!(
            "{n} buckets (max / step) is more than {MAX_BUCKETS}: raise the step or lower the maximum"
        )));
    }
    let top = n
        .checked_mul(step)
        .ok_or_else(|| bad("the maximum rounded up to a whole step overflows".into()))?;
    let len = usize::try_from(n + 2).map_err(|e| bad(e.to_string()))?;
    let bucket_of = |size: u64| -> usize {
        let b = if size > top {
            n + 1
        } else {
            size.div_ceil(step)
        };
        usize::try_from(b).unwrap_or(len - 1)
    };
    let empty = || (vec![(0u64, 0u64); len], 0u64, 0u64, 0u64);
    let (counts, files, bytes, largest) = (0..ns.slot_count())
        .into_par_iter()
        .fold(empty, |mut acc, s| {
            if let Some(Attrs::File(f)) = ns.at(s).map(|i| i.attrs()) {
                let size = f.length();
                let c = &mut acc.0[bucket_of(size)];
                c.0 += 1;
                c.1 = c.1.saturating_add(size);
                acc.1 += 1;
                acc.2 = acc.2.saturating_add(size);
                acc.3 = acc.3.max(size);
            }
            acc
        })
        .reduce(empty, |mut a, b| {
            for (x, y) in a.0.iter_mut().zip(&b.0) {
                x.0 += y.0;
                x.1 = x.1.saturating_add(y.1);
            }
            (a.0, a.1 + b.1, a.2.saturating_add(b.2), a.3.max(b.3))
        });
    let buckets = counts
        .iter()
        .enumerate()
        .map(|(i, &(files, bytes))| {
            let i = i as u64;
            let (low, high) = match i {
                0 => (0, 0),
                i if i <= n => ((i - 1) * step, i * step),
                _ => (top, u64::MAX),
            };
            Bucket {
                low,
                high,
                files,
                bytes,
            }
        })
        .collect();
    Ok(Distribution {
        step,
        max,
        buckets,
        files,
        bytes,
        largest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsimage_namespace::{Block, FileSpec, PermSpec};

    #[test]
    fn buckets_follow_oiv_edges() {
        let p = PermSpec {
            user: b"u",
            group: b"g",
            mode: 0o644,
        };
        let s = FileSpec {
            replication: 1,
            preferred_block_size: 1 << 20,
            storage_policy: 0,
        };
        let mut ns = Namespace::default();
        let sizes = [0u64, 1, 10, 11, 20, 21, 30, 31, 1000];
        for (i, &len) in sizes.iter().enumerate() {
            let f = ns.create(format!("/f{i}").as_bytes(), &p, &s, 1).unwrap();
            if len > 0 {
                let id = i as u64 + 1;
                ns.add_block(
                    f,
                    Block {
                        id,
                        generation_stamp: 1,
                        length: len,
                    },
                )
                .unwrap();
            }
        }
        let d = distribution(&ns, 10, 25).unwrap();
        let counts: Vec<u64> = d.buckets.iter().map(|b| b.files).collect();
        // [0], (0,10], (10,20], (20,30], > 30
        assert_eq!(counts, vec![1, 2, 2, 2, 2]);
        assert_eq!(d.buckets[3].low, 20);
        assert_eq!(d.buckets[3].high, 30);
        assert_eq!(d.buckets[4].high, u64::MAX);
        assert_eq!(d.files, 9);
        assert_eq!(d.largest, 1000);
        assert!(distribution(&ns, 0, 10).is_err());
        assert!(distribution(&ns, 1, u64::MAX).is_err());
    }
}
