//! A Hadoop image's sections as the delimited protobuf messages they store,
//! decoded with prost one at a time as they come out of the file (read in
//! blocks or inflated a chunk at a time, as [`inflate`](super::inflate)
//! bounds them), for a reader that prints an image as it is stored
//! (`dump --format xml` of a Hadoop image, OIV's view) and for the small
//! sections the load decodes whole.

use super::file::{HdfsFile, Stored};
use super::inflate::Records;
use super::md5::{self, Md5Check, Md5Policy};
use super::strings::{decode_strings, StringIds};
use crate::error::LoadError;
use nsimage_format::hdfs::{HdfsSection, StringTag, SummarySection};
use nsimage_namespace::StringTable;
use prost::Message;
use std::path::Path;

/// The delimited messages of one section, each decoded with prost as it
/// comes out of the file (inflated a chunk at a time: a bad message is
/// refused before the rest of the section is inflated).
pub struct Messages<'a> {
    f: &'a HdfsFile,
    sec: SummarySection,
    recs: Records<'a, Stored<'a>>,
}

impl<'a> Messages<'a> {
    /// The messages of section `s`, or `None` if the image has none;
    /// `buf` is the window.
    pub(crate) fn of(f: &'a HdfsFile, s: HdfsSection, buf: &'a mut Vec<u8>) -> Option<Self> {
        let sec = f.summary.find(s).cloned()?;
        Some(Self::at(f, sec, buf))
    }

    /// The messages of the summary's entry `sec`.
    pub(crate) fn at(f: &'a HdfsFile, sec: SummarySection, buf: &'a mut Vec<u8>) -> Self {
        let recs = f.records(sec.offset, sec.length, &sec.at(), "section", buf);
        Messages { f, sec, recs }
    }

    /// A `Corrupt` error at byte `pos` of the section (of its inflated
    /// bytes, with a codec).
    pub fn err(&self, pos: usize, why: String) -> LoadError {
        corrupt_at(self.f, &self.sec, pos, why)
    }

    /// The next message's bytes, undecoded, and where it starts; `None` at
    /// the section's end.
    ///
    /// # Errors
    /// A length past the section, the file's or the inflation's errors.
    pub fn next_raw(&mut self) -> Result<Option<(usize, &[u8])>, LoadError> {
        self.recs.next()
    }

    /// Where the next message starts.
    pub fn pos(&self) -> usize {
        self.recs.pos()
    }

    /// The next message, decoded as `M`; `None` at the section's end;
    /// `what` names it in errors.
    ///
    /// # Errors
    /// A message that does not decode, a length past the section.
    pub fn next<M: Message + Default>(&mut self, what: &str) -> Result<Option<M>, LoadError> {
        let decoded = match self.recs.next()? {
            None => return Ok(None),
            Some((pos, body)) => (pos, M::decode(body)),
        };
        match decoded {
            (_, Ok(m)) => Ok(Some(m)),
            (pos, Err(e)) => Err(self.err(pos, format!("{what} does not decode: {e}"))),
        }
    }

    /// The next message, which must be there.
    ///
    /// # Errors
    /// As [`next`](Self::next); the section's end.
    pub fn must<M: Message + Default>(&mut self, what: &str) -> Result<M, LoadError> {
        let pos = self.pos();
        self.next(what)?
            .ok_or_else(|| self.err(pos, format!("the section ends before {what}")))
    }

    /// `n`, a count of messages the section declares, if its stored bytes
    /// could hold them (each message takes at least one byte); with a
    /// codec the inflation's rule bounds them as they come.
    ///
    /// # Errors
    /// A count the section cannot hold.
    pub fn bound(&self, n: u64, what: &str) -> Result<u64, LoadError> {
        let bytes = self.sec.length;
        if self.f.summary.codec == nsimage_format::hdfs::Codec::None && n > bytes {
            return Err(self.err(
                self.pos(),
                format!("{n} {what} cannot fit in {bytes} bytes"),
            ));
        }
        Ok(n)
    }
}

/// A `Corrupt` error at byte `pos` of section `sec` (of its inflated
/// bytes, with a codec).
fn corrupt_at(f: &HdfsFile, sec: &SummarySection, pos: usize, why: String) -> LoadError {
    let mut at = sec.at();
    if f.summary.codec == nsimage_format::hdfs::Codec::None {
        at.offset = at.offset.saturating_add(pos as u64);
        f.corrupt(at, why)
    } else {
        f.corrupt(at, format!("{why} (byte {pos} of the inflated section)"))
    }
}

/// A Hadoop image opened to be read section by section as it is stored:
/// its summary, its string table, and its `.md5` sidecar's check, hashed
/// on its own thread while the sections are read.
pub struct HdfsSections {
    f: HdfsFile,
    strings: StringTable,
    ids: StringIds,
    md5: Option<Md5Check>,
}

impl HdfsSections {
    /// Opens `path`: reads the summary and STRING_TABLE, and starts the
    /// sidecar's check if `md5` checks it.
    ///
    /// # Errors
    /// What a load refuses in those parts; a sidecar naming another file.
    pub fn open(path: &Path, md5: Md5Policy) -> Result<HdfsSections, LoadError> {
        let f = HdfsFile::open(path)?;
        let (strings, ids) = decode_strings(&f)?;
        let md5 = md5::start(path, md5)?;
        Ok(HdfsSections {
            f,
            strings,
            ids,
            md5,
        })
    }

    /// The image's path.
    pub fn path(&self) -> &Path {
        self.f.path()
    }

    /// The summary's layout version (negative, as Hadoop numbers them).
    pub fn layout_version(&self) -> i32 {
        self.f.summary.layout_version
    }

    /// The summary's `ondiskVersion`.
    pub fn ondisk_version(&self) -> u32 {
        self.f.summary.ondisk_version
    }

    /// The summary's entries in the order of Hadoop's `SectionName` (the
    /// order OIV visits them in; a stable sort, so pieces of a section
    /// keep theirs), entries of names Hadoop does not define left out.
    pub fn in_hadoop_order(&self) -> Vec<SummarySection> {
        let rank = |s: &SummarySection| HdfsSection::ALL.iter().position(|k| *k == s.section);
        let mut list: Vec<(usize, SummarySection)> = self
            .f
            .summary
            .sections
            .iter()
            .filter_map(|s| Some((rank(s)?, s.clone())))
            .collect();
        list.sort_by_key(|(r, _)| *r);
        list.into_iter().map(|(_, s)| s).collect()
    }

    /// The pieces of section `sec`: its sub-sections (HDFS-14617), or the
    /// section whole.
    ///
    /// # Errors
    /// Sub-sections outside their section.
    pub fn pieces(&self, sec: &SummarySection) -> Result<Vec<SummarySection>, LoadError> {
        let subs = self
            .f
            .summary
            .sub_sections(sec)
            .map_err(|e| self.f.fmt(e))?;
        Ok(if subs.is_empty() {
            vec![sec.clone()]
        } else {
            subs
        })
    }

    /// The messages of the summary's entry `sec`; `buf` is the window.
    pub fn messages<'a>(&'a self, sec: &SummarySection, buf: &'a mut Vec<u8>) -> Messages<'a> {
        Messages::at(&self.f, sec.clone(), buf)
    }

    /// A `Corrupt` error at byte `pos` of section `sec` (of its inflated
    /// bytes, with a codec), for a message read with
    /// [`Messages::next_raw`] and decoded elsewhere.
    pub fn corrupt_at(&self, sec: &SummarySection, pos: usize, why: String) -> LoadError {
        corrupt_at(&self.f, sec, pos, why)
    }

    /// The name of serial id `serial` in table `tag` (user, group or
    /// xattr name), as the string table holds it; serial 0 is the empty
    /// name; `None` for an id the table lacks.
    pub fn name(&self, tag: StringTag, serial: u32) -> Option<&[u8]> {
        self.strings.get(self.ids.get(tag, serial)?)
    }

    /// The `.md5` sidecar's verdict, once every section is read (nothing
    /// without a sidecar, or with the check off).
    ///
    /// # Errors
    /// A digest that differs, the file unreadable.
    pub fn finish(mut self) -> Result<(), LoadError> {
        match self.md5.take() {
            Some(c) => c.finish(self.f.path()).map(|_| ()),
            None => Ok(()),
        }
    }
}
