//! The magic bytes that open every Hadoop fsimage file.

/// The first eight bytes of every Hadoop fsimage file.
pub const MAGIC: [u8; 8] = *b"HDFSIMG1";

/// Whether `prefix` (the first bytes of a file) starts with [`MAGIC`].
pub fn is_hdfs(prefix: &[u8]) -> bool {
    prefix.starts_with(&MAGIC)
}
