//! Mutations of the tree: creating directories, files, symlinks and
//! blocks, renaming and deleting. Each one validates everything before it
//! changes anything, so a failed operation leaves the namespace as it was.
//! Adding a child to a directory's list and removing one (the list copied
//! out of the arena into chunks the first time it is edited) live here too.

use crate::arena::Span;
use crate::blocks::{encode, end_and_last};
use crate::children::{name_key, OwnedChildren, Place};
use crate::classes::Class;
use crate::consts::{Slot, MAX_NAME_LENGTH, NO_SLOT, RESERVED_NAME};
use crate::errors::{show, NsError, Result};
use crate::lookup::{check_name, components, split_last};
use crate::namespace::{read_name, Namespace};
use crate::node::{Kind, List, NameRef, Node};
use crate::values::{Block, FileSpec, PermSpec};

impl Namespace {
    /// Checks that `name` may be created in directory slot `dir` (the one
    /// place every creation and rename passes, so the reserved name is
    /// refused here alone); returns where it goes when the list is already
    /// an owned one (so that the insertion does not search it again).
    fn check_free(&self, dir: Slot, name: &[u8]) -> Result<Option<Place>> {
        check_name(name)?;
        if dir == 0 && name == RESERVED_NAME {
            return Err(NsError::Reserved(show(name)));
        }
        match self.child_place(dir, name) {
            Ok(_) => Err(NsError::AlreadyExists(show(name))),
            Err(place) => Ok(place),
        }
    }

    /// Makes the child list of `dir` editable, copying it out of the arena
    /// the first time (straight into chunks, with the names' keys), and
    /// returns it with a reader of its children's names.
    fn owned_children_mut<'s>(
        &'s mut self,
        dir: Slot,
    ) -> (&'s mut OwnedChildren, impl Fn(Slot) -> &'s [u8] + 's) {
        let names = &self.names;
        let n = &self.nodes[dir as usize];
        if n.is_dir() && !n.owns_children() {
            let listed: Vec<Slot> = self.listed(n.list()).iter().collect();
            let nodes = &self.nodes;
            let owned = OwnedChildren::from_sorted(&listed, |c| {
                name_key(read_name(names, nodes[c as usize].name))
            });
            self.nodes[dir as usize].set_list(List::Owned);
            self.owned_children.insert(dir, owned);
        }
        let nodes = &self.nodes;
        let list = self.owned_children.get_or_default(dir);
        (list, move |c: Slot| {
            read_name(names, nodes[c as usize].name)
        })
    }

    /// Adds child `slot`, named `name`, to the list of directory `dir`, in
    /// name order. `place`, when given, is where
    /// [`check_free`](Self::check_free) found it goes, the list unchanged
    /// since.
    fn link(&mut self, dir: Slot, slot: Slot, name: &[u8], place: Option<Place>) {
        let key = name_key(name);
        let (list, name_of) = self.owned_children_mut(dir);
        let place = place.unwrap_or_else(|| list.search(key, name, name_of).unwrap_or_else(|p| p));
        list.insert(place, slot, key);
    }

    /// Removes child `s` from its parent's list: a scan of the slots in a
    /// small directory (no name is read), a search by name in a large one.
    fn unlink(&mut self, parent: Slot, s: Slot) {
        let (list, name_of) = self.owned_children_mut(parent);
        let place = if list.view().len() <= 128 {
            list.scan(s)
        } else {
            let name = name_of(s);
            list.search(name_key(name), name, name_of).ok()
        };
        if let Some(p) = place {
            list.remove(p);
        }
    }

    /// Adds `node` (its time, kind, class and aux set by the caller) as
    /// child `name` of `dir`, `tail` following the name in its record (a
    /// symlink's target).
    fn insert_node(
        &mut self,
        dir: Slot,
        name: &[u8],
        tail: &[u8],
        place: Option<Place>,
        node: Node,
    ) -> Result<u64> {
        let id = self
            .info
            .last_inode_id
            .max(self.ids.last_id().unwrap_or(0))
            .checked_add(1)
            .ok_or(NsError::IdsExhausted)?;
        let slot = self.ids.push(id).ok_or(NsError::IdsExhausted)?;
        self.info.last_inode_id = id;
        let name_ref = self.put_record(name, tail);
        let mtime = node.mtime;
        self.nodes.push(Node {
            name: name_ref,
            parent: dir,
            ..node
        });
        self.link(dir, slot, name, place);
        self.nodes[dir as usize].mtime = mtime;
        Ok(id)
    }

    /// Creates directory `name` in directory `parent`.
    pub fn mkdir_in(
        &mut self,
        parent: u64,
        name: &[u8],
        perm: &PermSpec<'_>,
        mtime: u64,
    ) -> Result<u64> {
        let dir = self.dir_slot(parent)?;
        let place = self.check_free(dir, name)?;
        let perm = self.intern_perm(perm)?;
        let class = self.intern_class(Class::directory(perm, -1, -1))?;
        let node = Node::new(Kind::Directory, class, mtime);
        self.insert_node(dir, name, &[], place, node)
    }

    /// Creates a directory and its missing ancestors; succeeds if it exists.
    pub fn mkdirs(&mut self, path: &[u8], perm: &PermSpec<'_>, mtime: u64) -> Result<u64> {
        // Validate the whole path first so that a failure creates nothing.
        let mut cur: Option<Slot> = Some(0);
        for c in components(path)? {
            check_name(c)?;
            if let Some(s) = cur {
                if !self.nodes[s as usize].is_dir() {
                    return Err(NsError::NotADirectory(show(path)));
                }
                cur = self.find_child(s, c);
            }
        }
        let mut id = self.id_of(0);
        for c in components(path)? {
            let dir = self.live_slot(id)?;
            id = match self.find_child(dir, c) {
                Some(s) => self.id_of(s),
                None => self.mkdir_in(id, c, perm, mtime)?,
            };
        }
        Ok(id)
    }

    /// Creates an empty file `name` in directory `parent`.
    pub fn create_in(
        &mut self,
        parent: u64,
        name: &[u8],
        perm: &PermSpec<'_>,
        spec: &FileSpec,
        mtime: u64,
    ) -> Result<u64> {
        let dir = self.dir_slot(parent)?;
        let place = self.check_free(dir, name)?;
        let perm = self.intern_perm(perm)?;
        let class = Class::file(
            perm,
            spec.preferred_block_size,
            spec.replication,
            spec.storage_policy,
        );
        let class = self.intern_class(class)?;
        // A new file's access time is its creation time: tag 0.
        let node = Node::new(Kind::File, class, mtime);
        self.insert_node(dir, name, &[0], place, node)
    }

    /// Creates an empty file at `path`; its parent must exist.
    pub fn create(
        &mut self,
        path: &[u8],
        perm: &PermSpec<'_>,
        spec: &FileSpec,
        mtime: u64,
    ) -> Result<u64> {
        let (parent, name) = split_last(path)?;
        let parent = self.resolve(parent)?;
        self.create_in(parent, name, perm, spec, mtime)
    }

    /// Creates symlink `name` in directory `parent` pointing at `target`.
    pub fn symlink_in(
        &mut self,
        parent: u64,
        name: &[u8],
        target: &[u8],
        perm: &PermSpec<'_>,
        mtime: u64,
    ) -> Result<u64> {
        let dir = self.dir_slot(parent)?;
        let place = self.check_free(dir, name)?;
        if target.is_empty() || target.len() > MAX_NAME_LENGTH {
            return Err(NsError::Invalid(format!(
                "symlink target of {} bytes",
                target.len()
            )));
        }
        let perm = self.intern_perm(perm)?;
        let mut tail = Vec::with_capacity(10 + target.len());
        prost::encoding::encode_varint(target.len() as u64, &mut tail);
        tail.extend_from_slice(target);
        let class = self.intern_class(Class::symlink(perm))?;
        let node = Node::new(Kind::Symlink, class, mtime);
        self.insert_node(dir, name, &tail, place, node)
    }

    /// Creates a symlink at `path` pointing at `target` (1 to
    /// [`MAX_NAME_LENGTH`] bytes, not resolved); its parent must exist.
    pub fn symlink(
        &mut self,
        path: &[u8],
        target: &[u8],
        perm: &PermSpec<'_>,
        mtime: u64,
    ) -> Result<u64> {
        let (parent, name) = split_last(path)?;
        let parent = self.resolve(parent)?;
        self.symlink_in(parent, name, target, perm, mtime)
    }

    /// Appends a block to file `id`. Block ids are allocated in increasing
    /// order and never reused, so a new block's id must be above
    /// `last_block_id`; that keeps ids unique across the namespace, as
    /// FORMAT.md requires of every image.
    pub fn add_block(&mut self, id: u64, block: Block) -> Result<()> {
        if block.id <= self.info.last_block_id {
            return Err(NsError::Invalid(format!(
                "block id {} is not above last_block_id {}",
                block.id, self.info.last_block_id
            )));
        }
        let s = self.live_slot(id)?;
        let n = &self.nodes[s as usize];
        if n.kind() != Kind::File {
            return Err(NsError::NotAFile(format!("inode {id}")));
        }
        // The file's record (name, then blocks) grows by one block: in
        // place when it ends its chunk, else copied to the arena's tail
        // first.
        let pbs = self.classes.get(n.class()).a;
        let (name, count) = (n.name, n.count());
        let (end, prev) = match self.appends.find(s, name, count) {
            Some((end, last)) => (end as usize, Some(last)),
            None => {
                let tail = self.tail(n);
                let (blocks, last) = end_and_last(
                    self.names
                        .chunk(tail.chunk)
                        .get(tail.off as usize..)
                        .unwrap_or(&[]),
                    count,
                );
                (tail.off as usize + blocks, last)
            }
        };
        let mut bytes = Vec::with_capacity(40);
        encode(&block, prev, pbs, &mut bytes);
        let len = end - name.off as usize;
        let record = Span {
            chunk: name.chunk,
            start: name.off,
            len: u32::try_from(len)
                .map_err(|_| NsError::Invalid(format!("file {id}'s blocks take over 4 GiB")))?,
        };
        let count = count
            .checked_add(1)
            .ok_or_else(|| NsError::Invalid(format!("file {id} has 2^32 blocks")))?;
        let at = self.names.extend(record, &bytes);
        let record = NameRef {
            chunk: at.chunk,
            off: at.start,
        };
        let n = &mut self.nodes[s as usize];
        n.name = record;
        n.set_count(count);
        // `extend` keeps a range within one chunk, below 4 GiB.
        self.appends
            .note(s, record, count, at.start.saturating_add(at.len), block.id);
        self.info.last_block_id = block.id;
        self.info.generation_stamp = self.info.generation_stamp.max(block.generation_stamp);
        Ok(())
    }

    // ---- moves and deletes ----------------------------------------------

    /// Moves `src` to `dst`; `dst` must not exist and its parent must.
    pub fn rename(&mut self, src: &[u8], dst: &[u8], mtime: u64) -> Result<()> {
        let s = self.resolve_slot(src)?;
        let (dparent, dname) = split_last(dst)?;
        let d = self.resolve_slot(dparent)?;
        self.rename_slots(s, d, dname, mtime)
    }

    /// Moves inode `src` into directory `dst_parent` under `name`.
    pub fn rename_in(&mut self, src: u64, dst_parent: u64, name: &[u8], mtime: u64) -> Result<()> {
        let s = self.live_slot(src)?;
        let d = self.live_slot(dst_parent)?;
        self.rename_slots(s, d, name, mtime)
    }

    fn rename_slots(&mut self, s: Slot, d: Slot, dname: &[u8], mtime: u64) -> Result<()> {
        if s == 0 {
            return Err(NsError::Root("rename"));
        }
        if !self.nodes[d as usize].is_dir() {
            return Err(NsError::NotADirectory(format!("inode {}", self.id_of(d))));
        }
        let mut up = d;
        while up != NO_SLOT {
            if up == s {
                return Err(NsError::IntoOwnSubtree(format!("inode {}", self.id_of(s))));
            }
            up = self.nodes[up as usize].parent;
        }
        let place = self.check_free(d, dname)?;
        let old_parent = self.nodes[s as usize].parent;
        // Removing `s` from the same list moves the place found.
        let place = place.filter(|_| old_parent != d);
        self.unlink(old_parent, s);
        self.nodes[old_parent as usize].mtime = mtime;
        // The record moves with the name: a file's blocks, a link's target.
        let tail = self.record_tail(&self.nodes[s as usize]).to_vec();
        let name = self.put_record(dname, &tail);
        let n = &mut self.nodes[s as usize];
        n.name = name;
        n.parent = d;
        self.link(d, s, dname, place);
        self.nodes[d as usize].mtime = mtime;
        Ok(())
    }

    /// Deletes the inode at `path`; a non-empty directory needs `recursive`.
    /// Returns the number of inodes removed.
    pub fn delete(&mut self, path: &[u8], recursive: bool, mtime: u64) -> Result<u64> {
        let s = self.resolve_slot(path)?;
        self.delete_slot(s, recursive, mtime)
    }

    /// Deletes inode `id`, as [`delete`](Self::delete).
    pub fn delete_id(&mut self, id: u64, recursive: bool, mtime: u64) -> Result<u64> {
        let s = self.live_slot(id)?;
        self.delete_slot(s, recursive, mtime)
    }

    fn delete_slot(&mut self, s: Slot, recursive: bool, mtime: u64) -> Result<u64> {
        if s == 0 {
            return Err(NsError::Root("delete"));
        }
        if !recursive && !self.child_slots(s).is_empty() {
            return Err(NsError::NotEmpty(format!("inode {}", self.id_of(s))));
        }
        let parent = self.nodes[s as usize].parent;
        self.unlink(parent, s);
        self.nodes[parent as usize].mtime = mtime;
        let mut stack = vec![s];
        let mut removed = 0;
        while let Some(x) = stack.pop() {
            // Only a directory has children, and only one whose list was
            // edited has an owned list; only a node marked `has_extra` has
            // an extra: the maps are not searched for the others.
            let n = &self.nodes[x as usize];
            if n.is_dir() {
                stack.extend(self.child_slots(x));
                if n.owns_children() {
                    self.owned_children.remove(x);
                }
            }
            if n.has_extra() {
                self.extras.remove(x);
            }
            let n = &mut self.nodes[x as usize];
            let class = n.class();
            *n = Node {
                mtime: n.mtime,
                name: n.name,
                ..Node::PLACEHOLDER
            };
            n.set_class(class);
            removed += 1;
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use crate::consts::ROOT_ID;
    use crate::errors::NsError;
    use crate::namespace::Namespace;
    use crate::values::Block;

    use crate::fixtures::{F, P};

    #[test]
    fn failed_ops_change_nothing() {
        let mut ns = Namespace::default();
        ns.mkdirs(b"/a/b", &P, 1).unwrap();
        ns.create(b"/a/f", &P, &F, 1).unwrap();
        let before = ns.digest();
        for bad in [&b""[..], b".", b"..", b"x/y"] {
            let a = ns.resolve(b"/a").unwrap();
            assert!(matches!(
                ns.mkdir_in(a, bad, &P, 9),
                Err(NsError::InvalidName(_))
            ));
        }
        assert!(matches!(
            ns.create(b"/a/f", &P, &F, 9),
            Err(NsError::AlreadyExists(_))
        ));
        assert!(matches!(
            ns.create(b"/nope/f", &P, &F, 9),
            Err(NsError::NotFound(_))
        ));
        assert!(matches!(
            ns.create(b"/a/f/g", &P, &F, 9),
            Err(NsError::NotADirectory(_))
        ));
        assert!(matches!(
            ns.rename(b"/a", b"/a/b/a", 9),
            Err(NsError::IntoOwnSubtree(_))
        ));
        assert!(matches!(ns.rename(b"/", b"/x", 9), Err(NsError::Root(_))));
        assert!(matches!(
            ns.delete(b"/a", false, 9),
            Err(NsError::NotEmpty(_))
        ));
        assert!(matches!(ns.delete(b"/", true, 9), Err(NsError::Root(_))));
        assert!(matches!(
            ns.mkdirs(b"/a/f/x", &P, 9),
            Err(NsError::NotADirectory(_))
        ));
        assert!(matches!(
            ns.mkdirs(b"relative", &P, 9),
            Err(NsError::InvalidPath(_))
        ));
        assert_eq!(ns.digest(), before);
    }

    #[test]
    fn the_reserved_name_is_refused_under_the_root_only() {
        let mut ns = Namespace::default();
        ns.mkdirs(b"/a", &P, 1).unwrap();
        let f = ns.create(b"/a/f", &P, &F, 1).unwrap();
        let before = ns.digest();
        let reserved = |r: Result<u64, NsError>| matches!(r, Err(NsError::Reserved(_)));
        assert!(reserved(ns.mkdir_in(ROOT_ID, b".reserved", &P, 9)));
        assert!(reserved(ns.mkdirs(b"/.reserved/.inodes/16385/x", &P, 9)));
        assert!(reserved(ns.create(b"/.reserved", &P, &F, 9)));
        assert!(reserved(ns.symlink(b"/.reserved", b"/a", &P, 9)));
        assert!(matches!(
            ns.rename_in(f, ROOT_ID, b".reserved", 9),
            Err(NsError::Reserved(_))
        ));
        assert_eq!(ns.digest(), before, "a refusal changes nothing");
        // Anywhere else the name is an ordinary one.
        let a = ns.resolve(b"/a").unwrap();
        ns.mkdir_in(a, b".reserved", &P, 9).unwrap();
        ns.rename(b"/a/f", b"/a/.reserved/f", 9).unwrap();
    }

    #[test]
    fn block_ids_must_be_fresh() {
        let mut ns = Namespace::default();
        let f = ns.create(b"/f", &P, &F, 1).unwrap();
        let b = |id| Block {
            id,
            generation_stamp: 7,
            length: 1,
        };
        ns.add_block(f, b(5)).unwrap();
        assert_eq!(ns.info().last_block_id, 5);
        // A repeated or older id would make two blocks share an id, which
        // every reader refuses: the mutation is refused instead.
        assert!(matches!(ns.add_block(f, b(5)), Err(NsError::Invalid(_))));
        assert!(matches!(ns.add_block(f, b(3)), Err(NsError::Invalid(_))));
        ns.add_block(f, b(9)).unwrap();
        assert_eq!(ns.stats().blocks, 2);
    }

    #[test]
    fn blocks_append_in_order_wherever_the_range_lies() {
        let mut ns = Namespace::default();
        let f = ns.create(b"/f", &P, &F, 1).unwrap();
        let g = ns.create(b"/g", &P, &F, 1).unwrap();
        let b = |id| Block {
            id,
            generation_stamp: 1000 + id,
            length: id,
        };
        let mut want_f = Vec::new();
        let mut want_g = Vec::new();
        // Interleaved: each append finds the other file's block after its
        // range and moves it (short ranges on the stack, long ones by the
        // arena), except when the range ends its chunk.
        for id in 1..=60u64 {
            let (file, want) = if id % 3 == 0 {
                (g, &mut want_g)
            } else {
                (f, &mut want_f)
            };
            ns.add_block(file, b(id)).unwrap();
            want.push(b(id));
            assert_eq!(ns.inode(f).unwrap().blocks(), &want_f[..]);
            assert_eq!(ns.inode(g).unwrap().blocks(), &want_g[..]);
        }
        assert_eq!(ns.stats().blocks, 60);
    }

    /// Files written block by block, many at once (more than the appends a
    /// namespace remembers), with snapshots taken and renames (which move
    /// a record) between the appends: every file keeps every block in
    /// order, and every snapshot what it saw. 40,000 appends: with a cost
    /// growing with a file's blocks (each append reading them all) this
    /// test would take minutes.
    #[test]
    fn files_written_block_by_block_keep_every_block() {
        let mut ns = Namespace::default();
        let files: Vec<u64> = (0..12)
            .map(|i| ns.create(format!("/f{i}").as_bytes(), &P, &F, 1).unwrap())
            .collect();
        let mut want = vec![Vec::new(); files.len()];
        let mut snaps = Vec::new();
        for id in 1..=40_000u64 {
            // Mostly one file at a time, sometimes all of them in turn.
            let k = if id % 7 == 0 {
                usize::try_from(id / 7).unwrap() % files.len()
            } else {
                usize::try_from(id / 5_000).unwrap() % files.len()
            };
            let b = Block {
                id,
                generation_stamp: 1_000 + id + id % 3,
                length: if id % 4 == 0 { 1 << 27 } else { id },
            };
            ns.add_block(files[k], b).unwrap();
            want[k].push(b);
            if id % 4_999 == 0 {
                snaps.push((ns.frequent_snapshot(), want.clone()));
            }
            if id % 6_007 == 0 {
                let name = format!("renamed-{id}");
                ns.rename_in(files[k], ROOT_ID, name.as_bytes(), 2).unwrap();
            }
        }
        for (f, w) in files.iter().zip(&want) {
            assert_eq!(ns.inode(*f).unwrap().blocks(), w[..]);
        }
        for (snap, saw) in &snaps {
            for (f, w) in files.iter().zip(saw) {
                assert_eq!(snap.inode(*f).unwrap().blocks(), w[..]);
            }
        }
        assert_eq!(ns.stats().blocks, 40_000);
    }

    #[test]
    fn recursive_delete_frees_the_subtree() {
        let mut ns = Namespace::default();
        ns.mkdirs(b"/a/b/c", &P, 1).unwrap();
        let f = ns.create(b"/a/b/f", &P, &F, 1).unwrap();
        ns.add_block(
            f,
            Block {
                id: 1,
                generation_stamp: 1001,
                length: 10,
            },
        )
        .unwrap();
        assert_eq!(ns.delete(b"/a", true, 2).unwrap(), 4);
        assert_eq!(ns.stats().inodes, 1);
        assert!(ns.inode(f).is_none());
        assert!(ns.create(b"/a", &P, &F, 3).is_ok());
    }

    #[test]
    fn rename_within_one_directory_keeps_children_sorted() {
        let mut ns = Namespace::default();
        for n in ["/a", "/c", "/e"] {
            ns.create(n.as_bytes(), &P, &F, 1).unwrap();
        }
        ns.rename(b"/a", b"/d", 2).unwrap();
        let names: Vec<_> = ns.root().children().map(|c| c.name().to_vec()).collect();
        assert_eq!(names, [b"c".to_vec(), b"d".to_vec(), b"e".to_vec()]);
    }

    /// A small deterministic generator (no crate needed): 64-bit LCG,
    /// high bits out.
    struct Lcg(u64);
    impl Lcg {
        fn below(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % n
        }
    }

    /// Random creates, deletes and renames of names in one large directory
    /// (names sharing eight-byte prefixes, so name keys tie) against a
    /// sorted map: the children's order, the lookups and the view's
    /// searches agree with the model while the list grows past many chunk
    /// splits and shrinks back to nothing.
    #[test]
    fn a_wide_directory_follows_a_sorted_map() {
        use std::collections::BTreeMap;
        let mut ns = Namespace::default();
        let d = ns.mkdir_in(ROOT_ID, b"d", &P, 1).unwrap();
        let other = ns.mkdir_in(ROOT_ID, b"o", &P, 1).unwrap();
        let mut model: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
        let mut r = Lcg(42);
        let prefixes: [&[u8]; 5] = [b"sharedpf", b"sharedp", b"sharedpf-", b"a", b"zz"];
        let name = |r: &mut Lcg| {
            let mut n = prefixes[r.below(prefixes.len())].to_vec();
            n.extend_from_slice(format!("{}", r.below(5_000)).as_bytes());
            n
        };
        let check = |ns: &Namespace, model: &BTreeMap<Vec<u8>, u64>| {
            let dir = ns.inode(d).unwrap();
            let got: Vec<(Vec<u8>, u64)> = dir
                .children()
                .map(|c| (c.name().to_vec(), c.id()))
                .collect();
            let want: Vec<(Vec<u8>, u64)> = model.iter().map(|(k, &v)| (k.clone(), v)).collect();
            assert_eq!(got, want);
            let kids = dir.child_slots();
            assert_eq!(kids.len(), model.len());
            assert_eq!(kids.iter().len(), model.len());
            assert_eq!(
                kids.last().map(|s| ns.id_of(s)),
                model.values().last().copied()
            );
            let name_of = |s| ns.at(s).unwrap().name();
            for (i, (k, &id)) in model.iter().enumerate().step_by(97) {
                assert_eq!(kids.get(i).map(|s| ns.id_of(s)), Some(id));
                assert_eq!(kids.iter().nth(i).map(|s| ns.id_of(s)), Some(id));
                assert_eq!(kids.binary_search_by(|s| name_of(s).cmp(k)), Ok(i));
                assert_eq!(kids.partition_point(|s| name_of(s) <= &k[..]), i + 1);
            }
            assert_eq!(kids.get(model.len()), None);
        };
        let path = |n: &[u8]| [&b"/d/"[..], n].concat();
        // Grow (mostly creates), then shrink (mostly deletes) to empty.
        for (phase, create_pct) in [(0, 85), (1, 15)] {
            for step in 0..8_000 {
                let n = name(&mut r);
                let roll = r.below(100);
                if roll < create_pct {
                    let made = if roll.is_multiple_of(5) {
                        ns.mkdir_in(d, &n, &P, 2)
                    } else {
                        ns.create_in(d, &n, &P, &F, 2)
                    };
                    match made {
                        Ok(id) => assert!(model.insert(n.clone(), id).is_none()),
                        Err(NsError::AlreadyExists(_)) => assert!(model.contains_key(&n)),
                        Err(e) => panic!("{e}"),
                    }
                } else if let Some((k, id)) = model
                    .iter()
                    .nth(r.below(model.len().max(1)))
                    .map(|(k, &v)| (k.clone(), v))
                {
                    match roll % 3 {
                        0 => {
                            ns.delete_id(id, false, 3).unwrap();
                            model.remove(&k);
                        }
                        1 if !model.contains_key(&n) => {
                            // Renamed within the directory.
                            ns.rename_in(id, d, &n, 3).unwrap();
                            model.remove(&k);
                            model.insert(n.clone(), id);
                        }
                        _ => {
                            // Out and back in, under another name if free.
                            ns.rename_in(id, other, b"x", 3).unwrap();
                            model.remove(&k);
                            let back = if model.contains_key(&n) { k } else { n.clone() };
                            ns.rename_in(id, d, &back, 3).unwrap();
                            model.insert(back, id);
                        }
                    }
                }
                assert_eq!(
                    ns.resolve(&path(&n)).ok(),
                    model.get(&n).copied(),
                    "phase {phase} step {step}"
                );
                if step % 1_000 == 999 {
                    check(&ns, &model);
                }
            }
            check(&ns, &model);
            if phase == 0 {
                assert!(model.len() > 3_000, "{} names", model.len());
            }
        }
        // Empty the directory for good: every chunk is dropped.
        for id in model.values() {
            ns.delete_id(*id, false, 4).unwrap();
        }
        model.clear();
        check(&ns, &model);
        assert!(ns.inode(d).unwrap().child_slots().is_empty());
    }
}
