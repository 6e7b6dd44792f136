//! [`Cursor`]: the one zero-copy walker of the protobuf wire format. Every
//! reader of a message by hand uses it: the loader's record decoder (the
//! hot path of a load, and the INODE records of one-path lookups), its
//! reader of Hadoop records, the checkpoint store's journal op views, and
//! [`super::check`], the wire rules that run before any prost decode.
//!
//! No allocation: fields come back as values and slices of the message's
//! bytes. Holding the unread rest as a slice (rather than a buffer and a
//! position) leaves no offset arithmetic to check: every length is checked
//! against what is left before it is taken. Errors are static strings
//! ([`Bad`]), so that the hot path builds no message; callers that report
//! them add the file, section and offset.
//!
//! The methods are `#[inline(always)]` (or `#[inline]`): the loader's
//! decode loop, in another crate, must compile to what it compiled to when
//! this walker was its own.
//!
//! ```
//! use nsimage_format::wire::{tags, Cursor, LEN, VARINT};
//!
//! // An `Inode` with id 300 and name "a", then an unknown fixed32 field 12.
//! let msg = [tags::inode::ID, 0xac, 0x02, tags::inode::NAME, 1, b'a', 0x65, 1, 2, 3, 4];
//! let mut c = Cursor::new(&msg);
//! assert!(c.eat(tags::inode::ID));
//! assert_eq!(c.varint()?, 300);
//! let (field, wire_type) = c.key()?;
//! assert_eq!((field, wire_type), (3, LEN));
//! assert_eq!(c.bytes()?, b"a");
//! let (_, wire_type) = c.key()?;
//! c.skip(wire_type)?;
//! assert!(c.done());
//!
//! // A length past the end is refused, not read.
//! let mut c = Cursor::new(&[tags::inode::NAME, 9, b'a']);
//! let (_, wire_type) = c.key()?;
//! assert!(Cursor::expect(wire_type, LEN).is_ok());
//! assert!(Cursor::expect(wire_type, VARINT).is_err());
//! assert!(c.bytes().is_err());
//! # Ok::<(), &'static str>(())
//! ```
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use super::keys::{split_key, FIXED32, FIXED64, LEN, VARINT};
use super::varint::read_varint;

/// Why a message could not be walked: a fixed text, so that the hot path
/// builds no message.
pub type Bad = &'static str;

/// The unread rest of a protobuf message.
#[derive(Clone, Copy, Debug)]
pub struct Cursor<'a> {
    buf: &'a [u8],
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of the message `buf`.
    #[inline(always)]
    #[must_use]
    pub fn new(buf: &'a [u8]) -> Self {
        Cursor { buf }
    }

    /// The bytes not read yet.
    #[inline(always)]
    #[must_use]
    pub fn rest(&self) -> &'a [u8] {
        self.buf
    }

    /// Consumes the one-byte key `tag` if it comes next. nsimage's writer
    /// emits fields in field-number order, so checking for the expected
    /// next key first is a well-predicted branch instead of a dispatch.
    #[inline(always)]
    pub fn eat(&mut self, tag: u8) -> bool {
        match self.buf.split_first() {
            Some((&b, rest)) if b == tag => {
                self.buf = rest;
                true
            }
            _ => false,
        }
    }

    /// True when the whole message has been read.
    #[inline(always)]
    #[must_use]
    pub fn done(&self) -> bool {
        self.buf.is_empty()
    }

    /// A varint (at most ten bytes, the tenth 0 or 1).
    #[inline(always)]
    pub fn varint(&mut self) -> Result<u64, Bad> {
        let (v, w) = read_varint(self.buf).ok_or("bad varint")?;
        self.buf = self.buf.get(w..).ok_or("bad varint")?;
        Ok(v)
    }

    /// A uint32 field's varint: refuses a value above 32 bits.
    #[inline(always)]
    pub fn u32(&mut self) -> Result<u32, Bad> {
        u32::try_from(self.varint()?).map_err(|_| "a uint32 field holds more than 32 bits")
    }

    /// An enum field: the varint of a value in i32's range (negative values
    /// are sign-extended to 64 bits on the wire).
    #[inline(always)]
    pub fn enum_i32(&mut self) -> Result<i32, Bad> {
        // Reinterpreted as i64, as it was written (the two's complement of
        // the sign-extended value), then checked to fit.
        #[allow(clippy::cast_possible_wrap)]
        let v = self.varint()? as i64;
        i32::try_from(v).map_err(|_| "an enum field holds a value outside i32")
    }

    /// A bool field: a varint of 0 or 1.
    #[inline(always)]
    pub fn bool(&mut self) -> Result<bool, Bad> {
        match self.varint()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err("a bool field holds a value other than 0 or 1"),
        }
    }

    /// The next key: (field number, wire type). Refuses field number 0 and
    /// numbers of 2^29 or more; the wire type is the key's low three bits,
    /// whatever they are (a field read or skipped with another is refused
    /// then). Field numbers below 16 have one-byte keys, read without the
    /// varint reader.
    #[inline(always)]
    pub fn key(&mut self) -> Result<(u32, u8), Bad> {
        if let Some((&b, rest)) = self.buf.split_first() {
            if (8..0x80).contains(&b) {
                self.buf = rest;
                return Ok((u32::from(b >> 3), b & 7));
            }
        }
        let k = self.varint()?;
        split_key(k)
    }

    /// The next `n` bytes; refuses `n` past the end of the message.
    #[inline(always)]
    pub fn take(&mut self, n: u64) -> Result<&'a [u8], Bad> {
        let n = usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.buf.len())
            .ok_or("a field runs past the end of its record")?;
        let (s, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(s)
    }

    /// A length-delimited field's bytes (bytes, string, nested message,
    /// packed repeated scalars).
    #[inline(always)]
    pub fn bytes(&mut self) -> Result<&'a [u8], Bad> {
        let n = self.varint()?;
        self.take(n)
    }

    /// Eight little-endian bytes.
    #[inline(always)]
    pub fn fixed64(&mut self) -> Result<u64, Bad> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// Four little-endian bytes.
    #[inline(always)]
    pub fn fixed32(&mut self) -> Result<u32, Bad> {
        let b = self.take(4)?;
        let mut a = [0u8; 4];
        a.copy_from_slice(b);
        Ok(u32::from_le_bytes(a))
    }

    /// Skips a field of wire type `wt`; groups (3, 4) and wire types 6 and
    /// 7 are refused.
    #[inline]
    pub fn skip(&mut self, wt: u8) -> Result<(), Bad> {
        match wt {
            VARINT => self.varint().map(|_| ()),
            FIXED64 => self.take(8).map(|_| ()),
            LEN => self.bytes().map(|_| ()),
            FIXED32 => self.take(4).map(|_| ()),
            _ => Err("a field of a wire type this format never uses (group)"),
        }
    }

    /// A field expected to have wire type `want`: refuses another.
    #[inline(always)]
    pub fn expect(wt: u8, want: u8) -> Result<(), Bad> {
        Self::expect_named(wt, want, "a known field has the wrong wire type")
    }

    /// [`Cursor::expect`] with the error `what`, which names the field.
    #[inline(always)]
    pub fn expect_named(wt: u8, want: u8, what: Bad) -> Result<(), Bad> {
        if wt == want {
            Ok(())
        } else {
            Err(what)
        }
    }

    /// Calls `f` for each element of a repeated varint field of wire type
    /// `wt`, packed (`LEN`) or not (`VARINT`).
    #[inline]
    pub fn each_varint(
        &mut self,
        wt: u8,
        mut f: impl FnMut(u64) -> Result<(), Bad>,
    ) -> Result<(), Bad> {
        match wt {
            VARINT => f(self.varint()?),
            LEN => {
                let mut p = Cursor::new(self.bytes()?);
                while !p.done() {
                    f(p.varint()?)?;
                }
                Ok(())
            }
            _ => Err("a repeated varint field has the wrong wire type"),
        }
    }

    /// Calls `f` for each element of a repeated fixed32 field of wire type
    /// `wt`, packed (`LEN`) or not (`FIXED32`).
    #[inline]
    pub fn each_fixed32(
        &mut self,
        wt: u8,
        mut f: impl FnMut(u32) -> Result<(), Bad>,
    ) -> Result<(), Bad> {
        match wt {
            FIXED32 => f(self.fixed32()?),
            LEN => {
                let b = self.bytes()?;
                if b.len() % 4 != 0 {
                    return Err("a packed fixed32 field is not a multiple of 4 bytes");
                }
                for c in b.chunks_exact(4) {
                    let mut a = [0u8; 4];
                    a.copy_from_slice(c);
                    f(u32::from_le_bytes(a))?;
                }
                Ok(())
            }
            _ => Err("a repeated fixed32 field has the wrong wire type"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_past_the_end_and_odd_keys_are_refused() {
        assert!(Cursor::new(&[0x05, 1, 2]).bytes().is_err());
        assert!(Cursor::new(&[1, 2, 3]).fixed32().is_err());
        assert!(Cursor::new(&[0x80]).varint().is_err());
        // Field number 0, as a one-byte and as a two-byte key.
        assert!(Cursor::new(&[0x02]).key().is_err());
        assert!(Cursor::new(&[0x80, 0x00]).key().is_err());
        // A two-byte key of field 16.
        assert_eq!(Cursor::new(&[0x80, 0x01]).key(), Ok((16, VARINT)));
        // Groups are not skipped.
        let mut c = Cursor::new(&[0x0b, 0x0c]);
        let (_, wt) = c.key().unwrap();
        assert!(c.skip(wt).is_err());
        assert!(Cursor::new(&[0x80, 0x80, 0x80, 0x80, 0x10]).u32().is_err());
        assert!(Cursor::new(&[2]).bool().is_err());
    }

    #[test]
    fn repeated_fields_packed_or_not() {
        let mut seen = Vec::new();
        let mut c = Cursor::new(&[3, 1, 0xac, 0x02]);
        c.each_varint(LEN, |v| {
            seen.push(v);
            Ok(())
        })
        .unwrap();
        assert!(c.done());
        Cursor::new(&[7])
            .each_varint(VARINT, |v| {
                seen.push(v);
                Ok(())
            })
            .unwrap();
        assert_eq!(seen, [1, 300, 7]);
        let mut c = Cursor::new(&[3, 1, 2, 3]);
        assert!(c.each_fixed32(LEN, |_| Ok(())).is_err());
    }
}
