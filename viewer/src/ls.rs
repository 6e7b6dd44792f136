//! `ls`: a directory's entries (or one inode), like `hdfs dfs -ls`; with
//! `recursive`, everything below, depth first in name order (`-ls -R`).
//!
//! Text, one line per entry, columns aligned over each directory's
//! entries as hdfs aligns them:
//!
//! ```text
//! Found 2 items
//! drwxr-xr-x   - hdfs supergroup          0 2024-01-01T00:00:10Z /data/2024
//! -rw-r--r--   3 hdfs supergroup       1234 2024-01-01T00:00:20Z /data/part-000
//! lrwxrwxrwx   - hdfs supergroup          0 2024-01-01T00:00:31Z /data/latest -> /data/2024
//! ```
//!
//! `Found N items` heads the listing of one directory (not a file's line,
//! nor a recursive listing, as in hdfs). JSON lines, one object per entry:
//! `{"path","type","permission":{"octal","string"},"replication","owner",
//! "group","length","modification_time","modification_time_utc"}` and
//! `"symlink_target"` for a symlink (`replication` is null but for files).

use crate::error::ViewError;
use crate::paths::ImagePath;
use crate::text::{escaped, permission_string, size_text, utc_iso8601};
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
    /// A symlink's target.
    pub symlink_target: Option<Vec<u8>>,
}

impl LsEntry {
    /// The entry for `inode` at `path`.
    pub fn of(inode: &Inode<'_>, path: Vec<u8>) -> LsEntry {
        LsEntry {
            path,
            id: inode.id(),
            kind: inode.kind(),
            mode: inode.mode(),
            replication: match inode.attrs() {
                Attrs::File(f) => Some(f.replication),
                _ => None,
            },
            owner: inode.user().to_vec(),
            group: inode.group().to_vec(),
            length: length(inode),
            mtime: inode.mtime(),
            symlink_target: inode.symlink_target().map(<[u8]>::to_vec),
        }
    }
}

/// What `ls` of a path lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    /// Whether the path is a directory (its children are listed) rather
    /// than a file or symlink (itself is).
    pub directory: bool,
    /// The entries: the directory's children in name order, or the one
    /// inode.
    pub entries: Vec<LsEntry>,
}

/// `ls` of `path` (not recursive): a directory's children, or the inode
/// itself. Needs only the path and, for a directory, its children.
pub fn ls(ns: &Namespace, path: &ImagePath) -> Result<Listing, ViewError> {
    let target = resolve(ns, path)?;
    let here = path.canonical();
    if target.kind() != InodeKind::Directory {
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

/// Text or JSON lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// hdfs-like aligned lines, lengths as byte counts.
    Text,
    /// The same lines, lengths in binary units (`1.5 KiB`, `-ls -h`).
    HumanText,
    /// One JSON object per line.
    JsonLines,
}

/// Writes `listing` (from [`ls`]) in `format`.
pub fn write_listing(listing: &Listing, format: Format, out: &mut impl Write) -> io::Result<()> {
    match format {
        Format::Text | Format::HumanText => {
            let human = format == Format::HumanText;
            if listing.directory {
                writeln!(out, "Found {} items", listing.entries.len())?;
            }
            let w = Widths::over(&listing.entries, human);
            for e in &listing.entries {
                write_text_line(e, &w, human, out)?;
            }
        }
        Format::JsonLines => {
            for e in &listing.entries {
                write_json_line(e, out)?;
            }
        }
    }
    Ok(())
}

/// `ls -R` of `path`, streamed to `out`: every inode below a directory
/// (not the directory itself), depth first in name order, each
/// directory's entries aligned together; a file or symlink lists itself.
/// Holds one directory's entries per level of the walk, never the whole
/// listing. Returns how many entries were written.
pub fn write_recursive(
    ns: &Namespace,
    path: &ImagePath,
    format: Format,
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
        write_listing(&l, format, out).map_err(io_err)?;
        return Ok(1);
    }
    let mut written = 0u64;
    let mut stack = vec![Frame::of(target, &here, format == Format::HumanText)];
    while let Some(f) = stack.last_mut() {
        let Some(e) = f.entries.get(f.next) else {
            stack.pop();
            continue;
        };
        let inode = f.inodes[f.next];
        f.next += 1;
        match format {
            Format::Text => write_text_line(e, &f.widths, false, out),
            Format::HumanText => write_text_line(e, &f.widths, true, out),
            Format::JsonLines => write_json_line(e, out),
        }
        .map_err(io_err)?;
        written += 1;
        if inode.kind() == InodeKind::Directory {
            let child = Frame::of(inode, &e.path.clone(), format == Format::HumanText);
            stack.push(child);
        }
    }
    Ok(written)
}

/// One directory on the way down a recursive listing: its entries, their
/// widths, the next to print, and the inodes (to descend into).
struct Frame<'a> {
    entries: Vec<LsEntry>,
    inodes: Vec<Inode<'a>>,
    widths: Widths,
    next: usize,
}

impl<'a> Frame<'a> {
    fn of(dir: Inode<'a>, dir_path: &[u8], human: bool) -> Frame<'a> {
        let inodes: Vec<Inode<'a>> = dir.children().collect();
        let entries: Vec<LsEntry> = inodes
            .iter()
            .map(|c| LsEntry::of(c, join(dir_path, c.name())))
            .collect();
        let widths = Widths::over(&entries, human);
        Frame {
            entries,
            inodes,
            widths,
            next: 0,
        }
    }
}

/// Column widths over a directory's entries, as hdfs computes them.
#[derive(Clone, Copy, Debug, Default)]
struct Widths {
    replication: usize,
    owner: usize,
    group: usize,
    length: usize,
}

impl Widths {
    fn over(entries: &[LsEntry], human: bool) -> Widths {
        let mut w = Widths {
            replication: 1,
            ..Widths::default()
        };
        for e in entries {
            let r = e.replication.map_or(1, |r| r.to_string().len());
            w.replication = w.replication.max(r);
            w.owner = w.owner.max(escaped(&e.owner).chars().count());
            w.group = w.group.max(escaped(&e.group).chars().count());
            w.length = w.length.max(size_text(e.length, human).len());
        }
        w
    }
}

fn write_text_line(e: &LsEntry, w: &Widths, human: bool, out: &mut impl Write) -> io::Result<()> {
    let repl = e
        .replication
        .map_or_else(|| "-".to_string(), |r| r.to_string());
    write!(
        out,
        "{} {:>rw$} {:<ow$} {:<gw$} {:>lw$} {} {}",
        permission_string(e.kind, e.mode),
        repl,
        escaped(&e.owner),
        escaped(&e.group),
        size_text(e.length, human),
        utc_iso8601(e.mtime),
        escaped(&e.path),
        rw = w.replication + 2,
        ow = w.owner,
        gw = w.group,
        lw = w.length + 1,
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
    use nsimage_namespace::{FileSpec, PermSpec};

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
            assert_eq!(ls(&part, &p).unwrap(), ls(&whole, &p).unwrap());
            assert_eq!(stat(&part, &p).unwrap(), stat(&whole, &p).unwrap());
        }
        let l = ls(&part, &ImagePath::parse("/user/alice").unwrap()).unwrap();
        assert!(l.directory);
        assert_eq!(l.entries.len(), 2);
        assert_eq!(l.entries[1].symlink_target.as_deref(), Some(&b"/x"[..]));
        let mut text = Vec::new();
        write_listing(&l, Format::Text, &mut text).unwrap();
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "Found 2 items\n\
             -rwxr-x---   3 u g  0 1970-01-01T00:00:00Z /user/alice/f\n\
             lrwxr-x---   - u g  0 1970-01-01T00:00:00Z /user/alice/l -> /x\n"
        );
        let mut human = Vec::new();
        let big = Listing {
            directory: false,
            entries: vec![LsEntry {
                length: 1536,
                ..l.entries[0].clone()
            }],
        };
        write_listing(&big, Format::HumanText, &mut human).unwrap();
        assert_eq!(
            String::from_utf8(human).unwrap(),
            "-rwxr-x---   3 u g  1.5 KiB 1970-01-01T00:00:00Z /user/alice/f\n"
        );
        assert!(matches!(
            ls(&part, &ImagePath::parse("/data").unwrap()),
            Err(ViewError::NoSuchPath { .. })
        ));
    }
}
