//! An independent emulation of Hadoop's OIV XML processor
//! (`hdfs oiv -p XML`, `PBImageXmlWriter` in Hadoop 3): the whole document
//! it prints for an image ([`Emulated::document`]), and apart from it the
//! three sections the HDFS interop tests compare byte for byte
//! (`INodeSection`, `INodeDirectorySection`, `FileUnderConstructionSection`).
//!
//! It reads an HDFS fsimage file (magic `HDFSIMG1`) directly with the
//! prost types of `nsimage_format::hdfs_pb`, sharing no code with the
//! loader or the viewer, and prints what OIV prints, as its source shows:
//!
//! - The document: `<?xml version="1.0"?>` and a newline, `<fsimage>`,
//!   `<version>` (`layoutVersion` and `onDiskVersion` as Java ints,
//!   `oivRevision`: the build's revision, here [`REVISION`]), `</version>`
//!   and a newline, each section of the summary in turn, `</fsimage>` and a
//!   newline.
//! - OIV visits the sections sorted (stably) by Hadoop's `SectionName`
//!   order ([`SECTION_ORDER`]), so the `STRING_TABLE` is read before the
//!   inodes; without one, every name lookup misses. A name not in that enum
//!   makes OIV fail. `EXTENDED_ACL` and the `_SUB` sections print nothing.
//! - `<NameSection>`: `namespaceId`, `genstampV1`, `genstampV2`,
//!   `genstampV1Limit`, `lastAllocatedBlockId`, `txid`, then a newline.
//! - `<ErasureCodingSection>` only when the section has policies, its
//!   lines broken as Java's `println` breaks them: per policy `policyId`
//!   (the id as a Java byte), `policyName`, `cellSize`, `policyState`
//!   (`DISABLED`, `ENABLED`, `REMOVED`) and `ecSchema` (`codecName`,
//!   `dataUnits`, `parityUnits`, `extraOptions` when there are any, in the
//!   iteration order of the Java `HashMap` that holds them). A built-in
//!   policy (ids 1 to 5) prints Hadoop's own name, schema and cell size,
//!   whatever the image stores beside its id.
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
//! - `<INodeReferenceSection>`: per reference `<ref>` with `referredId`,
//!   `name`, `dstSnapshotId`, `lastSnapshotId`, `</ref>` and a newline;
//!   no newline after `</INodeReferenceSection>`.
//! - `<SnapshotSection>`: `snapshotCounter`, `numSnapshots`,
//!   `snapshottableDir` (each `dir`; then a newline) when there are any,
//!   then per snapshot `<snapshot>` with `id` and `<root>` holding the
//!   root's inode fields as above (an absent root is the default `INode`:
//!   id 0, type `FILE`, empty name); `</SnapshotSection>` and a newline.
//! - `<FileUnderConstructionSection>`, per stored entry `<inode>` with
//!   `id` and `path` (the stored full path), `</inode>` and a newline, then
//!   `</FileUnderConstructionSection>` and a newline; nothing without the
//!   section.
//! - `<INodeDirectorySection>`, then per stored entry `<directory>` with
//!   `parent`, each `child`, each `refChild`, `</directory>` and a newline,
//!   then `</INodeDirectorySection>` and a newline.
//! - `<SnapshotDiffSection>`: per `DiffEntry` a `fileDiffEntry` or
//!   `dirDiffEntry` (no newline after either) with `inodeId`, `count`, then
//!   `count` diffs read after the entry:
//!   - `<fileDiff>`: `snapshotId`, `size`, `name`, always a
//!     `<snapshotCopy>` (Java's `getSnapshotCopy()` gives the default
//!     `INodeFile` for an absent copy: replication, times and block size 0,
//!     permission 0) holding the file fields and followed by a newline,
//!     `blocks` when there are any, `</fileDiff>` and a newline;
//!   - `<dirDiff>`: `snapshotId`, `childrenSize`, `<isSnapshotRoot/>` when
//!     true, `name`, `snapshotCopy` (directory fields, then a newline) only
//!     when present, `createdListSize`, each `deletedInode`, each
//!     `deletedInoderef`, then `createdListSize` further delimited entries,
//!     each `<created>` with `name`, `</created>` and a newline;
//!     `</dirDiff>` and a newline.
//! - `<SecretManagerSection>`: `currentId`, `tokenSequenceNumber`,
//!   `numDelegationKeys`, `numTokens`, then that many `delegationKey`
//!   (`id`, `key` in lowercase hex, `expiry` when present) and `token`
//!   elements (`version`, `owner`, `renewer`, `realUser`, `issueDate`,
//!   `maxDate`, `sequenceNumber`, `masterKeyId`, `expiryDate`, each only
//!   when present); dates as `yyyy-MM-dd'T'HH:mm:ss.SSS` in UTC (Java's
//!   Julian calendar before 1582-10-15, years of the era). No newlines at
//!   all, none after the closing tag.
//! - `<CacheManagerSection>`: `nextDirectiveId`, `numDirectives`,
//!   `numPools`, then per pool `<pool>` (`poolName`, `ownerName`,
//!   `groupName`, `mode`, `limit`, `maxRelativeExpiry`) and a newline, per
//!   directive `<directive>` (`id`, `path`, `replication`, `pool`,
//!   `<expiration>` with `millis` and `<relative/>` when true, then a
//!   newline) and a newline; `</CacheManagerSection>` and a newline.
//! - Numbers are Java's: a protobuf `uint64` is a Java `long` and a
//!   `uint32` a Java `int`, printed signed in decimal. A Java `Boolean`
//!   prints as an empty element when true and as nothing when false.
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
//! - Where OIV would stop with an exception (a message missing where a
//!   count or the layout expects one, an unknown section name or diff type,
//!   an erasure coding policy without its state), the emulation returns an
//!   error.
//!
//! String ids (`SerialNumberManager`): with `maskBits` = 0 an id is looked
//! up as it is; otherwise the table's tag (USER 1, GROUP 2, XATTR 3) is put
//! in the top `maskBits` bits of the 32-bit id first.
#![allow(dead_code)]

pub mod image;
pub mod model;

use nsimage_format::hdfs_pb::{
    file_summary,
    files_under_construction_section::FileUnderConstructionEntry,
    i_node_directory_section::DirEntry,
    i_node_reference_section::INodeReference,
    i_node_section,
    secret_manager_section::{DelegationKey, PersistToken},
    snapshot_diff_section::{CreatedListEntry, DiffEntry, DirectoryDiff, FileDiff},
    snapshot_section::Snapshot,
    string_table_section, BlockProto, CacheDirectiveInfoProto, CacheManagerSection,
    CachePoolInfoProto, ErasureCodingPolicyProto, ErasureCodingSection, FileSummary, INodeSection,
    NameSystemSection, SecretManagerSection, SnapshotSection, StorageTypeProto, StringTableSection,
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
    /// The whole document OIV prints for the image, byte for byte, with
    /// [`REVISION`] as the `oivRevision` element's text.
    pub document: String,
}

/// The text of the `oivRevision` element in [`Emulated::document`] (OIV
/// prints the revision of the Hadoop build that runs it).
pub const REVISION: &str = "@REVISION@";

/// Hadoop's `FSImageFormatProtobuf.SectionName`, in declaration order: OIV
/// visits the summary's sections sorted by this ordinal (the same names, in
/// the same order, as `nsimage_format::hdfs::HdfsSection::ALL`).
pub const SECTION_ORDER: [&str; 16] = [
    "NS_INFO",
    "STRING_TABLE",
    "EXTENDED_ACL",
    "ERASURE_CODING",
    "INODE",
    "INODE_SUB",
    "INODE_REFERENCE",
    "INODE_REFERENCE_SUB",
    "SNAPSHOT",
    "INODE_DIR",
    "INODE_DIR_SUB",
    "FILES_UNDERCONSTRUCTION",
    "SNAPSHOT_DIFF",
    "SNAPSHOT_DIFF_SUB",
    "SECRET_MANAGER",
    "CACHE_MANAGER",
];

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

/// A Java `Boolean` as OIV's `o(tag, value)` prints one: `<tag/>` when
/// true, nothing when false.
fn flag(tag: &str, v: bool, out: &mut String) {
    if v {
        let _ = write!(out, "<{tag}/>");
    }
}

/// How many times a Java `for (int i = 0; i < n; ++i)` loop runs for a
/// protobuf `uint32` count (none when it reads as a negative `int`).
fn jcount(n: u32) -> u32 {
    if jint(n) < 0 {
        0
    } else {
        n
    }
}

/// Bytes as commons-codec's `Hex.encodeHexString` writes them.
fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

/// `new Date(ms)` as OIV's `SimpleDateFormat("yyyy-MM-dd'T'HH:mm:ss.SSS")`
/// in UTC formats it: Java's `GregorianCalendar`, Julian before the
/// Gregorian cutover (1582-10-15), the year as the year of its era (1 BC is
/// `0001`), at least four digits.
pub fn java_date(ms: i64) -> String {
    /// 1582-10-15T00:00:00Z in milliseconds since the epoch.
    const CUTOVER_MS: i64 = -12_219_292_800_000;
    let days = ms.div_euclid(86_400_000);
    let tod = ms.rem_euclid(86_400_000);
    let (y, m, d) = if ms >= CUTOVER_MS {
        gregorian_civil(days)
    } else {
        julian_civil(days)
    };
    let year_of_era = if y <= 0 { 1 - y } else { y };
    format!(
        "{year_of_era:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}",
        tod / 3_600_000,
        tod / 60_000 % 60,
        tod / 1000 % 60,
        tod % 1000
    )
}

/// (year, month, day) of the proleptic Gregorian calendar for a count of
/// days since 1970-01-01 (year 0 is 1 BC).
fn gregorian_civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// (year, month, day) of the proleptic Julian calendar for a count of days
/// since 1970-01-01 (year 0 is 1 BC).
fn julian_civil(days: i64) -> (i64, i64, i64) {
    // The Julian day number, then Richards' algorithm without the
    // Gregorian correction, with floor division throughout.
    let j = days + 2_440_588;
    let e = 4 * (j + 1401) + 3;
    let g = e.rem_euclid(1461) / 4;
    let h = 5 * g + 2;
    let d = h.rem_euclid(153) / 5 + 1;
    let m = (h.div_euclid(153) + 2).rem_euclid(12) + 1;
    let y = e.div_euclid(1461) - 4716 + (12 + 2 - m) / 12;
    (y, m, d)
}

/// Java's `String.hashCode` (over UTF-16 code units).
fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// The entries of `new HashMap<>(entries.len())` after putting each entry
/// in turn (a later value for a key replaces the earlier one in its place),
/// in the map's iteration order: by bucket (`(h ^ h >>> 16) & (capacity -
/// 1)`), then in insertion order within a bucket. The table starts at the
/// power of two at or above the size, doubles when the size passes three
/// quarters of it, and doubles too where a bucket's chain reaches nine
/// entries while the table is under 64 (`treeifyBin`). Tree bins (chains
/// of nine or more in a table of 64 or more) are kept in insertion order,
/// which Java's may not be.
pub fn java_hash_map_order(entries: &[(String, String)]) -> Vec<(String, String)> {
    let bucket = |k: &str, cap: usize| {
        let h = java_string_hash(k) as u32;
        ((h ^ (h >> 16)) as usize) & (cap - 1)
    };
    let mut cap = entries.len().max(1).next_power_of_two();
    let mut thr = cap * 3 / 4;
    let mut kept: Vec<(String, String)> = Vec::new();
    for (k, v) in entries {
        if let Some(e) = kept.iter_mut().find(|e| e.0 == *k) {
            e.1 = v.clone();
            continue;
        }
        kept.push((k.clone(), v.clone()));
        let b = bucket(k, cap);
        let chain = kept.iter().filter(|e| bucket(&e.0, cap) == b).count();
        if chain >= 9 && cap < 64 {
            cap *= 2;
            thr = cap * 3 / 4;
        }
        if kept.len() > thr {
            cap *= 2;
            thr = cap * 3 / 4;
        }
    }
    kept.sort_by_key(|e| bucket(&e.0, cap));
    kept
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
    /// No table (OIV's `stringTable` before a STRING_TABLE section).
    fn absent() -> Strings {
        Strings {
            present: false,
            mask_bits: 0,
            map: HashMap::new(),
        }
    }

    /// A STRING_TABLE section's (decompressed) bytes, as
    /// `FSImageLoader.loadStringTable` reads them.
    fn parse(bytes: &[u8]) -> Result<Strings, String> {
        let mut d = Delimited {
            buf: bytes,
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
        return Ok(Strings::absent());
    };
    let bytes = section_bytes(file, s, sum.codec.as_deref())?;
    Strings::parse(&bytes)
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

/// Reads `file` and prints what OIV prints for it: the whole document, and
/// its INODE, INODE_DIR and FILES_UNDERCONSTRUCTION sections apart, with
/// what nsimage's model cannot carry counted beside.
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
    w.inode_section(
        &bytes,
        &mut em.xml.inodes,
        &mut em.gaps,
        &mut em.counts,
        &mut em.blocks,
    )?;
    em.xml.directories.push_str("<INodeDirectorySection>");
    if let Some(s) = find(&sum, "INODE_DIR") {
        let bytes = section_bytes(file, s, codec.as_deref())?;
        w.dir_section(&bytes, &mut em.xml.directories, &mut em.gaps)?;
    }
    em.xml.directories.push_str("</INodeDirectorySection>\n");
    if let Some(s) = find(&sum, "FILES_UNDERCONSTRUCTION") {
        let bytes = section_bytes(file, s, codec.as_deref())?;
        let mut out = String::new();
        under_construction_section(&bytes, &mut out)?;
        em.xml.under_construction = Some(out);
    }
    em.gaps.children_not_unsigned_sorted = unsigned_order_breaks(file)?;
    em.document = document(file, &sum, Some(&em.xml))?;
    Ok(em)
}

/// The whole document OIV prints for `file` (what [`emulate`] puts in
/// [`Emulated::document`]), on its own.
pub fn document_of(file: &[u8]) -> Result<String, String> {
    let sum = summary(file)?;
    document(file, &sum, None)
}

/// The document, visiting the sections as OIV does. `done`: the three
/// sections [`emulate`] printed already, whose text the first INODE,
/// INODE_DIR and FILES_UNDERCONSTRUCTION sections reuse when the image has
/// at most one string table (so that they read the same one).
fn document(file: &[u8], sum: &FileSummary, done: Option<&OivSections>) -> Result<String, String> {
    let codec = sum.codec.as_deref();
    let mut out = String::from("<?xml version=\"1.0\"?>\n<fsimage>");
    out.push_str("<version>");
    o("layoutVersion", jint(sum.layout_version), &mut out);
    o("onDiskVersion", jint(sum.ondisk_version), &mut out);
    o("oivRevision", REVISION, &mut out);
    out.push_str("</version>\n");
    let mut order = Vec::with_capacity(sum.sections.len());
    for s in &sum.sections {
        let rank = SECTION_ORDER
            .iter()
            .position(|&n| n == s.name())
            .ok_or_else(|| format!("Unrecognized section {}", s.name()))?;
        order.push((rank, s));
    }
    // A stable sort, as Java's `Collections.sort`.
    order.sort_by_key(|&(rank, _)| rank);
    let tables = order
        .iter()
        .filter(|&&(rank, _)| SECTION_ORDER[rank] == "STRING_TABLE")
        .count();
    let done = done.filter(|_| tables <= 1);
    // Whether the first INODE, INODE_DIR, FILES_UNDERCONSTRUCTION section
    // was visited.
    let mut seen = [false; 3];
    let mut strings = Strings::absent();
    // What the inode printer counts outside `emulate`'s own pass: thrown
    // away.
    let mut gaps = ModelGaps::default();
    let mut counts = [0u64; 3];
    let mut blocks = 0u64;
    for (rank, s) in order {
        let name = SECTION_ORDER[rank];
        let first = match name {
            "INODE" => Some(0),
            "INODE_DIR" => Some(1),
            "FILES_UNDERCONSTRUCTION" => Some(2),
            _ => None,
        }
        .filter(|&i| !std::mem::replace(&mut seen[i], true));
        if let (Some(i), Some(x)) = (first, done) {
            let text = match i {
                0 => Some(&x.inodes),
                1 => Some(&x.directories),
                _ => x.under_construction.as_ref(),
            };
            if let Some(text) = text {
                out.push_str(text);
                continue;
            }
        }
        if matches!(
            name,
            "EXTENDED_ACL"
                | "INODE_SUB"
                | "INODE_REFERENCE_SUB"
                | "INODE_DIR_SUB"
                | "SNAPSHOT_DIFF_SUB"
        ) {
            // OIV opens these and reads nothing.
            continue;
        }
        let bytes = section_bytes(file, s, codec)?;
        if name == "STRING_TABLE" {
            strings = Strings::parse(&bytes)?;
            continue;
        }
        let w = Writer { strings: &strings };
        match name {
            "NS_INFO" => name_section(&bytes, &mut out)?,
            "ERASURE_CODING" => erasure_coding_section(&bytes, &mut out)?,
            "INODE" => w.inode_section(&bytes, &mut out, &mut gaps, &mut counts, &mut blocks)?,
            "INODE_REFERENCE" => reference_section(&bytes, &mut out)?,
            "SNAPSHOT" => w.snapshot_section(&bytes, &mut out)?,
            "INODE_DIR" => {
                out.push_str("<INodeDirectorySection>");
                w.dir_section(&bytes, &mut out, &mut gaps)?;
                out.push_str("</INodeDirectorySection>\n");
            }
            "FILES_UNDERCONSTRUCTION" => under_construction_section(&bytes, &mut out)?,
            "SNAPSHOT_DIFF" => w.snapshot_diff_section(&bytes, &mut out)?,
            "SECRET_MANAGER" => secret_manager_section(&bytes, &mut out)?,
            "CACHE_MANAGER" => cache_manager_section(&bytes, &mut out)?,
            _ => unreachable!("{name} is handled above"),
        }
    }
    out.push_str("</fsimage>\n");
    Ok(out)
}

/// `<NameSection>...</NameSection>\n` for an NS_INFO section's bytes.
fn name_section(bytes: &[u8], out: &mut String) -> Result<(), String> {
    let mut d = Delimited {
        buf: bytes,
        what: "NS_INFO",
    };
    let ns: NameSystemSection = d.need()?;
    out.push_str("<NameSection>");
    o("namespaceId", jint(ns.namespace_id()), out);
    o("genstampV1", jlong(ns.genstamp_v1()), out);
    o("genstampV2", jlong(ns.genstamp_v2()), out);
    o("genstampV1Limit", jlong(ns.genstamp_v1_limit()), out);
    o(
        "lastAllocatedBlockId",
        jlong(ns.last_allocated_block_id()),
        out,
    );
    o("txid", jlong(ns.transaction_id()), out);
    out.push_str("</NameSection>\n");
    Ok(())
}

/// `<FileUnderConstructionSection>...</FileUnderConstructionSection>\n`.
fn under_construction_section(bytes: &[u8], out: &mut String) -> Result<(), String> {
    let mut d = Delimited {
        buf: bytes,
        what: "FILES_UNDERCONSTRUCTION",
    };
    out.push_str("<FileUnderConstructionSection>");
    while let Some(e) = d.next::<FileUnderConstructionEntry>()? {
        out.push_str("<inode>");
        o("id", jlong(e.inode_id()), out);
        o("path", e.full_path(), out);
        out.push_str("</inode>\n");
    }
    out.push_str("</FileUnderConstructionSection>\n");
    Ok(())
}

/// `<INodeReferenceSection>...</INodeReferenceSection>` (no newline after
/// it).
fn reference_section(bytes: &[u8], out: &mut String) -> Result<(), String> {
    let mut d = Delimited {
        buf: bytes,
        what: "INODE_REFERENCE",
    };
    out.push_str("<INodeReferenceSection>");
    while let Some(r) = d.next::<INodeReference>()? {
        out.push_str("<ref>");
        o("referredId", jlong(r.referred_id()), out);
        o("name", utf8_lossy(r.name()), out);
        o("dstSnapshotId", jint(r.dst_snapshot_id()), out);
        o("lastSnapshotId", jint(r.last_snapshot_id()), out);
        out.push_str("</ref>\n");
    }
    out.push_str("</INodeReferenceSection>");
    Ok(())
}

/// Hadoop's built-in erasure coding policies by id
/// (`SystemErasureCodingPolicies`): codec, data units, parity units; each
/// with a 1 MiB cell and the name `ErasureCodingPolicy.composePolicyName`
/// gives it.
fn system_ec_policy(id: i8) -> Option<(&'static str, i32, i32)> {
    match id {
        1 => Some(("rs", 6, 3)),
        2 => Some(("rs", 3, 2)),
        3 => Some(("rs-legacy", 6, 3)),
        4 => Some(("xor", 2, 1)),
        5 => Some(("rs", 10, 4)),
        _ => None,
    }
}

/// The ERASURE_CODING section: nothing without policies, else
/// `<ErasureCodingSection>` with a line per `println`.
fn erasure_coding_section(bytes: &[u8], out: &mut String) -> Result<(), String> {
    let mut d = Delimited {
        buf: bytes,
        what: "ERASURE_CODING",
    };
    let s: ErasureCodingSection = d.need()?;
    if s.policies.is_empty() {
        return Ok(());
    }
    out.push_str("<ErasureCodingSection>\n");
    for p in &s.policies {
        erasure_coding_policy(p, out)?;
    }
    out.push_str("</ErasureCodingSection>\n\n");
    Ok(())
}

/// One policy as `PBHelperClient.convertErasureCodingPolicyInfo` reads it
/// and OIV's `dumpErasureCodingPolicy` prints it.
fn erasure_coding_policy(p: &ErasureCodingPolicyProto, out: &mut String) -> Result<(), String> {
    let id = (p.id & 0xff) as u8 as i8;
    let (name, cell, codec, data, parity, options) = match system_ec_policy(id) {
        Some((codec, data, parity)) => {
            let cell = 1024 * 1024;
            let name = format!("{}-{data}-{parity}-{}k", codec.to_uppercase(), cell / 1024);
            (name, cell, codec.to_string(), data, parity, Vec::new())
        }
        None => {
            let missing =
                |f: &str| format!("ERASURE_CODING: Missing {f} field in ErasureCodingPolicy proto");
            let name = p.name.clone().ok_or_else(|| missing("name"))?;
            let schema = p.schema.as_ref().ok_or_else(|| missing("schema"))?;
            let cell = jint(p.cell_size.ok_or_else(|| missing("cellsize"))?);
            if cell <= 0 || cell % 1024 != 0 {
                return Err(format!(
                    "ERASURE_CODING: policy {id}: cellSize {cell} is not positive and 1024 aligned"
                ));
            }
            let options: Vec<(String, String)> = schema
                .options
                .iter()
                .map(|e| (e.key.clone(), e.value.clone()))
                .collect();
            (
                name,
                cell,
                schema.codec_name.clone(),
                jint(schema.data_units),
                jint(schema.parity_units),
                java_hash_map_order(&options),
            )
        }
    };
    let state = match p.state {
        Some(1) => "DISABLED",
        Some(2) => "ENABLED",
        Some(3) => "REMOVED",
        _ => {
            return Err(format!(
                "ERASURE_CODING: policy {id}: Missing state field in ErasureCodingPolicy proto"
            ))
        }
    };
    out.push_str("<erasureCodingPolicy>\n");
    o("policyId", id, out);
    o("policyName", name, out);
    o("cellSize", cell, out);
    o("policyState", state, out);
    out.push_str("<ecSchema>\n");
    o("codecName", codec, out);
    o("dataUnits", data, out);
    o("parityUnits", parity, out);
    if !options.is_empty() {
        out.push_str("<extraOptions>\n");
        for (k, v) in &options {
            out.push_str("<option>\n");
            o("key", k, out);
            o("value", v, out);
            out.push_str("</option>\n");
        }
        out.push_str("</extraOptions>\n");
    }
    out.push_str("</ecSchema>\n");
    out.push_str("</erasureCodingPolicy>\n\n");
    Ok(())
}

/// `<tag>date</tag>`, as OIV's `dumpDate` prints a Java `long` (no
/// mangling).
fn date(tag: &str, ms: u64, out: &mut String) {
    let _ = write!(out, "<{tag}>{}</{tag}>", java_date(jlong(ms)));
}

/// `<SecretManagerSection>...</SecretManagerSection>` (no newline in it or
/// after it).
fn secret_manager_section(bytes: &[u8], out: &mut String) -> Result<(), String> {
    let mut d = Delimited {
        buf: bytes,
        what: "SECRET_MANAGER",
    };
    out.push_str("<SecretManagerSection>");
    let s: SecretManagerSection = d.need()?;
    o("currentId", jint(s.current_id()), out);
    o("tokenSequenceNumber", jint(s.token_sequence_number()), out);
    o("numDelegationKeys", jint(s.num_keys()), out);
    o("numTokens", jint(s.num_tokens()), out);
    for _ in 0..jcount(s.num_keys()) {
        let k: DelegationKey = d.need()?;
        out.push_str("<delegationKey>");
        o("id", jint(k.id()), out);
        o("key", hex(k.key()), out);
        if let Some(x) = k.expiry_date {
            date("expiry", x, out);
        }
        out.push_str("</delegationKey>");
    }
    for _ in 0..jcount(s.num_tokens()) {
        let t: PersistToken = d.need()?;
        out.push_str("<token>");
        if let Some(v) = t.version {
            o("version", jint(v), out);
        }
        if let Some(v) = &t.owner {
            o("owner", v, out);
        }
        if let Some(v) = &t.renewer {
            o("renewer", v, out);
        }
        if let Some(v) = &t.real_user {
            o("realUser", v, out);
        }
        if let Some(v) = t.issue_date {
            date("issueDate", v, out);
        }
        if let Some(v) = t.max_date {
            date("maxDate", v, out);
        }
        if let Some(v) = t.sequence_number {
            o("sequenceNumber", jint(v), out);
        }
        if let Some(v) = t.master_key_id {
            o("masterKeyId", jint(v), out);
        }
        if let Some(v) = t.expiry_date {
            date("expiryDate", v, out);
        }
        out.push_str("</token>");
    }
    out.push_str("</SecretManagerSection>");
    Ok(())
}

/// `<CacheManagerSection>...</CacheManagerSection>\n`.
fn cache_manager_section(bytes: &[u8], out: &mut String) -> Result<(), String> {
    let mut d = Delimited {
        buf: bytes,
        what: "CACHE_MANAGER",
    };
    out.push_str("<CacheManagerSection>");
    let s: CacheManagerSection = d.need()?;
    o("nextDirectiveId", jlong(s.next_directive_id), out);
    o("numDirectives", jint(s.num_directives), out);
    o("numPools", jint(s.num_pools), out);
    for _ in 0..jcount(s.num_pools) {
        let p: CachePoolInfoProto = d.need()?;
        out.push_str("<pool>");
        o("poolName", p.pool_name(), out);
        o("ownerName", p.owner_name(), out);
        o("groupName", p.group_name(), out);
        o("mode", p.mode(), out);
        o("limit", p.limit(), out);
        o("maxRelativeExpiry", p.max_relative_expiry(), out);
        out.push_str("</pool>\n");
    }
    for _ in 0..jcount(s.num_directives) {
        let p: CacheDirectiveInfoProto = d.need()?;
        out.push_str("<directive>");
        o("id", p.id(), out);
        o("path", p.path(), out);
        o("replication", jint(p.replication()), out);
        o("pool", p.pool(), out);
        out.push_str("<expiration>");
        // `getExpiration()` of an absent one: the default message.
        let e = p.expiration.unwrap_or_default();
        o("millis", e.millis, out);
        flag("relative", e.is_relative, out);
        out.push_str("</expiration>\n");
        out.push_str("</directive>\n");
    }
    out.push_str("</CacheManagerSection>\n");
    Ok(())
}

struct Writer<'a> {
    strings: &'a Strings,
}

impl Writer<'_> {
    /// `<INodeSection>...</INodeSection>\n`, counting into `gaps`, `counts`
    /// and `blocks`.
    fn inode_section(
        &self,
        bytes: &[u8],
        out: &mut String,
        gaps: &mut ModelGaps,
        counts: &mut [u64; 3],
        blocks: &mut u64,
    ) -> Result<(), String> {
        let mut d = Delimited {
            buf: bytes,
            what: "INODE",
        };
        let h: INodeSection = d.need()?;
        out.push_str("<INodeSection>");
        o("lastInodeId", jlong(h.last_inode_id()), out);
        o("numInodes", jlong(h.num_inodes()), out);
        let mut last_id = None;
        for _ in 0..h.num_inodes() {
            let p: i_node_section::INode = d.need()?;
            if last_id.is_some_and(|l| l > p.id) {
                gaps.inodes_out_of_id_order += 1;
            }
            last_id = Some(p.id);
            out.push_str("<inode>");
            self.inode_fields(&p, out, gaps, counts, blocks)?;
            out.push_str("</inode>\n");
        }
        out.push_str("</INodeSection>\n");
        Ok(())
    }

    /// OIV's `dumpINodeFields`.
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
            self.file_fields(f, out, gaps)?;
        } else if let Some(d) = &p.directory {
            counts[1] += 1;
            self.dir_fields(p.id, d, out, gaps)?;
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

    /// OIV's `dumpINodeFile`.
    fn file_fields(
        &self,
        f: &i_node_section::INodeFile,
        out: &mut String,
        gaps: &mut ModelGaps,
    ) -> Result<(), String> {
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
        block_list(&f.blocks, out);
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
        Ok(())
    }

    /// OIV's `dumpINodeDirectory` (`id`: the inode's, for error messages).
    fn dir_fields(
        &self,
        id: u64,
        d: &i_node_section::INodeDirectory,
        out: &mut String,
        gaps: &mut ModelGaps,
    ) -> Result<(), String> {
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
                    .map_err(|_| format!("inode {id}: storage type {}", e.storage_type))?;
                out.push_str("<typeQuota>");
                o("type", st.as_str_name(), out);
                o("quota", jlong(e.quota), out);
                out.push_str("</typeQuota>");
            }
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

    /// The entries of an INODE_DIR section, each `<directory>...</directory>`
    /// and a newline (the caller prints the section's tags).
    fn dir_section(
        &self,
        bytes: &[u8],
        out: &mut String,
        gaps: &mut ModelGaps,
    ) -> Result<(), String> {
        let mut d = Delimited {
            buf: bytes,
            what: "INODE_DIR",
        };
        let mut last = None;
        while let Some(e) = d.next::<DirEntry>()? {
            if last.is_some_and(|l| l > e.parent()) {
                gaps.dirs_out_of_id_order += 1;
            }
            last = Some(e.parent());
            if !e.ref_children.is_empty() {
                gaps.ref_children += e.ref_children.len() as u64;
                if e.children.is_empty() {
                    gaps.ref_only_dirs += 1;
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

    /// `<SnapshotSection>...</SnapshotSection>\n`.
    fn snapshot_section(&self, bytes: &[u8], out: &mut String) -> Result<(), String> {
        let mut d = Delimited {
            buf: bytes,
            what: "SNAPSHOT",
        };
        out.push_str("<SnapshotSection>");
        let s: SnapshotSection = d.need()?;
        o("snapshotCounter", jint(s.snapshot_counter()), out);
        o("numSnapshots", jint(s.num_snapshots()), out);
        if !s.snapshottable_dir.is_empty() {
            out.push_str("<snapshottableDir>");
            for &id in &s.snapshottable_dir {
                o("dir", jlong(id), out);
            }
            out.push_str("</snapshottableDir>\n");
        }
        let (mut gaps, mut counts, mut blocks) = (ModelGaps::default(), [0u64; 3], 0u64);
        for _ in 0..jcount(s.num_snapshots()) {
            let pbs: Snapshot = d.need()?;
            out.push_str("<snapshot>");
            o("id", jint(pbs.snapshot_id()), out);
            out.push_str("<root>");
            // `getRoot()` of an absent root: the default INode.
            let root = pbs.root.unwrap_or_default();
            self.inode_fields(&root, out, &mut gaps, &mut counts, &mut blocks)?;
            out.push_str("</root>");
            out.push_str("</snapshot>");
        }
        out.push_str("</SnapshotSection>\n");
        Ok(())
    }

    /// `<SnapshotDiffSection>...</SnapshotDiffSection>\n`.
    fn snapshot_diff_section(&self, bytes: &[u8], out: &mut String) -> Result<(), String> {
        let mut d = Delimited {
            buf: bytes,
            what: "SNAPSHOT_DIFF",
        };
        let mut gaps = ModelGaps::default();
        out.push_str("<SnapshotDiffSection>");
        while let Some(e) = d.next::<DiffEntry>()? {
            let tag = match e.r#type {
                1 => "fileDiffEntry",
                2 => "dirDiffEntry",
                t => return Err(format!("SNAPSHOT_DIFF: unknown DiffEntry type {t}")),
            };
            let _ = write!(out, "<{tag}>");
            o("inodeId", jlong(e.inode_id()), out);
            o("count", jint(e.num_of_diff()), out);
            for _ in 0..jcount(e.num_of_diff()) {
                if e.r#type == 1 {
                    self.file_diff(&mut d, out, &mut gaps)?;
                } else {
                    self.dir_diff(&mut d, e.inode_id(), out, &mut gaps)?;
                }
            }
            let _ = write!(out, "</{tag}>");
        }
        out.push_str("</SnapshotDiffSection>\n");
        Ok(())
    }

    /// One `<fileDiff>...</fileDiff>\n`, read from `d`.
    fn file_diff(
        &self,
        d: &mut Delimited<'_>,
        out: &mut String,
        gaps: &mut ModelGaps,
    ) -> Result<(), String> {
        out.push_str("<fileDiff>");
        let f: FileDiff = d.need()?;
        o("snapshotId", jint(f.snapshot_id()), out);
        o("size", jlong(f.file_size()), out);
        o("name", utf8_lossy(f.name()), out);
        // Java's `getSnapshotCopy()` is never null: the default INodeFile
        // for an absent copy.
        let copy = f.snapshot_copy.clone().unwrap_or_default();
        out.push_str("<snapshotCopy>");
        self.file_fields(&copy, out, gaps)?;
        out.push_str("</snapshotCopy>\n");
        block_list(&f.blocks, out);
        out.push_str("</fileDiff>\n");
        Ok(())
    }

    /// One `<dirDiff>...</dirDiff>\n` with its created entries, read from
    /// `d` (`id`: the entry's inode, for error messages).
    fn dir_diff(
        &self,
        d: &mut Delimited<'_>,
        id: u64,
        out: &mut String,
        gaps: &mut ModelGaps,
    ) -> Result<(), String> {
        out.push_str("<dirDiff>");
        let dd: DirectoryDiff = d.need()?;
        o("snapshotId", jint(dd.snapshot_id()), out);
        o("childrenSize", jint(dd.children_size()), out);
        flag("isSnapshotRoot", dd.is_snapshot_root(), out);
        o("name", utf8_lossy(dd.name()), out);
        if let Some(c) = &dd.snapshot_copy {
            out.push_str("<snapshotCopy>");
            self.dir_fields(id, c, out, gaps)?;
            out.push_str("</snapshotCopy>\n");
        }
        o("createdListSize", jint(dd.created_list_size()), out);
        for &x in &dd.deleted_inode {
            o("deletedInode", jlong(x), out);
        }
        for &x in &dd.deleted_inode_ref {
            o("deletedInoderef", jint(x), out);
        }
        for _ in 0..jcount(dd.created_list_size()) {
            let ce: CreatedListEntry = d.need()?;
            out.push_str("<created>");
            o("name", utf8_lossy(ce.name()), out);
            out.push_str("</created>\n");
        }
        out.push_str("</dirDiff>\n");
        Ok(())
    }
}

/// `<blocks>` (each `<block>` with `id`, `genstamp`, `numBytes`, and a
/// newline) and `</blocks>\n` when there are any blocks.
fn block_list(blocks: &[BlockProto], out: &mut String) {
    if blocks.is_empty() {
        return;
    }
    out.push_str("<blocks>");
    for b in blocks {
        out.push_str("<block>");
        o("id", jlong(b.block_id), out);
        o("genstamp", jlong(b.gen_stamp), out);
        o("numBytes", jlong(b.num_bytes()), out);
        out.push_str("</block>\n");
    }
    out.push_str("</blocks>\n");
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
    let mut out = String::new();
    name_section(&bytes, &mut out)?;
    Ok((jint(sum.layout_version), sum.ondisk_version, out))
}
