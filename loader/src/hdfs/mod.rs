//! Reading Hadoop fsimage files (magic `HDFSIMG1`) into the same
//! [`Namespace`](nsimage_namespace::Namespace) as nsimage images, through
//! the same machinery: [`InodeBatch`](nsimage_namespace::InodeBatch)es per
//! piece, the node table, [`DirBatch`](nsimage_namespace::DirBatch)es linked
//! range by range and the builder's whole-tree checks, the pieces run by
//! `run_pieces` on the load's thread pool.
//!
//! [`load`](crate::load) detects the magic and comes here; the result's
//! [`Loaded::hdfs`](crate::Loaded::hdfs) holds what the image has beside
//! the namespace ([`HdfsImage`]: summary, snapshots, references, ...).
//! [`describe`] reads that without the inodes (for `info`).
//!
//! Module map: `file` (the file, the summary, the counts it declares;
//! records are walked with `nsimage_format::wire::Cursor`, as nsimage's
//! are), `inflate` (a region's records as they come out of the file, read
//! in blocks or inflated a chunk at a time, each bounded and handed out
//! before the next is inflated), `delimited` (the varint-delimited records of bytes held
//! whole), `strings` (STRING_TABLE ids), `record` (one
//! INode record), `inodes` and `dirs` (the two phases), `image` (the side
//! structure), `small` (the small sections), `messages` (a section's messages, decoded one by one; the image read as it is stored), `md5` (the sidecar check), `run`
//! (the load and `verify`), `reach` (the
//! side structures checked against the inodes), `carry` (the snapshot carry of a load),
//! `stream` (what the streamed viewer reads of an image, in bounded memory).

mod carry;
mod delimited;
mod dirs;
mod file;
pub(crate) mod image;
mod inflate;
mod inodes;
mod md5;
mod messages;
mod reach;
mod record;
pub(crate) mod run;
mod small;
pub mod stream;
mod strings;

pub use file::is_hdfs_file;
pub use image::{
    DiffCounts, DiffRecord, EcPolicy, HdfsImage, NameSystem, Reference, SectionEntry,
    SnapshotEntry, Snapshots,
};
pub use md5::{parse_sidecar, sidecar_path, Md5Policy};
pub use messages::{HdfsSections, Messages};
pub use run::describe;
pub use stream::{HdfsSource, HdfsUnstreamable};
