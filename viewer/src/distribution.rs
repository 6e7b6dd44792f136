//! `distribution`: the file-size histogram of Hadoop's OIV FileDistribution
//! processor. Files only (directories and symlinks have no size); a file's
//! size is the sum of its block lengths.
//!
//! Buckets, as OIV cuts them: bucket 0 holds the empty files; bucket `i`
//! (1 to `n`, `n = ceil(max / step)`) the sizes in `((i-1)*step, i*step]`;
//! one last bucket the files larger than `n * step`.

use crate::error::ViewError;
use crate::streamed::Fallback;
use nsimage_loader::skeleton::Skeleton;
use nsimage_loader::Streamable;
use nsimage_namespace::{Attrs, LoadedBody, Namespace};
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

/// A histogram being filled: made with [`Histogram::new`], one
/// [`add`](Histogram::add) per file, partial ones joined with
/// [`merge`](Histogram::merge) (integer sums: the order never matters).
#[derive(Clone, Debug)]
pub struct Histogram {
    step: u64,
    max: u64,
    /// Buckets with edges of their own.
    n: u64,
    /// `n * step`: sizes above it go to the overflow bucket.
    top: u64,
    counts: Vec<(u64, u64)>,
    files: u64,
    bytes: u64,
    largest: u64,
}

impl Histogram {
    /// An empty histogram with buckets of `step` bytes up to `max`.
    ///
    /// # Errors
    /// [`ViewError::BadArgument`] for a step or maximum of 0, or more than
    /// [`MAX_BUCKETS`] buckets.
    pub fn new(step: u64, max: u64) -> Result<Histogram, ViewError> {
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
        Ok(Histogram {
            step,
            max,
            n,
            top,
            counts: vec![(0, 0); len],
            files: 0,
            bytes: 0,
            largest: 0,
        })
    }

    /// Counts one file of `size` bytes.
    pub fn add(&mut self, size: u64) {
        let b = if size > self.top {
            self.n + 1
        } else {
            size.div_ceil(self.step)
        };
        let last = self.counts.len() - 1;
        let c = &mut self.counts[usize::try_from(b).unwrap_or(last).min(last)];
        c.0 += 1;
        c.1 = c.1.saturating_add(size);
        self.files += 1;
        self.bytes = self.bytes.saturating_add(size);
        self.largest = self.largest.max(size);
    }

    /// Adds `other`'s counts (made with the same step and maximum).
    pub fn merge(mut self, other: &Histogram) -> Histogram {
        for (x, y) in self.counts.iter_mut().zip(&other.counts) {
            x.0 += y.0;
            x.1 = x.1.saturating_add(y.1);
        }
        self.files += other.files;
        self.bytes = self.bytes.saturating_add(other.bytes);
        self.largest = self.largest.max(other.largest);
        self
    }

    /// The finished histogram.
    pub fn finish(self) -> Distribution {
        let (n, step, top) = (self.n, self.step, self.top);
        let buckets = self
            .counts
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
        Distribution {
            step,
            max: self.max,
            buckets,
            files: self.files,
            bytes: self.bytes,
            largest: self.largest,
        }
    }
}

/// The file-size histogram of `ns` with buckets of `step` bytes up to
/// `max`, computed in parallel over the node table.
pub fn distribution(ns: &Namespace, step: u64, max: u64) -> Result<Distribution, ViewError> {
    let empty = Histogram::new(step, max)?;
    let h = (0..ns.slot_count())
        .into_par_iter()
        .fold(
            || empty.clone(),
            |mut acc, s| {
                if let Some(Attrs::File(f)) = ns.at(s).map(|i| i.attrs()) {
                    acc.add(f.length());
                }
                acc
            },
        )
        .reduce(|| empty.clone(), |a, b| a.merge(&b));
    Ok(h.finish())
}

/// The same histogram streamed from an image on `threads` workers (0: the
/// available cores): its tree read and checked ([`Skeleton`]), then its
/// INODE pieces read again, one at a time per worker; no namespace is
/// built. [`Fallback::Unstreamable`] for an image the stream cannot take
/// (see [`Skeleton::build`]), which [`crate::input::Input::read`] loads
/// whole instead.
///
/// # Errors
/// As [`distribution`]; anything a load refuses (but the children's name
/// order, see [`Skeleton`]).
pub fn distribution_streamed(
    src: &Streamable,
    threads: usize,
    step: u64,
    max: u64,
) -> Result<Result<Distribution, Fallback>, ViewError> {
    let empty = Histogram::new(step, max)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| ViewError::BadArgument {
            detail: format!("starting {threads} workers: {e}"),
        })?;
    let Ok(skeleton) = Skeleton::build(src, Some(&pool))? else {
        return Ok(Err(Fallback::Unstreamable));
    };
    let parts = skeleton.fold_pieces(
        src,
        Some(&pool),
        || empty.clone(),
        |h, node, _| {
            if let LoadedBody::File { blocks, .. } = node.body {
                h.add(
                    blocks
                        .iter()
                        .fold(0u64, |sum, b| sum.saturating_add(b.length)),
                );
            }
            Ok(())
        },
    )?;
    let h = parts.iter().fold(empty.clone(), Histogram::merge);
    Ok(Ok(h.finish()))
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
