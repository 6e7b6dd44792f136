//! Journal segments (layout in `format-spec/STORE.md`): a 16-byte header,
//! then records framed exactly like image records (a varint length, from
//! `nsimage_format::framing`), whose bytes are an xxh3-64 of the message
//! followed by the protobuf `JournalOp`.
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use crate::fs::Fs;
use crate::StoreError;
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

/// The header every segment starts with.
pub fn header() -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(&SEGMENT_MAGIC);
    h[8..10].copy_from_slice(&SEGMENT_VERSION.to_le_bytes());
    h
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
    fn text(self) -> &'static str {
        match self {
            Bad::Frame => "record runs past the end of the segment",
            Bad::Checksum => "record checksum mismatch",
            Bad::Undecodable => "record checksum matches but the journal op does not decode",
        }
    }
}

/// Decodes one record body (checksum + message).
fn decode(body: &[u8]) -> Result<pb::JournalOp, Bad> {
    let Some((sum, msg)) = body.split_first_chunk::<8>() else {
        return Err(Bad::Checksum);
    };
    if u64::from_le_bytes(*sum) != xxh3_64(msg) {
        return Err(Bad::Checksum);
    }
    if !well_formed(msg) {
        return Err(Bad::Undecodable);
    }
    pb::JournalOp::decode(msg).map_err(|_| Bad::Undecodable)
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
fn frame_at(buf: &[u8]) -> Result<(pb::JournalOp, usize), Bad> {
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

/// Looks for the first good (complete, checksummed, decodable) record that
/// starts after the first byte of `rest`. A torn tail is the end of the
/// last write, so nothing good can follow the damage; a good record there
/// means the damage is something else. Only candidates whose frame fits
/// and whose message has a record's shape are hashed, and the bytes hashed
/// are bounded (four times the tail plus 8 MiB), so a hostile tail cannot
/// make the scan quadratic: when the budget runs out the scan is undecided.
fn good_record_after(rest: &[u8]) -> After {
    let mut budget = rest.len().saturating_mul(4).saturating_add(8 << 20);
    for q in 1..rest.len() {
        let Some((len, w)) = read_varint(&rest[q..]) else {
            continue;
        };
        let Some(body) = usize::try_from(len)
            .ok()
            .filter(|&l| l > 8 && u64::try_from(l).is_ok_and(|l| l <= MAX_OP_BYTES))
            .and_then(|l| rest.get(q.checked_add(w)?..q.checked_add(w)?.checked_add(l)?))
        else {
            continue;
        };
        if !well_formed(&body[8..]) {
            continue;
        }
        let cost = body.len();
        let Some(left) = budget.checked_sub(cost) else {
            return After::Undecided;
        };
        budget = left;
        if let Ok((op, _)) = frame_at(&rest[q..]) {
            return After::Good(q, op.txid);
        }
    }
    After::Nothing
}

/// True for the remains of a segment whose creation did not complete (a
/// crash before the header was durable): at most the header's length, each
/// byte the header's or zero (a torn or unwritten header). Records follow
/// only a durable header, so nothing in such a file was ever acknowledged.
/// Anything longer with a bad header held records, and is damage.
fn is_torn_create(bytes: &[u8]) -> bool {
    bytes.len() <= HEADER_LEN && bytes.iter().zip(header()).all(|(&b, h)| b == h || b == 0)
}

/// Decides what the bad bytes `rest`, found at offset `pos`, are. In an
/// open segment they are a torn tail when no good record follows the
/// damage; otherwise, and always in a finished segment, the segment is
/// corrupt.
fn classify_damage(
    seg: &Segment,
    open: bool,
    pos: u64,
    rest: &[u8],
    why: Bad,
) -> Result<u64, StoreError> {
    if !open || why == Bad::Undecodable {
        return Err(corrupt(seg, pos, why.text()));
    }
    match good_record_after(rest) {
        After::Nothing => Ok(rest.len() as u64),
        After::Good(q, txid) => Err(corrupt(
            seg,
            pos,
            format!(
                "{}, and a good record (txid {txid}) follows at offset {}: \
                 damage, not a torn tail; nothing was cut",
                why.text(),
                pos.saturating_add(q as u64)
            ),
        )),
        After::Undecided => Err(corrupt(
            seg,
            pos,
            format!(
                "{}, and the {} bytes after it cannot be shown to hold no good \
                 record: treated as damage; nothing was cut",
                why.text(),
                rest.len()
            ),
        )),
    }
}

/// Parses a segment held in memory. In an open segment, bad bytes at the
/// end that no good record follows are a torn tail, and a file that holds
/// only zeros or part of the header is a torn create; anything else that
/// is bad is an error.
pub fn parse(
    seg: &Segment,
    bytes: &[u8],
    open: bool,
    f: &mut dyn FnMut(pb::JournalOp) -> Result<(), StoreError>,
) -> Result<SegmentRead, StoreError> {
    if bytes.len() < HEADER_LEN || bytes[..HEADER_LEN] != header() {
        if open && is_torn_create(bytes) {
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
    }
    let mut out = SegmentRead {
        valid_len: HEADER_LEN as u64,
        ..SegmentRead::default()
    };
    let mut pos = HEADER_LEN;
    while pos < bytes.len() {
        match frame_at(&bytes[pos..]) {
            Ok((op, n)) => {
                // n <= bytes.len() - pos.
                pos = pos.saturating_add(n);
                out.valid_len = pos as u64;
                out.ops = out.ops.saturating_add(1);
                f(op)?;
            }
            Err(why) => {
                out.torn_bytes = classify_damage(seg, open, pos as u64, &bytes[pos..], why)?;
                return Ok(out);
            }
        }
    }
    Ok(out)
}

/// Reads a segment: with one bulk read when it is at most `bulk_limit`
/// bytes (falling back to streaming if that read fails), else streamed.
pub fn read(
    fs: &dyn Fs,
    seg: &Segment,
    open: bool,
    bulk_limit: u64,
    f: &mut dyn FnMut(pb::JournalOp) -> Result<(), StoreError>,
) -> Result<SegmentRead, StoreError> {
    let io = |source| StoreError::Io {
        path: seg.path.clone(),
        source,
    };
    let len = fs.len(&seg.path).map_err(io)?;
    if len <= bulk_limit {
        if let Ok(bytes) = fs.read(&seg.path) {
            let mut r = parse(seg, &bytes, open, f)?;
            r.bulk = true;
            return Ok(r);
        }
    }
    stream(fs, seg, open, f)
}

/// Streams a segment record by record through a buffered reader.
fn stream(
    fs: &dyn Fs,
    seg: &Segment,
    open: bool,
    f: &mut dyn FnMut(pb::JournalOp) -> Result<(), StoreError>,
) -> Result<SegmentRead, StoreError> {
    let io = |source| StoreError::Io {
        path: seg.path.clone(),
        source,
    };
    let mut rd = std::io::BufReader::with_capacity(256 << 10, fs.open_read(&seg.path).map_err(io)?);
    let mut head = [0u8; HEADER_LEN];
    let mut got = 0;
    while got < HEADER_LEN {
        let n = rd.read(&mut head[got..]).map_err(io)?;
        if n == 0 {
            break;
        }
        got = got.saturating_add(n);
    }
    if got < HEADER_LEN || head != header() {
        // Short or damaged: the in-memory parser decides (torn or corrupt).
        let mut rest = head[..got].to_vec();
        rd.read_to_end(&mut rest).map_err(io)?;
        return parse(seg, &rest, open, f);
    }
    let mut out = SegmentRead {
        valid_len: HEADER_LEN as u64,
        ..SegmentRead::default()
    };
    let mut frames = FrameReader::new(&mut rd, HEADER_LEN as u64).with_max_len(MAX_OP_BYTES);
    let mut body = Vec::new();
    loop {
        // The varint length a byte at a time, then the body.
        let decoded = match frames.read_frame(&mut body) {
            Ok(None) => return Ok(out),
            Ok(Some(_)) => decode(&body),
            Err(FormatError::Io { source, .. }) => return Err(io(source)),
            Err(_) => Err(Bad::Frame),
        };
        match decoded {
            Ok(op) => {
                out.valid_len = frames.offset();
                out.ops = out.ops.saturating_add(1);
                f(op)?;
            }
            Err(why) => {
                // Decide torn or corrupt from every byte from the damage on.
                let mut rest = frames.prefix().to_vec();
                rest.extend_from_slice(&body);
                frames.into_inner().read_to_end(&mut rest).map_err(io)?;
                out.torn_bytes = classify_damage(seg, open, out.valid_len, &rest, why)?;
                return Ok(out);
            }
        }
    }
}
