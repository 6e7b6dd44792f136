//! One-path lookups that read only what they need (HDDS-16727): the
//! loader's [`nsimage_loader::load_path`] (the walk down NAME_RUNS or an
//! older image's NAME_INDEX, every entry it relies on checked against
//! INODE_DIR and INODE, the small namespace), with a path the user typed
//! and the viewer's errors. The viewer decodes no piece itself.
//!
//! An image without a name section (older images, small ones, Hadoop
//! images), or whose name section the lookup could not use
//! ([`PathView::unused_index`]), is loaded in full, and the path resolved
//! in it with the same words as a walk of any loaded namespace.

use crate::error::ViewError;
use crate::paths::ImagePath;
use nsimage_loader::LoadError;
pub use nsimage_loader::{PathOptions, PathView};
use std::path::Path;

/// Looks `path` up in `image`, reading only the pieces on the way, with
/// the target directory's children when `opts.with_children`, unlocking an
/// encrypted image with `opts.key`.
///
/// Errors: [`ViewError::NoSuchPath`] when a component is missing or the
/// path goes through a file or a symlink; a located corrupt error
/// ([`ViewError::Load`]) when a piece read on the way fails its checks.
pub fn load_path(
    image: &Path,
    path: &ImagePath,
    opts: &PathOptions,
) -> Result<PathView, ViewError> {
    let components: Vec<&[u8]> = path.components().iter().map(Vec::as_slice).collect();
    let view = nsimage_loader::load_path(image, &components, opts).map_err(|e| match e {
        LoadError::NoSuchPath { why, .. } => ViewError::NoSuchPath {
            path: path.given().to_string(),
            why,
        },
        e => ViewError::Load(e),
    })?;
    if !view.indexed {
        // The walk's own error: the same words with or without the index.
        crate::walk::resolve(&view.namespace, path)?;
    }
    Ok(view)
}
