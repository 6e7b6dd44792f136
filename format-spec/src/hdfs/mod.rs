//! Hadoop's fsimage format (magic `HDFSIMG1`): the facts a reader needs
//! beyond the message schemas of [`hdfs_pb`](crate::hdfs_pb).
//!
//! A Hadoop image is the magic, the sections (each a run of
//! varint-delimited messages, each its own compressed stream when the
//! image names a codec), a varint-delimited `FileSummary` listing every
//! section by name, offset and length, and finally the summary's length as
//! a 4-byte big-endian integer. This module owns:
//!
//! - [`magic`]: the magic bytes and their detection;
//! - [`summary`]: finding and decoding the summary from the file's tail,
//!   every offset and length bounded by the file's size;
//! - [`sections`]: section names ([`HdfsSection`]), known and unknown, and
//!   the [`SectionKind`](crate::SectionKind) errors name them by;
//! - [`version`]: the layout versions this build reads and the codecs;
//! - [`carry`]: [`SnapshotCarry`], nsimage's own message carrying a
//!   Hadoop image's snapshots between images;
//! - [`fields`]: the field numbers of every message of the schema,
//!   generated from it;
//! - [`bits`]: the packed fields: permission, ACL entry, xattr name, and
//!   string ids with their table tag ([`StringTag`], `maskBits`).
//!
//! Errors are [`FormatError`](crate::FormatError)s located by section and
//! file offset.

pub mod bits;
pub mod carry;
pub mod fields;
pub mod magic;
pub mod sections;
pub mod summary;
pub mod version;

pub use bits::{AclBits, PermBits, StringTag, XAttrBits};
pub use carry::{decode_carry, encode_carry, map_string_ids, SnapshotCarry};
pub use magic::{is_hdfs, MAGIC};
pub use sections::HdfsSection;
pub use summary::{HdfsSummary, SummarySection, TAIL_LENGTH_BYTES};
pub use version::{
    Codec, ERASURE_CODING_LAYOUT_VERSION, EXPANDED_STRING_TABLE_LAYOUT_VERSION,
    HADOOP_3_3_LAYOUT_VERSION, MAX_MESSAGE_BYTES, NEWEST_LAYOUT_VERSION, OLDEST_LAYOUT_VERSION,
};
