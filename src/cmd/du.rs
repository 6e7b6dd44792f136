//! `nsimage du`: per-subtree counts, bytes, space consumed, small files and
//! quota use, like `hdfs dfs -count -q` and `du`; with `--by owner|group`,
//! the subtree's usage per user or group instead. How the image is read
//! (streamed in bounded memory, a one-path lookup, a whole load) is the
//! viewer's [`Input`]'s choice.

use super::memory::{open_input, report, MemoryLimit};
use nsimage_namespace::Namespace;
use nsimage_viewer::du::{self, DuOptions, DuReport, DuRow, Sort};
use nsimage_viewer::input::{Input, Query};
use nsimage_viewer::owners::{self, Key, OwnerReport};
use nsimage_viewer::paths::ImagePath;
use nsimage_viewer::streamed::{self, Fallback};
use nsimage_viewer::ViewError;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    disable_help_flag = true,
    after_help = "Columns: FILES, DIRS (the path's own included) and SYMLINKS in the subtree; BYTES, \
                  the files' lengths; SPACE_CONSUMED, each length times its replication; \
                  SMALL_FILES, files shorter than their preferred block size or --small-below \
                  (each takes a block and a NameNode object for less than a block of data); \
                  NS_QUOTA and DS_QUOTA, the namespace (inodes) and space (bytes consumed) quotas, \
                  and REM_ what is left (none/inf where unset).\n\nWith --hdfs, -s or -v, the rows \
                  of `hdfs dfs -du`: SIZE, DISK_SPACE_CONSUMED_WITH_ALL_REPLICAS and \
                  FULL_PATH_NAME for each child of the path (files too), or with -s for the path \
                  itself; the header line only with -v. Snapshots are not counted (as -x).\n\n\
                  Examples:\n  nsimage du fsimage /user -d 1 --sort bytes\n  nsimage du fsimage \
                  /data -h\n  nsimage du fsimage / --by owner\n  nsimage du fsimage /user -s -h \
                  -v\n  nsimage du fsimage /data --small-below 16M"
)]
pub struct Args {
    /// Image file.
    image: PathBuf,
    /// Absolute path inside the image.
    #[arg(default_value = "/")]
    path: String,
    /// Rows for subdirectories down to this many levels below the path
    /// (0: the path alone).
    #[arg(short = 'd', long, default_value_t = 1)]
    depth: usize,
    /// Row order: path (depth first), bytes or files (most first).
    #[arg(long, default_value = "path", value_parser = parse_sort)]
    sort: Sort,
    /// One row per owning user or group instead of per subdirectory
    /// (most bytes first).
    #[arg(long, value_parser = parse_key, conflicts_with_all = ["depth", "sort"])]
    by: Option<Key>,
    /// `hdfs dfs -du`'s rows: size, space consumed and path of each child
    /// of the path.
    #[arg(long, conflicts_with_all = ["by", "depth", "sort", "json"])]
    hdfs: bool,
    /// `hdfs dfs -du -s`: one row, the path's own total.
    #[arg(short = 's', long, conflicts_with_all = ["by", "depth", "sort", "json"])]
    summary: bool,
    /// `hdfs dfs -du -v`: a header line over the rows.
    #[arg(short = 'v', long, conflicts_with_all = ["by", "depth", "sort", "json"])]
    header: bool,
    /// A file counts as small when shorter than this (1MB, 16MiB, bytes);
    /// by default, when shorter than its own preferred block size.
    #[arg(long, value_name = "SIZE", value_parser = super::memory::parse_size)]
    small_below: Option<u64>,
    /// Print help (`-h` is `--human` here).
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// Sizes as `hdfs dfs -h` prints them (binary prefixes, one
    /// decimal: `1.5 K`, `9.7 T`) instead of byte counts.
    #[arg(short = 'h', long)]
    human: bool,
    /// One JSON document on stdout.
    #[arg(long)]
    json: bool,
    /// Worker threads (default: available cores; at most 1024).
    #[arg(long, default_value_t = 0, value_parser = super::parse_threads)]
    threads: usize,
    #[command(flatten)]
    memory: MemoryLimit,
}

fn parse_key(s: &str) -> Result<Key, String> {
    match s {
        "owner" | "user" => Ok(Key::Owner),
        "group" => Ok(Key::Group),
        _ => Err(format!("unknown key {s:?} (owner or group)")),
    }
}

fn parse_sort(s: &str) -> Result<Sort, String> {
    match s {
        "path" => Ok(Sort::Path),
        "bytes" => Ok(Sort::Bytes),
        "files" => Ok(Sort::Files),
        _ => Err(format!("unknown sort {s:?} (path, bytes or files)")),
    }
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let path = ImagePath::parse(&a.path)?;
    let hdfs = a.hdfs || a.summary || a.header;
    let opts = DuOptions {
        depth: match (hdfs, a.summary) {
            (false, _) => a.depth,
            (true, true) => 0,
            (true, false) => 1,
        },
        sort: a.sort,
        files: hdfs,
        small_below: a.small_below,
    };
    let pb = super::spinner(&match a.by {
        Some(by) => format!("summing per {}", by.name()),
        None => "summing subtrees".to_string(),
    });
    let answer = answer(&a, &path, &opts);
    pb.finish_and_clear();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let r = match answer? {
        Answer::ByKey(report) if a.json => {
            serde_json::to_writer(&mut out, &owners::to_json(&report))
                .map_err(std::io::Error::from)
                .and_then(|()| writeln!(out))
        }
        Answer::ByKey(report) => owners::write_text(&report, a.human, &mut out),
        Answer::Tree(report) if a.json => serde_json::to_writer(&mut out, &du::to_json(&report))
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(out)),
        Answer::Tree(report) if hdfs => du::write_hdfs(&report, a.human, a.header, &mut out),
        Answer::Tree(report) => du::write_text(&report, a.human, &mut out),
    };
    super::ls::finish(r.and_then(|()| out.flush()))
}

/// A report of either kind.
enum Answer {
    Tree(DuReport),
    ByKey(OwnerReport),
}

/// `du` or `du --by` of a subtree, as a question the viewer's [`Input`]
/// answers (streamed, from a one-path lookup, or from a whole load).
struct Du<'a> {
    path: &'a ImagePath,
    opts: &'a DuOptions,
    by: Option<Key>,
    threads: usize,
}

impl Query for Du<'_> {
    type Answer = Answer;
    type Error = ViewError;

    fn subtree(&self) -> Option<&ImagePath> {
        Some(self.path)
    }

    fn streamed(&mut self, input: &Input) -> Result<Result<Answer, Fallback>, ViewError> {
        let src = input.source();
        Ok(match self.by {
            Some(by) => streamed::owners::usage_by_streamed(
                src,
                self.path,
                by,
                self.opts.small_below,
                self.threads,
            )?
            .map(Answer::ByKey),
            None => streamed::du::du_streamed(src, self.path, self.opts, self.threads)?
                .map(Answer::Tree),
        })
    }

    fn loaded(&mut self, ns: &Namespace) -> Result<Answer, ViewError> {
        Ok(match self.by {
            Some(by) => Answer::ByKey(owners::usage_by(ns, self.path, by, self.opts.small_below)?),
            None => Answer::Tree(du::du(ns, self.path, self.opts)?),
        })
    }
}

/// The report, read however the input decides.
fn answer(a: &Args, path: &ImagePath, opts: &DuOptions) -> anyhow::Result<Answer> {
    let input = open_input(&a.image, a.memory, a.threads)?;
    read(&input, path, opts, a.by, a.threads)
}

/// `du` (or `du --by`) of `path` from `input`, read however it decides.
fn read(
    input: &Input,
    path: &ImagePath,
    opts: &DuOptions,
    by: Option<Key>,
    threads: usize,
) -> anyhow::Result<Answer> {
    let (answer, read) = input.read(&mut Du {
        path,
        opts,
        by,
        threads,
    })?;
    report(&read);
    Ok(answer)
}

/// The row of `path`'s whole subtree in `input` (what `count` prints),
/// read however the input decides.
pub fn subtree_row(input: &Input, path: &ImagePath, threads: usize) -> anyhow::Result<DuRow> {
    let opts = DuOptions {
        depth: 0,
        ..DuOptions::default()
    };
    match read(input, path, &opts, None, threads)? {
        Answer::Tree(r) => r
            .rows
            .into_iter()
            .next()
            .ok_or_else(|| anyhow::anyhow!("no row for {}", path.given())),
        Answer::ByKey(_) => anyhow::bail!("a report per owner where one per subtree was asked"),
    }
}
