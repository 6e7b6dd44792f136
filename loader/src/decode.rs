//! Decoding of one piece (a section, or one of its sub-sections) held in
//! memory. The serial and the parallel loader both call these functions; a
//! piece's bytes have had their checksum checked before they get here, or
//! (INODE pieces stored plain) have it checked as they are decoded.

#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use crate::ahead::Ahead;
use crate::record;
use crate::source::checksum_mismatch;
use nsimage_format::framing::Records;
use nsimage_format::wire::{self, schema, Ty};
use nsimage_format::{pb, FormatError, Location, SubSectionInfo};
use nsimage_namespace::{
    Block, DirBatch, Extra, InodeBatch, Interned, LoadedBody, LoadedNode, NamespaceBuilder,
    NodeSink, NsInfo, StringTable, UnderConstruction, XAttr,
};
use prost::Message;

type Result<T> = std::result::Result<T, FormatError>;

/// The INODE section's first record is the root directory (FORMAT.md,
/// "INODE"): any other id there, smaller or larger, is refused with that
/// rule, before the record's other rules (which depend on whether it is the
/// root) are applied.
pub(crate) fn check_root(id: u64, at: &Location, offset: u64) -> Result<()> {
    if id != nsimage_format::ROOT_ID {
        return Err(bad(
            at,
            offset,
            format!(
                "the first inode is {id}, not the root directory {}",
                nsimage_format::ROOT_ID
            ),
        ));
    }
    Ok(())
}

pub(crate) fn bad(at: &Location, offset: u64, detail: impl Into<String>) -> FormatError {
    FormatError::corrupt(
        Location {
            offset,
            ..at.clone()
        },
        detail,
    )
}

/// Decodes a record into a reused message, after checking it against the
/// wire rules of FORMAT.md (which prost alone does not enforce).
pub(crate) fn merge<M: Message + Default>(
    msg: &mut M,
    schema: &[(u32, Ty)],
    body: &[u8],
    at: &Location,
    off: u64,
) -> Result<()> {
    wire::check(body, schema).map_err(|e| bad(at, off, format!("undecodable record: {e}")))?;
    msg.clear();
    msg.merge(body)
        .map_err(|e| bad(at, off, format!("undecodable record: {e}")))
}

/// Checks the count and first key the index declared for a piece.
/// The first key is declared only for sub-sections (`at.sub_section` set).
pub(crate) fn check_piece(
    piece: &SubSectionInfo,
    at: &Location,
    records: u64,
    first_key: Option<u64>,
) -> Result<()> {
    let keyed = at.sub_section.is_some();
    if records != piece.records {
        return Err(bad(
            at,
            piece.offset,
            format!(
                "index declares {} records, the bytes hold {records}",
                piece.records
            ),
        ));
    }
    if keyed && first_key.is_some_and(|k| k != piece.first_key) {
        return Err(bad(
            at,
            piece.offset,
            format!(
                "index declares first key {}, the first record has {:?}",
                piece.first_key, first_key
            ),
        ));
    }
    Ok(())
}

/// The single NS_INFO record.
pub fn ns_info(buf: &[u8], piece: &SubSectionInfo, at: &Location) -> Result<NsInfo> {
    let mut msg = pb::NsInfo::default();
    let mut n: u64 = 0;
    for r in Records::new(buf, at.clone()) {
        let (off, body) = r?;
        merge(&mut msg, schema::NS_INFO, body, at, off)?;
        n = n.saturating_add(1);
    }
    if n != 1 {
        return Err(bad(
            at,
            piece.offset,
            format!("NS_INFO holds {n} records, not 1"),
        ));
    }
    check_piece(piece, at, n, None)?;
    Ok(NsInfo::from(&msg))
}

/// The STRING_TABLE records, in id order.
pub fn strings(buf: &[u8], piece: &SubSectionInfo, at: &Location) -> Result<StringTable> {
    let mut table = StringTable::default();
    let mut msg = pb::StringEntry::default();
    let mut n: u64 = 0;
    for r in Records::new(buf, at.clone()) {
        let (off, body) = r?;
        merge(&mut msg, schema::STRING_ENTRY, body, at, off)?;
        if msg.value.is_empty() || msg.value.len() > nsimage_format::consts::MAX_NAME_LENGTH {
            return Err(bad(at, off, format!("string of {} bytes", msg.value.len())));
        }
        if !table.push_loaded(&msg.value) {
            return Err(bad(at, off, "duplicate string, or string table full"));
        }
        n = n.saturating_add(1);
    }
    check_piece(piece, at, n, None)?;
    Ok(table)
}

/// Converts a prost-decoded `Inode` into a loader record, with the same
/// checks as the walker (the streaming baseline and the differential tests
/// use it).
pub fn loaded_from_pb<'m>(
    msg: &'m pb::Inode,
    blocks: &'m mut Vec<Block>,
) -> std::result::Result<LoadedNode<'m>, String> {
    blocks.clear();
    let body = match (
        pb::InodeType::try_from(msg.r#type),
        &msg.file,
        &msg.directory,
        &msg.symlink,
    ) {
        (Ok(pb::InodeType::File), Some(f), None, None) => {
            blocks.extend(f.blocks.iter().map(Block::from));
            record::file_body(
                f.atime,
                f.replication,
                f.preferred_block_size,
                f.storage_policy,
                blocks,
            )?
        }
        (Ok(pb::InodeType::Directory), None, Some(d), None) => {
            record::dir_body(d.ns_quota, d.ds_quota)?
        }
        (Ok(pb::InodeType::Symlink), None, None, Some(s)) => {
            LoadedBody::Symlink { target: &s.target }
        }
        _ => {
            return Err(record::kind_error(
                msg.id,
                msg.r#type,
                msg.file.is_some(),
                msg.directory.is_some(),
                msg.symlink.is_some(),
            ))
        }
    };
    let uc = msg
        .file
        .as_ref()
        .and_then(|f| f.under_construction.as_ref());
    let extra = if msg.xattrs.is_empty() && msg.acl.is_empty() && uc.is_none() {
        None
    } else {
        let mut e = Extra::default();
        for x in &msg.xattrs {
            e.xattrs
                .push(XAttr::try_from(x).map_err(|e| e.to_string())?);
        }
        for a in &msg.acl {
            e.acl.push(record::acl_entry(
                a.name,
                a.r#type,
                a.default_scope,
                a.permission,
            )?);
        }
        e.under_construction = uc.map(|u| Box::new(UnderConstruction::from(u)));
        Some(e)
    };
    Ok(LoadedNode {
        id: msg.id,
        name: &msg.name,
        perm: msg.permission,
        mtime: msg.mtime,
        body,
        extra,
    })
}

/// The records of one INODE piece into a batch filling arena chunk `chunk`,
/// through the zero-copy walker. Loads go through [`inodes_into`]; this is
/// the benches' view of the decoder alone.
#[cfg_attr(not(feature = "bench-internals"), allow(dead_code))]
pub fn inodes(
    buf: &[u8],
    piece: &SubSectionInfo,
    at: &Location,
    tables: &Interned,
    chunk: u32,
    mut nodes: Vec<nsimage_namespace::Node>,
) -> Result<InodeBatch> {
    nodes.clear();
    // Capacity bound by the piece's bytes (already read), not by a count.
    nodes.reserve(usize::try_from(piece.records).map_or(buf.len(), |r| r.min(buf.len())));
    inodes_into(buf, piece, at, tables, chunk, nodes, false)
}

/// [`inodes`] with the nodes going to `sink` (a node table's slots, written
/// in place), checking the piece's checksum too when `check` is set: over
/// each record's bytes just before it is decoded (64 KiB at a time), the whole
/// piece compared before the batch is returned. Bytes that do not hash to
/// the index's checksum are reported as such, whatever else is wrong with
/// them; the caller keeps nothing of a failed batch.
pub fn inodes_into<S: NodeSink>(
    buf: &[u8],
    piece: &SubSectionInfo,
    at: &Location,
    tables: &Interned,
    chunk: u32,
    sink: S,
    check: bool,
) -> Result<InodeBatch<S>> {
    inodes_visiting(buf, piece, at, tables, chunk, sink, check, |_, _, _| Ok(()))
}

/// [`inodes_into`], calling `visit` with each record and its offset just
/// before the batch takes it (and checks the rest of what a load checks):
/// what a reader that streams the image sees of each inode. A record the
/// batch then refuses fails the whole piece.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn inodes_visiting<S: NodeSink>(
    buf: &[u8],
    piece: &SubSectionInfo,
    at: &Location,
    tables: &Interned,
    chunk: u32,
    sink: S,
    check: bool,
    mut visit: impl FnMut(&nsimage_namespace::LoadedNode<'_>, u64, &Location) -> Result<()>,
) -> Result<InodeBatch<S>> {
    let mut batch = InodeBatch::with_sink(chunk, sink, buf.len());
    let mut scratch = record::InodeScratch::default();
    let mut ahead = check.then(|| Ahead::new(buf));
    let mut first = None;
    let mut records = Records::new(buf, at.clone());
    let decoded = (|| {
        while let Some(r) = records.next() {
            if let Some(a) = ahead.as_mut() {
                a.reach(records.position());
            }
            let (off, body) = r?;
            let node = record::inode(body, &mut scratch).map_err(|d| bad(at, off, d))?;
            if first.is_none() {
                // The section's first record is the root (FORMAT.md,
                // "INODE"), whatever its id: said before any rule of the
                // record that depends on it being the root.
                if chunk == 0 {
                    check_root(node.id, at, off)?;
                }
                first = Some(node.id);
            }
            visit(&node, off, at)?;
            batch.push(node, tables).map_err(|d| bad(at, off, d))?;
        }
        check_piece(piece, at, batch.len() as u64, first)
    })();
    if let Some(a) = ahead {
        let computed = a.finish();
        if computed != piece.checksum {
            return Err(checksum_mismatch(piece, at, computed));
        }
    }
    decoded.map(|()| batch)
}

/// The records of one INODE_DIR piece into a batch filling arena chunk `chunk`.
pub fn dirs(
    buf: &[u8],
    piece: &SubSectionInfo,
    at: &Location,
    builder: &NamespaceBuilder,
    chunk: u32,
) -> Result<DirBatch> {
    // Sized from the index's count, bounded by what the piece can hold (a
    // record whose parent is an inode takes at least 5 bytes: its length,
    // the parent's tag and id, a child's): a hint, which the batch does
    // not insist on and the vector grows past if it must. Lists, when
    // there are any, from a few bytes a child.
    let dirs = usize::try_from(piece.records)
        .unwrap_or(usize::MAX)
        .min(buf.len() / 5);
    let mut batch = DirBatch::new(chunk, dirs, buf.len() / 4);
    let mut first = None;
    let mut n: u64 = 0;
    for r in Records::new(buf, at.clone()) {
        let (off, body) = r?;
        let (parent, children) = record::dir_entry_lazy(body).map_err(|d| bad(at, off, d))?;
        first.get_or_insert(parent);
        batch
            .push(builder, parent, children)
            .map_err(|d| bad(at, off, d.to_string()))?;
        n = n.saturating_add(1);
    }
    check_piece(piece, at, n, first)?;
    batch.shrink_to_fit();
    Ok(batch)
}
