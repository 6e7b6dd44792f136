//! The `FileSummary` at the tail of a Hadoop image: its length (the last
//! four bytes, big-endian), then the varint-delimited message listing the
//! codec, the layout version and every section by name, offset and length.
//! Every offset and length is checked against the file's size with checked
//! arithmetic before anything is read through it.

use super::magic::MAGIC;
use super::sections::HdfsSection;
use super::version::{check_layout_version, summary_at, Codec};
use crate::error::{shown, FormatError, Location};
use crate::hdfs_pb::FileSummary;
use prost::Message;

/// Bytes of the summary's length field at the very end of the file.
pub const TAIL_LENGTH_BYTES: u64 = 4;
/// The largest summary read (a summary lists sections, a few per
/// thousands of inodes: megabytes would be absurd).
pub const MAX_SUMMARY_BYTES: u64 = 64 << 20;
/// The `ondiskVersion` Hadoop writes (`FSImageUtil.FILE_VERSION`).
pub const ONDISK_VERSION: u32 = 1;

/// One entry of the summary's section list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SummarySection {
    /// The name as written (kept for sections this build does not know).
    pub name: String,
    /// What the name denotes.
    pub section: HdfsSection,
    /// Absolute offset of its first byte.
    pub offset: u64,
    /// Length in bytes (compressed bytes, with a codec).
    pub length: u64,
}

impl SummarySection {
    /// One past its last byte (checked against the file when decoded).
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(self.length)
    }

    /// The location of its first byte, for errors.
    pub fn at(&self) -> Location {
        Location::in_section(self.section.kind(), None, self.offset)
    }
}

/// A decoded, bounds-checked summary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HdfsSummary {
    /// `ondiskVersion` (1).
    pub ondisk_version: u32,
    /// The layout version, as the negative number Hadoop means.
    pub layout_version: i32,
    /// The sections' codec.
    pub codec: Codec,
    /// Sections and sub-sections, in the summary's order.
    pub sections: Vec<SummarySection>,
    /// Offset of the delimited summary (sections end at or before it).
    pub summary_offset: u64,
    /// Length of the delimited summary, its varint prefix included.
    pub summary_length: u64,
}

impl HdfsSummary {
    /// Where the delimited summary lies, `(offset, length)`, from the file's
    /// length and its last four bytes.
    pub fn locate(file_len: u64, tail: [u8; 4]) -> Result<(u64, u64), FormatError> {
        let min = (MAGIC.len() as u64).saturating_add(TAIL_LENGTH_BYTES);
        let Some(tail_at) = file_len
            .checked_sub(TAIL_LENGTH_BYTES)
            .filter(|_| file_len >= min)
        else {
            return Err(FormatError::corrupt(
                summary_at(0),
                format!("a Hadoop image of {file_len} bytes is too short for its summary"),
            ));
        };
        let len = u64::from(u32::from_be_bytes(tail));
        let room = tail_at.saturating_sub(MAGIC.len() as u64);
        if len == 0 || len > room || len > MAX_SUMMARY_BYTES {
            return Err(FormatError::corrupt(
                summary_at(tail_at),
                format!("summary length {len} does not fit the {room} bytes between the magic and the tail"),
            ));
        }
        // len <= room = tail_at - 8, so this cannot underflow.
        Ok((tail_at.saturating_sub(len), len))
    }

    /// Decodes the delimited summary `bytes` read at `offset` of a file of
    /// `file_len` bytes, checking versions, codec and every section's bounds.
    pub fn decode(bytes: &[u8], offset: u64, file_len: u64) -> Result<HdfsSummary, FormatError> {
        let at = summary_at(offset);
        let bad = |d: String| FormatError::corrupt(at.clone(), d);
        let (len, w) = crate::wire::read_varint(bytes)
            .ok_or_else(|| bad("the summary's length prefix is not a varint".into()))?;
        let body = usize::try_from(len)
            .ok()
            .and_then(|l| bytes.get(w..)?.get(..l).map(|b| (b, l)))
            .filter(|&(_, l)| w.checked_add(l) == Some(bytes.len()));
        let Some((body, _)) = body else {
            return Err(bad(format!(
                "the summary's delimited length {len} does not match the {} bytes the tail gives it",
                bytes.len().saturating_sub(w)
            )));
        };
        let fs = FileSummary::decode(body)
            .map_err(|e| bad(format!("the summary does not decode: {e}")))?;
        if fs.ondisk_version != ONDISK_VERSION {
            return Err(bad(format!(
                "unsupported HDFS on-disk version {} (this build reads {ONDISK_VERSION})",
                fs.ondisk_version
            )));
        }
        let layout_version = check_layout_version(fs.layout_version, &at)?;
        let codec = Codec::from_name(fs.codec.as_deref(), &at)?;
        let mut sections: Vec<SummarySection> = Vec::with_capacity(fs.sections.len());
        let mut named = std::collections::HashSet::new();
        for s in &fs.sections {
            let name = s.name().to_string();
            let section = HdfsSection::from_name(&name);
            // Sub-sections repeat their name; a section appears once (a
            // second INODE would be loaded twice, or one of them ignored).
            if section.parent().is_none() && !named.insert(s.name()) {
                return Err(FormatError::corrupt(
                    Location::in_section(section.kind(), None, s.offset()),
                    format!("the summary lists section {} twice", shown(&name)),
                ));
            }
            let (off, length) = (s.offset(), s.length());
            let end = off.checked_add(length);
            if off < MAGIC.len() as u64 || end.is_none_or(|e| e > offset) {
                return Err(FormatError::corrupt(
                    Location::in_section(section.kind(), None, off),
                    format!(
                        "section {name} at offset {off}, {length} bytes, lies outside the {} bytes between the magic and the summary (file of {file_len} bytes)",
                        offset.saturating_sub(MAGIC.len() as u64)
                    ),
                ));
            }
            sections.push(SummarySection {
                name,
                section,
                offset: off,
                length,
            });
        }
        Ok(HdfsSummary {
            ondisk_version: fs.ondisk_version,
            layout_version,
            codec,
            sections,
            summary_offset: offset,
            summary_length: bytes.len() as u64,
        })
    }

    /// The first entry of section `s` (not a sub-section).
    pub fn find(&self, s: HdfsSection) -> Option<&SummarySection> {
        self.sections.iter().find(|e| e.section == s)
    }

    /// The sub-sections of `parent` (HDFS-14617), in offset order. Empty
    /// when it has none; else they must tile the parent exactly (each is its
    /// own compressed stream, so a piece that does not start at a stream's
    /// start could not be read).
    pub fn sub_sections(
        &self,
        parent: &SummarySection,
    ) -> Result<Vec<SummarySection>, FormatError> {
        let mut subs: Vec<SummarySection> = self
            .sections
            .iter()
            .filter(|e| e.section.parent() == Some(parent.section))
            .cloned()
            .collect();
        if subs.is_empty() {
            return Ok(subs);
        }
        subs.sort_by_key(|s| s.offset);
        let mut pos = parent.offset;
        for (i, s) in subs.iter().enumerate() {
            if s.offset != pos || s.end() > parent.end() {
                return Err(FormatError::corrupt(
                    Location::in_section(parent.section.kind(), Some(i), s.offset),
                    format!(
                        "sub-section {} at offset {}, {} bytes, does not continue {} at offset {pos} (the section spans {} to {})",
                        s.name, s.offset, s.length, parent.name, parent.offset, parent.end()
                    ),
                ));
            }
            pos = s.end();
        }
        if pos != parent.end() {
            return Err(FormatError::corrupt(
                Location::in_section(parent.section.kind(), None, pos),
                format!(
                    "the sub-sections of {} end at offset {pos}, the section at {}",
                    parent.name,
                    parent.end()
                ),
            ));
        }
        Ok(subs)
    }
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::unusual_byte_groupings
)]
mod tests {
    use super::*;
    use crate::hdfs_pb::file_summary::Section;

    fn image(summary: &FileSummary, body: usize) -> Vec<u8> {
        let mut f = MAGIC.to_vec();
        f.resize(8 + body, 0);
        let d = summary.encode_length_delimited_to_vec();
        f.extend_from_slice(&d);
        f.extend_from_slice(&(d.len() as u32).to_be_bytes());
        f
    }

    fn parse(f: &[u8]) -> Result<HdfsSummary, FormatError> {
        let n = f.len();
        let tail: [u8; 4] = f[n - 4..].try_into().unwrap();
        let (off, len) = HdfsSummary::locate(n as u64, tail)?;
        HdfsSummary::decode(&f[off as usize..(off + len) as usize], off, n as u64)
    }

    fn sec(name: &str, offset: u64, length: u64) -> Section {
        Section {
            name: Some(name.into()),
            offset: Some(offset),
            length: Some(length),
        }
    }

    #[test]
    fn summary_is_read_and_bounded() {
        let mut s = FileSummary {
            ondisk_version: 1,
            layout_version: (-63i32) as u32,
            codec: None,
            sections: vec![sec("NS_INFO", 8, 10), sec("WEIRD", 18, 2)],
        };
        let h = parse(&image(&s, 20)).unwrap();
        assert_eq!(h.layout_version, -63);
        assert_eq!(h.sections[1].section, HdfsSection::Unknown);
        assert_eq!(h.sections[1].name, "WEIRD");
        s.sections.push(sec("INODE", 20, u64::MAX));
        assert!(parse(&image(&s, 20)).is_err());
        s.sections.pop();
        s.sections.push(sec("INODE", 29, 0));
        assert!(parse(&image(&s, 20)).is_err());
        let mut f = image(&s, 20);
        let n = f.len();
        f[n - 1] = 0xff;
        assert!(parse(&f).is_err());
        assert!(parse(b"HDFSIMG1\0\0\0\x09").is_err());
    }

    #[test]
    fn sub_sections_tile_their_parent() {
        let s = FileSummary {
            ondisk_version: 1,
            layout_version: (-65i32) as u32,
            codec: None,
            sections: vec![
                sec("INODE_SUB", 8, 4),
                sec("INODE_SUB", 12, 6),
                sec("INODE", 8, 10),
            ],
        };
        let h = parse(&image(&s, 20)).unwrap();
        let inode = h.find(HdfsSection::Inode).unwrap();
        assert_eq!(h.sub_sections(inode).unwrap().len(), 2);
        let mut bad = s.clone();
        bad.sections[1].offset = Some(13);
        bad.sections[1].length = Some(5);
        let h = parse(&image(&bad, 20)).unwrap();
        let inode = h.find(HdfsSection::Inode).unwrap();
        assert!(h.sub_sections(inode).is_err());
    }
}
