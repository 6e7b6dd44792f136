//! `nsimage dump --format xml` of a Hadoop fsimage prints what Hadoop's
//! OIV XML processor (`hdfs oiv -p XML`) prints for it, byte for byte, in
//! the `INodeSection`, the `INodeDirectorySection` and the
//! `FileUnderConstructionSection`.
//!
//! OIV's text comes from an emulation written from `PBImageXmlWriter`'s
//! source (`oiv/mod.rs`), which reads the image on its own with the prost
//! types; the emulation itself is checked against text written by hand
//! from the decoded records of a real image and of an image built here
//! with every element OIV prints.

use crate::hdfs_common;
use crate::oiv;

use nsimage_format::hdfs_pb::{
    files_under_construction_section::FileUnderConstructionEntry,
    i_node_directory_section::DirEntry, i_node_section, BlockProto,
};
use oiv::image::{acl, perm, xattr_name, Image};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `shared/data/hdfs`, found from the package's directory upwards (the
/// checkout's `../shared`, or the one above a worktree).
fn hdfs_dir() -> PathBuf {
    hdfs_common::data()
}

/// Every image under `dir` (not the `.md5` sidecars or the README), sorted.
fn images_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            images_under(&p, out);
        } else if p.extension().is_none_or(|e| e != "md5")
            && p.file_name().is_some_and(|n| n != "README.md")
        {
            out.push(p);
        }
    }
}

/// The shared images; every file the README's table lists is there.
fn shared_images() -> Vec<PathBuf> {
    let dir = hdfs_dir();
    let mut images = Vec::new();
    images_under(&dir, &mut images);
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let listed: Vec<&str> = readme
        .lines()
        .filter_map(|l| l.strip_prefix("| "))
        .filter_map(|l| l.split(" |").next())
        .filter(|f| f.contains('/'))
        .collect();
    assert!(listed.len() >= 9, "README lists {listed:?}");
    for f in &listed {
        assert!(images.contains(&dir.join(f)), "{f} is listed but missing");
    }
    images
}

/// `nsimage dump IMAGE --format xml`: its stdout, or why it failed.
fn dump_xml(image: &Path) -> Result<String, String> {
    let o = Command::new(env!("CARGO_BIN_EXE_nsimage"))
        .args(["dump", image.to_str().unwrap(), "--format", "xml"])
        .output()
        .expect("running nsimage");
    if !o.status.success() {
        return Err(format!(
            "`nsimage dump --format xml` exited with {}: {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    String::from_utf8(o.stdout).map_err(|e| format!("the dump is not UTF-8: {e}"))
}

/// Compares nsimage's dump of `image` with OIV's text; `None` when the two
/// sections are the same bytes.
fn compare(image: &Path) -> Option<String> {
    let bytes = std::fs::read(image).unwrap();
    compare_dump(&bytes, image)
}

/// Compares nsimage's dump of `dumped` with OIV's text for the HDFS image
/// `hdfs`.
fn compare_dump(hdfs: &[u8], dumped: &Path) -> Option<String> {
    let em = match oiv::emulate(hdfs) {
        Ok(em) => em,
        Err(e) => return Some(format!("the OIV emulation cannot read it: {e}")),
    };
    let xml = match dump_xml(dumped) {
        Ok(x) => x,
        Err(e) => return Some(e),
    };
    let mut problems = Vec::new();
    let mut sections = vec![
        ("INodeSection", &em.xml.inodes),
        ("INodeDirectorySection", &em.xml.directories),
    ];
    if let Some(uc) = &em.xml.under_construction {
        sections.push(("FileUnderConstructionSection", uc));
    }
    for (tag, want) in sections {
        match oiv::extract(&xml, tag) {
            None => problems.push(format!("{tag}: not in the dump")),
            Some(got) => {
                if let Some(d) = oiv::first_difference(want, &got) {
                    problems.push(format!("{tag}: {d}"));
                }
            }
        }
    }
    if problems.is_empty() {
        return None;
    }
    if !em.gaps.none() {
        problems.push(format!(
            "(the image holds what the model cannot carry: {:?})",
            em.gaps
        ));
    }
    Some(problems.join("\n"))
}

#[test]
fn dump_xml_matches_oiv_for_every_shared_image() {
    let dir = hdfs_dir();
    let images = shared_images();
    let mut failures = Vec::new();
    for img in &images {
        if let Some(why) = compare(img) {
            let name = img.strip_prefix(&dir).unwrap_or(img).display().to_string();
            failures.push(format!("{name}:\n{why}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} shared images differ from OIV:\n\n{}",
        failures.len(),
        images.len(),
        failures.join("\n\n")
    );
}

/// The `version` element holds a Hadoop image's own layout and on-disk
/// versions, and `NameSection` its NS_INFO as OIV prints it (the legacy
/// generation stamp V1 and its limit included), for every shared image:
/// read here from the summary and NS_INFO directly.
#[test]
fn dump_xml_version_and_name_section_are_the_images_own() {
    for image in shared_images() {
        let xml = dump_xml(&image).unwrap_or_else(|e| panic!("{}: {e}", image.display()));
        let bytes = std::fs::read(&image).unwrap();
        let (layout, ondisk, name) =
            oiv::head(&bytes).unwrap_or_else(|e| panic!("{}: {e}", image.display()));
        let version = oiv::extract(&xml, "version").unwrap();
        assert!(
            version.contains(&format!("<layoutVersion>{layout}</layoutVersion>")),
            "{}: {version}",
            image.display()
        );
        assert!(
            version.contains(&format!("<onDiskVersion>{ondisk}</onDiskVersion>")),
            "{}: {version}",
            image.display()
        );
        assert_eq!(
            oiv::extract(&xml, "NameSection").as_deref(),
            Some(name.as_str()),
            "{}",
            image.display()
        );
    }
}

#[test]
fn dump_xml_matches_oiv_for_a_built_image_of_what_the_model_holds() {
    let mut img = representable();
    let em = oiv::emulate(&img.bytes()).unwrap();
    assert!(em.gaps.none(), "{:?}", em.gaps);
    // Hadoop's children order (signed bytes): names starting with a byte
    // 0x80 and above first. Written from the records above.
    assert_eq!(
        em.xml.directories,
        "<INodeDirectorySection>\
         <directory><parent>16385</parent><child>16388</child><child>16392</child>\
         <child>16386</child><child>16387</child></directory>\n\
         <directory><parent>16386</parent><child>16389</child></directory>\n\
         <directory><parent>16387</parent><child>16390</child></directory>\n\
         <directory><parent>16388</parent><child>16393</child><child>16391</child></directory>\n\
         </INodeDirectorySection>\n"
    );
    // Uncompressed, and each section its own zlib or gzip stream.
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for codec in [None, Some(oiv::image::ZLIB), Some(oiv::image::GZIP)] {
        img.codec = codec;
        let bytes = img.bytes();
        assert_eq!(oiv::emulate(&bytes).unwrap().xml, em.xml, "{codec:?}");
        let path = dir.path().join("fsimage_0000000000000000042");
        std::fs::write(&path, &bytes).unwrap();
        if let Some(why) = compare(&path) {
            failures.push(format!("codec {codec:?}:\n{why}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The same comparison before the loader reads HDFS images: each shared
/// image's namespace rebuilt through nsimage's API with the image's ids
/// (`oiv/model.rs`), written as an nsimage image and dumped, against OIV's
/// text for the HDFS file. It checks the XML writer's text for
/// Hadoop-derived namespaces on its own.
#[test]
fn dump_xml_of_each_shared_namespace_rebuilt_through_the_api_matches_oiv() {
    let dir = hdfs_dir();
    let tmp = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let mut images: Vec<(String, Vec<u8>)> = shared_images()
        .iter()
        .map(|p| {
            let name = p.strip_prefix(&dir).unwrap().display().to_string();
            (name, std::fs::read(p).unwrap())
        })
        .collect();
    images.push(("(built) representable".into(), representable().bytes()));
    for (name, bytes) in &images {
        let ns = match oiv::model::namespace_of(bytes) {
            Ok(ns) => ns,
            Err(e) => {
                failures.push(format!("{name}: cannot rebuild: {e}"));
                continue;
            }
        };
        let path = tmp.path().join("rebuilt.nsi");
        let mut out = Vec::new();
        nsimage_writer::write_image(&ns, &mut out, &Default::default()).unwrap();
        std::fs::write(&path, out).unwrap();
        if let Some(why) = compare_dump(bytes, &path) {
            failures.push(format!("{name}:\n{why}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

fn dir_inode(id: u64, name: &[u8], d: i_node_section::INodeDirectory) -> i_node_section::INode {
    i_node_section::INode {
        r#type: i_node_section::i_node::Type::Directory as i32,
        id,
        name: Some(name.to_vec()),
        directory: Some(d),
        ..Default::default()
    }
}

fn file_inode(id: u64, name: &[u8], f: i_node_section::INodeFile) -> i_node_section::INode {
    i_node_section::INode {
        r#type: i_node_section::i_node::Type::File as i32,
        id,
        name: Some(name.to_vec()),
        file: Some(f),
        ..Default::default()
    }
}

fn quotas(ns: i64, ds: i64) -> (Option<u64>, Option<u64>) {
    (Some(ns as u64), Some(ds as u64))
}

fn plain_dir(mtime: u64, p: u64) -> i_node_section::INodeDirectory {
    let (ns_quota, ds_quota) = quotas(-1, -1);
    i_node_section::INodeDirectory {
        modification_time: Some(mtime),
        ns_quota,
        ds_quota,
        permission: Some(p),
        ..Default::default()
    }
}

fn plain_file(repl: u32, time: u64, p: u64) -> i_node_section::INodeFile {
    i_node_section::INodeFile {
        replication: Some(repl),
        modification_time: Some(time),
        access_time: Some(time),
        preferred_block_size: Some(134_217_728),
        permission: Some(p),
        storage_policy_id: Some(0),
        ..Default::default()
    }
}

fn block(id: u64, gs: u64, n: u64) -> BlockProto {
    BlockProto {
        block_id: id,
        gen_stamp: gs,
        num_bytes: Some(n),
    }
}

fn xattrs(list: &[(u32, Option<&[u8]>)]) -> Option<i_node_section::XAttrFeatureProto> {
    Some(i_node_section::XAttrFeatureProto {
        x_attrs: list
            .iter()
            .map(|&(name, v)| i_node_section::XAttrCompactProto {
                name,
                value: v.map(<[u8]>::to_vec),
            })
            .collect(),
    })
}

fn dir_entry(parent: u64, children: &[u64], refs: &[u32]) -> DirEntry {
    DirEntry {
        parent: Some(parent),
        children: children.to_vec(),
        ref_children: refs.to_vec(),
    }
}

/// An image of what nsimage's model holds, with the text rules exercised:
/// markup characters, a backslash and control characters in names, names
/// whose signed and unsigned orders differ, an xattr with a UTF-8 value and
/// one without, ACL entries of each kind, quotas, a file under
/// construction, a storage policy, a file without blocks.
fn representable() -> Image {
    let root = {
        let mut d = plain_dir(1000, perm(1, 2, 0o755));
        d.ns_quota = Some(i64::MAX as u64);
        d
    };
    let special = {
        let mut d = plain_dir(2000, perm(3, 5, 0o1777));
        d.x_attrs = xattrs(&[(xattr_name(0, 4), Some(b"v&<"))]);
        d.acl = Some(i_node_section::AclFeatureProto {
            entries: vec![
                acl(3, false, 0, 7),
                acl(0, false, 1, 5),
                acl(0, false, 2, 7),
                acl(5, true, 1, 4),
            ],
        });
        (d.ns_quota, d.ds_quota) = quotas(100, 1 << 30);
        d
    };
    let tabbed = {
        let mut f = plain_file(3, 5000, perm(3, 2, 0o640));
        f.access_time = Some(5001);
        f.x_attrs = xattrs(&[(xattr_name(1, 4), Some(&[0xff, 0x10]))]);
        f.blocks = vec![
            block(1_073_741_825, 1001, 134_217_728),
            block(1_073_741_826, 1002, 42),
        ];
        f.storage_policy_id = Some(7);
        f
    };
    let open = {
        let mut f = plain_file(1, 6000, perm(1, 2, 0o644));
        f.file_uc = Some(i_node_section::FileUnderConstructionFeature {
            client_name: Some("DFSClient_NONMAPREDUCE_1_1".into()),
            client_machine: Some("127.0.0.1".into()),
        });
        f
    };
    let empty = {
        let mut f = plain_file(2, 7000, perm(1, 2, 0o644));
        f.preferred_block_size = Some(0);
        f
    };
    let upper = {
        let mut f = plain_file(3, 8000, perm(1, 2, 0o644));
        f.blocks = vec![block(1_073_741_827, 1003, 7)];
        f
    };
    Image {
        layout_version: -63,
        mask_bits: 0,
        strings: vec![
            (1, "hdfs".into()),
            (2, "supergroup".into()),
            (3, "alice".into()),
            (4, "note".into()),
            (5, "staff".into()),
        ],
        last_inode_id: 16393,
        inodes: vec![
            dir_inode(16385, b"", root),
            dir_inode(16386, b"a&b<c>\"q'\\x\x01y", special),
            dir_inode(16387, b"zeta", plain_dir(3000, perm(1, 2, 0o755))),
            dir_inode(
                16388,
                "\u{fc}-dir".as_bytes(),
                plain_dir(4000, perm(1, 2, 0o700)),
            ),
            file_inode(16389, b"f\x01tab\tx", tabbed),
            file_inode(16390, b"open", open),
            file_inode(16391, b"empty", empty),
            file_inode(16392, b"Zeta", upper),
            file_inode(
                16393,
                "\u{e9}".as_bytes(),
                plain_file(1, 9000, perm(1, 2, 0o644)),
            ),
        ],
        dirs: vec![
            dir_entry(16385, &[16388, 16392, 16386, 16387], &[]),
            dir_entry(16386, &[16389], &[]),
            dir_entry(16387, &[16390], &[]),
            dir_entry(16388, &[16393, 16391], &[]),
        ],
        under_construction: vec![FileUnderConstructionEntry {
            inode_id: Some(16390),
            full_path: Some("/zeta/open".into()),
        }],
        codec: None,
    }
}

/// The emulation against text written by hand from the records of
/// `hadoop252/fsimage_0000000000000000003` (decoded with the prost types:
/// the root and `/input`, both directories; permission 0x100_0002_01ed is
/// user id 1, `zhezhang`, group id 2, `supergroup`, mode 0755; the root's
/// namespace quota is Long.MAX_VALUE, the other quotas -1 stored as
/// 2^64 - 1).
#[test]
fn emulation_of_a_hadoop_2_5_image_by_hand() {
    let bytes = std::fs::read(hdfs_dir().join("hadoop252/fsimage_0000000000000000003")).unwrap();
    let em = oiv::emulate(&bytes).unwrap();
    assert_eq!(em.layout_version, -57);
    assert_eq!(
        em.xml.inodes,
        "<INodeSection><lastInodeId>16386</lastInodeId><numInodes>2</numInodes>\
         <inode><id>16385</id><type>DIRECTORY</type><name></name><mtime>1440181482591</mtime>\
         <permission>zhezhang:supergroup:0755</permission>\
         <nsquota>9223372036854775807</nsquota><dsquota>-1</dsquota></inode>\n\
         <inode><id>16386</id><type>DIRECTORY</type><name>input</name><mtime>1440181482591</mtime>\
         <permission>zhezhang:supergroup:0755</permission>\
         <nsquota>-1</nsquota><dsquota>-1</dsquota></inode>\n\
         </INodeSection>\n"
    );
    assert_eq!(
        em.xml.directories,
        "<INodeDirectorySection><directory><parent>16385</parent><child>16386</child></directory>\n\
         </INodeDirectorySection>\n"
    );
    assert!(em.gaps.none());
}

/// The emulation against text written by hand from the records of
/// `hfsa/fsi_small.img`: a file of two blocks owned by `foo:nobody`
/// (permission 0x500_0004_01a4: user id 5, group id 4, mode 0644), and the
/// five INODE_DIR entries as stored (the root's children are in name
/// order: `test3` < `test_2KiB.img` < `user`).
#[test]
fn emulation_of_a_hadoop_2_7_image_by_hand() {
    let bytes = std::fs::read(hdfs_dir().join("hfsa/fsi_small.img")).unwrap();
    let em = oiv::emulate(&bytes).unwrap();
    assert_eq!(em.layout_version, -63);
    assert_eq!(em.counts, [11, 8, 0]);
    assert_eq!(em.blocks, 12);
    assert!(em.xml.inodes.starts_with(
        "<INodeSection><lastInodeId>16403</lastInodeId><numInodes>19</numInodes><inode>"
    ));
    assert!(em.xml.inodes.contains(
        "<inode><id>16402</id><type>FILE</type><name>test_160MiB.img</name>\
         <replication>1</replication><mtime>1497734744886</mtime><atime>1497734743534</atime>\
         <preferredBlockSize>134217728</preferredBlockSize><permission>foo:nobody:0644</permission>\
         <blocks><block><id>1073741834</id><genstamp>1010</genstamp><numBytes>134217728</numBytes></block>\n\
         <block><id>1073741835</id><genstamp>1011</genstamp><numBytes>33554432</numBytes></block>\n\
         </blocks>\n<storagePolicyId>0</storagePolicyId></inode>\n"
    ));
    assert_eq!(
        em.xml.directories,
        "<INodeDirectorySection>\
         <directory><parent>16385</parent><child>16386</child><child>16387</child>\
         <child>16388</child><child>16403</child><child>16391</child></directory>\n\
         <directory><parent>16388</parent><child>16389</child><child>16393</child>\
         <child>16402</child></directory>\n\
         <directory><parent>16389</parent><child>16390</child><child>16394</child>\
         <child>16398</child></directory>\n\
         <directory><parent>16390</parent><child>16399</child><child>16395</child>\
         <child>16400</child><child>16396</child><child>16397</child><child>16401</child>\
         </directory>\n\
         <directory><parent>16391</parent><child>16392</child></directory>\n\
         </INodeDirectorySection>\n"
    );
    assert_eq!(
        em.xml.under_construction.as_deref(),
        Some("<FileUnderConstructionSection></FileUnderConstructionSection>\n")
    );
    assert!(em.gaps.none());
}

/// Every element OIV prints in the two sections, and its text rules, on an
/// image built here (string ids tagged with `maskBits` 3), against text
/// written by hand from `PBImageXmlWriter`'s source.
#[test]
fn emulation_of_every_element_by_hand() {
    const U: u32 = 1 << 29;
    const G: u32 = 2 << 29;
    const X: u32 = 3 << 29;
    let root = {
        let mut d = plain_dir(1000, perm(1, 1, 0o755));
        d.ns_quota = Some(i64::MAX as u64);
        d
    };
    let special = {
        let mut d = plain_dir(2000, perm(2, 2, 0o11777));
        d.x_attrs = xattrs(&[]);
        d.acl = Some(i_node_section::AclFeatureProto {
            entries: vec![
                acl(2, false, 0, 7),
                acl(0, false, 1, 5),
                acl(0, false, 2, 7),
                acl(2, true, 1, 4),
            ],
        });
        d.ds_quota = None;
        d.ns_quota = Some(10);
        d.type_quotas = Some(i_node_section::QuotaByStorageTypeFeatureProto {
            quotas: vec![
                i_node_section::QuotaByStorageTypeEntryProto {
                    storage_type: 1,
                    quota: 100,
                },
                i_node_section::QuotaByStorageTypeEntryProto {
                    storage_type: 2,
                    quota: 200,
                },
            ],
        });
        d
    };
    let striped = i_node_section::INodeFile {
        replication: Some(0),
        modification_time: Some(u64::MAX - 1),
        access_time: Some(5),
        preferred_block_size: Some(1 << 20),
        permission: Some(perm(9, 1, 0o644)),
        blocks: vec![block(0x8000_0000_0000_1000, 7, 65536)],
        x_attrs: xattrs(&[
            (xattr_name(0, 1), Some(b"v&1")),
            (xattr_name(4, 2), Some(&[0xff, 0x00])),
            (xattr_name(1, 1), None),
        ]),
        block_type: Some(1),
        erasure_coding_policy_id: Some(1),
        ..Default::default()
    };
    let link = i_node_section::INode {
        r#type: i_node_section::i_node::Type::Symlink as i32,
        id: 16388,
        name: Some(b"link".to_vec()),
        symlink: Some(i_node_section::INodeSymlink {
            permission: Some(perm(1, 1, 0o777)),
            target: Some(b"/a\\b".to_vec()),
            modification_time: Some(3000),
            access_time: Some(4000),
        }),
        ..Default::default()
    };
    let open = {
        let mut f = plain_file(3, 10, perm(1, 1, 0o644));
        f.storage_policy_id = Some(7);
        f.file_uc = Some(i_node_section::FileUnderConstructionFeature {
            client_name: Some("DFSClient_<1>".into()),
            client_machine: Some("10.0.0.1".into()),
        });
        f
    };
    let img = Image {
        layout_version: -66,
        mask_bits: 3,
        strings: vec![
            (U | 1, "hdfs".into()),
            (U | 2, "alice".into()),
            (G | 1, "supergroup".into()),
            (G | 2, "staff".into()),
            (X | 1, "note".into()),
            (X | 2, "bin".into()),
        ],
        last_inode_id: 16400,
        inodes: vec![
            dir_inode(16385, b"", root),
            dir_inode(16386, b"a&b<c>\"q'\\x\x01y", special),
            file_inode(16387, &[0xff, b'z'], striped),
            link,
            file_inode(16389, b"open", open),
        ],
        dirs: vec![
            dir_entry(16385, &[16386, 16388], &[0]),
            dir_entry(16386, &[16387, 16389], &[]),
            dir_entry(16390, &[], &[3]),
        ],
        under_construction: vec![FileUnderConstructionEntry {
            inode_id: Some(16389),
            full_path: Some("/a&b<c>\"q'\\x\u{1}y/open".into()),
        }],
        codec: None,
    };
    let em = oiv::emulate(&img.bytes()).unwrap();
    let want_inodes = "<INodeSection><lastInodeId>16400</lastInodeId><numInodes>5</numInodes>\
        <inode><id>16385</id><type>DIRECTORY</type><name></name><mtime>1000</mtime>\
        <permission>hdfs:supergroup:0755</permission>\
        <nsquota>9223372036854775807</nsquota><dsquota>-1</dsquota></inode>\n\
        <inode><id>16386</id><type>DIRECTORY</type>\
        <name>a&amp;b&lt;c&gt;&quot;q&apos;\\005c;x\\0001;y</name><mtime>2000</mtime>\
        <permission>alice:staff:1777</permission><xattrs></xattrs>\
        <acls><acl>user:alice:rwx</acl><acl>group::r-x</acl><acl>mask::rwx</acl>\
        <acl>default:group:staff:r--</acl></acls>\
        <typeQuota><type>DISK</type><quota>100</quota></typeQuota>\
        <typeQuota><type>SSD</type><quota>200</quota></typeQuota></inode>\n\
        <inode><id>16387</id><type>FILE</type><name>\u{fffd}z</name><replication>1</replication>\
        <mtime>-2</mtime><atime>5</atime><preferredBlockSize>1048576</preferredBlockSize>\
        <permission>null:supergroup:0644</permission>\
        <xattrs><xattr><ns>USER</ns><name>note</name><val>v&amp;1</val></xattr>\
        <xattr><ns>RAW</ns><name>bin</name><valHex>ff00</valHex></xattr>\
        <xattr><ns>TRUSTED</ns><name>note</name><val></val></xattr></xattrs>\
        <blocks><block><id>-9223372036854771712</id><genstamp>7</genstamp><numBytes>65536</numBytes></block>\n\
        </blocks>\n<blockType>STRIPED</blockType><erasureCodingPolicyId>1</erasureCodingPolicyId></inode>\n\
        <inode><id>16388</id><type>SYMLINK</type><name>link</name>\
        <permission>hdfs:supergroup:0777</permission><target>/a\\005c;b</target>\
        <mtime>3000</mtime><atime>4000</atime></inode>\n\
        <inode><id>16389</id><type>FILE</type><name>open</name><replication>3</replication>\
        <mtime>10</mtime><atime>10</atime><preferredBlockSize>134217728</preferredBlockSize>\
        <permission>hdfs:supergroup:0644</permission><storagePolicyId>7</storagePolicyId>\
        <file-under-construction><clientName>DFSClient_&lt;1&gt;</clientName>\
        <clientMachine>10.0.0.1</clientMachine></file-under-construction>\n</inode>\n\
        </INodeSection>\n";
    if let Some(d) = oiv::first_difference(want_inodes, &em.xml.inodes) {
        panic!("{d}");
    }
    assert_eq!(
        em.xml.directories,
        "<INodeDirectorySection>\
         <directory><parent>16385</parent><child>16386</child><child>16388</child>\
         <refChild>0</refChild></directory>\n\
         <directory><parent>16386</parent><child>16387</child><child>16389</child></directory>\n\
         <directory><parent>16390</parent><refChild>3</refChild></directory>\n\
         </INodeDirectorySection>\n"
    );
    assert_eq!(
        em.xml.under_construction.as_deref(),
        Some(
            "<FileUnderConstructionSection><inode><id>16389</id>\
             <path>/a&amp;b&lt;c&gt;&quot;q&apos;\\005c;x\\0001;y/open</path></inode>\n\
             </FileUnderConstructionSection>\n"
        )
    );
    assert_eq!(
        em.gaps,
        oiv::ModelGaps {
            symlinks: 1,
            type_quotas: 1,
            erasure_coded: 1,
            files_without_storage_policy: 1,
            dirs_without_quotas: 1,
            empty_xattr_features: 1,
            multi_xattr_inodes: 1,
            ref_children: 2,
            ref_only_dirs: 1,
            non_utf8_names: 1,
            children_not_unsigned_sorted: 1,
            modes_with_high_bits: 1,
            missing_strings: 1,
            inodes_out_of_id_order: 0,
            dirs_out_of_id_order: 0,
        }
    );
}

#[test]
fn mangling_is_xml_utils() {
    let mut s = String::new();
    oiv::mangle(
        "a&\"'<>\\\t\n\r\u{1}\u{1f}\u{7f}\u{fffe}\u{ffff}\u{10000}é",
        &mut s,
    );
    assert_eq!(
        s,
        "a&amp;&quot;&apos;&lt;&gt;\\005c;\t\n\r\\0001;\\001f;\u{7f}\\fffe;\\ffff;\u{10000}é"
    );
}

#[test]
fn first_difference_names_the_element() {
    let want = "<A><inode><id>1</id></inode>\n<inode><id>2</id></inode>\n</A>\n";
    let got = "<A><inode><id>1</id></inode>\n<inode><id>3</id></inode>\n</A>\n";
    let d = oiv::first_difference(want, got).unwrap();
    assert!(d.contains("line 2 (byte 11)"), "{d}");
    assert!(d.contains("<inode><id>2</id></inode>"), "{d}");
    assert!(d.contains("<inode><id>3</id></inode>"), "{d}");
    assert_eq!(oiv::first_difference(want, want), None);
    assert_eq!(
        oiv::extract(&format!("<x>{want}"), "A").as_deref(),
        Some(want)
    );
}

/// `xml` with its `oivRevision` text replaced by the emulation's
/// placeholder.
fn without_revision(xml: &str) -> String {
    let start = xml.find("<oivRevision>").expect("an oivRevision element") + "<oivRevision>".len();
    let end = xml.find("</oivRevision>").expect("its end");
    format!("{}{}{}", &xml[..start], oiv::REVISION, &xml[end..])
}

/// The whole document, every section OIV prints (NameSection, erasure
/// coding policies, references, snapshots, diffs, delegation keys and
/// tokens, cache pools and directives), is the emulation's byte for byte
/// but for `oivRevision`, for every shared image.
#[test]
fn dump_xml_is_oivs_whole_document_for_every_shared_image() {
    let dir = hdfs_dir();
    let mut failures = Vec::new();
    for img in shared_images() {
        let want = oiv::emulate(&std::fs::read(&img).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", img.display()))
            .document;
        let got = without_revision(&dump_xml(&img).unwrap());
        if let Some(d) = oiv::first_difference(&want, &got) {
            let name = img.strip_prefix(&dir).unwrap_or(&img).display().to_string();
            failures.push(format!("{name}: {d}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// An image with every section OIV prints, each element of each (a
/// user-defined erasure coding policy with options, a striped file, a
/// reference and a renamed one, a snapshot, file and directory diffs with
/// and without copies, created and deleted entries, delegation keys and a
/// token, a cache pool and directive), plain and with each codec: the
/// dump is OIV's document; read back (`convert DUMP.xml --to hdfs`), the
/// image dumps to the same bytes and loads to the same namespace.
#[test]
fn every_section_of_a_rich_image_is_oivs_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut rich = oiv::image::rich_image();
    for codec in [None, Some(oiv::image::ZLIB), Some(oiv::image::GZIP)] {
        rich.image.codec = codec;
        let bytes = rich.bytes();
        let want = oiv::emulate(&bytes).unwrap().document;
        let img = dir.path().join("fsimage_0000000000000000042");
        std::fs::write(&img, &bytes).unwrap();
        let xml = dump_xml(&img).unwrap();
        if let Some(d) = oiv::first_difference(&want, &without_revision(&xml)) {
            panic!("{codec:?}: {d}");
        }
        let xml_path = dir.path().join("rich.xml");
        std::fs::write(&xml_path, &xml).unwrap();
        let back = dir.path().join("back").join("fsimage_0000000000000000042");
        std::fs::create_dir_all(back.parent().unwrap()).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_nsimage"))
            .args([
                "convert",
                xml_path.to_str().unwrap(),
                back.to_str().unwrap(),
            ])
            .args(["--to", "hdfs", "--json"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(dump_xml(&back).unwrap(), xml, "{codec:?}");
        let load = Command::new(env!("CARGO_BIN_EXE_nsimage"))
            .args(["load", img.to_str().unwrap(), "--json"])
            .output()
            .unwrap();
        assert!(
            load.status.success(),
            "{}",
            String::from_utf8_lossy(&load.stderr)
        );
        let orig: serde_json::Value = serde_json::from_slice(&load.stdout).unwrap();
        assert_eq!(v["digest"], orig["digest"], "{codec:?}");
    }
}

/// A Hadoop image of many batches and sub-sections (plain and with a
/// codec): the dump is OIV's document whatever the thread count.
#[test]
fn dump_xml_of_a_large_sub_sectioned_image_is_oivs_for_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let nsi = dir.path().join("ns.nsi");
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_nsimage"))
            .args(args)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        o.stdout
    };
    run(&[
        "generate",
        "-o",
        nsi.to_str().unwrap(),
        "--inodes",
        "40000",
        "--seed",
        "7",
    ]);
    for codec in ["none", "gzip"] {
        let img = dir.path().join(format!("fsimage_{codec}"));
        run(&[
            "convert",
            nsi.to_str().unwrap(),
            img.to_str().unwrap(),
            "--to",
            "hdfs",
            "--sub-sections",
            "--codec",
            codec,
        ]);
        let want = oiv::emulate(&std::fs::read(&img).unwrap())
            .unwrap()
            .document;
        assert!(
            want.len() > 4 << 20,
            "{} bytes: not several batches",
            want.len()
        );
        for threads in ["1", "2", "5"] {
            let got = run(&[
                "dump",
                img.to_str().unwrap(),
                "--format",
                "xml",
                "--threads",
                threads,
            ]);
            let got = without_revision(&String::from_utf8(got).unwrap());
            if let Some(d) = oiv::first_difference(&want, &got) {
                panic!("{codec}, {threads} threads: {d}");
            }
        }
    }
}
