//! [`Row`]: what a dump format writes of one inode, read from a loaded
//! namespace or from a record streamed from the image (issue 28), so that
//! both give the same bytes.

use super::scratch::Scratch;
use nsimage_loader::skeleton::{DirIndex, Skeleton};
use nsimage_namespace::{Attrs, Extra, Inode, InodeKind, LoadedNode, Namespace, Perm, StringTable};

/// One inode to format.
#[derive(Clone, Copy)]
pub(crate) enum Row<'a> {
    /// An inode of a loaded namespace.
    Tree(&'a Namespace, Inode<'a>),
    /// A record streamed from the image.
    Stream(&'a Streamed<'a>),
}

/// A streamed record, with its parent directory in the skeleton and its
/// extras as a loaded namespace holds them (xattrs sorted, none when
/// empty).
pub(crate) struct Streamed<'a> {
    pub(crate) node: &'a LoadedNode<'a>,
    pub(crate) parent: Option<DirIndex>,
    pub(crate) skeleton: &'a Skeleton,
    pub(crate) extra: Option<Extra>,
}

impl<'a> Streamed<'a> {
    /// `node`, child of `parent`.
    pub(crate) fn new(
        node: &'a LoadedNode<'a>,
        parent: Option<DirIndex>,
        skeleton: &'a Skeleton,
    ) -> Streamed<'a> {
        let extra = node.extra.clone().filter(|e| !e.is_empty()).map(|mut e| {
            e.xattrs.sort_by_key(|x| (x.ns, x.name));
            e
        });
        Streamed {
            node,
            parent,
            skeleton,
            extra,
        }
    }
}

impl Row<'_> {
    pub(crate) fn id(&self) -> u64 {
        match self {
            Row::Tree(_, i) => i.id(),
            Row::Stream(s) => s.node.id,
        }
    }

    /// The parent's id; `None` for the root.
    pub(crate) fn parent(&self) -> Option<u64> {
        match self {
            Row::Tree(_, i) => i.parent(),
            Row::Stream(s) => s.parent.map(|d| s.skeleton.dir_id(d)),
        }
    }

    pub(crate) fn name(&self) -> &[u8] {
        match self {
            Row::Tree(_, i) => i.name(),
            Row::Stream(s) => s.node.name,
        }
    }

    pub(crate) fn kind(&self) -> InodeKind {
        match self {
            Row::Tree(_, i) => i.kind(),
            Row::Stream(s) => s.node.body.kind(),
        }
    }

    /// The string table user, group, xattr and ACL names come from.
    pub(crate) fn strings(&self) -> &StringTable {
        match self {
            Row::Tree(ns, _) => ns.strings(),
            Row::Stream(s) => s.skeleton.tables.strings(),
        }
    }

    pub(crate) fn user(&self) -> &[u8] {
        match self {
            Row::Tree(_, i) => i.user(),
            Row::Stream(s) => self
                .strings()
                .get(Perm(s.node.perm).user())
                .unwrap_or_default(),
        }
    }

    pub(crate) fn group(&self) -> &[u8] {
        match self {
            Row::Tree(_, i) => i.group(),
            Row::Stream(s) => self
                .strings()
                .get(Perm(s.node.perm).group())
                .unwrap_or_default(),
        }
    }

    pub(crate) fn mode(&self) -> u16 {
        match self {
            Row::Tree(_, i) => i.mode(),
            Row::Stream(s) => Perm(s.node.perm).mode(),
        }
    }

    pub(crate) fn mtime(&self) -> u64 {
        match self {
            Row::Tree(_, i) => i.mtime(),
            Row::Stream(s) => s.node.mtime,
        }
    }

    pub(crate) fn attrs(&self) -> Attrs<'_> {
        match self {
            Row::Tree(_, i) => i.attrs(),
            Row::Stream(s) => s.node.body.attrs(),
        }
    }

    pub(crate) fn extra(&self) -> Option<&Extra> {
        match self {
            Row::Tree(_, i) => i.extra(),
            Row::Stream(s) => s.extra.as_ref(),
        }
    }

    /// Appends the full path (`/` for the root).
    pub(crate) fn push_path(&self, scratch: &mut Scratch, out: &mut Vec<u8>) {
        match self {
            Row::Tree(ns, i) => scratch.paths.push_path(ns, i, out),
            Row::Stream(s) => {
                let Some(dir) = s.parent else {
                    out.push(b'/');
                    return;
                };
                if scratch.stream_dir != Some(dir) {
                    scratch.stream_path.clear();
                    s.skeleton.push_dir_path(dir, &mut scratch.stream_path);
                    scratch.stream_dir = Some(dir);
                }
                out.extend_from_slice(&scratch.stream_path);
                out.push(b'/');
                out.extend_from_slice(s.node.name);
            }
        }
    }
}
