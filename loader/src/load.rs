//! Planning and driving a load. NS_INFO and STRING_TABLE are read first;
//! then the INODE pieces run on a thread pool, each decoded into a local
//! batch whose nodes are copied into the slot range of the node table that
//! the piece owns (`table`); then the INODE_DIR pieces run the same way
//! (they need every inode id, so they wait for the INODE phase), their
//! parent links going into a sharded parent table (`shard`). One thread
//! runs the same code without a pool: the serial path. Pieces are the unit
//! of work (one task each, work-stealing), so balance does not depend on how
//! many sub-sections the writer chose.

use crate::decode;
use crate::shard::{LockStats, Sharded};
use crate::source::{ImageSource, ReadStrategy};
use crate::table::NodeTable;
use crate::LoadError;
use nsimage_format::{Location, SectionInfo, SectionKind, SubSectionInfo};
use nsimage_namespace::Namespace;
use nsimage_namespace::{NamespaceBuilder, Slot, NO_SLOT};
use rayon::prelude::*;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Namespaces with fewer inodes than this load serially by default. Chosen
/// from the measured serial/parallel crossover (README, "Serial threshold").
pub const DEFAULT_PARALLEL_THRESHOLD: u64 = 10_000;

/// The smallest valid INODE record (FORMAT.md, Limits). The index decoder
/// already refuses more records than this allows; checked again here since
/// it bounds the node table allocated from the index's record count.
const MIN_INODE_RECORD_BYTES: u64 = nsimage_format::consts::MIN_INODE_RECORD;

/// Shards of the parent table.
const SHARDS: usize = 256;

/// How to load.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Worker threads; 0 means the number of available cores.
    pub threads: usize,
    pub read: ReadStrategy,
    /// Force the serial path.
    pub serial: bool,
    /// Below this many inodes (from the index) the load is serial.
    pub parallel_threshold: u64,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            threads: 0,
            read: ReadStrategy::default(),
            serial: false,
            parallel_threshold: DEFAULT_PARALLEL_THRESHOLD,
        }
    }
}

/// What a load did.
#[derive(Clone, Debug, Default)]
pub struct LoadStats {
    /// "serial" or "parallel".
    pub mode: &'static str,
    pub read: &'static str,
    pub threads: usize,
    /// Pieces (sections or sub-sections) decoded.
    pub pieces: u64,
    pub read_calls: u64,
    pub bytes_read: u64,
    pub seconds: f64,
    pub inode_phase_seconds: f64,
    pub dir_phase_seconds: f64,
    pub locks: LockStats,
}

pub struct Loaded {
    pub namespace: Namespace,
    pub stats: LoadStats,
}

/// Each piece of a section with the location used in its errors.
pub fn pieces(sec: &SectionInfo) -> Vec<(SubSectionInfo, Location)> {
    let split = !sec.sub_sections.is_empty();
    sec.pieces()
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let at = Location::in_section(sec.kind, split.then_some(i), p.offset);
            (p, at)
        })
        .collect()
}

pub(crate) fn section(src: &ImageSource, kind: SectionKind) -> Result<&SectionInfo, LoadError> {
    // Index::decode already refuses an index without every known kind.
    src.index.section(kind).ok_or_else(|| LoadError::Corrupt {
        path: src.path().to_path_buf(),
        at: Location::default(),
        detail: format!("index lists no {kind} section"),
    })
}

pub(crate) fn corrupt(src: &ImageSource, at: Location, detail: String) -> LoadError {
    LoadError::Corrupt {
        path: src.path().to_path_buf(),
        at,
        detail,
    }
}

/// Checks the checksums of the sections this build does not know (optional
/// ones; the index refuses the others). Their bytes mean nothing to this
/// reader, but every reader checks them (FORMAT.md, "Unknown sections"), so
/// that every read path gives the same verdict.
pub(crate) fn check_unknown(src: &ImageSource) -> Result<(), LoadError> {
    let mut buf = Vec::new();
    for sec in src.index.sections.iter().filter(|s| !s.kind.is_known()) {
        for (p, at) in pieces(sec) {
            src.piece(&p, &at, &mut buf)?;
        }
    }
    Ok(())
}

/// Loads the image at `path`.
pub fn load(path: &Path, opts: &LoadOptions) -> Result<Loaded, LoadError> {
    let started = Instant::now();
    let mut src = ImageSource::open(path)?;
    let inodes = src
        .index
        .section(SectionKind::INODE)
        .map_or(0, |s| s.records);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let serial =
        opts.serial || opts.read == ReadStrategy::Stream || inodes < opts.parallel_threshold;
    let threads = if serial {
        1
    } else if opts.threads == 0 {
        cores
    } else {
        opts.threads
    };
    let mut stats = LoadStats {
        mode: if threads == 1 { "serial" } else { "parallel" },
        read: opts.read.name(),
        threads,
        ..LoadStats::default()
    };
    let namespace = match opts.read {
        ReadStrategy::Stream => crate::stream::load_stream(&src)?,
        strategy => {
            if strategy == ReadStrategy::Mmap {
                src.map()?;
            }
            let pool = if threads > 1 {
                let p = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(|i| format!("nsimage-load-{i}"))
                    .build()
                    .map_err(|e| LoadError::Io {
                        path: path.to_path_buf(),
                        source: std::io::Error::other(e),
                    })?;
                Some(p)
            } else {
                None
            };
            load_pieces(&src, pool.as_ref(), &mut stats)?
        }
    };
    stats.pieces = src
        .index
        .sections
        .iter()
        .filter(|s| s.kind.is_known())
        .map(|s| s.pieces().len() as u64)
        .sum();
    stats.read_calls = src.read_calls();
    stats.bytes_read = src.bytes_read();
    drop(src);
    crate::trim::release_free_memory();
    stats.seconds = started.elapsed().as_secs_f64();
    Ok(Loaded { namespace, stats })
}

/// Runs `f` over every piece, on `pool` when given (one task per piece,
/// work-stealing) or in order on this thread. The first failure stops the
/// workers from starting new pieces; the error of the lowest-numbered failed
/// piece is returned.
fn run_pieces<T: Send, S>(
    pool: Option<&rayon::ThreadPool>,
    pieces: &[(SubSectionInfo, Location)],
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(&mut S, usize, &SubSectionInfo, &Location) -> Result<T, LoadError> + Sync + Send,
) -> Result<Vec<T>, LoadError> {
    let Some(pool) = pool else {
        let mut scratch = init();
        return pieces
            .iter()
            .enumerate()
            .map(|(i, (p, at))| f(&mut scratch, i, p, at))
            .collect();
    };
    let stop = AtomicBool::new(false);
    let results: Vec<Option<Result<T, LoadError>>> = pool.install(|| {
        pieces
            .par_iter()
            .with_max_len(1)
            .enumerate()
            .map_init(&init, |scratch, (i, (p, at))| {
                if stop.load(Ordering::Relaxed) {
                    return None;
                }
                let r = f(scratch, i, p, at);
                if r.is_err() {
                    stop.store(true, Ordering::Relaxed);
                }
                Some(r)
            })
            .collect()
    });
    let mut out = Vec::with_capacity(results.len());
    let mut skipped = false;
    for r in results {
        match r {
            Some(Ok(v)) => out.push(v),
            Some(Err(e)) => return Err(e),
            None => skipped = true,
        }
    }
    debug_assert!(!skipped, "pieces are only skipped after an error");
    Ok(out)
}

/// The indexed path (mmap or bulk reads), serial or parallel.
fn load_pieces(
    src: &ImageSource,
    pool: Option<&rayon::ThreadPool>,
    stats: &mut LoadStats,
) -> Result<Namespace, LoadError> {
    let fmt = |e| LoadError::from_format(src.path(), e);
    check_unknown(src)?;
    let mut buf = Vec::new();
    let info = {
        let (p, at) = pieces(section(src, SectionKind::NS_INFO)?).remove(0);
        decode::ns_info(src.piece(&p, &at, &mut buf)?, &p, &at).map_err(fmt)?
    };
    let strings = {
        let (p, at) = pieces(section(src, SectionKind::STRING_TABLE)?).remove(0);
        decode::strings(src.piece(&p, &at, &mut buf)?, &p, &at).map_err(fmt)?
    };

    // INODE phase: slot ranges follow from the declared record counts
    // (validated against the bytes by each piece's decoder).
    let t = Instant::now();
    let inode_sec = section(src, SectionKind::INODE)?;
    let inode_pieces = pieces(inode_sec);
    let total = inode_sec.records as usize;
    // Each piece owns the slot range its declared count gives it; a count
    // the bytes do not bear out fails that piece before anything is written.
    let counts: Vec<usize> = inode_pieces
        .iter()
        .map(|(p, _)| p.records as usize)
        .collect();
    let at0 = Location::in_section(SectionKind::INODE, None, inode_sec.offset);
    let bound = inode_sec.length / MIN_INODE_RECORD_BYTES;
    if inode_sec.records > bound {
        return Err(corrupt(
            src,
            at0,
            format!(
                "{} inode records cannot fit in {} bytes",
                inode_sec.records, inode_sec.length
            ),
        ));
    }
    let mut table = NodeTable::new(total);
    let (parts, locks) = {
        let ranges = table.ranges(&counts).ok_or_else(|| {
            corrupt(
                src,
                at0.clone(),
                "sub-section record counts do not add up".into(),
            )
        })?;
        // Per-worker scratch: the read buffer and the node buffer are reused
        // from one piece to the next.
        let init = || (Vec::new(), Vec::new());
        let parts = run_pieces(pool, &inode_pieces, init, |(buf, nodes), i, p, at| {
            let bytes = src.piece(p, at, buf)?;
            let batch = decode::inodes(bytes, p, at, &strings, i as u32, std::mem::take(nodes))
                .map_err(fmt)?;
            if !ranges[i].fill(batch.nodes()) {
                return Err(corrupt(
                    src,
                    at.clone(),
                    "records do not fill the piece's slots".into(),
                ));
            }
            let (parts, buffer) = batch.into_parts_and_buffer();
            *nodes = buffer;
            Ok(parts)
        })?;
        // One range lock per piece, each taken by one worker only: never
        // contended by construction.
        let locks = LockStats {
            acquisitions: inode_pieces.len() as u64,
            ..LockStats::default()
        };
        (parts, locks)
    };
    let nodes = table
        .finish()
        .ok_or_else(|| corrupt(src, at0.clone(), "some inode slots were not filled".into()))?;
    stats.locks.add(locks);
    let mut builder = NamespaceBuilder::new(info, strings, nodes);
    for (parts, (_, at)) in parts.into_iter().zip(&inode_pieces) {
        builder
            .add_inode_parts(parts)
            .map_err(|d| corrupt(src, at.clone(), d))?;
    }
    stats.inode_phase_seconds = t.elapsed().as_secs_f64();

    // INODE_DIR phase: the builder is shared read-only (ids, names); parent
    // links go to a sharded table, each set at most once.
    let t = Instant::now();
    let dir_sec = section(src, SectionKind::INODE_DIR)?;
    let dir_pieces = pieces(dir_sec);
    let mut parents: Vec<Slot> = vec![NO_SLOT; builder.inode_count()];
    let (batches, locks) = {
        let table = Sharded::new(&mut parents, SHARDS);
        let b = &builder;
        let batches = run_pieces(pool, &dir_pieces, Vec::new, |buf, i, p, at| {
            let bytes = src.piece(p, at, buf)?;
            let batch = decode::dirs(bytes, p, at, b, i as u32).map_err(fmt)?;
            table
                .apply(batch.links(), |slot, child, parent| {
                    if *slot != NO_SLOT {
                        return Err(format!(
                            "inode in slot {child} is listed in two directories"
                        ));
                    }
                    *slot = parent;
                    Ok(())
                })
                .map_err(|d| corrupt(src, at.clone(), d))?;
            Ok(batch)
        })?;
        (batches, table.stats())
    };
    stats.locks.add(locks);
    let at = Location::in_section(SectionKind::INODE_DIR, None, dir_sec.offset);
    let nodes = builder.nodes_mut();
    match pool {
        Some(pool) => pool.install(|| {
            nodes
                .par_iter_mut()
                .zip(parents.par_iter())
                .for_each(|(n, &p)| n.parent = p)
        }),
        None => nodes
            .iter_mut()
            .zip(&parents)
            .for_each(|(n, &p)| n.parent = p),
    }
    builder
        .attach(batches)
        .map_err(|d| corrupt(src, at.clone(), d))?;
    drop(parents);
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

/// Inodes reachable from the root: a breadth-first walk whose wide levels
/// are expanded in parallel chunks (inside a pool) and narrow ones serially.
fn reachable(b: &NamespaceBuilder, parallel: bool) -> usize {
    let n = b.inode_count();
    let mut frontier: Vec<Slot> = if n == 0 { Vec::new() } else { vec![0] };
    let mut count = 1usize;
    while !frontier.is_empty() && count <= n {
        if frontier.len() < 1024 || !parallel {
            let mut next = Vec::new();
            count += b.expand(&frontier, &mut next);
            frontier = next;
        } else {
            let parts: Vec<(usize, Vec<Slot>)> = frontier
                .par_chunks(256)
                .map(|c| {
                    let mut next = Vec::new();
                    (b.expand(c, &mut next), next)
                })
                .collect();
            count += parts.iter().map(|p| p.0).sum::<usize>();
            frontier = parts.into_iter().flat_map(|p| p.1).collect();
        }
    }
    count
}

/// The serial path over an open source (used by `verify`).
pub fn load_from(src: &ImageSource) -> Result<Namespace, LoadError> {
    load_pieces(src, None, &mut LoadStats::default())
}
