//! Small HDFS fsimage files built in the test, record by record, with the
//! prost types of `nsimage_format::hdfs_pb`: the sections in the order a
//! Hadoop NameNode writes them (NS_INFO, ERASURE_CODING when there is one,
//! INODE, INODE_DIR, FILES_UNDERCONSTRUCTION, SNAPSHOT, SNAPSHOT_DIFF,
//! INODE_REFERENCE, SECRET_MANAGER, CACHE_MANAGER, STRING_TABLE), each
//! section its own stream when compressed, then the delimited FileSummary
//! and its 4-byte big-endian length.
//!
//! [`Image`] fills the namespace's sections and leaves the snapshot,
//! reference, secret and cache sections empty; [`Extra`] fills those
//! ([`Image::bytes_with`]), and [`rich_image`] is an image with every
//! section OIV prints.

use nsimage_format::hdfs_pb::{
    file_summary,
    files_under_construction_section::FileUnderConstructionEntry,
    i_node_directory_section::DirEntry,
    i_node_reference_section::INodeReference,
    i_node_section,
    secret_manager_section::{DelegationKey, PersistToken},
    snapshot_carry::{DiffRecord, DirectoryDiffWithCreated},
    snapshot_diff_section::{CreatedListEntry, DiffEntry, DirectoryDiff, FileDiff},
    snapshot_section::Snapshot,
    string_table_section, BlockProto, BlockTypeProto, CacheDirectiveInfoExpirationProto,
    CacheDirectiveInfoProto, CacheManagerSection, CachePoolInfoProto, EcSchemaOptionEntryProto,
    EcSchemaProto, ErasureCodingPolicyProto, ErasureCodingPolicyState, ErasureCodingSection,
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

/// What an [`Image`] leaves out or empty: the records of the ERASURE_CODING,
/// SNAPSHOT, SNAPSHOT_DIFF, INODE_REFERENCE, SECRET_MANAGER and
/// CACHE_MANAGER sections. The default writes the same bytes as
/// [`Image::bytes`].
#[derive(Debug, Clone, Default)]
pub struct Extra {
    /// `Some`: an ERASURE_CODING section (right after NS_INFO, where Hadoop
    /// 3 writes it) holding these policies; `None`: no such section.
    pub ec_policies: Option<Vec<ErasureCodingPolicyProto>>,
    /// INODE_REFERENCE entries (`refChild` and `deletedInoderef` values are
    /// indexes into this list).
    pub references: Vec<INodeReference>,
    /// SNAPSHOT's `snapshotCounter`.
    pub snapshot_counter: u32,
    /// SNAPSHOT's snapshottable directories.
    pub snapshottable_dirs: Vec<u64>,
    /// SNAPSHOT's snapshots (`numSnapshots` is their count).
    pub snapshots: Vec<Snapshot>,
    /// SNAPSHOT_DIFF: each record's entry as given (its `numOfDiff` is not
    /// checked against the diffs), then its file diffs, then its directory
    /// diffs, each followed by its created entries.
    pub diffs: Vec<DiffRecord>,
    /// SECRET_MANAGER's `currentId`.
    pub secret_current_id: u32,
    /// SECRET_MANAGER's `tokenSequenceNumber`.
    pub secret_token_sequence_number: u32,
    /// SECRET_MANAGER's delegation keys (`numKeys` is their count).
    pub delegation_keys: Vec<DelegationKey>,
    /// SECRET_MANAGER's tokens (`numTokens` is their count).
    pub tokens: Vec<PersistToken>,
    /// CACHE_MANAGER's pools.
    pub cache_pools: Vec<CachePoolInfoProto>,
    /// CACHE_MANAGER's directives (`nextDirectiveId` is one past the
    /// largest id, 1 without any).
    pub cache_directives: Vec<CacheDirectiveInfoProto>,
}

/// An [`Image`] with its [`Extra`] sections.
#[derive(Debug, Clone, Default)]
pub struct RichImage {
    /// The namespace's sections.
    pub image: Image,
    /// The others.
    pub extra: Extra,
}

impl RichImage {
    /// The image file's bytes.
    pub fn bytes(&self) -> Vec<u8> {
        self.image.bytes_with(&self.extra)
    }
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
        self.bytes_with(&Extra::default())
    }

    /// The image file's bytes, with `extra`'s sections.
    pub fn bytes_with(&self, extra: &Extra) -> Vec<u8> {
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
                // Block groups' ids count up from 2^63 (Long.MIN_VALUE):
                // the rich image's one group is below this.
                last_allocated_striped_block_id: Some(0x8000_0000_0000_1000),
                ..Default::default()
            }]),
        ));
        if let Some(policies) = &extra.ec_policies {
            sections.push((
                "ERASURE_CODING",
                delimited(&[&ErasureCodingSection {
                    policies: policies.clone(),
                }]),
            ));
        }
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
        let mut snap = Vec::new();
        SnapshotSection {
            snapshot_counter: Some(extra.snapshot_counter),
            snapshottable_dir: extra.snapshottable_dirs.clone(),
            num_snapshots: Some(extra.snapshots.len() as u32),
        }
        .put(&mut snap);
        for s in &extra.snapshots {
            s.put(&mut snap);
        }
        sections.push(("SNAPSHOT", snap));
        let mut diff = Vec::new();
        for r in &extra.diffs {
            r.entry.unwrap_or_default().put(&mut diff);
            for f in &r.file_diffs {
                f.put(&mut diff);
            }
            for d in &r.dir_diffs {
                d.diff.clone().unwrap_or_default().put(&mut diff);
                for c in &d.created {
                    c.put(&mut diff);
                }
            }
        }
        sections.push(("SNAPSHOT_DIFF", diff));
        let mut refs = Vec::new();
        for r in &extra.references {
            r.put(&mut refs);
        }
        sections.push(("INODE_REFERENCE", refs));
        let mut secret = Vec::new();
        SecretManagerSection {
            current_id: Some(extra.secret_current_id),
            token_sequence_number: Some(extra.secret_token_sequence_number),
            num_keys: Some(extra.delegation_keys.len() as u32),
            num_tokens: Some(extra.tokens.len() as u32),
        }
        .put(&mut secret);
        for k in &extra.delegation_keys {
            k.put(&mut secret);
        }
        for t in &extra.tokens {
            t.put(&mut secret);
        }
        sections.push(("SECRET_MANAGER", secret));
        let mut cache = Vec::new();
        let last_directive = extra.cache_directives.iter().map(|d| d.id()).max();
        CacheManagerSection {
            next_directive_id: last_directive.map_or(1, |id| id as u64 + 1),
            num_pools: extra.cache_pools.len() as u32,
            num_directives: extra.cache_directives.len() as u32,
        }
        .put(&mut cache);
        for p in &extra.cache_pools {
            p.put(&mut cache);
        }
        for d in &extra.cache_directives {
            d.put(&mut cache);
        }
        sections.push(("CACHE_MANAGER", cache));
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

fn rich_dir(mtime: u64, permission: u64) -> i_node_section::INodeDirectory {
    i_node_section::INodeDirectory {
        modification_time: Some(mtime),
        ns_quota: Some(u64::MAX),
        ds_quota: Some(u64::MAX),
        permission: Some(permission),
        ..Default::default()
    }
}

fn rich_file(mtime: u64, permission: u64, blocks: Vec<BlockProto>) -> i_node_section::INodeFile {
    i_node_section::INodeFile {
        replication: Some(3),
        modification_time: Some(mtime),
        access_time: Some(mtime),
        preferred_block_size: Some(134_217_728),
        permission: Some(permission),
        blocks,
        storage_policy_id: Some(0),
        ..Default::default()
    }
}

fn rich_block(id: u64, gen_stamp: u64, num_bytes: u64) -> BlockProto {
    BlockProto {
        block_id: id,
        gen_stamp,
        num_bytes: Some(num_bytes),
    }
}

fn rich_inode(id: u64, name: &str) -> i_node_section::INode {
    i_node_section::INode {
        id,
        name: Some(name.as_bytes().to_vec()),
        ..Default::default()
    }
}

fn rich_dir_inode(id: u64, name: &str, d: i_node_section::INodeDirectory) -> i_node_section::INode {
    i_node_section::INode {
        r#type: i_node_section::i_node::Type::Directory as i32,
        directory: Some(d),
        ..rich_inode(id, name)
    }
}

fn rich_file_inode(id: u64, name: &str, f: i_node_section::INodeFile) -> i_node_section::INode {
    i_node_section::INode {
        r#type: i_node_section::i_node::Type::File as i32,
        file: Some(f),
        ..rich_inode(id, name)
    }
}

/// A Hadoop 3 image with every section OIV prints, as a NameNode would
/// write it after this history: `/ec` written with the built-in policy
/// RS-6-3-1024k; `/snap` made snapshottable with `d`, `f` (one block),
/// `h` and `old` in it; snapshot `s0` taken; then `d`'s mode changed, `f`
/// appended to, `g` created, `h` deleted, `old` renamed to `/new`. Beside
/// the namespace: three erasure coding policies (two built-in, one user
/// policy with two schema options), two delegation keys (one without an
/// expiry) and a token with every field, one cache pool and one cache
/// directive with an (absolute) expiration.
///
/// Ids: `/` 16385, `/ec` 16386, `/snap` 16387, `/snap/d` 16388, `/snap/f`
/// 16389, `/snap/g` 16390, `h` 16391, `/new` 16392. INODE_REFERENCE: 0 is
/// the DstReference under `/` (snapshot id `CURRENT_STATE_ID`), 1 the
/// WithName `old` in `/snap`'s diff. SNAPSHOT_DIFF: `/snap`'s diff (the
/// snapshot root: created `g`, deleted `h` and reference 1), `d`'s (with a
/// snapshot copy of the directory), `f`'s (with a snapshot copy of the
/// file), `h`'s (without one, with a block).
pub fn rich_image() -> RichImage {
    let p = |mode| perm(1, 2, mode);
    let root = {
        let mut d = rich_dir(1000, p(0o755));
        d.ns_quota = Some(i64::MAX as u64);
        d
    };
    let ec = i_node_section::INodeFile {
        replication: None,
        block_type: Some(BlockTypeProto::Striped as i32),
        erasure_coding_policy_id: Some(1),
        ..rich_file(
            2000,
            p(0o644),
            vec![rich_block(0x8000_0000_0000_1000, 1002, 6_291_456)],
        )
    };
    let image = Image {
        layout_version: -66,
        mask_bits: 0,
        strings: vec![(1, "hdfs".into()), (2, "supergroup".into())],
        last_inode_id: 16392,
        inodes: vec![
            rich_dir_inode(16385, "", root),
            rich_file_inode(16386, "ec", ec),
            rich_dir_inode(16387, "snap", rich_dir(3000, p(0o755))),
            rich_dir_inode(16388, "d", rich_dir(4000, p(0o750))),
            rich_file_inode(
                16389,
                "f",
                rich_file(
                    5000,
                    p(0o644),
                    vec![
                        rich_block(1_073_741_825, 1001, 134_217_728),
                        rich_block(1_073_741_826, 1003, 42),
                    ],
                ),
            ),
            rich_file_inode(16390, "g", rich_file(6000, p(0o644), Vec::new())),
            rich_file_inode(
                16391,
                "h",
                rich_file(2500, p(0o600), vec![rich_block(1_073_741_827, 1004, 5)]),
            ),
            rich_file_inode(
                16392,
                "new",
                rich_file(2600, p(0o644), vec![rich_block(1_073_741_828, 1005, 7)]),
            ),
        ],
        dirs: vec![
            DirEntry {
                parent: Some(16385),
                children: vec![16386, 16387],
                ref_children: vec![0],
            },
            DirEntry {
                parent: Some(16387),
                children: vec![16388, 16389, 16390],
                ref_children: Vec::new(),
            },
        ],
        under_construction: Vec::new(),
        codec: None,
    };
    let entry = |ty: i32, inode_id: u64, n: u32| DiffEntry {
        r#type: ty,
        inode_id: Some(inode_id),
        num_of_diff: Some(n),
    };
    let (file_diff, dir_diff) = (1, 2);
    let extra = Extra {
        ec_policies: Some(vec![
            ErasureCodingPolicyProto {
                id: 1,
                state: Some(ErasureCodingPolicyState::Enabled as i32),
                ..Default::default()
            },
            ErasureCodingPolicyProto {
                id: 2,
                state: Some(ErasureCodingPolicyState::Disabled as i32),
                ..Default::default()
            },
            ErasureCodingPolicyProto {
                name: Some("RS-4-2-2048k".into()),
                schema: Some(EcSchemaProto {
                    codec_name: "rs".into(),
                    data_units: 4,
                    parity_units: 2,
                    options: vec![
                        EcSchemaOptionEntryProto {
                            key: "k1".into(),
                            value: "v1".into(),
                        },
                        EcSchemaOptionEntryProto {
                            key: "a".into(),
                            value: "b&c".into(),
                        },
                    ],
                }),
                cell_size: Some(2 * 1024 * 1024),
                id: 64,
                state: Some(ErasureCodingPolicyState::Disabled as i32),
            },
        ]),
        references: vec![
            INodeReference {
                referred_id: Some(16392),
                dst_snapshot_id: Some(i32::MAX as u32 - 1),
                ..Default::default()
            },
            INodeReference {
                referred_id: Some(16392),
                name: Some(b"old".to_vec()),
                last_snapshot_id: Some(0),
                ..Default::default()
            },
        ],
        snapshot_counter: 1,
        snapshottable_dirs: vec![16387],
        snapshots: vec![Snapshot {
            snapshot_id: Some(0),
            root: Some(rich_dir_inode(16387, "s0", rich_dir(3500, p(0o755)))),
        }],
        diffs: vec![
            DiffRecord {
                entry: Some(entry(dir_diff, 16387, 1)),
                file_diffs: Vec::new(),
                dir_diffs: vec![DirectoryDiffWithCreated {
                    diff: Some(DirectoryDiff {
                        snapshot_id: Some(0),
                        children_size: Some(4),
                        is_snapshot_root: Some(true),
                        created_list_size: Some(1),
                        deleted_inode: vec![16391],
                        deleted_inode_ref: vec![1],
                        ..Default::default()
                    }),
                    created: vec![CreatedListEntry {
                        name: Some(b"g".to_vec()),
                    }],
                }],
            },
            DiffRecord {
                entry: Some(entry(dir_diff, 16388, 1)),
                file_diffs: Vec::new(),
                dir_diffs: vec![DirectoryDiffWithCreated {
                    diff: Some(DirectoryDiff {
                        snapshot_id: Some(0),
                        children_size: Some(0),
                        is_snapshot_root: Some(false),
                        name: Some(b"d".to_vec()),
                        snapshot_copy: Some(rich_dir(3100, p(0o700))),
                        created_list_size: Some(0),
                        ..Default::default()
                    }),
                    created: Vec::new(),
                }],
            },
            DiffRecord {
                entry: Some(entry(file_diff, 16389, 1)),
                file_diffs: vec![FileDiff {
                    snapshot_id: Some(0),
                    file_size: Some(134_217_728),
                    name: Some(b"f".to_vec()),
                    snapshot_copy: Some(rich_file(3200, p(0o644), Vec::new())),
                    blocks: Vec::new(),
                }],
                dir_diffs: Vec::new(),
            },
            DiffRecord {
                entry: Some(entry(file_diff, 16391, 1)),
                file_diffs: vec![FileDiff {
                    snapshot_id: Some(0),
                    file_size: Some(5),
                    name: Some(b"h".to_vec()),
                    snapshot_copy: None,
                    blocks: vec![rich_block(1_073_741_827, 1004, 5)],
                }],
                dir_diffs: Vec::new(),
            },
        ],
        secret_current_id: 2,
        secret_token_sequence_number: 1,
        delegation_keys: vec![
            DelegationKey {
                id: Some(1),
                expiry_date: Some(1_700_000_000_123),
                key: Some(vec![0xde, 0xad, 0xbe, 0xef]),
            },
            DelegationKey {
                id: Some(2),
                expiry_date: None,
                key: Some(vec![0x00, 0x7f]),
            },
        ],
        tokens: vec![PersistToken {
            version: Some(0),
            owner: Some("alice".into()),
            renewer: Some("yarn".into()),
            real_user: Some("oozie".into()),
            issue_date: Some(1_699_990_000_000),
            max_date: Some(1_700_594_800_000),
            sequence_number: Some(1),
            master_key_id: Some(2),
            expiry_date: Some(1_700_076_400_000),
        }],
        cache_pools: vec![CachePoolInfoProto {
            pool_name: Some("pool1".into()),
            owner_name: Some("hdfs".into()),
            group_name: Some("supergroup".into()),
            mode: Some(0o755),
            limit: Some(i64::MAX),
            max_relative_expiry: Some(i64::MAX / 4),
            default_replication: Some(1),
        }],
        cache_directives: vec![CacheDirectiveInfoProto {
            id: Some(1),
            path: Some("/snap/f".into()),
            replication: Some(2),
            pool: Some("pool1".into()),
            expiration: Some(CacheDirectiveInfoExpirationProto {
                millis: 1_700_000_000_000,
                is_relative: false,
            }),
        }],
    };
    RichImage { image, extra }
}
