//! The rules FORMAT.md states for an independent implementer, one test
//! each, through every read path (mmap, bulk, stream; 1 and 2 threads;
//! verify), on images crafted with the writer and prost and resealed so
//! that only validation can catch what is wrong.

use crate::common;

use common::{
    image, index_of, load_bytes, reseal, rewrite_records, same_verdict, sample, tiny, with_index,
    F, P,
};
use nsimage_format::framing::{put_frame, Records};
use nsimage_format::{pb, Location, SectionInfo, SectionKind, ROOT_ID};
use nsimage_loader::{load, LoadError, LoadOptions, ReadStrategy};
use nsimage_namespace::{Body, FileSpec, Namespace, PermSpec};
use prost::Message;
use xxhash_rust::xxh3::xxh3_64;

fn base() -> Vec<u8> {
    image(&sample(), &tiny(60))
}

/// [`base`] with its lookup index as NAME_INDEX (`legacy`, as images
/// written before NAME_RUNS have it) or NAME_RUNS; and that section's kind.
fn base_with_names(legacy: bool) -> (Vec<u8>, SectionKind) {
    let opts = nsimage_writer::WriteOptions {
        legacy_name_index: legacy,
        ..tiny(60)
    };
    let kind = if legacy {
        SectionKind::NAME_INDEX
    } else {
        SectionKind::NAME_RUNS
    };
    (image(&sample(), &opts), kind)
}

fn refused(bytes: &[u8], what: &str) {
    assert_eq!(same_verdict(bytes, what), None, "{what} must be refused");
}

fn accepted(bytes: &[u8], what: &str) -> nsimage_namespace::Digest {
    same_verdict(bytes, what).unwrap_or_else(|| panic!("{what} must be accepted"))
}

/// Re-encodes every INODE record for which `pick` holds after `f`.
fn edit_inodes(
    bytes: &[u8],
    pick: impl Fn(&pb::Inode) -> bool,
    f: impl Fn(&mut pb::Inode),
) -> Vec<u8> {
    rewrite_records(bytes, &[SectionKind::INODE], |_, body| {
        let mut m = pb::Inode::decode(body).unwrap();
        if pick(&m) {
            f(&mut m);
            m.encode_to_vec()
        } else {
            body.to_vec()
        }
    })
}

fn named(name: &'static [u8]) -> impl Fn(&pb::Inode) -> bool {
    move |m| m.name == name
}

fn varint(v: u64) -> Vec<u8> {
    let mut b = Vec::new();
    prost::encoding::encode_varint(v, &mut b);
    b
}

#[test]
fn a_symlink_with_an_empty_target_is_refused() {
    let b = edit_inodes(&base(), named(b"latest"), |m| {
        m.symlink.as_mut().unwrap().target.clear()
    });
    refused(&b, "empty symlink target");
    // Omitting the group's field is the same empty target.
    let b = edit_inodes(&base(), named(b"latest"), |m| {
        m.symlink = Some(pb::SymlinkAttrs::default())
    });
    refused(&b, "symlink group without a target");
}

#[test]
fn names_hdfs_refuses_are_refused_and_the_root_has_none() {
    let good = base();
    accepted(&good, "the sample");
    // part-000 is its directory's first child: each of these names still
    // sorts first, so only the name rule can refuse them.
    for bad in [&b""[..], b".", b"..", b"a/b", b"/", b"a\0b", b"\0"] {
        let b = edit_inodes(&good, named(b"part-000"), |m| m.name = bad.to_vec());
        refused(&b, &format!("name {bad:?}"));
    }
    let b = edit_inodes(&good, |m| m.id == ROOT_ID, |m| m.name = b"root".to_vec());
    refused(&b, "a root with a name");
    // A name of 65,536 bytes is the longest allowed.
    let mut ns = Namespace::default();
    let long = vec![b'x'; 65_536];
    ns.mkdir_in(ROOT_ID, &long, &P, 1).unwrap();
    accepted(&image(&ns, &tiny(1 << 20)), "a 65,536-byte name");
}

#[test]
fn the_model_refuses_every_name_an_image_may_not_hold() {
    let mut ns = Namespace::default();
    let d = ns.mkdirs(b"/d", &P, 1).unwrap();
    for bad in [&b""[..], b".", b"..", b"a/b", b"a\0b", b"\0"] {
        assert!(ns.mkdir_in(d, bad, &P, 1).is_err(), "mkdir {bad:?}");
        assert!(ns.create_in(d, bad, &P, &F, 1).is_err(), "create {bad:?}");
        assert!(
            ns.symlink_in(d, bad, b"/t", &P, 1).is_err(),
            "symlink {bad:?}"
        );
    }
    let f = ns.create_in(d, b"f", &P, &F, 1).unwrap();
    assert!(ns.rename_in(f, d, b"g\0", 2).is_err());
    assert!(ns.symlink_in(d, b"l", b"", &P, 1).is_err());
    // Duplicate and named mask entries, refused before anything changes.
    let before = ns.digest();
    assert!(ns
        .set_acl(d, &[(b"bob", 0, false, 5), (b"bob", 0, false, 7)])
        .is_err());
    assert!(ns.set_acl(d, &[(b"bob", 2, false, 5)]).is_err());
    assert_eq!(ns.digest(), before);
    // Strings longer than a reader accepts (65,536 bytes): user, group, ACL
    // and xattr names are refused, before anything is interned.
    let long = vec![b'u'; 65_537];
    let strings = ns.strings().len();
    let too_long = PermSpec {
        user: &long,
        group: b"g",
        mode: 0o644,
    };
    assert!(ns.create_in(d, b"x", &too_long, &F, 1).is_err());
    let too_long = PermSpec {
        user: b"u",
        group: &long,
        mode: 0o644,
    };
    assert!(ns.mkdir_in(d, b"y", &too_long, 1).is_err());
    assert!(ns.set_owner(f, Some(b"ok"), Some(&long)).is_err());
    assert!(ns.set_acl(d, &[(&long, 0, false, 5)]).is_err());
    assert!(ns
        .set_xattr(d, nsimage_namespace::XAttrNs::User, &long, b"v")
        .is_err());
    assert_eq!(ns.strings().len(), strings, "nothing was interned");
    assert_eq!(ns.digest(), before);
    // 65,536 bytes is still a valid string, and the image loads.
    let max = vec![b'u'; 65_536];
    ns.set_owner(f, Some(&max), None).unwrap();
    accepted(&image(&ns, &tiny(1 << 20)), "a 65,536-byte user name");
}

#[test]
fn user_and_group_id_0_are_the_empty_string() {
    let zero = PermSpec {
        user: b"",
        group: b"",
        mode: 0o644,
    };
    let mut ns = Namespace::default();
    let f = ns.create(b"/f", &zero, &F, 1).unwrap();
    let bytes = image(&ns, &tiny(1 << 20));
    assert_eq!(accepted(&bytes, "ids 0"), ns.digest());
    let back = load_bytes(&bytes).unwrap();
    let n = back.inode(f).unwrap();
    assert_eq!((n.perm().user(), n.perm().group()), (0, 0));
    assert_eq!((n.user(), n.group()), (&b""[..], &b""[..]));
    // The root is owned by id 0 in every image.
    assert_eq!(back.root().perm().user(), 0);
}

#[test]
fn a_uint32_or_enum_field_over_32_bits_is_refused_not_truncated() {
    let good = base();
    for (what, key, value) in [
        ("replication 2^32 + 3", 0x10u8, (1u64 << 32) + 3),
        ("storage policy 2^32", 0x28, 1 << 32),
    ] {
        let b = rewrite_records(&good, &[SectionKind::INODE], |_, body| {
            let m = pb::Inode::decode(body).unwrap();
            let mut r = body.to_vec();
            if m.file.is_some() {
                let mut g = vec![key];
                g.extend_from_slice(&varint(value));
                r.push(0x32);
                r.extend_from_slice(&varint(g.len() as u64));
                r.extend_from_slice(&g);
            }
            r
        });
        refused(&b, what);
    }
    // type = 2^32 + 2 (DIRECTORY once truncated) on every directory.
    let b = rewrite_records(&good, &[SectionKind::INODE], |_, body| {
        let m = pb::Inode::decode(body).unwrap();
        let mut r = body.to_vec();
        if m.directory.is_some() {
            r.push(0x10);
            r.extend_from_slice(&varint((1 << 32) + 2));
        }
        r
    });
    refused(&b, "type 2^32 + 2");
    // A uint32 field in the index: an empty optional section of kind
    // 999 is skipped, one of kind 2^32 + 999 is refused (not read as 999).
    for (kind, ok) in [(999u64, true), ((1 << 32) + 999, false)] {
        let mut raw = index_bytes(&good).to_vec();
        let mut sec = vec![0x08];
        sec.extend_from_slice(&varint(kind));
        sec.extend_from_slice(&[0x10, 0x01, 0x18]);
        sec.extend_from_slice(&varint(index_of(&good).sections.last().unwrap().end()));
        sec.push(0x31);
        sec.extend_from_slice(&xxh3_64(&[]).to_le_bytes());
        raw.push(0x0a);
        raw.extend_from_slice(&varint(sec.len() as u64));
        raw.extend_from_slice(&sec);
        let v = same_verdict(&with_raw_index(&good, &raw), "section kind");
        assert_eq!(v.is_some(), ok, "section kind {kind}");
    }
}

fn index_bytes(bytes: &[u8]) -> &[u8] {
    let end = index_of(bytes).sections.last().unwrap().end() as usize;
    &bytes[end..bytes.len() - nsimage_format::consts::footer::SIZE]
}

/// The image with its index replaced by `raw` (and the footer resealed).
fn with_raw_index(bytes: &[u8], raw: &[u8]) -> Vec<u8> {
    use nsimage_format::consts::footer;
    use nsimage_format::Footer;
    let end = index_of(bytes).sections.last().unwrap().end() as usize;
    let mut out = bytes[..end].to_vec();
    out.extend_from_slice(raw);
    let foot = Footer {
        index_offset: end as u64,
        index_length: raw.len() as u64,
        index_checksum: xxh3_64(raw),
        file_length: (out.len() + footer::SIZE) as u64,
    };
    out.extend_from_slice(&foot.encode());
    out
}

#[test]
fn a_scalar_given_twice_takes_the_last_value() {
    let good = base();
    let b = rewrite_records(&good, &[SectionKind::INODE], |_, body| {
        let m = pb::Inode::decode(body).unwrap();
        let mut r = body.to_vec();
        if m.name == b"part-001" {
            r.extend_from_slice(&[0x28]);
            r.extend_from_slice(&varint(123_456));
        }
        r
    });
    accepted(&b, "mtime twice");
    let ns = load_bytes(&b).unwrap();
    let id = ns.resolve(b"/data/2024/01/part-001").unwrap();
    assert_eq!(ns.inode(id).unwrap().mtime(), 123_456);
}

/// Appends a section of `kind` holding `payload` after the last one.
fn with_section(bytes: &[u8], kind: u32, optional: bool, payload: &[u8], sum: u64) -> Vec<u8> {
    let mut idx = index_of(bytes);
    let end = idx.sections.last().unwrap().end() as usize;
    let mut out = bytes[..end].to_vec();
    idx.sections.push(SectionInfo {
        kind: SectionKind(kind),
        optional,
        offset: out.len() as u64,
        length: payload.len() as u64,
        records: 0,
        checksum: sum,
        sub_sections: Vec::new(),
        at_rest: Default::default(),
    });
    out.extend_from_slice(payload);
    with_index(out, &idx)
}

#[test]
fn unknown_sections_are_opaque_but_checksummed_and_kinds_5_to_8_are_unknown() {
    let good = base();
    let digest = accepted(&good, "the sample");
    // Not framed records: the bytes of an unknown section are opaque.
    let junk = b"\xff\xff\xff not records";
    for kind in [5u32, 6, 7, 8, 999] {
        let b = with_section(&good, kind, true, junk, xxh3_64(junk));
        assert_eq!(accepted(&b, "optional unknown section"), digest);
        let b = with_section(&good, kind, false, junk, xxh3_64(junk));
        refused(&b, "required unknown section");
        match load_bytes(&b) {
            Err(LoadError::Unsupported { .. }) => {}
            other => panic!("kind {kind}: expected unsupported, got {:?}", other.err()),
        }
    }
    // Every path checks an unknown section's checksum.
    let b = with_section(&good, 6, true, junk, xxh3_64(junk) ^ 1);
    refused(&b, "an optional section with a bad checksum");
    // `optional` on a known kind changes nothing.
    let mut idx = index_of(&good);
    for s in &mut idx.sections {
        s.optional = true;
    }
    let end = idx.sections.last().unwrap().end() as usize;
    let b = with_index(good[..end].to_vec(), &idx);
    assert_eq!(accepted(&b, "known kinds marked optional"), digest);
}

#[test]
fn every_child_must_be_an_inode() {
    let b = rewrite_records(&base(), &[SectionKind::INODE_DIR], |_, body| {
        let mut m = pb::DirEntry::decode(body).unwrap();
        if m.parent == ROOT_ID {
            m.children.push(u64::MAX);
        }
        m.encode_to_vec()
    });
    refused(&b, "a child that is no inode");
}

#[test]
fn an_omitted_quota_is_a_quota_of_0() {
    let good = base();
    // The sample's /user has no quota: -1 on the wire.
    let b = edit_inodes(&good, named(b"user"), |m| {
        m.directory = Some(pb::DirectoryAttrs::default())
    });
    accepted(&b, "omitted quotas");
    let ns = load_bytes(&b).unwrap();
    let id = ns.resolve(b"/user").unwrap();
    match ns.inode(id).unwrap().body() {
        Body::Directory {
            ns_quota, ds_quota, ..
        } => assert_eq!((ns_quota, ds_quota), (0, 0)),
        other => panic!("{other:?}"),
    }
    let orig = load_bytes(&good).unwrap();
    match orig.inode(id).unwrap().body() {
        Body::Directory {
            ns_quota, ds_quota, ..
        } => assert_eq!((ns_quota, ds_quota), (-1, -1)),
        other => panic!("{other:?}"),
    }
    let b = edit_inodes(&good, named(b"user"), |m| {
        m.directory = Some(pb::DirectoryAttrs {
            ns_quota: -2,
            ds_quota: 0,
        })
    });
    refused(&b, "quota -2");
}

#[test]
fn declared_counts_and_first_keys_hold_for_every_sub_section() {
    let good = base();
    for kind in [SectionKind::INODE, SectionKind::INODE_DIR] {
        let idx = index_of(&good);
        assert!(idx.section(kind).unwrap().sub_sections.len() >= 2);
        let end = idx.sections.last().unwrap().end() as usize;
        // Counts moved between two sub-sections: the section's sum holds.
        let mut moved = idx.clone();
        let s = moved.sections.iter_mut().find(|s| s.kind == kind).unwrap();
        s.sub_sections[0].records += 1;
        s.sub_sections[1].records -= 1;
        refused(
            &with_index(good[..end].to_vec(), &moved),
            &format!("{kind}: shifted counts"),
        );
        // A first key that is not the first record's.
        let mut keyed = idx.clone();
        let s = keyed.sections.iter_mut().find(|s| s.kind == kind).unwrap();
        s.sub_sections[1].first_key += 1;
        refused(
            &with_index(good[..end].to_vec(), &keyed),
            &format!("{kind}: wrong first key"),
        );
    }
}

#[test]
fn acl_entries_are_unique_and_mask_and_other_are_unnamed() {
    let good = base();
    // /user/alice has an unnamed and a named (bob) access entry.
    let b = edit_inodes(&good, named(b"alice"), |m| {
        let e = m.acl[1];
        m.acl.push(e);
    });
    refused(&b, "a duplicate ACL entry");
    let b = edit_inodes(&good, named(b"alice"), |m| {
        let mut e = m.acl[1];
        e.r#type = pb::AclType::AclMask as i32;
        m.acl.push(e);
    });
    refused(&b, "a named mask entry");
    let b = edit_inodes(&good, named(b"alice"), |m| {
        let mut e = m.acl[1];
        e.default_scope = true;
        m.acl.push(e);
    });
    accepted(&b, "the same entry in the default scope");
    let b = edit_inodes(&good, named(b"alice"), |m| m.acl[1].name = 9999);
    refused(&b, "an ACL entry naming an undefined string");
}

#[test]
fn block_ids_are_unique_and_within_ns_info() {
    let good = base();
    // part-001 has block 1004; give part-002's first block the same id.
    let b = edit_inodes(&good, named(b"part-002"), |m| {
        m.file.as_mut().unwrap().blocks[0].id = 1004
    });
    refused(&b, "a block id used twice");
    let info = *load_bytes(&good).unwrap().info();
    let b = edit_inodes(&good, named(b"part-002"), |m| {
        m.file.as_mut().unwrap().blocks[0].id = info.last_block_id + 1
    });
    refused(&b, "a block id above last_block_id");
    let b = edit_inodes(&good, named(b"part-002"), |m| {
        m.file.as_mut().unwrap().blocks[0].generation_stamp = info.generation_stamp + 1
    });
    refused(&b, "a generation stamp above NS_INFO's");
    // Sparse ids (the sort fallback) are fine when unique.
    let b = edit_inodes(&good, named(b"part-002"), |m| {
        m.file.as_mut().unwrap().blocks[0].id = 1
    });
    accepted(&b, "a sparse but unique block id");
    let b = edit_inodes(&good, named(b"part-005"), |m| {
        m.file.as_mut().unwrap().blocks[0].id = 1;
    });
    let b = edit_inodes(&b, named(b"part-006"), |m| {
        m.file.as_mut().unwrap().blocks[0].id = 1;
    });
    refused(&b, "a sparse block id used twice");
}

/// Rebuilds section `kind` from `pieces` (record bodies per sub-section),
/// with first keys from `key`; the section must be the last one.
fn with_pieces(bytes: &[u8], kind: SectionKind, pieces: &[Vec<Vec<u8>>]) -> Vec<u8> {
    let mut idx = index_of(bytes);
    let sec = idx.sections.iter_mut().find(|s| s.kind == kind).unwrap();
    let mut out = bytes[..sec.offset as usize].to_vec();
    for (u, recs) in sec.sub_sections.iter_mut().zip(pieces) {
        let start = out.len();
        for r in recs {
            put_frame(&mut out, r);
        }
        u.offset = start as u64;
        u.length = (out.len() - start) as u64;
        u.records = recs.len() as u64;
        u.first_key = pb::DirEntry::decode(&recs[0][..]).unwrap().parent;
    }
    assert_eq!(sec.end() as usize, out.len(), "same bytes, other cuts");
    reseal_with(out, &idx)
}

fn reseal_with(body: Vec<u8>, idx: &nsimage_format::Index) -> Vec<u8> {
    let mut b = with_index(body, idx);
    reseal(&mut b);
    b
}

#[test]
fn directory_records_stay_in_parent_order_across_sub_sections() {
    let ns = nsimage_testkit::generate::generate(nsimage_testkit::generate::GenSpec {
        inodes: 2_000,
        seed: 3,
    });
    let good = image(&ns, &tiny(300));
    accepted(&good, "the generated image");
    let idx = index_of(&good);
    let sec = idx.section(SectionKind::INODE_DIR).unwrap();
    assert_eq!(sec.end(), idx.sections.last().unwrap().end());
    let mut pieces: Vec<Vec<Vec<u8>>> = sec
        .sub_sections
        .iter()
        .map(|u| {
            let region = &good[u.offset as usize..(u.offset + u.length) as usize];
            Records::new(region, Location::at(u.offset))
                .map(|r| r.unwrap().1.to_vec())
                .collect()
        })
        .collect();
    let j = (1..pieces.len())
        .find(|&j| pieces[j].len() >= 2)
        .expect("a later sub-section with two records");
    // Move the second record of sub-section j to the end of j - 1: each
    // sub-section is still sorted and the first keys still increase.
    let rec = pieces[j].remove(1);
    pieces[j - 1].push(rec);
    let b = with_pieces(&good, SectionKind::INODE_DIR, &pieces);
    refused(&b, "parents out of order across sub-sections");
}

#[test]
fn a_length_prefix_running_past_its_region_is_refused_without_panic() {
    // INODE_DIR is the last section: its last byte becomes the start of a
    // length prefix that continues into the index.
    let good = base();
    let idx = index_of(&good);
    let sec = idx.section(SectionKind::INODE_DIR).unwrap().clone();
    let mut body = good[..sec.end() as usize].to_vec();
    body.push(0x85);
    let mut idx2 = idx.clone();
    let s = idx2.section_mut(SectionKind::INODE_DIR).unwrap();
    s.length += 1;
    if let Some(u) = s.sub_sections.last_mut() {
        u.length += 1;
    }
    let b = reseal_with(body, &idx2);
    refused(&b, "a length prefix past its region");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.nsi");
    std::fs::write(&path, &b).unwrap();
    let o = LoadOptions {
        read: ReadStrategy::Stream,
        ..LoadOptions::default()
    };
    match load(&path, &o) {
        Err(LoadError::Corrupt { at, .. }) => {
            assert_eq!(at.section, Some(SectionKind::INODE_DIR));
            assert_eq!(at.offset, sec.end());
        }
        other => panic!("expected a corruption error, got {:?}", other.err()),
    }
}

#[test]
fn the_zero_spec_file_used_by_the_writer_tests_still_loads() {
    // Replication 0, block size 0: legal values.
    let mut ns = Namespace::default();
    ns.create(
        b"/z",
        &P,
        &FileSpec {
            replication: 0,
            preferred_block_size: 0,
            storage_policy: 0,
        },
        0,
    )
    .unwrap();
    assert_eq!(
        accepted(&image(&ns, &tiny(1 << 20)), "zero spec"),
        ns.digest()
    );
}

/// FORMAT.md, "Checksum coverage": the sub-sections' checksums decide. A
/// split section whose own checksum is wrong while every sub-section's is
/// right is accepted by every reader with the same digest (the serial
/// reader included) and `verify` warns; an unsplit section with a wrong
/// checksum is refused by all.
#[test]
fn the_sub_section_checksums_decide_for_a_split_section() {
    let bytes = base();
    let good = accepted(&bytes, "the base image");
    let idx = index_of(&bytes);
    let body = bytes[..idx_offset(&bytes)].to_vec();

    let mut wrong = idx.clone();
    let sec = wrong.section_mut(SectionKind::INODE).unwrap();
    assert!(sec.sub_sections.len() >= 2, "the base image splits INODE");
    sec.checksum ^= 1;
    let split_wrong = with_index(body.clone(), &wrong);
    assert_eq!(
        accepted(&split_wrong, "a split section's own checksum wrong"),
        good
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.nsi");
    std::fs::write(&path, &split_wrong).unwrap();
    let report = nsimage_loader::verify(&path, &Default::default()).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
    assert_eq!(report.warnings[0].at.section, Some(SectionKind::INODE));

    let mut wrong = idx;
    let sec = wrong.section_mut(SectionKind::NS_INFO).unwrap();
    assert!(sec.sub_sections.is_empty());
    sec.checksum ^= 1;
    refused(
        &with_index(body, &wrong),
        "an unsplit section's checksum wrong",
    );
}

fn idx_offset(bytes: &[u8]) -> usize {
    use nsimage_format::{consts::footer, Footer};
    let f = Footer::decode(&bytes[bytes.len() - footer::SIZE..], bytes.len() as u64).unwrap();
    f.index_offset as usize
}

/// An image whose sections are unsplit and zstd-compressed; INODE_DIR is
/// its last section.
fn zstd_image() -> Vec<u8> {
    let mut ns = sample();
    let d = ns.mkdirs(b"/many", &P, 50).unwrap();
    for i in 0..300u64 {
        ns.create_in(d, format!("f{i:05}").as_bytes(), &P, &F, 51)
            .unwrap();
    }
    let mut opts = nsimage_writer::WriteOptions::default();
    opts.at_rest.compression = nsimage_format::codec::Compression::parse("zstd").unwrap();
    image(&ns, &opts)
}

/// `bytes` with the stored bytes of its last section (INODE_DIR, unsplit
/// and zstd-compressed) replaced by what `f` makes of its plain bytes and
/// its stored frame; checksums recomputed.
fn replace_last_piece(bytes: &[u8], f: impl Fn(&[u8], &[u8]) -> Vec<u8>) -> Vec<u8> {
    let mut idx = index_of(bytes);
    let sec = idx.sections.last_mut().unwrap();
    assert_eq!(sec.kind, SectionKind::INODE_DIR);
    assert_eq!(sec.at_rest.codec, nsimage_format::codec::Codec::Zstd);
    let stored = &bytes[sec.offset as usize..sec.end() as usize];
    let mut plain = Vec::new();
    nsimage_format::codec::decompress(
        sec.at_rest.codec,
        stored,
        sec.at_rest.raw_length,
        &mut plain,
    )
    .unwrap();
    let new = f(&plain, stored);
    let mut body = bytes[..sec.offset as usize].to_vec();
    body.extend_from_slice(&new);
    sec.length = new.len() as u64;
    sec.checksum = xxh3_64(&new);
    with_index(body, &idx)
}

fn zstd_frame(plain: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let zstd = nsimage_format::codec::Compression::parse("zstd").unwrap();
    assert!(zstd.compress(plain, &mut out));
    out
}

/// A zstd piece is exactly one zstd frame (FORMAT.md, "Pieces at rest"):
/// two frames whose contents add up to the plain length, a skippable frame
/// before or after it, or any byte after it are refused by every read path.
#[test]
fn a_zstd_piece_is_exactly_one_frame() {
    let bytes = zstd_image();
    accepted(&bytes, "one frame");
    accepted(
        &replace_last_piece(&bytes, |p, _| zstd_frame(p)),
        "one frame, recompressed",
    );
    let two = replace_last_piece(&bytes, |p, _| {
        let (a, b) = p.split_at(p.len() / 2);
        [zstd_frame(a), zstd_frame(b)].concat()
    });
    refused(&two, "two zstd frames");
    let skip: &[u8] = &[0x50, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 1, 2, 3];
    refused(
        &replace_last_piece(&bytes, |_, s| [skip, s].concat()),
        "a skippable frame first",
    );
    refused(
        &replace_last_piece(&bytes, |_, s| [s, skip].concat()),
        "a skippable frame after the frame",
    );
}

/// HDFS_SNAPSHOTS holds exactly one record, and its index entry says so
/// (FORMAT.md, "HDFS_SNAPSHOTS"): a count of 2 is refused by every read
/// path, not accepted silently.
#[test]
fn hdfs_snapshots_must_declare_its_one_record() {
    let carry = nsimage_format::hdfs::SnapshotCarry {
        strings: vec![b"snapshot-name".to_vec(); 4],
        ..Default::default()
    };
    let mut bytes = Vec::new();
    nsimage_writer::write_image_with_carry(&sample(), &mut bytes, &tiny(60), Some(&carry)).unwrap();
    accepted(&bytes, "HDFS_SNAPSHOTS as written");
    let mut idx = index_of(&bytes);
    let body = bytes[..idx.sections.last().unwrap().end() as usize].to_vec();
    idx.section_mut(SectionKind::HDFS_SNAPSHOTS)
        .unwrap()
        .records = 2;
    refused(
        &with_index(body, &idx),
        "HDFS_SNAPSHOTS declaring 2 records",
    );
}

/// A NAME_INDEX piece's `records` is checked when the section is read:
/// `verify` reports a wrong count (as it reports every disagreement of the
/// optional NAME_INDEX, a warning, since no load reads it).
#[test]
fn name_index_record_counts_are_checked_by_verify() {
    for legacy in [false, true] {
        name_index_record_counts(legacy);
    }
}

fn name_index_record_counts(legacy: bool) {
    let (bytes, kind) = base_with_names(legacy);
    let mut idx = index_of(&bytes);
    let body = bytes[..idx.sections.last().unwrap().end() as usize].to_vec();
    let sec = idx.section_mut(kind).unwrap();
    let i = sec
        .sub_sections
        .iter()
        .position(|u| u.records >= 2)
        .unwrap();
    let j = if i == 0 { 1 } else { i - 1 };
    sec.sub_sections[i].records -= 1;
    sec.sub_sections[j].records += 1;
    let bad = with_index(body, &idx);
    accepted(
        &bad,
        &format!("{kind} with shifted counts (no load reads it)"),
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("img.nsi");
    std::fs::write(&path, &bad).unwrap();
    let report = nsimage_loader::verify(&path, &Default::default()).unwrap();
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.detail.contains("the index says")),
        "{:?}",
        report.warnings
    );
    std::fs::write(&path, &bytes).unwrap();
    assert!(nsimage_loader::verify(&path, &Default::default())
        .unwrap()
        .warnings
        .is_empty());
}

/// The first INODE record is the root, id 16385 (FORMAT.md, "INODE"): an
/// image whose first record has a smaller id is refused by every read path
/// with the root's rule, not with a message about some later record.
#[test]
fn a_smaller_id_before_the_root_is_refused_as_a_missing_root() {
    let good = base();
    let bad = edit_inodes(&good, |m| m.id == ROOT_ID, |m| m.id = 100);
    refused(&bad, "a first inode of id 100");
    for read in [ReadStrategy::Bulk, ReadStrategy::Stream] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("img.nsi");
        std::fs::write(&path, &bad).unwrap();
        let o = LoadOptions {
            read,
            ..LoadOptions::default()
        };
        let e = load(&path, &o).err().unwrap().to_string();
        assert!(e.contains("root directory 16385"), "{read:?}: {e}");
    }
}

/// Kinds 9, 10 and 11 are optional kinds (FORMAT.md, "Sections"): listed
/// with `optional = false`, a NAME_INDEX or NAME_RUNS is refused by every read path as an
/// unknown required section; and a split section whose pieces are all plain
/// declares `raw_length` 0, never their sum.
#[test]
fn name_index_must_be_optional_and_a_plain_split_section_has_no_raw_length() {
    for legacy in [true, false] {
        let (bytes, kind) = base_with_names(legacy);
        let idx = index_of(&bytes);
        let body = bytes[..idx.sections.last().unwrap().end() as usize].to_vec();
        let mut required = idx.clone();
        required.section_mut(kind).unwrap().optional = false;
        refused(
            &with_index(body, &required),
            &format!("{kind} with optional = false"),
        );
    }
    let bytes = base();
    let idx = index_of(&bytes);
    let body = bytes[..idx.sections.last().unwrap().end() as usize].to_vec();
    let mut summed = idx.clone();
    let inode = summed.section_mut(SectionKind::INODE).unwrap();
    assert!(inode.sub_sections.len() >= 2 && inode.at_rest.raw_length == 0);
    inode.at_rest.raw_length = inode.length;
    refused(
        &with_index(body, &summed),
        "a plain split section declaring its sum",
    );
}

/// The zstd image with its INODE section (unsplit) replaced by `stored`
/// bytes that declare the most a compressed piece may: a plain length 255
/// times them and as many records as that length can hold, 9 bytes each.
/// The later sections are moved after it; checksums recomputed.
fn inode_claiming_the_most(stored: usize) -> Vec<u8> {
    use nsimage_format::codec::{MAX_EXPANSION, MAX_PLAIN_LENGTH};
    use nsimage_format::consts::{header, MIN_INODE_RECORD};
    let bytes = zstd_image();
    let mut idx = index_of(&bytes);
    let mut body = bytes[..header::SIZE].to_vec();
    for s in &mut idx.sections {
        let start = body.len() as u64;
        if s.kind == SectionKind::INODE {
            assert!(s.sub_sections.is_empty(), "the INODE section is unsplit");
            assert_eq!(s.at_rest.codec, nsimage_format::codec::Codec::Zstd);
            let junk: Vec<u8> = (0..stored).map(|i| (i * 7 + 3) as u8).collect();
            body.extend_from_slice(&junk);
            s.length = stored as u64;
            s.checksum = xxh3_64(&junk);
            s.at_rest.raw_length = (stored as u64 * MAX_EXPANSION).min(MAX_PLAIN_LENGTH);
            s.records = s.at_rest.raw_length / MIN_INODE_RECORD;
        } else {
            body.extend_from_slice(&bytes[s.offset as usize..s.end() as usize]);
            for u in &mut s.sub_sections {
                u.offset = u.offset - s.offset + start;
            }
        }
        s.offset = start;
    }
    with_index(body, &idx)
}

/// An INODE section whose declared records need more memory than can be
/// had (4 MB stored claiming 1 GB plain, 113 M records, 5.4 GB of node
/// table, under a 2 GB address space) is refused as corrupt with exit 1
/// and a located error naming the memory, not aborted by the allocator.
#[test]
fn a_record_count_needing_more_memory_than_there_is_is_an_error() {
    let bytes = inode_claiming_the_most(4 << 20);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("img.nsi");
    std::fs::write(&path, &bytes).unwrap();
    let bin = env!("CARGO_BIN_EXE_nsimage");
    for threads in ["1", "2"] {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -v {} && exec \"$0\" load \"$1\" --threads {threads}",
                2048 * 1024
            ))
            .arg(bin)
            .arg(&path)
            .output()
            .expect("running nsimage");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{threads} threads: {err}");
        assert!(
            err.contains("INODE") && err.contains("cannot be had"),
            "{threads} threads: {err}"
        );
    }
}
