//! [`Subtree`]: which directories of a streamed image lie below a path,
//! and which row of a per-directory report each one's inodes count in.

use nsimage_loader::skeleton::{DirIndex, Skeleton};

/// "Outside the subtree".
const OUTSIDE: u32 = u32::MAX;
/// "Not worked out yet".
const UNSET: u32 = u32::MAX - 1;

/// The subtree at a directory with children, with a row for each
/// directory with children down to `max` levels below it; every other
/// directory with children inside counts in its nearest ancestor's row.
/// Memory: 4 bytes per directory with children, 8 per row.
pub(crate) struct Subtree {
    /// Per directory with children: its row, or [`OUTSIDE`].
    bucket: Vec<u32>,
    /// Rows: the directory and its levels below the top (the top's: 0).
    rows: Vec<(DirIndex, u32)>,
}

impl Subtree {
    /// The subtree at `top` with rows down to `max` levels below it.
    pub(crate) fn new(skeleton: &Skeleton, top: DirIndex, max: usize) -> Subtree {
        let max = u32::try_from(max).unwrap_or(u32::MAX);
        let n = skeleton.dir_count();
        let mut bucket = vec![UNSET; n];
        let mut rows = vec![(top, 0u32)];
        if let Some(b) = bucket.get_mut(top as usize) {
            *b = 0;
        }
        let mut chain: Vec<DirIndex> = Vec::new();
        for d in 0..n {
            let d = DirIndex::try_from(d).unwrap_or(DirIndex::MAX);
            if bucket.get(d as usize) != Some(&UNSET) {
                continue;
            }
            // Up to the first directory worked out (the top at the
            // latest), or past the root (outside). The skeleton's tree has
            // no cycle; the length bound is a second guard.
            chain.clear();
            let mut cur = Some(d);
            let (mut value, mut above) = (OUTSIDE, None);
            while let Some(c) = cur {
                match bucket.get(c as usize) {
                    Some(&UNSET) if chain.len() <= n => {
                        chain.push(c);
                        cur = skeleton.dir_parent(c);
                    }
                    Some(&v) if v != UNSET => {
                        (value, above) = (v, Some(c));
                        break;
                    }
                    _ => break,
                }
            }
            for &c in chain.iter().rev() {
                if value != OUTSIDE {
                    // A directory whose parent has a row of its own above
                    // the last level gets its own, one level down.
                    if let Some(&(row_dir, depth)) = rows.get(value as usize) {
                        if Some(row_dir) == above && depth < max {
                            value = u32::try_from(rows.len()).unwrap_or(OUTSIDE);
                            rows.push((c, depth.saturating_add(1)));
                        }
                    }
                }
                if let Some(b) = bucket.get_mut(c as usize) {
                    *b = value;
                }
                above = Some(c);
            }
        }
        Subtree { bucket, rows }
    }

    /// The row directory `dir`'s own inode (and, for a directory below
    /// the last level, everything in it) counts in; `None` outside.
    pub(crate) fn row_of(&self, dir: DirIndex) -> Option<usize> {
        match self.bucket.get(dir as usize) {
            Some(&v) if v != OUTSIDE && v != UNSET => Some(v as usize),
            _ => None,
        }
    }

    /// Where an inode counts: its row (`None` outside), and its directory
    /// index when it is a directory with children. `dir`: whether it is a
    /// directory; `parent`: its parent directory.
    pub(crate) fn place(
        &self,
        skeleton: &Skeleton,
        id: u64,
        dir: bool,
        parent: Option<DirIndex>,
    ) -> (Option<usize>, Option<DirIndex>) {
        match dir.then(|| skeleton.dir_of(id)).flatten() {
            Some(d) => (self.row_of(d), Some(d)),
            None => (parent.and_then(|p| self.row_of(p)), None),
        }
    }

    /// The rows: each one's directory and its levels below the top.
    pub(crate) fn rows(&self) -> &[(DirIndex, u32)] {
        &self.rows
    }

    /// Whether row `r` is `dir`'s own.
    pub(crate) fn is_own_row(&self, r: usize, dir: DirIndex) -> bool {
        self.rows.get(r).is_some_and(|&(d, _)| d == dir)
    }
}
