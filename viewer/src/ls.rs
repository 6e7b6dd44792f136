//! `ls`: a directory's entries (or one inode), like `hdfs dfs -ls`; with
//! `recursive`, everything below, depth first (`-ls -R`).
//!
//! Text is Hadoop's `Ls` line, column for column:
//!
//! ```text
//! Found 3 items
//! drwxr-xr-x   - hdfs supergroup          0 2024-01-01 00:00 /data/2024
//! -rw-r--r--+  3 hdfs supergroup       1234 2024-01-01 00:00 /data/part-000
//! lrwxrwxrwx   - hdfs supergroup          0 2024-01-01 00:00 /data/latest -> /data/2024
//! ```
//!
//! - the permission, then `+` where the inode has an ACL (a space where
//!   not);
//! - the replication (`-` but for files), right-aligned to the widest seen
//!   so far and at least 3 (a directory counts as `0`, as Hadoop measures
//!   it);
//! - owner and group, left-aligned to the widest seen so far;
//! - the length, right-aligned to the widest byte count seen so far and at
//!   least 10 (with `-h` the width is still the byte count's, as Hadoop's);
//! - the time as `yyyy-MM-dd HH:mm` (UTC here; Hadoop prints the client's
//!   zone), the modification time or with `-u` the access time;
//! - the path.
//!
//! Widths only grow over one run, as Hadoop's shell keeps them: a
//! recursive listing's later lines may be wider than its first ones.
//! `Found N items` heads the listing of one directory (not a file's line,
//! nor a recursive or `-C` listing, nor an empty directory's, which prints
//! nothing). Where nsimage differs: a symlink's
//! type letter is `l` and its target follows ` -> ` (Hadoop's shell lists
//! it as a file), and `-t`/`-S`/`-r` sort each directory of a recursive
//! listing too (Hadoop's sorts only a directory listed alone).
//!
//! JSON lines, one object per entry: `{"path","type","permission":{"octal",
//! "string"},"replication","owner","group","length","modification_time",
//! "modification_time_utc"}` and `"symlink_target"` for a symlink
//! (`replication` is null but for files).

use crate::error::ViewError;
use crate::paths::ImagePath;
use crate::text::{escaped, oiv_time, permission_string, size_text, utc_iso8601};
use crate::walk::{join, kind_name, length, lossy, resolve};
use nsimage_namespace::{Attrs, Inode, InodeKind, Namespace};
use std::borrow::Cow;
use std::io::{self, Write};

/// One line of a listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LsEntry {
    /// The entry's absolute path.
    pub path: Vec<u8>,
    /// Its id.
    pub id: u64,
    /// File, directory or symlink.
    pub kind: InodeKind,
    /// Permission bits.
    pub mode: u16,
    /// Whether the inode has ACL entries (`+` after the permission).
    pub acl: bool,
    /// Replicas per block (files only).
    pub replication: Option<u16>,
    /// Owning user.
    pub owner: Vec<u8>,
    /// Owning group.
    pub group: Vec<u8>,
    /// Sum of block lengths (0 but for files).
    pub length: u64,
    /// Modification time, ms since the Unix epoch.
    pub mtime: u64,
    /// Access time, ms since the Unix epoch (0 but for files).
    pub atime: u64,
    /// A symlink's target.
    pub symlink_target: Option<Vec<u8>>,
}

impl LsEntry {
    /// The entry for `inode` at `path`.
    pub fn of(inode: &Inode<'_>, path: Vec<u8>) -> LsEntry {
        let (replication, atime) = match inode.attrs() {
            Attrs::File(f) => (Some(f.replication), f.atime),
            _ => (None, 0),
        };
        LsEntry {
            path,
            id: inode.id(),
            kind: inode.kind(),
            mode: inode.mode(),
            acl: inode.extra().is_some_and(|e| !e.acl.is_empty()),
            replication,
            owner: inode.user().to_vec(),
            group: inode.group().to_vec(),
            length: length(inode),
            mtime: inode.mtime(),
            atime,
            symlink_target: inode.symlink_target().map(<[u8]>::to_vec),
        }
    }

    /// The time shown and sorted on: the access time with `atime`.
    fn time(&self, atime: bool) -> u64 {
        if atime {
            self.atime
        } else {
            self.mtime
        }
    }
}

/// What `ls` of a path lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    /// Whether the path is a directory (its children are listed) rather
    /// than a file or symlink (itself is), or a directory listed as itself
    /// (`-d`).
    pub directory: bool,
    /// The entries: the directory's children in name order, or the one
    /// inode.
    pub entries: Vec<LsEntry>,
}

/// `ls` of `path` (not recursive): a directory's children, or the inode
/// itself (a directory too with `itself`, as `-d`). Needs only the path
/// and, for a directory listed, its children.
pub fn ls(ns: &Namespace, path: &ImagePath, itself: bool) -> Result<Listing, ViewError> {
    let target = resolve(ns, path)?;
    let here = path.canonical();
    if itself || target.kind() != InodeKind::Directory {
        return Ok(Listing {
            directory: false,
            entries: vec![LsEntry::of(&target, here)],
        });
    }
    Ok(Listing {
        directory: true,
        entries: target
            .children()
            .map(|c| LsEntry::of(&c, join(&here, c.name())))
            .collect(),
    })
}

/// Text, paths or JSON lines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// Hadoop's aligned lines.
    #[default]
    Text,
    /// The paths alone, one per line (`-C`).
    Paths,
    /// One JSON object per line.
    JsonLines,
}

/// The order of each directory's entries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Order {
    /// By name (bytewise), as the image keeps them.
    #[default]
    Name,
    /// Newest first (`-t`): by modification time, or access time with
    /// `atime`.
    Time,
    /// Largest first (`-S`).
    Size,
}

/// How a listing is printed: `hdfs dfs -ls`'s options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LsStyle {
    /// Text, paths or JSON lines.
    pub format: Format,
    /// Lengths as Hadoop's `-h` prints them (`1.5 K`).
    pub human: bool,
    /// The order of each directory's entries.
    pub order: Order,
    /// The order reversed (`-r`); ties keep their name order either way,
    /// as Hadoop's stable sort keeps them.
    pub reverse: bool,
    /// Access times shown and sorted on instead of modification times
    /// (`-u`).
    pub atime: bool,
}

impl LsStyle {
    /// Sorts one directory's entries (and anything paired with them) in
    /// this style's order: stable, so equal keys keep name order.
    fn sort<T>(&self, items: &mut [T], entry: impl Fn(&T) -> &LsEntry) {
        let reverse = self.reverse;
        let cmp = |a: &T, b: &T| {
            let (a, b) = (entry(a), entry(b));
            let o = match self.order {
                Order::Name => a.path.cmp(&b.path),
                Order::Time => b.time(self.atime).cmp(&a.time(self.atime)),
                Order::Size => b.length.cmp(&a.length),
            };
            if reverse {
                o.reverse()
            } else {
                o
            }
        };
        if self.order != Order::Name || reverse {
            items.sort_by(cmp);
        }
    }
}

/// Writes `listing` (from [`ls`]) in `style`.
pub fn write_listing(listing: &Listing, style: LsStyle, out: &mut impl Write) -> io::Result<()> {
    let mut entries: Vec<&LsEntry> = listing.entries.iter().collect();
    style.sort(&mut entries, |e| e);
    // Hadoop prints no count line for an empty directory.
    if listing.directory && style.format == Format::Text && !entries.is_empty() {
        writeln!(out, "Found {} items", entries.len())?;
    }
    let mut w = Widths::default();
    w.grow(&listing.entries);
    for e in entries {
        write_entry(e, &w, style, out)?;
    }
    Ok(())
}

/// `ls -R` of `path`, streamed to `out`: every inode below a directory
/// (not the directory itself), depth first, each directory's entries in
/// `style`'s order; a file or symlink lists itself. Holds one directory's
/// entries per level of the walk, never the whole listing. Returns how
/// many entries were written.
pub fn write_recursive(
    ns: &Namespace,
    path: &ImagePath,
    style: LsStyle,
    out: &mut impl Write,
) -> Result<u64, ViewError> {
    let io_err = |source| ViewError::Io {
        path: "<stdout>".into(),
        source,
    };
    let target = resolve(ns, path)?;
    let here = path.canonical();
    if target.kind() != InodeKind::Directory {
        let l = Listing {
            directory: false,
            entries: vec![LsEntry::of(&target, here)],
        };
        write_listing(&l, style, out).map_err(io_err)?;
        return Ok(1);
    }
    let mut written = 0u64;
    let mut widths = Widths::default();
    let mut stack = vec![Frame::of(target, &here, style, &mut widths)];
    while let Some(f) = stack.last_mut() {
        let Some((e, inode)) = f.entries.get(f.next) else {
            stack.pop();
            continue;
        };
        f.next += 1;
        write_entry(e, &widths, style, out).map_err(io_err)?;
        written += 1;
        if inode.kind() == InodeKind::Directory {
            let child = Frame::of(*inode, &e.path.clone(), style, &mut widths);
            stack.push(child);
        }
    }
    Ok(written)
}

/// One directory on the way down a recursive listing: its entries (with
/// their inodes, to descend into) in order, and the next to print.
struct Frame<'a> {
    entries: Vec<(LsEntry, Inode<'a>)>,
    next: usize,
}

impl<'a> Frame<'a> {
    fn of(dir: Inode<'a>, dir_path: &[u8], style: LsStyle, widths: &mut Widths) -> Frame<'a> {
        let mut entries: Vec<(LsEntry, Inode<'a>)> = dir
            .children()
            .map(|c| (LsEntry::of(&c, join(dir_path, c.name())), c))
            .collect();
        style.sort(&mut entries, |(e, _)| e);
        for (e, _) in &entries {
            widths.grow(std::slice::from_ref(e));
        }
        Frame { entries, next: 0 }
    }
}

/// Column widths, as Hadoop's shell computes them: the widest replication
/// (at least 3) and byte count (at least 10) seen so far, and the widest
/// owner and group; they only grow over a run.
#[derive(Clone, Copy, Debug)]
struct Widths {
    replication: usize,
    owner: usize,
    group: usize,
    length: usize,
}

impl Default for Widths {
    fn default() -> Widths {
        Widths {
            replication: 3,
            owner: 0,
            group: 0,
            length: 10,
        }
    }
}

impl Widths {
    fn grow(&mut self, entries: &[LsEntry]) {
        for e in entries {
            let r = e.replication.unwrap_or(0).to_string().len();
            self.replication = self.replication.max(r);
            self.owner = self.owner.max(escaped(&e.owner).chars().count());
            self.group = self.group.max(escaped(&e.group).chars().count());
            self.length = self.length.max(e.length.to_string().len());
        }
    }
}

fn write_entry(e: &LsEntry, w: &Widths, style: LsStyle, out: &mut impl Write) -> io::Result<()> {
    match style.format {
        Format::Text => write_text_line(e, w, style, out),
        Format::Paths => writeln!(out, "{}", escaped(&e.path)),
        Format::JsonLines => write_json_line(e, out),
    }
}

fn write_text_line(
    e: &LsEntry,
    w: &Widths,
    style: LsStyle,
    out: &mut impl Write,
) -> io::Result<()> {
    let repl = e
        .replication
        .map_or_else(|| "-".to_string(), |r| r.to_string());
    write!(
        out,
        "{}{}{:>rw$} ",
        permission_string(e.kind, e.mode),
        if e.acl { '+' } else { ' ' },
        repl,
        rw = w.replication,
    )?;
    // Hadoop leaves out the column's space where every name is empty.
    for (name, width) in [(&e.owner, w.owner), (&e.group, w.group)] {
        if width > 0 {
            write!(out, "{:<width$} ", escaped(name))?;
        }
    }
    write!(
        out,
        "{:>lw$} {} {}",
        size_text(e.length, style.human),
        oiv_time(e.time(style.atime)),
        escaped(&e.path),
        lw = w.length,
    )?;
    if let Some(t) = &e.symlink_target {
        write!(out, " -> {}", escaped(t))?;
    }
    writeln!(out)
}

/// One entry as JSON, serialized field by field (no map built per line).
#[derive(serde::Serialize)]
struct EntryJson<'a> {
    path: Cow<'a, str>,
    id: u64,
    #[serde(rename = "type")]
    kind: &'static str,
    permission: PermissionJson,
    replication: Option<u16>,
    owner: Cow<'a, str>,
    group: Cow<'a, str>,
    length: u64,
    modification_time: u64,
    modification_time_utc: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    symlink_target: Option<Cow<'a, str>>,
}

/// A permission as JSON: `{"octal": "0755", "string": "drwxr-xr-x"}`.
#[derive(serde::Serialize)]
struct PermissionJson {
    octal: String,
    string: String,
}

impl<'a> EntryJson<'a> {
    fn of(e: &'a LsEntry) -> EntryJson<'a> {
        EntryJson {
            path: lossy(&e.path),
            id: e.id,
            kind: kind_name(e.kind),
            permission: PermissionJson {
                octal: format!("{:04o}", e.mode),
                string: permission_string(e.kind, e.mode),
            },
            replication: e.replication,
            owner: lossy(&e.owner),
            group: lossy(&e.group),
            length: e.length,
            modification_time: e.mtime,
            modification_time_utc: utc_iso8601(e.mtime),
            symlink_target: e.symlink_target.as_deref().map(lossy),
        }
    }
}

fn write_json_line(e: &LsEntry, out: &mut impl Write) -> io::Result<()> {
    serde_json::to_writer(&mut *out, &EntryJson::of(e))?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stat::stat;
    use nsimage_namespace::{Block, FileSpec, PermSpec};

    const P: PermSpec<'static> = PermSpec {
        user: b"u",
        group: b"g",
        mode: 0o750,
    };
    const F: FileSpec = FileSpec {
        replication: 3,
        preferred_block_size: 1 << 20,
        storage_policy: 7,
    };

    /// What a one-path lookup holds for `/user/alice` and its children:
    /// the same first inodes as the whole namespace, nothing else.
    fn partial() -> Namespace {
        let mut ns = Namespace::default();
        ns.mkdirs(b"/user/alice", &P, 5).unwrap();
        ns.create(b"/user/alice/f", &P, &F, 6).unwrap();
        ns.symlink(b"/user/alice/l", b"/x", &P, 7).unwrap();
        ns
    }

    #[test]
    fn ls_and_stat_need_only_the_path_and_its_children() {
        let part = partial();
        let mut whole = partial();
        whole.mkdirs(b"/data/a/b", &P, 8).unwrap();
        whole.create(b"/user/zed", &P, &F, 9).unwrap();
        for p in ["/user/alice", "/user/alice/f", "/user/alice/l"] {
            let p = ImagePath::parse(p).unwrap();
            assert_eq!(
                ls(&part, &p, false).unwrap(),
                ls(&whole, &p, false).unwrap()
            );
            assert_eq!(stat(&part, &p).unwrap(), stat(&whole, &p).unwrap());
        }
        let l = ls(&part, &ImagePath::parse("/user/alice").unwrap(), false).unwrap();
        assert!(l.directory);
        assert_eq!(l.entries.len(), 2);
        assert_eq!(l.entries[1].symlink_target.as_deref(), Some(&b"/x"[..]));
        let text = listed(&l, LsStyle::default());
        assert_eq!(
            text,
            "Found 2 items\n\
             -rwxr-x---   3 u g          0 1970-01-01 00:00 /user/alice/f\n\
             lrwxr-x---   - u g          0 1970-01-01 00:00 /user/alice/l -> /x\n"
        );
        let big = Listing {
            directory: false,
            entries: vec![LsEntry {
                length: 1536,
                ..l.entries[0].clone()
            }],
        };
        let human = LsStyle {
            human: true,
            ..LsStyle::default()
        };
        assert_eq!(
            listed(&big, human),
            "-rwxr-x---   3 u g      1.5 K 1970-01-01 00:00 /user/alice/f\n"
        );
        assert!(matches!(
            ls(&part, &ImagePath::parse("/data").unwrap(), false),
            Err(ViewError::NoSuchPath { .. })
        ));
    }

    fn listed(l: &Listing, style: LsStyle) -> String {
        let mut out = Vec::new();
        write_listing(l, style, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Three files of different sizes and times, one with an ACL, and a
    /// directory with a longer owner below.
    fn sorted_dir() -> Namespace {
        let mut ns = Namespace::default();
        ns.mkdirs(b"/d", &P, 1).unwrap();
        for (name, mtime, blocks) in [("a", 30, 1u64), ("b", 10, 3), ("c", 20, 2)] {
            let path = format!("/d/{name}");
            let id = ns.create(path.as_bytes(), &P, &F, mtime).unwrap();
            for i in 0..blocks {
                let block = Block {
                    id: 1000 * id + i,
                    generation_stamp: 0,
                    length: 1 << 20,
                };
                ns.add_block(id, block).unwrap();
            }
            // Access times days apart: b the latest, then c, then a.
            ns.set_times(id, None, Some((100 - mtime) * 86_400_000))
                .unwrap();
        }
        let c = ns.resolve(b"/d/c").unwrap();
        ns.set_acl(c, &[(b"bob", 0, false, 5)]).unwrap();
        let owner = PermSpec {
            user: b"a-much-longer-owner",
            ..P
        };
        ns.mkdirs(b"/d/e/f", &owner, 40).unwrap();
        ns
    }

    fn names(text: &str) -> Vec<&str> {
        text.lines()
            .filter(|l| !l.starts_with("Found"))
            .map(|l| l.rsplit('/').next().unwrap())
            .collect()
    }

    #[test]
    fn orders_acls_and_paths_as_hadoops_ls() {
        let ns = sorted_dir();
        let d = ImagePath::parse("/d").unwrap();
        let l = ls(&ns, &d, false).unwrap();
        let by = |order, reverse, atime| LsStyle {
            order,
            reverse,
            atime,
            ..LsStyle::default()
        };
        // -t: newest first (the directory, then a, c, b); -S: largest
        // first, ties (the directory and ...) in name order; -r reverses.
        assert_eq!(
            names(&listed(&l, by(Order::Time, false, false))),
            ["e", "a", "c", "b"]
        );
        assert_eq!(
            names(&listed(&l, by(Order::Time, true, false))),
            ["b", "c", "a", "e"]
        );
        assert_eq!(
            names(&listed(&l, by(Order::Size, false, false))),
            ["b", "c", "a", "e"]
        );
        assert_eq!(
            names(&listed(&l, by(Order::Name, true, false))),
            ["e", "c", "b", "a"]
        );
        // -u -t: by access time (100 - mtime days), the directory's being
        // 0; the times shown are the access times.
        let atime = listed(&l, by(Order::Time, false, true));
        assert_eq!(names(&atime), ["b", "c", "a", "e"]);
        assert!(atime.contains(" 1970-04-01 00:00 /d/b\n"), "{atime}");
        assert!(atime.contains(" 1970-01-01 00:00 /d/e\n"), "{atime}");
        // The ACL's `+`, and the owner column as wide as its widest.
        let text = listed(&l, LsStyle::default());
        assert!(
            text.contains(
                "-rwxr-x---+  3 u                   g    2097152 1970-01-01 00:00 /d/c\n"
            ),
            "{text}"
        );
        // -C: the paths alone, no count line.
        let paths = LsStyle {
            format: Format::Paths,
            ..LsStyle::default()
        };
        assert_eq!(listed(&l, paths), "/d/a\n/d/b\n/d/c\n/d/e\n");
        // -d: the directory itself.
        let itself = ls(&ns, &d, true).unwrap();
        assert!(!itself.directory);
        assert_eq!(itself.entries.len(), 1);
        assert_eq!(itself.entries[0].path, b"/d");
    }

    #[test]
    fn a_recursive_listings_widths_only_grow() {
        let ns = sorted_dir();
        let mut out = Vec::new();
        let root = ImagePath::parse("/").unwrap();
        let n = write_recursive(&ns, &root, LsStyle::default(), &mut out).unwrap();
        assert_eq!(n, 6);
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // `/d`'s own line is printed before its children (with the longer
        // owner) are seen; the lines after it are aligned to that owner.
        assert_eq!(
            lines[0],
            "drwxr-x---   - u g          0 1970-01-01 00:00 /d"
        );
        assert_eq!(
            lines[1],
            "-rwxr-x---   3 u                   g    1048576 1970-01-01 00:00 /d/a"
        );
    }
}
