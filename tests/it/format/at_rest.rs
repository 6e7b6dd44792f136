//! Pieces at rest (FORMAT.md, "Pieces at rest"): compressed, encrypted and
//! compressed+encrypted images read by every read path with the plain
//! image's digest; every flipped byte of a small image and 2,000 sampled
//! bytes of a large one refused and located; a decompression bomb refused
//! from the index; swapped, moved and foreign pieces failing
//! authentication; a missing or wrong key one clear error.

use crate::common;

use common::{every_path, image, index_of, mmap, nsimage, reseal, sample, tiny, with_index};
use nsimage_format::cipher::Key;
use nsimage_format::codec::{Codec, Compression};
use nsimage_format::consts::{features, header};
use nsimage_format::{Index, SectionKind};
use nsimage_loader::{ImageSource, LoadError, LoadOptions, PieceBuf, ReadStrategy};
use nsimage_namespace::Namespace;
use nsimage_writer::{AtRestOptions, WriteOptions};
use std::path::{Path, PathBuf};
use xxhash_rust::xxh3::xxh3_64;

fn key() -> Key {
    Key::from_bytes(core::array::from_fn(|i| (i as u8).wrapping_mul(37)))
}

fn other_key() -> Key {
    Key::from_bytes([0xA5; 32])
}

/// The stored forms: name, options.
fn variants() -> Vec<(&'static str, AtRestOptions)> {
    let c = |s: &str| Compression::parse(s).unwrap();
    vec![
        (
            "zstd",
            AtRestOptions {
                compression: c("zstd"),
                key: None,
            },
        ),
        (
            "lz4",
            AtRestOptions {
                compression: c("lz4"),
                key: None,
            },
        ),
        (
            "aes",
            AtRestOptions {
                compression: Compression::NONE,
                key: Some(key()),
            },
        ),
        (
            "zstd+aes",
            AtRestOptions {
                compression: c("zstd:9"),
                key: Some(key()),
            },
        ),
    ]
}

fn with_at_rest(mut w: WriteOptions, at_rest: &AtRestOptions) -> WriteOptions {
    w.at_rest = at_rest.clone();
    w
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Loads `bytes` (mapped and in bulk, which must agree) with `key`.
fn load_keyed(bytes: &[u8], key: Option<&Key>) -> Result<Namespace, LoadError> {
    let dir = tempfile::tempdir().unwrap();
    load_at(&write(dir.path(), "img.nsi", bytes), key)
}

/// Loads the image at `path` mapped and in bulk (which must agree).
fn load_at(path: &Path, key: Option<&Key>) -> Result<Namespace, LoadError> {
    let load = |read| {
        let opts = LoadOptions {
            read,
            key: key.cloned(),
            ..LoadOptions::default()
        };
        nsimage_loader::load(path, &opts).map(|l| l.namespace)
    };
    let mapped = load(mmap());
    let bulk = load(ReadStrategy::Bulk);
    match (&mapped, &bulk) {
        (Ok(a), Ok(b)) => assert_eq!(a.digest(), b.digest()),
        (Err(_), Err(_)) => {}
        (a, b) => panic!(
            "mmap and bulk disagree: {:?} / {:?}",
            a.as_ref().map(|n| n.digest()),
            b.as_ref().map(|n| n.digest())
        ),
    }
    mapped
}

fn generated(inodes: u64) -> Namespace {
    nsimage_testkit::generate::generate(nsimage_testkit::generate::GenSpec { inodes, seed: 5 })
}

#[test]
fn every_read_path_reads_every_stored_form() {
    let dir = tempfile::tempdir().unwrap();
    for (ns, w) in [
        (sample(), tiny(40)),
        (generated(30_000), WriteOptions::default()),
    ] {
        let want = ns.digest();
        let plain = image(&ns, &w);
        for (name, at) in variants() {
            let bytes = image(&ns, &with_at_rest(w.clone(), &at));
            let idx = index_of(&bytes);
            let head = nsimage_format::Header::decode(&bytes[..header::SIZE]).unwrap();
            assert_eq!(head.required_features, at.required_features(), "{name}");
            assert_eq!(idx.encryption.is_some(), at.key.is_some(), "{name}");
            if at.compression.codec != Codec::None {
                assert!(idx.is_compressed(), "{name}");
            }
            // (The sample's pieces are too small to shrink much.)
            if at.compression.codec != Codec::None && ns.stats().inodes > 1000 {
                assert!(
                    bytes.len() < plain.len(),
                    "{name}: {} >= {}",
                    bytes.len(),
                    plain.len()
                );
            }
            for s in &idx.sections {
                for p in s.pieces() {
                    assert!(!p.at_rest.is_plain() || at.key.is_none(), "{name}");
                    assert_eq!(p.at_rest.sealed.is_some(), at.key.is_some(), "{name}");
                }
            }
            let path = write(dir.path(), &format!("{name}.nsi"), &bytes);
            for (how, v) in every_path(&path, at.key.as_ref()) {
                assert_eq!(v, Some(want), "{name} {how}");
            }
        }
    }
}

/// Every flipped byte of each stored form of the sample is refused as a
/// data error; one inside a section is located in that section and
/// sub-section (every byte; LZ4's every third). Every 23rd flip goes through every read path and verify,
/// which must all refuse it.
#[test]
fn every_flipped_byte_is_refused_and_located() {
    let dir = tempfile::tempdir().unwrap();
    for (name, at) in variants() {
        let bytes = image(&sample(), &with_at_rest(tiny(40), &at));
        let idx = index_of(&bytes);
        let k = at.key.as_ref();
        // LZ4 (the same checks as zstd behind the checksums): every 3rd byte.
        let step = if name == "lz4" { 3 } else { 1 };
        for pos in (0..bytes.len()).step_by(step) {
            let mut bad = bytes.clone();
            bad[pos] ^= 0x5a;
            let path = write(dir.path(), "flip.nsi", &bad);
            let err = load_at(&path, k).expect_err("a flipped byte must not load");
            assert!(err.is_data_error(), "{name} byte {pos}: {err}");
            if let LoadError::Corrupt { at, .. } = &err {
                if let Some(sec) = idx
                    .sections
                    .iter()
                    .find(|s| (s.offset..s.end()).contains(&(pos as u64)))
                {
                    assert_eq!(at.section, Some(sec.kind), "{name} byte {pos}: {err}");
                    if let Some(i) = at.sub_section {
                        let sub = &sec.sub_sections[i];
                        assert!(
                            (sub.offset..sub.offset + sub.length).contains(&(pos as u64)),
                            "{name} byte {pos}: {err}"
                        );
                    }
                }
            }
            if pos % 23 == 0 {
                for (how, v) in every_path(&path, k) {
                    assert_eq!(v, None, "{name} byte {pos}: {how} accepted it");
                }
            }
        }
    }
}

/// A flipped byte whose checksums were recomputed (so that only the
/// decryption, the decompression or the decoding can catch it) is still
/// refused by every read path alike, never a panic.
#[test]
fn resealed_flips_are_caught_behind_the_checksums() {
    let dir = tempfile::tempdir().unwrap();
    for (name, at) in variants() {
        let bytes = image(&sample(), &with_at_rest(tiny(40), &at));
        let idx = index_of(&bytes);
        let inode = idx.section(SectionKind::INODE).unwrap();
        let k = at.key.as_ref();
        for pos in (inode.offset..inode.end()).step_by(3) {
            let mut bad = bytes.clone();
            bad[pos as usize] ^= 0x01;
            reseal(&mut bad);
            let path = write(dir.path(), "resealed.nsi", &bad);
            let verdicts = every_path(&path, k);
            let first = verdicts[0].1;
            for (how, v) in &verdicts {
                assert_eq!(*v, first, "{name} byte {pos}: {how} disagrees");
            }
            if at.key.is_some() {
                // Authenticated: a changed ciphertext never opens.
                assert_eq!(first, None, "{name} byte {pos}");
                let err = load_keyed(&bad, k).unwrap_err();
                assert!(err.to_string().contains("authentication failed"), "{err}");
            }
        }
    }
}

/// 2,000 bytes of a large compressed+encrypted image, each flipped in place
/// and checked where it lands: in the header, index or footer the open
/// fails; in a piece, reading that piece fails naming its section and
/// sub-section. A few go through whole loads too.
#[test]
fn sampled_flips_of_a_large_image_are_located() {
    use std::os::unix::fs::FileExt;
    let dir = tempfile::tempdir().unwrap();
    let ns = generated(1_000_000);
    let at = variants().pop().unwrap().1;
    let bytes = image(&ns, &with_at_rest(WriteOptions::default(), &at));
    drop(ns);
    let path = write(dir.path(), "big.nsi", &bytes);
    let idx = index_of(&bytes);
    assert!(idx.section(SectionKind::INODE).unwrap().sub_sections.len() > 8);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut buf = PieceBuf::default();
    for n in 0..2000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let pos = state % bytes.len() as u64;
        let flipped = bytes[pos as usize] ^ (1 << (state >> 61));
        file.write_all_at(&[flipped], pos).unwrap();
        let located = match ImageSource::open(&path) {
            Err(e) => {
                assert!(e.is_data_error(), "byte {pos}: {e}");
                None
            }
            Ok(mut src) => {
                src.unlock(Some(&key())).unwrap();
                let sec = src
                    .index
                    .sections
                    .iter()
                    .find(|s| (s.offset..s.end()).contains(&pos))
                    .unwrap_or_else(|| panic!("byte {pos} opened but lies in no section"))
                    .clone();
                let split = !sec.sub_sections.is_empty();
                let (i, p) = sec
                    .pieces()
                    .into_iter()
                    .enumerate()
                    .find(|(_, p)| (p.offset..p.offset + p.length).contains(&pos))
                    .unwrap();
                let at =
                    nsimage_format::Location::in_section(sec.kind, split.then_some(i), p.offset);
                match src.piece(&p, &at, &mut buf) {
                    Err(LoadError::Corrupt { at: got, .. }) => Some(got == at),
                    other => panic!("byte {pos}: {:?}", other.map(|b| b.len())),
                }
            }
        };
        assert_ne!(located, Some(false), "byte {pos} located elsewhere");
        if n % 400 == 0 {
            let opts = LoadOptions {
                key: Some(key()),
                ..LoadOptions::default()
            };
            let err = nsimage_loader::load(&path, &opts).err();
            assert!(err.is_some_and(|e| e.is_data_error()), "byte {pos}");
        }
        file.write_all_at(&[bytes[pos as usize]], pos).unwrap();
    }
    // Restored: it loads.
    let opts = LoadOptions {
        key: Some(key()),
        ..LoadOptions::default()
    };
    nsimage_loader::load(&path, &opts).unwrap();
}

/// The plain length of a piece is checked against its stored bytes before
/// anything is allocated: a claim beyond 255 times them (or 1 GiB) is
/// refused by the index; a claim that merely disagrees with the frame is
/// refused when decompressing.
#[test]
fn decompression_bombs_are_refused_from_the_index() {
    use nsimage_format::pb;
    use prost::Message;
    let (_, at) = &variants()[0];
    let bytes = image(
        &generated(20_000),
        &with_at_rest(WriteOptions::default(), at),
    );
    let f = nsimage_format::Footer::decode(
        &bytes[bytes.len() - nsimage_format::consts::footer::SIZE..],
        bytes.len() as u64,
    )
    .unwrap();
    let (io, il) = (f.index_offset as usize, f.index_length as usize);
    let edit = |change: &dyn Fn(&mut pb::SubSection)| {
        let mut idx = pb::Index::decode(&bytes[io..io + il]).unwrap();
        let s = idx.sections.iter_mut().find(|s| s.kind == 3).unwrap();
        let before = s.sub_sections[1].raw_length;
        change(&mut s.sub_sections[1]);
        // The section's sum follows, so that only the piece's claim is off.
        s.raw_length = s
            .raw_length
            .wrapping_sub(before)
            .wrapping_add(s.sub_sections[1].raw_length);
        let mut out = bytes[..io].to_vec();
        out.extend_from_slice(&idx.encode_to_vec());
        out.extend_from_slice(&bytes[io + il..]);
        reseal_footer(&mut out, io);
        out
    };
    for (what, claim) in [
        ("256 times", |u: &mut pb::SubSection| {
            u.raw_length = u.length * 256
        }),
        ("over 1 GiB", |u: &mut pb::SubSection| {
            u.raw_length = (1 << 30) + 1
        }),
        ("u64::MAX", |u: &mut pb::SubSection| u.raw_length = u64::MAX),
    ] as [(&str, fn(&mut pb::SubSection)); 3]
    {
        let bad = edit(&claim);
        match load_keyed(&bad, None) {
            Err(LoadError::Corrupt { at, detail, .. }) => {
                assert_eq!(at.section, Some(SectionKind::INODE), "{what}: {detail}");
                assert_eq!(at.sub_section, Some(1), "{what}: {detail}");
                assert!(detail.contains("plain length"), "{what}: {detail}");
            }
            other => panic!("{what}: {:?}", other.map(|n| n.digest())),
        }
    }
    // Within the bound but wrong: the frame gives another length.
    for delta in [-1i64, 1] {
        let bad = edit(&|u: &mut pb::SubSection| {
            u.raw_length = u.raw_length.saturating_add_signed(delta)
        });
        let err = load_keyed(&bad, None).unwrap_err();
        assert!(
            err.to_string().contains("does not decompress"),
            "{delta}: {err}"
        );
    }
}

/// Rewrites the footer after the index at `io` changed length.
fn reseal_footer(bytes: &mut [u8], io: usize) {
    use nsimage_format::consts::footer;
    let fstart = bytes.len() - footer::SIZE;
    let il = fstart - io;
    let f = nsimage_format::Footer {
        index_offset: io as u64,
        index_length: il as u64,
        index_checksum: xxh3_64(&bytes[io..fstart]),
        file_length: bytes.len() as u64,
    };
    bytes[fstart..].copy_from_slice(&f.encode());
}

/// `bytes` with the stored bytes of pieces `i` and `j` of section `kind`
/// exchanged, and the index updated to match (their lengths, checksums,
/// codecs, plain lengths and nonces go with them; offsets, first keys and
/// record counts stay in place): every checksum and index rule holds, only
/// the associated data can tell.
fn swap_pieces(bytes: &[u8], kind: SectionKind, i: usize, j: usize) -> Vec<u8> {
    let mut idx = index_of(bytes);
    let mut out = bytes[..header::SIZE].to_vec();
    for s in &mut idx.sections {
        let start = out.len() as u64;
        let old = s.sub_sections.clone();
        let mut subs = old.clone();
        if s.kind == kind {
            for (a, b) in [(i, j), (j, i)] {
                subs[a].length = old[b].length;
                subs[a].checksum = old[b].checksum;
                subs[a].at_rest = old[b].at_rest.clone();
            }
        }
        for (k, u) in subs.iter_mut().enumerate() {
            let from = if s.kind != kind {
                k
            } else if k == i {
                j
            } else if k == j {
                i
            } else {
                k
            };
            let src = &old[from];
            let pstart = out.len() as u64;
            out.extend_from_slice(&bytes[src.offset as usize..(src.offset + src.length) as usize]);
            u.offset = pstart;
        }
        if subs.is_empty() {
            out.extend_from_slice(&bytes[s.offset as usize..s.end() as usize]);
        }
        s.sub_sections = subs;
        s.offset = start;
        s.checksum = xxh3_64(&out[start as usize..]);
    }
    with_index(out, &idx)
}

#[test]
fn swapped_moved_and_foreign_pieces_fail_authentication() {
    let aes = &variants()[2].1;
    let ns = sample();
    let bytes = image(&ns, &with_at_rest(tiny(40), aes));
    let idx = index_of(&bytes);
    let subs = &idx.section(SectionKind::INODE).unwrap().sub_sections;
    // Two sub-sections of equal length, swapped (index updated to match).
    let (i, j) = (0..subs.len())
        .flat_map(|i| (i + 1..subs.len()).map(move |j| (i, j)))
        .find(|&(i, j)| subs[i].length == subs[j].length && subs[i].records == subs[j].records)
        .expect("the sample has two INODE sub-sections of one length");
    let swapped = swap_pieces(&bytes, SectionKind::INODE, i, j);
    assert_eq!(swapped.len(), bytes.len());
    let err = load_keyed(&swapped, Some(&key())).unwrap_err();
    assert!(err.to_string().contains("authentication failed"), "{err}");
    // In a plain image the same swap is caught only by decoding the
    // records (their ids disagree with the first keys).
    let plain = image(&ns, &tiny(40));
    let pidx = index_of(&plain);
    let psubs = &pidx.section(SectionKind::INODE).unwrap().sub_sections;
    if psubs.get(i).map(|u| u.length) == psubs.get(j).map(|u| u.length) {
        let err = load_keyed(&swap_pieces(&plain, SectionKind::INODE, i, j), None).unwrap_err();
        assert!(!err.to_string().contains("authentication"), "{err}");
    }

    // A piece of another image of the same namespace and key: the same
    // length (same plain bytes), its own nonce copied along; the image ids
    // differ, so it does not open here.
    let second = image(&ns, &with_at_rest(tiny(40), aes));
    let idx2 = index_of(&second);
    assert_ne!(idx.encryption, idx2.encryption);
    let (a, b) = (
        &idx.section(SectionKind::INODE).unwrap().sub_sections[2],
        &idx2.section(SectionKind::INODE).unwrap().sub_sections[2],
    );
    assert_eq!((a.offset, a.length), (b.offset, b.length));
    let mut foreign = bytes.clone();
    foreign[a.offset as usize..(a.offset + a.length) as usize]
        .copy_from_slice(&second[b.offset as usize..(b.offset + b.length) as usize]);
    let mut fidx: Index = idx.clone();
    let s = fidx.section_mut(SectionKind::INODE).unwrap();
    s.sub_sections[2] = b.clone();
    s.checksum = xxh3_64(&foreign[s.offset as usize..s.end() as usize]);
    let body = foreign[..idx_offset(&bytes)].to_vec();
    let foreign = with_index(body, &fidx);
    let err = load_keyed(&foreign, Some(&key())).unwrap_err();
    assert!(err.to_string().contains("authentication failed"), "{err}");

    // A reused nonce is refused from the index.
    let mut ridx = idx.clone();
    let s = ridx.section_mut(SectionKind::INODE).unwrap();
    let n0 = s.sub_sections[0].at_rest.sealed.clone().unwrap();
    s.sub_sections[1].at_rest.sealed.as_mut().unwrap().nonce = n0.nonce;
    let reused = with_index(bytes[..idx_offset(&bytes)].to_vec(), &ridx);
    let err = load_keyed(&reused, Some(&key())).unwrap_err();
    assert!(err.to_string().contains("nonce"), "{err}");
}

fn idx_offset(bytes: &[u8]) -> usize {
    let f = nsimage_format::Footer::decode(
        &bytes[bytes.len() - nsimage_format::consts::footer::SIZE..],
        bytes.len() as u64,
    )
    .unwrap();
    f.index_offset as usize
}

#[test]
fn a_missing_or_wrong_key_is_one_clear_error() {
    let aes = &variants()[3].1;
    let bytes = image(&sample(), &with_at_rest(tiny(40), aes));
    match load_keyed(&bytes, None) {
        Err(LoadError::Key { detail, .. }) => assert!(detail.contains("encrypted"), "{detail}"),
        other => panic!("{:?}", other.map(|n| n.digest())),
    }
    match load_keyed(&bytes, Some(&other_key())) {
        Err(LoadError::Key { detail, .. }) => assert!(detail.contains("wrong key"), "{detail}"),
        other => panic!("{:?}", other.map(|n| n.digest())),
    }
    // A plain image ignores a key.
    let plain = image(&sample(), &tiny(40));
    assert_eq!(
        load_keyed(&plain, Some(&key())).unwrap().digest(),
        sample().digest()
    );
    // Header and index must agree on the features.
    for bit in [features::ENCRYPTED, features::COMPRESSED] {
        let mut bad = bytes.clone();
        let f = u32::from_le_bytes(bad[16..20].try_into().unwrap()) & !bit;
        bad[16..20].copy_from_slice(&f.to_le_bytes());
        reseal(&mut bad);
        let err = load_keyed(&bad, Some(&key())).unwrap_err();
        assert!(err.is_data_error(), "{err}");
        assert!(
            err.to_string().contains("ENCRYPTED") || err.to_string().contains("COMPRESSED"),
            "{err}"
        );
    }
}

#[test]
fn the_command_line_with_key_files() {
    let dir = tempfile::tempdir().unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let k = dir.path().join("k.key");
    let out = nsimage(&["keygen", &s(&k)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Never over an existing file; owner-only.
    assert_eq!(nsimage(&["keygen", &s(&k)]).status.code(), Some(2));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&k).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let plain = dir.path().join("p.nsi");
    let enc = dir.path().join("e.nsi");
    let gen = |out: &Path, extra: &[&str]| {
        let mut a = vec![
            "generate".to_string(),
            "-o".into(),
            s(out),
            "--inodes".into(),
            "30000".into(),
        ];
        a.extend(extra.iter().map(|x| x.to_string()));
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        nsimage(&a)
    };
    assert!(gen(&plain, &[]).status.success());
    let o = gen(
        &enc,
        &["--compress", "zstd:5", "--encrypt", "--key-file", &s(&k)],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // --encrypt without a key: a usage error, nothing written.
    let none = dir.path().join("n.nsi");
    assert_eq!(gen(&none, &["--encrypt"]).status.code(), Some(2));
    assert!(!none.exists());
    assert_eq!(
        gen(&none, &["--compress", "zstd:99"]).status.code(),
        Some(2)
    );

    let digest = |o: &std::process::Output| common::json(o)["digest"].clone();
    let want = digest(&nsimage(&["load", &s(&plain), "--json"]));
    assert_eq!(
        digest(&nsimage(&[
            "load",
            &s(&enc),
            "--json",
            "--key-file",
            &s(&k)
        ])),
        want
    );
    // The environment variable works too.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_nsimage"))
        .args(["load", &s(&enc), "--json", "--read", "stream"])
        .env("NSIMAGE_KEY_FILE", &k)
        .output()
        .unwrap();
    assert_eq!(digest(&o), want);
    // No key, a wrong key: exit 1, saying which.
    let o = nsimage(&["load", &s(&enc)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("encrypted"));
    let wrong = dir.path().join("w.key");
    assert!(nsimage(&["keygen", &s(&wrong)]).status.success());
    let o = nsimage(&["verify", &s(&enc), "--key-file", &s(&wrong)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("wrong key"));
    // A bad key file: a usage error.
    let junk = dir.path().join("junk.key");
    write_key_file(&junk, b"not a key\n", 0o600);
    assert_eq!(
        nsimage(&["load", &s(&enc), "--key-file", &s(&junk)])
            .status
            .code(),
        Some(2)
    );
    // info needs no key and says how the image is stored.
    let info = common::json(&nsimage(&["info", &s(&enc), "--json"]));
    assert_eq!(info["codecs"], serde_json::json!(["zstd"]));
    assert!(info["ratio"].as_f64().unwrap() > 1.5, "{info}");
    assert_eq!(info["encryption"]["cipher"], "AES-256-GCM");
    // The viewer's commands, one-path lookups included, see the same tree.
    for args in [
        vec!["ls", "/"],
        vec!["stat", "/user"],
        vec!["du", "/", "--json"],
        vec!["find", "/", "--type", "l"],
    ] {
        let run = |img: &Path, key: bool| {
            let mut a = vec![args[0].to_string(), s(img)];
            a.extend(args[1..].iter().map(|x| x.to_string()));
            if key {
                a.extend(["--key-file".to_string(), s(&k)]);
            }
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            let o = nsimage(&a);
            assert!(
                o.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            o.stdout
        };
        let p = String::from_utf8(run(&plain, false)).unwrap();
        let e = String::from_utf8(run(&enc, true)).unwrap();
        if args[0] == "stat" {
            // The io figures differ (bytes read); the rest is the same.
            let cut = |t: &str| {
                t.lines()
                    .filter(|l| !l.contains("read"))
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            assert_eq!(cut(&e), cut(&p), "{args:?}");
        } else {
            assert_eq!(e, p, "{args:?}");
        }
    }
    // convert: encrypted in, plain out, and back.
    let back = dir.path().join("b.nsi");
    let o = nsimage(&[
        "convert",
        &s(&enc),
        &s(&back),
        "--to",
        "nsimage",
        "--key-file",
        &s(&k),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(digest(&nsimage(&["load", &s(&back), "--json"])), want);
    let lz = dir.path().join("lz.nsi");
    let o = nsimage(&[
        "convert",
        &s(&plain),
        &s(&lz),
        "--to",
        "nsimage",
        "--compress",
        "lz4",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(digest(&nsimage(&["load", &s(&lz), "--json"])), want);
    assert!(std::fs::metadata(&lz).unwrap().len() < std::fs::metadata(&plain).unwrap().len());
}

/// Writes a key file the way an operator would, with `mode`.
fn write_key_file(p: &Path, contents: &[u8], mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(p, contents).unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Issue 24, defect 10, through the command line: a key file of mode 0644
/// is refused naming its mode and the fix; CR LF is refused; a hex key file
/// cut to 32 digits is malformed (exit 2), not a "wrong key" (exit 1);
/// upper-case hex is the same key as lower-case.
#[test]
fn key_file_rules_on_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let k = dir.path().join("k.key");
    assert!(nsimage(&["keygen", &s(&k)]).status.success());
    let enc = dir.path().join("e.nsi");
    let o = nsimage(&[
        "generate",
        "-o",
        &s(&enc),
        "--inodes",
        "300",
        "--encrypt",
        "--key-file",
        &s(&k),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let line = std::fs::read_to_string(&k).unwrap();
    let hex = line.trim_end_matches('\n');
    assert_eq!(hex.len(), 64);
    let load = |key: &Path| nsimage(&["load", &s(&enc), "--json", "--key-file", &s(key)]);
    let want = common::json(&load(&k))["digest"].clone();
    assert!(want.is_string());

    // Upper case, with and without the LF: the same key.
    let upper = dir.path().join("upper.key");
    write_key_file(&upper, hex.to_ascii_uppercase().as_bytes(), 0o600);
    assert_eq!(common::json(&load(&upper))["digest"], want);
    write_key_file(
        &upper,
        format!("{}\n", hex.to_ascii_uppercase()).as_bytes(),
        0o400,
    );
    assert_eq!(common::json(&load(&upper))["digest"], want);

    let refused = |key: &Path, says: &[&str]| {
        let o = load(key);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(&s(key)), "{err}");
        for w in says {
            assert!(err.contains(w), "{err} should say {w:?}");
        }
        assert!(!err.contains("wrong key"), "{err}");
        assert!(!err.contains(&hex[..16]), "the key is echoed: {err}");
    };
    // Readable by group and others.
    let open = dir.path().join("open.key");
    write_key_file(&open, line.as_bytes(), 0o644);
    refused(&open, &["0644", "chmod 600"]);
    // CR LF.
    let crlf = dir.path().join("crlf.key");
    write_key_file(&crlf, format!("{hex}\r\n").as_bytes(), 0o600);
    refused(&crlf, &["CR LF"]);
    // Cut to 32 hex digits: malformed, not a raw key that is wrong.
    let cut = dir.path().join("cut.key");
    write_key_file(&cut, &hex.as_bytes()[..32], 0o600);
    refused(&cut, &["cut short"]);
}
