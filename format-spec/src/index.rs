//! The trailing index: which sections an image holds, where, and their
//! sub-sections (FORMAT.md, "Index"). Decoding validates every rule that can be
//! checked without reading the sections themselves.

#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use crate::at_rest::{AtRest, EncryptionInfo};
use crate::cipher::{PiecePlace, AES_256_GCM, ID_LEN};
use crate::consts::{features, header, SectionKind};
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
    /// xxh3-64 of its (stored) bytes.
    pub checksum: u64,
    /// How its bytes are stored: plain, compressed, encrypted.
    pub at_rest: AtRest,
}

impl SubSectionInfo {
    /// The length of its plain bytes (the records).
    pub fn plain_length(&self) -> u64 {
        self.at_rest.plain_length(self.length)
    }
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
    /// How an unsplit section's bytes are stored. For a split section:
    /// no codec or seal, and `raw_length` the sum of its pieces' plain
    /// lengths, or 0 when none of them is transformed.
    pub at_rest: AtRest,
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
                at_rest: self.at_rest.clone(),
            }]
        } else {
            self.sub_sections.clone()
        }
    }

    /// The length of its plain bytes (the records): an unsplit section's
    /// piece's (so an encrypted empty section has 0, not its tag's 16
    /// bytes), or a split section's `raw_length` when nonzero, else its
    /// `length`.
    pub fn plain_length(&self) -> u64 {
        if self.sub_sections.is_empty() {
            self.at_rest.plain_length(self.length)
        } else if self.at_rest.raw_length == 0 {
            self.length
        } else {
            self.at_rest.raw_length
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
    /// Present exactly when the image is encrypted.
    pub encryption: Option<EncryptionInfo>,
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
                            codec: u.at_rest.codec.as_u32(),
                            raw_length: u.at_rest.raw_length,
                            nonce: u
                                .at_rest
                                .sealed
                                .as_ref()
                                .map(|x| x.nonce.to_vec())
                                .unwrap_or_default(),
                        })
                        .collect(),
                    codec: s.at_rest.codec.as_u32(),
                    raw_length: s.at_rest.raw_length,
                    nonce: s
                        .at_rest
                        .sealed
                        .as_ref()
                        .map(|x| x.nonce.to_vec())
                        .unwrap_or_default(),
                })
                .collect(),
            encryption: self.encryption.as_ref().map(|e| pb::Encryption {
                cipher: AES_256_GCM,
                image_id: e.image_id.to_vec(),
                key_fingerprint: e.key_fingerprint.to_vec(),
            }),
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
        let encryption = match &msg.encryption {
            None => None,
            Some(e) => Some(encryption_info(e, &at)?),
        };
        let mut sections = Vec::with_capacity(msg.sections.len());
        let mut nonces = std::collections::HashSet::new();
        let mut expect = header::SIZE as u64;
        for (position, s) in msg.sections.into_iter().enumerate() {
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
            let position = u32::try_from(position)
                .map_err(|_| FormatError::corrupt(sat.clone(), "too many sections"))?;
            let place = PiecePlace {
                kind: s.kind,
                section: position,
                piece: 0,
                offset: s.offset,
                raw_length: s.raw_length,
                codec: s.codec,
            };
            let sub_sections = check_sub_sections(kind, &s, encryption.as_ref(), position)?;
            let at_rest = if sub_sections.is_empty() {
                AtRest::check(
                    &sat,
                    s.length,
                    s.codec,
                    s.raw_length,
                    &s.nonce,
                    encryption.as_ref(),
                    place,
                )?
            } else {
                split_at_rest(&sat, &s, &sub_sections)?
            };
            let info = SectionInfo {
                kind,
                optional: s.optional,
                offset: s.offset,
                length: s.length,
                records: s.records,
                checksum: s.checksum,
                sub_sections,
                at_rest,
            };
            // The plain length bounds the count: the section's own for an
            // unsplit one, the sum of its pieces' for a split one.
            crate::rules::check_records(kind, info.records, info.plain_length())
                .map_err(|d| FormatError::corrupt(sat.clone(), d))?;
            for (i, p) in info.pieces().iter().enumerate() {
                if let Some(x) = &p.at_rest.sealed {
                    if !nonces.insert(x.nonce) {
                        let sub = (!info.sub_sections.is_empty()).then_some(i);
                        return Err(FormatError::corrupt(
                            Location::in_section(kind, sub, p.offset),
                            "a nonce used by an earlier piece",
                        ));
                    }
                }
            }
            sections.push(info);
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
        // At most one name section: two could disagree on every lookup.
        if let Some(s) = sections
            .iter()
            .find(|s| s.kind == SectionKind::NAME_RUNS)
            .filter(|_| sections.iter().any(|s| s.kind == SectionKind::NAME_INDEX))
        {
            return Err(FormatError::corrupt(
                Location::in_section(s.kind, None, s.offset),
                "the index lists both NAME_INDEX and NAME_RUNS (an image holds at most one)",
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
        Ok(Index {
            sections,
            encryption,
        })
    }

    /// Checks the header's required feature bits against what the index
    /// describes: ENCRYPTED exactly when it has `encryption`, COMPRESSED
    /// whenever a piece is compressed.
    pub fn check_features(&self, required: u32) -> Result<()> {
        let encrypted = required & features::ENCRYPTED != 0;
        if encrypted != self.encryption.is_some() {
            return Err(FormatError::corrupt(
                Location::at(0),
                if encrypted {
                    "the header says ENCRYPTED but the index has no encryption"
                } else {
                    "the index describes encryption but the header lacks ENCRYPTED"
                },
            ));
        }
        if required & features::COMPRESSED == 0 {
            for s in &self.sections {
                for (i, p) in s.pieces().iter().enumerate() {
                    if p.at_rest.codec != crate::codec::Codec::None {
                        let sub = (!s.sub_sections.is_empty()).then_some(i);
                        return Err(FormatError::corrupt(
                            Location::in_section(s.kind, sub, p.offset),
                            "a compressed piece in an image without the COMPRESSED feature",
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether any piece is compressed.
    pub fn is_compressed(&self) -> bool {
        self.sections.iter().any(|s| {
            s.pieces()
                .iter()
                .any(|p| p.at_rest.codec != crate::codec::Codec::None)
        })
    }
}

fn encryption_info(e: &pb::Encryption, at: &Location) -> Result<EncryptionInfo> {
    if e.cipher != AES_256_GCM {
        return Err(FormatError::corrupt(
            at.clone(),
            format!("unknown cipher {} (1: AES-256-GCM)", e.cipher),
        ));
    }
    let id = |b: &[u8], what: &str| -> Result<[u8; ID_LEN]> {
        b.try_into().map_err(|_| {
            FormatError::corrupt(
                at.clone(),
                format!("{what} of {} bytes, not {ID_LEN}", b.len()),
            )
        })
    };
    Ok(EncryptionInfo {
        image_id: id(&e.image_id, "image id")?,
        key_fingerprint: id(&e.key_fingerprint, "key fingerprint")?,
    })
}

/// A split section's own at-rest fields: no codec, no nonce, and the sum
/// of its pieces' plain lengths (or 0 when none is transformed).
fn split_at_rest(at: &Location, s: &pb::Section, subs: &[SubSectionInfo]) -> Result<AtRest> {
    if s.codec != 0 || !s.nonce.is_empty() {
        return Err(FormatError::corrupt(
            at.clone(),
            "a section with sub-sections has a codec or nonce of its own",
        ));
    }
    let any = subs.iter().any(|u| !u.at_rest.is_plain());
    let sum = subs
        .iter()
        .try_fold(0u64, |a, u| a.checked_add(u.plain_length()))
        .ok_or_else(|| FormatError::corrupt(at.clone(), "plain lengths overflow"))?;
    let want = if any { sum } else { 0 };
    if s.raw_length != want {
        return Err(FormatError::corrupt(
            at.clone(),
            format!(
                "section plain length {}, its sub-sections' {want}",
                s.raw_length
            ),
        ));
    }
    Ok(AtRest {
        raw_length: want,
        ..AtRest::default()
    })
}

fn check_sub_sections(
    kind: SectionKind,
    s: &pb::Section,
    enc: Option<&EncryptionInfo>,
    position: u32,
) -> Result<Vec<SubSectionInfo>> {
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
        let at_rest = AtRest::check(
            &at,
            u.length,
            u.codec,
            u.raw_length,
            &u.nonce,
            enc,
            PiecePlace {
                kind: kind.0,
                section: position,
                piece: u32::try_from(i).unwrap_or(u32::MAX),
                offset: u.offset,
                raw_length: u.raw_length,
                codec: u.codec,
            },
        )?;
        // Bounded by the piece's plain length (`rules`).
        let plain = at_rest.plain_length(u.length);
        if u.records == 0 {
            return Err(FormatError::corrupt(at, "a sub-section of 0 records"));
        }
        crate::rules::check_records(kind, u.records, plain)
            .map_err(|d| FormatError::corrupt(at.clone(), d))?;
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
            at_rest,
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
