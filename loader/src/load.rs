//! Planning and driving a load: NS_INFO and STRING_TABLE first, then the
//! INODE pieces, then the INODE_DIR pieces, each piece read with one read
//! call and decoded by [`crate::decode`].

use crate::decode;
use crate::source::ImageSource;
use crate::LoadError;
use nsimage_format::model::NamespaceBuilder;
use nsimage_format::{Location, Namespace, SectionInfo, SectionKind, SubSectionInfo};
use std::path::Path;
use std::time::Instant;

/// How to load.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {}

/// What a load did.
#[derive(Clone, Debug, Default)]
pub struct LoadStats {
    /// Pieces (sections or sub-sections) decoded.
    pub pieces: u64,
    pub read_calls: u64,
    pub bytes_read: u64,
    pub seconds: f64,
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

fn section(src: &ImageSource, kind: SectionKind) -> Result<&SectionInfo, LoadError> {
    // Index::decode already refuses an index without every known kind.
    src.index.section(kind).ok_or_else(|| LoadError::Corrupt {
        path: src.path().to_path_buf(),
        at: Location::default(),
        detail: format!("index lists no {kind} section"),
    })
}

/// Loads the image at `path`.
pub fn load(path: &Path, _opts: &LoadOptions) -> Result<Loaded, LoadError> {
    let started = Instant::now();
    let src = ImageSource::open(path)?;
    let namespace = load_from(&src)?;
    let stats = LoadStats {
        pieces: src
            .index
            .sections
            .iter()
            .map(|s| s.pieces().len() as u64)
            .sum(),
        read_calls: src.read_calls(),
        bytes_read: src.bytes_read(),
        seconds: started.elapsed().as_secs_f64(),
    };
    Ok(Loaded { namespace, stats })
}

/// The serial path: one piece after another.
pub fn load_from(src: &ImageSource) -> Result<Namespace, LoadError> {
    let fmt = |e| LoadError::from_format(src.path(), e);
    let mut buf = Vec::new();
    let mut one = |kind| -> Result<(SubSectionInfo, Location, Vec<u8>), LoadError> {
        let sec = section(src, kind)?;
        let (p, at) = pieces(sec).remove(0);
        src.read_piece(&p, at.clone(), &mut buf)?;
        Ok((p, at, std::mem::take(&mut buf)))
    };
    let (p, at, b) = one(SectionKind::NS_INFO)?;
    let info = decode::ns_info(&b, &p, &at).map_err(fmt)?;
    let (p, at, b) = one(SectionKind::STRING_TABLE)?;
    let strings = decode::strings(&b, &p, &at).map_err(fmt)?;

    let inode_sec = section(src, SectionKind::INODE)?;
    let cap = (inode_sec.records as usize).min(inode_sec.length as usize);
    let mut builder = NamespaceBuilder::new(info, strings, cap);
    for (i, (p, at)) in pieces(inode_sec).into_iter().enumerate() {
        src.read_piece(&p, at.clone(), &mut buf)?;
        let batch = decode::inodes(&buf, &p, &at, builder.strings(), i as u32).map_err(fmt)?;
        builder.add_inodes(batch).map_err(|d| corrupt(src, at, d))?;
    }
    let dir_sec = section(src, SectionKind::INODE_DIR)?;
    for (i, (p, at)) in pieces(dir_sec).into_iter().enumerate() {
        src.read_piece(&p, at.clone(), &mut buf)?;
        let batch = decode::dirs(&buf, &p, &at, &builder, i as u32).map_err(fmt)?;
        builder.add_dirs(batch).map_err(|d| corrupt(src, at, d))?;
    }
    let at = Location::in_section(SectionKind::INODE_DIR, None, dir_sec.offset);
    builder.finish().map_err(|d| corrupt(src, at, d))
}

fn corrupt(src: &ImageSource, at: Location, detail: String) -> LoadError {
    LoadError::Corrupt {
        path: src.path().to_path_buf(),
        at,
        detail,
    }
}
