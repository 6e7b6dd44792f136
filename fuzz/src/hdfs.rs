//! The hdfs target: any bytes as a Hadoop fsimage (magic `HDFSIMG1`),
//! through the load (serial, and two threads over the sub-sections), `verify`
//! and `describe`.
//!
//! The input picks the mode:
//! - raw (it starts with `HDFSIMG1`): the input is the image file;
//! - structured (otherwise): the first byte picks one of a few small valid
//!   images (written once by the writer: a namespace with every kind of inode
//!   and attribute, plain, with sub-sections, zlib and gzip, expanded string
//!   tables; and a real Hadoop image with snapshots), the rest is a list of
//!   mutations of its records (inflated), pieces and summary entries. The
//!   image is then laid out again: every piece deflated with the codec, every
//!   summary offset and length made to fit, so that mutations reach inside
//!   compressed sections and past the summary's bounds checks.
//!
//! The property: nothing panics; serial and parallel loads agree (both
//! refuse, or both accept with the same digest), `verify` accepts exactly
//! when the load does, a refusal is a data error (never an I/O error), and
//! the digest of a loaded namespace is stable.

use crate::input::Input;
use flate2::write::{GzEncoder, ZlibEncoder};
use nsimage_format::hdfs::{Codec, HdfsSection, HdfsSummary};
use nsimage_format::hdfs_pb::{file_summary, FileSummary};
use nsimage_loader::{hdfs::describe, load, verify, LoadOptions, ReadStrategy};
use nsimage_writer::hdfs::{write_hdfs_image, HdfsCodec, HdfsWriteOptions};
use prost::Message;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// A real Hadoop image with snapshots (SNAPSHOT, SNAPSHOT_DIFF, references).
const FSI_SMALL: &[u8] = include_bytes!("../corpus/hdfs/hfsa-fsi_small.img");

/// One physical region: a sub-section, or a section without sub-sections.
#[derive(Clone, Debug, Default)]
pub struct Piece {
    /// Varint-delimited messages (inflated).
    pub recs: Vec<Vec<u8>>,
    /// Bytes after the last record.
    pub tail: Vec<u8>,
}

/// A summary entry: its name and the pieces it spans.
#[derive(Clone, Debug)]
pub struct Entry {
    pub name: String,
    /// Pieces `first..last` (the entry covers them; a sub-section one).
    pub first: usize,
    pub last: usize,
    /// Added to the laid-out offset and length.
    pub offset_delta: i64,
    pub length_delta: i64,
}

/// A Hadoop image as pieces of records and summary entries.
#[derive(Clone, Debug)]
pub struct Model {
    pub codec: Codec,
    pub layout_version: u32,
    pub ondisk_version: u32,
    pub pieces: Vec<Piece>,
    pub entries: Vec<Entry>,
    /// Bytes between the magic and the first piece.
    pub gap: Vec<u8>,
}

fn inflate(codec: Codec, raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match codec {
        Codec::None => out.extend_from_slice(raw),
        Codec::Zlib => {
            flate2::read::ZlibDecoder::new(raw)
                .read_to_end(&mut out)
                .expect("a base's zlib stream");
        }
        Codec::Gzip => {
            flate2::read::MultiGzDecoder::new(raw)
                .read_to_end(&mut out)
                .expect("a base's gzip stream");
        }
    }
    out
}

fn deflate(codec: Codec, bytes: &[u8]) -> Vec<u8> {
    let level = flate2::Compression::fast();
    match codec {
        Codec::None => bytes.to_vec(),
        Codec::Zlib => {
            let mut e = ZlibEncoder::new(Vec::new(), level);
            e.write_all(bytes).expect("deflating to a Vec");
            e.finish().expect("deflating to a Vec")
        }
        Codec::Gzip => {
            let mut e = GzEncoder::new(Vec::new(), level);
            e.write_all(bytes).expect("deflating to a Vec");
            e.finish().expect("deflating to a Vec")
        }
    }
}

fn split_records(bytes: &[u8]) -> Piece {
    let mut p = Piece::default();
    let mut rest = bytes;
    while !rest.is_empty() {
        match nsimage_format::wire::read_varint(rest) {
            Some((len, w)) if (len as usize) <= rest.len() - w => {
                let end = w + len as usize;
                p.recs.push(rest[w..end].to_vec());
                rest = &rest[end..];
            }
            _ => {
                p.tail = rest.to_vec();
                break;
            }
        }
    }
    p
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

impl Model {
    /// Splits a valid image (panics on an invalid one: the bases are valid).
    pub fn parse(img: &[u8]) -> Model {
        let n = img.len();
        let tail: [u8; 4] = img[n - 4..].try_into().expect("4 bytes");
        let (off, len) = HdfsSummary::locate(n as u64, tail).expect("summary");
        let s = HdfsSummary::decode(&img[off as usize..(off + len) as usize], off, n as u64)
            .expect("summary");
        // Physical pieces: every sub-section, and every section without.
        let mut regions: Vec<(u64, u64)> = Vec::new();
        for e in &s.sections {
            if e.section.parent().is_some() {
                regions.push((e.offset, e.length));
            } else {
                let subs = s.sub_sections(e).expect("sub-sections");
                if subs.is_empty() {
                    regions.push((e.offset, e.length));
                }
            }
        }
        regions.sort_unstable();
        regions.dedup();
        let pieces = regions
            .iter()
            .map(|&(o, l)| split_records(&inflate(s.codec, &img[o as usize..(o + l) as usize])))
            .collect();
        let entries = s
            .sections
            .iter()
            .map(|e| {
                let first = regions.iter().position(|r| r.0 == e.offset).unwrap_or(0);
                let mut last = first;
                while last < regions.len() && regions[last].0 < e.offset + e.length {
                    last += 1;
                }
                Entry {
                    name: e.name.clone(),
                    first,
                    last: last.max(first + 1),
                    offset_delta: 0,
                    length_delta: 0,
                }
            })
            .collect();
        let gap_end = regions.first().map_or(8, |r| r.0 as usize);
        Model {
            codec: s.codec,
            layout_version: s.layout_version as u32,
            ondisk_version: s.ondisk_version,
            pieces,
            entries,
            gap: img[8..gap_end].to_vec(),
        }
    }

    /// Lays the image out: each piece deflated on its own, the summary
    /// entries' offsets and lengths from where their pieces landed.
    pub fn build(&self) -> Vec<u8> {
        let mut out = b"HDFSIMG1".to_vec();
        out.extend_from_slice(&self.gap);
        let mut at = Vec::with_capacity(self.pieces.len() + 1);
        for p in &self.pieces {
            at.push(out.len() as u64);
            let mut plain = Vec::new();
            for r in &p.recs {
                put_varint(&mut plain, r.len() as u64);
                plain.extend_from_slice(r);
            }
            plain.extend_from_slice(&p.tail);
            out.extend(deflate(self.codec, &plain));
        }
        at.push(out.len() as u64);
        let sections = self
            .entries
            .iter()
            .map(|e| {
                let first = e.first.min(self.pieces.len());
                let last = e.last.clamp(first, self.pieces.len());
                let (o, end) = (at[first], at[last]);
                file_summary::Section {
                    name: Some(e.name.clone()),
                    offset: Some(o.saturating_add_signed(e.offset_delta)),
                    length: Some((end - o).saturating_add_signed(e.length_delta)),
                }
            })
            .collect();
        let fs = FileSummary {
            ondisk_version: self.ondisk_version,
            layout_version: self.layout_version,
            codec: self.codec.class_name().map(str::to_string),
            sections,
        };
        let d = fs.encode_length_delimited_to_vec();
        out.extend_from_slice(&d);
        out.extend_from_slice(&(d.len() as u32).to_be_bytes());
        out
    }

    fn records(&self) -> usize {
        self.pieces.iter().map(|p| p.recs.len()).sum()
    }

    fn pick(&self, inp: &mut Input) -> Option<(usize, usize)> {
        let mut n = inp.below(self.records());
        for (i, p) in self.pieces.iter().enumerate() {
            if n < p.recs.len() {
                return Some((i, n));
            }
            n -= p.recs.len();
        }
        None
    }

    fn rec(&mut self, at: (usize, usize)) -> &mut Vec<u8> {
        &mut self.pieces[at.0].recs[at.1]
    }

    /// Applies one mutation read from `inp`.
    pub fn mutate(&mut self, inp: &mut Input) {
        match inp.u8() % 20 {
            0 | 1 => {
                // Flip bits of a record's byte.
                let bit = inp.u8();
                if let Some(at) = self.pick(inp) {
                    let r = self.rec(at);
                    if !r.is_empty() {
                        let i = inp.below(r.len());
                        r[i] ^= bit.max(1);
                    }
                }
            }
            2 => {
                // Set a byte to an interesting value.
                let v = [0x00, 0x01, 0x7f, 0x80, 0xff, 0x08, 0x10, 0x12][inp.u8() as usize % 8];
                if let Some(at) = self.pick(inp) {
                    let r = self.rec(at);
                    if !r.is_empty() {
                        let i = inp.below(r.len());
                        r[i] = v;
                    }
                }
            }
            3 => {
                // Insert bytes in a record.
                let n = 1 + inp.u8() as usize % 12;
                let bytes = inp.bytes(n);
                if let Some(at) = self.pick(inp) {
                    let r = self.rec(at);
                    let i = inp.below(r.len() + 1).min(r.len());
                    r.splice(i..i, bytes);
                }
            }
            4 => {
                // Delete bytes of a record.
                let n = 1 + inp.u8() as usize % 8;
                if let Some(at) = self.pick(inp) {
                    let r = self.rec(at);
                    let i = inp.below(r.len() + 1).min(r.len());
                    let j = (i + n).min(r.len());
                    r.drain(i..j);
                }
            }
            5 => {
                // Append a field: any number and wire type, a varint value
                // (or a length-delimited run of bytes).
                let field = match inp.u8() % 4 {
                    0 => u64::from(inp.u8() % 16),
                    1 => u64::from(inp.u16()),
                    2 => u64::from(inp.u32()),
                    _ => u64::from(inp.u8()),
                };
                let wt = u64::from(inp.u8() % 8);
                let value = inp.u64() >> (inp.u8() % 64);
                let n = inp.u8() as usize % 16;
                let payload = inp.bytes(n);
                if let Some(at) = self.pick(inp) {
                    let r = self.rec(at);
                    put_varint(r, (field << 3) | wt);
                    match wt {
                        0 => put_varint(r, value),
                        1 => r.extend_from_slice(&value.to_le_bytes()),
                        2 => {
                            put_varint(r, payload.len() as u64);
                            r.extend_from_slice(&payload);
                        }
                        5 => r.extend_from_slice(&(value as u32).to_le_bytes()),
                        _ => {}
                    }
                }
            }
            6 => {
                // Delete a record.
                if let Some((p, i)) = self.pick(inp) {
                    self.pieces[p].recs.remove(i);
                }
            }
            7 => {
                // Duplicate a record (here or elsewhere).
                if let Some(a) = self.pick(inp) {
                    let r = self.rec(a).clone();
                    if let Some((p, i)) = self.pick(inp) {
                        self.pieces[p].recs.insert(i, r);
                    }
                }
            }
            8 => {
                // Swap two records.
                if let (Some(a), Some(b)) = (self.pick(inp), self.pick(inp)) {
                    let ra = self.rec(a).clone();
                    let rb = std::mem::replace(self.rec(b), ra);
                    *self.rec(a) = rb;
                }
            }
            9 => {
                // Truncate a record.
                if let Some(at) = self.pick(inp) {
                    let r = self.rec(at);
                    let n = inp.below(r.len() + 1);
                    r.truncate(n);
                }
            }
            10 => {
                // Bytes after a piece's last record.
                let n = 1 + inp.u8() as usize % 8;
                let bytes = inp.bytes(n);
                let p = inp.below(self.pieces.len());
                if let Some(p) = self.pieces.get_mut(p) {
                    p.tail = bytes;
                }
            }
            11 => {
                // Rename a summary entry (any known name, or an unknown one).
                let names = HdfsSection::ALL;
                let k = inp.u8() as usize % (names.len() + 1);
                let e = inp.below(self.entries.len());
                if let Some(e) = self.entries.get_mut(e) {
                    e.name = names.get(k).map_or("NEW_THING", |s| s.name()).to_string();
                }
            }
            12 => {
                // Drop, duplicate or swap summary entries.
                let (a, b) = (inp.below(self.entries.len()), inp.below(self.entries.len()));
                if a < self.entries.len() && b < self.entries.len() {
                    match inp.u8() % 3 {
                        0 => {
                            self.entries.remove(a);
                        }
                        1 => {
                            let e = self.entries[a].clone();
                            self.entries.insert(b, e);
                        }
                        _ => self.entries.swap(a, b),
                    }
                }
            }
            13 => {
                // An entry spans other pieces.
                let (a, b) = (
                    inp.below(self.pieces.len() + 1),
                    inp.below(self.pieces.len() + 1),
                );
                let e = inp.below(self.entries.len());
                if let Some(e) = self.entries.get_mut(e) {
                    e.first = a.min(b);
                    e.last = a.max(b);
                }
            }
            14 => {
                // An entry's offset or length off by a little (or a lot).
                let d = match inp.u8() % 4 {
                    0 => i64::from(inp.u8() as i8),
                    1 => i64::from(inp.u16() as i16),
                    2 => i64::from(inp.u32() as i32),
                    _ => inp.u64() as i64,
                };
                let which = inp.u8() & 1;
                let e = inp.below(self.entries.len());
                if let Some(e) = self.entries.get_mut(e) {
                    if which == 0 {
                        e.offset_delta = d;
                    } else {
                        e.length_delta = d;
                    }
                }
            }
            15 => {
                // Another codec (the pieces deflated with it), or none.
                self.codec = [Codec::None, Codec::Zlib, Codec::Gzip][inp.u8() as usize % 3];
            }
            16 => {
                // Layout and on-disk versions.
                if inp.u8() & 1 == 0 {
                    self.layout_version = (-(i32::from(inp.u8() % 16) + 54)) as u32;
                } else {
                    self.ondisk_version = u32::from(inp.u8() % 3);
                }
            }
            17 => {
                // Move a record to another piece (across sub-sections).
                if let Some((p, i)) = self.pick(inp) {
                    let r = self.pieces[p].recs.remove(i);
                    let q = inp.below(self.pieces.len());
                    let j = inp.below(self.pieces[q].recs.len() + 1);
                    let j = j.min(self.pieces[q].recs.len());
                    self.pieces[q].recs.insert(j, r);
                }
            }
            18 => {
                // Set a varint-sized value in a record: a count, an id, a
                // length, overwritten with a boundary value.
                let v: u64 = match inp.u8() % 6 {
                    0 => 0,
                    1 => u64::from(u32::MAX),
                    2 => u64::MAX,
                    3 => 1 << 31,
                    4 => u64::from(inp.u16()),
                    _ => inp.u64(),
                };
                if let Some(at) = self.pick(inp) {
                    let r = self.rec(at);
                    if !r.is_empty() {
                        // Replace the varint starting at a field value.
                        let i = inp.below(r.len()).min(r.len() - 1);
                        let old = nsimage_format::wire::read_varint(&r[i..]).map_or(1, |x| x.1);
                        let mut nv = Vec::new();
                        put_varint(&mut nv, v);
                        r.splice(i..(i + old).min(r.len()), nv);
                    }
                }
            }
            _ => {
                // Split or merge pieces.
                let p = inp.below(self.pieces.len());
                if p < self.pieces.len() {
                    if inp.u8() & 1 == 0 {
                        let n = self.pieces[p].recs.len();
                        let cut = inp.below(n + 1).min(n);
                        let rest = self.pieces[p].recs.split_off(cut);
                        self.pieces.insert(
                            p + 1,
                            Piece {
                                recs: rest,
                                tail: Vec::new(),
                            },
                        );
                        for e in &mut self.entries {
                            if e.first > p {
                                e.first += 1;
                            }
                            if e.last > p {
                                e.last += 1;
                            }
                        }
                    } else if p + 1 < self.pieces.len() {
                        let next = self.pieces.remove(p + 1);
                        self.pieces[p].recs.extend(next.recs);
                        for e in &mut self.entries {
                            if e.first > p {
                                e.first -= 1;
                            }
                            if e.last > p {
                                e.last -= 1;
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A small namespace with every kind of inode and attribute (the image
/// target's), written as Hadoop images of every shape.
pub fn bases() -> &'static [Vec<u8>] {
    static BASES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    BASES.get_or_init(|| {
        let rich = crate::image::rich();
        let generated = nsimage_testkit::generate::generate(nsimage_testkit::generate::GenSpec {
            inodes: 40,
            seed: 7,
        });
        let write = |ns: &nsimage_namespace::Namespace, subs: bool, codec, expanded| {
            let opts = HdfsWriteOptions {
                sub_sections: subs,
                target_sections: 3,
                inode_threshold: 0,
                codec,
                expanded_string_tables: expanded,
                ..HdfsWriteOptions::default()
            };
            let mut out = Vec::new();
            write_hdfs_image(ns, &mut out, &opts).expect("writing to a Vec");
            out
        };
        vec![
            write(&rich, false, HdfsCodec::None, false),
            write(&rich, true, HdfsCodec::None, true),
            write(&rich, true, HdfsCodec::Zlib, false),
            write(&rich, false, HdfsCodec::Gzip, true),
            write(&generated, true, HdfsCodec::None, false),
            write(&generated, true, HdfsCodec::Gzip, true),
            FSI_SMALL.to_vec(),
        ]
    })
}

/// The image that `data` describes.
pub fn image(data: &[u8]) -> Vec<u8> {
    if data.starts_with(b"HDFSIMG1") {
        return data.to_vec();
    }
    let mut inp = Input::new(data);
    let bases = bases();
    let base = &bases[inp.u8() as usize % bases.len()];
    let mut m = Model::parse(base);
    let mut budget = 32;
    while !inp.done() && budget > 0 {
        m.mutate(&mut inp);
        budget -= 1;
    }
    m.build()
}

fn scratch_file() -> PathBuf {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = DIR.get_or_init(crate::input::scratch_dir);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    dir.path().join(format!("fsimage_{n:019}"))
}

/// The verdicts on `img`: serial load, parallel load (`Ok(digest)` or
/// `Err(why)`), and `verify` (`Ok(0)` or `Err(why)`).
pub fn verdicts(img: &[u8]) -> Vec<(&'static str, Result<u64, String>)> {
    let file = scratch_file();
    let path = file.as_path();
    std::fs::write(path, img).expect("writing the image");
    let mut out = Vec::new();
    for (name, threads, serial) in [("serial", 1, true), ("2 threads", 2, false)] {
        let opts = LoadOptions {
            md5: nsimage_loader::hdfs::Md5Policy::Check,
            threads,
            read: ReadStrategy::Bulk,
            serial,
            parallel_threshold: 0,
            key: None,
            timeline: None,
            budget: None,
        };
        let v = match load(path, &opts) {
            Ok(l) => {
                let d = l.namespace.digest().0;
                assert_eq!(
                    d,
                    l.namespace.digest().0,
                    "{name}: the digest is not stable"
                );
                Ok(d)
            }
            Err(e) => {
                assert!(
                    e.is_data_error(),
                    "{name}: an image gives an I/O error: {e}"
                );
                Err(e.to_string())
            }
        };
        out.push((name, v));
    }
    let v = match verify(path, &Default::default()) {
        Ok(r) if r.is_ok() => Ok(0),
        Ok(r) => Err(format!("{:?}", r.problems)),
        Err(e) => {
            assert!(
                e.is_data_error(),
                "verify: an image gives an I/O error: {e}"
            );
            Err(e.to_string())
        }
    };
    out.push(("verify", v));
    if let Err(e) = describe(path) {
        assert!(
            e.is_data_error(),
            "describe: an image gives an I/O error: {e}"
        );
    }
    let _ = std::fs::remove_file(path);
    out
}

/// Panics unless the verdicts on `img` agree, the streamed one included
/// ([`crate::streamed`]).
pub fn check(img: &[u8]) {
    let v = verdicts(img);
    let (serial, parallel, verified) = (&v[0].1, &v[1].1, &v[2].1);
    let agree = match (serial, parallel) {
        (Ok(a), Ok(b)) => a == b,
        (Err(_), Err(_)) => true,
        _ => false,
    } && serial.is_ok() == verified.is_ok();
    if !agree {
        let table: Vec<String> = v
            .iter()
            .map(|(name, r)| match r {
                Ok(d) => format!("  {name}: accepts, digest {d:016x}"),
                Err(e) => format!("  {name}: refuses: {e}"),
            })
            .collect();
        panic!("read paths disagree:\n{}", table.join("\n"));
    }
    let file = scratch_file();
    std::fs::write(&file, img).expect("writing the image");
    crate::streamed::check(&file, true);
    let _ = std::fs::remove_file(&file);
}

/// The fuzz target's body. With `NSIMAGE_FUZZ_WRITE_IMAGE=PATH` in the
/// environment it also writes the image it checks to PATH.
pub fn run(data: &[u8]) {
    let img = image(data);
    if let Some(path) = std::env::var_os("NSIMAGE_FUZZ_WRITE_IMAGE") {
        std::fs::write(path, &img).expect("writing NSIMAGE_FUZZ_WRITE_IMAGE");
    }
    check(&img);
}
