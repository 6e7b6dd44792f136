//! `du`: per subtree, what it holds and how much of its quotas it uses,
//! like `hdfs dfs -count -q` and `du`. Rows for the path itself and its
//! subdirectories down to a depth (1: the path and its children).
//!
//! Computed in parallel: the top levels of the tree fan out over rayon,
//! each subtree below is summed serially; every count is an integer sum
//! combined in child order, so the result is exact and the same for any
//! thread count.
//!
//! Text (`NS_QUOTA` and `DS_QUOTA` are `none` and their remainders `inf`
//! where no quota is set, as in `hdfs dfs -count -q`):
//!
//! ```text
//! FILES DIRS SYMLINKS BYTES SPACE_CONSUMED SMALL_FILES NS_QUOTA REM_NS_QUOTA DS_QUOTA REM_DS_QUOTA PATH
//!    42    6        1  2320           6960          42     none          inf     none          inf /
//!    40    3        0  2320           6960          40     none          inf     none          inf /data
//!     2    2        1     0              0           2      100           95 1073741824   1073741824 /user
//! ```
//!
//! JSON, one document: `{"path","depth","sort","rows":[{"path","depth",
//! "type","files","directories","symlinks","bytes","space_consumed",
//! "small_files","namespace":{"quota","used","remaining"},"space":{"quota",
//! "used","remaining"}}]}`; the first row (before any sort) is the path
//! itself, and `quota`/`remaining` are null where no quota is set.

use crate::error::ViewError;
use crate::paths::ImagePath;
use crate::text::{hadoop_size, size_text};
use crate::walk::{join, kind_name, lossy, resolve};
use nsimage_namespace::{Attrs, Inode, InodeKind, Namespace};
use rayon::prelude::*;
use serde_json::json;
use std::io::{self, Write};

/// Levels below the path that fan out in parallel (bounded, so the
/// recursion is shallow whatever the tree's depth).
const PARALLEL_LEVELS: usize = 3;

/// What a subtree holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Files.
    pub files: u64,
    /// Directories, the subtree's top included when it is one.
    pub directories: u64,
    /// Symbolic links.
    pub symlinks: u64,
    /// Sum of the files' block lengths.
    pub bytes: u64,
    /// Sum of each file's length times its replication.
    pub space_consumed: u64,
    /// Files whose length is below their preferred block size.
    pub small_files: u64,
}

impl Usage {
    /// Inodes in the subtree, its top included: the namespace quota's
    /// measure, as HDFS counts it.
    pub fn inodes(&self) -> u64 {
        self.files
            .saturating_add(self.directories)
            .saturating_add(self.symlinks)
    }

    /// Adds `o` to these counts (saturating).
    pub fn add(&mut self, o: &Usage) {
        self.files = self.files.saturating_add(o.files);
        self.directories = self.directories.saturating_add(o.directories);
        self.symlinks = self.symlinks.saturating_add(o.symlinks);
        self.bytes = self.bytes.saturating_add(o.bytes);
        self.space_consumed = self.space_consumed.saturating_add(o.space_consumed);
        self.small_files = self.small_files.saturating_add(o.small_files);
    }

    /// One inode's own share (its children not included).
    pub fn of(inode: &Inode<'_>) -> Usage {
        Usage::of_attrs(&inode.attrs())
    }

    /// The share of an inode with these attributes.
    pub fn of_attrs(attrs: &Attrs<'_>) -> Usage {
        Usage::of_attrs_below(attrs, None)
    }

    /// The same, a file counted small when shorter than `small_below`
    /// bytes (`None`: than its preferred block size).
    pub fn of_attrs_below(attrs: &Attrs<'_>, small_below: Option<u64>) -> Usage {
        match attrs {
            Attrs::File(f) => {
                let len = f.length();
                Usage {
                    files: 1,
                    bytes: len,
                    space_consumed: len.saturating_mul(u64::from(f.replication)),
                    small_files: u64::from(len < small_below.unwrap_or(f.preferred_block_size)),
                    ..Usage::default()
                }
            }
            Attrs::Directory { .. } => Usage {
                directories: 1,
                ..Usage::default()
            },
            Attrs::Symlink { .. } => Usage {
                symlinks: 1,
                ..Usage::default()
            },
        }
    }
}

/// One row: a subtree, its usage and its quotas.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DuRow {
    /// The subtree's top.
    pub path: Vec<u8>,
    /// Levels below the path asked for (0: the path itself).
    pub depth: usize,
    /// The top's kind (a directory but for a path naming a file or link).
    pub kind: InodeKind,
    /// What the subtree holds.
    pub usage: Usage,
    /// Namespace quota (most inodes), if set.
    pub ns_quota: Option<i64>,
    /// Disk-space quota (bytes of space consumed), if set.
    pub ds_quota: Option<i64>,
}

impl DuRow {
    /// Inodes the namespace quota counts.
    pub fn ns_used(&self) -> u64 {
        self.usage.inodes()
    }
    /// Bytes the space quota counts.
    pub fn ds_used(&self) -> u64 {
        self.usage.space_consumed
    }
    /// What is left of the namespace quota (negative when over it).
    pub fn ns_remaining(&self) -> Option<i128> {
        self.ns_quota
            .map(|q| i128::from(q) - i128::from(self.ns_used()))
    }
    /// What is left of the space quota (negative when over it).
    pub fn ds_remaining(&self) -> Option<i128> {
        self.ds_quota
            .map(|q| i128::from(q) - i128::from(self.ds_used()))
    }
}

/// How rows are ordered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Sort {
    /// Depth first in name order, each directory before what it holds.
    #[default]
    Path,
    /// Most bytes first (ties by path).
    Bytes,
    /// Most files first (ties by path).
    Files,
}

impl Sort {
    fn name(self) -> &'static str {
        match self {
            Sort::Path => "path",
            Sort::Bytes => "bytes",
            Sort::Files => "files",
        }
    }
}

/// What `du` was asked.
#[derive(Clone, Copy, Debug)]
pub struct DuOptions {
    /// Rows for subdirectories down to this many levels below the path.
    pub depth: usize,
    /// Row order.
    pub sort: Sort,
    /// Rows for files and symlinks too, not only directories (as `hdfs
    /// dfs -du` lists a directory's every child).
    pub files: bool,
    /// A file is small when shorter than this many bytes (`None`: than
    /// its own preferred block size).
    pub small_below: Option<u64>,
}

impl Default for DuOptions {
    fn default() -> Self {
        DuOptions {
            depth: 1,
            sort: Sort::Path,
            files: false,
            small_below: None,
        }
    }
}

/// `du`'s answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DuReport {
    /// The path asked about.
    pub path: Vec<u8>,
    /// The depth asked for.
    pub depth: usize,
    /// The order of `rows`.
    pub sort: Sort,
    /// The rows; the path's own (the total) first unless sorted.
    pub rows: Vec<DuRow>,
}

impl DuReport {
    /// The path's own row: the whole subtree's totals.
    pub fn total(&self) -> Option<&DuRow> {
        self.rows.iter().find(|r| r.depth == 0)
    }
}

/// `du` of `path`.
pub fn du(ns: &Namespace, path: &ImagePath, opts: &DuOptions) -> Result<DuReport, ViewError> {
    let top = resolve(ns, path)?;
    let (_, mut rows) = summarize(top, path.canonical(), 0, opts);
    order(&mut rows, opts.sort);
    Ok(DuReport {
        path: path.canonical(),
        depth: opts.depth,
        sort: opts.sort,
        rows,
    })
}

fn row(inode: &Inode<'_>, path: Vec<u8>, depth: usize, usage: Usage) -> DuRow {
    DuRow::new(inode.kind(), &inode.attrs(), path, depth, usage)
}

impl DuRow {
    /// The row of an inode of `kind` with `attrs` (its quotas, if a
    /// directory with any).
    pub fn new(
        kind: InodeKind,
        attrs: &Attrs<'_>,
        path: Vec<u8>,
        depth: usize,
        usage: Usage,
    ) -> DuRow {
        let (ns_quota, ds_quota) = match *attrs {
            Attrs::Directory { ns_quota, ds_quota } => (
                (ns_quota >= 0).then_some(ns_quota),
                (ds_quota >= 0).then_some(ds_quota),
            ),
            _ => (None, None),
        };
        DuRow {
            path,
            depth,
            kind,
            usage,
            ns_quota,
            ds_quota,
        }
    }
}

/// Orders rows that are in path order by `sort` (ties by path).
pub(crate) fn order(rows: &mut [DuRow], sort: Sort) {
    match sort {
        Sort::Path => {}
        Sort::Bytes => rows.sort_by(|a, b| {
            b.usage
                .bytes
                .cmp(&a.usage.bytes)
                .then_with(|| a.path.cmp(&b.path))
        }),
        Sort::Files => rows.sort_by(|a, b| {
            b.usage
                .files
                .cmp(&a.usage.files)
                .then_with(|| a.path.cmp(&b.path))
        }),
    }
}

/// The usage of the subtree at `inode` (at `depth`) and its rows, in
/// path order: the top levels in parallel, the rest serially.
fn summarize(
    inode: Inode<'_>,
    path: Vec<u8>,
    depth: usize,
    opts: &DuOptions,
) -> (Usage, Vec<DuRow>) {
    if inode.kind() != InodeKind::Directory || depth >= PARALLEL_LEVELS {
        return serial(inode, path, depth, opts);
    }
    let kids: Vec<Inode<'_>> = inode.children().collect();
    let parts: Vec<(Usage, Vec<DuRow>)> = kids
        .par_iter()
        .map(|c| summarize(*c, join(&path, c.name()), depth + 1, opts))
        .collect();
    let mut usage = Usage::of(&inode);
    let mut rows = Vec::new();
    for (u, _) in &parts {
        usage.add(u);
    }
    if depth <= opts.depth {
        rows.push(row(&inode, path, depth, usage));
    }
    for (_, r) in parts {
        rows.extend(r);
    }
    (usage, rows)
}

/// The same, one thread, with an explicit stack (any depth).
fn serial(top: Inode<'_>, path: Vec<u8>, depth: usize, opts: &DuOptions) -> (Usage, Vec<DuRow>) {
    let max = opts.depth;
    let usage_of = |i: &Inode<'_>| Usage::of_attrs_below(&i.attrs(), opts.small_below);
    let mut rows = Vec::new();
    // A directory's row, where it is one, is reserved on the way down (so
    // rows come out in path order) and filled on the way up.
    let own_row = |rows: &mut Vec<DuRow>, inode: &Inode<'_>, path: &[u8], d: usize| {
        (d <= max && (d == 0 || opts.files || inode.kind() == InodeKind::Directory)).then(|| {
            rows.push(row(inode, path.to_vec(), d, Usage::default()));
            rows.len() - 1
        })
    };
    let top_row = own_row(&mut rows, &top, &path, depth);
    if top.kind() != InodeKind::Directory {
        let u = usage_of(&top);
        if let Some(i) = top_row {
            rows[i].usage = u;
        }
        return (u, rows);
    }
    struct Frame<I> {
        kids: I,
        usage: Usage,
        path_len: usize,
        row: Option<usize>,
    }
    let mut buf = path;
    let mut stack = vec![Frame {
        kids: top.children(),
        usage: usage_of(&top),
        path_len: buf.len(),
        row: top_row,
    }];
    loop {
        let Some(f) = stack.last_mut() else {
            unreachable!("the top frame is popped only at the end")
        };
        let Some(c) = f.kids.next() else {
            let done = stack.pop().expect("a frame is on the stack");
            if let Some(i) = done.row {
                rows[i].usage = done.usage;
            }
            match stack.last_mut() {
                Some(parent) => parent.usage.add(&done.usage),
                None => return (done.usage, rows),
            }
            continue;
        };
        if c.kind() != InodeKind::Directory {
            let u = usage_of(&c);
            f.usage.add(&u);
            let plen = f.path_len;
            let d = depth + stack.len();
            if opts.files && d <= max {
                rows.push(row(&c, join(&buf[..plen], c.name()), d, u));
            }
            continue;
        }
        buf.truncate(f.path_len);
        let d = depth + stack.len();
        if buf.last() != Some(&b'/') {
            buf.push(b'/');
        }
        buf.extend_from_slice(c.name());
        let r = own_row(&mut rows, &c, &buf, d);
        stack.push(Frame {
            kids: c.children(),
            usage: usage_of(&c),
            path_len: buf.len(),
            row: r,
        });
    }
}

/// Writes `r` as `hdfs dfs -du` prints it: one row per child of the path
/// (a report of depth 1 with `files`), or the path's own row (depth 0, as
/// `-s`, or a path naming a file); each row the length, the space
/// consumed with all replicas and the path, left-aligned in columns two
/// spaces apart, the last unpadded. With `header` (`-v`), Hadoop's
/// `SIZE`, `DISK_SPACE_CONSUMED_WITH_ALL_REPLICAS`, `FULL_PATH_NAME` line
/// first; nothing at all for a directory without children, as Hadoop
/// prints nothing.
pub fn write_hdfs(r: &DuReport, human: bool, header: bool, out: &mut impl Write) -> io::Result<()> {
    let top_is_dir = r.total().is_some_and(|t| t.kind == InodeKind::Directory);
    let level = if top_is_dir { r.depth.min(1) } else { 0 };
    let mut table: Vec<[String; 3]> = r
        .rows
        .iter()
        .filter(|x| x.depth == level)
        .map(|x| {
            [
                size_text(x.usage.bytes, human),
                size_text(x.usage.space_consumed, human),
                crate::text::escaped(&x.path).into_owned(),
            ]
        })
        .collect();
    if table.is_empty() {
        return Ok(());
    }
    if header {
        let names = [
            "SIZE",
            "DISK_SPACE_CONSUMED_WITH_ALL_REPLICAS",
            "FULL_PATH_NAME",
        ];
        table.insert(0, names.map(str::to_string));
    }
    let w0 = table
        .iter()
        .map(|c| c[0].chars().count())
        .max()
        .unwrap_or(0);
    let w1 = table
        .iter()
        .map(|c| c[1].chars().count())
        .max()
        .unwrap_or(0);
    for [a, b, c] in &table {
        writeln!(out, "{a:<w0$}  {b:<w1$}  {c}")?;
    }
    Ok(())
}

/// Writes `r` as an aligned table with a header line; with `human`, the
/// byte columns (bytes, space consumed, space quota and its remainder) in
/// Hadoop's binary prefixes (`1.5 K`).
pub fn write_text(r: &DuReport, human: bool, out: &mut impl Write) -> io::Result<()> {
    let head = [
        "FILES",
        "DIRS",
        "SYMLINKS",
        "BYTES",
        "SPACE_CONSUMED",
        "SMALL_FILES",
        "NS_QUOTA",
        "REM_NS_QUOTA",
        "DS_QUOTA",
        "REM_DS_QUOTA",
    ];
    let quota = |q: Option<i64>| q.map_or_else(|| "none".to_string(), |v| v.to_string());
    let rem = |q: Option<i128>| q.map_or_else(|| "inf".to_string(), |v| v.to_string());
    // A negative remainder (over quota) keeps its sign.
    let bytes_of = |v: i128| {
        if human {
            hadoop_size(v)
        } else {
            v.to_string()
        }
    };
    let ds_quota = |q: Option<i64>| q.map_or_else(|| "none".to_string(), |v| bytes_of(v.into()));
    let ds_rem = |q: Option<i128>| q.map_or_else(|| "inf".to_string(), bytes_of);
    let cells: Vec<[String; 10]> = r
        .rows
        .iter()
        .map(|x| {
            let u = &x.usage;
            [
                u.files.to_string(),
                u.directories.to_string(),
                u.symlinks.to_string(),
                size_text(u.bytes, human),
                size_text(u.space_consumed, human),
                u.small_files.to_string(),
                quota(x.ns_quota),
                rem(x.ns_remaining()),
                ds_quota(x.ds_quota),
                ds_rem(x.ds_remaining()),
            ]
        })
        .collect();
    let mut w = head.map(str::len);
    for c in &cells {
        for (i, s) in c.iter().enumerate() {
            w[i] = w[i].max(s.len());
        }
    }
    for (i, h) in head.iter().enumerate() {
        write!(out, "{h:>w$} ", w = w[i])?;
    }
    writeln!(out, "PATH")?;
    for (c, x) in cells.iter().zip(&r.rows) {
        for (i, s) in c.iter().enumerate() {
            write!(out, "{s:>w$} ", w = w[i])?;
        }
        writeln!(out, "{}", crate::text::escaped(&x.path))?;
    }
    Ok(())
}

/// The JSON document of `r`.
pub fn to_json(r: &DuReport) -> serde_json::Value {
    let rows: Vec<_> = r
        .rows
        .iter()
        .map(|x| {
            let u = &x.usage;
            json!({
                "path": lossy(&x.path),
                "depth": x.depth,
                "type": kind_name(x.kind),
                "files": u.files,
                "directories": u.directories,
                "symlinks": u.symlinks,
                "bytes": u.bytes,
                "space_consumed": u.space_consumed,
                "small_files": u.small_files,
                "namespace": {
                    "quota": x.ns_quota,
                    "used": x.ns_used(),
                    "remaining": x.ns_remaining().and_then(|v| i64::try_from(v).ok()),
                },
                "space": {
                    "quota": x.ds_quota,
                    "used": x.ds_used(),
                    "remaining": x.ds_remaining().and_then(|v| i64::try_from(v).ok()),
                },
            })
        })
        .collect();
    json!({
        "path": lossy(&r.path),
        "depth": r.depth,
        "sort": r.sort.name(),
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsimage_namespace::{Block, FileSpec, PermSpec, ROOT_ID};

    const P: PermSpec<'static> = PermSpec {
        user: b"u",
        group: b"g",
        mode: 0o755,
    };
    const F: FileSpec = FileSpec {
        replication: 2,
        preferred_block_size: 100,
        storage_policy: 0,
    };

    /// A bushy tree over the parallel levels, and a chain far deeper than
    /// any thread's stack would take by recursion.
    fn tree() -> (Namespace, u64) {
        let mut ns = Namespace::default();
        let mut block = 0;
        let mut files = 0;
        for a in 0..6u64 {
            let da = ns
                .mkdir_in(ROOT_ID, format!("a{a}").as_bytes(), &P, 1)
                .unwrap();
            for b in 0..5u64 {
                let db = ns.mkdir_in(da, format!("b{b}").as_bytes(), &P, 1).unwrap();
                for c in 0..4u64 {
                    let dc = ns.mkdir_in(db, format!("c{c}").as_bytes(), &P, 1).unwrap();
                    let dd = ns.mkdir_in(dc, b"d", &P, 1).unwrap();
                    for f in 0..3u64 {
                        let fi = ns
                            .create_in(dd, format!("f{f}").as_bytes(), &P, &F, 1)
                            .unwrap();
                        files += 1;
                        for _ in 0..f {
                            block += 1;
                            ns.add_block(
                                fi,
                                Block {
                                    id: block,
                                    generation_stamp: 1,
                                    length: 70,
                                },
                            )
                            .unwrap();
                        }
                    }
                }
            }
        }
        let mut d = ROOT_ID;
        for _ in 0..20_000 {
            d = ns.mkdir_in(d, b"deep", &P, 1).unwrap();
        }
        ns.create_in(d, b"bottom", &P, &F, 1).unwrap();
        (ns, files + 1)
    }

    #[test]
    fn exact_and_the_same_for_any_thread_count() {
        let (ns, files) = tree();
        let st = ns.stats();
        let opts = DuOptions {
            depth: 3,
            ..DuOptions::default()
        };
        let run = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| du(&ns, &ImagePath::root(), &opts).unwrap())
        };
        let one = run(1);
        assert_eq!(one, run(4));
        let top = one.total().unwrap();
        assert_eq!(top.usage.files, files);
        assert_eq!(top.usage.files, st.files);
        assert_eq!(top.usage.directories, st.directories);
        assert_eq!(top.usage.bytes, st.bytes);
        assert_eq!(top.usage.space_consumed, 2 * st.bytes);
        // f0 (empty), f1 (70 bytes) and the bottom file are below 100 bytes.
        assert_eq!(top.usage.small_files, 2 * 120 + 1);
        assert_eq!(top.ns_used(), st.inodes);
        // Rows: the root, 6 + 30 + 120 directories, and deep, deep/deep,
        // deep/deep/deep.
        assert_eq!(one.rows.len(), 1 + 6 + 30 + 120 + 3);
        let deep = one.rows.iter().find(|r| r.path == b"/deep").unwrap();
        assert_eq!(deep.usage.directories, 20_000);
        assert_eq!(deep.usage.files, 1);
        // Below the parallel levels too.
        let c = du(
            &ns,
            &ImagePath::parse("/a1/b2/c3").unwrap(),
            &DuOptions::default(),
        )
        .unwrap();
        assert_eq!(c.rows.len(), 2);
        assert_eq!(c.rows[0].usage.files, 3);
        assert_eq!(c.rows[0].usage.bytes, 70 * 3);
    }

    #[test]
    fn hdfs_du_rows_and_a_small_file_threshold() {
        let (ns, _) = tree();
        let d = ImagePath::parse("/a1/b2/c3/d").unwrap();
        let hdfs = |depth, header| {
            let opts = DuOptions {
                depth,
                files: true,
                ..DuOptions::default()
            };
            let mut out = Vec::new();
            write_hdfs(&du(&ns, &d, &opts).unwrap(), false, header, &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(
            hdfs(1, false),
            "0    0    /a1/b2/c3/d/f0\n70   140  /a1/b2/c3/d/f1\n140  280  /a1/b2/c3/d/f2\n"
        );
        assert_eq!(
            hdfs(0, true),
            "SIZE  DISK_SPACE_CONSUMED_WITH_ALL_REPLICAS  FULL_PATH_NAME\n\
             210   420                                    /a1/b2/c3/d\n"
        );
        // A path naming a file lists the file, as Hadoop's does.
        let f = ImagePath::parse("/a1/b2/c3/d/f2").unwrap();
        let opts = DuOptions {
            files: true,
            ..DuOptions::default()
        };
        let mut out = Vec::new();
        write_hdfs(&du(&ns, &f, &opts).unwrap(), false, false, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "140  280  /a1/b2/c3/d/f2\n"
        );
        // Small files: below each file's block size (100), or a threshold.
        let small = |small_below| {
            let opts = DuOptions {
                depth: 0,
                small_below,
                ..DuOptions::default()
            };
            du(&ns, &d, &opts).unwrap().rows[0].usage.small_files
        };
        assert_eq!(small(None), 2);
        assert_eq!(small(Some(141)), 3);
        assert_eq!(small(Some(70)), 1);
        assert_eq!(small(Some(0)), 0);
    }
}
