//! `nsimage find`: inodes below a path by name, type, size, time or owner.
//! Streamed, the matches come in file order (nsimage_viewer::streamed::find);
//! from a namespace (`--sorted`, a path the stream cannot take, an image
//! it cannot take), depth first by name. The viewer's [`Input`] decides
//! which.

use super::memory::{open_input, report, MemoryLimit};
use nsimage_namespace::{InodeKind, Namespace};
use nsimage_viewer::find::{self, FindFormat, FindOptions, SizeFilter};
use nsimage_viewer::input::{Input, Query};
use nsimage_viewer::paths::ImagePath;
use nsimage_viewer::streamed::{self, Fallback};
use nsimage_viewer::ViewError;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  nsimage find fsimage /data --name '*.tmp' --type f\n  \
                        nsimage find fsimage / --type f --atime-before 2024-01-01 --count   \
                        # cold files\n  nsimage find fsimage /logs --group etl --print0 | xargs -0 echo"
)]
pub struct Args {
    /// Image file.
    image: PathBuf,
    /// Absolute path inside the image where the search starts.
    #[arg(default_value = "/")]
    path: String,
    /// Shell glob over the inode's own name (`*.log`, `part-0?`, `{a,b}*`).
    #[arg(long)]
    name: Option<String>,
    /// Only files (f), directories (d) or symlinks (l).
    #[arg(long = "type", value_parser = parse_kind)]
    kind: Option<InodeKind>,
    /// Length more than (+N), less than (-N) or exactly (N) N bytes, N a
    /// size as every option takes one: a binary unit K, M, G, T or P, any
    /// case (`1M`, `1MB` and `1MiB` alike).
    #[arg(long, allow_hyphen_values = true, value_parser = SizeFilter::parse)]
    size: Option<SizeFilter>,
    /// Modified before this time: ISO 8601 UTC (2024-01-31,
    /// 2024-01-31T12:00:00Z) or milliseconds since the epoch.
    #[arg(long, value_parser = find::parse_time)]
    mtime_before: Option<u64>,
    /// Modified after this time (the same forms).
    #[arg(long, value_parser = find::parse_time)]
    mtime_after: Option<u64>,
    /// Files last read before this time (the same forms): the cold data.
    /// Directories and symlinks have no access time and never match.
    #[arg(long, value_parser = find::parse_time)]
    atime_before: Option<u64>,
    /// Files last read after this time (the same forms).
    #[arg(long, value_parser = find::parse_time)]
    atime_after: Option<u64>,
    /// Owned by this user.
    #[arg(long)]
    user: Option<String>,
    /// Of this group.
    #[arg(long)]
    group: Option<String>,
    /// JSON lines on stdout, one object per match.
    #[arg(long, conflicts_with_all = ["print0", "count"])]
    json: bool,
    /// Each path followed by a NUL instead of a newline, unescaped (for
    /// `xargs -0`).
    #[arg(long, conflicts_with = "count")]
    print0: bool,
    /// Only the number of matches.
    #[arg(long)]
    count: bool,
    /// Matches depth first in name order (loads the whole namespace).
    /// Without it, an nsimage image is streamed in bounded memory and its
    /// matches come in the image's file order (inode id order).
    #[arg(long)]
    sorted: bool,
    /// Worker threads (default: available cores; at most 1024).
    #[arg(long, default_value_t = 0, value_parser = super::parse_threads)]
    threads: usize,
    #[command(flatten)]
    memory: MemoryLimit,
}

fn parse_kind(s: &str) -> Result<InodeKind, String> {
    match s {
        "f" => Ok(InodeKind::File),
        "d" => Ok(InodeKind::Directory),
        "l" => Ok(InodeKind::Symlink),
        _ => Err(format!("unknown type {s:?} (f, d or l)")),
    }
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let path = ImagePath::parse(&a.path)?;
    let name = match &a.name {
        Some(g) => Some(FindOptions::glob(g).map_err(|e| anyhow::anyhow!("--name {e}"))?),
        None => None,
    };
    let opts = FindOptions {
        name,
        kind: a.kind,
        size: a.size,
        mtime_before: a.mtime_before,
        mtime_after: a.mtime_after,
        atime_before: a.atime_before,
        atime_after: a.atime_after,
        user: a.user.map(String::into_bytes),
        group: a.group.map(String::into_bytes),
    };
    let format = if a.json {
        FindFormat::Json
    } else if a.print0 {
        FindFormat::Print0
    } else {
        FindFormat::Lines
    };
    let input = open_input(&a.image, a.memory, a.threads)?;
    let mut find = Find {
        path: &path,
        opts: &opts,
        format,
        count: a.count,
        sorted: a.sorted,
        threads: a.threads,
    };
    let (code, read) = input.read(&mut find)?;
    report(&read);
    Ok(code)
}

/// `find` below a path, as a question the viewer's [`Input`] answers:
/// streamed (matches in file order), or from a namespace (a one-path
/// lookup's or the whole image's, depth first by name); `--sorted` never
/// streams.
struct Find<'a> {
    path: &'a ImagePath,
    opts: &'a FindOptions,
    format: FindFormat,
    /// Only the number of matches is printed.
    count: bool,
    sorted: bool,
    threads: usize,
}

impl Query for Find<'_> {
    type Answer = ExitCode;
    type Error = anyhow::Error;

    fn streams(&self) -> bool {
        !self.sorted
    }

    fn subtree(&self) -> Option<&ImagePath> {
        Some(self.path)
    }

    fn streamed(&mut self, input: &Input) -> anyhow::Result<Result<ExitCode, Fallback>> {
        let mut out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout());
        let mut sink = std::io::sink();
        let r = streamed::find::find_streamed(
            input.source(),
            self.path,
            self.opts,
            self.format,
            self.threads,
            if self.count { &mut sink } else { &mut out },
            std::path::Path::new("<stdout>"),
        );
        match r {
            Ok(Ok(stats)) if self.count => {
                super::ls::finish(writeln!(out, "{}", stats.matches).and_then(|()| out.flush()))
                    .map(Ok)
            }
            Ok(Ok(_)) => Ok(Ok(ExitCode::SUCCESS)),
            Ok(Err(fallback)) => Ok(Err(fallback)),
            Err(ViewError::Io { source, .. }) => super::ls::finish(Err(source)).map(Ok),
            Err(e) => Err(e.into()),
        }
    }

    fn loaded(&mut self, ns: &Namespace) -> anyhow::Result<ExitCode> {
        walk(ns, self.path, self.opts, self.format, self.count)
    }
}

/// The matches of a walk of `ns`, depth first in name order.
fn walk(
    ns: &Namespace,
    path: &ImagePath,
    opts: &FindOptions,
    format: FindFormat,
    count: bool,
) -> anyhow::Result<ExitCode> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    // A write error stops the walk and is told apart from a lookup error.
    let mut write_err = None;
    let mut matches = 0u64;
    let r = find::find_each(ns, path, opts, |f| {
        matches += 1;
        if count {
            return Ok(());
        }
        find::write_found(f, format, &mut out).map_err(|e| {
            write_err = Some(e);
            Stop::Write
        })
    });
    match r {
        Ok(()) if count => super::ls::finish(writeln!(out, "{matches}").and_then(|()| out.flush())),
        Ok(()) => super::ls::finish(out.flush()),
        Err(Stop::View(e)) => Err(e.into()),
        Err(Stop::Write) => super::ls::finish(Err(write_err.expect("set with Stop::Write"))),
    }
}

/// Why a search stopped early.
enum Stop {
    View(nsimage_viewer::ViewError),
    Write,
}

impl From<nsimage_viewer::ViewError> for Stop {
    fn from(e: nsimage_viewer::ViewError) -> Self {
        Stop::View(e)
    }
}
