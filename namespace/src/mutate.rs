//! Mutations of the tree: creating directories, files, symlinks and
//! blocks, renaming and deleting. Each one validates everything before it
//! changes anything, so a failed operation leaves the namespace as it was.

use crate::arena::Span;
use crate::classes::Class;
use crate::consts::{Slot, MAX_NAME_LENGTH, NO_SLOT};
use crate::errors::{show, NsError, Result};
use crate::lookup::{check_name, components, split_last};
use crate::namespace::Namespace;
use crate::node::{name_key, Kind, Node, OWNED_CHILDREN};
use crate::values::{Block, FileSpec, PermSpec};

impl Namespace {
    /// Checks that `name` may be created in directory slot `dir` and returns
    /// the insertion position among its children.
    fn free_position(&self, dir: Slot, name: &[u8]) -> Result<usize> {
        check_name(name)?;
        match self.find_child(dir, name) {
            Ok(_) => Err(NsError::AlreadyExists(show(name))),
            Err(pos) => Ok(pos),
        }
    }

    /// Adds `node` (its time, kind, class and aux set by the caller) as
    /// child `name` of `dir` at position `pos`.
    fn insert_node(&mut self, dir: Slot, pos: usize, name: &[u8], node: Node) -> Result<u64> {
        let id = self
            .info
            .last_inode_id
            .max(self.ids.last_id().unwrap_or(0))
            .checked_add(1)
            .ok_or(NsError::IdsExhausted)?;
        let slot = self.ids.push(id).ok_or(NsError::IdsExhausted)?;
        self.info.last_inode_id = id;
        let key = name_key(name);
        let name = self.put_name(name);
        let mtime = node.mtime;
        self.nodes.push(Node {
            name,
            parent: dir,
            ..node
        });
        self.owned_children_mut(dir).insert(pos, slot, key);
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
        let pos = self.free_position(dir, name)?;
        let perm = self.intern_perm(perm)?;
        let class = self.intern_class(Class::directory(perm, -1, -1))?;
        let node = Node::new(Kind::Directory, class, mtime, 0);
        self.insert_node(dir, pos, name, node)
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
                cur = self.find_child(s, c).ok();
            }
        }
        let mut id = self.id_of(0);
        for c in components(path)? {
            let dir = self.live_slot(id)?;
            id = match self.find_child(dir, c) {
                Ok(s) => self.id_of(s),
                Err(_) => self.mkdir_in(id, c, perm, mtime)?,
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
        let pos = self.free_position(dir, name)?;
        let perm = self.intern_perm(perm)?;
        let class = Class::file(
            perm,
            spec.preferred_block_size,
            spec.replication,
            spec.storage_policy,
        );
        let class = self.intern_class(class)?;
        // A new file's access time is its creation time.
        let node = Node::new(Kind::File, class, mtime, mtime);
        self.insert_node(dir, pos, name, node)
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
        let pos = self.free_position(dir, name)?;
        if target.is_empty() || target.len() > MAX_NAME_LENGTH {
            return Err(NsError::Invalid(format!(
                "symlink target of {} bytes",
                target.len()
            )));
        }
        let perm = self.intern_perm(perm)?;
        let target = self.put_name(target);
        let class = self.intern_class(Class::symlink(perm))?;
        let node = Node::new(Kind::Symlink, class, mtime, target.pack());
        self.insert_node(dir, pos, name, node)
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
        if n.kind != Kind::File {
            return Err(NsError::NotAFile(format!("inode {id}")));
        }
        self.nodes[s as usize].span = self.append_block(n.span, block);
        self.info.last_block_id = block.id;
        self.info.generation_stamp = self.info.generation_stamp.max(block.generation_stamp);
        Ok(())
    }

    /// Appends `block` to a file's block range: in place when the range
    /// ends its chunk; else a short range is moved to the tail through a
    /// buffer on the stack (no allocation), a long one by the arena.
    fn append_block(&mut self, blocks: Span, block: Block) -> Span {
        const SHORT: usize = 16;
        let cur = self.blocks.get(blocks);
        let n = cur.len();
        let ends_chunk = n > 0
            && (blocks.start as usize).checked_add(n)
                == Some(self.blocks.chunk(blocks.chunk).len());
        if ends_chunk || n >= SHORT {
            return self.blocks.append(blocks, block);
        }
        let mut buf = [Block::default(); SHORT];
        buf[..n].copy_from_slice(cur);
        buf[n] = block;
        self.blocks.push(&buf[..=n])
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
        let pos = self.free_position(d, dname)?;
        let old_parent = self.nodes[s as usize].parent;
        self.unlink(old_parent, s);
        self.nodes[old_parent as usize].mtime = mtime;
        // The insertion position was computed before the removal; recompute
        // when both parents are the same directory.
        let pos = if old_parent == d {
            self.find_child(d, dname).err().unwrap_or(pos)
        } else {
            pos
        };
        let name = self.put_name(dname);
        let n = &mut self.nodes[s as usize];
        n.name = name;
        n.parent = d;
        self.owned_children_mut(d).insert(pos, s, name_key(dname));
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
                stack.extend_from_slice(self.child_slots(x));
                if n.span.chunk == OWNED_CHILDREN {
                    self.owned_children.remove(&x);
                }
            }
            if n.has_extra {
                self.extras.remove(&x);
            }
            let n = &mut self.nodes[x as usize];
            n.kind = Kind::Free;
            n.span = Span::default();
            n.parent = NO_SLOT;
            n.has_extra = false;
            removed += 1;
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
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
}
