//! Child lists: finding a name among a directory's children (keys first,
//! names only on a tie), and the owned, sorted lists that mutations edit.

use crate::arena::Span;
use crate::consts::Slot;
use crate::namespace::{read_name, Namespace};
use crate::node::{name_key, Body, OwnedChildren, OWNED_CHILDREN};

impl OwnedChildren {
    /// Inserts `slot` with its name key at `pos`, keeping both arrays aligned.
    pub(crate) fn insert(&mut self, pos: usize, slot: Slot, key: u64) {
        self.slots.insert(pos, slot);
        self.keys.insert(pos, key);
    }
}

impl Namespace {
    /// The position of `name` among the children of directory `dir`.
    fn child_pos(&self, dir: Slot, name: &[u8]) -> std::result::Result<usize, usize> {
        self.child_at(dir, name).map(|(i, _)| i)
    }

    /// The position and slot of `name` among the children of directory
    /// `dir` (one look-up of the list), or where it would be inserted.
    #[inline]
    fn child_at(&self, dir: Slot, name: &[u8]) -> std::result::Result<(usize, Slot), usize> {
        let name_of = |c: Slot| self.name_bytes(self.nodes[c as usize].name);
        if let Some(o) = self.owned_children.get(&dir) {
            // Keys first; a name is read only when keys tie.
            let key = name_key(name);
            let (mut lo, mut hi) = (0, o.slots.len());
            while lo < hi {
                let mid = (lo + hi) / 2;
                let ord = match o.keys[mid].cmp(&key) {
                    std::cmp::Ordering::Equal => name_of(o.slots[mid]).cmp(name),
                    other => other,
                };
                match ord {
                    std::cmp::Ordering::Less => lo = mid + 1,
                    std::cmp::Ordering::Greater => hi = mid,
                    std::cmp::Ordering::Equal => return Ok((mid, o.slots[mid])),
                }
            }
            return Err(lo);
        }
        let kids = self.child_slots(dir);
        // New names often sort last (sequential names, sorted bulk
        // creation): one comparison instead of a search.
        if let Some(&last) = kids.last() {
            if name_of(last) < name {
                return Err(kids.len());
            }
        }
        kids.binary_search_by(|&c| name_of(c).cmp(name))
            .map(|i| (i, kids[i]))
    }

    /// Removes child `s` from its parent's list: a scan of the slots in a
    /// small directory (no name is read), a search by name in a large one.
    pub(crate) fn unlink(&mut self, parent: Slot, s: Slot) {
        let kids = self.child_slots(parent);
        let pos = if kids.len() <= 128 {
            kids.iter().position(|&k| k == s).ok_or(0)
        } else {
            let name = self.nodes[s as usize].name;
            self.child_pos(parent, read_name(&self.names, name))
        };
        if let Ok(i) = pos {
            let o = self.owned_children_mut(parent);
            o.slots.remove(i);
            o.keys.remove(i);
        }
    }

    /// The slot of `name` among the children of directory `dir`.
    pub(crate) fn find_child(&self, dir: Slot, name: &[u8]) -> std::result::Result<Slot, usize> {
        self.child_at(dir, name).map(|(_, s)| s)
    }

    /// Makes the child list of `dir` mutable (copying it out of the arena
    /// the first time) and returns it.
    pub(crate) fn owned_children_mut(&mut self, dir: Slot) -> &mut OwnedChildren {
        if let Body::Directory { children, .. } = self.body(dir) {
            if children.chunk != OWNED_CHILDREN {
                let slots = self.children.get(children).to_vec();
                let keys = slots
                    .iter()
                    .map(|&c| name_key(read_name(&self.names, self.nodes[c as usize].name)))
                    .collect();
                self.nodes[dir as usize].span = Span {
                    chunk: OWNED_CHILDREN,
                    start: 0,
                    len: 0,
                };
                self.owned_children
                    .insert(dir, OwnedChildren { slots, keys });
            }
        }
        self.owned_children.entry(dir).or_default()
    }
}
