//! What a Hadoop image holds beside the namespace: the summary's facts
//! (layout version, codec, every section), the counters of NS_INFO, the
//! snapshots, their diffs, the references, the erasure coding policies and
//! the files under construction. Returned with a load
//! ([`Loaded::hdfs`](crate::Loaded::hdfs)) and by [`describe`](super::describe).

use super::file::HdfsFile;
use super::wire::Delimited;
use crate::error::LoadError;
use nsimage_format::hdfs::{HdfsSection, SummarySection};
use nsimage_format::hdfs_pb::{
    files_under_construction_section::FileUnderConstructionEntry,
    i_node_directory_section::DirEntry,
    i_node_reference_section::INodeReference,
    i_node_section::INode,
    snapshot_diff_section::{diff_entry, CreatedListEntry, DiffEntry, DirectoryDiff, FileDiff},
    snapshot_section::Snapshot as PbSnapshot,
    ErasureCodingSection, NameSystemSection, SnapshotSection,
};
use nsimage_format::Location;
use prost::Message;

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

/// The summary's facts.
pub(crate) fn from_summary(f: &HdfsFile) -> HdfsImage {
    let s = &f.summary;
    HdfsImage {
        ondisk_version: s.ondisk_version,
        layout_version: s.layout_version,
        codec: s.codec.name(),
        codec_class: s.codec.class_name(),
        sections: s
            .sections
            .iter()
            .map(|e| SectionEntry {
                name: e.name.clone(),
                offset: e.offset,
                length: e.length,
                sub_section: e.section.parent().is_some(),
                decoded: e.section.is_decoded(),
                known: e.section != HdfsSection::Unknown,
            })
            .collect(),
        summary: (s.summary_offset, s.summary_length),
        file_bytes: f.len,
        ..HdfsImage::default()
    }
}

/// A small section's bytes (inflated), or `None` if the image has none.
fn section_bytes(
    f: &HdfsFile,
    s: HdfsSection,
) -> Result<Option<(SummarySection, Vec<u8>)>, LoadError> {
    let Some(sec) = f.summary.find(s).cloned() else {
        return Ok(None);
    };
    let (mut raw, mut out) = (Vec::new(), Vec::new());
    f.region(sec.offset, sec.length, &sec.at(), &mut raw, &mut out)?;
    Ok(Some((sec, out)))
}

/// The delimited messages of a section, each decoded with prost.
struct Messages<'a> {
    f: &'a HdfsFile,
    sec: &'a SummarySection,
    recs: Delimited<'a>,
}

impl<'a> Messages<'a> {
    fn new(f: &'a HdfsFile, sec: &'a SummarySection, bytes: &'a [u8]) -> Self {
        Messages {
            f,
            sec,
            recs: Delimited::new(bytes, 0),
        }
    }

    fn at(&self, pos: usize) -> (Location, String) {
        let mut at = self.sec.at();
        if self.f.summary.codec == nsimage_format::hdfs::Codec::None {
            at.offset = at.offset.saturating_add(pos as u64);
            (at, String::new())
        } else {
            (at, format!(" (byte {pos} of the inflated section)"))
        }
    }

    fn err(&self, pos: usize, why: String) -> LoadError {
        let (at, suffix) = self.at(pos);
        self.f.corrupt(at, format!("{why}{suffix}"))
    }

    fn next<M: Message + Default>(&mut self, what: &str) -> Result<Option<M>, LoadError> {
        match self.recs.next_record() {
            Ok(None) => Ok(None),
            Ok(Some((pos, body))) => M::decode(body)
                .map(Some)
                .map_err(|e| self.err(pos, format!("{what} does not decode: {e}"))),
            Err((pos, why)) => Err(self.err(pos, format!("{what}: {why}"))),
        }
    }

    fn must<M: Message + Default>(&mut self, what: &str) -> Result<M, LoadError> {
        let pos = self.recs.pos();
        self.next(what)?
            .ok_or_else(|| self.err(pos, format!("the section ends before {what}")))
    }
}

/// A declared count, bounded by the bytes that could hold it (each
/// message takes at least one byte).
fn bound(m: &Messages<'_>, n: u64, bytes: usize, what: &str) -> Result<u64, LoadError> {
    if n > bytes as u64 {
        return Err(m.err(
            m.recs.pos(),
            format!("{n} {what} cannot fit in {bytes} bytes"),
        ));
    }
    Ok(n)
}

/// Decodes NS_INFO (required).
pub(crate) fn name_system(f: &HdfsFile) -> Result<NameSystem, LoadError> {
    let Some((sec, bytes)) = section_bytes(f, HdfsSection::NsInfo)? else {
        return Err(f.corrupt(
            nsimage_format::hdfs::version::summary_at(f.summary.summary_offset),
            "the summary lists no NS_INFO section".into(),
        ));
    };
    let mut m = Messages::new(f, &sec, &bytes);
    let n: NameSystemSection = m.must("NS_INFO")?;
    Ok(NameSystem {
        namespace_id: n.namespace_id(),
        genstamp_v1: n.genstamp_v1(),
        genstamp_v2: n.genstamp_v2(),
        genstamp_v1_limit: n.genstamp_v1_limit(),
        last_allocated_block_id: n.last_allocated_block_id(),
        last_allocated_striped_block_id: n.last_allocated_striped_block_id(),
        transaction_id: n.transaction_id(),
        rolling_upgrade_start_time: n.rolling_upgrade_start_time(),
    })
}

/// Decodes every small section into `img`: INODE_REFERENCE, SNAPSHOT,
/// SNAPSHOT_DIFF, ERASURE_CODING and FILES_UNDERCONSTRUCTION.
pub(crate) fn small_sections(f: &HdfsFile, img: &mut HdfsImage) -> Result<(), LoadError> {
    img.name_system = name_system(f)?;
    if let Some((sec, bytes)) = section_bytes(f, HdfsSection::InodeReference)? {
        let mut m = Messages::new(f, &sec, &bytes);
        while let Some(r) = m.next::<INodeReference>("an INODE_REFERENCE entry")? {
            img.references.push(Reference {
                referred_id: r.referred_id(),
                name: r.name().to_vec(),
                dst_snapshot_id: r.dst_snapshot_id(),
                last_snapshot_id: r.last_snapshot_id(),
            });
        }
    }
    if let Some((sec, bytes)) = section_bytes(f, HdfsSection::Snapshot)? {
        let mut m = Messages::new(f, &sec, &bytes);
        if let Some(h) = m.next::<SnapshotSection>("the SNAPSHOT header")? {
            let s = &mut img.snapshots;
            s.counter = h.snapshot_counter();
            s.snapshottable_dirs = h.snapshottable_dir.clone();
            let n = bound(&m, u64::from(h.num_snapshots()), bytes.len(), "snapshots")?;
            for _ in 0..n {
                let p: PbSnapshot = m.must("a snapshot")?;
                let id = p.snapshot_id();
                s.records.push(p.clone());
                let root = p.root.unwrap_or_default();
                s.snapshots.push(SnapshotEntry {
                    id,
                    name: root.name().to_vec(),
                    root: root.id,
                    mtime: root.directory.map_or(0, |d| d.modification_time()),
                });
            }
        }
    }
    if let Some((sec, bytes)) = section_bytes(f, HdfsSection::SnapshotDiff)? {
        let mut m = Messages::new(f, &sec, &bytes);
        while let Some(e) = m.next::<DiffEntry>("a SNAPSHOT_DIFF entry")? {
            let d = &mut img.snapshots.diffs;
            d.entries += 1;
            let n = bound(&m, u64::from(e.num_of_diff()), bytes.len(), "diffs")?;
            let dir = e.r#type() == diff_entry::Type::Directorydiff;
            let mut rec = DiffRecord {
                entry: e,
                ..DiffRecord::default()
            };
            for _ in 0..n {
                if dir {
                    let dd: DirectoryDiff = m.must("a directory diff")?;
                    d.dir_diffs += 1;
                    d.deleted += dd.deleted_inode.len() as u64;
                    d.deleted_refs += dd.deleted_inode_ref.len() as u64;
                    let c = bound(
                        &m,
                        u64::from(dd.created_list_size()),
                        bytes.len(),
                        "created entries",
                    )?;
                    let mut created = Vec::new();
                    for _ in 0..c {
                        created.push(m.must::<CreatedListEntry>("a created-list entry")?);
                        d.created += 1;
                    }
                    rec.dir_diffs.push((dd, created));
                } else {
                    rec.file_diffs.push(m.must::<FileDiff>("a file diff")?);
                    d.file_diffs += 1;
                }
            }
            img.snapshots.diff_records.push(rec);
        }
    }
    if let Some((sec, bytes)) = section_bytes(f, HdfsSection::ErasureCoding)? {
        let mut m = Messages::new(f, &sec, &bytes);
        if let Some(ec) = m.next::<ErasureCodingSection>("the ERASURE_CODING section")? {
            img.ec_policies = ec
                .policies
                .iter()
                .map(|p| EcPolicy {
                    id: p.id,
                    name: match p.name() {
                        "" => system_policy(p.id).to_string(),
                        n => n.to_string(),
                    },
                    state: p.state.unwrap_or(2),
                })
                .collect();
        }
    }
    if let Some((sec, bytes)) = section_bytes(f, HdfsSection::FilesUnderConstruction)? {
        let mut m = Messages::new(f, &sec, &bytes);
        while let Some(e) =
            m.next::<FileUnderConstructionEntry>("a FILES_UNDERCONSTRUCTION entry")?
        {
            img.files_under_construction
                .push((e.inode_id(), e.full_path().to_string()));
        }
    }
    Ok(())
}

/// The names of Hadoop's built-in policies, which images store by id only
/// (`SystemErasureCodingPolicies`).
fn system_policy(id: u32) -> &'static str {
    match id {
        1 => "RS-6-3-1024k",
        2 => "RS-3-2-1024k",
        3 => "RS-LEGACY-6-3-1024k",
        4 => "XOR-2-1-1024k",
        5 => "RS-10-4-1024k",
        _ => "",
    }
}
