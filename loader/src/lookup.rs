//! One-path lookups that read only what they need (HDDS-16727).
//!
//! [`load_path`] opens the image (header, footer and index: one tail read),
//! then walks the path down the optional name section, NAME_RUNS or, in
//! images written before it, NAME_INDEX (FORMAT.md, "NAME_RUNS" and
//! "NAME_INDEX"): per component, the index's first keys name the few small
//! sub-sections that may hold `(parent, name)`; when one directory spans
//! several, their first records alone (a few hundred bytes each) pick the
//! one to read. That one is read whole and its checksum checked.
//!
//! The name section is redundant with INODE_DIR and INODE, and no load
//! reads it, so nothing it says is taken on trust (FORMAT.md, "What a
//! lookup checks"): before answering, the lookup checks every entry it
//! relied on against the sections a load reads. Each component's entry
//! must name a child that its parent's INODE_DIR record lists, whose INODE
//! record has the entry's name and type; a name the section does not hold
//! must fall between two entries (or before the first, after the last)
//! that INODE_DIR lists side by side and that INODE names as the section
//! does; a listing (`with_children`) must be INODE_DIR's list, child for
//! child, each named and typed as INODE says. Each INODE_DIR and INODE
//! piece this reads is checked as a load checks it. So the answer is the
//! loaded namespace's whenever a load accepts the image:
//!
//! - a piece that breaks a rule a load enforces (a checksum, an INODE or
//!   INODE_DIR record, a record count) refuses the lookup, located, as a
//!   load refuses the image;
//! - a name section that breaks one of its own rules or disagrees with
//!   INODE_DIR or INODE is not used: the image is loaded in full instead
//!   ([`PathView::indexed`] is false, [`PathView::unused_index`] says
//!   why), which gives the load's answer or its refusal.
//!
//! The result is a small but valid [`Namespace`]: the root, the chain of
//! directories down to the target, the target, and its children when asked.
//! Only the directories on the way and the target (and its children) carry
//! their attributes from the image; the root has default attributes
//! (permission 0, no owner, mtime 0, no quota) unless it is the target.
//! Images without the section (older images, and small ones, which have no
//! sub-sections), and Hadoop images, are loaded in full instead
//! ([`PathView::indexed`] is false): the caller resolves the path in the
//! whole namespace, as it would in any loaded one.

use crate::assemble::Assembly;
use crate::decode::{self, check_piece};
use crate::error::LoadError;
use crate::hdfs::HdfsImage;
use crate::options::LoadOptions;
use crate::record;
use crate::source::{ImageSource, PieceBuf};
use nsimage_format::cipher::Key;
use nsimage_format::consts::name_index;
use nsimage_format::framing::Records;
use nsimage_format::name_runs::Entry;
use nsimage_format::wire::{read_varint, schema};
use nsimage_format::{pb, FormatError, Location, SectionInfo, SectionKind};
use nsimage_namespace::{BuildError, Interned, LoadedBody, LoadedNode, Namespace, ROOT_ID};
use prost::Message;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Bytes read at once to find a sub-section's first record.
const FIRST_RECORD_READ: u64 = 2048;
/// The most one name piece's decoded entries may take (their names and
/// their own size); a piece past it is not used.
const PIECE_ENTRIES_BYTES: usize = 256 << 20;

/// What [`load_path`] is asked for.
#[derive(Clone, Debug, Default)]
pub struct PathOptions {
    /// Also read the target directory's children (their INODE records).
    pub with_children: bool,
    /// The key of an encrypted image.
    pub key: Option<Key>,
    /// The memory a whole load may take, where the lookup falls back to
    /// one (a Hadoop image, an image without a name section): refused over
    /// it as [`load`](crate::load) refuses ([`LoadOptions::budget`]).
    pub budget: Option<crate::budget::Budget>,
    /// Whether a Hadoop image's `.md5` sidecar is checked (the default)
    /// or ignored.
    pub md5: crate::hdfs::Md5Policy,
}

/// What [`load_path`] found, and what it cost.
pub struct PathView {
    /// The root, the directories on the way, the target and (when asked)
    /// its children; the root's attributes are defaults unless it is the
    /// target. The whole namespace when `indexed` is false.
    pub namespace: Namespace,
    /// Bytes read from the image (open included).
    pub bytes_read: u64,
    /// Read calls issued (open included).
    pub read_calls: u64,
    /// Whole pieces (sub-sections or sections) read and checked.
    pub pieces: usize,
    /// False when the image was loaded in full: it has no name section,
    /// or the one it has could not be used (see `unused_index`).
    pub indexed: bool,
    /// Why the image's name section was not used, when it has one that
    /// breaks its own rules or disagrees with INODE_DIR or INODE (located;
    /// `nsimage verify` reports the same as a warning). The answer then
    /// comes from a full load.
    pub unused_index: Option<String>,
    /// What a Hadoop image holds beside the namespace (its snapshots
    /// among them); `None` for an nsimage image.
    pub hdfs: Option<Box<HdfsImage>>,
}

/// Looks the path `components` (from the root, each one name) up in
/// `image`, reading only the pieces on the way (see the module
/// documentation), with the target directory's children when
/// `opts.with_children`.
///
/// Errors: [`LoadError::NoSuchPath`] when a component is missing or the
/// path goes through a file or a symlink (on an indexed image: without the
/// index, the caller resolves the path in the whole namespace); a located
/// [`LoadError::Corrupt`] when a piece read on the way fails its checks.
pub fn load_path(
    image: &Path,
    components: &[&[u8]],
    opts: &PathOptions,
) -> Result<PathView, LoadError> {
    let key = opts.key.as_ref();
    // A Hadoop fsimage has no name index: the whole image.
    if crate::hdfs::is_hdfs_file(image)? {
        return full_load(None, image, opts, None);
    }
    let mut src = ImageSource::open(image)?;
    src.unlock(key)?;
    // NAME_RUNS, or NAME_INDEX in images written before it (the index
    // refuses an image that lists both).
    let Some(names) = src
        .index
        .section(SectionKind::NAME_RUNS)
        .or_else(|| src.index.section(SectionKind::NAME_INDEX))
        .cloned()
    else {
        return full_load(Some(&src), image, opts, None);
    };
    let mut l = Lookup {
        src: &src,
        names,
        pieces: 0,
        dir_pieces: BTreeMap::new(),
    };
    match l.walk(components, opts.with_children) {
        Ok(Ok(namespace)) => Ok(PathView {
            namespace,
            bytes_read: src.bytes_read(),
            read_calls: src.read_calls(),
            pieces: l.pieces,
            indexed: true,
            unused_index: None,
            hdfs: None,
        }),
        Ok(Err(why)) => Err(no_such(image, why)),
        Err(Stop::Refused(e)) => Err(e),
        Err(Stop::Unusable(e)) => {
            let pieces = l.pieces;
            let mut view = full_load(Some(&src), image, opts, Some(e.to_string()))?;
            view.pieces = view.pieces.saturating_add(pieces);
            Ok(view)
        }
    }
}

/// Why a walk stopped short of an answer.
enum Stop {
    /// A piece read on the way breaks a rule a load enforces: the image is
    /// refused, as a load refuses it.
    Refused(LoadError),
    /// The name section breaks one of its own rules or disagrees with
    /// INODE_DIR or INODE, located: the image is loaded in full instead.
    Unusable(LoadError),
}

impl From<LoadError> for Stop {
    fn from(e: LoadError) -> Self {
        Stop::Refused(e)
    }
}

/// What the walk claims of INODE_DIR and INODE, to be checked before it
/// answers.
#[derive(Default)]
struct Claims {
    /// Entries taken as children of their parents (each component's),
    /// with the entries either side of each in its directory.
    members: Vec<(Entry, Option<Entry>, Option<Entry>)>,
    /// A name the section does not hold.
    gap: Option<Gap>,
    /// A directory listed: its entries, in order.
    list: Option<(u64, Vec<Entry>)>,
}

/// A name the name section does not hold in a directory.
struct Gap {
    /// The directory.
    parent: u64,
    /// The name looked up.
    name: Vec<u8>,
    /// The entries either side of it (none before the first, none after
    /// the last).
    before: Option<Entry>,
    after: Option<Entry>,
}

fn show(walked: &str) -> &str {
    if walked.is_empty() {
        "/"
    } else {
        walked
    }
}

fn no_such(image: &Path, why: Option<String>) -> LoadError {
    LoadError::NoSuchPath {
        path: image.to_path_buf(),
        why,
    }
}

fn type_of(body: &LoadedBody<'_>) -> i32 {
    let t = match body {
        LoadedBody::File { .. } => pb::InodeType::File,
        LoadedBody::Directory { .. } => pb::InodeType::Directory,
        LoadedBody::Symlink { .. } => pb::InodeType::Symlink,
    };
    t as i32
}

/// The fallback: the whole image (`src`: the nsimage image already
/// opened, whose reads count too; `unused`: why its name section was not
/// used).
fn full_load(
    src: Option<&ImageSource>,
    image: &Path,
    path_opts: &PathOptions,
    unused: Option<String>,
) -> Result<PathView, LoadError> {
    let opts = LoadOptions {
        key: path_opts.key.clone(),
        budget: path_opts.budget,
        md5: path_opts.md5,
        ..LoadOptions::default()
    };
    let loaded = crate::load::load(image, &opts)?;
    let (opened_bytes, opened_calls) = src.map_or((0, 0), |s| (s.bytes_read(), s.read_calls()));
    Ok(PathView {
        bytes_read: loaded.stats.bytes_read.saturating_add(opened_bytes),
        read_calls: loaded.stats.read_calls.saturating_add(opened_calls),
        pieces: usize::try_from(loaded.stats.pieces).unwrap_or(usize::MAX),
        namespace: loaded.namespace,
        indexed: false,
        unused_index: unused,
        hdfs: loaded.hdfs,
    })
}

/// One INODE_DIR piece, decoded: each directory's id and children.
type DirPiece = Vec<(u64, Vec<u64>)>;

/// A lookup in progress.
struct Lookup<'s> {
    src: &'s ImageSource,
    names: SectionInfo,
    pieces: usize,
    /// INODE_DIR pieces read so far, by position.
    dir_pieces: BTreeMap<usize, DirPiece>,
}

impl Lookup<'_> {
    fn corrupt(&self, at: Location, detail: impl Into<String>) -> LoadError {
        LoadError::Corrupt {
            path: self.src.path().to_path_buf(),
            at,
            detail: detail.into(),
        }
    }

    fn fmt_err(&self, e: FormatError) -> LoadError {
        LoadError::from_format(self.src.path(), e)
    }

    /// The name section is not to be used: `detail`, at `at`.
    fn unusable(&self, at: Location, detail: impl Into<String>) -> Stop {
        Stop::Unusable(self.corrupt(at, detail))
    }

    fn names_at(&self) -> Location {
        Location::in_section(self.names.kind, None, self.names.offset)
    }

    /// The walk: each component's entry, the target's children when
    /// asked, every claim checked, then the small namespace; `Ok(Err(why))`
    /// when the path is not in the image.
    fn walk(
        &mut self,
        components: &[&[u8]],
        with_children: bool,
    ) -> Result<Result<Namespace, Option<String>>, Stop> {
        let dir = pb::InodeType::Directory as i32;
        let mut claims = Claims::default();
        let (mut cur, mut cur_ty) = (ROOT_ID, dir);
        let mut walked = String::new();
        let mut missing: Option<Option<String>> = None;
        for &c in components {
            if cur_ty != dir {
                // The same words as a walk of a loaded namespace.
                let what = if cur_ty == pb::InodeType::Symlink as i32 {
                    "a symlink"
                } else {
                    "a file"
                };
                missing = Some(Some(format!(
                    "{} is {what}, not a directory",
                    show(&walked)
                )));
                break;
            }
            match self.find(cur, c)? {
                Found::Entry(e, before, after) => {
                    walked.push('/');
                    walked.push_str(&String::from_utf8_lossy(c));
                    (cur, cur_ty) = (e.child, e.ty);
                    claims.members.push((e, before, after));
                }
                Found::Between(before, after) => {
                    claims.gap = Some(Gap {
                        parent: cur,
                        name: c.to_vec(),
                        before,
                        after,
                    });
                    missing = Some(None);
                    break;
                }
            }
        }
        if missing.is_none() && with_children && cur_ty == dir {
            let children = self.children(cur)?;
            claims.list = Some((cur, children));
        }
        let records = self.check(&claims, missing.is_none().then_some(cur))?;
        if let Some(why) = missing {
            return Ok(Err(why));
        }
        let children = claims.list.map(|(_, c)| c).unwrap_or_default();
        let chain = claims.members.into_iter().map(|m| m.0).collect();
        self.assemble(chain, &children, &records).map(Ok)
    }

    /// The name section's pieces (NAME_RUNS, or NAME_INDEX in older images;
    /// both have NAME_INDEX's first keys) that may hold entries of
    /// `parent`: the last one whose first key is below the parent's (it may hold its first
    /// entries), and the range of those starting with it.
    fn candidates(&self, parent: u64) -> (Option<usize>, std::ops::Range<usize>) {
        let subs = &self.names.sub_sections;
        if subs.is_empty() {
            return (Some(0), 0..0);
        }
        let Some(lo) = name_index::key(parent, 0) else {
            return (None, 0..0);
        };
        let hi = lo.saturating_add(name_index::MAX_SEQ);
        let b = subs.partition_point(|s| s.first_key < lo);
        let c = subs.partition_point(|s| s.first_key <= hi);
        (b.checked_sub(1), b..c)
    }

    /// The first entry of name section piece `i`, read alone (not checked
    /// against the checksum: it only guides the search, and whatever it
    /// leads to is checked against INODE_DIR and INODE).
    fn first_entry(&self, i: usize) -> Result<Option<Entry>, Stop> {
        let Some(sub) = self.names.sub_sections.get(i) else {
            return Ok(None);
        };
        let at = Location::in_section(self.names.kind, Some(i), sub.offset);
        if !sub.at_rest.is_plain() {
            // A compressed or encrypted piece opens only whole.
            let mut buf = PieceBuf::default();
            let bytes = self.src.piece(sub, &at, &mut buf)?;
            let (off, body) = match Records::new(bytes, at.clone()).next() {
                Some(r) => r.map_err(|e| Stop::Unusable(self.fmt_err(e)))?,
                None => return Err(self.unusable(at, "an empty sub-section")),
            };
            return self.entry(body, &at, off).map(Some);
        }
        let mut buf = self
            .src
            .read_at(sub.offset, sub.length.min(FIRST_RECORD_READ))?;
        let (len, head) = read_varint(&buf)
            .and_then(|(len, head)| Some((len, u64::try_from(head).ok()?)))
            .ok_or_else(|| self.unusable(at.clone(), "bad record length"))?;
        let end = len
            .checked_add(head)
            .filter(|&e| e <= sub.length)
            .ok_or_else(|| self.unusable(at.clone(), "record runs past its sub-section"))?;
        if end > buf.len() as u64 {
            buf = self.src.read_at(sub.offset, end)?;
        }
        let body = buf
            .get(
                usize::try_from(head).unwrap_or(usize::MAX)
                    ..usize::try_from(end).unwrap_or(usize::MAX),
            )
            .ok_or_else(|| self.unusable(at.clone(), "record runs past its sub-section"))?;
        self.entry(body, &at, sub.offset).map(Some)
    }

    /// The entries of one record of the section (a NAME_INDEX record is
    /// one entry, a NAME_RUNS record a run), appended to `out`.
    fn entries(
        &self,
        body: &[u8],
        at: &Location,
        off: u64,
        out: &mut Vec<Entry>,
    ) -> Result<(), Stop> {
        let bad = |d: &str| {
            self.unusable(
                Location {
                    offset: off,
                    ..at.clone()
                },
                d.to_string(),
            )
        };
        if self.names.kind == SectionKind::NAME_RUNS {
            return nsimage_format::name_runs::decode_run(body, out).map_err(bad);
        }
        nsimage_format::wire::check(body, schema::NAME_ENTRY).map_err(bad)?;
        let m = pb::NameEntry::decode(body).map_err(|e| bad(&e.to_string()))?;
        nsimage_format::name_runs::check_entry(m.parent, &m.name, m.child, m.r#type)
            .map_err(bad)?;
        out.push(Entry {
            parent: m.parent,
            name: m.name,
            child: m.child,
            ty: m.r#type,
        });
        Ok(())
    }

    /// The first entry of one record.
    fn entry(&self, body: &[u8], at: &Location, off: u64) -> Result<Entry, Stop> {
        let mut v = Vec::new();
        self.entries(body, at, off, &mut v)?;
        v.into_iter()
            .next()
            .ok_or_else(|| self.unusable(at.clone(), "a record without entries"))
    }

    /// Reads name section piece `i` whole, checks its checksum (as a load
    /// does), then its records, order, count and first key (the section's
    /// own rules), and returns its entries.
    fn piece_entries(&mut self, i: usize) -> Result<Vec<Entry>, Stop> {
        let pieces = self.names.pieces();
        let Some(p) = pieces.get(i) else {
            return Ok(Vec::new());
        };
        let sub = (!self.names.sub_sections.is_empty()).then_some(i);
        let at = Location::in_section(self.names.kind, sub, p.offset);
        let mut buf = PieceBuf::default();
        let bytes = self.src.piece(p, &at, &mut buf)?;
        self.pieces = self.pieces.saturating_add(1);
        let mut out: Vec<Entry> = Vec::new();
        let mut records = 0u64;
        // Front-coded names decode to more than their bytes; a piece whose
        // entries would take more than 64 times its bytes (a writer's never
        // come near) or 256 MiB in all is not used before it costs memory.
        let budget = bytes
            .len()
            .saturating_mul(64)
            .saturating_add(1 << 20)
            .min(PIECE_ENTRIES_BYTES);
        let mut decoded = 0usize;
        for r in Records::new(bytes, at.clone()) {
            let (off, body) = r.map_err(|e| Stop::Unusable(self.fmt_err(e)))?;
            let here = Location {
                offset: off,
                ..at.clone()
            };
            let first = out.len();
            self.entries(body, &at, off, &mut out)?;
            decoded = out
                .get(first..)
                .unwrap_or_default()
                .iter()
                .fold(decoded, |d, e| {
                    d.saturating_add(e.name.len())
                        .saturating_add(std::mem::size_of::<Entry>())
                });
            if decoded > budget {
                return Err(self.unusable(
                    here,
                    "entries that decode to more than 64 times the piece's bytes, or 256 MiB",
                ));
            }
            records = records.saturating_add(1);
            let joined = first.checked_sub(1).and_then(|i| out.get(i..=first));
            if let Some([l, e]) = joined {
                if (l.parent, &l.name) >= (e.parent, &e.name) {
                    return Err(self.unusable(
                        here,
                        "entries not in strictly increasing (parent, name) order",
                    ));
                }
            }
        }
        if records != p.records {
            return Err(self.unusable(
                at,
                format!("{records} records, the index says {}", p.records),
            ));
        }
        if sub.is_some() && out.first().map(|e| e.parent) != Some(name_index::parent(p.first_key)) {
            return Err(self.unusable(at, "first record does not match the first key"));
        }
        Ok(out)
    }

    /// The entry of `name` in directory `parent`, or the entries either
    /// side of where it would be.
    fn find(&mut self, parent: u64, name: &[u8]) -> Result<Found, Stop> {
        let (before, starting) = self.candidates(parent);
        // The last sub-section starting with `parent` whose first name is
        // at most `name`, by binary search on first records.
        let (mut lo, mut hi) = (starting.start, starting.end);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let first = self
                .first_entry(mid)?
                .ok_or_else(|| self.unusable(self.names_at(), "a sub-section is missing"))?;
            if first.parent == parent && first.name.as_slice() <= name {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let pick = if lo > starting.start {
            Some(lo - 1)
        } else {
            before
        };
        let mut below: Option<Entry> = None;
        let mut above: Option<Entry> = None;
        let mut found: Option<Entry> = None;
        // Whether `pick`'s first entry of `parent` opens the piece.
        let mut opens = false;
        if let Some(i) = pick {
            let mut first = true;
            for e in self.piece_entries(i)? {
                if e.parent != parent {
                    first = false;
                    continue;
                }
                let ord = e.name.as_slice().cmp(name);
                if found.is_some() || ord == std::cmp::Ordering::Greater {
                    above = Some(e);
                    break;
                }
                if ord == std::cmp::Ordering::Equal {
                    opens = first && below.is_none();
                    found = Some(e);
                } else {
                    below = Some(e);
                }
                first = false;
            }
        }
        if above.is_none() {
            // The directory's next entry may open the next piece.
            let next = pick.map_or(starting.start, |i| i.saturating_add(1));
            above = self.first_entry(next)?.filter(|e| e.parent == parent);
        }
        if let (Some(i), true) = (pick, opens && starting.contains(&pick.unwrap_or(0))) {
            // The entry opens a piece that starts with its directory: the
            // one before it may end with its predecessor.
            if let Some(prev) = i.checked_sub(1) {
                below = self
                    .piece_entries(prev)?
                    .into_iter()
                    .rfind(|e| e.parent == parent);
            }
        }
        Ok(match found {
            Some(e) => Found::Entry(e, below, above),
            None => Found::Between(below, above),
        })
    }

    /// Every entry of directory `parent`, in name order.
    /// Stops at more entries than INODE_DIR lists for it (the check that
    /// follows refuses them anyway), so that a section claiming many
    /// pieces of one directory costs no more than its list.
    fn children(&mut self, parent: u64) -> Result<Vec<Entry>, Stop> {
        let listed = self.dir_list(parent)?.len();
        let (before, starting) = self.candidates(parent);
        let mut out = Vec::new();
        for i in before.into_iter().chain(starting) {
            out.extend(
                self.piece_entries(i)?
                    .into_iter()
                    .filter(|e| e.parent == parent),
            );
            if out.len() > listed {
                return Err(self.unusable(
                    self.names_at(),
                    format!(
                        "directory {parent} has more entries than the {listed} children INODE_DIR lists"
                    ),
                ));
            }
        }
        Ok(out)
    }

    /// Reads INODE_DIR piece `i` (once) and checks it as a load does:
    /// checksum, records, first key, parents in strictly increasing order,
    /// no empty list.
    fn dir_piece(&mut self, i: usize) -> Result<&DirPiece, Stop> {
        if !self.dir_pieces.contains_key(&i) {
            let sec = self
                .src
                .index
                .section(SectionKind::INODE_DIR)
                .ok_or_else(|| self.corrupt(Location::at(0), "no INODE_DIR section"))?;
            let split = !sec.sub_sections.is_empty();
            let pieces = sec.pieces();
            let p = pieces
                .get(i)
                .ok_or_else(|| self.corrupt(Location::at(0), "no such INODE_DIR piece"))?;
            let at = Location::in_section(SectionKind::INODE_DIR, split.then_some(i), p.offset);
            let mut buf = PieceBuf::default();
            let bytes = self.src.piece(p, &at, &mut buf)?;
            self.pieces = self.pieces.saturating_add(1);
            let mut out: DirPiece = Vec::new();
            let mut kids = Vec::new();
            for r in Records::new(bytes, at.clone()) {
                let (off, body) = r.map_err(|e| self.fmt_err(e))?;
                let parent = record::dir_entry(body, &mut kids)
                    .map_err(|d| self.fmt_err(decode::bad(&at, off, d)))?;
                if kids.is_empty() {
                    let e = BuildError::EmptyChildList(parent).to_string();
                    return Err(self.fmt_err(decode::bad(&at, off, e)).into());
                }
                if out.last().is_some_and(|l| l.0 >= parent) {
                    return Err(self
                        .fmt_err(decode::bad(
                            &at,
                            off,
                            "INODE_DIR records not in strictly increasing parent order",
                        ))
                        .into());
                }
                out.push((parent, std::mem::take(&mut kids)));
            }
            check_piece(p, &at, out.len() as u64, out.first().map(|d| d.0))
                .map_err(|e| self.fmt_err(e))?;
            self.dir_pieces.insert(i, out);
        }
        self.dir_pieces
            .get(&i)
            .ok_or_else(|| Stop::Refused(self.corrupt(Location::at(0), "INODE_DIR piece lost")))
    }

    /// The children INODE_DIR lists for `parent` (empty when it lists
    /// none): the piece whose first key is the last at most `parent`, and
    /// when that one ends before `parent`, the next one too (whose first
    /// key, checked once it is read, is then above it).
    fn dir_list(&mut self, parent: u64) -> Result<Vec<u64>, Stop> {
        let count = self
            .src
            .index
            .section(SectionKind::INODE_DIR)
            .map_or(0, |s| s.pieces().len());
        let i = self
            .src
            .index
            .section(SectionKind::INODE_DIR)
            .map_or(0, |s| {
                s.sub_sections
                    .partition_point(|p| p.first_key <= parent)
                    .saturating_sub(1)
            });
        let piece = self.dir_piece(i)?;
        if let Some((_, kids)) = piece.iter().find(|d| d.0 == parent) {
            return Ok(kids.clone());
        }
        let ends_before = piece.last().is_some_and(|d| d.0 < parent);
        if ends_before && i.saturating_add(1) < count {
            let next = self.dir_piece(i.saturating_add(1))?;
            if let Some((_, kids)) = next.iter().find(|d| d.0 == parent) {
                return Ok(kids.clone());
            }
        }
        Ok(Vec::new())
    }

    /// Checks every claim of the walk against INODE_DIR and INODE (see the
    /// module documentation) and returns the INODE records read: each
    /// member's, each neighbor's, each listed child's, and `target`'s.
    fn check(
        &mut self,
        claims: &Claims,
        target: Option<u64>,
    ) -> Result<BTreeMap<u64, (u64, Vec<u8>)>, Stop> {
        let at = self.names_at();
        // Each entry must be what INODE says of its child, and the entries
        // either side of it (or of a name the section does not hold) must
        // be its neighbours in INODE_DIR's list, named as INODE names them:
        // the list is then in name order around it.
        let mut named: BTreeMap<u64, &Entry> = BTreeMap::new();
        let gap = claims
            .gap
            .as_ref()
            .map(|g| (g.parent, None, g.name.as_slice(), &g.before, &g.after));
        let members = claims
            .members
            .iter()
            .map(|(e, b, a)| (e.parent, Some(e), e.name.as_slice(), b, a));
        for (parent, e, name, before, after) in members.chain(gap) {
            // The name looked up lies strictly between its neighbours'
            // names (checked against INODE below): a key or an entry that
            // lies about where a directory's entries start cannot put the
            // answer on the wrong side of them.
            let below_ok = before.as_ref().is_none_or(|x| x.name.as_slice() < name);
            let above_ok = after.as_ref().is_none_or(|x| name < x.name.as_slice());
            if !(below_ok && above_ok) {
                return Err(self.unusable(
                    at,
                    format!(
                        "the entries of directory {parent} either side of {:?} are not in name order around it",
                        String::from_utf8_lossy(name)
                    ),
                ));
            }
            let list = self.dir_list(parent)?;
            let pos = |e: &Entry| list.iter().position(|&c| c == e.child);
            let here = match e {
                Some(e) => match pos(e) {
                    Some(j) => Some(j),
                    None => {
                        return Err(self.unusable(
                            at,
                            format!(
                                "entry {:?} of directory {} names inode {}, which INODE_DIR does not list there",
                                String::from_utf8_lossy(&e.name),
                                e.parent,
                                e.child
                            ),
                        ))
                    }
                },
                None => None,
            };
            // Places in the list: `before` at `b`, `after` at `b + 1 + (a
            // member between them)`.
            let step = usize::from(here.is_some());
            let b = match before {
                Some(x) => pos(x),
                None => Some(usize::MAX),
            };
            let side_by_side = match (b, here, after.as_ref().map(pos)) {
                (None, ..) | (_, _, Some(None)) => false,
                (Some(b), here, a) => {
                    // The first place after `before` (0 without one).
                    let next = b.wrapping_add(1);
                    let here_ok = here.is_none_or(|h| h == next);
                    let after_at = next.wrapping_add(step);
                    let after_ok = match a {
                        Some(Some(a)) => a == after_at,
                        _ => after_at == list.len(),
                    };
                    here_ok && after_ok
                }
            };
            if !side_by_side {
                return Err(self.unusable(
                    at,
                    format!(
                        "the entries of directory {parent} around a name looked up are not side by side in INODE_DIR"
                    ),
                ));
            }
            if let Some(e) = e {
                named.insert(e.child, e);
            }
            for x in before.iter().chain(after.iter()) {
                named.insert(x.child, x);
            }
        }
        if let Some((parent, entries)) = &claims.list {
            let list = self.dir_list(*parent)?;
            if !list.iter().copied().eq(entries.iter().map(|e| e.child)) {
                return Err(self.unusable(
                    at,
                    format!(
                        "directory {parent} has {} entries, which are not the {} children INODE_DIR lists",
                        entries.len(),
                        list.len()
                    ),
                ));
            }
            for e in entries {
                named.insert(e.child, e);
            }
        }
        let mut ids: BTreeSet<u64> = named.keys().copied().collect();
        ids.extend(target);
        let records = self.inode_records(&ids)?;
        let mut scratch = record::InodeScratch::default();
        for (id, e) in named {
            let Some((off, rec)) = records.get(&id) else {
                continue;
            };
            let n = record::inode(rec, &mut scratch)
                .map_err(|d| self.fmt_err(decode::bad(&self.inode_at(id), *off, d)))?;
            if type_of(&n.body) != e.ty || n.name != e.name.as_slice() {
                return Err(self.unusable(
                    at,
                    format!(
                        "entry {:?} of directory {} disagrees with inode {id}'s record (name or type)",
                        String::from_utf8_lossy(&e.name),
                        e.parent
                    ),
                ));
            }
        }
        Ok(records)
    }

    /// Where the INODE piece that may hold `id` is.
    fn inode_at(&self, id: u64) -> Location {
        let Some(sec) = self.src.index.section(SectionKind::INODE) else {
            return Location::at(0);
        };
        if sec.sub_sections.is_empty() {
            return Location::in_section(SectionKind::INODE, None, sec.offset);
        }
        let i = sec
            .sub_sections
            .partition_point(|p| p.first_key <= id)
            .saturating_sub(1);
        let off = sec.sub_sections.get(i).map_or(sec.offset, |p| p.offset);
        Location::in_section(SectionKind::INODE, Some(i), off)
    }

    /// The INODE records of `ids` (each with its offset), from the pieces
    /// whose first keys bracket them, each piece read once and checked as
    /// a load checks it. An id no such piece holds is a disagreement of
    /// the name section (its entries named it).
    fn inode_records(
        &mut self,
        ids: &BTreeSet<u64>,
    ) -> Result<BTreeMap<u64, (u64, Vec<u8>)>, Stop> {
        let sec = self
            .src
            .index
            .section(SectionKind::INODE)
            .ok_or_else(|| self.corrupt(Location::at(0), "no INODE section"))?;
        let split = !sec.sub_sections.is_empty();
        let pieces = sec.pieces();
        let mut by_piece: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
        for &id in ids {
            let i = pieces
                .partition_point(|p| p.first_key <= id)
                .saturating_sub(1);
            by_piece
                .entry(if split { i } else { 0 })
                .or_default()
                .push(id);
        }
        let mut out = BTreeMap::new();
        let mut buf = PieceBuf::default();
        let mut scratch = record::InodeScratch::default();
        for (i, want) in by_piece {
            let Some(p) = pieces.get(i) else { continue };
            let at = Location::in_section(SectionKind::INODE, split.then_some(i), p.offset);
            let bytes = self.src.piece(p, &at, &mut buf)?;
            self.pieces = self.pieces.saturating_add(1);
            let mut n: u64 = 0;
            let mut first = None;
            let mut last: Option<u64> = None;
            for r in Records::new(bytes, at.clone()) {
                let (off, body) = r.map_err(|e| self.fmt_err(e))?;
                let node = record::inode(body, &mut scratch)
                    .map_err(|d| self.fmt_err(decode::bad(&at, off, d)))?;
                if last.is_some_and(|l| l >= node.id) {
                    return Err(self
                        .fmt_err(decode::bad(
                            &at,
                            off,
                            format!("inode id {} is not greater than the previous one", node.id),
                        ))
                        .into());
                }
                last = Some(node.id);
                first.get_or_insert(node.id);
                if want.binary_search(&node.id).is_ok() {
                    out.insert(node.id, (off, body.to_vec()));
                }
                n = n.saturating_add(1);
            }
            check_piece(p, &at, n, first).map_err(|e| self.fmt_err(e))?;
            if let Some(id) = want.iter().find(|id| !out.contains_key(*id)) {
                return Err(self.unusable(
                    at,
                    format!(
                        "{} names inode {id}, which this INODE piece does not hold",
                        self.names.kind
                    ),
                ));
            }
        }
        Ok(out)
    }

    /// The single-section pieces NS_INFO and STRING_TABLE, then the small
    /// namespace.
    fn assemble(
        &mut self,
        chain: Vec<Entry>,
        children: &[Entry],
        records: &BTreeMap<u64, (u64, Vec<u8>)>,
    ) -> Result<Namespace, Stop> {
        let whole = |kind: SectionKind| {
            let s = self.src.index.section(kind)?;
            Some((
                s.pieces().remove(0),
                Location::in_section(kind, None, s.offset),
            ))
        };
        let missing = |k| self.corrupt(Location::at(0), format!("no {k} section"));
        let (p, at) = whole(SectionKind::NS_INFO).ok_or_else(|| missing("NS_INFO"))?;
        let mut buf = PieceBuf::default();
        let info = decode::ns_info(self.src.piece(&p, &at, &mut buf)?, &p, &at)
            .map_err(|e| self.fmt_err(e))?;
        let (p, at) = whole(SectionKind::STRING_TABLE).ok_or_else(|| missing("STRING_TABLE"))?;
        let strings = decode::strings(self.src.piece(&p, &at, &mut buf)?, &p, &at)
            .map_err(|e| self.fmt_err(e))?;
        let tables = Interned::new(strings);
        self.pieces = self.pieces.saturating_add(2);

        // Every inode of the small namespace, by id: a record read, or the
        // root with default attributes.
        let mut names: BTreeMap<u64, &[u8]> = BTreeMap::new();
        names.insert(ROOT_ID, b"");
        for e in &chain {
            names.insert(e.child, &e.name);
        }
        for e in children {
            names.insert(e.child, &e.name);
        }
        let mut batch = Assembly::batch();
        let mut scratch = record::InodeScratch::default();
        let at_names = self.names_at();
        for (&id, &name) in &names {
            let n = match records.get(&id) {
                Some((off, rec)) => record::inode(rec, &mut scratch)
                    .map_err(|d| self.fmt_err(decode::bad(&self.inode_at(id), *off, d)))?,
                None => LoadedNode {
                    id,
                    name,
                    perm: 0,
                    mtime: 0,
                    body: LoadedBody::Directory {
                        ns_quota: -1,
                        ds_quota: -1,
                    },
                    extra: None,
                },
            };
            batch
                .push(n, &tables)
                .map_err(|d| self.corrupt(at_names.clone(), d))?;
        }
        let mut dirs: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for e in chain.iter().chain(children) {
            dirs.entry(e.parent).or_default().push(e.child);
        }
        let mut asm =
            Assembly::new(info, tables, batch).map_err(|d| self.corrupt(at_names.clone(), d))?;
        for (parent, kids) in dirs {
            asm.dir(parent, kids.into_iter())
                .map_err(|d| self.corrupt(at_names.clone(), d))?;
        }
        asm.finish()
            .map_err(|d| Stop::Refused(self.corrupt(at_names, d)))
    }
}

/// What [`Lookup::find`] found of a name in a directory.
enum Found {
    /// Its entry, and the entries either side of it in its directory.
    Entry(Entry, Option<Entry>, Option<Entry>),
    /// None: the entries either side of where it would be.
    Between(Option<Entry>, Option<Entry>),
}
