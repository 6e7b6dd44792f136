//! What the streamed viewer reads (issue 28): an nsimage image or a Hadoop
//! fsimage, opened; [`Skeleton`](crate::skeleton::Skeleton) reads either.

use crate::hdfs::HdfsSource;
use crate::source::ImageSource;
use nsimage_format::SectionKind;
use std::path::Path;

/// An image opened to be streamed.
// One per command: the size of either variant does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Streamable {
    /// An nsimage image (unlocked, when encrypted).
    Image(ImageSource),
    /// A Hadoop fsimage.
    Hdfs(Box<HdfsSource>),
}

impl Streamable {
    /// The image's path.
    pub fn path(&self) -> &Path {
        match self {
            Streamable::Image(s) => s.path(),
            Streamable::Hdfs(h) => h.path(),
        }
    }

    /// The inodes the image declares (its index's INODE count, or the
    /// Hadoop INODE header's).
    pub fn inode_count(&self) -> u64 {
        match self {
            Streamable::Image(s) => s.index.section(SectionKind::INODE).map_or(0, |s| s.records),
            Streamable::Hdfs(h) => h.inode_count(),
        }
    }
}
