//! Mutations of the namespace: the operations a metadata server journals.
//! Each one validates everything before it changes anything, so a failed
//! operation leaves the namespace as it was.

use super::{
    name_key, read_name, AclEntry, Block, Body, Extra, Namespace, Node, OwnedChildren, Perm, Slot,
    Span, UnderConstruction, XAttr, XAttrNs, NO_SLOT, OWNED_CHILDREN,
};
use crate::MAX_NAME_LENGTH;

/// Why a mutation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NsError {
    #[error("no such file or directory: {0}")]
    NotFound(String),
    #[error("already exists: {0}")]
    AlreadyExists(String),
    #[error("not a directory: {0}")]
    NotADirectory(String),
    #[error("not a file: {0}")]
    NotAFile(String),
    #[error("invalid name {0:?}: empty, '.', '..', containing '/' or NUL, or too long")]
    InvalidName(String),
    #[error("invalid path {0:?}: paths are absolute")]
    InvalidPath(String),
    #[error("cannot move {0} into its own subtree")]
    IntoOwnSubtree(String),
    #[error("cannot {0} the root directory")]
    Root(&'static str),
    #[error("directory not empty: {0}")]
    NotEmpty(String),
    #[error("no inode with id {0}")]
    NoInode(u64),
    #[error("string table is full")]
    StringTableFull,
    #[error("a user, group or attribute name of {0} bytes (at most {MAX_NAME_LENGTH})")]
    StringTooLong(usize),
    #[error("inode ids exhausted")]
    IdsExhausted,
    #[error("invalid argument: {0}")]
    Invalid(String),
}

type Result<T> = std::result::Result<T, NsError>;

/// Owner, group and mode of a new inode.
#[derive(Clone, Copy, Debug)]
pub struct PermSpec<'a> {
    pub user: &'a [u8],
    pub group: &'a [u8],
    pub mode: u16,
}

/// File attributes of a new file.
#[derive(Clone, Copy, Debug)]
pub struct FileSpec {
    pub replication: u16,
    pub preferred_block_size: u64,
    pub storage_policy: u8,
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A valid single path component: the same rule the readers apply to every
/// inode but the root (FORMAT.md, INODE), so that no mutation can create a
/// name an image may not hold.
pub fn check_name(name: &[u8]) -> Result<()> {
    if !super::valid_name(name) {
        return Err(NsError::InvalidName(show(name)));
    }
    Ok(())
}

/// Splits an absolute path into its components (empty components are ignored).
fn components(path: &[u8]) -> Result<impl Iterator<Item = &[u8]>> {
    if path.first() != Some(&b'/') {
        return Err(NsError::InvalidPath(show(path)));
    }
    Ok(path.split(|&b| b == b'/').filter(|c| !c.is_empty()))
}

/// Splits an absolute path into its parent path and last component.
fn split_last(path: &[u8]) -> Result<(&[u8], &[u8])> {
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

impl OwnedChildren {
    fn insert(&mut self, pos: usize, slot: Slot, key: u64) {
        self.slots.insert(pos, slot);
        self.keys.insert(pos, key);
    }
}

impl Namespace {
    // ---- lookups -------------------------------------------------------

    /// The position of `name` among the children of directory `dir`.
    fn child_pos(&self, dir: Slot, name: &[u8]) -> std::result::Result<usize, usize> {
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
                    std::cmp::Ordering::Equal => return Ok(mid),
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
    }

    /// Removes child `s` from its parent's list: a scan of the slots in a
    /// small directory (no name is read), a search by name in a large one.
    fn unlink(&mut self, parent: Slot, s: Slot) {
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
        self.child_pos(dir, name).map(|i| self.child_slots(dir)[i])
    }

    fn resolve_slot(&self, path: &[u8]) -> Result<Slot> {
        let mut cur: Slot = 0;
        for c in components(path)? {
            if !matches!(self.nodes[cur as usize].body, Body::Directory { .. }) {
                return Err(NsError::NotADirectory(show(path)));
            }
            cur = self
                .find_child(cur, c)
                .map_err(|_| NsError::NotFound(show(path)))?;
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

    fn live_slot(&self, id: u64) -> Result<Slot> {
        self.slot_of(id).ok_or(NsError::NoInode(id))
    }

    fn dir_slot(&self, id: u64) -> Result<Slot> {
        let s = self.live_slot(id)?;
        match self.nodes[s as usize].body {
            Body::Directory { .. } => Ok(s),
            _ => Err(NsError::NotADirectory(format!("inode {id}"))),
        }
    }

    // ---- creation ------------------------------------------------------

    /// Interns a user, group, xattr or ACL name: at most
    /// `MAX_NAME_LENGTH` bytes, as every reader requires of a string.
    fn intern(&mut self, s: &[u8]) -> Result<u32> {
        if s.len() > MAX_NAME_LENGTH {
            return Err(NsError::StringTooLong(s.len()));
        }
        self.strings.intern(s).ok_or(NsError::StringTableFull)
    }

    fn intern_perm(&mut self, p: &PermSpec<'_>) -> Result<Perm> {
        // Both checked before either is interned.
        for s in [p.user, p.group] {
            if s.len() > MAX_NAME_LENGTH {
                return Err(NsError::StringTooLong(s.len()));
            }
        }
        let u = self.intern(p.user)?;
        let g = self.intern(p.group)?;
        Ok(Perm::new(u, g, p.mode))
    }

    /// Checks that `name` may be created in directory slot `dir` and returns
    /// the insertion position among its children.
    fn free_position(&self, dir: Slot, name: &[u8]) -> Result<usize> {
        check_name(name)?;
        match self.find_child(dir, name) {
            Ok(_) => Err(NsError::AlreadyExists(show(name))),
            Err(pos) => Ok(pos),
        }
    }

    fn insert_node(
        &mut self,
        dir: Slot,
        pos: usize,
        name: &[u8],
        perm: Perm,
        mtime: u64,
        body: Body,
    ) -> Result<u64> {
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
        self.nodes.push(Node {
            mtime,
            perm,
            name,
            parent: dir,
            has_extra: false,
            body,
        });
        self.owned_children_mut(dir).insert(pos, slot, key);
        self.nodes[dir as usize].mtime = mtime;
        Ok(id)
    }

    /// Makes the child list of `dir` mutable (copying it out of the arena
    /// the first time) and returns it.
    fn owned_children_mut(&mut self, dir: Slot) -> &mut OwnedChildren {
        if let Body::Directory { children, .. } = self.nodes[dir as usize].body {
            if children.chunk != OWNED_CHILDREN {
                let slots = self.children.get(children).to_vec();
                let keys = slots
                    .iter()
                    .map(|&c| name_key(read_name(&self.names, self.nodes[c as usize].name)))
                    .collect();
                if let Body::Directory { children, .. } = &mut self.nodes[dir as usize].body {
                    *children = Span {
                        chunk: OWNED_CHILDREN,
                        start: 0,
                        len: 0,
                    };
                }
                self.owned_children
                    .insert(dir, OwnedChildren { slots, keys });
            }
        }
        self.owned_children.entry(dir).or_default()
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
        let body = Body::Directory {
            ns_quota: -1,
            ds_quota: -1,
            children: Span::default(),
        };
        self.insert_node(dir, pos, name, perm, mtime, body)
    }

    /// Creates a directory and its missing ancestors; succeeds if it exists.
    pub fn mkdirs(&mut self, path: &[u8], perm: &PermSpec<'_>, mtime: u64) -> Result<u64> {
        // Validate the whole path first so that a failure creates nothing.
        let mut cur: Option<Slot> = Some(0);
        for c in components(path)? {
            check_name(c)?;
            if let Some(s) = cur {
                if !matches!(self.nodes[s as usize].body, Body::Directory { .. }) {
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
        let body = Body::File {
            atime: mtime,
            preferred_block_size: spec.preferred_block_size,
            blocks: Span::default(),
            replication: spec.replication,
            storage_policy: spec.storage_policy,
        };
        self.insert_node(dir, pos, name, perm, mtime, body)
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
        self.insert_node(dir, pos, name, perm, mtime, Body::Symlink { target })
    }

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
        let Body::File { blocks, .. } = self.nodes[s as usize].body else {
            return Err(NsError::NotAFile(format!("inode {id}")));
        };
        let new = self.blocks.append(blocks, block);
        if let Body::File { blocks, .. } = &mut self.nodes[s as usize].body {
            *blocks = new;
        }
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
        if !matches!(self.nodes[d as usize].body, Body::Directory { .. }) {
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
            stack.extend_from_slice(self.child_slots(x));
            self.owned_children.remove(&x);
            self.extras.remove(&x);
            let n = &mut self.nodes[x as usize];
            n.body = Body::Free;
            n.parent = NO_SLOT;
            n.has_extra = false;
            removed += 1;
        }
        Ok(removed)
    }

    // ---- attributes ------------------------------------------------------

    pub fn set_owner(&mut self, id: u64, user: Option<&[u8]>, group: Option<&[u8]>) -> Result<()> {
        let s = self.live_slot(id)?;
        for n in user.iter().chain(group.iter()) {
            if n.len() > MAX_NAME_LENGTH {
                return Err(NsError::StringTooLong(n.len()));
            }
        }
        let p = self.nodes[s as usize].perm;
        let u = match user {
            Some(u) => self.intern(u)?,
            None => p.user(),
        };
        let g = match group {
            Some(g) => self.intern(g)?,
            None => p.group(),
        };
        self.nodes[s as usize].perm = Perm::new(u, g, p.mode());
        Ok(())
    }

    pub fn set_mode(&mut self, id: u64, mode: u16) -> Result<()> {
        let s = self.live_slot(id)?;
        let p = self.nodes[s as usize].perm;
        self.nodes[s as usize].perm = Perm::new(p.user(), p.group(), mode);
        Ok(())
    }

    /// Sets modification and (files only) access time.
    pub fn set_times(&mut self, id: u64, mtime: Option<u64>, atime: Option<u64>) -> Result<()> {
        let s = self.live_slot(id)?;
        let n = &mut self.nodes[s as usize];
        if let (Some(a), Body::File { atime, .. }) = (atime, &mut n.body) {
            *atime = a;
        }
        if let Some(m) = mtime {
            n.mtime = m;
        }
        Ok(())
    }

    pub fn set_replication(&mut self, id: u64, replication: u16) -> Result<()> {
        let s = self.live_slot(id)?;
        match &mut self.nodes[s as usize].body {
            Body::File { replication: r, .. } => {
                *r = replication;
                Ok(())
            }
            _ => Err(NsError::NotAFile(format!("inode {id}"))),
        }
    }

    /// Sets directory quotas; -1 removes one.
    pub fn set_quota(&mut self, id: u64, ns_quota: i64, ds_quota: i64) -> Result<()> {
        let s = self.dir_slot(id)?;
        if ns_quota < -1 || ds_quota < -1 {
            return Err(NsError::Invalid("quota below -1".into()));
        }
        if let Body::Directory {
            ns_quota: n,
            ds_quota: d,
            ..
        } = &mut self.nodes[s as usize].body
        {
            *n = ns_quota;
            *d = ds_quota;
        }
        Ok(())
    }

    fn extra_mut(&mut self, s: Slot) -> &mut Extra {
        self.nodes[s as usize].has_extra = true;
        self.extras.entry(s).or_default()
    }

    fn tidy_extra(&mut self, s: Slot) {
        if self.extras.get(&s).is_some_and(Extra::is_empty) {
            self.extras.remove(&s);
            self.nodes[s as usize].has_extra = false;
        }
    }

    /// Sets (adds or replaces) an extended attribute.
    pub fn set_xattr(&mut self, id: u64, ns: XAttrNs, name: &[u8], value: &[u8]) -> Result<()> {
        let s = self.live_slot(id)?;
        if name.is_empty() || name.len() > MAX_NAME_LENGTH || value.len() > MAX_NAME_LENGTH {
            return Err(NsError::Invalid(
                "xattr name empty, or name or value too long".into(),
            ));
        }
        let name = self.intern(name)?;
        let attr = XAttr {
            ns,
            name,
            value: value.into(),
        };
        let e = self.extra_mut(s);
        match e
            .xattrs
            .binary_search_by(|x| (x.ns, x.name).cmp(&(ns, name)))
        {
            Ok(i) => e.xattrs[i] = attr,
            Err(i) => e.xattrs.insert(i, attr),
        }
        Ok(())
    }

    /// Removes an extended attribute; `Ok(false)` if it was not set.
    pub fn remove_xattr(&mut self, id: u64, ns: XAttrNs, name: &[u8]) -> Result<bool> {
        let s = self.live_slot(id)?;
        let Some(name) = self.strings.lookup(name) else {
            return Ok(false);
        };
        let Some(e) = self.extras.get_mut(&s) else {
            return Ok(false);
        };
        let found = match e
            .xattrs
            .binary_search_by(|x| (x.ns, x.name).cmp(&(ns, name)))
        {
            Ok(i) => {
                e.xattrs.remove(i);
                true
            }
            Err(_) => false,
        };
        self.tidy_extra(s);
        Ok(found)
    }

    /// Replaces the ACL: entries are (name, kind 0..=3, default scope, rwx).
    pub fn set_acl(&mut self, id: u64, entries: &[(&[u8], u8, bool, u8)]) -> Result<()> {
        let s = self.live_slot(id)?;
        if entries.iter().any(|e| e.1 > 3 || e.3 > 7) {
            return Err(NsError::Invalid(
                "ACL entry kind or permission out of range".into(),
            ));
        }
        // The same rules the readers apply, checked on the names before any
        // is interned, so that a refused call changes nothing.
        for (i, e) in entries.iter().enumerate() {
            if e.0.len() > MAX_NAME_LENGTH {
                return Err(NsError::StringTooLong(e.0.len()));
            }
            if e.1 >= 2 && !e.0.is_empty() {
                return Err(NsError::Invalid(
                    "a mask or other ACL entry has a name".into(),
                ));
            }
            if entries[..i]
                .iter()
                .any(|o| (o.0, o.1, o.2) == (e.0, e.1, e.2))
            {
                return Err(NsError::Invalid(
                    "two ACL entries have the same scope, type and name".into(),
                ));
            }
        }
        let mut acl = Vec::with_capacity(entries.len());
        for &(name, kind, default_scope, perm) in entries {
            let name = self.intern(name)?;
            acl.push(AclEntry {
                name,
                kind,
                default_scope,
                perm,
            });
        }
        self.extra_mut(s).acl = acl;
        self.tidy_extra(s);
        Ok(())
    }

    /// Marks file `id` as being written by a client, or clears the mark.
    pub fn set_under_construction(
        &mut self,
        id: u64,
        client: Option<(&[u8], &[u8])>,
    ) -> Result<()> {
        let s = self.live_slot(id)?;
        if !matches!(self.nodes[s as usize].body, Body::File { .. }) {
            return Err(NsError::NotAFile(format!("inode {id}")));
        }
        self.extra_mut(s).under_construction = client.map(|(n, m)| UnderConstruction {
            client_name: n.into(),
            client_machine: m.into(),
        });
        self.tidy_extra(s);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ROOT_ID;

    const P: PermSpec<'static> = PermSpec {
        user: b"hdfs",
        group: b"supergroup",
        mode: 0o755,
    };
    const F: FileSpec = FileSpec {
        replication: 3,
        preferred_block_size: 128 << 20,
        storage_policy: 0,
    };

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
