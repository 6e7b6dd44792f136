//! [`write_hdfs_image`]: a namespace as a Hadoop fsimage, section by
//! section in the order Hadoop's saver writes them
//! (`FSImageFormatProtobuf.Saver.saveInternal`):
//!
//! `HDFSIMG1`, NS_INFO, ERASURE_CODING (layout -64 and later), INODE,
//! INODE_DIR, FILES_UNDERCONSTRUCTION, SNAPSHOT, SNAPSHOT_DIFF (only
//! before -64, with the root's empty diff list: Hadoop 3 skips it without
//! snapshots), INODE_REFERENCE,
//! SECRET_MANAGER, CACHE_MANAGER, STRING_TABLE; with a codec, an empty
//! stream; then the varint-delimited FileSummary and its length as a
//! 4-byte big-endian integer.

use super::batch::{encode_in_order, Encoded};
use super::carry::Carried;
use super::inodes::{dir_entry, inode_message};
use super::options::{
    HdfsCodec, HdfsWriteOptions, ERASURE_CODING_LAYOUT_VERSION,
    EXPANDED_STRING_TABLE_LAYOUT_VERSION, NEWEST_LAYOUT_VERSION, OLDEST_LAYOUT_VERSION,
    ONDISK_VERSION,
};
use super::serials::Serials;
use super::sink::ImageSink;
use super::summary::{HdfsSection, HdfsWritten};
use nsimage_format::hdfs::fields::files_under_construction_section::file_under_construction_entry as uc_f;
use nsimage_format::hdfs::fields::string_table_section::entry as entry_f;
use nsimage_format::hdfs::SnapshotCarry;
use nsimage_format::hdfs_pb::i_node_directory_section::DirEntry;
use nsimage_format::hdfs_pb::snapshot_diff_section::{diff_entry, DiffEntry};
use nsimage_format::hdfs_pb::{
    file_summary, CacheManagerSection, ErasureCodingSection, FileSummary, INodeSection,
    NameSystemSection, SecretManagerSection, SnapshotSection, StringTableSection,
};
use nsimage_namespace::{InodeKind, Namespace};
use prost::encoding::{encode_key, encode_varint, WireType};
use prost::Message;
use std::io::{self, Write};

/// The first eight bytes of every protobuf fsimage.
pub const HDFS_MAGIC: &[u8; 8] = b"HDFSIMG1";

/// Hadoop's legacy (v1) generation stamp of a namespace that never had
/// one: `GenerationStamp.LAST_RESERVED_STAMP`.
const LEGACY_GENSTAMP: u64 = 1000;

/// `lastAllocatedStripedBlockId` of a namespace without striped blocks:
/// Java's `Long.MIN_VALUE` as the uint64 field holds it.
const NO_STRIPED_BLOCK_ID: u64 = 1 << 63;

/// Hands encoded records to the sink; with sub-sections (`per` given),
/// cuts one named `sub` each time the records' weights since the last cut
/// reach `per`, as Hadoop's saver cuts after every `per` inodes (INODE) or
/// once `per` children have been written (INODE_DIR).
fn feed<W: Write>(
    sink: &mut ImageSink<W>,
    e: &Encoded,
    per: Option<u64>,
    acc: &mut u64,
    sub: &str,
) -> io::Result<()> {
    let Some(per) = per else {
        return sink.append(&e.bytes);
    };
    let mut from = 0;
    for (&end, &w) in e.ends.iter().zip(&e.weights) {
        *acc += w;
        if *acc >= per {
            sink.append(&e.bytes[from..end])?;
            sink.cut_sub(sub)?;
            from = end;
            *acc = 0;
        }
    }
    sink.append(&e.bytes[from..])
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// Writes `ns` to `out` as a Hadoop fsimage (magic `HDFSIMG1`) that a
/// Hadoop NameNode and `hdfs oiv` load, streaming: memory stays bounded
/// whatever the namespace's size, and the MD5 of the file is computed as
/// bytes go out ([`HdfsWritten::md5`], what the `.md5` sidecar holds).
///
/// `out` gets many mid-sized writes; a file needs no `BufWriter`.
///
/// What is written where the namespace has nothing to say: the legacy
/// generation stamp 1000 and its limit 0 (a namespace that never had v1
/// stamps), no striped block id (`Long.MIN_VALUE`), no erasure coding
/// policies (the NameNode keeps its configured ones), no snapshots, no
/// delegation keys or tokens, no cache pools; a symlink's access time is
/// its modification time (Hadoop gives a new link both). Client names of
/// files under construction are `string` fields: bytes that are not UTF-8
/// are written lossily (paths and string table entries are written as
/// the bytes they are).
///
/// With a codec and sub-sections, each sub-section is its own stream, so
/// that a reader decodes them in parallel. Hadoop itself never writes
/// that combination (its saver turns sub-sections off when
/// `dfs.image.compress` is set); its loader then reads the parent
/// sections serially, and its decompressor streams read the sub-sections'
/// streams one after another.
///
/// Errors: `out`'s I/O errors, and [`io::ErrorKind::InvalidInput`] when
/// the options ask for a layout version outside
/// [`OLDEST_LAYOUT_VERSION`]..=[`NEWEST_LAYOUT_VERSION`] or the
/// namespace holds what that layout or Hadoop's fields cannot (a namespace
/// id over 32 bits, a `raw.` xattr before -59, more than 2^24 - 1 strings
/// of one kind, xattrs or an ACL on a symlink).
pub fn write_hdfs_image<W: Write>(
    ns: &Namespace,
    out: W,
    opts: &HdfsWriteOptions,
) -> io::Result<HdfsWritten> {
    write_hdfs_image_with_carry(ns, out, opts, None)
}

/// [`write_hdfs_image`], with the snapshots of the Hadoop image `ns` came
/// from put back (`carry`, as the loader or an nsimage image's
/// HDFS_SNAPSHOTS section gives it): the snapshot-only inodes in INODE
/// among the namespace's, in id order (`numInodes` counts them), their
/// directory entries in INODE_DIR by parent, the refChildren of the
/// namespace's directories as references (those children no longer listed
/// plainly), and SNAPSHOT, SNAPSHOT_DIFF and INODE_REFERENCE from the
/// carry's records, every string id renumbered into this image's string
/// table (which holds the carry's strings too). With `None` it is
/// `write_hdfs_image`.
///
/// # Errors
/// As [`write_hdfs_image`]; [`io::ErrorKind::InvalidInput`] also when the
/// carry does not fit the namespace (a snapshot-only inode with a
/// namespace inode's id, a string or reference index past its lists).
pub fn write_hdfs_image_with_carry<W: Write>(
    ns: &Namespace,
    out: W,
    opts: &HdfsWriteOptions,
    carry: Option<&SnapshotCarry>,
) -> io::Result<HdfsWritten> {
    let lv = opts.layout_version;
    if !(NEWEST_LAYOUT_VERSION..=OLDEST_LAYOUT_VERSION).contains(&lv) {
        return Err(invalid(format!(
            "layout version {lv} is not one the HDFS writer knows ({OLDEST_LAYOUT_VERSION} to {NEWEST_LAYOUT_VERSION})"
        )));
    }
    let info = ns.info();
    let namespace_id = u32::try_from(info.namespace_id).map_err(|_| {
        invalid(format!(
            "namespace id {} does not fit Hadoop's 32-bit namespaceId",
            info.namespace_id
        ))
    })?;
    let carried = match carry {
        Some(c) => Some(Carried::prepare(ns, c, opts.mask_bits())?),
        None => None,
    };
    let collected;
    let serials = match &carried {
        Some(c) => &c.serials,
        None => {
            collected = Serials::collect(ns, opts.mask_bits())?;
            &collected
        }
    };
    let carried = carried.as_ref();
    let inodes = ns.stats().inodes;
    let per_sub = opts.inodes_per_sub_section(inodes);

    let mut sink = ImageSink::new(out, opts.codec);
    sink.write_raw(HDFS_MAGIC)?;

    let hadoop3 = opts.has(ERASURE_CODING_LAYOUT_VERSION);
    write_ns_info(&mut sink, ns, namespace_id, hadoop3)?;
    let written = write_inodes(&mut sink, ns, opts, serials, carried, inodes, per_sub)?;
    let dir_entries = write_inode_dirs(&mut sink, ns, carried, per_sub, opts.dir_entry_children)?;
    let under_construction = write_under_construction(&mut sink, ns)?;
    write_snapshot_sections(&mut sink, ns, carried, hadoop3)?;
    write_managers(&mut sink)?;
    write_string_table(&mut sink, ns, opts, serials, carried)?;
    let (md5, bytes, sections, summary_offset) =
        write_summary(sink, opts.layout_version, opts.codec)?;
    Ok(HdfsWritten {
        md5,
        bytes,
        sections,
        summary_offset,
        inodes: written,
        dir_entries,
        under_construction,
        strings: serials.count(),
    })
}

/// NS_INFO and, from Hadoop 3's layout on (`hadoop3`), ERASURE_CODING.
fn write_ns_info<W: Write>(
    sink: &mut ImageSink<W>,
    ns: &Namespace,
    namespace_id: u32,
    hadoop3: bool,
) -> io::Result<()> {
    let info = ns.info();
    // NS_INFO.
    sink.record(&NameSystemSection {
        namespace_id: Some(namespace_id),
        genstamp_v1: Some(LEGACY_GENSTAMP),
        genstamp_v2: Some(info.generation_stamp),
        genstamp_v1_limit: Some(0),
        last_allocated_block_id: Some(info.last_block_id),
        transaction_id: Some(info.last_txid),
        rolling_upgrade_start_time: None,
        last_allocated_striped_block_id: hadoop3.then_some(NO_STRIPED_BLOCK_ID),
        nsimage_creation_time: (info.creation_time != 0).then_some(info.creation_time),
    })?;
    sink.commit("NS_INFO")?;

    // ERASURE_CODING: no policies of the namespace's own, so the NameNode
    // keeps the system policies as its configuration sets them.
    if hadoop3 {
        sink.record(&ErasureCodingSection {
            policies: Vec::new(),
        })?;
        sink.commit("ERASURE_CODING")?;
    }
    Ok(())
}

/// INODE: the header (`inodes` of the namespace, and the carry's), then
/// the inodes in id order (the carry's snapshot-only inodes among them);
/// with sub-sections (`per_sub`), a cut after every `per` inodes (the
/// first sub-section holds the header), and the rest as the last one.
/// Returns the inodes written.
fn write_inodes<W: Write>(
    sink: &mut ImageSink<W>,
    ns: &Namespace,
    opts: &HdfsWriteOptions,
    serials: &Serials,
    carried: Option<&Carried>,
    inodes: u64,
    per_sub: Option<u64>,
) -> io::Result<u64> {
    let info = ns.info();
    let carried_inodes = carried.map_or(0, |c| c.c.inodes.len() as u64);
    sink.record(&INodeSection {
        last_inode_id: Some(info.last_inode_id),
        num_inodes: Some(inodes + carried_inodes),
    })?;
    let mut written = 0u64;
    let mut acc = 0u64;
    encode_in_order(
        ns,
        |inode, e| {
            if let Some(c) = carried {
                for n in c.inodes_before(inode.id()) {
                    e.push(n, 1)?;
                }
            }
            e.push(&inode_message(inode, serials, opts)?, 1)
        },
        |e| {
            written += e.ends.len() as u64;
            feed(sink, &e, per_sub, &mut acc, "INODE_SUB")
        },
    )?;
    if let Some(c) = carried {
        let mut e = Encoded::default();
        for n in c.inodes_after() {
            e.push(n, 1)?;
        }
        written += e.ends.len() as u64;
        feed(sink, &e, per_sub, &mut acc, "INODE_SUB")?;
    }
    if per_sub.is_some() {
        sink.cut_sub("INODE_SUB")?;
    }
    sink.commit("INODE")?;
    Ok(written)
}

/// INODE_DIR: one entry per directory with children, in id order (the
/// carry's entries and references among them); with sub-sections
/// (`per_sub`), a cut once `per` children have been written since the last
/// one. Returns the entries written.
fn write_inode_dirs<W: Write>(
    sink: &mut ImageSink<W>,
    ns: &Namespace,
    carried: Option<&Carried>,
    per_sub: Option<u64>,
    most: usize,
) -> io::Result<u64> {
    let mut dir_entries = 0u64;
    let mut acc = 0u64;
    encode_in_order(
        ns,
        |inode, e| {
            if let Some(c) = carried {
                for d in c.dirs_before(inode.id()) {
                    e.push(d, weight(d))?;
                }
            }
            if inode.kind() != InodeKind::Directory {
                return Ok(());
            }
            let d = match carried {
                Some(c) => c.with_refs(inode.id(), dir_entry(inode)),
                None => dir_entry(inode),
            };
            match d {
                Some(d) => {
                    // A directory's entries stay in one sub-section (as
                    // Hadoop's one entry does): only the last counts
                    // toward a cut, with the directory's whole weight, so
                    // no cut falls between them.
                    let whole = weight(&d);
                    let parts = split_entry(d, most);
                    let last = parts.len().saturating_sub(1);
                    for (k, part) in parts.iter().enumerate() {
                        e.push(part, if k == last { whole } else { 0 })?;
                    }
                    Ok(())
                }
                None => Ok(()),
            }
        },
        |e| {
            dir_entries += e.ends.len() as u64;
            feed(sink, &e, per_sub, &mut acc, "INODE_DIR_SUB")
        },
    )?;
    if let Some(c) = carried {
        let mut e = Encoded::default();
        for d in c.dirs_after() {
            e.push(d, weight(d))?;
        }
        dir_entries += e.ends.len() as u64;
        feed(sink, &e, per_sub, &mut acc, "INODE_DIR_SUB")?;
    }
    if per_sub.is_some() {
        sink.cut_sub("INODE_DIR_SUB")?;
    }
    sink.commit("INODE_DIR")?;
    Ok(dir_entries)
}

/// FILES_UNDERCONSTRUCTION: (inode id, full path) of each file a client
/// holds open, in id order. The path is written as the bytes it is.
/// Returns the entries written.
fn write_under_construction<W: Write>(sink: &mut ImageSink<W>, ns: &Namespace) -> io::Result<u64> {
    let mut under_construction = 0u64;
    let mut body = Vec::new();
    for inode in ns.iter() {
        let open = inode
            .extra()
            .is_some_and(|x| x.under_construction.is_some());
        if !open || inode.kind() != InodeKind::File {
            continue;
        }
        let path = ns.path_of(inode.id()).unwrap_or_default();
        body.clear();
        encode_key(uc_f::INODE_ID, WireType::Varint, &mut body);
        encode_varint(inode.id(), &mut body);
        encode_key(uc_f::FULL_PATH, WireType::LengthDelimited, &mut body);
        encode_varint(path.len() as u64, &mut body);
        body.extend_from_slice(&path);
        sink.record_body(&body)?;
        under_construction += 1;
    }
    sink.commit("FILES_UNDERCONSTRUCTION")?;
    Ok(under_construction)
}

/// SNAPSHOT, SNAPSHOT_DIFF and INODE_REFERENCE: the carry's, or those of a
/// namespace without snapshots (on Hadoop 2's layouts, `!hadoop3`, the
/// root's empty diff list).
fn write_snapshot_sections<W: Write>(
    sink: &mut ImageSink<W>,
    ns: &Namespace,
    carried: Option<&Carried>,
    hadoop3: bool,
) -> io::Result<()> {
    if let Some(c) = carried {
        write_snapshots(sink, &c.c)?;
    } else {
        // SNAPSHOT: no snapshottable directories, no snapshots.
        sink.record(&SnapshotSection {
            snapshot_counter: Some(0),
            snapshottable_dir: Vec::new(),
            num_snapshots: Some(0),
        })?;
        sink.commit("SNAPSHOT")?;
    }
    if carried.is_some_and(|c| !c.c.diffs.is_empty()) {
        // SNAPSHOT_DIFF and INODE_REFERENCE were written with SNAPSHOT.
    } else if !hadoop3 {
        // Hadoop 2 writes the section without snapshots too: the root is
        // always snapshottable (with quota 0), so it has one entry, a
        // directory diff list with no diffs.
        sink.record(&DiffEntry {
            r#type: diff_entry::Type::Directorydiff as i32,
            inode_id: Some(ns.root().id()),
            num_of_diff: Some(0),
        })?;
        sink.commit("SNAPSHOT_DIFF")?;
    }
    if let Some(c) = carried {
        for r in &c.c.references {
            sink.record(r)?;
        }
    }
    sink.commit("INODE_REFERENCE")?;
    Ok(())
}

/// SECRET_MANAGER and CACHE_MANAGER: headers only, as a NameNode with no
/// delegation keys or tokens, no cache pools or directives writes.
fn write_managers<W: Write>(sink: &mut ImageSink<W>) -> io::Result<()> {
    sink.record(&SecretManagerSection {
        current_id: Some(0),
        token_sequence_number: Some(0),
        num_keys: Some(0),
        num_tokens: Some(0),
    })?;
    sink.commit("SECRET_MANAGER")?;
    sink.record(&CacheManagerSection {
        next_directive_id: 1,
        num_pools: 0,
        num_directives: 0,
    })?;
    sink.commit("CACHE_MANAGER")?;
    Ok(())
}

/// STRING_TABLE: after the inodes, as Hadoop writes it; each serial's
/// string from the carry's table, or the namespace's without a carry.
fn write_string_table<W: Write>(
    sink: &mut ImageSink<W>,
    ns: &Namespace,
    opts: &HdfsWriteOptions,
    serials: &Serials,
    carried: Option<&Carried>,
) -> io::Result<()> {
    let mut body = Vec::new();
    let num_entry =
        u32::try_from(serials.count()).map_err(|_| invalid("string table too large".to_owned()))?;
    sink.record(&StringTableSection {
        num_entry: Some(num_entry),
        mask_bits: opts
            .has(EXPANDED_STRING_TABLE_LAYOUT_VERSION)
            .then_some(serials.mask_bits()),
    })?;
    let strings = carried.map_or(ns.strings(), |c| &c.strings);
    for (id, sid) in serials.entries() {
        let s = strings.get(sid).unwrap_or_default();
        body.clear();
        encode_key(entry_f::ID, WireType::Varint, &mut body);
        encode_varint(u64::from(id), &mut body);
        encode_key(entry_f::STR, WireType::LengthDelimited, &mut body);
        encode_varint(s.len() as u64, &mut body);
        body.extend_from_slice(s);
        sink.record_body(&body)?;
    }
    sink.commit("STRING_TABLE")?;
    sink.empty_stream()?;
    Ok(())
}

/// The FileSummary (every section's name, offset and length) after the
/// last section, its length, then the MD5 of the whole file: the MD5, the
/// bytes, the sections and the summary's offset.
pub(crate) fn write_summary<W: Write>(
    sink: ImageSink<W>,
    layout_version: i32,
    codec: HdfsCodec,
) -> io::Result<([u8; 16], u64, Vec<HdfsSection>, u64)> {
    let summary_offset = sink.pos();
    let summary = FileSummary {
        ondisk_version: ONDISK_VERSION,
        // A negative int32 as the uint32 field holds it.
        layout_version: layout_version.cast_unsigned(),
        codec: codec.class_name().map(str::to_owned),
        sections: sink
            .sections()
            .iter()
            .map(|s| file_summary::Section {
                name: Some(s.name.clone()),
                length: Some(s.length),
                offset: Some(s.offset),
            })
            .collect(),
    };
    let mut tail = Vec::with_capacity(summary.encoded_len() + 16);
    summary
        .encode_length_delimited(&mut tail)
        .map_err(|e| io::Error::other(format!("encoding the file summary: {e}")))?;
    let delimited =
        u32::try_from(tail.len()).map_err(|_| io::Error::other("file summary over 4 GiB"))?;
    tail.extend_from_slice(&delimited.to_be_bytes());
    let (md5, bytes, sections) = sink.finish(&tail)?;
    Ok((md5, bytes, sections, summary_offset))
}

/// `d` as entries of at most `most` children each (references included),
/// in order, all of `d`'s parent: one entry, `d` itself, when it is not
/// larger. The references come after every plain child, as in `d`:
/// Hadoop's loader appends plain children at the end of a directory's
/// list, assuming they arrive in order, and places references by name.
pub(crate) fn split_entry(d: DirEntry, most: usize) -> Vec<DirEntry> {
    let most = most.max(1);
    if d.children.len() + d.ref_children.len() <= most {
        return vec![d];
    }
    let mut out: Vec<DirEntry> = d
        .children
        .chunks(most)
        .map(|c| DirEntry {
            parent: d.parent,
            children: c.to_vec(),
            ref_children: Vec::new(),
        })
        .collect();
    let mut refs = d.ref_children.as_slice();
    // The references fill the last entry of children, then entries of
    // their own.
    if let Some(last) = out.last_mut() {
        let room = most - last.children.len();
        let (now, rest) = refs.split_at(room.min(refs.len()));
        last.ref_children = now.to_vec();
        refs = rest;
    }
    out.extend(refs.chunks(most).map(|r| DirEntry {
        parent: d.parent,
        children: Vec::new(),
        ref_children: r.to_vec(),
    }));
    out
}

/// What a directory entry counts toward an INODE_DIR sub-section cut: its
/// children, references included.
fn weight(d: &DirEntry) -> u64 {
    (d.children.len() + d.ref_children.len()) as u64
}

/// SNAPSHOT (the carry's header and snapshots) and, when the carry has
/// diffs, SNAPSHOT_DIFF: each entry, then its diffs (a directory diff
/// followed by its created list), the counts written as the lists are.
fn write_snapshots<W: Write>(sink: &mut ImageSink<W>, c: &SnapshotCarry) -> io::Result<()> {
    let h = c.header.clone().unwrap_or_default();
    let count = |n: usize, what: &str| {
        u32::try_from(n).map_err(|_| invalid(format!("{n} {what} in the snapshot carry")))
    };
    sink.record(&SnapshotSection {
        snapshot_counter: Some(h.snapshot_counter()),
        snapshottable_dir: h.snapshottable_dir,
        num_snapshots: Some(count(c.snapshots.len(), "snapshots")?),
    })?;
    for s in &c.snapshots {
        sink.record(s)?;
    }
    sink.commit("SNAPSHOT")?;
    if c.diffs.is_empty() {
        return Ok(());
    }
    for d in &c.diffs {
        let mut entry = d.entry.unwrap_or_default();
        let dir = entry.r#type() == diff_entry::Type::Directorydiff;
        let n = if dir {
            d.dir_diffs.len()
        } else {
            d.file_diffs.len()
        };
        entry.num_of_diff = Some(count(n, "diffs")?);
        sink.record(&entry)?;
        if dir {
            for x in &d.dir_diffs {
                let mut dd = x.diff.clone().unwrap_or_default();
                dd.created_list_size = Some(count(x.created.len(), "created entries")?);
                sink.record(&dd)?;
                for e in &x.created {
                    sink.record(e)?;
                }
            }
        } else {
            for f in &d.file_diffs {
                sink.record(f)?;
            }
        }
    }
    sink.commit("SNAPSHOT_DIFF")
}
