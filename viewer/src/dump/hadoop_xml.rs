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

use super::escape::xml_text;
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
use std::io::Write;
use std::path::Path;

/// The output buffer's size at which it is written out.
const FLUSH_AT: usize = 1 << 20;

/// Dumps the Hadoop image at `image` as OIV's XML into `w` (`w_name`
/// names it in errors); `md5` says whether its `.md5` sidecar is checked
/// (hashed while the sections are read, the verdict at the end).
///
/// # Errors
/// The image's damage (a `Corrupt` load error naming section and offset),
/// the sidecar's verdict, the output's I/O errors.
pub fn dump_hadoop_xml(
    image: &Path,
    md5: Md5Policy,
    w: &mut (dyn Write + Send),
    w_name: &Path,
) -> Result<DumpStats, ViewError> {
    let img = HdfsSections::open(image, md5)?;
    let mut p = Printer {
        img: &img,
        out: Vec::with_capacity(FLUSH_AT + (64 << 10)),
        w,
        w_name,
        stats: DumpStats {
            threads: 1,
            ..DumpStats::default()
        },
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

struct Printer<'a, 'w> {
    img: &'a HdfsSections,
    out: Vec<u8>,
    w: &'a mut (dyn Write + Send + 'w),
    w_name: &'a Path,
    stats: DumpStats,
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
            .write_all(&self.out)
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

    fn raw(&mut self, s: &str) {
        self.out.extend_from_slice(s.as_bytes());
    }

    fn num(&mut self, tag: &str, v: impl std::fmt::Display) {
        // Writes into a Vec cannot fail.
        let _ = write!(self.out, "<{tag}>{v}</{tag}>");
    }

    fn text(&mut self, tag: &str, v: &[u8]) {
        let _ = write!(self.out, "<{tag}>");
        xml_text(v, &mut self.out);
        let _ = write!(self.out, "</{tag}>");
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

    fn inodes(&mut self, sec: &SummarySection) -> Result<(), ViewError> {
        let mut left = None;
        for piece in self.pieces(sec)? {
            let mut buf = Vec::new();
            let img = self.img;
            let mut m = img.messages(&piece, &mut buf);
            let n = match left {
                Some(n) => n,
                None => {
                    let h: INodeSection = m.must("the INODE header")?;
                    self.raw("<INodeSection>");
                    self.num("lastInodeId", jlong(h.last_inode_id()));
                    self.num("numInodes", jlong(h.num_inodes()));
                    m.bound(h.num_inodes(), "inodes")?
                }
            };
            let mut n = n;
            while n > 0 {
                let Some(p) = m.next::<INode>("an inode")? else {
                    break;
                };
                n -= 1;
                self.raw("<inode>");
                self.inode_fields(&m, &p)?;
                self.raw("</inode>\n");
                self.stats.rows += 1;
                self.maybe_flush()?;
            }
            left = Some(n);
        }
        match left {
            Some(0) => {}
            Some(n) => {
                return Err(LoadError::Corrupt {
                    path: self.img.path().to_path_buf(),
                    at: sec.at(),
                    detail: format!("the INODE section ends {n} inodes before its header's count"),
                }
                .into())
            }
            None => {}
        }
        self.raw("</INodeSection>\n");
        Ok(())
    }

    fn inode_fields(&mut self, m: &Messages<'_>, p: &INode) -> Result<(), ViewError> {
        let ty = i_node_section::i_node::Type::try_from(p.r#type)
            .map_err(|_| m.err(m.pos(), format!("inode {} has type {}", p.id, p.r#type)))?;
        self.num("id", jlong(p.id));
        self.text("type", ty.as_str_name().as_bytes());
        self.lossy("name", p.name());
        if let Some(f) = &p.file {
            self.file(m, f)?;
        } else if let Some(d) = &p.directory {
            self.directory(m, d)?;
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

    fn file(&mut self, m: &Messages<'_>, f: &i_node_section::INodeFile) -> Result<(), ViewError> {
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
            self.xattrs(m, x)?;
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

    fn directory(
        &mut self,
        m: &Messages<'_>,
        d: &i_node_section::INodeDirectory,
    ) -> Result<(), ViewError> {
        self.num("mtime", jlong(d.modification_time()));
        self.permission(d.permission());
        if let Some(x) = &d.x_attrs {
            self.xattrs(m, x)?;
        }
        self.acls(d.acl.as_ref());
        if d.ns_quota.is_some() && d.ds_quota.is_some() {
            self.num("nsquota", jlong(d.ns_quota()));
            self.num("dsquota", jlong(d.ds_quota()));
        }
        for q in d.type_quotas.iter().flat_map(|t| &t.quotas) {
            let st = StorageTypeProto::try_from(q.storage_type)
                .map_err(|_| m.err(m.pos(), format!("storage type {}", q.storage_type)))?;
            self.raw("<typeQuota>");
            self.text("type", st.as_str_name().as_bytes());
            self.num("quota", jlong(q.quota));
            self.raw("</typeQuota>");
        }
        Ok(())
    }

    /// A name of the string table, as OIV looks it up: id 0 and ids the
    /// table lacks are Java's `null`.
    fn name(&self, tag: StringTag, serial: u32) -> Option<&[u8]> {
        if serial == 0 {
            return None;
        }
        self.img.name(tag, serial)
    }

    /// `user:group:%04o`: the mode as `FsPermission` keeps it (the rwx
    /// bits and the sticky bit).
    fn permission(&mut self, v: u64) {
        let p = PermBits::unpack(v);
        let mut s = Vec::new();
        s.extend_from_slice(self.name(StringTag::User, p.user).unwrap_or(b"null"));
        s.push(b':');
        s.extend_from_slice(self.name(StringTag::Group, p.group).unwrap_or(b"null"));
        let _ = write!(s, ":{:04o}", p.mode & 0o1777);
        let s = String::from_utf8_lossy(&s).into_owned();
        self.text("permission", s.as_bytes());
    }

    fn xattrs(
        &mut self,
        m: &Messages<'_>,
        x: &i_node_section::XAttrFeatureProto,
    ) -> Result<(), ViewError> {
        self.raw("<xattrs>");
        for a in &x.x_attrs {
            let b = XAttrBits::unpack(a.name);
            let ns = match b.ns {
                0 => "USER",
                1 => "TRUSTED",
                2 => "SECURITY",
                3 => "SYSTEM",
                4 => "RAW",
                n => return Err(m.err(m.pos(), format!("xattr namespace {n}")).into()),
            };
            let Some(name) = self.name(StringTag::XAttr, b.name) else {
                return Err(m
                    .err(
                        m.pos(),
                        format!("xattr name id {} is not in the string table", b.name),
                    )
                    .into());
            };
            let name = String::from_utf8_lossy(name).into_owned();
            self.raw("<xattr>");
            self.text("ns", ns.as_bytes());
            self.text("name", name.as_bytes());
            match std::str::from_utf8(a.value()) {
                Ok(v) => self.text("val", v.as_bytes()),
                Err(_) => {
                    let mut hex = String::with_capacity(a.value().len() * 2);
                    for byte in a.value() {
                        let _ = std::fmt::Write::write_fmt(&mut hex, format_args!("{byte:02x}"));
                    }
                    self.text("valHex", hex.as_bytes());
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
        self.raw("<acls>");
        for &v in &acl.entries {
            let e = AclBits::unpack(v);
            let mut s = Vec::new();
            if e.default_scope {
                s.extend_from_slice(b"default:");
            }
            s.extend_from_slice(crate::text::acl_kind_name(e.kind).as_bytes());
            s.push(b':');
            if e.kind < 2 {
                s.extend_from_slice(self.name(e.name_tag(), e.name).unwrap_or_default());
            }
            s.push(b':');
            s.extend_from_slice(&crate::text::rwx(u32::from(e.perm)));
            let s = String::from_utf8_lossy(&s).into_owned();
            self.text("acl", s.as_bytes());
        }
        self.raw("</acls>");
    }

    fn references(&mut self, sec: &SummarySection) -> Result<(), ViewError> {
        self.raw("<INodeReferenceSection>");
        for piece in self.pieces(sec)? {
            let mut buf = Vec::new();
            let img = self.img;
            let mut m = img.messages(&piece, &mut buf);
            while let Some(r) = m.next::<INodeReference>("an INODE_REFERENCE entry")? {
                self.raw("<ref>");
                self.num("referredId", jlong(r.referred_id()));
                self.lossy("name", r.name());
                self.num("dstSnapshotId", jint(r.dst_snapshot_id()));
                self.num("lastSnapshotId", jint(r.last_snapshot_id()));
                self.raw("</ref>\n");
                self.maybe_flush()?;
            }
        }
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
            let p: Snapshot = m.must("a snapshot")?;
            self.raw("<snapshot>");
            self.num("id", jint(p.snapshot_id()));
            self.raw("<root>");
            self.inode_fields(&m, &p.root.clone().unwrap_or_default())?;
            self.raw("</root></snapshot>");
            self.maybe_flush()?;
        }
        self.raw("</SnapshotSection>\n");
        Ok(())
    }

    fn directories(&mut self, sec: &SummarySection) -> Result<(), ViewError> {
        self.raw("<INodeDirectorySection>");
        for piece in self.pieces(sec)? {
            let mut buf = Vec::new();
            let img = self.img;
            let mut m = img.messages(&piece, &mut buf);
            while let Some(e) = m.next::<DirEntry>("an INODE_DIR entry")? {
                self.raw("<directory>");
                self.num("parent", jlong(e.parent()));
                for &c in &e.children {
                    self.num("child", jlong(c));
                }
                for &r in &e.ref_children {
                    self.num("refChild", jint(r));
                }
                self.raw("</directory>\n");
                self.maybe_flush()?;
            }
        }
        self.raw("</INodeDirectorySection>\n");
        Ok(())
    }

    fn under_construction(&mut self, sec: &SummarySection) -> Result<(), ViewError> {
        let mut buf = Vec::new();
        let img = self.img;
        let mut m = img.messages(sec, &mut buf);
        self.raw("<FileUnderConstructionSection>");
        while let Some(e) =
            m.next::<FileUnderConstructionEntry>("a FILES_UNDERCONSTRUCTION entry")?
        {
            self.raw("<inode>");
            self.num("id", jlong(e.inode_id()));
            self.text("path", e.full_path().as_bytes());
            self.raw("</inode>\n");
            self.maybe_flush()?;
        }
        self.raw("</FileUnderConstructionSection>\n");
        Ok(())
    }

    fn snapshot_diffs(&mut self, sec: &SummarySection) -> Result<(), ViewError> {
        self.raw("<SnapshotDiffSection>");
        for piece in self.pieces(sec)? {
            let mut buf = Vec::new();
            let img = self.img;
            let mut m = img.messages(&piece, &mut buf);
            while let Some(e) = m.next::<DiffEntry>("a SNAPSHOT_DIFF entry")? {
                let file = match diff_entry::Type::try_from(e.r#type) {
                    Ok(diff_entry::Type::Filediff) => true,
                    Ok(diff_entry::Type::Directorydiff) => false,
                    Err(_) => {
                        return Err(m
                            .err(m.pos(), format!("unknown diff entry type {}", e.r#type))
                            .into())
                    }
                };
                let tag = if file {
                    "fileDiffEntry"
                } else {
                    "dirDiffEntry"
                };
                let _ = write!(self.out, "<{tag}>");
                self.num("inodeId", jlong(e.inode_id()));
                self.num("count", jint(e.num_of_diff()));
                let n = m.bound(u64::from(e.num_of_diff()), "diffs")?;
                for _ in 0..n {
                    if file {
                        self.file_diff(&mut m)?;
                    } else {
                        self.dir_diff(&mut m)?;
                    }
                    self.maybe_flush()?;
                }
                let _ = write!(self.out, "</{tag}>");
            }
        }
        self.raw("</SnapshotDiffSection>\n");
        Ok(())
    }

    fn file_diff(&mut self, m: &mut Messages<'_>) -> Result<(), ViewError> {
        let f: FileDiff = m.must("a file diff")?;
        self.raw("<fileDiff>");
        self.num("snapshotId", jint(f.snapshot_id()));
        self.num("size", jlong(f.file_size()));
        self.lossy("name", f.name());
        // Java's getSnapshotCopy() is never null: an absent copy prints
        // as the default file's fields.
        self.raw("<snapshotCopy>");
        self.file(m, &f.snapshot_copy.clone().unwrap_or_default())?;
        self.raw("</snapshotCopy>\n");
        self.blocks(&f.blocks);
        self.raw("</fileDiff>\n");
        Ok(())
    }

    fn dir_diff(&mut self, m: &mut Messages<'_>) -> Result<(), ViewError> {
        let d: DirectoryDiff = m.must("a directory diff")?;
        self.raw("<dirDiff>");
        self.num("snapshotId", jint(d.snapshot_id()));
        self.num("childrenSize", jint(d.children_size()));
        self.flag("isSnapshotRoot", d.is_snapshot_root());
        self.lossy("name", d.name());
        if let Some(c) = &d.snapshot_copy {
            self.raw("<snapshotCopy>");
            self.directory(m, c)?;
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
            let mut hex = String::with_capacity(k.key().len() * 2);
            for b in k.key() {
                let _ = std::fmt::Write::write_fmt(&mut hex, format_args!("{b:02x}"));
            }
            self.text("key", hex.as_bytes());
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
    let entries: Vec<(String, String)> = entries.collect();
    let bucket = |k: &str, cap: usize| {
        let h = java_hash(k);
        ((h ^ (h >> 16)) as usize) & (cap - 1)
    };
    let mut cap = entries.len().max(1).next_power_of_two();
    let mut kept: Vec<(String, String)> = Vec::with_capacity(entries.len());
    for (k, v) in entries {
        if let Some(e) = kept.iter_mut().find(|e| e.0 == k) {
            e.1 = v;
            continue;
        }
        let b = bucket(&k, cap);
        kept.push((k, v));
        let chain = kept.iter().filter(|e| bucket(&e.0, cap) == b).count();
        if chain >= 9 && cap < 64 {
            cap *= 2;
        }
        if kept.len() > cap * 3 / 4 {
            cap *= 2;
        }
    }
    kept.sort_by_key(|e| bucket(&e.0, cap));
    kept
}

#[cfg(test)]
mod tests {
    #[test]
    fn dates_print_as_java_does() {
        use crate::text::oiv_xml_date;
        assert_eq!(oiv_xml_date(0), "1970-01-01T00:00:00.000");
        assert_eq!(oiv_xml_date(1_600_000_000_123), "2020-09-13T12:26:40.123");
        assert_eq!(oiv_xml_date(951_782_400_000), "2000-02-29T00:00:00.000");
    }
}
