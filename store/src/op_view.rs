//! Journal records decoded without copying: a [`JournalOpView`] borrows
//! its names and values from the record's bytes, so that replay allocates
//! nothing per op (prost's owned decode copies each byte field twice and
//! frees it again). The decoder accepts exactly what
//! `prost::Message::decode` of `pb::JournalOp` accepts and yields the same
//! values: varints of at most ten bytes (the tenth below 2), keys at most
//! `u32::MAX` with a field number of at least 1 and a known wire type,
//! known fields with their own wire type only, the last occurrence of a
//! scalar or byte field winning, repeated `block` fields merging, unknown
//! fields (groups too, nested at most as deep as prost allows) skipped.
//! [`JournalOpView::to_owned`] gives the prost message.
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use nsimage_format::pb;
use nsimage_format::pb::journal_op::Op;
use nsimage_format::wire::fields as f;
use nsimage_format::wire::{Bad, Cursor, FIXED32, LEN, VARINT};

/// The decoder found bytes prost would refuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Undecodable;

/// A create (`mkdir`, `create` or `symlink`) borrowed from a record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CreateView<'a> {
    /// The parent directory's id.
    pub parent: u64,
    /// The new inode's name.
    pub name: &'a [u8],
    /// Owning user.
    pub user: &'a [u8],
    /// Owning group.
    pub group: &'a [u8],
    /// Permission bits (as journaled; range-checked on apply).
    pub mode: u32,
    /// Modification time.
    pub mtime: u64,
    /// Files only: replication.
    pub replication: u32,
    /// Files only: preferred block size.
    pub preferred_block_size: u64,
    /// Files only: storage policy.
    pub storage_policy: u32,
    /// Symlinks only: the target.
    pub target: &'a [u8],
    /// The id the namespace allocated (0 before the first application).
    pub new_id: u64,
}

/// A rename borrowed from a record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RenameView<'a> {
    /// The inode moved.
    pub id: u64,
    /// Its new parent directory.
    pub new_parent: u64,
    /// Its new name.
    pub new_name: &'a [u8],
    /// Modification time of both parents.
    pub mtime: u64,
}

/// An owner change borrowed from a record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetOwnerView<'a> {
    /// The inode.
    pub id: u64,
    /// New owning user.
    pub user: &'a [u8],
    /// New owning group.
    pub group: &'a [u8],
}

/// An extended attribute set, borrowed from a record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetXattrView<'a> {
    /// The inode.
    pub id: u64,
    /// The attribute's namespace (a `pb::XAttrNamespace` value).
    pub namespace: i32,
    /// The attribute's name.
    pub name: &'a [u8],
    /// Its value.
    pub value: &'a [u8],
}

/// An extended attribute removal, borrowed from a record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RemoveXattrView<'a> {
    /// The inode.
    pub id: u64,
    /// The attribute's namespace (a `pb::XAttrNamespace` value).
    pub namespace: i32,
    /// The attribute's name.
    pub name: &'a [u8],
}

/// One entry of an ACL set, borrowed from a record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AclEntryView<'a> {
    /// The user or group name (empty for the unnamed entry).
    pub name: &'a [u8],
    /// The entry's type (a `pb::AclType` value; range-checked on apply).
    pub kind: i32,
    /// A default entry (false: an access entry).
    pub default_scope: bool,
    /// rwx bits (as journaled; range-checked on apply).
    pub permission: u32,
}

/// An ACL set (the inode's whole ACL replaced), borrowed from a record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SetAclView<'a> {
    /// The inode.
    pub id: u64,
    /// The new ACL, in the record's order.
    pub entries: Vec<AclEntryView<'a>>,
}

/// One journal operation, its byte fields borrowed: the borrowed
/// counterpart of `pb::journal_op::Op`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpView<'a> {
    /// Create a directory.
    Mkdir(CreateView<'a>),
    /// Create an empty file.
    Create(CreateView<'a>),
    /// Create a symlink.
    Symlink(CreateView<'a>),
    /// Append a block to a file.
    AddBlock(pb::AddBlockOp),
    /// Move an inode.
    Rename(RenameView<'a>),
    /// Delete an inode.
    Delete(pb::DeleteOp),
    /// Set times.
    SetTimes(pb::SetTimesOp),
    /// Change the owner.
    SetOwner(SetOwnerView<'a>),
    /// Change the mode.
    SetMode(pb::SetModeOp),
    /// Change a file's replication.
    SetReplication(pb::SetReplicationOp),
    /// Set an extended attribute.
    SetXattr(SetXattrView<'a>),
    /// Remove an extended attribute.
    RemoveXattr(RemoveXattrView<'a>),
    /// Replace an inode's ACL.
    SetAcl(SetAclView<'a>),
}

/// One journal record, its byte fields borrowed from the record's bytes.
/// A record always holds an op (the journal reader checks the record's
/// shape before decoding it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalOpView<'a> {
    /// The record's txid.
    pub txid: u64,
    /// Its operation.
    pub op: OpView<'a>,
}

impl CreateView<'_> {
    fn to_pb(self) -> pb::CreateOp {
        pb::CreateOp {
            parent: self.parent,
            name: self.name.to_vec(),
            user: self.user.to_vec(),
            group: self.group.to_vec(),
            mode: self.mode,
            mtime: self.mtime,
            replication: self.replication,
            preferred_block_size: self.preferred_block_size,
            storage_policy: self.storage_policy,
            target: self.target.to_vec(),
            new_id: self.new_id,
        }
    }
}

impl<'a> CreateView<'a> {
    /// Borrows an owned create.
    pub fn of(c: &'a pb::CreateOp) -> CreateView<'a> {
        CreateView {
            parent: c.parent,
            name: &c.name,
            user: &c.user,
            group: &c.group,
            mode: c.mode,
            mtime: c.mtime,
            replication: c.replication,
            preferred_block_size: c.preferred_block_size,
            storage_policy: c.storage_policy,
            target: &c.target,
            new_id: c.new_id,
        }
    }
}

impl<'a> OpView<'a> {
    /// Borrows an owned op.
    pub fn of(op: &'a Op) -> OpView<'a> {
        match op {
            Op::Mkdir(c) => OpView::Mkdir(CreateView::of(c)),
            Op::Create(c) => OpView::Create(CreateView::of(c)),
            Op::Symlink(c) => OpView::Symlink(CreateView::of(c)),
            Op::AddBlock(a) => OpView::AddBlock(*a),
            Op::Rename(r) => OpView::Rename(RenameView {
                id: r.id,
                new_parent: r.new_parent,
                new_name: &r.new_name,
                mtime: r.mtime,
            }),
            Op::Delete(d) => OpView::Delete(*d),
            Op::SetTimes(t) => OpView::SetTimes(*t),
            Op::SetOwner(o) => OpView::SetOwner(SetOwnerView {
                id: o.id,
                user: &o.user,
                group: &o.group,
            }),
            Op::SetMode(m) => OpView::SetMode(*m),
            Op::SetReplication(r) => OpView::SetReplication(*r),
            Op::SetXattr(x) => OpView::SetXattr(SetXattrView {
                id: x.id,
                namespace: x.namespace,
                name: &x.name,
                value: &x.value,
            }),
            Op::RemoveXattr(x) => OpView::RemoveXattr(RemoveXattrView {
                id: x.id,
                namespace: x.namespace,
                name: &x.name,
            }),
            Op::SetAcl(a) => OpView::SetAcl(SetAclView {
                id: a.id,
                entries: a
                    .entries
                    .iter()
                    .map(|e| AclEntryView {
                        name: &e.name,
                        kind: e.r#type,
                        default_scope: e.default_scope,
                        permission: e.permission,
                    })
                    .collect(),
            }),
        }
    }

    /// The owned (prost) op.
    pub fn to_owned(self) -> Op {
        match self {
            OpView::Mkdir(c) => Op::Mkdir(c.to_pb()),
            OpView::Create(c) => Op::Create(c.to_pb()),
            OpView::Symlink(c) => Op::Symlink(c.to_pb()),
            OpView::AddBlock(a) => Op::AddBlock(a),
            OpView::Rename(r) => Op::Rename(pb::RenameOp {
                id: r.id,
                new_parent: r.new_parent,
                new_name: r.new_name.to_vec(),
                mtime: r.mtime,
            }),
            OpView::Delete(d) => Op::Delete(d),
            OpView::SetTimes(t) => Op::SetTimes(t),
            OpView::SetOwner(o) => Op::SetOwner(pb::SetOwnerOp {
                id: o.id,
                user: o.user.to_vec(),
                group: o.group.to_vec(),
            }),
            OpView::SetMode(m) => Op::SetMode(m),
            OpView::SetReplication(r) => Op::SetReplication(r),
            OpView::SetXattr(x) => Op::SetXattr(pb::SetXAttrOp {
                id: x.id,
                namespace: x.namespace,
                name: x.name.to_vec(),
                value: x.value.to_vec(),
            }),
            OpView::RemoveXattr(x) => Op::RemoveXattr(pb::RemoveXAttrOp {
                id: x.id,
                namespace: x.namespace,
                name: x.name.to_vec(),
            }),
            OpView::SetAcl(a) => Op::SetAcl(pb::SetAclOp {
                id: a.id,
                entries: a
                    .entries
                    .into_iter()
                    .map(|e| pb::JournalAclEntry {
                        name: e.name.to_vec(),
                        r#type: e.kind,
                        default_scope: e.default_scope,
                        permission: e.permission,
                    })
                    .collect(),
            }),
        }
    }
}

impl<'a> JournalOpView<'a> {
    /// The owned (prost) record.
    pub fn to_owned(self) -> pb::JournalOp {
        pb::JournalOp {
            txid: self.txid,
            op: Some(self.op.to_owned()),
        }
    }

    /// Decodes a record's protobuf message (after its checksum). Accepts
    /// what prost accepts, with the same values (module docs), except that
    /// a message without an op is refused (the reader's shape check
    /// refuses it before decoding). A second op field of the same kind
    /// merges into the first, one of another kind replaces it, as in prost.
    pub fn decode(msg: &'a [u8]) -> Result<JournalOpView<'a>, Undecodable> {
        let mut c = Cursor::new(msg);
        let mut txid = 0u64;
        let mut op: Option<OpView<'a>> = None;
        while !c.done() {
            let (field, wire) = c.prost_key()?;
            match field {
                f::journal_op::TXID => txid = c.uint(wire)?,
                f::journal_op::MKDIR..=f::journal_op::SET_ACL => {
                    // prost: message::merge checks the limit (100), the
                    // fields inside decode at 99.
                    let body = c.delimited(wire)?;
                    op = Some(decode_op(field, body, TOP_DEPTH.saturating_sub(1), op)?);
                }
                _ => c.skip_field(wire, field, TOP_DEPTH)?,
            }
        }
        Ok(JournalOpView {
            txid,
            op: op.ok_or(Undecodable)?,
        })
    }
}

/// prost's recursion limit: the depth a top-level message decodes at.
const TOP_DEPTH: u32 = 100;

const START_GROUP: u8 = 3;
const END_GROUP: u8 = 4;

impl From<Bad> for Undecodable {
    fn from(_: Bad) -> Self {
        Undecodable
    }
}

/// Fields read as prost reads them, on the format's one wire cursor: a
/// wrong wire type is refused, uint32 and int32 fields keep their low 32
/// bits, any non-zero bool is true, and unknown fields of every wire type
/// (groups among them) are skipped.
trait AsProst<'a> {
    fn prost_key(&mut self) -> Result<(u32, u8), Undecodable>;
    fn delimited(&mut self, wire: u8) -> Result<&'a [u8], Undecodable>;
    fn uint(&mut self, wire: u8) -> Result<u64, Undecodable>;
    fn uint32(&mut self, wire: u8) -> Result<u32, Undecodable>;
    fn int32(&mut self, wire: u8) -> Result<i32, Undecodable>;
    fn boolean(&mut self, wire: u8) -> Result<bool, Undecodable>;
    fn skip_field(&mut self, wire: u8, field: u32, depth: u32) -> Result<(), Undecodable>;
}

impl<'a> AsProst<'a> for Cursor<'a> {
    /// A field key: its number (at least 1, the key within u32) and wire
    /// type (0 to 5).
    #[inline]
    fn prost_key(&mut self) -> Result<(u32, u8), Undecodable> {
        let (field, wire) = self.key()?;
        if wire > FIXED32 {
            return Err(Undecodable);
        }
        Ok((field, wire))
    }

    /// A length-delimited field's bytes.
    #[inline]
    fn delimited(&mut self, wire: u8) -> Result<&'a [u8], Undecodable> {
        Cursor::expect(wire, LEN)?;
        Ok(self.bytes()?)
    }

    /// A uint64 field.
    #[inline]
    fn uint(&mut self, wire: u8) -> Result<u64, Undecodable> {
        Cursor::expect(wire, VARINT)?;
        Ok(self.varint()?)
    }

    /// A uint32 field: prost keeps the low 32 bits.
    #[inline]
    #[allow(clippy::cast_possible_truncation)]
    fn uint32(&mut self, wire: u8) -> Result<u32, Undecodable> {
        self.uint(wire).map(|v| v as u32)
    }

    /// An int32 (enum) field: prost keeps the low 32 bits.
    #[inline]
    #[allow(clippy::cast_possible_truncation)]
    fn int32(&mut self, wire: u8) -> Result<i32, Undecodable> {
        self.uint(wire).map(|v| v as i32)
    }

    /// A bool field: any non-zero varint is true.
    #[inline]
    fn boolean(&mut self, wire: u8) -> Result<bool, Undecodable> {
        self.uint(wire).map(|v| v != 0)
    }

    /// Skips an unknown field as prost does, at recursion depth `depth`.
    fn skip_field(&mut self, wire: u8, field: u32, depth: u32) -> Result<(), Undecodable> {
        if depth == 0 {
            return Err(Undecodable);
        }
        match wire {
            START_GROUP => loop {
                let (f, w) = self.prost_key()?;
                if w == END_GROUP {
                    if f != field {
                        return Err(Undecodable);
                    }
                    return Ok(());
                }
                self.skip_field(w, f, depth.saturating_sub(1))?;
            },
            _ => Ok(self.skip(wire)?),
        }
    }
}

/// Runs `on` for each field of the message `body` (decoded at `depth`);
/// `on` returns false for a field it does not know, which is skipped.
#[inline]
fn each_field<'a>(
    body: &'a [u8],
    depth: u32,
    mut on: impl FnMut(&mut Cursor<'a>, u32, u8) -> Result<bool, Undecodable>,
) -> Result<(), Undecodable> {
    let mut c = Cursor::new(body);
    while !c.done() {
        let (field, wire) = c.prost_key()?;
        if !on(&mut c, field, wire)? {
            c.skip_field(wire, field, depth)?;
        }
    }
    Ok(())
}

fn decode_create<'a>(
    body: &'a [u8],
    depth: u32,
    mut v: CreateView<'a>,
) -> Result<CreateView<'a>, Undecodable> {
    each_field(body, depth, |c, field, wire| {
        match field {
            f::create_op::PARENT => v.parent = c.uint(wire)?,
            f::create_op::NAME => v.name = c.delimited(wire)?,
            f::create_op::USER => v.user = c.delimited(wire)?,
            f::create_op::GROUP => v.group = c.delimited(wire)?,
            f::create_op::MODE => v.mode = c.uint32(wire)?,
            f::create_op::MTIME => v.mtime = c.uint(wire)?,
            f::create_op::REPLICATION => v.replication = c.uint32(wire)?,
            f::create_op::PREFERRED_BLOCK_SIZE => v.preferred_block_size = c.uint(wire)?,
            f::create_op::STORAGE_POLICY => v.storage_policy = c.uint32(wire)?,
            f::create_op::TARGET => v.target = c.delimited(wire)?,
            f::create_op::NEW_ID => v.new_id = c.uint(wire)?,
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(v)
}

/// Merges a `Block` message into `b`, as prost merges a repeated message
/// field into the one it holds.
fn merge_block(b: &mut pb::Block, body: &[u8], depth: u32) -> Result<(), Undecodable> {
    each_field(body, depth, |c, field, wire| {
        match field {
            f::block::ID => b.id = c.uint(wire)?,
            f::block::GENERATION_STAMP => b.generation_stamp = c.uint(wire)?,
            f::block::LENGTH => b.length = c.uint(wire)?,
            _ => return Ok(false),
        }
        Ok(true)
    })
}

/// Decodes a `JournalAclEntry` message.
fn decode_acl_entry(body: &[u8], depth: u32) -> Result<AclEntryView<'_>, Undecodable> {
    let mut e = AclEntryView::default();
    each_field(body, depth, |c, field, wire| {
        match field {
            f::journal_acl_entry::NAME => e.name = c.delimited(wire)?,
            f::journal_acl_entry::TYPE => e.kind = c.int32(wire)?,
            f::journal_acl_entry::DEFAULT_SCOPE => e.default_scope = c.boolean(wire)?,
            f::journal_acl_entry::PERMISSION => e.permission = c.uint32(wire)?,
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(e)
}

/// Decodes op field `field` (2 to 14) from `body`, merged into `prior`
/// when that is an op of the same kind (a repeated oneof field, as prost
/// merges it).
fn decode_op<'a>(
    field: u32,
    body: &'a [u8],
    depth: u32,
    prior: Option<OpView<'a>>,
) -> Result<OpView<'a>, Undecodable> {
    Ok(match (field, prior) {
        (f::journal_op::MKDIR, Some(OpView::Mkdir(v))) => {
            OpView::Mkdir(decode_create(body, depth, v)?)
        }
        (f::journal_op::MKDIR, _) => {
            OpView::Mkdir(decode_create(body, depth, CreateView::default())?)
        }
        (f::journal_op::CREATE, Some(OpView::Create(v))) => {
            OpView::Create(decode_create(body, depth, v)?)
        }
        (f::journal_op::CREATE, _) => {
            OpView::Create(decode_create(body, depth, CreateView::default())?)
        }
        (f::journal_op::SYMLINK, Some(OpView::Symlink(v))) => {
            OpView::Symlink(decode_create(body, depth, v)?)
        }
        (f::journal_op::SYMLINK, _) => {
            OpView::Symlink(decode_create(body, depth, CreateView::default())?)
        }
        (f::journal_op::ADD_BLOCK, prior) => {
            let mut a = match prior {
                Some(OpView::AddBlock(v)) => v,
                _ => pb::AddBlockOp::default(),
            };
            merge_add_block(&mut a, body, depth)?;
            OpView::AddBlock(a)
        }
        (f::journal_op::RENAME, prior) => {
            let mut r = match prior {
                Some(OpView::Rename(v)) => v,
                _ => RenameView::default(),
            };
            merge_rename(&mut r, body, depth)?;
            OpView::Rename(r)
        }
        (f::journal_op::DELETE, prior) => {
            let mut d = match prior {
                Some(OpView::Delete(v)) => v,
                _ => pb::DeleteOp::default(),
            };
            merge_delete(&mut d, body, depth)?;
            OpView::Delete(d)
        }
        (f::journal_op::SET_TIMES, prior) => {
            let mut t = match prior {
                Some(OpView::SetTimes(v)) => v,
                _ => pb::SetTimesOp::default(),
            };
            merge_set_times(&mut t, body, depth)?;
            OpView::SetTimes(t)
        }
        (f::journal_op::SET_OWNER, prior) => {
            let mut o = match prior {
                Some(OpView::SetOwner(v)) => v,
                _ => SetOwnerView::default(),
            };
            merge_set_owner(&mut o, body, depth)?;
            OpView::SetOwner(o)
        }
        (f::journal_op::SET_MODE, prior) => {
            let mut m = match prior {
                Some(OpView::SetMode(v)) => v,
                _ => pb::SetModeOp::default(),
            };
            merge_set_mode(&mut m, body, depth)?;
            OpView::SetMode(m)
        }
        (f::journal_op::SET_REPLICATION, prior) => {
            let mut r = match prior {
                Some(OpView::SetReplication(v)) => v,
                _ => pb::SetReplicationOp::default(),
            };
            merge_set_replication(&mut r, body, depth)?;
            OpView::SetReplication(r)
        }
        (f::journal_op::SET_XATTR, prior) => {
            let mut x = match prior {
                Some(OpView::SetXattr(v)) => v,
                _ => SetXattrView::default(),
            };
            merge_set_xattr(&mut x, body, depth)?;
            OpView::SetXattr(x)
        }
        (f::journal_op::REMOVE_XATTR, prior) => {
            let mut x = match prior {
                Some(OpView::RemoveXattr(v)) => v,
                _ => RemoveXattrView::default(),
            };
            merge_remove_xattr(&mut x, body, depth)?;
            OpView::RemoveXattr(x)
        }
        (f::journal_op::SET_ACL, prior) => {
            let mut a = match prior {
                Some(OpView::SetAcl(v)) => v,
                _ => SetAclView::default(),
            };
            merge_set_acl(&mut a, body, depth)?;
            OpView::SetAcl(a)
        }
        _ => return Err(Undecodable),
    })
}

/// Merges an `AddBlockOp`'s fields from `body` into `a`.
fn merge_add_block(a: &mut pb::AddBlockOp, body: &[u8], depth: u32) -> Result<(), Undecodable> {
    each_field(body, depth, |c, field, wire| {
        match field {
            f::add_block_op::ID => a.id = c.uint(wire)?,
            f::add_block_op::BLOCK => {
                // message::merge checks the limit at this depth;
                // the block's fields decode one deeper.
                let inner = c.delimited(wire)?;
                if depth == 0 {
                    return Err(Undecodable);
                }
                let b = a.block.get_or_insert_with(Default::default);
                merge_block(b, inner, depth.saturating_sub(1))?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    })
}

/// Merges a `RenameOp`'s fields from `body` into `r`.
fn merge_rename<'a>(r: &mut RenameView<'a>, body: &'a [u8], depth: u32) -> Result<(), Undecodable> {
    each_field(body, depth, |c, field, wire| {
        match field {
            f::rename_op::ID => r.id = c.uint(wire)?,
            f::rename_op::NEW_PARENT => r.new_parent = c.uint(wire)?,
            f::rename_op::NEW_NAME => r.new_name = c.delimited(wire)?,
            f::rename_op::MTIME => r.mtime = c.uint(wire)?,
            _ => return Ok(false),
        }
        Ok(true)
    })
}

/// Merges a `DeleteOp`'s fields from `body` into `d`.
fn merge_delete(d: &mut pb::DeleteOp, body: &[u8], depth: u32) -> Result<(), Undecodable> {
    each_field(body, depth, |c, field, wire| {
        match field {
            f::delete_op::ID => d.id = c.uint(wire)?,
            f::delete_op::RECURSIVE => d.recursive = c.boolean(wire)?,
            f::delete_op::MTIME => d.mtime = c.uint(wire)?,
            _ => return Ok(false),
        }
        Ok(true)
    })
}

/// Merges a `SetTimesOp`'s fields from `body` into `t`.
fn merge_set_times(t: &mut pb::SetTimesOp, body: &[u8], depth: u32) -> Result<(), Undecodable> {
    each_field(body, depth, |c, field, wire| {
        match field {
            f::set_times_op::ID => t.id = c.uint(wire)?,
            f::set_times_op::MTIME => t.mtime = c.uint(wire)?,
            f::set_times_op::ATIME => t.atime = c.uint(wire)?,
            _ => return Ok(false),
        }
        Ok(true)
    })
}

/// Merges a `SetOwnerOp`'s fields from `body` into `o`.
fn merge_set_owner<'a>(
    o: &mut SetOwnerView<'a>,
    body: &'a [u8],
    depth: u32,
) -> Result<(), Undecodable> {
    each_field(body, depth, |c, field, wire| {
        match field {
            f::set_owner_op::ID => o.id = c.uint(wire)?,
            f::set_owner_op::USER => o.user = c.delimited(wire)?,
            f::set_owner_op::GROUP => o.group = c.delimited(wire)?,
            _ => return Ok(false),
        }
        Ok(true)
    })
}

/// Merges a `SetModeOp`'s fields from `body` into `m`.
fn merge_set_mode(m: &mut pb::SetModeOp, body: &[u8], depth: u32) -> Result<(), Undecodable> {
    each_field(body, depth, |c, field, wire| {
        match field {
            f::set_mode_op::ID => m.id = c.uint(wire)?,
            f::set_mode_op::MODE => m.mode = c.uint32(wire)?,
            _ => return Ok(false),
        }
        Ok(true)
    })
}

/// Merges a `SetReplicationOp`'s fields from `body` into `r`.
fn merge_set_replication(
    r: &mut pb::SetReplicationOp,
    body: &[u8],
    depth: u32,
) -> Result<(), Undecodable> {
    each_field(body, depth, |c, field, wire| {
        match field {
            f::set_replication_op::ID => r.id = c.uint(wire)?,
            f::set_replication_op::REPLICATION => r.replication = c.uint32(wire)?,
            _ => return Ok(false),
        }
        Ok(true)
    })
}

/// Merges a `SetXattrOp`'s fields from `body` into `x`.
fn merge_set_xattr<'a>(
    x: &mut SetXattrView<'a>,
    body: &'a [u8],
    depth: u32,
) -> Result<(), Undecodable> {
    each_field(body, depth, |c, field, wire| {
        match field {
            f::set_xattr_op::ID => x.id = c.uint(wire)?,
            f::set_xattr_op::NAMESPACE => x.namespace = c.int32(wire)?,
            f::set_xattr_op::NAME => x.name = c.delimited(wire)?,
            f::set_xattr_op::VALUE => x.value = c.delimited(wire)?,
            _ => return Ok(false),
        }
        Ok(true)
    })
}

/// Merges a `RemoveXattrOp`'s fields from `body` into `x`.
fn merge_remove_xattr<'a>(
    x: &mut RemoveXattrView<'a>,
    body: &'a [u8],
    depth: u32,
) -> Result<(), Undecodable> {
    each_field(body, depth, |c, field, wire| {
        match field {
            f::remove_xattr_op::ID => x.id = c.uint(wire)?,
            f::remove_xattr_op::NAMESPACE => x.namespace = c.int32(wire)?,
            f::remove_xattr_op::NAME => x.name = c.delimited(wire)?,
            _ => return Ok(false),
        }
        Ok(true)
    })
}

/// Merges a `SetAclOp`'s fields from `body` into `a`.
fn merge_set_acl<'a>(
    a: &mut SetAclView<'a>,
    body: &'a [u8],
    depth: u32,
) -> Result<(), Undecodable> {
    each_field(body, depth, |c, field, wire| {
        match field {
            f::set_acl_op::ID => a.id = c.uint(wire)?,
            f::set_acl_op::ENTRIES => {
                // As a block inside add_block: message::merge checks
                // the limit here, the entry's fields decode one
                // deeper. Each occurrence is a new entry.
                let inner = c.delimited(wire)?;
                if depth == 0 {
                    return Err(Undecodable);
                }
                a.entries
                    .push(decode_acl_entry(inner, depth.saturating_sub(1))?);
            }
            _ => return Ok(false),
        }
        Ok(true)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    fn same_as_prost(msg: &[u8]) {
        let ours = JournalOpView::decode(msg).map(JournalOpView::to_owned);
        let theirs = pb::JournalOp::decode(msg);
        match (&ours, &theirs) {
            (Ok(a), Ok(b)) if b.op.is_some() => assert_eq!(a, b, "{msg:02x?}"),
            // Without an op the reader refuses the record by its shape.
            (Err(_), Ok(b)) if b.op.is_none() => {}
            (Err(_), Err(_)) => {}
            _ => panic!("{msg:02x?}: ours {ours:?}, prost {theirs:?}"),
        }
    }

    fn samples() -> Vec<pb::JournalOp> {
        let create = pb::CreateOp {
            parent: 16385,
            name: b"f123".to_vec(),
            user: b"hdfs".to_vec(),
            group: b"hadoop".to_vec(),
            mode: 0o644,
            mtime: 1_735_689_600_000,
            replication: 3,
            preferred_block_size: 128 << 20,
            storage_policy: 7,
            target: b"/data/latest".to_vec(),
            new_id: 99,
        };
        let ops = vec![
            Op::Mkdir(create.clone()),
            Op::Create(create.clone()),
            Op::Symlink(create),
            Op::Create(pb::CreateOp::default()),
            Op::AddBlock(pb::AddBlockOp {
                id: 5,
                block: Some(pb::Block {
                    id: 1 << 40,
                    generation_stamp: 1001,
                    length: u64::MAX,
                }),
            }),
            Op::AddBlock(pb::AddBlockOp { id: 5, block: None }),
            Op::Rename(pb::RenameOp {
                id: 7,
                new_parent: 8,
                new_name: b"r9".to_vec(),
                mtime: 3,
            }),
            Op::Delete(pb::DeleteOp {
                id: 7,
                recursive: true,
                mtime: 4,
            }),
            Op::SetTimes(pb::SetTimesOp {
                id: 7,
                mtime: 5,
                atime: 6,
            }),
            Op::SetOwner(pb::SetOwnerOp {
                id: 7,
                user: b"u".to_vec(),
                group: b"g".to_vec(),
            }),
            Op::SetMode(pb::SetModeOp { id: 7, mode: 0o700 }),
            Op::SetReplication(pb::SetReplicationOp {
                id: 7,
                replication: 70000,
            }),
            Op::SetXattr(pb::SetXAttrOp {
                id: 7,
                namespace: -3,
                name: b"k1".to_vec(),
                value: vec![0, 1, 2],
            }),
            Op::RemoveXattr(pb::RemoveXAttrOp {
                id: 7,
                namespace: 2,
                name: b"k1".to_vec(),
            }),
            Op::SetAcl(pb::SetAclOp {
                id: 7,
                entries: vec![
                    pb::JournalAclEntry {
                        name: b"alice".to_vec(),
                        r#type: 0,
                        default_scope: false,
                        permission: 6,
                    },
                    pb::JournalAclEntry {
                        name: Vec::new(),
                        r#type: 2,
                        default_scope: true,
                        permission: 5,
                    },
                    pb::JournalAclEntry::default(),
                ],
            }),
            Op::SetAcl(pb::SetAclOp {
                id: 9,
                entries: Vec::new(),
            }),
        ];
        ops.into_iter()
            .zip(1u64..)
            .map(|(op, txid)| pb::JournalOp {
                txid: txid.wrapping_mul(0x0123_4567_89ab),
                op: Some(op),
            })
            .collect()
    }

    #[test]
    fn decodes_every_op_as_prost_does() {
        for rec in samples() {
            let bytes = rec.encode_to_vec();
            let view = JournalOpView::decode(&bytes).unwrap();
            assert_eq!(view.clone().to_owned(), rec);
            assert_eq!(OpView::of(rec.op.as_ref().unwrap()), view.op);
        }
    }

    #[test]
    fn damaged_records_decode_or_fail_as_prost_does() {
        // Every truncation and every single-byte change of every sample:
        // the same value or an error on both sides.
        for rec in samples() {
            let bytes = rec.encode_to_vec();
            for cut in 0..bytes.len() {
                same_as_prost(&bytes[..cut]);
            }
            for i in 0..bytes.len() {
                for v in [0x00, 0x01, 0x02, 0x07, 0x0b, 0x0c, 0x12, 0x7f, 0x80, 0xff] {
                    let mut b = bytes.clone();
                    b[i] = v;
                    same_as_prost(&b);
                }
            }
        }
    }

    #[test]
    fn varints_read_as_prost_reads_them() {
        let mut values: Vec<u64> = (0..64).map(|b| 1u64 << b).collect();
        values.extend((0..64).map(|b| (1u64 << b) - 1));
        values.extend([u64::MAX, 0x0123_4567_89ab_cdef, 300, 16384]);
        for v in values {
            for pad in [0usize, 3, 12] {
                let mut buf = Vec::new();
                prost::encoding::encode_varint(v, &mut buf);
                let len = buf.len();
                buf.extend(std::iter::repeat_n(0xffu8, pad));
                let mut c = Cursor::new(&buf);
                assert_eq!(c.varint(), Ok(v), "{v:#x} pad {pad}");
                assert_eq!(c.rest().len(), pad);
                // Cut short, it is refused.
                let mut c = Cursor::new(&buf[..len - 1]);
                assert!(c.varint().is_err(), "{v:#x} cut to {}", len - 1);
            }
        }
    }

    #[test]
    fn odd_encodings_decode_as_prost_does() {
        let cases: Vec<Vec<u8>> = vec![
            // Overlong varints, the longest accepted and one too long.
            vec![0x08, 0x81, 0x80, 0x00, 0x3a, 0x00],
            vec![
                0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x3a, 0x00,
            ],
            vec![
                0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x3a, 0x00,
            ],
            // A repeated scalar and a repeated name: the last wins.
            vec![0x08, 1, 0x12, 8, 0x08, 5, 0x08, 6, 0x12, 1, b'a', 0x12, 0],
            // A mode past u32 keeps its low bits.
            vec![
                0x08, 1, 0x52, 7, 0x08, 5, 0x10, 0x80, 0x80, 0x80, 0x80, 0x10,
            ],
            // Repeated blocks merge.
            vec![
                0x08, 1, 0x2a, 10, 0x12, 2, 0x08, 9, 0x12, 2, 0x10, 3, 0x08, 4,
            ],
            // Unknown fields of every wire type, a group among them.
            vec![
                0x08, 1, 0x3a, 20, 0x08, 2, 0x78, 1, 0x79, 1, 2, 3, 4, 5, 6, 7, 8, 0x7d, 1, 2, 3,
                4, 0x7b, 0x7c,
            ],
            // A group ended by the wrong field; a lone end group.
            vec![0x08, 1, 0x3a, 4, 0x08, 2, 0x7b, 0x74],
            vec![0x08, 1, 0x3a, 3, 0x08, 2, 0x7c],
            // A known field with the wrong wire type; wire types 6 and 7.
            vec![0x08, 1, 0x3a, 2, 0x0a, 0],
            vec![0x08, 1, 0x3a, 2, 0x0e, 0],
            vec![0x08, 1, 0x3a, 2, 0x0f, 0],
            // Field number 0; a key past u32.
            vec![0x08, 1, 0x3a, 2, 0x00, 0],
            vec![0x08, 1, 0x3a, 6, 0x80, 0x80, 0x80, 0x80, 0x10, 0],
            // A second op of the same kind merges, of another kind replaces.
            vec![0x08, 1, 0x12, 2, 0x08, 5, 0x12, 3, 0x12, 1, b'a'],
            vec![0x08, 1, 0x12, 2, 0x08, 5, 0x1a, 3, 0x12, 1, b'a'],
            vec![
                0x08, 1, 0x2a, 4, 0x12, 2, 0x08, 9, 0x2a, 4, 0x12, 2, 0x10, 3,
            ],
            // The txid last, and unknown top-level fields.
            vec![0x3a, 0, 0x08, 7, 0x78, 3],
            // Two ACL sets merge: the id of the last, the entries of both.
            vec![
                0x08, 1, 0x72, 4, 0x12, 2, 0x10, 2, 0x72, 6, 0x08, 9, 0x12, 2, 0x18, 1,
            ],
            // An ACL entry with an unknown field, a wrong wire type, an
            // overlong permission.
            vec![0x08, 1, 0x72, 4, 0x12, 2, 0x28, 1],
            vec![0x08, 1, 0x72, 4, 0x12, 2, 0x0d, 1],
            vec![
                0x08, 1, 0x72, 9, 0x12, 7, 0x20, 0x87, 0x80, 0x80, 0x80, 0x10, 0x08,
            ],
        ];
        for c in &cases {
            same_as_prost(c);
        }
        // Groups nested as deep as prost allows, and one deeper.
        for n in [95usize, 97, 98, 99, 100, 101] {
            let mut inner = Vec::new();
            inner.extend(std::iter::repeat_n(0x7bu8, n));
            inner.extend(std::iter::repeat_n(0x7cu8, n));
            let mut body = vec![0x08, 2];
            body.extend_from_slice(&inner);
            let mut msg = vec![0x08, 1, 0x3a];
            prost::encoding::encode_varint(body.len() as u64, &mut msg);
            msg.extend_from_slice(&body);
            same_as_prost(&msg);
            // The same inside an add_block's block.
            let mut block = vec![0x08, 3];
            block.extend_from_slice(&inner);
            let mut add = vec![0x12];
            prost::encoding::encode_varint(block.len() as u64, &mut add);
            add.extend_from_slice(&block);
            let mut msg = vec![0x08, 1, 0x2a];
            prost::encoding::encode_varint(add.len() as u64, &mut msg);
            msg.extend_from_slice(&add);
            same_as_prost(&msg);
        }
    }
}
