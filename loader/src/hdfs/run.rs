//! The load of a Hadoop image, its `verify`, and [`describe`].

use super::dirs::{current_tree, dir_phase, Outside};
use super::file::HdfsFile;
use super::image::HdfsImage;
use super::inodes::inode_phase;
use super::md5;
use super::small::{from_summary, small_sections};
use super::strings::{decode_strings, StringIds};
use crate::error::LoadError;
use crate::options::LoadOptions;
use crate::stats::{LoadStats, Loaded};
use crate::trace::{in_phase, Timeline};
use nsimage_format::hdfs::{HdfsSection, SummarySection};
use nsimage_format::hdfs_pb::INodeSection;
use nsimage_format::{Location, SubSectionInfo};
use nsimage_namespace::{Interned, NamespaceBuilder, NsInfo, StringTable};
use prost::Message;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// What a Hadoop image holds beside the namespace, read from its summary
/// and small sections (not the inodes): for `info`.
pub fn describe(path: &Path) -> Result<HdfsImage, LoadError> {
    let f = HdfsFile::open(path)?;
    let (mut img, _, _) = side_and_strings(&f)?;
    let inode = pieces(&f, HdfsSection::Inode)?;
    img.inode_header = inode.first().and_then(|p| inode_header(&f, p));
    Ok(img)
}

/// What every reader of a Hadoop image reads first: the side structure
/// (the summary's facts and the small sections) and STRING_TABLE (the
/// string table and its ids).
pub(crate) fn side_and_strings(
    f: &HdfsFile,
) -> Result<(HdfsImage, StringTable, StringIds), LoadError> {
    let mut img = from_summary(f);
    small_sections(f, &mut img)?;
    let (strings, ids) = decode_strings(f)?;
    img.string_mask_bits = ids.mask_bits();
    Ok((img, strings, ids))
}

/// The pieces of a section: its sub-sections, or the section whole; none
/// if the image lacks it.
pub(crate) fn pieces(
    f: &HdfsFile,
    s: HdfsSection,
) -> Result<Vec<(SubSectionInfo, Location)>, LoadError> {
    let Some(sec) = f.summary.find(s).cloned() else {
        return Ok(Vec::new());
    };
    let subs = f.summary.sub_sections(&sec).map_err(|e| f.fmt(e))?;
    let split = !subs.is_empty();
    let list: Vec<SummarySection> = if split { subs } else { vec![sec] };
    Ok(list
        .iter()
        .enumerate()
        .map(|(i, p)| {
            (
                SubSectionInfo {
                    offset: p.offset,
                    length: p.length,
                    records: 0,
                    first_key: 0,
                    checksum: 0,
                    at_rest: Default::default(),
                },
                Location::in_section(s.kind(), split.then_some(i), p.offset),
            )
        })
        .collect())
}

/// The INODE header (`lastInodeId`, `numInodes`), read from the first
/// piece's start without reading the piece, or `None` if it cannot be read.
pub(crate) fn inode_header(f: &HdfsFile, first: &(SubSectionInfo, Location)) -> Option<(u64, u64)> {
    let (p, at) = first;
    let bytes = f.prefix(p.offset, p.length, at, 64).ok()?;
    let mut cur = &bytes[..];
    INodeSection::decode_length_delimited(&mut cur)
        .ok()
        .map(|h| (h.last_inode_id(), h.num_inodes()))
}

/// The inodes `path`'s INODE header declares (0 where it cannot be
/// read), from the summary and the header's few bytes: what a load's
/// memory is sized from before it starts.
///
/// # Errors
/// What opening the image or reading its summary refuses.
pub(crate) fn declared_inodes(path: &Path) -> Result<u64, LoadError> {
    let f = HdfsFile::open(path)?;
    let inode_pieces = pieces(&f, HdfsSection::Inode)?;
    Ok(inode_pieces
        .first()
        .and_then(|p| inode_header(&f, p))
        .map_or(0, |h| h.1))
}

/// Loads a Hadoop image (`load` came here on seeing the magic).
pub(crate) fn load_hdfs(path: &Path, opts: &LoadOptions) -> Result<Loaded, LoadError> {
    let started = Instant::now();
    let timeline = opts
        .timeline
        .clone()
        .unwrap_or_else(|| Arc::new(Timeline::new(false)));
    let mut f = timeline.phase("open", || HdfsFile::open(path))?;
    f.set_timeline(Arc::clone(&timeline));
    let check = md5::start(path, opts.md5)?;
    let result = load_open(&f, opts);
    let md5 = match check {
        Some(c) if result.is_ok() => Some(timeline.phase("md5", || c.finish(path))?),
        Some(c) => {
            c.abandon();
            None
        }
        None => None,
    };
    let mut loaded = result?;
    loaded.stats.md5_checked = md5.is_some();
    if let Some(t) = md5 {
        loaded.stats.md5_seconds = t.seconds;
        loaded.stats.md5_cpu_seconds = t.cpu_seconds;
    }
    loaded.stats.read_calls = f.read_calls();
    loaded.stats.bytes_read = f.bytes_read();
    loaded.stats.seconds = started.elapsed().as_secs_f64();
    loaded.stats.phases = timeline.phase_stats(loaded.stats.threads);
    loaded.timeline = timeline;
    Ok(loaded)
}

fn load_open(f: &HdfsFile, opts: &LoadOptions) -> Result<Loaded, LoadError> {
    let timeline = f.timeline();
    let (mut img, strings, ids) = in_phase(timeline, "small sections", || side_and_strings(f))?;
    let tables = Interned::new(strings);
    let inode_pieces = pieces(f, HdfsSection::Inode)?;
    if inode_pieces.is_empty() {
        return Err(f.corrupt(
            nsimage_format::hdfs::version::summary_at(f.summary.summary_offset),
            "the summary lists no INODE section".into(),
        ));
    }
    let dir_pieces = pieces(f, HdfsSection::InodeDir)?;
    if let Some(t) = timeline {
        let bytes = inode_pieces
            .iter()
            .chain(&dir_pieces)
            .fold(0u64, |b, (p, _)| b.saturating_add(p.length));
        t.plan((inode_pieces.len() + dir_pieces.len()) as u64, bytes);
    }
    let refs: Vec<u64> = img.references.iter().map(|r| r.referred_id).collect();
    // Parallel only over sub-sections, as Hadoop does, and above the
    // threshold of inodes.
    let threads = if opts.serial || inode_pieces.len() < 2 {
        1
    } else {
        let n = inode_header(f, &inode_pieces[0]).map_or(u64::MAX, |h| h.1);
        if n < opts.parallel_threshold {
            1
        } else if opts.threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            opts.threads
        }
    };
    let pool = crate::run::pool(f.path(), threads)?;
    let pool = pool.as_ref();
    let mut stats = LoadStats {
        mode: if threads == 1 { "serial" } else { "parallel" },
        read: "bulk",
        threads,
        pieces: (inode_pieces.len() + dir_pieces.len()) as u64,
        ..LoadStats::default()
    };
    // With snapshots, INODE also holds inodes only snapshots see: keep the
    // current tree's.
    let keep = if img.has_snapshots() {
        Some(current_tree(f, &dir_pieces, &refs)?)
    } else {
        None
    };
    let t = Instant::now();
    let inodes = in_phase(timeline, "inode: decode", || {
        inode_phase(f, pool, &inode_pieces, &tables, &ids, keep.as_ref())
    })?;
    stats.locks.add(crate::lock_stats::LockStats {
        acquisitions: inodes.range_locks,
        ..Default::default()
    });
    img.striped_files = inodes.striped_files;
    img.type_quota_dirs = inodes.type_quota_dirs;
    img.inodes_resorted = inodes.resorted;
    img.snapshots.snapshot_only_inodes = inodes.skipped;
    img.inode_header = Some((inodes.header.last_inode_id, inodes.header.num_inodes));
    img.snapshots.snapshot_only = inodes.snapshot_only;
    let info = ns_info(&img, inodes.header.last_inode_id, inodes.striped_files > 0);
    let at0 = inode_pieces[0].1.clone();
    let builder = in_phase(timeline, "inode: parts", || {
        let mut builder = NamespaceBuilder::new(info, tables, inodes.nodes);
        for parts in inodes.parts {
            builder
                .add_inode_parts(parts)
                .map_err(|d| f.corrupt(at0.clone(), d.to_string()))?;
        }
        Ok::<_, LoadError>(builder)
    })?;
    stats.inode_phase_seconds = t.elapsed().as_secs_f64();
    let t = Instant::now();
    // The entries of directories outside the current tree are checked
    // against the inodes only snapshots see (as Hadoop's loader checks
    // every entry).
    let outside = keep.as_ref().map(|tree| Outside {
        tree,
        others: &img.snapshots.snapshot_only,
    });
    let (namespace, others) = in_phase(timeline, "dir", || {
        dir_phase(f, pool, &dir_pieces, builder, &refs, outside.as_ref())
    })?;
    img.snapshots.snapshot_only_dirs = others;
    super::reach::check(f, &img, &namespace)?;
    if let Some(keep) = &keep {
        // What the namespace cannot hold, whole, for a writer to put back.
        let refs = if img.references.is_empty() {
            Vec::new()
        } else {
            super::carry::ref_children(f, &dir_pieces, keep)?
        };
        let at = inode_pieces[0].1.clone();
        img.carry = super::carry::build(f, &img, &ids, namespace.strings(), refs, &at)?;
    }
    stats.dir_phase_seconds = t.elapsed().as_secs_f64();
    Ok(Loaded {
        namespace,
        stats,
        hdfs: Some(Box::new(img)),
        hdfs_carry: None,
        timeline: Arc::new(Timeline::new(false)),
    })
}

/// NS_INFO as the namespace keeps it, from the image's NameSystem section
/// and INODE header (`lastInodeId`); `striped`: whether any file is
/// erasure-coded (its block groups' ids count from 2^63).
pub(crate) fn ns_info(img: &HdfsImage, last_inode_id: u64, striped: bool) -> NsInfo {
    let n = &img.name_system;
    let mut last_block_id = n.last_allocated_block_id;
    if striped {
        last_block_id = last_block_id.max(n.last_allocated_striped_block_id);
    }
    NsInfo {
        namespace_id: u64::from(n.namespace_id),
        last_txid: n.transaction_id,
        last_inode_id,
        last_block_id,
        // The stamp new blocks get: genstampV2 (genstampV1 only counted
        // legacy blocks, before Hadoop 2's sequential block ids).
        generation_stamp: if n.genstamp_v2 == 0 {
            n.genstamp_v1
        } else {
            n.genstamp_v2
        },
        creation_time: n.nsimage_creation_time,
    }
}

/// What `verify` reports of a Hadoop image.
pub(crate) struct Checked {
    /// Entries of the summary.
    pub(crate) sections: usize,
    /// The file's length.
    pub(crate) bytes: u64,
    /// The first problem the load's checks (the sidecar's included) found.
    pub(crate) problem: Option<(Location, String)>,
}

/// Runs the load's checks over a Hadoop image for `verify`, its sidecar
/// checked as `md5` says.
pub(crate) fn check(path: &Path, md5: md5::Md5Policy) -> Result<Checked, LoadError> {
    let f = HdfsFile::open(path)?;
    let (sections, bytes) = (f.summary.sections.len(), f.len);
    drop(f);
    let opts = LoadOptions {
        serial: true,
        md5,
        ..LoadOptions::default()
    };
    match load_hdfs(path, &opts) {
        Ok(_) => Ok(Checked {
            sections,
            bytes,
            problem: None,
        }),
        Err(LoadError::Corrupt { at, detail, .. }) => Ok(Checked {
            sections,
            bytes,
            problem: Some((at, detail)),
        }),
        Err(e) => Err(e),
    }
}
