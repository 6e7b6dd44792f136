//! Segment headers (STORE.md, "Journal segment"): the plain 16-byte one,
//! the sealed 48-byte one (segment id, key fingerprint), and what the
//! remains of a torn create look like.
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use nsimage_format::cipher::ID_LEN;

/// First eight bytes of every segment.
pub const SEGMENT_MAGIC: [u8; 8] = *b"NSJOURNL";
/// The segment layout version this build writes and reads.
pub const SEGMENT_VERSION: u16 = 1;
/// Bytes of a segment header: magic, version, reserved zeros.
pub const HEADER_LEN: usize = 16;
/// The layout version of a sealed (encrypted) segment.
pub const SEALED_VERSION: u16 = 2;
/// Bytes of a sealed segment's header: magic, version, reserved zeros,
/// segment id, key fingerprint.
pub const SEALED_HEADER_LEN: usize = 48;
/// The header every segment starts with.
pub fn header() -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(&SEGMENT_MAGIC);
    h[8..10].copy_from_slice(&SEGMENT_VERSION.to_le_bytes());
    h
}

/// The header of a sealed segment with id `id`, for the key whose
/// fingerprint is `fingerprint`.
pub fn sealed_header(id: &[u8; ID_LEN], fingerprint: &[u8; ID_LEN]) -> [u8; SEALED_HEADER_LEN] {
    let mut h = [0u8; SEALED_HEADER_LEN];
    h[..8].copy_from_slice(&SEGMENT_MAGIC);
    h[8..10].copy_from_slice(&SEALED_VERSION.to_le_bytes());
    h[16..32].copy_from_slice(id);
    h[32..48].copy_from_slice(fingerprint);
    h
}

/// A segment's header, as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Header {
    /// Version 1: plain records.
    Plain,
    /// Version 2: sealed batches, with the segment's id and the
    /// fingerprint of the key it was sealed with.
    Sealed {
        id: [u8; ID_LEN],
        fingerprint: [u8; ID_LEN],
    },
}

impl Header {
    pub(super) fn len(self) -> usize {
        match self {
            Header::Plain => HEADER_LEN,
            Header::Sealed { .. } => SEALED_HEADER_LEN,
        }
    }
}

/// The header at the front of `bytes`, if it is a valid one.
pub(super) fn read_header(bytes: &[u8]) -> Option<Header> {
    if bytes.get(..HEADER_LEN) == Some(&header()[..]) {
        return Some(Header::Plain);
    }
    let h = bytes.get(..SEALED_HEADER_LEN)?;
    if h[..8] != SEGMENT_MAGIC
        || h[8..10] != SEALED_VERSION.to_le_bytes()
        || h[10..16].iter().any(|&b| b != 0)
    {
        return None;
    }
    let mut id = [0u8; ID_LEN];
    id.copy_from_slice(&h[16..32]);
    let mut fingerprint = [0u8; ID_LEN];
    fingerprint.copy_from_slice(&h[32..48]);
    Some(Header::Sealed { id, fingerprint })
}

/// True for the remains of a segment whose creation did not complete (a
/// crash before the header was durable): at most the header's length, each
/// byte the header's or zero (a torn or unwritten header). Records follow
/// only a durable header, so nothing in such a file was ever acknowledged.
/// Anything longer with a bad header held records, and is damage. In an
/// encrypted store (`sealed` holds the key's fingerprint) the header is
/// the sealed one, whose random segment id may hold any bytes.
pub(super) fn is_torn_create(bytes: &[u8], sealed: Option<&[u8; ID_LEN]>) -> bool {
    match sealed {
        None => {
            bytes.len() <= HEADER_LEN && bytes.iter().zip(header()).all(|(&b, h)| b == h || b == 0)
        }
        Some(fp) => {
            let want = sealed_header(&[0u8; ID_LEN], fp);
            bytes.len() <= SEALED_HEADER_LEN
                && bytes
                    .iter()
                    .zip(want)
                    .enumerate()
                    .all(|(i, (&b, h))| (16..32).contains(&i) || b == h || b == 0)
        }
    }
}
