//! The cross-references of a loaded Hadoop image checked against its
//! inodes, as Hadoop's own loader checks them: files under construction,
//! references, snapshottable directories and snapshot diffs must name
//! inodes INODE holds (of the right type) and snapshots SNAPSHOT lists;
//! and an inode outside the current tree is kept as one "only snapshots
//! see" only when a snapshot actually reaches it (a deleted list of a
//! diff, or a reference, then the directories those lead to); any other
//! is unreachable, and the image corrupt.

use super::file::HdfsFile;
use super::image::HdfsImage;
use crate::error::LoadError;
use nsimage_format::error::shown;
use nsimage_format::hdfs::HdfsSection;
use nsimage_format::hdfs_pb::i_node_section::i_node;
use nsimage_format::Location;
use nsimage_namespace::{InodeKind, Namespace};
use std::collections::{HashMap, HashSet};

/// Where an error about section `s` points: its start, or the summary's.
pub(crate) fn section_at(f: &HdfsFile, s: HdfsSection) -> Location {
    f.summary.find(s).map_or_else(
        || nsimage_format::hdfs::version::summary_at(f.summary.summary_offset),
        |e| e.at(),
    )
}

/// Checks `img`'s side structures against the inodes of `ns` and of
/// `img.snapshots.snapshot_only`.
pub(crate) fn check(f: &HdfsFile, img: &HdfsImage, ns: &Namespace) -> Result<(), LoadError> {
    // Snapshot-only inodes: id -> is a directory.
    let others: HashMap<u64, bool> = img
        .snapshots
        .snapshot_only
        .iter()
        .map(|n| (n.id, n.r#type() == i_node::Type::Directory))
        .collect();
    // Some(is a directory) for an inode INODE holds.
    let kind = |id: u64| -> Option<bool> {
        match ns.slot_of(id).and_then(|s| ns.at(s)) {
            Some(n) => Some(n.kind() == InodeKind::Directory),
            None => others.get(&id).copied(),
        }
    };
    check_named(f, img, &kind)?;
    let seeds = snapshot_seeds(f, img, &kind)?;
    if others.is_empty() {
        return Ok(());
    }
    check_reached(f, img, &others, seeds)
}

/// The inodes files under construction, references and snapshottable
/// directories name: held (`kind`: `Some(is a directory)` for an inode
/// INODE holds), and of the right type.
fn check_named(
    f: &HdfsFile,
    img: &HdfsImage,
    kind: &dyn Fn(u64) -> Option<bool>,
) -> Result<(), LoadError> {
    let uc = section_at(f, HdfsSection::FilesUnderConstruction);
    for (id, path) in &img.files_under_construction {
        let named = shown(path);
        match kind(*id) {
            None => {
                return Err(f.corrupt(
                    uc,
                    format!("a file under construction ({named}) names inode {id}, which INODE does not hold"),
                ))
            }
            Some(true) => {
                return Err(f.corrupt(
                    uc,
                    format!("a file under construction ({named}) names inode {id}, a directory"),
                ))
            }
            Some(false) => {}
        }
    }
    let refs = section_at(f, HdfsSection::InodeReference);
    for (i, r) in img.references.iter().enumerate() {
        if kind(r.referred_id).is_none() {
            return Err(f.corrupt(
                refs,
                format!(
                    "reference {i} refers to inode {}, which INODE does not hold",
                    r.referred_id
                ),
            ));
        }
    }
    let snap = section_at(f, HdfsSection::Snapshot);
    for &d in &img.snapshots.snapshottable_dirs {
        match kind(d) {
            None => {
                return Err(f.corrupt(snap, format!("snapshottable directory {d} is not in INODE")))
            }
            Some(false) => {
                return Err(f.corrupt(
                    snap,
                    format!("snapshottable directory {d} is not a directory"),
                ))
            }
            Some(true) => {}
        }
    }
    Ok(())
}

/// The inodes snapshots reach directly (deleted lists and references),
/// each SNAPSHOT_DIFF entry checked: its inode held (`kind`, as
/// [`check_named`] takes it), its snapshots listed, its deleted inodes and
/// references held.
fn snapshot_seeds(
    f: &HdfsFile,
    img: &HdfsImage,
    kind: &dyn Fn(u64) -> Option<bool>,
) -> Result<Vec<u64>, LoadError> {
    let ids: HashSet<u32> = img.snapshots.snapshots.iter().map(|s| s.id).collect();
    let diff = section_at(f, HdfsSection::SnapshotDiff);
    let unknown = |what: &str, inode: u64, id: u32| {
        f.corrupt(
            diff.clone(),
            format!("a {what} of inode {inode} names snapshot {id}, which SNAPSHOT does not list"),
        )
    };
    let mut seeds: Vec<u64> = img.references.iter().map(|r| r.referred_id).collect();
    for rec in &img.snapshots.diff_records {
        let inode = rec.entry.inode_id();
        if kind(inode).is_none() {
            return Err(f.corrupt(
                diff,
                format!("a SNAPSHOT_DIFF entry names inode {inode}, which INODE does not hold"),
            ));
        }
        for fd in &rec.file_diffs {
            if !ids.contains(&fd.snapshot_id()) {
                return Err(unknown("file diff", inode, fd.snapshot_id()));
            }
        }
        for (dd, _) in &rec.dir_diffs {
            if !ids.contains(&dd.snapshot_id()) {
                return Err(unknown("directory diff", inode, dd.snapshot_id()));
            }
            for &d in &dd.deleted_inode {
                if kind(d).is_none() {
                    return Err(f.corrupt(
                        diff,
                        format!("a directory diff of inode {inode} lists deleted inode {d}, which INODE does not hold"),
                    ));
                }
                seeds.push(d);
            }
            for &r in &dd.deleted_inode_ref {
                let Some(to) = usize::try_from(r).ok().and_then(|r| img.references.get(r)) else {
                    return Err(f.corrupt(
                        diff,
                        format!(
                            "a directory diff of inode {inode} lists deleted reference {r}, of {} references",
                            img.references.len()
                        ),
                    ));
                };
                seeds.push(to.referred_id);
            }
        }
    }
    Ok(seeds)
}

/// Every snapshot-only inode (`others`) reached from `seeds` through the
/// snapshot-only directories' children and references.
fn check_reached(
    f: &HdfsFile,
    img: &HdfsImage,
    others: &HashMap<u64, bool>,
    mut seeds: Vec<u64>,
) -> Result<(), LoadError> {
    // The snapshot-only directories' children, by parent.
    let mut kids: HashMap<u64, Vec<u64>> = HashMap::new();
    for d in &img.snapshots.snapshot_only_dirs {
        let list = kids.entry(d.parent()).or_default();
        list.extend_from_slice(&d.children);
        for &r in &d.ref_children {
            if let Some(to) = usize::try_from(r).ok().and_then(|r| img.references.get(r)) {
                list.push(to.referred_id);
            }
        }
    }
    let mut reached: HashSet<u64> = HashSet::new();
    while let Some(id) = seeds.pop() {
        if reached.insert(id) {
            if let Some(k) = kids.get(&id) {
                seeds.extend_from_slice(k);
            }
        }
    }
    let mut lost: Vec<u64> = others
        .keys()
        .copied()
        .filter(|id| !reached.contains(id))
        .collect();
    if let Some(&first) = lost.iter().min() {
        lost.sort_unstable();
        return Err(f.corrupt(
            section_at(f, HdfsSection::Inode),
            format!(
                "{} inodes (the first inode {first}) are neither in the current tree nor reached by any snapshot ({} snapshots, {} diff entries, {} references)",
                lost.len(),
                img.snapshots.snapshots.len(),
                img.snapshots.diff_records.len(),
                img.references.len()
            ),
        ));
    }
    Ok(())
}
