//! Record framing: every record is a LEB128 varint length followed by that many
//! bytes of protobuf message (FORMAT.md, "Records"). The journal of the
//! checkpoint store reuses the same framing. [`Records`] reads the frames
//! of a region held in memory; [`crate::wire::FrameReader`] reads them
//! from a stream.
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use crate::consts::MAX_RECORD_LENGTH;
use crate::error::{FormatError, Location, Result};
/// Re-exported from [`crate::wire::varint`], where varints live.
pub use crate::wire::varint::read_varint;

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

    /// Bytes of the region consumed so far: the end of the last record
    /// returned (within the region).
    pub fn position(&self) -> usize {
        self.pos
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
    fn records_stop_at_a_frame_past_the_end() {
        let buf = [2u8, 0xaa, 0xbb, 5, 1];
        let mut it = Records::new(&buf, Location::at(100));
        assert_eq!(it.next().unwrap().unwrap(), (100, &buf[1..3]));
        let err = it.next().unwrap().unwrap_err();
        assert_eq!(err.location().unwrap().offset, 103);
        assert!(it.next().is_none());
    }
}
