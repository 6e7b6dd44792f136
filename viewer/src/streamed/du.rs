//! `du` streamed: the same [`DuReport`] as [`crate::du::du`] of the loaded
//! namespace. Each inode's share is added to the row of its nearest
//! directory with a row (a `Subtree`), each worker with its own sums; the
//! rows are then added up from the deepest, and put in path order.
//! Memory: the tree, and per worker one [`Usage`] per row.

use super::{open, pool, push_path, Fallback, Subtree};
use crate::du::{order, DuOptions, DuReport, DuRow, Usage};
use crate::error::ViewError;
use crate::paths::ImagePath;
use nsimage_loader::Streamable;
use nsimage_namespace::{Attrs, InodeKind};

/// What one worker sums.
struct Sums {
    /// Per row: the usage of the inodes counted in it (not its rows
    /// below).
    own: Vec<Usage>,
    /// Per row: its directory's quotas, once its record is read.
    quotas: Vec<Option<(i64, i64)>>,
    /// Rows of empty directories (a row, but no directory with children).
    empty: Vec<DuRow>,
    /// The last parent's path.
    cache: (Option<u32>, Vec<u8>),
}

/// `du` of `path` in `src` on `threads` workers (0: the available cores).
///
/// # Errors
/// As [`crate::du::du`]; anything a load refuses (but the children's name
/// order, see [`nsimage_loader::skeleton`]).
pub fn du_streamed(
    src: &Streamable,
    path: &ImagePath,
    opts: &DuOptions,
    threads: usize,
) -> Result<Result<DuReport, Fallback>, ViewError> {
    let pool = pool(threads)?;
    let (skeleton, top) = match open(src, &pool, path)? {
        Ok(t) => t,
        Err(f) => return Ok(Err(f)),
    };
    let sub = Subtree::new(&skeleton, top, opts.depth);
    let nrows = sub.rows().len();
    let max = u32::try_from(opts.depth).unwrap_or(u32::MAX);
    let parts = skeleton.fold_pieces(
        src,
        Some(&pool),
        || Sums {
            own: vec![Usage::default(); nrows],
            quotas: vec![None; nrows],
            empty: Vec::new(),
            cache: (None, Vec::new()),
        },
        |s, node, parent| {
            let attrs = node.body.attrs();
            let dir = matches!(attrs, Attrs::Directory { .. });
            let (row, with_children) = sub.place(&skeleton, node.id, dir, parent);
            let Some(r) = row else { return Ok(()) };
            let usage = Usage::of_attrs_below(&attrs, opts.small_below);
            if let Some(u) = s.own.get_mut(r) {
                u.add(&usage);
            }
            match (with_children, attrs, parent) {
                (Some(d), Attrs::Directory { ns_quota, ds_quota }, _) if sub.is_own_row(r, d) => {
                    if let Some(q) = s.quotas.get_mut(r) {
                        *q = Some((ns_quota, ds_quota));
                    }
                }
                // An empty directory (or with `files`, a file or symlink)
                // one level below a row of its parent's own, above the
                // last level: a row of its own.
                (None, _, Some(p)) if dir || opts.files => {
                    if let Some(&(_, depth)) = sub.rows().get(r) {
                        if sub.is_own_row(r, p) && depth < max {
                            let mut path = Vec::new();
                            push_path(&skeleton, parent, node.name, &mut s.cache, &mut path);
                            s.empty.push(DuRow::new(
                                node.body.kind(),
                                &attrs,
                                path,
                                (depth as usize).saturating_add(1),
                                usage,
                            ));
                        }
                    }
                }
                _ => {}
            }
            Ok(())
        },
    )?;
    // Every worker's sums together.
    let mut own = vec![Usage::default(); nrows];
    let mut quotas = vec![None; nrows];
    let mut empty = Vec::new();
    for p in parts {
        for (a, b) in own.iter_mut().zip(&p.own) {
            a.add(b);
        }
        for (a, b) in quotas.iter_mut().zip(p.quotas) {
            *a = a.or(b);
        }
        empty.extend(p.empty);
    }
    // Each row's total: its own, then added to its parent's row, deepest
    // rows first.
    let mut by_depth: Vec<usize> = (0..nrows).collect();
    by_depth.sort_by_key(|&r| std::cmp::Reverse(sub.rows().get(r).map_or(0, |x| x.1)));
    for r in by_depth {
        let Some(&(dir, depth)) = sub.rows().get(r) else {
            continue;
        };
        if depth == 0 {
            continue;
        }
        let total = own.get(r).copied().unwrap_or_default();
        if let Some(up) = skeleton.dir_parent(dir).and_then(|p| sub.row_of(p)) {
            if let Some(u) = own.get_mut(up) {
                u.add(&total);
            }
        }
    }
    let mut rows: Vec<DuRow> = sub
        .rows()
        .iter()
        .enumerate()
        .map(|(r, &(dir, depth))| {
            let p = if depth == 0 {
                path.canonical()
            } else {
                let mut p = Vec::new();
                skeleton.push_dir_path(dir, &mut p);
                p
            };
            let (ns_quota, ds_quota) = quotas.get(r).copied().flatten().unwrap_or((-1, -1));
            DuRow::new(
                InodeKind::Directory,
                &Attrs::Directory { ns_quota, ds_quota },
                p,
                depth as usize,
                own.get(r).copied().unwrap_or_default(),
            )
        })
        .collect();
    rows.extend(empty);
    // Path order: depth first, each directory's children by name, each
    // directory before what it holds (component by component).
    rows.sort_by(|a, b| {
        a.path
            .split(|&c| c == b'/')
            .cmp(b.path.split(|&c| c == b'/'))
    });
    order(&mut rows, opts.sort);
    Ok(Ok(DuReport {
        path: path.canonical(),
        depth: opts.depth,
        sort: opts.sort,
        rows,
    }))
}
