//! `find` streamed: the matches of [`crate::find::find_each`] over the
//! loaded namespace, each written the same way ([`write_found`]), but in
//! the image's file order (inode id order within each piece, pieces in
//! order), not depth first by name: that order needs every name of the
//! subtree at once. The same bytes for any thread count. Memory: the tree,
//! and two batches of pieces' matches.

use super::{open, pool, push_path, write_in_order, Fallback, Subtree};
use crate::error::ViewError;
use crate::find::{write_found, FindFormat, FindOptions, Found};
use crate::paths::ImagePath;
use nsimage_loader::Streamable;
use nsimage_namespace::{Attrs, Perm};
use std::io::Write;
use std::path::Path;

/// What a streamed search wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FindStats {
    /// Matches written.
    pub matches: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// Writes every match below `path` in `src` (itself included) to `out`
/// (in `format`: paths, JSON lines or NUL-ended paths), in file order, on
/// `threads` workers (0: the available cores); `out_name` names the
/// output in errors.
///
/// # Errors
/// As [`crate::find::find_each`]; a write error; anything a load refuses
/// (but the children's name order, see [`nsimage_loader::skeleton`]).
pub fn find_streamed(
    src: &Streamable,
    path: &ImagePath,
    opts: &FindOptions,
    format: FindFormat,
    threads: usize,
    out: &mut (dyn Write + Send),
    out_name: &Path,
) -> Result<Result<FindStats, Fallback>, ViewError> {
    let pool = pool(threads)?;
    let (skeleton, top) = match open(src, &pool, path)? {
        Ok(t) => t,
        Err(f) => return Ok(Err(f)),
    };
    let sub = Subtree::new(&skeleton, top, 0);
    let strings = skeleton.tables.strings();
    let written = write_in_order(
        &skeleton,
        src,
        &pool,
        out,
        out_name,
        || ((None, Vec::new()), Vec::new()),
        |(work, (cache, path_buf)), i, buf| {
            let mut n = 0u64;
            let rules = skeleton.for_each_in_piece(src, i, work, |node, parent, _| {
                let attrs = node.body.attrs();
                let dir = matches!(attrs, Attrs::Directory { .. });
                if sub.place(&skeleton, node.id, dir, parent).0.is_none() {
                    return Ok(());
                }
                let mut found = Found {
                    path: &[],
                    id: node.id,
                    kind: node.body.kind(),
                    length: match attrs {
                        Attrs::File(f) => f.length(),
                        _ => 0,
                    },
                    mtime: node.mtime,
                    atime: match attrs {
                        Attrs::File(f) => Some(f.atime),
                        _ => None,
                    },
                    owner: strings.get(Perm(node.perm).user()).unwrap_or_default(),
                    group: strings.get(Perm(node.perm).group()).unwrap_or_default(),
                };
                if !opts.matches_found(&found, node.name) {
                    return Ok(());
                }
                path_buf.clear();
                push_path(&skeleton, parent, node.name, cache, path_buf);
                found.path = path_buf;
                // Writing into memory cannot fail.
                let _ = write_found(&found, format, buf);
                n += 1;
                Ok(())
            })?;
            Ok((n, rules))
        },
    )?;
    out.flush().map_err(|source| ViewError::Io {
        path: out_name.to_path_buf(),
        source,
    })?;
    Ok(Ok(FindStats {
        matches: written.rows,
        bytes: written.bytes,
    }))
}
