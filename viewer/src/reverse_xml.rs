//! OIV's XML read back into a Hadoop fsimage (what Hadoop's `oiv -p
//! ReverseXML` does; `nsimage convert DUMP.xml --to hdfs`): the document
//! `hdfs oiv -p XML` or `nsimage dump --format xml` prints, read as a
//! stream of events in bounded memory (the string table, one element's
//! fields and the writer's buffer at a time), each element turned into the
//! protobuf message it was printed from and written straight out.
//!
//! Accepted: Hadoop 3's form, and Hadoop 2.8 to 2.10's (its
//! `perferredBlockSize` spelling, no `ErasureCodingSection`). Hadoop 2.7
//! and earlier printed no `version` element, no inode count and
//! permissions as `rwxr-xr-x`: such a document is refused, naming why.
//!
//! The image is the one OIV printed, but for what OIV's text does not
//! hold, where the image gets a choice of its own: string ids
//! (names are numbered in order of first use; with the expanded tables of
//! layout -65 and later, `maskBits` 3), `rollingUpgradeStartTime`,
//! `lastAllocatedStripedBlockId`, nsimage's own creation time field of
//! NS_INFO (in images nsimage wrote), a cache pool's default replication, a
//! striped file's stored replication (OIV prints 1), mode bits above the
//! sticky bit, and which of the always-printed fields were absent. A file
//! diff's `snapshotCopy` that is the empty file OIV prints for an absent
//! one is written absent; a user or group printed `null` (OIV's word for
//! a name id the image lacks) is read back as id 0. Sections are written in the document's order,
//! the string table last; the summary lists them as written.
//!
//! Every text goes back through OIV's escapes (`&amp;` and the other
//! entity references, `\XXXX;` for a code point; `\0080;` to `\00ff;` for
//! a byte that was not UTF-8, as nsimage's dump writes them). Numbers are
//! Java's: a `long` read back into a `uint64` keeps its bits.
//!
//! Errors name the file and the byte offset of the event that broke a
//! rule: an element OIV does not print where it stands, a number that does
//! not parse, fewer inodes than `numInodes`, a text longer than
//! [`MAX_TEXT`] (or a run of over eight times that without a tag), a
//! document without a NameSection or INodeSection. The image written is
//! then loaded before it takes the output's name (`convert` does), so one
//! nsimage cannot read back is never left there.

use crate::error::ViewError;
use nsimage_format::hdfs::{
    AclBits, HdfsSection, PermBits, StringTag, XAttrBits, ERASURE_CODING_LAYOUT_VERSION,
    EXPANDED_STRING_TABLE_LAYOUT_VERSION, MAX_MESSAGE_BYTES,
};
use nsimage_format::hdfs_pb::{
    files_under_construction_section::FileUnderConstructionEntry,
    i_node_directory_section::DirEntry,
    i_node_reference_section::INodeReference,
    i_node_section::{self, INode},
    secret_manager_section::{DelegationKey, PersistToken},
    snapshot_diff_section::{diff_entry, CreatedListEntry, DiffEntry, DirectoryDiff, FileDiff},
    snapshot_section::Snapshot,
    string_table_section::Entry,
    BlockProto, BlockTypeProto, CacheDirectiveInfoExpirationProto, CacheDirectiveInfoProto,
    CacheManagerSection, CachePoolInfoProto, EcSchemaOptionEntryProto, EcSchemaProto,
    ErasureCodingPolicyProto, ErasureCodingPolicyState, ErasureCodingSection, INodeSection,
    NameSystemSection, SecretManagerSection, SnapshotSection, StorageTypeProto, StringTableSection,
};
use quick_xml::events::Event;
use quick_xml::Reader;
use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// The most children (and references) one INODE_DIR entry is written
/// with: what `dfs.namenode.fs-limits.max-directory-items` allows, so that
/// an entry stays within a message's 64 MiB; a wider directory is written
/// as several entries of its parent, as Hadoop's writer does.
const DIR_ENTRY_CHILDREN: usize = 6_400_000;

/// The longest text one element may hold (a name, a target, an xattr
/// value as hex, a key): 16 MiB.
pub const MAX_TEXT: usize = 16 << 20;

/// The offset of an error `Rev` finds without the reader at hand, given
/// the reader's offset before it leaves `reverse_xml`.
const UNLOCATED: u64 = u64::MAX;

/// Where the image's messages go: a Hadoop fsimage writer (the command
/// line hands the writer crate's `HdfsMessageWriter`; the viewer imports
/// no writer).
pub trait MessageSink {
    /// One message of the section being written, as its encoded body.
    ///
    /// # Errors
    /// The output's.
    fn message(&mut self, body: &[u8]) -> std::io::Result<()>;

    /// Ends the section being written, to be listed under `name`.
    ///
    /// # Errors
    /// The output's.
    fn commit(&mut self, name: &str) -> std::io::Result<()>;
}

/// What [`reverse_xml`] read.
#[derive(Clone, Copy, Debug)]
pub struct Reversed {
    /// The image's layout version.
    pub layout_version: i32,
    /// Inodes written (INODE section).
    pub inodes: u64,
}

/// Reads the OIV XML document `input` (named `name` in errors) and hands
/// the messages of the Hadoop fsimage it describes to the sink `start`
/// makes for the image's layout version (`layout_version` when given,
/// else the document's); `out_name` names the sink's output in errors.
/// Returns the sink, every section committed but the summary, which is
/// the sink's to write.
///
/// # Errors
/// [`ViewError::Xml`] where the document breaks a rule (see the module
/// page), [`ViewError::Io`] for the sink's I/O errors, `start`'s.
pub fn reverse_xml<R: BufRead, S: MessageSink>(
    input: R,
    name: &Path,
    out_name: &Path,
    layout_version: Option<i32>,
    start: impl FnOnce(i32) -> Result<S, ViewError>,
) -> Result<(S, Reversed), ViewError> {
    let mut x = Xml::new(input, name);
    x.expect_open("fsimage")?;
    match x.tag()? {
        Some(Tag::Open(n)) if n == "version" => {}
        _ => {
            return Err(x.err(
                "no <version> element first: Hadoop 2.7's XML and earlier (no version, no inode count, symbolic permissions) is not read back"
                    .into(),
            ))
        }
    }
    let mut doc_layout = None;
    x.children("version", |x, tag| match tag {
        "layoutVersion" => {
            doc_layout = Some(x.num::<i32>(tag)?);
            Ok(())
        }
        "onDiskVersion" | "oivRevision" => x.skip_text(tag),
        _ => Err(x.unexpected(tag, "version")),
    })?;
    let lv = layout_version
        .or(doc_layout)
        .ok_or_else(|| x.err("the version element has no layoutVersion".into()))?;
    let w = start(lv)?;
    let mut r = Rev {
        w,
        body: Vec::new(),
        out_name: out_name.to_path_buf(),
        strings: Strings::new(if lv <= EXPANDED_STRING_TABLE_LAYOUT_VERSION {
            3
        } else {
            0
        }),
        inodes: 0,
        ec_written: false,
        name_system: None,
        max_striped: None,
        saw_inodes: false,
        layout_version: lv,
    };
    let read = x.children("fsimage", |x, tag| r.section(x, tag));
    read.map_err(|e| match e {
        ViewError::Xml {
            offset: UNLOCATED,
            detail,
            ..
        } => x.err(detail),
        e => e,
    })?;
    x.expect_end()?;
    if r.name_system.is_none() {
        return Err(x.err("no NameSection: an image needs NS_INFO".into()));
    }
    if !r.saw_inodes {
        return Err(x.err("no INodeSection: an image needs INODE".into()));
    }
    if lv <= ERASURE_CODING_LAYOUT_VERSION && !r.ec_written {
        // Hadoop 3 always writes the section; OIV prints none when empty.
        r.msg(&ErasureCodingSection::default())?;
        r.commit(HdfsSection::ErasureCoding.name())?;
    }
    r.ns_info()?;
    r.string_table()?;
    let rev = Reversed {
        layout_version: r.layout_version,
        inodes: r.inodes,
    };
    Ok((r.w, rev))
}

/// An XML event, as the reader hands them on.
enum Tag {
    Open(String),
    Close(String),
}

/// The document, read event by event.
struct Xml<R: BufRead> {
    r: Reader<Capped<R>>,
    buf: Vec<u8>,
    path: PathBuf,
    /// An empty element's end, handed on after its start.
    pending_close: Option<String>,
}

/// The most bytes one event of the document may take (a text with its
/// escapes, a tag, a comment): what the reader buffers for one event is
/// bounded before it is handed on.
const MAX_RUN: usize = MAX_TEXT * 8;

/// The document's bytes, refused once one event has taken more than
/// [`MAX_RUN`] of them (the count starts again at each event).
struct Capped<R> {
    inner: R,
    run: usize,
}

impl<R: BufRead> std::io::Read for Capped<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = {
            let b = self.fill_buf()?;
            let n = b.len().min(out.len());
            out[..n].copy_from_slice(&b[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Capped<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.run > MAX_RUN {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("over {MAX_RUN} bytes without a tag"),
            ));
        }
        self.inner.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        self.run = self.run.saturating_add(amt);
        self.inner.consume(amt);
    }
}

impl<R: BufRead> Xml<R> {
    fn new(input: R, path: &Path) -> Self {
        let mut r = Reader::from_reader(Capped {
            inner: input,
            run: 0,
        });
        r.config_mut().trim_text(false);
        r.config_mut().expand_empty_elements = false;
        Xml {
            r,
            buf: Vec::new(),
            path: path.to_path_buf(),
            pending_close: None,
        }
    }

    fn err(&self, detail: String) -> ViewError {
        ViewError::Xml {
            path: self.path.clone(),
            offset: self.r.buffer_position(),
            detail,
        }
    }

    fn unexpected(&self, tag: &str, parent: &str) -> ViewError {
        self.err(format!(
            "<{tag}> is not an element OIV prints in <{parent}>"
        ))
    }

    /// The next raw event, owned.
    fn event(&mut self) -> Result<Event<'static>, ViewError> {
        self.buf.clear();
        self.r.get_mut().run = 0;
        match self.r.read_event_into(&mut self.buf) {
            Ok(e) => Ok(e.into_owned()),
            Err(e) => Err(self.err(format!("not well-formed XML: {e}"))),
        }
    }

    fn name_of(&self, raw: &[u8]) -> Result<String, ViewError> {
        String::from_utf8(raw.to_vec()).map_err(|_| self.err("an element name is not UTF-8".into()))
    }

    /// The next start or end tag; text between tags must be white space.
    fn tag(&mut self) -> Result<Option<Tag>, ViewError> {
        if let Some(n) = self.pending_close.take() {
            return Ok(Some(Tag::Close(n)));
        }
        loop {
            match self.event()? {
                Event::Start(s) => return Ok(Some(Tag::Open(self.name_of(s.name().as_ref())?))),
                Event::Empty(s) => {
                    let n = self.name_of(s.name().as_ref())?;
                    self.pending_close = Some(n.clone());
                    return Ok(Some(Tag::Open(n)));
                }
                Event::End(e) => return Ok(Some(Tag::Close(self.name_of(e.name().as_ref())?))),
                Event::Text(t) => {
                    if !t.iter().all(u8::is_ascii_whitespace) {
                        return Err(self.err("text where OIV prints none".into()));
                    }
                }
                Event::GeneralRef(_) | Event::CData(_) => {
                    return Err(self.err("text where OIV prints none".into()))
                }
                Event::Eof => return Ok(None),
                Event::Decl(_) | Event::Comment(_) | Event::PI(_) | Event::DocType(_) => {}
            }
        }
    }

    fn expect_open(&mut self, name: &str) -> Result<(), ViewError> {
        match self.tag()? {
            Some(Tag::Open(n)) if n == name => Ok(()),
            Some(Tag::Open(n)) => Err(self.err(format!("<{n}> where OIV prints <{name}>"))),
            Some(Tag::Close(n)) => Err(self.err(format!("</{n}> where OIV prints <{name}>"))),
            None => Err(self.err(format!("the document ends before <{name}>"))),
        }
    }

    fn expect_end(&mut self) -> Result<(), ViewError> {
        match self.tag()? {
            None => Ok(()),
            Some(_) => Err(self.err("more after </fsimage>".into())),
        }
    }

    /// Calls `f` for each child element of `parent` (whose start was just
    /// read) until its end; `f` reads the child whole, its end included.
    fn children(
        &mut self,
        parent: &str,
        mut f: impl FnMut(&mut Self, &str) -> Result<(), ViewError>,
    ) -> Result<(), ViewError> {
        loop {
            match self.tag()? {
                Some(Tag::Open(n)) => f(self, &n)?,
                Some(Tag::Close(n)) if n == parent => return Ok(()),
                Some(Tag::Close(n)) => {
                    return Err(self.err(format!("</{n}> inside <{parent}>")));
                }
                None => return Err(self.err(format!("the document ends inside <{parent}>"))),
            }
        }
    }

    /// The text of element `name` (its start just read), unescaped, to
    /// its end.
    fn text(&mut self, name: &str) -> Result<Vec<u8>, ViewError> {
        let mut raw = String::new();
        if self.pending_close.take().is_some() {
            return Ok(Vec::new());
        }
        loop {
            match self.event()? {
                Event::Text(t) => {
                    let s = std::str::from_utf8(&t)
                        .map_err(|_| self.err(format!("<{name}>'s text is not UTF-8")))?;
                    raw.push_str(s);
                }
                Event::GeneralRef(g) => {
                    let r = std::str::from_utf8(&g).unwrap_or("").to_string();
                    match g.resolve_char_ref() {
                        Ok(Some(c)) => raw.push(c),
                        Ok(None) => match quick_xml::escape::resolve_predefined_entity(&r) {
                            Some(t) => raw.push_str(t),
                            None => return Err(self.err(format!("unknown entity &{r};"))),
                        },
                        Err(e) => return Err(self.err(format!("entity &{r};: {e}"))),
                    }
                }
                Event::CData(c) => {
                    let s = std::str::from_utf8(&c)
                        .map_err(|_| self.err(format!("<{name}>'s text is not UTF-8")))?;
                    raw.push_str(s);
                }
                Event::End(e) if e.name().as_ref() == name.as_bytes() => break,
                Event::End(_) | Event::Start(_) | Event::Empty(_) => {
                    return Err(self.err(format!("<{name}> holds an element; OIV prints text")))
                }
                Event::Eof => return Err(self.err(format!("the document ends inside <{name}>"))),
                Event::Comment(_) | Event::PI(_) | Event::Decl(_) | Event::DocType(_) => {}
            }
            if raw.len() > MAX_TEXT {
                return Err(self.err(format!("<{name}>'s text is over {MAX_TEXT} bytes")));
            }
        }
        unmangle(&raw).ok_or_else(|| self.err(format!("<{name}> holds a malformed \\XXXX; escape")))
    }

    fn skip_text(&mut self, name: &str) -> Result<(), ViewError> {
        self.text(name).map(|_| ())
    }

    fn string(&mut self, name: &str) -> Result<String, ViewError> {
        let b = self.text(name)?;
        Ok(String::from_utf8_lossy(&b).into_owned())
    }

    fn num<T: std::str::FromStr>(&mut self, name: &str) -> Result<T, ViewError> {
        let b = self.text(name)?;
        let s = std::str::from_utf8(&b).unwrap_or("");
        s.trim()
            .parse()
            .map_err(|_| self.err(format!("<{name}> holds {s:?}, not a number")))
    }

    /// A Java `long` into a `uint64`: the same bits.
    fn long(&mut self, name: &str) -> Result<u64, ViewError> {
        Ok(self.num::<i64>(name)?.cast_unsigned())
    }

    /// A Java `int` into a `uint32`.
    fn int(&mut self, name: &str) -> Result<u32, ViewError> {
        Ok(self.num::<i32>(name)?.cast_unsigned())
    }

    /// A Boolean element, `<tag/>`: present means true.
    fn flag(&mut self, name: &str) -> Result<bool, ViewError> {
        if !self.text(name)?.is_empty() {
            return Err(self.err(format!(
                "<{name}> holds text; OIV prints an empty element for true and none for false"
            )));
        }
        Ok(true)
    }

    /// A date as OIV prints it (`yyyy-MM-dd'T'HH:mm:ss.SSS`, UTC).
    fn date(&mut self, name: &str) -> Result<u64, ViewError> {
        let s = self.string(name)?;
        crate::text::parse_oiv_xml_date(&s).ok_or_else(|| {
            self.err(format!(
                "<{name}> holds {s:?}, not a date as OIV prints one"
            ))
        })
    }
}

/// Undoes OIV's `\XXXX;` escapes: a code point; `\0080;` to `\00ff;` a
/// byte (nsimage's dump writes a byte that is not UTF-8 so; U+0080 to
/// U+00FF are written as themselves). `None` for a malformed escape.
fn unmangle(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('\\') {
        out.extend_from_slice(&rest.as_bytes()[..i]);
        let after = &rest[i + 1..];
        let end = after.find(';')?;
        let hex = &after[..end];
        if hex.is_empty() || hex.len() > 8 {
            return None;
        }
        let cp = u32::from_str_radix(hex, 16).ok()?;
        if (0x80..=0xff).contains(&cp) {
            out.push(u8::try_from(cp).ok()?);
        } else {
            let c = char::from_u32(cp)?;
            let mut b = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
        }
        rest = &after[end + 1..];
    }
    out.extend_from_slice(rest.as_bytes());
    Some(out)
}

/// The string table being built: serial ids in order of first use, one
/// space per kind with `maskBits` 3, one for all with 0.
struct Strings {
    mask_bits: u32,
    /// Serial ids by name, per space (one with `maskBits` 0).
    ids: [HashMap<Vec<u8>, u32>; 3],
    entries: Vec<(u32, Vec<u8>)>,
}

/// The most serial ids of one kind: Hadoop's 24-bit fields.
const MAX_SERIAL: u32 = (1 << 24) - 1;

impl Strings {
    fn new(mask_bits: u32) -> Self {
        Strings {
            mask_bits,
            ids: Default::default(),
            entries: Vec::new(),
        }
    }

    /// The serial id of `s` in `tag`'s space, numbered on first use;
    /// `None` past [`MAX_SERIAL`].
    fn serial(&mut self, tag: StringTag, s: &[u8]) -> Option<u32> {
        let space = match (self.mask_bits, tag) {
            (0, _) | (_, StringTag::User) => 0,
            (_, StringTag::Group) => 1,
            (_, StringTag::XAttr) => 2,
        };
        if let Some(&id) = self.ids[space].get(s) {
            return Some(id);
        }
        let id = u32::try_from(self.ids[space].len()).ok()?.checked_add(1)?;
        if id > MAX_SERIAL {
            return None;
        }
        self.ids[space].insert(s.to_vec(), id);
        self.entries.push((tag.key(id, self.mask_bits), s.to_vec()));
        Some(id)
    }
}

/// The writing side.
struct Rev<S: MessageSink> {
    w: S,
    /// A message's encoding, reused.
    body: Vec<u8>,
    out_name: PathBuf,
    strings: Strings,
    inodes: u64,
    ec_written: bool,
    /// The NameSection, written last (see `ns_info`).
    name_system: Option<NameSystemSection>,
    /// The largest block group id seen.
    max_striped: Option<u64>,
    /// Whether the INodeSection was read.
    saw_inodes: bool,
    layout_version: i32,
}

/// An inode's fields as OIV prints them, gathered from its elements.
#[derive(Default)]
struct Fields {
    id: u64,
    kind: Option<i32>,
    name: Vec<u8>,
    replication: Option<u32>,
    mtime: u64,
    atime: Option<u64>,
    preferred_block_size: Option<u64>,
    permission: u64,
    xattrs: Option<i_node_section::XAttrFeatureProto>,
    acl: Vec<u32>,
    blocks: Vec<BlockProto>,
    storage_policy: Option<u32>,
    block_type: Option<i32>,
    ec_policy: Option<u32>,
    uc: Option<i_node_section::FileUnderConstructionFeature>,
    ns_quota: Option<u64>,
    ds_quota: Option<u64>,
    type_quotas: Vec<i_node_section::QuotaByStorageTypeEntryProto>,
    target: Option<Vec<u8>>,
}

impl Fields {
    fn file(self) -> i_node_section::INodeFile {
        i_node_section::INodeFile {
            // A striped file's replication is not what OIV prints.
            replication: if self.ec_policy.is_some() {
                None
            } else {
                Some(self.replication.unwrap_or(0))
            },
            modification_time: Some(self.mtime),
            access_time: Some(self.atime.unwrap_or(0)),
            preferred_block_size: Some(self.preferred_block_size.unwrap_or(0)),
            permission: Some(self.permission),
            blocks: self.blocks,
            file_uc: self.uc,
            acl: (!self.acl.is_empty())
                .then_some(i_node_section::AclFeatureProto { entries: self.acl }),
            x_attrs: self.xattrs,
            storage_policy_id: self.storage_policy,
            block_type: self.ec_policy.and(self.block_type),
            erasure_coding_policy_id: self.ec_policy,
        }
    }

    fn directory(self) -> i_node_section::INodeDirectory {
        i_node_section::INodeDirectory {
            modification_time: Some(self.mtime),
            ns_quota: self.ns_quota.filter(|_| self.ds_quota.is_some()),
            ds_quota: self.ds_quota.filter(|_| self.ns_quota.is_some()),
            permission: Some(self.permission),
            acl: (!self.acl.is_empty())
                .then_some(i_node_section::AclFeatureProto { entries: self.acl }),
            x_attrs: self.xattrs,
            type_quotas: (!self.type_quotas.is_empty()).then_some(
                i_node_section::QuotaByStorageTypeFeatureProto {
                    quotas: self.type_quotas,
                },
            ),
        }
    }

    /// Whether these are the fields OIV prints for an absent file copy.
    fn is_default_file(&self) -> bool {
        self.replication.unwrap_or(0) == 0
            && self.mtime == 0
            && self.atime.unwrap_or(0) == 0
            && self.preferred_block_size.unwrap_or(0) == 0
            && self.permission == 0
            && self.xattrs.is_none()
            && self.acl.is_empty()
            && self.blocks.is_empty()
            && self.storage_policy.is_none()
            && self.ec_policy.is_none()
            && self.uc.is_none()
    }
}

impl<S: MessageSink> Rev<S> {
    fn io(&self, source: std::io::Error) -> ViewError {
        ViewError::Io {
            path: self.out_name.clone(),
            source,
        }
    }

    fn msg(&mut self, m: &impl prost::Message) -> Result<(), ViewError> {
        self.body.clear();
        // Encoding into a Vec cannot run out of room.
        let _ = m.encode(&mut self.body);
        if self.body.len() as u64 > MAX_MESSAGE_BYTES {
            // The element just read makes a message readers refuse: the
            // document's fault, located where it ends (see `located`).
            return Err(ViewError::Xml {
                path: PathBuf::new(),
                offset: UNLOCATED,
                detail: format!(
                    "the element ending here makes a message of {} bytes; readers take at most {MAX_MESSAGE_BYTES}",
                    self.body.len()
                ),
            });
        }
        self.w.message(&self.body).map_err(|e| self.io(e))
    }

    fn commit(&mut self, name: &str) -> Result<(), ViewError> {
        self.w.commit(name).map_err(|e| self.io(e))
    }

    fn section<R: BufRead>(&mut self, x: &mut Xml<R>, tag: &str) -> Result<(), ViewError> {
        match tag {
            "NameSection" => self.name_section(x),
            "ErasureCodingSection" => self.erasure_coding(x),
            "INodeSection" => self.inodes(x),
            "INodeReferenceSection" => self.references(x),
            "SnapshotSection" => self.snapshots(x),
            "INodeDirectorySection" => self.directories(x),
            "FileUnderConstructionSection" => self.under_construction(x),
            "SnapshotDiffSection" => self.snapshot_diffs(x),
            "SecretManagerSection" => self.secret_manager(x),
            "CacheManagerSection" => self.cache_manager(x),
            _ => Err(x.unexpected(tag, "fsimage")),
        }
    }

    fn name_section<R: BufRead>(&mut self, x: &mut Xml<R>) -> Result<(), ViewError> {
        let mut s = NameSystemSection::default();
        x.children("NameSection", |x, t| {
            match t {
                "namespaceId" => s.namespace_id = Some(x.int(t)?),
                "genstampV1" => s.genstamp_v1 = Some(x.long(t)?),
                "genstampV2" => s.genstamp_v2 = Some(x.long(t)?),
                "genstampV1Limit" => s.genstamp_v1_limit = Some(x.long(t)?),
                "lastAllocatedBlockId" => s.last_allocated_block_id = Some(x.long(t)?),
                "txid" => s.transaction_id = Some(x.long(t)?),
                _ => return Err(x.unexpected(t, "NameSection")),
            }
            Ok(())
        })?;
        if self.name_system.replace(s).is_some() {
            return Err(x.err("a second NameSection".into()));
        }
        Ok(())
    }

    /// NS_INFO, last: its `lastAllocatedStripedBlockId`, which OIV does
    /// not print, is the largest block group id the image holds, as a
    /// NameNode that allocated them would have it.
    fn ns_info(&mut self) -> Result<(), ViewError> {
        let Some(mut s) = self.name_system.take() else {
            return Ok(());
        };
        s.last_allocated_striped_block_id = self.max_striped;
        self.msg(&s)?;
        self.commit(HdfsSection::NsInfo.name())
    }

    /// Notes the id of `b` if it is a block group's (negative as Java's).
    fn saw_block(&mut self, b: &BlockProto) {
        if b.block_id.cast_signed() < 0 {
            self.max_striped = Some(self.max_striped.map_or(b.block_id, |m| m.max(b.block_id)));
        }
    }

    fn erasure_coding<R: BufRead>(&mut self, x: &mut Xml<R>) -> Result<(), ViewError> {
        let mut s = ErasureCodingSection::default();
        x.children("ErasureCodingSection", |x, t| {
            if t != "erasureCodingPolicy" {
                return Err(x.unexpected(t, "ErasureCodingSection"));
            }
            let mut p = ErasureCodingPolicyProto::default();
            let mut schema = EcSchemaProto::default();
            x.children(t, |x, t| {
                match t {
                    "policyId" => p.id = u32::from(x.num::<i8>(t)?.cast_unsigned()),
                    "policyName" => p.name = Some(x.string(t)?),
                    "cellSize" => p.cell_size = Some(x.int(t)?),
                    "policyState" => {
                        let s = x.string(t)?;
                        let st = ErasureCodingPolicyState::from_str_name(&s)
                            .ok_or_else(|| x.err(format!("policy state {s:?}")))?;
                        p.state = Some(st as i32);
                    }
                    "ecSchema" => x.children(t, |x, t| {
                        match t {
                            "codecName" => schema.codec_name = x.string(t)?,
                            "dataUnits" => schema.data_units = x.int(t)?,
                            "parityUnits" => schema.parity_units = x.int(t)?,
                            "extraOptions" => x.children(t, |x, t| {
                                if t != "option" {
                                    return Err(x.unexpected(t, "extraOptions"));
                                }
                                let mut o = EcSchemaOptionEntryProto::default();
                                x.children(t, |x, t| {
                                    match t {
                                        "key" => o.key = x.string(t)?,
                                        "value" => o.value = x.string(t)?,
                                        _ => return Err(x.unexpected(t, "option")),
                                    }
                                    Ok(())
                                })?;
                                schema.options.push(o);
                                Ok(())
                            })?,
                            _ => return Err(x.unexpected(t, "ecSchema")),
                        }
                        Ok(())
                    })?,
                    _ => return Err(x.unexpected(t, "erasureCodingPolicy")),
                }
                Ok(())
            })?;
            p.schema = Some(std::mem::take(&mut schema));
            s.policies.push(p);
            Ok(())
        })?;
        self.msg(&s)?;
        self.ec_written = true;
        self.commit(HdfsSection::ErasureCoding.name())
    }

    /// The permission text `user:group:mode`, packed with this image's
    /// serial ids.
    fn permission<R: BufRead>(&mut self, x: &mut Xml<R>, t: &str) -> Result<u64, ViewError> {
        let s = x.text(t)?;
        let bad = |x: &Xml<R>| x.err(format!("<{t}> is not user:group:mode"));
        let last = s.iter().rposition(|&b| b == b':').ok_or_else(|| bad(x))?;
        let (ug, mode) = (&s[..last], &s[last + 1..]);
        let first = ug.iter().position(|&b| b == b':').ok_or_else(|| bad(x))?;
        let (user, group) = (&ug[..first], &ug[first + 1..]);
        let mode = std::str::from_utf8(mode)
            .ok()
            .and_then(|m| u16::from_str_radix(m, 8).ok())
            .ok_or_else(|| bad(x))?;
        // OIV prints `null` for a name id the image lacks (id 0): read
        // back as id 0.
        let user = match user {
            b"null" => 0,
            u => self.serial(x, StringTag::User, u)?,
        };
        let group = match group {
            b"null" => 0,
            g => self.serial(x, StringTag::Group, g)?,
        };
        Ok(PermBits { user, group, mode }.pack())
    }

    fn serial<R: BufRead>(
        &mut self,
        x: &Xml<R>,
        tag: StringTag,
        s: &[u8],
    ) -> Result<u32, ViewError> {
        self.strings.serial(tag, s).ok_or_else(|| {
            x.err(format!(
                "more than {MAX_SERIAL} names of one kind (of all kinds, with maskBits 0)"
            ))
        })
    }

    /// The fields of an inode (or a snapshot root, or a snapshot copy):
    /// the children of `parent` to its end.
    fn fields<R: BufRead>(&mut self, x: &mut Xml<R>, parent: &str) -> Result<Fields, ViewError> {
        let mut f = Fields::default();
        x.children(parent, |x, t| {
            match t {
                "id" => f.id = x.long(t)?,
                "type" => {
                    let s = x.string(t)?;
                    let k = i_node_section::i_node::Type::from_str_name(&s)
                        .ok_or_else(|| x.err(format!("inode type {s:?}")))?;
                    f.kind = Some(k as i32);
                }
                "name" => f.name = x.text(t)?,
                "replication" => f.replication = Some(x.int(t)?),
                "mtime" => f.mtime = x.long(t)?,
                "atime" => f.atime = Some(x.long(t)?),
                "preferredBlockSize" | "perferredBlockSize" => {
                    f.preferred_block_size = Some(x.long(t)?)
                }
                "permission" => f.permission = self.permission(x, t)?,
                "xattrs" => {
                    let mut feat = i_node_section::XAttrFeatureProto::default();
                    x.children(t, |x, t| {
                        if t != "xattr" {
                            return Err(x.unexpected(t, "xattrs"));
                        }
                        let (mut ns, mut name, mut value) = (None, None, None);
                        x.children(t, |x, t| {
                            match t {
                                "ns" => ns = Some(x.string(t)?),
                                "name" => name = Some(x.text(t)?),
                                "val" => value = Some(x.text(t)?),
                                "valHex" => {
                                    let h = x.string(t)?;
                                    value = Some(from_hex(&h).ok_or_else(|| {
                                        x.err(format!("<valHex> holds {h:?}, not hex"))
                                    })?);
                                }
                                _ => return Err(x.unexpected(t, "xattr")),
                            }
                            Ok(())
                        })?;
                        let ns = match ns.as_deref() {
                            Some("USER") => 0,
                            Some("TRUSTED") => 1,
                            Some("SECURITY") => 2,
                            Some("SYSTEM") => 3,
                            Some("RAW") => 4,
                            other => return Err(x.err(format!("xattr namespace {other:?}"))),
                        };
                        let name = name.ok_or_else(|| x.err("an xattr without a name".into()))?;
                        let serial = self.serial(x, StringTag::XAttr, &name)?;
                        feat.x_attrs.push(i_node_section::XAttrCompactProto {
                            name: XAttrBits { ns, name: serial }.pack(),
                            value,
                        });
                        Ok(())
                    })?;
                    f.xattrs = Some(feat);
                }
                "acls" => x.children(t, |x, t| {
                    if t != "acl" {
                        return Err(x.unexpected(t, "acls"));
                    }
                    let s = x.text(t)?;
                    let e = self.acl(x, &s)?;
                    f.acl.push(e);
                    Ok(())
                })?,
                "blocks" => x.children(t, |x, t| {
                    if t != "block" {
                        return Err(x.unexpected(t, "blocks"));
                    }
                    f.blocks.push(block(x)?);
                    Ok(())
                })?,
                "storagePolicyId" => f.storage_policy = Some(x.int(t)?),
                "blockType" => {
                    let s = x.string(t)?;
                    let b = BlockTypeProto::from_str_name(&s)
                        .ok_or_else(|| x.err(format!("block type {s:?}")))?;
                    f.block_type = Some(b as i32);
                }
                "erasureCodingPolicyId" => f.ec_policy = Some(x.int(t)?),
                "file-under-construction" => {
                    let mut uc = i_node_section::FileUnderConstructionFeature::default();
                    x.children(t, |x, t| {
                        match t {
                            "clientName" => uc.client_name = Some(x.string(t)?),
                            "clientMachine" => uc.client_machine = Some(x.string(t)?),
                            _ => return Err(x.unexpected(t, "file-under-construction")),
                        }
                        Ok(())
                    })?;
                    f.uc = Some(uc);
                }
                "nsquota" => f.ns_quota = Some(x.long(t)?),
                "dsquota" => f.ds_quota = Some(x.long(t)?),
                "typeQuota" => {
                    let mut q = i_node_section::QuotaByStorageTypeEntryProto::default();
                    x.children(t, |x, t| {
                        match t {
                            "type" => {
                                let s = x.string(t)?;
                                q.storage_type = StorageTypeProto::from_str_name(&s)
                                    .ok_or_else(|| x.err(format!("storage type {s:?}")))?
                                    as i32;
                            }
                            "quota" => q.quota = x.long(t)?,
                            _ => return Err(x.unexpected(t, "typeQuota")),
                        }
                        Ok(())
                    })?;
                    f.type_quotas.push(q);
                }
                "target" => f.target = Some(x.text(t)?),
                _ => return Err(x.unexpected(t, parent)),
            }
            Ok(())
        })?;
        for b in &f.blocks {
            self.saw_block(b);
        }
        Ok(f)
    }

    /// An ACL entry's text (`[default:]type:name:rwx`), packed.
    fn acl<R: BufRead>(&mut self, x: &Xml<R>, s: &[u8]) -> Result<u32, ViewError> {
        let bad = || x.err(format!("ACL entry {:?}", String::from_utf8_lossy(s)));
        let (default_scope, rest) = match s.strip_prefix(b"default:") {
            Some(r) => (true, r),
            None => (false, s),
        };
        let mut parts = rest.splitn(2, |&b| b == b':');
        let kind = match parts.next().ok_or_else(bad)? {
            b"user" => 0u8,
            b"group" => 1,
            b"mask" => 2,
            b"other" => 3,
            _ => return Err(bad()),
        };
        let rest = parts.next().ok_or_else(bad)?;
        let colon = rest.iter().rposition(|&b| b == b':').ok_or_else(bad)?;
        let (name, perm) = (&rest[..colon], &rest[colon + 1..]);
        let perm = match perm {
            [r, w, e] => {
                let bit = |c: u8, want: u8, v: u8| match c {
                    b'-' => Some(0),
                    c if c == want => Some(v),
                    _ => None,
                };
                bit(*r, b'r', 4).ok_or_else(bad)?
                    | bit(*w, b'w', 2).ok_or_else(bad)?
                    | bit(*e, b'x', 1).ok_or_else(bad)?
            }
            _ => return Err(bad()),
        };
        let name = if name.is_empty() {
            0
        } else {
            let tag = if kind == 0 {
                StringTag::User
            } else {
                StringTag::Group
            };
            self.serial(x, tag, name)?
        };
        Ok(AclBits {
            perm,
            kind,
            default_scope,
            name,
        }
        .pack())
    }

    fn inode_of<R: BufRead>(&self, x: &Xml<R>, mut f: Fields) -> Result<INode, ViewError> {
        let kind = f
            .kind
            .ok_or_else(|| x.err(format!("inode {} has no type", f.id as i64)))?;
        let mut p = INode {
            r#type: kind,
            id: f.id,
            name: Some(std::mem::take(&mut f.name)),
            ..INode::default()
        };
        match i_node_section::i_node::Type::try_from(kind) {
            Ok(i_node_section::i_node::Type::File) => p.file = Some(f.file()),
            Ok(i_node_section::i_node::Type::Directory) => p.directory = Some(f.directory()),
            _ => {
                p.symlink = Some(i_node_section::INodeSymlink {
                    permission: Some(f.permission),
                    target: Some(f.target.unwrap_or_default()),
                    modification_time: Some(f.mtime),
                    access_time: Some(f.atime.unwrap_or(0)),
                })
            }
        }
        Ok(p)
    }

    fn inodes<R: BufRead>(&mut self, x: &mut Xml<R>) -> Result<(), ViewError> {
        if std::mem::replace(&mut self.saw_inodes, true) {
            return Err(x.err("a second INodeSection".into()));
        }
        let mut header = INodeSection::default();
        let mut declared = None;
        let mut written = 0u64;
        x.children("INodeSection", |x, t| {
            match t {
                "lastInodeId" => header.last_inode_id = Some(x.long(t)?),
                "numInodes" => {
                    if declared.is_some() {
                        return Err(x.err("a second numInodes".into()));
                    }
                    let n = x.long(t)?;
                    header.num_inodes = Some(n);
                    declared = Some(n);
                    self.msg(&header)?;
                }
                "inode" => {
                    let Some(n) = declared else {
                        return Err(x.err(
                            "an inode before numInodes (Hadoop 2.7's XML, which has no count, is not read back)"
                                .into(),
                        ));
                    };
                    if written >= n {
                        return Err(x.err(format!("more inodes than numInodes ({n})")));
                    }
                    let f = self.fields(x, t)?;
                    let p = self.inode_of(x, f)?;
                    self.msg(&p)?;
                    written += 1;
                }
                _ => return Err(x.unexpected(t, "INodeSection")),
            }
            Ok(())
        })?;
        match declared {
            None => return Err(x.err("an INodeSection without numInodes".into())),
            Some(n) if n != written => {
                return Err(x.err(format!("{written} inodes; numInodes says {n}")))
            }
            Some(_) => {}
        }
        self.inodes = written;
        self.commit(HdfsSection::Inode.name())
    }

    fn references<R: BufRead>(&mut self, x: &mut Xml<R>) -> Result<(), ViewError> {
        x.children("INodeReferenceSection", |x, t| {
            if t != "ref" {
                return Err(x.unexpected(t, "INodeReferenceSection"));
            }
            let mut r = INodeReference::default();
            x.children(t, |x, t| {
                match t {
                    "referredId" => r.referred_id = Some(x.long(t)?),
                    "name" => r.name = Some(x.text(t)?),
                    "dstSnapshotId" => r.dst_snapshot_id = Some(x.int(t)?),
                    "lastSnapshotId" => r.last_snapshot_id = Some(x.int(t)?),
                    _ => return Err(x.unexpected(t, "ref")),
                }
                Ok(())
            })?;
            self.msg(&r)
        })?;
        self.commit(HdfsSection::InodeReference.name())
    }

    fn snapshots<R: BufRead>(&mut self, x: &mut Xml<R>) -> Result<(), ViewError> {
        // The header is written before the first snapshot (OIV prints its
        // fields first), each snapshot as it is read.
        let mut h = SnapshotSection::default();
        let (mut header_out, mut snaps) = (false, 0u64);
        x.children("SnapshotSection", |x, t| {
            if header_out && t != "snapshot" {
                return Err(x.err(format!("<{t}> after a snapshot")));
            }
            match t {
                "snapshotCounter" => h.snapshot_counter = Some(x.int(t)?),
                "numSnapshots" => h.num_snapshots = Some(x.int(t)?),
                "snapshottableDir" => x.children(t, |x, t| {
                    if t != "dir" {
                        return Err(x.unexpected(t, "snapshottableDir"));
                    }
                    h.snapshottable_dir.push(x.long(t)?);
                    Ok(())
                })?,
                "snapshot" => {
                    let mut s = Snapshot::default();
                    x.children(t, |x, t| {
                        match t {
                            "id" => s.snapshot_id = Some(x.int(t)?),
                            "root" => {
                                let f = self.fields(x, t)?;
                                s.root = Some(self.inode_of(x, f)?);
                            }
                            _ => return Err(x.unexpected(t, "snapshot")),
                        }
                        Ok(())
                    })?;
                    if !header_out {
                        self.msg(&h)?;
                        header_out = true;
                    }
                    self.msg(&s)?;
                    snaps += 1;
                }
                _ => return Err(x.unexpected(t, "SnapshotSection")),
            }
            Ok(())
        })?;
        if snaps != u64::from(h.num_snapshots()) {
            return Err(x.err(format!(
                "{snaps} snapshots; numSnapshots says {}",
                h.num_snapshots()
            )));
        }
        if !header_out {
            self.msg(&h)?;
        }
        self.commit(HdfsSection::Snapshot.name())
    }

    fn directories<R: BufRead>(&mut self, x: &mut Xml<R>) -> Result<(), ViewError> {
        x.children("INodeDirectorySection", |x, t| {
            if t != "directory" {
                return Err(x.unexpected(t, "INodeDirectorySection"));
            }
            // Written as it comes, in entries of at most DIR_ENTRY_CHILDREN
            // children and references of the same parent, as Hadoop's
            // writer splits a directory wider than an entry may hold
            // (loaders join them).
            let mut e = DirEntry::default();
            let mut written = false;
            x.children(t, |x, t| {
                match t {
                    "parent" if e.parent.is_none() && !written => e.parent = Some(x.long(t)?),
                    "child" if e.ref_children.is_empty() => e.children.push(x.long(t)?),
                    "refChild" => e.ref_children.push(x.int(t)?),
                    "parent" | "child" => {
                        return Err(x.err(format!("<{t}> out of OIV's order in <directory>")))
                    }
                    _ => return Err(x.unexpected(t, "directory")),
                }
                if e.children.len() + e.ref_children.len() >= DIR_ENTRY_CHILDREN {
                    if e.parent.is_none() {
                        return Err(x.err("a directory without a parent".into()));
                    }
                    self.msg(&e)?;
                    written = true;
                    e.children.clear();
                    e.ref_children.clear();
                }
                Ok(())
            })?;
            if e.parent.is_none() {
                return Err(x.err("a directory without a parent".into()));
            }
            if !written || !e.children.is_empty() || !e.ref_children.is_empty() {
                self.msg(&e)?;
            }
            Ok(())
        })?;
        self.commit(HdfsSection::InodeDir.name())
    }

    fn under_construction<R: BufRead>(&mut self, x: &mut Xml<R>) -> Result<(), ViewError> {
        x.children("FileUnderConstructionSection", |x, t| {
            if t != "inode" {
                return Err(x.unexpected(t, "FileUnderConstructionSection"));
            }
            let mut e = FileUnderConstructionEntry::default();
            x.children(t, |x, t| {
                match t {
                    "id" => e.inode_id = Some(x.long(t)?),
                    "path" => e.full_path = Some(x.string(t)?),
                    _ => return Err(x.unexpected(t, "inode")),
                }
                Ok(())
            })?;
            self.msg(&e)
        })?;
        self.commit(HdfsSection::FilesUnderConstruction.name())
    }

    fn snapshot_diffs<R: BufRead>(&mut self, x: &mut Xml<R>) -> Result<(), ViewError> {
        x.children("SnapshotDiffSection", |x, t| {
            let file = match t {
                "fileDiffEntry" => true,
                "dirDiffEntry" => false,
                _ => return Err(x.unexpected(t, "SnapshotDiffSection")),
            };
            let mut e = DiffEntry {
                r#type: if file {
                    diff_entry::Type::Filediff
                } else {
                    diff_entry::Type::Directorydiff
                } as i32,
                ..DiffEntry::default()
            };
            let mut started = false;
            let mut diffs = 0u32;
            x.children(t, |x, t| {
                match t {
                    "inodeId" => e.inode_id = Some(x.long(t)?),
                    "count" => e.num_of_diff = Some(x.int(t)?),
                    "fileDiff" if file => {
                        if !started {
                            self.msg(&e)?;
                            started = true;
                        }
                        self.file_diff(x, t)?;
                        diffs += 1;
                    }
                    "dirDiff" if !file => {
                        if !started {
                            self.msg(&e)?;
                            started = true;
                        }
                        self.dir_diff(x, t)?;
                        diffs += 1;
                    }
                    _ => {
                        return Err(x.unexpected(
                            t,
                            if file {
                                "fileDiffEntry"
                            } else {
                                "dirDiffEntry"
                            },
                        ))
                    }
                }
                Ok(())
            })?;
            if !started {
                self.msg(&e)?;
            }
            if diffs != e.num_of_diff() {
                return Err(x.err(format!("{diffs} diffs; count says {}", e.num_of_diff())));
            }
            Ok(())
        })?;
        self.commit(HdfsSection::SnapshotDiff.name())
    }

    fn file_diff<R: BufRead>(&mut self, x: &mut Xml<R>, tag: &str) -> Result<(), ViewError> {
        let mut d = FileDiff::default();
        x.children(tag, |x, t| {
            match t {
                "snapshotId" => d.snapshot_id = Some(x.int(t)?),
                "size" => d.file_size = Some(x.long(t)?),
                "name" => d.name = Some(x.text(t)?),
                "snapshotCopy" => {
                    let f = self.fields(x, t)?;
                    if !f.is_default_file() {
                        d.snapshot_copy = Some(f.file());
                    }
                }
                "blocks" => x.children(t, |x, t| {
                    if t != "block" {
                        return Err(x.unexpected(t, "blocks"));
                    }
                    d.blocks.push(block(x)?);
                    Ok(())
                })?,
                _ => return Err(x.unexpected(t, "fileDiff")),
            }
            Ok(())
        })?;
        for b in &d.blocks {
            self.saw_block(b);
        }
        self.msg(&d)
    }

    fn dir_diff<R: BufRead>(&mut self, x: &mut Xml<R>, tag: &str) -> Result<(), ViewError> {
        let mut d = DirectoryDiff {
            is_snapshot_root: Some(false),
            ..DirectoryDiff::default()
        };
        // The diff is written before its first created entry (OIV prints
        // its fields first), each entry as it is read.
        let (mut diff_out, mut created) = (false, 0u64);
        x.children(tag, |x, t| {
            if diff_out && t != "created" {
                return Err(x.err(format!("<{t}> after a created entry")));
            }
            match t {
                "snapshotId" => d.snapshot_id = Some(x.int(t)?),
                "childrenSize" => d.children_size = Some(x.int(t)?),
                "isSnapshotRoot" => d.is_snapshot_root = Some(x.flag(t)?),
                "name" => d.name = Some(x.text(t)?),
                "snapshotCopy" => {
                    let f = self.fields(x, t)?;
                    d.snapshot_copy = Some(f.directory());
                }
                "createdListSize" => d.created_list_size = Some(x.int(t)?),
                "deletedInode" => d.deleted_inode.push(x.long(t)?),
                "deletedInoderef" => d.deleted_inode_ref.push(x.int(t)?),
                "created" => {
                    let mut c = CreatedListEntry::default();
                    x.children(t, |x, t| {
                        if t != "name" {
                            return Err(x.unexpected(t, "created"));
                        }
                        c.name = Some(x.text(t)?);
                        Ok(())
                    })?;
                    if !diff_out {
                        self.msg(&d)?;
                        diff_out = true;
                    }
                    self.msg(&c)?;
                    created += 1;
                }
                _ => return Err(x.unexpected(t, "dirDiff")),
            }
            Ok(())
        })?;
        if created != u64::from(d.created_list_size()) {
            return Err(x.err(format!(
                "{created} created entries; createdListSize says {}",
                d.created_list_size()
            )));
        }
        if !diff_out {
            self.msg(&d)?;
        }
        Ok(())
    }

    fn secret_manager<R: BufRead>(&mut self, x: &mut Xml<R>) -> Result<(), ViewError> {
        let mut h = SecretManagerSection::default();
        // The header is written before the first key or token (OIV prints
        // its fields first), each key and token as it is read.
        let (mut header_out, mut keys, mut tokens) = (false, 0u64, 0u64);
        x.children("SecretManagerSection", |x, t| {
            let item = matches!(t, "delegationKey" | "token");
            if header_out && !item {
                return Err(x.err(format!("<{t}> after a key or token")));
            }
            if item && !header_out {
                self.msg(&h)?;
                header_out = true;
            }
            if t == "delegationKey" && tokens > 0 {
                return Err(x.err("a delegation key after a token".into()));
            }
            match t {
                "currentId" => h.current_id = Some(x.int(t)?),
                "tokenSequenceNumber" => h.token_sequence_number = Some(x.int(t)?),
                "numDelegationKeys" => h.num_keys = Some(x.int(t)?),
                "numTokens" => h.num_tokens = Some(x.int(t)?),
                "delegationKey" => {
                    let mut k = DelegationKey::default();
                    x.children(t, |x, t| {
                        match t {
                            "id" => k.id = Some(x.int(t)?),
                            "key" => {
                                let s = x.string(t)?;
                                k.key =
                                    Some(from_hex(&s).ok_or_else(|| {
                                        x.err(format!("<key> holds {s:?}, not hex"))
                                    })?);
                            }
                            "expiry" => k.expiry_date = Some(x.date(t)?),
                            _ => return Err(x.unexpected(t, "delegationKey")),
                        }
                        Ok(())
                    })?;
                    self.msg(&k)?;
                    keys += 1;
                }
                "token" => {
                    let mut k = PersistToken::default();
                    x.children(t, |x, t| {
                        match t {
                            "version" => k.version = Some(x.int(t)?),
                            "owner" => k.owner = Some(x.string(t)?),
                            "renewer" => k.renewer = Some(x.string(t)?),
                            "realUser" => k.real_user = Some(x.string(t)?),
                            "issueDate" => k.issue_date = Some(x.date(t)?),
                            "maxDate" => k.max_date = Some(x.date(t)?),
                            "sequenceNumber" => k.sequence_number = Some(x.int(t)?),
                            "masterKeyId" => k.master_key_id = Some(x.int(t)?),
                            "expiryDate" => k.expiry_date = Some(x.date(t)?),
                            _ => return Err(x.unexpected(t, "token")),
                        }
                        Ok(())
                    })?;
                    self.msg(&k)?;
                    tokens += 1;
                }
                _ => return Err(x.unexpected(t, "SecretManagerSection")),
            }
            Ok(())
        })?;
        if keys != u64::from(h.num_keys()) || tokens != u64::from(h.num_tokens()) {
            return Err(x.err(format!(
                "{keys} keys and {tokens} tokens; the counts say {} and {}",
                h.num_keys(),
                h.num_tokens()
            )));
        }
        if !header_out {
            self.msg(&h)?;
        }
        self.commit(HdfsSection::SecretManager.name())
    }

    fn cache_manager<R: BufRead>(&mut self, x: &mut Xml<R>) -> Result<(), ViewError> {
        let mut h = CacheManagerSection::default();
        // The header is written before the first pool or directive (OIV
        // prints its fields first), each pool and directive as it is read.
        let (mut header_out, mut pools, mut directives) = (false, 0u64, 0u64);
        x.children("CacheManagerSection", |x, t| {
            let item = matches!(t, "pool" | "directive");
            if header_out && !item {
                return Err(x.err(format!("<{t}> after a pool or directive")));
            }
            if item && !header_out {
                self.msg(&h)?;
                header_out = true;
            }
            if t == "pool" && directives > 0 {
                return Err(x.err("a cache pool after a directive".into()));
            }
            match t {
                "nextDirectiveId" => h.next_directive_id = x.long(t)?,
                "numDirectives" => h.num_directives = x.int(t)?,
                "numPools" => h.num_pools = x.int(t)?,
                "pool" => {
                    let mut p = CachePoolInfoProto::default();
                    x.children(t, |x, t| {
                        match t {
                            "poolName" => p.pool_name = Some(x.string(t)?),
                            "ownerName" => p.owner_name = Some(x.string(t)?),
                            "groupName" => p.group_name = Some(x.string(t)?),
                            "mode" => p.mode = Some(x.num(t)?),
                            "limit" => p.limit = Some(x.num(t)?),
                            "maxRelativeExpiry" => p.max_relative_expiry = Some(x.num(t)?),
                            _ => return Err(x.unexpected(t, "pool")),
                        }
                        Ok(())
                    })?;
                    self.msg(&p)?;
                    pools += 1;
                }
                "directive" => {
                    let mut d = CacheDirectiveInfoProto::default();
                    x.children(t, |x, t| {
                        match t {
                            "id" => d.id = Some(x.num(t)?),
                            "path" => d.path = Some(x.string(t)?),
                            "replication" => d.replication = Some(x.int(t)?),
                            "pool" => d.pool = Some(x.string(t)?),
                            "expiration" => {
                                let mut e = CacheDirectiveInfoExpirationProto::default();
                                x.children(t, |x, t| {
                                    match t {
                                        "millis" => e.millis = x.num(t)?,
                                        "relative" => e.is_relative = x.flag(t)?,
                                        _ => return Err(x.unexpected(t, "expiration")),
                                    }
                                    Ok(())
                                })?;
                                d.expiration = Some(e);
                            }
                            _ => return Err(x.unexpected(t, "directive")),
                        }
                        Ok(())
                    })?;
                    self.msg(&d)?;
                    directives += 1;
                }
                _ => return Err(x.unexpected(t, "CacheManagerSection")),
            }
            Ok(())
        })?;
        if pools != u64::from(h.num_pools) || directives != u64::from(h.num_directives) {
            return Err(x.err(format!(
                "{pools} pools and {directives} directives; the counts say {} and {}",
                h.num_pools, h.num_directives
            )));
        }
        if !header_out {
            self.msg(&h)?;
        }
        self.commit(HdfsSection::CacheManager.name())
    }

    fn string_table(&mut self) -> Result<(), ViewError> {
        let entries = std::mem::take(&mut self.strings.entries);
        self.msg(&StringTableSection {
            num_entry: Some(u32::try_from(entries.len()).unwrap_or(u32::MAX)),
            mask_bits: (self.layout_version <= EXPANDED_STRING_TABLE_LAYOUT_VERSION)
                .then_some(self.strings.mask_bits),
        })?;
        for (id, s) in entries {
            self.msg(&Entry {
                id: Some(id),
                str: Some(String::from_utf8_lossy(&s).into_owned()),
            })?;
        }
        self.commit(HdfsSection::StringTable.name())
    }
}

fn block<R: BufRead>(x: &mut Xml<R>) -> Result<BlockProto, ViewError> {
    let mut b = BlockProto::default();
    x.children("block", |x, t| {
        match t {
            "id" => b.block_id = x.long(t)?,
            "genstamp" => b.gen_stamp = x.long(t)?,
            "numBytes" => b.num_bytes = Some(x.long(t)?),
            _ => return Err(x.unexpected(t, "block")),
        }
        Ok(())
    })?;
    Ok(b)
}

/// Lowercase or uppercase hex to bytes.
fn from_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_come_back() {
        assert_eq!(unmangle("a\\005c;b").unwrap(), b"a\\b");
        assert_eq!(unmangle("\\0001;").unwrap(), b"\x01");
        assert_eq!(unmangle("\\00ff;x").unwrap(), b"\xffx");
        assert_eq!(unmangle("é").unwrap(), "é".as_bytes());
        assert!(unmangle("\\zz;").is_none());
        assert!(unmangle("\\0041").is_none());
    }

    #[test]
    fn hex() {
        assert_eq!(from_hex("00ffA0").unwrap(), vec![0, 0xff, 0xa0]);
        assert!(from_hex("0").is_none());
        assert!(from_hex("zz").is_none());
    }
}
