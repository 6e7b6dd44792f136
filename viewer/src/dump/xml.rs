//! The XML format: the element layout of Hadoop's OIV XML processor, so
//! that scripts written for `hdfs oiv -p XML` keep working.
//!
//! `<?xml version="1.0"?>` and one `fsimage` element holding `version`
//! (`layoutVersion`: the nsimage format version, `onDiskVersion`,
//! `oivRevision`), `NameSection` (`namespaceId`, `genstampV1`,
//! `genstampV2`, `genstampV1Limit`, `lastAllocatedBlockId`, `txid`),
//! `INodeSection` (`lastInodeId`, `numInodes`, one `inode` per inode in id
//! order), an empty `INodeReferenceSection`, a `SnapshotSection` without
//! snapshots, `INodeDirectorySection` (a `directory` with its `parent` and
//! each `child` id, for every directory with children) and
//! `FileUnderConstructionSection` (`inode`: `id`, `path`).
//!
//! An `inode` has `id`, `type` (`FILE`, `DIRECTORY`, `SYMLINK`), `name`;
//! a file `replication`, `mtime`, `atime`, `perferredBlockSize` (Hadoop's
//! spelling), `permission` (`user:group:0755`), `blocks` (`block`: `id`,
//! `genstamp`, `numBytes`) when it has any, `storagePolicyId`; a directory
//! `mtime`, `permission`, `nsquota`, `dsquota` (-1: none); a symlink
//! `permission`, `target`, `mtime`. Then, where present, `acls` (`acl`:
//! `[default:]user:name:rwx`), `xattrs` (`xattr`: `ns`, `name`, `val`, or
//! `valHex` for a value XML cannot hold as text) and
//! `file-under-construction` (`clientName`, `clientMachine`).
//! Text is escaped as [`xml_text`] says: entity references for markup
//! characters, `\XXXX;` for characters XML cannot hold and for bytes that
//! are not UTF-8.

use super::escape::{num, xml_plain, xml_text};
use super::formatter::Formatter;
use super::names::{acl_text, kind_name, xattr_ns_name};
use super::scratch::Scratch;
use nsimage_namespace::{Attrs, Inode, Namespace};

pub(crate) struct Xml {
    pub(crate) format_version: u16,
}

fn el(tag: &str, v: impl super::escape::itoa_like::Num, out: &mut Vec<u8>) {
    out.push(b'<');
    out.extend_from_slice(tag.as_bytes());
    out.push(b'>');
    num(v, out);
    out.extend_from_slice(b"</");
    out.extend_from_slice(tag.as_bytes());
    out.push(b'>');
}

fn el_text(tag: &str, v: &[u8], out: &mut Vec<u8>) {
    out.push(b'<');
    out.extend_from_slice(tag.as_bytes());
    out.push(b'>');
    xml_text(v, out);
    out.extend_from_slice(b"</");
    out.extend_from_slice(tag.as_bytes());
    out.push(b'>');
}

fn permission(inode: &Inode<'_>, out: &mut Vec<u8>) {
    out.extend_from_slice(b"<permission>");
    xml_text(inode.user(), out);
    out.push(b':');
    xml_text(inode.group(), out);
    out.extend_from_slice(format!(":{:04o}</permission>", inode.mode()).as_bytes());
}

impl Xml {
    fn inode(&self, ns: &Namespace, inode: &Inode<'_>, out: &mut Vec<u8>) {
        out.extend_from_slice(b"<inode>");
        el("id", inode.id(), out);
        el_text("type", kind_name(inode.kind()).as_bytes(), out);
        el_text("name", inode.name(), out);
        match inode.attrs() {
            Attrs::File(f) => {
                el("replication", f.replication, out);
                el("mtime", inode.mtime(), out);
                el("atime", f.atime, out);
                el("perferredBlockSize", f.preferred_block_size, out);
                permission(inode, out);
                if !f.blocks.is_empty() {
                    out.extend_from_slice(b"<blocks>");
                    for b in f.blocks {
                        out.extend_from_slice(b"<block>");
                        el("id", b.id, out);
                        el("genstamp", b.generation_stamp, out);
                        el("numBytes", b.length, out);
                        out.extend_from_slice(b"</block>");
                    }
                    out.extend_from_slice(b"</blocks>");
                }
                el("storagePolicyId", f.storage_policy, out);
            }
            Attrs::Directory { ns_quota, ds_quota } => {
                el("mtime", inode.mtime(), out);
                permission(inode, out);
                el("nsquota", ns_quota, out);
                el("dsquota", ds_quota, out);
            }
            Attrs::Symlink { target } => {
                permission(inode, out);
                el_text("target", target, out);
                el("mtime", inode.mtime(), out);
            }
        }
        if let Some(extra) = inode.extra() {
            if !extra.acl.is_empty() {
                out.extend_from_slice(b"<acls>");
                for e in &extra.acl {
                    el_text("acl", &acl_text(ns, e), out);
                }
                out.extend_from_slice(b"</acls>");
            }
            if !extra.xattrs.is_empty() {
                out.extend_from_slice(b"<xattrs>");
                for x in &extra.xattrs {
                    out.extend_from_slice(b"<xattr>");
                    el_text("ns", xattr_ns_name(x.ns).as_bytes(), out);
                    el_text("name", ns.strings().get(x.name).unwrap_or_default(), out);
                    if xml_plain(&x.value) {
                        el_text("val", &x.value, out);
                    } else {
                        out.extend_from_slice(b"<valHex>");
                        for b in x.value.iter() {
                            out.extend_from_slice(format!("{b:02x}").as_bytes());
                        }
                        out.extend_from_slice(b"</valHex>");
                    }
                    out.extend_from_slice(b"</xattr>");
                }
                out.extend_from_slice(b"</xattrs>");
            }
            if let Some(uc) = &extra.under_construction {
                out.extend_from_slice(b"<file-under-construction>");
                el_text("clientName", &uc.client_name, out);
                el_text("clientMachine", &uc.client_machine, out);
                out.extend_from_slice(b"</file-under-construction>");
            }
        }
        out.extend_from_slice(b"</inode>\n");
    }
}

impl Formatter for Xml {
    fn passes(&self) -> usize {
        3
    }

    fn begin(&self, ns: &Namespace, pass: usize, out: &mut Vec<u8>) {
        match pass {
            0 => {
                let info = ns.info();
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
                el("genstampV1", 0u64, out);
                el("genstampV2", info.generation_stamp, out);
                el("genstampV1Limit", 0u64, out);
                el("lastAllocatedBlockId", info.last_block_id, out);
                el("txid", info.last_txid, out);
                out.extend_from_slice(b"</NameSection>\n<INodeSection>");
                el("lastInodeId", info.last_inode_id, out);
                let live = (0..ns.slot_count())
                    .filter(|&s| ns.at(s).is_some())
                    .count() as u64;
                el("numInodes", live, out);
                out.push(b'\n');
            }
            1 => out.extend_from_slice(
                b"<INodeReferenceSection></INodeReferenceSection>\n<SnapshotSection><snapshotCounter>0</snapshotCounter><numSnapshots>0</numSnapshots></SnapshotSection>\n<INodeDirectorySection>\n",
            ),
            _ => out.extend_from_slice(b"<FileUnderConstructionSection>\n"),
        }
    }

    fn inode(
        &self,
        ns: &Namespace,
        pass: usize,
        inode: &Inode<'_>,
        scratch: &mut Scratch,
        out: &mut Vec<u8>,
    ) {
        match pass {
            0 => self.inode(ns, inode, out),
            1 => {
                let kids = inode.child_slots();
                if kids.is_empty() {
                    return;
                }
                out.extend_from_slice(b"<directory>");
                el("parent", inode.id(), out);
                for c in inode.children() {
                    el("child", c.id(), out);
                }
                out.extend_from_slice(b"</directory>\n");
            }
            _ => {
                let uc = inode
                    .extra()
                    .is_some_and(|e| e.under_construction.is_some());
                if uc {
                    out.extend_from_slice(b"<inode>");
                    el("id", inode.id(), out);
                    let mut path = Vec::new();
                    scratch.paths.push_path(ns, inode, &mut path);
                    el_text("path", &path, out);
                    out.extend_from_slice(b"</inode>\n");
                }
            }
        }
    }

    fn end(&self, _ns: &Namespace, pass: usize, out: &mut Vec<u8>) {
        match pass {
            0 => out.extend_from_slice(b"</INodeSection>\n"),
            1 => out.extend_from_slice(b"</INodeDirectorySection>\n"),
            _ => out.extend_from_slice(b"</FileUnderConstructionSection>\n</fsimage>\n"),
        }
    }
}
