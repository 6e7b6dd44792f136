//! What the streamed viewer reads (issue 28): an nsimage image or a Hadoop
//! fsimage, opened; [`Skeleton`](crate::skeleton::Skeleton) reads either.

use crate::decode::check_piece;
use crate::error::LoadError;
use crate::hdfs::HdfsSource;
use crate::source::{ImageSource, PieceBuf};
use nsimage_format::framing::Records;
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
            Streamable::Image(s) => s.inode_count(),
            Streamable::Hdfs(h) => h.inode_count(),
        }
    }

    /// Reads the records the memory estimate is sized from (an nsimage
    /// image's INODE and INODE_DIR pieces, a Hadoop image's INODE records),
    /// one piece at a time, and checks their counts and first keys against
    /// those the image declares: an image whose counts lie is damaged, and says so
    /// as a load would, where an honest one that does not fit is a memory
    /// shortfall. A command calls this before it refuses an image for its
    /// size.
    ///
    /// # Errors
    /// A located [`LoadError::Corrupt`] for a piece that fails its checks
    /// or holds another count than the one declared.
    pub fn check_counts(&self) -> Result<(), LoadError> {
        let s = match self {
            Streamable::Image(s) => s,
            Streamable::Hdfs(h) => return h.check_count(),
        };
        let mut buf = PieceBuf::default();
        let mut kids = Vec::new();
        for kind in [SectionKind::INODE, SectionKind::INODE_DIR] {
            let Some(sec) = s.index.section(kind) else {
                continue;
            };
            for (p, at) in crate::sections::pieces(sec) {
                let bytes = s.piece(&p, &at, &mut buf)?;
                let mut n = 0u64;
                let mut first = None;
                for r in Records::new(bytes, at.clone()) {
                    let (off, body) = r.map_err(|e| LoadError::from_format(s.path(), e))?;
                    if first.is_none() {
                        // The first key, which the estimate's spans rest on.
                        let key = if kind == SectionKind::INODE {
                            crate::record::inode_head(body).map(|h| h.0)
                        } else {
                            crate::record::dir_entry(body, &mut kids)
                        };
                        let key = key.map_err(|d| {
                            LoadError::from_format(s.path(), crate::decode::bad(&at, off, d))
                        })?;
                        first = Some(key);
                    }
                    n = n.saturating_add(1);
                }
                check_piece(&p, &at, n, first).map_err(|e| LoadError::from_format(s.path(), e))?;
            }
        }
        Ok(())
    }
}
