//! `du --by owner|group` streamed: the same [`OwnerReport`] as
//! [`crate::owners::usage_by`] of the loaded namespace. Each worker sums
//! by string id (the image's table names each user and group once); the
//! ids are named at the end. Memory: the tree, and per worker one sum per
//! user or group.

use super::{open, pool, Fallback, Subtree};
use crate::du::Usage;
use crate::error::ViewError;
use crate::owners::{report, Key, OwnerReport};
use crate::paths::ImagePath;
use nsimage_loader::Streamable;
use nsimage_namespace::{Attrs, Perm};
use std::collections::HashMap;

/// The usage per owner (or group) of the subtree at `path` in `src`, on
/// `threads` workers (0: the available cores), a file counted small below
/// `small_below` bytes (`None`: below its preferred block size).
///
/// # Errors
/// As [`crate::owners::usage_by`]; anything a load refuses (but the
/// children's name order, see [`nsimage_loader::skeleton`]).
pub fn usage_by_streamed(
    src: &Streamable,
    path: &ImagePath,
    by: Key,
    small_below: Option<u64>,
    threads: usize,
) -> Result<Result<OwnerReport, Fallback>, ViewError> {
    let pool = pool(threads)?;
    let (skeleton, top) = match open(src, &pool, path)? {
        Ok(t) => t,
        Err(f) => return Ok(Err(f)),
    };
    let sub = Subtree::new(&skeleton, top, 0);
    let parts = skeleton.fold_pieces(
        src,
        Some(&pool),
        HashMap::<u32, Usage>::new,
        |sums, node, parent| {
            let attrs = node.body.attrs();
            let dir = matches!(attrs, Attrs::Directory { .. });
            if sub.place(&skeleton, node.id, dir, parent).0.is_some() {
                let perm = Perm(node.perm);
                let id = match by {
                    Key::Owner => perm.user(),
                    Key::Group => perm.group(),
                };
                sums.entry(id)
                    .or_default()
                    .add(&Usage::of_attrs_below(&attrs, small_below));
            }
            Ok(())
        },
    )?;
    let strings = skeleton.tables.strings();
    let mut named: HashMap<&[u8], Usage> = HashMap::new();
    for part in &parts {
        for (&id, u) in part {
            named
                .entry(strings.get(id).unwrap_or_default())
                .or_default()
                .add(u);
        }
    }
    Ok(Ok(report(path, by, named)))
}
