//! The byte sink of a Hadoop fsimage: counts and hashes (MD5) every byte
//! as it goes out, frames each section (or sub-section) as its own
//! compressed stream when the image has a codec, and records the
//! FileSummary's entries as sections are committed.
//!
//! Records are encoded into a buffer and handed on in large pieces, so the
//! hash and the compressor see few, large writes; streams are deflated in
//! parallel chunks (`deflate`); memory stays bounded by that buffer and
//! the compressor's window, whatever the image's size.

use super::deflate::{Framing, ParStream};
use super::options::HdfsCodec;
use super::summary::HdfsSection;
use md5::{Digest as _, Md5};
use std::io::{self, Write};

/// Encoded records are handed on once this many bytes are buffered.
const PUMP_BYTES: usize = 256 << 10;

/// A writer that counts and MD5-hashes what passes through it.
pub(crate) struct Hashing<W: Write> {
    inner: W,
    md5: Md5,
    pos: u64,
}

impl<W: Write> Hashing<W> {
    fn new(inner: W) -> Self {
        Hashing {
            inner,
            md5: Md5::new(),
            pos: 0,
        }
    }

    /// Bytes written so far.
    pub(crate) fn pos(&self) -> u64 {
        self.pos
    }

    /// Flushes the output; returns the MD5 of all bytes and their count.
    fn finish(mut self) -> io::Result<([u8; 16], u64)> {
        self.inner.flush()?;
        Ok((self.md5.finalize().into(), self.pos))
    }
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.md5.update(&buf[..n]);
        self.pos += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The framing of `codec`'s streams; `None` without compression.
fn framing(codec: HdfsCodec) -> Option<Framing> {
    match codec {
        HdfsCodec::None => None,
        HdfsCodec::Zlib => Some(Framing::Zlib),
        HdfsCodec::Gzip => Some(Framing::Gzip),
    }
}

/// The image being written: the file, the section being written and the
/// summary entries committed so far.
pub(crate) struct ImageSink<W: Write> {
    out: Hashing<W>,
    codec: HdfsCodec,
    /// Encoded records not yet handed to the stream or the file.
    buf: Vec<u8>,
    /// The open compressed stream, if any.
    stream: Option<ParStream>,
    section_start: u64,
    sub_start: u64,
    /// Uncompressed bytes in the current sub-section.
    raw_in_sub: u64,
    sections: Vec<HdfsSection>,
}

impl<W: Write> ImageSink<W> {
    pub(crate) fn new(out: W, codec: HdfsCodec) -> Self {
        ImageSink {
            out: Hashing::new(out),
            codec,
            buf: Vec::with_capacity(PUMP_BYTES + (64 << 10)),
            stream: None,
            section_start: 0,
            sub_start: 0,
            raw_in_sub: 0,
            sections: Vec::new(),
        }
    }

    /// Writes bytes outside any section (the magic); the next section
    /// starts after them.
    pub(crate) fn write_raw(&mut self, b: &[u8]) -> io::Result<()> {
        debug_assert!(self.buf.is_empty() && self.stream.is_none());
        self.out.write_all(b)?;
        self.section_start = self.out.pos();
        self.sub_start = self.section_start;
        Ok(())
    }

    /// Appends one varint-delimited message to the current section.
    pub(crate) fn record(&mut self, m: &impl prost::Message) -> io::Result<()> {
        let before = self.buf.len();
        m.encode_length_delimited(&mut self.buf)
            .map_err(|e| io::Error::other(format!("encoding a record: {e}")))?;
        self.raw_in_sub += (self.buf.len() - before) as u64;
        self.pump()
    }

    /// Appends one message given as its encoded body, with its varint
    /// length in front.
    pub(crate) fn record_body(&mut self, body: &[u8]) -> io::Result<()> {
        let before = self.buf.len();
        prost::encoding::encode_varint(body.len() as u64, &mut self.buf);
        self.buf.extend_from_slice(body);
        self.raw_in_sub += (self.buf.len() - before) as u64;
        self.pump()
    }

    /// Appends records already varint-delimited.
    pub(crate) fn append(&mut self, records: &[u8]) -> io::Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        self.raw_in_sub += records.len() as u64;
        if self.buf.is_empty() && records.len() >= PUMP_BYTES {
            // Large pieces go on without a copy through the buffer.
            return self.hand_on(records);
        }
        self.buf.extend_from_slice(records);
        self.pump()
    }

    fn pump(&mut self) -> io::Result<()> {
        if self.buf.len() >= PUMP_BYTES {
            self.drain()?;
        }
        Ok(())
    }

    /// Hands buffered records on.
    fn drain(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let buf = std::mem::take(&mut self.buf);
        let r = self.hand_on(&buf);
        self.buf = buf;
        self.buf.clear();
        r
    }

    /// Hands bytes to the open stream (opened on first use) or, without a
    /// codec, to the file; compressed output goes to the file in large
    /// pieces.
    fn hand_on(&mut self, b: &[u8]) -> io::Result<()> {
        let Some(f) = framing(self.codec) else {
            return self.out.write_all(b);
        };
        if self.stream.is_none() {
            self.stream = Some(ParStream::start(f, &mut self.out)?);
        }
        match self.stream.as_mut() {
            Some(s) => s.write(b, &mut self.out),
            None => Ok(()),
        }
    }

    /// Ends the open stream (if any) and writes what is left of it.
    fn end_stream(&mut self) -> io::Result<()> {
        self.drain()?;
        match self.stream.take() {
            Some(s) => s.finish(&mut self.out),
            None => Ok(()),
        }
    }

    /// Writes an empty compressed stream outside any section, as Hadoop
    /// leaves one between the last section and the FileSummary of a
    /// compressed image (its saver opens a stream after the last section
    /// and finishes it before writing the summary).
    pub(crate) fn empty_stream(&mut self) -> io::Result<()> {
        debug_assert!(self.buf.is_empty() && self.stream.is_none());
        if let Some(f) = framing(self.codec) {
            ParStream::start(f, &mut self.out)?.finish(&mut self.out)?;
        }
        self.section_start = self.out.pos();
        self.sub_start = self.section_start;
        Ok(())
    }

    /// Ends the current sub-section named `name` (its own stream when
    /// compressed) and lists it; an empty one is not listed, as Hadoop
    /// skips them.
    pub(crate) fn cut_sub(&mut self, name: &str) -> io::Result<()> {
        if self.raw_in_sub == 0 {
            return Ok(());
        }
        self.end_stream()?;
        let pos = self.out.pos();
        self.sections.push(HdfsSection {
            name: name.to_owned(),
            offset: self.sub_start,
            length: pos - self.sub_start,
        });
        self.sub_start = pos;
        self.raw_in_sub = 0;
        Ok(())
    }

    /// Ends the current section named `name` and lists it. A compressed
    /// empty section is an empty stream, as Hadoop writes it.
    pub(crate) fn commit(&mut self, name: &str) -> io::Result<()> {
        self.drain()?;
        if self.stream.is_none() && self.out.pos() == self.section_start {
            if let Some(f) = framing(self.codec) {
                self.stream = Some(ParStream::start(f, &mut self.out)?);
            }
        }
        self.end_stream()?;
        let pos = self.out.pos();
        self.sections.push(HdfsSection {
            name: name.to_owned(),
            offset: self.section_start,
            length: pos - self.section_start,
        });
        self.section_start = pos;
        self.sub_start = pos;
        self.raw_in_sub = 0;
        Ok(())
    }

    /// Bytes written to the file so far.
    pub(crate) fn pos(&self) -> u64 {
        self.out.pos()
    }

    /// The entries committed so far.
    pub(crate) fn sections(&self) -> &[HdfsSection] {
        &self.sections
    }

    /// Writes the tail (summary bytes given), flushes; returns the MD5,
    /// the byte count and the entries.
    pub(crate) fn finish(mut self, tail: &[u8]) -> io::Result<([u8; 16], u64, Vec<HdfsSection>)> {
        debug_assert!(self.buf.is_empty() && self.stream.is_none());
        self.out.write_all(tail)?;
        let (md5, bytes) = self.out.finish()?;
        Ok((md5, bytes, self.sections))
    }
}
