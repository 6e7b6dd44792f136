//! The streamed reader of varint-framed records (FORMAT.md, "Records"; the
//! journal of STORE.md uses the same framing): a length prefix read a byte
//! at a time, then the body, from any [`Read`]. Readers that hold a region
//! in memory use [`crate::framing::Records`] instead.
//!
//! Every length is untrusted: the prefix may not run over ten bytes or past
//! the region's end, and the length may not exceed the reader's limit
//! ([`MAX_RECORD_LENGTH`] at most) or the bytes the region has left. Every
//! error names the offset of the frame it happened in.
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use crate::consts::MAX_RECORD_LENGTH;
use crate::error::{FormatError, Location, Result};
use std::io::{self, Read};

/// A length prefix over ten bytes, with a tenth byte above 1, or running
/// past the end of the region.
fn bad_prefix(at: u64) -> FormatError {
    FormatError::corrupt(Location::at(at), "bad record length prefix")
}

/// A length over the reader's limit, or over the bytes left in the region
/// (`left`, when its end is known).
fn bad_length(at: u64, len: u64, left: Option<u64>) -> FormatError {
    FormatError::corrupt(Location::at(at), length_text(len, left))
}

fn length_text(len: u64, left: Option<u64>) -> String {
    match left {
        Some(left) => {
            format!("record length {len} runs past the end of its region ({left} bytes left)")
        }
        None => format!("record length {len} is over the largest record accepted"),
    }
}

/// Reads varint-framed records one at a time from `R`, a byte at a time for
/// the prefix (wrap a file in a [`std::io::BufReader`]). Tracks the
/// absolute offset of every frame.
///
/// ```
/// use nsimage_format::framing::put_frame;
/// use nsimage_format::wire::FrameReader;
///
/// let mut bytes = Vec::new();
/// put_frame(&mut bytes, b"one");
/// put_frame(&mut bytes, b"two");
/// let mut frames = FrameReader::new(&bytes[..], 0);
/// let mut body = Vec::new();
/// assert_eq!(frames.read_frame(&mut body).unwrap(), Some(0));
/// assert_eq!((frames.prefix(), &body[..]), (&[3u8][..], &b"one"[..]));
/// assert_eq!(frames.read_frame(&mut body).unwrap(), Some(4));
/// assert_eq!(frames.read_frame(&mut body).unwrap(), None);
/// ```
#[derive(Debug)]
pub struct FrameReader<R> {
    inner: R,
    /// Absolute offset of the next byte `inner` gives.
    pos: u64,
    /// Absolute offset of the region's end, when known.
    end: Option<u64>,
    max_len: u64,
    prefix: [u8; 10],
    prefix_len: usize,
}

impl<R: Read> FrameReader<R> {
    /// A reader of frames from `inner`, whose next byte is at absolute
    /// offset `offset`. With no end set, the region ends where `inner`
    /// does; the largest record accepted is [`MAX_RECORD_LENGTH`].
    pub fn new(inner: R, offset: u64) -> Self {
        FrameReader {
            inner,
            pos: offset,
            end: None,
            max_len: MAX_RECORD_LENGTH,
            prefix: [0; 10],
            prefix_len: 0,
        }
    }

    /// Ends the region at absolute offset `end`: no frame may run past it,
    /// and [`read_frame`](Self::read_frame) gives `None` once it is reached.
    /// A frame's body is read into a buffer of its declared length (at most
    /// the reader's limit) once that length fits before `end`, so `end` must
    /// be a bound the caller has checked against the input (an index entry
    /// checked against the file's length, say), not a number read from it.
    #[must_use]
    pub fn with_end(mut self, end: u64) -> Self {
        self.end = Some(end);
        self
    }

    /// Lowers the largest record accepted to `max` bytes (it never rises
    /// above [`MAX_RECORD_LENGTH`]).
    #[must_use]
    pub fn with_max_len(mut self, max: u64) -> Self {
        self.max_len = max.min(MAX_RECORD_LENGTH);
        self
    }

    /// Absolute offset of the next frame.
    #[must_use]
    pub fn offset(&self) -> u64 {
        self.pos
    }

    /// The length prefix of the frame read last, as its bytes: of the good
    /// frame [`read_frame`](Self::read_frame) returned, or what was read of
    /// the bad one it refused.
    #[must_use]
    pub fn prefix(&self) -> &[u8] {
        self.prefix.get(..self.prefix_len).unwrap_or_default()
    }

    /// The underlying reader.
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// One byte, or `None` at the end of the input.
    fn byte(&mut self, at: u64) -> Result<Option<u8>> {
        let mut b = [0u8; 1];
        loop {
            match self.inner.read(&mut b) {
                Ok(0) => return Ok(None),
                Ok(_) => return Ok(Some(b[0])),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => return Err(FormatError::Io { offset: at, source }),
            }
        }
    }

    /// Reads the next frame's body into `body` (cleared first) and returns
    /// the frame's absolute offset; `None` at the end of the region (with no
    /// end set: at the end of the input, between frames). After an error, [`prefix`](Self::prefix)
    /// and `body` hold the bytes read of the bad frame, and the reader is
    /// not to be used again.
    pub fn read_frame(&mut self, body: &mut Vec<u8>) -> Result<Option<u64>> {
        body.clear();
        self.prefix_len = 0;
        let at = self.pos;
        if self.end.is_some_and(|end| at >= end) {
            return Ok(None);
        }
        // The prefix, one byte at a time, never past the region's end.
        let mut len: u64 = 0;
        let mut width: usize = 0;
        loop {
            let inside = u64::try_from(width)
                .ok()
                .and_then(|w| at.checked_add(w))
                .is_some_and(|p| self.end.is_none_or(|end| p < end));
            if !inside {
                return Err(bad_prefix(at));
            }
            let Some(b) = self.byte(at)? else {
                // Between frames, the input may end where the region does
                // when its end is not known; before a known end, never.
                if width == 0 && self.end.is_none() {
                    return Ok(None);
                }
                return Err(FormatError::Truncated { offset: at });
            };
            let Some(slot) = self.prefix.get_mut(width) else {
                return Err(bad_prefix(at));
            };
            *slot = b;
            self.prefix_len = width.saturating_add(1);
            // The tenth byte may only be 0 or 1 (FORMAT.md, Conventions).
            if width == 9 && b > 1 {
                return Err(bad_prefix(at));
            }
            // width <= 9 here: the shift is at most 63.
            let shift = u32::try_from(width).map_or(u32::MAX, |w| w.saturating_mul(7));
            len |= u64::from(b & 0x7f).checked_shl(shift).unwrap_or(0);
            width = width.saturating_add(1);
            if b & 0x80 == 0 {
                break;
            }
            if width == 10 {
                return Err(bad_prefix(at));
            }
        }
        // width <= 10: both conversions and the sum are exact for any
        // offset a file can have.
        let width = u64::try_from(width).unwrap_or(u64::MAX);
        let body_at = at.saturating_add(width);
        let left = self.end.map(|end| end.saturating_sub(body_at));
        if len > self.max_len || left.is_some_and(|left| len > left) {
            return Err(bad_length(at, len, left));
        }
        let n = usize::try_from(len).map_err(|_| bad_length(at, len, left))?;
        if self.end.is_some() {
            // The region's end is known and the length within it: read
            // the body into a buffer of its size.
            body.resize(n, 0);
            let mut got = 0usize;
            while let Some(rest) = body.get_mut(got..).filter(|r| !r.is_empty()) {
                match self.inner.read(rest) {
                    Ok(0) => break,
                    Ok(k) => got = got.saturating_add(k),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(source) => return Err(FormatError::Io { offset: at, source }),
                }
            }
            body.truncate(got);
        } else {
            // No known end: grow the buffer only by what arrives, so that a
            // false length costs no large allocation.
            (&mut self.inner)
                .take(len)
                .read_to_end(body)
                .map_err(|source| FormatError::Io { offset: at, source })?;
        }
        if body.len() != n {
            return Err(FormatError::Truncated { offset: at });
        }
        self.pos = body_at.saturating_add(len);
        Ok(Some(at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::put_frame;

    fn frames(bytes: &[u8], end: Option<u64>) -> Vec<Result<(u64, Vec<u8>), String>> {
        let mut r = FrameReader::new(bytes, 100);
        if let Some(e) = end {
            r = r.with_end(e);
        }
        let mut out = Vec::new();
        let mut body = Vec::new();
        loop {
            match r.read_frame(&mut body) {
                Ok(Some(at)) => out.push(Ok((at, body.clone()))),
                Ok(None) => return out,
                Err(e) => {
                    let (detail, offset) = match &e {
                        FormatError::Corrupt { at, detail } => (detail.clone(), at.offset),
                        FormatError::Truncated { offset } => {
                            ("the input ends inside a record".to_string(), *offset)
                        }
                        other => panic!("unexpected error {other}"),
                    };
                    assert!(e.to_string().contains(&format!("byte offset {offset}")));
                    out.push(Err(format!("{detail}@{offset}")));
                    return out;
                }
            }
        }
    }

    #[test]
    fn good_frames_then_the_end() {
        let mut b = Vec::new();
        put_frame(&mut b, b"ab");
        put_frame(&mut b, &[7; 200]);
        put_frame(&mut b, b"");
        let got = frames(&b, None);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0], Ok((100, b"ab".to_vec())));
        assert_eq!(got[1], Ok((103, vec![7; 200])));
        assert_eq!(got[2], Ok((305, vec![])));
        assert_eq!(frames(&b, Some(100 + b.len() as u64)), got);
        // An end between frames stops the reader there.
        assert_eq!(frames(&b, Some(103)), got[..1].to_vec());
        // Input that ends before a known end is truncated.
        let mut short = got.clone();
        short.push(Err("the input ends inside a record@306".into()));
        assert_eq!(frames(&b, Some(400)), short);
    }

    #[test]
    fn bad_frames_are_located() {
        // A frame past the region's end, and past the input's end.
        assert_eq!(
            frames(&[2, 1, 2, 5, 1], Some(105)),
            vec![
                Ok((100, vec![1, 2])),
                Err("record length 5 runs past the end of its region (1 bytes left)@103".into())
            ]
        );
        assert_eq!(
            frames(&[2, 1, 2, 5, 1], None),
            vec![
                Ok((100, vec![1, 2])),
                Err("the input ends inside a record@103".into())
            ]
        );
        // A prefix past the region's end, over ten bytes, a tenth byte of 2,
        // and cut by the input's end.
        assert_eq!(
            frames(&[0x80, 0x80], Some(101)),
            vec![Err("bad record length prefix@100".into())]
        );
        assert_eq!(
            frames(&[0xff; 12], None),
            vec![Err("bad record length prefix@100".into())]
        );
        let mut tenth = [0xffu8; 10];
        tenth[9] = 2;
        assert_eq!(
            frames(&tenth, None),
            vec![Err("bad record length prefix@100".into())]
        );
        assert_eq!(
            frames(&[0x80], None),
            vec![Err("the input ends inside a record@100".into())]
        );
        // Over the reader's limit.
        let mut r = FrameReader::new(&[5u8, 0, 0, 0, 0, 0][..], 0).with_max_len(4);
        let e = r.read_frame(&mut Vec::new()).unwrap_err();
        assert!(matches!(
            e,
            FormatError::Corrupt { ref at, ref detail }
                if at.offset == 0 && detail == "record length 5 is over the largest record accepted"
        ));
        assert_eq!(r.prefix(), &[5]);
    }
}
