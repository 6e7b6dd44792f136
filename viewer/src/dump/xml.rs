//! The XML format of a namespace: the element layout of Hadoop 3's OIV
//! XML processor (`PBImageXmlWriter`), so that scripts written for `hdfs
//! oiv -p XML` keep working. A Hadoop fsimage is printed from its stored
//! sections instead, every section as OIV prints it ([`super::hadoop_xml`],
//! what `nsimage dump --format xml` does for one); this module prints what
//! a namespace holds (an nsimage image, or a namespace loaded from a Hadoop
//! image, whose `INodeSection`, `INodeDirectorySection` and
//! `FileUnderConstructionSection` are OIV's bytes wherever the model holds
//! what OIV prints: the list of what it does not hold is below;
//! `tests/it/hdfs/oiv_xml.rs` compares every real Hadoop image with an
//! emulation of OIV written from its source).
//!
//! `<?xml version="1.0"?>` and one `fsimage` element holding, in the order
//! OIV writes Hadoop's sections: `version` (`layoutVersion`: a Hadoop
//! image's own, the nsimage format version for an nsimage image;
//! `onDiskVersion`, `oivRevision`), `NameSection`
//! (`namespaceId`, `genstampV1`, `genstampV2`, `genstampV1Limit`,
//! `lastAllocatedBlockId`, `txid`), `INodeSection` (`lastInodeId`,
//! `numInodes`, one `inode` per inode in id order), an empty
//! `INodeReferenceSection`, a `SnapshotSection` without snapshots,
//! `INodeDirectorySection` (a `directory` with its `parent` and each `child`
//! id, for every directory with children), `FileUnderConstructionSection`
//! (`inode`: `id`, `path`) and an empty `SnapshotDiffSection`. An nsimage
//! image holds no delegation tokens or cache pools, so there is no
//! `SecretManagerSection` or `CacheManagerSection`.
//!
//! An `inode` has `id`, `type` (`FILE`, `DIRECTORY`, `SYMLINK`), `name`,
//! then:
//! - a file: `replication`, `mtime`, `atime`, `preferredBlockSize`,
//!   `permission`, `xattrs`, `acls`, `blocks` (`block`: `id`, `genstamp`,
//!   `numBytes`) when it has any, `storagePolicyId`,
//!   `file-under-construction` (`clientName`, `clientMachine`);
//! - a directory: `mtime`, `permission`, `xattrs`, `acls`, `nsquota`,
//!   `dsquota` (-1: none);
//! - a symlink: `permission`, `target`, `mtime` (nsimage keeps no access
//!   time for a symlink, so there is no `atime`).
//!
//! `xattrs` (`xattr`: `ns`, `name`, then `val` when the value is UTF-8,
//! `valHex` when it is not) and `acls` (`acl`: `[default:]user:name:rwx`)
//! appear only when there are any. `permission` is `user:group:0755`.
//! The spelling is Hadoop 3's `preferredBlockSize`: Hadoop 2's OIV wrote
//! `perferredBlockSize`, which HDFS-9278 corrected, and Hadoop 3's reverse
//! processor reads the corrected name.
//!
//! Text as OIV lays it out: no line break inside an `inode` but after each
//! `block`, after `blocks` and after `file-under-construction`; one after
//! each `inode` and `directory` element and after each section; none after
//! `numInodes` or the opening `INodeDirectorySection` and
//! `FileUnderConstructionSection` tags. Ids, times,
//! sizes, block ids, generation stamps and lengths are Java `long`s in
//! OIV, so a value of 2^63 or more prints negative as it does there (the
//! block ids of erasure-coded block groups are such values). A
//! directory's children are listed in Hadoop's order, names compared as
//! signed bytes (`DFSUtil.compareBytes`): it differs from nsimage's
//! unsigned order only where names hold bytes 0x80 and above, which then
//! sort before ASCII.
//! Text is escaped as [`xml_text`] says: entity references for markup
//! characters, `\XXXX;` for characters XML cannot hold and for bytes that
//! are not UTF-8.
//!
//! What the model does not hold, so that OIV's text for a Hadoop image
//! differs there (none of the shared Hadoop images has any of these):
//! - a symlink's access time (OIV prints `atime` after `mtime`);
//! - storage type quotas (OIV prints `typeQuota` elements);
//! - erasure coding: OIV prints replication 1, then `blockType` and
//!   `erasureCodingPolicyId`, for a file with a policy id;
//! - `refChild` entries (snapshot references) in `INodeDirectorySection`;
//! - whether a field was stored at all: OIV prints `storagePolicyId` only
//!   when the image holds it (Hadoop 2.6 and later always write it; nsimage
//!   always prints it), `nsquota`/`dsquota` only when both are stored
//!   (every Hadoop version writes both), and an empty `xattrs` element for
//!   an empty xattr feature;
//! - the stored order of xattrs (the model keeps them by namespace and
//!   name) and of inodes (the model's is id order; Hadoop's is its inode
//!   map's, id order but for very large or sparse id ranges);
//! - names that are not UTF-8 (Hadoop never writes them; OIV would print
//!   U+FFFD where nsimage prints the bytes as `\00XX;`) and user or group
//!   ids missing from the string table (OIV prints `null`).
//!
//! The other sections follow OIV's layout but not all of a Hadoop image's
//! content: `version`'s `layoutVersion` is the nsimage format version and
//! `NameSection`'s `genstampV1` and `genstampV1Limit` are 0 (a namespace
//! keeps neither), and there is no `ErasureCodingSection`,
//! `SecretManagerSection` or `CacheManagerSection`; OIV prints no
//! `SnapshotDiffSection` for an image without that section, nsimage always
//! an empty one.

use super::escape::{num, push_hex, xml_text};
use super::formatter::{Formatter, Head};
use super::names::{acl_text, kind_name, xattr_ns_name};
use super::row::Row;
use super::scratch::Scratch;
use nsimage_namespace::{Attrs, Extra, Inode, StringTable};

pub(crate) struct Xml {
    pub(crate) format_version: u16,
}

/// `<tag>`.
pub(crate) fn open_tag(tag: &str, out: &mut Vec<u8>) {
    out.push(b'<');
    out.extend_from_slice(tag.as_bytes());
    out.push(b'>');
}

/// `</tag>`.
pub(crate) fn close_tag(tag: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(b"</");
    out.extend_from_slice(tag.as_bytes());
    out.push(b'>');
}

/// `<tag>v</tag>` for a number.
pub(crate) fn el(tag: &str, v: impl super::escape::itoa_like::Num, out: &mut Vec<u8>) {
    open_tag(tag, out);
    num(v, out);
    close_tag(tag, out);
}

/// `<tag>v</tag>` for a value OIV holds in a Java `long`: the same 64
/// bits, read as signed.
fn el_long(tag: &str, v: u64, out: &mut Vec<u8>) {
    el(tag, v as i64, out);
}

/// `<tag>v</tag>` for text, escaped.
pub(crate) fn el_text(tag: &str, v: &[u8], out: &mut Vec<u8>) {
    open_tag(tag, out);
    xml_text(v, out);
    close_tag(tag, out);
}

fn permission(row: &Row<'_>, out: &mut Vec<u8>) {
    out.extend_from_slice(b"<permission>");
    xml_text(row.user(), out);
    out.push(b':');
    xml_text(row.group(), out);
    out.extend_from_slice(format!(":{:04o}</permission>", row.mode()).as_bytes());
}

impl Xml {
    fn inode(&self, row: &Row<'_>, out: &mut Vec<u8>) {
        out.extend_from_slice(b"<inode>");
        el_long("id", row.id(), out);
        el_text("type", kind_name(row.kind()).as_bytes(), out);
        el_text("name", row.name(), out);
        let (extra, strings, inode) = (row.extra(), row.strings(), row);
        match inode.attrs() {
            Attrs::File(f) => {
                el("replication", f.replication, out);
                el_long("mtime", inode.mtime(), out);
                el_long("atime", f.atime, out);
                el_long("preferredBlockSize", f.preferred_block_size, out);
                permission(inode, out);
                xattrs_and_acls(strings, extra, out);
                if !f.blocks.is_empty() {
                    out.extend_from_slice(b"<blocks>");
                    for b in f.blocks {
                        out.extend_from_slice(b"<block>");
                        el_long("id", b.id, out);
                        el_long("genstamp", b.generation_stamp, out);
                        el_long("numBytes", b.length, out);
                        out.extend_from_slice(b"</block>\n");
                    }
                    out.extend_from_slice(b"</blocks>\n");
                }
                el("storagePolicyId", f.storage_policy, out);
                if let Some(uc) = extra.and_then(|e| e.under_construction.as_ref()) {
                    out.extend_from_slice(b"<file-under-construction>");
                    el_text("clientName", &uc.client_name, out);
                    el_text("clientMachine", &uc.client_machine, out);
                    out.extend_from_slice(b"</file-under-construction>\n");
                }
            }
            Attrs::Directory { ns_quota, ds_quota } => {
                el_long("mtime", inode.mtime(), out);
                permission(inode, out);
                xattrs_and_acls(strings, extra, out);
                el("nsquota", ns_quota, out);
                el("dsquota", ds_quota, out);
            }
            Attrs::Symlink { target } => {
                permission(inode, out);
                el_text("target", target, out);
                el_long("mtime", inode.mtime(), out);
                // OIV writes none for a symlink; an nsimage symlink may
                // still carry them, and a dump loses nothing.
                xattrs_and_acls(strings, extra, out);
            }
        }
        out.extend_from_slice(b"</inode>\n");
    }
}

/// Hadoop's order of names (`DFSUtil.compareBytes`): lexicographic over
/// the bytes read as signed, so bytes 0x80 and above sort before ASCII.
fn signed_cmp(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    a.iter().map(|&x| x as i8).cmp(b.iter().map(|&x| x as i8))
}

/// Whether children in nsimage's (unsigned) name order are also in
/// Hadoop's: every neighbouring pair is (a list is sorted when each pair of
/// neighbours is), which holds unless names differ first at a byte 0x80 or
/// above. Compares neighbours only, so a directory of ASCII names costs
/// one comparison per child and no allocation.
fn in_hadoop_order<'a>(mut kids: impl Iterator<Item = Inode<'a>>) -> bool {
    let Some(mut prev) = kids.next() else {
        return true;
    };
    for c in kids {
        if signed_cmp(prev.name(), c.name()) == std::cmp::Ordering::Greater {
            return false;
        }
        prev = c;
    }
    true
}

/// `xattrs` then `acls`, each only when there are any, as OIV writes them.
fn xattrs_and_acls(strings: &StringTable, extra: Option<&Extra>, out: &mut Vec<u8>) {
    let Some(extra) = extra else { return };
    if !extra.xattrs.is_empty() {
        out.extend_from_slice(b"<xattrs>");
        for x in &extra.xattrs {
            out.extend_from_slice(b"<xattr>");
            el_text("ns", xattr_ns_name(x.ns).as_bytes(), out);
            el_text("name", strings.get(x.name).unwrap_or_default(), out);
            if std::str::from_utf8(&x.value).is_ok() {
                el_text("val", &x.value, out);
            } else {
                out.extend_from_slice(b"<valHex>");
                push_hex(&x.value, out);
                out.extend_from_slice(b"</valHex>");
            }
            out.extend_from_slice(b"</xattr>");
        }
        out.extend_from_slice(b"</xattrs>");
    }
    if !extra.acl.is_empty() {
        out.extend_from_slice(b"<acls>");
        for e in &extra.acl {
            el_text("acl", &acl_text(strings, e), out);
        }
        out.extend_from_slice(b"</acls>");
    }
}

/// A `directory` element of `INodeDirectorySection`: `parent` and its
/// children's ids, in the order given.
pub(crate) fn directory(parent: u64, kids: impl Iterator<Item = u64>, out: &mut Vec<u8>) {
    out.extend_from_slice(b"<directory>");
    el_long("parent", parent, out);
    for c in kids {
        el_long("child", c, out);
    }
    out.extend_from_slice(b"</directory>\n");
}

/// The `inode` element of `FileUnderConstructionSection` for `row`, if it
/// is a file under construction; whether it is.
pub(crate) fn under_construction(row: &Row<'_>, scratch: &mut Scratch, out: &mut Vec<u8>) -> bool {
    let uc = row.extra().is_some_and(|e| e.under_construction.is_some());
    if uc {
        out.extend_from_slice(b"<inode>");
        el_long("id", row.id(), out);
        let mut path = Vec::new();
        row.push_path(scratch, &mut path);
        el_text("path", &path, out);
        out.extend_from_slice(b"</inode>\n");
    }
    uc
}

impl Formatter for Xml {
    fn passes(&self) -> usize {
        3
    }

    fn begin(&self, head: &Head<'_>, pass: usize, out: &mut Vec<u8>) {
        match pass {
            0 => {
                let info = head.info;
                out.extend_from_slice(b"<?xml version=\"1.0\"?>\n<fsimage><version>");
                el("layoutVersion", self.format_version, out);
                el("onDiskVersion", 1u8, out);
                el_text(
                    "oivRevision",
                    concat!("nsimage ", env!("CARGO_PKG_VERSION")).as_bytes(),
                    out,
                );
                out.extend_from_slice(b"</version>\n<NameSection>");
                el("namespaceId", info.namespace_id, out);
                el_long("genstampV1", 0, out);
                el_long("genstampV2", info.generation_stamp, out);
                el_long("genstampV1Limit", 0, out);
                el_long("lastAllocatedBlockId", info.last_block_id, out);
                el_long("txid", info.last_txid, out);
                out.extend_from_slice(b"</NameSection>\n<INodeSection>");
                el_long("lastInodeId", info.last_inode_id, out);
                el("numInodes", head.inodes, out);
            }
            1 => out.extend_from_slice(
                b"<INodeReferenceSection></INodeReferenceSection><SnapshotSection><snapshotCounter>0</snapshotCounter><numSnapshots>0</numSnapshots></SnapshotSection>\n<INodeDirectorySection>",
            ),
            _ => out.extend_from_slice(b"<FileUnderConstructionSection>"),
        }
    }

    fn inode(&self, pass: usize, row: &Row<'_>, scratch: &mut Scratch, out: &mut Vec<u8>) {
        match pass {
            0 => self.inode(row, out),
            1 => {
                // Streamed, the directories come from INODE_DIR instead.
                let Row::Tree(_, inode) = *row else { return };
                if inode.child_slots().is_empty() {
                    return;
                }
                if in_hadoop_order(inode.children()) {
                    directory(inode.id(), inode.children().map(|c| c.id()), out);
                } else {
                    // Hadoop's order: names compared as signed bytes.
                    let mut kids: Vec<Inode<'_>> = inode.children().collect();
                    kids.sort_by(|a, b| signed_cmp(a.name(), b.name()));
                    directory(inode.id(), kids.iter().map(|c| c.id()), out);
                }
            }
            _ => {
                under_construction(row, scratch, out);
            }
        }
    }

    fn end(&self, pass: usize, out: &mut Vec<u8>) {
        match pass {
            0 => out.extend_from_slice(b"</INodeSection>\n"),
            1 => out.extend_from_slice(b"</INodeDirectorySection>\n"),
            _ => out.extend_from_slice(b"</FileUnderConstructionSection>\n<SnapshotDiffSection></SnapshotDiffSection>\n</fsimage>\n"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;

    #[test]
    fn hadoop_name_order_is_signed_bytes() {
        // 0xc3 (the start of "é") is negative as a Java byte: before ASCII.
        assert_eq!(signed_cmp("é".as_bytes(), b"e"), Ordering::Less);
        assert_eq!(signed_cmp(b"Zeta", b"a"), Ordering::Less);
        assert_eq!(signed_cmp(b"ab", b"abc"), Ordering::Less);
        assert_eq!(signed_cmp(b"\xff", b"\x80"), Ordering::Greater);
        assert_eq!(signed_cmp(b"x", b"x"), Ordering::Equal);
    }

    #[test]
    fn java_longs() {
        let mut out = Vec::new();
        el_long("id", 0x8000_0000_0000_1000, &mut out);
        el_long("mtime", 5, &mut out);
        assert_eq!(
            out,
            b"<id>-9223372036854771712</id><mtime>5</mtime>".as_slice()
        );
    }
}
