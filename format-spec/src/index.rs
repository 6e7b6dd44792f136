//! The trailing index: which sections an image holds, where, and their
//! sub-sections (FORMAT.md, "Index"). Decoding validates every rule that can be
//! checked without reading the sections themselves.

#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use crate::consts::{header, SectionKind, MIN_INODE_RECORD};
use crate::error::{FormatError, Location, Result};
use crate::pb;
use prost::Message;
use xxhash_rust::xxh3::xxh3_64;

/// One record-aligned slice of a section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubSectionInfo {
    /// Absolute offset of its first record.
    pub offset: u64,
    /// Length in bytes.
    pub length: u64,
    /// Number of records.
    pub records: u64,
    /// Id of the first inode (INODE) or first parent (INODE_DIR).
    pub first_key: u64,
    /// xxh3-64 of its bytes.
    pub checksum: u64,
}

/// One section as listed in the index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SectionInfo {
    /// What the section holds.
    pub kind: SectionKind,
    /// Whether a reader that does not know `kind` may skip it.
    pub optional: bool,
    /// Absolute offset of its first record.
    pub offset: u64,
    /// Length in bytes.
    pub length: u64,
    /// Number of records.
    pub records: u64,
    /// xxh3-64 of its bytes.
    pub checksum: u64,
    /// Its record-aligned slices, in order; empty when it is not split.
    pub sub_sections: Vec<SubSectionInfo>,
}

impl SectionInfo {
    /// The byte ranges a reader works on: the sub-sections, or the whole
    /// section as one piece when it has none.
    pub fn pieces(&self) -> Vec<SubSectionInfo> {
        if self.sub_sections.is_empty() {
            vec![SubSectionInfo {
                offset: self.offset,
                length: self.length,
                records: self.records,
                first_key: 0,
                checksum: self.checksum,
            }]
        } else {
            self.sub_sections.clone()
        }
    }

    /// One past the last byte (a decoded index has checked that the sum
    /// does not overflow).
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(self.length)
    }
}

/// The decoded and validated index.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Index {
    /// The sections, in file order.
    pub sections: Vec<SectionInfo>,
}

impl Index {
    /// The section of `kind`, if the image has one.
    pub fn section(&self, kind: SectionKind) -> Option<&SectionInfo> {
        self.sections.iter().find(|s| s.kind == kind)
    }

    /// The section of `kind`, to change (writers and tests that rebuild an
    /// index).
    pub fn section_mut(&mut self, kind: SectionKind) -> Option<&mut SectionInfo> {
        self.sections.iter_mut().find(|s| s.kind == kind)
    }

    /// The index's bytes (a protobuf `Index` message, unframed).
    pub fn encode(&self) -> Vec<u8> {
        let msg = pb::Index {
            sections: self
                .sections
                .iter()
                .map(|s| pb::Section {
                    kind: s.kind.0,
                    optional: s.optional,
                    offset: s.offset,
                    length: s.length,
                    records: s.records,
                    checksum: s.checksum,
                    sub_sections: s
                        .sub_sections
                        .iter()
                        .map(|u| pb::SubSection {
                            offset: u.offset,
                            length: u.length,
                            records: u.records,
                            first_key: u.first_key,
                            checksum: u.checksum,
                        })
                        .collect(),
                })
                .collect(),
        };
        msg.encode_to_vec()
    }

    /// Decodes the index bytes found at `offset` and checks them against
    /// `checksum` (from the footer). Sections must tile the file from the end of
    /// the header to the index, so that every byte is under some checksum.
    pub fn decode(bytes: &[u8], offset: u64, checksum: u64) -> Result<Index> {
        let at = Location::at(offset);
        let actual = xxh3_64(bytes);
        if actual != checksum {
            return Err(FormatError::corrupt(
                at,
                format!("index checksum mismatch (stored {checksum:016x}, computed {actual:016x})"),
            ));
        }
        crate::wire::check(bytes, crate::wire::schema::INDEX)
            .map_err(|e| FormatError::corrupt(at.clone(), format!("undecodable index: {e}")))?;
        let msg = pb::Index::decode(bytes)
            .map_err(|e| FormatError::corrupt(at.clone(), format!("undecodable index: {e}")))?;
        let mut sections = Vec::with_capacity(msg.sections.len());
        let mut expect = header::SIZE as u64;
        for s in msg.sections {
            let kind = SectionKind(s.kind);
            let sat = Location::in_section(kind, None, s.offset);
            if s.offset != expect {
                return Err(FormatError::corrupt(
                    sat,
                    format!(
                        "section starts at {} but the previous one ends at {expect}",
                        s.offset
                    ),
                ));
            }
            let end = s
                .offset
                .checked_add(s.length)
                .filter(|&e| e <= offset)
                .ok_or_else(|| {
                    FormatError::corrupt(
                        sat.clone(),
                        format!("section length {} runs past the index", s.length),
                    )
                })?;
            expect = end;
            if !kind.is_known() && !s.optional {
                return Err(FormatError::UnknownSection {
                    kind: s.kind,
                    offset: s.offset,
                });
            }
            if sections.iter().any(|o: &SectionInfo| o.kind == kind) {
                return Err(FormatError::corrupt(sat, "section kind listed twice"));
            }
            let most = if kind == SectionKind::INODE {
                s.length / MIN_INODE_RECORD
            } else {
                s.length
            };
            if s.records > most {
                return Err(FormatError::corrupt(
                    sat,
                    format!("{} records cannot fit in {} bytes", s.records, s.length),
                ));
            }
            let sub_sections = check_sub_sections(kind, &s)?;
            sections.push(SectionInfo {
                kind,
                optional: s.optional,
                offset: s.offset,
                length: s.length,
                records: s.records,
                checksum: s.checksum,
                sub_sections,
            });
        }
        if expect != offset {
            return Err(FormatError::corrupt(
                Location::at(expect),
                format!(
                    "{} bytes between the last section and the index",
                    offset.saturating_sub(expect)
                ),
            ));
        }
        for kind in SectionKind::KNOWN {
            if !sections.iter().any(|s| s.kind == kind) {
                return Err(FormatError::corrupt(
                    at.clone(),
                    format!("index lists no {kind} section"),
                ));
            }
        }
        Ok(Index { sections })
    }
}

fn check_sub_sections(kind: SectionKind, s: &pb::Section) -> Result<Vec<SubSectionInfo>> {
    let mut out = Vec::with_capacity(s.sub_sections.len());
    if s.sub_sections.is_empty() {
        return Ok(out);
    }
    if kind == SectionKind::NS_INFO || kind == SectionKind::STRING_TABLE {
        return Err(FormatError::corrupt(
            Location::in_section(kind, None, s.offset),
            "this section kind cannot have sub-sections",
        ));
    }
    // The section's end was checked by the caller not to overflow.
    let sec_end = s.offset.saturating_add(s.length);
    let mut expect = s.offset;
    let mut records: u64 = 0;
    for (i, u) in s.sub_sections.iter().enumerate() {
        let at = Location::in_section(kind, Some(i), u.offset);
        let end = u.offset.checked_add(u.length);
        if u.offset != expect || u.length == 0 || end.is_none_or(|e| e > sec_end) {
            return Err(FormatError::corrupt(
                at,
                format!(
                    "sub-section {}+{} does not continue the previous one (expected offset {expect})",
                    u.offset, u.length
                ),
            ));
        }
        // INODE records are at least MIN_INODE_RECORD bytes long.
        let most = if kind == SectionKind::INODE {
            u.length / MIN_INODE_RECORD
        } else {
            u.length
        };
        if u.records == 0 || u.records > most {
            return Err(FormatError::corrupt(
                at,
                format!("{} records cannot fill {} bytes", u.records, u.length),
            ));
        }
        if let Some(prev) = out.last() {
            let prev: &SubSectionInfo = prev;
            if u.first_key <= prev.first_key {
                return Err(FormatError::corrupt(
                    at,
                    "sub-section first keys are not increasing",
                ));
            }
        }
        // `end` was checked above.
        expect = end.unwrap_or(u64::MAX);
        // Each count is at most its length, and the lengths tile the
        // section: the sum cannot overflow, but is checked all the same.
        records = records.checked_add(u.records).ok_or_else(|| {
            FormatError::corrupt(at.clone(), "sub-section record counts overflow")
        })?;
        out.push(SubSectionInfo {
            offset: u.offset,
            length: u.length,
            records: u.records,
            first_key: u.first_key,
            checksum: u.checksum,
        });
    }
    if expect != sec_end || records != s.records {
        return Err(FormatError::corrupt(
            Location::in_section(kind, None, s.offset),
            format!(
                "sub-sections cover {} bytes and {records} records, the section {} bytes and {} records",
                expect.saturating_sub(s.offset),
                s.length,
                s.records
            ),
        ));
    }
    Ok(out)
}
