//! One-path lookups on images whose name section lies (issue 39): the
//! NAME_RUNS (or older NAME_INDEX) section is rewritten with entries
//! dropped, added, pointed elsewhere, renamed, retyped, moved, repeated or
//! reordered, its runs and pieces cut anew, its first keys and counts
//! sometimes false, and every checksum recomputed (plain images) or every
//! piece sealed again (encrypted ones), so that only the structure lies.
//! INODE and INODE_DIR are untouched, so a load accepts every mutant and
//! gives the base namespace: every lookup must give that namespace's
//! answer (the listing, the inode, or the same "no such path"), whether it
//! answers from the section or, finding it unusable, from a full load.

use crate::common;
use nsimage_format::cipher::Key;
use nsimage_format::name_runs::{put_run, Entry, RunEntry};
use nsimage_format::{pb, SectionKind};
use nsimage_namespace::{InodeKind, Namespace};
use nsimage_viewer::lookup::{load_path, PathOptions};
use nsimage_viewer::paths::ImagePath;
use nsimage_viewer::ViewError;
use proptest::prelude::*;
use prost::Message;
use std::path::Path;
use std::sync::OnceLock;

/// A namespace where names repeat across directories (so that an entry
/// can point at a same-named inode elsewhere) and one directory spans many
/// name pieces.
fn namespace() -> Namespace {
    let mut ns = Namespace::default();
    let (p, f) = (common::P, common::F);
    for top in ["a", "b", "c"] {
        for sub in ["x", "y"] {
            let d = ns
                .mkdirs(format!("/{top}/{sub}").as_bytes(), &p, 10)
                .unwrap();
            for i in 0..6 {
                ns.create_in(d, format!("part-{i}").as_bytes(), &p, &f, 20)
                    .unwrap();
            }
            ns.create_in(d, b"_SUCCESS", &p, &f, 21).unwrap();
        }
        ns.mkdirs(format!("/{top}/x/deep/er").as_bytes(), &p, 11)
            .unwrap();
    }
    let big = ns.mkdirs(b"/big", &p, 12).unwrap();
    for i in 0..240 {
        ns.create_in(big, format!("file-{i:04}").as_bytes(), &p, &f, 30)
            .unwrap();
    }
    ns.symlink(b"/a/link", b"/b/x", &p, 40).unwrap();
    ns.mkdirs(b"/empty", &p, 13).unwrap();
    ns
}

/// The base image (plain) of one name section kind, its entries, and the
/// namespace a load gives.
struct Base {
    bytes: Vec<u8>,
    kind: SectionKind,
    entries: Vec<Entry>,
    ns: Namespace,
}

fn base(legacy: bool) -> &'static Base {
    static BASES: OnceLock<[Base; 2]> = OnceLock::new();
    let bases = BASES.get_or_init(|| {
        [false, true].map(|legacy| {
            let ns = namespace();
            let opts = nsimage_writer::WriteOptions {
                legacy_name_index: legacy,
                ..common::tiny(600)
            };
            let bytes = common::image(&ns, &opts);
            let kind = if legacy {
                SectionKind::NAME_INDEX
            } else {
                SectionKind::NAME_RUNS
            };
            let entries = entries_of(&bytes, kind);
            assert!(entries.len() > 280, "{}", entries.len());
            let loaded = common::load_bytes(&bytes).unwrap();
            Base {
                bytes,
                kind,
                entries,
                ns: loaded,
            }
        })
    });
    &bases[usize::from(legacy)]
}

/// Every entry of the image's name section, in file order.
fn entries_of(bytes: &[u8], kind: SectionKind) -> Vec<Entry> {
    use nsimage_format::framing::Records;
    let idx = common::index_of(bytes);
    let s = idx.section(kind).unwrap();
    assert!(s.sub_sections.len() > 1, "{}", s.sub_sections.len());
    let mut out = Vec::new();
    for p in s.pieces() {
        let region = &bytes[p.offset as usize..(p.offset + p.length) as usize];
        for r in Records::new(region, nsimage_format::Location::at(p.offset)) {
            let (_, body) = r.unwrap();
            if kind == SectionKind::NAME_RUNS {
                nsimage_format::name_runs::decode_run(body, &mut out).unwrap();
            } else {
                let m = pb::NameEntry::decode(body).unwrap();
                out.push(Entry {
                    parent: m.parent,
                    name: m.name,
                    child: m.child,
                    ty: m.r#type,
                });
            }
        }
    }
    out
}

/// One lie told by the name section.
#[derive(Clone, Debug)]
enum Lie {
    Drop(usize),
    /// A copy of entry `.0` for the child of entry `.1`, named `.2`.
    Phantom(usize, usize, u8),
    /// Entry `.0` names the child of entry `.1`.
    Retarget(usize, usize),
    /// Entry `.0` names the child of a same-named entry elsewhere.
    SameNameElsewhere(usize),
    /// Entry `.0` renamed: a byte appended, or its last byte changed.
    Rename(usize, u8, bool),
    Retype(usize, i32),
    /// Entries `.0` and `.1` exchange their children.
    Swap(usize, usize),
    /// Entry `.0` moved under the parent of entry `.1`.
    Reparent(usize, usize),
    Repeat(usize),
}

/// How the lying entries are written.
#[derive(Clone, Debug)]
struct Layout {
    lies: Vec<Lie>,
    /// Entries sorted again by (parent, name) after the lies (a well-formed
    /// section that lies), or left where the lies put them.
    sorted: bool,
    /// Most entries per run (NAME_RUNS) and records per piece.
    run: usize,
    piece: usize,
    /// A piece's first key or record count told wrong.
    key_lie: Option<(usize, i64)>,
    count_lie: Option<(usize, i64)>,
    /// One byte of one piece's records flipped (its checksum recomputed).
    flip: Option<(usize, usize, u8)>,
}

fn apply(entries: &mut Vec<Entry>, lie: &Lie) {
    let n = entries.len();
    if n == 0 {
        return;
    }
    let at = |i: usize| i % n;
    match *lie {
        Lie::Drop(i) => {
            entries.remove(at(i));
        }
        Lie::Phantom(i, j, how) => {
            let mut e = entries[at(i)].clone();
            let other = &entries[at(j)];
            e.child = other.child;
            e.ty = other.ty;
            match how % 3 {
                0 => e.name.push(b'~'),
                1 => e.name = other.name.clone(),
                _ => e.name.insert(0, b'+'),
            }
            entries.insert(at(i) + 1, e);
        }
        Lie::Retarget(i, j) => {
            let (child, ty) = (entries[at(j)].child, entries[at(j)].ty);
            entries[at(i)].child = child;
            entries[at(i)].ty = ty;
        }
        Lie::SameNameElsewhere(i) => {
            let e = entries[at(i)].clone();
            if let Some(o) = entries
                .iter()
                .find(|o| o.name == e.name && o.parent != e.parent)
                .cloned()
            {
                entries[at(i)].child = o.child;
                entries[at(i)].ty = o.ty;
            }
        }
        Lie::Rename(i, b, append) => {
            let name = &mut entries[at(i)].name;
            let b = b'a' + b % 26;
            if append || name.len() == 1 {
                name.push(b);
            } else if let Some(last) = name.last_mut() {
                *last = b;
            }
        }
        Lie::Retype(i, t) => entries[at(i)].ty = 1 + t.rem_euclid(3),
        Lie::Swap(i, j) => {
            let (ci, cj) = (entries[at(i)].child, entries[at(j)].child);
            entries[at(i)].child = cj;
            entries[at(j)].child = ci;
        }
        Lie::Reparent(i, j) => entries[at(i)].parent = entries[at(j)].parent,
        Lie::Repeat(i) => {
            let e = entries[at(i)].clone();
            entries.insert(at(i), e);
        }
    }
}

/// The name section's records, cut into pieces: per piece its framed
/// records, their count and its first key.
fn encode(kind: SectionKind, entries: &[Entry], l: &Layout) -> Vec<(Vec<u8>, u64, u64)> {
    // Records: runs of one parent (NAME_RUNS) or one entry each.
    let mut records: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut i = 0;
    while i < entries.len() {
        let parent = entries[i].parent;
        if kind == SectionKind::NAME_INDEX {
            let e = &entries[i];
            let m = pb::NameEntry {
                parent,
                name: e.name.clone(),
                child: e.child,
                r#type: e.ty,
            };
            let mut b = Vec::new();
            nsimage_format::framing::put_record(&mut b, &m);
            records.push((parent, b));
            i += 1;
            continue;
        }
        let mut j = i;
        while j < entries.len() && entries[j].parent == parent && j - i < l.run {
            j += 1;
        }
        let run: Vec<RunEntry<'_>> = entries[i..j]
            .iter()
            .map(|e| {
                let t = pb::InodeType::try_from(e.ty).unwrap_or(pb::InodeType::File);
                (e.name.as_slice(), e.child, t)
            })
            .collect();
        let mut b = Vec::new();
        put_run(&mut b, parent, &run);
        records.push((parent, b));
        i = j;
    }
    let mut pieces = Vec::new();
    let mut last: Option<(u64, u64)> = None;
    for chunk in records.chunks(l.piece.max(1)) {
        let parent = chunk[0].0;
        let seq = match last {
            Some((p, s)) if p == parent => s + 1,
            _ => 0,
        };
        last = Some((parent, seq));
        let bytes: Vec<u8> = chunk.iter().flat_map(|r| r.1.clone()).collect();
        pieces.push((bytes, chunk.len() as u64, (parent << 20) | seq));
    }
    if let Some((p, d)) = l.key_lie {
        let n = pieces.len();
        let k = &mut pieces[p % n].2;
        *k = k.saturating_add_signed(d);
    }
    if let Some((p, d)) = l.count_lie {
        let n = pieces.len();
        let c = &mut pieces[p % n].1;
        *c = c.saturating_add_signed(d).max(1);
    }
    if let Some((p, at, x)) = l.flip {
        let n = pieces.len();
        let b = &mut pieces[p % n].0;
        let len = b.len();
        b[at % len] ^= x | 1;
    }
    pieces
}

fn key() -> Key {
    Key::from_bytes([0x5a; 32])
}

/// A mutant image and what it is called.
fn mutant(legacy: bool, l: &Layout) -> Vec<u8> {
    let b = base(legacy);
    let mut entries = b.entries.clone();
    for lie in &l.lies {
        apply(&mut entries, lie);
    }
    if l.sorted {
        entries.sort_by(|x, y| (x.parent, &x.name).cmp(&(y.parent, &y.name)));
    }
    common::replace_section(&b.bytes, b.kind, &encode(b.kind, &entries, l))
}

/// What a lookup of `path` answers, as text: the listing or the inode,
/// or the "no such path" and why; a refusal is an error of the test.
fn answer(img: &Path, key: Option<&Key>, path: &str, children: bool) -> Result<String, String> {
    let opts = PathOptions {
        md5: nsimage_loader::hdfs::Md5Policy::Check,
        with_children: children,
        key: key.cloned(),
        budget: None,
    };
    let p = ImagePath::parse(path).unwrap();
    match load_path(img, &p, &opts) {
        Ok(v) => Ok(describe(&v.namespace, path, children)),
        Err(ViewError::NoSuchPath { why, .. }) => Ok(format!("no such path: {why:?}")),
        Err(e) => Err(format!("{path}: refused: {e}")),
    }
}

/// `path` in `ns`, as a lookup's answer is compared.
fn describe(ns: &Namespace, path: &str, children: bool) -> String {
    let p = ImagePath::parse(path).unwrap();
    match nsimage_viewer::walk::resolve(ns, &p) {
        Err(ViewError::NoSuchPath { why, .. }) => format!("no such path: {why:?}"),
        Err(e) => format!("error {e}"),
        Ok(n) => {
            let one = |n: &nsimage_namespace::Inode<'_>| {
                format!(
                    "{} {:?} {:?} {:o} {} {:?}",
                    n.id(),
                    n.kind(),
                    String::from_utf8_lossy(n.name()),
                    n.mode(),
                    n.mtime(),
                    n.attrs()
                )
            };
            let mut s = one(&n);
            if children && n.kind() == InodeKind::Directory {
                for c in n.children() {
                    s.push_str("\n  ");
                    s.push_str(&one(&c));
                }
            }
            s
        }
    }
}

/// The paths worth asking of a mutant: those the lies touch (the parents'
/// listings, each entry's old and new name) and a spread of others.
fn paths(legacy: bool, l: &Layout) -> Vec<(String, bool)> {
    let b = base(legacy);
    let n = b.entries.len();
    let path_of = |id: u64| String::from_utf8(b.ns.path_of(id).unwrap()).unwrap();
    let mut out: Vec<(String, bool)> = vec![("/".into(), true), ("/big".into(), true)];
    let touch = |i: usize, out: &mut Vec<(String, bool)>| {
        let e = &b.entries[i % n];
        let dir = path_of(e.parent);
        let under = if dir == "/" {
            String::new()
        } else {
            dir.clone()
        };
        out.push((dir.clone(), true));
        let name = String::from_utf8_lossy(&e.name).into_owned();
        out.push((format!("{under}/{name}"), false));
        out.push((format!("{under}/{name}~"), false));
        out.push((format!("{under}/+{name}"), false));
        out.push((format!("{under}/{name}/deep"), false));
        for c in b'a'..=b'z' {
            if c % 5 == 0 {
                out.push((format!("{under}/{name}{}", c as char), false));
            }
        }
    };
    for lie in &l.lies {
        match *lie {
            Lie::Drop(i)
            | Lie::SameNameElsewhere(i)
            | Lie::Rename(i, ..)
            | Lie::Retype(i, _)
            | Lie::Repeat(i) => touch(i, &mut out),
            Lie::Phantom(i, j, _) | Lie::Retarget(i, j) | Lie::Swap(i, j) | Lie::Reparent(i, j) => {
                touch(i, &mut out);
                touch(j, &mut out);
            }
        }
    }
    // Each directory's first and last entries (where a lie about a piece's
    // first key moves a directory's start), a spread of others, and more
    // of them when a key lies.
    let step = if l.key_lie.is_some() { 8 } else { 53 };
    for i in 0..n {
        let e = &b.entries[i];
        let first = i == 0 || b.entries[i - 1].parent != e.parent;
        let last = i + 1 == n || b.entries[i + 1].parent != e.parent;
        if first || last || i % step == 0 {
            touch(i, &mut out);
        }
    }
    out.sort();
    out.dedup();
    out
}

fn lie() -> impl Strategy<Value = Lie> {
    let i = 0usize..10_000;
    prop_oneof![
        i.clone().prop_map(Lie::Drop),
        (i.clone(), i.clone(), any::<u8>()).prop_map(|(a, b, h)| Lie::Phantom(a, b, h)),
        (i.clone(), i.clone()).prop_map(|(a, b)| Lie::Retarget(a, b)),
        i.clone().prop_map(Lie::SameNameElsewhere),
        (i.clone(), any::<u8>(), any::<bool>()).prop_map(|(a, b, x)| Lie::Rename(a, b, x)),
        (i.clone(), 0i32..3).prop_map(|(a, t)| Lie::Retype(a, t)),
        (i.clone(), i.clone()).prop_map(|(a, b)| Lie::Swap(a, b)),
        (i.clone(), i.clone()).prop_map(|(a, b)| Lie::Reparent(a, b)),
        i.prop_map(Lie::Repeat),
    ]
}

fn layout() -> impl Strategy<Value = Layout> {
    (
        prop::collection::vec(lie(), 0..3),
        any::<bool>(),
        1usize..20,
        1usize..24,
        // A key a little off, or naming a directory a little off.
        prop::option::weighted(
            0.1,
            (
                0usize..100,
                prop_oneof![-3i64..4, (-3i64..4).prop_map(|k| k << 20)],
            ),
        ),
        prop::option::weighted(0.1, (0usize..100, -2i64..3)),
        prop::option::weighted(0.1, (0usize..100, 0usize..4096, any::<u8>())),
    )
        .prop_map(
            |(lies, sorted, run, piece, key_lie, count_lie, flip)| Layout {
                lies,
                sorted: sorted || run > 12,
                run,
                piece,
                key_lie,
                count_lie,
                flip,
            },
        )
}

/// Whether every lookup of mutant `l` gives the loaded answer (or, where a
/// load refuses it, refuses too); `Ok(true)` when a load accepted it.
fn check(legacy: bool, encrypted: bool, l: &Layout) -> Result<bool, TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("m.nsi");
    let mut bytes = mutant(legacy, l);
    let k = key();
    if encrypted {
        bytes = common::encrypt(&bytes, &k);
    }
    std::fs::write(&img, &bytes).unwrap();
    let key = encrypted.then_some(&k);
    let b = base(legacy);
    let opts = nsimage_loader::LoadOptions {
        key: key.cloned(),
        ..Default::default()
    };
    let loaded = nsimage_loader::load(&img, &opts);
    for (path, children) in paths(legacy, l) {
        let got = answer(&img, key, &path, children);
        match &loaded {
            // A rule of the index itself (first keys that do not increase):
            // every reader refuses the image, a lookup too.
            Err(e) => prop_assert!(
                got.is_err(),
                "{path}: answered {got:?}, a load refuses: {e}"
            ),
            Ok(full) => {
                prop_assert_eq!(full.namespace.digest(), b.ns.digest());
                let want = describe(&b.ns, &path, children);
                let got = got.map_err(TestCaseError::fail)?;
                prop_assert_eq!(got, want, "{} (children: {})", path, children);
            }
        }
    }
    Ok(loaded.is_ok())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1024,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// At least 1,000 mutants over both section kinds, plain and
    /// encrypted.
    #[test]
    fn lookups_give_the_loaded_answer_whatever_the_name_section_says(
        legacy in any::<bool>(),
        encrypted in any::<bool>(),
        l in layout(),
    ) {
        check(legacy, encrypted, &l)?;
    }
}

/// The three shapes the issue found, each once, on both kinds: a phantom
/// child, a dropped one, and an entry pointed at a same-named inode in
/// another directory.
#[test]
fn the_shapes_hostile_testing_found() {
    for legacy in [false, true] {
        let b = base(legacy);
        // /a/x's "part-3" (a file in a directory spanning one piece).
        let i = b
            .entries
            .iter()
            .position(|e| {
                e.name == b"part-3" && b.ns.path_of(e.parent).unwrap() == b"/a/x".to_vec()
            })
            .unwrap();
        for lies in [
            vec![Lie::Phantom(i, i + 40, 0)],
            vec![Lie::Drop(i)],
            vec![Lie::SameNameElsewhere(i)],
        ] {
            for encrypted in [false, true] {
                let l = Layout {
                    lies: lies.clone(),
                    sorted: true,
                    run: 128,
                    piece: 4,
                    key_lie: None,
                    count_lie: None,
                    flip: None,
                };
                check(legacy, encrypted, &l)
                    .unwrap_or_else(|e| panic!("{lies:?}, encrypted {encrypted}: {e}"));
            }
        }
    }
}

/// A first key that names the next directory (the review's shape: the
/// first piece's key raised by one directory made `stat` of a child of
/// `/` say there is no such path), and one that names the one before.
#[test]
fn a_first_key_naming_another_directory() {
    for legacy in [false, true] {
        // Lies that keep the keys increasing (the image then loads, and a
        // lookup must not believe them) as well as lies a load refuses.
        let mut loaded = 0;
        for piece in 0..8 {
            for d in [1i64 << 20, -(1i64 << 20), 2 << 20] {
                let l = Layout {
                    lies: Vec::new(),
                    sorted: true,
                    run: 8,
                    piece: 4,
                    key_lie: Some((piece, d)),
                    count_lie: None,
                    flip: None,
                };
                let ok = check(legacy, false, &l)
                    .unwrap_or_else(|e| panic!("legacy {legacy}, piece {piece}, {d}: {e}"));
                loaded += usize::from(ok);
            }
        }
        assert!(loaded >= 2, "legacy {legacy}: {loaded} lies a load accepts");
    }
}
