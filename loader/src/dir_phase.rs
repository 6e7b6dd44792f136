//! The INODE_DIR phase of the indexed path. It needs every inode id, so it
//! runs after the INODE phase. On a pool the workers decode the pieces
//! with the builder shared read-only (ids, names), then link them: set the
//! parents and the directories' child lists, each worker those of its own
//! range of the node table; on the serial path the pieces are decoded in
//! turn, then linked with the table borrowed once. Either way the first
//! piece that fails to decode is reported before any link is set, and each
//! parent is set at most once; then the batches' child lists are attached
//! (taken into the namespace, their order checked) and the tree checked
//! from the parent links (every inode reachable from the root,
//! `NamespaceBuilder::finish_linked_in`), beside the placing of the
//! inodes' extras.
#![deny(clippy::arithmetic_side_effects)]

use crate::decode;
use crate::error::LoadError;
use crate::run::run_pieces_tracked;
use crate::sections::{chunk_of, corrupt, pieces, section};
use crate::source::{ImageSource, PieceBuf};
use crate::stats::LoadStats;
use crate::trace::{in_phase, in_task, Timeline};
use nsimage_format::{Location, SectionKind, SubSectionInfo};
use nsimage_namespace::{BuildError, DirBatch, Namespace, NamespaceBuilder, NodeRange};
use rayon::prelude::*;
use std::time::Instant;

/// Links every inode to its directory and finishes the namespace; records
/// the phase's time in `stats`.
pub(crate) fn dir_phase(
    src: &ImageSource,
    pool: Option<&rayon::ThreadPool>,
    mut builder: NamespaceBuilder,
    stats: &mut LoadStats,
) -> Result<Namespace, LoadError> {
    let t = Instant::now();
    let sec = section(src, SectionKind::INODE_DIR)?;
    let pieces = pieces(sec);
    let at = Location::in_section(SectionKind::INODE_DIR, None, sec.offset);
    let timeline = src.timeline();
    let (all, dir_of) = with_optional(src, &pieces);
    let batches = match pool {
        Some(pool) => {
            let batches = in_phase(timeline, "dir: decode", || {
                decode_dirs(src, Some(pool), &all, &dir_of, &builder)
            })?;
            let total = builder.inode_count();
            in_phase(timeline, "dir: link", || {
                let ranges = builder.node_ranges_mut(link_ranges_for(pool));
                link_ranges(pool, ranges, total, &batches, timeline)
            })
            .map_err(|(i, d)| {
                let at = pieces.get(i).map_or_else(|| at.clone(), |p| p.1.clone());
                corrupt(src, at, d.to_string())
            })?;
            batches
        }
        None => link_in_place(src, &pieces, (&all, &dir_of), &at, &mut builder)?,
    };
    in_phase(timeline, "dir: attach", || builder.attach(batches))
        .map_err(|d| corrupt(src, at.clone(), d.to_string()))?;
    let ns = in_phase(timeline, "dir: check tree", || {
        finish(builder, pool, timeline)
    })
    .map_err(|d| corrupt(src, at, d.to_string()))?;
    stats.dir_phase_seconds = t.elapsed().as_secs_f64();
    Ok(ns)
}

/// Checks the tree and finishes the namespace, the inodes' extras placed
/// in their maps on a second worker of `pool` meanwhile.
pub(crate) fn finish(
    builder: NamespaceBuilder,
    pool: Option<&rayon::ThreadPool>,
    timeline: Option<&Timeline>,
) -> Result<Namespace, BuildError> {
    match pool {
        Some(pool) => builder.finish_linked_in(|check, place| {
            pool.install(|| {
                rayon::join(
                    || in_task(timeline, "check the tree", check),
                    || in_task(timeline, "place the extras", place),
                )
            });
        }),
        None => builder.finish_linked(),
    }
}

/// The INODE_DIR pieces and those of the optional sections this build
/// does not know, in file order, with each one's INODE_DIR piece number
/// (`None` for an optional one). The optional pieces are only checked
/// (FORMAT.md, "Unknown sections"); taken in the same step as the
/// directories, they fill the workers' gaps instead of making a step of
/// their own (a writer puts NAME_RUNS, a thousand small pieces at 5M
/// inodes, between INODE and INODE_DIR), and the file is still read as one
/// front moving forward.
fn with_optional(
    src: &ImageSource,
    dirs: &[(SubSectionInfo, Location)],
) -> (Vec<(SubSectionInfo, Location)>, Vec<Option<usize>>) {
    let optional = src
        .index
        .sections
        .iter()
        .filter(|s| !s.kind.is_known())
        .flat_map(pieces)
        .map(|p| (p, None));
    let mut all: Vec<((SubSectionInfo, Location), Option<usize>)> = dirs
        .iter()
        .cloned()
        .enumerate()
        .map(|(i, p)| (p, Some(i)))
        .chain(optional)
        .collect();
    // Stable: pieces at one offset (empty ones) keep their order.
    all.sort_by_key(|(p, _)| p.0.offset);
    all.into_iter().unzip()
}

/// Decodes each INODE_DIR piece of `all` into a batch and checks the
/// others' checksums, on `pool` when given; the batches in piece order.
fn decode_dirs(
    src: &ImageSource,
    pool: Option<&rayon::ThreadPool>,
    all: &[(SubSectionInfo, Location)],
    dir_of: &[Option<usize>],
    builder: &NamespaceBuilder,
) -> Result<Vec<DirBatch>, LoadError> {
    let fmt = |e| LoadError::from_format(src.path(), e);
    let out = run_pieces_tracked(
        src.tracked(),
        pool,
        all,
        PieceBuf::default,
        |buf, i, p, at| {
            let bytes = src.piece(p, at, buf)?;
            let Some(&Some(d)) = dir_of.get(i) else {
                // An optional piece, checked: its pages go too.
                src.done_with(p);
                return Ok(None);
            };
            let chunk = chunk_of(src, d, at)?;
            let batch = decode::dirs(bytes, p, at, builder, chunk).map_err(fmt)?;
            src.done_with(p);
            Ok(Some(batch))
        },
    )?;
    src.release_pending();
    Ok(out.into_iter().flatten().collect())
}

/// Ranges the node table is cut into for linking on `pool`: four a worker,
/// so that the workers, taking them as they go, finish together (a range's
/// work is its children, which the ranges, cut by slots, do not share out
/// evenly); a batch whose directories and children all lie outside a range
/// is passed over whole.
pub(crate) fn link_ranges_for(pool: &rayon::ThreadPool) -> usize {
    pool.current_num_threads().saturating_mul(4)
}

/// Sets the parents of every batch's children on `pool`: the node table of
/// `total` slots is cut into ranges (of whole chunks, [`link_ranges_for`]),
/// `ranges`, and the worker that takes a range goes through the batches,
/// setting the links that fall in it (and the lists of its directories).
/// No worker waits for another, and no parent table is filled and
/// copied. A child whose parent is already set (listed in two directories)
/// fails its batch; the error of the lowest such batch is returned, with
/// the batch's index.
pub(crate) fn link_ranges(
    pool: &rayon::ThreadPool,
    mut ranges: Vec<NodeRange<'_>>,
    total: usize,
    batches: &[DirBatch],
    timeline: Option<&Timeline>,
) -> Result<(), (usize, BuildError)> {
    let failed: Vec<(usize, BuildError)> = pool.install(|| {
        ranges
            .par_iter_mut()
            // Each range a task of its own, taken by the next idle worker.
            .with_max_len(1)
            .filter_map(|range| {
                in_task(timeline, "link a range", || {
                    batches
                        .iter()
                        .enumerate()
                        .find_map(|(i, b)| b.link_into(range, total).err().map(|e| (i, e)))
                })
            })
            .collect()
    });
    match failed.into_iter().min_by_key(|f| f.0) {
        Some(f) => Err(f),
        None => Ok(()),
    }
}

/// The serial path: the pieces decoded in turn (the optional ones
/// checked), then every parent link set straight into the nodes (whose
/// parents the INODE phase left unset) with the table borrowed once for
/// all pieces.
fn link_in_place(
    src: &ImageSource,
    pieces: &[(SubSectionInfo, Location)],
    (all, dir_of): (&[(SubSectionInfo, Location)], &[Option<usize>]),
    at: &Location,
    builder: &mut NamespaceBuilder,
) -> Result<Vec<DirBatch>, LoadError> {
    let batches = in_phase(src.timeline(), "dir: decode", || {
        decode_dirs(src, None, all, dir_of, builder)
    })?;
    in_phase(src.timeline(), "dir: link", || builder.link_all(&batches)).map_err(|(i, d)| {
        let at = pieces.get(i).map_or_else(|| at.clone(), |p| p.1.clone());
        corrupt(src, at, d.to_string())
    })?;
    Ok(batches)
}
