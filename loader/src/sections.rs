//! Sections as every read path sees them: a section's pieces with the
//! locations their errors name, the lookup of a section the format requires,
//! the located error, and the checksum check of the sections this build
//! does not know. Shared by the indexed path, the streaming baseline and
//! `verify`, so that they name the same places and give the same verdicts.

use crate::error::LoadError;
use crate::source::ImageSource;
use nsimage_format::{Location, SectionInfo, SectionKind, SubSectionInfo};

/// Each piece of a section with the location used in its errors.
pub(crate) fn pieces(sec: &SectionInfo) -> Vec<(SubSectionInfo, Location)> {
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

/// The index entry of a section the format requires.
pub(crate) fn section(src: &ImageSource, kind: SectionKind) -> Result<&SectionInfo, LoadError> {
    // Index::decode already refuses an index without every known kind.
    src.index.section(kind).ok_or_else(|| LoadError::Corrupt {
        path: src.path().to_path_buf(),
        at: Location::default(),
        detail: format!("index lists no {kind} section"),
    })
}

/// The first piece of a section that the format does not split.
pub(crate) fn only_piece(
    src: &ImageSource,
    kind: SectionKind,
) -> Result<(SubSectionInfo, Location), LoadError> {
    // Every section has at least one piece (the whole section when it has
    // no sub-sections).
    pieces(section(src, kind)?)
        .into_iter()
        .next()
        .ok_or_else(|| {
            corrupt(
                src,
                Location::default(),
                format!("{kind} section has no piece"),
            )
        })
}

/// A corruption of `src` at `at`.
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
pub(crate) fn check_unknown(
    src: &ImageSource,
    pool: Option<&rayon::ThreadPool>,
) -> Result<(), LoadError> {
    check_unknown_but(src, pool, &[])
}

/// [`check_unknown`] but for the sections of the kinds `read` (which the
/// caller reads, and so checks, itself).
pub(crate) fn check_unknown_but(
    src: &ImageSource,
    pool: Option<&rayon::ThreadPool>,
    read: &[SectionKind],
) -> Result<(), LoadError> {
    let all: Vec<(SubSectionInfo, Location)> = src
        .index
        .sections
        .iter()
        .filter(|s| !s.kind.is_known() && !read.contains(&s.kind))
        .flat_map(pieces)
        .collect();
    if all.is_empty() {
        return Ok(());
    }
    // On the load's pool when given, workers taking the pieces in file
    // order, each start told to the prefetch thread; the first bad piece in
    // file order is reported, as on the serial path.
    crate::run::run_pieces_tracked(
        src.tracked(),
        pool,
        &all,
        crate::source::PieceBuf::default,
        |buf, _, p, at| src.piece(p, at, buf).map(|_| ()),
    )
    .map(|_| ())
}

/// A piece's number as the arena chunk its batch fills.
pub(crate) fn chunk_of(src: &ImageSource, i: usize, at: &Location) -> Result<u32, LoadError> {
    u32::try_from(i).map_err(|_| {
        corrupt(
            src,
            at.clone(),
            format!("piece {i} is past the arena's chunks"),
        )
    })
}

/// The optional HDFS_SNAPSHOTS section's carry (FORMAT.md,
/// "HDFS_SNAPSHOTS"), decoded; `None` when the image has none. Its
/// checksum is checked as the piece is read; bytes that do not decode, a
/// record count other than 1 (found, or declared by the index), or a string index past the carry's list are
/// corrupt, located in the section.
pub(crate) fn hdfs_carry(
    src: &ImageSource,
) -> Result<Option<nsimage_format::hdfs::SnapshotCarry>, LoadError> {
    let Some(sec) = src.index.section(SectionKind::HDFS_SNAPSHOTS) else {
        return Ok(None);
    };
    let mut carry = None;
    let mut n = 0u64;
    for (p, at) in pieces(sec) {
        let mut buf = crate::source::PieceBuf::default();
        let bytes = src.piece(&p, &at, &mut buf)?;
        for r in nsimage_format::framing::Records::new(bytes, at.clone()) {
            let (off, body) = r.map_err(|e| LoadError::from_format(src.path(), e))?;
            let here = Location {
                offset: off,
                ..at.clone()
            };
            n = n.saturating_add(1);
            carry = Some(
                nsimage_format::hdfs::decode_carry(body, &here)
                    .map_err(|e| LoadError::from_format(src.path(), e))?,
            );
        }
    }
    if n != 1 || sec.records != 1 {
        return Err(corrupt(
            src,
            Location::in_section(SectionKind::HDFS_SNAPSHOTS, None, sec.offset),
            format!(
                "HDFS_SNAPSHOTS holds {n} records and the index says {}; it must be 1",
                sec.records
            ),
        ));
    }
    Ok(carry)
}
