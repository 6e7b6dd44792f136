//! The commands streamed from an image in bounded memory (issue 28):
//! `du` ([`du`]), `du --by` ([`owners`]), `find` ([`find`]) and `dump`
//! ([`dump`], its XML's later sections in `dump_xml.rs`) read the image's
//! tree ([`Skeleton`]) and then its INODE pieces on a pool, never building
//! the namespace. Each answers the same as its namesake over a loaded
//! namespace, but for `find`'s order: the matches come in the image's file
//! order (a path-ordered walk needs every name at once).
//!
//! Each returns [`Fallback`] where it cannot answer this way, the one
//! signal of every streamed reader (`crate::distribution`'s and the
//! export's too); [`crate::input::Input::read`] then answers from a
//! one-path lookup or from a whole load.

pub mod du;
pub mod dump;
mod dump_xml;
pub mod find;
mod ordered;
pub mod owners;
mod subtree;

use crate::error::ViewError;
use crate::paths::ImagePath;
use nsimage_loader::skeleton::{DirIndex, Skeleton};
use nsimage_loader::Streamable;
pub(crate) use ordered::write_in_order;
pub(crate) use subtree::Subtree;

/// Why a streamed command gave no answer (and wrote nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// The image cannot be streamed (see [`Skeleton::build`]): load it
    /// whole.
    Unstreamable,
    /// The path is not a directory with children (a file, a symlink, an
    /// empty directory, or nothing): a one-path lookup answers it, errors
    /// included, reading only the pieces on the way.
    NotATree,
}

/// The pool of `threads` workers (0: the available cores).
pub(crate) fn pool(threads: usize) -> Result<rayon::ThreadPool, ViewError> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| ViewError::BadArgument {
            detail: format!("starting {threads} workers: {e}"),
        })
}

/// `src`'s tree, read on `pool`, and the directory `path` names.
pub(crate) fn open(
    src: &Streamable,
    pool: &rayon::ThreadPool,
    path: &ImagePath,
) -> Result<Result<(Skeleton, DirIndex), Fallback>, ViewError> {
    let Ok(skeleton) = Skeleton::build(src, Some(pool))? else {
        return Ok(Err(Fallback::Unstreamable));
    };
    match skeleton.find_dir(path.components()) {
        Some(top) => Ok(Ok((skeleton, top))),
        None => Ok(Err(Fallback::NotATree)),
    }
}

/// Appends the full path of a streamed inode named `name` in `parent`
/// (`/` for the root), `cache` holding the last parent's path.
pub fn push_path(
    skeleton: &Skeleton,
    parent: Option<DirIndex>,
    name: &[u8],
    cache: &mut (Option<DirIndex>, Vec<u8>),
    out: &mut Vec<u8>,
) {
    let Some(dir) = parent else {
        out.push(b'/');
        return;
    };
    if cache.0 != Some(dir) {
        cache.1.clear();
        skeleton.push_dir_path(dir, &mut cache.1);
        cache.0 = Some(dir);
    }
    out.extend_from_slice(&cache.1);
    out.push(b'/');
    out.extend_from_slice(name);
}
