//! A [`Diff`] as text (one line per change, then the summary) or as one
//! JSON document.

use crate::diff::model::{
    path_order, AttrValue, Created, Deleted, Diff, Modified, Renamed, Summary,
};
use crate::text::{escaped, human_size};
use nsimage_namespace::{Block, InodeKind};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{self, Write};

/// The type's name in output: `file`, `directory`, `symlink`.
pub fn kind_name(kind: InodeKind) -> &'static str {
    match kind {
        InodeKind::File => "file",
        InodeKind::Directory => "directory",
        InodeKind::Symlink => "symlink",
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn kind_suffix(kind: InodeKind) -> &'static str {
    match kind {
        InodeKind::File => "",
        InodeKind::Directory => " (directory)",
        InodeKind::Symlink => " (symlink)",
    }
}

/// What a modified line shows in parentheses: each changed attribute
/// with its old and new values (`mode 0644 -> 0600`), then `blocks +A -R
/// ~C` (the non-zero parts).
fn modified_detail(m: &Modified) -> String {
    let mut parts: Vec<String> = m
        .changes
        .iter()
        .map(|c| format!("{} {} -> {}", c.attr.name(), c.old, c.new))
        .collect();
    if m.blocks_differ() {
        let mut b = String::from("blocks");
        for (sign, n) in [
            ('+', m.blocks_added.len()),
            ('-', m.blocks_removed.len()),
            ('~', m.blocks_changed.len()),
        ] {
            if n > 0 {
                b.push_str(&format!(" {sign}{n}"));
            }
        }
        parts.push(b);
    }
    parts.join(", ")
}

/// How much of a diff its text shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Detail {
    /// A line per change, a created or deleted subtree as one line for its
    /// top (`- /logs (directory, 8090 below)`), then the summary.
    #[default]
    Tops,
    /// A line for every inode created or deleted, then the summary.
    EveryInode,
    /// The summary alone.
    Summary,
}

/// Writes the diff as text: one line per change, sorted by path
/// ([`path_order`](crate::diff::path_order): a subtree follows its root; a rename
/// by its old path; at one path: deletes, creates, renames, then
/// modifications), then the summary. `+ /path`, `- /path`,
/// `R /old -> /new`, `M /path (mode 0644 -> 0600, blocks +1)`;
/// directories and symlinks are marked after the path, and (but with
/// [`Detail::EveryInode`]) a created or deleted directory says how many
/// inodes below it were created or deleted with it, which get no line.
pub fn write_text(d: &Diff, detail: Detail, w: &mut impl Write) -> io::Result<()> {
    if detail != Detail::Summary {
        let every = detail == Detail::EveryInode;
        // The counts below each top, which every inode's own line needs not.
        let (below_deleted, below_created) = if every {
            (HashMap::new(), HashMap::new())
        } else {
            (
                below_tops(d.deleted.iter().map(|c| (&c.path[..], c.top))),
                below_tops(d.created.iter().map(|c| (&c.path[..], c.top))),
            )
        };
        let mark = |kind, n: Option<&u64>| match (kind, n) {
            (InodeKind::Directory, Some(n)) if !every => format!(" (directory, {n} below)"),
            _ => kind_suffix(kind).to_string(),
        };
        let mut lines: Vec<(&[u8], u8, u64, String)> = Vec::with_capacity(
            d.created.len() + d.deleted.len() + d.renamed.len() + d.modified.len(),
        );
        for c in d.deleted.iter().filter(|c| every || c.top) {
            let n = below_deleted.get(&c.path[..]);
            let line = format!("- {}{}", escaped(&c.path), mark(c.kind, n));
            lines.push((&c.path, 0, c.id, line));
        }
        for c in d.created.iter().filter(|c| every || c.top) {
            let n = below_created.get(&c.path[..]);
            let line = format!("+ {}{}", escaped(&c.path), mark(c.kind, n));
            lines.push((&c.path, 1, c.id, line));
        }
        for r in &d.renamed {
            let line = format!(
                "R {} -> {}{}",
                escaped(&r.old_path),
                escaped(&r.new_path),
                kind_suffix(r.kind)
            );
            lines.push((&r.old_path, 2, r.id, line));
        }
        for m in &d.modified {
            let line = format!("M {} ({})", escaped(&m.path), modified_detail(m));
            lines.push((&m.path, 3, m.id, line));
        }
        lines.sort_by(|a, b| path_order(a.0, b.0).then((a.1, a.2).cmp(&(b.1, b.2))));
        for (_, _, _, line) in &lines {
            writeln!(w, "{line}")?;
        }
    }
    write_summary(&d.summary, w)
}

/// For each top of a created (or deleted) subtree, how many inodes below
/// it were created (deleted) with it: each entry that is not a top counts
/// for its nearest ancestor that is.
fn below_tops<'a>(
    entries: impl Iterator<Item = (&'a [u8], bool)> + Clone,
) -> HashMap<&'a [u8], u64> {
    let mut below: HashMap<&[u8], u64> = entries
        .clone()
        .filter(|(_, top)| *top)
        .map(|(p, _)| (p, 0))
        .collect();
    for (mut p, _) in entries.filter(|(_, top)| !top) {
        while let Some(up) = parent(p) {
            if let Some(n) = below.get_mut(up) {
                *n += 1;
                break;
            }
            p = up;
        }
    }
    below
}

/// The parent path of `p` (`/` for a child of the root); `None` for the
/// root.
fn parent(p: &[u8]) -> Option<&[u8]> {
    let cut = p.iter().rposition(|&c| c == b'/')?;
    (p.len() > 1).then(|| if cut == 0 { &p[..1] } else { &p[..cut] })
}

/// Writes the diff as `hdfs snapshotDiff` prints a snapshot diff report:
/// `Difference between snapshot OLD and snapshot NEW under directory /:`
/// (the images named as Hadoop names snapshots), then one entry a
/// line, its type, a tab and the path relative to the root (`.`,
/// `./dir/file`): `+` created and `-` deleted (a subtree as its top alone),
/// `R ./old -> ./new` renamed, `M` modified, and `M` for each directory
/// whose children were created, deleted or renamed, as HDFS reports it.
/// Sorted by path; at one path `M`, then `-`, `+`, `R`.
pub fn write_snapshot_diff(d: &Diff, old: &str, new: &str, w: &mut impl Write) -> io::Result<()> {
    fn rel(p: &[u8]) -> String {
        match p.strip_prefix(b"/") {
            Some(rest) if !rest.is_empty() => format!("./{}", escaped(rest)),
            _ => ".".to_string(),
        }
    }
    let mut lines: Vec<(&[u8], u8, String)> = Vec::new();
    let mut parents: Vec<&[u8]> = Vec::new();
    for c in d.deleted.iter().filter(|c| c.top) {
        lines.push((&c.path, 1, format!("-\t{}", rel(&c.path))));
        parents.extend(parent(&c.path));
    }
    for c in d.created.iter().filter(|c| c.top) {
        lines.push((&c.path, 2, format!("+\t{}", rel(&c.path))));
        parents.extend(parent(&c.path));
    }
    for r in &d.renamed {
        let line = format!("R\t{} -> {}", rel(&r.old_path), rel(&r.new_path));
        lines.push((&r.old_path, 3, line));
        parents.extend(parent(&r.old_path));
        parents.extend(parent(&r.new_path));
    }
    parents.extend(d.modified.iter().map(|m| &m.path[..]));
    parents.sort_by(|a, b| path_order(a, b));
    parents.dedup();
    for p in parents {
        lines.push((p, 0, format!("M\t{}", rel(p))));
    }
    lines.sort_by(|a, b| path_order(a.0, b.0).then(a.1.cmp(&b.1)));
    writeln!(
        w,
        "Difference between snapshot {old} and snapshot {new} under directory /:"
    )?;
    for (_, _, line) in &lines {
        writeln!(w, "{line}")?;
    }
    Ok(())
}

fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn write_summary(s: &Summary, w: &mut impl Write) -> io::Result<()> {
    writeln!(
        w,
        "summary: namespace {}, txid {} -> {}",
        s.namespace_id, s.old_txid, s.new_txid
    )?;
    let kinds = |f: u64, d: u64, l: u64| {
        format!(
            "{}, {}, {}",
            count(f, "file", "files"),
            count(d, "directory", "directories"),
            count(l, "symlink", "symlinks")
        )
    };
    writeln!(
        w,
        "  created  {} ({})",
        s.created,
        kinds(s.created_files, s.created_directories, s.created_symlinks)
    )?;
    writeln!(
        w,
        "  deleted  {} ({})",
        s.deleted,
        kinds(s.deleted_files, s.deleted_directories, s.deleted_symlinks)
    )?;
    writeln!(w, "  renamed  {}", s.renamed)?;
    writeln!(w, "  modified {}", s.modified)?;
    writeln!(
        w,
        "  blocks   +{} -{} ~{}",
        s.blocks_added, s.blocks_removed, s.blocks_changed
    )?;
    writeln!(
        w,
        "  bytes    +{} ({}) -{} ({})",
        s.bytes_added,
        human_size(s.bytes_added),
        s.bytes_removed,
        human_size(s.bytes_removed)
    )
}

/// An attribute value in JSON: times (milliseconds since the epoch),
/// numbers and quotas (-1: none) as numbers; the mode as an octal string
/// (`"0755"`); text as a string.
fn value(v: &AttrValue) -> Value {
    match v {
        AttrValue::Time(n) | AttrValue::Number(n) => Value::from(*n),
        AttrValue::Quota(q) => Value::from(*q),
        AttrValue::Mode(_) => Value::from(v.to_string()),
        AttrValue::Text(t) => Value::from(t.as_str()),
    }
}

fn block(b: &Block) -> Value {
    json!({"id": b.id, "generation_stamp": b.generation_stamp, "length": b.length})
}

/// The summary as a JSON object.
fn summary_json(s: &Summary) -> Value {
    json!({
        "namespace_id": s.namespace_id,
        "old_txid": s.old_txid,
        "new_txid": s.new_txid,
        "created": s.created,
        "created_files": s.created_files,
        "created_directories": s.created_directories,
        "created_symlinks": s.created_symlinks,
        "deleted": s.deleted,
        "deleted_files": s.deleted_files,
        "deleted_directories": s.deleted_directories,
        "deleted_symlinks": s.deleted_symlinks,
        "renamed": s.renamed,
        "modified": s.modified,
        "blocks_added": s.blocks_added,
        "blocks_removed": s.blocks_removed,
        "blocks_changed": s.blocks_changed,
        "bytes_added": s.bytes_added,
        "bytes_removed": s.bytes_removed,
    })
}

fn created_json(c: &Created) -> Value {
    json!({"id": c.id, "path": lossy(&c.path), "type": kind_name(c.kind),
           "blocks": c.blocks, "bytes": c.bytes, "top": c.top})
}

fn deleted_json(c: &Deleted) -> Value {
    json!({"id": c.id, "path": lossy(&c.path), "type": kind_name(c.kind),
           "blocks": c.blocks, "bytes": c.bytes, "top": c.top})
}

fn renamed_json(r: &Renamed) -> Value {
    json!({"id": r.id, "old_path": lossy(&r.old_path), "new_path": lossy(&r.new_path),
           "type": kind_name(r.kind), "moved": r.moved})
}

fn modified_json(m: &Modified) -> Value {
    let changes: Vec<Value> = m
        .changes
        .iter()
        .map(|c| json!({"attr": c.attr.name(), "old": value(&c.old), "new": value(&c.new)}))
        .collect();
    let changed: Vec<Value> = m
        .blocks_changed
        .iter()
        .map(|c| {
            json!({"id": c.new.id,
                   "old_generation_stamp": c.old.generation_stamp,
                   "new_generation_stamp": c.new.generation_stamp,
                   "old_length": c.old.length, "new_length": c.new.length})
        })
        .collect();
    json!({
        "id": m.id,
        "path": lossy(&m.path),
        "type": kind_name(m.kind),
        "attrs": m.changes.iter().map(|c| c.attr.name()).collect::<Vec<_>>(),
        "changes": changes,
        "blocks_added": m.blocks_added.iter().map(block).collect::<Vec<_>>(),
        "blocks_removed": m.blocks_removed.iter().map(block).collect::<Vec<_>>(),
        "blocks_changed": changed,
    })
}

/// The diff as one JSON value: `{summary, created[], deleted[],
/// renamed[], modified[], warnings[]}`, each list sorted as in [`Diff`]
/// (keys inside an object in alphabetical order).
pub fn to_json(d: &Diff) -> Value {
    json!({
        "summary": summary_json(&d.summary),
        "created": d.created.iter().map(created_json).collect::<Vec<_>>(),
        "deleted": d.deleted.iter().map(deleted_json).collect::<Vec<_>>(),
        "renamed": d.renamed.iter().map(renamed_json).collect::<Vec<_>>(),
        "modified": d.modified.iter().map(modified_json).collect::<Vec<_>>(),
        "warnings": d.warnings,
    })
}

/// Writes the same document as [`to_json`], one entry at a time (no
/// document-sized value in memory), with the top-level keys in the order
/// summary, created, deleted, renamed, modified, warnings and one list
/// entry per line; then a newline.
pub fn write_json(d: &Diff, w: &mut impl Write) -> io::Result<()> {
    fn list<T>(
        w: &mut impl Write,
        key: &str,
        items: &[T],
        f: impl Fn(&T) -> Value,
    ) -> io::Result<()> {
        write!(w, ",\n\"{key}\": [")?;
        for (i, item) in items.iter().enumerate() {
            w.write_all(if i == 0 { b"\n  " } else { b",\n  " })?;
            serde_json::to_writer(&mut *w, &f(item))?;
        }
        w.write_all(if items.is_empty() { b"]" } else { b"\n]" })
    }
    w.write_all(b"{\"summary\": ")?;
    serde_json::to_writer(&mut *w, &summary_json(&d.summary))?;
    list(w, "created", &d.created, created_json)?;
    list(w, "deleted", &d.deleted, deleted_json)?;
    list(w, "renamed", &d.renamed, renamed_json)?;
    list(w, "modified", &d.modified, modified_json)?;
    list(w, "warnings", &d.warnings, |s| Value::from(s.as_str()))?;
    w.write_all(b"}\n")
}
