//! The hand-written encoder of the hot path: INODE records of inodes
//! without rare attributes, and INODE_DIR records, written straight from
//! the model with lengths computed arithmetically (prost computes nested
//! lengths again at every level). It produces exactly prost's canonical
//! encoding of the same message; the tests below compare the two byte for
//! byte. Inodes with xattrs, ACLs or under-construction info go through
//! prost.

use crate::strings::StringMap;
use nsimage_format::pb::InodeType;
use nsimage_format::wire::tags;
use nsimage_format::wire::varint::{put_varint, varint_len};
use nsimage_namespace::{Attrs, Block, Inode, Namespace};

/// Length of a varint field (key + value), zero when proto3 omits it.
#[inline]
fn vfield_len(v: u64) -> usize {
    if v == 0 {
        0
    } else {
        1 + varint_len(v)
    }
}

#[inline]
fn put_vfield(out: &mut Vec<u8>, key: u8, v: u64) {
    if v != 0 {
        out.push(key);
        put_varint(out, v);
    }
}

#[inline]
fn bytes_len(b: &[u8]) -> usize {
    if b.is_empty() {
        0
    } else {
        1 + varint_len(b.len() as u64) + b.len()
    }
}

#[inline]
fn put_bytes(out: &mut Vec<u8>, key: u8, b: &[u8]) {
    if !b.is_empty() {
        out.push(key);
        put_varint(out, b.len() as u64);
        out.extend_from_slice(b);
    }
}

#[inline]
fn block_len(b: &Block) -> usize {
    vfield_len(b.id) + vfield_len(b.generation_stamp) + vfield_len(b.length)
}

/// Most blocks of a file decoded on the stack, once for both passes of
/// [`put_inode`]; a file with more goes through a vector.
const STACK_BLOCKS: usize = 16;

/// A file's blocks decoded once (the namespace keeps them as varints):
/// into `small` when they fit, else into `big`.
#[inline]
fn decoded<'b>(
    attrs: &Attrs<'_>,
    small: &'b mut [Block; STACK_BLOCKS],
    big: &'b mut Vec<Block>,
) -> &'b [Block] {
    let Attrs::File(f) = attrs else {
        return &[];
    };
    let n = f.blocks.len();
    if n <= STACK_BLOCKS {
        for (s, b) in small.iter_mut().zip(f.blocks) {
            *s = b;
        }
        &small[..n]
    } else {
        big.extend(f.blocks);
        big
    }
}

/// The type, written permission (string ids rewritten by `strings`), body
/// length and message length of the INODE record of `n`, whose attributes
/// are `attrs` and blocks `blocks`; `None` for an inode with rare
/// attributes (encoded by prost) or a free slot.
#[inline]
fn inode_lens(
    n: &Inode<'_>,
    attrs: &Attrs<'_>,
    blocks: &[Block],
    strings: &StringMap,
) -> Option<(InodeType, u64, usize, usize)> {
    if n.extra().is_some() {
        return None;
    }
    let (ty, sub_len) = match *attrs {
        Attrs::File(f) => {
            let blocks: usize = blocks
                .iter()
                .map(|b| {
                    let l = block_len(b);
                    1 + varint_len(l as u64) + l
                })
                .sum();
            let l = vfield_len(f.atime)
                + vfield_len(u64::from(f.replication))
                + vfield_len(f.preferred_block_size)
                + blocks
                + vfield_len(u64::from(f.storage_policy));
            (InodeType::File, l)
        }
        Attrs::Directory { ns_quota, ds_quota } => (
            InodeType::Directory,
            vfield_len(ns_quota.cast_unsigned()) + vfield_len(ds_quota.cast_unsigned()),
        ),
        Attrs::Symlink { target } => (InodeType::Symlink, bytes_len(target)),
    };
    let perm = strings.perm(n.perm());
    let len = vfield_len(n.id())
        + vfield_len(ty as u64)
        + bytes_len(n.name())
        + if perm != 0 { 9 } else { 0 }
        + vfield_len(n.mtime())
        + 1
        + varint_len(sub_len as u64)
        + sub_len;
    Some((ty, perm, sub_len, len))
}

/// Framed length of the INODE record [`put_inode`] would write for `n`
/// (`None` where it would write nothing).
pub fn inode_record_len(n: &Inode<'_>, strings: &StringMap) -> Option<usize> {
    let attrs = n.attrs();
    let (mut small, mut big) = ([Block::default(); STACK_BLOCKS], Vec::new());
    let blocks = decoded(&attrs, &mut small, &mut big);
    inode_lens(n, &attrs, blocks, strings).map(|(_, _, _, len)| varint_len(len as u64) + len)
}

/// Appends the framed INODE record of `n`, its string ids rewritten by
/// `strings`; `false` (nothing written) for an inode with rare attributes,
/// which the caller encodes with prost.
pub fn put_inode(n: &Inode<'_>, strings: &StringMap, out: &mut Vec<u8>) -> bool {
    let attrs = n.attrs();
    let (mut small, mut big) = ([Block::default(); STACK_BLOCKS], Vec::new());
    let blocks = decoded(&attrs, &mut small, &mut big);
    let Some((ty, perm, sub_len, len)) = inode_lens(n, &attrs, blocks, strings) else {
        return false;
    };
    let name = n.name();
    out.reserve(len + 10);
    put_varint(out, len as u64);
    put_vfield(out, tags::inode::ID, n.id());
    put_vfield(out, tags::inode::TYPE, ty as u64);
    put_bytes(out, tags::inode::NAME, name);
    if perm != 0 {
        out.push(tags::inode::PERMISSION);
        out.extend_from_slice(&perm.to_le_bytes());
    }
    put_vfield(out, tags::inode::MTIME, n.mtime());
    match attrs {
        Attrs::File(f) => {
            out.push(tags::inode::FILE);
            put_varint(out, sub_len as u64);
            put_vfield(out, tags::file_attrs::ATIME, f.atime);
            put_vfield(out, tags::file_attrs::REPLICATION, u64::from(f.replication));
            put_vfield(
                out,
                tags::file_attrs::PREFERRED_BLOCK_SIZE,
                f.preferred_block_size,
            );
            for b in blocks {
                out.push(tags::file_attrs::BLOCKS);
                put_varint(out, block_len(b) as u64);
                put_vfield(out, tags::block::ID, b.id);
                put_vfield(out, tags::block::GENERATION_STAMP, b.generation_stamp);
                put_vfield(out, tags::block::LENGTH, b.length);
            }
            put_vfield(
                out,
                tags::file_attrs::STORAGE_POLICY,
                u64::from(f.storage_policy),
            );
        }
        Attrs::Directory { ns_quota, ds_quota } => {
            out.push(tags::inode::DIRECTORY);
            put_varint(out, sub_len as u64);
            // int64 on the wire: the two's complement bits.
            put_vfield(
                out,
                tags::directory_attrs::NS_QUOTA,
                ns_quota.cast_unsigned(),
            );
            put_vfield(
                out,
                tags::directory_attrs::DS_QUOTA,
                ds_quota.cast_unsigned(),
            );
        }
        Attrs::Symlink { target } => {
            out.push(tags::inode::SYMLINK);
            put_varint(out, sub_len as u64);
            put_bytes(out, tags::symlink_attrs::TARGET, target);
        }
    }
    true
}

/// Framed length of the INODE_DIR record [`put_dir`] writes for `n`.
pub fn dir_record_len(ns: &Namespace, n: &Inode<'_>) -> usize {
    dir_ids_len(n.id(), n.child_slots().iter().map(|c| ns.id_of(c)))
}

/// Framed length of the INODE_DIR record [`put_dir_ids`] writes.
pub fn dir_ids_len(parent: u64, children: impl Iterator<Item = u64>) -> usize {
    let packed: usize = children.map(varint_len).sum();
    let len = vfield_len(parent) + 1 + varint_len(packed as u64) + packed;
    varint_len(len as u64) + len
}

/// Appends the framed INODE_DIR record of directory `n` (with children).
pub fn put_dir(ns: &Namespace, n: &Inode<'_>, ids: &mut Vec<u64>, out: &mut Vec<u8>) {
    ids.clear();
    ids.extend(n.child_slots().iter().map(|c| ns.id_of(c)));
    put_dir_ids(out, n.id(), ids.iter().copied());
}

/// Appends the framed INODE_DIR record of directory `parent` whose
/// children are `children` (ids, in name order).
pub fn put_dir_ids(out: &mut Vec<u8>, parent: u64, children: impl Iterator<Item = u64> + Clone) {
    let packed: usize = children.clone().map(varint_len).sum();
    let len = vfield_len(parent) + 1 + varint_len(packed as u64) + packed;
    out.reserve(len + 10);
    put_varint(out, len as u64);
    put_vfield(out, tags::dir_entry::PARENT, parent);
    out.push(tags::dir_entry::CHILDREN);
    put_varint(out, packed as u64);
    for c in children {
        put_varint(out, c);
    }
}

/// Appends the framed `NameEntry` record (the bytes prost writes: fields in
/// number order, zero values omitted) of one child of `parent`.
pub fn put_name_entry(out: &mut Vec<u8>, parent: u64, name: &[u8], child: u64, ty: InodeType) {
    let ty = ty as u64;
    let len = vfield_len(parent) + bytes_len(name) + vfield_len(child) + vfield_len(ty);
    put_varint(out, len as u64);
    put_vfield(out, tags::name_entry::PARENT, parent);
    put_bytes(out, tags::name_entry::NAME, name);
    put_vfield(out, tags::name_entry::CHILD, child);
    put_vfield(out, tags::name_entry::TYPE, ty);
}
