//! The inode phase of a load: decoded INODE records ([`LoadedNode`]) go
//! into an [`InodeBatch`], one per piece and with its own arena chunk, which
//! checks each record on its own; what remains once the fixed parts are in
//! the node table ([`InodeParts`]) goes to the
//! [`NamespaceBuilder`](crate::NamespaceBuilder).

use crate::block_ids::BatchIds;
use crate::blocks::{encode, Blocks};
use crate::classes::{Class, ClassCache, SharedClasses};
use crate::consts::{MAX_NAME_LENGTH, ROOT_ID};
use crate::ids::IdIndex;
use crate::node::{atime_tag, Kind, NameRef, Node};
use crate::nodes::Nodes;
use crate::rules::{acl_error, valid_name};
use crate::strings::StringTable;
use crate::values::{Block, Extra, InodeKind, Perm};
use crate::view::{Attrs, FileAttrs};

/// What the batches of one load share: the image's string table, and the
/// attribute classes (see `classes.rs`) they intern as they decode.
#[derive(Debug, Default)]
pub struct Interned {
    pub(crate) strings: StringTable,
    pub(crate) classes: SharedClasses,
}

impl Interned {
    /// The tables of a load whose string table is `strings`.
    pub fn new(strings: StringTable) -> Self {
        Interned {
            strings,
            classes: SharedClasses::default(),
        }
    }

    /// The string table.
    pub fn strings(&self) -> &StringTable {
        &self.strings
    }

    /// Forgets the classes interned so far: a reader that streams an image
    /// and keeps no node starts each piece afresh, so that the table does
    /// not grow with the whole image (ids it gave before mean nothing
    /// after).
    pub fn forget_classes(&mut self) {
        self.classes = SharedClasses::default();
    }

    /// The string table, for a loader that interns strings as it reads
    /// records (a peer format without a table of its own).
    pub fn strings_mut(&mut self) -> &mut StringTable {
        &mut self.strings
    }
}

/// The kind-specific part of a decoded inode record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadedBody<'a> {
    /// A file record (see [`Body::File`](crate::Body::File)).
    File {
        /// Last access time, in milliseconds since the Unix epoch.
        atime: u64,
        /// Number of replicas each block should have.
        replication: u16,
        /// Block size new blocks are cut to, in bytes.
        preferred_block_size: u64,
        /// HDFS storage policy id.
        storage_policy: u8,
        /// The file's blocks, in file order.
        blocks: &'a [Block],
    },
    /// A directory record; its children come later, from INODE_DIR.
    Directory {
        /// Most inodes the subtree may hold; -1 for no quota.
        ns_quota: i64,
        /// Most bytes the subtree may hold; -1 for no quota.
        ds_quota: i64,
    },
    /// A symlink record.
    Symlink {
        /// The target path (must not be empty).
        target: &'a [u8],
    },
}

impl LoadedBody<'_> {
    /// The record's kind.
    pub fn kind(&self) -> InodeKind {
        match self {
            LoadedBody::File { .. } => InodeKind::File,
            LoadedBody::Directory { .. } => InodeKind::Directory,
            LoadedBody::Symlink { .. } => InodeKind::Symlink,
        }
    }

    /// The record's attributes as a loaded inode gives them.
    pub fn attrs(&self) -> Attrs<'_> {
        match *self {
            LoadedBody::File {
                atime,
                replication,
                preferred_block_size,
                storage_policy,
                blocks,
            } => Attrs::File(FileAttrs {
                atime,
                preferred_block_size,
                replication,
                storage_policy,
                blocks: Blocks::from(blocks),
            }),
            LoadedBody::Directory { ns_quota, ds_quota } => Attrs::Directory { ns_quota, ds_quota },
            LoadedBody::Symlink { target } => Attrs::Symlink { target },
        }
    }
}

/// One decoded inode record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedNode<'a> {
    /// Inode id; ids increase within a batch.
    pub id: u64,
    /// Name within the parent; empty for the root only.
    pub name: &'a [u8],
    /// Packed permission, as [`Perm`]'s `u64`; both string ids must be
    /// defined.
    pub perm: u64,
    /// Modification time, in milliseconds since the Unix epoch.
    pub mtime: u64,
    /// The kind-specific part.
    pub body: LoadedBody<'a>,
    /// Xattrs, ACL and under-construction mark, if the record has any.
    pub extra: Option<Extra>,
}

/// Where a batch puts the fixed parts of the inodes it decodes: a vector of
/// its own (copied into the node table afterwards), in a loader the node
/// table's slots for the piece, written in place, or, for a caller whose
/// whole section is one batch, a [`Nodes`] table grown as it goes.
pub trait NodeSink {
    /// Appends one node; `false` (and nothing written) when the sink is
    /// full.
    fn push_node(&mut self, node: Node) -> bool;
    /// Nodes appended so far.
    fn node_count(&self) -> usize;
}

impl NodeSink for Vec<Node> {
    #[inline]
    fn push_node(&mut self, node: Node) -> bool {
        self.push(node);
        true
    }
    fn node_count(&self) -> usize {
        self.len()
    }
}

/// Straight into a node table's chunks: a caller whose whole section is
/// one batch (a streaming reader) builds the namespace's table as it
/// decodes, with no copy of the nodes afterwards.
impl NodeSink for Nodes {
    #[inline]
    fn push_node(&mut self, node: Node) -> bool {
        self.push(node);
        true
    }
    fn node_count(&self) -> usize {
        self.len()
    }
}

/// Inodes decoded from one INODE piece, with their own arena chunk; their
/// fixed parts go to `S`, by default a vector of the batch's own.
pub struct InodeBatch<S = Vec<Node>> {
    chunk: u32,
    ids: IdIndex,
    nodes: S,
    names: Vec<u8>,
    /// The blocks' ids, for the check that they are unique (the encoded
    /// blocks are slower to read back); dropped with the batch.
    block_ids: Vec<u64>,
    extras: Vec<(u32, Extra)>,
    block_stats: BlockStats,
    classes: ClassCache,
}

/// What the block rules need from a batch's blocks, gathered as they are
/// decoded so that the whole-image check makes one pass only.
#[derive(Clone, Copy, Debug)]
pub struct BlockStats {
    /// Number of blocks (saturating).
    pub count: u64,
    /// Smallest block id; `u64::MAX` when there is none.
    pub min_id: u64,
    /// Largest block id; 0 when there is none.
    pub max_id: u64,
    /// Largest generation stamp; 0 when there is none.
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

    pub(crate) fn merge(&mut self, o: &BlockStats) {
        self.count = self.count.saturating_add(o.count);
        self.min_id = self.min_id.min(o.min_id);
        self.max_id = self.max_id.max(o.max_id);
        self.max_generation_stamp = self.max_generation_stamp.max(o.max_generation_stamp);
    }
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
        Self::with_sink(chunk, nodes, bytes)
    }

    /// The decoded fixed parts, to be copied into the node table.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Splits the batch into its node table and everything else, for a
    /// caller whose whole section is this one batch.
    pub fn into_nodes_and_parts(self) -> (Vec<Node>, InodeParts) {
        let (parts, nodes) = self.into_parts_and_sink();
        (nodes, parts)
    }

    /// Everything but the fixed parts (which the caller has copied), and the
    /// node buffer for the next batch.
    pub fn into_parts_and_buffer(self) -> (InodeParts, Vec<Node>) {
        self.into_parts_and_sink()
    }
}

impl<S: NodeSink> InodeBatch<S> {
    /// A batch filling arena chunk `chunk` whose nodes go to `nodes`, which
    /// must hold none yet (the batch counts and numbers its nodes by the
    /// sink's count); the byte length of the piece sizes the other buffers.
    pub fn with_sink(chunk: u32, nodes: S, bytes: usize) -> Self {
        InodeBatch {
            chunk,
            ids: IdIndex::default(),
            nodes,
            // Sized for a typical record (~80 bytes in the image, ~30 here:
            // a ~16-byte name and one or two blocks) so that growth is rare;
            // trimmed in `into_parts`.
            names: Vec::with_capacity(bytes / 3),
            block_ids: Vec::with_capacity(bytes / 64),
            extras: Vec::new(),
            block_stats: BlockStats::default(),
            classes: ClassCache::default(),
        }
    }

    /// Number of records added.
    pub fn len(&self) -> usize {
        self.nodes.node_count()
    }

    /// Whether no record was added.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Everything but the fixed parts (which are in the sink), and the sink.
    pub fn into_parts_and_sink(self) -> (InodeParts, S) {
        let mut names = self.names;
        names.shrink_to_fit();
        let len = count(&self.nodes);
        // Built here, by the thread that decoded the batch, so that the
        // whole-image check of block ids is a merge (`block_ids.rs`).
        let block_ids = BatchIds::of(
            self.block_ids.iter().copied(),
            self.block_stats.count,
            self.block_stats.min_id,
            self.block_stats.max_id,
        );
        let parts = InodeParts {
            chunk: self.chunk,
            len,
            ids: self.ids,
            names,
            extras: self.extras,
            block_stats: self.block_stats,
            block_ids,
        };
        (parts, self.nodes)
    }

    /// Everything but the fixed parts (which the caller has copied).
    pub fn into_parts(self) -> InodeParts {
        self.into_parts_and_sink().0
    }

    // The one cast is of a length below 0x80, checked just before it.
    #[allow(clippy::cast_possible_truncation)]
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
    ///
    /// Always inlined: it is the inner loop of every INODE decoder, and
    /// whether LLVM inlined it on its own changed with unrelated edits of
    /// the loader (how its code was split into codegen units), moving a
    /// 2-thread load by 7%.
    #[inline(always)]
    pub fn push(&mut self, n: LoadedNode<'_>, tables: &Interned) -> Result<(), String> {
        let (strings, classes) = (&tables.strings, &tables.classes);
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
        // The record: the name (above), then a file's access time and
        // blocks, or a link's target.
        let (kind, class, items) = match n.body {
            LoadedBody::File {
                atime,
                replication,
                preferred_block_size,
                storage_policy,
                blocks,
            } => {
                let len = u32::try_from(blocks.len()).map_err(|_| "too many blocks".to_string())?;
                prost::encoding::encode_varint(atime_tag(atime, n.mtime), &mut self.names);
                let mut prev = None;
                for b in blocks {
                    encode(b, prev, preferred_block_size, &mut self.names);
                    self.block_ids.push(b.id);
                    prev = Some(b.id);
                }
                self.block_stats.add(blocks);
                let class = Class::file(perm, preferred_block_size, replication, storage_policy);
                (Kind::File, class, len)
            }
            LoadedBody::Directory { ns_quota, ds_quota } => {
                let class = Class::directory(perm, ns_quota, ds_quota);
                (Kind::Directory, class, 0)
            }
            LoadedBody::Symlink { target } => {
                if target.is_empty() {
                    return Err(format!("symlink {} has an empty target", n.id));
                }
                self.put(target)?;
                (Kind::Symlink, Class::symlink(perm), 0)
            }
        };
        if u32::try_from(self.names.len()).is_err() {
            return Err("name arena over 4 GiB".to_string());
        }
        let class = self
            .classes
            .intern(classes, class)
            .ok_or_else(|| "attribute class table is full".to_string())?;
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
            if e.under_construction.is_some() && kind != Kind::File {
                return Err(format!(
                    "inode {} is under construction but not a file",
                    n.id
                ));
            }
            self.extras.push((count(&self.nodes), e));
            has_extra = true;
        }
        let mut node = Node {
            name,
            ..Node::new(kind, class, n.mtime)
        };
        if kind == Kind::File {
            node.set_count(items);
        }
        node.set_has_extra(has_extra);
        let pushed = self.nodes.push_node(node);
        if !pushed {
            return Err("more records than the piece declares".into());
        }
        Ok(())
    }
}

/// Number of nodes in a batch. Below 2^32: [`InodeBatch::push`] adds a node
/// only after the batch's [`IdIndex`] gave its id a slot, and an `IdIndex`
/// gives at most `u32::MAX` slots.
#[allow(clippy::cast_possible_truncation)]
fn count<S: NodeSink>(nodes: &S) -> u32 {
    nodes.node_count() as u32
}

/// What an [`InodeBatch`] leaves once its nodes are in the node table.
pub struct InodeParts {
    pub(crate) chunk: u32,
    pub(crate) len: u32,
    pub(crate) ids: IdIndex,
    pub(crate) names: Vec<u8>,
    pub(crate) extras: Vec<(u32, Extra)>,
    pub(crate) block_stats: BlockStats,
    pub(crate) block_ids: BatchIds,
}
