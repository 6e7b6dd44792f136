//! Bulk construction of a namespace from decoded image records, for the
//! loader. Work is cut into batches (one per sub-section) that can be filled
//! independently and then merged; every structural rule of FORMAT.md that
//! involves more than one record is checked here.

use super::{
    Arena, Block, Body, Extra, IdIndex, NameRef, Namespace, Node, NsInfo, Perm, Slot, Span,
    StringTable, NO_SLOT,
};
use crate::{MAX_NAME_LENGTH, ROOT_ID};
use std::collections::HashMap;

/// The kind-specific part of a decoded inode record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadedBody<'a> {
    File {
        atime: u64,
        replication: u16,
        preferred_block_size: u64,
        storage_policy: u8,
        blocks: &'a [Block],
    },
    Directory {
        ns_quota: i64,
        ds_quota: i64,
    },
    Symlink {
        target: &'a [u8],
    },
}

/// One decoded inode record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedNode<'a> {
    pub id: u64,
    pub name: &'a [u8],
    pub perm: u64,
    pub mtime: u64,
    pub body: LoadedBody<'a>,
    pub extra: Option<Extra>,
}

/// Inodes decoded from one INODE piece, with their own arena chunk.
pub struct InodeBatch {
    chunk: u32,
    ids: IdIndex,
    nodes: Vec<Node>,
    names: Vec<u8>,
    blocks: Vec<Block>,
    extras: Vec<(u32, Extra)>,
    block_stats: BlockStats,
}

/// What the block rules need from a batch's blocks, gathered as they are
/// decoded so that the whole-image check makes one pass only.
#[derive(Clone, Copy, Debug)]
pub struct BlockStats {
    pub count: u64,
    pub min_id: u64,
    pub max_id: u64,
    pub max_generation_stamp: u64,
}

impl Default for BlockStats {
    fn default() -> Self {
        BlockStats {
            count: 0,
            min_id: u64::MAX,
            max_id: 0,
            max_generation_stamp: 0,
        }
    }
}

impl BlockStats {
    fn add(&mut self, blocks: &[Block]) {
        for b in blocks {
            self.min_id = self.min_id.min(b.id);
            self.max_id = self.max_id.max(b.id);
            self.max_generation_stamp = self.max_generation_stamp.max(b.generation_stamp);
        }
        self.count = self.count.saturating_add(blocks.len() as u64);
    }

    fn merge(&mut self, o: &BlockStats) {
        self.count = self.count.saturating_add(o.count);
        self.min_id = self.min_id.min(o.min_id);
        self.max_id = self.max_id.max(o.max_id);
        self.max_generation_stamp = self.max_generation_stamp.max(o.max_generation_stamp);
    }
}

/// A valid name for an inode other than the root (FORMAT.md, INODE): 1 to
/// 65,536 bytes, not `.` or `..`, no `/` and no NUL byte.
#[inline]
pub fn valid_name(name: &[u8]) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LENGTH
        && name != b"."
        && name != b".."
        && !has_slash_or_nul(name)
}

/// Whether `name` holds a `/` or a NUL byte, eight bytes at a time: this
/// runs once per inode on the load's hot path.
#[inline]
fn has_slash_or_nul(name: &[u8]) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    // Non-zero exactly when some byte of `w` is zero (a borrow can only
    // mark bytes above a zero byte, so there are no false positives).
    let zero = |w: u64| w.wrapping_sub(LO) & !w & HI;
    let (words, rest) = name.as_chunks::<8>();
    let mut hit = 0;
    for c in words {
        let w = u64::from_le_bytes(*c);
        hit |= zero(w) | zero(w ^ (LO * u64::from(b'/')));
    }
    hit != 0 || rest.iter().any(|&b| b == b'/' || b == 0)
}

/// The ACL rules that involve more than one entry (FORMAT.md, INODE): a
/// mask or other entry is unnamed, and no two entries share scope, type
/// and name. `entries` are (name id, type, default scope).
pub fn acl_error(entries: impl Iterator<Item = (u32, u8, bool)> + Clone) -> Option<&'static str> {
    for (i, (name, kind, scope)) in entries.clone().enumerate() {
        if kind >= 2 && name != 0 {
            return Some("a mask or other ACL entry has a name");
        }
        if entries
            .clone()
            .take(i)
            .any(|(n, k, s)| (n, k, s) == (name, kind, scope))
        {
            return Some("two ACL entries have the same scope, type and name");
        }
    }
    None
}

impl InodeBatch {
    /// A batch filling arena chunk `chunk`; capacities are hints, bounded by
    /// the caller from the piece's byte length.
    pub fn new(chunk: u32, records: usize, bytes: usize) -> Self {
        Self::with_buffer(chunk, Vec::with_capacity(records), bytes)
    }

    /// Like [`new`](Self::new), decoding nodes into a reused buffer (see
    /// [`into_parts_and_buffer`](Self::into_parts_and_buffer)).
    pub fn with_buffer(chunk: u32, mut nodes: Vec<Node>, bytes: usize) -> Self {
        nodes.clear();
        InodeBatch {
            chunk,
            ids: IdIndex::default(),
            nodes,
            // Sized for a typical record (~80 bytes: a ~16-byte name and one
            // or two blocks) so that growth is rare; trimmed in `into_parts`.
            names: Vec::with_capacity(bytes / 5),
            blocks: Vec::with_capacity(bytes / 64),
            extras: Vec::new(),
            block_stats: BlockStats::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The decoded fixed parts, to be copied into the node table.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Splits the batch into its node table and everything else, for a
    /// caller whose whole section is this one batch.
    pub fn into_nodes_and_parts(mut self) -> (Vec<Node>, InodeParts) {
        let nodes = std::mem::take(&mut self.nodes);
        let len = nodes.len() as u32;
        let mut parts = self.into_parts();
        parts.len = len;
        (nodes, parts)
    }

    /// Everything but the fixed parts (which the caller has copied), and the
    /// node buffer for the next batch.
    pub fn into_parts_and_buffer(mut self) -> (InodeParts, Vec<Node>) {
        let nodes = std::mem::take(&mut self.nodes);
        let len = nodes.len() as u32;
        let mut parts = self.into_parts();
        parts.len = len;
        (parts, nodes)
    }

    /// Everything but the fixed parts (which the caller has copied).
    pub fn into_parts(self) -> InodeParts {
        let (mut names, mut blocks) = (self.names, self.blocks);
        names.shrink_to_fit();
        blocks.shrink_to_fit();
        InodeParts {
            chunk: self.chunk,
            len: self.nodes.len() as u32,
            ids: self.ids,
            names,
            blocks,
            extras: self.extras,
            block_stats: self.block_stats,
        }
    }

    fn put(&mut self, bytes: &[u8]) -> Result<NameRef, String> {
        if bytes.len() > MAX_NAME_LENGTH {
            return Err(format!(
                "name of {} bytes exceeds {MAX_NAME_LENGTH}",
                bytes.len()
            ));
        }
        let off =
            u32::try_from(self.names.len()).map_err(|_| "name arena over 4 GiB".to_string())?;
        if bytes.len() < 0x80 {
            self.names.push(bytes.len() as u8);
        } else {
            prost::encoding::encode_varint(bytes.len() as u64, &mut self.names);
        }
        self.names.extend_from_slice(bytes);
        Ok(NameRef {
            chunk: self.chunk,
            off,
        })
    }

    /// Adds one record; ids must increase within the batch.
    pub fn push(&mut self, n: LoadedNode<'_>, strings: &StringTable) -> Result<(), String> {
        if self.ids.push(n.id).is_none() {
            return Err(format!(
                "inode id {} is not greater than the previous one",
                n.id
            ));
        }
        let perm = Perm(n.perm);
        if strings.get(perm.user()).is_none() || strings.get(perm.group()).is_none() {
            return Err(format!(
                "inode {} names an undefined user or group string",
                n.id
            ));
        }
        if n.id == ROOT_ID {
            if !n.name.is_empty() {
                return Err("the root has a name".into());
            }
        } else if !valid_name(n.name) {
            return Err(format!(
                "inode {} has an invalid name (empty, '.', '..', or holding '/' or NUL)",
                n.id
            ));
        }
        let name = self.put(n.name)?;
        let body = match n.body {
            LoadedBody::File {
                atime,
                replication,
                preferred_block_size,
                storage_policy,
                blocks,
            } => {
                let start =
                    u32::try_from(self.blocks.len()).map_err(|_| "too many blocks".to_string())?;
                self.blocks.extend_from_slice(blocks);
                self.block_stats.add(blocks);
                Body::File {
                    atime,
                    preferred_block_size,
                    blocks: Span {
                        chunk: if blocks.is_empty() { 0 } else { self.chunk },
                        start: if blocks.is_empty() { 0 } else { start },
                        len: blocks.len() as u32,
                    },
                    replication,
                    storage_policy,
                }
            }
            LoadedBody::Directory { ns_quota, ds_quota } => Body::Directory {
                ns_quota,
                ds_quota,
                children: Span::default(),
            },
            LoadedBody::Symlink { target } => {
                if target.is_empty() {
                    return Err(format!("symlink {} has an empty target", n.id));
                }
                Body::Symlink {
                    target: self.put(target)?,
                }
            }
        };
        let mut has_extra = false;
        if let Some(mut e) = n.extra.filter(|e| !e.is_empty()) {
            e.xattrs.sort_by_key(|x| (x.ns, x.name));
            if e.xattrs
                .windows(2)
                .any(|w| (w[0].ns, w[0].name) == (w[1].ns, w[1].name))
            {
                return Err(format!("inode {} has a duplicate xattr", n.id));
            }
            let names_ok = e
                .xattrs
                .iter()
                .all(|x| x.name != 0 && strings.get(x.name).is_some())
                && e.acl.iter().all(|a| strings.get(a.name).is_some());
            if !names_ok {
                return Err(format!(
                    "inode {} has an xattr or ACL naming an undefined string",
                    n.id
                ));
            }
            if let Some(why) = acl_error(e.acl.iter().map(|a| (a.name, a.kind, a.default_scope))) {
                return Err(format!("inode {}: {why}", n.id));
            }
            if e.under_construction.is_some() && !matches!(body, Body::File { .. }) {
                return Err(format!(
                    "inode {} is under construction but not a file",
                    n.id
                ));
            }
            self.extras.push((self.nodes.len() as u32, e));
            has_extra = true;
        }
        self.nodes.push(Node {
            mtime: n.mtime,
            perm,
            name,
            parent: NO_SLOT,
            has_extra,
            body,
        });
        Ok(())
    }
}

/// What an [`InodeBatch`] leaves once its nodes are in the node table.
pub struct InodeParts {
    chunk: u32,
    len: u32,
    ids: IdIndex,
    names: Vec<u8>,
    blocks: Vec<Block>,
    extras: Vec<(u32, Extra)>,
    block_stats: BlockStats,
}

/// Child lists decoded from one INODE_DIR piece, with their own arena chunk.
pub struct DirBatch {
    chunk: u32,
    children: Vec<Slot>,
    dirs: Vec<(Slot, Span)>,
    last_parent: Option<u64>,
}

impl DirBatch {
    pub fn new(chunk: u32, bytes: usize) -> Self {
        DirBatch {
            chunk,
            children: Vec::with_capacity(bytes / 4),
            dirs: Vec::new(),
            last_parent: None,
        }
    }

    /// Adds one directory record: the parent's id and its children's ids in
    /// name order. Checks everything that one record can break.
    pub fn push(
        &mut self,
        b: &NamespaceBuilder,
        parent: u64,
        children: impl Iterator<Item = u64>,
    ) -> Result<(), String> {
        if self.last_parent.is_some_and(|p| parent <= p) {
            return Err(format!(
                "directory {parent} is not greater than the previous one"
            ));
        }
        self.last_parent = Some(parent);
        let ps =
            b.ns.ids
                .slot(parent)
                .ok_or_else(|| format!("parent {parent} is not an inode"))?;
        if !matches!(b.ns.nodes[ps as usize].body, Body::Directory { .. }) {
            return Err(format!("parent {parent} is not a directory"));
        }
        let start = self.children.len();
        let mut prev: Option<&[u8]> = None;
        for c in children {
            let cs =
                b.ns.ids
                    .slot(c)
                    .ok_or_else(|| format!("child {c} of {parent} is not an inode"))?;
            if cs == 0 {
                return Err(format!("the root is listed as a child of {parent}"));
            }
            let name = b.name_of(cs);
            if prev.is_some_and(|p| p >= name) {
                return Err(format!(
                    "children of {parent} are not in strictly increasing name order at {c}"
                ));
            }
            prev = Some(name);
            self.children.push(cs);
        }
        let len = self.children.len() - start;
        if len == 0 {
            return Err(format!("directory {parent} has an empty child list"));
        }
        let span = Span {
            chunk: self.chunk,
            start: u32::try_from(start).map_err(|_| "child list over 4G entries".to_string())?,
            len: len as u32,
        };
        self.dirs.push((ps, span));
        Ok(())
    }

    /// (child slot, parent slot) of every child in this batch.
    pub fn links(&self) -> impl Iterator<Item = (Slot, Slot)> + '_ {
        self.dirs.iter().flat_map(move |&(ps, span)| {
            self.children[span.start as usize..(span.start + span.len) as usize]
                .iter()
                .map(move |&c| (c, ps))
        })
    }

    pub fn child_count(&self) -> usize {
        self.children.len()
    }
}

/// Builds a [`Namespace`] from batches, then checks the whole tree.
///
/// The caller owns the node table while pieces are decoded (so that it can
/// shard it between threads), hands it over with [`NamespaceBuilder::new`],
/// adds each INODE piece's remaining parts in id order, then attaches the
/// directory tree.
pub struct NamespaceBuilder {
    ns: Namespace,
    added: u32,
    block_stats: BlockStats,
}

impl NamespaceBuilder {
    /// Starts from the NS_INFO record, the string table and the node table
    /// (filled by the caller from [`InodeBatch::nodes`], in piece order).
    pub fn new(info: NsInfo, strings: StringTable, nodes: Vec<Node>) -> Self {
        NamespaceBuilder {
            ns: Namespace {
                info,
                strings,
                ids: IdIndex::default(),
                nodes,
                names: Arena::default(),
                blocks: Arena::default(),
                children: Arena::default(),
                owned_children: HashMap::new(),
                extras: HashMap::new(),
            },
            added: 0,
            block_stats: BlockStats::default(),
        }
    }

    pub fn strings(&self) -> &StringTable {
        &self.ns.strings
    }

    pub fn inode_count(&self) -> usize {
        self.ns.nodes.len()
    }

    fn name_of(&self, slot: Slot) -> &[u8] {
        super::read_name(&self.ns.names, self.ns.nodes[slot as usize].name)
    }

    /// Adds the parts of the next INODE piece (pieces in id order).
    pub fn add_inode_parts(&mut self, parts: InodeParts) -> Result<(), String> {
        let base = self.added;
        if parts.len == 0 {
            return Ok(());
        }
        if self.ns.ids.extend(&parts.ids).is_none() {
            return Err(format!(
                "inode ids of this piece do not follow the previous piece's (last id {})",
                self.ns.ids.last_id().unwrap_or(0)
            ));
        }
        self.added += parts.len;
        if self.added as usize > self.ns.nodes.len() {
            return Err("more inodes than the node table holds".into());
        }
        self.block_stats.merge(&parts.block_stats);
        self.ns.names.set_chunk(parts.chunk, parts.names);
        self.ns.blocks.set_chunk(parts.chunk, parts.blocks);
        for (i, e) in parts.extras {
            self.ns.extras.insert(base + i, e);
        }
        Ok(())
    }

    /// The node table, for a caller that sets each node's `parent` from the
    /// directory records (checking that none is set twice) before
    /// [`attach`](Self::attach).
    pub fn nodes_mut(&mut self) -> &mut [Node] {
        &mut self.ns.nodes
    }

    /// Attaches the child lists of `batches` to their directories; parents
    /// must already be set through [`nodes_mut`](Self::nodes_mut).
    pub fn attach(&mut self, batches: Vec<DirBatch>) -> Result<(), String> {
        let ns = &mut self.ns;
        if self.added as usize != ns.nodes.len() {
            return Err(format!(
                "{} inodes decoded, {} expected",
                self.added,
                ns.nodes.len()
            ));
        }
        let mut last: Option<Slot> = None;
        for batch in batches {
            // Each batch is in parent order; across batches (sub-sections)
            // the order must continue. Slots are in id order.
            if let (Some(l), Some(&(first, _))) = (last, batch.dirs.first()) {
                if first <= l {
                    return Err(format!(
                        "directory {} is not greater than the previous one {}",
                        ns.ids.id(first),
                        ns.ids.id(l)
                    ));
                }
            }
            if let Some(&(l, _)) = batch.dirs.last() {
                last = Some(l);
            }
            for &(ps, span) in &batch.dirs {
                if let Body::Directory { children, .. } = &mut ns.nodes[ps as usize].body {
                    if children.len != 0 {
                        return Err(format!("directory {} is listed twice", ns.ids.id(ps)));
                    }
                    *children = span;
                }
            }
            let mut children = batch.children;
            children.shrink_to_fit();
            ns.children.set_chunk(batch.chunk, children);
        }
        Ok(())
    }

    /// Checks the whole tree (a root, every inode reachable from it exactly
    /// once, ids within the counters) and returns the namespace.
    pub fn finish(self) -> Result<Namespace, String> {
        let mut frontier = if self.ns.nodes.is_empty() {
            vec![]
        } else {
            vec![0]
        };
        let mut next = Vec::new();
        let mut reachable = 1usize;
        while !frontier.is_empty() && reachable <= self.ns.nodes.len() {
            reachable += self.expand(&frontier, &mut next);
            std::mem::swap(&mut frontier, &mut next);
            next.clear();
        }
        self.finish_counted(reachable)
    }

    /// One breadth-first step of the reachability check: adds the
    /// directories among the children of `dirs` to `next` and returns how
    /// many children there were. Each inode is listed in at most one
    /// directory and the root in none, so the walk from the root is a tree
    /// walk and ends; callers may run steps over parts of a frontier in
    /// parallel.
    pub fn expand(&self, dirs: &[Slot], next: &mut Vec<Slot>) -> usize {
        let ns = &self.ns;
        let mut n = 0;
        for &d in dirs {
            let kids = ns.child_slots(d);
            n += kids.len();
            next.extend(
                kids.iter()
                    .copied()
                    .filter(|&k| matches!(ns.nodes[k as usize].body, Body::Directory { .. })),
            );
        }
        n
    }

    /// [`finish`](Self::finish) with the reachable count computed by the
    /// caller through [`expand`](Self::expand), starting from `[0]` with a
    /// count of 1 (the root).
    pub fn finish_counted(self, reachable: usize) -> Result<Namespace, String> {
        if (self.added as usize) != self.ns.nodes.len() {
            return Err(format!(
                "{} inodes decoded, {} expected",
                self.added,
                self.ns.nodes.len()
            ));
        }
        let ns = self.ns;
        match ns.nodes.first() {
            Some(root)
                if ns.ids.id(0) == ROOT_ID && matches!(root.body, Body::Directory { .. }) => {}
            _ => {
                return Err(format!(
                    "the first inode is not the root directory {ROOT_ID}"
                ))
            }
        }
        if ns.ids.last_id().is_some_and(|l| l > ns.info.last_inode_id) {
            return Err(format!(
                "inode id {} exceeds last_inode_id {}",
                ns.ids.last_id().unwrap_or(0),
                ns.info.last_inode_id
            ));
        }
        check_blocks(&ns, &self.block_stats)?;
        let seen = reachable;
        if seen != ns.nodes.len() {
            let orphan = ns.nodes.iter().skip(1).position(|n| n.parent == NO_SLOT);
            return Err(match orphan {
                Some(i) => format!("inode {} is in no directory", ns.ids.id(i as u32 + 1)),
                None => "the directory tree has a cycle".to_string(),
            });
        }
        Ok(ns)
    }
}

/// The block rules across the image (FORMAT.md, INODE): ids at most
/// `last_block_id`, generation stamps at most `generation_stamp`, and ids
/// unique. Uniqueness takes one pass with a bitmap over the id range when
/// that range is dense (the usual case: ids are allocated in sequence), and
/// a sort of the ids otherwise; either way memory is bounded by the number
/// of blocks decoded, never by a value read from the image.
fn check_blocks(ns: &Namespace, st: &BlockStats) -> Result<(), String> {
    if st.count == 0 {
        return Ok(());
    }
    if st.max_id > ns.info.last_block_id {
        return Err(format!(
            "block id {} exceeds last_block_id {}",
            st.max_id, ns.info.last_block_id
        ));
    }
    if st.max_generation_stamp > ns.info.generation_stamp {
        return Err(format!(
            "block generation stamp {} exceeds the namespace's {}",
            st.max_generation_stamp, ns.info.generation_stamp
        ));
    }
    let dup = |id: u64| Err(format!("block id {id} is used twice"));
    let span = st.max_id.saturating_sub(st.min_id);
    // A bitmap of span/8 bytes, allowed up to 8 bytes per block (what a
    // sorted copy of the ids would take).
    if span / 64 <= st.count {
        let words = usize::try_from(span / 64 + 1).map_err(|_| "too many blocks".to_string())?;
        let mut bits = vec![0u64; words];
        for chunk in ns.blocks.chunks() {
            for b in chunk {
                let off = b.id.saturating_sub(st.min_id);
                let (w, bit) = ((off / 64) as usize, 1u64 << (off % 64));
                let word = &mut bits[w];
                if *word & bit != 0 {
                    return dup(b.id);
                }
                *word |= bit;
            }
        }
    } else {
        let mut ids: Vec<u64> = ns
            .blocks
            .chunks()
            .iter()
            .flat_map(|c| c.iter().map(|b| b.id))
            .collect();
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            return dup(w[0]);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slash_and_nul_are_found_at_every_position() {
        for len in 1..40 {
            let ok = vec![b'a'; len];
            assert!(valid_name(&ok));
            for i in 0..len {
                for bad in [b'/', 0] {
                    let mut n = ok.clone();
                    n[i] = bad;
                    assert!(!valid_name(&n), "{n:?}");
                }
                // Bytes next to the bad ones are fine.
                for good in [b'.', b'0', 0x01, 0xff, 0x80, 0x2e, 0x30] {
                    let mut n = ok.clone();
                    n[i] = good;
                    assert!(valid_name(&n) || n == b"." || n == b"..", "{n:?}");
                }
            }
        }
        assert!(!valid_name(b""));
        assert!(!valid_name(b"."));
        assert!(!valid_name(b".."));
        assert!(valid_name(b"..."));
    }
}
