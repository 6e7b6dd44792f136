//! The one segment reader: a segment's header checked against what the
//! store expects ([`Sealing`]), then its frames in order, from memory or
//! from its file (one bulk read, or streamed), each good frame's records
//! given to the caller and the first bad bytes judged by
//! [`damage`](super::damage).
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use super::damage::classify_damage;
use super::frame::{corrupt, framed_at, Bad, FramedViewSink, Framing, Ops};
use super::header::{is_torn_create, read_header, Header, HEADER_LEN, SEALED_HEADER_LEN};
use super::name::Segment;
use super::seal::{Sealing, SegmentSealer};
use crate::fs::Fs;
use crate::StoreError;
use nsimage_format::cipher::{self, ID_LEN};
use nsimage_format::wire::FrameReader;
use nsimage_format::FormatError;
use std::io::Read;

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

/// A plain store's segments: plain ones only, no key.
static PLAIN: Sealing = Sealing {
    expect: Some(false),
    key: None,
};

/// How [`read`] reads one segment.
#[derive(Clone, Copy, Debug)]
pub struct ReadOptions<'a> {
    /// The segment is the open one (`edits_inprogress_*`): bad bytes at
    /// its end that no good frame follows are a torn tail, and a file
    /// holding only zeros or part of the header is a torn create, instead
    /// of errors.
    pub open: bool,
    /// What segments are expected, and the key of sealed ones.
    pub sealing: &'a Sealing,
    /// Read a file of at most this many bytes with one bulk read (falling
    /// back to streaming if that read fails), a larger one streamed.
    /// Unused for bytes already in memory.
    pub bulk_limit: u64,
}

impl Default for ReadOptions<'_> {
    /// A finished plain segment, read in bulk whatever its size.
    fn default() -> Self {
        ReadOptions {
            open: false,
            sealing: &PLAIN,
            bulk_limit: u64::MAX,
        }
    }
}

/// Where [`read`] gets a segment's bytes.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    /// The segment's file, through `fs`.
    File(&'a dyn Fs),
    /// The segment's bytes, already in memory.
    Bytes(&'a [u8]),
}

/// Reads one segment, giving each record to `f` with the offset of the
/// frame holding it (a plain record's own frame, a sealed record's batch),
/// borrowed from the bytes read: nothing is allocated per record (a caller
/// that wants owned messages calls `to_owned` on the view). Each good
/// frame must hold the txids that belong there (a segment starts at its
/// name's txid); a gap is an error. Bad bytes are judged as
/// [`ReadOptions::open`] says. Sealed segments need the key in
/// [`ReadOptions::sealing`].
pub fn read(
    from: Source<'_>,
    seg: &Segment,
    opts: &ReadOptions<'_>,
    f: &mut FramedViewSink<'_>,
) -> Result<SegmentRead, StoreError> {
    let fs = match from {
        Source::Bytes(bytes) => return parse(seg, bytes, opts, f),
        Source::File(fs) => fs,
    };
    let io = |source| StoreError::Io {
        path: seg.path.clone(),
        source,
    };
    let len = fs.len(&seg.path).map_err(io)?;
    if len <= opts.bulk_limit {
        if let Ok(bytes) = fs.read(&seg.path) {
            let mut r = parse(seg, &bytes, opts, f)?;
            r.bulk = true;
            return Ok(r);
        }
    }
    stream(fs, seg, opts, f)
}

/// Reads a segment held in memory.
fn parse(
    seg: &Segment,
    bytes: &[u8],
    opts: &ReadOptions<'_>,
    f: &mut FramedViewSink<'_>,
) -> Result<SegmentRead, StoreError> {
    let (open, sealing) = (opts.open, opts.sealing);
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

/// Streams a segment frame by frame through a buffered reader.
fn stream(
    fs: &dyn Fs,
    seg: &Segment,
    opts: &ReadOptions<'_>,
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
        return parse(seg, &rest, opts, f);
    };
    let framing = framing_for(seg, h, opts.sealing)?;
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
                    classify_damage(seg, &framing, opts.open, (out.valid_len, next), &rest, why)?;
                return Ok(out);
            }
        }
    }
}
