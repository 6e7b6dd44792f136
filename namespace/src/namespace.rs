//! The [`Namespace`] itself: its tables, its constructor and counters,
//! slots and ids, [`Stats`], its snapshots, reading a name from the name
//! arena, and a directory's children: listing them and finding one by
//! name.

use crate::arena::{Arena, Span};
use crate::blocks::{byte_len, Appends, Blocks};
use crate::children::{name_key, Children, OwnedChildren, Place};
use crate::classes::{Class, ClassId, Classes};
use crate::consts::{Slot, ROOT_ID};
use crate::errors::{NsError, Result};
use crate::ids::IdIndex;
use crate::node::{atime_of_tag, Body, Kind, List, NameRef, Node, OWNED_CHILDREN, RUN_CHILDREN};
use crate::nodes::Nodes;
use crate::shards::SlotShards;
use crate::strings::StringTable;
use crate::values::{AclEntry, Extra, NsInfo, Perm, UnderConstruction, XAttr};

/// A metadata server's namespace.
///
/// Every table is shared copy-on-write between clones (see
/// [`snapshot`](Self::snapshot)): a clone costs one reference count per
/// chunk, never a copy of the namespace.
#[derive(Clone, Debug)]
pub struct Namespace {
    pub(crate) info: NsInfo,
    pub(crate) strings: StringTable,
    pub(crate) classes: Classes,
    pub(crate) ids: IdIndex,
    pub(crate) nodes: Nodes,
    /// Every inode's record: its name, then a file's blocks (as
    /// `blocks.rs` encodes them) or a symlink's target.
    pub(crate) names: Arena<u8>,
    pub(crate) children: Arena<Slot>,
    pub(crate) owned_children: SlotShards<OwnedChildren>,
    pub(crate) extras: SlotShards<Extra>,
    /// Where the files last appended to end (`blocks.rs`).
    pub(crate) appends: Appends,
}

/// Heap bytes of a namespace by part (capacity, not length):
/// [`Namespace::heap_parts`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeapParts {
    /// The node table: the fixed part of every inode (32 bytes a slot).
    pub nodes: usize,
    /// The name arena less its blocks: every inode's name (and a
    /// symlink's target).
    pub names: usize,
    /// The blocks in the name arena: every file's blocks, after its name.
    pub blocks: usize,
    /// The child arena: every directory's children as loaded.
    pub children: usize,
    /// Child lists moved out of the arena to be edited.
    pub owned_children: usize,
    /// The map from inode ids to slots.
    pub ids: usize,
    /// The string table (owners, groups, xattr names).
    pub strings: usize,
    /// The attribute classes.
    pub classes: usize,
    /// The side map of rare attributes (xattrs, ACLs, files under
    /// construction).
    pub extras: usize,
}

impl HeapParts {
    /// The parts' sum.
    pub fn total(&self) -> usize {
        self.nodes
            + self.names
            + self.blocks
            + self.children
            + self.owned_children
            + self.ids
            + self.strings
            + self.classes
            + self.extras
    }

    /// `(name, bytes)` of each part, in the order of the fields.
    pub fn named(&self) -> [(&'static str, usize); 9] {
        [
            ("nodes", self.nodes),
            ("names", self.names),
            ("blocks", self.blocks),
            ("children", self.children),
            ("owned_children", self.owned_children),
            ("ids", self.ids),
            ("strings", self.strings),
            ("classes", self.classes),
            ("extras", self.extras),
        ]
    }
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
            nodes: Nodes::default(),
            names: Arena::default(),
            children: Arena::default(),
            owned_children: SlotShards::default(),
            extras: SlotShards::default(),
            appends: Appends::default(),
        };
        let name = ns.put_record(b"", &[]);
        // The first class of an empty table: id 0.
        let class = ns
            .classes
            .intern(Class::directory(Perm::new(0, 0, 0o755), -1, -1))
            .unwrap_or(0);
        ns.ids.push(ROOT_ID);
        ns.nodes.push(Node {
            name,
            ..Node::new(Kind::Directory, class, info.creation_time)
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
            .filter(|&s| self.nodes[s as usize].kind() != Kind::Free)
    }

    /// The id of the inode in `slot`, live or freed. Panics if `slot` is
    /// not below [`slot_count`](Self::slot_count).
    pub fn id_of(&self, slot: Slot) -> u64 {
        self.ids.id(slot)
    }

    /// The blocks of a file whose blocks start at `s.start` of chunk
    /// `s.chunk` of the name arena, `s.len` of them, and whose preferred
    /// block size is `pbs`.
    #[inline]
    pub(crate) fn blocks_in(&self, s: Span, pbs: u64) -> Blocks<'_> {
        let chunk = self.names.chunk(s.chunk);
        Blocks::new(chunk.get(s.start as usize..).unwrap_or(&[]), s.len, pbs)
    }

    /// The blocks of file node `n` (none for other kinds).
    #[inline]
    pub(crate) fn blocks_of(&self, n: &Node) -> Blocks<'_> {
        if n.kind() != Kind::File || n.count() == 0 {
            return Blocks::empty();
        }
        let tail = self.tail(n);
        let pbs = self.classes.get(n.class()).a;
        self.blocks_in(
            Span {
                chunk: tail.chunk,
                start: tail.off,
                len: n.count(),
            },
            pbs,
        )
    }

    /// Where the part of node `n`'s record after its name starts: a
    /// file's blocks (after its access time), a symlink's target.
    #[inline]
    pub(crate) fn tail(&self, n: &Node) -> NameRef {
        let t = tail_of(&self.names, n.name);
        if n.kind() != Kind::File {
            return t;
        }
        let rest = self
            .names
            .chunk(t.chunk)
            .get(t.off as usize..)
            .unwrap_or_default();
        // The tag's varint is at most 10 bytes: the sum stays in the
        // chunk, below 4 GiB.
        #[allow(clippy::cast_possible_truncation)]
        let skip = varint_at(rest).1 as u32;
        NameRef {
            chunk: t.chunk,
            off: t.off + skip,
        }
    }

    /// Where the part of node `n`'s record after its name starts (a file's
    /// access time).
    pub(crate) fn tail_of_name(&self, n: &Node) -> NameRef {
        tail_of(&self.names, n.name)
    }

    /// File node `n`'s access time.
    pub(crate) fn atime_of(&self, n: &Node) -> u64 {
        let t = tail_of(&self.names, n.name);
        let rest = self
            .names
            .chunk(t.chunk)
            .get(t.off as usize..)
            .unwrap_or_default();
        atime_of_tag(varint_at(rest).0, n.mtime)
    }

    /// The bytes of file node `n`'s blocks in its record.
    pub(crate) fn blocks_bytes(&self, n: &Node) -> &[u8] {
        let t = self.tail(n);
        let rest = self
            .names
            .chunk(t.chunk)
            .get(t.off as usize..)
            .unwrap_or(&[]);
        &rest[..byte_len(rest, n.count()).min(rest.len())]
    }

    /// Node `n`'s body: its class's fields, and what its record and child
    /// list say.
    pub(crate) fn body_of(&self, n: &Node) -> Body {
        let atime = if n.kind() == Kind::File {
            self.atime_of(n)
        } else {
            0
        };
        let children = match n.list() {
            List::None => Span::default(),
            List::Arena { chunk, off } => Span {
                chunk,
                start: off.saturating_add(1),
                len: self
                    .children
                    .chunk(chunk)
                    .get(off as usize)
                    .copied()
                    .unwrap_or(0),
            },
            List::Run { first, len } => Span {
                chunk: RUN_CHILDREN,
                start: first,
                len,
            },
            List::Owned => Span {
                chunk: OWNED_CHILDREN,
                start: 0,
                len: 0,
            },
        };
        n.body(self.classes.get(n.class()), self.tail(n), atime, children)
    }

    /// Counts the live inodes and their blocks (one pass over the nodes).
    pub fn stats(&self) -> Stats {
        let mut st = Stats::default();
        for n in self.nodes.iter() {
            match n.kind() {
                Kind::Free => continue,
                Kind::File => {
                    st.files += 1;
                    st.blocks += u64::from(n.count());
                    st.bytes += self.blocks_of(n).map(|b| b.length).sum::<u64>();
                }
                Kind::Directory => st.directories += 1,
                Kind::Symlink => st.symlinks += 1,
            }
            st.inodes += 1;
        }
        st
    }

    /// Bytes of heap this namespace references (capacity, not length),
    /// counting what it shares with a snapshot in full: the heap a deep
    /// copy would take. The two of a namespace and its snapshot together
    /// hold less: see [`unique_heap_bytes`](Self::unique_heap_bytes).
    pub fn heap_bytes(&self) -> usize {
        self.heap_parts().total()
    }

    /// [`heap_bytes`](Self::heap_bytes), part by part: where a loaded
    /// namespace's memory goes.
    /// The blocks' share is what they take encoded, counted with one pass
    /// over the files.
    pub fn heap_parts(&self) -> HeapParts {
        let blocks: usize = self
            .nodes
            .iter()
            .filter(|n| n.kind() == Kind::File && n.count() > 0)
            .map(|n| {
                let tail = self.tail(n);
                let chunk = self.names.chunk(tail.chunk);
                byte_len(chunk.get(tail.off as usize..).unwrap_or(&[]), n.count())
            })
            .sum();
        HeapParts {
            nodes: self.nodes.heap_bytes(),
            names: self.names.heap_bytes().saturating_sub(blocks),
            blocks,
            children: self.children.heap_bytes(),
            owned_children: self
                .owned_children
                .heap_bytes(false, |v| v.heap_bytes(false)),
            ids: self.ids.heap_bytes(),
            strings: self.strings.heap_bytes(),
            classes: self.classes.heap_bytes(false),
            extras: self.extras.heap_bytes(false, extra_bytes),
        }
    }

    /// Bytes of heap only this namespace references: what dropping it
    /// would free while its clones live on. Equal to
    /// [`heap_bytes`](Self::heap_bytes) with no clone about; after a
    /// [`snapshot`](Self::snapshot), the chunks either copy has written
    /// since (and the small lists each keeps of its chunks).
    pub fn unique_heap_bytes(&self) -> usize {
        let strings = if self.strings.is_shared() {
            0
        } else {
            self.strings.heap_bytes()
        };
        self.nodes.unique_heap_bytes()
            + self.names.unique_heap_bytes()
            + self.children.unique_heap_bytes()
            + self.ids.heap_bytes()
            + strings
            + self.classes.heap_bytes(true)
            + self.owned_children.heap_bytes(true, |v| v.heap_bytes(true))
            + self.extras.heap_bytes(true, extra_bytes)
    }

    /// A consistent copy of the namespace that shares its memory: what a
    /// background checkpoint serialises while writers go on changing this
    /// one. It costs one reference count per chunk (a node chunk holds
    /// [`NODE_CHUNK`](crate::NODE_CHUNK) inodes; the arenas have a chunk
    /// per loaded sub-section and per snapshot taken; the side maps 256
    /// shards each) and the copy of the id map's runs of consecutive ids:
    /// for 5M inodes, 0.2 ms with the chunks in cache and up to about 10
    /// ms with none, growing with the number of inodes.
    ///
    /// Afterwards, a mutation of either copy copies only what it changes,
    /// once: the 12 KiB node chunk of each inode whose fixed part it
    /// changes (a new inode's, its parent's); the shard (1/256) of the
    /// edited child lists or of the extras it edits, its values cloned
    /// (a child list's chunks stay shared) and the one list chunk it
    /// changes; the string or class table when it interns a new string or
    /// class. Arenas are never copied: appends go to a new chunk. Equal
    /// to [`clone`](Clone::clone).
    ///
    /// ```
    /// use nsimage_namespace::{Namespace, NsError, NsInfo, PermSpec};
    ///
    /// let p = PermSpec { user: b"hdfs", group: b"supergroup", mode: 0o755 };
    /// let mut ns = Namespace::new(NsInfo::default());
    /// ns.mkdirs(b"/a", &p, 1)?;
    /// // Taken under the writers' lock, in microseconds; serialised after
    /// // the lock is let go.
    /// let snap = ns.snapshot();
    /// ns.mkdirs(b"/b", &p, 2)?;
    /// assert!(snap.resolve(b"/b").is_err(), "the snapshot is as it was");
    /// assert!(ns.resolve(b"/b").is_ok());
    /// assert_ne!(snap.digest(), ns.digest());
    /// # Ok::<(), NsError>(())
    /// ```
    pub fn snapshot(&self) -> Namespace {
        self.clone()
    }

    /// A [`snapshot`](Self::snapshot) for callers that take one after every
    /// few mutations (a store's durable view, at each group commit): the
    /// same, but the last chunk of each arena, when it holds at most 64
    /// KiB, is copied into the snapshot instead of shared, so that this
    /// namespace goes on appending to it in place. With
    /// [`snapshot`](Self::snapshot), each would close those chunks, and the
    /// next append would start new ones: a chunk per snapshot in each
    /// arena, which every later snapshot counts again.
    pub fn frequent_snapshot(&self) -> Namespace {
        Namespace {
            info: self.info,
            strings: self.strings.clone(),
            classes: self.classes.clone(),
            ids: self.ids.clone(),
            nodes: self.nodes.clone(),
            names: self.names.clone_keeping_tail(),
            children: self.children.clone_keeping_tail(),
            owned_children: self.owned_children.clone(),
            extras: self.extras.clone(),
            appends: self.appends,
        }
    }

    /// Appends a record of `name` (length-prefixed) followed by `tail`.
    pub(crate) fn put_record(&mut self, name: &[u8], tail: &[u8]) -> NameRef {
        // The length prefix on the stack, the rest straight into the arena.
        let mut prefix = [0u8; 10];
        let mut rest = &mut prefix[..];
        prost::encoding::encode_varint(name.len() as u64, &mut rest);
        let used = 10 - rest.len();
        let s = self.names.push_parts(&[&prefix[..used], name, tail]);
        NameRef {
            chunk: s.chunk,
            off: s.start,
        }
    }

    /// The bytes of node `n`'s record after its name: a file's access time
    /// and blocks, a symlink's target with its length prefix; empty
    /// otherwise.
    pub(crate) fn record_tail(&self, n: &Node) -> &[u8] {
        let tail = tail_of(&self.names, n.name);
        let rest = self
            .names
            .chunk(tail.chunk)
            .get(tail.off as usize..)
            .unwrap_or(&[]);
        let len = match n.kind() {
            // The access time's varint, then the blocks.
            Kind::File => {
                let tag = varint_at(rest).1;
                tag + byte_len(rest.get(tag..).unwrap_or_default(), n.count())
            }
            // The target, length-prefixed as a name is: what follows it.
            Kind::Symlink => rest.len() - name_split(rest).1.len(),
            Kind::Directory | Kind::Free => 0,
        };
        &rest[..len.min(rest.len())]
    }

    pub(crate) fn name_bytes(&self, r: NameRef) -> &[u8] {
        read_name(&self.names, r)
    }

    /// The child slots of `slot` in name order (none unless a directory).
    pub(crate) fn child_slots(&self, slot: Slot) -> Children<'_> {
        let n = &self.nodes[slot as usize];
        match n.list() {
            List::Owned => self
                .owned_children
                .get(slot)
                .map_or(Children::flat(&[]), OwnedChildren::view),
            l => self.listed(l),
        }
    }

    /// The children of a directory whose list was not edited: a run of
    /// consecutive slots, or a list in the child arena.
    #[inline]
    pub(crate) fn listed(&self, l: List) -> Children<'_> {
        match l {
            List::Run { first, len } => Children::run(first, len),
            List::Arena { chunk, off } => Children::flat(self.arena_list(chunk, off)),
            List::None | List::Owned => Children::flat(&[]),
        }
    }

    /// The slots of the child list at (`chunk`, `off`) of the child arena:
    /// its length, then them.
    #[inline]
    fn arena_list(&self, chunk: u32, off: u32) -> &[Slot] {
        let c = self.children.chunk(chunk);
        let at = off as usize;
        let len = c.get(at).map_or(0, |&l| l as usize);
        c.get(at + 1..at + 1 + len).unwrap_or_default()
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
        let list = n.list();
        if list == List::Owned {
            let Some(o) = self.owned_children.get(dir) else {
                return Err(None);
            };
            return match o.search(name_key(name), name, name_of) {
                Ok(p) => o.slot(p).ok_or(None),
                Err(p) => Err(Some(p)),
            };
        }
        let kids = self.listed(list);
        // New names often sort last (sequential names, sorted bulk
        // creation): one comparison instead of a search.
        if kids.last().is_some_and(|last| name_of(last) < name) {
            return Err(None);
        }
        kids.binary_search_by(|c| name_of(c).cmp(name))
            .ok()
            .and_then(|i| kids.get(i))
            .ok_or(None)
    }

    /// The class of the node in `slot`.
    #[inline]
    pub(crate) fn class_of(&self, slot: Slot) -> &Class {
        self.classes.get(self.nodes[slot as usize].class())
    }

    /// The id of class `c`, interned.
    pub(crate) fn intern_class(&mut self, c: Class) -> Result<ClassId> {
        self.classes.intern(c).ok_or(NsError::ClassTableFull)
    }

    /// Gives the node in `slot` class `c`.
    pub(crate) fn set_class(&mut self, slot: Slot, c: Class) -> Result<()> {
        let id = self.intern_class(c)?;
        // Left alone (its chunk not copied) when the class is the same.
        if self.nodes[slot as usize].class() != id {
            self.nodes[slot as usize].set_class(id);
        }
        Ok(())
    }
}

/// Heap bytes of one inode's extras, for memory accounting.
fn extra_bytes(e: &Extra) -> usize {
    e.xattrs.capacity() * size_of::<XAttr>()
        + e.xattrs.iter().map(|x| x.value.len()).sum::<usize>()
        + e.acl.capacity() * size_of::<AclEntry>()
        + e.under_construction.as_ref().map_or(0, |u| {
            size_of::<UnderConstruction>() + u.client_name.len() + u.client_machine.len()
        })
}

/// Reads a length-prefixed name from the name arena. A reference that does
/// not resolve (which the builder never makes) reads as the empty name.
#[inline]
pub(crate) fn read_name(names: &Arena<u8>, r: NameRef) -> &[u8] {
    let c = names.chunk(r.chunk);
    name_split(c.get(r.off as usize..).unwrap_or_default()).0
}

/// The length-prefixed name at the front of `rest`, and the bytes after
/// it.
#[inline]
fn name_split(rest: &[u8]) -> (&[u8], &[u8]) {
    let (len, used) = varint_at(rest);
    usize::try_from(len)
        .ok()
        .filter(|_| used > 0)
        .and_then(|len| rest[used..].split_at_checked(len))
        .unwrap_or((&[], &[]))
}

/// Where the part of the record at `r` after its name starts.
#[inline]
pub(crate) fn tail_of(names: &Arena<u8>, r: NameRef) -> NameRef {
    let c = names.chunk(r.chunk);
    let rest = c.get(r.off as usize..).unwrap_or_default();
    let after = name_split(rest).1;
    // The record lies in one chunk, and a chunk is below 4 GiB.
    #[allow(clippy::cast_possible_truncation)]
    let off = (c.len() - after.len()) as u32;
    NameRef {
        chunk: r.chunk,
        off: if after.is_empty() && rest.is_empty() {
            r.off
        } else {
            off
        },
    }
}

/// The varint at the front of `rest` and its length (0 and 0 where there
/// is none: records are written by this crate, so that is never read).
#[inline]
fn varint_at(rest: &[u8]) -> (u64, usize) {
    match rest.first() {
        Some(&b) if b < 0x80 => (u64::from(b), 1),
        _ => {
            let mut cursor = rest;
            match prost::encoding::decode_varint(&mut cursor) {
                Ok(v) => (v, rest.len() - cursor.len()),
                Err(_) => (0, 0),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Namespace;
    use crate::build::{DirBatch, NamespaceBuilder};
    use crate::fixtures::{F, P};
    use crate::inode_batch::{InodeBatch, Interned, LoadedBody, LoadedNode};
    use crate::nodes::NodeChunk;
    use crate::values::{Block, InodeKind, PermSpec, XAttrNs};
    use crate::view::Attrs;

    /// A deep copy of `ns` made through the builder, as a load makes it:
    /// nothing shared with `ns`, child lists in the arena.
    fn rebuilt(ns: &Namespace) -> Namespace {
        let tables = Interned::new(ns.strings().clone());
        let mut batch = InodeBatch::new(0, 0, 0);
        let mut blocks = Vec::new();
        for n in ns.iter() {
            blocks.clear();
            blocks.extend(n.blocks());
            let body = match n.attrs() {
                Attrs::File(f) => LoadedBody::File {
                    atime: f.atime,
                    replication: f.replication,
                    preferred_block_size: f.preferred_block_size,
                    storage_policy: f.storage_policy,
                    blocks: &blocks,
                },
                Attrs::Directory { ns_quota, ds_quota } => {
                    LoadedBody::Directory { ns_quota, ds_quota }
                }
                Attrs::Symlink { target } => LoadedBody::Symlink { target },
            };
            let node = LoadedNode {
                id: n.id(),
                name: n.name(),
                perm: n.perm().0,
                mtime: n.mtime(),
                body,
                extra: n.extra().cloned(),
            };
            batch.push(node, &tables).unwrap();
        }
        let (nodes, parts) = batch.into_nodes_and_parts();
        let mut b = NamespaceBuilder::new(*ns.info(), tables, nodes.into());
        b.add_inode_parts(parts).unwrap();
        let mut d = DirBatch::new(0, 0, 0);
        for n in ns.iter().filter(|n| n.kind() == InodeKind::Directory) {
            if !n.child_slots().is_empty() {
                d.push(&b, n.id(), n.children().map(|c| c.id())).unwrap();
            }
        }
        b.link(&d).unwrap();
        b.attach(vec![d]).unwrap();
        // A fresh copy, not the one the builder's tables were cloned from.
        let fresh = b.finish_linked().unwrap();
        assert_eq!(fresh.shared_with(ns), Shared::default());
        fresh
    }

    /// What two namespaces share: node chunks, arena chunks (names,
    /// blocks, children), shards of the two maps.
    #[derive(Debug, Default, PartialEq, Eq)]
    struct Shared {
        nodes: usize,
        names: usize,
        children: usize,
        owned_children: usize,
        extras: usize,
    }

    impl Namespace {
        fn shared_with(&self, o: &Namespace) -> Shared {
            Shared {
                nodes: self.nodes.shared_chunks(&o.nodes),
                names: self.names.shared_chunks(&o.names),
                children: self.children.shared_chunks(&o.children),
                owned_children: self.owned_children.shared_shards(&o.owned_children),
                extras: self.extras.shared_shards(&o.extras),
            }
        }

        /// Everything shared: what a snapshot starts as.
        fn all_of(&self) -> Shared {
            Shared {
                nodes: self.nodes.chunk_count(),
                names: self.names.chunks().len(),
                children: self.children.chunks().len(),
                owned_children: 256,
                extras: 256,
            }
        }
    }

    /// 40 directories of 200 files (one block each, every tenth with an
    /// xattr) and a directory of 3,000: about 11,000 inodes.
    fn initial() -> Namespace {
        let mut ns = Namespace::default();
        let mut block = 0;
        for d in 0..40 {
            let dir = ns
                .mkdirs(format!("/d{d:02}/sub").as_bytes(), &P, 1)
                .unwrap();
            for f in 0..200 {
                let id = ns
                    .create_in(dir, format!("f{f:03}").as_bytes(), &P, &F, 2)
                    .unwrap();
                block += 1;
                let b = Block {
                    id: block,
                    generation_stamp: 1000 + block,
                    length: block,
                };
                ns.add_block(id, b).unwrap();
                if f % 10 == 0 {
                    ns.set_xattr(id, XAttrNs::User, b"tag", b"x").unwrap();
                }
            }
        }
        let wide = ns.mkdirs(b"/wide", &P, 1).unwrap();
        for f in 0..3_000 {
            ns.create_in(
                wide,
                format!("w{:05}", (f * 7_919) % 10_007).as_bytes(),
                &P,
                &F,
                3,
            )
            .unwrap();
        }
        ns
    }

    /// Edits before the snapshot, on the loaded namespace: some lists
    /// become owned (chunked), so that the snapshot shares those too.
    fn before(ns: &mut Namespace) {
        let wide = ns.resolve(b"/wide").unwrap();
        for f in 0..500 {
            ns.create_in(wide, format!("pre{f:04}").as_bytes(), &P, &F, 4)
                .unwrap();
        }
        for d in 0..10 {
            ns.create(format!("/d{d:02}/sub/pre").as_bytes(), &P, &F, 4)
                .unwrap();
        }
        ns.set_acl(
            ns.resolve(b"/d05").unwrap(),
            &[(b"", 0, false, 7), (b"bob", 1, false, 5)],
        )
        .unwrap();
    }

    /// Every kind of mutation, after the snapshot.
    fn after(ns: &mut Namespace) {
        let etl = PermSpec {
            user: b"etl",
            group: b"etl-group",
            mode: 0o700,
        };
        ns.mkdirs(b"/new/deep/dir", &etl, 10).unwrap();
        let f = ns.create(b"/new/deep/dir/file", &etl, &F, 10).unwrap();
        ns.add_block(
            f,
            Block {
                id: 1_000_000,
                generation_stamp: 2_000_000,
                length: 5,
            },
        )
        .unwrap();
        // A block appended to a loaded file (its range in a shared chunk).
        let g = ns.resolve(b"/d03/sub/f007").unwrap();
        ns.add_block(
            g,
            Block {
                id: 1_000_001,
                generation_stamp: 2_000_001,
                length: 6,
            },
        )
        .unwrap();
        ns.symlink(b"/d01/link", b"/d02/sub/f001", &P, 11).unwrap();
        ns.rename(b"/d01/sub/f010", b"/d02/sub/moved", 12).unwrap();
        ns.rename(b"/d04", b"/new/d04", 12).unwrap();
        ns.rename(b"/wide/pre0001", b"/wide/zz-renamed", 12)
            .unwrap();
        assert_eq!(ns.delete(b"/d06", true, 13).unwrap(), 203);
        ns.delete(b"/d07/sub/f199", false, 13).unwrap();
        let wide = ns.resolve(b"/wide").unwrap();
        for f in 0..700 {
            ns.create_in(wide, format!("post{f:04}").as_bytes(), &P, &F, 14)
                .unwrap();
        }
        for f in (0..3_000).step_by(3) {
            let name = format!("/wide/w{:05}", (f * 7_919) % 10_007);
            ns.delete(name.as_bytes(), false, 15).unwrap();
        }
        let h = ns.resolve(b"/d08/sub/f020").unwrap();
        ns.set_owner(h, Some(b"newuser"), None).unwrap();
        ns.set_mode(h, 0o600).unwrap();
        ns.set_times(h, Some(77), Some(78)).unwrap();
        ns.set_replication(h, 9).unwrap();
        ns.set_xattr(h, XAttrNs::User, b"tag", b"changed").unwrap();
        ns.set_xattr(h, XAttrNs::Trusted, b"fresh-name", b"v")
            .unwrap();
        let k = ns.resolve(b"/d09/sub/f030").unwrap();
        assert!(ns.remove_xattr(k, XAttrNs::User, b"tag").unwrap());
        ns.set_acl(k, &[(b"", 0, false, 6), (b"carol", 1, false, 4)])
            .unwrap();
        ns.set_acl(ns.resolve(b"/d05").unwrap(), &[]).unwrap();
        ns.set_quota(ns.resolve(b"/d10").unwrap(), 100, 1 << 30)
            .unwrap();
        ns.set_under_construction(k, Some((b"client", b"host")))
            .unwrap();
    }

    /// A snapshot shares everything, keeps what the namespace held when it
    /// was taken whatever the namespace goes through afterwards, and a
    /// mutation afterwards copies only what it touches.
    #[test]
    fn a_snapshot_shares_memory_and_stays_as_it_was() {
        let mut live = rebuilt(&initial());
        before(&mut live);
        assert_eq!(
            live.unique_heap_bytes(),
            live.heap_bytes(),
            "nothing shared yet"
        );
        let digest = live.digest();
        let snap = live.snapshot();
        assert_eq!(live.shared_with(&snap), live.all_of());
        assert!(
            live.nodes.chunk_count() >= 11,
            "{}",
            live.nodes.chunk_count()
        );

        // A few small mutations copy a few node chunks, one shard of
        // each map and one chunk of the edited list; appends to the arenas
        // go to new chunks.
        let f = live.resolve(b"/d11/sub/f100").unwrap();
        live.set_times(f, Some(5), None).unwrap();
        live.set_xattr(f, XAttrNs::User, b"k", b"v").unwrap();
        let wide = live.resolve(b"/wide").unwrap();
        live.create_in(wide, b"w05000-new", &P, &F, 5).unwrap();
        let all = snap.all_of();
        let shared = live.shared_with(&snap);
        assert!(shared.nodes + 3 >= all.nodes, "{shared:?} of {all:?}");
        assert_eq!(
            shared,
            Shared {
                nodes: shared.nodes,
                owned_children: 255,
                extras: 255,
                ..all
            }
        );
        let ws = live.slot_of(wide).unwrap();
        let (mine, theirs) = (
            live.owned_children.get(ws).unwrap(),
            snap.owned_children.get(ws).unwrap(),
        );
        assert!(theirs.view().len() > 3_000);
        assert_eq!(mine.view().len(), theirs.view().len() + 1);
        // One chunk copied (two if the insertion split it).
        let (same, chunks) = (mine.shared_chunks(theirs), mine.chunk_count());
        assert!(same + 2 >= chunks && same > 10, "{same} of {chunks}");
        let (unique, heap) = (live.unique_heap_bytes(), live.heap_bytes());
        // The copied node chunks (12 KiB each), and a few KiB besides
        // (the copied shards, the lists of chunks and shards).
        let copied = (live.nodes.chunk_count() - shared.nodes) * size_of::<NodeChunk>();
        assert!(
            unique < copied + (24 << 10),
            "{unique} of {heap} bytes copied"
        );
        assert!(unique * 6 < heap, "{unique} of {heap} bytes copied");
        assert_eq!(snap.digest(), digest);

        // Every kind of mutation: the snapshot still reads as it was taken.
        after(&mut live);
        assert_eq!(snap.digest(), digest);
        assert_ne!(live.digest(), digest);
        assert!(snap.resolve(b"/d06/sub/f000").is_ok());
        assert!(live.resolve(b"/d06").is_err());
        assert_eq!(snap.inode(f).unwrap().mtime(), 2);
        // The chunks of /d20../d39, which no mutation touched, are still
        // shared.
        let shared = live.shared_with(&snap);
        assert!(shared.nodes >= 3, "{shared:?}");
        // What the snapshot holds is a namespace as good as any: it
        // rebuilds to itself.
        assert_eq!(rebuilt(&snap).digest(), digest);

        // The live namespace is what the same edits make without any
        // snapshot taken, and what a deep rebuild of it holds.
        let mut fresh = rebuilt(&initial());
        before(&mut fresh);
        fresh.set_times(f, Some(5), None).unwrap();
        fresh.set_xattr(f, XAttrNs::User, b"k", b"v").unwrap();
        fresh.create_in(wide, b"w05000-new", &P, &F, 5).unwrap();
        after(&mut fresh);
        assert_eq!(live.digest(), fresh.digest());
        assert_eq!(rebuilt(&live).digest(), live.digest());
        assert_eq!(live.stats(), fresh.stats());

        // Dropped, the snapshot leaves the namespace alone with its memory.
        drop(snap);
        assert_eq!(live.unique_heap_bytes(), live.heap_bytes());
    }

    /// A snapshot after every mutation (as a store's durable view takes
    /// them) with `frequent_snapshot`: each keeps its state, and the
    /// arenas do not gain a chunk per snapshot (with `snapshot` they do).
    #[test]
    fn frequent_snapshots_keep_their_state_and_add_no_chunk_each() {
        for frequent in [true, false] {
            let mut live = initial();
            let names_before = live.names.chunks().len();
            let mut snaps = Vec::new();
            for i in 0..200u64 {
                live.mkdirs(format!("/f/d{i:03}").as_bytes(), &P, i)
                    .unwrap();
                let snap = if frequent {
                    live.frequent_snapshot()
                } else {
                    live.snapshot()
                };
                snaps.push((snap, live.digest()));
            }
            let added = live.names.chunks().len() - names_before;
            if frequent {
                assert!(added <= 1, "{added} chunks for 200 snapshots");
            } else {
                assert!(added >= 199, "{added}");
            }
            for (i, (snap, digest)) in snaps.iter().enumerate() {
                assert_eq!(snap.digest(), *digest, "snapshot {i}");
                assert_eq!(rebuilt(snap).digest(), *digest, "snapshot {i}");
            }
        }
    }

    /// Snapshots of snapshots: each keeps its own state while the others
    /// change.
    #[test]
    fn snapshots_of_a_changing_namespace_each_keep_their_state() {
        let mut live = initial();
        let mut snaps = Vec::new();
        for round in 0..5u64 {
            snaps.push((live.snapshot(), live.digest()));
            let dir = live
                .mkdirs(format!("/round{round}").as_bytes(), &P, round)
                .unwrap();
            for f in 0..300 {
                live.create_in(dir, format!("f{f}").as_bytes(), &P, &F, round)
                    .unwrap();
            }
            live.delete(format!("/d{round:02}").as_bytes(), true, round)
                .unwrap();
            live.rename(b"/wide", format!("/wide{round}").as_bytes(), round)
                .unwrap();
            live.rename(format!("/wide{round}").as_bytes(), b"/wide", round)
                .unwrap();
        }
        // A snapshot mutated in turn changes neither the namespace nor
        // the other snapshots.
        let (mut first, d0) = snaps.remove(0);
        assert_eq!(first.digest(), d0);
        first.delete(b"/wide", true, 99).unwrap();
        assert_ne!(first.digest(), d0);
        for (s, d) in &snaps {
            assert_eq!(s.digest(), *d);
        }
        assert!(live.resolve(b"/wide/w00000").is_ok());
    }
}
