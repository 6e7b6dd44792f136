//! One verdict (issue 39): on an image whose tree is damaged, with every
//! checksum recomputed so that only the structure lies, every command that
//! reads it gives the same verdict: `load` (1 and 2 threads), `verify`,
//! the streamed commands (`dump` in its three formats, `du`, `du --by`,
//! `find`, `distribution`, `export`) and the one-path lookups of the
//! directory the damage is in (`ls`, `stat`) all accept it, or all refuse
//! it as corrupt (exit 1). Never a memory shortfall (exit 2) for an image
//! that is corrupt, never a duplicate path printed by one command that
//! another refuses.
//!
//! The damage, drawn by proptest on nsimage images (with sub-sections or
//! without) and Hadoop fsimages: two children of one directory given one
//! name, a child renamed out of its list's order, two children of a list
//! swapped, a child moved into another directory's list or listed in two,
//! a directory record naming a parent that is not an inode or is a file,
//! and declared counts that lie (an index's record counts, a Hadoop INODE
//! header's inode count, up to 2^40).

use crate::common;
use crate::hdfs_common;
use nsimage_format::hdfs_pb::file_summary::Section;
use nsimage_format::hdfs_pb::i_node_directory_section::DirEntry as HdfsDirEntry;
use nsimage_format::hdfs_pb::i_node_section::INode as HdfsInode;
use nsimage_format::hdfs_pb::{FileSummary, INodeSection};
use nsimage_format::{pb, SectionKind};
use nsimage_namespace::{InodeKind, Namespace};
use proptest::prelude::*;
use prost::Message;
use std::path::Path;
use std::sync::OnceLock;

/// A small tree: directories of shared file names, one larger directory,
/// a symlink, an empty directory.
fn namespace() -> Namespace {
    let mut ns = Namespace::default();
    let (p, f) = (common::P, common::F);
    for top in ["a", "b"] {
        for sub in ["x", "y", "z"] {
            let d = ns
                .mkdirs(format!("/{top}/{sub}").as_bytes(), &p, 10)
                .unwrap();
            for i in 0..5 {
                ns.create_in(d, format!("part-{i}").as_bytes(), &p, &f, 20)
                    .unwrap();
            }
        }
    }
    let big = ns.mkdirs(b"/big", &p, 12).unwrap();
    for i in 0..60 {
        ns.create_in(big, format!("file-{i:03}").as_bytes(), &p, &f, 30)
            .unwrap();
    }
    ns.symlink(b"/a/link", b"/b/x", &p, 40).unwrap();
    ns.mkdirs(b"/empty", &p, 13).unwrap();
    ns
}

/// The image formats the damage is done to.
#[derive(Clone, Copy, Debug)]
enum Form {
    /// nsimage, sub-sections of about this many bytes (0: none).
    Nsimage(u64),
    /// A Hadoop fsimage, plain, without sub-sections.
    Hadoop,
}

struct Base {
    bytes: Vec<u8>,
    ns: Namespace,
    /// Directories with at least two children, in id order.
    dirs: Vec<u64>,
}

fn base(form: Form) -> &'static Base {
    static BASES: OnceLock<Vec<Base>> = OnceLock::new();
    let bases = BASES.get_or_init(|| {
        let ns = namespace();
        let dirs: Vec<u64> = ns
            .iter()
            .filter(|n| n.kind() == InodeKind::Directory && n.children().count() >= 2)
            .map(|n| n.id())
            .collect();
        let mut hadoop = Vec::new();
        nsimage_writer::hdfs::write_hdfs_image(&ns, &mut hadoop, &Default::default()).unwrap();
        [
            common::image(&ns, &common::tiny(700)),
            common::image(&ns, &nsimage_writer::WriteOptions::default()),
            hadoop,
        ]
        .into_iter()
        .map(|bytes| Base {
            bytes,
            ns: ns.clone(),
            dirs: dirs.clone(),
        })
        .collect()
    });
    match form {
        Form::Nsimage(0) => &bases[1],
        Form::Nsimage(_) => &bases[0],
        Form::Hadoop => &bases[2],
    }
}

/// One damage to the tree.
#[derive(Clone, Debug)]
enum Damage {
    /// Child `.2` of directory `.0` named as child `.1` is.
    SameName(usize, usize, usize),
    /// Child `.1` of directory `.0` renamed to sort after its siblings.
    OutOfOrder(usize, usize),
    /// Children `.1` and `.2` of directory `.0` swapped in its list.
    Swap(usize, usize, usize),
    /// Child `.1` of directory `.0` moved into directory `.2`'s list at
    /// place `.3`.
    Move(usize, usize, usize, usize),
    /// Child `.1` of directory `.0` listed in directory `.2` too.
    Twice(usize, usize, usize),
    /// Directory `.0`'s record names parent id `last + 1 + .1 % 1000`
    /// (no inode).
    MissingParent(usize, usize),
    /// Directory `.0`'s record names one of its own files as parent (`.1`:
    /// which child its lookup asks for).
    FileParent(usize, usize),
    /// A piece's record count (nsimage) or the INODE header's inode count
    /// (Hadoop) told with difference `.1`, or (`.2`) as 2^32 (`.1` even)
    /// or 2^40 (odd).
    Count(usize, i64, bool),
}

/// What a mutation needs of the base: its directories' children.
fn children(b: &Base, dir: u64) -> Vec<(u64, Vec<u8>, bool)> {
    let n = b.ns.inode(dir).unwrap();
    n.children()
        .map(|c| (c.id(), c.name().to_vec(), c.kind() == InodeKind::Directory))
        .collect()
}

/// The base image damaged.
fn damaged(form: Form, d: &Damage) -> Vec<u8> {
    let b = base(form);
    let dir = |i: usize| b.dirs[i % b.dirs.len()];
    let kid = |dir: u64, i: usize| {
        let c = children(b, dir);
        c[i % c.len()].clone()
    };
    // Renames (by inode id) and list edits (by directory id).
    let mut renames: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut lists: Vec<ListEdit> = Vec::new();
    let mut parent_of_record: Option<(u64, u64)> = None;
    let mut count: Option<(usize, i64, bool)> = None;
    match *d {
        Damage::SameName(p, a, c) => {
            let (pa, pc) = (kid(dir(p), a), kid(dir(p), c));
            if pa.0 != pc.0 {
                renames.push((pc.0, pa.1));
            }
        }
        Damage::OutOfOrder(p, a) => {
            let k = kid(dir(p), a);
            let mut name = b"~".to_vec();
            name.extend_from_slice(&k.1);
            renames.push((k.0, name));
        }
        Damage::Swap(p, i, j) => {
            let n = children(b, dir(p)).len();
            let (i, j) = (i % n, j % n);
            lists.push((dir(p), Box::new(move |l: &mut Vec<u64>| l.swap(i, j))));
        }
        Damage::Move(p, i, q, at) => {
            let (from, to) = (dir(p), dir(q));
            let c = kid(from, i).0;
            if from != to && c != to {
                lists.push((
                    from,
                    Box::new(move |l: &mut Vec<u64>| l.retain(|&x| x != c)),
                ));
                lists.push((
                    to,
                    Box::new(move |l: &mut Vec<u64>| {
                        let at = at % (l.len() + 1);
                        l.insert(at, c);
                    }),
                ));
            }
        }
        Damage::Twice(p, i, q) => {
            let (from, to) = (dir(p), dir(q));
            let c = kid(from, i).0;
            if c != to {
                lists.push((to, Box::new(move |l: &mut Vec<u64>| l.push(c))));
            }
        }
        Damage::MissingParent(p, k) => {
            let last = b.ns.iter().map(|n| n.id()).max().unwrap();
            parent_of_record = Some((dir(p), last + 1 + k as u64 % 1000));
        }
        Damage::FileParent(p, _) => {
            let d = dir(p);
            if let Some(f) = children(b, d).into_iter().find(|c| !c.2) {
                parent_of_record = Some((d, f.0));
            }
        }
        Damage::Count(piece, delta, huge) => count = Some((piece, delta, huge)),
    }
    match form {
        Form::Nsimage(_) => {
            let mut bytes = common::rewrite_records(
                &b.bytes,
                &[SectionKind::INODE, SectionKind::INODE_DIR],
                |kind, body| {
                    if kind == SectionKind::INODE {
                        let mut m = pb::Inode::decode(body).unwrap();
                        if let Some((_, name)) = renames.iter().find(|r| r.0 == m.id) {
                            m.name = name.clone();
                        }
                        return m.encode_to_vec();
                    }
                    let mut m = pb::DirEntry::decode(body).unwrap();
                    for (d, f) in &lists {
                        if *d == m.parent {
                            f(&mut m.children);
                        }
                    }
                    if let Some((d, p)) = parent_of_record {
                        if d == m.parent {
                            m.parent = p;
                        }
                    }
                    m.encode_to_vec()
                },
            );
            if let Some((piece, delta, huge)) = count {
                let mut idx = common::index_of(&bytes);
                let kinds = [SectionKind::INODE, SectionKind::INODE_DIR];
                let s = idx.section_mut(kinds[piece % 2]).unwrap();
                let n = s.sub_sections.len();
                let r = if n == 0 {
                    &mut s.records
                } else {
                    &mut s.sub_sections[piece / 2 % n].records
                };
                *r = if huge {
                    1u64 << (32 + 8 * delta.rem_euclid(2))
                } else {
                    r.saturating_add_signed(delta).max(1)
                };
                if n > 0 {
                    s.records = s.sub_sections.iter().map(|u| u.records).sum();
                }
                let body = bytes[..s_end(&idx)].to_vec();
                bytes = common::with_index(body, &idx);
            }
            bytes
        }
        Form::Hadoop => hadoop_damaged(&b.bytes, &renames, &lists, parent_of_record, count),
    }
}

/// Where the sections of an nsimage image end (the index starts).
fn s_end(idx: &nsimage_format::Index) -> usize {
    idx.sections.iter().map(|s| s.end()).max().unwrap() as usize
}

/// An edit of one directory's child list: the directory's id and the edit.
type ListEdit = (u64, Box<dyn Fn(&mut Vec<u64>)>);

/// A plain Hadoop image with its INODE and INODE_DIR records edited.
fn hadoop_damaged(
    bytes: &[u8],
    renames: &[(u64, Vec<u8>)],
    lists: &[ListEdit],
    parent_of_record: Option<(u64, u64)>,
    count: Option<(usize, i64, bool)>,
) -> Vec<u8> {
    let summary = hdfs_common::summary_of(bytes);
    let mut out = b"HDFSIMG1".to_vec();
    let mut sections = Vec::new();
    for s in &summary.sections {
        let (o, l) = (s.offset() as usize, s.length() as usize);
        let plain = &bytes[o..o + l];
        let body = match s.name() {
            "INODE" => {
                let msgs = hdfs_common::messages(plain);
                let mut head = INodeSection::decode(msgs[0].as_slice()).unwrap();
                if let Some((_, delta, huge)) = count {
                    let n = head.num_inodes.unwrap_or(0);
                    head.num_inodes = Some(if huge {
                        1u64 << (32 + 8 * delta.rem_euclid(2))
                    } else {
                        n.saturating_add_signed(delta)
                    });
                }
                let mut v = vec![head.encode_to_vec()];
                for m in &msgs[1..] {
                    let mut n = HdfsInode::decode(m.as_slice()).unwrap();
                    if let Some((_, name)) = renames.iter().find(|r| r.0 == n.id) {
                        n.name = Some(name.clone());
                    }
                    v.push(n.encode_to_vec());
                }
                delimit(&v)
            }
            "INODE_DIR" => {
                let mut v = Vec::new();
                for m in hdfs_common::messages(plain) {
                    let mut e = HdfsDirEntry::decode(m.as_slice()).unwrap();
                    for (d, f) in lists {
                        if Some(*d) == e.parent {
                            f(&mut e.children);
                        }
                    }
                    if let Some((d, p)) = parent_of_record {
                        if Some(d) == e.parent {
                            e.parent = Some(p);
                        }
                    }
                    v.push(e.encode_to_vec());
                }
                delimit(&v)
            }
            _ => plain.to_vec(),
        };
        sections.push(Section {
            name: s.name.clone(),
            offset: Some(out.len() as u64),
            length: Some(body.len() as u64),
        });
        out.extend_from_slice(&body);
    }
    let fs = FileSummary {
        sections,
        ..summary
    };
    let d = fs.encode_length_delimited_to_vec();
    out.extend_from_slice(&d);
    out.extend_from_slice(&(d.len() as u32).to_be_bytes());
    out
}

fn delimit(msgs: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for m in msgs {
        prost::encoding::encode_varint(m.len() as u64, &mut out);
        out.extend_from_slice(m);
    }
    out
}

/// Every command's exit code and its first error line, on `image`, and
/// the one-path lookups `lookups` (`ls` or `stat` and a path).
fn verdicts(image: &Path, lookups: &[(&str, String)]) -> Vec<(String, Option<i32>, String)> {
    let dir = tempfile::tempdir().unwrap();
    let p = image.to_str().unwrap();
    let out = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let mut runs: Vec<Vec<String>> = [
        vec!["load", p, "--threads", "1"],
        vec!["load", p, "--threads", "2", "--parallel-threshold", "0"],
        vec!["verify", p],
        vec!["dump", p, "--format", "delimited", "-o", &out("d.tsv")],
        vec!["dump", p, "--format", "jsonl", "-o", &out("d.jsonl")],
        vec!["dump", p, "--format", "xml", "-o", &out("d.xml")],
        vec!["du", p, "/", "-d", "2"],
        vec!["du", p, "/", "--by", "owner"],
        vec!["find", p, "/"],
        vec!["find", p, "/", "--name", "part-*"],
        vec!["distribution", p],
        vec!["export", p, "--output", &out("e.parquet")],
    ]
    .iter()
    .map(|a| a.iter().map(|s| s.to_string()).collect())
    .collect();
    for (cmd, path) in lookups {
        runs.push(vec![cmd.to_string(), p.to_string(), path.clone()]);
    }
    runs.into_iter()
        .map(|args| {
            let o = std::process::Command::new(env!("CARGO_BIN_EXE_nsimage"))
                .args(&args)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            let first = err
                .lines()
                .find(|l| !l.starts_with("warning"))
                .unwrap_or("");
            let mut shown = args.clone();
            shown[1] = "IMG".into();
            (shown.join(" "), o.status.code(), first.to_string())
        })
        .collect()
}

/// The path of inode `id` in the base namespace.
fn path(b: &Base, id: u64) -> String {
    String::from_utf8(b.ns.path_of(id).unwrap()).unwrap()
}

/// `dir`'s path joined with `name`.
fn under(b: &Base, dir: u64, name: &[u8]) -> String {
    let d = path(b, dir);
    format!(
        "{}/{}",
        if d == "/" { "" } else { &d },
        String::from_utf8_lossy(name)
    )
}

/// The lookups that read what `d` damaged: the listing of the directory
/// whose list or records it changed, and the damaged entry's path. A
/// lookup reads only its path's pieces and the entries around it, so it
/// is asked about the damage, not about the rest of the image.
fn lookups(b: &Base, d: &Damage) -> Vec<(&'static str, String)> {
    let dir = |i: usize| b.dirs[i % b.dirs.len()];
    let kid = |dir: u64, i: usize| {
        let c = children(b, dir);
        c[i % c.len()].clone()
    };
    match *d {
        Damage::SameName(p, _, c) | Damage::OutOfOrder(p, c) | Damage::Swap(p, c, _) => {
            let p = dir(p);
            vec![("ls", path(b, p)), ("stat", under(b, p, &kid(p, c).1))]
        }
        Damage::Move(p, i, ..) | Damage::MissingParent(p, i) | Damage::FileParent(p, i) => {
            let p = dir(p);
            vec![("ls", path(b, p)), ("stat", under(b, p, &kid(p, i).1))]
        }
        Damage::Twice(_, _, q) => vec![("ls", path(b, dir(q)))],
        Damage::Count(..) => Vec::new(),
    }
}

fn check(form: Form, d: &Damage) -> Result<(), TestCaseError> {
    check_bytes(form, d, &damaged(form, d), lookups(base(form), d))
}

/// [`check`] of `bytes`, an image of `form` with damage `d`, asking the
/// lookups `asked`.
fn check_bytes(
    form: Form,
    d: &Damage,
    bytes: &[u8],
    asked: Vec<(&'static str, String)>,
) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join(match form {
        Form::Hadoop => "fsimage_0000000000000000001",
        Form::Nsimage(_) => "img.nsi",
    });
    std::fs::write(&img, bytes).unwrap();
    let all = verdicts(&img, &asked);
    let want = all[0].1;
    prop_assert!(
        want == Some(0) || want == Some(1),
        "{d:?} on {form:?}: load exits {want:?}: {all:#?}"
    );
    // A lookup of an image a load accepts answers as the loaded namespace
    // does: a path the damage took away (a child renamed, moved) is not
    // there.
    let loaded = nsimage_loader::load(&img, &Default::default()).ok();
    let lookup_want = |path: &str| match &loaded {
        None => Some(1),
        Some(l) => Some(if l.namespace.resolve(path.as_bytes()).is_ok() {
            0
        } else {
            1
        }),
    };
    let first_lookup = all.len() - asked.len();
    for (k, (cmd, code, err)) in all.iter().enumerate() {
        let want = match k.checked_sub(first_lookup).and_then(|j| asked.get(j)) {
            Some((_, path)) => lookup_want(path),
            None => want,
        };
        prop_assert_eq!(
            *code,
            want,
            "{:?} on {:?}: `{}` exits {:?} ({}), load {:?}: {:#?}",
            d,
            form,
            cmd,
            code,
            err,
            want,
            all
        );
    }
    Ok(())
}

fn damage() -> impl Strategy<Value = Damage> {
    let i = 0usize..64;
    prop_oneof![
        (i.clone(), i.clone(), i.clone()).prop_map(|(a, b, c)| Damage::SameName(a, b, c)),
        (i.clone(), i.clone()).prop_map(|(a, b)| Damage::OutOfOrder(a, b)),
        (i.clone(), i.clone(), i.clone()).prop_map(|(a, b, c)| Damage::Swap(a, b, c)),
        (i.clone(), i.clone(), i.clone(), i.clone())
            .prop_map(|(a, b, c, e)| Damage::Move(a, b, c, e)),
        (i.clone(), i.clone(), i.clone()).prop_map(|(a, b, c)| Damage::Twice(a, b, c)),
        (i.clone(), i.clone()).prop_map(|(a, k)| Damage::MissingParent(a, k)),
        (i.clone(), i.clone()).prop_map(|(a, k)| Damage::FileParent(a, k)),
        (i, -2i64..3, prop::bool::weighted(0.3)).prop_map(|(a, d, h)| Damage::Count(a, d, h)),
    ]
}

fn form() -> impl Strategy<Value = Form> {
    prop_oneof![
        Just(Form::Nsimage(700)),
        Just(Form::Nsimage(0)),
        Just(Form::Hadoop)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 96,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_command_gives_one_verdict_on_a_damaged_tree(f in form(), d in damage()) {
        check(f, &d)?;
    }
}

/// Each damage once on each form, whatever proptest draws: the shapes the
/// issue names (two children of `/` of one name, a directory record whose
/// parent is not an inode, a count of 2^40).
#[test]
fn the_named_shapes_give_one_verdict() {
    let shapes = [
        Damage::SameName(0, 0, 1),
        Damage::OutOfOrder(1, 0),
        Damage::Swap(2, 0, 1),
        Damage::Move(3, 0, 4, 0),
        Damage::Twice(3, 1, 5),
        Damage::MissingParent(2, 7),
        Damage::FileParent(1, 0),
        Damage::Count(0, 1, false),
        Damage::Count(1, 0, true),
        Damage::Count(1, 1, true),
    ];
    for form in [Form::Nsimage(700), Form::Nsimage(0), Form::Hadoop] {
        for d in &shapes {
            check(form, d).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

/// The exact check of the names (an image without a name section) in
/// windows and batches much smaller than its lists: every adjacent swap of
/// the largest directory's list is found, whichever window it falls in,
/// and the undamaged image passes.
#[test]
fn the_exact_check_finds_a_swap_in_any_window() {
    use nsimage_loader::skeleton::Skeleton;
    let form = Form::Nsimage(0);
    let b = base(form);
    let big = b.ns.resolve(b"/big").unwrap();
    let p = b.dirs.iter().position(|&d| d == big).unwrap();
    let n = children(b, big).len();
    let dir = tempfile::tempdir().unwrap();
    let build = |bytes: &[u8], names: usize| {
        let img = dir.path().join("w.nsi");
        std::fs::write(&img, bytes).unwrap();
        let src =
            nsimage_loader::Streamable::Image(nsimage_loader::ImageSource::open(&img).unwrap());
        Skeleton::build_within(&src, None, names).map(|r| r.is_ok())
    };
    // 3 names a batch (128 bytes each before their own bytes): windows of
    // 3, each sharing a name with the next, whose names then take more
    // than the 384 bytes and are each read again as two windows of 2.
    assert!(matches!(build(&b.bytes, 3 * 128), Ok(true)));
    for i in 0..n - 1 {
        let bad = damaged(form, &Damage::Swap(p, i, i + 1));
        let e = build(&bad, 3 * 128)
            .err()
            .unwrap_or_else(|| panic!("swap at {i} accepted"));
        assert!(
            e.to_string()
                .contains("not in strictly increasing name order"),
            "{e}"
        );
    }
}

/// A declared count that lies by more than the memory limit allows (an
/// nsimage piece's record count, a Hadoop INODE header's inode count, each
/// raised under the bound its bytes set): the streamed commands read the
/// counts before they refuse the image for its size, and call it damaged
/// (exit 1, as `load` does), not too large for the machine (exit 2). The
/// same image undamaged, under a limit it does not fit, is a shortfall.
#[test]
fn a_count_that_lies_is_damage_not_a_memory_shortfall() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let run = |img: &str, args: &[&str], limit: &str| {
        let mut all = args.to_vec();
        all.insert(1, img);
        all.extend(["--memory-limit", limit]);
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_nsimage"))
            .args(&all)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let out = p("o");
    let commands: [&[&str]; 5] = [
        &["du", "/"],
        &["find", "/"],
        &["dump", "--format", "delimited", "-o", &out],
        &["distribution"],
        &["export", "--output", &out],
    ];
    // INODE_DIR's first piece 20 records more, INODE's header 230 inodes
    // more: lies its bytes could hold (a count past that is refused with
    // the index or the header), each under a limit just below what the
    // lie asks for.
    // And INODE's first keys (each piece's past the first) tripled: still
    // increasing, every piece's ids then as sparse as the estimate's
    // spans allow, which costs them 8 bytes an inode, not 4.
    let sparse = {
        let b = &base(Form::Nsimage(700)).bytes;
        let mut idx = common::index_of(b);
        let s = idx.section_mut(SectionKind::INODE).unwrap();
        assert!(s.sub_sections.len() > 2);
        for u in s.sub_sections.iter_mut().skip(1) {
            u.first_key *= 3;
        }
        common::with_index(b[..s_end(&idx)].to_vec(), &idx)
    };
    let cases = [
        (
            Form::Nsimage(700),
            damaged(Form::Nsimage(700), &Damage::Count(1, 20, false)),
        ),
        (
            Form::Nsimage(0),
            damaged(Form::Nsimage(0), &Damage::Count(1, 20, false)),
        ),
        (
            Form::Hadoop,
            damaged(Form::Hadoop, &Damage::Count(0, 230, false)),
        ),
        (Form::Nsimage(700), sparse),
    ];
    for (form, bytes) in cases {
        let name = match form {
            Form::Hadoop => "fsimage_0000000000000000001",
            Form::Nsimage(_) => "img.nsi",
        };
        let bad = p(&format!("bad-{name}"));
        std::fs::write(&bad, bytes).unwrap();
        let estimate = |path: &str| {
            let path = Path::new(path);
            let src = match form {
                Form::Hadoop => nsimage_loader::Streamable::Hdfs(Box::new(
                    nsimage_loader::hdfs::HdfsSource::open(
                        path,
                        nsimage_loader::hdfs::Md5Policy::Check,
                    )
                    .unwrap(),
                )),
                Form::Nsimage(_) => nsimage_loader::Streamable::Image(
                    nsimage_loader::ImageSource::open(path).unwrap(),
                ),
            };
            nsimage_loader::skeleton::Skeleton::estimate(&src)
        };
        let good = p(name);
        std::fs::write(&good, &base(form).bytes).unwrap();
        let asks = estimate(&bad);
        assert!(asks > estimate(&good), "{form:?}: the lie asks for no more");
        let limit = (asks - 1).to_string();
        let limit = limit.as_str();
        let load = std::process::Command::new(env!("CARGO_BIN_EXE_nsimage"))
            .args(["load", &bad])
            .output()
            .unwrap();
        assert_eq!(load.status.code(), Some(1), "{form:?}: load");
        for args in commands {
            let (code, err) = run(&bad, args, limit);
            assert_eq!(code, Some(1), "{form:?} {args:?}: {err}");
            assert!(!err.contains("memory limit"), "{form:?} {args:?}: {err}");
            let (code, err) = run(&good, args, "1K");
            assert_eq!(code, Some(2), "{form:?} {args:?} undamaged: {err}");
            assert!(err.contains("memory limit"), "{form:?} {args:?}: {err}");
        }
    }
}

/// `bytes` (an nsimage image with a NAME_RUNS section) with that section
/// written again from its INODE and INODE_DIR as they now are: every
/// entry's name and parent the tree's, sorted by (parent, name, child),
/// runs of at most 8 entries, 4 runs a piece.
fn names_from_tree(bytes: &[u8]) -> Vec<u8> {
    use nsimage_format::name_runs::{put_run, RunEntry};
    let mut names: std::collections::HashMap<u64, (Vec<u8>, pb::InodeType)> = Default::default();
    let mut lists: Vec<(u64, Vec<u64>)> = Vec::new();
    common::rewrite_records(
        bytes,
        &[SectionKind::INODE, SectionKind::INODE_DIR],
        |kind, body| {
            if kind == SectionKind::INODE {
                let m = pb::Inode::decode(body).unwrap();
                names.insert(m.id, (m.name.clone(), m.r#type()));
            } else {
                let m = pb::DirEntry::decode(body).unwrap();
                lists.push((m.parent, m.children));
            }
            body.to_vec()
        },
    );
    let mut entries: Vec<(u64, &[u8], u64, pb::InodeType)> = Vec::new();
    for (parent, kids) in &lists {
        for c in kids {
            let (name, ty) = &names[c];
            entries.push((*parent, name, *c, *ty));
        }
    }
    entries.sort();
    // Runs of one parent, then pieces of runs, each keyed by its first
    // parent and its place among the pieces that start with it.
    let mut runs: Vec<(u64, Vec<u8>)> = Vec::new();
    for group in entries.chunk_by(|a, b| a.0 == b.0) {
        for run in group.chunks(8) {
            let r: Vec<RunEntry<'_>> = run.iter().map(|e| (e.1, e.2, e.3)).collect();
            let mut b = Vec::new();
            put_run(&mut b, run[0].0, &r);
            runs.push((run[0].0, b));
        }
    }
    let mut pieces = Vec::new();
    let mut last: Option<(u64, u64)> = None;
    for chunk in runs.chunks(4) {
        let parent = chunk[0].0;
        let seq = match last {
            Some((p, s)) if p == parent => s + 1,
            _ => 0,
        };
        last = Some((parent, seq));
        let b: Vec<u8> = chunk.iter().flat_map(|r| r.1.clone()).collect();
        pieces.push((b, chunk.len() as u64, (parent << 20) | seq));
    }
    common::replace_section(bytes, SectionKind::NAME_RUNS, &pieces)
}

/// The damages to the children's names and order with the name section
/// written again from the damaged tree: the section then agrees with
/// every name, and only the sum of the lists (the section's order
/// against INODE_DIR's) or the section's own order can show the damage;
/// every command still gives the load's verdict. The undamaged tree, so
/// written, is accepted, its section used by a lookup.
#[test]
fn a_name_section_that_agrees_with_a_damaged_tree() {
    let form = Form::Nsimage(700);
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("r.nsi");
    std::fs::write(&img, names_from_tree(&base(form).bytes)).unwrap();
    nsimage_loader::load(&img, &Default::default()).unwrap();
    let p = nsimage_viewer::paths::ImagePath::parse("/big/file-007").unwrap();
    let view = nsimage_viewer::lookup::load_path(&img, &p, &Default::default()).unwrap();
    assert!(view.indexed, "the section written again is not used");
    assert_eq!(view.unused_index, None);
    let mut shapes = Vec::new();
    for p in 0..8 {
        for (i, j) in [(0, 1), (1, 2), (0, 3), (4, 2)] {
            shapes.push(Damage::SameName(p, i, j));
            shapes.push(Damage::Swap(p, i, j));
            shapes.push(Damage::Move(p, i, p + 1, j));
        }
        shapes.push(Damage::OutOfOrder(p, 0));
        shapes.push(Damage::OutOfOrder(p, 2));
    }
    let b = base(form);
    for d in &shapes {
        let bytes = names_from_tree(&damaged(form, d));
        // The section agrees with the directory a child left: a lookup
        // reads the damage where the child went.
        let asked = match *d {
            Damage::Move(p, i, q, _) => {
                let (from, to) = (b.dirs[p % b.dirs.len()], b.dirs[q % b.dirs.len()]);
                let c = children(b, from);
                let name = &c[i % c.len()].1;
                vec![("ls", path(b, to)), ("stat", under(b, to, name))]
            }
            _ => lookups(b, d),
        };
        check_bytes(form, d, &bytes, asked).unwrap_or_else(|e| panic!("{e}"));
    }
}
