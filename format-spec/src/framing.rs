//! Record framing: every record is a LEB128 varint length followed by that many
//! bytes of protobuf message (FORMAT.md, "Records"). The journal of the
//! checkpoint store reuses the same framing.
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use crate::consts::MAX_RECORD_LENGTH;
use crate::error::{FormatError, Location, Result};

/// Appends one framed record holding `msg` to `out`.
pub fn put_record<M: prost::Message>(out: &mut Vec<u8>, msg: &M) {
    let len = msg.encoded_len();
    prost::encoding::encode_varint(len as u64, out);
    out.reserve(len);
    // Encoding into a Vec with reserved room cannot fail.
    msg.encode_raw(out);
}

/// Appends one framed record whose bytes are already encoded.
pub fn put_frame(out: &mut Vec<u8>, body: &[u8]) {
    prost::encoding::encode_varint(body.len() as u64, out);
    out.extend_from_slice(body);
}

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

/// Iterates the framed records of one region of an image held in memory.
///
/// Each item is `(absolute offset of the record's length prefix, message bytes)`.
/// A frame that runs past the region yields one `Corrupt` error, then the
/// iterator ends.
pub struct Records<'a> {
    buf: &'a [u8],
    pos: usize,
    base: u64,
    at: Location,
    failed: bool,
}

impl<'a> Records<'a> {
    /// `buf` is the region; `at` says where it starts (its offset field is the
    /// absolute offset of `buf[0]`).
    pub fn new(buf: &'a [u8], at: Location) -> Self {
        Records {
            buf,
            pos: 0,
            base: at.offset,
            at,
            failed: false,
        }
    }

    fn location(&self) -> Location {
        Location {
            // Offsets of an image held in memory fit a u64.
            offset: self.base.saturating_add(self.pos as u64),
            ..self.at.clone()
        }
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<(u64, &'a [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.buf.len() {
            return None;
        }
        let rest = &self.buf[self.pos..];
        let Some((len, width)) = read_varint(rest) else {
            self.failed = true;
            return Some(Err(FormatError::corrupt(
                self.location(),
                "bad record length prefix",
            )));
        };
        // read_varint returns a width within `rest`.
        let after = rest.get(width..).unwrap_or_default();
        let body = usize::try_from(len)
            .ok()
            .filter(|_| len <= MAX_RECORD_LENGTH)
            .and_then(|n| after.get(..n));
        let Some(body) = body else {
            self.failed = true;
            return Some(Err(FormatError::corrupt(
                self.location(),
                format!(
                    "record length {len} runs past the end of its region ({} bytes left)",
                    after.len()
                ),
            )));
        };
        let start = self.location().offset;
        // Both within `buf`, so the sum is at most buf.len().
        self.pos = self.pos.saturating_add(width).saturating_add(body.len());
        Some(Ok((start, body)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trip_and_limits() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
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
    fn records_stop_at_a_frame_past_the_end() {
        let buf = [2u8, 0xaa, 0xbb, 5, 1];
        let mut it = Records::new(&buf, Location::at(100));
        assert_eq!(it.next().unwrap().unwrap(), (100, &buf[1..3]));
        let err = it.next().unwrap().unwrap_err();
        assert_eq!(err.location().unwrap().offset, 103);
        assert!(it.next().is_none());
    }
}
