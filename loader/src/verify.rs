//! Verification: every checksum and every structural rule. Unlike a load,
//! it does not stop at the first bad piece: it lists each one.

use crate::error::LoadError;
use crate::indexed::load_serial;
use crate::name_index::check_names;
use crate::sections::pieces;
use crate::source::{ImageSource, ReadStrategy};
use nsimage_format::cipher::Key;
use nsimage_format::Location;
use std::path::Path;

/// One bad region.
#[derive(Clone, Debug)]
pub struct Problem {
    /// Where: section, sub-section and byte offset.
    pub at: Location,
    /// What is wrong there.
    pub detail: String,
}

/// The outcome of [`verify`].
#[derive(Clone, Debug, Default)]
pub struct VerifyReport {
    /// Sections the index lists.
    pub sections: usize,
    /// Pieces (sections or sub-sections) checked.
    pub pieces: usize,
    /// The file's length in bytes.
    pub bytes: u64,
    /// Every bad region found; empty for a valid image.
    pub problems: Vec<Problem>,
    /// Findings that do not make the image invalid: a split section whose
    /// own checksum disagrees while every sub-section's is right (FORMAT.md,
    /// "Checksum coverage": the sub-sections' checksums decide, and every
    /// reader accepts such a file); an optional NAME_INDEX that disagrees
    /// with INODE_DIR and INODE (no load reads it, but lookups would go
    /// wrong).
    pub warnings: Vec<Problem>,
}

impl VerifyReport {
    /// True when no problem was found (warnings do not count).
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// How [`verify`] reads an image.
#[derive(Clone, Default)]
pub struct VerifyOptions {
    /// How pieces are read: [`ReadStrategy::Bulk`] (positioned reads, the
    /// default); with [`ReadStrategy::Mmap`] the file is mapped once, so
    /// that the structural pass reads the same pages instead of reading the
    /// file a second time; [`ReadStrategy::Stream`] reads like `Bulk`.
    pub read: ReadStrategy,
    /// The key of an encrypted image (checked against the index's
    /// fingerprint first). Without the right key an encrypted image is an
    /// error ([`LoadError::Key`]).
    pub key: Option<Key>,
    /// The memory the check may take: it holds the whole namespace (its
    /// structural pass is a load), so with a budget an image whose declared
    /// inodes need more is refused first ([`LoadError::TooLarge`]); `None`
    /// (the default): no check.
    pub budget: Option<crate::budget::Budget>,
    /// Whether a Hadoop image's `.md5` sidecar is checked (the default)
    /// or ignored.
    pub md5: crate::hdfs::Md5Policy,
}

/// Verifies the image at `path`, read as `opts` says. Header, footer and
/// index problems are returned as an error (nothing else can be checked
/// without them); problems inside sections are listed in the report.
pub fn verify(path: &Path, opts: &VerifyOptions) -> Result<VerifyReport, LoadError> {
    let (read, key) = (opts.read, opts.key.as_ref());
    if crate::hdfs::is_hdfs_file(path)? {
        crate::need::hdfs_fits(path, opts.budget)?;
        // A Hadoop image: no checksums but the sidecar; the load's checks.
        let c = crate::hdfs::run::check(path, opts.md5)?;
        return Ok(VerifyReport {
            sections: c.sections,
            pieces: c.sections,
            bytes: c.bytes,
            problems: c
                .problem
                .map(|(at, detail)| Problem { at, detail })
                .into_iter()
                .collect(),
            warnings: Vec::new(),
        });
    }
    let mut src = ImageSource::open(path)?;
    src.unlock(key)?;
    crate::need::image_fits(&src, opts.budget, key)?;
    if let ReadStrategy::Mmap(opt_in) = read {
        src.map(opt_in)?;
    }
    let mut report = VerifyReport {
        sections: src.index.sections.len(),
        bytes: src.len(),
        ..VerifyReport::default()
    };
    let mut buf = crate::source::PieceBuf::default();
    for sec in &src.index.sections {
        let mut whole = xxhash_rust::xxh3::Xxh3::new();
        let mut pieces_ok = true;
        for (p, at) in pieces(sec) {
            report.pieces += 1;
            match src.piece_hashing(&p, &at, &mut buf, Some(&mut whole)) {
                Ok(_) => {}
                Err(LoadError::Corrupt { at, detail, .. }) => {
                    pieces_ok = false;
                    report.problems.push(Problem { at, detail })
                }
                Err(e) => return Err(e),
            }
        }
        // With every piece good, the section checksum should agree too (a
        // bad piece is already listed). The sub-sections' checksums cover
        // the same bytes and decide, so a disagreement is only reported.
        let sum = whole.digest();
        if pieces_ok && !sec.sub_sections.is_empty() && sum != sec.checksum {
            report.warnings.push(Problem {
                at: Location::in_section(sec.kind, None, sec.offset),
                detail: format!(
                    "section checksum mismatch (stored {:016x}, computed {sum:016x}) \
                     while every sub-section checksum matches",
                    sec.checksum
                ),
            });
        }
    }
    if report.problems.is_empty() {
        match load_serial(&src) {
            Ok(ns) => {
                // A load decodes the optional HDFS_SNAPSHOTS carry too.
                if let Err(e) = crate::sections::hdfs_carry(&src) {
                    match e {
                        LoadError::Corrupt { at, detail, .. } => {
                            report.problems.push(Problem { at, detail })
                        }
                        other => return Err(other),
                    }
                }
                // The optional NAME_INDEX is redundant with INODE_DIR and
                // INODE, and no load reads it: a disagreement leaves the
                // image valid for every read path (they must agree on
                // validity), but makes one-path lookups wrong, so it is
                // reported, located, as a warning.
                for (at, detail) in check_names(&src, &ns)? {
                    report.warnings.push(Problem {
                        at,
                        detail: format!("{}: {detail}", names_kind(&src)),
                    });
                }
            }
            Err(LoadError::Corrupt { at, detail, .. }) => {
                report.problems.push(Problem { at, detail })
            }
            Err(other) => return Err(other),
        }
    }
    Ok(report)
}

/// The name of the image's one-path lookup index section, for warnings.
fn names_kind(src: &ImageSource) -> &'static str {
    if src
        .index
        .section(nsimage_format::SectionKind::NAME_RUNS)
        .is_some()
    {
        "NAME_RUNS"
    } else {
        "NAME_INDEX"
    }
}
