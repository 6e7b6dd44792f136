//! What the streamed read checks of the children's names without holding
//! them (issue 39): FORMAT.md's rule that each directory lists its
//! children in strictly increasing name order (so no two share a name).
//!
//! An nsimage image written with sub-sections carries the same entries
//! sorted by (parent, name) in its name section (NAME_RUNS, or an older
//! image's NAME_INDEX). Three sums of hashes, each a multiset's, show that
//! the tree agrees with it, in one pass over each section and memory that
//! does not grow with the image:
//!
//! - the name section's entries are strictly increasing by (parent,
//!   name), checked as they are read, across runs and pieces;
//! - the multiset of `(parent, name, child)` is the same from INODE (each
//!   record's name, its parent from INODE_DIR's links) and from the name
//!   section: every entry carries its child's true name and parent;
//! - the multiset of `(parent, previous child, child)` is the same from
//!   INODE_DIR's lists and from the name section's entries: each list is
//!   the section's sequence of that directory's children, in order.
//!
//! Together: every list is in the section's order, which is the strictly
//! increasing order of the children's true names. The hashes are the
//! standard library's keyed hash (SipHash-1-3 today) under keys it draws
//! from the operating system's random source (once a process, varied for
//! each read), which an image cannot know: a damaged tree whose sums still
//! agree is a chance of about 2^-64 for each bucket, whatever its bytes
//! (a seeded XXH3 has collisions that hold for a fraction of all seeds,
//! which an image could carry). A sum that differs names its bucket (by parent), and the caller checks
//! the directories of that bucket exactly, names in hand, which decides
//! whether the tree or the name section is wrong (a name section that
//! breaks its own rules is not used at all: every directory is checked
//! exactly). Images without a name section (small ones, older ones, Hadoop
//! fsimages) are checked exactly, or (Hadoop fsimages, whose lists need only distinct names) through
//! [`Seeds::sibling_key`]s.

use crate::error::LoadError;
use crate::run::run_pieces;
use crate::sections::pieces;
use crate::source::{ImageSource, PieceBuf};
use nsimage_format::framing::Records;
use nsimage_format::wire::{check, schema};
use nsimage_format::{pb, SectionKind};
use prost::Message;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Buckets of the sums, by parent.
const BUCKETS: usize = 1024;

/// The keys and seeds of one read's hashes.
#[derive(Clone, Debug)]
pub(super) struct Seeds {
    /// The keys of the sums' hashes (SipHash-1-3, the keys the standard
    /// library draws from the operating system's random source).
    sums: RandomState,
    /// The seeds of a Hadoop image's sibling keys, whose collisions only
    /// cost a second look (the names decide).
    pair: u64,
    name: u64,
}

impl Seeds {
    /// Fresh keys and seeds.
    pub(super) fn draw() -> Seeds {
        let mut b = [0u8; 16];
        nsimage_format::cipher::fill_random(&mut b);
        let word = |i: usize| {
            b.get(i..i.saturating_add(8))
                .and_then(|s| <[u8; 8]>::try_from(s).ok())
                .map_or(0, u64::from_le_bytes)
        };
        Seeds {
            sums: RandomState::new(),
            pair: word(0),
            name: word(8),
        }
    }

    /// The keyed hash of one list link `(parent, previous child, child)`.
    fn link(&self, parent: u64, prev: u64, child: u64) -> u64 {
        let mut words = [0u8; 24];
        for (dst, w) in words.chunks_exact_mut(8).zip([parent, prev, child]) {
            dst.copy_from_slice(&w.to_le_bytes());
        }
        let mut h = self.sums.build_hasher();
        h.write(&words);
        h.finish()
    }

    /// The keyed hash of a name alone (a Hadoop image's sibling check:
    /// equal for equal names, else equal with a chance of 2^-64).
    pub(super) fn name_digest(&self, name: &[u8]) -> u64 {
        let mut h = self.sums.build_hasher();
        h.write(name);
        h.finish()
    }

    /// The keyed hash of one entry `(parent, name, child)`.
    fn entry(&self, parent: u64, name: &[u8], child: u64) -> u64 {
        let mut h = self.sums.build_hasher();
        h.write_u64(parent);
        h.write_u64(child);
        h.write(name);
        h.finish()
    }
}

/// Odd multipliers of the mixes below (the golden ratio's, and
/// SplitMix64's).
const MIX_A: u64 = 0x9e37_79b9_7f4a_7c15;
const MIX_B: u64 = 0xbf58_476d_1ce4_e5b9;

/// The bucket of directory `parent` (it only places a difference: any
/// spread will do).
fn bucket(parent: u64) -> usize {
    let h = parent.wrapping_mul(MIX_A).rotate_left(10);
    usize::try_from(h & (BUCKETS as u64).wrapping_sub(1)).unwrap_or(0)
}

impl Seeds {
    /// The seed of a name's hash, [`name_hash`]'s: what a Hadoop scan
    /// computes for each record before it knows the parents.
    pub(super) fn name_seed(&self) -> u64 {
        self.name
    }

    /// The key of an inode whose name hashes to `name_hash` (under
    /// [`Seeds::name_seed`]) and whose parent directory is `dir`: equal for
    /// two inodes of one name in one directory, and (under one read's
    /// seeds) for anything else with probability 2^-64.
    pub(super) fn sibling_key(&self, name_hash: u64, dir: u32) -> u64 {
        name_hash
            ^ (u64::from(dir) ^ self.pair)
                .wrapping_mul(MIX_B)
                .rotate_left(29)
    }
}

/// A name's hash under `seed` ([`Seeds::name_seed`]).
pub(super) fn name_hash(seed: u64, name: &[u8]) -> u64 {
    xxh3_64_with_seed(name, seed)
}

/// The three multisets' sums, per bucket.
#[derive(Clone, Debug)]
pub(super) struct Sums {
    /// `(parent, previous child, child)` of every list's entries.
    lists: Vec<u64>,
    /// `(parent, name, child)` of every inode but the root.
    names: Vec<u64>,
}

impl Default for Sums {
    fn default() -> Self {
        Sums {
            lists: vec![0; BUCKETS],
            names: vec![0; BUCKETS],
        }
    }
}

impl Sums {
    /// One directory's list, in order.
    pub(super) fn add_list(&mut self, seeds: &Seeds, parent: u64, kids: &[u64]) {
        let b = bucket(parent);
        let mut prev = 0u64;
        let mut sum = 0u64;
        for &c in kids {
            sum = sum.wrapping_add(seeds.link(parent, prev, c));
            prev = c;
        }
        if let Some(s) = self.lists.get_mut(b) {
            *s = s.wrapping_add(sum);
        }
    }

    /// One entry of a list whose previous entry is `prev` (0 for the
    /// first).
    fn add_link(&mut self, seeds: &Seeds, parent: u64, prev: u64, child: u64) {
        if let Some(s) = self.lists.get_mut(bucket(parent)) {
            *s = s.wrapping_add(seeds.link(parent, prev, child));
        }
    }

    /// One inode, its name and parent.
    pub(super) fn add_name(&mut self, seeds: &Seeds, parent: u64, name: &[u8], child: u64) {
        // One hash of the whole entry: not a sum of parts, so names
        // exchanged between children change it.
        let h = seeds.entry(parent, name, child);
        if let Some(s) = self.names.get_mut(bucket(parent)) {
            *s = s.wrapping_add(h);
        }
    }

    /// Another part's sums added in.
    pub(super) fn merge(&mut self, o: &Sums) {
        for (a, b) in self.lists.iter_mut().zip(&o.lists) {
            *a = a.wrapping_add(*b);
        }
        for (a, b) in self.names.iter_mut().zip(&o.names) {
            *a = a.wrapping_add(*b);
        }
    }

    /// Whether directory `parent` lies in a bucket where `self` and `o`
    /// differ.
    pub(super) fn differs_at(&self, o: &Sums, parent: u64) -> bool {
        let b = bucket(parent);
        self.lists.get(b) != o.lists.get(b) || self.names.get(b) != o.names.get(b)
    }

    /// Whether they differ anywhere.
    pub(super) fn differs(&self, o: &Sums) -> bool {
        self.lists != o.lists || self.names != o.names
    }
}

/// What one piece of the name section gave.
#[derive(Default)]
struct PieceSums {
    sums: Sums,
    /// Its first entry (parent, name, child) and last (parent, name,
    /// child), for the joins with the pieces either side.
    first: Option<(u64, Vec<u8>, u64)>,
    last: Option<(u64, Vec<u8>, u64)>,
}

/// The name section's sums, or `None` when the image has none or the one
/// it has breaks its own rules (FORMAT.md, "NAME_RUNS": the records, their
/// order, counts and first keys). Every piece of the section is read and
/// its checksum checked (with its authentication and codec) whatever its
/// records say: the caller leaves the name section out of the other
/// sections' checksum pass.
///
/// # Errors
/// What a load refuses of the section too: a piece's checksum, its
/// authentication or codec.
pub(super) fn section_sums(
    src: &ImageSource,
    pool: Option<&rayon::ThreadPool>,
    seeds: &Seeds,
) -> Result<Option<Sums>, LoadError> {
    let Some(sec) = src
        .index
        .section(SectionKind::NAME_RUNS)
        .or_else(|| src.index.section(SectionKind::NAME_INDEX))
    else {
        return Ok(None);
    };
    let runs = sec.kind == SectionKind::NAME_RUNS;
    let split = !sec.sub_sections.is_empty();
    let all = pieces(sec);
    // A group of pieces at a time, so that the per-piece sums held are a
    // few, whatever the section's size.
    let group = pool
        .map_or(1, |p| p.current_num_threads())
        .saturating_mul(2)
        .max(1);
    let mut total = Some(Sums::default());
    let mut before: Option<(u64, Vec<u8>, u64)> = None;
    for chunk in all.chunks(group) {
        // Once the section proves unusable its pieces are only checked.
        let decode = total.is_some();
        let parts = run_pieces(
            pool,
            chunk,
            || {
                (
                    PieceBuf::default(),
                    nsimage_format::name_runs::RunScratch::default(),
                    pb::NameEntry::default(),
                )
            },
            |(buf, scratch, msg), _, p, at| {
                let bytes = src.piece(p, at, buf)?;
                if !decode {
                    return Ok(None);
                }
                let piece = if runs {
                    runs_piece(bytes, at, seeds, scratch)
                } else {
                    entries_piece(bytes, at, seeds, msg)
                };
                Ok(piece.filter(|(part, records)| {
                    *records == p.records
                        && (!split
                            || part.first.as_ref().map(|f| f.0)
                                == Some(nsimage_format::consts::name_index::parent(p.first_key)))
                }))
            },
        )?;
        for part in parts {
            let (Some((part, _)), Some(sums)) = (part, total.as_mut()) else {
                total = None;
                continue;
            };
            sums.merge(&part.sums);
            // The piece's first entry follows the last of the pieces before
            // it: in order, and its list link (counted here, not in the
            // piece, which did not know what came before).
            if let Some((parent, name, child)) = &part.first {
                let prev = match &before {
                    Some((bp, bn, bc)) if (*bp, bn.as_slice()) >= (*parent, name.as_slice()) => {
                        total = None;
                        continue;
                    }
                    Some((bp, _, bc)) if bp == parent => *bc,
                    _ => 0,
                };
                sums.add_link(seeds, *parent, prev, *child);
            }
            if part.last.is_some() {
                before = part.last;
            }
        }
    }
    Ok(total)
}

/// One NAME_RUNS piece's sums and records; `None` when a record breaks a
/// rule. Within a run the names strictly increase (the run's decoder
/// checks it); between runs, the first entry is compared with the last of
/// the run before.
fn runs_piece(
    bytes: &[u8],
    at: &nsimage_format::Location,
    seeds: &Seeds,
    scratch: &mut nsimage_format::name_runs::RunScratch,
) -> Option<(PieceSums, u64)> {
    let mut out = PieceSums::default();
    let mut records = 0u64;
    let mut prev: Option<(u64, u64)> = None;
    let mut prev_name: Vec<u8> = Vec::new();
    for r in Records::new(bytes, at.clone()) {
        let (_, body) = r.ok()?;
        records = records.saturating_add(1);
        let mut head = true;
        let mut ordered = true;
        nsimage_format::name_runs::visit_run(body, scratch, |parent, name, child, _| {
            let link = match prev {
                Some((pp, pc)) => {
                    if head && (pp, prev_name.as_slice()) >= (parent, name) {
                        ordered = false;
                    }
                    if pp == parent {
                        pc
                    } else {
                        0
                    }
                }
                None => {
                    out.first = Some((parent, name.to_vec(), child));
                    0
                }
            };
            if prev.is_some() {
                out.sums.add_link(seeds, parent, link, child);
            }
            out.sums.add_name(seeds, parent, name, child);
            prev = Some((parent, child));
            head = false;
        })
        .ok()?;
        if !ordered {
            return None;
        }
        // The run's last name, where the decoder left it.
        prev_name.clear();
        prev_name.extend_from_slice(scratch.last_name());
    }
    out.last = prev.map(|(parent, child)| (parent, prev_name, child));
    Some((out, records))
}

/// One NAME_INDEX piece's sums and records; `None` when a record breaks a
/// rule.
fn entries_piece(
    bytes: &[u8],
    at: &nsimage_format::Location,
    seeds: &Seeds,
    msg: &mut pb::NameEntry,
) -> Option<(PieceSums, u64)> {
    let mut out = PieceSums::default();
    let mut records = 0u64;
    let mut prev: Option<(u64, Vec<u8>, u64)> = None;
    for r in Records::new(bytes, at.clone()) {
        let (_, body) = r.ok()?;
        records = records.saturating_add(1);
        msg.clear();
        check(body, schema::NAME_ENTRY).ok()?;
        msg.merge(body).ok()?;
        nsimage_format::name_runs::check_entry(msg.parent, &msg.name, msg.child, msg.r#type)
            .ok()?;
        let name = std::mem::take(&mut msg.name);
        match &prev {
            Some((pp, pn, pc)) => {
                if (*pp, pn.as_slice()) >= (msg.parent, name.as_slice()) {
                    return None;
                }
                let link = if *pp == msg.parent { *pc } else { 0 };
                out.sums.add_link(seeds, msg.parent, link, msg.child);
            }
            None => out.first = Some((msg.parent, name.clone(), msg.child)),
        }
        out.sums.add_name(seeds, msg.parent, &name, msg.child);
        prev = Some((msg.parent, name, msg.child));
    }
    out.last = prev;
    Some((out, records))
}

/// Whether `names`, in list order, strictly increase (`sorted`: FORMAT.md's
/// order, unsigned bytes) or are pairwise distinct (a Hadoop list, whose
/// order a load does not require); the first position that breaks it.
pub(super) fn first_misplaced(names: &[&[u8]], sorted: bool) -> Option<usize> {
    if sorted {
        return names
            .windows(2)
            .position(|w| w.first() >= w.get(1))
            .map(|i| i.saturating_add(1));
    }
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by(|&a, &b| names.get(a).cmp(&names.get(b)));
    order
        .windows(2)
        .find(|w| names.get(w[0]) == names.get(w[1]))
        .map(|w| w[0].max(w[1]))
}
