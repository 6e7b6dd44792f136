//! One-path lookups that read only what they need (HDDS-16727).
//!
//! [`load_path`] opens the image (header, footer and index: one tail read),
//! then walks the path down the optional NAME_INDEX section (FORMAT.md,
//! "NAME_INDEX"): per component, the index's first keys name the few small
//! sub-sections that may hold `(parent, name)`; when one directory spans
//! several, their first records alone (a few hundred bytes each) pick the
//! one to read. That one is read whole and its checksum checked. The
//! target's INODE record comes from the one INODE sub-section whose first
//! keys bracket its id (checked too), and with `with_children` the
//! directory's entries and its children's INODE records likewise.
//!
//! The result is a small but valid [`Namespace`]: the root, the chain of
//! directories down to the target, the target, and its children when asked.
//! Only the target and its children carry their attributes from the
//! image; the root and the directories on the way (unless one of them is
//! the target) have default attributes (permission 0, no owner, mtime 0,
//! no quota), as their INODE records are not read. Images without the
//! section (older images, and small ones, which have no sub-sections), and
//! Hadoop images, are loaded in full instead ([`PathView::indexed`] is
//! false): the caller resolves the path in the whole namespace, as it
//! would in any loaded one.

use crate::assemble::Assembly;
use crate::error::LoadError;
use crate::hdfs::HdfsImage;
use crate::options::LoadOptions;
use crate::source::{ImageSource, PieceBuf};
use crate::{decode, record};
use nsimage_format::cipher::Key;
use nsimage_format::consts::name_index;
use nsimage_format::framing::Records;
use nsimage_format::wire::{read_varint, schema};
use nsimage_format::{pb, FormatError, Location, SectionInfo, SectionKind, SubSectionInfo};
use nsimage_namespace::{Interned, LoadedBody, LoadedNode, Namespace, ROOT_ID};
use prost::Message;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Bytes read at once to find a sub-section's first record.
const FIRST_RECORD_READ: u64 = 2048;

/// What [`load_path`] is asked for.
#[derive(Clone, Debug, Default)]
pub struct PathOptions {
    /// Also read the target directory's children (their INODE records).
    pub with_children: bool,
    /// The key of an encrypted image.
    pub key: Option<Key>,
}

/// What [`load_path`] found, and what it cost.
pub struct PathView {
    /// The root, the directories on the way, the target and (when asked)
    /// its children; attributes of the directories on the way are defaults.
    /// The whole namespace when `indexed` is false.
    pub namespace: Namespace,
    /// Bytes read from the image (open included).
    pub bytes_read: u64,
    /// Read calls issued (open included).
    pub read_calls: u64,
    /// Whole pieces (sub-sections or sections) read and checked.
    pub pieces: usize,
    /// False when the image has no NAME_INDEX and was loaded in full.
    pub indexed: bool,
    /// What a Hadoop image holds beside the namespace (its snapshots
    /// among them); `None` for an nsimage image.
    pub hdfs: Option<Box<HdfsImage>>,
}

use nsimage_format::name_runs::Entry;

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
        return full_load(None, image, key);
    }
    let mut src = ImageSource::open(image)?;
    src.unlock(key)?;
    // NAME_RUNS, or NAME_INDEX in images written before it.
    let Some(names) = src
        .index
        .section(SectionKind::NAME_RUNS)
        .or_else(|| src.index.section(SectionKind::NAME_INDEX))
        .cloned()
    else {
        return full_load(Some(&src), image, key);
    };
    let mut l = Lookup {
        src: &src,
        names,
        pieces: 0,
    };
    let dir = pb::InodeType::Directory as i32;
    let mut chain: Vec<Entry> = Vec::new();
    let (mut cur, mut cur_ty) = (ROOT_ID, dir);
    let mut walked = String::new();
    for &c in components {
        if cur_ty != dir {
            // The same words as a walk of a loaded namespace.
            let what = if cur_ty == pb::InodeType::Symlink as i32 {
                "a symlink"
            } else {
                "a file"
            };
            return Err(no_such(
                image,
                Some(format!("{} is {what}, not a directory", show(&walked))),
            ));
        }
        let e = l.find(cur, c)?.ok_or_else(|| no_such(image, None))?;
        walked.push('/');
        walked.push_str(&String::from_utf8_lossy(c));
        (cur, cur_ty) = (e.child, e.ty);
        chain.push(e);
    }
    let children = if opts.with_children && cur_ty == dir {
        l.children(cur)?
    } else {
        Vec::new()
    };
    // The INODE records read: the target's and its children's.
    let mut wanted: BTreeMap<u64, (Option<&Entry>, i32)> = BTreeMap::new();
    wanted.insert(cur, (chain.last(), cur_ty));
    for e in &children {
        wanted.insert(e.child, (Some(e), e.ty));
    }
    let records = l.inode_records(&wanted.keys().copied().collect())?;
    for (id, (entry, ty)) in &wanted {
        let (off, rec) = &records[id];
        let mut scratch = record::InodeScratch::default();
        let n = record::inode(rec, &mut scratch).map_err(|d| l.corrupt_inode(*off, d))?;
        let pb_ty = match n.body {
            LoadedBody::File { .. } => pb::InodeType::File,
            LoadedBody::Directory { .. } => pb::InodeType::Directory,
            LoadedBody::Symlink { .. } => pb::InodeType::Symlink,
        } as i32;
        if pb_ty != *ty || entry.is_some_and(|e| e.name != n.name) {
            return Err(l.corrupt_inode(
                *off,
                format!("inode {id} disagrees with NAME_INDEX (name or type)"),
            ));
        }
    }
    l.assemble(chain, &children, &records)
        .map(|namespace| PathView {
            namespace,
            bytes_read: src.bytes_read(),
            read_calls: src.read_calls(),
            pieces: l.pieces,
            indexed: true,
            hdfs: None,
        })
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

/// The fallback: the whole image (`src`: the nsimage image already
/// opened, whose reads count too).
fn full_load(
    src: Option<&ImageSource>,
    image: &Path,
    key: Option<&Key>,
) -> Result<PathView, LoadError> {
    let opts = LoadOptions {
        key: key.cloned(),
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
        hdfs: loaded.hdfs,
    })
}

/// A lookup in progress.
struct Lookup<'s> {
    src: &'s ImageSource,
    names: SectionInfo,
    pieces: usize,
}

impl Lookup<'_> {
    fn fmt_err(&self, e: FormatError) -> LoadError {
        LoadError::from_format(self.src.path(), e)
    }

    fn corrupt(&self, at: Location, detail: impl Into<String>) -> LoadError {
        LoadError::Corrupt {
            path: self.src.path().to_path_buf(),
            at,
            detail: detail.into(),
        }
    }

    fn corrupt_inode(&self, off: u64, detail: impl Into<String>) -> LoadError {
        self.corrupt(Location::in_section(SectionKind::INODE, None, off), detail)
    }

    fn name_pieces(&self) -> Vec<SubSectionInfo> {
        self.names.pieces()
    }

    /// The NAME_INDEX pieces that may hold entries of `parent`: the last
    /// one whose first key is below the parent's (it may hold its first
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

    /// The first record of NAME_INDEX sub-section `i`, read alone (not
    /// checked against the checksum; it only guides the search, and the
    /// piece it picks is checked whole).
    fn first_entry(&self, i: usize, sub: &SubSectionInfo) -> Result<Entry, LoadError> {
        let at = Location::in_section(self.names.kind, Some(i), sub.offset);
        if !sub.at_rest.is_plain() {
            // A compressed or encrypted piece opens only whole.
            let mut buf = PieceBuf::default();
            let bytes = self.src.piece(sub, &at, &mut buf)?;
            let (off, body) = Records::new(bytes, at.clone())
                .next()
                .ok_or_else(|| self.corrupt(at.clone(), "an empty sub-section"))?
                .map_err(|e| self.fmt_err(e))?;
            return self.entry(body, &at, off);
        }
        let mut buf = self
            .src
            .read_at(sub.offset, sub.length.min(FIRST_RECORD_READ))?;
        let (len, head) = read_varint(&buf)
            .and_then(|(len, head)| Some((len, u64::try_from(head).ok()?)))
            .ok_or_else(|| self.corrupt(at.clone(), "bad record length"))?;
        let end = len
            .checked_add(head)
            .filter(|&e| e <= sub.length)
            .ok_or_else(|| self.corrupt(at.clone(), "record runs past its sub-section"))?;
        if end > buf.len() as u64 {
            buf = self.src.read_at(sub.offset, end)?;
        }
        let body = buf
            .get(
                usize::try_from(head).unwrap_or(usize::MAX)
                    ..usize::try_from(end).unwrap_or(usize::MAX),
            )
            .ok_or_else(|| self.corrupt(at.clone(), "record runs past its sub-section"))?;
        self.entry(body, &at, sub.offset)
    }

    /// The entries of one record of the section (a NAME_INDEX record is
    /// one entry, a NAME_RUNS record a run), appended to `out`.
    fn entries(
        &self,
        body: &[u8],
        at: &Location,
        off: u64,
        out: &mut Vec<Entry>,
    ) -> Result<(), LoadError> {
        let bad = |d: &str| {
            self.corrupt(
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
        if m.name.is_empty() || m.name.len() > nsimage_format::consts::MAX_NAME_LENGTH {
            return Err(bad("entry name of a bad length"));
        }
        out.push(Entry {
            parent: m.parent,
            name: m.name,
            child: m.child,
            ty: m.r#type,
        });
        Ok(())
    }

    /// The first entry of one record.
    fn entry(&self, body: &[u8], at: &Location, off: u64) -> Result<Entry, LoadError> {
        let mut v = Vec::new();
        self.entries(body, at, off, &mut v)?;
        v.into_iter()
            .next()
            .ok_or_else(|| self.corrupt(at.clone(), "a record without entries"))
    }

    /// Reads NAME_INDEX piece `i` whole, checks its checksum, records and
    /// order, and returns its entries.
    fn piece_entries(&mut self, i: usize) -> Result<Vec<Entry>, LoadError> {
        let pieces = self.name_pieces();
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
        // names would take more than 64 times its bytes (a writer's never
        // come near) is refused before it costs memory.
        let budget = bytes.len().saturating_mul(64).saturating_add(1 << 20);
        let mut decoded = 0usize;
        for r in Records::new(bytes, at.clone()) {
            let (off, body) = r.map_err(|e| self.fmt_err(e))?;
            let first = out.len();
            self.entries(body, &at, off, &mut out)?;
            decoded = out
                .get(first..)
                .unwrap_or_default()
                .iter()
                .fold(decoded, |d, e| d.saturating_add(e.name.len()));
            if decoded > budget {
                return Err(self.corrupt(
                    Location {
                        offset: off,
                        ..at.clone()
                    },
                    "names that decode to more than 64 times the piece's bytes",
                ));
            }
            records = records.saturating_add(1);
            let joined = first.checked_sub(1).and_then(|i| out.get(i..=first));
            if let Some([l, e]) = joined {
                if (l.parent, &l.name) >= (e.parent, &e.name) {
                    return Err(self.corrupt(
                        Location {
                            offset: off,
                            ..at.clone()
                        },
                        "entries not in strictly increasing (parent, name) order",
                    ));
                }
            }
        }
        if records != p.records {
            return Err(self.corrupt(
                at,
                format!("{records} records, the index says {}", p.records),
            ));
        }
        if sub.is_some() && out.first().map(|e| e.parent) != Some(name_index::parent(p.first_key)) {
            return Err(self.corrupt(at, "first record does not match the first key"));
        }
        Ok(out)
    }

    /// The entry of `name` in directory `parent`, if any.
    fn find(&mut self, parent: u64, name: &[u8]) -> Result<Option<Entry>, LoadError> {
        let (before, starting) = self.candidates(parent);
        let subs = self.names.sub_sections.clone();
        // The last sub-section starting with `parent` whose first name is
        // at most `name`, by binary search on first records.
        let (mut lo, mut hi) = (starting.start, starting.end);
        let mut consulted = Vec::new();
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            consulted.push(mid);
            let first = self.first_entry(mid, &subs[mid])?;
            if first.name.as_slice() <= name {
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
        let found = match pick {
            Some(i) => self
                .piece_entries(i)?
                .into_iter()
                .find(|e| e.parent == parent && e.name == name),
            None => None,
        };
        if found.is_none() {
            // The first records that guided the search were not checked:
            // before saying "no such path", check the pieces they came from,
            // so that a corrupt one is reported rather than trusted.
            for i in consulted {
                if Some(i) != pick {
                    self.piece_entries(i)?;
                }
            }
        }
        Ok(found)
    }

    /// Every entry of directory `parent`, in name order.
    fn children(&mut self, parent: u64) -> Result<Vec<Entry>, LoadError> {
        let (before, starting) = self.candidates(parent);
        let mut out = Vec::new();
        for i in before.into_iter().chain(starting) {
            out.extend(
                self.piece_entries(i)?
                    .into_iter()
                    .filter(|e| e.parent == parent),
            );
        }
        Ok(out)
    }

    /// The INODE records of `ids` (each with its offset), from the pieces
    /// whose first keys bracket them, each piece read once and checked.
    fn inode_records(
        &mut self,
        ids: &BTreeSet<u64>,
    ) -> Result<BTreeMap<u64, (u64, Vec<u8>)>, LoadError> {
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
            let p = &pieces[i];
            let at = Location::in_section(SectionKind::INODE, split.then_some(i), p.offset);
            let bytes = self.src.piece(p, &at, &mut buf)?;
            self.pieces = self.pieces.saturating_add(1);
            let mut n: u64 = 0;
            for r in Records::new(bytes, at.clone()) {
                let (off, body) = r.map_err(|e| self.fmt_err(e))?;
                let node = record::inode(body, &mut scratch).map_err(|d| {
                    self.corrupt(
                        Location {
                            offset: off,
                            ..at.clone()
                        },
                        d,
                    )
                })?;
                if want.binary_search(&node.id).is_ok() {
                    out.insert(node.id, (off, body.to_vec()));
                }
                n = n.saturating_add(1);
            }
            if n != p.records {
                return Err(self.corrupt(at, format!("{n} records, the index says {}", p.records)));
            }
            for id in want {
                if !out.contains_key(&id) {
                    return Err(self.corrupt(
                        at.clone(),
                        format!(
                            "NAME_INDEX names inode {id}, which this INODE piece does not hold"
                        ),
                    ));
                }
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
    ) -> Result<Namespace, LoadError> {
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

        // Every inode of the small namespace, by id: a record read, or a
        // directory on the way with default attributes.
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
        let at_names = Location::in_section(self.names.kind, None, self.names.offset);
        for (&id, &name) in &names {
            let n = match records.get(&id) {
                Some((off, rec)) => {
                    record::inode(rec, &mut scratch).map_err(|d| self.corrupt_inode(*off, d))?
                }
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
        asm.finish().map_err(|d| self.corrupt(at_names, d))
    }
}
