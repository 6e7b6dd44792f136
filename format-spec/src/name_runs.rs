//! The NAME_RUNS section's records (FORMAT.md, "NAME_RUNS"): a directory's
//! children, in name order, cut into runs of at most [`MAX_ENTRIES`], each
//! run one `NameRun` record whose names are front-coded (each stores only
//! what differs from the one before it) and whose child ids are deltas
//! with the type in their two low bits. The writer encodes with
//! [`put_run`] and every reader decodes with [`decode_run`], so both sides
//! hold the same rules.
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use crate::consts::{name_index, MAX_NAME_LENGTH};
use crate::pb::InodeType;
use crate::wire::tags;
use crate::wire::varint::{put_varint, read_varint, varint_len};
use crate::wire::{check, schema, Cursor};

/// Most entries in one run (a reader refuses more).
pub const MAX_ENTRIES: usize = 128;
/// A writer ends a run once its names take this many bytes (so that a run
/// stays small next to the section's 64 KiB sub-sections).
pub const TARGET_NAME_BYTES: usize = 1 << 10;

/// One entry of the index: a child of `parent`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The directory.
    pub parent: u64,
    /// The child's name.
    pub name: Vec<u8>,
    /// The child's id.
    pub child: u64,
    /// Its `InodeType` value (1 file, 2 directory, 3 symlink).
    pub ty: i32,
}

fn zigzag(d: i64) -> u64 {
    #[allow(clippy::cast_sign_loss)]
    let z = (d.wrapping_shl(1) ^ d.wrapping_shr(63)) as u64;
    z
}

fn unzigzag(z: u64) -> i64 {
    #[allow(clippy::cast_possible_wrap)]
    let d = z.wrapping_shr(1) as i64 ^ 0i64.wrapping_sub((z & 1) as i64);
    d
}

/// The `(name, child id, type)` of each entry of one run, in name order.
pub type RunEntry<'a> = (&'a [u8], u64, InodeType);

/// Appends the framed `NameRun` record of `entries`, children of `parent`
/// (1 to [`MAX_ENTRIES`] of them, names strictly increasing, every id at
/// most [`name_index::MAX_PARENT`]): the bytes prost writes for it.
///
/// # Panics
/// Never for entries a namespace holds (ids fit, so deltas do).
pub fn put_run(out: &mut Vec<u8>, parent: u64, entries: &[RunEntry<'_>]) {
    debug_assert!(!entries.is_empty() && entries.len() <= MAX_ENTRIES);
    let mut names = Vec::new();
    let mut children = Vec::with_capacity(entries.len());
    let mut prev_name: &[u8] = &[];
    let mut prev_id = parent;
    for &(name, child, ty) in entries {
        let shared = prev_name
            .iter()
            .zip(name)
            .take_while(|(a, b)| a == b)
            .count();
        let suffix = name.get(shared..).unwrap_or_default();
        put_varint(&mut names, shared as u64);
        put_varint(&mut names, suffix.len() as u64);
        names.extend_from_slice(suffix);
        // Ids are at most 2^44: the difference fits an i64, and its
        // zigzag shifted by two still fits 64 bits.
        #[allow(clippy::cast_possible_wrap)]
        let delta = (child as i64).wrapping_sub(prev_id as i64);
        children.push(zigzag(delta).wrapping_shl(2) | (ty as u64 & 3));
        prev_name = name;
        prev_id = child;
    }
    let packed: usize = children.iter().map(|&c| varint_len(c)).sum();
    let mut body = Vec::with_capacity(names.len().saturating_add(packed).saturating_add(24));
    if parent != 0 {
        body.push(tags::name_run::PARENT);
        put_varint(&mut body, parent);
    }
    body.push(tags::name_run::NAMES);
    put_varint(&mut body, names.len() as u64);
    body.extend_from_slice(&names);
    body.push(tags::name_run::CHILDREN);
    put_varint(&mut body, packed as u64);
    for c in children {
        put_varint(&mut body, c);
    }
    put_varint(out, body.len() as u64);
    out.extend_from_slice(&body);
}

/// Decodes the body of one `NameRun` record (its framing removed) and
/// appends its entries to `out`, after the checks FORMAT.md lists: the
/// wire rules, 1 to [`MAX_ENTRIES`] entries, as many names as children,
/// the first name shared with nothing, each name 1 to 65,536 bytes and
/// greater than the one before it, each type 1 to 3, each child id 1 to
/// [`name_index::MAX_PARENT`], the parent 1 to the same bound. On an error
/// `out` is left as it was.
///
/// # Errors
/// What is wrong, for the caller to place.
pub fn decode_run(body: &[u8], out: &mut Vec<Entry>) -> Result<(), &'static str> {
    let start = out.len();
    let mut scratch = RunScratch::default();
    let r = visit_run(body, &mut scratch, |parent, name, child, ty| {
        out.push(Entry {
            parent,
            name: name.to_vec(),
            child,
            ty,
        })
    });
    if r.is_err() {
        out.truncate(start);
    }
    r
}

/// What [`visit_run`] reuses from run to run: the name being built and the
/// run's children.
#[derive(Debug, Default)]
pub struct RunScratch {
    name: Vec<u8>,
    children: Vec<u64>,
}

impl RunScratch {
    /// The last name of the run visited last.
    pub fn last_name(&self) -> &[u8] {
        &self.name
    }
}

/// [`decode_run`] without a copy or an allocation per entry: `f` is called
/// with each entry's parent, name, child id and type, in order, as it is
/// decoded, the name held in `scratch` (reused from run to run). On an
/// error `f` may have seen the entries before the one at fault: a caller
/// that must not keep part of a bad run drops what `f` gathered of it.
///
/// # Errors
/// As [`decode_run`].
pub fn visit_run(
    body: &[u8],
    scratch: &mut RunScratch,
    f: impl FnMut(u64, &[u8], u64, i32),
) -> Result<(), &'static str> {
    check(body, schema::NAME_RUN)?;
    let RunScratch { name, children } = scratch;
    let (parent, names) = fields(body, children)?;
    walk(parent, names, children, name, f)
}

/// The run's parent, names and children fields (fields may come in any
/// order or repeat: the last parent and names win, children concatenate,
/// as prost merges them).
fn fields<'b>(body: &'b [u8], children: &mut Vec<u64>) -> Result<(u64, &'b [u8]), &'static str> {
    let mut parent = 0u64;
    let mut names: &[u8] = &[];
    children.clear();
    let mut c = Cursor::new(body);
    while !c.done() {
        let (field, wt) = c.key()?;
        match field {
            crate::wire::fields::name_run::PARENT => parent = c.varint()?,
            crate::wire::fields::name_run::NAMES => names = c.bytes()?,
            crate::wire::fields::name_run::CHILDREN => c.each_varint(wt, |v| {
                if children.len() >= MAX_ENTRIES {
                    return Err("a name run of more than 128 entries");
                }
                children.push(v);
                Ok(())
            })?,
            _ => c.skip(wt)?,
        }
    }
    if children.is_empty() {
        return Err("a name run without entries");
    }
    if !(1..=name_index::MAX_PARENT).contains(&parent) {
        return Err("a name run's parent out of range (1 to 2^44 - 1)");
    }
    Ok((parent, names))
}

/// Each entry of a run, its name built in `name`, checked as it comes.
fn walk(
    parent: u64,
    names: &[u8],
    children: &[u64],
    name: &mut Vec<u8>,
    mut f: impl FnMut(u64, &[u8], u64, i32),
) -> Result<(), &'static str> {
    let mut prev_id = parent;
    let mut rest = names;
    name.clear();
    for (k, &v) in children.iter().enumerate() {
        let (shared, n) = read_varint(rest).ok_or("a name run's names end early")?;
        rest = rest.get(n..).ok_or("a name run's names end early")?;
        let (len, n) = read_varint(rest).ok_or("a name run's names end early")?;
        rest = rest.get(n..).ok_or("a name run's names end early")?;
        let shared = usize::try_from(shared).map_err(|_| "a shared length too large")?;
        let len = usize::try_from(len).map_err(|_| "a suffix length too large")?;
        if len == 0 {
            return Err("an empty suffix in a name run");
        }
        let suffix = rest.get(..len).ok_or("a name run's names end early")?;
        rest = rest.get(len..).unwrap_or_default();
        if k == 0 {
            if shared != 0 {
                return Err("the first name of a run shares bytes");
            }
            name.clear();
            name.extend_from_slice(suffix);
        } else {
            if shared > name.len() {
                return Err("a name shares more bytes than the name before it has");
            }
            if shared
                .checked_add(len)
                .is_none_or(|total| total > MAX_NAME_LENGTH)
            {
                return Err("a name longer than 65,536 bytes");
            }
            // Greater than the name before it: the two share their first
            // `shared` bytes, so the suffix decides against the rest of
            // the old name (sharing need not be the longest possible).
            if suffix <= name.get(shared..).unwrap_or_default() {
                return Err("names of a run not in strictly increasing order");
            }
            name.truncate(shared);
            name.extend_from_slice(suffix);
        }
        if name.len() > MAX_NAME_LENGTH {
            return Err("a name longer than 65,536 bytes");
        }
        let ty = i32::try_from(v & 3).unwrap_or(0);
        if ty == 0 {
            return Err("an entry of no type");
        }
        let child = prev_id
            .checked_add_signed(unzigzag(v.wrapping_shr(2)))
            .filter(|c| (1..=name_index::MAX_PARENT).contains(c))
            .ok_or("a child id out of range")?;
        f(parent, name, child, ty);
        prev_id = child;
    }
    if !rest.is_empty() {
        return Err("a name run holds more names than children");
    }
    Ok(())
}

/// The rules one entry of the name section follows, whatever record
/// holds it (a `NameEntry` of NAME_INDEX is checked with these; a run's
/// entries meet them by construction): parent and child ids 1 to
/// [`name_index::MAX_PARENT`], a name of 1 to 65,536 bytes, a type of 1
/// to 3.
///
/// # Errors
/// The rule broken.
pub fn check_entry(parent: u64, name: &[u8], child: u64, ty: i32) -> Result<(), &'static str> {
    if !(1..=name_index::MAX_PARENT).contains(&parent) {
        return Err("an entry's parent out of range (1 to 2^44 - 1)");
    }
    if !(1..=name_index::MAX_PARENT).contains(&child) {
        return Err("an entry's child id out of range (1 to 2^44 - 1)");
    }
    if name.is_empty() || name.len() > MAX_NAME_LENGTH {
        return Err("entry name of a bad length");
    }
    if !(1..=3).contains(&ty) {
        return Err("an entry of no known type");
    }
    Ok(())
}

/// The parent and first name of a run (what a lookup's search compares),
/// after the same checks as [`decode_run`].
///
/// # Errors
/// As [`decode_run`].
pub fn first_of(body: &[u8]) -> Result<Entry, &'static str> {
    let mut v = Vec::new();
    decode_run(body, &mut v)?;
    v.into_iter().next().ok_or("a name run without entries")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb;
    use prost::Message;

    fn run(parent: u64, entries: &[RunEntry<'_>]) -> Vec<u8> {
        let mut out = Vec::new();
        put_run(&mut out, parent, entries);
        out
    }

    fn body(framed: &[u8]) -> &[u8] {
        let (_, n) = read_varint(framed).unwrap();
        &framed[n..]
    }

    #[test]
    fn runs_round_trip_and_are_what_prost_writes() {
        let entries: Vec<RunEntry<'_>> = vec![
            (b"data_1.csv", 16400, InodeType::File),
            (b"data_10.csv", 16390, InodeType::File),
            (b"data_2.csv", 17000, InodeType::Directory),
            (b"z", (1 << 44) - 1, InodeType::Symlink),
        ];
        let framed = run(16386, &entries);
        let m = pb::NameRun::decode(body(&framed)).unwrap();
        let mut again = Vec::new();
        crate::wire::framing::put_record(&mut again, &m);
        assert_eq!(again, framed);
        let mut got = Vec::new();
        decode_run(body(&framed), &mut got).unwrap();
        let want: Vec<Entry> = entries
            .iter()
            .map(|&(n, c, t)| Entry {
                parent: 16386,
                name: n.to_vec(),
                child: c,
                ty: t as i32,
            })
            .collect();
        assert_eq!(got, want);
        assert_eq!(first_of(body(&framed)).unwrap(), want[0]);
        // Front coding: "data_10.csv" after "data_1.csv" stores "0.csv".
        assert!(m.names.windows(5).any(|w| w == b"0.csv"));
    }

    /// The example of FORMAT.md, "NAME_RUNS", byte for byte.
    #[test]
    fn the_spec_example() {
        let framed = run(
            16386,
            &[
                (b"data_1.csv", 16400, InodeType::File),
                (b"data_10.csv", 16390, InodeType::File),
            ],
        );
        let mut want = vec![29, 0x08, 0x82, 0x80, 0x01, 0x12, 0x13, 0x00, 0x0a];
        want.extend_from_slice(b"data_1.csv");
        want.extend_from_slice(&[0x06, 0x05]);
        want.extend_from_slice(b"0.csv");
        want.extend_from_slice(&[0x1a, 0x02, 0x71, 0x4d]);
        assert_eq!(framed, want);
    }

    /// A run may share fewer bytes than its names have in common.
    #[test]
    fn sharing_need_not_be_the_longest() {
        let mut names = Vec::new();
        for (shared, s) in [(0u64, &b"ab"[..]), (0, b"abc"), (1, b"bd")] {
            put_varint(&mut names, shared);
            put_varint(&mut names, s.len() as u64);
            names.extend_from_slice(s);
        }
        let ok = |d: u64| zigzag(i64::try_from(d).unwrap()).wrapping_shl(2) | 1;
        let m = pb::NameRun {
            parent: 16385,
            names,
            children: vec![ok(1), ok(1), ok(1)],
        };
        let mut out = Vec::new();
        decode_run(&m.encode_to_vec(), &mut out).unwrap();
        let got: Vec<&[u8]> = out.iter().map(|e| e.name.as_slice()).collect();
        assert_eq!(got, [&b"ab"[..], b"abc", b"abd"]);
    }

    #[test]
    fn bad_runs_are_refused_and_leave_nothing() {
        let bad = |m: pb::NameRun, why: &str| {
            let b = m.encode_to_vec();
            let mut out = vec![Entry {
                parent: 1,
                name: b"kept".to_vec(),
                child: 2,
                ty: 1,
            }];
            let e = decode_run(&b, &mut out).unwrap_err();
            assert_eq!(out.len(), 1, "{why}: {e}");
        };
        let names = |list: &[(u64, &[u8])]| {
            let mut v = Vec::new();
            for (shared, s) in list {
                put_varint(&mut v, *shared);
                put_varint(&mut v, s.len() as u64);
                v.extend_from_slice(s);
            }
            v
        };
        let ok = |d: u64, t: u64| zigzag(i64::try_from(d).unwrap()).wrapping_shl(2) | t;
        bad(
            pb::NameRun {
                parent: 5,
                names: vec![],
                children: vec![],
            },
            "empty",
        );
        bad(
            pb::NameRun {
                parent: 0,
                names: names(&[(0, b"a")]),
                children: vec![ok(16390, 1)],
            },
            "parent 0",
        );
        bad(
            pb::NameRun {
                parent: 1 << 44,
                names: names(&[(0, b"a")]),
                children: vec![zigzag(-(1i64 << 40)).wrapping_shl(2) | 1],
            },
            "parent past 2^44 - 1",
        );
        bad(
            pb::NameRun {
                parent: 5,
                names: names(&[(1, b"a")]),
                children: vec![ok(1, 1)],
            },
            "first shares",
        );
        bad(
            pb::NameRun {
                parent: 5,
                names: names(&[(0, b"")]),
                children: vec![ok(1, 1)],
            },
            "empty suffix",
        );
        bad(
            pb::NameRun {
                parent: 5,
                names: names(&[(0, b"b"), (0, b"a")]),
                children: vec![ok(1, 1), ok(1, 1)],
            },
            "out of order",
        );
        bad(
            pb::NameRun {
                parent: 5,
                names: names(&[(0, b"a")]),
                children: vec![ok(1, 0)],
            },
            "no type",
        );
        bad(
            pb::NameRun {
                parent: 5,
                names: names(&[(0, b"a"), (0, b"b")]),
                children: vec![ok(1, 1)],
            },
            "more names",
        );
        bad(
            pb::NameRun {
                parent: 5,
                names: names(&[(0, b"a")]),
                children: vec![ok(1, 1), ok(1, 1)],
            },
            "more children",
        );
        bad(
            pb::NameRun {
                parent: 5,
                names: names(&[(0, b"a")]),
                children: vec![zigzag(-5).wrapping_shl(2) | 1],
            },
            "child 0",
        );
        bad(
            pb::NameRun {
                parent: 5,
                names: names(&[(0, b"ab"), (3, b"c")]),
                children: vec![ok(1, 1), ok(1, 1)],
            },
            "shares more than it has",
        );
        bad(
            pb::NameRun {
                parent: 5,
                names: (0..129u64)
                    .flat_map(|i| names(&[(0, &[b'a'; 200][..usize::try_from(i).unwrap() + 1])]))
                    .collect(),
                children: vec![ok(1, 1); 129],
            },
            "too many",
        );
    }
}
