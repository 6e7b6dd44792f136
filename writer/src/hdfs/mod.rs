//! Hadoop fsimage writing: a [`Namespace`](nsimage_namespace::Namespace)
//! as the protobuf image (magic `HDFSIMG1`) a Hadoop 3.3+ NameNode and
//! `hdfs oiv` load, following the rules of Hadoop's saver
//! (`FSImageFormatProtobuf.Saver`, `FSImageFormatPBINode.Saver`):
//!
//! - `image`: [`write_hdfs_image`], the sections in Hadoop's order, the
//!   FileSummary and its length;
//! - `batch`: the passes over the inodes encoded in parallel (rayon), a
//!   bounded window of slot ranges at a time, taken in id order;
//! - `sink`: the byte sink: MD5 and count as bytes go out, one compressed
//!   stream per section or sub-section, the summary's entries;
//! - `deflate`: one zlib or gzip stream deflated in parallel chunks;
//! - `inodes`: an inode's INODE message and a directory's INODE_DIR entry
//!   (children in Hadoop's signed-byte order);
//! - `carry`: a snapshot carry made ready to write (strings, placing);
//! - `serials`: Hadoop's string serial numbers and the STRING_TABLE
//!   (global, or expanded with `maskBits` 3);
//! - `options`: [`HdfsWriteOptions`], [`HdfsCodec`], the layout versions;
//! - `summary`: what was written ([`HdfsWritten`], [`HdfsSection`]);
//! - `naming`: the NameNode's file name and `.md5` sidecar conventions.
//!
//! The schema is `nsimage_format::hdfs_pb`; this module never reads an
//! image (the loader does).
//!
//! # Example
//!
//! ```
//! use nsimage_namespace::{Namespace, PermSpec};
//! use nsimage_writer::hdfs::{image_file_name, md5_sidecar_line, write_hdfs_image, HdfsWriteOptions};
//!
//! let mut ns = Namespace::default();
//! let perm = PermSpec { user: b"hdfs", group: b"supergroup", mode: 0o755 };
//! ns.mkdirs(b"/user/alice", &perm, 1)?;
//! let mut image = Vec::new();
//! let w = write_hdfs_image(&ns, &mut image, &HdfsWriteOptions::default())?;
//! assert_eq!(&image[..8], b"HDFSIMG1");
//! assert_eq!(w.bytes, image.len() as u64);
//! let name = image_file_name(ns.info().last_txid);
//! assert_eq!(name, "fsimage_0000000000000000000");
//! assert!(md5_sidecar_line(&w.md5, &name).ends_with(" *fsimage_0000000000000000000\n"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod batch;
mod carry;
mod deflate;
mod image;
mod inodes;
mod messages;
mod naming;
mod options;
mod serials;
mod sink;
mod summary;
#[cfg(test)]
mod tests;

pub use image::{write_hdfs_image, write_hdfs_image_with_carry, HDFS_MAGIC};
pub use messages::HdfsMessageWriter;
pub use naming::{image_file_name, md5_hex, md5_sidecar_line, md5_sidecar_name};
pub use options::{
    HdfsCodec, HdfsWriteOptions, DEFAULT_INODE_THRESHOLD, DEFAULT_TARGET_SECTIONS,
    ERASURE_CODING_LAYOUT_VERSION, EXPANDED_STRING_TABLE_LAYOUT_VERSION, HADOOP_3_3_LAYOUT_VERSION,
    MAX_DIR_ENTRY_CHILDREN, NEWEST_LAYOUT_VERSION, OLDEST_LAYOUT_VERSION, ONDISK_VERSION,
    STORAGE_POLICY_LAYOUT_VERSION, XATTR_NAMESPACE_EXT_LAYOUT_VERSION,
};
pub use summary::{HdfsSection, HdfsWritten};
