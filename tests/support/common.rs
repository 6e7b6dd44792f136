//! Helpers shared by the integration tests.
#![allow(dead_code)]

use nsimage_namespace::{Block, FileSpec, Namespace, PermSpec};
use nsimage_writer::{write_image, WriteOptions};

pub const P: PermSpec<'static> = PermSpec {
    user: b"hdfs",
    group: b"supergroup",
    mode: 0o755,
};

pub const F: FileSpec = FileSpec {
    replication: 3,
    preferred_block_size: 128 << 20,
    storage_policy: 0,
};

/// Options that cut a sub-section after every `bytes` bytes, whatever the size.
pub fn tiny(bytes: u64) -> WriteOptions {
    WriteOptions {
        sub_section_bytes: bytes,
        sub_section_min_inodes: 0,
        batch_inodes: 7,
        ..WriteOptions::default()
    }
}

pub fn image(ns: &Namespace, opts: &WriteOptions) -> Vec<u8> {
    let mut out = Vec::new();
    write_image(ns, &mut out, opts).expect("writing to a Vec");
    out
}

/// A small namespace with every kind of inode and attribute.
pub fn sample() -> Namespace {
    let mut ns = Namespace::default();
    let d = ns.mkdirs(b"/data/2024/01", &P, 10).unwrap();
    for i in 0..40u64 {
        let f = ns
            .create_in(d, format!("part-{i:03}").as_bytes(), &P, &F, 20 + i)
            .unwrap();
        for b in 0..(i % 4) {
            ns.add_block(
                f,
                Block {
                    id: 1000 + i * 4 + b,
                    generation_stamp: 5000 + i,
                    length: 1 + i * b,
                },
            )
            .unwrap();
        }
    }
    let u = ns.mkdirs(b"/user/alice", &P, 30).unwrap();
    ns.symlink(b"/user/alice/latest", b"/data/2024/01", &P, 31)
        .unwrap();
    ns.set_xattr(u, nsimage_namespace::XAttrNs::User, b"team", b"core")
        .unwrap();
    ns.set_acl(u, &[(b"", 0, false, 7), (b"bob", 0, false, 5)])
        .unwrap();
    ns.set_quota(u, 100, 1 << 30).unwrap();
    let f = ns.create(b"/user/alice/open", &P, &F, 40).unwrap();
    ns.set_under_construction(f, Some((b"client-1", b"host-1")))
        .unwrap();
    ns
}

/// Loads an image from bytes through a temporary file, mapped (the
/// command line's default) and read in bulk (the library's default): both
/// must agree, and the mapped load's result is returned.
pub fn load_bytes(bytes: &[u8]) -> Result<Namespace, nsimage_loader::LoadError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("img.nsi");
    std::fs::write(&path, bytes).expect("write image");
    let load = |read| {
        let opts = nsimage_loader::LoadOptions {
            read,
            ..Default::default()
        };
        nsimage_loader::load(&path, &opts).map(|l| l.namespace)
    };
    let mapped = load(mmap());
    let bulk = load(nsimage_loader::ReadStrategy::Bulk);
    match (&mapped, &bulk) {
        (Ok(a), Ok(b)) => assert_eq!(a.digest(), b.digest(), "mmap and bulk loads differ"),
        (Err(_), Err(_)) => {}
        (a, b) => panic!(
            "mmap and bulk disagree: mmap {:?}, bulk {:?}",
            a.as_ref().map(|n| n.digest()),
            b.as_ref().map(|n| n.digest())
        ),
    }
    mapped
}

/// The index of an image held in memory.
pub fn index_of(bytes: &[u8]) -> nsimage_format::Index {
    use nsimage_format::{consts::footer, Footer, Index};
    let f = Footer::decode(&bytes[bytes.len() - footer::SIZE..], bytes.len() as u64).unwrap();
    let s = f.index_offset as usize;
    Index::decode(
        &bytes[s..s + f.index_length as usize],
        f.index_offset,
        f.index_checksum,
    )
    .unwrap()
}

/// Appends `idx` and a matching footer to `body` (header and sections).
pub fn with_index(mut body: Vec<u8>, idx: &nsimage_format::Index) -> Vec<u8> {
    use nsimage_format::{consts::footer, Footer};
    let ib = idx.encode();
    let index_offset = body.len() as u64;
    body.extend_from_slice(&ib);
    let foot = Footer {
        index_offset,
        index_length: ib.len() as u64,
        index_checksum: xxhash_rust::xxh3::xxh3_64(&ib),
        file_length: (body.len() + footer::SIZE) as u64,
    };
    body.extend_from_slice(&foot.encode());
    body
}

/// Recomputes every checksum of an image whose bytes were changed, so that
/// only validation can catch the change: the header's, each section's and
/// sub-section's (through a re-encoded index), the index's and the
/// footer's. Regions that cannot be found any more (a damaged footer or
/// index) are left as they are; the image is then refused for that.
pub fn reseal(bytes: &mut Vec<u8>) {
    use nsimage_format::consts::{footer, header};
    use nsimage_format::pb;
    use prost::Message;
    use xxhash_rust::xxh3::xxh3_64;
    let le = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    if bytes.len() < header::SIZE + footer::SIZE {
        return;
    }
    let sum = xxh3_64(&bytes[..header::CHECKSUM]);
    bytes[header::CHECKSUM..header::CHECKSUM + 8].copy_from_slice(&sum.to_le_bytes());
    let fstart = bytes.len() - footer::SIZE;
    let (io, il) = (
        le(bytes, fstart + footer::INDEX_OFFSET),
        le(bytes, fstart + footer::INDEX_LENGTH),
    );
    let Some(iend) = io.checked_add(il).filter(|&e| e <= fstart as u64) else {
        return;
    };
    let (io, iend) = (io as usize, iend as usize);
    // Section checksums, when the index still decodes and its ranges lie
    // inside the file; the index is re-encoded only if a sum changed.
    if let Ok(mut idx) = pb::Index::decode(&bytes[io..iend]) {
        let range = |o: u64, l: u64| {
            o.checked_add(l)
                .filter(|&e| e <= io as u64)
                .map(|e| o as usize..e as usize)
        };
        let mut changed = false;
        for s in &mut idx.sections {
            if let Some(r) = range(s.offset, s.length) {
                let c = xxh3_64(&bytes[r]);
                changed |= c != s.checksum;
                s.checksum = c;
            }
            for u in &mut s.sub_sections {
                if let Some(r) = range(u.offset, u.length) {
                    let c = xxh3_64(&bytes[r]);
                    changed |= c != u.checksum;
                    u.checksum = c;
                }
            }
        }
        if changed {
            let mut out = bytes[..io].to_vec();
            out.extend_from_slice(&idx.encode_to_vec());
            let new_len = out.len() - io;
            out.extend_from_slice(&bytes[iend..]);
            *bytes = out;
            let (total, fstart) = (bytes.len() as u64, bytes.len() - footer::SIZE);
            bytes[fstart + footer::INDEX_LENGTH..fstart + footer::INDEX_LENGTH + 8]
                .copy_from_slice(&(new_len as u64).to_le_bytes());
            bytes[fstart + footer::FILE_LENGTH..fstart + footer::FILE_LENGTH + 8]
                .copy_from_slice(&total.to_le_bytes());
        }
    }
    let fstart = bytes.len() - footer::SIZE;
    let (io, il) = (
        le(bytes, fstart + footer::INDEX_OFFSET) as usize,
        le(bytes, fstart + footer::INDEX_LENGTH) as usize,
    );
    let isum = xxh3_64(&bytes[io..io + il]);
    bytes[fstart + footer::INDEX_CHECKSUM..fstart + footer::INDEX_CHECKSUM + 8]
        .copy_from_slice(&isum.to_le_bytes());
    let fsum = xxh3_64(&bytes[fstart..fstart + footer::CHECKSUM]);
    bytes[fstart + footer::CHECKSUM..fstart + footer::CHECKSUM + 8]
        .copy_from_slice(&fsum.to_le_bytes());
}

/// Rewrites every record of the sections of `kinds` through `f(kind,
/// body)` (the new body), keeping each record in its sub-section; offsets,
/// lengths and checksums of sections, sub-sections, index and footer are
/// recomputed. First keys and record counts are kept as they were.
pub fn rewrite_records(
    bytes: &[u8],
    kinds: &[nsimage_format::SectionKind],
    mut f: impl FnMut(nsimage_format::SectionKind, &[u8]) -> Vec<u8>,
) -> Vec<u8> {
    use nsimage_format::framing::{put_frame, Records};
    use nsimage_format::Location;
    rebuild(bytes, |s| {
        if !kinds.contains(&s.kind) {
            return None;
        }
        let pieces = s.pieces().into_iter().map(|p| {
            let region = &bytes[p.offset as usize..(p.offset + p.length) as usize];
            let mut out = Vec::new();
            for r in Records::new(region, Location::at(p.offset)) {
                let (_, body) = r.expect("a well-framed image");
                put_frame(&mut out, &f(s.kind, body));
            }
            (out, p.records, p.first_key)
        });
        Some(pieces.collect())
    })
}

/// `bytes` with section `kind` written as `pieces` (each its framed
/// records, their count and its first key), every offset and checksum of
/// sections, sub-sections, index and footer recomputed.
pub fn replace_section(
    bytes: &[u8],
    kind: nsimage_format::SectionKind,
    pieces: &[(Vec<u8>, u64, u64)],
) -> Vec<u8> {
    rebuild(bytes, |s| (s.kind == kind).then(|| pieces.to_vec()))
}

/// `bytes` with each section for which `new` gives pieces (framed
/// records, their count, first key) written as those pieces (a section
/// that had no sub-sections keeps none when given one piece), the others
/// copied; every offset and checksum recomputed.
fn rebuild(
    bytes: &[u8],
    mut new: impl FnMut(&nsimage_format::SectionInfo) -> Option<Vec<(Vec<u8>, u64, u64)>>,
) -> Vec<u8> {
    use xxhash_rust::xxh3::xxh3_64;
    let mut idx = index_of(bytes);
    let mut out = bytes[..nsimage_format::consts::header::SIZE].to_vec();
    for s in &mut idx.sections {
        let start = out.len() as u64;
        if let Some(pieces) = new(s) {
            let mut subs = Vec::new();
            for (b, records, key) in pieces {
                let off = out.len() as u64;
                out.extend_from_slice(&b);
                subs.push(nsimage_format::SubSectionInfo {
                    offset: off,
                    length: b.len() as u64,
                    records,
                    first_key: key,
                    checksum: xxh3_64(&b),
                    at_rest: Default::default(),
                });
            }
            s.records = subs.iter().map(|p| p.records).sum();
            if !s.sub_sections.is_empty() || subs.len() > 1 {
                s.sub_sections = subs;
            }
        } else {
            out.extend_from_slice(&bytes[s.offset as usize..s.end() as usize]);
            for u in &mut s.sub_sections {
                u.offset = u.offset - s.offset + start;
            }
        }
        s.offset = start;
        s.length = out.len() as u64 - start;
        s.checksum = xxh3_64(&out[start as usize..]);
    }
    with_index(out, &idx)
}

/// The mapped read strategy (an `unsafe` opt-in in the library).
pub fn mmap() -> nsimage_loader::ReadStrategy {
    // SAFETY: test images are written once into a private temporary
    // directory and nothing changes them while they are loaded.
    unsafe { nsimage_loader::ReadStrategy::mmap() }
}

/// The verdict of one read path: the digest, or refused.
pub type Verdict = Option<nsimage_namespace::Digest>;

/// Loads `path` (an image that may be encrypted with `key`) through every
/// read path (mmap, bulk, stream; 1 and 2 threads, sub-sections in
/// parallel) and `verify`; returns each path's name and verdict.
pub fn every_path(
    path: &std::path::Path,
    key: Option<&nsimage_format::cipher::Key>,
) -> Vec<(String, Verdict)> {
    use nsimage_loader::{load, verify, LoadOptions, ReadStrategy, VerifyOptions};
    let mut out = Vec::new();
    for read in [mmap(), ReadStrategy::Bulk, ReadStrategy::Stream] {
        for threads in [1, 2] {
            let o = LoadOptions {
                threads,
                read,
                serial: threads == 1,
                parallel_threshold: 0,
                key: key.cloned(),
                timeline: None,
                budget: None,
                md5: nsimage_loader::hdfs::Md5Policy::Check,
            };
            let v = load(path, &o).ok().map(|l| l.namespace.digest());
            out.push((format!("{read:?}/{threads}"), v));
        }
    }
    let ok = verify(
        path,
        &VerifyOptions {
            read: ReadStrategy::Bulk,
            key: key.cloned(),
            ..VerifyOptions::default()
        },
    )
    .is_ok_and(|r| r.is_ok());
    // verify gives no digest: it agrees when it accepts exactly what the
    // loads accept; its verdict is compared through the first load's.
    let first = out[0].1;
    // Nor does the streamed read of the viewer's commands (the tree, then
    // every INODE piece again), here on this thread (tests/it/viewer/
    // stream.rs runs it on pools); an image it cannot stream is loaded
    // whole by its callers (no verdict of its own).
    if let Some(ok) = streamed(path, key) {
        out.push((
            "streamed".into(),
            if ok {
                first.or(Some(nsimage_namespace::Digest(0)))
            } else {
                None
            },
        ));
    }
    out.push((
        "verify".into(),
        if ok {
            first.or(Some(nsimage_namespace::Digest(0)))
        } else {
            None
        },
    ));
    out
}

/// Whether the streamed read (on this thread) accepts `path` (`None`: an
/// image it does not stream, a Hadoop one or one too sparse).
pub fn streamed(path: &std::path::Path, key: Option<&nsimage_format::cipher::Key>) -> Option<bool> {
    use nsimage_loader::skeleton::Skeleton;
    if nsimage_loader::hdfs::is_hdfs_file(path).unwrap_or(false) {
        return None;
    }
    let Ok(mut src) = nsimage_loader::ImageSource::open(path) else {
        return Some(false);
    };
    if src.unlock(key).is_err() {
        return Some(false);
    }
    let src = nsimage_loader::Streamable::Image(src);
    match Skeleton::build(&src, None) {
        Err(_) => Some(false),
        Ok(Err(_)) => None,
        Ok(Ok(s)) => Some(s.fold_pieces(&src, None, || (), |_, _, _| Ok(())).is_ok()),
    }
}

/// Asserts that every read path gives the same verdict on `bytes`;
/// returns it.
pub fn same_verdict(bytes: &[u8], what: &str) -> Verdict {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("img.nsi");
    std::fs::write(&path, bytes).expect("write image");
    let all = every_path(&path, None);
    let first = all[0].1;
    for (name, v) in &all {
        assert_eq!(
            v.is_some(),
            first.is_some(),
            "{what}: {name} disagrees: {all:?}"
        );
        assert_eq!(v, &first, "{what}: {name} gives another digest: {all:?}");
    }
    first
}

/// Runs the `nsimage` binary with `args`.
pub fn nsimage(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_nsimage"))
        .args(args)
        .output()
        .expect("run nsimage")
}

/// `nsimage store init STORE --from IMAGE`, which must succeed; its
/// output.
pub fn store_from(store: &std::path::Path, image: &std::path::Path) -> std::process::Output {
    let out = nsimage(&[
        "store",
        "init",
        store.to_str().unwrap(),
        "--from",
        image.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The JSON document a successful command printed on stdout.
pub fn json(out: &std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

/// The newest checkpoint (`image_<txid>`, not a `.tmp`) of a store
/// directory.
pub fn newest_image(dir: &std::path::Path) -> std::path::PathBuf {
    let images: Vec<String> = names(dir)
        .into_iter()
        .filter(|n| n.starts_with("image_") && !n.contains(".tmp"))
        .collect();
    dir.join(images.last().expect("the store holds an image"))
}

/// The sorted names of the entries of `dir`.
pub fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `bytes`, a plain image, with every piece of every section sealed with
/// `key` as an encrypting writer seals it (FORMAT.md, "Pieces at rest"):
/// the ENCRYPTED feature, the index's `encryption`, each piece's nonce
/// (distinct, counted up), plain length, stored offset, length and
/// checksum. The pieces keep their records, counts and first keys, so an
/// image changed by a test (its checksums recomputed) becomes the same
/// image encrypted.
pub fn encrypt(bytes: &[u8], key: &nsimage_format::cipher::Key) -> Vec<u8> {
    use nsimage_format::cipher::PiecePlace;
    use nsimage_format::consts::{features, footer, header};
    use nsimage_format::{pb, Footer, Header};
    use prost::Message;
    use xxhash_rust::xxh3::xxh3_64;
    let f = Footer::decode(&bytes[bytes.len() - footer::SIZE..], bytes.len() as u64).unwrap();
    let (io, il) = (f.index_offset as usize, f.index_length as usize);
    let mut idx = pb::Index::decode(&bytes[io..io + il]).unwrap();
    let head = Header::decode(&bytes[..header::SIZE]).unwrap();
    let head = Header {
        required_features: head.required_features | features::ENCRYPTED,
        ..head
    };
    let image_id = [0x3c; 16];
    let cipher = key.image_cipher(&image_id);
    let mut out = head.encode().to_vec();
    let mut nonce_n: u64 = 1;
    let mut seal = |out: &mut Vec<u8>, plain: &[u8], place: PiecePlace| {
        let mut nonce = [0u8; 12];
        nonce[..8].copy_from_slice(&nonce_n.to_le_bytes());
        nonce_n += 1;
        let mut buf = plain.to_vec();
        cipher.seal(&nonce, &place.aad(&image_id), &mut buf);
        let start = out.len() as u64;
        out.extend_from_slice(&buf);
        (start, buf, nonce)
    };
    for (si, s) in idx.sections.iter_mut().enumerate() {
        let start = out.len() as u64;
        let place = |piece: u32, offset: u64, raw: u64| PiecePlace {
            kind: s.kind,
            section: si as u32,
            piece,
            offset,
            raw_length: raw,
            codec: 0,
        };
        if s.sub_sections.is_empty() {
            let plain = &bytes[s.offset as usize..(s.offset + s.length) as usize];
            let p = place(0, start, plain.len() as u64);
            let (_, buf, nonce) = seal(&mut out, plain, p);
            s.raw_length = plain.len() as u64;
            s.nonce = nonce.to_vec();
            s.checksum = xxh3_64(&buf);
        } else {
            let mut raw = 0;
            for (pi, u) in s.sub_sections.iter_mut().enumerate() {
                let plain = &bytes[u.offset as usize..(u.offset + u.length) as usize];
                let p = place(pi as u32, out.len() as u64, plain.len() as u64);
                let (at, buf, nonce) = seal(&mut out, plain, p);
                raw += plain.len() as u64;
                u.offset = at;
                u.length = buf.len() as u64;
                u.raw_length = plain.len() as u64;
                u.nonce = nonce.to_vec();
                u.checksum = xxh3_64(&buf);
            }
            s.raw_length = raw;
            s.checksum = xxh3_64(&out[start as usize..]);
        }
        s.offset = start;
        s.length = out.len() as u64 - start;
    }
    idx.encryption = Some(pb::Encryption {
        cipher: 1,
        image_id: image_id.to_vec(),
        key_fingerprint: key.fingerprint().to_vec(),
    });
    let ib = idx.encode_to_vec();
    let index_offset = out.len() as u64;
    out.extend_from_slice(&ib);
    let foot = Footer {
        index_offset,
        index_length: ib.len() as u64,
        index_checksum: xxh3_64(&ib),
        file_length: (out.len() + footer::SIZE) as u64,
    };
    out.extend_from_slice(&foot.encode());
    out
}

/// What docs/inode.schema.json finds wrong with `v` (nothing: it has the
/// one inode shape); the schema read and compiled once per test process.
pub fn inode_schema_errors(v: &serde_json::Value) -> Vec<String> {
    static SCHEMA: std::sync::OnceLock<jsonschema::Validator> = std::sync::OnceLock::new();
    let validator = SCHEMA.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/inode.schema.json");
        let schema: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        jsonschema::validator_for(&schema).expect("docs/inode.schema.json is a schema")
    });
    validator
        .iter_errors(v)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect()
}
