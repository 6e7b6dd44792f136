//! The zero-copy walker of the protobuf wire format that both record
//! decoders use (nsimage's `record`, and `hdfs`'s records of Hadoop
//! images), and the varint-delimited record iterator of Hadoop's sections.
//! No allocation per record: fields come back as values and slices of the
//! record's bytes. Holding the rest as a slice (rather than a buffer and a
//! position) leaves no offset arithmetic to check.
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use nsimage_format::wire::{
    read_varint, split_key, varint_fits, Ty, FIXED32, FIXED64, LEN, VARINT,
};

/// Why a record could not be walked: static strings, so that the hot path
/// builds no message; the record-level functions turn them into text.
pub(crate) type Bad = &'static str;

/// The unread rest of a message.
pub(crate) struct Wire<'a> {
    buf: &'a [u8],
}

impl<'a> Wire<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Wire { buf }
    }

    /// Consumes the one-byte key `tag` if it comes next. nsimage's writer
    /// emits fields in field-number order, so checking for the expected
    /// next key first is a well-predicted branch instead of a dispatch.
    #[inline(always)]
    pub(crate) fn eat(&mut self, tag: u8) -> bool {
        match self.buf.split_first() {
            Some((&b, rest)) if b == tag => {
                self.buf = rest;
                true
            }
            _ => false,
        }
    }

    #[inline(always)]
    pub(crate) fn done(&self) -> bool {
        self.buf.is_empty()
    }

    #[inline(always)]
    pub(crate) fn varint(&mut self) -> Result<u64, Bad> {
        let (v, w) = read_varint(self.buf).ok_or("bad varint")?;
        self.buf = self.buf.get(w..).ok_or("bad varint")?;
        Ok(v)
    }

    #[inline(always)]
    pub(crate) fn u32(&mut self) -> Result<u32, Bad> {
        u32::try_from(self.varint()?).map_err(|_| "a uint32 field holds more than 32 bits")
    }

    /// An enum field: the varint of a value in i32's range (negative values
    /// are sign-extended to 64 bits on the wire).
    #[inline(always)]
    pub(crate) fn enum_i32(&mut self) -> Result<i32, Bad> {
        let v = self.varint()?;
        if !varint_fits(Ty::Enum, v) {
            return Err("an enum field holds a value outside i32");
        }
        // Checked just above.
        #[allow(clippy::cast_possible_truncation)]
        Ok(v as i32)
    }

    #[inline(always)]
    pub(crate) fn bool(&mut self) -> Result<bool, Bad> {
        match self.varint()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err("a bool field holds a value other than 0 or 1"),
        }
    }

    /// The next key: (field number, wire type); field numbers below 16
    /// have one-byte keys.
    #[inline(always)]
    pub(crate) fn key(&mut self) -> Result<(u32, u8), Bad> {
        if let Some((&b, rest)) = self.buf.split_first() {
            if (8..0x80).contains(&b) {
                self.buf = rest;
                return Ok((u32::from(b >> 3), b & 7));
            }
        }
        let k = self.varint()?;
        split_key(k)
    }

    #[inline(always)]
    pub(crate) fn take(&mut self, n: u64) -> Result<&'a [u8], Bad> {
        let n = usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.buf.len())
            .ok_or("a field runs past the end of its record")?;
        let (s, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(s)
    }

    #[inline(always)]
    pub(crate) fn bytes(&mut self) -> Result<&'a [u8], Bad> {
        let n = self.varint()?;
        self.take(n)
    }

    #[inline(always)]
    pub(crate) fn fixed64(&mut self) -> Result<u64, Bad> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    #[inline(always)]
    pub(crate) fn fixed32(&mut self) -> Result<u32, Bad> {
        let b = self.take(4)?;
        let mut a = [0u8; 4];
        a.copy_from_slice(b);
        Ok(u32::from_le_bytes(a))
    }

    /// Skips a field of wire type `wt` (groups are refused).
    pub(crate) fn skip(&mut self, wt: u8) -> Result<(), Bad> {
        match wt {
            VARINT => self.varint().map(|_| ()),
            FIXED64 => self.take(8).map(|_| ()),
            LEN => self.bytes().map(|_| ()),
            FIXED32 => self.take(4).map(|_| ()),
            _ => Err("a field of a wire type this format never uses (group)"),
        }
    }

    /// Checks a field's wire type; `what` names the field in the error.
    #[inline(always)]
    pub(crate) fn check_wire_type(&mut self, wt: u8, want: u8, what: Bad) -> Result<(), Bad> {
        if wt != want {
            return Err(what);
        }
        Ok(())
    }

    /// A field expected to have wire type `want`: refuses another.
    #[inline(always)]
    pub(crate) fn expect(wt: u8, want: u8) -> Result<(), Bad> {
        if wt == want {
            Ok(())
        } else {
            Err("a known field has the wrong wire type")
        }
    }
}

/// Calls `f` for each element of a repeated varint field, packed (`LEN`)
/// or not.
pub(crate) fn each_varint(
    w: &mut Wire<'_>,
    wt: u8,
    mut f: impl FnMut(u64) -> Result<(), Bad>,
) -> Result<(), Bad> {
    match wt {
        VARINT => f(w.varint()?),
        LEN => {
            let mut p = Wire::new(w.bytes()?);
            while !p.done() {
                f(p.varint()?)?;
            }
            Ok(())
        }
        _ => Err("a repeated varint field has the wrong wire type"),
    }
}

/// Calls `f` for each element of a repeated fixed32 field, packed or not.
pub(crate) fn each_fixed32(
    w: &mut Wire<'_>,
    wt: u8,
    mut f: impl FnMut(u32) -> Result<(), Bad>,
) -> Result<(), Bad> {
    match wt {
        FIXED32 => f(w.fixed32()?),
        LEN => {
            let b = w.bytes()?;
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

/// A record (its offset in the buffer, its bytes), `None` at the end, or
/// where and why the framing broke.
pub(crate) type Next<'a> = Result<Option<(usize, &'a [u8])>, (usize, Bad)>;

/// The varint-delimited messages of a section's bytes: each item is the
/// message's offset within `buf` and its bytes.
pub(crate) struct Delimited<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Delimited<'a> {
    pub(crate) fn new(buf: &'a [u8], pos: usize) -> Self {
        Delimited { buf, pos }
    }

    /// Where the next record starts.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// The next record, `Ok(None)` at the end; `Err((offset, why))` for a
    /// length prefix that is not a varint or runs past the end.
    #[inline]
    pub(crate) fn next_record(&mut self) -> Next<'a> {
        let at = self.pos;
        let rest = match self.buf.get(at..) {
            Some(r) if !r.is_empty() => r,
            _ => return Ok(None),
        };
        let (len, w) = read_varint(rest).ok_or((at, "a record's length prefix is not a varint"))?;
        let body = usize::try_from(len)
            .ok()
            .and_then(|l| rest.get(w..)?.get(..l))
            .ok_or((at, "a record runs past the end of its section"))?;
        // w + len <= rest.len() (just checked through `get`), and
        // at + rest.len() == buf.len().
        self.pos = at.saturating_add(w).saturating_add(body.len());
        Ok(Some((at, body)))
    }
}
