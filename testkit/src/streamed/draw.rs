//! An entry's attributes drawn, and turned into its INODE record and the
//! canonical bytes of the digest.

use crate::generate::{
    draw_blocks, draw_decoration, perm, Decoration, ACL, BLOCK_SIZE, CHECKSUM_TYPE, CLIENT,
    EPOCH_MS, GROUPS, LINK_TARGET, QUOTA, USERS, XATTR_NAMES,
};
use nsimage_format::pb;
use nsimage_namespace::{
    canon_inode, Attrs, Block, CanonExtra, CanonInode, FileAttrs, Perm, XAttrNs,
};
use rand::RngExt;
use rand_pcg::Pcg64Mcg;

/// Every string an inode may use, sorted and unique: users, groups, xattr
/// names and the named ACL entry.
pub(super) fn candidates() -> Vec<&'static [u8]> {
    let mut all: Vec<&'static [u8]> = USERS
        .iter()
        .chain(&GROUPS)
        .chain(&XATTR_NAMES)
        .copied()
        .collect();
    all.extend(ACL.iter().map(|a| a.0).filter(|n| !n.is_empty()));
    all.sort_unstable();
    all.dedup();
    all
}

/// The drawn attributes of one entry.
pub(super) struct Drawn {
    pub(super) mtime: u64,
    pub(super) perm: (usize, usize, u16),
    pub(super) replication: u32,
    pub(super) storage_policy: u32,
    pub(super) blocks: (u32, u64),
    pub(super) decoration: Decoration,
}

/// Draws the attributes of an entry of `kind` from its directory's
/// attribute stream, and a file's blocks from its directory's block stream
/// (so that blocks are counted without drawing anything else).
pub(super) fn draw(rng: &mut Pcg64Mcg, blocks_rng: &mut Pcg64Mcg, kind: u8) -> Drawn {
    let mtime = EPOCH_MS + rng.random_range(0..63_072_000_000u64);
    let p = perm(rng, kind == 0);
    let user = USERS.iter().position(|u| *u == p.user).unwrap_or(0);
    let group = GROUPS.iter().position(|g| *g == p.group).unwrap_or(0);
    let (mut replication, mut storage_policy, mut blocks) = (0, 0, (0, 0));
    if kind == 1 {
        replication = if rng.random_bool(0.9) { 3 } else { 2 };
        storage_policy = if rng.random_bool(0.05) { 12 } else { 0 };
        blocks = draw_blocks(blocks_rng);
    }
    Drawn {
        mtime,
        perm: (user, group, p.mode),
        replication,
        storage_policy,
        blocks,
        decoration: draw_decoration(rng, kind),
    }
}

/// ACL entries as the digest reads them.
type AclEntries<'a> = &'a [(&'a [u8], u8, bool, u8)];

/// Turns drawn entries into INODE records: string ids, the reused message,
/// the block counters.
pub(super) struct Encoder {
    /// Every candidate string (sorted) and its written id (0: not in use).
    pub(super) strings: Vec<&'static [u8]>,
    pub(super) ids: Vec<u32>,
    pub(super) msg: pb::Inode,
    pub(super) canon: Vec<u8>,
    pub(super) next_block: u64,
    pub(super) gs: u64,
    pub(super) blocks: Vec<Block>,
}

impl Encoder {
    pub(super) fn new(ids: Vec<u32>, next_block: u64, gs: u64) -> Self {
        Encoder {
            strings: candidates(),
            ids,
            msg: pb::Inode::default(),
            canon: Vec::new(),
            next_block,
            gs,
            blocks: Vec::new(),
        }
    }

    pub(super) fn id_of(&self, s: &[u8]) -> u32 {
        self.strings.binary_search(&s).map_or(0, |i| self.ids[i])
    }

    /// Fills the message (and the blocks) of entry `id` named `name`.
    pub(super) fn fill(&mut self, id: u64, name: &[u8], kind: u8, d: &Drawn) {
        let (user, group) = (USERS[d.perm.0], GROUPS[d.perm.1]);
        let permission = Perm::new(self.id_of(user), self.id_of(group), d.perm.2).0;
        let m = &mut self.msg;
        m.id = id;
        m.name.clear();
        m.name.extend_from_slice(name);
        m.permission = permission;
        m.mtime = d.mtime;
        m.file = None;
        m.directory = None;
        m.symlink = None;
        m.xattrs.clear();
        m.acl.clear();
        self.blocks.clear();
        match kind {
            0 => {
                let (ns_quota, ds_quota) = match d.decoration {
                    Decoration::Quota => QUOTA,
                    _ => (-1, -1),
                };
                m.r#type = pb::InodeType::Directory as i32;
                m.directory = Some(pb::DirectoryAttrs { ns_quota, ds_quota });
            }
            1 => {
                let (count, last) = d.blocks;
                for b in 0..count {
                    self.gs += 1;
                    self.blocks.push(Block {
                        id: self.next_block,
                        generation_stamp: self.gs,
                        length: if b + 1 == count { last } else { BLOCK_SIZE },
                    });
                    self.next_block += 1;
                }
                m.r#type = pb::InodeType::File as i32;
                m.file = Some(pb::FileAttrs {
                    atime: d.mtime,
                    replication: d.replication,
                    preferred_block_size: BLOCK_SIZE,
                    blocks: self.blocks.iter().map(pb::Block::from).collect(),
                    storage_policy: d.storage_policy,
                    under_construction: (d.decoration == Decoration::UnderConstruction).then(
                        || pb::UnderConstruction {
                            client_name: CLIENT.0.to_vec(),
                            client_machine: CLIENT.1.to_vec(),
                        },
                    ),
                });
            }
            _ => {
                m.r#type = pb::InodeType::Symlink as i32;
                m.symlink = Some(pb::SymlinkAttrs {
                    target: LINK_TARGET.to_vec(),
                });
            }
        }
        let xattr = |ns: XAttrNs, name: &[u8], value: &[u8], ids: &Self| pb::XAttr {
            namespace: pb::XAttrNamespace::from(ns).into(),
            name: ids.id_of(name),
            value: value.to_vec(),
        };
        match d.decoration {
            Decoration::UserXattr => {
                let x = xattr(XAttrNs::User, XATTR_NAMES[0], CHECKSUM_TYPE, self);
                self.msg.xattrs.push(x);
            }
            Decoration::TrustedXattr(v) => {
                let x = xattr(XAttrNs::Trusted, XATTR_NAMES[1], &v, self);
                self.msg.xattrs.push(x);
            }
            Decoration::Acl => {
                let acl: Vec<pb::AclEntry> = ACL
                    .iter()
                    .map(|&(name, kind, default_scope, perm)| pb::AclEntry {
                        name: self.id_of(name),
                        r#type: i32::from(kind),
                        default_scope,
                        permission: u32::from(perm),
                    })
                    .collect();
                self.msg.acl = acl;
            }
            _ => {}
        }
    }

    /// Appends the canonical digest bytes of the entry last filled, child
    /// of `parent`.
    pub(super) fn canon(&mut self, parent: u64, kind: u8, d: &Drawn) {
        let m = &self.msg;
        let attrs = match kind {
            0 => {
                let (ns_quota, ds_quota) = m
                    .directory
                    .as_ref()
                    .map_or((-1, -1), |a| (a.ns_quota, a.ds_quota));
                Attrs::Directory { ns_quota, ds_quota }
            }
            1 => Attrs::File(FileAttrs {
                atime: d.mtime,
                preferred_block_size: BLOCK_SIZE,
                // 2 or 3, and 0 or 12.
                replication: d.replication as u16,
                storage_policy: d.storage_policy as u8,
                blocks: self.blocks.as_slice().into(),
            }),
            _ => Attrs::Symlink {
                target: LINK_TARGET,
            },
        };
        let value: [u8; 16];
        let one: [(XAttrNs, &[u8], &[u8]); 1];
        let none: &[(XAttrNs, &[u8], &[u8])] = &[];
        let (xattrs, acl, uc): (_, AclEntries<'_>, _) = match d.decoration {
            Decoration::UserXattr => {
                one = [(XAttrNs::User, XATTR_NAMES[0], CHECKSUM_TYPE)];
                (&one[..], &[], None)
            }
            Decoration::TrustedXattr(v) => {
                value = v;
                one = [(XAttrNs::Trusted, XATTR_NAMES[1], &value)];
                (&one[..], &[], None)
            }
            Decoration::Acl => (none, &ACL, None),
            Decoration::UnderConstruction => (none, &[], Some(CLIENT)),
            _ => (none, &[], None),
        };
        let extra =
            (!matches!(d.decoration, Decoration::None | Decoration::Quota)).then_some(CanonExtra {
                xattrs,
                acl,
                under_construction: uc,
            });
        canon_inode(
            &mut self.canon,
            &CanonInode {
                id: m.id,
                parent,
                name: &m.name,
                user: USERS[d.perm.0],
                group: GROUPS[d.perm.1],
                mode: d.perm.2,
                mtime: d.mtime,
                attrs,
                extra,
            },
        );
    }
}
