//! The INODE_DIR phase of the indexed path. It needs every inode id, so it
//! runs after the INODE phase. On a pool the builder is shared read-only
//! (ids, names) and each piece's parent links go to a sharded parent table
//! (`shard`), copied into the nodes once every piece is in; on the serial
//! path they go straight into the nodes. Either way each link is set at
//! most once; then the children lists are attached and the tree checked
//! (every inode reachable from the root).
#![deny(clippy::arithmetic_side_effects)]

use crate::decode;
use crate::error::LoadError;
use crate::run::run_pieces_tracked;
use crate::sections::{chunk_of, corrupt, pieces, section};
use crate::shard::Sharded;
use crate::source::{ImageSource, PieceBuf};
use crate::stats::LoadStats;
use nsimage_format::{Location, SectionKind, SubSectionInfo};
use nsimage_namespace::{DirBatch, Namespace, NamespaceBuilder, Slot, NO_SLOT};
use rayon::prelude::*;
use std::time::Instant;

/// Shards of the parent table.
const SHARDS: usize = 256;

/// Links every inode to its directory and finishes the namespace; records
/// the phase's time and lock traffic in `stats`.
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
    let batches = match pool {
        Some(_) => {
            let mut parents: Vec<Slot> = vec![NO_SLOT; builder.inode_count()];
            let batches = link_parents(src, pool, &pieces, &builder, &mut parents, stats)?;
            set_parents(pool, builder.nodes_mut(), &parents);
            batches
        }
        None => link_in_place(src, &pieces, &mut builder)?,
    };
    builder
        .attach(batches)
        .map_err(|d| corrupt(src, at.clone(), d))?;
    let reachable = match pool {
        Some(pool) => pool.install(|| reachable(&builder, true)),
        None => reachable(&builder, false),
    };
    let ns = builder
        .finish_counted(reachable)
        .map_err(|d| corrupt(src, at, d))?;
    stats.dir_phase_seconds = t.elapsed().as_secs_f64();
    Ok(ns)
}

/// Decodes each piece into a batch and records its children's parents in
/// `parents` (through a sharded table); a child listed twice is corrupt.
fn link_parents(
    src: &ImageSource,
    pool: Option<&rayon::ThreadPool>,
    pieces: &[(SubSectionInfo, Location)],
    builder: &NamespaceBuilder,
    parents: &mut [Slot],
    stats: &mut LoadStats,
) -> Result<Vec<DirBatch>, LoadError> {
    let fmt = |e| LoadError::from_format(src.path(), e);
    let table = Sharded::new(parents, SHARDS);
    let batches = run_pieces_tracked(
        src.progress(),
        pool,
        pieces,
        PieceBuf::default,
        |buf, i, p, at| {
            let bytes = src.piece(p, at, buf)?;
            let chunk = chunk_of(src, i, at)?;
            let batch = decode::dirs(bytes, p, at, builder, chunk).map_err(fmt)?;
            link_once(&table, &batch).map_err(|d| corrupt(src, at.clone(), d))?;
            Ok(batch)
        },
    )?;
    stats.locks.add(table.stats());
    Ok(batches)
}

/// The serial path's [`link_parents`]: each piece's parent links go
/// straight into the nodes (whose parents the INODE phase left unset), with
/// no parent table to fill, sort by shard and copy over afterwards.
fn link_in_place(
    src: &ImageSource,
    pieces: &[(SubSectionInfo, Location)],
    builder: &mut NamespaceBuilder,
) -> Result<Vec<DirBatch>, LoadError> {
    let mut buf = PieceBuf::default();
    let mut batches = Vec::with_capacity(pieces.len());
    for (i, (p, at)) in pieces.iter().enumerate() {
        src.progress().started(p.offset);
        let bytes = src.piece(p, at, &mut buf)?;
        let chunk = chunk_of(src, i, at)?;
        let batch = decode::dirs(bytes, p, at, builder, chunk)
            .map_err(|e| LoadError::from_format(src.path(), e))?;
        builder
            .link(&batch)
            .map_err(|d| corrupt(src, at.clone(), d))?;
        batches.push(batch);
    }
    Ok(batches)
}

/// Records a batch's children's parents in the sharded parent table; a
/// child that already has one (listed in two directories) is an error.
pub(crate) fn link_once(table: &Sharded<'_, Slot>, batch: &DirBatch) -> Result<(), String> {
    table.apply(batch.links(), |slot, child, parent| {
        if *slot != NO_SLOT {
            return Err(format!(
                "inode in slot {child} is listed in two directories"
            ));
        }
        *slot = parent;
        Ok(())
    })
}

/// Copies the parent table into the nodes, in parallel inside a pool.
pub(crate) fn set_parents(
    pool: Option<&rayon::ThreadPool>,
    nodes: &mut [nsimage_namespace::Node],
    parents: &[Slot],
) {
    match pool {
        Some(pool) => pool.install(|| {
            nodes
                .par_iter_mut()
                .zip(parents.par_iter())
                .for_each(|(n, &p)| n.parent = p)
        }),
        None => nodes
            .iter_mut()
            .zip(parents)
            .for_each(|(n, &p)| n.parent = p),
    }
}

/// Inodes reachable from the root: a breadth-first walk whose wide levels
/// are expanded in parallel chunks (inside a pool) and narrow ones serially.
pub(crate) fn reachable(b: &NamespaceBuilder, parallel: bool) -> usize {
    let n = b.inode_count();
    let mut frontier: Vec<Slot> = if n == 0 { Vec::new() } else { vec![0] };
    let mut count = 1usize;
    while !frontier.is_empty() && count <= n {
        if frontier.len() < 1024 || !parallel {
            let mut next = Vec::new();
            count = count.saturating_add(b.expand(&frontier, &mut next));
            frontier = next;
        } else {
            let parts: Vec<(usize, Vec<Slot>)> = frontier
                .par_chunks(256)
                .map(|c| {
                    let mut next = Vec::new();
                    (b.expand(c, &mut next), next)
                })
                .collect();
            let expanded = parts.iter().fold(0usize, |a, p| a.saturating_add(p.0));
            count = count.saturating_add(expanded);
            frontier = parts.into_iter().flat_map(|p| p.1).collect();
        }
    }
    count
}
