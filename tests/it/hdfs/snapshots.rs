//! `convert` carries a Hadoop image's snapshots: a real shared image
//! (`hfsa/fsi_small_h2x.img`) edited to hold a snapshottable directory with
//! two snapshots, a file diff, directory diffs with a created list and
//! deleted inodes (a snapshot-only directory and file, with owners, ACL
//! and xattr names no current inode uses), a reference child
//! (refChildren) and a `WithName` reference, converted HDFS -> HDFS (plain,
//! sub-sections, codecs) and HDFS -> nsimage -> HDFS: the snapshot report,
//! the digest and the records (names resolved through each image's string
//! table) survive, every output verifies, `--drop-snapshots` writes none,
//! and a damaged HDFS_SNAPSHOTS section is exit 1, located.

use crate::common;
use crate::hdfs_common;

use common::{json, nsimage};
use hdfs_common::{data, delimited, inflate, messages, summary_of};
use nsimage_format::hdfs::StringTag;
use nsimage_format::hdfs::{map_string_ids, AclBits, PermBits, SnapshotCarry, XAttrBits};
use nsimage_format::hdfs_pb::i_node_directory_section::DirEntry;
use nsimage_format::hdfs_pb::i_node_reference_section::INodeReference;
use nsimage_format::hdfs_pb::i_node_section::{
    i_node, AclFeatureProto, INode, INodeDirectory, INodeFile, XAttrCompactProto, XAttrFeatureProto,
};
use nsimage_format::hdfs_pb::snapshot_carry::{DiffRecord, DirectoryDiffWithCreated};
use nsimage_format::hdfs_pb::snapshot_diff_section::{
    diff_entry, CreatedListEntry, DiffEntry, DirectoryDiff, FileDiff,
};
use nsimage_format::hdfs_pb::snapshot_section::Snapshot;
use nsimage_format::hdfs_pb::string_table_section::Entry as StringEntry;
use nsimage_format::hdfs_pb::{
    file_summary::Section, INodeSection, SnapshotSection, StringTableSection,
};
use prost::Message;
use std::collections::HashMap;
use std::path::Path;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn code(out: &std::process::Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

fn load(path: &Path) -> serde_json::Value {
    json(&nsimage(&["load", "--json", s(path)]))
}

/// The plain bytes of the section `name` (sub-sections joined), or none.
fn section(bytes: &[u8], name: &str) -> Option<Vec<u8>> {
    let fs = summary_of(bytes);
    let codec = fs.codec.clone();
    let subs: Vec<&Section> = fs
        .sections
        .iter()
        .filter(|x| x.name() == format!("{name}_SUB"))
        .collect();
    let whole = fs.sections.iter().find(|x| x.name() == name)?;
    let pieces: Vec<&Section> = if subs.is_empty() { vec![whole] } else { subs };
    let mut out = Vec::new();
    for p in pieces {
        let raw = &bytes[p.offset() as usize..(p.offset() + p.length()) as usize];
        out.extend(inflate(codec.as_deref(), raw));
    }
    Some(out)
}

/// A copy of `bytes` (uncompressed, no sub-sections) with each section's
/// plain bytes passed through `edit`.
fn edited(bytes: &[u8], edit: &dyn Fn(&str, Vec<u8>) -> Vec<u8>) -> Vec<u8> {
    let mut fs = summary_of(bytes);
    assert!(fs.codec.is_none());
    let mut list: Vec<Section> = fs.sections.clone();
    list.sort_by_key(|x| x.offset());
    let mut out = b"HDFSIMG1".to_vec();
    let mut sections = Vec::new();
    for x in &list {
        let raw = &bytes[x.offset() as usize..(x.offset() + x.length()) as usize];
        let plain = edit(x.name(), raw.to_vec());
        let at = out.len();
        out.extend_from_slice(&plain);
        sections.push(Section {
            name: x.name.clone(),
            offset: Some(at as u64),
            length: Some(plain.len() as u64),
        });
    }
    fs.sections = sections;
    let d = fs.encode_length_delimited_to_vec();
    out.extend_from_slice(&d);
    out.extend_from_slice(&(d.len() as u32).to_be_bytes());
    out
}

/// The string table of an image: its maskBits and (id as stored -> name).
fn string_table(bytes: &[u8]) -> (u32, HashMap<u32, String>) {
    let ms = messages(&section(bytes, "STRING_TABLE").unwrap());
    let h = StringTableSection::decode(&ms[0][..]).unwrap();
    let map = ms[1..]
        .iter()
        .map(|m| {
            let e = StringEntry::decode(&m[..]).unwrap();
            (e.id(), e.str().to_string())
        })
        .collect();
    (h.mask_bits(), map)
}

// The test image's new strings, used by snapshot records only.
const NEW: [&str; 5] = ["snapuser", "snapgroup", "acluser", "aclgroup", "snapx"];
const DELETED_FILE: u64 = 16450;
const DELETED_DIR: u64 = 16451;
const SNAPSHOTTABLE: u64 = 16507; // /test3
const FOO: u64 = 16508; // /test3/foo
const REF_CHILD: u64 = 16523; // /test3/foo/test_1KiB.img
const RENAMED: u64 = 16524; // /test3/foo/test_20MiB.img
const DIFFED_FILE: u64 = 16525; // /test3/test.img

/// `hfsa/fsi_small_h2x.img` with snapshots (see the module's doc).
pub(crate) fn rich_image() -> Vec<u8> {
    let bytes = std::fs::read(data().join("hfsa/fsi_small_h2x.img")).unwrap();
    let (mask, table) = string_table(&bytes);
    assert_eq!(mask, 0);
    let id_of = |name: &str| *table.iter().find(|(_, v)| *v == name).unwrap().0;
    let (mm, sg) = (id_of("mm"), id_of("supergroup"));
    let next = table.keys().max().unwrap() + 1;
    let new = |i: usize| next + i as u32;
    let perm = |u: u32, g: u32, mode: u16| {
        Some(
            PermBits {
                user: u,
                group: g,
                mode,
            }
            .pack(),
        )
    };
    let root_of = |name: &str| INode {
        r#type: i_node::Type::Directory as i32,
        id: SNAPSHOTTABLE,
        name: Some(name.as_bytes().to_vec()),
        directory: Some(INodeDirectory {
            modification_time: Some(1_600_000_000_000),
            ns_quota: Some(u64::MAX),
            ds_quota: Some(u64::MAX),
            permission: perm(mm, sg, 0o755),
            ..INodeDirectory::default()
        }),
        ..INode::default()
    };
    let edit = move |name: &str, plain: Vec<u8>| -> Vec<u8> {
        match name {
            "STRING_TABLE" => {
                let ms = messages(&plain);
                let mut h = StringTableSection::decode(&ms[0][..]).unwrap();
                h.num_entry = Some(h.num_entry() + NEW.len() as u32);
                let mut out = h.encode_length_delimited_to_vec();
                for m in &ms[1..] {
                    prost::encoding::encode_varint(m.len() as u64, &mut out);
                    out.extend_from_slice(m);
                }
                for (i, n) in NEW.iter().enumerate() {
                    out.extend(
                        StringEntry {
                            id: Some(new(i)),
                            str: Some(n.to_string()),
                        }
                        .encode_length_delimited_to_vec(),
                    );
                }
                out
            }
            "INODE" => {
                let ms = messages(&plain);
                let mut h = INodeSection::decode(&ms[0][..]).unwrap();
                h.num_inodes = Some(h.num_inodes() + 2);
                let mut inodes: Vec<INode> = ms[1..]
                    .iter()
                    .map(|m| INode::decode(&m[..]).unwrap())
                    .collect();
                let file = INode {
                    r#type: i_node::Type::File as i32,
                    id: DELETED_FILE,
                    name: Some(b"gone.log".to_vec()),
                    file: Some(INodeFile {
                        replication: Some(3),
                        modification_time: Some(1_500_000_000_000),
                        access_time: Some(1_500_000_000_000),
                        preferred_block_size: Some(128 << 20),
                        permission: perm(new(0), new(1), 0o640),
                        acl: Some(AclFeatureProto {
                            entries: vec![
                                AclBits {
                                    perm: 5,
                                    kind: 0,
                                    default_scope: false,
                                    name: new(2),
                                }
                                .pack(),
                                AclBits {
                                    perm: 4,
                                    kind: 1,
                                    default_scope: false,
                                    name: new(3),
                                }
                                .pack(),
                            ],
                        }),
                        x_attrs: Some(XAttrFeatureProto {
                            x_attrs: vec![XAttrCompactProto {
                                name: XAttrBits {
                                    ns: 0,
                                    name: new(4),
                                }
                                .pack(),
                                value: Some(b"v".to_vec()),
                            }],
                        }),
                        ..INodeFile::default()
                    }),
                    ..INode::default()
                };
                let dir = INode {
                    r#type: i_node::Type::Directory as i32,
                    id: DELETED_DIR,
                    name: Some(b"olddir".to_vec()),
                    directory: Some(INodeDirectory {
                        modification_time: Some(1_500_000_000_000),
                        ns_quota: Some(u64::MAX),
                        ds_quota: Some(u64::MAX),
                        permission: perm(new(0), sg, 0o700),
                        ..INodeDirectory::default()
                    }),
                    ..INode::default()
                };
                inodes.push(file);
                inodes.push(dir);
                inodes.sort_by_key(|n| n.id);
                let mut out = h.encode_length_delimited_to_vec();
                out.extend(delimited(&inodes));
                out
            }
            "INODE_DIR" => {
                let mut es: Vec<DirEntry> = messages(&plain)
                    .iter()
                    .map(|m| DirEntry::decode(&m[..]).unwrap())
                    .collect();
                let holder = es.iter_mut().find(|e| e.parent() == FOO).unwrap();
                holder.children.retain(|&c| c != REF_CHILD);
                holder.ref_children.push(0);
                es.push(DirEntry {
                    parent: Some(DELETED_DIR),
                    children: vec![DELETED_FILE],
                    ref_children: vec![],
                });
                es.sort_by_key(|e| e.parent());
                delimited(&es)
            }
            "INODE_REFERENCE" => delimited(&[
                INodeReference {
                    referred_id: Some(REF_CHILD),
                    name: None,
                    dst_snapshot_id: Some(1),
                    last_snapshot_id: Some(0),
                },
                INodeReference {
                    referred_id: Some(RENAMED),
                    name: Some(b"old_20MiB.img".to_vec()),
                    dst_snapshot_id: Some(0),
                    last_snapshot_id: Some(0),
                },
            ]),
            "SNAPSHOT" => {
                let mut out = SnapshotSection {
                    snapshot_counter: Some(2),
                    snapshottable_dir: vec![SNAPSHOTTABLE],
                    num_snapshots: Some(2),
                }
                .encode_length_delimited_to_vec();
                for (i, n) in ["s1", "s2"].iter().enumerate() {
                    out.extend(
                        Snapshot {
                            snapshot_id: Some(i as u32),
                            root: Some(root_of(n)),
                        }
                        .encode_length_delimited_to_vec(),
                    );
                }
                out
            }
            "SNAPSHOT_DIFF" => {
                let mut out = Vec::new();
                out.extend(
                    DiffEntry {
                        r#type: diff_entry::Type::Filediff as i32,
                        inode_id: Some(DIFFED_FILE),
                        num_of_diff: Some(1),
                    }
                    .encode_length_delimited_to_vec(),
                );
                out.extend(
                    FileDiff {
                        snapshot_id: Some(0),
                        file_size: Some(5),
                        name: Some(b"test.img".to_vec()),
                        snapshot_copy: Some(INodeFile {
                            replication: Some(1),
                            permission: perm(new(0), new(3), 0o600),
                            ..INodeFile::default()
                        }),
                        blocks: vec![],
                    }
                    .encode_length_delimited_to_vec(),
                );
                out.extend(
                    DiffEntry {
                        r#type: diff_entry::Type::Directorydiff as i32,
                        inode_id: Some(SNAPSHOTTABLE),
                        num_of_diff: Some(2),
                    }
                    .encode_length_delimited_to_vec(),
                );
                out.extend(
                    DirectoryDiff {
                        snapshot_id: Some(1),
                        children_size: Some(3),
                        is_snapshot_root: Some(true),
                        created_list_size: Some(1),
                        deleted_inode: vec![DELETED_DIR],
                        ..DirectoryDiff::default()
                    }
                    .encode_length_delimited_to_vec(),
                );
                out.extend(
                    CreatedListEntry {
                        name: Some(b"test.img".to_vec()),
                    }
                    .encode_length_delimited_to_vec(),
                );
                out.extend(
                    DirectoryDiff {
                        snapshot_id: Some(0),
                        children_size: Some(2),
                        is_snapshot_root: Some(true),
                        snapshot_copy: Some(INodeDirectory {
                            modification_time: Some(1_400_000_000_000),
                            permission: perm(mm, new(3), 0o750),
                            ..INodeDirectory::default()
                        }),
                        created_list_size: Some(0),
                        deleted_inode_ref: vec![1],
                        ..DirectoryDiff::default()
                    }
                    .encode_length_delimited_to_vec(),
                );
                out
            }
            _ => plain,
        }
    };
    let mut out = edited(&bytes, &edit);
    // The original has no SNAPSHOT_DIFF section: add one.
    if summary_of(&bytes)
        .sections
        .iter()
        .all(|x| x.name() != "SNAPSHOT_DIFF")
    {
        let body = edit("SNAPSHOT_DIFF", Vec::new());
        let mut fs = summary_of(&out);
        let n = out.len();
        let len = u32::from_be_bytes(out[n - 4..].try_into().unwrap()) as usize;
        out.truncate(n - 4 - len);
        let at = out.len();
        out.extend_from_slice(&body);
        fs.sections.push(Section {
            name: Some("SNAPSHOT_DIFF".into()),
            offset: Some(at as u64),
            length: Some(body.len() as u64),
        });
        let d = fs.encode_length_delimited_to_vec();
        out.extend_from_slice(&d);
        out.extend_from_slice(&(d.len() as u32).to_be_bytes());
    }
    out
}

/// SNAPSHOT, SNAPSHOT_DIFF and INODE_REFERENCE of an image decoded with
/// prost, every string id replaced by the index of its name in `names`
/// (shared between images, so equal names give equal ids).
fn snapshot_records(bytes: &[u8], names: &mut Vec<String>) -> SnapshotCarry {
    let mut c = SnapshotCarry::default();
    if let Some(p) = section(bytes, "SNAPSHOT") {
        let ms = messages(&p);
        let h = SnapshotSection::decode(&ms[0][..]).unwrap();
        assert_eq!(h.num_snapshots() as usize, ms.len() - 1);
        c.header = Some(SnapshotSection {
            num_snapshots: None,
            ..h
        });
        c.snapshots = ms[1..]
            .iter()
            .map(|m| Snapshot::decode(&m[..]).unwrap())
            .collect();
    }
    if let Some(p) = section(bytes, "SNAPSHOT_DIFF") {
        let ms = messages(&p);
        let mut i = 0;
        while i < ms.len() {
            let e = DiffEntry::decode(&ms[i][..]).unwrap();
            i += 1;
            let mut d = DiffRecord {
                entry: Some(e),
                ..DiffRecord::default()
            };
            for _ in 0..e.num_of_diff() {
                if e.r#type() == diff_entry::Type::Directorydiff {
                    let dd = DirectoryDiff::decode(&ms[i][..]).unwrap();
                    i += 1;
                    let created = (0..dd.created_list_size())
                        .map(|_| {
                            i += 1;
                            CreatedListEntry::decode(&ms[i - 1][..]).unwrap()
                        })
                        .collect();
                    d.dir_diffs.push(DirectoryDiffWithCreated {
                        diff: Some(dd),
                        created,
                    });
                } else {
                    d.file_diffs.push(FileDiff::decode(&ms[i][..]).unwrap());
                    i += 1;
                }
            }
            c.diffs.push(d);
        }
    }
    if let Some(p) = section(bytes, "INODE_REFERENCE") {
        c.references = messages(&p)
            .iter()
            .map(|m| INodeReference::decode(&m[..]).unwrap())
            .collect();
    }
    let (mask, table) = string_table(bytes);
    map_string_ids(&mut c, |tag, serial| -> Result<u32, ()> {
        let name = table
            .get(&tag.key(serial, mask))
            .unwrap_or_else(|| panic!("{tag:?} {serial} is not in STRING_TABLE"));
        Ok(index(names, name))
    })
    .unwrap();
    c
}

fn index(names: &mut Vec<String>, name: &str) -> u32 {
    let i = match names.iter().position(|n| n == name) {
        Some(i) => i,
        None => {
            names.push(name.to_string());
            names.len() - 1
        }
    };
    i as u32 + 1
}

/// A loaded image's carry, with its string indexes replaced as
/// [`snapshot_records`] does (the strings list itself cleared).
fn carry_of(path: &Path, names: &mut Vec<String>) -> SnapshotCarry {
    let loaded = nsimage_loader::load(path, &nsimage_loader::LoadOptions::default()).unwrap();
    let mut c = loaded.carry().expect("a carry").clone();
    let strings: Vec<String> = c
        .strings
        .iter()
        .map(|b| String::from_utf8(b.clone()).unwrap())
        .collect();
    map_string_ids(&mut c, |_: StringTag, i| -> Result<u32, ()> {
        Ok(index(names, &strings[i as usize - 1]))
    })
    .unwrap();
    c.strings.clear();
    c
}

/// What `info --json` and a load report of an image's snapshots.
fn report(path: &Path) -> serde_json::Value {
    let info = json(&nsimage(&["info", "--json", s(path)]));
    let loaded = nsimage_loader::load(path, &nsimage_loader::LoadOptions::default()).unwrap();
    let h = loaded.hdfs.expect("a Hadoop image");
    serde_json::json!({
        "snapshots": info["snapshots"],
        "references": info["references"],
        "snapshot_only_inodes": h.snapshots.snapshot_only_inodes,
        // numInodes counts the snapshot-only inodes, written in id order.
        "inode_header": h.inode_header,
        "inodes_resorted": h.inodes_resorted,
    })
}

/// Everything that must survive a conversion of `input` into `output`.
fn same_snapshots(input: &Path, output: &Path, what: &str) {
    let out = nsimage(&["verify", s(output)]);
    assert_eq!(
        code(&out),
        0,
        "{what}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(load(output)["digest"], load(input)["digest"], "{what}");
    assert_eq!(report(output), report(input), "{what}");
    let mut names = Vec::new();
    let a = snapshot_records(&std::fs::read(input).unwrap(), &mut names);
    let b = snapshot_records(&std::fs::read(output).unwrap(), &mut names);
    assert_eq!(a, b, "{what}: SNAPSHOT, SNAPSHOT_DIFF, INODE_REFERENCE");
    assert_eq!(
        carry_of(output, &mut names),
        carry_of(input, &mut names),
        "{what}: carry"
    );
}

#[test]
fn the_rich_image_loads_its_current_tree_and_reports_its_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let orig = load(&data().join("hfsa/fsi_small_h2x.img"));
    let path = dir.path().join("fsimage_rich");
    std::fs::write(&path, rich_image()).unwrap();
    let v = load(&path);
    assert_eq!(v["digest"], orig["digest"]);
    assert_eq!(code(&nsimage(&["verify", s(&path)])), 0);
    let r = report(&path);
    assert_eq!(r["snapshot_only_inodes"], 2);
    assert_eq!(r["references"], 2);
    assert_eq!(r["snapshots"]["counter"], 2);
    assert_eq!(r["snapshots"]["snapshottable_dirs"][0], SNAPSHOTTABLE);
    assert_eq!(r["snapshots"]["snapshots"][1]["name"], "s2");
    // `stat` of the snapshottable directory lists its snapshots, in the
    // one inode shape (docs/inode.schema.json).
    let st = json(&nsimage(&["stat", s(&path), "/test3", "--json"]));
    assert_eq!(st["snapshottable"], true, "{st}");
    let names: Vec<&str> = st["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["s1", "s2"], "{st}");
    let errors = crate::common::inode_schema_errors(&st);
    assert!(errors.is_empty(), "{st}: {errors:?}");
    let d = &r["snapshots"]["diffs"];
    assert_eq!(
        (&d["entries"], &d["file_diffs"], &d["dir_diffs"]),
        (&2.into(), &1.into(), &2.into())
    );
    assert_eq!(
        (&d["created"], &d["deleted"], &d["deleted_refs"]),
        (&1.into(), &1.into(), &1.into())
    );
    // The carry holds the names the snapshot records use, and the
    // refChildren of /test3/foo.
    let loaded = nsimage_loader::load(&path, &nsimage_loader::LoadOptions::default()).unwrap();
    let c = loaded.carry().unwrap();
    for n in NEW {
        assert!(c.strings.iter().any(|x| x == n.as_bytes()), "{n}");
    }
    assert_eq!(c.ref_children.len(), 1);
    assert_eq!(
        (c.ref_children[0].parent(), &c.ref_children[0].refs[..]),
        (FOO, &[0][..])
    );
    assert_eq!(c.inodes.len(), 2);
    assert_eq!(c.dirs.len(), 1);
}

#[test]
fn hdfs_to_hdfs_carries_the_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("fsimage_rich");
    std::fs::write(&input, rich_image()).unwrap();
    for (k, extra) in [
        &[][..],
        &["--sub-sections", "--target-sections", "5"][..],
        &["--codec", "zlib"][..],
        &["--sub-sections", "--codec", "gzip"][..],
        &["--layout-version", "-63"][..],
    ]
    .iter()
    .enumerate()
    {
        let out = dir.path().join(format!("out{k}"));
        let mut args = vec!["convert", s(&input), s(&out), "--to", "hdfs", "--json"];
        args.extend_from_slice(extra);
        let v = json(&nsimage(&args));
        assert_eq!(v["snapshots_carried"], true);
        same_snapshots(&input, &out, &format!("{extra:?}"));
        if extra.contains(&"--sub-sections") {
            let fs = summary_of(&std::fs::read(&out).unwrap());
            assert!(
                fs.sections
                    .iter()
                    .filter(|x| x.name() == "INODE_SUB")
                    .count()
                    > 2
            );
            assert!(
                fs.sections
                    .iter()
                    .filter(|x| x.name() == "INODE_DIR_SUB")
                    .count()
                    > 1
            );
        }
        // And again, from the converted image.
        let again = dir.path().join(format!("again{k}"));
        assert_eq!(
            code(&nsimage(&["convert", s(&out), s(&again), "--to", "hdfs"])),
            0
        );
        same_snapshots(&input, &again, &format!("{extra:?} twice"));
    }
}

#[test]
fn hdfs_to_nsimage_to_hdfs_carries_the_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("fsimage_rich");
    std::fs::write(&input, rich_image()).unwrap();
    let mid = dir.path().join("mid.nsi");
    let o = nsimage(&["convert", s(&input), s(&mid), "--to", "nsimage"]);
    assert_eq!(code(&o), 0);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("carried 2 snapshots of 1 snapshottable directories"),
        "{text}"
    );
    assert_eq!(code(&nsimage(&["verify", s(&mid)])), 0);
    assert_eq!(load(&mid)["digest"], load(&input)["digest"]);
    for read in ["mmap", "bulk", "stream"] {
        let v = json(&nsimage(&["load", "--json", "--read", read, s(&mid)]));
        assert_eq!(v["digest"], load(&input)["digest"], "{read}");
    }
    let info = json(&nsimage(&["info", "--json", s(&mid)]));
    let kinds: Vec<&str> = info["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"HDFS_SNAPSHOTS"), "{kinds:?}");
    for (k, extra) in [&[][..], &["--sub-sections", "--codec", "zlib"][..]]
        .iter()
        .enumerate()
    {
        let out = dir.path().join(format!("back{k}"));
        let mut args = vec!["convert", s(&mid), s(&out), "--to", "hdfs"];
        args.extend_from_slice(extra);
        assert_eq!(code(&nsimage(&args)), 0);
        same_snapshots(&input, &out, &format!("via nsimage {extra:?}"));
    }
    // nsimage -> nsimage keeps the section too.
    let mid2 = dir.path().join("mid2.nsi");
    assert_eq!(
        code(&nsimage(&["convert", s(&mid), s(&mid2), "--to", "nsimage"])),
        0
    );
    let back = dir.path().join("back_twice");
    assert_eq!(
        code(&nsimage(&["convert", s(&mid2), s(&back), "--to", "hdfs"])),
        0
    );
    same_snapshots(&input, &back, "via nsimage twice");
}

#[test]
fn drop_snapshots_writes_the_current_tree_only() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("fsimage_rich");
    std::fs::write(&input, rich_image()).unwrap();
    let out = dir.path().join("dropped");
    let o = nsimage(&[
        "convert",
        s(&input),
        s(&out),
        "--to",
        "hdfs",
        "--drop-snapshots",
    ]);
    assert_eq!(code(&o), 0);
    assert!(String::from_utf8_lossy(&o.stderr).contains("dropped 2 snapshots"));
    assert_eq!(load(&out)["digest"], load(&input)["digest"]);
    assert_eq!(code(&nsimage(&["verify", s(&out)])), 0);
    let r = report(&out);
    assert_eq!(r["references"], 0);
    assert_eq!(r["snapshot_only_inodes"], 0);
    assert_eq!(r["snapshots"]["snapshots"].as_array().unwrap().len(), 0);
    assert_eq!(
        r["snapshots"]["snapshottable_dirs"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    let loaded = nsimage_loader::load(&out, &nsimage_loader::LoadOptions::default()).unwrap();
    assert!(loaded.carry().is_none());
    // To nsimage: no HDFS_SNAPSHOTS section.
    let mid = dir.path().join("dropped.nsi");
    assert_eq!(
        code(&nsimage(&[
            "convert",
            s(&input),
            s(&mid),
            "--to",
            "nsimage",
            "--drop-snapshots"
        ])),
        0
    );
    let info = String::from_utf8(nsimage(&["info", s(&mid)]).stdout).unwrap();
    assert!(!info.contains("HDFS_SNAPSHOTS"), "{info}");
}

#[test]
fn a_damaged_hdfs_snapshots_section_is_exit_1_located() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("fsimage_rich");
    std::fs::write(&input, rich_image()).unwrap();
    let mid = dir.path().join("mid.nsi");
    assert_eq!(
        code(&nsimage(&[
            "convert",
            s(&input),
            s(&mid),
            "--to",
            "nsimage"
        ])),
        0
    );
    let info = json(&nsimage(&["info", "--json", s(&mid)]));
    let sec = info["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["kind"] == "HDFS_SNAPSHOTS")
        .unwrap()
        .clone();
    assert_eq!(sec["optional"], true);
    let offset = sec["offset"].as_u64().unwrap() as usize;
    let length = sec["length"].as_u64().unwrap() as usize;
    let good = std::fs::read(&mid).unwrap();

    // A flipped byte: the section's checksum.
    let mut bad = good.clone();
    bad[offset + length / 2] ^= 0x40;
    let path = dir.path().join("flipped.nsi");
    std::fs::write(&path, &bad).unwrap();
    for cmd in ["load", "verify"] {
        let o = nsimage(&[cmd, s(&path)]);
        assert_eq!(code(&o), 1, "{cmd}");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(text.contains("HDFS_SNAPSHOTS"), "{cmd}: {text}");
    }
    let o = nsimage(&[
        "convert",
        s(&path),
        s(&dir.path().join("x")),
        "--to",
        "hdfs",
    ]);
    assert_eq!(code(&o), 1);

    // Bytes that do not decode, with the checksums made to match them: the
    // decode itself refuses them.
    let mut bad = good.clone();
    let body = offset + 1 + usize::from(bad[offset] >= 0x80);
    // The first field's key becomes an invalid wire type.
    bad[body] = 0x0f;
    let path = dir.path().join("undecodable.nsi");
    std::fs::write(&path, reseal(&bad, offset, length)).unwrap();
    for cmd in ["load", "verify"] {
        let o = nsimage(&[cmd, s(&path)]);
        assert_eq!(code(&o), 1, "{cmd}");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(text.contains("HDFS_SNAPSHOTS"), "{cmd}: {text}");
        assert!(!text.contains("checksum"), "{cmd}: {text}");
    }
}

/// `bytes` with the section at `offset` (`length` bytes, no sub-sections)
/// given the checksum of what it now holds, and the index and footer
/// resealed.
fn reseal(bytes: &[u8], offset: usize, length: usize) -> Vec<u8> {
    use nsimage_format::consts::footer;
    use xxhash_rust::xxh3::xxh3_64;
    let n = bytes.len();
    let foot = nsimage_format::Footer::decode(&bytes[n - footer::SIZE..], n as u64).unwrap();
    let (io, il) = (foot.index_offset as usize, foot.index_length as usize);
    let mut index =
        nsimage_format::Index::decode(&bytes[io..io + il], foot.index_offset, foot.index_checksum)
            .unwrap();
    let sec = index
        .sections
        .iter_mut()
        .find(|x| x.offset as usize == offset)
        .unwrap();
    sec.checksum = xxh3_64(&bytes[offset..offset + length]);
    let ib = index.encode();
    let mut out = bytes[..io].to_vec();
    out.extend_from_slice(&ib);
    let f = nsimage_format::Footer {
        index_offset: io as u64,
        index_length: ib.len() as u64,
        index_checksum: xxh3_64(&ib),
        file_length: (io + ib.len() + footer::SIZE) as u64,
    };
    out.extend_from_slice(&f.encode());
    out
}

#[test]
fn a_snapshot_record_naming_a_missing_string_is_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    // The rich image with its file diff's copy owned by a string id the
    // table lacks (the loader decodes snapshot-only inodes like the
    // others; the diffs' copies and snapshot roots are checked as the
    // carry is built).
    let bytes = edited(&rich_image(), &|name, plain| {
        if name != "SNAPSHOT_DIFF" {
            return plain;
        }
        let mut ms = messages(&plain);
        let mut fd = FileDiff::decode(&ms[1][..]).unwrap();
        let copy = fd.snapshot_copy.as_mut().unwrap();
        let mut p = PermBits::unpack(copy.permission.unwrap());
        p.user = 999;
        copy.permission = Some(p.pack());
        ms[1] = fd.encode_to_vec();
        let mut out = Vec::new();
        for m in &ms {
            prost::encoding::encode_varint(m.len() as u64, &mut out);
            out.extend_from_slice(m);
        }
        out
    });
    let path = dir.path().join("fsimage_missing");
    std::fs::write(&path, bytes).unwrap();
    for cmd in ["load", "verify"] {
        let o = nsimage(&[cmd, s(&path)]);
        assert_eq!(code(&o), 1, "{cmd}");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(text.contains("User string 999"), "{cmd}: {text}");
        assert!(text.contains("section SNAPSHOT_DIFF"), "{cmd}: {text}");
        assert!(text.contains("STRING_TABLE lacks"), "{cmd}: {text}");
    }
}

// Issue 24, defect 4: cross-references Hadoop's loader refuses.

/// Writes `bytes`, then checks the library load and `nsimage load` refuse
/// it (exit 1) with an error containing `want`; returns the path.
fn refused_with(dir: &Path, name: &str, bytes: &[u8], want: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    let e = nsimage_loader::load(&p, &nsimage_loader::LoadOptions::default())
        .err()
        .unwrap_or_else(|| panic!("{name}: the library loaded it"));
    assert!(e.to_string().contains(want), "{name}: {e}");
    let out = nsimage(&["load", s(&p)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 1, "{name}: {err}");
    assert!(err.contains(want), "{name}: {err}");
    p
}

/// The rich image with `extra` delimited messages appended to section
/// `name`.
fn appended(name: &'static str, extra: Vec<u8>) -> Vec<u8> {
    edited(&rich_image(), &|n, mut plain| {
        if n == name {
            plain.extend_from_slice(&extra);
        }
        plain
    })
}

/// `generate --inodes 50` converted to Hadoop, its summary listing a
/// SNAPSHOT_DIFF section (empty where the conversion wrote none) for
/// `edited` to fill.
fn generated_with_diff_section(dir: &Path) -> Vec<u8> {
    let nsi = dir.join("g.nsi");
    let hdfs = dir.join("g.hdfs");
    assert_eq!(
        code(&nsimage(&[
            "generate",
            "-o",
            s(&nsi),
            "--inodes",
            "50",
            "--seed",
            "5"
        ])),
        0
    );
    assert_eq!(
        code(&nsimage(&["convert", s(&nsi), s(&hdfs), "--to", "hdfs"])),
        0
    );
    let mut bytes = std::fs::read(&hdfs).unwrap();
    let mut fs = summary_of(&bytes);
    if !fs.sections.iter().any(|x| x.name() == "SNAPSHOT_DIFF") {
        let d = fs.encode_length_delimited_to_vec();
        let body_end = bytes.len() - 4 - d.len();
        bytes.truncate(body_end);
        fs.sections.push(Section {
            name: Some("SNAPSHOT_DIFF".into()),
            offset: Some(body_end as u64),
            length: Some(0),
        });
        let d = fs.encode_length_delimited_to_vec();
        bytes.extend_from_slice(&d);
        bytes.extend_from_slice(&(d.len() as u32).to_be_bytes());
    }
    bytes
}

/// One SNAPSHOT_DIFF entry of no diffs, for the root (as Hadoop 2.x
/// writes): the image then counts as one with snapshots.
fn empty_root_diff() -> Vec<u8> {
    delimited(&[DiffEntry {
        r#type: diff_entry::Type::Directorydiff as i32,
        inode_id: Some(16385),
        num_of_diff: Some(0),
    }])
}

#[test]
fn an_inode_no_snapshot_reaches_is_refused_not_dropped() {
    // The root's INODE_DIR entry removed and one empty SNAPSHOT_DIFF entry
    // for the root added: 49 inodes nothing reaches.
    let dir = tempfile::tempdir().unwrap();
    let root = 16385u64;
    let bytes = generated_with_diff_section(dir.path());
    let bad = edited(&bytes, &|n, plain| match n {
        "INODE_DIR" => {
            let kept: Vec<DirEntry> = messages(&plain)
                .iter()
                .map(|m| DirEntry::decode(&m[..]).unwrap())
                .filter(|e| e.parent() != root)
                .collect();
            delimited(&kept)
        }
        "SNAPSHOT_DIFF" => empty_root_diff(),
        _ => plain,
    });
    let p = refused_with(
        dir.path(),
        "headline.hdfs",
        &bad,
        "neither in the current tree nor reached by any snapshot",
    );
    let out = dir.path().join("out.nsi");
    let c = nsimage(&["convert", s(&p), s(&out), "--to", "nsimage"]);
    assert_eq!(code(&c), 1, "{}", String::from_utf8_lossy(&c.stderr));
    assert!(!out.exists());
}

/// Issue 39, 5a: an INODE_DIR entry outside the current tree (its parent
/// not reached from the root) must still name inodes INODE holds, as
/// Hadoop's loader wants of every entry: a parent that is no inode, or a
/// file, or a child that is no inode, is refused (exit 1, at the entry)
/// by every read path, with one empty SNAPSHOT_DIFF entry in the image as
/// without it.
#[test]
fn a_directory_entry_outside_the_current_tree_must_name_inodes() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = generated_with_diff_section(dir.path());
    // A file of the generated tree: the first child the root lists.
    let file = {
        let inodes = section(&bytes, "INODE").unwrap();
        messages(&inodes)[1..]
            .iter()
            .map(|m| INode::decode(&m[..]).unwrap())
            .find(|n| n.r#type() == i_node::Type::File)
            .unwrap()
            .id
    };
    for (name, entry, want) in [
        (
            "missing_parent",
            DirEntry {
                parent: Some(999_999),
                children: vec![999_998],
                ref_children: Vec::new(),
            },
            "parent 999999 is not",
        ),
        (
            "file_parent",
            DirEntry {
                parent: Some(file),
                children: vec![999_998],
                ref_children: Vec::new(),
            },
            "is not a directory",
        ),
    ] {
        for with_diff in [true, false] {
            let bad = edited(&bytes, &|n, mut plain| match n {
                "INODE_DIR" => {
                    plain.extend(delimited(std::slice::from_ref(&entry)));
                    plain
                }
                "SNAPSHOT_DIFF" if with_diff => empty_root_diff(),
                _ => plain,
            });
            let p = dir.path().join(format!("{name}_{with_diff}.hdfs"));
            std::fs::write(&p, &bad).unwrap();
            let what = format!("{name}, with a diff entry: {with_diff}");
            for threads in [1, 2] {
                let o = nsimage_loader::LoadOptions {
                    threads,
                    serial: threads == 1,
                    parallel_threshold: 0,
                    ..Default::default()
                };
                let e = nsimage_loader::load(&p, &o)
                    .err()
                    .unwrap_or_else(|| panic!("{what}: loaded on {threads} threads"));
                assert!(e.is_data_error(), "{what}: {e}");
                let text = e.to_string();
                assert!(text.contains("INODE_DIR"), "{what}: {text}");
                assert!(text.contains(want), "{what}: {text}");
            }
            hdfs_common::every_command_refuses(&p, &["INODE_DIR"]);
        }
    }
    // A child that is no inode, under a snapshot-only directory: the
    // rich image's deleted directory lists one more child.
    let bad = edited(&rich_image(), &|n, mut plain| {
        if n == "INODE_DIR" {
            plain.extend(delimited(&[DirEntry {
                parent: Some(DELETED_DIR),
                children: vec![999_997],
                ref_children: Vec::new(),
            }]));
        }
        plain
    });
    let p = refused_with(dir.path(), "missing_child", &bad, "child 999997");
    hdfs_common::every_command_refuses(&p, &["INODE_DIR", "999997"]);
}

#[test]
fn a_file_under_construction_must_be_a_file_inode_holds() {
    use nsimage_format::hdfs_pb::files_under_construction_section::FileUnderConstructionEntry;
    let dir = tempfile::tempdir().unwrap();
    for (name, id, want) in [
        ("uc_missing", 999_999u64, "which INODE does not hold"),
        ("uc_dir", SNAPSHOTTABLE, "a directory"),
    ] {
        let bad = appended(
            "FILES_UNDERCONSTRUCTION",
            delimited(&[FileUnderConstructionEntry {
                inode_id: Some(id),
                full_path: Some("/x".into()),
            }]),
        );
        refused_with(dir.path(), name, &bad, want);
    }
}

#[test]
fn a_reference_to_a_missing_inode_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let bad = appended(
        "INODE_REFERENCE",
        delimited(&[INodeReference {
            referred_id: Some(999_999),
            name: Some(b"gone".to_vec()),
            dst_snapshot_id: Some(0),
            last_snapshot_id: Some(0),
        }]),
    );
    refused_with(dir.path(), "ref", &bad, "refers to inode 999999");
}

#[test]
fn a_snapshottable_directory_must_be_a_directory_inode_holds() {
    let dir = tempfile::tempdir().unwrap();
    for (name, id, want) in [
        ("sdir_missing", 999_999u64, "is not in INODE"),
        ("sdir_file", DIFFED_FILE, "is not a directory"),
    ] {
        let bad = edited(&rich_image(), &|n, plain| {
            if n != "SNAPSHOT" {
                return plain;
            }
            let ms = messages(&plain);
            let mut h = SnapshotSection::decode(&ms[0][..]).unwrap();
            h.snapshottable_dir = vec![SNAPSHOTTABLE, id];
            let mut out = h.encode_length_delimited_to_vec();
            for m in &ms[1..] {
                prost::encoding::encode_varint(m.len() as u64, &mut out);
                out.extend_from_slice(m);
            }
            out
        });
        refused_with(dir.path(), name, &bad, want);
    }
}

#[test]
fn diffs_must_name_inodes_and_snapshots_that_exist() {
    let dir = tempfile::tempdir().unwrap();
    let missing = delimited(&[DiffEntry {
        r#type: diff_entry::Type::Filediff as i32,
        inode_id: Some(999_999),
        num_of_diff: Some(0),
    }]);
    refused_with(
        dir.path(),
        "diff_missing_inode",
        &appended("SNAPSHOT_DIFF", missing),
        "names inode 999999",
    );
    let mut unknown = delimited(&[DiffEntry {
        r#type: diff_entry::Type::Filediff as i32,
        inode_id: Some(DIFFED_FILE),
        num_of_diff: Some(1),
    }]);
    unknown.extend(delimited(&[FileDiff {
        snapshot_id: Some(77),
        file_size: Some(5),
        ..FileDiff::default()
    }]));
    refused_with(
        dir.path(),
        "diff_unknown_snapshot",
        &appended("SNAPSHOT_DIFF", unknown),
        "names snapshot 77",
    );
    let mut deleted = delimited(&[DiffEntry {
        r#type: diff_entry::Type::Directorydiff as i32,
        inode_id: Some(SNAPSHOTTABLE),
        num_of_diff: Some(1),
    }]);
    deleted.extend(delimited(&[DirectoryDiff {
        snapshot_id: Some(1),
        deleted_inode: vec![999_998],
        ..DirectoryDiff::default()
    }]));
    refused_with(
        dir.path(),
        "diff_deleted_missing",
        &appended("SNAPSHOT_DIFF", deleted),
        "deleted inode 999998",
    );
}
