//! Journal segments (layout in `format-spec/STORE.md`): a 16-byte header,
//! then records framed exactly like image records (a varint length, from
//! `nsimage_format::framing`), whose bytes are an xxh3-64 of the message
//! followed by the protobuf `JournalOp`. In an encrypted store a segment
//! has a 48-byte header (version 2, a random segment id, the key's
//! fingerprint) and holds sealed batches instead: each frame is one group
//! commit's records, encrypted and authenticated together (AES-256-GCM,
//! [`SegmentSealer`]).
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use crate::fs::Fs;
use crate::op_view::JournalOpView;
use crate::StoreError;
use nsimage_format::cipher::{self, ImageCipher, Key, ID_LEN, NONCE_LEN, TAG_LEN};
use nsimage_format::framing::put_frame;
use nsimage_format::wire::{fields, read_varint, tags, FrameReader, LEN};
use nsimage_format::{pb, FormatError, Location};
use prost::Message;
use std::io::Read;
use std::path::{Path, PathBuf};
use xxhash_rust::xxh3::xxh3_64;

/// First eight bytes of every segment.
pub const SEGMENT_MAGIC: [u8; 8] = *b"NSJOURNL";
/// The segment layout version this build writes and reads.
pub const SEGMENT_VERSION: u16 = 1;
/// Bytes of a segment header: magic, version, reserved zeros.
pub const HEADER_LEN: usize = 16;
/// The first byte of every record's message: the key of `txid` (field 1,
/// varint), which every record holds (txids start at 1) and writes first.
const TXID_TAG: u8 = tags::journal_op::TXID;
/// The field numbers of the `op` oneof: the first and the last.
const OPS: std::ops::RangeInclusive<u32> =
    fields::journal_op::MKDIR..=fields::journal_op::REMOVE_XATTR;
/// Largest record accepted on replay.
const MAX_OP_BYTES: u64 = 64 << 20;
/// The layout version of a sealed (encrypted) segment.
pub const SEALED_VERSION: u16 = 2;
/// Bytes of a sealed segment's header: magic, version, reserved zeros,
/// segment id, key fingerprint.
pub const SEALED_HEADER_LEN: usize = 48;
/// Largest sealed batch frame accepted on replay: one record at its
/// largest, plus room for the batch's own bytes.
const MAX_BATCH_BYTES: u64 = MAX_OP_BYTES + (1 << 20);
/// A writer closes a batch before a record would take its plain bytes
/// past this (a batch always holds at least one record).
const BATCH_TARGET: usize = 8 << 20;
/// Bytes of a batch before its ciphertext: first txid, record count, nonce.
const BATCH_CLEAR: usize = 8 + 4 + NONCE_LEN;
/// The smallest batch body: its clear part, one byte, the tag.
const MIN_BATCH_BODY: usize = BATCH_CLEAR + 1 + TAG_LEN;
/// The first bytes of a batch's associated data.
const BATCH_AAD_MAGIC: &[u8; 8] = b"NSJBATC1";
/// Bytes of a batch's associated data.
const BATCH_AAD_LEN: usize = 52;

/// The header every segment starts with.
pub fn header() -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(&SEGMENT_MAGIC);
    h[8..10].copy_from_slice(&SEGMENT_VERSION.to_le_bytes());
    h
}

/// The header of a sealed segment with id `id`, for the key whose
/// fingerprint is `fingerprint`.
pub fn sealed_header(id: &[u8; ID_LEN], fingerprint: &[u8; ID_LEN]) -> [u8; SEALED_HEADER_LEN] {
    let mut h = [0u8; SEALED_HEADER_LEN];
    h[..8].copy_from_slice(&SEGMENT_MAGIC);
    h[8..10].copy_from_slice(&SEALED_VERSION.to_le_bytes());
    h[16..32].copy_from_slice(id);
    h[32..48].copy_from_slice(fingerprint);
    h
}

/// A segment's header, as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Header {
    /// Version 1: plain records.
    Plain,
    /// Version 2: sealed batches, with the segment's id and the
    /// fingerprint of the key it was sealed with.
    Sealed {
        id: [u8; ID_LEN],
        fingerprint: [u8; ID_LEN],
    },
}

impl Header {
    fn len(self) -> usize {
        match self {
            Header::Plain => HEADER_LEN,
            Header::Sealed { .. } => SEALED_HEADER_LEN,
        }
    }
}

/// The header at the front of `bytes`, if it is a valid one.
fn read_header(bytes: &[u8]) -> Option<Header> {
    if bytes.get(..HEADER_LEN) == Some(&header()[..]) {
        return Some(Header::Plain);
    }
    let h = bytes.get(..SEALED_HEADER_LEN)?;
    if h[..8] != SEGMENT_MAGIC
        || h[8..10] != SEALED_VERSION.to_le_bytes()
        || h[10..16].iter().any(|&b| b != 0)
    {
        return None;
    }
    let mut id = [0u8; ID_LEN];
    id.copy_from_slice(&h[16..32]);
    let mut fingerprint = [0u8; ID_LEN];
    fingerprint.copy_from_slice(&h[32..48]);
    Some(Header::Sealed { id, fingerprint })
}

/// What segments a reader expects, and the key that opens sealed ones.
#[derive(Clone, Debug, Default)]
pub struct Sealing {
    /// `Some(true)`: every segment must be sealed (an encrypted store);
    /// `Some(false)`: every one must be plain (a plain store); `None`: as
    /// each segment's header says (`journal dump` of one file).
    pub expect: Option<bool>,
    /// The key of sealed segments.
    pub key: Option<Key>,
}

impl Sealing {
    /// A plain store's: plain segments only.
    pub fn plain() -> Sealing {
        Sealing {
            expect: Some(false),
            key: None,
        }
    }
}

/// The associated data of a sealed batch (STORE.md, "Sealed batch").
fn batch_aad(
    id: &[u8; ID_LEN],
    seg_first: u64,
    first: u64,
    count: u32,
    offset: u64,
) -> [u8; BATCH_AAD_LEN] {
    let mut a = [0u8; BATCH_AAD_LEN];
    a[..8].copy_from_slice(BATCH_AAD_MAGIC);
    a[8..24].copy_from_slice(id);
    a[24..32].copy_from_slice(&seg_first.to_le_bytes());
    a[32..40].copy_from_slice(&first.to_le_bytes());
    a[40..44].copy_from_slice(&count.to_le_bytes());
    a[44..52].copy_from_slice(&offset.to_le_bytes());
    a
}

/// Seals the batches of one open sealed segment: its data key (derived
/// from the store's key and the segment's random id), the id and the
/// segment's first txid.
pub struct SegmentSealer {
    cipher: ImageCipher,
    id: [u8; ID_LEN],
    first: u64,
}

impl std::fmt::Debug for SegmentSealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SegmentSealer(segment {})", self.first)
    }
}

impl SegmentSealer {
    /// The sealer of the segment whose id is `id` and whose first txid is
    /// `first`, with the store's `key`.
    pub fn new(key: &Key, id: [u8; ID_LEN], first: u64) -> SegmentSealer {
        SegmentSealer {
            cipher: key.image_cipher(&id),
            id,
            first,
        }
    }

    /// Appends to `out` the sealed batches holding the records `plain`
    /// (whole records as [`encode`] writes them, the first with txid
    /// `first_txid`, the rest consecutive) when they are written at
    /// `offset` in the segment. Records are grouped into batches of at
    /// most 8 MiB (or one record), so one seal covers a whole group
    /// commit. Returns the bytes appended.
    pub fn seal(&self, plain: &[u8], first_txid: u64, offset: u64, out: &mut Vec<u8>) -> u64 {
        let start = out.len();
        let mut txid = first_txid;
        let mut rest = plain;
        let mut buf = Vec::new();
        while !rest.is_empty() {
            // The records of this batch: whole frames up to the target.
            let (mut end, mut count) = (0usize, 0u32);
            while end < rest.len() {
                let Some(n) = read_varint(&rest[end..]).and_then(|(len, w)| {
                    usize::try_from(len)
                        .ok()
                        .and_then(|l| l.checked_add(w))
                        .and_then(|l| l.checked_add(end))
                }) else {
                    break;
                };
                if count > 0 && n > BATCH_TARGET || n > rest.len() {
                    break;
                }
                end = n;
                count = count.saturating_add(1);
            }
            if count == 0 {
                // Not the records `encode` writes: keep every byte anyway
                // (the reader refuses the batch: never happens).
                end = rest.len();
                count = 1;
            }
            let (batch, more) = rest.split_at(end);
            let here = offset.saturating_add((out.len().saturating_sub(start)) as u64);
            let nonce = cipher::random_nonce();
            let aad = batch_aad(&self.id, self.first, txid, count, here);
            buf.clear();
            buf.extend_from_slice(batch);
            self.cipher.seal(&nonce, &aad, &mut buf);
            let mut body = Vec::with_capacity(BATCH_CLEAR.saturating_add(buf.len()));
            body.extend_from_slice(&txid.to_le_bytes());
            body.extend_from_slice(&count.to_le_bytes());
            body.extend_from_slice(&nonce);
            body.extend_from_slice(&buf);
            put_frame(out, &body);
            txid = txid.saturating_add(u64::from(count));
            rest = more;
        }
        (out.len().saturating_sub(start)) as u64
    }
}

/// How a segment's frames are read: plain records, or sealed batches.
enum Framing {
    Plain,
    Sealed(SegmentSealer),
}

/// The callback each replayed record is given to, borrowed from the
/// segment's bytes.
pub type ViewSink<'s> = dyn FnMut(JournalOpView<'_>) -> Result<(), StoreError> + 's;

/// [`ViewSink`] that is also given the offset in the segment of the frame
/// holding the record (a plain record's own frame, a sealed record's
/// batch), so that what it finds wrong with the record can be named there.
pub type FramedViewSink<'s> = dyn FnMut(u64, JournalOpView<'_>) -> Result<(), StoreError> + 's;

/// The ops one good frame holds: one record (borrowed from the frame), or
/// a batch (its decrypted records, checked already).
enum Ops<'a> {
    One(JournalOpView<'a>),
    Batch {
        plain: Vec<u8>,
        first: u64,
        count: u32,
    },
}

impl Ops<'_> {
    fn len(&self) -> u64 {
        match self {
            Ops::One(_) => 1,
            Ops::Batch { count, .. } => u64::from(*count),
        }
    }

    fn first_txid(&self) -> u64 {
        match self {
            Ops::One(op) => op.txid,
            Ops::Batch { first, .. } => *first,
        }
    }

    /// Gives the ops to `f` in order; the frame started at `offset` in
    /// `seg`.
    fn give(
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
    fn max_len(&self) -> u64 {
        match self {
            Framing::Plain => MAX_OP_BYTES,
            Framing::Sealed(_) => MAX_BATCH_BYTES,
        }
    }

    /// Decodes one frame's body, which starts (with its length prefix) at
    /// `offset` in the segment.
    fn decode<'a>(&self, body: &'a [u8], offset: u64) -> Result<Ops<'a>, Bad> {
        match self {
            Framing::Plain => decode(body).map(Ops::One),
            Framing::Sealed(s) => open_batch(s, body, offset),
        }
    }

    /// Whether the frame body `body` is worth trying as a good frame in
    /// the scan after damage (cheap checks only).
    fn candidate(&self, body: &[u8]) -> bool {
        match self {
            Framing::Plain => body.len() > 8 && well_formed(&body[8..]),
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
const MIN_RECORD_BYTES: usize = 1 + 8 + 4;

impl Framing {
    /// The txids a frame body says it holds (its first and how many), when
    /// its clear bytes have the shape the writer gives them: a record's
    /// message shape (its txid then read from it), or a batch whose clear
    /// first txid is at least the segment's and whose count is at least 1
    /// and at most one record per [`MIN_RECORD_BYTES`] of plaintext. Zeros
    /// and random bytes almost never have that shape; bytes the writer
    /// wrote always do, even when a checksum or tag no longer matches.
    fn claimed(&self, body: &[u8]) -> Option<(u64, u64)> {
        match self {
            Framing::Plain => {
                let msg = body.get(8..)?;
                if !well_formed(msg) {
                    return None;
                }
                let (txid, _) = read_varint(msg.get(1..)?)?;
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

/// Walks the frames that start at the damage (the front of `rest`), by
/// their clear lengths, while each is complete and says it holds the
/// txids that belong there (the first `next`, then each after the one
/// before). The walk stops at a frame that runs past the end, or one
/// whose clear bytes do not have the writer's shape (zeros, junk): the
/// remains a torn last write can leave. It returns the offset in `rest`
/// and the first txid of a complete frame that has the writer's shape but
/// names other txids: written data out of its place (frames swapped,
/// moved or copied), which no crash produces.
fn misplaced_frame(framing: &Framing, rest: &[u8], mut next: u64) -> Option<(usize, u64, u64)> {
    let mut q = 0usize;
    while q < rest.len() {
        let (len, w) = read_varint(&rest[q..])?;
        if len > framing.max_len() {
            return None;
        }
        let start = q.checked_add(w)?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        let body = rest.get(start..end)?;
        let (first, count) = framing.claimed(body)?;
        if first != next {
            return Some((q, first, next));
        }
        next = next.checked_add(count)?;
        q = end;
    }
    None
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

/// A segment file name: finished `edits_<first>-<last>` or open
/// `edits_inprogress_<first>` (txids zero-padded to 20 digits).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// The segment file.
    pub path: PathBuf,
    /// Its first txid.
    pub first: u64,
    /// `None` while the segment is open.
    pub last: Option<u64>,
}

/// The name of a finished segment holding txids `first..=last`.
pub fn finished_name(first: u64, last: u64) -> String {
    format!("edits_{first:020}-{last:020}")
}

/// The name of the open segment starting at txid `first`.
pub fn open_name(first: u64) -> String {
    format!("edits_inprogress_{first:020}")
}

/// A txid as written in a file name: exactly 20 ASCII digits (so names sort
/// in txid order), and at most `u64::MAX`.
pub fn parse_txid20(s: &str) -> Option<u64> {
    if s.len() != 20 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

impl Segment {
    /// Parses a segment file name; `None` for any other name (including a
    /// txid that is not exactly 20 digits or does not fit in a u64).
    pub fn parse(dir: &Path, name: &str) -> Option<Segment> {
        if let Some(first) = name.strip_prefix("edits_inprogress_") {
            return Some(Segment {
                path: dir.join(name),
                first: parse_txid20(first)?,
                last: None,
            });
        }
        let (a, b) = name.strip_prefix("edits_")?.split_once('-')?;
        Some(Segment {
            path: dir.join(name),
            first: parse_txid20(a)?,
            last: Some(parse_txid20(b)?),
        })
    }

    /// The segment's file name.
    pub fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
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

/// What reading one segment gave (its ops went to the caller's callback).
#[derive(Debug, Default)]
pub struct SegmentRead {
    /// Ops read (and given to the callback).
    pub ops: u64,
    /// Bytes of valid header and records.
    pub valid_len: u64,
    /// Bytes after them that are a torn tail (open segment only).
    pub torn_bytes: u64,
    /// The (open) segment holds no complete header and nothing else: a
    /// torn create, to be replaced.
    pub headerless: bool,
    /// Read with one bulk read (else streamed).
    pub bulk: bool,
    /// A sealed segment's id (from its header); `None` for a plain one.
    pub id: Option<[u8; ID_LEN]>,
}

fn corrupt(seg: &Segment, offset: u64, detail: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        path: seg.path.clone(),
        at: Location::at(offset),
        detail: detail.into(),
    }
}

/// Why the bytes at some offset are not a good record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bad {
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
    fn text(self, sealed: bool) -> &'static str {
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

/// The shape every record's message has (STORE.md, "Record"): the txid
/// field, then the one operation field (numbers 2 to 13, length-delimited)
/// running exactly to the end. The scan after damage relies on it to test
/// candidates without hashing them.
fn well_formed(msg: &[u8]) -> bool {
    let Some((&TXID_TAG, rest)) = msg.split_first() else {
        return false;
    };
    let Some(rest) = read_varint(rest).and_then(|(_, w)| rest.get(w..)) else {
        return false;
    };
    let Some((&tag, rest)) = rest.split_first() else {
        return false;
    };
    if tag & 7 != LEN || !OPS.contains(&u32::from(tag >> 3)) {
        return false;
    }
    read_varint(rest).is_some_and(|(len, w)| rest.len().checked_sub(w) == usize::try_from(len).ok())
}

/// Decodes the framed record at the front of `buf`: the op and the frame's
/// length in bytes.
fn frame_at(buf: &[u8]) -> Result<(JournalOpView<'_>, usize), Bad> {
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

/// What follows damage in an open segment.
enum After {
    /// Nothing good: the damage runs to the end, a torn tail.
    Nothing,
    /// A good record (its offset in `rest` and its txid): not a torn tail.
    Good(usize, u64),
    /// The scan gave up (a tail crafted so that many candidates need
    /// hashing): undecided, so treated as damage and nothing is cut.
    Undecided,
}

/// Looks for the first good frame (a complete, checksummed, decodable
/// record; in a sealed segment a batch that authenticates and decodes)
/// that starts after the first byte of `rest`, which lies at `base` in the
/// segment. A torn tail is the end of the last write, so nothing good can
/// follow the damage; a good frame there means the damage is something
/// else. Only candidates whose frame fits and whose bytes pass the cheap
/// checks ([`Framing::candidate`]) are hashed or decrypted, and the bytes
/// so processed are bounded (four times the tail plus 8 MiB), so a hostile
/// tail cannot make the scan quadratic: when the budget runs out the scan
/// is undecided.
fn good_record_after(framing: &Framing, rest: &[u8], base: u64) -> After {
    let mut budget = rest.len().saturating_mul(4).saturating_add(8 << 20);
    for q in 1..rest.len() {
        let Some((len, w)) = read_varint(&rest[q..]) else {
            continue;
        };
        let Some(body) = usize::try_from(len)
            .ok()
            .filter(|&l| l > 8 && u64::try_from(l).is_ok_and(|l| l <= framing.max_len()))
            .and_then(|l| rest.get(q.checked_add(w)?..q.checked_add(w)?.checked_add(l)?))
        else {
            continue;
        };
        if !framing.candidate(body) {
            continue;
        }
        let cost = body.len();
        let Some(left) = budget.checked_sub(cost) else {
            return After::Undecided;
        };
        budget = left;
        if let Ok(ops) = framing.decode(body, base.saturating_add(q as u64)) {
            return After::Good(q, ops.first_txid());
        }
    }
    After::Nothing
}

/// Decodes the frame at the front of `buf`, which lies at `offset` in the
/// segment: its ops and the frame's length in bytes.
fn framed_at<'a>(framing: &Framing, buf: &'a [u8], offset: u64) -> Result<(Ops<'a>, usize), Bad> {
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

/// True for the remains of a segment whose creation did not complete (a
/// crash before the header was durable): at most the header's length, each
/// byte the header's or zero (a torn or unwritten header). Records follow
/// only a durable header, so nothing in such a file was ever acknowledged.
/// Anything longer with a bad header held records, and is damage. In an
/// encrypted store (`sealed` holds the key's fingerprint) the header is
/// the sealed one, whose random segment id may hold any bytes.
fn is_torn_create(bytes: &[u8], sealed: Option<&[u8; ID_LEN]>) -> bool {
    match sealed {
        None => {
            bytes.len() <= HEADER_LEN && bytes.iter().zip(header()).all(|(&b, h)| b == h || b == 0)
        }
        Some(fp) => {
            let want = sealed_header(&[0u8; ID_LEN], fp);
            bytes.len() <= SEALED_HEADER_LEN
                && bytes
                    .iter()
                    .zip(want)
                    .enumerate()
                    .all(|(i, (&b, h))| (16..32).contains(&i) || b == h || b == 0)
        }
    }
}

/// Decides what the bad bytes `rest`, found at offset `pos`, are. In an
/// open segment they are a torn tail when no good frame follows the
/// damage; otherwise, and always in a finished segment, the segment is
/// corrupt.
fn classify_damage(
    seg: &Segment,
    framing: &Framing,
    open: bool,
    at: (u64, u64),
    rest: &[u8],
    why: Bad,
) -> Result<u64, StoreError> {
    let (pos, next) = at;
    let sealed = matches!(framing, Framing::Sealed(_));
    if !open || why == Bad::Undecodable {
        return Err(corrupt(seg, pos, why.text(sealed)));
    }
    if let Some((q, first, want)) = misplaced_frame(framing, rest, next) {
        return Err(corrupt(
            seg,
            pos,
            format!(
                "{}; the {} at offset {} names txid {first} where txid {} belongs \
                 (journal gap: written data out of its place, which no crash leaves): \
                 damage, not a torn tail; nothing was cut",
                why.text(sealed),
                if sealed { "batch" } else { "record" },
                pos.saturating_add(q as u64),
                want,
            ),
        ));
    }
    match good_record_after(framing, rest, pos) {
        After::Nothing => Ok(rest.len() as u64),
        After::Good(q, txid) => Err(corrupt(
            seg,
            pos,
            format!(
                "{}, and a good {} (txid {txid}) follows at offset {}: \
                 damage, not a torn tail; nothing was cut",
                why.text(sealed),
                if sealed { "batch" } else { "record" },
                pos.saturating_add(q as u64)
            ),
        )),
        After::Undecided => Err(corrupt(
            seg,
            pos,
            format!(
                "{}, and the {} bytes after it cannot be shown to hold no good \
                 record: treated as damage; nothing was cut",
                why.text(sealed),
                rest.len()
            ),
        )),
    }
}

fn key_error(seg: &Segment, detail: String) -> StoreError {
    StoreError::Key {
        path: seg.path.clone(),
        detail,
    }
}

/// The framing of a segment whose valid header is `h`, checked against
/// what `sealing` expects and the key it holds.
fn framing_for(seg: &Segment, h: Header, sealing: &Sealing) -> Result<Framing, StoreError> {
    match (h, sealing.expect) {
        (Header::Plain, Some(true)) => Err(corrupt(
            seg,
            0,
            "a plain (unencrypted) segment in an encrypted store",
        )),
        (Header::Sealed { .. }, Some(false)) => {
            Err(corrupt(seg, 0, "an encrypted segment in a plain store"))
        }
        (Header::Plain, _) => Ok(Framing::Plain),
        (Header::Sealed { id, fingerprint }, _) => {
            let Some(key) = &sealing.key else {
                return Err(key_error(
                    seg,
                    format!(
                        "the segment is encrypted (key fingerprint {}); give its key file \
                         (--key-file or NSIMAGE_KEY_FILE)",
                        cipher::hex(&fingerprint)
                    ),
                ));
            };
            let fp = key.fingerprint();
            if fp != fingerprint {
                return Err(key_error(
                    seg,
                    format!(
                        "wrong key: the segment was encrypted with key fingerprint {}, the key \
                         given has {}",
                        cipher::hex(&fingerprint),
                        cipher::hex(&fp)
                    ),
                ));
            }
            Ok(Framing::Sealed(SegmentSealer::new(key, id, seg.first)))
        }
    }
}

/// The fingerprint a torn create of an encrypted store's segment would
/// hold: `Some` when sealed segments are expected and a key is given.
fn torn_create_fingerprint(sealing: &Sealing) -> Option<[u8; ID_LEN]> {
    match (sealing.expect, &sealing.key) {
        (Some(true), Some(k)) => Some(k.fingerprint()),
        _ => None,
    }
}

/// Checks that the good frame `ops`, found at `offset`, starts at the
/// txid `next` that belongs there (a segment's first at its name's txid,
/// each next after the one before: STORE.md, "Journal segment"); returns
/// the txid after it. Any other txid is a journal gap named at the frame.
fn in_order(seg: &Segment, offset: u64, ops: &Ops<'_>, next: u64) -> Result<u64, StoreError> {
    let first = ops.first_txid();
    if first != next {
        return Err(corrupt(
            seg,
            offset,
            format!("journal gap: txid {first} where txid {next} belongs"),
        ));
    }
    // A batch's first + count was checked when it opened; a record's
    // txid + 1 overflows only at the last txid, which takes no next.
    Ok(first.saturating_add(ops.len()))
}

/// Parses a plain store's segment held in memory ([`parse_with`] with
/// [`Sealing::plain`]).
pub fn parse(
    seg: &Segment,
    bytes: &[u8],
    open: bool,
    f: &mut dyn FnMut(pb::JournalOp) -> Result<(), StoreError>,
) -> Result<SegmentRead, StoreError> {
    parse_with(seg, bytes, open, &Sealing::plain(), f)
}

/// Parses a segment held in memory. In an open segment, bad bytes at the
/// end that no good record follows are a torn tail, and a file that holds
/// only zeros or part of the header is a torn create; anything else that
/// is bad is an error. Sealed segments need the key in `sealing`. Each
/// record is given to `f` as an owned message ([`parse_views_with`]
/// borrows them instead).
pub fn parse_with(
    seg: &Segment,
    bytes: &[u8],
    open: bool,
    sealing: &Sealing,
    f: &mut dyn FnMut(pb::JournalOp) -> Result<(), StoreError>,
) -> Result<SegmentRead, StoreError> {
    parse_views_with(seg, bytes, open, sealing, &mut |v| f(v.to_owned()))
}

/// [`parse_with`], each record given to `f` borrowed from `bytes` (or
/// from a sealed batch's decrypted bytes): nothing is allocated per
/// record.
pub fn parse_views_with(
    seg: &Segment,
    bytes: &[u8],
    open: bool,
    sealing: &Sealing,
    f: &mut ViewSink<'_>,
) -> Result<SegmentRead, StoreError> {
    parse_views_at(seg, bytes, open, sealing, &mut |_, v| f(v))
}

/// [`parse_views_with`], `f` also given the offset of the frame holding
/// each record.
pub fn parse_views_at(
    seg: &Segment,
    bytes: &[u8],
    open: bool,
    sealing: &Sealing,
    f: &mut FramedViewSink<'_>,
) -> Result<SegmentRead, StoreError> {
    let Some(h) = read_header(bytes) else {
        let fp = torn_create_fingerprint(sealing);
        if open && sealing.expect != Some(true) && is_torn_create(bytes, None)
            || open && fp.is_some() && is_torn_create(bytes, fp.as_ref())
        {
            return Ok(SegmentRead {
                torn_bytes: bytes.len() as u64,
                headerless: true,
                ..SegmentRead::default()
            });
        }
        let what = if bytes.len() < HEADER_LEN {
            "segment shorter than its header"
        } else {
            "bad segment header"
        };
        return Err(corrupt(seg, 0, what));
    };
    let framing = framing_for(seg, h, sealing)?;
    let mut out = SegmentRead {
        valid_len: h.len() as u64,
        id: match h {
            Header::Sealed { id, .. } => Some(id),
            Header::Plain => None,
        },
        ..SegmentRead::default()
    };
    let mut pos = h.len();
    // The txid the next frame should start at (the caller checks that the
    // good ones do; damage is judged against it).
    let mut next = seg.first;
    while pos < bytes.len() {
        match framed_at(&framing, &bytes[pos..], pos as u64) {
            Ok((ops, n)) => {
                let at = pos as u64;
                // n <= bytes.len() - pos.
                pos = pos.saturating_add(n);
                out.valid_len = pos as u64;
                out.ops = out.ops.saturating_add(ops.len());
                next = in_order(seg, at, &ops, next)?;
                ops.give(seg, at, f)?;
            }
            Err(why) => {
                out.torn_bytes =
                    classify_damage(seg, &framing, open, (pos as u64, next), &bytes[pos..], why)?;
                return Ok(out);
            }
        }
    }
    Ok(out)
}

/// Reads a plain store's segment ([`read_with`] with [`Sealing::plain`]).
pub fn read(
    fs: &dyn Fs,
    seg: &Segment,
    open: bool,
    bulk_limit: u64,
    f: &mut dyn FnMut(pb::JournalOp) -> Result<(), StoreError>,
) -> Result<SegmentRead, StoreError> {
    read_with(fs, seg, open, bulk_limit, &Sealing::plain(), f)
}

/// Reads a segment: with one bulk read when it is at most `bulk_limit`
/// bytes (falling back to streaming if that read fails), else streamed.
/// Each record is given to `f` as an owned message ([`read_views_with`]
/// borrows them instead).
pub fn read_with(
    fs: &dyn Fs,
    seg: &Segment,
    open: bool,
    bulk_limit: u64,
    sealing: &Sealing,
    f: &mut dyn FnMut(pb::JournalOp) -> Result<(), StoreError>,
) -> Result<SegmentRead, StoreError> {
    read_views_with(fs, seg, open, bulk_limit, sealing, &mut |v| f(v.to_owned()))
}

/// [`read_with`], each record given to `f` borrowed from the bytes read:
/// nothing is allocated per record.
pub fn read_views_with(
    fs: &dyn Fs,
    seg: &Segment,
    open: bool,
    bulk_limit: u64,
    sealing: &Sealing,
    f: &mut ViewSink<'_>,
) -> Result<SegmentRead, StoreError> {
    read_views_at(fs, seg, open, bulk_limit, sealing, &mut |_, v| f(v))
}

/// [`read_views_with`], `f` also given the offset of the frame holding
/// each record (replay's path: an op that cannot apply is named there).
pub fn read_views_at(
    fs: &dyn Fs,
    seg: &Segment,
    open: bool,
    bulk_limit: u64,
    sealing: &Sealing,
    f: &mut FramedViewSink<'_>,
) -> Result<SegmentRead, StoreError> {
    let io = |source| StoreError::Io {
        path: seg.path.clone(),
        source,
    };
    let len = fs.len(&seg.path).map_err(io)?;
    if len <= bulk_limit {
        if let Ok(bytes) = fs.read(&seg.path) {
            let mut r = parse_views_at(seg, &bytes, open, sealing, f)?;
            r.bulk = true;
            return Ok(r);
        }
    }
    stream(fs, seg, open, sealing, f)
}

/// Streams a segment frame by frame through a buffered reader.
fn stream(
    fs: &dyn Fs,
    seg: &Segment,
    open: bool,
    sealing: &Sealing,
    f: &mut FramedViewSink<'_>,
) -> Result<SegmentRead, StoreError> {
    let io = |source| StoreError::Io {
        path: seg.path.clone(),
        source,
    };
    let mut rd = std::io::BufReader::with_capacity(256 << 10, fs.open_read(&seg.path).map_err(io)?);
    let mut head = [0u8; SEALED_HEADER_LEN];
    let mut got = 0;
    while got < SEALED_HEADER_LEN {
        let n = rd.read(&mut head[got..]).map_err(io)?;
        if n == 0 {
            break;
        }
        got = got.saturating_add(n);
    }
    let Some(h) = read_header(&head[..got]) else {
        // Short or damaged: the in-memory parser decides (torn or corrupt).
        let mut rest = head[..got].to_vec();
        rd.read_to_end(&mut rest).map_err(io)?;
        return parse_views_at(seg, &rest, open, sealing, f);
    };
    let framing = framing_for(seg, h, sealing)?;
    let mut out = SegmentRead {
        valid_len: h.len() as u64,
        id: match h {
            Header::Sealed { id, .. } => Some(id),
            Header::Plain => None,
        },
        ..SegmentRead::default()
    };
    // Bytes read past a (shorter) plain header come first.
    let after = head.get(h.len()..got).unwrap_or_default();
    let mut frames =
        FrameReader::new(after.chain(&mut rd), h.len() as u64).with_max_len(framing.max_len());
    let mut body = Vec::new();
    let mut next = seg.first;
    loop {
        let at = frames.offset();
        // The varint length a byte at a time, then the body.
        let decoded = match frames.read_frame(&mut body) {
            Ok(None) => return Ok(out),
            Ok(Some(_)) => framing.decode(&body, at),
            Err(FormatError::Io { source, .. }) => return Err(io(source)),
            Err(_) => Err(Bad::Frame),
        };
        match decoded {
            Ok(ops) => {
                out.valid_len = frames.offset();
                out.ops = out.ops.saturating_add(ops.len());
                next = in_order(seg, at, &ops, next)?;
                ops.give(seg, at, f)?;
            }
            Err(why) => {
                // Decide torn or corrupt from every byte from the damage on.
                let mut rest = frames.prefix().to_vec();
                rest.extend_from_slice(&body);
                frames.into_inner().read_to_end(&mut rest).map_err(io)?;
                out.torn_bytes =
                    classify_damage(seg, &framing, open, (out.valid_len, next), &rest, why)?;
                return Ok(out);
            }
        }
    }
}
