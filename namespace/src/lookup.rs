//! Finding inodes: absolute paths split into components and resolved to
//! inodes (and back, [`Namespace::path_of`]), ids resolved to live slots
//! with the error a mutation reports.

use crate::consts::{Slot, NO_SLOT};
use crate::errors::{show, NsError, Result};
use crate::namespace::Namespace;
use crate::rules::valid_name;

/// A valid single path component: the same rule the readers apply to every
/// inode but the root (FORMAT.md, INODE), so that no mutation can create a
/// name an image may not hold.
pub(crate) fn check_name(name: &[u8]) -> Result<()> {
    if !valid_name(name) {
        return Err(NsError::InvalidName(show(name)));
    }
    Ok(())
}

/// Splits an absolute path into its components (empty components are ignored).
pub(crate) fn components(path: &[u8]) -> Result<impl Iterator<Item = &[u8]>> {
    if path.first() != Some(&b'/') {
        return Err(NsError::InvalidPath(show(path)));
    }
    Ok(path.split(|&b| b == b'/').filter(|c| !c.is_empty()))
}

/// Splits an absolute path into its parent path and last component.
pub(crate) fn split_last(path: &[u8]) -> Result<(&[u8], &[u8])> {
    let trimmed = match path.iter().rposition(|&b| b != b'/') {
        Some(end) => &path[..=end],
        None => return Err(NsError::Root("name")),
    };
    if path.first() != Some(&b'/') {
        return Err(NsError::InvalidPath(show(path)));
    }
    let cut = trimmed.iter().rposition(|&b| b == b'/').unwrap_or(0);
    Ok((&trimmed[..cut.max(1)], &trimmed[cut + 1..]))
}

impl Namespace {
    /// The slot of the inode at an absolute path.
    pub(crate) fn resolve_slot(&self, path: &[u8]) -> Result<Slot> {
        let mut cur: Slot = 0;
        for c in components(path)? {
            if !self.nodes[cur as usize].is_dir() {
                return Err(NsError::NotADirectory(show(path)));
            }
            cur = self
                .find_child(cur, c)
                .ok_or_else(|| NsError::NotFound(show(path)))?;
        }
        Ok(cur)
    }

    /// The id of the inode at an absolute path.
    pub fn resolve(&self, path: &[u8]) -> Result<u64> {
        Ok(self.id_of(self.resolve_slot(path)?))
    }

    /// The absolute path of a live inode.
    pub fn path_of(&self, id: u64) -> Option<Vec<u8>> {
        let mut slot = self.slot_of(id)?;
        let mut parts = Vec::new();
        while slot != 0 {
            let n = &self.nodes[slot as usize];
            parts.push(self.name_bytes(n.name));
            slot = n.parent;
            if slot == NO_SLOT {
                return None;
            }
        }
        let mut out = Vec::new();
        for p in parts.iter().rev() {
            out.push(b'/');
            out.extend_from_slice(p);
        }
        if out.is_empty() {
            out.push(b'/');
        }
        Some(out)
    }

    /// The slot of live inode `id`; [`NsError::NoInode`] if there is none.
    pub(crate) fn live_slot(&self, id: u64) -> Result<Slot> {
        self.slot_of(id).ok_or(NsError::NoInode(id))
    }

    /// The slot of live directory `id`.
    pub(crate) fn dir_slot(&self, id: u64) -> Result<Slot> {
        let s = self.live_slot(id)?;
        if self.nodes[s as usize].is_dir() {
            Ok(s)
        } else {
            Err(NsError::NotADirectory(format!("inode {id}")))
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::consts::ROOT_ID;
    use crate::errors::NsError;
    use crate::fixtures::{F, P};
    use crate::namespace::Namespace;

    #[test]
    fn paths_resolve_after_mkdirs_create_and_rename() {
        let mut ns = Namespace::default();
        let d = ns.mkdirs(b"/a/b/c", &P, 1).unwrap();
        assert_eq!(ns.resolve(b"/a/b/c").unwrap(), d);
        let f = ns.create(b"/a/b/c/f", &P, &F, 2).unwrap();
        ns.rename(b"/a/b/c/f", b"/a/g", 3).unwrap();
        assert_eq!(ns.resolve(b"/a/g").unwrap(), f);
        assert_eq!(ns.path_of(f).unwrap(), b"/a/g");
        assert!(matches!(ns.resolve(b"/a/b/c/f"), Err(NsError::NotFound(_))));
        assert_eq!(ns.resolve(b"/").unwrap(), ROOT_ID);
    }
}
