//! Segment files and their names: finished `edits_<first>-<last>`, open
//! `edits_inprogress_<first>` (STORE.md, "Store directory").

use std::path::{Path, PathBuf};

/// A segment file name: finished `edits_<first>-<last>` or open
/// `edits_inprogress_<first>` (txids zero-padded to 20 digits).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// The segment file.
    pub path: PathBuf,
    /// Its first txid.
    pub first: u64,
    /// `None` while the segment is open.
    pub last: Option<u64>,
}

/// The name of a finished segment holding txids `first..=last`.
pub fn finished_name(first: u64, last: u64) -> String {
    format!("edits_{first:020}-{last:020}")
}

/// The name of the open segment starting at txid `first`.
pub fn open_name(first: u64) -> String {
    format!("edits_inprogress_{first:020}")
}

/// A txid as written in a file name: exactly 20 ASCII digits (so names sort
/// in txid order), and at most `u64::MAX`.
pub fn parse_txid20(s: &str) -> Option<u64> {
    if s.len() != 20 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

impl Segment {
    /// Parses a segment file name; `None` for any other name (including a
    /// txid that is not exactly 20 digits or does not fit in a u64).
    pub fn parse(dir: &Path, name: &str) -> Option<Segment> {
        if let Some(first) = name.strip_prefix("edits_inprogress_") {
            return Some(Segment {
                path: dir.join(name),
                first: parse_txid20(first)?,
                last: None,
            });
        }
        let (a, b) = name.strip_prefix("edits_")?.split_once('-')?;
        Some(Segment {
            path: dir.join(name),
            first: parse_txid20(a)?,
            last: Some(parse_txid20(b)?),
        })
    }

    /// The segment's file name.
    pub fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}
