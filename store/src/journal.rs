//! Journal segments (layout in `format-spec/STORE.md`): a 16-byte header,
//! then records framed exactly like image records (a varint length, from
//! `nsimage_format::framing`), whose bytes are an xxh3-64 of the message
//! followed by the protobuf `JournalOp`.

use crate::io::Fs;
use crate::StoreError;
use nsimage_format::framing::{put_frame, read_varint, Records};
use nsimage_format::{pb, Location};
use prost::Message;
use std::io::Read;
use std::path::{Path, PathBuf};
use xxhash_rust::xxh3::xxh3_64;

pub const SEGMENT_MAGIC: [u8; 8] = *b"NSJOURNL";
pub const SEGMENT_VERSION: u16 = 1;
pub const HEADER_LEN: usize = 16;
/// Largest record accepted on replay.
const MAX_OP_BYTES: u64 = 64 << 20;

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
    pub path: PathBuf,
    pub first: u64,
    /// `None` while the segment is open.
    pub last: Option<u64>,
}

pub fn finished_name(first: u64, last: u64) -> String {
    format!("edits_{first:020}-{last:020}")
}

pub fn open_name(first: u64) -> String {
    format!("edits_inprogress_{first:020}")
}

impl Segment {
    pub fn parse(dir: &Path, name: &str) -> Option<Segment> {
        if let Some(first) = name.strip_prefix("edits_inprogress_") {
            return Some(Segment {
                path: dir.join(name),
                first: first.parse().ok()?,
                last: None,
            });
        }
        let (a, b) = name.strip_prefix("edits_")?.split_once('-')?;
        Some(Segment {
            path: dir.join(name),
            first: a.parse().ok()?,
            last: Some(b.parse().ok()?),
        })
    }

    pub fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// Appends one journal record for `op` to `out`.
pub fn encode(op: &pb::JournalOp, out: &mut Vec<u8>) {
    let msg = op.encode_to_vec();
    let mut body = Vec::with_capacity(8 + msg.len());
    body.extend_from_slice(&xxh3_64(&msg).to_le_bytes());
    body.extend_from_slice(&msg);
    put_frame(out, &body);
}

/// Decodes one record body (checksum + message).
fn decode(body: &[u8]) -> Result<pb::JournalOp, &'static str> {
    if body.len() < 8 {
        return Err("record shorter than its checksum");
    }
    let (sum, msg) = body.split_at(8);
    let mut s = [0u8; 8];
    s.copy_from_slice(sum);
    if u64::from_le_bytes(s) != xxh3_64(msg) {
        return Err("record checksum mismatch");
    }
    pb::JournalOp::decode(msg).map_err(|_| "undecodable journal op")
}

/// What reading one segment gave (its ops went to the caller's callback).
#[derive(Debug, Default)]
pub struct SegmentRead {
    pub ops: u64,
    /// Bytes of valid header and records.
    pub valid_len: u64,
    /// Bytes after them cut off as a torn tail (open segment only).
    pub torn_bytes: u64,
    pub bulk: bool,
}

fn corrupt(seg: &Segment, offset: u64, detail: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        path: seg.path.clone(),
        at: Location::at(offset),
        detail: detail.into(),
    }
}

/// Parses a segment held in memory. In an open segment a bad last record,
/// or zeros at the end, are a torn tail; anywhere else damage is an error.
pub fn parse(
    seg: &Segment,
    bytes: &[u8],
    open: bool,
    f: &mut dyn FnMut(pb::JournalOp) -> Result<(), StoreError>,
) -> Result<SegmentRead, StoreError> {
    if bytes.len() < HEADER_LEN {
        if open && bytes.iter().all(|&b| b == 0) {
            // Created but its header never made it to disk.
            return Ok(SegmentRead {
                torn_bytes: bytes.len() as u64,
                ..SegmentRead::default()
            });
        }
        return Err(corrupt(seg, 0, "segment shorter than its header"));
    }
    if bytes[..8] != SEGMENT_MAGIC || bytes[8..10] != SEGMENT_VERSION.to_le_bytes() {
        if open && bytes.iter().all(|&b| b == 0) {
            return Ok(SegmentRead {
                torn_bytes: bytes.len() as u64,
                ..SegmentRead::default()
            });
        }
        return Err(corrupt(seg, 0, "bad segment header"));
    }
    let mut out = SegmentRead {
        valid_len: HEADER_LEN as u64,
        ..SegmentRead::default()
    };
    let body = &bytes[HEADER_LEN..];
    let mut it = Records::new(body, Location::at(HEADER_LEN as u64));
    loop {
        let pos = out.valid_len;
        let r = match it.next() {
            None => break,
            Some(r) => r,
        };
        let problem = match r {
            Ok((_, rec)) => match decode(rec) {
                Ok(op) => {
                    out.valid_len = pos + (rec.len() + varint_len(rec.len())) as u64;
                    out.ops += 1;
                    f(op)?;
                    continue;
                }
                Err(e) => e,
            },
            Err(_) => "record runs past the end of the segment",
        };
        let rest = &bytes[pos as usize..];
        if open && is_torn_tail(rest) {
            out.torn_bytes = rest.len() as u64;
            return Ok(out);
        }
        return Err(corrupt(seg, pos, problem));
    }
    Ok(out)
}

fn varint_len(n: usize) -> usize {
    prost::encoding::encoded_len_varint(n as u64)
}

/// A torn tail: the bad record is the last thing in the file (its frame
/// reaches the end), or everything from it, or after its frame, is zeros.
fn is_torn_tail(rest: &[u8]) -> bool {
    if rest.iter().all(|&b| b == 0) {
        return true;
    }
    match read_varint(rest) {
        None => true,
        Some((len, w)) => {
            let end = (w as u64).saturating_add(len);
            end >= rest.len() as u64 || rest[end as usize..].iter().all(|&b| b == 0)
        }
    }
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
        got += n;
    }
    if got < HEADER_LEN || head[..8] != SEGMENT_MAGIC {
        // Short or damaged: the in-memory parser decides (torn or corrupt).
        let mut rest = head[..got].to_vec();
        rd.read_to_end(&mut rest).map_err(io)?;
        return parse(seg, &rest, open, f);
    }
    let mut out = SegmentRead {
        valid_len: HEADER_LEN as u64,
        ..SegmentRead::default()
    };
    let mut body = Vec::new();
    loop {
        // The varint length, a byte at a time.
        let mut prefix = Vec::with_capacity(10);
        let mut b = [0u8; 1];
        let len = loop {
            if rd.read(&mut b).map_err(io)? == 0 {
                if prefix.is_empty() {
                    return Ok(out);
                }
                break None;
            }
            prefix.push(b[0]);
            if b[0] & 0x80 == 0 {
                break read_varint(&prefix).map(|(v, _)| v);
            }
            if prefix.len() == 10 {
                break None;
            }
        };
        let ok = match len {
            Some(l) if l <= MAX_OP_BYTES => {
                body.clear();
                let got = (&mut rd).take(l).read_to_end(&mut body).map_err(io)?;
                got as u64 == l
            }
            _ => false,
        };
        let decoded = if ok {
            decode(&body)
        } else {
            Err("record runs past the end of the segment")
        };
        match decoded {
            Ok(op) => {
                out.valid_len += (prefix.len() + body.len()) as u64;
                out.ops += 1;
                f(op)?;
            }
            Err(e) => {
                // Decide torn or corrupt from the bytes that remain.
                let mut rest = prefix;
                if ok {
                    rest.extend_from_slice(&body);
                }
                rd.read_to_end(&mut rest).map_err(io)?;
                if open && is_torn_tail(&rest) {
                    out.torn_bytes = rest.len() as u64;
                    return Ok(out);
                }
                return Err(corrupt(seg, out.valid_len, e));
            }
        }
    }
}
