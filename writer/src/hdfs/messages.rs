//! A Hadoop fsimage written from messages a caller builds itself, section
//! by section (what `convert DUMP.xml --to hdfs` writes from OIV's XML):
//! the magic, each section's varint-delimited messages (each section its
//! own compressed stream with a codec), then the FileSummary listing the
//! sections in the order they were committed, its length, and the MD5 of
//! every byte, as [`write_hdfs_image`](super::write_hdfs_image) writes
//! them. The caller decides what the sections hold; this writes what it
//! is given, checking the layout version and each message's length.

use super::image::{write_summary, HDFS_MAGIC};
use super::options::{HdfsCodec, NEWEST_LAYOUT_VERSION, OLDEST_LAYOUT_VERSION};
use super::sink::ImageSink;
use super::summary::HdfsWritten;
use nsimage_format::hdfs::MAX_MESSAGE_BYTES;
use std::io::{self, Write};

/// A Hadoop fsimage being written message by message.
pub struct HdfsMessageWriter<W: Write> {
    sink: ImageSink<W>,
    layout_version: i32,
    codec: HdfsCodec,
}

impl<W: Write> HdfsMessageWriter<W> {
    /// Starts an image of layout version `layout_version` (negative, as
    /// Hadoop numbers them) with `codec` on `out`: writes the magic.
    ///
    /// # Errors
    /// `out`'s; [`io::ErrorKind::InvalidInput`] for a layout version
    /// outside [`OLDEST_LAYOUT_VERSION`]..=[`NEWEST_LAYOUT_VERSION`].
    pub fn new(out: W, layout_version: i32, codec: HdfsCodec) -> io::Result<Self> {
        if !(NEWEST_LAYOUT_VERSION..=OLDEST_LAYOUT_VERSION).contains(&layout_version) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "layout version {layout_version} is not one the HDFS writer knows ({OLDEST_LAYOUT_VERSION} to {NEWEST_LAYOUT_VERSION})"
                ),
            ));
        }
        let mut sink = ImageSink::new(out, codec);
        sink.write_raw(HDFS_MAGIC)?;
        Ok(HdfsMessageWriter {
            sink,
            layout_version,
            codec,
        })
    }

    /// Appends one message, given as its encoded body, to the section
    /// being written (the writer puts its varint length in front).
    ///
    /// # Errors
    /// `out`'s; [`io::ErrorKind::InvalidInput`] for a body longer than
    /// readers take ([`MAX_MESSAGE_BYTES`]), before a byte of it is written.
    pub fn message(&mut self, body: &[u8]) -> io::Result<()> {
        if body.len() as u64 > MAX_MESSAGE_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a message of {} bytes: readers take at most {MAX_MESSAGE_BYTES}",
                    body.len()
                ),
            ));
        }
        self.sink.record_body(body)
    }

    /// Ends the section being written and lists it in the summary under
    /// `name` (Hadoop's section name: `NS_INFO`, `INODE`, ...).
    ///
    /// # Errors
    /// `out`'s.
    pub fn commit(&mut self, name: &str) -> io::Result<()> {
        self.sink.commit(name)
    }

    /// Writes the summary and flushes: what was written (the MD5 of every
    /// byte, for the `.md5` sidecar, and the sections; the counts of
    /// [`HdfsWritten`] are 0: what the messages are is the caller's).
    ///
    /// # Errors
    /// `out`'s.
    pub fn finish(self) -> io::Result<HdfsWritten> {
        let (md5, bytes, sections, summary_offset) =
            write_summary(self.sink, self.layout_version, self.codec)?;
        Ok(HdfsWritten {
            md5,
            bytes,
            sections,
            summary_offset,
            inodes: 0,
            dir_entries: 0,
            under_construction: 0,
            strings: 0,
        })
    }
}
