//! Walking a loaded namespace: a user's path resolved component by
//! component ([`resolve`]), a subtree visited depth first in name order
//! ([`walk`]), and the small per-inode facts every listing shows.
//!
//! Only what the namespace holds for the path is read (the root, each
//! directory on the way, their child lists), so the same functions work on
//! a whole image and on a partial namespace holding one path.

use crate::error::ViewError;
use crate::paths::ImagePath;
use nsimage_namespace::{Attrs, Inode, InodeKind, Namespace};

/// The inode at `path`: each component is looked up among its parent's
/// children (sorted by name, so a binary search). A missing component is
/// [`ViewError::NoSuchPath`]; so is a component below a file or a symlink,
/// with why.
pub fn resolve<'a>(ns: &'a Namespace, path: &ImagePath) -> Result<Inode<'a>, ViewError> {
    let mut cur = ns.root();
    let mut walked: Vec<u8> = Vec::new();
    for c in path.components() {
        if cur.kind() != InodeKind::Directory {
            let what = match cur.kind() {
                InodeKind::Symlink => "a symlink",
                _ => "a file",
            };
            return Err(ViewError::NoSuchPath {
                path: path.given().to_string(),
                why: Some(format!(
                    "{} is {what}, not a directory",
                    String::from_utf8_lossy(&walked)
                )),
            });
        }
        cur = child(ns, cur, c).ok_or_else(|| ViewError::NoSuchPath {
            path: path.given().to_string(),
            why: None,
        })?;
        walked.push(b'/');
        walked.extend_from_slice(c);
    }
    Ok(cur)
}

/// The child of directory `dir` named `name`, by binary search over its
/// name-sorted children.
fn child<'a>(ns: &'a Namespace, dir: Inode<'a>, name: &[u8]) -> Option<Inode<'a>> {
    let slots = dir.child_slots();
    let name_of = |s: u32| ns.at(s).map(|i| i.name()).unwrap_or_default();
    slots
        .binary_search_by(|s| name_of(s).cmp(name))
        .ok()
        .and_then(|i| slots.get(i))
        .and_then(|s| ns.at(s))
}

/// Visits `top` (at `top_path`) and everything below it, depth first, each
/// directory's children in name order: `visit(inode, path, depth)` with
/// depth 0 for `top`. An explicit stack, so a deep tree cannot overflow the
/// thread's stack; the path is one buffer, extended and cut as the walk
/// goes. The first error `visit` returns stops the walk.
pub fn walk<'a, E>(
    top: Inode<'a>,
    top_path: &[u8],
    mut visit: impl FnMut(Inode<'a>, &[u8], usize) -> Result<(), E>,
) -> Result<(), E> {
    let mut path = top_path.to_vec();
    visit(top, &path, 0)?;
    // Each frame: the directory's children and the next one to visit, and
    // the length of the directory's path in the buffer.
    let mut stack = vec![(top.children(), path.len())];
    while let Some((kids, base)) = stack.last_mut() {
        let base = *base;
        let Some(c) = kids.next() else {
            stack.pop();
            continue;
        };
        path.truncate(base);
        if path.last() != Some(&b'/') {
            path.push(b'/');
        }
        path.extend_from_slice(c.name());
        visit(c, &path, stack.len())?;
        if c.kind() == InodeKind::Directory {
            stack.push((c.children(), path.len()));
        }
    }
    Ok(())
}

/// `path/name` (no doubled slash below the root).
pub fn join(path: &[u8], name: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len() + 1 + name.len());
    out.extend_from_slice(path);
    if out.last() != Some(&b'/') {
        out.push(b'/');
    }
    out.extend_from_slice(name);
    out
}

/// A file's length: the sum of its block lengths (0 for directories and
/// symlinks). Saturating, so a hostile image cannot overflow it.
pub fn length(inode: &Inode<'_>) -> u64 {
    match inode.attrs() {
        Attrs::File(f) => f.length(),
        _ => 0,
    }
}

/// `file`, `directory` or `symlink`: the type's name in JSON output.
pub fn kind_name(kind: InodeKind) -> &'static str {
    match kind {
        InodeKind::File => "file",
        InodeKind::Directory => "directory",
        InodeKind::Symlink => "symlink",
    }
}

/// Bytes shown as text: UTF-8 as is, anything else with replacement
/// characters (names and paths may hold any bytes but `/` and NUL).
pub fn lossy(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsimage_namespace::{FileSpec, PermSpec};

    const P: PermSpec<'static> = PermSpec {
        user: b"u",
        group: b"g",
        mode: 0o755,
    };
    const F: FileSpec = FileSpec {
        replication: 1,
        preferred_block_size: 1024,
        storage_policy: 0,
    };

    #[test]
    fn resolves_and_walks_in_name_order() {
        let mut ns = Namespace::default();
        ns.mkdirs(b"/b/x", &P, 1).unwrap();
        ns.mkdirs(b"/a", &P, 1).unwrap();
        ns.create(b"/b/f", &P, &F, 1).unwrap();
        let p = |s: &str| ImagePath::parse(s).unwrap();
        assert_eq!(resolve(&ns, &p("/b/f")).unwrap().name(), b"f");
        assert!(matches!(
            resolve(&ns, &p("/b/nope")),
            Err(ViewError::NoSuchPath { why: None, .. })
        ));
        let Err(e) = resolve(&ns, &p("/b/f/g")) else {
            panic!("a path through a file resolves")
        };
        let e = e.to_string();
        assert!(
            e.contains("no such path") && e.contains("/b/f is a file"),
            "{e}"
        );
        let mut seen = Vec::new();
        walk::<()>(ns.root(), b"/", |_, path, d| {
            seen.push((String::from_utf8_lossy(path).into_owned(), d));
            Ok(())
        })
        .unwrap();
        let want = [("/", 0), ("/a", 1), ("/b", 1), ("/b/f", 2), ("/b/x", 2)];
        assert_eq!(
            seen,
            want.iter()
                .map(|(p, d)| (p.to_string(), *d))
                .collect::<Vec<_>>()
        );
    }
}
