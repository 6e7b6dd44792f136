//! An export streamed from an nsimage image in bounded memory (issue 28):
//! the image's tree read first ([`Skeleton`]), then each row group built
//! from the INODE pieces that hold its rows, never the namespace. Row
//! group `g` holds the records `g * R .. (g + 1) * R` in file order (R:
//! the rows per group), as a loaded namespace's slots are the records in
//! file order: the same row groups, and the same bytes, as
//! [`crate::export_to_path`] of the loaded image. A piece across two row
//! groups is read by both; its block rules are counted once, by the group
//! its first record is in, and checked once every group is built.

use crate::columns::{Builder, Column, RowFacts};
use crate::error::ExportError;
use crate::options::{ExportOptions, ExportStats};
use crate::output::export_via;
use crate::write::{pool, write_groups, Groups};
use nsimage_loader::skeleton::Skeleton;
use nsimage_loader::Streamable;
use nsimage_namespace::{BlockRules, Perm};
use nsimage_viewer::streamed::Fallback;
use parking_lot::Mutex;
use std::path::Path;

/// The row groups of a streamed image.
struct Streamed<'a> {
    src: &'a Streamable,
    skeleton: Skeleton,
    /// Per INODE piece: the file-order index of its first record.
    starts: Vec<u64>,
    /// Records in all.
    total: u64,
    /// Rows per group.
    per_group: u64,
    rules: Mutex<BlockRules>,
}

impl Streamed<'_> {
    /// The group piece `i`'s first record is in (the last for pieces past
    /// the end).
    fn owner(&self, i: usize) -> usize {
        let start = self.starts.get(i).copied().unwrap_or(self.total);
        let g = usize::try_from(start / self.per_group).unwrap_or(usize::MAX);
        g.min(self.count().saturating_sub(1))
    }
}

impl Groups for Streamed<'_> {
    fn count(&self) -> usize {
        usize::try_from(self.total.div_ceil(self.per_group)).unwrap_or(usize::MAX)
    }

    /// One: a streamed export is for images bigger than memory, where the
    /// row groups in flight are most of what it holds beside the tree.
    fn per_worker(&self) -> usize {
        1
    }

    fn build(&self, g: usize) -> Result<Vec<Column>, ExportError> {
        let a = (g as u64).saturating_mul(self.per_group);
        let b = a.saturating_add(self.per_group).min(self.total);
        let mut cols = Builder::new(usize::try_from(b.saturating_sub(a)).unwrap_or(0));
        let sk = &self.skeleton;
        let strings = sk.tables.strings();
        let mut work = sk.worker();
        let mut cache = (None, Vec::new());
        let mut path = Vec::with_capacity(512);
        for (i, &start) in self.starts.iter().enumerate() {
            let end = start.saturating_add(sk.piece_records(i));
            let owned = self.owner(i) == g;
            if !owned && (end <= a || start >= b) {
                continue;
            }
            let mut k = start;
            let rules = sk.for_each_in_piece(self.src, i, &mut work, |node, parent, _| {
                if (a..b).contains(&k) {
                    path.clear();
                    nsimage_viewer::streamed::push_path(
                        sk, parent, node.name, &mut cache, &mut path,
                    );
                    let perm = Perm(node.perm);
                    cols.add(&RowFacts {
                        id: node.id,
                        parent: parent.map(|d| sk.dir_id(d)),
                        path: &path,
                        name: node.name,
                        kind: node.body.kind(),
                        mtime: node.mtime,
                        mode: perm.mode(),
                        user: (perm.user(), strings.get(perm.user()).unwrap_or_default()),
                        group: (perm.group(), strings.get(perm.group()).unwrap_or_default()),
                        attrs: node.body.attrs(),
                    });
                }
                k = k.saturating_add(1);
                Ok(())
            })?;
            if owned {
                self.rules.lock().merge(rules);
            }
        }
        Ok(cols.finish())
    }

    fn finish(&self) -> Result<(), ExportError> {
        let rules = std::mem::take(&mut *self.rules.lock());
        Ok(self.skeleton.check_blocks(self.src, &rules)?)
    }
}

/// Exports every inode of the image `src` to `out` as
/// [`crate::export_to_path`] exports the loaded image, streamed;
/// [`Fallback::Unstreamable`] (nothing written) for an image the stream
/// cannot take (see [`Skeleton::build`]), which the viewer's
/// `Input::read` loads whole instead.
///
/// # Errors
/// As [`crate::export_to_path`]; [`ExportError::Load`] for anything a load
/// refuses (but the children's name order, see [`Skeleton`]). A broken
/// block rule is found once every row group is built: a single file is
/// then never renamed into place, a dataset's earlier parts are.
pub fn export_streamed_to_path(
    src: &Streamable,
    opts: &ExportOptions,
    out: &Path,
) -> Result<Result<ExportStats, Fallback>, ExportError> {
    let pool = pool(opts.threads)?;
    let Ok(skeleton) = Skeleton::build(src, Some(&pool))? else {
        return Ok(Err(Fallback::Unstreamable));
    };
    let mut starts = Vec::with_capacity(skeleton.piece_count());
    let mut total = 0u64;
    for i in 0..skeleton.piece_count() {
        starts.push(total);
        total = total.saturating_add(skeleton.piece_records(i));
    }
    let groups = Streamed {
        src,
        skeleton,
        starts,
        total,
        per_group: u64::from(opts.row_group_rows.max(1)),
        rules: Mutex::new(BlockRules::default()),
    };
    export_via(opts, out, &mut |per_file, open, close| {
        write_groups(&groups, &pool, opts, per_file, open, close)
    })
    .map(Ok)
}
