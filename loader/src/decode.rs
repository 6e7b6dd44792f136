//! Decoding of one piece (a section, or one of its sub-sections) held in
//! memory. The serial and the parallel loader both call these functions; a
//! piece's bytes have had their checksum checked before they get here.

use nsimage_format::framing::Records;
use nsimage_format::model::{
    AclEntry, Block, DirBatch, Extra, InodeBatch, LoadedBody, LoadedNode, NamespaceBuilder, NsInfo,
    StringTable, UnderConstruction, XAttr, XAttrNs,
};
use nsimage_format::{pb, FormatError, Location, SubSectionInfo};
use prost::Message;

type Result<T> = std::result::Result<T, FormatError>;

fn bad(at: &Location, offset: u64, detail: impl Into<String>) -> FormatError {
    FormatError::corrupt(
        Location {
            offset,
            ..at.clone()
        },
        detail,
    )
}

/// Decodes a record into a reused message.
fn merge<M: Message + Default>(msg: &mut M, body: &[u8], at: &Location, off: u64) -> Result<()> {
    msg.clear();
    msg.merge(body)
        .map_err(|e| bad(at, off, format!("undecodable record: {e}")))
}

/// Checks the count and first key the index declared for a piece.
/// The first key is declared only for sub-sections (`at.sub_section` set).
fn check_piece(
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
    let mut n = 0;
    for r in Records::new(buf, at.clone()) {
        let (off, body) = r?;
        merge(&mut msg, body, at, off)?;
        n += 1;
    }
    if n != 1 {
        return Err(bad(
            at,
            piece.offset,
            format!("NS_INFO holds {n} records, not 1"),
        ));
    }
    check_piece(piece, at, n, None)?;
    Ok(NsInfo {
        namespace_id: msg.namespace_id,
        last_txid: msg.last_txid,
        last_inode_id: msg.last_inode_id,
        last_block_id: msg.last_block_id,
        generation_stamp: msg.generation_stamp,
        creation_time: msg.creation_time,
    })
}

/// The STRING_TABLE records, in id order.
pub fn strings(buf: &[u8], piece: &SubSectionInfo, at: &Location) -> Result<StringTable> {
    let mut table = StringTable::default();
    let mut msg = pb::StringEntry::default();
    let mut n = 0;
    for r in Records::new(buf, at.clone()) {
        let (off, body) = r?;
        merge(&mut msg, body, at, off)?;
        if msg.value.is_empty() || msg.value.len() > nsimage_format::consts::MAX_NAME_LENGTH {
            return Err(bad(at, off, format!("string of {} bytes", msg.value.len())));
        }
        if !table.push_loaded(&msg.value) {
            return Err(bad(at, off, "duplicate string, or string table full"));
        }
        n += 1;
    }
    check_piece(piece, at, n, None)?;
    Ok(table)
}

fn u16_field(v: u32, what: &str, at: &Location, off: u64) -> Result<u16> {
    u16::try_from(v).map_err(|_| bad(at, off, format!("{what} {v} out of range")))
}

fn extra_of(msg: &pb::Inode, at: &Location, off: u64) -> Result<Option<Extra>> {
    let uc = msg
        .file
        .as_ref()
        .and_then(|f| f.under_construction.as_ref());
    if msg.xattrs.is_empty() && msg.acl.is_empty() && uc.is_none() {
        return Ok(None);
    }
    let mut e = Extra::default();
    for x in &msg.xattrs {
        let ns = u32::try_from(x.namespace)
            .ok()
            .and_then(XAttrNs::from_u32)
            .ok_or_else(|| bad(at, off, format!("unknown xattr namespace {}", x.namespace)))?;
        e.xattrs.push(XAttr {
            ns,
            name: x.name,
            value: x.value.as_slice().into(),
        });
    }
    for a in &msg.acl {
        if !(0..=3).contains(&a.r#type) || a.permission > 7 {
            return Err(bad(
                at,
                off,
                format!(
                    "ACL entry type {} perm {} out of range",
                    a.r#type, a.permission
                ),
            ));
        }
        e.acl.push(AclEntry {
            name: a.name,
            kind: a.r#type as u8,
            default_scope: a.default_scope,
            perm: a.permission as u8,
        });
    }
    e.under_construction = uc.map(|u| UnderConstruction {
        client_name: u.client_name.as_slice().into(),
        client_machine: u.client_machine.as_slice().into(),
    });
    Ok(Some(e))
}

/// The records of one INODE piece into a batch filling arena chunk `chunk`.
pub fn inodes(
    buf: &[u8],
    piece: &SubSectionInfo,
    at: &Location,
    strings: &StringTable,
    chunk: u32,
) -> Result<InodeBatch> {
    // Capacity bound by the piece's bytes (already read), not by a count.
    let cap = (piece.records as usize).min(buf.len());
    let mut batch = InodeBatch::new(chunk, cap, buf.len());
    let mut msg = pb::Inode::default();
    let mut blocks: Vec<Block> = Vec::new();
    let mut first = None;
    for r in Records::new(buf, at.clone()) {
        let (off, body) = r?;
        merge(&mut msg, body, at, off)?;
        first.get_or_insert(msg.id);
        let kind = pb::InodeType::try_from(msg.r#type).unwrap_or(pb::InodeType::Unspecified);
        let attrs = (msg.file.is_some() as u8)
            + (msg.directory.is_some() as u8)
            + (msg.symlink.is_some() as u8);
        let body = match (kind, &msg.file, &msg.directory, &msg.symlink) {
            (pb::InodeType::File, Some(f), None, None) => {
                blocks.clear();
                blocks.extend(f.blocks.iter().map(|b| Block {
                    id: b.id,
                    generation_stamp: b.generation_stamp,
                    length: b.length,
                }));
                LoadedBody::File {
                    atime: f.atime,
                    replication: u16_field(f.replication, "replication", at, off)?,
                    preferred_block_size: f.preferred_block_size,
                    storage_policy: u8::try_from(f.storage_policy).map_err(|_| {
                        bad(
                            at,
                            off,
                            format!("storage policy {} out of range", f.storage_policy),
                        )
                    })?,
                    blocks: &blocks,
                }
            }
            (pb::InodeType::Directory, None, Some(d), None) => {
                if d.ns_quota < -1 || d.ds_quota < -1 {
                    return Err(bad(at, off, "directory quota below -1"));
                }
                LoadedBody::Directory {
                    ns_quota: d.ns_quota,
                    ds_quota: d.ds_quota,
                }
            }
            (pb::InodeType::Symlink, None, None, Some(s)) => {
                LoadedBody::Symlink { target: &s.target }
            }
            _ => {
                return Err(bad(
                    at,
                    off,
                    format!(
                        "inode {} has type {} with {attrs} attribute groups",
                        msg.id, msg.r#type
                    ),
                ))
            }
        };
        let extra = extra_of(&msg, at, off)?;
        batch
            .push(
                LoadedNode {
                    id: msg.id,
                    name: &msg.name,
                    perm: msg.permission,
                    mtime: msg.mtime,
                    body,
                    extra,
                },
                strings,
            )
            .map_err(|d| bad(at, off, d))?;
    }
    check_piece(piece, at, batch.len() as u64, first)?;
    Ok(batch)
}

/// The records of one INODE_DIR piece into a batch filling arena chunk `chunk`.
pub fn dirs(
    buf: &[u8],
    piece: &SubSectionInfo,
    at: &Location,
    builder: &NamespaceBuilder,
    chunk: u32,
) -> Result<DirBatch> {
    let mut batch = DirBatch::new(chunk, buf.len());
    let mut msg = pb::DirEntry::default();
    let mut first = None;
    let mut n = 0;
    for r in Records::new(buf, at.clone()) {
        let (off, body) = r?;
        merge(&mut msg, body, at, off)?;
        first.get_or_insert(msg.parent);
        batch
            .push(builder, msg.parent, msg.children.iter().copied())
            .map_err(|d| bad(at, off, d))?;
        n += 1;
    }
    check_piece(piece, at, n, first)?;
    Ok(batch)
}
