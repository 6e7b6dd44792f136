//! `du --by owner|group`: what a subtree holds, per owning user or group:
//! the question behind quota planning and chargeback ("who holds the
//! bytes, who holds the small files").
//!
//! The subtree's top and everything below it count, each inode once,
//! under its own owner (or group), with the counts of [`Usage`]. Computed
//! in parallel over the top's children, each summed serially; the sums are
//! integers, so the report is exact and the same for any thread count.
//!
//! Text:
//!
//! ```text
//! OWNER FILES DIRS SYMLINKS BYTES SPACE_CONSUMED SMALL_FILES
//! alice    40    3        0  2320           6960          40
//! hdfs      2    4        1     0              0           2
//! ```
//!
//! JSON, one document: `{"path","by","rows":[{"name","files",
//! "directories","symlinks","bytes","space_consumed","small_files",
//! "inodes"}]}`, rows by bytes (most first), ties by name.

use crate::du::Usage;
use crate::error::ViewError;
use crate::paths::ImagePath;
use crate::walk::{lossy, resolve};
use nsimage_namespace::{Inode, InodeKind, Namespace};
use rayon::prelude::*;
use serde_json::json;
use std::collections::HashMap;
use std::io::{self, Write};

/// What the rows are keyed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// The owning user.
    Owner,
    /// The owning group.
    Group,
}

impl Key {
    /// The key's name as the command line and JSON spell it.
    pub fn name(self) -> &'static str {
        match self {
            Key::Owner => "owner",
            Key::Group => "group",
        }
    }

    fn of<'a>(self, inode: &Inode<'a>) -> &'a [u8] {
        match self {
            Key::Owner => inode.user(),
            Key::Group => inode.group(),
        }
    }
}

/// One owner's (or group's) share of the subtree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerRow {
    /// The user or group name.
    pub name: Vec<u8>,
    /// What its inodes in the subtree hold.
    pub usage: Usage,
}

/// `du --by`'s answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerReport {
    /// The path asked about.
    pub path: Vec<u8>,
    /// What the rows are keyed by.
    pub by: Key,
    /// One row per user or group with an inode in the subtree, most bytes
    /// first, ties by name.
    pub rows: Vec<OwnerRow>,
}

type Sums<'a> = HashMap<&'a [u8], Usage>;

fn merge<'a>(mut a: Sums<'a>, b: Sums<'a>) -> Sums<'a> {
    for (k, u) in b {
        a.entry(k).or_default().add(&u);
    }
    a
}

/// Sums the subtree at `top` (itself included), one thread, explicit stack.
fn subtree<'a>(top: Inode<'a>, key: Key, small_below: Option<u64>) -> Sums<'a> {
    let mut sums = Sums::new();
    let mut stack = vec![top];
    while let Some(n) = stack.pop() {
        let u = Usage::of_attrs_below(&n.attrs(), small_below);
        sums.entry(key.of(&n)).or_default().add(&u);
        if n.kind() == InodeKind::Directory {
            stack.extend(n.children());
        }
    }
    sums
}

/// The usage per owner (or group) of the subtree at `path`, a file
/// counted small below `small_below` bytes (`None`: below its preferred
/// block size).
pub fn usage_by(
    ns: &Namespace,
    path: &ImagePath,
    by: Key,
    small_below: Option<u64>,
) -> Result<OwnerReport, ViewError> {
    let top = resolve(ns, path)?;
    let mut own = Sums::new();
    let u = Usage::of_attrs_below(&top.attrs(), small_below);
    own.entry(by.of(&top)).or_default().add(&u);
    let kids: Vec<Inode<'_>> = if top.kind() == InodeKind::Directory {
        top.children().collect()
    } else {
        Vec::new()
    };
    let sums = kids
        .par_iter()
        .map(|c| subtree(*c, by, small_below))
        .reduce(Sums::new, merge);
    Ok(report(path, by, merge(own, sums)))
}

/// The report of `sums` (by name) for `path`: rows by bytes, most first,
/// ties by name.
pub(crate) fn report(path: &ImagePath, by: Key, sums: HashMap<&[u8], Usage>) -> OwnerReport {
    let mut rows: Vec<OwnerRow> = sums
        .into_iter()
        .map(|(name, usage)| OwnerRow {
            name: name.to_vec(),
            usage,
        })
        .collect();
    rows.sort_by(|a, b| {
        b.usage
            .bytes
            .cmp(&a.usage.bytes)
            .then_with(|| a.name.cmp(&b.name))
    });
    OwnerReport {
        path: path.canonical(),
        by,
        rows,
    }
}

/// Writes `r` as an aligned table with a header line; with `human`, bytes
/// and space consumed in Hadoop's binary prefixes (`1.5 K`).
pub fn write_text(r: &OwnerReport, human: bool, out: &mut impl Write) -> io::Result<()> {
    let head = [
        if r.by == Key::Owner { "OWNER" } else { "GROUP" },
        "FILES",
        "DIRS",
        "SYMLINKS",
        "BYTES",
        "SPACE_CONSUMED",
        "SMALL_FILES",
    ];
    let cells: Vec<[String; 7]> = r
        .rows
        .iter()
        .map(|x| {
            let u = &x.usage;
            [
                crate::text::escaped(&x.name).into_owned(),
                u.files.to_string(),
                u.directories.to_string(),
                u.symlinks.to_string(),
                crate::text::size_text(u.bytes, human),
                crate::text::size_text(u.space_consumed, human),
                u.small_files.to_string(),
            ]
        })
        .collect();
    let mut w = head.map(str::len);
    for c in &cells {
        for (i, s) in c.iter().enumerate() {
            w[i] = w[i].max(s.chars().count());
        }
    }
    for line in std::iter::once(head.map(String::from)).chain(cells) {
        for (i, s) in line.iter().enumerate() {
            let pad = w[i].saturating_sub(s.chars().count());
            if i == 0 {
                write!(out, "{s}{:pad$}", "")?;
            } else {
                write!(out, " {:pad$}{s}", "")?;
            }
        }
        writeln!(out)?;
    }
    Ok(())
}

/// The JSON document of `r`.
pub fn to_json(r: &OwnerReport) -> serde_json::Value {
    let rows: Vec<_> = r
        .rows
        .iter()
        .map(|x| {
            let u = &x.usage;
            json!({
                "name": lossy(&x.name),
                "files": u.files,
                "directories": u.directories,
                "symlinks": u.symlinks,
                "bytes": u.bytes,
                "space_consumed": u.space_consumed,
                "small_files": u.small_files,
                "inodes": u.inodes(),
            })
        })
        .collect();
    json!({
        "path": lossy(&r.path),
        "by": r.by.name(),
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsimage_namespace::{Block, FileSpec, PermSpec, ROOT_ID};

    fn perm(user: &'static [u8], group: &'static [u8]) -> PermSpec<'static> {
        PermSpec {
            user,
            group,
            mode: 0o755,
        }
    }
    const F: FileSpec = FileSpec {
        replication: 3,
        preferred_block_size: 100,
        storage_policy: 0,
    };

    #[test]
    fn each_inode_counts_once_under_its_own_owner() {
        let mut ns = Namespace::default();
        let a = ns
            .mkdir_in(ROOT_ID, b"a", &perm(b"alice", b"eng"), 1)
            .unwrap();
        for i in 0..50u64 {
            let who = if i % 5 == 0 {
                b"bob" as &[u8]
            } else {
                b"alice"
            };
            let f = ns
                .create_in(a, format!("f{i}").as_bytes(), &perm(who, b"eng"), &F, 1)
                .unwrap();
            ns.add_block(
                f,
                Block {
                    id: i + 1,
                    generation_stamp: 1,
                    length: i * 10,
                },
            )
            .unwrap();
        }
        let b = ns.mkdir_in(a, b"b", &perm(b"bob", b"ops"), 1).unwrap();
        ns.create_in(b, b"empty", &perm(b"carol", b"ops"), &F, 1)
            .unwrap();
        let run = |threads, path: &str, by| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| usage_by(&ns, &ImagePath::parse(path).unwrap(), by, None).unwrap())
        };
        let r = run(1, "/a", Key::Owner);
        assert_eq!(r, run(3, "/a", Key::Owner));
        let names: Vec<&[u8]> = r.rows.iter().map(|x| x.name.as_slice()).collect();
        assert_eq!(names, [b"alice" as &[u8], b"bob", b"carol"]);
        let bob_bytes: u64 = (0..50u64).filter(|i| i % 5 == 0).map(|i| i * 10).sum();
        let all: u64 = (0..50u64).map(|i| i * 10).sum();
        let bob = &r.rows[1].usage;
        assert_eq!((bob.files, bob.directories, bob.bytes), (10, 1, bob_bytes));
        assert_eq!(bob.space_consumed, 3 * bob_bytes);
        let alice = &r.rows[0].usage;
        assert_eq!((alice.files, alice.directories), (40, 1));
        assert_eq!(alice.bytes, all - bob_bytes);
        // The sums over owners are the subtree's totals.
        let total = r.rows.iter().fold(Usage::default(), |mut t, x| {
            t.add(&x.usage);
            t
        });
        let du = crate::du::du(
            &ns,
            &ImagePath::parse("/a").unwrap(),
            &crate::du::DuOptions::default(),
        )
        .unwrap();
        assert_eq!(total, du.total().unwrap().usage);
        // By group; and a file as the path.
        let g = run(2, "/", Key::Group);
        let groups: Vec<&[u8]> = g.rows.iter().map(|x| x.name.as_slice()).collect();
        // The root belongs to the empty group; ties (0 bytes) go by name.
        assert_eq!(groups, [b"eng" as &[u8], b"", b"ops"]);
        let one = run(2, "/a/f7", Key::Owner);
        assert_eq!(one.rows.len(), 1);
        assert_eq!(one.rows[0].usage.bytes, 70);
        let mut text = Vec::new();
        write_text(&r, false, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.starts_with("OWNER FILES DIRS"), "{text}");
        assert_eq!(to_json(&r)["rows"][1]["name"], "bob");
    }
}
