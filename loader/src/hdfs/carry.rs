//! The [`SnapshotCarry`] of a loaded Hadoop image: its snapshots, diffs,
//! references, snapshot-only inodes and directory entries, and the
//! refChildren of its current directories, whole, with every string id
//! rewritten from the image's STRING_TABLE serials into the carry's own
//! `strings`, so that a writer can put them back into another image.

use super::file::HdfsFile;
use super::image::HdfsImage;
use super::inodes::{record_at, Keep};
use super::strings::StringIds;
use crate::error::LoadError;
use nsimage_format::hdfs::{map_string_ids, HdfsSection, SnapshotCarry};
use nsimage_format::hdfs_pb::i_node_directory_section::DirEntry;
use nsimage_format::hdfs_pb::i_node_reference_section::INodeReference;
use nsimage_format::hdfs_pb::snapshot_carry::{DiffRecord, DirectoryDiffWithCreated, RefChildren};
use nsimage_format::hdfs_pb::SnapshotSection;
use nsimage_format::{Location, SubSectionInfo};
use nsimage_namespace::StringTable;
use prost::Message;
use std::collections::HashMap;

/// The refChildren of the directories of the current tree (`keep`), by
/// parent: the loader resolved them into plain children, the carry keeps
/// which ones they were.
pub(crate) fn ref_children(
    f: &HdfsFile,
    pieces: &[(SubSectionInfo, Location)],
    keep: &Keep,
) -> Result<Vec<RefChildren>, LoadError> {
    let bad = |at: &Location, pos: usize, why: String| {
        let (l, suffix) = record_at(f, at, pos);
        f.corrupt(l, format!("directory record: {why}{suffix}"))
    };
    let mut by_parent: HashMap<u64, Vec<u32>> = HashMap::new();
    let mut buf = Vec::new();
    for (p, at) in pieces {
        let mut recs = f.records(p.offset, p.length, at, "piece", &mut buf);
        while let Some((pos, body)) = recs.next()? {
            let e = DirEntry::decode(body).map_err(|er| bad(at, pos, er.to_string()))?;
            if e.ref_children.is_empty() || !keep.contains(&e.parent()) {
                continue;
            }
            by_parent
                .entry(e.parent())
                .or_default()
                .extend_from_slice(&e.ref_children);
        }
    }
    let mut out: Vec<RefChildren> = by_parent
        .into_iter()
        .map(|(parent, refs)| RefChildren {
            parent: Some(parent),
            refs,
        })
        .collect();
    out.sort_by_key(|r| r.parent());
    Ok(out)
}

/// The carry of `img` (after the load filled its snapshots), its string
/// ids mapped from the image's serials (`ids`, names in `strings`) into
/// the carry's own list; `None` when the image has no snapshots, no
/// references and no snapshot-only inodes. A serial the string table lacks
/// is a corruption, reported at `at`.
pub(crate) fn build(
    f: &HdfsFile,
    img: &HdfsImage,
    ids: &StringIds,
    strings: &StringTable,
    ref_children: Vec<RefChildren>,
    at: &Location,
) -> Result<Option<SnapshotCarry>, LoadError> {
    let s = &img.snapshots;
    // A Hadoop 2 image without snapshots still lists the root's empty diff
    // list: nothing to carry (a writer of that layout writes it anew).
    let empty_diffs = s
        .diff_records
        .iter()
        .all(|d| d.file_diffs.is_empty() && d.dir_diffs.is_empty());
    if s.snapshottable_dirs.is_empty()
        && s.snapshots.is_empty()
        && img.references.is_empty()
        && s.snapshot_only.is_empty()
        && s.snapshot_only_dirs.is_empty()
        && empty_diffs
    {
        return Ok(None);
    }
    let mut c = SnapshotCarry {
        header: Some(SnapshotSection {
            snapshot_counter: Some(s.counter),
            snapshottable_dir: s.snapshottable_dirs.clone(),
            num_snapshots: None,
        }),
        snapshots: s.records.clone(),
        diffs: s
            .diff_records
            .iter()
            .map(|d| DiffRecord {
                entry: Some(d.entry),
                file_diffs: d.file_diffs.clone(),
                dir_diffs: d
                    .dir_diffs
                    .iter()
                    .map(|(dd, created)| DirectoryDiffWithCreated {
                        diff: Some(dd.clone()),
                        created: created.clone(),
                    })
                    .collect(),
            })
            .collect(),
        references: img
            .references
            .iter()
            .map(|r| INodeReference {
                referred_id: Some(r.referred_id),
                name: (!r.name.is_empty()).then(|| r.name.clone()),
                dst_snapshot_id: Some(r.dst_snapshot_id),
                last_snapshot_id: Some(r.last_snapshot_id),
            })
            .collect(),
        inodes: s.snapshot_only.clone(),
        dirs: s.snapshot_only_dirs.clone(),
        ref_children,
        strings: Vec::new(),
    };
    // Namespace string id -> index in the carry's list (from 1).
    let mut index: HashMap<u32, u32> = HashMap::new();
    let mut list: Vec<Vec<u8>> = Vec::new();
    let mut map = |part: &mut SnapshotCarry, sec: HdfsSection| {
        let here = f.summary.find(sec).map_or_else(|| at.clone(), |x| x.at());
        map_string_ids(part, |tag, serial| {
            let name = ids
                .get(tag, serial)
                .and_then(|id| strings.get(id).map(|b| (id, b)));
            let Some((id, bytes)) = name else {
                return Err(f.corrupt(
                    here.clone(),
                    format!(
                        "a {} record names {tag:?} string {serial}, which STRING_TABLE lacks",
                        sec.name()
                    ),
                ));
            };
            if let Some(&k) = index.get(&id) {
                return Ok(k);
            }
            list.push(bytes.to_vec());
            let k = u32::try_from(list.len())
                .map_err(|_| f.corrupt(here.clone(), "too many strings".into()))?;
            index.insert(id, k);
            Ok(k)
        })
    };
    // Each part on its own, so that an error names its section.
    let mut part = SnapshotCarry {
        inodes: std::mem::take(&mut c.inodes),
        ..SnapshotCarry::default()
    };
    map(&mut part, HdfsSection::Inode)?;
    c.inodes = part.inodes;
    let mut part = SnapshotCarry {
        snapshots: std::mem::take(&mut c.snapshots),
        ..SnapshotCarry::default()
    };
    map(&mut part, HdfsSection::Snapshot)?;
    c.snapshots = part.snapshots;
    let mut part = SnapshotCarry {
        diffs: std::mem::take(&mut c.diffs),
        ..SnapshotCarry::default()
    };
    map(&mut part, HdfsSection::SnapshotDiff)?;
    c.diffs = part.diffs;
    c.strings = list;
    Ok(Some(c))
}
