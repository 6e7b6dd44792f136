//! Bad input: truncation, flipped bytes in every region, wrong magic, a future
//! version, unknown sections. Each gives the right error, never a panic.

use crate::common;

use common::{image, index_of, load_bytes, sample, tiny, with_index};
use nsimage_format::consts::header;
use nsimage_format::{FormatError, Header, SectionInfo, SectionKind};
use nsimage_loader::LoadError;
use xxhash_rust::xxh3::xxh3_64;

fn good() -> Vec<u8> {
    image(&sample(), &tiny(40))
}

fn corrupt_at(bytes: &[u8]) -> nsimage_format::Location {
    match load_bytes(bytes) {
        Err(LoadError::Corrupt { at, .. }) => at,
        Err(e) => panic!("expected a corruption error, got {e}"),
        Ok(_) => panic!("corrupt image loaded"),
    }
}

#[test]
fn the_sample_image_has_sub_sections() {
    let bytes = good();
    let idx = index_of(&bytes);
    assert!(idx.section(SectionKind::INODE).unwrap().sub_sections.len() > 3);
    assert!(
        idx.section(SectionKind::INODE_DIR)
            .unwrap()
            .sub_sections
            .len()
            > 1
    );
}

#[test]
fn every_flipped_byte_is_detected_and_located() {
    let bytes = good();
    let idx = index_of(&bytes);
    for pos in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[pos] ^= 0x5a;
        let err = load_bytes(&bad).expect_err("a flipped byte must not load");
        assert!(err.is_data_error(), "byte {pos}: {err}");
        if let LoadError::Corrupt { at, .. } = &err {
            // A flip inside a section is reported in that section.
            if let Some(sec) = idx
                .sections
                .iter()
                .find(|s| (s.offset..s.end()).contains(&(pos as u64)))
            {
                assert_eq!(at.section, Some(sec.kind), "byte {pos}: {err}");
                if let Some(i) = at.sub_section {
                    let sub = &sec.sub_sections[i];
                    assert!(
                        (sub.offset..sub.offset + sub.length).contains(&(pos as u64)),
                        "byte {pos}: {err}"
                    );
                }
            }
        }
    }
}

#[test]
fn truncation_at_any_length_is_an_error() {
    let bytes = good();
    for len in (0..bytes.len()).step_by(7).chain([bytes.len() - 1]) {
        let err = load_bytes(&bytes[..len]).expect_err("truncated image must not load");
        assert!(err.is_data_error(), "len {len}: {err}");
    }
}

#[test]
fn wrong_magic_and_future_version_are_refused() {
    let mut bytes = good();
    bytes[0] = b'X';
    assert!(corrupt_at(&bytes).offset == 0);

    let mut bytes = good();
    let h = Header {
        version: nsimage_format::CURRENT_VERSION + 1,
        ..Header::current()
    };
    bytes[..header::SIZE].copy_from_slice(&h.encode());
    match load_bytes(&bytes) {
        Err(LoadError::Unsupported {
            source: FormatError::Version { got, .. },
            ..
        }) => assert_eq!(got, nsimage_format::CURRENT_VERSION + 1),
        other => panic!("expected a version error, got {:?}", other.err()),
    }

    let mut bytes = good();
    let h = Header {
        required_features: 1 << 7,
        ..Header::current()
    };
    bytes[..header::SIZE].copy_from_slice(&h.encode());
    assert!(matches!(
        load_bytes(&bytes),
        Err(LoadError::Unsupported {
            source: FormatError::UnknownFeatures { bits: 0x80 },
            ..
        })
    ));
}

/// Appends a section of `kind` after the last one and rewrites index and footer.
fn with_extra_section(bytes: &[u8], kind: u32, optional: bool) -> Vec<u8> {
    let mut idx = index_of(bytes);
    let index_offset = idx.sections.last().unwrap().end() as usize;
    let mut out = bytes[..index_offset].to_vec();
    let payload = b"\x03abc\x01z".to_vec();
    idx.sections.push(SectionInfo {
        kind: SectionKind(kind),
        optional,
        offset: out.len() as u64,
        length: payload.len() as u64,
        records: 2,
        checksum: xxh3_64(&payload),
        sub_sections: Vec::new(),
        at_rest: Default::default(),
    });
    out.extend_from_slice(&payload);
    with_index(out, &idx)
}

#[test]
fn unknown_sections_optional_skipped_required_refused() {
    let bytes = good();
    let ns = load_bytes(&with_extra_section(&bytes, 999, true))
        .expect("optional unknown section is skipped");
    assert_eq!(ns.digest(), sample().digest());
    match load_bytes(&with_extra_section(&bytes, 999, false)) {
        Err(LoadError::Unsupported {
            source: FormatError::UnknownSection { kind: 999, .. },
            ..
        }) => {}
        other => panic!("expected an unknown-section error, got {:?}", other.err()),
    }
}

#[test]
fn verify_lists_each_bad_sub_section() {
    let bytes = good();
    let idx = index_of(&bytes);
    let inode = idx.section(SectionKind::INODE).unwrap();
    let mut bad = bytes.clone();
    for i in [0, 2] {
        bad[inode.sub_sections[i].offset as usize + 1] ^= 1;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.nsi");
    std::fs::write(&path, &bad).unwrap();
    let report = nsimage_loader::verify(&path, &Default::default()).unwrap();
    let subs: Vec<_> = report
        .problems
        .iter()
        .filter_map(|p| p.at.sub_section)
        .collect();
    assert_eq!(subs, [0, 2], "{:?}", report.problems);
    assert!(report
        .problems
        .iter()
        .all(|p| p.at.section == Some(SectionKind::INODE)));
}

#[test]
fn random_garbage_never_panics() {
    use rand::{RngExt, SeedableRng};
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(3);
    let bytes = good();
    for _ in 0..300 {
        let mut bad = bytes.clone();
        for _ in 0..rng.random_range(1..20) {
            let i = rng.random_range(0..bad.len());
            bad[i] = rng.random();
        }
        // A byte overwritten with its own value leaves the image intact.
        assert!(bad == bytes || load_bytes(&bad).is_err());
        let junk: Vec<u8> = (0..rng.random_range(0..400))
            .map(|_| rng.random())
            .collect();
        assert!(load_bytes(&junk).is_err());
    }
}
