//! Single-threaded assembly of a namespace from one batch of inodes and a
//! stream of directory records: used by the streaming baseline and by the
//! peers the bench compares against (JSON lines, SQLite), so that every
//! strategy builds the same model through the same builder.

use nsimage_namespace::Namespace;
use nsimage_namespace::{DirBatch, InodeBatch, Interned, NamespaceBuilder, NsInfo};

/// A namespace being assembled on one thread: all inodes first, then the
/// directories' children one directory at a time.
pub struct Assembly {
    builder: NamespaceBuilder,
    dirs: DirBatch,
}

impl Assembly {
    /// Starts from all inodes, in id order, in one batch.
    pub fn new(info: NsInfo, tables: Interned, batch: InodeBatch) -> Result<Self, String> {
        let (nodes, parts) = batch.into_nodes_and_parts();
        // One copy of the nodes into the table's chunks.
        let mut builder = NamespaceBuilder::new(info, tables, nodes.into());
        builder.add_inode_parts(parts).map_err(|e| e.to_string())?;
        Ok(Assembly {
            builder,
            dirs: DirBatch::new(0, 0),
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
