//! Single-threaded assembly of a namespace from one batch of inodes and a
//! stream of directory records: used by the streaming baseline and by the
//! peers the bench compares against (JSON lines, SQLite), so that every
//! strategy builds the same model through the same builder.

use nsimage_namespace::Namespace;
use nsimage_namespace::{DirBatch, InodeBatch, Interned, NamespaceBuilder, Nodes, NsInfo};

/// A namespace being assembled on one thread: all inodes first, then the
/// directories' children one directory at a time.
pub struct Assembly {
    builder: NamespaceBuilder,
    dirs: DirBatch,
}

impl Assembly {
    /// An empty batch for [`Assembly::new`]: its nodes go straight into
    /// the namespace's node table as they are decoded.
    pub fn batch() -> InodeBatch<Nodes> {
        InodeBatch::with_sink(0, Nodes::default(), 0)
    }

    /// Starts from all inodes, in id order, in one batch whose nodes went
    /// straight into a node table ([`Assembly::batch`]).
    pub fn new(info: NsInfo, tables: Interned, batch: InodeBatch<Nodes>) -> Result<Self, String> {
        let (parts, nodes) = batch.into_parts_and_sink();
        let mut builder = NamespaceBuilder::new(info, tables, nodes);
        builder.add_inode_parts(parts).map_err(|e| e.to_string())?;
        Ok(Assembly {
            builder,
            dirs: DirBatch::new(0, 0, 0),
        })
    }

    /// Adds one directory's children, in name order; directories in id order.
    pub fn dir(&mut self, parent: u64, children: impl Iterator<Item = u64>) -> Result<(), String> {
        self.dirs
            .push(&self.builder, parent, children)
            .map_err(|e| e.to_string())
    }

    /// Links children to parents and checks the whole tree.
    pub fn finish(mut self) -> Result<Namespace, String> {
        self.builder.link(&self.dirs).map_err(|e| e.to_string())?;
        self.builder
            .attach(vec![self.dirs])
            .map_err(|e| e.to_string())?;
        self.builder.finish().map_err(|e| e.to_string())
    }
}
