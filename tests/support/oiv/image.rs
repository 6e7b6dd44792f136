//! Small HDFS fsimage files built in the test, record by record, with the
//! prost types of `nsimage_format::hdfs_pb`: the sections in the order a
//! Hadoop NameNode writes them (NS_INFO, INODE, INODE_DIR,
//! FILES_UNDERCONSTRUCTION, SNAPSHOT, SNAPSHOT_DIFF, INODE_REFERENCE,
//! SECRET_MANAGER, CACHE_MANAGER, STRING_TABLE), each section its own
//! stream when compressed, then the delimited FileSummary and its 4-byte
//! big-endian length.

use nsimage_format::hdfs_pb::{
    file_summary, files_under_construction_section::FileUnderConstructionEntry,
    i_node_directory_section::DirEntry, i_node_section, string_table_section, CacheManagerSection,
    FileSummary, INodeSection, NameSystemSection, SecretManagerSection, SnapshotSection,
    StringTableSection,
};
use prost::Message;
use std::io::Write;

/// Hadoop's codec class names.
pub const ZLIB: &str = "org.apache.hadoop.io.compress.DefaultCodec";
/// Hadoop's gzip codec class name.
pub const GZIP: &str = "org.apache.hadoop.io.compress.GzipCodec";

/// The records of one image.
#[derive(Debug, Clone, Default)]
pub struct Image {
    /// The layout version (negative, as Hadoop names it).
    pub layout_version: i32,
    /// The string table's `maskBits`.
    pub mask_bits: u32,
    /// String table entries: (id as stored, string).
    pub strings: Vec<(u32, String)>,
    /// `lastInodeId`.
    pub last_inode_id: u64,
    /// The inodes, in file order.
    pub inodes: Vec<i_node_section::INode>,
    /// INODE_DIR entries, in file order.
    pub dirs: Vec<DirEntry>,
    /// FILES_UNDERCONSTRUCTION entries.
    pub under_construction: Vec<FileUnderConstructionEntry>,
    /// The codec class name ([`ZLIB`], [`GZIP`]); `None`: uncompressed.
    pub codec: Option<&'static str>,
}

/// `body` as one stream of `codec`.
fn compress(codec: Option<&str>, body: &[u8]) -> Vec<u8> {
    match codec {
        None => body.to_vec(),
        Some(ZLIB) => {
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            z.write_all(body).expect("a Vec");
            z.finish().expect("a Vec")
        }
        Some(GZIP) => {
            let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            z.write_all(body).expect("a Vec");
            z.finish().expect("a Vec")
        }
        Some(c) => panic!("codec {c}"),
    }
}

/// A permission as the image stores it: user and group string ids and the
/// mode.
pub fn perm(user: u32, group: u32, mode: u16) -> u64 {
    (u64::from(user) << 40) | (u64::from(group) << 16) | u64::from(mode)
}

/// An ACL entry as the image stores it: name id, default scope, type (0
/// user, 1 group, 2 mask, 3 other), rwx bits.
pub fn acl(name: u32, default: bool, ty: u32, rwx: u32) -> u32 {
    (name << 6) | (u32::from(default) << 5) | (ty << 3) | rwx
}

/// An xattr name as the image stores it: namespace (0 user, 1 trusted, 2
/// security, 3 system, 4 raw) and name id.
pub fn xattr_name(ns: u32, name: u32) -> u32 {
    ((ns & 3) << 30) | (name << 6) | (((ns >> 2) & 1) << 5)
}

fn delimited(msgs: &[&dyn EncodeDelimited]) -> Vec<u8> {
    let mut out = Vec::new();
    for m in msgs {
        m.put(&mut out);
    }
    out
}

/// A message that appends itself, length-delimited.
trait EncodeDelimited {
    fn put(&self, out: &mut Vec<u8>);
}

impl<M: Message> EncodeDelimited for M {
    fn put(&self, out: &mut Vec<u8>) {
        self.encode_length_delimited(out)
            .expect("a Vec grows as needed");
    }
}

impl Image {
    /// The image file's bytes.
    pub fn bytes(&self) -> Vec<u8> {
        let mut sections: Vec<(&str, Vec<u8>)> = Vec::new();
        sections.push((
            "NS_INFO",
            delimited(&[&NameSystemSection {
                namespace_id: Some(463_118_371),
                genstamp_v1: Some(1000),
                genstamp_v2: Some(1012),
                genstamp_v1_limit: Some(0),
                last_allocated_block_id: Some(1_073_741_836),
                transaction_id: Some(42),
                ..Default::default()
            }]),
        ));
        let mut inode = Vec::new();
        INodeSection {
            last_inode_id: Some(self.last_inode_id),
            num_inodes: Some(self.inodes.len() as u64),
        }
        .put(&mut inode);
        for i in &self.inodes {
            i.put(&mut inode);
        }
        sections.push(("INODE", inode));
        let mut dir = Vec::new();
        for d in &self.dirs {
            d.put(&mut dir);
        }
        sections.push(("INODE_DIR", dir));
        let mut uc = Vec::new();
        for e in &self.under_construction {
            e.put(&mut uc);
        }
        sections.push(("FILES_UNDERCONSTRUCTION", uc));
        sections.push((
            "SNAPSHOT",
            delimited(&[&SnapshotSection {
                snapshot_counter: Some(0),
                snapshottable_dir: Vec::new(),
                num_snapshots: Some(0),
            }]),
        ));
        sections.push(("SNAPSHOT_DIFF", Vec::new()));
        sections.push(("INODE_REFERENCE", Vec::new()));
        sections.push((
            "SECRET_MANAGER",
            delimited(&[&SecretManagerSection {
                current_id: Some(0),
                token_sequence_number: Some(0),
                num_keys: Some(0),
                num_tokens: Some(0),
            }]),
        ));
        sections.push((
            "CACHE_MANAGER",
            delimited(&[&CacheManagerSection {
                next_directive_id: 1,
                num_pools: 0,
                num_directives: 0,
            }]),
        ));
        let mut st = Vec::new();
        StringTableSection {
            num_entry: Some(self.strings.len() as u32),
            mask_bits: Some(self.mask_bits),
        }
        .put(&mut st);
        for (id, s) in &self.strings {
            string_table_section::Entry {
                id: Some(*id),
                str: Some(s.clone()),
            }
            .put(&mut st);
        }
        sections.push(("STRING_TABLE", st));

        let mut out = b"HDFSIMG1".to_vec();
        let mut summary = FileSummary {
            ondisk_version: 1,
            layout_version: self.layout_version as u32,
            codec: self.codec.map(str::to_string),
            sections: Vec::new(),
        };
        for (name, body) in sections {
            let body = compress(self.codec, &body);
            summary.sections.push(file_summary::Section {
                name: Some(name.to_string()),
                length: Some(body.len() as u64),
                offset: Some(out.len() as u64),
            });
            out.extend_from_slice(&body);
        }
        let mut tail = Vec::new();
        summary.put(&mut tail);
        let len = u32::try_from(tail.len()).expect("a small summary");
        out.extend_from_slice(&tail);
        out.extend_from_slice(&len.to_be_bytes());
        out
    }
}
