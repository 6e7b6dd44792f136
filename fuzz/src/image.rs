//! The image target: any bytes as an image, through every read path.
//!
//! The first input byte picks the mode:
//! - raw (byte % 4 == 0): the rest of the input is the image file;
//! - structured (otherwise): the rest is a list of mutations applied to one of
//!   a few small valid images (built once), at the level of records, pieces,
//!   sections and header fields; afterwards the image is laid out again and
//!   every checksum recomputed (sub-section, section, index, header, footer)
//!   and every offset and length made consistent, so that only the format's
//!   structural rules can catch the mutation.
//!
//! The property: mmap, bulk and stream loads (serial with one thread and
//! parallel with two) and `verify` give the same verdict: all accept with the
//! same digest, or all refuse; a refusal is a data error, never an I/O error.

use crate::input::Input;
use nsimage_format::cipher::Key;
use nsimage_format::consts::footer;
use nsimage_format::framing::{put_frame, Records};
use nsimage_format::{
    pb, Footer, Header, Index, Location, SectionInfo, SectionKind, SubSectionInfo,
};
use nsimage_loader::{load, record, verify, LoadOptions, ReadStrategy, VerifyOptions};
use nsimage_namespace::{Block, FileSpec, Namespace, PermSpec, XAttrNs};
use nsimage_writer::{write_image, WriteOptions};
use prost::Message;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

/// One piece (a sub-section, or a whole unsplit section).
#[derive(Clone, Debug, Default)]
pub struct Piece {
    /// Message bytes of each record (framed when laid out).
    pub recs: Vec<Vec<u8>>,
    /// Bytes after the last record (breaks the framing when not empty).
    pub tail: Vec<u8>,
    /// Added to the true record count in the index.
    pub count_delta: i64,
    /// Added to the first key (the first record's id or parent).
    pub key_delta: i64,
}

#[derive(Clone, Debug)]
pub struct Sec {
    pub kind: u32,
    pub optional: bool,
    /// Listed with sub-sections (one per piece) or as one region.
    pub split: bool,
    pub pieces: Vec<Piece>,
    /// Added to the record count of an unsplit section.
    pub count_delta: i64,
}

/// An image as records, pieces and sections.
#[derive(Clone, Debug)]
pub struct Model {
    pub header: Header,
    pub secs: Vec<Sec>,
}

fn perm() -> PermSpec<'static> {
    PermSpec {
        user: b"hdfs",
        group: b"supergroup",
        mode: 0o755,
    }
}

/// A small namespace with every kind of inode and attribute (also the hdfs
/// target's).
pub fn rich() -> Namespace {
    let p = perm();
    let f = FileSpec {
        replication: 3,
        preferred_block_size: 128 << 20,
        storage_policy: 0,
    };
    let mut ns = Namespace::default();
    let d = ns.mkdirs(b"/data/2024", &p, 10).expect("mkdirs");
    for i in 0..12u64 {
        let id = ns
            .create_in(d, format!("part-{i:02}").as_bytes(), &p, &f, 20 + i)
            .expect("create");
        for b in 0..(i % 3) {
            ns.add_block(
                id,
                Block {
                    id: 1000 + i * 4 + b,
                    generation_stamp: 5000 + i,
                    length: 1 + i * b,
                },
            )
            .expect("add block");
        }
    }
    let u = ns.mkdirs(b"/user/alice", &p, 30).expect("mkdirs");
    ns.symlink(b"/user/alice/latest", b"/data/2024", &p, 31)
        .expect("symlink");
    ns.set_xattr(u, XAttrNs::User, b"team", b"core")
        .expect("xattr");
    ns.set_acl(u, &[(b"", 0, false, 7), (b"bob", 0, false, 5)])
        .expect("acl");
    ns.set_quota(u, 100, 1 << 30).expect("quota");
    let o = ns.create(b"/user/alice/open", &p, &f, 40).expect("create");
    ns.set_under_construction(o, Some((b"client-1", b"host-1")))
        .expect("under construction");
    ns
}

fn write(ns: &Namespace, split_bytes: Option<u64>) -> Vec<u8> {
    let opts = match split_bytes {
        Some(b) => WriteOptions {
            sub_section_bytes: b,
            sub_section_min_inodes: 0,
            batch_inodes: 7,
            ..WriteOptions::default()
        },
        None => WriteOptions::default(),
    };
    let mut out = Vec::new();
    write_image(ns, &mut out, &opts).expect("writing to a Vec");
    out
}

/// The valid images that structured inputs start from.
pub fn bases() -> &'static [Vec<u8>] {
    static BASES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    BASES.get_or_init(|| {
        let generated = nsimage_testkit::generate::generate(nsimage_testkit::generate::GenSpec {
            inodes: 40,
            seed: 7,
        });
        let rich = rich();
        vec![
            write(&rich, Some(160)),
            write(&rich, None),
            write(&generated, Some(200)),
            write(&generated, None),
        ]
    })
}

impl Model {
    /// Splits a valid image into its records (panics on an invalid one: the
    /// bases are written by the writer).
    pub fn parse(img: &[u8]) -> Model {
        let len = img.len() as u64;
        let foot = Footer::decode(&img[img.len() - footer::SIZE..], len).expect("footer");
        let s = foot.index_offset as usize;
        let idx = Index::decode(
            &img[s..s + foot.index_length as usize],
            foot.index_offset,
            foot.index_checksum,
        )
        .expect("index");
        let secs = idx
            .sections
            .iter()
            .map(|sec| Sec {
                kind: sec.kind.0,
                optional: sec.optional,
                split: !sec.sub_sections.is_empty(),
                count_delta: 0,
                pieces: sec
                    .pieces()
                    .iter()
                    .map(|p| {
                        let region = &img[p.offset as usize..(p.offset + p.length) as usize];
                        Piece {
                            recs: Records::new(region, Location::at(p.offset))
                                .map(|r| r.expect("record").1.to_vec())
                                .collect(),
                            ..Piece::default()
                        }
                    })
                    .collect(),
            })
            .collect();
        Model {
            header: Header::decode(img).expect("header"),
            secs,
        }
    }

    /// Lays the image out: framing, offsets, lengths, counts, first keys and
    /// every checksum made to match the content.
    pub fn build(&self) -> Vec<u8> {
        let mut out = self.header.encode().to_vec();
        let mut sections = Vec::with_capacity(self.secs.len());
        for s in &self.secs {
            let offset = out.len() as u64;
            let mut whole = Xxh3::new();
            let mut subs = Vec::with_capacity(s.pieces.len());
            let (mut records, mut true_records) = (0u64, 0u64);
            let keys = first_keys(s.kind, &s.pieces);
            for (p, first_key) in s.pieces.iter().zip(keys) {
                let start = out.len();
                for r in &p.recs {
                    put_frame(&mut out, r);
                }
                out.extend_from_slice(&p.tail);
                let bytes = &out[start..];
                whole.update(bytes);
                let n = p.recs.len() as u64;
                let count = n.saturating_add_signed(p.count_delta);
                records = records.saturating_add(count);
                true_records += n;
                subs.push(SubSectionInfo {
                    offset: start as u64,
                    length: bytes.len() as u64,
                    records: count,
                    first_key,
                    checksum: xxh3_64(bytes),
                    at_rest: Default::default(),
                });
            }
            if !s.split {
                records = true_records.saturating_add_signed(s.count_delta);
            }
            sections.push(SectionInfo {
                kind: SectionKind(s.kind),
                optional: s.optional,
                offset,
                length: out.len() as u64 - offset,
                records,
                checksum: whole.digest(),
                sub_sections: if s.split { subs } else { Vec::new() },
                at_rest: Default::default(),
            });
        }
        let index = Index {
            sections,
            encryption: None,
        }
        .encode();
        let index_offset = out.len() as u64;
        out.extend_from_slice(&index);
        let foot = Footer {
            index_offset,
            index_length: index.len() as u64,
            index_checksum: xxh3_64(&index),
            file_length: (out.len() + footer::SIZE) as u64,
        };
        out.extend_from_slice(&foot.encode());
        out
    }

    fn records(&self) -> usize {
        self.secs
            .iter()
            .flat_map(|s| &s.pieces)
            .map(|p| p.recs.len())
            .sum()
    }

    /// The `n`-th record over all sections and pieces: (section, piece, record).
    fn locate(&self, mut n: usize) -> Option<(usize, usize, usize)> {
        for (si, s) in self.secs.iter().enumerate() {
            for (pi, p) in s.pieces.iter().enumerate() {
                if n < p.recs.len() {
                    return Some((si, pi, n));
                }
                n -= p.recs.len();
            }
        }
        None
    }

    fn pick(&self, inp: &mut Input) -> Option<(usize, usize, usize)> {
        let n = self.records();
        let k = inp.below(n);
        self.locate(k)
    }

    fn rec(&mut self, at: (usize, usize, usize)) -> &mut Vec<u8> {
        &mut self.secs[at.0].pieces[at.1].recs[at.2]
    }

    fn piece(&mut self, inp: &mut Input) -> Option<&mut Piece> {
        let s = inp.below(self.secs.len());
        let sec = self.secs.get_mut(s)?;
        let p = inp.below(sec.pieces.len());
        sec.pieces.get_mut(p)
    }

    /// Applies one mutation read from `inp`.
    pub fn mutate(&mut self, inp: &mut Input) {
        match inp.u8() % 22 {
            0 => {
                if let Some(at) = self.pick(inp) {
                    let (pos, bit) = (inp.u16() as usize, inp.u8() % 8);
                    let r = self.rec(at);
                    if !r.is_empty() {
                        let i = pos % r.len();
                        r[i] ^= 1 << bit;
                    }
                }
            }
            1 => {
                if let Some(at) = self.pick(inp) {
                    let (pos, v) = (inp.u16() as usize, inp.u8());
                    let r = self.rec(at);
                    if !r.is_empty() {
                        let i = pos % r.len();
                        r[i] = v;
                    }
                }
            }
            2 => {
                if let Some(at) = self.pick(inp) {
                    let pos = inp.u16() as usize;
                    let n = 1 + inp.u8() as usize % 4;
                    let ins = inp.bytes(n);
                    let r = self.rec(at);
                    let i = pos % (r.len() + 1);
                    r.splice(i..i, ins);
                }
            }
            3 => {
                if let Some(at) = self.pick(inp) {
                    let pos = inp.u16() as usize;
                    let n = 1 + inp.u8() as usize % 8;
                    let r = self.rec(at);
                    if !r.is_empty() {
                        let i = pos % r.len();
                        let j = (i + n).min(r.len());
                        r.drain(i..j);
                    }
                }
            }
            4 => {
                if let Some(at) = self.pick(inp) {
                    let pos = inp.u16() as usize;
                    let r = self.rec(at);
                    let i = pos % (r.len() + 1);
                    r.truncate(i);
                }
            }
            5 => {
                // A protobuf field of any number and wire type, at the front
                // or the end of a record: unknown fields, groups, known
                // fields given twice or with the wrong wire type.
                if let Some(at) = self.pick(inp) {
                    // Mostly the schema's numbers; sometimes any, 0 and
                    // numbers past protobuf's 2^29 - 1 included.
                    let f = inp.u8();
                    let field = if f & 0x80 != 0 {
                        inp.u32() as u64 >> (f % 4)
                    } else {
                        f as u64 % 20
                    };
                    let wt = inp.u8() as u64 % 8;
                    let front = inp.u8() & 1 == 1;
                    let mut f = Vec::new();
                    prost::encoding::encode_varint(field << 3 | wt, &mut f);
                    match wt {
                        0 => prost::encoding::encode_varint(inp.u64(), &mut f),
                        1 => f.extend(inp.bytes(8)),
                        2 => {
                            let n = inp.u8() as usize % 10;
                            prost::encoding::encode_varint(n as u64, &mut f);
                            f.extend(inp.bytes(n));
                        }
                        // A group, closed when the next byte says so.
                        3 if inp.u8() & 1 == 1 => {
                            prost::encoding::encode_varint(field << 3 | 4, &mut f)
                        }
                        5 => f.extend(inp.bytes(4)),
                        _ => {}
                    }
                    let r = self.rec(at);
                    if front {
                        r.splice(0..0, f);
                    } else {
                        r.extend(f);
                    }
                }
            }
            6 => {
                if let Some((s, p, r)) = self.pick(inp) {
                    self.secs[s].pieces[p].recs.remove(r);
                }
            }
            7 => {
                if let Some((s, p, r)) = self.pick(inp) {
                    let copy = self.secs[s].pieces[p].recs[r].clone();
                    self.secs[s].pieces[p].recs.insert(r + 1, copy);
                }
            }
            8 => {
                let (a, b) = (self.pick(inp), self.pick(inp));
                if let (Some(a), Some(b)) = (a, b.filter(|b| Some(*b) != a)) {
                    let x = std::mem::take(self.rec(a));
                    let y = std::mem::replace(self.rec(b), x);
                    *self.rec(a) = y;
                }
            }
            9 => {
                // Move a piece boundary by one record, either way.
                let s = inp.below(self.secs.len());
                let left = inp.u8() & 1 == 1;
                if let Some(sec) = self.secs.get_mut(s) {
                    let p = inp.below(sec.pieces.len().saturating_sub(1));
                    if p + 1 < sec.pieces.len() {
                        if left && !sec.pieces[p + 1].recs.is_empty() {
                            let r = sec.pieces[p + 1].recs.remove(0);
                            sec.pieces[p].recs.push(r);
                        } else if let Some(r) = sec.pieces[p].recs.pop() {
                            sec.pieces[p + 1].recs.insert(0, r);
                        }
                    }
                }
            }
            10 => {
                // Cut a piece in two after a record.
                if let Some((s, p, r)) = self.pick(inp) {
                    let sec = &mut self.secs[s];
                    let rest = sec.pieces[p].recs.split_off(r + 1);
                    sec.pieces.insert(
                        p + 1,
                        Piece {
                            recs: rest,
                            ..Piece::default()
                        },
                    );
                    sec.split = true;
                }
            }
            11 => {
                // Merge a piece with the next one.
                let s = inp.below(self.secs.len());
                if let Some(sec) = self.secs.get_mut(s) {
                    let p = inp.below(sec.pieces.len().saturating_sub(1));
                    if p + 1 < sec.pieces.len() {
                        let next = sec.pieces.remove(p + 1);
                        sec.pieces[p].recs.extend(next.recs);
                    }
                }
            }
            12 => {
                let s = inp.below(self.secs.len());
                if let Some(sec) = self.secs.get_mut(s) {
                    sec.split = !sec.split;
                    if !sec.split {
                        let all: Vec<Vec<u8>> = sec.pieces.drain(..).flat_map(|p| p.recs).collect();
                        sec.pieces.push(Piece {
                            recs: all,
                            ..Piece::default()
                        });
                    }
                }
            }
            13 => {
                let d = inp.u8() as i8 as i64;
                if let Some(p) = self.piece(inp) {
                    p.count_delta = d;
                }
            }
            14 => {
                let d = inp.u8() as i8 as i64;
                let s = inp.below(self.secs.len());
                if let Some(sec) = self.secs.get_mut(s) {
                    sec.count_delta = d;
                }
            }
            15 => {
                let d = inp.u8() as i8 as i64;
                if let Some(p) = self.piece(inp) {
                    p.key_delta = d;
                }
            }
            16 => {
                let (kind, optional) = (inp.u8() as u32 % 10, inp.u8() & 1 == 1);
                let s = inp.below(self.secs.len());
                if let Some(sec) = self.secs.get_mut(s) {
                    sec.kind = kind;
                    sec.optional = optional;
                }
            }
            17 => {
                // A new section: known or unknown kind, holding copies of
                // records or raw bytes.
                let kind = inp.u8() as u32 % 12;
                let optional = inp.u8() & 1 == 1;
                let mut piece = Piece::default();
                if let Some(at) = self.pick(inp) {
                    piece.recs.push(self.rec(at).clone());
                }
                let n = inp.u8() as usize % 8;
                piece.tail = inp.bytes(n);
                let at = inp.below(self.secs.len() + 1);
                self.secs.insert(
                    at,
                    Sec {
                        kind,
                        optional,
                        split: false,
                        pieces: vec![piece],
                        count_delta: 0,
                    },
                );
            }
            18 => {
                let s = inp.below(self.secs.len());
                if s < self.secs.len() {
                    self.secs.remove(s);
                }
            }
            19 => {
                let (a, b) = (inp.below(self.secs.len()), inp.below(self.secs.len()));
                if a < self.secs.len() && b < self.secs.len() {
                    self.secs.swap(a, b);
                }
            }
            20 => {
                let n = 1 + inp.u8() as usize % 8;
                let bytes = inp.bytes(n);
                if let Some(p) = self.piece(inp) {
                    p.tail = bytes;
                }
            }
            _ => match inp.u8() % 3 {
                0 => self.header.version = inp.u16(),
                1 => self.header.required_features = 1 << (inp.u8() % 32),
                _ => self.header.optional_features = 1 << (inp.u8() % 32),
            },
        }
    }
}

/// The first keys of a section's pieces as a writer gives them, each plus
/// its piece's `key_delta`: the first record's id (INODE) or parent
/// (INODE_DIR); for NAME_INDEX and NAME_RUNS, `parent << 20 | seq`, `seq`
/// counting the pieces before it that start with the same parent
/// (FORMAT.md, "NAME_INDEX").
pub fn first_keys(kind: u32, pieces: &[Piece]) -> Vec<u64> {
    let mut last: Option<(u64, u64)> = None;
    pieces
        .iter()
        .map(|p| {
            let first_parent = match SectionKind(kind) {
                SectionKind::NAME_INDEX => p
                    .recs
                    .first()
                    .map(|r| pb::NameEntry::decode(&r[..]).map(|e| e.parent)),
                SectionKind::NAME_RUNS => p
                    .recs
                    .first()
                    .map(|r| pb::NameRun::decode(&r[..]).map(|e| e.parent)),
                _ => None,
            };
            let names = matches!(
                SectionKind(kind),
                SectionKind::NAME_INDEX | SectionKind::NAME_RUNS
            );
            let key = if names {
                match first_parent {
                    Some(Ok(parent)) => {
                        let seq = match last {
                            Some((p, seq)) if p == parent => seq.wrapping_add(1),
                            _ => 0,
                        };
                        last = Some((parent, seq));
                        parent.wrapping_shl(20) | seq
                    }
                    _ => 0,
                }
            } else {
                first_key(kind, p.recs.first())
            };
            key.wrapping_add_signed(p.key_delta)
        })
        .collect()
}

/// The first key of a piece whose first record is `rec`.
pub fn first_key(kind: u32, rec: Option<&Vec<u8>>) -> u64 {
    let Some(rec) = rec else { return 0 };
    match SectionKind(kind) {
        SectionKind::INODE => {
            let mut scratch = record::InodeScratch::default();
            record::inode(rec, &mut scratch).map_or(0, |n| n.id)
        }
        SectionKind::INODE_DIR => record::dir_entry(rec, &mut Vec::new()).unwrap_or(0),
        _ => 0,
    }
}

/// The image that `data` describes.
pub fn image(data: &[u8]) -> Vec<u8> {
    let mut inp = Input::new(data);
    let mode = inp.u8();
    if mode.is_multiple_of(4) {
        return inp.rest().to_vec();
    }
    let bases = bases();
    let base = &bases[mode as usize / 4 % bases.len()];
    let mut m = Model::parse(base);
    let mut budget = 64;
    while !inp.done() && budget > 0 {
        m.mutate(&mut inp);
        budget -= 1;
    }
    m.build()
}

/// A file of its own for each call, in one temporary directory per process
/// (tests call from several threads; libFuzzer from one).
pub fn scratch_file() -> PathBuf {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = DIR.get_or_init(crate::input::scratch_dir);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    dir.path().join(format!("fuzz-{n}.nsi"))
}

/// The verdict of each read path on `img`: `Ok(digest)` or `Err(why)`.
pub fn verdicts(img: &[u8]) -> Vec<(String, Result<u64, String>)> {
    verdicts_with(img, None)
}

/// [`verdicts`], every path given `key` (the at_rest target's).
pub fn verdicts_with(img: &[u8], key: Option<&Key>) -> Vec<(String, Result<u64, String>)> {
    let file = scratch_file();
    let path = file.as_path();
    std::fs::write(path, img).expect("writing the image");
    let mut out = Vec::new();
    let mut runs = vec![("stream".to_string(), ReadStrategy::Stream, 1, true)];
    // SAFETY: the scratch file is this run's own, written before the load
    // and not changed while it is mapped.
    let mmap = unsafe { ReadStrategy::mmap() };
    for read in [mmap, ReadStrategy::Bulk] {
        runs.push((format!("{} 1 thread", read.name()), read, 1, true));
        runs.push((format!("{} 2 threads", read.name()), read, 2, false));
    }
    for (name, read, threads, serial) in runs {
        let opts = LoadOptions {
            md5: nsimage_loader::hdfs::Md5Policy::Check,
            threads,
            read,
            serial,
            parallel_threshold: 0,
            key: key.cloned(),
            timeline: None,
            budget: None,
        };
        let v = match load(path, &opts) {
            Ok(l) => Ok(l.namespace.digest().0),
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
    let v = match verify(
        path,
        &VerifyOptions {
            read: ReadStrategy::Bulk,
            key: key.cloned(),
            ..VerifyOptions::default()
        },
    ) {
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
    out.push(("verify".to_string(), v));
    let _ = std::fs::remove_file(path);
    out
}

/// Panics unless every read path gives the same verdict on `img`, the
/// streamed one included ([`crate::streamed`]).
pub fn check(img: &[u8]) {
    agree(&verdicts(img));
    let file = scratch_file();
    std::fs::write(&file, img).expect("writing the image");
    crate::streamed::check(&file, false);
    let _ = std::fs::remove_file(&file);
}

/// Panics unless the verdicts `v` agree: all refuse, or all accept and
/// every load gives the same digest.
pub fn agree(v: &[(String, Result<u64, String>)]) {
    let loads = &v[..v.len() - 1];
    let all_ok = v.iter().all(|(_, r)| r.is_ok());
    let all_refuse = v.iter().all(|(_, r)| r.is_err());
    let same_digest = loads.windows(2).all(|w| w[0].1 == w[1].1);
    if !(all_refuse || (all_ok && same_digest)) {
        panic!("read paths disagree:\n{}", table(v));
    }
}

/// The verdicts as lines, one per path.
pub fn table(v: &[(String, Result<u64, String>)]) -> String {
    let lines: Vec<String> = v
        .iter()
        .map(|(name, r)| match r {
            Ok(_) if name == "verify" => format!("  {name}: accepts"),
            Ok(d) => format!("  {name}: accepts, digest {d:016x}"),
            Err(e) => format!("  {name}: refuses: {e}"),
        })
        .collect();
    lines.join("\n")
}

/// The fuzz target's body. With `NSIMAGE_FUZZ_WRITE_IMAGE=PATH` in the
/// environment it also writes the image it checks to PATH, so that a
/// reproducer can be replayed with the CLI (`nsimage verify PATH`).
pub fn run(data: &[u8]) {
    let img = image(data);
    if let Some(path) = std::env::var_os("NSIMAGE_FUZZ_WRITE_IMAGE") {
        std::fs::write(path, &img).expect("writing NSIMAGE_FUZZ_WRITE_IMAGE");
    }
    check(&img);
}
