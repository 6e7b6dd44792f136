//! LEB128 varints (FORMAT.md, "Conventions"): the one reader every decoder
//! of the format uses, and the writer's encoder of the hot path. A varint
//! has at most ten bytes, the tenth 0 or 1.
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

/// Reads one varint from the front of `buf`, returning it and its width.
/// `None` when `buf` ends inside the varint or the varint is over 10 bytes.
#[inline(always)]
pub fn read_varint(buf: &[u8]) -> Option<(u64, usize)> {
    match buf.first() {
        Some(&b) if b < 0x80 => Some((b as u64, 1)),
        Some(_) => read_varint_long(buf),
        None => None,
    }
}

/// Multi-byte varints. With eight bytes available, varints of up to eight
/// bytes are decoded without a data-dependent branch: the first byte with a
/// clear high bit is found with one mask, and the 7-bit groups are packed
/// with three shift-and-mask steps. Longer varints and the last bytes of a
/// buffer take the byte loop.
#[inline(always)]
// Hot path: `stop_bit` is at most 63 and `i` below 10, so the shifts and
// additions below cannot overflow.
#[allow(clippy::arithmetic_side_effects)]
fn read_varint_long(buf: &[u8]) -> Option<(u64, usize)> {
    if let Some(b) = buf.first_chunk::<8>() {
        let x = u64::from_le_bytes(*b);
        let stops = !x & 0x8080_8080_8080_8080;
        if stops != 0 {
            let stop_bit = stops.trailing_zeros();
            let len = (stop_bit as usize + 1) / 8;
            // Keep the bytes up to and including the last one.
            let keep = if stop_bit >= 63 {
                u64::MAX
            } else {
                (1u64 << (stop_bit + 1)) - 1
            };
            let mut v = x & keep & 0x7f7f_7f7f_7f7f_7f7f;
            v = ((v & 0x7f00_7f00_7f00_7f00) >> 1) | (v & 0x007f_007f_007f_007f);
            v = ((v & 0x3fff_0000_3fff_0000) >> 2) | (v & 0x0000_3fff_0000_3fff);
            v = ((v & 0x0fff_ffff_0000_0000) >> 4) | (v & 0x0000_0000_0fff_ffff);
            return Some((v, len));
        }
    }
    let mut value: u64 = 0;
    for (i, &b) in buf.iter().enumerate().take(10) {
        let part = (b & 0x7f) as u64;
        if i == 9 && b > 1 {
            return None;
        }
        value |= part << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// Bytes of the varint of `v`: one per started group of 7 bits, at least
/// one.
#[inline]
#[must_use]
pub fn varint_len(v: u64) -> usize {
    // leading_zeros of a non-zero u64 is at most 63: no underflow, and the
    // cast of a count up to 64 cannot truncate.
    #[allow(clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Appends the varint of `v` to `out` (prost's encoding, byte for byte).
#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        // Keeps the low seven bits, with the continuation bit set.
        #[allow(clippy::cast_possible_truncation)]
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    // Below 0x80 here.
    #[allow(clippy::cast_possible_truncation)]
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trip_and_limits() {
        for v in [0u64, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let mut b = Vec::new();
            prost::encoding::encode_varint(v, &mut b);
            assert_eq!(read_varint(&b), Some((v, b.len())));
            assert_eq!(read_varint(&b[..b.len() - 1]), None);
        }
        assert_eq!(read_varint(&[0xff; 11]), None);
        // Every width, with and without trailing bytes after the varint.
        for shift in 0..64 {
            for v in [1u64 << shift, (1u64 << shift) - 1, (1u64 << shift) | 0x55] {
                let mut b = Vec::new();
                prost::encoding::encode_varint(v, &mut b);
                let w = b.len();
                assert_eq!(read_varint(&b), Some((v, w)));
                b.extend_from_slice(&[0xff; 12]);
                assert_eq!(read_varint(&b), Some((v, w)));
            }
        }
        assert_eq!(
            read_varint(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]),
            None
        );
    }

    #[test]
    fn writer_and_prost_agree() {
        for v in [
            0u64,
            1,
            127,
            128,
            16383,
            16384,
            u64::from(u32::MAX),
            u64::MAX,
            1 << 63,
        ] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(b.len(), varint_len(v), "{v}");
            let mut p = Vec::new();
            prost::encoding::encode_varint(v, &mut p);
            assert_eq!(b, p);
            assert_eq!(read_varint(&b), Some((v, b.len())));
        }
    }
}
