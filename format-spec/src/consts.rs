//! Magic bytes, versions, feature bits, section kinds and the fixed offsets of
//! the header and footer. `format-spec/FORMAT.md` is the authoritative layout;
//! this module only names its numbers.

use std::fmt;

/// First eight bytes of every image.
pub const HEADER_MAGIC: [u8; 8] = *b"\x89NSIMG\r\n";
/// Last eight bytes of every image.
pub const FOOTER_MAGIC: [u8; 8] = *b"NSIMGEND";

/// The format version this build writes.
pub const CURRENT_VERSION: u16 = 1;
/// The oldest format version this build reads.
pub const OLDEST_VERSION: u16 = 1;

/// Required feature bits (FORMAT.md, "Header").
pub mod features {
    /// Some piece is stored compressed.
    pub const COMPRESSED: u32 = 0x1;
    /// Every piece is encrypted.
    pub const ENCRYPTED: u32 = 0x2;
}

/// Required feature bits this build understands.
pub const KNOWN_REQUIRED_FEATURES: u32 = features::COMPRESSED | features::ENCRYPTED;

/// Id of the root directory (the same as HDFS's `ROOT_INODE_ID`).
pub const ROOT_ID: u64 = 16385;

/// Header fields: each offset follows from the previous field's size.
pub mod header {
    /// The magic bytes [`HEADER_MAGIC`](super::HEADER_MAGIC) (8 bytes).
    pub const MAGIC: usize = 0;
    /// The format version (u16).
    pub const VERSION: usize = MAGIC + 8;
    /// The header length (u16), 32 in v1.
    pub const LENGTH: usize = VERSION + 2;
    /// Reserved, zero (4 bytes).
    pub const RESERVED: usize = LENGTH + 2;
    /// Required feature bits (u32).
    pub const REQUIRED_FEATURES: usize = RESERVED + 4;
    /// Optional feature bits (u32).
    pub const OPTIONAL_FEATURES: usize = REQUIRED_FEATURES + 4;
    /// xxh3-64 of the header bytes before it (u64).
    pub const CHECKSUM: usize = OPTIONAL_FEATURES + 4;
    /// Total header size; sections start here.
    pub const SIZE: usize = CHECKSUM + 8;
}

/// Footer fields, relative to the footer's first byte (file length - SIZE).
pub mod footer {
    /// Absolute offset of the index (u64).
    pub const INDEX_OFFSET: usize = 0;
    /// Length of the index (u64).
    pub const INDEX_LENGTH: usize = INDEX_OFFSET + 8;
    /// xxh3-64 of the index (u64).
    pub const INDEX_CHECKSUM: usize = INDEX_LENGTH + 8;
    /// Length of the whole file (u64).
    pub const FILE_LENGTH: usize = INDEX_CHECKSUM + 8;
    /// xxh3-64 of the footer bytes before it (u64).
    pub const CHECKSUM: usize = FILE_LENGTH + 8;
    /// The magic bytes [`FOOTER_MAGIC`](super::FOOTER_MAGIC) (8 bytes).
    pub const MAGIC: usize = CHECKSUM + 8;
    /// Total footer size.
    pub const SIZE: usize = MAGIC + 8;
}

/// Largest index a reader accepts (the index is read whole into memory).
pub const MAX_INDEX_LENGTH: u64 = 256 << 20;
/// Largest single record a reader accepts.
pub const MAX_RECORD_LENGTH: u64 = 1 << 30;
/// The smallest valid INODE record in bytes, length prefix included: an id
/// of at least 16385 (4 bytes with its key), a type (2) and an empty
/// attribute group (2). Bounds the record count of an INODE piece.
pub const MIN_INODE_RECORD: u64 = 9;
/// Largest string-table entry, inode name or symlink target.
pub const MAX_NAME_LENGTH: usize = 64 << 10;

/// A section kind, as stored in the index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SectionKind(
    /// The kind number stored in the index.
    pub u32,
);

impl SectionKind {
    /// Namespace-wide counters: one `NsInfo` record.
    pub const NS_INFO: SectionKind = SectionKind(1);
    /// The string table: `StringEntry` records.
    pub const STRING_TABLE: SectionKind = SectionKind(2);
    /// One `Inode` record per inode, by increasing id.
    pub const INODE: SectionKind = SectionKind(3);
    /// One `DirEntry` record per non-empty directory.
    pub const INODE_DIR: SectionKind = SectionKind(4);
    /// Reserved (unknown to a v1 reader).
    pub const INODE_REFERENCE: SectionKind = SectionKind(5);
    /// Reserved (unknown to a v1 reader).
    pub const SNAPSHOT: SectionKind = SectionKind(6);
    /// Reserved (unknown to a v1 reader).
    pub const SNAPSHOT_DIFF: SectionKind = SectionKind(7);
    /// Reserved (unknown to a v1 reader).
    pub const FILES_UNDER_CONSTRUCTION: SectionKind = SectionKind(8);
    /// Optional: one `NameEntry` per (parent, child), sorted by (parent,
    /// name), for one-path lookups (FORMAT.md, "NAME_INDEX"). Not in
    /// [`KNOWN`](Self::KNOWN): a reader that ignores it loses nothing.
    pub const NAME_INDEX: SectionKind = SectionKind(9);
    /// Optional: one record, the encoded
    /// [`SnapshotCarry`](crate::hdfs::SnapshotCarry) of an image converted
    /// from a Hadoop fsimage with snapshots, carried opaquely for the way
    /// back to Hadoop (FORMAT.md, "HDFS_SNAPSHOTS"). Not in
    /// [`KNOWN`](Self::KNOWN): a reader that ignores it loses nothing of the
    /// namespace.
    pub const HDFS_SNAPSHOTS: SectionKind = SectionKind(10);
    /// Optional: NAME_INDEX's entries front-coded in `NameRun` records
    /// (FORMAT.md, "NAME_RUNS"), its first keys those of NAME_INDEX; what
    /// writers write since the section replaced NAME_INDEX (readers read
    /// either). Not in [`KNOWN`](Self::KNOWN).
    pub const NAME_RUNS: SectionKind = SectionKind(11);

    // Kinds that exist only in Hadoop images (`crate::hdfs`), so that
    // located errors there name their section. Never in an nsimage index.
    /// Hadoop's `FILES_UNDERCONSTRUCTION` section.
    pub const HDFS_FILES_UNDERCONSTRUCTION: SectionKind = SectionKind(0x4801);
    /// Hadoop's `EXTENDED_ACL` section.
    pub const HDFS_EXTENDED_ACL: SectionKind = SectionKind(0x4802);
    /// Hadoop's `ERASURE_CODING` section.
    pub const HDFS_ERASURE_CODING: SectionKind = SectionKind(0x4803);
    /// Hadoop's `SECRET_MANAGER` section.
    pub const HDFS_SECRET_MANAGER: SectionKind = SectionKind(0x4804);
    /// Hadoop's `CACHE_MANAGER` section.
    pub const HDFS_CACHE_MANAGER: SectionKind = SectionKind(0x4805);
    /// A Hadoop section whose name this build does not know.
    pub const HDFS_UNKNOWN: SectionKind = SectionKind(0x4806);
    /// A Hadoop image's `FileSummary` (and its length at the tail).
    pub const HDFS_FILE_SUMMARY: SectionKind = SectionKind(0x4807);

    /// Kinds this build reads; every other kind is unknown.
    pub const KNOWN: [SectionKind; 4] = [
        Self::NS_INFO,
        Self::STRING_TABLE,
        Self::INODE,
        Self::INODE_DIR,
    ];

    /// The name used in the spec, the CLI and error messages.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            Self::NS_INFO => "NS_INFO",
            Self::STRING_TABLE => "STRING_TABLE",
            Self::INODE => "INODE",
            Self::INODE_DIR => "INODE_DIR",
            Self::INODE_REFERENCE => "INODE_REFERENCE",
            Self::SNAPSHOT => "SNAPSHOT",
            Self::SNAPSHOT_DIFF => "SNAPSHOT_DIFF",
            Self::FILES_UNDER_CONSTRUCTION => "FILES_UNDER_CONSTRUCTION",
            Self::NAME_INDEX => "NAME_INDEX",
            Self::NAME_RUNS => "NAME_RUNS",
            Self::HDFS_SNAPSHOTS => "HDFS_SNAPSHOTS",
            Self::HDFS_FILES_UNDERCONSTRUCTION => "FILES_UNDERCONSTRUCTION",
            Self::HDFS_EXTENDED_ACL => "EXTENDED_ACL",
            Self::HDFS_ERASURE_CODING => "ERASURE_CODING",
            Self::HDFS_SECRET_MANAGER => "SECRET_MANAGER",
            Self::HDFS_CACHE_MANAGER => "CACHE_MANAGER",
            Self::HDFS_UNKNOWN => "HDFS_UNKNOWN_SECTION",
            Self::HDFS_FILE_SUMMARY => "FILE_SUMMARY",
            _ => return None,
        })
    }

    /// Whether this build reads sections of this kind.
    pub fn is_known(self) -> bool {
        Self::KNOWN.contains(&self)
    }
}

impl fmt::Display for SectionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "KIND_{}", self.0),
        }
    }
}

/// NAME_INDEX sub-section first keys (FORMAT.md, "NAME_INDEX"):
/// `parent << SEQ_BITS | seq`, where `seq` counts the earlier sub-sections
/// whose first record has the same parent, so that first keys strictly
/// increase even when one directory spans several sub-sections.
pub mod name_index {
    /// Bits of the first key that hold `seq`.
    pub const SEQ_BITS: u32 = 20;
    /// Largest `seq`; a writer never starts more continuation sub-sections
    /// for one directory (the last one grows instead).
    pub const MAX_SEQ: u64 = (1 << SEQ_BITS) - 1;
    /// Largest parent id a first key can hold; a writer whose namespace has
    /// larger ids does not write the section.
    pub const MAX_PARENT: u64 = u64::MAX >> SEQ_BITS;

    /// The first key of a sub-section whose first record has parent
    /// `parent` and that is the `seq`-th such sub-section; `None` when
    /// either does not fit.
    pub fn key(parent: u64, seq: u64) -> Option<u64> {
        (parent <= MAX_PARENT && seq <= MAX_SEQ).then_some(parent << SEQ_BITS | seq)
    }

    /// The parent id of a first key.
    pub fn parent(key: u64) -> u64 {
        key >> SEQ_BITS
    }

    /// The `seq` of a first key.
    pub fn seq(key: u64) -> u64 {
        key & MAX_SEQ
    }

    /// Sub-section target of the section: small, so that a lookup reads
    /// little (a smaller `sub_section_bytes` of the writer applies).
    pub const TARGET_BYTES: u64 = 64 << 10;
}
