//! The rules every reader applies to a piece from the index alone, in one
//! place (FORMAT.md, "Pieces at rest" and "Limits"): how many records its
//! plain bytes can hold, and how large a compressed piece's plain length
//! may be. The index decoder and the loader refuse what these refuse, and
//! the writer checks each piece against the same functions before it
//! commits it, storing it plain when compression would break a rule, so
//! that nothing nsimage writes is refused by nsimage.
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use crate::codec::{Codec, MAX_EXPANSION, MAX_PLAIN_LENGTH};
use crate::consts::{SectionKind, MIN_INODE_RECORD};

/// The most records `plain_length` plain bytes of a piece (or of a whole
/// section) of `kind` can hold: an INODE record is at least
/// [`MIN_INODE_RECORD`] bytes, every other record at least one (its length
/// prefix). Always the plain length, never the stored one: a compressed or
/// encrypted piece's records are in its plain bytes.
pub fn max_records(kind: SectionKind, plain_length: u64) -> u64 {
    if kind == SectionKind::INODE {
        plain_length / MIN_INODE_RECORD
    } else {
        plain_length
    }
}

/// Checks a declared record count against [`max_records`].
pub fn check_records(kind: SectionKind, records: u64, plain_length: u64) -> Result<(), String> {
    if records > max_records(kind, plain_length) {
        return Err(format!(
            "{records} records cannot fit in {plain_length} plain bytes"
        ));
    }
    Ok(())
}

/// The largest plain length a piece compressed with a codec may declare
/// for `payload` stored bytes (after the tag, when encrypted):
/// [`MAX_EXPANSION`] times them, and at most [`MAX_PLAIN_LENGTH`].
pub fn max_plain_length(payload: u64) -> u64 {
    payload.saturating_mul(MAX_EXPANSION).min(MAX_PLAIN_LENGTH)
}

/// Checks the plain length `raw_length` a piece compressed with `codec`
/// declares for `payload` stored bytes: at least 1 and at most
/// [`max_plain_length`]. A piece with no codec has no such bound (its
/// stored bytes are its plain bytes).
pub fn check_expansion(codec: Codec, payload: u64, raw_length: u64) -> Result<(), String> {
    if codec == Codec::None {
        return Ok(());
    }
    let most = max_plain_length(payload);
    if raw_length == 0 || raw_length > most {
        return Err(format!(
            "plain length {raw_length} of a {codec} piece of {payload} bytes \
             (at most {most}: {MAX_EXPANSION} times the stored bytes, and 1 GiB)"
        ));
    }
    Ok(())
}

/// Whether a piece of `kind` with `records` records in `plain_length`
/// plain bytes may be stored compressed with `codec` into `payload` bytes:
/// every rule a reader applies to the index fields passes. The writer
/// stores the piece plain when this fails.
pub fn compressed_piece_ok(
    kind: SectionKind,
    records: u64,
    codec: Codec,
    payload: u64,
    plain_length: u64,
) -> Result<(), String> {
    check_expansion(codec, payload, plain_length)?;
    check_records(kind, records, plain_length)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_follow_the_plain_length() {
        assert_eq!(max_records(SectionKind::INODE, 90), 10);
        assert_eq!(max_records(SectionKind::INODE_DIR, 90), 90);
        assert!(check_records(SectionKind::INODE, 10, 90).is_ok());
        assert!(check_records(SectionKind::INODE, 11, 90).is_err());
        assert!(check_expansion(Codec::Zstd, 10, 2550).is_ok());
        assert!(check_expansion(Codec::Zstd, 10, 2551).is_err());
        assert!(check_expansion(Codec::Lz4, 10, 0).is_err());
        assert!(check_expansion(Codec::None, 10, 1 << 40).is_ok());
        assert!(check_expansion(Codec::Zstd, 1 << 30, MAX_PLAIN_LENGTH + 1).is_err());
    }
}
