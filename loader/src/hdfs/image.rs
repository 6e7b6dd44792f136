//! What a Hadoop image holds beside the namespace: the summary's facts
//! (layout version, codec, every section), the counters of NS_INFO, the
//! snapshots, their diffs, the references, the erasure coding policies and
//! the files under construction. Returned with a load
//! (`Loaded::hdfs`) and by `describe`.

use nsimage_format::hdfs::SnapshotCarry;
use nsimage_format::hdfs_pb::{
    i_node_directory_section::DirEntry,
    i_node_section::INode,
    snapshot_diff_section::{CreatedListEntry, DiffEntry, DirectoryDiff, FileDiff},
    snapshot_section::Snapshot as PbSnapshot,
};

/// One entry of the image's summary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SectionEntry {
    /// The name as the summary writes it.
    pub name: String,
    /// Absolute offset of its first byte.
    pub offset: u64,
    /// Length in bytes (compressed, with a codec).
    pub length: u64,
    /// Whether it is a sub-section (HDFS-14617) of another section.
    pub sub_section: bool,
    /// Whether nsimage decodes it (others are listed and skipped).
    pub decoded: bool,
    /// Whether its name is one Hadoop defines.
    pub known: bool,
}

/// NS_INFO's counters, as Hadoop writes them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NameSystem {
    /// `namespaceId`.
    pub namespace_id: u32,
    /// `genstampV1` (legacy generation stamps).
    pub genstamp_v1: u64,
    /// `genstampV2`.
    pub genstamp_v2: u64,
    /// `genstampV1Limit`.
    pub genstamp_v1_limit: u64,
    /// `lastAllocatedBlockId`.
    pub last_allocated_block_id: u64,
    /// `lastAllocatedStripedBlockId` (erasure-coded block groups; negative
    /// in Hadoop, stored as its two's complement).
    pub last_allocated_striped_block_id: u64,
    /// `transactionId`.
    pub transaction_id: u64,
    /// `rollingUpgradeStartTime`.
    pub rolling_upgrade_start_time: u64,
    /// nsimage's extension field (1000): the namespace's creation time,
    /// 0 when absent (Hadoop writes none).
    pub nsimage_creation_time: u64,
}

/// One snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotEntry {
    /// The snapshot's id.
    pub id: u32,
    /// Its name (what `.snapshot/NAME` shows).
    pub name: Vec<u8>,
    /// Id of the snapshottable directory it was taken of.
    pub root: u64,
    /// The directory's modification time when the snapshot was taken.
    pub mtime: u64,
}

/// What SNAPSHOT_DIFF holds, counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiffCounts {
    /// Inodes with diffs.
    pub entries: u64,
    /// File diffs.
    pub file_diffs: u64,
    /// Directory diffs.
    pub dir_diffs: u64,
    /// Children created since a snapshot.
    pub created: u64,
    /// Children deleted since a snapshot (inodes).
    pub deleted: u64,
    /// Children deleted since a snapshot (references).
    pub deleted_refs: u64,
}

/// Snapshots of the image.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshots {
    /// The snapshot id counter.
    pub counter: u32,
    /// Snapshottable directories (inode ids).
    pub snapshottable_dirs: Vec<u64>,
    /// Every snapshot.
    pub snapshots: Vec<SnapshotEntry>,
    /// Their diffs, counted.
    pub diffs: DiffCounts,
    /// Inodes that only snapshots see (in INODE, not in the current tree;
    /// known after a load, 0 from `describe`).
    pub snapshot_only_inodes: u64,
    /// Those inodes' records, whole, by id (after a load).
    pub snapshot_only: Vec<INode>,
    /// INODE_DIR entries of directories outside the current tree, whole,
    /// by parent (after a load).
    pub snapshot_only_dirs: Vec<DirEntry>,
    /// SNAPSHOT's records, whole (each root's name is the snapshot's).
    pub records: Vec<PbSnapshot>,
    /// SNAPSHOT_DIFF's records, whole, in order.
    pub diff_records: Vec<DiffRecord>,
}

/// One SNAPSHOT_DIFF entry with the diffs that follow it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DiffRecord {
    /// The entry: inode, kind, number of diffs.
    pub entry: DiffEntry,
    /// A file's diffs.
    pub file_diffs: Vec<FileDiff>,
    /// A directory's diffs, each with its created list.
    pub dir_diffs: Vec<(DirectoryDiff, Vec<CreatedListEntry>)>,
}

/// One INODE_REFERENCE entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// The inode referred to.
    pub referred_id: u64,
    /// The name in a snapshot (a `WithName` reference), if any.
    pub name: Vec<u8>,
    /// `dstSnapshotId`.
    pub dst_snapshot_id: u32,
    /// `lastSnapshotId`.
    pub last_snapshot_id: u32,
}

/// One erasure coding policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EcPolicy {
    /// The policy's id.
    pub id: u32,
    /// Its name (e.g. `RS-6-3-1024k`).
    pub name: String,
    /// Its state (1 disabled, 2 enabled, 3 removed).
    pub state: i32,
}

/// What a Hadoop image holds beside the namespace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HdfsImage {
    /// The summary's `ondiskVersion`.
    pub ondisk_version: u32,
    /// The layout version (negative, as Hadoop numbers them).
    pub layout_version: i32,
    /// The codec: `none`, `zlib` or `gzip`.
    pub codec: &'static str,
    /// Hadoop's class name of the codec, if any.
    pub codec_class: Option<&'static str>,
    /// Every entry of the summary, in its order.
    pub sections: Vec<SectionEntry>,
    /// Offset and length of the delimited summary.
    pub summary: (u64, u64),
    /// The file's length.
    pub file_bytes: u64,
    /// NS_INFO's counters.
    pub name_system: NameSystem,
    /// The string table's `maskBits`.
    pub string_mask_bits: u32,
    /// Snapshots, diffs and snapshot-only inodes.
    pub snapshots: Snapshots,
    /// INODE_REFERENCE, in order (refChildren index it).
    pub references: Vec<Reference>,
    /// The erasure coding policies.
    pub ec_policies: Vec<EcPolicy>,
    /// FILES_UNDERCONSTRUCTION: (inode id, full path).
    pub files_under_construction: Vec<(u64, String)>,
    /// Striped (erasure-coded) files; their blocks are block groups.
    pub striped_files: u64,
    /// Directories with quotas by storage type (the model keeps none).
    pub type_quota_dirs: u64,
    /// Whether INODE's records were out of id order (and were sorted).
    pub inodes_resorted: bool,
    /// The INODE header: (`lastInodeId`, `numInodes`), when it was read.
    pub inode_header: Option<(u64, u64)>,
    /// After a load, for an image with snapshots, references or
    /// snapshot-only inodes: all of them, whole, with string ids of their
    /// own (see [`SnapshotCarry`]), for a writer to put back; `None`
    /// otherwise (and from `describe`).
    pub carry: Option<SnapshotCarry>,
}

impl HdfsImage {
    /// Whether the image has snapshots (or references, their by-product).
    pub fn has_snapshots(&self) -> bool {
        !self.snapshots.snapshottable_dirs.is_empty()
            || !self.snapshots.snapshots.is_empty()
            || !self.references.is_empty()
            || self.snapshots.diffs.entries > 0
    }
}
