//! Wire types and field keys: a key is `field << 3 | wire type`
//! (FORMAT.md, "Protobuf wire rules").

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
