//! One Hadoop `INodeSection.INode` record into the namespace's
//! [`LoadedNode`], walking the wire format with no allocation per record
//! (blocks go to a reused scratch vector; an [`Extra`] is built only for
//! the rare inode with xattrs, an ACL or an under-construction mark).
#![deny(clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use super::strings::StringIds;
use nsimage_format::hdfs::fields::block_proto as blk_f;
use nsimage_format::hdfs::fields::inode_section::{
    acl_feature_proto as acl_f, file_under_construction_feature as uc_f, inode as inode_f,
    inode_directory as dir_f, inode_file as file_f, inode_symlink as link_f,
    xattr_compact_proto as xattr_f, xattr_feature_proto as xattrs_f,
};
use nsimage_format::hdfs::{AclBits, PermBits, StringTag, XAttrBits};
use nsimage_format::wire::{Bad, Cursor};
use nsimage_format::wire::{FIXED64, LEN, VARINT};
use nsimage_namespace::{
    AclEntry, Block, Extra, LoadedBody, LoadedNode, Perm, UnderConstruction, XAttr, XAttrNs,
};

/// Why a record is refused: a fixed text, or one naming a value.
pub(crate) enum RecordError {
    /// A wire-level problem.
    Wire(Bad),
    /// A problem with a value.
    Value(String),
}

impl From<Bad> for RecordError {
    fn from(b: Bad) -> Self {
        RecordError::Wire(b)
    }
}

impl RecordError {
    pub(crate) fn text(self) -> String {
        match self {
            RecordError::Wire(b) => b.to_string(),
            RecordError::Value(s) => s,
        }
    }
}

type R<T> = Result<T, RecordError>;

/// What a record told beyond the node (for the side counters).
#[derive(Default, Clone, Copy)]
pub(crate) struct RecordNotes {
    /// A striped (erasure-coded) file: its blocks are block groups.
    pub(crate) striped: bool,
    /// A directory with quotas by storage type (not in the model).
    pub(crate) type_quotas: bool,
}

/// A record's id, type (1 file, 2 directory, 3 symlink, as stored) and
/// name, for a pass that needs no more (the streamed viewer's tree).
pub(crate) fn record_head(body: &[u8]) -> R<(u64, u64, &[u8])> {
    let mut w = Cursor::new(body);
    let (mut id, mut ty, mut name) = (None, None, &b""[..]);
    while !w.done() {
        let (f, wt) = w.key()?;
        match f {
            inode_f::ID => {
                Cursor::expect(wt, VARINT)?;
                id = Some(w.varint()?);
            }
            inode_f::TYPE => {
                Cursor::expect(wt, VARINT)?;
                ty = Some(w.varint()?);
            }
            inode_f::NAME => {
                Cursor::expect(wt, LEN)?;
                name = w.bytes()?;
            }
            _ => w.skip(wt)?,
        }
    }
    let id = id.ok_or(RecordError::Wire("an inode record has no id"))?;
    let ty = ty.ok_or(RecordError::Wire("an inode record has no type"))?;
    Ok((id, ty, name))
}

/// Decodes one INode record. `blocks` is scratch the node's blocks borrow.
pub(crate) fn decode_inode<'a>(
    body: &'a [u8],
    ids: &StringIds,
    blocks: &'a mut Vec<Block>,
    notes: &mut RecordNotes,
) -> R<LoadedNode<'a>> {
    let mut w = Cursor::new(body);
    let (mut ty, mut id, mut name) = (None, None, &b""[..]);
    let mut sub: Option<&'a [u8]> = None;
    let mut sub_field = 0u32;
    while !w.done() {
        let (f, wt) = w.key()?;
        match f {
            inode_f::TYPE => {
                Cursor::expect(wt, VARINT)?;
                ty = Some(w.varint()?);
            }
            inode_f::ID => {
                Cursor::expect(wt, VARINT)?;
                id = Some(w.varint()?);
            }
            inode_f::NAME => {
                Cursor::expect(wt, LEN)?;
                name = w.bytes()?;
            }
            inode_f::FILE | inode_f::DIRECTORY | inode_f::SYMLINK => {
                Cursor::expect(wt, LEN)?;
                sub = Some(w.bytes()?);
                sub_field = f;
            }
            _ => w.skip(wt)?,
        }
    }
    let id = id.ok_or(RecordError::Wire("an inode record has no id"))?;
    let ty = ty.ok_or(RecordError::Wire("an inode record has no type"))?;
    let want = match ty {
        1 => inode_f::FILE,
        2 => inode_f::DIRECTORY,
        3 => inode_f::SYMLINK,
        t => {
            return Err(RecordError::Value(format!(
                "inode {id} has unknown type {t}"
            )))
        }
    };
    // A body of another kind than the type says is refused; none at all
    // means every field at its default (as Hadoop reads it).
    let sub = match sub {
        Some(s) if sub_field == want => s,
        Some(_) => {
            return Err(RecordError::Value(format!(
                "inode {id}'s body is not of its type {ty}"
            )))
        }
        None => &[],
    };
    blocks.clear();
    let (perm, mtime, body, extra) = match want {
        inode_f::FILE => file(sub, id, ids, blocks, notes)?,
        inode_f::DIRECTORY => dir(sub, id, ids, notes)?,
        _ => symlink(sub, id, ids)?,
    };
    let body = match body {
        Kind::File {
            atime,
            replication,
            preferred_block_size,
            storage_policy,
        } => LoadedBody::File {
            atime,
            replication,
            preferred_block_size,
            storage_policy,
            blocks: &blocks[..],
        },
        Kind::Dir { ns_quota, ds_quota } => LoadedBody::Directory { ns_quota, ds_quota },
        Kind::Link { target } => LoadedBody::Symlink { target },
    };
    Ok(LoadedNode {
        id,
        name,
        perm,
        mtime,
        body,
        extra,
    })
}

enum Kind<'a> {
    File {
        atime: u64,
        replication: u16,
        preferred_block_size: u64,
        storage_policy: u8,
    },
    Dir {
        ns_quota: i64,
        ds_quota: i64,
    },
    Link {
        target: &'a [u8],
    },
}

type Parts<'a> = (u64, u64, Kind<'a>, Option<Extra>);

fn perm(v: u64, id: u64, ids: &StringIds) -> R<u64> {
    let p = PermBits::unpack(v);
    let user = ids.get(StringTag::User, p.user).ok_or_else(|| {
        RecordError::Value(format!(
            "inode {id}'s user string id {} is not in STRING_TABLE",
            p.user
        ))
    })?;
    let group = ids.get(StringTag::Group, p.group).ok_or_else(|| {
        RecordError::Value(format!(
            "inode {id}'s group string id {} is not in STRING_TABLE",
            p.group
        ))
    })?;
    Ok(Perm::new(user, group, p.mode).0)
}

fn file<'a>(
    sub: &'a [u8],
    id: u64,
    ids: &StringIds,
    blocks: &mut Vec<Block>,
    notes: &mut RecordNotes,
) -> R<Parts<'a>> {
    let mut w = Cursor::new(sub);
    let (mut replication, mut mtime, mut atime, mut pbs, mut pm) = (0u64, 0, 0, 0, 0u64);
    let (mut policy, mut block_type, mut ec_policy) = (0u64, 0u64, None);
    let mut extra: Option<Extra> = None;
    while !w.done() {
        let (f, wt) = w.key()?;
        match f {
            file_f::REPLICATION
            | file_f::MODIFICATION_TIME
            | file_f::ACCESS_TIME
            | file_f::PREFERRED_BLOCK_SIZE
            | file_f::STORAGE_POLICY_ID
            | file_f::BLOCK_TYPE
            | file_f::ERASURE_CODING_POLICY_ID => {
                Cursor::expect(wt, VARINT)?;
                let v = w.varint()?;
                match f {
                    file_f::REPLICATION => replication = v,
                    file_f::MODIFICATION_TIME => mtime = v,
                    file_f::ACCESS_TIME => atime = v,
                    file_f::PREFERRED_BLOCK_SIZE => pbs = v,
                    file_f::STORAGE_POLICY_ID => policy = v,
                    file_f::BLOCK_TYPE => block_type = v,
                    _ => ec_policy = Some(v),
                }
            }
            file_f::PERMISSION => {
                Cursor::expect(wt, FIXED64)?;
                pm = w.fixed64()?;
            }
            file_f::BLOCKS => {
                Cursor::expect(wt, LEN)?;
                blocks.push(block(w.bytes()?)?);
            }
            file_f::FILE_UC => {
                Cursor::expect(wt, LEN)?;
                let uc = under_construction(w.bytes()?)?;
                extra.get_or_insert_with(Extra::default).under_construction = Some(Box::new(uc));
            }
            file_f::ACL => {
                Cursor::expect(wt, LEN)?;
                acl(
                    w.bytes()?,
                    id,
                    ids,
                    extra.get_or_insert_with(Extra::default),
                )?;
            }
            file_f::X_ATTRS => {
                Cursor::expect(wt, LEN)?;
                xattrs(
                    w.bytes()?,
                    id,
                    ids,
                    extra.get_or_insert_with(Extra::default),
                )?;
            }
            _ => w.skip(wt)?,
        }
    }
    let replication = u16::try_from(replication)
        .map_err(|_| RecordError::Value(format!("file {id} has replication {replication}")))?;
    let storage_policy = u8::try_from(policy)
        .map_err(|_| RecordError::Value(format!("file {id} has storage policy {policy}")))?;
    // Hadoop takes a file with an erasure coding policy id as striped.
    match block_type {
        0 | 1 => notes.striped = block_type == 1 || ec_policy.is_some(),
        t => return Err(RecordError::Value(format!("file {id} has block type {t}"))),
    }
    Ok((
        perm(pm, id, ids)?,
        mtime,
        Kind::File {
            atime,
            replication,
            preferred_block_size: pbs,
            storage_policy,
        },
        extra,
    ))
}

fn block(b: &[u8]) -> R<Block> {
    let mut w = Cursor::new(b);
    let mut blk = Block::default();
    let (mut has_id, mut has_gs) = (false, false);
    while !w.done() {
        let (f, wt) = w.key()?;
        match f {
            blk_f::BLOCK_ID | blk_f::GEN_STAMP | blk_f::NUM_BYTES => {
                Cursor::expect(wt, VARINT)?;
                let v = w.varint()?;
                match f {
                    blk_f::BLOCK_ID => (blk.id, has_id) = (v, true),
                    blk_f::GEN_STAMP => (blk.generation_stamp, has_gs) = (v, true),
                    _ => blk.length = v,
                }
            }
            _ => w.skip(wt)?,
        }
    }
    if !(has_id && has_gs) {
        return Err(RecordError::Wire(
            "a block lacks its id or generation stamp",
        ));
    }
    Ok(blk)
}

fn under_construction(b: &[u8]) -> R<UnderConstruction> {
    let mut w = Cursor::new(b);
    let (mut name, mut machine) = (&b""[..], &b""[..]);
    while !w.done() {
        let (f, wt) = w.key()?;
        match f {
            uc_f::CLIENT_NAME | uc_f::CLIENT_MACHINE => {
                Cursor::expect(wt, LEN)?;
                let v = w.bytes()?;
                if f == uc_f::CLIENT_NAME {
                    name = v;
                } else {
                    machine = v;
                }
            }
            _ => w.skip(wt)?,
        }
    }
    Ok(UnderConstruction {
        client_name: name.into(),
        client_machine: machine.into(),
    })
}

fn acl(b: &[u8], id: u64, ids: &StringIds, extra: &mut Extra) -> R<()> {
    let mut w = Cursor::new(b);
    let mut err: Option<String> = None;
    while !w.done() {
        let (f, wt) = w.key()?;
        if f == acl_f::ENTRIES {
            w.each_fixed32(wt, |v| {
                let a = AclBits::unpack(v);
                match ids.get(a.name_tag(), a.name) {
                    Some(name) => extra.acl.push(AclEntry {
                        name,
                        kind: a.kind,
                        default_scope: a.default_scope,
                        perm: a.perm,
                    }),
                    None => {
                        err.get_or_insert_with(|| {
                            format!(
                                "inode {id}'s ACL names string id {} not in STRING_TABLE",
                                a.name
                            )
                        });
                    }
                }
                Ok(())
            })?;
        } else {
            w.skip(wt)?;
        }
    }
    err.map_or(Ok(()), |e| Err(RecordError::Value(e)))
}

fn xattrs(b: &[u8], id: u64, ids: &StringIds, extra: &mut Extra) -> R<()> {
    let mut w = Cursor::new(b);
    while !w.done() {
        let (f, wt) = w.key()?;
        if f != xattrs_f::X_ATTRS {
            w.skip(wt)?;
            continue;
        }
        Cursor::expect(wt, LEN)?;
        let mut x = Cursor::new(w.bytes()?);
        let (mut packed, mut value) = (None, &b""[..]);
        while !x.done() {
            let (f, wt) = x.key()?;
            match f {
                xattr_f::NAME => {
                    Cursor::expect(wt, nsimage_format::wire::FIXED32)?;
                    packed = Some(x.fixed32()?);
                }
                xattr_f::VALUE => {
                    Cursor::expect(wt, LEN)?;
                    value = x.bytes()?;
                }
                _ => x.skip(wt)?,
            }
        }
        let packed = packed.ok_or(RecordError::Wire("an xattr has no name"))?;
        let bits = XAttrBits::unpack(packed);
        let ns = XAttrNs::from_u32(u32::from(bits.ns)).ok_or_else(|| {
            RecordError::Value(format!(
                "inode {id} has an xattr in unknown namespace {}",
                bits.ns
            ))
        })?;
        let name = ids
            .get(StringTag::XAttr, bits.name)
            .filter(|&n| n != 0)
            .ok_or_else(|| {
                RecordError::Value(format!(
                    "inode {id}'s xattr names string id {} not in STRING_TABLE",
                    bits.name
                ))
            })?;
        extra.xattrs.push(XAttr {
            ns,
            name,
            value: value.into(),
        });
    }
    Ok(())
}

fn dir<'a>(sub: &'a [u8], id: u64, ids: &StringIds, notes: &mut RecordNotes) -> R<Parts<'a>> {
    let mut w = Cursor::new(sub);
    let (mut mtime, mut ns, mut ds, mut pm) = (0u64, 0u64, 0u64, 0u64);
    let mut extra: Option<Extra> = None;
    while !w.done() {
        let (f, wt) = w.key()?;
        match f {
            dir_f::MODIFICATION_TIME | dir_f::NS_QUOTA | dir_f::DS_QUOTA => {
                Cursor::expect(wt, VARINT)?;
                let v = w.varint()?;
                match f {
                    dir_f::MODIFICATION_TIME => mtime = v,
                    dir_f::NS_QUOTA => ns = v,
                    _ => ds = v,
                }
            }
            dir_f::PERMISSION => {
                Cursor::expect(wt, FIXED64)?;
                pm = w.fixed64()?;
            }
            dir_f::ACL => {
                Cursor::expect(wt, LEN)?;
                acl(
                    w.bytes()?,
                    id,
                    ids,
                    extra.get_or_insert_with(Extra::default),
                )?;
            }
            dir_f::X_ATTRS => {
                Cursor::expect(wt, LEN)?;
                xattrs(
                    w.bytes()?,
                    id,
                    ids,
                    extra.get_or_insert_with(Extra::default),
                )?;
            }
            dir_f::TYPE_QUOTAS => {
                Cursor::expect(wt, LEN)?;
                w.bytes()?;
                notes.type_quotas = true;
            }
            _ => w.skip(wt)?,
        }
    }
    // Quotas are int64s stored as uint64 (-1, no quota, is u64::MAX).
    let quota = |v: u64| i64::from_ne_bytes(v.to_ne_bytes());
    Ok((
        perm(pm, id, ids)?,
        mtime,
        Kind::Dir {
            ns_quota: quota(ns),
            ds_quota: quota(ds),
        },
        extra,
    ))
}

fn symlink<'a>(sub: &'a [u8], id: u64, ids: &StringIds) -> R<Parts<'a>> {
    let mut w = Cursor::new(sub);
    let (mut pm, mut target, mut mtime) = (0u64, &b""[..], 0u64);
    while !w.done() {
        let (f, wt) = w.key()?;
        match f {
            link_f::PERMISSION => {
                Cursor::expect(wt, FIXED64)?;
                pm = w.fixed64()?;
            }
            link_f::TARGET => {
                Cursor::expect(wt, LEN)?;
                target = w.bytes()?;
            }
            link_f::MODIFICATION_TIME | link_f::ACCESS_TIME => {
                Cursor::expect(wt, VARINT)?;
                let v = w.varint()?;
                if f == link_f::MODIFICATION_TIME {
                    mtime = v;
                }
            }
            _ => w.skip(wt)?,
        }
    }
    Ok((perm(pm, id, ids)?, mtime, Kind::Link { target }, None))
}
