//! A region's varint-delimited records as they come out of the file (issue
//! 39): read in blocks (a plain image) or inflated a chunk at a time (zlib,
//! gzip), each record's length prefix checked as soon as it is out, and the
//! record handed to the caller once whole, which checks it (decodes it)
//! before the next is inflated. The bytes of the records handed out are let
//! go of: what is held at once is a chunk and the record being read (at
//! most [`MAX_RECORD`]), however far the region inflates, so a bad record is
//! refused one chunk after it comes out and never after the rest of its
//! piece is inflated.
//!
//! A compressed section is bounded too by what the image declares
//! ([`Rule`]: records, bytes, a record's size, empty records), checked on
//! each length prefix before the record's bytes are inflated, and by what
//! a deflate stream of its stored bytes can expand to.
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use super::delimited::MAX_RECORD;
use crate::error::LoadError;
use flate2::bufread::{MultiGzDecoder, ZlibDecoder};
use nsimage_format::hdfs::Codec;
use nsimage_format::wire::read_varint;
use nsimage_format::Location;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// Inflated bytes asked of the decoder at a time.
const CHUNK: usize = 256 << 10;

/// Plain bytes read at a time.
const BLOCK: usize = 4 << 20;

/// Stored bytes read at a time ahead of the decoder.
const STORED_READ: usize = 256 << 10;

/// What a compressed section may inflate to, checked as it inflates.
#[derive(Clone, Copy, Default)]
pub(crate) struct Rule {
    /// The most varint-delimited records (a header included).
    pub(crate) records: Option<u64>,
    /// The most inflated bytes in all.
    pub(crate) bytes: Option<u64>,
    /// The most bytes one record may declare (never more than
    /// [`MAX_RECORD`]).
    pub(crate) record: Option<u64>,
    /// The first record from which an empty one is refused: every record
    /// past a header is a message Hadoop always writes fields of.
    pub(crate) empty_from: Option<u64>,
    /// Where the bounds come from, for the error.
    pub(crate) basis: &'static str,
}

impl Rule {
    /// A header, then records that each have content.
    pub(crate) fn headed(records: Option<u64>, basis: &'static str) -> Rule {
        Rule {
            records,
            bytes: None,
            record: None,
            empty_from: Some(1),
            basis,
        }
    }

    /// Records with content, no header.
    pub(crate) fn entries(records: u64, record: Option<u64>, basis: &'static str) -> Rule {
        Rule {
            records: Some(records),
            bytes: None,
            record,
            empty_from: Some(0),
            basis,
        }
    }
}

/// The stored bytes of a region, in order; a reader that fails keeps the
/// load's own error, which [`Records`] reports instead of the decoder's.
pub(crate) trait Source: Read {
    /// The error a failed read met, once.
    fn take_error(&mut self) -> Option<LoadError>;
}

impl Source for &[u8] {
    fn take_error(&mut self) -> Option<LoadError> {
        None
    }
}

/// The decoder over a region's stored bytes.
enum Input<R: Source> {
    Plain(R),
    Zlib(ZlibDecoder<BufReader<R>>),
    Gzip(MultiGzDecoder<BufReader<R>>),
    /// Between two zlib streams (never seen by a read).
    Between,
}

impl<R: Source> Input<R> {
    fn source(&mut self) -> Option<&mut R> {
        match self {
            Input::Plain(r) => Some(r),
            Input::Zlib(d) => Some(d.get_mut().get_mut()),
            Input::Gzip(d) => Some(d.get_mut().get_mut()),
            Input::Between => None,
        }
    }

    /// Fills the start of `dst`; 0 at the region's end. A region may hold
    /// several zlib streams one after another (a section whose
    /// sub-sections are each a stream of their own): each is inflated in
    /// turn. (A gzip reader takes every member to the end itself.)
    fn read(&mut self, dst: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let got = match self {
                Input::Plain(r) => r.read(dst),
                Input::Gzip(d) => d.read(dst),
                Input::Zlib(d) => d.read(dst),
                Input::Between => return Ok(0),
            }?;
            if got > 0 || dst.is_empty() || !matches!(self, Input::Zlib(_)) {
                return Ok(got);
            }
            let Input::Zlib(d) = std::mem::replace(self, Input::Between) else {
                return Ok(0);
            };
            if d.total_in() == 0 {
                return Err(std::io::Error::other("a stream that takes no input"));
            }
            let mut rest = d.into_inner();
            if rest.fill_buf()?.is_empty() {
                return Ok(0);
            }
            *self = Input::Zlib(ZlibDecoder::new(rest));
        }
    }
}

/// A record with where it starts and ends (its length prefix included) in
/// the region's bytes (inflated).
pub(crate) type Framed<'a> = (usize, usize, &'a [u8]);

/// The records of one region, handed out one at a time by
/// [`next`](Records::next) as they come out of the file.
pub(crate) struct Records<'b, R: Source> {
    input: Input<R>,
    codec: Codec,
    path: &'b Path,
    at: Location,
    /// "piece" or "section", for the errors.
    what: &'static str,
    rule: Rule,
    /// The most bytes the region may give (inflated, or its length).
    max: u64,
    /// The region's stored bytes.
    stored: u64,
    /// The window: `buf[..filled]` holds the region's bytes from `base`.
    buf: &'b mut Vec<u8>,
    filled: usize,
    /// Where in `buf` the next record starts.
    start: usize,
    base: u64,
    /// Records whose length prefix has been read.
    records: u64,
    /// The prefix's width and the body's length of the record at `start`,
    /// once checked.
    pending: Option<(usize, usize)>,
    /// The input has given its last byte.
    ended: bool,
}

impl<'b, R: Source> Records<'b, R> {
    /// The records of the region whose stored bytes `stored` gives
    /// (`length` of them), in the image's codec, under `rule` (a plain
    /// region's records are only held to [`MAX_RECORD`]); `buf` is the
    /// window, reused from region to region.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        stored: R,
        length: u64,
        codec: Codec,
        rule: Rule,
        path: &'b Path,
        at: &Location,
        what: &'static str,
        buf: &'b mut Vec<u8>,
    ) -> Self {
        let reader = |r: R| BufReader::with_capacity(STORED_READ, r);
        let (input, max) = match codec {
            Codec::None => (Input::Plain(stored), length),
            Codec::Zlib => (
                Input::Zlib(ZlibDecoder::new(reader(stored))),
                codec.max_output(length),
            ),
            Codec::Gzip => (
                Input::Gzip(MultiGzDecoder::new(reader(stored))),
                codec.max_output(length),
            ),
        };
        let rule = if codec == Codec::None {
            Rule {
                record: Some(MAX_RECORD),
                ..Rule::default()
            }
        } else {
            Rule {
                record: Some(rule.record.map_or(MAX_RECORD, |c| c.min(MAX_RECORD))),
                ..rule
            }
        };
        Records {
            input,
            codec,
            path,
            at: at.clone(),
            what,
            rule,
            max,
            stored: length,
            buf,
            filled: 0,
            start: 0,
            base: 0,
            records: 0,
            pending: None,
            // An empty region holds no stream (and no record).
            ended: length == 0,
        }
    }

    /// Where the next record starts, in the region's bytes (inflated).
    pub(crate) fn pos(&self) -> usize {
        usize::try_from(self.here()).unwrap_or(usize::MAX)
    }

    fn here(&self) -> u64 {
        self.base.saturating_add(self.start as u64)
    }

    /// The next record: its position in the region's bytes (inflated) and
    /// its bytes, valid until the next call; `None` at the region's end.
    ///
    /// # Errors
    /// A located [`LoadError::Corrupt`] for a record the region's rule or
    /// framing refuses, a stream that does not inflate, or the read's own
    /// error.
    pub(crate) fn next(&mut self) -> Result<Option<(usize, &[u8])>, LoadError> {
        Ok(self.next_framed()?.map(|(pos, _, body)| (pos, body)))
    }

    /// As [`next`](Self::next), with where the record ends (its length
    /// prefix and bytes included).
    pub(crate) fn next_framed(&mut self) -> Result<Option<Framed<'_>>, LoadError> {
        loop {
            let have = self.filled.saturating_sub(self.start);
            let (w, len) = match self.pending {
                Some(p) => p,
                None => {
                    let rest = self.buf.get(self.start..self.filled).unwrap_or_default();
                    if rest.is_empty() {
                        if self.ended {
                            return Ok(None);
                        }
                        self.fill(0)?;
                        continue;
                    }
                    match read_varint(rest) {
                        None if rest.len() < 10 && !self.ended => {
                            self.fill(0)?;
                            continue;
                        }
                        None => return Err(self.bad_prefix()),
                        Some((len, w)) => {
                            let p = self.check(len, w)?;
                            self.pending = Some(p);
                            p
                        }
                    }
                }
            };
            let need = w.saturating_add(len);
            if have >= need {
                let (from, to) = (
                    self.start.saturating_add(w),
                    self.start.saturating_add(need),
                );
                let pos = self.pos();
                self.start = to;
                self.pending = None;
                let end = self.pos();
                let body = self.buf.get(from..to).unwrap_or_default();
                return Ok(Some((pos, end, body)));
            }
            if self.ended {
                return Err(self.runs_past_the_end());
            }
            self.fill(need.saturating_sub(have))?;
        }
    }

    /// Checks the length prefix of the record at `start` (`len` bytes, a
    /// prefix of `w`) against the rule; returns them as `usize`.
    fn check(&mut self, len: u64, w: usize) -> Result<(usize, usize), LoadError> {
        let r = self.rule;
        let (n, at) = (self.records, self.here());
        let plain = self.codec == Codec::None;
        let cap = r.record.unwrap_or(MAX_RECORD);
        if len > cap {
            let why = if plain {
                // The one bound of a plain region, worded as `Delimited`
                // words it for the pieces read whole.
                "a record declares more than the 64 MiB one may hold".to_string()
            } else {
                format!("record {n} at byte {at} of the inflated stream declares {len} bytes, more than the {cap} one may hold")
            };
            return Err(self.refuse(at, why));
        }
        let end = at.saturating_add(w as u64).saturating_add(len);
        if plain {
            if end > self.max {
                return Err(self.runs_past_the_end());
            }
        } else {
            if len == 0 && r.empty_from.is_some_and(|e| n >= e) {
                return Err(self.refuse(at, format!(
                    "record {n} at byte {at} of the inflated stream is empty (each record of this section has content)"
                )));
            }
            let max = r.bytes.map_or(self.max, |b| b.min(self.max));
            if end > max {
                let why = if r.bytes.is_some_and(|b| b <= self.max) {
                    format!(" (the bound from {})", r.basis)
                } else {
                    String::new()
                };
                return Err(self.refuse(at, format!(
                    "record {n} at byte {at} of the inflated stream declares {len} bytes, past the {max} bytes the stream may inflate to{why}"
                )));
            }
        }
        self.records = n.saturating_add(1);
        if let Some(b) = r.records.filter(|&b| self.records > b) {
            return Err(self.refuse(
                at,
                format!(
                    "more than {b} records (the count {} allows) at byte {at} of the inflated stream",
                    r.basis
                ),
            ));
        }
        // len <= MAX_RECORD, which fits.
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        Ok((w, len))
    }

    /// Lets go of the records handed out and reads at least a chunk more
    /// (`more`: the bytes the record being read still lacks, read at once).
    fn fill(&mut self, more: usize) -> Result<(), LoadError> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.filled, 0);
            self.base = self.here();
            self.filled = self.filled.saturating_sub(self.start);
            self.start = 0;
        }
        let step = if self.codec == Codec::None {
            BLOCK
        } else {
            CHUNK
        };
        let mut want = step.max(more);
        // The most bytes the region can still give (its length, plain; what
        // its stored bytes can inflate to, compressed).
        let out = self.base.saturating_add(self.filled as u64);
        let left = usize::try_from(self.max.saturating_sub(out)).unwrap_or(usize::MAX);
        // No more than the region can still give (a byte past it, when it
        // has none left: the read that finds its end, or a stream that
        // inflates past what its bytes can hold).
        want = want.min(left.max(1));
        let end = self.filled.saturating_add(want);
        if self.buf.len() < end {
            // What the record being read needs and a step more (a buffer
            // grown by doubling would hold twice a large record; one grown
            // to the byte would move its bytes at each new longest tail),
            // never more than the region can still give: a small section
            // or a chunk gets a window of its size, not a block's. (A
            // window of a block freed after a section of a few bytes
            // raised glibc's mmap threshold to 4 MiB at the image's open:
            // every later buffer under that size came from the arenas,
            // which kept them once freed, 30 MB more at 5M inodes.)
            if self.buf.capacity() < end {
                let most = self.filled.saturating_add(left.max(1));
                let room = end.saturating_add(step).min(most).max(end);
                self.buf.reserve_exact(room.saturating_sub(self.buf.len()));
            }
            self.buf.resize(end, 0);
        }
        let dst = self.buf.get_mut(self.filled..end).unwrap_or_default();
        let got = match self.input.read(dst) {
            Ok(g) => g,
            Err(e) => {
                if let Some(failed) = self.input.source().and_then(Source::take_error) {
                    return Err(failed);
                }
                let why = format!(
                    "{} stream: {e} (after {} bytes of output)",
                    self.codec.name(),
                    self.base.saturating_add(self.filled as u64)
                );
                return Err(self.corrupt(self.at.clone(), why));
            }
        };
        if got == 0 {
            self.ended = true;
            return Ok(());
        }
        let out = self
            .base
            .saturating_add(self.filled as u64)
            .saturating_add(got as u64);
        if out > self.max {
            let why = format!(
                "{} stream inflates past {} bytes, more than {} compressed bytes can hold",
                self.codec.name(),
                self.max,
                self.stored
            );
            return Err(self.corrupt(self.at.clone(), why));
        }
        self.filled = self.filled.saturating_add(got);
        Ok(())
    }

    fn bad_prefix(&self) -> LoadError {
        let at = self.here();
        let why = if self.codec == Codec::None {
            "a record's length prefix is not a varint".to_string()
        } else {
            format!(
                "record {} at byte {at} of the inflated stream: the length prefix is not a varint",
                self.records
            )
        };
        self.refuse(at, why)
    }

    fn runs_past_the_end(&self) -> LoadError {
        let at = self.here();
        let why = if self.codec == Codec::None {
            "a record runs past the end of its section".to_string()
        } else {
            format!(
                "a record runs past the end of its section (byte {at} of the inflated {})",
                self.what
            )
        };
        self.refuse(at, why)
    }

    /// A record's error: a plain region's at the record's offset in the
    /// file, a compressed one's at the region (`why` names the inflated
    /// byte).
    fn refuse(&self, pos: u64, why: String) -> LoadError {
        let mut at = self.at.clone();
        if self.codec == Codec::None {
            at.offset = at.offset.saturating_add(pos);
        }
        self.corrupt(at, why)
    }

    fn corrupt(&self, at: Location, detail: String) -> LoadError {
        LoadError::Corrupt {
            path: self.path.to_path_buf(),
            at,
            detail,
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::unwrap_used
)]
mod tests {
    use super::*;
    use flate2::write::{GzEncoder, ZlibEncoder};
    use std::io::Write;

    fn delimited(bodies: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for b in bodies {
            prost::encoding::encode_varint(b.len() as u64, &mut out);
            out.extend_from_slice(b);
        }
        out
    }

    fn zlib(bytes: &[u8]) -> Vec<u8> {
        let mut e = ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    /// Every record of `stored` (each body and position), or the error.
    fn all(stored: &[u8], codec: Codec, rule: Rule) -> Result<Vec<(usize, Vec<u8>)>, String> {
        let mut buf = Vec::new();
        let at = Location::at(100);
        let path = Path::new("img");
        let mut r = Records::new(
            stored,
            stored.len() as u64,
            codec,
            rule,
            path,
            &at,
            "piece",
            &mut buf,
        );
        let mut out = Vec::new();
        loop {
            match r.next() {
                Ok(Some((pos, body))) => out.push((pos, body.to_vec())),
                Ok(None) => return Ok(out),
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    #[test]
    fn records_come_out_of_every_codec_and_of_concatenated_streams() {
        let big = vec![7u8; 600 << 10];
        let plain = delimited(&[b"hello", b"", &big, b"world"]);
        let want = vec![
            (0, b"hello".to_vec()),
            (6, Vec::new()),
            (7, big.clone()),
            (7 + 3 + big.len(), b"world".to_vec()),
        ];
        assert_eq!(all(&plain, Codec::None, Rule::default()).unwrap(), want);
        assert_eq!(
            all(&zlib(&plain), Codec::Zlib, Rule::default()).unwrap(),
            want
        );
        assert_eq!(
            all(&gzip(&plain), Codec::Gzip, Rule::default()).unwrap(),
            want
        );
        // Two zlib streams, one after the other; two gzip members.
        let (a, b) = plain.split_at(8);
        let mut two = zlib(a);
        two.extend(zlib(b));
        assert_eq!(all(&two, Codec::Zlib, Rule::default()).unwrap(), want);
        let mut two = gzip(a);
        two.extend(gzip(b));
        assert_eq!(all(&two, Codec::Gzip, Rule::default()).unwrap(), want);
        assert_eq!(all(&[], Codec::Zlib, Rule::default()).unwrap(), vec![]);
    }

    #[test]
    fn broken_streams_and_frames_are_refused_where_they_are() {
        let plain = delimited(&[b"hello", b"world"]);
        let z = zlib(&plain);
        // Cut short, garbage after a stream, garbage alone.
        let e = all(&z[..z.len() - 3], Codec::Zlib, Rule::default()).unwrap_err();
        assert!(e.contains("zlib stream"), "{e}");
        let mut after = z.clone();
        after.extend_from_slice(b"garbage!");
        assert!(all(&after, Codec::Zlib, Rule::default()).is_err());
        assert!(all(b"garbage!", Codec::Zlib, Rule::default()).is_err());
        // A record past the end: plain, at its offset in the file.
        let cut = &plain[..plain.len() - 1];
        let e = all(cut, Codec::None, Rule::default()).unwrap_err();
        assert!(e.contains("runs past the end"), "{e}");
        assert!(e.contains("offset 106"), "{e}");
        let e = all(&zlib(cut), Codec::Zlib, Rule::default()).unwrap_err();
        assert!(e.contains("byte 6 of the inflated piece"), "{e}");
        // A prefix that is no varint.
        let e = all(&[0xff; 12], Codec::None, Rule::default()).unwrap_err();
        assert!(e.contains("not a varint"), "{e}");
    }

    #[test]
    fn a_compressed_region_is_held_to_its_rule_as_it_inflates() {
        // A bomb of zeros (empty records): refused at its first record
        // from `empty_from`, long before the stream is inflated.
        let zeros = zlib(&vec![0u8; 64 << 20]);
        let e = all(&zeros, Codec::Zlib, Rule::headed(None, "h")).unwrap_err();
        assert!(e.contains("record 1 at byte 1"), "{e}");
        assert!(e.contains("is empty"), "{e}");
        // More records than the count allows.
        let three = zlib(&delimited(&[b"a", b"b", b"c"]));
        let e = all(&three, Codec::Zlib, Rule::entries(2, None, "the count")).unwrap_err();
        assert!(e.contains("more than 2 records"), "{e}");
        // A record larger than one may be: refused before its bytes are
        // inflated; the same record plain is held to MAX_RECORD only.
        let one = delimited(&[&[1u8; 100]]);
        let e = all(&zlib(&one), Codec::Zlib, Rule::entries(9, Some(50), "b")).unwrap_err();
        assert!(e.contains("more than the 50 one may hold"), "{e}");
        assert_eq!(
            all(&one, Codec::None, Rule::entries(9, Some(50), "b"))
                .unwrap()
                .len(),
            1
        );
        // A prefix declaring more than MAX_RECORD, whatever the rule.
        let mut huge = Vec::new();
        prost::encoding::encode_varint(MAX_RECORD + 1, &mut huge);
        huge.extend_from_slice(&[0u8; 16]);
        let e = all(&huge, Codec::None, Rule::default()).unwrap_err();
        assert!(e.contains("more than the 64 MiB one may hold"), "{e}");
        // The stream inflating past what its stored bytes can.
        let mut buf = Vec::new();
        let at = Location::at(0);
        let z = zlib(&delimited(&[&[3u8; 1000][..]; 100]));
        let mut r = Records::new(
            &z[..],
            2,
            Codec::Zlib,
            Rule::default(),
            Path::new("x"),
            &at,
            "piece",
            &mut buf,
        );
        // The records inside what 2 bytes may inflate to come out; the
        // first that reaches past it (or the read past it) fails.
        let e = loop {
            match r.next() {
                Ok(Some(_)) => {}
                Ok(None) => panic!("the stream inflated past its bound unseen"),
                Err(e) => break e.to_string(),
            }
        };
        assert!(
            e.contains("more than 2 compressed bytes can hold")
                || e.contains("bytes the stream may inflate to"),
            "{e}"
        );
    }

    /// A region smaller than a block or a chunk gets a window of its size:
    /// a window of a block for a section of a few bytes, freed, raised
    /// glibc's mmap threshold for the rest of the process (see `fill`).
    #[test]
    fn a_small_region_gets_a_window_of_its_size() {
        let plain = delimited(&[b"hello", b"world"]);
        let z = zlib(&plain);
        for (stored, codec) in [(&plain, Codec::None), (&z, Codec::Zlib)] {
            let mut buf = Vec::new();
            let at = Location::at(0);
            let mut r = Records::new(
                &stored[..],
                stored.len() as u64,
                codec,
                Rule::default(),
                Path::new("x"),
                &at,
                "section",
                &mut buf,
            );
            while r.next().unwrap().is_some() {}
            let most = codec
                .max_output(stored.len() as u64)
                .max(plain.len() as u64);
            assert!(buf.capacity() as u64 <= most, "{}", buf.capacity());
        }
        // A plain chunk of the streamed rows (about 2 MiB): a window of
        // its size, not of a block and a block more.
        let rec = delimited(&[&[5u8; 100]]);
        let chunk: Vec<u8> = rec.repeat((2 << 20) / rec.len());
        let mut buf = Vec::new();
        let at = Location::at(0);
        let mut r = Records::new(
            &chunk[..],
            chunk.len() as u64,
            Codec::None,
            Rule::default(),
            Path::new("x"),
            &at,
            "piece",
            &mut buf,
        );
        let mut n = 0;
        while r.next().unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, chunk.len() / rec.len());
        assert!(buf.capacity() <= chunk.len(), "{}", buf.capacity());
    }

    /// What the window holds never grows with the region: a chunk and the
    /// record being read.
    #[test]
    fn the_window_holds_a_chunk_and_a_record() {
        let rec = delimited(&[&[9u8; 1000]]);
        let mut e = ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        for _ in 0..(64 << 20) / rec.len() {
            e.write_all(&rec).unwrap();
        }
        let z = e.finish().unwrap();
        let mut buf = Vec::new();
        let at = Location::at(0);
        let mut r = Records::new(
            &z[..],
            z.len() as u64,
            Codec::Zlib,
            Rule::default(),
            Path::new("x"),
            &at,
            "piece",
            &mut buf,
        );
        let mut n = 0usize;
        while let Some((_, body)) = r.next().unwrap() {
            assert_eq!(body.len(), 1000);
            n += 1;
        }
        assert_eq!(n, (64 << 20) / rec.len());
        assert!(buf.capacity() <= 2 * CHUNK, "{}", buf.capacity());
    }
}
