//! [`HdfsWriteOptions`] and [`HdfsCodec`]: how a Hadoop fsimage is written,
//! and the layout versions the writer knows.

/// The oldest layout version the writer writes: -57 (Hadoop 2.5, the first
/// protobuf images with xattrs).
pub const OLDEST_LAYOUT_VERSION: i32 = -57;

/// The newest layout version the writer writes: -67 (NVDIMM_SUPPORT,
/// Hadoop 3.4).
pub const NEWEST_LAYOUT_VERSION: i32 = -67;

pub use nsimage_format::hdfs::{
    ERASURE_CODING_LAYOUT_VERSION, EXPANDED_STRING_TABLE_LAYOUT_VERSION, HADOOP_3_3_LAYOUT_VERSION,
};

/// The layout version from which the xattr namespace has a third bit
/// (`raw.`, XATTRS_NAMESPACE_EXT).
pub const XATTR_NAMESPACE_EXT_LAYOUT_VERSION: i32 = -59;

/// The layout version from which inodes carry a storage policy id
/// (BLOCK_STORAGE_POLICY).
pub const STORAGE_POLICY_LAYOUT_VERSION: i32 = -60;

/// The `FileSummary.ondiskVersion` every protobuf fsimage has
/// (`FSImageUtil.FILE_VERSION`).
pub const ONDISK_VERSION: u32 = 1;

/// Hadoop's `dfs.image.parallel.target.sections` default: how many
/// sub-sections the INODE section is cut into.
pub const DEFAULT_TARGET_SECTIONS: u32 = 12;

/// Hadoop's `dfs.image.parallel.inode.threshold` default: namespaces with
/// fewer inodes get no sub-sections.
pub const DEFAULT_INODE_THRESHOLD: u64 = 1_000_000;

/// The most children one INODE_DIR entry lists by default: what
/// `dfs.namenode.fs-limits.max-directory-items` allows at most (6,400,000),
/// so that an entry (ids of at most 10 bytes each) stays under the 64 MiB
/// a record may hold, for Hadoop's protobuf reader and for nsimage's.
pub const MAX_DIR_ENTRY_CHILDREN: usize = 6_400_000;

/// How the sections of a Hadoop fsimage are compressed: each section (and,
/// with sub-sections, each sub-section) is its own stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HdfsCodec {
    /// Not compressed (Hadoop's default, `dfs.image.compress=false`).
    #[default]
    None,
    /// `org.apache.hadoop.io.compress.DefaultCodec`: zlib streams.
    Zlib,
    /// `org.apache.hadoop.io.compress.GzipCodec`: gzip members.
    Gzip,
}

impl HdfsCodec {
    /// The codec class name the FileSummary names; `None` when the
    /// sections are not compressed.
    pub fn class_name(self) -> Option<&'static str> {
        match self {
            HdfsCodec::None => None,
            HdfsCodec::Zlib => Some("org.apache.hadoop.io.compress.DefaultCodec"),
            HdfsCodec::Gzip => Some("org.apache.hadoop.io.compress.GzipCodec"),
        }
    }
}

/// How [`write_hdfs_image`](crate::hdfs::write_hdfs_image) writes an image.
#[derive(Clone, Debug)]
pub struct HdfsWriteOptions {
    /// Cut INODE and INODE_DIR into INODE_SUB / INODE_DIR_SUB sub-sections
    /// (HDFS-14617) the way Hadoop's saver does with
    /// `dfs.image.parallel.load=true`: every
    /// `ceil(inodes / target_sections)` inodes (INODE) or children
    /// (INODE_DIR), when the namespace has at least `inode_threshold`
    /// inodes.
    pub sub_sections: bool,
    /// `dfs.image.parallel.target.sections` (Hadoop's default: 12; 0 reads
    /// as the default, as Hadoop does).
    pub target_sections: u32,
    /// `dfs.image.parallel.inode.threshold` (Hadoop's default: 1,000,000):
    /// namespaces with fewer inodes get no sub-sections even when
    /// `sub_sections` is set. 0 cuts any namespace.
    pub inode_threshold: u64,
    /// How sections are compressed.
    pub codec: HdfsCodec,
    /// The NameNode layout version written, from [`OLDEST_LAYOUT_VERSION`]
    /// to [`NEWEST_LAYOUT_VERSION`]; default [`HADOOP_3_3_LAYOUT_VERSION`].
    /// It decides which sections and fields Hadoop writes.
    pub layout_version: i32,
    /// One serial number space per kind (users, groups, xattr names) and a
    /// string table with `maskBits` 3, as Hadoop 3 writes with
    /// `dfs.image.string-tables.expanded` (the Hadoop 3 images in
    /// shared/data/hdfs have it); `false`: one global space, `maskBits` 0.
    /// Ignored (global) for layout versions before -65.
    pub expanded_string_tables: bool,
    /// The most children (references included) one INODE_DIR entry lists
    /// (at least 1): a directory with more is written as several entries
    /// of the same parent, in order, which Hadoop's loader (it adds each
    /// entry's children to the parent) and nsimage's (it joins them) read
    /// as one. Default [`MAX_DIR_ENTRY_CHILDREN`]: a directory Hadoop could
    /// have made is written as Hadoop writes it, one entry.
    pub dir_entry_children: usize,
}

impl Default for HdfsWriteOptions {
    fn default() -> Self {
        HdfsWriteOptions {
            sub_sections: false,
            target_sections: DEFAULT_TARGET_SECTIONS,
            inode_threshold: DEFAULT_INODE_THRESHOLD,
            codec: HdfsCodec::None,
            layout_version: HADOOP_3_3_LAYOUT_VERSION,
            expanded_string_tables: true,
            dir_entry_children: MAX_DIR_ENTRY_CHILDREN,
        }
    }
}

impl HdfsWriteOptions {
    /// Whether the layout version has feature `since` (layout versions
    /// grow more negative with each feature).
    pub(crate) fn has(&self, since: i32) -> bool {
        self.layout_version <= since
    }

    /// The string table's `maskBits`: 3 when expanded, else 0.
    pub(crate) fn mask_bits(&self) -> u32 {
        if self.expanded_string_tables && self.has(EXPANDED_STRING_TABLE_LAYOUT_VERSION) {
            3
        } else {
            0
        }
    }

    /// Inodes (or children) per sub-section for a namespace of `inodes`
    /// inodes; `None` when no sub-sections are cut.
    pub fn inodes_per_sub_section(&self, inodes: u64) -> Option<u64> {
        if !self.sub_sections || inodes < self.inode_threshold {
            return None;
        }
        let target = u64::from(if self.target_sections == 0 {
            DEFAULT_TARGET_SECTIONS
        } else {
            self.target_sections
        });
        Some(inodes.div_ceil(target).max(1))
    }
}
