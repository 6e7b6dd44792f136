//! [`StreamWriter`]: an image written section by section from records its
//! caller encodes, in file order, with no namespace in memory. The caller
//! announces each section's size before its records (sub-sections are cut
//! by a target derived from it), and the writer checks what it is handed:
//! keys in the order the format requires and sizes as announced, so that a
//! wrong stream fails the write instead of making an image nsimage refuses.

use crate::encode::{Encoded, Size};
use crate::options::WriteOptions;
use crate::sections::{sub_section_target, write_index, ImageSummary, SectionOut, Sink};
use nsimage_format::consts::{header, name_index};
use nsimage_format::hdfs::SnapshotCarry;
use nsimage_format::{pb, Header, SectionInfo, SectionKind};
use nsimage_namespace::NsInfo;
use prost::Message as _;
use std::io::{self, Write};

/// The section being written and what it was announced to hold.
struct Open {
    sec: SectionOut,
    /// Records and framed bytes announced; checked when it ends.
    size: Option<Size>,
    /// Its records' keys must rise strictly (INODE, INODE_DIR) or may repeat
    /// (the name index: every run of a parent is keyed by it).
    strict: bool,
    /// The last key written, if any.
    last: Option<u64>,
}

/// Writes an image in file order: [`StreamWriter::new`] writes the header,
/// NS_INFO and STRING_TABLE; then INODE records ([`begin_inodes`]), the
/// optional name index ([`begin_name_runs`]), INODE_DIR records
/// ([`begin_dirs`]), each handed over in [`Encoded`] batches through
/// [`put`]; [`finish`] writes the index and footer.
///
/// [`begin_inodes`]: StreamWriter::begin_inodes
/// [`begin_name_runs`]: StreamWriter::begin_name_runs
/// [`begin_dirs`]: StreamWriter::begin_dirs
/// [`put`]: StreamWriter::put
/// [`finish`]: StreamWriter::finish
pub struct StreamWriter<W: Write> {
    sink: Sink<W>,
    sections: Vec<SectionInfo>,
    head: Header,
    /// Whether sections are cut into sub-sections.
    split: bool,
    /// Largest sub-section target.
    max_target: u64,
    legacy_name_index: bool,
    last_inode_id: u64,
    open: Option<Open>,
    /// The last section begun, in file order: STRING_TABLE, INODE, the
    /// name index, INODE_DIR.
    stage: SectionKind,
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

impl<W: Write> StreamWriter<W> {
    /// Starts an image on `out` laid out and stored as `opts` says, for a
    /// namespace with counters `info`, `live_inodes` live inodes and the
    /// canonical string table `strings` (FORMAT.md, "STRING_TABLE": the
    /// strings in use, sorted by bytes, each once; the INODE records the
    /// caller encodes use their positions from 1 as ids).
    ///
    /// # Errors
    /// The output's error; `InvalidInput` for a string table out of order.
    pub fn new<'s>(
        out: W,
        opts: &WriteOptions,
        info: &NsInfo,
        live_inodes: u64,
        strings: impl IntoIterator<Item = &'s [u8]>,
    ) -> io::Result<Self> {
        let head = Header {
            required_features: opts.at_rest.required_features(),
            ..Header::current()
        };
        let mut w = StreamWriter {
            sink: Sink::new(out, &opts.at_rest),
            sections: Vec::new(),
            head,
            split: live_inodes >= opts.sub_section_min_inodes,
            max_target: opts.sub_section_bytes,
            legacy_name_index: opts.legacy_name_index,
            last_inode_id: info.last_inode_id,
            open: None,
            stage: SectionKind::STRING_TABLE,
        };
        w.sink.raw(&w.head.encode())?;
        debug_assert_eq!(w.sink.pos, header::SIZE as u64);
        let mut enc = Encoded::default();
        enc.put(0, &pb::NsInfo::from(info));
        w.begin(SectionKind::NS_INFO, None, true, None)?;
        w.put(&enc)?;
        enc = Encoded::default();
        let mut entry = pb::StringEntry::default();
        let mut prev: Option<&[u8]> = None;
        for (k, s) in strings.into_iter().enumerate() {
            if prev.is_some_and(|p| p >= s) || s.is_empty() {
                return Err(invalid(format!(
                    "string {} of the table is empty or not above the one before",
                    k + 1
                )));
            }
            prev = Some(s);
            entry.value.clear();
            entry.value.extend_from_slice(s);
            enc.put(k as u64 + 1, &entry);
        }
        w.begin(SectionKind::STRING_TABLE, None, true, None)?;
        w.put(&enc)?;
        Ok(w)
    }

    /// Whether the sections are cut into sub-sections (the namespace has at
    /// least `sub_section_min_inodes` live inodes); when they are, every
    /// `begin_*` needs the section's size.
    pub fn split(&self) -> bool {
        self.split
    }

    /// Ends the open section and opens one of `kind`, cut into sub-sections
    /// of `target` bytes (`None`: not cut).
    fn begin(
        &mut self,
        kind: SectionKind,
        size: Option<Size>,
        strict: bool,
        target: Option<u64>,
    ) -> io::Result<()> {
        self.end()?;
        let sec = match target {
            Some(t) if matches!(kind, SectionKind::NAME_RUNS | SectionKind::NAME_INDEX) => {
                SectionOut::begin_names(&mut self.sink, &self.sections, kind, t)
            }
            t => SectionOut::begin(
                &mut self.sink,
                &self.sections,
                kind,
                t.is_some(),
                t.unwrap_or(0),
            ),
        };
        self.open = Some(Open {
            sec,
            size,
            strict,
            last: None,
        });
        Ok(())
    }

    /// Refuses to begin `kind` unless the last section begun is one of
    /// `after` (FORMAT.md's order: INODE, the optional name index,
    /// INODE_DIR, each once).
    fn in_order(&self, kind: SectionKind, after: &[SectionKind]) -> io::Result<()> {
        if !after.contains(&self.stage) {
            return Err(invalid(format!(
                "section {kind} begun after {}",
                self.stage
            )));
        }
        Ok(())
    }

    /// Opens INODE or INODE_DIR (`kind`), which is to hold `size`.
    fn begin_sized(&mut self, kind: SectionKind, size: Option<Size>) -> io::Result<()> {
        let target = match (self.split, size) {
            (false, _) => None,
            (true, Some(size)) => Some(sub_section_target(size.bytes, self.max_target)),
            (true, None) => {
                return Err(invalid(format!(
                    "section {kind} is cut into sub-sections but its size was not given"
                )))
            }
        };
        self.begin(kind, size, true, target)
    }

    /// Ends the open section, checking it holds what was announced.
    fn end(&mut self) -> io::Result<()> {
        let Some(open) = self.open.take() else {
            return Ok(());
        };
        let info = open.sec.end(&mut self.sink)?;
        if let Some(size) = open.size {
            if (info.records, info.plain_length()) != (size.records, size.bytes) {
                return Err(invalid(format!(
                    "section {} holds {} records in {} bytes; {} in {} were announced",
                    info.kind,
                    info.records,
                    info.plain_length(),
                    size.records,
                    size.bytes
                )));
            }
        }
        self.sections.push(info);
        Ok(())
    }

    /// Opens INODE, which is to hold `size` (needed when [`split`](Self::split)).
    ///
    /// # Errors
    /// The output's error; `InvalidInput` for a section cut without a size
    /// or one before it that is not as announced.
    pub fn begin_inodes(&mut self, size: Option<Size>) -> io::Result<()> {
        self.in_order(SectionKind::INODE, &[SectionKind::STRING_TABLE])?;
        self.begin_sized(SectionKind::INODE, size)?;
        self.stage = SectionKind::INODE;
        Ok(())
    }

    /// Opens the one-path lookup index (NAME_RUNS, or NAME_INDEX with
    /// `legacy_name_index`) when the image has one: when it is cut into
    /// sub-sections and every id fits the index's first keys. `false` when
    /// it has none (the caller then skips its records).
    ///
    /// # Errors
    /// As [`begin_inodes`](Self::begin_inodes).
    pub fn begin_name_runs(&mut self) -> io::Result<bool> {
        let kind = if self.legacy_name_index {
            SectionKind::NAME_INDEX
        } else {
            SectionKind::NAME_RUNS
        };
        if !self.split || self.last_inode_id > name_index::MAX_PARENT {
            return self
                .in_order(SectionKind::INODE, &[SectionKind::INODE])
                .map(|()| false);
        }
        self.in_order(kind, &[SectionKind::INODE])?;
        self.stage = kind;
        // Its own target, whatever its size.
        let target = name_index::TARGET_BYTES.min(self.max_target);
        self.begin(kind, None, false, Some(target))?;
        Ok(true)
    }

    /// Opens INODE_DIR, which is to hold `size` (needed when
    /// [`split`](Self::split)).
    ///
    /// # Errors
    /// As [`begin_inodes`](Self::begin_inodes).
    pub fn begin_dirs(&mut self, size: Option<Size>) -> io::Result<()> {
        self.in_order(
            SectionKind::INODE_DIR,
            &[
                SectionKind::INODE,
                SectionKind::NAME_RUNS,
                SectionKind::NAME_INDEX,
            ],
        )?;
        self.begin_sized(SectionKind::INODE_DIR, size)?;
        self.stage = SectionKind::INODE_DIR;
        Ok(())
    }

    /// Writes records into the open section.
    ///
    /// # Errors
    /// The output's error; `InvalidInput` when no section is open or a key
    /// breaks the section's order.
    pub fn put(&mut self, enc: &Encoded) -> io::Result<()> {
        let Some(open) = &mut self.open else {
            return Err(invalid("records written outside a section".into()));
        };
        for &(key, _) in &enc.records {
            let ordered = match open.last {
                None => true,
                Some(last) if open.strict => key > last,
                Some(last) => key >= last,
            };
            if !ordered {
                return Err(invalid(format!(
                    "section {}: key {key} after {}",
                    open.sec.info.kind,
                    open.last.unwrap_or_default()
                )));
            }
            open.last = Some(key);
        }
        open.sec.put(&mut self.sink, enc)
    }

    /// Ends the last section, writes the optional HDFS_SNAPSHOTS section
    /// (`carry`), the index and the footer, and flushes.
    ///
    /// # Errors
    /// As [`put`](Self::put); `InvalidData` for an index its reader would
    /// refuse.
    pub fn finish(mut self, carry: Option<&SnapshotCarry>) -> io::Result<ImageSummary> {
        if self.stage != SectionKind::INODE_DIR {
            return Err(invalid(format!(
                "an image ended after {}, before INODE_DIR",
                self.stage
            )));
        }
        self.end()?;
        if let Some(c) = carry {
            write_carry(&mut self.sink, &mut self.sections, c)?;
        }
        write_index(self.sink, self.sections, &self.head)
    }
}

/// The optional HDFS_SNAPSHOTS section: the carry `c` as one record.
fn write_carry<W: Write>(
    sink: &mut Sink<W>,
    sections: &mut Vec<SectionInfo>,
    c: &SnapshotCarry,
) -> io::Result<()> {
    let len = c.encoded_len() as u64;
    if len > nsimage_format::consts::MAX_RECORD_LENGTH {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("the snapshot carry of {len} bytes does not fit one record"),
        ));
    }
    let mut enc = Encoded::default();
    enc.put(0, c);
    let mut sec = SectionOut::begin(sink, sections, SectionKind::HDFS_SNAPSHOTS, false, 0);
    sec.info.optional = true;
    sec.put(sink, &enc)?;
    sections.push(sec.end(sink)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inode(id: u64) -> pb::Inode {
        pb::Inode {
            id,
            r#type: pb::InodeType::Directory as i32,
            ..pb::Inode::default()
        }
    }

    fn writer(live: u64, opts: &WriteOptions) -> StreamWriter<Vec<u8>> {
        StreamWriter::new(
            Vec::new(),
            opts,
            &NsInfo::default(),
            live,
            [&b"a"[..], b"b"],
        )
        .expect("into memory")
    }

    fn invalid_input(r: io::Result<impl std::fmt::Debug>) -> String {
        let e = r.expect_err("refused");
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
        e.to_string()
    }

    #[test]
    fn refuses_what_a_reader_would_refuse() {
        // A string table out of order.
        let r = StreamWriter::new(
            Vec::new(),
            &WriteOptions::default(),
            &NsInfo::default(),
            1,
            [&b"b"[..], b"a"],
        );
        assert!(invalid_input(r.map(|_| ())).contains("string 2"));
        // INODE keys that do not rise.
        let mut w = writer(2, &WriteOptions::default());
        w.begin_inodes(None).unwrap();
        let mut enc = Encoded::default();
        enc.put(16386, &inode(16386));
        enc.put(16385, &inode(16385));
        assert!(invalid_input(w.put(&enc)).contains("key 16385 after 16386"));
        // A cut section without its size, and one that is not as announced.
        let opts = WriteOptions {
            sub_section_min_inodes: 1,
            ..WriteOptions::default()
        };
        let mut w = writer(1, &opts);
        assert!(w.split());
        assert!(invalid_input(w.begin_inodes(None)).contains("size was not given"));
        let mut enc = Encoded::default();
        enc.put(16385, &inode(16385));
        let size = Size {
            records: 1,
            bytes: enc.bytes.len() as u64 + 1,
        };
        w.begin_inodes(Some(size)).unwrap();
        w.put(&enc).unwrap();
        assert!(invalid_input(w.begin_dirs(Some(Size::default()))).contains("were announced"));
        // Records outside a section.
        let mut w = writer(1, &WriteOptions::default());
        w.end().unwrap();
        assert!(invalid_input(w.put(&enc)).contains("outside a section"));
        // Sections out of FORMAT.md's order, or missing.
        let mut w = writer(1, &WriteOptions::default());
        assert!(invalid_input(w.begin_dirs(None)).contains("INODE_DIR begun after STRING_TABLE"));
        w.begin_inodes(None).unwrap();
        assert!(invalid_input(w.begin_inodes(None)).contains("INODE begun after INODE"));
        assert!(invalid_input(w.finish(None)).contains("before INODE_DIR"));
    }

    #[test]
    fn writes_what_write_image_writes() {
        let mut ns = nsimage_namespace::Namespace::default();
        let perm = nsimage_namespace::PermSpec {
            user: b"u",
            group: b"g",
            mode: 0o755,
        };
        ns.mkdirs(b"/a/b", &perm, 7).unwrap();
        let opts = WriteOptions::default();
        let mut want = Vec::new();
        crate::write_image(&ns, &mut want, &opts).unwrap();
        let mut bytes = Vec::new();
        let mut w = StreamWriter::new(&mut bytes, &opts, ns.info(), 3, [&b"g"[..], b"u"]).unwrap();
        w.begin_inodes(None).unwrap();
        let mut enc = Encoded::default();
        for n in ns.iter() {
            let mut msg = pb::Inode::default();
            crate::encode::fill_inode(
                &n,
                &crate::strings::StringMap::of(&ns, std::slice::from_ref(&(0..ns.slot_count()))).0,
                &mut msg,
            );
            enc.put(n.id(), &msg);
        }
        w.put(&enc).unwrap();
        assert!(!w.begin_name_runs().unwrap(), "too small to be cut");
        w.begin_dirs(None).unwrap();
        let mut enc = Encoded::default();
        for n in ns.iter().filter(|n| !n.child_slots().is_empty()) {
            enc.put_dir(n.id(), n.child_slots().iter().map(|c| ns.id_of(c)));
        }
        w.put(&enc).unwrap();
        let got = w.finish(None).unwrap();
        assert_eq!(got.bytes, want.len() as u64);
        assert!(bytes == want, "the same bytes");
    }
}
