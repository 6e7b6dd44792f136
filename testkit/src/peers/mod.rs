//! The alternatives a user would pick instead of nsimage to persist a
//! namespace, for the bench to compare against: a JSON-lines dump parsed
//! with serde_json, and a SQLite database read with plain SELECTs. Both load
//! into the same in-memory model through the same builder as the image
//! loader, so the comparison is of the storage format and its reader.

pub mod jsonl;
pub mod sqlite;

use nsimage_loader::Assembly;
use nsimage_namespace::Namespace;
use nsimage_namespace::{
    AclEntry, Block, Extra, InodeBatch, Interned, LoadedBody, LoadedNode, Nodes, NsInfo,
    StringTable, UnderConstruction, XAttr, XAttrNs,
};
use serde::{Deserialize, Serialize};

/// Errors of the peer formats.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// Reading or writing the file failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// SQLite refused a statement.
    #[error("sqlite: {0}")]
    Sql(#[from] rusqlite::Error),
    /// A line is not the JSON of a row.
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    /// The stored data does not make a valid namespace.
    #[error("corrupt: {0}")]
    Corrupt(String),
}

/// Rare attributes, with names as strings.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ExtraRow {
    /// (namespace, name, value)
    pub xattrs: Vec<(u8, Vec<u8>, Vec<u8>)>,
    /// (name, kind, default scope, perm)
    pub acl: Vec<(Vec<u8>, u8, bool, u8)>,
    /// Under construction: (client name, client machine).
    pub uc: Option<(Vec<u8>, Vec<u8>)>,
}

impl ExtraRow {
    /// The rare attributes `e` of an inode of `ns`, names resolved.
    pub fn of(ns: &Namespace, e: &Extra) -> ExtraRow {
        let s = |id| ns.strings().get(id).unwrap_or_default().to_vec();
        ExtraRow {
            xattrs: e
                .xattrs
                .iter()
                .map(|x| (x.ns as u8, s(x.name), x.value.to_vec()))
                .collect(),
            acl: e
                .acl
                .iter()
                .map(|a| (s(a.name), a.kind, a.default_scope, a.perm))
                .collect(),
            uc: e
                .under_construction
                .as_ref()
                .map(|u| (u.client_name.to_vec(), u.client_machine.to_vec())),
        }
    }
}

/// One inode as a peer stores it: names of users and groups as strings,
/// the parent as an id.
pub struct Row<'a> {
    /// Inode id.
    pub id: u64,
    /// Parent id; `None` for the root.
    pub parent: Option<u64>,
    /// Name within the parent (empty for the root).
    pub name: &'a [u8],
    /// Owner.
    pub user: &'a [u8],
    /// Group.
    pub group: &'a [u8],
    /// Permission bits.
    pub mode: u16,
    /// Modification time, ms since the epoch.
    pub mtime: u64,
    /// 1 file, 2 directory, 3 symlink.
    pub kind: u8,
    /// Access time of a file, ms since the epoch.
    pub atime: u64,
    /// Replication of a file.
    pub replication: u16,
    /// Preferred block size of a file, bytes.
    pub block_size: u64,
    /// Storage policy of a file.
    pub policy: u8,
    /// Blocks of a file.
    pub blocks: &'a [Block],
    /// Namespace quota of a directory (-1: none).
    pub ns_quota: i64,
    /// Disk-space quota of a directory (-1: none).
    pub ds_quota: i64,
    /// Target of a symlink.
    pub target: &'a [u8],
    /// Rare attributes, if any.
    pub extra: Option<ExtraRow>,
}

/// Rebuilds a namespace from rows in id order.
pub struct Rebuild {
    info: NsInfo,
    tables: Interned,
    batch: InodeBatch<Nodes>,
    /// (parent, name, id) of every inode but the root.
    links: Vec<(u64, Vec<u8>, u64)>,
}

fn intern(strings: &mut StringTable, s: &[u8]) -> Result<u32, PeerError> {
    strings
        .intern(s)
        .ok_or_else(|| PeerError::Corrupt("string table full".into()))
}

impl Rebuild {
    /// A rebuild of a namespace with counters `info` and about `inodes`
    /// inodes.
    pub fn new(info: NsInfo, inodes: usize) -> Self {
        Rebuild {
            info,
            tables: Interned::default(),
            batch: Assembly::batch(),
            links: Vec::with_capacity(inodes),
        }
    }

    /// Adds one row (rows come in id order); `keep_links` keeps its
    /// parent link for [`Rebuild::finish_from_links`] to build the directories from.
    pub fn push(&mut self, r: Row<'_>, keep_links: bool) -> Result<(), PeerError> {
        let user = intern(self.tables.strings_mut(), r.user)?;
        let group = intern(self.tables.strings_mut(), r.group)?;
        let body = match r.kind {
            1 => LoadedBody::File {
                atime: r.atime,
                replication: r.replication,
                preferred_block_size: r.block_size,
                storage_policy: r.policy,
                blocks: r.blocks,
            },
            2 => LoadedBody::Directory {
                ns_quota: r.ns_quota,
                ds_quota: r.ds_quota,
            },
            3 => LoadedBody::Symlink { target: r.target },
            k => return Err(PeerError::Corrupt(format!("inode {} has kind {k}", r.id))),
        };
        let extra = match r.extra {
            None => None,
            Some(x) => {
                let mut e = Extra::default();
                for (ns, name, value) in x.xattrs {
                    let ns = XAttrNs::from_u32(ns as u32)
                        .ok_or_else(|| PeerError::Corrupt(format!("xattr namespace {ns}")))?;
                    let name = intern(self.tables.strings_mut(), &name)?;
                    e.xattrs.push(XAttr {
                        ns,
                        name,
                        value: value.into(),
                    });
                }
                for (name, kind, default_scope, perm) in x.acl {
                    let name = intern(self.tables.strings_mut(), &name)?;
                    e.acl.push(AclEntry {
                        name,
                        kind,
                        default_scope,
                        perm,
                    });
                }
                e.under_construction = x.uc.map(|(n, m)| {
                    Box::new(UnderConstruction {
                        client_name: n.into(),
                        client_machine: m.into(),
                    })
                });
                Some(e)
            }
        };
        if keep_links {
            if let Some(p) = r.parent {
                self.links.push((p, r.name.to_vec(), r.id));
            }
        }
        let node = LoadedNode {
            id: r.id,
            name: r.name,
            perm: nsimage_namespace::Perm::new(user, group, r.mode).0,
            mtime: r.mtime,
            body,
            extra,
        };
        self.batch
            .push(node, &self.tables)
            .map_err(PeerError::Corrupt)
    }

    /// Finishes with child lists built from the parents the rows named.
    pub fn finish_from_links(mut self) -> Result<Namespace, PeerError> {
        let mut links = std::mem::take(&mut self.links);
        links.sort_unstable();
        let mut dirs: Vec<(u64, Vec<u64>)> = Vec::new();
        for (p, _, id) in links {
            match dirs.last_mut() {
                Some((q, kids)) if *q == p => kids.push(id),
                _ => dirs.push((p, vec![id])),
            }
        }
        self.finish(dirs.into_iter())
    }

    /// Finishes with child lists given in parent order, children by name.
    pub fn finish(
        self,
        dirs: impl Iterator<Item = (u64, Vec<u64>)>,
    ) -> Result<Namespace, PeerError> {
        let mut asm =
            Assembly::new(self.info, self.tables, self.batch).map_err(PeerError::Corrupt)?;
        for (p, kids) in dirs {
            asm.dir(p, kids.into_iter()).map_err(PeerError::Corrupt)?;
        }
        asm.finish().map_err(PeerError::Corrupt)
    }
}

/// Converts the counters to and from a peer's storage.
pub fn info_fields(i: &NsInfo) -> [u64; 6] {
    [
        i.namespace_id,
        i.last_txid,
        i.last_inode_id,
        i.last_block_id,
        i.generation_stamp,
        i.creation_time,
    ]
}

/// The counters from the six values [`info_fields`] stored.
pub fn info_from(f: [u64; 6]) -> NsInfo {
    NsInfo {
        namespace_id: f[0],
        last_txid: f[1],
        last_inode_id: f[2],
        last_block_id: f[3],
        generation_stamp: f[4],
        creation_time: f[5],
    }
}
