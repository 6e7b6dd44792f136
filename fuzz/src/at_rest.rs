//! The at_rest target: pieces stored compressed, encrypted, or both (FORMAT.md,
//! "Pieces at rest"), with the stored bytes and the new index fields mutated
//! and every checksum recomputed, so that mutations get past the checksums
//! and reach decryption, decompression and the index's at-rest checks.
//!
//! The first input byte picks the mode:
//! - raw (byte % 7 == 6): the rest of the input is the image file, loaded
//!   with the target's key (the seeds: images the writer wrote with it);
//! - structured (otherwise): `byte % 7` is the storage (plain, zstd, lz4,
//!   encrypted, zstd+encrypted, lz4+encrypted) and `byte / 7 % 4` one of the
//!   `image` target's four small valid images. The next byte says how many
//!   (0 to 3) of the `image` target's record-level mutations come first;
//!   then come at-rest mutations until the input ends: edits of a piece's
//!   bytes before sealing (its compressed stream, or its plain bytes under
//!   encryption: the tag stays valid) and after it, another codec or none,
//!   the index's codec, plain length (a decompression bomb among others) and
//!   nonce, nonces reused, the associated data a piece is sealed with (kind,
//!   section, piece, offset, plain length, codec, image id), a piece sealed
//!   with another key or not at all, two pieces swapped with their index
//!   entries, the index's encryption message (cipher, image id, key
//!   fingerprint; dropped or added), a split section's own at-rest fields,
//!   and the header's feature bits. Pieces are then sealed where the
//!   mutations left them (the associated data computed from their final
//!   index entries unless a mutation says otherwise) and every offset,
//!   length and checksum is laid out again.
//!
//! The properties: as in the `image` target, mmap, bulk and stream loads
//! (1 and 2 threads) and `verify`, all given the key, agree, and a refusal
//! is a data error, never an I/O error, nor a panic. Besides: when the
//! image breaks a rule of "Pieces at rest" that a reader can see from the
//! index and the stored bytes alone (an independent check, [`must_refuse`]:
//! a piece of a section a load reads that does not authenticate or does not
//! decompress to its plain length, a plain length claim beyond 255 times
//! the stored bytes, an unknown codec, a reused nonce, a bad encryption
//! message, feature bits that disagree with the index), every path
//! refuses; and an encrypted image that loads with its key is refused,
//! as a data error, without a key and with another key. Allocations stay
//! bounded: `run.sh` runs the target with `-malloc_limit_mb=512`, and
//! `tests/fuzz_regressions.rs` checks the largest allocation.

use crate::image::{self, Model};
use crate::input::Input;
use nsimage_format::cipher::{Key, PiecePlace, AES_256_GCM, ID_LEN, NONCE_LEN, TAG_LEN};
use nsimage_format::codec::{self, Codec, Compression, MAX_EXPANSION, MAX_PLAIN_LENGTH};
use nsimage_format::consts::{features, footer};
use nsimage_format::framing::put_frame;
use nsimage_format::{pb, Footer, Header};
use nsimage_loader::{load, verify, LoadOptions, ReadStrategy, VerifyOptions};
use nsimage_writer::{write_image, AtRestOptions, WriteOptions};
use prost::Message;
use std::sync::OnceLock;
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

/// The key built into the target: every encrypted image it builds (and
/// every raw seed) is encrypted with it, and every path is given it.
pub fn key() -> &'static Key {
    static K: OnceLock<Key> = OnceLock::new();
    K.get_or_init(|| Key::from_bytes(*b"nsimage fuzz at_rest target key!"))
}

/// Another key: pieces sealed with it, and the load with a wrong key.
fn other_key() -> &'static Key {
    static K: OnceLock<Key> = OnceLock::new();
    K.get_or_init(|| Key::from_bytes(*b"not the key the index names, no!"))
}

/// The image id of the images the target builds.
const IMAGE_ID: [u8; ID_LEN] = *b"nsimage-fuzz-id!";

/// How the pieces of a structured input's image are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    /// Neither compressed nor encrypted.
    Plain,
    /// zstd.
    Zstd,
    /// LZ4.
    Lz4,
    /// AES-256-GCM.
    Encrypted,
    /// zstd, then AES-256-GCM.
    ZstdEncrypted,
    /// LZ4, then AES-256-GCM.
    Lz4Encrypted,
}

impl Storage {
    /// Every storage, in the order the mode byte numbers them.
    pub const ALL: [Storage; 6] = [
        Storage::Plain,
        Storage::Zstd,
        Storage::Lz4,
        Storage::Encrypted,
        Storage::ZstdEncrypted,
        Storage::Lz4Encrypted,
    ];

    /// The codec pieces are compressed with.
    pub fn codec(self) -> Codec {
        match self {
            Storage::Zstd | Storage::ZstdEncrypted => Codec::Zstd,
            Storage::Lz4 | Storage::Lz4Encrypted => Codec::Lz4,
            _ => Codec::None,
        }
    }

    /// Whether pieces are encrypted.
    pub fn encrypted(self) -> bool {
        matches!(
            self,
            Storage::Encrypted | Storage::ZstdEncrypted | Storage::Lz4Encrypted
        )
    }

    /// The writer's options for this storage, with the target's key.
    pub fn write_options(self) -> AtRestOptions {
        AtRestOptions {
            compression: Compression {
                codec: self.codec(),
                level: 0,
            },
            key: self.encrypted().then(|| key().clone()),
        }
    }
}

/// An edit of a piece's bytes.
#[derive(Clone, Debug)]
enum Edit {
    Flip(usize, u8),
    Set(usize, u8),
    Truncate(usize),
    Append(Vec<u8>),
    Delete(usize, usize),
}

impl Edit {
    fn read(inp: &mut Input) -> Edit {
        match inp.u8() % 5 {
            0 => Edit::Flip(inp.u16() as usize, inp.u8() % 8),
            1 => Edit::Set(inp.u16() as usize, inp.u8()),
            2 => Edit::Truncate(inp.u16() as usize),
            3 => {
                let n = 1 + inp.u8() as usize % 16;
                Edit::Append(inp.bytes(n))
            }
            _ => Edit::Delete(inp.u16() as usize, 1 + inp.u8() as usize % 16),
        }
    }

    fn apply(&self, b: &mut Vec<u8>) {
        match self {
            Edit::Flip(pos, bit) => {
                if !b.is_empty() {
                    let i = pos % b.len();
                    b[i] ^= 1 << bit;
                }
            }
            Edit::Set(pos, v) => {
                if !b.is_empty() {
                    let i = pos % b.len();
                    b[i] = *v;
                }
            }
            Edit::Truncate(n) => {
                let keep = n % (b.len() + 1);
                b.truncate(keep);
            }
            Edit::Append(bytes) => b.extend_from_slice(bytes),
            Edit::Delete(pos, n) => {
                if !b.is_empty() {
                    let i = pos % b.len();
                    let j = (i + n).min(b.len());
                    b.drain(i..j);
                }
            }
        }
    }
}

/// What the index claims as a plain length.
#[derive(Clone, Copy, Debug)]
enum RawClaim {
    /// What a writer would write.
    True,
    /// The true claim plus a small amount.
    Delta(i64),
    /// This value.
    Set(u64),
    /// The payload's length times this, plus a small amount (255 times is
    /// the largest a compressed piece may claim).
    Times(u64, i64),
}

impl RawClaim {
    fn read(inp: &mut Input) -> RawClaim {
        match inp.u8() % 4 {
            0 => RawClaim::Delta(inp.u8() as i8 as i64),
            1 => RawClaim::Set(match inp.u8() % 6 {
                0 => 0,
                1 => 1,
                2 => MAX_PLAIN_LENGTH,
                3 => MAX_PLAIN_LENGTH + 1,
                4 => u64::MAX,
                _ => inp.u64(),
            }),
            2 => RawClaim::Times(MAX_EXPANSION, inp.u8() as i8 as i64 % 3),
            _ => RawClaim::Times(1 + inp.u8() as u64 % 300, 0),
        }
    }

    fn value(self, truth: u64, payload: u64) -> u64 {
        match self {
            RawClaim::True => truth,
            RawClaim::Delta(d) => truth.saturating_add_signed(d),
            RawClaim::Set(v) => v,
            RawClaim::Times(k, d) => payload.saturating_mul(k).saturating_add_signed(d),
        }
    }
}

/// One piece: its plain bytes and how it is to be stored.
#[derive(Clone, Debug)]
struct PieceSpec {
    plain: Vec<u8>,
    records: u64,
    first_key: u64,
    codec: Codec,
    /// Keep the compressed bytes even when they are not smaller.
    force: bool,
    /// Edits of the bytes to seal (compressed, or plain).
    payload_edits: Vec<Edit>,
    claim_codec: Option<u32>,
    raw: RawClaim,
    seal: bool,
    nonce: [u8; NONCE_LEN],
    claim_nonce: Option<Vec<u8>>,
    /// Seal with the associated data changed: (field, amount).
    aad_tweak: Option<(u8, u64)>,
    other_key: bool,
    /// Edits of the stored bytes (after sealing).
    stored_edits: Vec<Edit>,
}

#[derive(Clone, Debug)]
struct SecSpec {
    kind: u32,
    optional: bool,
    split: bool,
    pieces: Vec<PieceSpec>,
    /// A split section's own at-rest fields (a writer writes codec 0, no
    /// nonce and the sum of the plain lengths).
    claim_codec: Option<u32>,
    claim_nonce: Option<Vec<u8>>,
    raw: RawClaim,
}

/// The index's encryption message.
#[derive(Clone, Debug)]
struct EncSpec {
    cipher: u32,
    image_id: Vec<u8>,
    fingerprint: Vec<u8>,
}

impl EncSpec {
    fn valid() -> EncSpec {
        EncSpec {
            cipher: AES_256_GCM,
            image_id: IMAGE_ID.to_vec(),
            fingerprint: key().fingerprint().to_vec(),
        }
    }
}

/// An image whose pieces are stored at rest, as the mutations leave it.
#[derive(Clone, Debug)]
pub struct Plan {
    header: Header,
    secs: Vec<SecSpec>,
    enc: Option<EncSpec>,
    /// The image id the pieces are sealed under (their data key and
    /// associated data).
    seal_image_id: [u8; ID_LEN],
    features_xor: u32,
    /// Pieces swapped after sealing, with their index entries (global
    /// piece numbers).
    swaps: Vec<(usize, usize)>,
}

/// A laid-out image, with what the independent check reads.
pub struct Built {
    /// The image file.
    pub img: Vec<u8>,
    index: pb::Index,
    required: u32,
    /// The stored bytes of each piece of each section.
    stored: Vec<Vec<Vec<u8>>>,
}

fn nonce_of(n: usize) -> [u8; NONCE_LEN] {
    let mut x = [0u8; NONCE_LEN];
    x[..4].copy_from_slice(b"fzN1");
    x[4..].copy_from_slice(&(n as u64).to_le_bytes());
    x
}

impl Plan {
    /// The image of `m` with every piece stored as `storage` says.
    pub fn new(m: &Model, storage: Storage) -> Plan {
        let mut n = 0;
        let secs = m
            .secs
            .iter()
            .map(|s| {
                let keys = image::first_keys(s.kind, &s.pieces);
                let mut pieces: Vec<PieceSpec> = s
                    .pieces
                    .iter()
                    .zip(keys)
                    .map(|(p, first_key)| {
                        let mut plain = Vec::new();
                        for r in &p.recs {
                            put_frame(&mut plain, r);
                        }
                        plain.extend_from_slice(&p.tail);
                        n += 1;
                        PieceSpec {
                            plain,
                            records: (p.recs.len() as u64).saturating_add_signed(p.count_delta),
                            first_key,
                            codec: storage.codec(),
                            force: false,
                            payload_edits: Vec::new(),
                            claim_codec: None,
                            raw: RawClaim::True,
                            seal: storage.encrypted(),
                            nonce: nonce_of(n),
                            claim_nonce: None,
                            aad_tweak: None,
                            other_key: false,
                            stored_edits: Vec::new(),
                        }
                    })
                    .collect();
                if !s.split && !pieces.is_empty() {
                    // One piece holds the whole section (as Model::build
                    // lays it out), with the section's record count.
                    let all: u64 = s.pieces.iter().map(|p| p.recs.len() as u64).sum();
                    let mut one = pieces.remove(0);
                    for p in pieces.drain(..) {
                        one.plain.extend(p.plain);
                    }
                    one.records = all.saturating_add_signed(s.count_delta);
                    pieces.push(one);
                }
                SecSpec {
                    kind: s.kind,
                    optional: s.optional,
                    split: s.split,
                    pieces,
                    claim_codec: None,
                    claim_nonce: None,
                    raw: RawClaim::True,
                }
            })
            .collect();
        Plan {
            header: m.header,
            secs,
            enc: storage.encrypted().then(EncSpec::valid),
            seal_image_id: IMAGE_ID,
            features_xor: 0,
            swaps: Vec::new(),
        }
    }

    fn pieces(&self) -> usize {
        self.secs.iter().map(|s| s.pieces.len()).sum()
    }

    fn piece(&mut self, inp: &mut Input) -> Option<&mut PieceSpec> {
        let n = inp.below(self.pieces());
        self.secs.iter_mut().flat_map(|s| &mut s.pieces).nth(n)
    }

    /// Applies one at-rest mutation read from `inp`.
    pub fn mutate(&mut self, inp: &mut Input) {
        match inp.u8() % 16 {
            0 => {
                let e = Edit::read(inp);
                if let Some(p) = self.piece(inp) {
                    p.payload_edits.push(e);
                }
            }
            1 => {
                let e = Edit::read(inp);
                if let Some(p) = self.piece(inp) {
                    p.stored_edits.push(e);
                }
            }
            2 => {
                let c = inp.u8();
                let codec = if c & 0x80 != 0 {
                    inp.u32()
                } else {
                    c as u32 % 4
                };
                if let Some(p) = self.piece(inp) {
                    p.claim_codec = Some(codec);
                }
            }
            3 | 4 => {
                let r = RawClaim::read(inp);
                if let Some(p) = self.piece(inp) {
                    p.raw = r;
                }
            }
            5 => {
                let c = inp.u8();
                let codec = [Codec::None, Codec::Zstd, Codec::Lz4][c as usize % 3];
                if let Some(p) = self.piece(inp) {
                    p.codec = codec;
                    p.force = c & 0x80 != 0;
                }
            }
            6 => {
                // Not sealed (the index still gives its nonce), or sealed
                // in an image that is not encrypted.
                if let Some(p) = self.piece(inp) {
                    if p.seal {
                        p.claim_nonce = Some(p.nonce.to_vec());
                    }
                    p.seal = !p.seal;
                }
            }
            7 => {
                let how = inp.u8() % 3;
                let len = inp.u8() as usize % 17;
                let bytes = inp.bytes(len);
                let other = inp.below(self.pieces());
                let other_nonce = self
                    .secs
                    .iter()
                    .flat_map(|s| &s.pieces)
                    .nth(other)
                    .map(|p| p.nonce);
                if let Some(p) = self.piece(inp) {
                    match how {
                        // Another piece's nonce, sealed with it: the tag
                        // holds, only the reuse is wrong.
                        0 => {
                            if let Some(n) = other_nonce {
                                p.nonce = n;
                            }
                        }
                        // In the index only.
                        1 => p.claim_nonce = Some(bytes),
                        // A nonce of any length, sealed with its first
                        // bytes when it has 12.
                        _ => {
                            if bytes.len() == NONCE_LEN {
                                p.nonce.copy_from_slice(&bytes);
                            } else {
                                p.claim_nonce = Some(bytes);
                            }
                        }
                    }
                }
            }
            8 => {
                let tweak = (inp.u8(), inp.u64());
                if let Some(p) = self.piece(inp) {
                    p.aad_tweak = Some(tweak);
                }
            }
            9 => {
                if let Some(p) = self.piece(inp) {
                    p.other_key = true;
                }
            }
            10 => {
                let (a, b) = (inp.below(self.pieces()), inp.below(self.pieces()));
                if a != b && a < self.pieces() && b < self.pieces() {
                    self.swaps.push((a, b));
                }
            }
            11 => self.mutate_encryption(inp),
            12 => {
                self.features_xor ^= match inp.u8() % 3 {
                    0 => features::COMPRESSED,
                    1 => features::ENCRYPTED,
                    _ => 1 << (inp.u8() % 32),
                }
            }
            13 => {
                let s = inp.below(self.secs.len());
                let what = inp.u8() % 3;
                let r = RawClaim::read(inp);
                let v = inp.u8();
                let nonce = inp.bytes(v as usize % 13);
                if let Some(sec) = self.secs.get_mut(s) {
                    match what {
                        0 => sec.claim_codec = Some(v as u32 % 4),
                        1 => sec.claim_nonce = Some(nonce),
                        _ => sec.raw = r,
                    }
                }
            }
            14 => {
                let (i, bit) = (inp.u8() as usize % ID_LEN, inp.u8() % 8);
                self.seal_image_id[i] ^= 1 << bit;
            }
            _ => {
                // The records of a piece raised to what the index allows
                // of its plain length, or beyond.
                let d = inp.u8() as u64;
                if let Some(p) = self.piece(inp) {
                    p.records = (p.plain.len() as u64 / 9).saturating_add(d % 4);
                }
            }
        }
    }

    fn mutate_encryption(&mut self, inp: &mut Input) {
        let op = inp.u8() % 8;
        let (a, b) = (inp.u8(), inp.u8());
        if op == 7 {
            // Dropped, or added to an image that is not encrypted.
            self.enc = match self.enc {
                Some(_) => None,
                None => Some(EncSpec::valid()),
            };
            return;
        }
        let Some(e) = self.enc.as_mut() else { return };
        match op {
            0 => {
                e.cipher = if a & 0x80 != 0 {
                    a as u32
                } else {
                    a as u32 % 3
                }
            }
            1 => {
                if !e.image_id.is_empty() {
                    let i = a as usize % e.image_id.len();
                    e.image_id[i] ^= 1 << (b % 8);
                }
            }
            2 => e.image_id.resize(a as usize % 33, b),
            3 => {
                if !e.fingerprint.is_empty() {
                    let i = a as usize % e.fingerprint.len();
                    e.fingerprint[i] ^= 1 << (b % 8);
                }
            }
            4 => e.fingerprint.resize(a as usize % 33, b),
            5 => e.fingerprint = other_key().fingerprint().to_vec(),
            _ => {
                // The image id changed where pieces are sealed too: a
                // consistent image under another id.
                if !e.image_id.is_empty() {
                    let i = a as usize % e.image_id.len();
                    e.image_id[i] ^= 1 << (b % 8);
                }
                if let Ok(id) = <[u8; ID_LEN]>::try_from(&e.image_id[..]) {
                    self.seal_image_id = id;
                }
            }
        }
    }

    /// Lays the image out: pieces compressed, edited, sealed (with the
    /// associated data of their final place unless a mutation said
    /// otherwise), swapped, then every offset, length and checksum placed.
    pub fn build(&self) -> Built {
        // What each piece's index entry says, and its bytes before sealing.
        struct Out {
            sec: usize,
            piece: u32,
            payload: Vec<u8>,
            codec: u32,
            raw: u64,
            nonce: Vec<u8>,
            stored: Vec<u8>,
            records: u64,
            first_key: u64,
        }
        let mut outs = Vec::with_capacity(self.pieces());
        let mut comp = Vec::new();
        for (si, s) in self.secs.iter().enumerate() {
            for (pi, p) in s.pieces.iter().enumerate() {
                let c = Compression {
                    codec: p.codec,
                    level: 1,
                };
                let shrunk = c.compress(&p.plain, &mut comp);
                let (mut payload, codec) =
                    if p.codec != Codec::None && (shrunk || (p.force && !comp.is_empty())) {
                        (comp.clone(), p.codec)
                    } else {
                        (p.plain.clone(), Codec::None)
                    };
                for e in &p.payload_edits {
                    e.apply(&mut payload);
                }
                let truth = match (codec, p.seal) {
                    (Codec::None, false) => 0,
                    (Codec::None, true) => payload.len() as u64,
                    _ => p.plain.len() as u64,
                };
                let raw = p.raw.value(truth, payload.len() as u64);
                let nonce = p.claim_nonce.clone().unwrap_or_else(|| {
                    if p.seal {
                        p.nonce.to_vec()
                    } else {
                        Vec::new()
                    }
                });
                outs.push(Out {
                    sec: si,
                    piece: if s.split { pi as u32 } else { 0 },
                    codec: p.claim_codec.unwrap_or(codec.as_u32()),
                    raw,
                    nonce,
                    stored: Vec::new(),
                    records: p.records,
                    first_key: p.first_key,
                    payload,
                });
            }
        }
        // The final lengths, before swapping: the offsets pieces are
        // sealed at.
        let specs: Vec<&PieceSpec> = self.secs.iter().flat_map(|s| &s.pieces).collect();
        let final_len = |o: &Out, p: &PieceSpec| {
            let mut dummy = vec![0u8; o.payload.len() + if p.seal { TAG_LEN } else { 0 }];
            for e in &p.stored_edits {
                e.apply(&mut dummy);
            }
            dummy.len() as u64
        };
        let mut offset = nsimage_format::consts::header::SIZE as u64;
        for (o, p) in outs.iter_mut().zip(&specs) {
            let len = final_len(o, p);
            let mut buf = std::mem::take(&mut o.payload);
            if p.seal {
                let mut place = PiecePlace {
                    kind: self.secs[o.sec].kind,
                    section: o.sec as u32,
                    piece: o.piece,
                    offset,
                    raw_length: o.raw,
                    codec: o.codec,
                };
                let mut id = self.seal_image_id;
                if let Some((field, v)) = p.aad_tweak {
                    let d = v | 1;
                    match field % 7 {
                        0 => place.kind = place.kind.wrapping_add(d as u32 | 1),
                        1 => place.section = place.section.wrapping_add(d as u32 | 1),
                        2 => place.piece = place.piece.wrapping_add(d as u32 | 1),
                        3 => place.offset = place.offset.wrapping_add(d),
                        4 => place.raw_length = place.raw_length.wrapping_add(d),
                        5 => place.codec = place.codec.wrapping_add(d as u32 | 1),
                        _ => id[v as usize % ID_LEN] ^= 1 << (field % 8),
                    }
                }
                let k = if p.other_key { other_key() } else { key() };
                let sealed_nonce = p.nonce;
                k.image_cipher(&self.seal_image_id)
                    .seal(&sealed_nonce, &place.aad(&id), &mut buf);
            }
            for e in &p.stored_edits {
                e.apply(&mut buf);
            }
            debug_assert_eq!(buf.len() as u64, len);
            offset += len;
            o.stored = buf;
        }
        // Swaps move a piece's stored bytes with its whole index entry.
        for &(a, b) in &self.swaps {
            let (lo, hi) = (a.min(b), a.max(b));
            if hi < outs.len() {
                let (x, y) = outs.split_at_mut(hi);
                let (p, q) = (&mut x[lo], &mut y[0]);
                std::mem::swap(&mut p.stored, &mut q.stored);
                std::mem::swap(&mut p.codec, &mut q.codec);
                std::mem::swap(&mut p.raw, &mut q.raw);
                std::mem::swap(&mut p.nonce, &mut q.nonce);
                std::mem::swap(&mut p.records, &mut q.records);
                std::mem::swap(&mut p.first_key, &mut q.first_key);
            }
        }
        // Laid out.
        let compressed = outs.iter().any(|o| o.codec != 0);
        let mut required = self.header.required_features;
        if compressed {
            required |= features::COMPRESSED;
        }
        if self.enc.is_some() {
            required |= features::ENCRYPTED;
        }
        required ^= self.features_xor;
        let header = Header {
            required_features: required,
            ..self.header
        };
        let mut img = header.encode().to_vec();
        let mut sections = Vec::with_capacity(self.secs.len());
        let mut stored = Vec::with_capacity(self.secs.len());
        let mut outs = outs.into_iter().peekable();
        for (si, s) in self.secs.iter().enumerate() {
            let offset = img.len() as u64;
            let mut whole = Xxh3::new();
            let mut subs = Vec::new();
            let mut bytes = Vec::new();
            while let Some(o) = outs.next_if(|o| o.sec == si) {
                let start = img.len() as u64;
                img.extend_from_slice(&o.stored);
                whole.update(&o.stored);
                subs.push(pb::SubSection {
                    offset: start,
                    length: o.stored.len() as u64,
                    records: o.records,
                    first_key: o.first_key,
                    checksum: xxh3_64(&o.stored),
                    codec: o.codec,
                    raw_length: o.raw,
                    nonce: o.nonce,
                });
                bytes.push(o.stored);
            }
            let length = img.len() as u64 - offset;
            let mut sec = pb::Section {
                kind: s.kind,
                optional: s.optional,
                offset,
                length,
                records: 0,
                checksum: whole.digest(),
                sub_sections: Vec::new(),
                codec: 0,
                raw_length: 0,
                nonce: Vec::new(),
            };
            if s.split {
                sec.records = subs.iter().fold(0u64, |a, u| a.saturating_add(u.records));
                let transformed = |u: &pb::SubSection| u.codec != 0 || !u.nonce.is_empty();
                let any = subs.iter().any(transformed);
                let sum = subs.iter().fold(0u64, |a, u| {
                    a.saturating_add(if transformed(u) {
                        u.raw_length
                    } else {
                        u.length
                    })
                });
                let truth = if any { sum } else { 0 };
                sec.raw_length = s.raw.value(truth, length);
                sec.codec = s.claim_codec.unwrap_or(0);
                sec.nonce = s.claim_nonce.clone().unwrap_or_default();
                sec.sub_sections = subs;
            } else if let Some(u) = subs.pop() {
                sec.records = u.records;
                sec.codec = u.codec;
                sec.raw_length = u.raw_length;
                sec.nonce = u.nonce;
            }
            sections.push(sec);
            stored.push(bytes);
        }
        let index = pb::Index {
            sections,
            encryption: self.enc.as_ref().map(|e| pb::Encryption {
                cipher: e.cipher,
                image_id: e.image_id.clone(),
                key_fingerprint: e.fingerprint.clone(),
            }),
        };
        let encoded = index.encode_to_vec();
        let index_offset = img.len() as u64;
        img.extend_from_slice(&encoded);
        let foot = Footer {
            index_offset,
            index_length: encoded.len() as u64,
            index_checksum: xxh3_64(&encoded),
            file_length: (img.len() + footer::SIZE) as u64,
        };
        img.extend_from_slice(&foot.encode());
        Built {
            img,
            index,
            required,
            stored,
        }
    }
}

/// A piece's index entry as [`must_refuse`] reads it: its position in its
/// section, offset, codec, plain length, nonce and stored length.
type Entry<'a> = (u32, u64, u32, u64, &'a [u8], u64);

/// Why a reader must refuse `b`, from the rules of "Pieces at rest" alone
/// (an independent check of the index's at-rest fields and of every piece
/// of the sections a load reads: it authenticates and decompresses to its
/// plain length), or `None` when these rules hold.
pub fn must_refuse(b: &Built) -> Option<String> {
    let enc = b.index.encryption.as_ref();
    if (b.required & features::ENCRYPTED != 0) != enc.is_some() {
        return Some("the ENCRYPTED bit disagrees with the index".into());
    }
    let cipher = match enc {
        None => None,
        Some(e) => {
            if e.cipher != AES_256_GCM {
                return Some(format!("cipher {}", e.cipher));
            }
            let Ok(id) = <[u8; ID_LEN]>::try_from(&e.image_id[..]) else {
                return Some(format!("an image id of {} bytes", e.image_id.len()));
            };
            if e.key_fingerprint[..] != key().fingerprint()[..] {
                return Some("another key's fingerprint".into());
            }
            Some((key().image_cipher(&id), id))
        }
    };
    let mut nonces = std::collections::HashSet::new();
    for (si, s) in b.index.sections.iter().enumerate() {
        let split = !s.sub_sections.is_empty();
        if split && (s.codec != 0 || !s.nonce.is_empty()) {
            return Some(format!(
                "section {si}: a split section with a codec or nonce"
            ));
        }
        let pieces: Vec<Entry> = if split {
            s.sub_sections
                .iter()
                .enumerate()
                .map(|(i, u)| {
                    (
                        i as u32,
                        u.offset,
                        u.codec,
                        u.raw_length,
                        &u.nonce[..],
                        u.length,
                    )
                })
                .collect()
        } else {
            vec![(0, s.offset, s.codec, s.raw_length, &s.nonce[..], s.length)]
        };
        for (pi, (piece, offset, codec, raw, nonce, length)) in pieces.into_iter().enumerate() {
            let at = format!("section {si} (kind {}), piece {piece}", s.kind);
            let Some(c) = Codec::from_u32(codec) else {
                return Some(format!("{at}: codec {codec}"));
            };
            if c != Codec::None && b.required & features::COMPRESSED == 0 {
                return Some(format!("{at}: compressed without the COMPRESSED bit"));
            }
            let payload = match enc {
                Some(_) => {
                    if nonce.len() != NONCE_LEN {
                        return Some(format!("{at}: a nonce of {} bytes", nonce.len()));
                    }
                    if !nonces.insert(nonce.to_vec()) {
                        return Some(format!("{at}: a reused nonce"));
                    }
                    let Some(p) = length.checked_sub(TAG_LEN as u64) else {
                        return Some(format!("{at}: shorter than a tag"));
                    };
                    p
                }
                None => {
                    if !nonce.is_empty() {
                        return Some(format!("{at}: a nonce without encryption"));
                    }
                    length
                }
            };
            if c != Codec::None
                && (raw == 0 || raw > payload.saturating_mul(MAX_EXPANSION).min(MAX_PLAIN_LENGTH))
            {
                return Some(format!(
                    "{at}: plain length {raw} of a {c} piece of {payload} bytes"
                ));
            }
            if c == Codec::None && enc.is_none() && raw != 0 && raw != length {
                return Some(format!(
                    "{at}: plain length {raw} of a plain piece of {length} bytes"
                ));
            }
            if c == Codec::None && enc.is_some() && raw != payload {
                return Some(format!("{at}: plain length {raw}, {payload} bytes sealed"));
            }
            // The pieces every load decodes.
            if !(1..=4).contains(&s.kind) {
                continue;
            }
            let mut buf = b.stored[si].get(pi).cloned().unwrap_or_default();
            if let Some((cipher, id)) = &cipher {
                let aad = PiecePlace {
                    kind: s.kind,
                    section: si as u32,
                    piece,
                    offset,
                    raw_length: raw,
                    codec,
                }
                .aad(id);
                let mut n = [0u8; NONCE_LEN];
                n.copy_from_slice(nonce);
                if cipher.open(&n, &aad, &mut buf).is_err() {
                    return Some(format!("{at}: does not authenticate"));
                }
            }
            if c != Codec::None {
                let mut out = Vec::new();
                if let Err(e) = codec::decompress(c, &buf, raw, &mut out) {
                    return Some(format!("{at}: {e}"));
                }
            }
        }
    }
    None
}

/// The image that `data` describes (and, for a structured input, what
/// the independent check reads).
pub fn image(data: &[u8]) -> (Vec<u8>, Option<Built>) {
    let mut inp = Input::new(data);
    let mode = inp.u8();
    if mode % 7 == 6 {
        return (inp.rest().to_vec(), None);
    }
    let storage = Storage::ALL[mode as usize % 7];
    let bases = image::bases();
    let mut m = Model::parse(&bases[mode as usize / 7 % bases.len()]);
    for _ in 0..inp.u8() % 4 {
        m.mutate(&mut inp);
    }
    let mut plan = Plan::new(&m, storage);
    let mut budget = 64;
    while !inp.done() && budget > 0 {
        plan.mutate(&mut inp);
        budget -= 1;
    }
    let built = plan.build();
    (built.img.clone(), Some(built))
}

/// The writer's image of the `image` target's base namespace `base` (0 or
/// 1: the rich namespace split and unsplit; 2 or 3: the generated one)
/// stored as `storage`, encrypted with the target's key: the raw seeds.
pub fn written(base: usize, storage: Storage) -> Vec<u8> {
    let ns = if base < 2 {
        image::rich()
    } else {
        nsimage_testkit::generate::generate(nsimage_testkit::generate::GenSpec {
            inodes: 40,
            seed: 7,
        })
    };
    let mut opts = if base.is_multiple_of(2) {
        WriteOptions {
            sub_section_bytes: if base < 2 { 160 } else { 200 },
            sub_section_min_inodes: 0,
            batch_inodes: 7,
            ..WriteOptions::default()
        }
    } else {
        WriteOptions::default()
    };
    opts.at_rest = storage.write_options();
    let mut out = Vec::new();
    write_image(&ns, &mut out, &opts).expect("writing to a Vec");
    out
}

/// Panics unless every read path, given the key, gives the same verdict
/// on `img`; unless every path refuses an image that [`must_refuse`]
/// refuses; and unless an encrypted image that loads is refused without
/// its key and with another one. Returns the verdicts.
pub fn check(img: &[u8], built: Option<&Built>) -> Vec<(String, Result<u64, String>)> {
    let v = image::verdicts_with(img, Some(key()));
    image::agree(&v);
    if let Some(why) = built.and_then(must_refuse) {
        if v.iter().any(|(_, r)| r.is_ok()) {
            panic!(
                "an image that must be refused ({why}) is accepted:\n{}",
                image::table(&v)
            );
        }
    }
    let encrypted = Header::decode(img)
        .map(|h| h.required_features & features::ENCRYPTED != 0)
        .unwrap_or(false);
    if encrypted && v.iter().all(|(_, r)| r.is_ok()) {
        let path = image::scratch_file();
        std::fs::write(&path, img).expect("writing the image");
        for (name, k) in [("no key", None), ("another key", Some(other_key()))] {
            let opts = LoadOptions {
                md5: nsimage_loader::hdfs::Md5Policy::Check,
                threads: 1,
                read: ReadStrategy::Bulk,
                serial: true,
                parallel_threshold: 0,
                key: k.cloned(),
                timeline: None,
                budget: None,
            };
            match load(&path, &opts) {
                Ok(_) => panic!("an encrypted image loads with {name}"),
                Err(e) => assert!(e.is_data_error(), "{name}: an I/O error: {e}"),
            }
            match verify(
                &path,
                &VerifyOptions {
                    read: ReadStrategy::Bulk,
                    key: k.cloned(),
                    ..VerifyOptions::default()
                },
            ) {
                Ok(r) => assert!(!r.is_ok(), "verify accepts an encrypted image with {name}"),
                Err(e) => assert!(e.is_data_error(), "verify, {name}: an I/O error: {e}"),
            }
        }
        let _ = std::fs::remove_file(&path);
    }
    v
}

/// The fuzz target's body. With `NSIMAGE_FUZZ_WRITE_IMAGE=PATH` in the
/// environment it also writes the image it checks to PATH (load it with
/// the key `fuzz/README.md` gives).
pub fn run(data: &[u8]) {
    let (img, built) = image(data);
    if let Some(path) = std::env::var_os("NSIMAGE_FUZZ_WRITE_IMAGE") {
        std::fs::write(path, &img).expect("writing NSIMAGE_FUZZ_WRITE_IMAGE");
    }
    check(&img, built.as_ref());
}

/// The target's generated seeds, by file name: every base in every storage
/// without mutations, the writer's images of the split bases in every
/// storage but plain (raw), one input per at-rest mutation on a split
/// zstd+encrypted image, decompression bombs and a swap of two pieces.
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    let name = |s: Storage| format!("{s:?}").to_lowercase();
    let mode = |b: usize, s: Storage| {
        let i = Storage::ALL.iter().position(|&x| x == s).unwrap_or(0);
        (b * 7 + i) as u8
    };
    let mut out = Vec::new();
    for b in 0..4 {
        for s in Storage::ALL {
            out.push((format!("base{b}-{}", name(s)), vec![mode(b, s), 0]));
        }
    }
    for b in [0, 2] {
        for s in &Storage::ALL[1..] {
            let mut data = vec![6u8];
            data.extend(written(b, *s));
            out.push((format!("raw-base{b}-{}", name(*s)), data));
        }
    }
    let m = mode(0, Storage::ZstdEncrypted);
    for op in 0..16u8 {
        let mut data = vec![m, 0, op];
        data.extend((1..=24u8).map(|i| i.wrapping_mul(op + 3)));
        out.push((format!("op{op:02}-base0-zstdencrypted"), data));
    }
    // Plain length u64::MAX, and 255 times the stored bytes plus one, of
    // piece 5; the same within the limit (decompression must refuse).
    out.push(("bomb-u64-max".into(), vec![m, 0, 3, 1, 4, 5, 0]));
    out.push(("bomb-255x-plus-1".into(), vec![m, 0, 3, 2, 1, 5, 0]));
    out.push(("bomb-255x".into(), vec![m, 0, 3, 2, 0, 5, 0]));
    let lz = mode(2, Storage::Lz4);
    out.push(("bomb-255x-lz4".into(), vec![lz, 0, 4, 2, 0, 3, 0]));
    // Pieces 2 and 3 swapped with their index entries.
    out.push(("swap-2-3".into(), vec![m, 0, 10, 2, 0, 3, 0]));
    // NS_INFO and STRING_TABLE of the unsplit rich image, encrypted,
    // swapped with their index entries: authentication fails.
    let e = mode(1, Storage::Encrypted);
    out.push((
        "swap-ns-info-string-table".into(),
        vec![e, 0, 10, 0, 0, 1, 0],
    ));
    // A record-level mutation first (a flipped bit), then a payload edit.
    out.push((
        "record-flip-then-payload".into(),
        vec![m, 1, 0, 7, 0, 9, 0, 3, 0, 0, 4, 0, 2, 0],
    ));
    out
}
