//! The zero-copy record walker: the hot path of the loader. It walks the
//! protobuf wire format of `Inode` and `DirEntry` records (schemas in
//! `format-spec/proto/nsimage.proto`) and takes the fields it needs as
//! values and slices of the record's bytes, with no allocation per record.
//! prost stays the schema and the encoder; `tests/it/format/walker.rs` checks that the
//! walker and prost agree on every field of random records.
//!
//! Semantics follow FORMAT.md's "Protobuf wire rules": the last value of a
//! scalar wins, repeated occurrences of a message field merge, unknown
//! fields are skipped, packed and unpacked repeated scalars are both
//! accepted; groups, field number 0, a known field with the wrong wire type
//! and a varint out of its field's range (uint32 over 32 bits, an enum
//! outside i32, a bool other than 0 or 1) are refused. The prost paths run
//! `nsimage_format::wire::check` for the same rules.

#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use nsimage_format::pb::InodeType;
use nsimage_format::wire::convert::{self, xattr_ns};
use nsimage_format::wire::{fields, tags, FIXED64, LEN, VARINT};
use nsimage_namespace::{AclEntry, Block, Extra, LoadedBody, LoadedNode, UnderConstruction, XAttr};

/// Why a record could not be walked.
pub type WalkError = String;

use nsimage_format::wire::{Bad, Cursor};

/// Reusable buffers for walking INODE records of one piece.
#[derive(Default)]
pub struct InodeScratch {
    /// The blocks of the file being walked, reused from record to record.
    pub blocks: Vec<Block>,
}

#[derive(Default)]
struct FileAcc<'a> {
    atime: u64,
    replication: u32,
    preferred_block_size: u64,
    storage_policy: u32,
    uc: Option<(&'a [u8], &'a [u8])>,
}

fn walk_block(b: &[u8]) -> Result<Block, Bad> {
    let mut w = Cursor::new(b);
    let mut blk = Block::default();
    if w.eat(tags::block::ID) {
        blk.id = w.varint()?;
    }
    if w.eat(tags::block::GENERATION_STAMP) {
        blk.generation_stamp = w.varint()?;
    }
    if w.eat(tags::block::LENGTH) {
        blk.length = w.varint()?;
    }
    while !w.done() {
        let (f, wt) = w.key()?;
        use fields::block as b;
        match f {
            b::ID | b::GENERATION_STAMP | b::LENGTH => {
                Cursor::expect_named(wt, VARINT, "wrong wire type in Block")?;
                let v = w.varint()?;
                match f {
                    b::ID => blk.id = v,
                    b::GENERATION_STAMP => blk.generation_stamp = v,
                    _ => blk.length = v,
                }
            }
            _ => w.skip(wt)?,
        }
    }
    Ok(blk)
}

fn walk_uc<'a>(b: &'a [u8], acc: &mut Option<(&'a [u8], &'a [u8])>) -> Result<(), Bad> {
    let (mut name, mut machine) = acc.unwrap_or((&[], &[]));
    let mut w = Cursor::new(b);
    while !w.done() {
        let (f, wt) = w.key()?;
        use fields::under_construction as u;
        match f {
            u::CLIENT_NAME | u::CLIENT_MACHINE => {
                Cursor::expect_named(wt, LEN, "wrong wire type in UnderConstruction")?;
                let v = w.bytes()?;
                if f == u::CLIENT_NAME {
                    name = v;
                } else {
                    machine = v;
                }
            }
            _ => w.skip(wt)?,
        }
    }
    *acc = Some((name, machine));
    Ok(())
}

fn walk_file<'a>(b: &'a [u8], acc: &mut FileAcc<'a>, blocks: &mut Vec<Block>) -> Result<(), Bad> {
    let mut w = Cursor::new(b);
    if w.eat(tags::file_attrs::ATIME) {
        acc.atime = w.varint()?;
    }
    if w.eat(tags::file_attrs::REPLICATION) {
        acc.replication = w.u32()?;
    }
    if w.eat(tags::file_attrs::PREFERRED_BLOCK_SIZE) {
        acc.preferred_block_size = w.varint()?;
    }
    while w.eat(tags::file_attrs::BLOCKS) {
        blocks.push(walk_block(w.bytes()?)?);
    }
    if w.eat(tags::file_attrs::STORAGE_POLICY) {
        acc.storage_policy = w.u32()?;
    }
    while !w.done() {
        let (f, wt) = w.key()?;
        use fields::file_attrs as fa;
        match f {
            fa::ATIME | fa::REPLICATION | fa::PREFERRED_BLOCK_SIZE | fa::STORAGE_POLICY => {
                Cursor::expect_named(wt, VARINT, "wrong wire type in FileAttrs")?;
                match f {
                    fa::ATIME => acc.atime = w.varint()?,
                    fa::REPLICATION => acc.replication = w.u32()?,
                    fa::PREFERRED_BLOCK_SIZE => acc.preferred_block_size = w.varint()?,
                    _ => acc.storage_policy = w.u32()?,
                }
            }
            fa::BLOCKS => {
                Cursor::expect_named(wt, LEN, "wrong wire type in FileAttrs.blocks")?;
                blocks.push(walk_block(w.bytes()?)?);
            }
            fa::UNDER_CONSTRUCTION => {
                Cursor::expect_named(wt, LEN, "wrong wire type in FileAttrs.under_construction")?;
                walk_uc(w.bytes()?, &mut acc.uc)?;
            }
            _ => w.skip(wt)?,
        }
    }
    Ok(())
}

fn walk_dir(b: &[u8], quotas: &mut (i64, i64)) -> Result<(), Bad> {
    let mut w = Cursor::new(b);
    while !w.done() {
        let (f, wt) = w.key()?;
        use fields::directory_attrs as d;
        match f {
            d::NS_QUOTA | d::DS_QUOTA => {
                Cursor::expect_named(wt, VARINT, "wrong wire type in DirectoryAttrs")?;
                // int64 on the wire: the two's complement bits.
                #[allow(clippy::cast_possible_wrap)]
                let v = w.varint()? as i64;
                if f == d::NS_QUOTA {
                    quotas.0 = v;
                } else {
                    quotas.1 = v;
                }
            }
            _ => w.skip(wt)?,
        }
    }
    Ok(())
}

fn walk_symlink<'a>(b: &'a [u8], target: &mut &'a [u8]) -> Result<(), Bad> {
    let mut w = Cursor::new(b);
    while !w.done() {
        let (f, wt) = w.key()?;
        match f {
            fields::symlink_attrs::TARGET => {
                Cursor::expect_named(wt, LEN, "wrong wire type in SymlinkAttrs")?;
                *target = w.bytes()?;
            }
            _ => w.skip(wt)?,
        }
    }
    Ok(())
}

#[cold]
fn walk_xattr(b: &[u8]) -> Result<XAttr, WalkError> {
    let mut w = Cursor::new(b);
    let (mut ns, mut name, mut value): (i32, u32, &[u8]) = (0, 0, &[]);
    while !w.done() {
        let (f, wt) = w.key()?;
        use fields::xattr as x;
        match f {
            x::NAMESPACE | x::NAME => {
                Cursor::expect_named(wt, VARINT, "wrong wire type in XAttr")?;
                if f == x::NAMESPACE {
                    ns = w.enum_i32()?;
                } else {
                    name = w.u32()?;
                }
            }
            x::VALUE => {
                Cursor::expect_named(wt, LEN, "wrong wire type in XAttr.value")?;
                value = w.bytes()?;
            }
            _ => w.skip(wt)?,
        }
    }
    let ns = xattr_ns(ns).map_err(|e| e.to_string())?;
    Ok(XAttr {
        ns,
        name,
        value: value.into(),
    })
}

#[cold]
fn walk_acl(b: &[u8]) -> Result<AclEntry, WalkError> {
    let mut w = Cursor::new(b);
    let (mut name, mut kind, mut scope, mut perm) = (0u32, 0i32, false, 0u32);
    while !w.done() {
        let (f, wt) = w.key()?;
        use fields::acl_entry as a;
        match f {
            a::NAME | a::TYPE | a::DEFAULT_SCOPE | a::PERMISSION => {
                Cursor::expect_named(wt, VARINT, "wrong wire type in AclEntry")?;
                match f {
                    a::NAME => name = w.u32()?,
                    a::TYPE => kind = w.enum_i32()?,
                    a::DEFAULT_SCOPE => scope = w.bool()?,
                    _ => perm = w.u32()?,
                }
            }
            _ => w.skip(wt)?,
        }
    }
    acl_entry(name, kind, scope, perm)
}

/// Range checks shared with the prost path.
pub fn acl_entry(
    name: u32,
    kind: i32,
    default_scope: bool,
    perm: u32,
) -> Result<AclEntry, WalkError> {
    if !(0..=3).contains(&kind) || perm > 7 {
        return Err(format!("ACL entry type {kind} perm {perm} out of range"));
    }
    Ok(AclEntry {
        name,
        // Both checked to be in 0..=7 above.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        kind: kind as u8,
        default_scope,
        #[allow(clippy::cast_possible_truncation)]
        perm: perm as u8,
    })
}

/// Range checks of the kind-specific part, shared with the prost path.
pub fn file_body(
    atime: u64,
    replication: u32,
    preferred_block_size: u64,
    storage_policy: u32,
    blocks: &[Block],
) -> Result<LoadedBody<'_>, WalkError> {
    Ok(LoadedBody::File {
        atime,
        replication: convert::replication(replication).map_err(|e| e.to_string())?,
        preferred_block_size,
        storage_policy: convert::storage_policy(storage_policy).map_err(|e| e.to_string())?,
        blocks,
    })
}

/// A directory's body, once its quotas are checked (-1 means none).
pub fn dir_body<'a>(ns_quota: i64, ds_quota: i64) -> Result<LoadedBody<'a>, WalkError> {
    if ns_quota < -1 || ds_quota < -1 {
        return Err("directory quota below -1".into());
    }
    Ok(LoadedBody::Directory { ns_quota, ds_quota })
}

/// The kind check shared with the prost path: the type must match exactly one
/// attribute group.
pub fn kind_error(id: u64, ty: i32, file: bool, dir: bool, link: bool) -> WalkError {
    format!(
        "inode {id} has type {ty} with {} attribute groups",
        u8::from(file)
            .saturating_add(u8::from(dir))
            .saturating_add(u8::from(link))
    )
}

/// Walks one `Inode` record.
pub fn inode<'a>(
    rec: &'a [u8],
    scratch: &'a mut InodeScratch,
) -> Result<LoadedNode<'a>, WalkError> {
    scratch.blocks.clear();
    let mut w = Cursor::new(rec);
    let (mut id, mut ty, mut name, mut perm, mut mtime) = (0u64, 0i32, &rec[..0], 0u64, 0u64);
    let mut file: Option<FileAcc<'a>> = None;
    let mut dir: Option<(i64, i64)> = None;
    let mut link: Option<&'a [u8]> = None;
    let mut extra: Option<Extra> = None;
    // The fields in the order the writer emits them; the loop below takes
    // whatever else comes, with the same semantics.
    if w.eat(tags::inode::ID) {
        id = w.varint()?;
    }
    if w.eat(tags::inode::TYPE) {
        ty = w.enum_i32()?;
    }
    if w.eat(tags::inode::NAME) {
        name = w.bytes()?;
    }
    if w.eat(tags::inode::PERMISSION) {
        perm = w.fixed64()?;
    }
    if w.eat(tags::inode::MTIME) {
        mtime = w.varint()?;
    }
    if w.eat(tags::inode::FILE) {
        let b = w.bytes()?;
        walk_file(
            b,
            file.get_or_insert_with(FileAcc::default),
            &mut scratch.blocks,
        )?;
    } else if w.eat(tags::inode::DIRECTORY) {
        walk_dir(w.bytes()?, dir.get_or_insert((0, 0)))?;
    }
    while !w.done() {
        let (f, wt) = w.key()?;
        use fields::inode as i;
        match f {
            i::ID | i::TYPE | i::MTIME => {
                Cursor::expect_named(wt, VARINT, "wrong wire type in Inode")?;
                match f {
                    i::ID => id = w.varint()?,
                    i::TYPE => ty = w.enum_i32()?,
                    _ => mtime = w.varint()?,
                }
            }
            i::NAME => {
                Cursor::expect_named(wt, LEN, "wrong wire type in Inode.name")?;
                name = w.bytes()?;
            }
            i::PERMISSION => {
                Cursor::expect_named(wt, FIXED64, "wrong wire type in Inode.permission")?;
                perm = w.fixed64()?;
            }
            i::FILE => {
                Cursor::expect_named(wt, LEN, "wrong wire type in Inode.file")?;
                let b = w.bytes()?;
                walk_file(
                    b,
                    file.get_or_insert_with(FileAcc::default),
                    &mut scratch.blocks,
                )?;
            }
            i::DIRECTORY => {
                Cursor::expect_named(wt, LEN, "wrong wire type in Inode.directory")?;
                walk_dir(w.bytes()?, dir.get_or_insert((0, 0)))?;
            }
            i::SYMLINK => {
                Cursor::expect_named(wt, LEN, "wrong wire type in Inode.symlink")?;
                walk_symlink(w.bytes()?, link.get_or_insert(&rec[..0]))?;
            }
            i::XATTRS => {
                Cursor::expect_named(wt, LEN, "wrong wire type in Inode.xattrs")?;
                let x = walk_xattr(w.bytes()?)?;
                extra.get_or_insert_with(Extra::default).xattrs.push(x);
            }
            i::ACL => {
                Cursor::expect_named(wt, LEN, "wrong wire type in Inode.acl")?;
                let a = walk_acl(w.bytes()?)?;
                extra.get_or_insert_with(Extra::default).acl.push(a);
            }
            _ => w.skip(wt)?,
        }
    }
    let body = match (InodeType::try_from(ty), &file, dir, link) {
        (Ok(InodeType::File), Some(f), None, None) => file_body(
            f.atime,
            f.replication,
            f.preferred_block_size,
            f.storage_policy,
            &scratch.blocks,
        )?,
        (Ok(InodeType::Directory), None, Some((n, d)), None) => dir_body(n, d)?,
        (Ok(InodeType::Symlink), None, None, Some(t)) => LoadedBody::Symlink { target: t },
        _ => {
            return Err(kind_error(
                id,
                ty,
                file.is_some(),
                dir.is_some(),
                link.is_some(),
            ))
        }
    };
    if let Some((n, m)) = file.and_then(|f| f.uc) {
        extra.get_or_insert_with(Extra::default).under_construction =
            Some(Box::new(UnderConstruction {
                client_name: n.into(),
                client_machine: m.into(),
            }));
    }
    Ok(LoadedNode {
        id,
        name,
        perm,
        mtime,
        body,
        extra,
    })
}

/// The id, type and name of one `Inode` record, the rest skipped (what a
/// streamed read's first pass needs; [`inode`] checks the whole record).
pub fn inode_head(rec: &[u8]) -> Result<(u64, i32, &[u8]), WalkError> {
    let mut w = Cursor::new(rec);
    let (mut id, mut ty, mut name) = (0u64, 0i32, &rec[..0]);
    while !w.done() {
        let (f, wt) = w.key()?;
        use fields::inode as i;
        match (f, wt) {
            (i::ID, VARINT) => id = w.varint()?,
            (i::TYPE, VARINT) => ty = w.enum_i32()?,
            (i::NAME, LEN) => name = w.bytes()?,
            (i::ID | i::TYPE | i::NAME, _) => {
                return Err(format!("Inode field {f} has wire type {wt}"))
            }
            _ => w.skip(wt)?,
        }
    }
    Ok((id, ty, name))
}

/// Checks one `DirEntry` record whole and returns its parent and its
/// children, read again from the record as the caller takes them: no
/// list of the children is made (a directory of millions of children
/// would otherwise need one, beside a whole namespace, at a load's peak).
pub fn dir_entry_lazy(rec: &[u8]) -> Result<(u64, DirChildren<'_>), WalkError> {
    let parent = walk_dir_entry(rec, |_| {})?;
    let children = DirChildren {
        fields: Cursor::new(rec),
        packed: None,
    };
    Ok((parent, children))
}

/// The children of a `DirEntry` record that [`dir_entry_lazy`] checked,
/// in the record's order.
pub struct DirChildren<'a> {
    fields: Cursor<'a>,
    /// The rest of the packed field being read.
    packed: Option<Cursor<'a>>,
}

impl Iterator for DirChildren<'_> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        use fields::dir_entry as d;
        // The record was checked whole: no read below fails (one that did
        // would end the children).
        loop {
            if let Some(p) = &mut self.packed {
                if !p.done() {
                    return p.varint().ok();
                }
                self.packed = None;
            }
            if self.fields.done() {
                return None;
            }
            let (f, wt) = self.fields.key().ok()?;
            match (f, wt) {
                (d::CHILDREN, VARINT) => return self.fields.varint().ok(),
                (d::CHILDREN, LEN) => self.packed = Some(Cursor::new(self.fields.bytes().ok()?)),
                _ => self.fields.skip(wt).ok()?,
            }
        }
    }
}

/// Walks one `DirEntry` record: returns the parent and fills `children`.
pub fn dir_entry(rec: &[u8], children: &mut Vec<u64>) -> Result<u64, WalkError> {
    children.clear();
    walk_dir_entry(rec, |c| children.push(c))
}

/// Walks one `DirEntry` record whole, handing each child to `child`;
/// returns the parent.
fn walk_dir_entry(rec: &[u8], mut child: impl FnMut(u64)) -> Result<u64, WalkError> {
    let mut w = Cursor::new(rec);
    let mut parent = 0;
    while !w.done() {
        let (f, wt) = w.key()?;
        use fields::dir_entry as d;
        match (f, wt) {
            (d::PARENT, VARINT) => parent = w.varint()?,
            (d::CHILDREN, VARINT) => child(w.varint()?),
            (d::CHILDREN, LEN) => {
                let mut p = Cursor::new(w.bytes()?);
                while !p.done() {
                    child(p.varint()?);
                }
            }
            (d::PARENT | d::CHILDREN, _) => {
                return Err(format!("DirEntry field {f} has wire type {wt}"))
            }
            _ => w.skip(wt)?,
        }
    }
    Ok(parent)
}
