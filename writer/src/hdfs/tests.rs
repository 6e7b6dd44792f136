//! Unit tests of the HDFS writer: its output decoded with prost
//! (`nsimage_format::hdfs_pb`) and flate2, never with the loader.
// Test images are small: their offsets and counts fit any integer type.
#![allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]

use super::image::split_entry;
use super::inodes::signed_cmp;
use super::*;
use flate2::bufread::{GzDecoder, ZlibDecoder};
use md5::{Digest as _, Md5};
use nsimage_format::hdfs_pb::i_node_directory_section::DirEntry;
use nsimage_format::hdfs_pb::i_node_section::{i_node, INode};
use nsimage_format::hdfs_pb::{
    file_summary, files_under_construction_section::FileUnderConstructionEntry,
    string_table_section, CacheManagerSection, FileSummary, INodeSection, NameSystemSection,
    SecretManagerSection, SnapshotSection, StringTableSection,
};
use nsimage_namespace::{Block, FileSpec, Namespace, NsInfo, PermSpec, XAttrNs};
use prost::Message;
use std::collections::HashMap;
use std::io::Read;

const P: PermSpec<'static> = PermSpec {
    user: b"alice",
    group: b"staff",
    mode: 0o755,
};
const F: FileSpec = FileSpec {
    replication: 3,
    preferred_block_size: 128 << 20,
    storage_policy: 7,
};

/// A namespace with files and blocks, xattrs, an ACL, quotas, a symlink,
/// a file under construction, names with high bytes, another owner.
fn sample() -> Namespace {
    let mut ns = Namespace::new(NsInfo {
        namespace_id: 123_456_789,
        last_txid: 42,
        last_inode_id: 0,
        last_block_id: 0,
        generation_stamp: 0,
        creation_time: 5,
    });
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
    ns.set_xattr(u, XAttrNs::User, b"team", b"core").unwrap();
    ns.set_xattr(u, XAttrNs::Raw, b"enc", b"\x00\xff").unwrap();
    ns.set_acl(
        u,
        &[
            (b"", 0, false, 7),
            (b"bob", 0, false, 5),
            (b"ops", 1, true, 4),
        ],
    )
    .unwrap();
    ns.set_quota(u, 100, 1 << 30).unwrap();
    let f = ns.create(b"/user/alice/open", &P, &F, 40).unwrap();
    ns.set_under_construction(f, Some((b"client-1", b"host-1")))
        .unwrap();
    let bob = PermSpec {
        user: b"bob",
        group: b"ops",
        mode: 0o640,
    };
    let h = ns.mkdirs(b"/high", &bob, 50).unwrap();
    for name in [
        &b"Z"[..],
        b"a",
        b"\xc3\xa9t\xc3\xa9",
        b"\xff",
        b"a\x80",
        b"ab",
    ] {
        ns.create_in(h, name, &bob, &F, 51).unwrap();
    }
    ns
}

/// The image's FileSummary and its offset.
fn summary(img: &[u8]) -> (FileSummary, u64) {
    let n = img.len();
    let len = u32::from_be_bytes(img[n - 4..].try_into().unwrap()) as usize;
    let start = n - 4 - len;
    (
        FileSummary::decode_length_delimited(&img[start..n - 4]).unwrap(),
        start as u64,
    )
}

/// The bytes of one summary entry.
fn bytes_of<'a>(img: &'a [u8], s: &file_summary::Section) -> &'a [u8] {
    let o = s.offset() as usize;
    &img[o..o + s.length() as usize]
}

/// Decompresses every stream of `b` (one after another) with `codec`.
fn inflate(b: &[u8], codec: HdfsCodec) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    let mut rest = b;
    let mut streams = 0;
    while !rest.is_empty() {
        match codec {
            HdfsCodec::None => return (b.to_vec(), 0),
            HdfsCodec::Zlib => {
                let mut d = ZlibDecoder::new(rest);
                d.read_to_end(&mut out).unwrap();
                rest = d.into_inner();
            }
            HdfsCodec::Gzip => {
                let mut d = GzDecoder::new(rest);
                d.read_to_end(&mut out).unwrap();
                rest = d.into_inner();
            }
        }
        streams += 1;
    }
    (out, streams)
}

/// The uncompressed body of the section named `name` (the parent, not a
/// sub-section).
fn section(img: &[u8], name: &str) -> Vec<u8> {
    let (sum, _) = summary(img);
    let codec = match sum.codec.as_deref() {
        None => HdfsCodec::None,
        Some("org.apache.hadoop.io.compress.DefaultCodec") => HdfsCodec::Zlib,
        Some("org.apache.hadoop.io.compress.GzipCodec") => HdfsCodec::Gzip,
        Some(c) => panic!("codec {c}"),
    };
    let s = sum.sections.iter().find(|s| s.name() == name).unwrap();
    inflate(bytes_of(img, s), codec).0
}

/// Splits `b` into its varint-delimited messages.
fn messages(mut b: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let len = prost::encoding::decode_varint(&mut b).unwrap() as usize;
        out.push(b[..len].to_vec());
        b = &b[len..];
    }
    out
}

fn write(ns: &Namespace, opts: &HdfsWriteOptions) -> (Vec<u8>, HdfsWritten) {
    let mut img = Vec::new();
    let w = write_hdfs_image(ns, &mut img, opts).unwrap();
    (img, w)
}

const HADOOP3_ORDER: [&str; 11] = [
    "NS_INFO",
    "ERASURE_CODING",
    "INODE",
    "INODE_DIR",
    "FILES_UNDERCONSTRUCTION",
    "SNAPSHOT",
    "INODE_REFERENCE",
    "SECRET_MANAGER",
    "CACHE_MANAGER",
    "STRING_TABLE",
    "",
];

#[test]
fn summary_sections_tile_the_file_in_hadoops_order() {
    let ns = sample();
    let (img, w) = write(&ns, &HdfsWriteOptions::default());
    assert_eq!(&img[..8], b"HDFSIMG1");
    assert_eq!(w.bytes, img.len() as u64);
    let (sum, start) = summary(&img);
    assert_eq!(start, w.summary_offset);
    assert_eq!(sum.ondisk_version, 1);
    assert_eq!(sum.layout_version, (-66i32) as u32);
    assert_eq!(sum.layout_version, 4294967230);
    assert_eq!(sum.codec, None);
    let names: Vec<&str> = sum.sections.iter().map(|s| s.name()).collect();
    assert_eq!(names, HADOOP3_ORDER[..10]);
    let mut at = 8;
    for s in &sum.sections {
        assert_eq!(s.offset(), at, "{}", s.name());
        at += s.length();
    }
    assert_eq!(at, start);
    // What the writer reports is what the summary says.
    let listed: Vec<(String, u64, u64)> = sum
        .sections
        .iter()
        .map(|s| (s.name().to_owned(), s.offset(), s.length()))
        .collect();
    let reported: Vec<(String, u64, u64)> = w
        .sections
        .iter()
        .map(|s| (s.name.clone(), s.offset, s.length))
        .collect();
    assert_eq!(listed, reported);
    // Empty sections are listed with length 0, as Hadoop lists them.
    let empty = |n: &str| {
        sum.sections
            .iter()
            .find(|s| s.name() == n)
            .unwrap()
            .length()
    };
    assert_eq!(empty("INODE_REFERENCE"), 0);
}

#[test]
fn md5_is_the_md5_of_the_bytes() {
    for codec in [HdfsCodec::None, HdfsCodec::Zlib, HdfsCodec::Gzip] {
        let opts = HdfsWriteOptions {
            codec,
            sub_sections: true,
            inode_threshold: 0,
            ..Default::default()
        };
        let (img, w) = write(&sample(), &opts);
        let want: [u8; 16] = Md5::digest(&img).into();
        assert_eq!(w.md5, want, "{codec:?}");
        let name = image_file_name(42);
        assert_eq!(
            md5_sidecar_line(&w.md5, &name),
            format!("{} *fsimage_0000000000000000042\n", md5_hex(&want))
        );
    }
}

#[test]
fn header_sections_are_what_hadoop_writes_for_an_empty_manager() {
    let ns = sample();
    let (img, _) = write(&ns, &HdfsWriteOptions::default());
    let m = messages(&section(&img, "NS_INFO"));
    assert_eq!(m.len(), 1);
    let n = NameSystemSection::decode(&m[0][..]).unwrap();
    assert_eq!(n.namespace_id(), 123_456_789);
    assert_eq!(n.genstamp_v1(), 1000);
    assert_eq!(n.genstamp_v1_limit, Some(0));
    assert_eq!(n.genstamp_v2(), ns.info().generation_stamp);
    assert_eq!(n.last_allocated_block_id(), ns.info().last_block_id);
    assert_eq!(n.transaction_id(), 42);
    assert_eq!(n.last_allocated_striped_block_id(), 1 << 63);
    assert_eq!(n.rolling_upgrade_start_time, None);

    let m = messages(&section(&img, "SNAPSHOT"));
    let s = SnapshotSection::decode(&m[0][..]).unwrap();
    assert_eq!((s.snapshot_counter, s.num_snapshots), (Some(0), Some(0)));
    let m = messages(&section(&img, "SECRET_MANAGER"));
    assert_eq!(
        SecretManagerSection::decode(&m[0][..]).unwrap(),
        SecretManagerSection {
            current_id: Some(0),
            token_sequence_number: Some(0),
            num_keys: Some(0),
            num_tokens: Some(0)
        }
    );
    let m = messages(&section(&img, "CACHE_MANAGER"));
    let c = CacheManagerSection::decode(&m[0][..]).unwrap();
    assert_eq!(
        (c.next_directive_id, c.num_pools, c.num_directives),
        (1, 0, 0)
    );
    let m = messages(&section(&img, "ERASURE_CODING"));
    assert_eq!(m.len(), 1);
}

/// The string table as a map from (kind ordinal or 0, serial) to string.
fn string_table(img: &[u8]) -> (u32, HashMap<u32, Vec<u8>>) {
    let m = messages(&section(img, "STRING_TABLE"));
    let h = StringTableSection::decode(&m[0][..]).unwrap();
    assert_eq!(h.num_entry() as usize, m.len() - 1);
    let mut t = HashMap::new();
    for e in &m[1..] {
        // Decoded as bytes: the writer keeps non-UTF-8 strings as they are.
        let e = RawEntry::decode(&e[..]).unwrap();
        assert!(t.insert(e.id, e.s).is_none(), "duplicate id");
        let _ = string_table_section::Entry::default();
    }
    (h.mask_bits(), t)
}

/// A string table entry read as bytes.
#[derive(Clone, PartialEq, prost::Message)]
struct RawEntry {
    #[prost(uint32, tag = "1")]
    id: u32,
    #[prost(bytes = "vec", tag = "2")]
    s: Vec<u8>,
}

/// A file-under-construction entry read as bytes.
#[derive(Clone, PartialEq, prost::Message)]
struct RawUc {
    #[prost(uint64, tag = "1")]
    inode_id: u64,
    #[prost(bytes = "vec", tag = "2")]
    full_path: Vec<u8>,
}

fn inodes(img: &[u8]) -> (INodeSection, Vec<INode>) {
    let m = messages(&section(img, "INODE"));
    let h = INodeSection::decode(&m[0][..]).unwrap();
    let v = m[1..]
        .iter()
        .map(|b| INode::decode(&b[..]).unwrap())
        .collect();
    (h, v)
}

fn check_round_trip_of_attributes(ns: &Namespace, img: &[u8], expanded: bool) {
    let (mask, table) = string_table(img);
    assert_eq!(mask, if expanded { 3 } else { 0 });
    let name = |kind: u32, serial: u32| -> &[u8] {
        let id = if expanded {
            serial | (kind << 29)
        } else {
            serial
        };
        table
            .get(&id)
            .map(|v| &v[..])
            .unwrap_or_else(|| panic!("no string {id:#x}"))
    };
    let (h, list) = inodes(img);
    assert_eq!(h.num_inodes(), ns.stats().inodes);
    assert_eq!(h.last_inode_id(), ns.info().last_inode_id);
    assert_eq!(list.len() as u64, ns.stats().inodes);
    let ids: Vec<u64> = list.iter().map(|i| i.id).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(ids, sorted, "inodes in id order");
    for m in &list {
        let inode = ns.inode(m.id).unwrap();
        assert_eq!(m.name(), inode.name());
        let perm = match m.r#type() {
            i_node::Type::File => {
                let f = m.file.as_ref().unwrap();
                assert_eq!(f.modification_time(), inode.mtime());
                assert_eq!(f.replication(), 3);
                assert_eq!(f.preferred_block_size(), 128 << 20);
                assert_eq!(f.storage_policy_id, Some(7));
                assert_eq!(f.block_type, Some(0));
                let blocks: Vec<(u64, u64, u64)> = f
                    .blocks
                    .iter()
                    .map(|b| (b.block_id, b.gen_stamp, b.num_bytes()))
                    .collect();
                let want: Vec<(u64, u64, u64)> = inode
                    .blocks()
                    .iter()
                    .map(|b| (b.id, b.generation_stamp, b.length))
                    .collect();
                assert_eq!(blocks, want);
                if inode.name() == b"open" {
                    let uc = f.file_uc.as_ref().unwrap();
                    assert_eq!(
                        (uc.client_name(), uc.client_machine()),
                        ("client-1", "host-1")
                    );
                } else {
                    assert!(f.file_uc.is_none());
                }
                f.permission()
            }
            i_node::Type::Directory => {
                let d = m.directory.as_ref().unwrap();
                assert_eq!(d.modification_time(), inode.mtime());
                if inode.name() == b"alice" {
                    assert_eq!((d.ns_quota(), d.ds_quota()), (100, 1 << 30));
                    // ACL: (name, scope, type, perm).
                    let acl: Vec<(Vec<u8>, u32, u32, u32)> = d
                        .acl
                        .as_ref()
                        .unwrap()
                        .entries
                        .iter()
                        .map(|&e| {
                            let serial = e >> 6;
                            let ty = (e >> 3) & 3;
                            let n = if serial == 0 {
                                Vec::new()
                            } else {
                                name(ty + 1, serial).to_vec()
                            };
                            (n, (e >> 5) & 1, ty, e & 7)
                        })
                        .collect();
                    assert_eq!(
                        acl,
                        vec![
                            (b"".to_vec(), 0, 0, 7),
                            (b"bob".to_vec(), 0, 0, 5),
                            (b"ops".to_vec(), 1, 1, 4)
                        ]
                    );
                    let mut xattrs: Vec<(u32, Vec<u8>, Vec<u8>)> = d
                        .x_attrs
                        .as_ref()
                        .unwrap()
                        .x_attrs
                        .iter()
                        .map(|x| {
                            let ns = ((x.name >> 30) & 3) | (((x.name >> 5) & 1) << 2);
                            let serial = (x.name >> 6) & 0xff_ffff;
                            (ns, name(3, serial).to_vec(), x.value().to_vec())
                        })
                        .collect();
                    xattrs.sort();
                    assert_eq!(
                        xattrs,
                        vec![
                            (0, b"team".to_vec(), b"core".to_vec()),
                            (4, b"enc".to_vec(), b"\x00\xff".to_vec())
                        ]
                    );
                } else {
                    assert_eq!((d.ns_quota(), d.ds_quota()), (u64::MAX, u64::MAX));
                    assert!(d.acl.is_none() && d.x_attrs.is_none());
                }
                d.permission()
            }
            i_node::Type::Symlink => {
                let s = m.symlink.as_ref().unwrap();
                assert_eq!(s.target(), b"/data/2024/01");
                assert_eq!(s.modification_time(), 31);
                assert_eq!(s.access_time(), 31);
                s.permission()
            }
        };
        assert_eq!(perm & 0xffff, u64::from(inode.mode()));
        assert_eq!(
            name(1, (perm >> 40) as u32),
            inode.user(),
            "user of {}",
            m.id
        );
        assert_eq!(
            name(2, ((perm >> 16) & 0xff_ffff) as u32),
            inode.group(),
            "group of {}",
            m.id
        );
    }
}

#[test]
fn inodes_permissions_and_strings_round_trip_expanded() {
    let ns = sample();
    let (img, w) = write(&ns, &HdfsWriteOptions::default());
    assert_eq!(w.inodes, ns.stats().inodes);
    check_round_trip_of_attributes(&ns, &img, true);
    let (_, table) = string_table(&img);
    assert_eq!(w.strings, table.len() as u64);
    // Every entry carries its kind in the top three bits; serials from 1.
    for id in table.keys() {
        assert!(matches!(id >> 29, 1..=3), "{id:#x}");
        assert!(id & 0x1fff_ffff >= 1);
    }
    // The root's owner is the empty user: it gets a serial of its own.
    assert!(table.values().any(|v| v.is_empty()));
}

#[test]
fn inodes_permissions_and_strings_round_trip_global() {
    let ns = sample();
    let opts = HdfsWriteOptions {
        expanded_string_tables: false,
        ..Default::default()
    };
    let (img, _) = write(&ns, &opts);
    check_round_trip_of_attributes(&ns, &img, false);
    let (_, table) = string_table(&img);
    let mut ids: Vec<u32> = table.keys().copied().collect();
    ids.sort_unstable();
    assert_eq!(ids, (1..=ids.len() as u32).collect::<Vec<_>>());
}

#[test]
fn directory_children_in_hadoops_signed_order() {
    let ns = sample();
    let (img, w) = write(&ns, &HdfsWriteOptions::default());
    let entries: Vec<DirEntry> = messages(&section(&img, "INODE_DIR"))
        .iter()
        .map(|b| DirEntry::decode(&b[..]).unwrap())
        .collect();
    assert_eq!(w.dir_entries, entries.len() as u64);
    let with_children = ns
        .iter()
        .filter(|i| i.child_slots().iter().any(|_| true))
        .count();
    assert_eq!(entries.len(), with_children);
    let mut parents: Vec<u64> = entries.iter().map(|e| e.parent()).collect();
    let sorted = {
        let mut p = parents.clone();
        p.sort_unstable();
        p
    };
    assert_eq!(parents, sorted, "entries in directory id order");
    parents.dedup();
    assert_eq!(parents.len(), entries.len());
    let high = ns.resolve(b"/high").unwrap();
    let e = entries.iter().find(|e| e.parent() == high).unwrap();
    let names: Vec<&[u8]> = e
        .children
        .iter()
        .map(|&c| ns.inode(c).unwrap().name())
        .collect();
    // Signed bytes: 0x80 and above sort before ASCII.
    assert_eq!(
        names,
        vec![
            &b"\xc3\xa9t\xc3\xa9"[..],
            b"\xff",
            b"Z",
            b"a",
            b"a\x80",
            b"ab"
        ]
    );
    for e in &entries {
        let names: Vec<&[u8]> = e
            .children
            .iter()
            .map(|&c| ns.inode(c).unwrap().name())
            .collect();
        assert!(names.windows(2).all(|w| signed_cmp(w[0], w[1]).is_lt()));
        assert!(e.ref_children.is_empty());
    }
}

#[test]
fn signed_order_is_guavas() {
    use std::cmp::Ordering::*;
    assert_eq!(signed_cmp(b"a", b"b"), Less);
    assert_eq!(signed_cmp(b"\x80", b"a"), Less);
    assert_eq!(signed_cmp(b"\xff", b"\x80"), Greater);
    assert_eq!(signed_cmp(b"ab", b"a"), Greater);
    assert_eq!(signed_cmp(b"", b"\x00"), Less);
    assert_eq!(signed_cmp(b"x", b"x"), Equal);
}

#[test]
fn files_under_construction_listed_with_full_paths() {
    let ns = sample();
    let (img, w) = write(&ns, &HdfsWriteOptions::default());
    let m = messages(&section(&img, "FILES_UNDERCONSTRUCTION"));
    assert_eq!(m.len(), 1);
    assert_eq!(w.under_construction, 1);
    let e = RawUc::decode(&m[0][..]).unwrap();
    assert_eq!(e.inode_id, ns.resolve(b"/user/alice/open").unwrap());
    assert_eq!(e.full_path, b"/user/alice/open");
    // The schema's own type reads it too.
    let e = FileUnderConstructionEntry::decode(&m[0][..]).unwrap();
    assert_eq!(e.full_path(), "/user/alice/open");
}

#[test]
fn compressed_sections_decompress_to_the_plain_ones() {
    let ns = sample();
    let (plain, _) = write(&ns, &HdfsWriteOptions::default());
    for (codec, class) in [
        (
            HdfsCodec::Zlib,
            "org.apache.hadoop.io.compress.DefaultCodec",
        ),
        (HdfsCodec::Gzip, "org.apache.hadoop.io.compress.GzipCodec"),
    ] {
        let opts = HdfsWriteOptions {
            codec,
            ..Default::default()
        };
        let (img, w) = write(&ns, &opts);
        let (sum, start) = summary(&img);
        assert_eq!(sum.codec.as_deref(), Some(class));
        let names: Vec<&str> = sum.sections.iter().map(|s| s.name()).collect();
        assert_eq!(names, HADOOP3_ORDER[..10]);
        let mut at = 8;
        for s in &sum.sections {
            assert_eq!(s.offset(), at);
            at += s.length();
            // Each section is exactly one stream, even an empty one.
            let (_, streams) = inflate(bytes_of(&img, s), codec);
            assert_eq!(streams, 1, "{} {codec:?}", s.name());
            assert_eq!(
                section(&img, s.name()),
                section(&plain, s.name()),
                "{} {codec:?}",
                s.name()
            );
        }
        // Hadoop's empty stream between the last section and the summary.
        let gap = &img[at as usize..start as usize];
        let (body, streams) = inflate(gap, codec);
        assert_eq!((body.len(), streams), (0, 1));
        if codec == HdfsCodec::Zlib {
            assert_eq!(gap, [0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]);
        }
        assert_eq!(w.summary_offset, start);
    }
}

/// A namespace of `dirs` directories of `files` files each.
fn wide(dirs: u64, files: u64) -> Namespace {
    let mut ns = Namespace::default();
    for d in 0..dirs {
        let dir = ns.mkdirs(format!("/d{d:03}").as_bytes(), &P, 1).unwrap();
        for f in 0..files {
            ns.create_in(dir, format!("f{f:04}").as_bytes(), &P, &F, 2)
                .unwrap();
        }
    }
    ns
}

fn check_sub_sections(codec: HdfsCodec) {
    let ns = wide(7, 13);
    let inodes = ns.stats().inodes;
    assert_eq!(inodes, 1 + 7 + 7 * 13);
    let opts = HdfsWriteOptions {
        sub_sections: true,
        target_sections: 4,
        inode_threshold: 0,
        codec,
        ..Default::default()
    };
    let per = opts.inodes_per_sub_section(inodes).unwrap();
    assert_eq!(per, inodes.div_ceil(4));
    let (img, _) = write(&ns, &opts);
    let (plain, _) = write(
        &ns,
        &HdfsWriteOptions {
            codec: HdfsCodec::None,
            ..opts.clone()
        },
    );
    let (sum, _) = summary(&img);
    let names: Vec<&str> = sum.sections.iter().map(|s| s.name()).collect();
    // Sub-section entries come right before their section's entry.
    let first_inode_sub = names.iter().position(|n| *n == "INODE_SUB").unwrap();
    let inode_at = names.iter().position(|n| *n == "INODE").unwrap();
    assert!(names[first_inode_sub..inode_at]
        .iter()
        .all(|n| *n == "INODE_SUB"));
    assert_eq!(inode_at - first_inode_sub, 4);
    let first_dir_sub = names.iter().position(|n| *n == "INODE_DIR_SUB").unwrap();
    let dir_at = names.iter().position(|n| *n == "INODE_DIR").unwrap();
    assert_eq!(first_dir_sub, inode_at + 1);
    assert!(names[first_dir_sub..dir_at]
        .iter()
        .all(|n| *n == "INODE_DIR_SUB"));
    let without: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !n.ends_with("_SUB"))
        .collect();
    assert_eq!(without, HADOOP3_ORDER[..10]);

    for (sub, parent) in [("INODE_SUB", "INODE"), ("INODE_DIR_SUB", "INODE_DIR")] {
        let p = sum.sections.iter().find(|s| s.name() == parent).unwrap();
        let subs: Vec<&file_summary::Section> =
            sum.sections.iter().filter(|s| s.name() == sub).collect();
        // The sub-sections tile their section.
        let mut at = p.offset();
        for s in &subs {
            assert_eq!(s.offset(), at);
            at += s.length();
        }
        assert_eq!(at, p.offset() + p.length());
        // Each decodes on its own: one stream of whole records.
        let mut records = 0;
        let mut all = Vec::new();
        for (k, s) in subs.iter().enumerate() {
            let (body, streams) = inflate(bytes_of(&img, s), codec);
            if codec != HdfsCodec::None {
                assert_eq!(streams, 1);
            }
            let m = messages(&body);
            let m = if parent == "INODE" && k == 0 {
                // The section's header opens the first sub-section.
                let h = INodeSection::decode(&m[0][..]).unwrap();
                assert_eq!(h.num_inodes(), inodes);
                &m[1..]
            } else {
                &m[..]
            };
            for r in m {
                if parent == "INODE" {
                    INode::decode(&r[..]).unwrap();
                } else {
                    DirEntry::decode(&r[..]).unwrap();
                }
            }
            if parent == "INODE" && k + 1 < subs.len() {
                assert_eq!(m.len() as u64, per, "inodes per sub-section");
            }
            records += m.len();
            all.extend_from_slice(&body);
        }
        if parent == "INODE" {
            assert_eq!(records as u64, inodes);
        } else {
            assert_eq!(records, 1 + 7);
        }
        // The sub-sections together are the section, as a serial reader
        // (Hadoop's, which ignores them) reads it.
        assert_eq!(all, section(&plain, parent));
        assert_eq!(section(&img, parent), section(&plain, parent));
    }
}

#[test]
fn sub_sections_uncompressed() {
    check_sub_sections(HdfsCodec::None);
}

#[test]
fn sub_sections_zlib() {
    check_sub_sections(HdfsCodec::Zlib);
}

#[test]
fn sub_sections_gzip() {
    check_sub_sections(HdfsCodec::Gzip);
}

#[test]
fn sub_sections_follow_hadoops_threshold_and_target() {
    let opts = HdfsWriteOptions {
        sub_sections: true,
        ..Default::default()
    };
    assert_eq!(opts.inodes_per_sub_section(999_999), None);
    assert_eq!(opts.inodes_per_sub_section(1_000_000), Some(83_334));
    assert_eq!(opts.inodes_per_sub_section(5_000_000), Some(416_667));
    let off = HdfsWriteOptions::default();
    assert_eq!(off.inodes_per_sub_section(5_000_000), None);
    // Below the threshold: no sub-section entries at all.
    let (img, w) = write(&wide(2, 3), &opts);
    assert!(w.sections.iter().all(|s| !s.name.ends_with("_SUB")));
    assert_eq!(summary(&img).0.sections.len(), 10);
}

#[test]
fn an_exact_multiple_leaves_no_empty_sub_section() {
    // 1 root + 3 dirs + 3 * 3 files = 13 inodes... make it 12: 1 + 1 + 10.
    let ns = wide(1, 10);
    assert_eq!(ns.stats().inodes, 12);
    for codec in [HdfsCodec::None, HdfsCodec::Zlib] {
        let opts = HdfsWriteOptions {
            sub_sections: true,
            target_sections: 3,
            inode_threshold: 0,
            codec,
            ..Default::default()
        };
        let (img, w) = write(&ns, &opts);
        assert_eq!(w.named("INODE_SUB").count(), 3);
        assert!(w
            .sections
            .iter()
            .all(|s| s.length > 0 || !s.name.ends_with("_SUB")));
        let (sum, _) = summary(&img);
        assert_eq!(sum.sections.len(), w.sections.len());
    }
}

#[test]
fn hadoop2_layout_writes_hadoop2_sections() {
    let ns = sample();
    let opts = HdfsWriteOptions {
        layout_version: -63,
        ..Default::default()
    };
    let (img, _) = write(&ns, &opts);
    let (sum, _) = summary(&img);
    assert_eq!(sum.layout_version, 4294967233);
    let names: Vec<&str> = sum.sections.iter().map(|s| s.name()).collect();
    assert_eq!(
        names,
        [
            "NS_INFO",
            "INODE",
            "INODE_DIR",
            "FILES_UNDERCONSTRUCTION",
            "SNAPSHOT",
            "SNAPSHOT_DIFF",
            "INODE_REFERENCE",
            "SECRET_MANAGER",
            "CACHE_MANAGER",
            "STRING_TABLE"
        ]
    );
    let m = messages(&section(&img, "NS_INFO"));
    let n = NameSystemSection::decode(&m[0][..]).unwrap();
    assert_eq!(n.last_allocated_striped_block_id, None);
    let m = messages(&section(&img, "STRING_TABLE"));
    assert_eq!(
        StringTableSection::decode(&m[0][..]).unwrap().mask_bits,
        None
    );
    check_round_trip_of_attributes_hadoop2(&ns, &img);
}

fn check_round_trip_of_attributes_hadoop2(ns: &Namespace, img: &[u8]) {
    let (_, list) = inodes(img);
    assert_eq!(list.len() as u64, ns.stats().inodes);
    for m in list {
        if let Some(f) = m.file {
            assert_eq!(f.block_type, None);
            assert_eq!(f.storage_policy_id, Some(7));
        }
    }
}

#[test]
fn refused_inputs_are_invalid_input() {
    let ns = sample();
    for lv in [-56, -68, 1] {
        let opts = HdfsWriteOptions {
            layout_version: lv,
            ..Default::default()
        };
        let e = write_hdfs_image(&ns, Vec::new(), &opts).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{lv}");
        assert!(e.to_string().contains(&lv.to_string()));
    }
    // A raw. xattr before the layout that has the namespace's third bit.
    let opts = HdfsWriteOptions {
        layout_version: -58,
        ..Default::default()
    };
    let e = write_hdfs_image(&ns, Vec::new(), &opts).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    // Xattrs on a symlink: HDFS has none.
    let mut link = Namespace::default();
    let l = link.symlink(b"/l", b"/x", &P, 1).unwrap();
    link.set_xattr(l, XAttrNs::User, b"a", b"b").unwrap();
    let e = write_hdfs_image(&link, Vec::new(), &HdfsWriteOptions::default()).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert!(e.to_string().contains("symlink"));
    // A namespace id over 32 bits.
    let big = Namespace::new(NsInfo {
        namespace_id: 1 << 40,
        ..Default::default()
    });
    let e = write_hdfs_image(&big, Vec::new(), &HdfsWriteOptions::default()).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
}

#[test]
fn same_namespace_same_bytes() {
    let ns = sample();
    let opts = HdfsWriteOptions {
        codec: HdfsCodec::Zlib,
        sub_sections: true,
        inode_threshold: 0,
        ..Default::default()
    };
    let (a, wa) = write(&ns, &opts);
    let (b, wb) = write(&ns, &opts);
    assert_eq!(a, b);
    assert_eq!(wa, wb);
}

#[test]
fn naming_conventions() {
    assert_eq!(image_file_name(0), "fsimage_0000000000000000000");
    assert_eq!(image_file_name(26), "fsimage_0000000000000000026");
    assert_eq!(image_file_name(u64::MAX), "fsimage_18446744073709551615");
    assert_eq!(
        md5_sidecar_name("fsimage_0000000000000000026"),
        "fsimage_0000000000000000026.md5"
    );
    let md5 = [0xab; 16];
    assert_eq!(md5_hex(&md5), "ab".repeat(16));
    assert_eq!(
        md5_sidecar_line(&md5, "fsimage_1"),
        format!("{} *fsimage_1\n", "ab".repeat(16))
    );
}

/// Throughput on a large namespace (run by hand:
/// `cargo test -p nsimage-writer --release hdfs_throughput -- --ignored --nocapture`).
#[test]
#[ignore]
fn hdfs_throughput() {
    let n: u64 = std::env::var("HDFS_INODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let t = std::time::Instant::now();
    let ns = wide(n / 1000, 999);
    eprintln!("built {} inodes in {:?}", ns.stats().inodes, t.elapsed());
    for codec in [HdfsCodec::None, HdfsCodec::Zlib] {
        let opts = HdfsWriteOptions {
            sub_sections: true,
            inode_threshold: 0,
            codec,
            ..Default::default()
        };
        let t = std::time::Instant::now();
        let w = write_hdfs_image(&ns, std::io::sink(), &opts).unwrap();
        eprintln!("{codec:?}: {} bytes in {:?}", w.bytes, t.elapsed());
    }
}

/// Sub-section cuts across many parallel batches (and free slots) fall
/// where Hadoop's serial saver puts them.
#[test]
fn sub_section_cuts_across_batches_match_a_serial_count() {
    let mut ns = wide(41, 999);
    for d in (0..41).step_by(5) {
        for f in (0..999).step_by(7) {
            ns.delete(format!("/d{d:03}/f{f:04}").as_bytes(), false, 3)
                .unwrap();
        }
    }
    ns.delete(b"/d040", true, 4).unwrap();
    let inodes = ns.stats().inodes;
    let opts = HdfsWriteOptions {
        sub_sections: true,
        target_sections: 7,
        inode_threshold: 0,
        ..Default::default()
    };
    let per = opts.inodes_per_sub_section(inodes).unwrap();
    let (img, w) = write(&ns, &opts);
    assert_eq!(w.inodes, inodes);
    let (sum, _) = summary(&img);
    // INODE: every sub-section but the last holds `per` inodes.
    let subs: Vec<&file_summary::Section> = sum
        .sections
        .iter()
        .filter(|s| s.name() == "INODE_SUB")
        .collect();
    let counts: Vec<u64> = subs
        .iter()
        .enumerate()
        .map(|(k, s)| messages(bytes_of(&img, s)).len() as u64 - u64::from(k == 0))
        .collect();
    assert_eq!(counts.iter().sum::<u64>(), inodes);
    assert!(
        counts[..counts.len() - 1].iter().all(|&c| c == per),
        "{counts:?}"
    );
    assert_eq!(subs.len() as u64, inodes.div_ceil(per));
    // INODE_DIR: emulate the saver's count of children.
    let mut want = Vec::new();
    let (mut acc, mut entries) = (0u64, 0u64);
    for i in ns
        .iter()
        .filter(|i| i.kind() == nsimage_namespace::InodeKind::Directory)
    {
        let n = i.child_slots().len() as u64;
        if n > 0 {
            acc += n;
            entries += 1;
        }
        if acc >= per {
            want.push(entries);
            acc = 0;
            entries = 0;
        }
    }
    if entries > 0 {
        want.push(entries);
    }
    let got: Vec<u64> = sum
        .sections
        .iter()
        .filter(|s| s.name() == "INODE_DIR_SUB")
        .map(|s| messages(bytes_of(&img, s)).len() as u64)
        .collect();
    assert_eq!(got, want);
}

/// The namespace of `zero_block_size/fsimage_0000000000000000004` in
/// shared/data/hdfs (written by a Hadoop 2.7 NameNode, layout -63): a
/// root, `/tmp`, and a file under construction with a preferred block
/// size of 0.
fn zero_block_size() -> Namespace {
    let mut ns = Namespace::new(NsInfo {
        namespace_id: 1_584_891_892,
        last_txid: 4,
        last_inode_id: 0,
        last_block_id: 1_073_741_824,
        generation_stamp: 1000,
        // A Hadoop image has no creation time (nsimage's extension field
        // is written only when it is set).
        creation_time: 0,
    });
    let root = nsimage_namespace::ROOT_ID;
    ns.set_owner(root, Some(b"rushabhs"), Some(b"supergroup"))
        .unwrap();
    ns.set_mode(root, 0o755).unwrap();
    // Hadoop's root quota: Long.MAX_VALUE names, no space quota.
    ns.set_quota(root, i64::MAX, -1).unwrap();
    let p = PermSpec {
        user: b"rushabhs",
        group: b"supergroup",
        mode: 0o755,
    };
    let t = 1_424_270_826_853;
    ns.mkdirs(b"/tmp", &p, t).unwrap();
    let spec = FileSpec {
        replication: 1,
        preferred_block_size: 0,
        storage_policy: 0,
    };
    let f = ns
        .create(
            b"/tmp/zeroBlockFile",
            &PermSpec { mode: 0o644, ..p },
            &spec,
            t,
        )
        .unwrap();
    ns.set_under_construction(
        f,
        Some((b"DFSClient_NONMAPREDUCE_1633025288_1", b"127.0.0.1")),
    )
    .unwrap();
    ns.set_times(root, Some(1_424_270_826_844), None).unwrap();
    ns
}

/// Written at the same layout version, the same namespace gives the very
/// bytes the Hadoop NameNode wrote: the MD5 its `.md5` sidecar holds.
#[test]
fn byte_for_byte_what_a_hadoop_namenode_wrote() {
    let ns = zero_block_size();
    assert_eq!(ns.info().last_inode_id, 16387);
    let opts = HdfsWriteOptions {
        layout_version: -63,
        ..Default::default()
    };
    let (img, w) = write(&ns, &opts);
    // The real file (the repository's copy of shared/data/hdfs).
    let real = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/hdfs/zero_block_size/fsimage_0000000000000000004");
    let want = std::fs::read(&real).unwrap();
    assert_eq!(img.len(), want.len());
    assert_eq!(img, want);
    assert_eq!(img.len(), 569);
    // fsimage_0000000000000000004.md5, as the NameNode wrote it.
    assert_eq!(
        md5_sidecar_line(&w.md5, &image_file_name(ns.info().last_txid)),
        "a68a3351feb156daeb27169a03e2813c *fsimage_0000000000000000004\n"
    );
}

#[test]
fn adler32_and_its_combination() {
    use super::deflate::{adler32, adler32_combine};
    assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
    assert_eq!(adler32(b""), 1);
    let data: Vec<u8> = (0..200_000u32).map(|i| (i * 7919 % 251) as u8).collect();
    for cut in [0, 1, 5552, 65_521, 100_000, 200_000] {
        let (a, b) = data.split_at(cut);
        assert_eq!(
            adler32_combine(adler32(a), adler32(b), b.len() as u64),
            adler32(&data),
            "{cut}"
        );
    }
}

/// Streams longer than a window of chunks: one stream, checksums right
/// (the decoders check them), the bytes back.
#[test]
fn parallel_streams_inflate_to_their_input() {
    use super::deflate::{Framing, ParStream};
    // Compressible but not trivial: about 7 MiB.
    let mut data = Vec::new();
    let mut x = 12345u64;
    while data.len() < 7 << 20 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let word = (x >> 59) as usize;
        data.extend_from_slice(
            &b"inode block perm user group mtime atime replication"[word..word + 6],
        );
        data.push((x >> 33) as u8);
    }
    for (framing, codec) in [
        (Framing::Zlib, HdfsCodec::Zlib),
        (Framing::Gzip, HdfsCodec::Gzip),
    ] {
        let mut out = Vec::new();
        let mut s = ParStream::start(framing, &mut out).unwrap();
        for piece in data.chunks(300_001) {
            s.write(piece, &mut out).unwrap();
        }
        s.finish(&mut out).unwrap();
        let (back, streams) = inflate(&out, codec);
        assert_eq!(streams, 1);
        assert!(back == data, "{framing:?}");
        assert!(out.len() < data.len() / 2);
    }
}

/// An output that fails after `left` bytes.
struct Failing {
    left: usize,
}

impl std::io::Write for Failing {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            return Err(std::io::Error::other("disk full"));
        }
        let n = buf.len().min(self.left);
        self.left -= n;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn output_errors_come_back_as_they_are() {
    let ns = sample();
    for codec in [HdfsCodec::None, HdfsCodec::Zlib] {
        let opts = HdfsWriteOptions {
            codec,
            ..Default::default()
        };
        let (img, _) = write(&ns, &opts);
        for left in [0, 7, 100, img.len() - 1] {
            let e = write_hdfs_image(&ns, Failing { left }, &opts).unwrap_err();
            assert_eq!(e.to_string(), "disk full", "{codec:?} {left}");
        }
        write_hdfs_image(&ns, Failing { left: img.len() }, &opts).unwrap();
    }
}

/// A directory entry cut into parts of at most `most`: the children in
/// order, then the references, each part of the same parent, none empty;
/// one that fits is kept whole.
#[test]
fn a_wide_entry_is_split_in_order_children_before_references() {
    let entry = |children: u64, refs: u32| DirEntry {
        parent: Some(7),
        children: (100..100 + children).collect(),
        ref_children: (0..refs).collect(),
    };
    for (children, refs, most) in [
        (10, 0, 3),
        (9, 0, 3),
        (9, 2, 3),
        (8, 4, 3),
        (0, 7, 3),
        (5, 5, 10),
        (4, 3, 10),
        (10, 10, 1),
        (3, 0, 0),
    ] {
        let d = entry(children, refs);
        let parts = split_entry(d.clone(), most);
        let most = most.max(1);
        let what = format!("{children} children, {refs} refs, at most {most}");
        if d.children.len() + d.ref_children.len() <= most {
            assert_eq!(parts, vec![d.clone()], "{what}");
        }
        let mut kids = Vec::new();
        let mut refs_seen = Vec::new();
        for p in &parts {
            assert_eq!(p.parent, Some(7), "{what}");
            let n = p.children.len() + p.ref_children.len();
            assert!(n > 0 && n <= most, "{what}: a part of {n}");
            // No plain child after a reference.
            assert!(p.children.is_empty() || refs_seen.is_empty(), "{what}");
            kids.extend_from_slice(&p.children);
            refs_seen.extend_from_slice(&p.ref_children);
        }
        assert_eq!(kids, d.children, "{what}");
        assert_eq!(refs_seen, d.ref_children, "{what}");
        let least = (d.children.len() + d.ref_children.len())
            .div_ceil(most)
            .max(1);
        assert_eq!(parts.len(), least, "{what}: not the fewest parts");
    }
}
