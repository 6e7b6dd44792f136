//! Codec of the fixed-size header and footer (see FORMAT.md, "Header" and
//! "Footer").
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use crate::consts::{
    footer as f, header as h, CURRENT_VERSION, FOOTER_MAGIC, HEADER_MAGIC, KNOWN_REQUIRED_FEATURES,
    OLDEST_VERSION,
};
use crate::error::{FormatError, Location, Result};
use byteorder::{ByteOrder, LittleEndian as LE};
use xxhash_rust::xxh3::xxh3_64;

/// The decoded header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Format version of the image.
    pub version: u16,
    /// Features a reader must understand to read the image.
    pub required_features: u32,
    /// Features a reader may ignore.
    pub optional_features: u32,
}

impl Header {
    /// The header this build writes: the current version, no features.
    pub fn current() -> Self {
        Header {
            version: CURRENT_VERSION,
            required_features: 0,
            optional_features: 0,
        }
    }

    /// The header's bytes, checksum included.
    pub fn encode(&self) -> [u8; h::SIZE] {
        let mut b = [0u8; h::SIZE];
        b[h::MAGIC..h::VERSION].copy_from_slice(&HEADER_MAGIC);
        LE::write_u16(&mut b[h::VERSION..], self.version);
        // A constant (32).
        #[allow(clippy::cast_possible_truncation)]
        LE::write_u16(&mut b[h::LENGTH..], h::SIZE as u16);
        LE::write_u32(&mut b[h::REQUIRED_FEATURES..], self.required_features);
        LE::write_u32(&mut b[h::OPTIONAL_FEATURES..], self.optional_features);
        let sum = xxh3_64(&b[..h::CHECKSUM]);
        LE::write_u64(&mut b[h::CHECKSUM..], sum);
        b
    }

    /// Decodes and checks a header; `b` must hold at least `header::SIZE` bytes.
    pub fn decode(b: &[u8]) -> Result<Header> {
        if b.len() < h::SIZE {
            return Err(FormatError::corrupt(
                Location::at(0),
                format!("file too short for a header ({} bytes)", b.len()),
            ));
        }
        if b[h::MAGIC..h::VERSION] != HEADER_MAGIC {
            return Err(FormatError::corrupt(
                Location::at(0),
                "bad magic: not an nsimage image",
            ));
        }
        let version = LE::read_u16(&b[h::VERSION..]);
        let stored = LE::read_u64(&b[h::CHECKSUM..]);
        let actual = xxh3_64(&b[..h::CHECKSUM]);
        if stored != actual {
            return Err(FormatError::corrupt(
                Location::at(h::CHECKSUM as u64),
                format!("header checksum mismatch (stored {stored:016x}, computed {actual:016x})"),
            ));
        }
        if !(OLDEST_VERSION..=CURRENT_VERSION).contains(&version) {
            return Err(FormatError::Version {
                oldest: OLDEST_VERSION,
                current: CURRENT_VERSION,
                got: version,
            });
        }
        let len = LE::read_u16(&b[h::LENGTH..]);
        if len as usize != h::SIZE || LE::read_u32(&b[h::RESERVED..]) != 0 {
            return Err(FormatError::corrupt(
                Location::at(h::LENGTH as u64),
                format!("header length {len} or reserved bytes invalid for version {version}"),
            ));
        }
        let required_features = LE::read_u32(&b[h::REQUIRED_FEATURES..]);
        let unknown = required_features & !KNOWN_REQUIRED_FEATURES;
        if unknown != 0 {
            return Err(FormatError::UnknownFeatures { bits: unknown });
        }
        Ok(Header {
            version,
            required_features,
            optional_features: LE::read_u32(&b[h::OPTIONAL_FEATURES..]),
        })
    }
}

/// The decoded footer: where the index is and how long the file must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footer {
    /// Absolute offset of the index.
    pub index_offset: u64,
    /// Length of the index in bytes.
    pub index_length: u64,
    /// xxh3-64 of the index bytes.
    pub index_checksum: u64,
    /// Length of the whole file, footer included.
    pub file_length: u64,
}

impl Footer {
    /// The footer's bytes, checksum and magic included.
    pub fn encode(&self) -> [u8; f::SIZE] {
        let mut b = [0u8; f::SIZE];
        LE::write_u64(&mut b[f::INDEX_OFFSET..], self.index_offset);
        LE::write_u64(&mut b[f::INDEX_LENGTH..], self.index_length);
        LE::write_u64(&mut b[f::INDEX_CHECKSUM..], self.index_checksum);
        LE::write_u64(&mut b[f::FILE_LENGTH..], self.file_length);
        let sum = xxh3_64(&b[..f::CHECKSUM]);
        LE::write_u64(&mut b[f::CHECKSUM..], sum);
        b[f::MAGIC..].copy_from_slice(&FOOTER_MAGIC);
        b
    }

    /// Decodes the last `footer::SIZE` bytes of a file of `file_length` bytes
    /// and checks that the index it points to lies inside the file.
    pub fn decode(b: &[u8], file_length: u64) -> Result<Footer> {
        let start = file_length.saturating_sub(f::SIZE as u64);
        let min_len = (crate::consts::header::SIZE + f::SIZE) as u64;
        if file_length < min_len || b.len() != f::SIZE {
            return Err(FormatError::corrupt(
                Location::at(0),
                format!("file too short ({file_length} bytes) to be an image"),
            ));
        }
        // `start` is the footer's offset, `field` below the footer's size.
        let at = |field: usize| Location::at(start.saturating_add(field as u64));
        if b[f::MAGIC..] != FOOTER_MAGIC {
            return Err(FormatError::corrupt(
                at(f::MAGIC),
                "bad footer magic: file truncated or not an nsimage image",
            ));
        }
        let stored = LE::read_u64(&b[f::CHECKSUM..]);
        let actual = xxh3_64(&b[..f::CHECKSUM]);
        if stored != actual {
            return Err(FormatError::corrupt(
                at(f::CHECKSUM),
                format!("footer checksum mismatch (stored {stored:016x}, computed {actual:016x})"),
            ));
        }
        let footer = Footer {
            index_offset: LE::read_u64(&b[f::INDEX_OFFSET..]),
            index_length: LE::read_u64(&b[f::INDEX_LENGTH..]),
            index_checksum: LE::read_u64(&b[f::INDEX_CHECKSUM..]),
            file_length: LE::read_u64(&b[f::FILE_LENGTH..]),
        };
        if footer.file_length != file_length {
            return Err(FormatError::corrupt(
                at(f::FILE_LENGTH),
                format!(
                    "file is {file_length} bytes but its footer says {}: truncated or appended to",
                    footer.file_length
                ),
            ));
        }
        let index_end = footer.index_offset.checked_add(footer.index_length);
        if footer.index_offset < crate::consts::header::SIZE as u64
            || index_end != Some(start)
            || footer.index_length > crate::consts::MAX_INDEX_LENGTH
        {
            return Err(FormatError::corrupt(
                at(f::INDEX_OFFSET),
                format!(
                    "index range {}+{} does not end at the footer ({start})",
                    footer.index_offset, footer.index_length
                ),
            ));
        }
        Ok(footer)
    }
}
