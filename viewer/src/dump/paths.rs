//! Full paths from the namespace's own parent table: every node holds its
//! parent's slot and a reference to its name, so a path is rebuilt by
//! walking up, never stored per inode. A [`PathCache`] keeps the path of
//! the last parent seen, so that siblings (which follow one another in id
//! order) cost one name copy each.

use nsimage_namespace::{Inode, Namespace, Slot};

/// The path of the last directory whose children were formatted, reused
/// while the next inodes share it.
pub struct PathCache {
    dir: Option<Slot>,
    dir_path: Vec<u8>,
    parts: Vec<Slot>,
}

impl Default for PathCache {
    fn default() -> Self {
        Self::new()
    }
}

impl PathCache {
    /// An empty cache.
    pub fn new() -> PathCache {
        PathCache {
            dir: None,
            dir_path: Vec::with_capacity(256),
            parts: Vec::with_capacity(32),
        }
    }

    /// Appends `inode`'s full path (`/` for the root) to `out`.
    pub fn push_path(&mut self, ns: &Namespace, inode: &Inode<'_>, out: &mut Vec<u8>) {
        let Some(parent) = inode.parent().and_then(|p| ns.slot_of(p)) else {
            out.push(b'/');
            return;
        };
        if self.dir != Some(parent) {
            self.rebuild(ns, parent);
        }
        out.extend_from_slice(&self.dir_path);
        out.push(b'/');
        out.extend_from_slice(inode.name());
    }

    /// The path of directory `slot`, without a trailing slash (empty for
    /// the root), by walking up the parent links. A broken chain (which a
    /// loaded namespace never has) ends the walk where it breaks; a cycle
    /// is cut after as many steps as there are slots.
    fn rebuild(&mut self, ns: &Namespace, slot: Slot) {
        self.parts.clear();
        let mut cur = Some(slot);
        let mut steps = 0u32;
        while let Some(s) = cur {
            let Some(node) = ns.at(s) else { break };
            let Some(p) = node.parent() else { break };
            self.parts.push(s);
            steps += 1;
            if steps > ns.slot_count() {
                break;
            }
            cur = ns.slot_of(p);
        }
        self.dir_path.clear();
        for &s in self.parts.iter().rev() {
            if let Some(n) = ns.at(s) {
                self.dir_path.push(b'/');
                self.dir_path.extend_from_slice(n.name());
            }
        }
        self.dir = Some(slot);
    }
}
