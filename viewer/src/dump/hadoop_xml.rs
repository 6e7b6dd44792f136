//! The XML dump of a Hadoop fsimage, printed from the image as it is
//! stored: every section Hadoop 3's OIV XML processor (`hdfs oiv -p XML`,
//! `PBImageXmlWriter`) prints, element for element and byte for byte but
//! for `oivRevision` (which names the program that printed it), read
//! message by message in bounded memory (the string table, one message and
//! the output buffer at a time).
//!
//! Read from the stored messages rather than the namespace, it prints what
//! the namespace does not keep: the inodes only snapshots see, `refChild`
//! entries, storage type quotas, erasure coding fields, a symlink's access
//! time, whether a field was stored at all, xattrs in stored order; and the
//! sections beside the inodes: `ErasureCodingSection`,
//! `INodeReferenceSection`, `SnapshotSection` with each snapshot's root,
//! `SnapshotDiffSection`, `SecretManagerSection` and `CacheManagerSection`.
//!
//! Sections come in the order of Hadoop's `SectionName` whatever their
//! order in the file, each only if the image has it; a section's
//! sub-sections (HDFS-14617) are read as its pieces. Where OIV would stop
//! with an exception, the dump stops with an error naming the section and
//! offset (a message that does not decode, fewer messages than a count
//! declares, an xattr name or erasure coding policy the image does not
//! define); OIV stops on a section name Hadoop does not define, the dump
//! leaves it out. OIV's quirks are kept: a file diff always has a
//! `snapshotCopy` (an absent one prints as an empty file's fields), a
//! user, group or ACL name id the string table lacks prints `null` (an
//! ACL's empty), numbers print as Java's signed `int` and `long`, names
//! are decoded as UTF-8 with U+FFFD for malformed bytes, and the built-in
//! erasure coding policies (ids 1 to 5) print Hadoop's own definitions.

use super::escape::itoa_like::Num;
use super::escape::{push_hex, xml_text};
use super::xml::{close_tag, el, el_text, open_tag};
use super::DumpStats;
use crate::error::ViewError;
use nsimage_format::hdfs::{AclBits, HdfsSection, PermBits, StringTag, SummarySection, XAttrBits};
use nsimage_format::hdfs_pb::{
    files_under_construction_section::FileUnderConstructionEntry,
    i_node_directory_section::DirEntry,
    i_node_reference_section::INodeReference,
    i_node_section::{self, INode},
    secret_manager_section::{DelegationKey, PersistToken},
    snapshot_diff_section::{diff_entry, CreatedListEntry, DiffEntry, DirectoryDiff, FileDiff},
    snapshot_section::Snapshot,
    BlockProto, CacheDirectiveInfoProto, CacheManagerSection, CachePoolInfoProto,
    ErasureCodingPolicyProto, ErasureCodingPolicyState, ErasureCodingSection, INodeSection,
    NameSystemSection, SecretManagerSection, SnapshotSection, StorageTypeProto,
};
use nsimage_loader::hdfs::{HdfsSections, Md5Policy, Messages};
use nsimage_loader::LoadError;
use parking_lot::{Condvar, Mutex};
use prost::Message as _;
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// The output buffer's size at which it is written out.
const FLUSH_AT: usize = 1 << 20;

/// Dumps the Hadoop image at `image` as OIV's XML into `w` (`w_name`
/// names it in errors); `md5` says whether its `.md5` sidecar is checked
/// (hashed while the sections are read, the verdict at the end). The
/// inodes are decoded and formatted by `threads` workers (0: the
/// available cores) in batches of about 256 KiB, written in order.
///
/// # Errors
/// The image's damage (a `Corrupt` load error naming section and offset),
/// the sidecar's verdict, the output's I/O errors.
pub fn dump_hadoop_xml(
    image: &Path,
    md5: Md5Policy,
    threads: usize,
    w: &mut (dyn Write + Send),
    w_name: &Path,
) -> Result<DumpStats, ViewError> {
    let img = HdfsSections::open(image, md5)?;
    let threads = match threads {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        n => n,
    };
    let mut p = Printer {
        f: Fmt {
            img: &img,
            out: Vec::with_capacity(FLUSH_AT + (64 << 10)),
        },
        w,
        w_name,
        stats: DumpStats {
            threads,
            ..DumpStats::default()
        },
        threads,
    };
    p.out
        .extend_from_slice(b"<?xml version=\"1.0\"?>\n<fsimage><version>");
    p.num("layoutVersion", img.layout_version());
    p.num("onDiskVersion", img.ondisk_version() as i32);
    p.text(
        "oivRevision",
        concat!("nsimage ", env!("CARGO_PKG_VERSION")).as_bytes(),
    );
    p.out.extend_from_slice(b"</version>\n");
    for sec in img.in_hadoop_order() {
        p.section(&sec)?;
    }
    p.out.extend_from_slice(b"</fsimage>\n");
    p.flush()?;
    let stats = p.stats;
    img.finish()?;
    Ok(stats)
}

/// The text of one piece of the document: the image's names, and the
/// buffer the elements are formatted into.
struct Fmt<'a> {
    img: &'a HdfsSections,
    out: Vec<u8>,
}

/// The document being printed: formatted into `f`'s buffer, which goes
/// to `w` whenever it passes [`FLUSH_AT`].
struct Printer<'a, 'w> {
    f: Fmt<'a>,
    w: &'a mut (dyn Write + Send + 'w),
    w_name: &'a Path,
    stats: DumpStats,
    threads: usize,
}

impl<'a> std::ops::Deref for Printer<'a, '_> {
    type Target = Fmt<'a>;
    fn deref(&self) -> &Fmt<'a> {
        &self.f
    }
}

impl std::ops::DerefMut for Printer<'_, '_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.f
    }
}

/// A name of the string table, as OIV looks it up: id 0 and ids the
/// table lacks are Java's `null`. The table's names are UTF-8 (protobuf
/// strings), printed as they are.
fn lookup(img: &HdfsSections, tag: StringTag, serial: u32) -> Option<&[u8]> {
    match serial {
        0 => None,
        s => img.name(tag, s),
    }
}

/// A user or group name as OIV prints it in a permission: `null` for id 0
/// or an id the table lacks.
fn img_name(img: &HdfsSections, tag: StringTag, serial: u32) -> &[u8] {
    lookup(img, tag, serial).unwrap_or(b"null")
}

/// Refuses a message without a field every NameNode writes, as the load
/// does: an empty message (one byte) would otherwise print as an element
/// of hundreds of bytes, each byte of an inflated section one more.
fn need(m: &Messages<'_>, pos: usize, present: bool, what: &str) -> Result<(), ViewError> {
    match present {
        true => Ok(()),
        false => Err(m.err(pos, what.to_string()).into()),
    }
}

/// A Java `long` of a protobuf `uint64`: the same bits, signed.
fn jlong(v: u64) -> i64 {
    v as i64
}

/// A Java `int` of a protobuf `uint32`.
fn jint(v: u32) -> i32 {
    v as i32
}

impl Printer<'_, '_> {
    fn flush(&mut self) -> Result<(), ViewError> {
        self.w
            .write_all(&self.f.out)
            .map_err(|source| ViewError::Io {
                path: self.w_name.to_path_buf(),
                source,
            })?;
        self.stats.bytes = self.stats.bytes.saturating_add(self.out.len() as u64);
        self.out.clear();
        Ok(())
    }

    fn maybe_flush(&mut self) -> Result<(), ViewError> {
        if self.out.len() >= FLUSH_AT {
            self.flush()?;
        }
        Ok(())
    }
}

impl Fmt<'_> {
    fn raw(&mut self, s: &str) {
        self.out.extend_from_slice(s.as_bytes());
    }

    fn open(&mut self, tag: &str) {
        open_tag(tag, &mut self.out);
    }

    fn close(&mut self, tag: &str) {
        close_tag(tag, &mut self.out);
    }

    fn num(&mut self, tag: &str, v: impl Num) {
        el(tag, v, &mut self.out);
    }

    fn text(&mut self, tag: &str, v: &[u8]) {
        el_text(tag, v, &mut self.out);
    }

    /// Bytes as Java's `ByteString.toStringUtf8` reads them: U+FFFD for
    /// malformed UTF-8.
    fn lossy(&mut self, tag: &str, v: &[u8]) {
        let s = String::from_utf8_lossy(v);
        self.text(tag, s.as_bytes());
    }

    /// A Boolean as OIV prints it: `<tag/>` when true, nothing otherwise.
    fn flag(&mut self, tag: &str, v: bool) {
        if v {
            let _ = write!(self.out, "<{tag}/>");
        }
    }

    /// A date as OIV prints it: `yyyy-MM-dd'T'HH:mm:ss.SSS`, UTC.
    fn date(&mut self, tag: &str, millis: u64) {
        let s = crate::text::oiv_xml_date(millis);
        self.text(tag, s.as_bytes());
    }

    fn inode_fields(&mut self, p: &INode) -> Result<(), String> {
        let ty = i_node_section::i_node::Type::try_from(p.r#type)
            .map_err(|_| format!("inode {} has type {}", p.id, p.r#type))?;
        self.num("id", jlong(p.id));
        self.text("type", ty.as_str_name().as_bytes());
        self.lossy("name", p.name());
        if let Some(f) = &p.file {
            self.file(f)?;
        } else if let Some(d) = &p.directory {
            self.directory(d)?;
        } else if let Some(s) = &p.symlink {
            self.permission(s.permission());
            self.lossy("target", s.target());
            self.num("mtime", jlong(s.modification_time()));
            self.num("atime", jlong(s.access_time()));
        }
        Ok(())
    }

    fn blocks(&mut self, blocks: &[BlockProto]) {
        if blocks.is_empty() {
            return;
        }
        self.raw("<blocks>");
        for b in blocks {
            self.raw("<block>");
            self.num("id", jlong(b.block_id));
            self.num("genstamp", jlong(b.gen_stamp));
            self.num("numBytes", jlong(b.num_bytes()));
            self.raw("</block>\n");
        }
        self.raw("</blocks>\n");
    }

    fn file(&mut self, f: &i_node_section::INodeFile) -> Result<(), String> {
        let replication = match f.erasure_coding_policy_id {
            // INodeFile.DEFAULT_REPL_FOR_STRIPED_BLOCKS.
            Some(_) => 1,
            None => jint(f.replication()),
        };
        self.num("replication", replication);
        self.num("mtime", jlong(f.modification_time()));
        self.num("atime", jlong(f.access_time()));
        self.num("preferredBlockSize", jlong(f.preferred_block_size()));
        self.permission(f.permission());
        if let Some(x) = &f.x_attrs {
            self.xattrs(x)?;
        }
        self.acls(f.acl.as_ref());
        self.blocks(&f.blocks);
        if let Some(sp) = f.storage_policy_id {
            self.num("storagePolicyId", jint(sp));
        }
        if let Some(ec) = f.erasure_coding_policy_id {
            self.text("blockType", f.block_type().as_str_name().as_bytes());
            self.num("erasureCodingPolicyId", jint(ec));
        }
        if let Some(uc) = &f.file_uc {
            self.raw("<file-under-construction>");
            self.text("clientName", uc.client_name().as_bytes());
            self.text("clientMachine", uc.client_machine().as_bytes());
            self.raw("</file-under-construction>\n");
        }
        Ok(())
    }

    fn directory(&mut self, d: &i_node_section::INodeDirectory) -> Result<(), String> {
        self.num("mtime", jlong(d.modification_time()));
        self.permission(d.permission());
        if let Some(x) = &d.x_attrs {
            self.xattrs(x)?;
        }
        self.acls(d.acl.as_ref());
        if d.ns_quota.is_some() && d.ds_quota.is_some() {
            self.num("nsquota", jlong(d.ns_quota()));
            self.num("dsquota", jlong(d.ds_quota()));
        }
        for q in d.type_quotas.iter().flat_map(|t| &t.quotas) {
            let st = StorageTypeProto::try_from(q.storage_type)
                .map_err(|_| format!("storage type {}", q.storage_type))?;
            self.raw("<typeQuota>");
            self.text("type", st.as_str_name().as_bytes());
            self.num("quota", jlong(q.quota));
            self.raw("</typeQuota>");
        }
        Ok(())
    }

    /// `user:group:%04o`: the mode as `FsPermission` keeps it (the rwx
    /// bits and the sticky bit).
    fn permission(&mut self, v: u64) {
        let p = PermBits::unpack(v);
        let img = self.img;
        self.open("permission");
        // The table's names are UTF-8 (protobuf strings).
        xml_text(img_name(img, StringTag::User, p.user), &mut self.out);
        self.out.push(b':');
        xml_text(img_name(img, StringTag::Group, p.group), &mut self.out);
        self.out.push(b':');
        let m = p.mode & 0o1777;
        for shift in [9, 6, 3, 0] {
            self.out.push(b'0' + ((m >> shift) & 7) as u8);
        }
        self.close("permission");
    }

    fn xattrs(&mut self, x: &i_node_section::XAttrFeatureProto) -> Result<(), String> {
        self.raw("<xattrs>");
        for a in &x.x_attrs {
            let b = XAttrBits::unpack(a.name);
            let ns = match b.ns {
                0 => "USER",
                1 => "TRUSTED",
                2 => "SECURITY",
                3 => "SYSTEM",
                4 => "RAW",
                n => return Err(format!("xattr namespace {n}")),
            };
            let img = self.img;
            let Some(name) = lookup(img, StringTag::XAttr, b.name) else {
                return Err(format!(
                    "xattr name id {} is not in the string table",
                    b.name
                ));
            };
            self.raw("<xattr>");
            self.text("ns", ns.as_bytes());
            self.text("name", name);
            match std::str::from_utf8(a.value()) {
                Ok(v) => self.text("val", v.as_bytes()),
                Err(_) => {
                    self.open("valHex");
                    push_hex(a.value(), &mut self.out);
                    self.close("valHex");
                }
            }
            self.raw("</xattr>");
        }
        self.raw("</xattrs>");
        Ok(())
    }

    fn acls(&mut self, acl: Option<&i_node_section::AclFeatureProto>) {
        let Some(acl) = acl.filter(|a| !a.entries.is_empty()) else {
            return;
        };
        let img = self.img;
        self.raw("<acls>");
        for &v in &acl.entries {
            let e = AclBits::unpack(v);
            self.open("acl");
            if e.default_scope {
                self.raw("default:");
            }
            self.raw(crate::text::acl_kind_name(e.kind));
            self.raw(":");
            if e.kind < 2 {
                let name = lookup(img, e.name_tag(), e.name).unwrap_or_default();
                xml_text(name, &mut self.out);
            }
            self.raw(":");
            self.out
                .extend_from_slice(&crate::text::rwx(u32::from(e.perm)));
            self.close("acl");
        }
        self.raw("</acls>");
    }
}

impl Printer<'_, '_> {
    /// The pieces of a section: its sub-sections, or itself whole.
    fn pieces(&self, sec: &SummarySection) -> Result<Vec<SummarySection>, ViewError> {
        Ok(self.img.pieces(sec)?)
    }

    fn section(&mut self, sec: &SummarySection) -> Result<(), ViewError> {
        match sec.section {
            HdfsSection::NsInfo => self.name_section(sec),
            HdfsSection::ErasureCoding => self.erasure_coding(sec),
            HdfsSection::Inode => self.inodes(sec),
            HdfsSection::InodeReference => self.references(sec),
            HdfsSection::Snapshot => self.snapshots(sec),
            HdfsSection::InodeDir => self.directories(sec),
            HdfsSection::FilesUnderConstruction => self.under_construction(sec),
            HdfsSection::SnapshotDiff => self.snapshot_diffs(sec),
            HdfsSection::SecretManager => self.secret_manager(sec),
            HdfsSection::CacheManager => self.cache_manager(sec),
            // The string table is read at open; OIV prints nothing of the
            // others (sub-sections are read as their section's pieces).
            _ => Ok(()),
        }
    }

    fn name_section(&mut self, sec: &SummarySection) -> Result<(), ViewError> {
        let mut buf = Vec::new();
        let mut m = self.img.messages(sec, &mut buf);
        let s: NameSystemSection = m.must("NS_INFO")?;
        self.raw("<NameSection>");
        self.num("namespaceId", jint(s.namespace_id()));
        self.num("genstampV1", jlong(s.genstamp_v1()));
        self.num("genstampV2", jlong(s.genstamp_v2()));
        self.num("genstampV1Limit", jlong(s.genstamp_v1_limit()));
        self.num("lastAllocatedBlockId", jlong(s.last_allocated_block_id()));
        self.num("txid", jlong(s.transaction_id()));
        self.raw("</NameSection>\n");
        Ok(())
    }

    fn erasure_coding(&mut self, sec: &SummarySection) -> Result<(), ViewError> {
        let mut buf = Vec::new();
        let mut m = self.img.messages(sec, &mut buf);
        let pos = m.pos();
        let s: ErasureCodingSection = m.must("the ERASURE_CODING section")?;
        if s.policies.is_empty() {
            return Ok(());
        }
        self.raw("<ErasureCodingSection>\n");
        for p in &s.policies {
            let policy = ec_policy(p).ok_or_else(|| {
                m.err(
                    pos,
                    format!(
                        "erasure coding policy {} is not a built-in one and has no name, schema or cell size",
                        p.id
                    ),
                )
            })?;
            let state = p
                .state
                .map(ErasureCodingPolicyState::try_from)
                .transpose()
                .map_err(|_| {
                    m.err(
                        pos,
                        format!("erasure coding policy {} has an unknown state", p.id),
                    )
                })?
                .ok_or_else(|| {
                    m.err(pos, format!("erasure coding policy {} has no state", p.id))
                })?;
            self.raw("<erasureCodingPolicy>\n");
            // The policy id is a Java byte.
            self.num("policyId", i8::from_le_bytes([p.id.to_le_bytes()[0]]));
            self.text("policyName", policy.name.as_bytes());
            self.num("cellSize", policy.cell_size);
            self.text("policyState", state.as_str_name().as_bytes());
            self.raw("<ecSchema>\n");
            self.text("codecName", policy.codec.as_bytes());
            self.num("dataUnits", policy.data);
            self.num("parityUnits", policy.parity);
            if !policy.options.is_empty() {
                self.raw("<extraOptions>\n");
                for (k, v) in &policy.options {
                    self.raw("<option>\n");
                    self.text("key", k.as_bytes());
                    self.text("value", v.as_bytes());
                    self.raw("</option>\n");
                }
                self.raw("</extraOptions>\n");
            }
            self.raw("</ecSchema>\n");
            self.raw("</erasureCodingPolicy>\n\n");
        }
        self.raw("</ErasureCodingSection>\n\n");
        Ok(())
    }

    /// INodeSection: the header here, then the inodes' messages read in
    /// batches on this thread, decoded and formatted by the workers, each
    /// writing its batch's text in turn (see [`Turn`]).
    fn inodes(&mut self, sec: &SummarySection) -> Result<(), ViewError> {
        let img = self.img;
        let pieces = self.pieces(sec)?;
        let Some(first) = pieces.first() else {
            return Ok(());
        };
        let mut buf = Vec::new();
        let mut m = img.messages(first, &mut buf);
        let h: INodeSection = m.must("the INODE header")?;
        self.raw("<INodeSection>");
        self.num("lastInodeId", jlong(h.last_inode_id()));
        self.num("numInodes", jlong(h.num_inodes()));
        // Only a counter: nothing is sized from it, and a section that
        // ends before it is refused below.
        let declared = h.num_inodes();
        self.flush()?;
        let threads = self.threads.max(1);
        let w_name = self.w_name;
        let turn = Turn {
            state: Mutex::new(TurnState {
                next: 0,
                w: &mut *self.w,
                bytes: 0,
                rows: 0,
                failed: None,
            }),
            moved: Condvar::new(),
            stop: AtomicBool::new(false),
        };
        let read = std::thread::scope(|scope| {
            let (todo_tx, todo_rx) = crossbeam_channel::bounded::<Batch>(threads);
            for _ in 0..threads {
                let (todo_rx, turn, pieces) = (todo_rx.clone(), &turn, &pieces);
                scope.spawn(move || {
                    for b in todo_rx {
                        work(img, pieces, &b, turn, w_name);
                    }
                });
            }
            drop(todo_rx);
            let read = read_batches(img, m, &pieces, declared, &todo_tx, &turn.stop);
            drop(todo_tx);
            read
        });
        let state = turn.state.into_inner();
        // A batch's error is earlier in the file than the reader's.
        if let Some(e) = state.failed {
            return Err(e);
        }
        let left = read?;
        self.stats.bytes = self.stats.bytes.saturating_add(state.bytes);
        self.stats.rows = self.stats.rows.saturating_add(state.rows);
        if left > 0 {
            return Err(LoadError::Corrupt {
                path: img.path().to_path_buf(),
                at: sec.at(),
                detail: format!("the INODE section ends {left} inodes before its header's count"),
            }
            .into());
        }
        self.raw("</INodeSection>\n");
        Ok(())
    }

    /// Each message of `sec`'s pieces, decoded as `M` (`what` in errors),
    /// refused as the load refuses it unless `has` finds the field every
    /// NameNode writes (`missing` says which), handed to `f` with the
    /// messages and where it starts.
    fn each<M: prost::Message + Default>(
        &mut self,
        sec: &SummarySection,
        what: &str,
        has: impl Fn(&M) -> bool,
        missing: &str,
        mut f: impl FnMut(&mut Self, M, &mut Messages<'_>, usize) -> Result<(), ViewError>,
    ) -> Result<(), ViewError> {
        let img = self.img;
        for piece in self.pieces(sec)? {
            let mut buf = Vec::new();
            let mut m = img.messages(&piece, &mut buf);
            loop {
                let pos = m.pos();
                let Some(r) = m.next::<M>(what)? else {
                    break;
                };
                need(&m, pos, has(&r), missing)?;
                f(self, r, &mut m, pos)?;
                self.maybe_flush()?;
            }
        }
        Ok(())
    }

    fn references(&mut self, sec: &SummarySection) -> Result<(), ViewError> {
        self.raw("<INodeReferenceSection>");
        self.each(
            sec,
            "an INODE_REFERENCE entry",
            |r: &INodeReference| r.referred_id.is_some(),
            "an INODE_REFERENCE entry has no referredId",
            |p, r, _, _| {
                p.raw("<ref>");
                p.num("referredId", jlong(r.referred_id()));
                p.lossy("name", r.name());
                p.num("dstSnapshotId", jint(r.dst_snapshot_id()));
                p.num("lastSnapshotId", jint(r.last_snapshot_id()));
                p.raw("</ref>\n");
                Ok(())
            },
        )?;
        self.raw("</INodeReferenceSection>");
        Ok(())
    }

    fn snapshots(&mut self, sec: &SummarySection) -> Result<(), ViewError> {
        let mut buf = Vec::new();
        let img = self.img;
        let mut m = img.messages(sec, &mut buf);
        let s: SnapshotSection = m.must("the SNAPSHOT header")?;
        self.raw("<SnapshotSection>");
        self.num("snapshotCounter", jint(s.snapshot_counter()));
        self.num("numSnapshots", jint(s.num_snapshots()));
        if !s.snapshottable_dir.is_empty() {
            self.raw("<snapshottableDir>");
            for &d in &s.snapshottable_dir {
                self.num("dir", jlong(d));
            }
            self.raw("</snapshottableDir>\n");
        }
        let n = m.bound(u64::from(s.num_snapshots()), "snapshots")?;
        for _ in 0..n {
            let pos = m.pos();
            let p: Snapshot = m.must("a snapshot")?;
            need(
                &m,
                pos,
                p.root.is_some(),
                "a snapshot has no root directory",
            )?;
            self.raw("<snapshot>");
            self.num("id", jint(p.snapshot_id()));
            self.raw("<root>");
            // `need` found the root.
            self.inode_fields(p.root.as_ref().unwrap_or(&INode::default()))
                .map_err(|d| m.err(pos, d))?;
            self.raw("</root></snapshot>");
            self.maybe_flush()?;
        }
        self.raw("</SnapshotSection>\n");
        Ok(())
    }

    fn directories(&mut self, sec: &SummarySection) -> Result<(), ViewError> {
        self.raw("<INodeDirectorySection>");
        self.each(
            sec,
            "an INODE_DIR entry",
            |e: &DirEntry| e.parent.is_some(),
            "an INODE_DIR entry has no parent",
            |p, e, _, _| {
                p.raw("<directory>");
                p.num("parent", jlong(e.parent()));
                for &c in &e.children {
                    p.num("child", jlong(c));
                }
                for &r in &e.ref_children {
                    p.num("refChild", jint(r));
                }
                p.raw("</directory>\n");
                Ok(())
            },
        )?;
        self.raw("</INodeDirectorySection>\n");
        Ok(())
    }

    fn under_construction(&mut self, sec: &SummarySection) -> Result<(), ViewError> {
        self.raw("<FileUnderConstructionSection>");
        self.each(
            sec,
            "a FILES_UNDERCONSTRUCTION entry",
            |e: &FileUnderConstructionEntry| e.inode_id.is_some(),
            "a FILES_UNDERCONSTRUCTION entry has no inodeId",
            |p, e, _, _| {
                p.raw("<inode>");
                p.num("id", jlong(e.inode_id()));
                p.text("path", e.full_path().as_bytes());
                p.raw("</inode>\n");
                Ok(())
            },
        )?;
        self.raw("</FileUnderConstructionSection>\n");
        Ok(())
    }

    fn snapshot_diffs(&mut self, sec: &SummarySection) -> Result<(), ViewError> {
        self.raw("<SnapshotDiffSection>");
        self.each(
            sec,
            "a SNAPSHOT_DIFF entry",
            |e: &DiffEntry| e.inode_id.is_some(),
            "a SNAPSHOT_DIFF entry has no inodeId",
            |p, e, m, pos| {
                let file = match diff_entry::Type::try_from(e.r#type) {
                    Ok(diff_entry::Type::Filediff) => true,
                    Ok(diff_entry::Type::Directorydiff) => false,
                    Err(_) => {
                        return Err(m
                            .err(pos, format!("unknown diff entry type {}", e.r#type))
                            .into())
                    }
                };
                let tag = if file {
                    "fileDiffEntry"
                } else {
                    "dirDiffEntry"
                };
                p.open(tag);
                p.num("inodeId", jlong(e.inode_id()));
                p.num("count", jint(e.num_of_diff()));
                let n = m.bound(u64::from(e.num_of_diff()), "diffs")?;
                for _ in 0..n {
                    if file {
                        p.file_diff(m)?;
                    } else {
                        p.dir_diff(m)?;
                    }
                    p.maybe_flush()?;
                }
                p.close(tag);
                Ok(())
            },
        )?;
        self.raw("</SnapshotDiffSection>\n");
        Ok(())
    }

    fn file_diff(&mut self, m: &mut Messages<'_>) -> Result<(), ViewError> {
        let pos = m.pos();
        let f: FileDiff = m.must("a file diff")?;
        need(
            m,
            pos,
            f.snapshot_id.is_some(),
            "a snapshot diff has no snapshotId",
        )?;
        self.raw("<fileDiff>");
        self.num("snapshotId", jint(f.snapshot_id()));
        self.num("size", jlong(f.file_size()));
        self.lossy("name", f.name());
        // Java's getSnapshotCopy() is never null: an absent copy prints
        // as the default file's fields.
        self.raw("<snapshotCopy>");
        self.file(f.snapshot_copy.as_ref().unwrap_or(&Default::default()))
            .map_err(|d| m.err(pos, d))?;
        self.raw("</snapshotCopy>\n");
        self.blocks(&f.blocks);
        self.raw("</fileDiff>\n");
        Ok(())
    }

    fn dir_diff(&mut self, m: &mut Messages<'_>) -> Result<(), ViewError> {
        let pos = m.pos();
        let d: DirectoryDiff = m.must("a directory diff")?;
        need(
            m,
            pos,
            d.snapshot_id.is_some(),
            "a snapshot diff has no snapshotId",
        )?;
        self.raw("<dirDiff>");
        self.num("snapshotId", jint(d.snapshot_id()));
        self.num("childrenSize", jint(d.children_size()));
        self.flag("isSnapshotRoot", d.is_snapshot_root());
        self.lossy("name", d.name());
        if let Some(c) = &d.snapshot_copy {
            self.raw("<snapshotCopy>");
            self.directory(c).map_err(|d| m.err(pos, d))?;
            self.raw("</snapshotCopy>\n");
        }
        self.num("createdListSize", jint(d.created_list_size()));
        for &i in &d.deleted_inode {
            self.num("deletedInode", jlong(i));
        }
        for &r in &d.deleted_inode_ref {
            self.num("deletedInoderef", jint(r));
        }
        let n = m.bound(u64::from(d.created_list_size()), "created entries")?;
        for _ in 0..n {
            let c: CreatedListEntry = m.must("a created-list entry")?;
            self.raw("<created>");
            self.lossy("name", c.name());
            self.raw("</created>\n");
        }
        self.raw("</dirDiff>\n");
        Ok(())
    }

    fn secret_manager(&mut self, sec: &SummarySection) -> Result<(), ViewError> {
        let mut buf = Vec::new();
        let img = self.img;
        let mut m = img.messages(sec, &mut buf);
        let s: SecretManagerSection = m.must("the SECRET_MANAGER header")?;
        self.raw("<SecretManagerSection>");
        self.num("currentId", jint(s.current_id()));
        self.num("tokenSequenceNumber", jint(s.token_sequence_number()));
        self.num("numDelegationKeys", jint(s.num_keys()));
        self.num("numTokens", jint(s.num_tokens()));
        let keys = m.bound(u64::from(s.num_keys()), "delegation keys")?;
        for _ in 0..keys {
            let k: DelegationKey = m.must("a delegation key")?;
            self.raw("<delegationKey>");
            self.num("id", jint(k.id()));
            self.open("key");
            push_hex(k.key(), &mut self.out);
            self.close("key");
            if let Some(d) = k.expiry_date {
                self.date("expiry", d);
            }
            self.raw("</delegationKey>");
        }
        let tokens = m.bound(u64::from(s.num_tokens()), "tokens")?;
        for _ in 0..tokens {
            let t: PersistToken = m.must("a delegation token")?;
            self.raw("<token>");
            if let Some(v) = t.version {
                self.num("version", jint(v));
            }
            if let Some(v) = &t.owner {
                self.text("owner", v.as_bytes());
            }
            if let Some(v) = &t.renewer {
                self.text("renewer", v.as_bytes());
            }
            if let Some(v) = &t.real_user {
                self.text("realUser", v.as_bytes());
            }
            if let Some(v) = t.issue_date {
                self.date("issueDate", v);
            }
            if let Some(v) = t.max_date {
                self.date("maxDate", v);
            }
            if let Some(v) = t.sequence_number {
                self.num("sequenceNumber", jint(v));
            }
            if let Some(v) = t.master_key_id {
                self.num("masterKeyId", jint(v));
            }
            if let Some(v) = t.expiry_date {
                self.date("expiryDate", v);
            }
            self.raw("</token>");
            self.maybe_flush()?;
        }
        self.raw("</SecretManagerSection>");
        Ok(())
    }

    fn cache_manager(&mut self, sec: &SummarySection) -> Result<(), ViewError> {
        let mut buf = Vec::new();
        let img = self.img;
        let mut m = img.messages(sec, &mut buf);
        let s: CacheManagerSection = m.must("the CACHE_MANAGER header")?;
        self.raw("<CacheManagerSection>");
        self.num("nextDirectiveId", jlong(s.next_directive_id));
        self.num("numDirectives", jint(s.num_directives));
        self.num("numPools", jint(s.num_pools));
        let pools = m.bound(u64::from(s.num_pools), "cache pools")?;
        for _ in 0..pools {
            let p: CachePoolInfoProto = m.must("a cache pool")?;
            self.raw("<pool>");
            self.text("poolName", p.pool_name().as_bytes());
            self.text("ownerName", p.owner_name().as_bytes());
            self.text("groupName", p.group_name().as_bytes());
            self.num("mode", p.mode());
            self.num("limit", p.limit());
            self.num("maxRelativeExpiry", p.max_relative_expiry());
            self.raw("</pool>\n");
        }
        let directives = m.bound(u64::from(s.num_directives), "cache directives")?;
        for _ in 0..directives {
            let d: CacheDirectiveInfoProto = m.must("a cache directive")?;
            self.raw("<directive>");
            self.num("id", d.id());
            self.text("path", d.path().as_bytes());
            self.num("replication", jint(d.replication()));
            self.text("pool", d.pool().as_bytes());
            let e = d.expiration.unwrap_or_default();
            self.raw("<expiration>");
            self.num("millis", e.millis);
            self.flag("relative", e.is_relative);
            self.raw("</expiration>\n");
            self.raw("</directive>\n");
            self.maybe_flush()?;
        }
        self.raw("</CacheManagerSection>\n");
        Ok(())
    }
}

/// The bytes of inode messages one batch holds (about; a message may
/// take it past): their text is about three times as long.
const BATCH: usize = 256 << 10;

/// The text a worker holds before it waits for its batch's turn to write
/// it (at its batch's end it waits anyway).
const HELD: usize = 8 << 20;

/// Inode messages read, in file order.
struct Batch {
    seq: u64,
    /// The piece (index into the section's pieces) they come from.
    piece: usize,
    data: Vec<u8>,
    /// Each message: where it starts in the piece, and its range in `data`.
    spans: Vec<(usize, std::ops::Range<usize>)>,
}

/// Whose turn it is to write: the workers take batches in file order and
/// write their text in that order, each waiting for its batch's turn once
/// its buffer passes [`HELD`] and at its batch's end, so that a worker
/// holds at most one batch and [`HELD`] (and one inode) of text, whatever
/// the names the inodes print.
struct Turn<'w, 'o> {
    state: Mutex<TurnState<'w, 'o>>,
    moved: Condvar,
    /// Set once a batch failed: the reader stops, the workers skip.
    stop: AtomicBool,
}

struct TurnState<'w, 'o> {
    /// The batch whose text goes out now.
    next: u64,
    w: &'w mut (dyn Write + Send + 'o),
    bytes: u64,
    rows: u64,
    /// The first error, in batch order.
    failed: Option<ViewError>,
}

impl Turn<'_, '_> {
    /// Waits for batch `seq`'s turn, then writes `out` (unless a batch
    /// failed) and empties it; with `end`, records `failed` or `rows` and
    /// passes the turn on.
    fn write(
        &self,
        seq: u64,
        out: &mut Vec<u8>,
        w_name: &Path,
        end: Option<(u64, Option<ViewError>)>,
    ) {
        let mut st = self.state.lock();
        while st.next != seq {
            self.moved.wait(&mut st);
        }
        if st.failed.is_none() && !out.is_empty() {
            // Caught, so that the turn is passed on whatever the writer
            // does: a later batch never waits for ever.
            let w = &mut st.w;
            let wrote = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.write_all(out)))
                .unwrap_or_else(|_| Err(std::io::Error::other("the output panicked")));
            match wrote {
                Ok(()) => st.bytes = st.bytes.saturating_add(out.len() as u64),
                Err(source) => {
                    st.failed = Some(ViewError::Io {
                        path: w_name.to_path_buf(),
                        source,
                    })
                }
            }
        }
        out.clear();
        if let Some((rows, failed)) = end {
            if st.failed.is_none() {
                st.failed = failed;
                st.rows = st.rows.saturating_add(rows);
            }
            st.next += 1;
            self.moved.notify_all();
        }
        if st.failed.is_some() {
            self.stop.store(true, Ordering::Relaxed);
        }
    }
}

/// One worker's batch: decoded and formatted, written in its turn; the
/// turn passed on whatever happens (a panic is caught and is the batch's
/// error, so that no later batch waits for ever).
fn work(
    img: &HdfsSections,
    pieces: &[SummarySection],
    b: &Batch,
    turn: &Turn<'_, '_>,
    w_name: &Path,
) {
    let mut f = Fmt {
        img,
        out: Vec::with_capacity(BATCH * 4),
    };
    let done = if turn.stop.load(Ordering::Relaxed) {
        Ok(0)
    } else {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            format_batch(pieces, b, &mut f, turn, w_name)
        }))
        .unwrap_or_else(|_| {
            Err(ViewError::BadArgument {
                detail: "formatting an inode panicked".into(),
            })
        })
    };
    let (rows, failed) = match done {
        Ok(n) => (n, None),
        Err(e) => {
            // No half of a batch goes out.
            f.out.clear();
            (0, Some(e))
        }
    };
    turn.write(b.seq, &mut f.out, w_name, Some((rows, failed)));
}

/// Decodes and formats one batch of inodes into `f`, writing its text in
/// the batch's turn whenever it passes [`HELD`]; the inodes formatted.
fn format_batch(
    pieces: &[SummarySection],
    b: &Batch,
    f: &mut Fmt<'_>,
    turn: &Turn<'_, '_>,
    w_name: &Path,
) -> Result<u64, ViewError> {
    let img = f.img;
    let at = |pos: usize, why: String| -> ViewError {
        match pieces.get(b.piece) {
            Some(p) => img.corrupt_at(p, pos, why).into(),
            None => ViewError::BadArgument { detail: why },
        }
    };
    for (pos, range) in &b.spans {
        let body = b.data.get(range.clone()).unwrap_or_default();
        let p =
            INode::decode(body).map_err(|e| at(*pos, format!("an inode does not decode: {e}")))?;
        f.raw("<inode>");
        f.inode_fields(&p).map_err(|d| at(*pos, d))?;
        f.raw("</inode>\n");
        if f.out.len() >= HELD {
            turn.write(b.seq, &mut f.out, w_name, None);
        }
    }
    Ok(b.spans.len() as u64)
}

/// Reads up to `left` inode messages, from `m` (the first piece's, its
/// header read) and then the other pieces, into batches for the workers
/// (a batch holds one piece's messages) until `stop`; the messages the
/// header declares that the section lacks.
fn read_batches(
    img: &HdfsSections,
    m: Messages<'_>,
    pieces: &[SummarySection],
    left: u64,
    todo: &crossbeam_channel::Sender<Batch>,
    stop: &AtomicBool,
) -> Result<u64, ViewError> {
    let mut r = Reader {
        todo,
        left,
        seq: 0,
        stopped: false,
        stop,
    };
    r.piece(m, 0)?;
    let mut buf = Vec::new();
    for (i, p) in pieces.iter().enumerate().skip(1) {
        if r.left == 0 || r.stopped {
            break;
        }
        r.piece(img.messages(p, &mut buf), i)?;
    }
    Ok(r.left)
}

/// The reading side of the inodes' pipeline.
struct Reader<'c> {
    todo: &'c crossbeam_channel::Sender<Batch>,
    left: u64,
    seq: u64,
    /// Whether to read no more.
    stopped: bool,
    /// Set once a batch failed.
    stop: &'c AtomicBool,
}

impl Reader<'_> {
    /// Reads piece `piece`'s messages (up to the count left) into batches.
    fn piece(&mut self, mut m: Messages<'_>, piece: usize) -> Result<(), ViewError> {
        let mut batch = self.batch(piece);
        while self.left > 0 && !self.stopped {
            let Some((pos, body)) = m.next_raw()? else {
                break;
            };
            self.left -= 1;
            let start = batch.data.len();
            batch.data.extend_from_slice(body);
            batch.spans.push((pos, start..batch.data.len()));
            if batch.data.len() >= BATCH {
                let next = self.batch(piece);
                self.send(std::mem::replace(&mut batch, next));
            }
        }
        if !batch.spans.is_empty() {
            self.send(batch);
        }
        Ok(())
    }

    fn batch(&self, piece: usize) -> Batch {
        Batch {
            seq: 0,
            piece,
            data: Vec::with_capacity(BATCH + (64 << 10)),
            spans: Vec::new(),
        }
    }

    fn send(&mut self, mut b: Batch) {
        b.seq = self.seq;
        self.seq += 1;
        if self.stop.load(Ordering::Relaxed) || self.todo.send(b).is_err() {
            self.stopped = true;
        }
    }
}

/// An erasure coding policy as OIV prints it.
struct Policy {
    name: String,
    cell_size: i32,
    codec: String,
    data: i32,
    parity: i32,
    options: Vec<(String, String)>,
}

/// Hadoop's built-in policies (`SystemErasureCodingPolicies`), which it
/// prints from its own definitions whatever the image stores: id, name,
/// codec, data and parity units; each with 1 MiB cells.
const BUILT_IN: [(u32, &str, &str, i32, i32); 5] = [
    (1, "RS-6-3-1024k", "rs", 6, 3),
    (2, "RS-3-2-1024k", "rs", 3, 2),
    (3, "RS-LEGACY-6-3-1024k", "rs-legacy", 6, 3),
    (4, "XOR-2-1-1024k", "xor", 2, 1),
    (5, "RS-10-4-1024k", "rs", 10, 4),
];

/// The policy a stored one denotes: a built-in one by its id (Hadoop
/// reads the id as a byte), another from its stored fields, which must
/// all be there.
fn ec_policy(p: &ErasureCodingPolicyProto) -> Option<Policy> {
    let id = u32::from(p.id.to_le_bytes()[0]);
    if let Some(&(_, name, codec, data, parity)) = BUILT_IN.iter().find(|b| b.0 == id) {
        return Some(Policy {
            name: name.into(),
            cell_size: 1 << 20,
            codec: codec.into(),
            data,
            parity,
            options: Vec::new(),
        });
    }
    let schema = p.schema.as_ref()?;
    Some(Policy {
        name: p.name.clone()?,
        cell_size: jint(p.cell_size?),
        codec: schema.codec_name.clone(),
        data: jint(schema.data_units),
        parity: jint(schema.parity_units),
        options: java_hash_map_order(
            schema
                .options
                .iter()
                .map(|o| (o.key.clone(), o.value.clone())),
        ),
    })
}

/// Java's `String.hashCode`: over UTF-16 code units.
fn java_hash(s: &str) -> u32 {
    s.encode_utf16()
        .fold(0u32, |h, c| h.wrapping_mul(31).wrapping_add(u32::from(c)))
}

/// The order in which OIV prints a schema's options: Hadoop puts them in
/// a `HashMap` sized for their count (a key given twice keeps its first
/// place and its last value) and prints the map's iteration order, by
/// bucket (`(h ^ h >>> 16)` masked to the table's size), then by insertion
/// within a bucket. The table starts at the power of two at or above the
/// count and doubles when the entries pass three quarters of it, or when
/// a bucket's chain reaches nine entries in a table under 64 (bins of a
/// larger table become trees, whose order is kept here as inserted).
fn java_hash_map_order(entries: impl Iterator<Item = (String, String)>) -> Vec<(String, String)> {
    let bucket = |h: u32, cap: usize| ((h ^ (h >> 16)) as usize) & (cap - 1);
    let entries: Vec<(String, String)> = entries.collect();
    let mut cap = entries.len().max(1).next_power_of_two();
    // Kept entries (key, value, hash), their index by key, and the length
    // of each bucket's chain at the current size.
    let mut kept: Vec<(String, String, u32)> = Vec::with_capacity(entries.len());
    let mut index: HashMap<String, usize> = HashMap::with_capacity(entries.len());
    let mut chains: HashMap<usize, usize> = HashMap::new();
    for (k, v) in entries {
        if let Some(&i) = index.get(&k) {
            kept[i].1 = v;
            continue;
        }
        let h = java_hash(&k);
        index.insert(k.clone(), kept.len());
        kept.push((k, v, h));
        let chain = chains.entry(bucket(h, cap)).or_insert(0);
        *chain += 1;
        let grow = (*chain >= 9 && cap < 64) || kept.len() > cap * 3 / 4;
        if grow {
            cap *= 2;
            if kept.len() > cap * 3 / 4 {
                cap *= 2;
            }
            chains.clear();
            for e in &kept {
                *chains.entry(bucket(e.2, cap)).or_insert(0) += 1;
            }
        }
    }
    kept.sort_by_key(|e| bucket(e.2, cap));
    kept.into_iter().map(|(k, v, _)| (k, v)).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn options_come_in_java_hash_map_order() {
        let kv = |k: &str, v: &str| (k.to_string(), v.to_string());
        // "k1" hashes to bucket 2 of 4, "a" to bucket 1.
        let got = super::java_hash_map_order([kv("k1", "v1"), kv("a", "b")].into_iter());
        assert_eq!(got, vec![kv("a", "b"), kv("k1", "v1")]);
        // A key given twice keeps its first place and its last value.
        let got =
            super::java_hash_map_order([kv("a", "1"), kv("k1", "2"), kv("a", "3")].into_iter());
        assert_eq!(got, vec![kv("a", "3"), kv("k1", "2")]);
        // Many keys: in bucket order of the grown table, quickly.
        let many: Vec<_> = (0..200_000).map(|i| kv(&format!("key{i}"), "v")).collect();
        let got = super::java_hash_map_order(many.into_iter());
        assert_eq!(got.len(), 200_000);
    }

    #[test]
    fn dates_print_as_java_does() {
        use crate::text::oiv_xml_date;
        assert_eq!(oiv_xml_date(0), "1970-01-01T00:00:00.000");
        assert_eq!(oiv_xml_date(1_600_000_000_123), "2020-09-13T12:26:40.123");
        assert_eq!(oiv_xml_date(951_782_400_000), "2000-02-29T00:00:00.000");
    }
}
