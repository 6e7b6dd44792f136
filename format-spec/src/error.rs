//! The format layer's error type.

use crate::consts::SectionKind;
use std::{fmt, io};

/// Where in an image a problem was found.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Location {
    /// The section, if the problem lies inside one.
    pub section: Option<SectionKind>,
    /// The sub-section number within that section, if any.
    pub sub_section: Option<usize>,
    /// Absolute byte offset in the file.
    pub offset: u64,
}

impl Location {
    /// A location outside any section.
    pub fn at(offset: u64) -> Self {
        Location {
            offset,
            ..Location::default()
        }
    }

    /// A location inside a section (and a sub-section, if given).
    pub fn in_section(section: SectionKind, sub_section: Option<usize>, offset: u64) -> Self {
        Location {
            section: Some(section),
            sub_section,
            offset,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(s) = self.section {
            write!(f, "section {s}, ")?;
        }
        if let Some(i) = self.sub_section {
            write!(f, "sub-section {i}, ")?;
        }
        write!(f, "byte offset {}", self.offset)
    }
}

/// Errors of the format layer: decoding headers, footers, the index and records.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The bytes break a rule of the format.
    #[error("corrupt image at {at}: {detail}")]
    Corrupt {
        /// Where.
        at: Location,
        /// The rule broken.
        detail: String,
    },
    /// The image's format version is outside the range this build reads.
    #[error("unsupported format version {got} (this build reads {oldest}..={current})")]
    Version {
        /// The oldest version this build reads.
        oldest: u16,
        /// The version this build writes.
        current: u16,
        /// The image's version.
        got: u16,
    },
    /// The image needs features this build does not have.
    #[error("image requires unknown features {bits:#x}")]
    UnknownFeatures {
        /// The required feature bits this build does not know.
        bits: u32,
    },
    /// Reading a stream of records failed: the reader's own error.
    #[error("reading the record at byte offset {offset}: {source}")]
    Io {
        /// Offset of the record being read.
        offset: u64,
        /// The reader's error.
        #[source]
        source: io::Error,
    },
    /// A stream of records ended inside a record, or before the end of its
    /// region (the region itself was cut short).
    #[error("record truncated at byte offset {offset}: the input ends inside it")]
    Truncated {
        /// Offset of the record.
        offset: u64,
    },
    /// A record's number does not fit the namespace's field (the caller
    /// locates the record).
    #[error("{field} {value} out of range")]
    OutOfRange {
        /// The field, as named in the schema.
        field: &'static str,
        /// The value the record holds.
        value: u64,
    },
    /// An xattr namespace that is not one of `XAttrNamespace`'s.
    #[error("unknown xattr namespace {0}")]
    XAttrNamespace(i32),
    /// The image holds a required section of a kind this build does not know.
    #[error("image has an unknown required section of kind {kind} at byte offset {offset}")]
    UnknownSection {
        /// The section's kind number.
        kind: u32,
        /// The section's offset.
        offset: u64,
    },
}

impl FormatError {
    /// A [`FormatError::Corrupt`] at `at`.
    pub fn corrupt(at: Location, detail: impl Into<String>) -> Self {
        FormatError::Corrupt {
            at,
            detail: detail.into(),
        }
    }

    /// The location of a corruption, if this error is one.
    pub fn location(&self) -> Option<&Location> {
        match self {
            FormatError::Corrupt { at, .. } => Some(at),
            _ => None,
        }
    }
}

/// The format layer's result.
pub type Result<T, E = FormatError> = std::result::Result<T, E>;

/// Characters of a user's string echoed in an error, at most.
pub const SHOWN_CHARS: usize = 64;

/// `s` (text a user or a file gave) for an error message: quoted and
/// escaped, cut to its first [`SHOWN_CHARS`] characters, with its length
/// when cut.
pub fn shown(s: &str) -> String {
    let n = s.chars().count();
    if n <= SHOWN_CHARS {
        return format!("{s:?}");
    }
    let head: String = s.chars().take(SHOWN_CHARS).collect();
    format!("{head:?}... ({n} characters)")
}
