//! Record frames (STORE.md, "Record"): the encoding of one record, the
//! shape every record's message has, and the decoding of one frame (a
//! plain record, or a sealed batch through [`seal`](super::seal)) into the
//! ops it holds.
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use super::name::Segment;
use super::seal::{batch_aad, SegmentSealer, BATCH_CLEAR, MIN_BATCH_BODY};
use crate::op_view::JournalOpView;
use crate::StoreError;
use nsimage_format::cipher::{NONCE_LEN, TAG_LEN};
use nsimage_format::framing::put_frame;
use nsimage_format::wire::{fields, read_varint, tags, LEN};
use nsimage_format::{pb, Location};
use prost::Message;
use xxhash_rust::xxh3::xxh3_64;

/// The first byte of every record's message: the key of `txid` (field 1,
/// varint), which every record holds (txids start at 1) and writes first.
const TXID_TAG: u8 = tags::journal_op::TXID;
/// The field numbers of the `op` oneof: the first and the last.
const OPS: std::ops::RangeInclusive<u32> = fields::journal_op::MKDIR..=fields::journal_op::SET_ACL;
/// Largest record accepted on replay.
const MAX_OP_BYTES: u64 = 64 << 20;
/// Largest sealed batch frame accepted on replay: one record at its
/// largest, plus room for the batch's own bytes.
const MAX_BATCH_BYTES: u64 = MAX_OP_BYTES + (1 << 20);

/// How a segment's frames are read: plain records, or sealed batches.
pub(super) enum Framing {
    Plain,
    Sealed(SegmentSealer),
}

/// The callback each replayed record is given to, borrowed from the
/// segment's bytes, with the offset in the segment of the frame holding
/// the record (a plain record's own frame, a sealed record's
/// batch), so that what it finds wrong with the record can be named there.
pub type FramedViewSink<'s> = dyn FnMut(u64, JournalOpView<'_>) -> Result<(), StoreError> + 's;

/// The ops one good frame holds: one record (borrowed from the frame), or
/// a batch (its decrypted records, checked already).
pub(super) enum Ops<'a> {
    One(JournalOpView<'a>),
    Batch {
        plain: Vec<u8>,
        first: u64,
        count: u32,
    },
}

impl Ops<'_> {
    pub(super) fn len(&self) -> u64 {
        match self {
            Ops::One(_) => 1,
            Ops::Batch { count, .. } => u64::from(*count),
        }
    }

    pub(super) fn first_txid(&self) -> u64 {
        match self {
            Ops::One(op) => op.txid,
            Ops::Batch { first, .. } => *first,
        }
    }

    /// Gives the ops to `f` in order; the frame started at `offset` in
    /// `seg`.
    pub(super) fn give(
        self,
        seg: &Segment,
        offset: u64,
        f: &mut FramedViewSink<'_>,
    ) -> Result<(), StoreError> {
        match self {
            Ops::One(op) => f(offset, op),
            Ops::Batch { plain, first, .. } => {
                // The batch decoded whole when it was opened; decoding the
                // same bytes again cannot fail, but is not trusted to.
                let mut pos = 0usize;
                while pos < plain.len() {
                    let (op, n) = frame_at(&plain[pos..]).map_err(|why| {
                        corrupt(seg, offset, format!("{} (txid {first})", why.text(true)))
                    })?;
                    pos = pos.saturating_add(n);
                    f(offset, op)?;
                }
                Ok(())
            }
        }
    }
}

impl Framing {
    pub(super) fn max_len(&self) -> u64 {
        match self {
            Framing::Plain => MAX_OP_BYTES,
            Framing::Sealed(_) => MAX_BATCH_BYTES,
        }
    }

    /// Decodes one frame's body, which starts (with its length prefix) at
    /// `offset` in the segment.
    pub(super) fn decode<'a>(&self, body: &'a [u8], offset: u64) -> Result<Ops<'a>, Bad> {
        match self {
            Framing::Plain => decode(body).map(Ops::One),
            Framing::Sealed(s) => open_batch(s, body, offset),
        }
    }

    /// Whether the frame body `body` is worth trying as a frame written
    /// whole in the scan after damage (cheap checks only): a record's
    /// shape, its op field any number (one this build does not know was
    /// still written whole by some writer).
    pub(super) fn candidate(&self, body: &[u8]) -> bool {
        match self {
            Framing::Plain => body.len() > 8 && shape(&body[8..]).is_some(),
            Framing::Sealed(s) => {
                body.len() >= MIN_BATCH_BODY
                    && batch_clear(body).is_some_and(|(first, count)| {
                        first >= s.first
                            && count >= 1
                            && first.checked_add(u64::from(count)).is_some()
                    })
            }
        }
    }
}

/// The fewest bytes one record takes in a segment or a batch's plaintext:
/// a one-byte length, the 8-byte checksum, and a message of at least four
/// bytes (the txid's key and value, the op's key and length).
pub(super) const MIN_RECORD_BYTES: usize = 1 + 8 + 4;

impl Framing {
    /// The txids a frame body says it holds (its first and how many), when
    /// its clear bytes have the shape the writer gives them: a record's
    /// message shape (STORE.md, "Record", its op field any number; the
    /// checksum is not computed) with a txid of at least 1, read from it,
    /// or a batch whose clear first txid is at least the segment's and
    /// whose count is at least 1 and at most one record per
    /// [`MIN_RECORD_BYTES`] of plaintext. Zeros and random bytes almost
    /// never have that shape; bytes the writer wrote always do, even when a
    /// checksum or tag no longer matches. What it says is a claim nothing
    /// vouches for: the torn-tail walk uses it only to refuse (a claim of
    /// other txids than belong there), never to accept a record or to
    /// decide a cut.
    pub(super) fn claimed(&self, body: &[u8]) -> Option<(u64, u64)> {
        match self {
            Framing::Plain => {
                let (txid, _) = shape(body.get(8..)?)?;
                (txid >= 1).then_some((txid, 1))
            }
            Framing::Sealed(s) => {
                let (first, count) = batch_clear(body)?;
                let plain = body.len().checked_sub(BATCH_CLEAR)?.checked_sub(TAG_LEN)?;
                let most = plain / MIN_RECORD_BYTES;
                let fits = usize::try_from(count).is_ok_and(|c| c >= 1 && c <= most);
                let count = u64::from(count);
                (fits && first >= s.first && first.checked_add(count).is_some())
                    .then_some((first, count))
            }
        }
    }
}

impl Framing {
    /// Whether the frame body `body`, found at `offset`, was written whole
    /// by a writer, whether or not this build can read it: a plain
    /// record's checksum matches its message, which has a record's shape
    /// (its op field any number); a sealed batch authenticates. The first
    /// txid it names, when it was.
    pub(super) fn whole(&self, body: &[u8], offset: u64) -> Option<u64> {
        match self {
            Framing::Plain => {
                let (sum, msg) = body.split_first_chunk::<8>()?;
                let (txid, _) = shape(msg)?;
                (u64::from_le_bytes(*sum) == xxh3_64(msg)).then_some(txid)
            }
            Framing::Sealed(s) => match open_batch(s, body, offset) {
                Ok(ops) => Some(ops.first_txid()),
                // Authenticated, its records not what it says: written
                // whole all the same.
                Err(Bad::Undecodable) => batch_clear(body).map(|(first, _)| first),
                Err(_) => None,
            },
        }
    }
}

/// The op field number of the plain record framed at the front of `buf`
/// when its message has a record's shape but an op field this build does
/// not know (a newer build's op), for the error that refuses it.
pub(super) fn unknown_op(buf: &[u8]) -> Option<u64> {
    let (len, w) = read_varint(buf)?;
    let end = w.checked_add(usize::try_from(len).ok()?)?;
    let (_, field) = shape(buf.get(w..end)?.get(8..)?)?;
    (!u32::try_from(field).is_ok_and(|f| OPS.contains(&f))).then_some(field)
}

/// Whether a record whose message (with its checksum and frame) takes
/// `bytes` bytes is within the largest record the journal holds.
pub fn fits(bytes: usize) -> bool {
    u64::try_from(bytes).is_ok_and(|b| b <= MAX_OP_BYTES)
}

/// Appends one journal record for `op` to `out`.
pub fn encode(op: &pb::JournalOp, out: &mut Vec<u8>) {
    let msg = op.encode_to_vec();
    let mut body = Vec::with_capacity(msg.len().saturating_add(8));
    body.extend_from_slice(&xxh3_64(&msg).to_le_bytes());
    body.extend_from_slice(&msg);
    put_frame(out, &body);
}

pub(super) fn corrupt(seg: &Segment, offset: u64, detail: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        path: seg.path.clone(),
        at: Location::at(offset),
        detail: detail.into(),
    }
}

/// Why the bytes at some offset are not a good record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bad {
    /// The length prefix is unreadable, or the frame runs past the end of
    /// the segment (or over the largest record accepted).
    Frame,
    /// The frame is complete but its checksum does not match.
    Checksum,
    /// The checksum matches but the message does not decode: the record
    /// was written whole, so this is never a torn write.
    Undecodable,
}

impl Bad {
    pub(crate) fn text(self, sealed: bool) -> &'static str {
        match (self, sealed) {
            (Bad::Frame, false) => "record runs past the end of the segment",
            (Bad::Checksum, false) => "record checksum mismatch",
            (Bad::Undecodable, false) => {
                "record checksum matches but the journal op does not decode"
            }
            (Bad::Frame, true) => "sealed batch runs past the end of the segment",
            (Bad::Checksum, true) => "sealed batch does not authenticate (damaged or moved)",
            (Bad::Undecodable, true) => {
                "sealed batch authenticates but its records do not decode as its \
                 first txid and count say"
            }
        }
    }
}

/// Decodes one record body (checksum + message), borrowing from it.
fn decode(body: &[u8]) -> Result<JournalOpView<'_>, Bad> {
    let Some((sum, msg)) = body.split_first_chunk::<8>() else {
        return Err(Bad::Checksum);
    };
    if u64::from_le_bytes(*sum) != xxh3_64(msg) {
        return Err(Bad::Checksum);
    }
    if !well_formed(msg) {
        return Err(Bad::Undecodable);
    }
    JournalOpView::decode(msg).map_err(|_| Bad::Undecodable)
}

/// A record's message shape (STORE.md, "Record"), its op field any
/// number: the txid field's key (`0x08`) and a varint, then one
/// length-delimited field of number at least 2 (its key a varint) running
/// exactly to the end. The txid and the field number. The scan after
/// damage and the torn-tail walk test frames with it without hashing them.
fn shape(msg: &[u8]) -> Option<(u64, u64)> {
    let (&TXID_TAG, rest) = msg.split_first()? else {
        return None;
    };
    let (txid, w) = read_varint(rest)?;
    let rest = rest.get(w..)?;
    let (key, w) = read_varint(rest)?;
    let rest = rest.get(w..)?;
    let field = key >> 3;
    if key & 7 != u64::from(LEN) || field < 2 {
        return None;
    }
    let (len, w) = read_varint(rest)?;
    (rest.len().checked_sub(w) == usize::try_from(len).ok()).then_some((txid, field))
}

/// The shape every record's message has: [`shape`] with an op field this
/// build knows (numbers 2 to 14). Anything else does not decode.
fn well_formed(msg: &[u8]) -> bool {
    shape(msg).is_some_and(|(_, field)| u32::try_from(field).is_ok_and(|f| OPS.contains(&f)))
}

/// Decodes the framed record at the front of `buf`: the op and the frame's
/// length in bytes.
pub(crate) fn frame_at(buf: &[u8]) -> Result<(JournalOpView<'_>, usize), Bad> {
    let (len, width) = read_varint(buf).ok_or(Bad::Frame)?;
    let avail = buf.len().checked_sub(width).ok_or(Bad::Frame)?;
    if len > MAX_OP_BYTES || len > avail as u64 {
        return Err(Bad::Frame);
    }
    // len <= avail: it fits in usize, and the end lies within `buf`.
    let end = usize::try_from(len)
        .ok()
        .and_then(|l| width.checked_add(l))
        .ok_or(Bad::Frame)?;
    let body = buf.get(width..end).ok_or(Bad::Frame)?;
    decode(body).map(|op| (op, end))
}

/// Decodes the frame at the front of `buf`, which lies at `offset` in the
/// segment: its ops and the frame's length in bytes.
pub(super) fn framed_at<'a>(
    framing: &Framing,
    buf: &'a [u8],
    offset: u64,
) -> Result<(Ops<'a>, usize), Bad> {
    let (len, width) = read_varint(buf).ok_or(Bad::Frame)?;
    let avail = buf.len().checked_sub(width).ok_or(Bad::Frame)?;
    if len > framing.max_len() || len > avail as u64 {
        return Err(Bad::Frame);
    }
    let end = usize::try_from(len)
        .ok()
        .and_then(|l| width.checked_add(l))
        .ok_or(Bad::Frame)?;
    let body = buf.get(width..end).ok_or(Bad::Frame)?;
    framing.decode(body, offset).map(|ops| (ops, end))
}

/// The clear first txid and record count of a sealed batch body.
fn batch_clear(body: &[u8]) -> Option<(u64, u32)> {
    let first = u64::from_le_bytes(body.get(..8)?.try_into().ok()?);
    let count = u32::from_le_bytes(body.get(8..12)?.try_into().ok()?);
    Some((first, count))
}

/// Authenticates and decrypts a sealed batch body found at `offset`, then
/// decodes its records. A batch that does not authenticate is like a
/// record whose checksum fails ([`Bad::Checksum`]); one that does but
/// whose records are not exactly `count` good records from the clear
/// first txid on was written whole and is [`Bad::Undecodable`].
fn open_batch(s: &SegmentSealer, body: &[u8], offset: u64) -> Result<Ops<'static>, Bad> {
    if body.len() < MIN_BATCH_BODY {
        return Err(Bad::Checksum);
    }
    let (first, count) = batch_clear(body).ok_or(Bad::Checksum)?;
    let mut nonce = [0u8; NONCE_LEN];
    nonce.copy_from_slice(&body[12..BATCH_CLEAR]);
    let aad = batch_aad(&s.id, s.first, first, count, offset);
    let mut plain = body[BATCH_CLEAR..].to_vec();
    s.cipher
        .open(&nonce, &aad, &mut plain)
        .map_err(|_| Bad::Checksum)?;
    let mut ops = 0u64;
    let mut pos = 0usize;
    let mut want = first;
    while pos < plain.len() {
        let (op, n) = frame_at(&plain[pos..]).map_err(|_| Bad::Undecodable)?;
        if op.txid != want {
            return Err(Bad::Undecodable);
        }
        want = want.checked_add(1).ok_or(Bad::Undecodable)?;
        pos = pos.saturating_add(n);
        ops = ops.saturating_add(1);
    }
    if ops != u64::from(count) {
        return Err(Bad::Undecodable);
    }
    Ok(Ops::Batch {
        plain,
        first,
        count,
    })
}
