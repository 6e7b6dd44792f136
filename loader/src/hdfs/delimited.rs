//! The varint-delimited records of a Hadoop section's bytes (each record
//! a varint length, then that many bytes), walked with no allocation; the
//! records themselves are walked with [`nsimage_format::wire::Cursor`].
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use nsimage_format::wire::{read_varint, Bad};

/// The most bytes one record of a Hadoop section may hold: 64 MiB. The
/// largest Hadoop writes is a directory's INODE_DIR entry, its children's
/// ids (at most 10 bytes each) for at most 6,400,000 children (the most
/// `dfs.namenode.fs-limits.max-directory-items` allows), under 64,000,030
/// bytes; an inode record is a few kilobytes (names of at most 64 KiB,
/// blocks, 32 xattrs and 32 ACL entries at most). A reader holds one
/// record whole, so this bounds what a record can make it hold.
pub(crate) const MAX_RECORD: u64 = nsimage_format::hdfs::MAX_MESSAGE_BYTES;

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
        if len > MAX_RECORD {
            return Err((at, "a record declares more than the 64 MiB one may hold"));
        }
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
