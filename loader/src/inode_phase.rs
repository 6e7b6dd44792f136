//! The INODE phase of the indexed path. Slot ranges follow from the
//! declared record counts (validated against the bytes by each piece's
//! decoder): each piece owns the range its count gives it in the node table
//! (`table`) and its worker copies the decoded nodes there; the pieces'
//! other parts (ids, names, blocks) then go to the builder in piece order.
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use crate::decode;
use crate::error::LoadError;
use crate::lock_stats::LockStats;
use crate::run::run_pieces_tracked;
use crate::sections::{chunk_of, corrupt, pieces, section};
use crate::source::{ImageSource, PieceBuf};
use crate::stats::LoadStats;
use crate::table::NodeTable;
use crate::trace::in_phase;
use nsimage_format::{Location, SectionInfo, SectionKind, SubSectionInfo};
use nsimage_namespace::{InodeParts, Interned, NamespaceBuilder, NsInfo};
use std::time::Instant;

/// Decodes every INODE piece into a builder holding all nodes; records the
/// phase's time and lock traffic in `stats`.
pub(crate) fn inode_phase(
    src: &ImageSource,
    pool: Option<&rayon::ThreadPool>,
    info: NsInfo,
    tables: Interned,
    stats: &mut LoadStats,
) -> Result<NamespaceBuilder, LoadError> {
    let t = Instant::now();
    let sec = section(src, SectionKind::INODE)?;
    let pieces = pieces(sec);
    let at0 = Location::in_section(SectionKind::INODE, None, sec.offset);
    let timeline = src.timeline();
    let mut table = in_phase(timeline, "inode: table", || node_table(src, sec, &at0))?;
    let parts = in_phase(timeline, "inode: decode", || {
        fill_table(src, pool, &pieces, &mut table, &tables, &at0)
    })?;
    let nodes = table
        .finish()
        .ok_or_else(|| corrupt(src, at0.clone(), "some inode slots were not filled".into()))?;
    // One range lock per piece, each taken by one worker only: never
    // contended by construction.
    stats.locks.add(LockStats {
        acquisitions: u64::try_from(pieces.len()).unwrap_or(u64::MAX),
        ..LockStats::default()
    });
    let builder = in_phase(timeline, "inode: parts", || {
        let mut builder = NamespaceBuilder::new(info, tables, nodes);
        for (parts, (_, at)) in parts.into_iter().zip(&pieces) {
            builder
                .add_inode_parts(parts)
                .map_err(|d| corrupt(src, at.clone(), d.to_string()))?;
        }
        Ok::<_, LoadError>(builder)
    })?;
    stats.inode_phase_seconds = t.elapsed().as_secs_f64();
    Ok(builder)
}

/// The node table for the section's declared record count, once the count
/// is known to fit its bytes.
fn node_table(
    src: &ImageSource,
    sec: &SectionInfo,
    at0: &Location,
) -> Result<NodeTable, LoadError> {
    // Bounded by the plain length (the stored one is smaller when the
    // pieces are compressed): the same rule the index decoder applies.
    nsimage_format::rules::check_records(SectionKind::INODE, sec.records, sec.plain_length())
        .map_err(|d| corrupt(src, at0.clone(), d))?;
    let total = usize::try_from(sec.records).map_err(|_| {
        corrupt(
            src,
            at0.clone(),
            format!("{} inode records do not fit in memory", sec.records),
        )
    })?;
    // The count is bounded by the declared plain length, which for a
    // compressed piece may be 255 times its stored bytes and is not
    // decompressed yet: the memory is asked for, and a refusal is an error
    // of this image, never an abort.
    NodeTable::try_new(total).ok_or_else(|| {
        corrupt(
            src,
            at0.clone(),
            format!(
                "{total} inode records need {} bytes of memory, which cannot be had",
                NodeTable::bytes_for(total)
            ),
        )
    })
}

/// Decodes each piece into its own slot range of `table`, returning the
/// pieces' other parts in piece order. Each piece owns the slot range its
/// declared count gives it; a count the bytes do not bear out fails that
/// piece before anything is written.
fn fill_table(
    src: &ImageSource,
    pool: Option<&rayon::ThreadPool>,
    pieces: &[(SubSectionInfo, Location)],
    table: &mut NodeTable,
    tables: &Interned,
    at0: &Location,
) -> Result<Vec<InodeParts>, LoadError> {
    let fmt = |e| LoadError::from_format(src.path(), e);
    // A count past usize cannot add up to the table's length.
    let counts: Vec<usize> = pieces
        .iter()
        .map(|(p, _)| usize::try_from(p.records).unwrap_or(usize::MAX))
        .collect();
    let ranges = table.ranges(&counts).ok_or_else(|| {
        corrupt(
            src,
            at0.clone(),
            "sub-section record counts do not add up".into(),
        )
    })?;
    // Per-worker scratch: the read buffer, reused from one piece to the next.
    let parts = run_pieces_tracked(
        src.tracked(),
        pool,
        pieces,
        PieceBuf::default,
        |buf, i, p, at| {
            let chunk = chunk_of(src, i, at)?;
            let unfilled = || {
                corrupt(
                    src,
                    at.clone(),
                    "records do not fill the piece's slots".into(),
                )
            };
            let range = ranges.get(i).ok_or_else(unfilled)?;
            let slots = range.writer().ok_or_else(unfilled)?;
            // The nodes go straight into the piece's slots. A piece stored
            // plain has its checksum checked as it is decoded; one at rest
            // was checked before it was opened.
            let batch = match src.plain_unchecked(p, at, buf)? {
                Some(bytes) => decode::inodes_into(bytes, p, at, tables, chunk, slots, true),
                None => {
                    let bytes = src.piece(p, at, buf)?;
                    decode::inodes_into(bytes, p, at, tables, chunk, slots, false)
                }
            }
            .map_err(fmt)?;
            src.done_with(p);
            let (parts, slots) = batch.into_parts_and_sink();
            if !range.commit(slots) {
                return Err(unfilled());
            }
            Ok(parts)
        },
    );
    src.release_pending();
    parts
}
