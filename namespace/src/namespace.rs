//! The [`Namespace`] itself: its tables, its constructor and counters,
//! slots and ids, [`Stats`], reading a name from the name arena, and a
//! directory's children: listing them and finding one by name.

use crate::arena::{Arena, Span};
use crate::children::{name_key, Children, OwnedChildren, Place};
use crate::classes::{Class, ClassId, Classes};
use crate::consts::{Slot, NO_SLOT, ROOT_ID};
use crate::errors::{NsError, Result};
use crate::ids::IdIndex;
use crate::node::{Kind, NameRef, Node, OWNED_CHILDREN};
use crate::strings::StringTable;
use crate::values::{Block, Extra, NsInfo, Perm};
/// The maps keyed by slot: foldhash, not the default SipHash (these keys
/// come from the namespace itself, not from an adversary choosing them to
/// collide, and journal replay hashes a slot several times per op).
pub(crate) type SlotMap<V> = foldhash::HashMap<Slot, V>;

/// A metadata server's namespace.
#[derive(Clone, Debug)]
pub struct Namespace {
    pub(crate) info: NsInfo,
    pub(crate) strings: StringTable,
    pub(crate) classes: Classes,
    pub(crate) ids: IdIndex,
    pub(crate) nodes: Vec<Node>,
    pub(crate) names: Arena<u8>,
    pub(crate) blocks: Arena<Block>,
    pub(crate) children: Arena<Slot>,
    pub(crate) owned_children: SlotMap<OwnedChildren>,
    pub(crate) extras: SlotMap<Extra>,
}

/// Counts of what a namespace holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Live inodes, the root included.
    pub inodes: u64,
    /// Live files.
    pub files: u64,
    /// Live directories, the root included.
    pub directories: u64,
    /// Live symbolic links.
    pub symlinks: u64,
    /// Blocks of live files.
    pub blocks: u64,
    /// Sum of block lengths.
    pub bytes: u64,
}

impl Default for Namespace {
    fn default() -> Self {
        Self::new(NsInfo::default())
    }
}

impl Namespace {
    /// An empty namespace: the root directory alone, owned by the empty user.
    pub fn new(info: NsInfo) -> Self {
        let mut ns = Namespace {
            info: NsInfo {
                last_inode_id: info.last_inode_id.max(ROOT_ID),
                ..info
            },
            strings: StringTable::default(),
            classes: Classes::default(),
            ids: IdIndex::default(),
            nodes: Vec::new(),
            names: Arena::default(),
            blocks: Arena::default(),
            children: Arena::default(),
            owned_children: SlotMap::default(),
            extras: SlotMap::default(),
        };
        let name = ns.put_name(b"");
        // The first class of an empty table: id 0.
        let class = ns
            .classes
            .intern(Class::directory(Perm::new(0, 0, 0o755), -1, -1))
            .unwrap_or(0);
        ns.ids.push(ROOT_ID);
        ns.nodes.push(Node {
            mtime: info.creation_time,
            aux: 0,
            name,
            parent: NO_SLOT,
            class,
            span: Span::default(),
            kind: Kind::Directory,
            has_extra: false,
        });
        ns
    }

    /// The namespace-wide counters.
    pub fn info(&self) -> &NsInfo {
        &self.info
    }

    /// The counters, for a journal replaying a transaction (which sets
    /// `last_txid`); the mutations keep the id counters up to date.
    pub fn info_mut(&mut self) -> &mut NsInfo {
        &mut self.info
    }

    /// The interned user, group, xattr and ACL names.
    pub fn strings(&self) -> &StringTable {
        &self.strings
    }

    /// Number of slots, live or freed; slots are `0..slot_count()`.
    // Every slot was given by an `IdIndex`, which stops at u32::MAX slots
    // (and the builder checks its node table against one).
    #[allow(clippy::cast_possible_truncation)]
    pub fn slot_count(&self) -> u32 {
        self.nodes.len() as u32
    }

    /// The slot of live inode `id`; `None` if there is none.
    pub fn slot_of(&self, id: u64) -> Option<Slot> {
        self.ids
            .slot(id)
            .filter(|&s| self.nodes[s as usize].kind != Kind::Free)
    }

    /// The id of the inode in `slot`, live or freed. Panics if `slot` is
    /// not below [`slot_count`](Self::slot_count).
    pub fn id_of(&self, slot: Slot) -> u64 {
        self.ids.id(slot)
    }

    /// Counts the live inodes and their blocks (one pass over the nodes).
    pub fn stats(&self) -> Stats {
        let mut st = Stats::default();
        for n in &self.nodes {
            match n.kind {
                Kind::Free => continue,
                Kind::File => {
                    st.files += 1;
                    st.blocks += n.span.len as u64;
                    st.bytes += self
                        .blocks
                        .get(n.span)
                        .iter()
                        .map(|b| b.length)
                        .sum::<u64>();
                }
                Kind::Directory => st.directories += 1,
                Kind::Symlink => st.symlinks += 1,
            }
            st.inodes += 1;
        }
        st
    }

    /// Bytes of heap this namespace holds (capacity, not length).
    pub fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * size_of::<Node>()
            + self.names.heap_bytes()
            + self.blocks.heap_bytes()
            + self.children.heap_bytes()
            + self.ids.heap_bytes()
            + self.strings.heap_bytes()
            + self.classes.heap_bytes()
            + self
                .owned_children
                .values()
                .map(|v| v.heap_bytes() + 64)
                .sum::<usize>()
            + self.extras.len() * (size_of::<Extra>() + 16)
    }

    pub(crate) fn put_name(&mut self, name: &[u8]) -> NameRef {
        // The length prefix on the stack, the name straight into the arena.
        let mut prefix = [0u8; 10];
        let mut rest = &mut prefix[..];
        prost::encoding::encode_varint(name.len() as u64, &mut rest);
        let used = 10 - rest.len();
        let s = self.names.push_joined(&prefix[..used], name);
        NameRef {
            chunk: s.chunk,
            off: s.start,
        }
    }

    pub(crate) fn name_bytes(&self, r: NameRef) -> &[u8] {
        read_name(&self.names, r)
    }

    /// The child slots of `slot` in name order (none unless a directory).
    pub(crate) fn child_slots(&self, slot: Slot) -> Children<'_> {
        let n = &self.nodes[slot as usize];
        match n.kind {
            Kind::Directory if n.span.chunk == OWNED_CHILDREN => self
                .owned_children
                .get(&slot)
                .map_or(Children::flat(&[]), OwnedChildren::view),
            Kind::Directory => Children::flat(self.children.get(n.span)),
            _ => Children::flat(&[]),
        }
    }

    /// The slot of `name` among the children of directory `dir`.
    #[inline]
    pub(crate) fn find_child(&self, dir: Slot, name: &[u8]) -> Option<Slot> {
        self.child_place(dir, name).ok()
    }

    /// Where `name` is among the children of directory `dir`: its slot, or
    /// where it would be inserted in an edited list (`None` for a list
    /// still in the arena, and for an inode that is no directory). A search
    /// of the keys of an edited list, of the names of a loaded one.
    #[inline]
    pub(crate) fn child_place(
        &self,
        dir: Slot,
        name: &[u8],
    ) -> std::result::Result<Slot, Option<Place>> {
        let name_of = |c: Slot| self.name_bytes(self.nodes[c as usize].name);
        let n = &self.nodes[dir as usize];
        if !n.is_dir() {
            return Err(None);
        }
        let children = n.span;
        if children.chunk == OWNED_CHILDREN {
            let Some(o) = self.owned_children.get(&dir) else {
                return Err(None);
            };
            return match o.search(name_key(name), name, name_of) {
                Ok(p) => o.slot(p).ok_or(None),
                Err(p) => Err(Some(p)),
            };
        }
        let kids = self.children.get(children);
        // New names often sort last (sequential names, sorted bulk
        // creation): one comparison instead of a search.
        if kids.last().is_some_and(|&last| name_of(last) < name) {
            return Err(None);
        }
        kids.binary_search_by(|&c| name_of(c).cmp(name))
            .map(|i| kids[i])
            .map_err(|_| None)
    }

    /// The class of the node in `slot`.
    #[inline]
    pub(crate) fn class_of(&self, slot: Slot) -> &Class {
        self.classes.get(self.nodes[slot as usize].class)
    }

    /// The id of class `c`, interned.
    pub(crate) fn intern_class(&mut self, c: Class) -> Result<ClassId> {
        self.classes.intern(c).ok_or(NsError::ClassTableFull)
    }

    /// Gives the node in `slot` class `c`.
    pub(crate) fn set_class(&mut self, slot: Slot, c: Class) -> Result<()> {
        self.nodes[slot as usize].class = self.intern_class(c)?;
        Ok(())
    }
}

/// Reads a length-prefixed name from the name arena. A reference that does
/// not resolve (which the builder never makes) reads as the empty name.
#[inline]
pub(crate) fn read_name(names: &Arena<u8>, r: NameRef) -> &[u8] {
    let c = names.chunk(r.chunk);
    let rest = c.get(r.off as usize..).unwrap_or_default();
    let mut cursor = rest;
    match prost::encoding::decode_varint(&mut cursor) {
        Ok(len) => usize::try_from(len)
            .ok()
            .and_then(|len| cursor.get(..len))
            .unwrap_or_default(),
        Err(_) => &[],
    }
}
