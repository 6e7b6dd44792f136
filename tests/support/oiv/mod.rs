//! An independent emulation of Hadoop's OIV XML processor
//! (`hdfs oiv -p XML`, `PBImageXmlWriter` in Hadoop 3), for the two
//! sections the HDFS interop tests compare byte for byte: `INodeSection`
//! and `INodeDirectorySection`.
//!
//! It reads an HDFS fsimage file (magic `HDFSIMG1`) directly with the
//! prost types of `nsimage_format::hdfs_pb`, sharing no code with the
//! loader or the viewer, and prints what OIV prints, as its source shows
//! (the `FileUnderConstructionSection` too):
//!
//! - OIV visits the sections sorted by Hadoop's section order, so the
//!   `STRING_TABLE` is read before the inodes; without one, every name
//!   lookup misses.
//! - `<INodeSection>`, `lastInodeId`, `numInodes` (the header's count; that
//!   many delimited `INode` messages follow), then each `<inode>...</inode>`
//!   followed by a newline, then `</INodeSection>` and a newline. No newline
//!   after `numInodes`.
//! - An inode: `id`, `type` (`FILE`, `DIRECTORY`, `SYMLINK`), `name` (the
//!   bytes decoded as UTF-8 with U+FFFD for malformed input, as Java's
//!   `ByteString.toStringUtf8` does), then by type:
//!   - file: `replication` (1 for a file with an erasure coding policy id:
//!     `INodeFile.DEFAULT_REPL_FOR_STRIPED_BLOCKS`), `mtime`, `atime`,
//!     `preferredBlockSize`, `permission`, `xattrs` when the feature is
//!     present (even empty), `acls` when there are entries, `blocks` (each
//!     `<block>...</block>` and the closing `</blocks>` followed by a
//!     newline) when there are any, `storagePolicyId` when the field is
//!     present, `blockType` and `erasureCodingPolicyId` when the policy id is
//!     present, `file-under-construction` (followed by a newline) when
//!     present;
//!   - directory: `mtime`, `permission`, `xattrs`, `acls`, `nsquota` and
//!     `dsquota` only when both are present, one `typeQuota` (`type`,
//!     `quota`) per storage type quota;
//!   - symlink: `permission`, `target`, `mtime`, `atime`.
//! - `<FileUnderConstructionSection>`, per stored entry `<inode>` with
//!   `id` and `path` (the stored full path), `</inode>` and a newline, then
//!   `</FileUnderConstructionSection>` and a newline; nothing without the
//!   section.
//! - `<INodeDirectorySection>`, then per stored entry `<directory>` with
//!   `parent`, each `child`, each `refChild`, `</directory>` and a newline,
//!   then `</INodeDirectorySection>` and a newline.
//! - Numbers are Java's: a protobuf `uint64` is a Java `long` and a
//!   `uint32` a Java `int`, printed signed in decimal.
//! - `permission` is `user:group:%04o` with the mode as `FsPermission`
//!   keeps it (the nine rwx bits and the sticky bit); a name id that is not
//!   in the string table prints as `null`.
//! - An ACL entry prints as `AclEntry.toString`: `[default:]type:name:rwx`,
//!   the name looked up in the user table for user entries, the group table
//!   for group entries, and none for mask and other entries.
//! - An xattr: `ns` (`USER`, `TRUSTED`, `SECURITY`, `SYSTEM`, `RAW`), `name`
//!   (xattr table), then `val` when the value is valid UTF-8, else `valHex`
//!   (lowercase hex).
//! - Every text goes through `XMLUtils.mangleXmlString(s, true)`: `&`, `"`,
//!   `'`, `<`, `>` become entity references; control characters other than
//!   tab, newline and carriage return, surrogates, U+FFFE, U+FFFF and the
//!   backslash become `\XXXX;` (at least four lowercase hex digits).
//!
//! String ids (`SerialNumberManager`): with `maskBits` = 0 an id is looked
//! up as it is; otherwise the table's tag (USER 1, GROUP 2, XATTR 3) is put
//! in the top `maskBits` bits of the 32-bit id first.
#![allow(dead_code)]

pub mod image;
pub mod model;

use nsimage_format::hdfs_pb::{
    file_summary, files_under_construction_section::FileUnderConstructionEntry,
    i_node_directory_section::DirEntry, i_node_section, string_table_section, FileSummary,
    INodeSection, StorageTypeProto, StringTableSection,
};
use prost::Message;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Read;

/// The two sections OIV prints that the comparison covers, as OIV prints
/// them (the closing tag's newline included).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OivSections {
    /// `<INodeSection>...</INodeSection>\n`.
    pub inodes: String,
    /// `<INodeDirectorySection>...</INodeDirectorySection>\n`.
    pub directories: String,
    /// `<FileUnderConstructionSection>...</FileUnderConstructionSection>\n`
    /// (`inode`: `id`, `path`, each followed by a newline); `None` for an
    /// image without a FILES_UNDERCONSTRUCTION section, where OIV prints
    /// nothing.
    pub under_construction: Option<String>,
}

/// What an image holds that nsimage's in-memory model cannot carry into
/// OIV's text: counts per kind of difference, for the report and for the
/// test's failure messages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelGaps {
    /// Symlinks (OIV prints their access time; the model keeps none).
    pub symlinks: u64,
    /// Directories with storage type quotas (`typeQuota`).
    pub type_quotas: u64,
    /// Files with an erasure coding policy id (`blockType`,
    /// `erasureCodingPolicyId`, replication printed as 1).
    pub erasure_coded: u64,
    /// Files without a stored `storagePolicyId` (images before Hadoop 2.6).
    pub files_without_storage_policy: u64,
    /// Directories without both quotas stored.
    pub dirs_without_quotas: u64,
    /// Inodes whose `xattrs` feature is present but empty.
    pub empty_xattr_features: u64,
    /// Inodes with two or more xattrs (the model keeps them sorted by
    /// namespace and name id, OIV prints them as stored).
    pub multi_xattr_inodes: u64,
    /// `refChild` entries (references to renamed inodes in snapshots).
    pub ref_children: u64,
    /// Directory entries whose only children are references.
    pub ref_only_dirs: u64,
    /// Names that are not valid UTF-8 (OIV prints U+FFFD).
    pub non_utf8_names: u64,
    /// Directories whose stored children are not in unsigned byte order
    /// (Hadoop sorts with signed bytes; differs only for names with bytes
    /// 0x80 and above). Not a gap: nsimage's XML dump lists children in
    /// Hadoop's order; counted to show which images exercise it.
    pub children_not_unsigned_sorted: u64,
    /// Permission modes with bits beyond the rwx bits and sticky bit.
    pub modes_with_high_bits: u64,
    /// Permission, ACL or xattr name ids not in the string table.
    pub missing_strings: u64,
    /// Inodes listed out of id order in the INODE section.
    pub inodes_out_of_id_order: u64,
    /// INODE_DIR entries out of parent id order.
    pub dirs_out_of_id_order: u64,
}

impl ModelGaps {
    /// Whether nsimage's model can reproduce OIV's text for this image.
    pub fn none(&self) -> bool {
        ModelGaps {
            children_not_unsigned_sorted: 0,
            ..self.clone()
        } == ModelGaps::default()
    }
}

/// Everything the emulator read from one image.
#[derive(Debug, Clone, Default)]
pub struct Emulated {
    /// OIV's text.
    pub xml: OivSections,
    /// What the model cannot carry.
    pub gaps: ModelGaps,
    /// The layout version (negative).
    pub layout_version: i32,
    /// The codec class name, if any.
    pub codec: Option<String>,
    /// Inodes by type: files, directories, symlinks.
    pub counts: [u64; 3],
    /// Blocks of all files.
    pub blocks: u64,
}

/// Appends `s` as `XMLUtils.mangleXmlString(s, true)` writes it.
pub fn mangle(s: &str, out: &mut String) {
    for c in s.chars() {
        let cp = c as u32;
        let must = (cp < 0x20 && cp != 0x9 && cp != 0xa && cp != 0xd)
            || (0xd800..0xe000).contains(&cp)
            || cp == 0xfffe
            || cp == 0xffff
            || cp == 0x5c;
        if must {
            let _ = write!(out, "\\{cp:04x};");
            continue;
        }
        match c {
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
}

/// `<tag>mangled text</tag>`, as OIV's `o(tag, value)` prints any value.
fn o(tag: &str, v: impl std::fmt::Display, out: &mut String) {
    let _ = write!(out, "<{tag}>");
    mangle(&v.to_string(), out);
    let _ = write!(out, "</{tag}>");
}

/// A Java `long` from a protobuf `uint64`.
fn jlong(v: u64) -> i64 {
    v as i64
}

/// A Java `int` from a protobuf `uint32`.
fn jint(v: u32) -> i32 {
    v as i32
}

/// Bytes as Java's `new String(bytes, UTF_8)` reads them.
fn utf8_lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The string tables of `SerialNumberManager`, by ordinal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Table {
    User = 1,
    Group = 2,
    XAttr = 3,
}

/// The STRING_TABLE section as OIV loads it.
struct Strings {
    present: bool,
    mask_bits: u32,
    map: HashMap<u32, String>,
}

impl Strings {
    /// `StringTable.get(table, id)`; `None` where Java gets `null`.
    fn get(&self, table: Table, id: u32) -> Result<Option<&str>, String> {
        if !self.present {
            return Ok(None);
        }
        let mut key = id;
        if self.mask_bits != 0 {
            // SerialNumberManager: 4 tables, so 29 bits of id and 3 of tag.
            if id > (1 << 29) - 1 {
                return Err(format!("serial id {id} > {}", (1u32 << 29) - 1));
            }
            key |= (table as u32) << (32 - self.mask_bits);
        }
        Ok(self.map.get(&key).map(String::as_str))
    }
}

/// A run of varint-delimited messages.
struct Delimited<'a> {
    buf: &'a [u8],
    what: &'static str,
}

impl<'a> Delimited<'a> {
    /// The next message; `None` at the end of the stream (where Java's
    /// `parseDelimitedFrom` returns null).
    fn next<M: Message + Default>(&mut self) -> Result<Option<M>, String> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        M::decode_length_delimited(&mut self.buf)
            .map(Some)
            .map_err(|e| format!("{}: {e}", self.what))
    }

    fn need<M: Message + Default>(&mut self) -> Result<M, String> {
        self.next()?
            .ok_or_else(|| format!("{}: the section ends early", self.what))
    }
}

/// One section's bytes, decompressed as OIV's
/// `FSImageUtil.wrapInputStreamForCompression` would.
fn section_bytes(
    file: &[u8],
    s: &file_summary::Section,
    codec: Option<&str>,
) -> Result<Vec<u8>, String> {
    let name = s.name();
    let off = usize::try_from(s.offset()).map_err(|e| e.to_string())?;
    let len = usize::try_from(s.length()).map_err(|e| e.to_string())?;
    let end = off
        .checked_add(len)
        .filter(|&e| e <= file.len())
        .ok_or_else(|| format!("section {name} ({off}+{len}) is past the end"))?;
    let raw = &file[off..end];
    let mut out = Vec::new();
    match codec {
        None | Some("") => out.extend_from_slice(raw),
        Some("org.apache.hadoop.io.compress.DefaultCodec") => {
            // One stream per section, or one per sub-section when the
            // parent section spans its sub-sections: read them in turn.
            let mut rest = raw;
            while !rest.is_empty() {
                let mut z = flate2::bufread::ZlibDecoder::new(rest);
                z.read_to_end(&mut out)
                    .map_err(|e| format!("section {name}: zlib: {e}"))?;
                let used = usize::try_from(z.total_in()).map_err(|e| e.to_string())?;
                if used == 0 {
                    return Err(format!("section {name}: an empty zlib stream"));
                }
                rest = rest.get(used..).unwrap_or_default();
            }
        }
        Some("org.apache.hadoop.io.compress.GzipCodec") => {
            flate2::read::MultiGzDecoder::new(raw)
                .read_to_end(&mut out)
                .map_err(|e| format!("section {name}: gzip: {e}"))?;
        }
        Some(c) => return Err(format!("codec {c} is not emulated")),
    }
    Ok(out)
}

/// The image's FileSummary, read from its tail.
pub fn summary(file: &[u8]) -> Result<FileSummary, String> {
    if !file.starts_with(b"HDFSIMG1") {
        return Err("not an HDFS fsimage (magic)".into());
    }
    let n = file.len();
    let tail = file.get(n.saturating_sub(4)..).filter(|t| t.len() == 4);
    let tail = tail.ok_or("too short for a summary length")?;
    let len = u32::from_be_bytes([tail[0], tail[1], tail[2], tail[3]]) as usize;
    let start = (n - 4)
        .checked_sub(len)
        .filter(|&s| s >= 8)
        .ok_or("summary length past the start")?;
    FileSummary::decode_length_delimited(&file[start..n - 4]).map_err(|e| format!("summary: {e}"))
}

fn find<'s>(sum: &'s FileSummary, name: &str) -> Option<&'s file_summary::Section> {
    sum.sections.iter().find(|s| s.name() == name)
}

/// The STRING_TABLE as OIV loads it (an empty, absent table without one).
fn load_strings(file: &[u8], sum: &FileSummary) -> Result<Strings, String> {
    let Some(s) = find(sum, "STRING_TABLE") else {
        return Ok(Strings {
            present: false,
            mask_bits: 0,
            map: HashMap::new(),
        });
    };
    let bytes = section_bytes(file, s, sum.codec.as_deref())?;
    let mut d = Delimited {
        buf: &bytes,
        what: "STRING_TABLE",
    };
    let h: StringTableSection = d.need()?;
    let mut map = HashMap::new();
    for _ in 0..h.num_entry() {
        let e: string_table_section::Entry = d.need()?;
        map.insert(e.id(), e.str().to_string());
    }
    Ok(Strings {
        present: true,
        mask_bits: h.mask_bits(),
        map,
    })
}

/// The INODE section: its header and its inodes, in file order.
fn load_inodes(
    file: &[u8],
    sum: &FileSummary,
) -> Result<(INodeSection, Vec<i_node_section::INode>), String> {
    let s = find(sum, "INODE").ok_or("no INODE section")?;
    let bytes = section_bytes(file, s, sum.codec.as_deref())?;
    let mut d = Delimited {
        buf: &bytes,
        what: "INODE",
    };
    let h: INodeSection = d.need()?;
    let mut v = Vec::new();
    for _ in 0..h.num_inodes() {
        v.push(d.need()?);
    }
    Ok((h, v))
}

/// The INODE_DIR section's entries, in file order.
fn load_dirs(file: &[u8], sum: &FileSummary) -> Result<Vec<DirEntry>, String> {
    let Some(s) = find(sum, "INODE_DIR") else {
        return Ok(Vec::new());
    };
    let bytes = section_bytes(file, s, sum.codec.as_deref())?;
    let mut d = Delimited {
        buf: &bytes,
        what: "INODE_DIR",
    };
    let mut v = Vec::new();
    while let Some(e) = d.next()? {
        v.push(e);
    }
    Ok(v)
}

/// Reads `file` and prints what OIV prints for its INODE and INODE_DIR
/// sections, with what nsimage's model cannot carry counted beside.
pub fn emulate(file: &[u8]) -> Result<Emulated, String> {
    let sum = summary(file)?;
    let codec = sum.codec.clone();
    let mut em = Emulated {
        layout_version: sum.layout_version as i32,
        codec: codec.clone(),
        ..Emulated::default()
    };
    let strings = load_strings(file, &sum)?;
    let w = Writer { strings: &strings };
    let inode = find(&sum, "INODE").ok_or("no INODE section")?;
    let bytes = section_bytes(file, inode, codec.as_deref())?;
    w.inode_section(&bytes, &mut em)?;
    em.xml.directories.push_str("<INodeDirectorySection>");
    if let Some(s) = find(&sum, "INODE_DIR") {
        let bytes = section_bytes(file, s, codec.as_deref())?;
        w.dir_section(&bytes, &mut em)?;
    }
    em.xml.directories.push_str("</INodeDirectorySection>\n");
    if let Some(s) = find(&sum, "FILES_UNDERCONSTRUCTION") {
        let bytes = section_bytes(file, s, codec.as_deref())?;
        let mut d = Delimited {
            buf: &bytes,
            what: "FILES_UNDERCONSTRUCTION",
        };
        let mut out = String::from("<FileUnderConstructionSection>");
        while let Some(e) = d.next::<FileUnderConstructionEntry>()? {
            out.push_str("<inode>");
            o("id", jlong(e.inode_id()), &mut out);
            o("path", e.full_path(), &mut out);
            out.push_str("</inode>\n");
        }
        out.push_str("</FileUnderConstructionSection>\n");
        em.xml.under_construction = Some(out);
    }
    em.gaps.children_not_unsigned_sorted = unsigned_order_breaks(file)?;
    Ok(em)
}

struct Writer<'a> {
    strings: &'a Strings,
}

impl Writer<'_> {
    fn inode_section(&self, bytes: &[u8], em: &mut Emulated) -> Result<(), String> {
        let mut d = Delimited {
            buf: bytes,
            what: "INODE",
        };
        let h: INodeSection = d.need()?;
        let out = &mut em.xml.inodes;
        out.push_str("<INodeSection>");
        o("lastInodeId", jlong(h.last_inode_id()), out);
        o("numInodes", jlong(h.num_inodes()), out);
        let mut last_id = None;
        for _ in 0..h.num_inodes() {
            let p: i_node_section::INode = d.need()?;
            if last_id.is_some_and(|l| l > p.id) {
                em.gaps.inodes_out_of_id_order += 1;
            }
            last_id = Some(p.id);
            out.push_str("<inode>");
            self.inode_fields(&p, out, &mut em.gaps, &mut em.counts, &mut em.blocks)?;
            out.push_str("</inode>\n");
        }
        out.push_str("</INodeSection>\n");
        Ok(())
    }

    fn inode_fields(
        &self,
        p: &i_node_section::INode,
        out: &mut String,
        gaps: &mut ModelGaps,
        counts: &mut [u64; 3],
        blocks: &mut u64,
    ) -> Result<(), String> {
        let ty = i_node_section::i_node::Type::try_from(p.r#type)
            .map_err(|_| format!("inode {}: type {}", p.id, p.r#type))?;
        o("id", jlong(p.id), out);
        o("type", ty.as_str_name(), out);
        let name = p.name();
        if std::str::from_utf8(name).is_err() {
            gaps.non_utf8_names += 1;
        }
        o("name", utf8_lossy(name), out);
        if let Some(f) = &p.file {
            counts[0] += 1;
            *blocks += f.blocks.len() as u64;
            if f.erasure_coding_policy_id.is_some() {
                o("replication", 1, out);
                gaps.erasure_coded += 1;
            } else {
                o("replication", jint(f.replication()), out);
            }
            o("mtime", jlong(f.modification_time()), out);
            o("atime", jlong(f.access_time()), out);
            o("preferredBlockSize", jlong(f.preferred_block_size()), out);
            self.permission(f.permission(), out, gaps)?;
            if let Some(x) = &f.x_attrs {
                self.xattrs(x, out, gaps)?;
            }
            self.acls(f.acl.as_ref(), out, gaps)?;
            if !f.blocks.is_empty() {
                out.push_str("<blocks>");
                for b in &f.blocks {
                    out.push_str("<block>");
                    o("id", jlong(b.block_id), out);
                    o("genstamp", jlong(b.gen_stamp), out);
                    o("numBytes", jlong(b.num_bytes()), out);
                    out.push_str("</block>\n");
                }
                out.push_str("</blocks>\n");
            }
            match f.storage_policy_id {
                Some(v) => o("storagePolicyId", jint(v), out),
                None => gaps.files_without_storage_policy += 1,
            }
            if let Some(ec) = f.erasure_coding_policy_id {
                o("blockType", f.block_type().as_str_name(), out);
                o("erasureCodingPolicyId", jint(ec), out);
            }
            if let Some(uc) = &f.file_uc {
                out.push_str("<file-under-construction>");
                o("clientName", uc.client_name(), out);
                o("clientMachine", uc.client_machine(), out);
                out.push_str("</file-under-construction>\n");
            }
        } else if let Some(d) = &p.directory {
            counts[1] += 1;
            o("mtime", jlong(d.modification_time()), out);
            self.permission(d.permission(), out, gaps)?;
            if let Some(x) = &d.x_attrs {
                self.xattrs(x, out, gaps)?;
            }
            self.acls(d.acl.as_ref(), out, gaps)?;
            if d.ns_quota.is_some() && d.ds_quota.is_some() {
                o("nsquota", jlong(d.ns_quota()), out);
                o("dsquota", jlong(d.ds_quota()), out);
            } else {
                gaps.dirs_without_quotas += 1;
            }
            if let Some(tq) = &d.type_quotas {
                if !tq.quotas.is_empty() {
                    gaps.type_quotas += 1;
                }
                for e in &tq.quotas {
                    let st = StorageTypeProto::try_from(e.storage_type)
                        .map_err(|_| format!("inode {}: storage type {}", p.id, e.storage_type))?;
                    out.push_str("<typeQuota>");
                    o("type", st.as_str_name(), out);
                    o("quota", jlong(e.quota), out);
                    out.push_str("</typeQuota>");
                }
            }
        } else if let Some(s) = &p.symlink {
            counts[2] += 1;
            gaps.symlinks += 1;
            self.permission(s.permission(), out, gaps)?;
            o("target", utf8_lossy(s.target()), out);
            o("mtime", jlong(s.modification_time()), out);
            o("atime", jlong(s.access_time()), out);
        }
        Ok(())
    }

    /// `user:group:%04o`, as `PermissionStatusFormat` decodes the fixed64.
    fn permission(&self, perm: u64, out: &mut String, gaps: &mut ModelGaps) -> Result<(), String> {
        let user = ((perm >> 40) & 0xff_ffff) as u32;
        let group = ((perm >> 16) & 0xff_ffff) as u32;
        let raw = (perm & 0xffff) as u16;
        if raw & !0o1777 != 0 {
            gaps.modes_with_high_bits += 1;
        }
        let mode = raw & 0o1777;
        let u = self.strings.get(Table::User, user)?;
        let g = self.strings.get(Table::Group, group)?;
        if u.is_none() || g.is_none() {
            gaps.missing_strings += 1;
        }
        let text = format!(
            "{}:{}:{:04o}",
            u.unwrap_or("null"),
            g.unwrap_or("null"),
            mode
        );
        o("permission", text, out);
        Ok(())
    }

    fn xattrs(
        &self,
        x: &i_node_section::XAttrFeatureProto,
        out: &mut String,
        gaps: &mut ModelGaps,
    ) -> Result<(), String> {
        if x.x_attrs.is_empty() {
            gaps.empty_xattr_features += 1;
        }
        if x.x_attrs.len() > 1 {
            gaps.multi_xattr_inodes += 1;
        }
        out.push_str("<xattrs>");
        for a in &x.x_attrs {
            out.push_str("<xattr>");
            let v = a.name;
            let ns = ((v >> 30) & 3) | (((v >> 5) & 1) << 2);
            let ns = match ns {
                0 => "USER",
                1 => "TRUSTED",
                2 => "SECURITY",
                3 => "SYSTEM",
                4 => "RAW",
                n => return Err(format!("xattr namespace {n}")),
            };
            o("ns", ns, out);
            let nid = (v >> 6) & 0xff_ffff;
            let name = self.strings.get(Table::XAttr, nid)?.ok_or_else(|| {
                // OIV itself fails here (a null name).
                format!("xattr name id {nid} not in the string table")
            })?;
            o("name", name, out);
            let val = a.value();
            match std::str::from_utf8(val) {
                Ok(s) => o("val", s, out),
                Err(_) => {
                    let hex: String = val.iter().map(|b| format!("{b:02x}")).collect();
                    o("valHex", hex, out);
                }
            }
            out.push_str("</xattr>");
        }
        out.push_str("</xattrs>");
        Ok(())
    }

    fn acls(
        &self,
        acl: Option<&i_node_section::AclFeatureProto>,
        out: &mut String,
        gaps: &mut ModelGaps,
    ) -> Result<(), String> {
        let Some(acl) = acl.filter(|a| !a.entries.is_empty()) else {
            return Ok(());
        };
        out.push_str("<acls>");
        for &v in &acl.entries {
            let perm = v & 7;
            let ty = (v >> 3) & 3;
            let default = (v >> 5) & 1 == 1;
            let nid = (v >> 6) & 0xff_ffff;
            let name = match ty {
                0 => self.strings.get(Table::User, nid)?,
                1 => self.strings.get(Table::Group, nid)?,
                _ => None,
            };
            if ty < 2 && nid != 0 && name.is_none() {
                gaps.missing_strings += 1;
            }
            let mut s = String::new();
            if default {
                s.push_str("default:");
            }
            s.push_str(["user", "group", "mask", "other"][ty as usize]);
            s.push(':');
            s.push_str(name.unwrap_or(""));
            s.push(':');
            for (bit, c) in [(4, 'r'), (2, 'w'), (1, 'x')] {
                s.push(if perm & bit != 0 { c } else { '-' });
            }
            o("acl", s, out);
        }
        out.push_str("</acls>");
        Ok(())
    }

    fn dir_section(&self, bytes: &[u8], em: &mut Emulated) -> Result<(), String> {
        let mut d = Delimited {
            buf: bytes,
            what: "INODE_DIR",
        };
        let out = &mut em.xml.directories;
        let mut last = None;
        while let Some(e) = d.next::<DirEntry>()? {
            if last.is_some_and(|l| l > e.parent()) {
                em.gaps.dirs_out_of_id_order += 1;
            }
            last = Some(e.parent());
            if !e.ref_children.is_empty() {
                em.gaps.ref_children += e.ref_children.len() as u64;
                if e.children.is_empty() {
                    em.gaps.ref_only_dirs += 1;
                }
            }
            out.push_str("<directory>");
            o("parent", jlong(e.parent()), out);
            for &c in &e.children {
                o("child", jlong(c), out);
            }
            for &r in &e.ref_children {
                o("refChild", jint(r), out);
            }
            out.push_str("</directory>\n");
        }
        Ok(())
    }
}

/// Counts the INODE_DIR entries whose stored children are not in unsigned
/// byte order of their names (the order nsimage keeps).
pub fn unsigned_order_breaks(file: &[u8]) -> Result<u64, String> {
    let sum = summary(file)?;
    let (_, inodes) = load_inodes(file, &sum)?;
    let names: HashMap<u64, &[u8]> = inodes.iter().map(|p| (p.id, p.name())).collect();
    let mut n = 0;
    for e in load_dirs(file, &sum)? {
        let kids: Vec<&[u8]> = e
            .children
            .iter()
            .map(|c| names.get(c).copied().unwrap_or_default())
            .collect();
        if kids.windows(2).any(|w| w[0] > w[1]) {
            n += 1;
        }
    }
    Ok(n)
}

/// The first difference between two texts, element by element: the line
/// (OIV ends each `inode` and `directory` element with a newline) where
/// they first differ, with the line before it, and the byte column.
pub fn first_difference(want: &str, got: &str) -> Option<String> {
    if want == got {
        return None;
    }
    let a: Vec<&str> = want.split_inclusive('\n').collect();
    let b: Vec<&str> = got.split_inclusive('\n').collect();
    let i = a
        .iter()
        .zip(&b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let col = match (a.get(i), b.get(i)) {
        (Some(x), Some(y)) => x
            .bytes()
            .zip(y.bytes())
            .position(|(p, q)| p != q)
            .unwrap_or(x.len().min(y.len())),
        _ => 0,
    };
    let before = i
        .checked_sub(1)
        .and_then(|j| a.get(j))
        .copied()
        .unwrap_or("");
    Some(format!(
        "line {} (byte {col}) differs\n  before: {}\n  OIV:    {}\n  nsimage:{}",
        i + 1,
        before.trim_end(),
        a.get(i).map_or("<end of text>", |s| s.trim_end()),
        b.get(i).map_or(" <end of text>", |s| s.trim_end()),
    ))
}

/// The text from `<TAG>` to `</TAG>\n` in an XML dump, if there.
pub fn extract(xml: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>\n");
    let a = xml.find(&open)?;
    let b = xml[a..].find(&close)? + a + close.len();
    Some(xml[a..b].to_string())
}

/// OIV's `version` facts and `NameSection` element for an image, from its
/// summary and NS_INFO alone: (layout version, on-disk version, the
/// `<NameSection>...</NameSection>\n` text: `namespaceId`, `genstampV1`,
/// `genstampV2`, `genstampV1Limit`, `lastAllocatedBlockId`, `txid`, each a
/// Java number).
pub fn head(file: &[u8]) -> Result<(i32, u32, String), String> {
    let sum = summary(file)?;
    let codec = sum.codec.as_deref();
    let s = find(&sum, "NS_INFO").ok_or("no NS_INFO section")?;
    let bytes = section_bytes(file, s, codec)?;
    let ns = nsimage_format::hdfs_pb::NameSystemSection::decode_length_delimited(&bytes[..])
        .map_err(|e| format!("NS_INFO: {e}"))?;
    let mut out = String::from("<NameSection>");
    o("namespaceId", jint(ns.namespace_id()), &mut out);
    o("genstampV1", jlong(ns.genstamp_v1()), &mut out);
    o("genstampV2", jlong(ns.genstamp_v2()), &mut out);
    o("genstampV1Limit", jlong(ns.genstamp_v1_limit()), &mut out);
    o(
        "lastAllocatedBlockId",
        jlong(ns.last_allocated_block_id()),
        &mut out,
    );
    o("txid", jlong(ns.transaction_id()), &mut out);
    out.push_str("</NameSection>\n");
    Ok((jint(sum.layout_version), sum.ondisk_version, out))
}
