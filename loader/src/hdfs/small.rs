//! The summary's facts and the small sections of a Hadoop image (NS_INFO,
//! INODE_REFERENCE, SNAPSHOT, SNAPSHOT_DIFF, ERASURE_CODING,
//! FILES_UNDERCONSTRUCTION), decoded with prost into the side structure
//! ([`HdfsImage`]).

use super::file::HdfsFile;
use super::image::{
    DiffRecord, EcPolicy, HdfsImage, NameSystem, Reference, SectionEntry, SnapshotEntry,
};
use super::messages::Messages;
use crate::error::LoadError;
use nsimage_format::hdfs::HdfsSection;
use nsimage_format::hdfs_pb::{
    files_under_construction_section::FileUnderConstructionEntry,
    i_node_reference_section::INodeReference,
    snapshot_diff_section::{diff_entry, CreatedListEntry, DiffEntry, DirectoryDiff, FileDiff},
    snapshot_section::Snapshot as PbSnapshot,
    ErasureCodingSection, NameSystemSection, SnapshotSection,
};

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

/// Decodes NS_INFO (required).
pub(crate) fn name_system(f: &HdfsFile) -> Result<NameSystem, LoadError> {
    let mut buf = Vec::new();
    let Some(mut m) = Messages::of(f, HdfsSection::NsInfo, &mut buf) else {
        return Err(f.corrupt(
            nsimage_format::hdfs::version::summary_at(f.summary.summary_offset),
            "the summary lists no NS_INFO section".into(),
        ));
    };
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
        nsimage_creation_time: n.nsimage_creation_time(),
    })
}

/// Decodes every small section into `img`: INODE_REFERENCE, SNAPSHOT,
/// SNAPSHOT_DIFF, ERASURE_CODING and FILES_UNDERCONSTRUCTION.
pub(crate) fn small_sections(f: &HdfsFile, img: &mut HdfsImage) -> Result<(), LoadError> {
    img.name_system = name_system(f)?;
    let mut buf = Vec::new();
    if let Some(mut m) = Messages::of(f, HdfsSection::InodeReference, &mut buf) {
        loop {
            let pos = m.pos();
            let Some(r) = m.next::<INodeReference>("an INODE_REFERENCE entry")? else {
                break;
            };
            // Hadoop writes the referred inode always; an entry without
            // one refers to nothing (and, empty, would let each byte of an
            // inflated section become an entry).
            if r.referred_id.is_none() {
                return Err(m.err(pos, "an INODE_REFERENCE entry has no referredId".into()));
            }
            img.references.push(Reference {
                referred_id: r.referred_id(),
                name: r.name().to_vec(),
                dst_snapshot_id: r.dst_snapshot_id(),
                last_snapshot_id: r.last_snapshot_id(),
            });
        }
    }
    if let Some(mut m) = Messages::of(f, HdfsSection::Snapshot, &mut buf) {
        if let Some(h) = m.next::<SnapshotSection>("the SNAPSHOT header")? {
            let s = &mut img.snapshots;
            s.counter = h.snapshot_counter();
            s.snapshottable_dirs = h.snapshottable_dir.clone();
            let n = m.bound(u64::from(h.num_snapshots()), "snapshots")?;
            for _ in 0..n {
                let pos = m.pos();
                let p: PbSnapshot = m.must("a snapshot")?;
                if p.root.is_none() {
                    return Err(m.err(pos, "a snapshot has no root directory".into()));
                }
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
    if let Some(mut m) = Messages::of(f, HdfsSection::SnapshotDiff, &mut buf) {
        loop {
            let pos = m.pos();
            let Some(e) = m.next::<DiffEntry>("a SNAPSHOT_DIFF entry")? else {
                break;
            };
            if e.inode_id.is_none() {
                return Err(m.err(pos, "a SNAPSHOT_DIFF entry has no inodeId".into()));
            }
            let d = &mut img.snapshots.diffs;
            d.entries += 1;
            let n = m.bound(u64::from(e.num_of_diff()), "diffs")?;
            let dir = e.r#type() == diff_entry::Type::Directorydiff;
            let mut rec = DiffRecord {
                entry: e,
                ..DiffRecord::default()
            };
            for _ in 0..n {
                // Hadoop writes every diff's snapshot id; a diff without one
                // (an empty message, one byte) is refused, so that a count
                // of diffs cannot make each byte a diff of hundreds of bytes
                // in memory.
                let pos = m.pos();
                let no_id = "a snapshot diff has no snapshotId";
                if dir {
                    let dd: DirectoryDiff = m.must("a directory diff")?;
                    if dd.snapshot_id.is_none() {
                        return Err(m.err(pos, no_id.into()));
                    }
                    d.dir_diffs += 1;
                    d.deleted += dd.deleted_inode.len() as u64;
                    d.deleted_refs += dd.deleted_inode_ref.len() as u64;
                    let c = m.bound(u64::from(dd.created_list_size()), "created entries")?;
                    let mut created = Vec::new();
                    for _ in 0..c {
                        created.push(m.must::<CreatedListEntry>("a created-list entry")?);
                        d.created += 1;
                    }
                    rec.dir_diffs.push((dd, created));
                } else {
                    let fd = m.must::<FileDiff>("a file diff")?;
                    if fd.snapshot_id.is_none() {
                        return Err(m.err(pos, no_id.into()));
                    }
                    rec.file_diffs.push(fd);
                    d.file_diffs += 1;
                }
            }
            img.snapshots.diff_records.push(rec);
        }
    }
    if let Some(mut m) = Messages::of(f, HdfsSection::ErasureCoding, &mut buf) {
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
    if let Some(mut m) = Messages::of(f, HdfsSection::FilesUnderConstruction, &mut buf) {
        loop {
            let pos = m.pos();
            let Some(e) =
                m.next::<FileUnderConstructionEntry>("a FILES_UNDERCONSTRUCTION entry")?
            else {
                break;
            };
            if e.inode_id.is_none() {
                return Err(m.err(pos, "a FILES_UNDERCONSTRUCTION entry has no inodeId".into()));
            }
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
