//! The protobuf wire format as nsimage uses it, in one place: wire types and
//! keys, the field numbers and keys of every message of
//! `proto/nsimage.proto`, varints, the wire rules every reader applies, the
//! streamed frame reader, and the conversions between the prost messages
//! ([`crate::pb`]) and the namespace model (`nsimage_namespace`).
//!
//! - [`fields`]: field numbers (`fields::inode::NAME == 3`);
//! - [`tags`]: one-byte keys with the declared wire type
//!   (`tags::inode::NAME == 0x1a`), built by [`key`];
//! - [`varint`]: LEB128 varints, read and written;
//! - [`rules`]: the wire rules of FORMAT.md as a schema-driven check;
//! - [`frames`]: the streamed reader of varint-framed records, for readers
//!   that go through a file record by record (the loader's streaming
//!   baseline, the store's journal);
//! - [`convert`]: `From`/`TryFrom` between prost messages and the model.
//!
//! ```
//! use nsimage_format::wire::{fields, key, split_key, tags, LEN, VARINT};
//!
//! assert_eq!(tags::inode::ID, 0x08);
//! assert_eq!(tags::inode::FILE, key(fields::inode::FILE, LEN));
//! assert_eq!(split_key(u64::from(tags::dir_entry::PARENT)), Ok((1, VARINT)));
//! ```
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

pub mod convert;
pub mod fields;
pub mod frames;
pub mod framing;
pub mod rules;
pub mod tags;
pub mod varint;

pub use frames::FrameReader;
pub use rules::{check, schema, varint_fits, Ty};
pub use varint::read_varint;

/// Wire type 0: a varint (int32, int64, uint32, uint64, bool, enum).
pub const VARINT: u8 = 0;
/// Wire type 1: eight little-endian bytes (fixed64).
pub const FIXED64: u8 = 1;
/// Wire type 2: a varint length, then that many bytes (bytes, string,
/// nested message, packed repeated scalars).
pub const LEN: u8 = 2;
/// Wire type 5: four little-endian bytes (fixed32).
pub const FIXED32: u8 = 5;

/// The one-byte key of field `field` with wire type `wire_type`:
/// `field << 3 | wire_type`. Every field of the schema is numbered 1 to 15,
/// so every key fits one byte; a constant built from anything else fails
/// to compile.
#[must_use]
pub const fn key(field: u32, wire_type: u8) -> u8 {
    assert!(
        field >= 1 && field < 16,
        "a one-byte key needs a field number in 1..16"
    );
    assert!(wire_type < 8, "a wire type has three bits");
    // In range: asserted just above (field < 16, wire_type < 8).
    #[allow(clippy::cast_possible_truncation)]
    let f = field as u8;
    (f << 3) | wire_type
}

/// Splits a field key into (field number, wire type); refuses field number
/// 0 and numbers above 2^29 - 1.
#[inline]
pub fn split_key(k: u64) -> Result<(u32, u8), &'static str> {
    let field = u32::try_from(k >> 3)
        .ok()
        .filter(|&f| f < (1 << 29))
        .ok_or("field number out of range")?;
    if field == 0 {
        return Err("field number 0");
    }
    // Masked to three bits: the cast cannot truncate.
    #[allow(clippy::cast_possible_truncation)]
    Ok((field, (k & 7) as u8))
}
