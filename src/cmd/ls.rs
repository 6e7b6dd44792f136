//! `nsimage ls`: list a directory of an image (or one inode), like `hdfs
//! dfs -ls`, from a one-path lookup; `-R` lists everything below it, read
//! through the viewer's [`Input`] (from the whole namespace: see
//! [`Recursive`]).

use super::memory::{open_input, MemoryLimit};
use nsimage_namespace::Namespace;
use nsimage_viewer::input::{Input, Query};
use nsimage_viewer::ls::{self, Format, LsStyle, Order};
use nsimage_viewer::paths::ImagePath;
use nsimage_viewer::streamed::Fallback;
use nsimage_viewer::ViewError;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    disable_help_flag = true,
    after_help = "Lines as `hdfs dfs -ls` prints them: permission (`+` where an ACL is set), \
                  replication (`-` but for files), owner, group, length, time (`yyyy-MM-dd \
                  HH:mm`, UTC) and path; a symlink adds `-> TARGET`.\n\nExamples:\n  nsimage ls \
                  fsimage /user\n  nsimage ls fsimage /data -t -h\n  nsimage ls fsimage / -R -C \
                  | grep part-\n  nsimage ls fsimage /tmp -d"
)]
pub struct Args {
    /// Image file.
    image: PathBuf,
    /// Absolute path inside the image.
    #[arg(default_value = "/")]
    path: String,
    /// List everything below the path, depth first (each directory in
    /// name order, or as -t/-S/-r say).
    #[arg(short = 'R', long)]
    recursive: bool,
    /// A directory is listed as itself, not its entries (`-ls -d`).
    #[arg(short = 'd', long, conflicts_with = "recursive")]
    directory: bool,
    /// The paths alone, one per line (`-ls -C`).
    #[arg(short = 'C', long = "paths-only", conflicts_with = "json")]
    paths_only: bool,
    /// Newest first, by modification time (access time with -u).
    #[arg(short = 't', long = "sort-time")]
    sort_time: bool,
    /// Largest first.
    #[arg(short = 'S', long = "sort-size", conflicts_with = "sort_time")]
    sort_size: bool,
    /// The order reversed (ties keep name order).
    #[arg(short = 'r', long)]
    reverse: bool,
    /// Access times shown and sorted on, not modification times (files
    /// only: a directory's is 0).
    #[arg(short = 'u', long)]
    atime: bool,
    /// Print help (`-h` is `--human` here).
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// Sizes as `hdfs dfs -h` prints them (binary prefixes, one
    /// decimal: `1.5 K`, `9.7 T`) instead of byte counts.
    #[arg(short = 'h', long)]
    human: bool,
    /// JSON lines on stdout, one object per entry.
    #[arg(long)]
    json: bool,
    /// Worker threads of a recursive listing's load (default: available
    /// cores; at most 1024).
    #[arg(long, default_value_t = 0, value_parser = super::parse_threads)]
    threads: usize,
    #[command(flatten)]
    memory: MemoryLimit,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let path = ImagePath::parse(&a.path)?;
    let style = LsStyle {
        format: if a.json {
            Format::JsonLines
        } else if a.paths_only {
            Format::Paths
        } else {
            Format::Text
        },
        human: a.human,
        order: if a.sort_time {
            Order::Time
        } else if a.sort_size {
            Order::Size
        } else {
            Order::Name
        },
        reverse: a.reverse,
        atime: a.atime,
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if a.recursive {
        let input = open_input(&a.image, a.memory, a.threads)?;
        let mut q = Recursive {
            path: &path,
            style,
            out: &mut out,
        };
        return match input.read(&mut q) {
            Err(ViewError::Io { source, .. }) => finish(Err(source)),
            r => {
                r?;
                finish(out.flush())
            }
        };
    }
    // One path and its children: only the pieces on the way are read
    // (images without a NAME_INDEX section are loaded whole).
    let opts = nsimage_viewer::lookup::PathOptions {
        with_children: !a.directory,
        key: super::key()?,
        budget: Some(a.memory.budget()),
        md5: super::md5(),
    };
    let view = super::lookup::load_path(&a.image, &path, &opts)?;
    let listing = ls::ls(&view.namespace, &path, a.directory)?;
    finish(ls::write_listing(&listing, style, &mut out).and_then(|()| out.flush()))
}

/// `ls -R`, as a question the viewer's [`Input`] answers from the whole
/// namespace: its order (depth first, each directory's children by name,
/// every path in full) needs every name at once, which the stream's tree
/// does not keep (it holds directories' names only, and a file's name is
/// read with its INODE record, in file order); sorting the streamed
/// entries instead would hold as much as the load. The input refuses the
/// load, before any output, where it would not fit the memory limit.
struct Recursive<'a, W: Write> {
    path: &'a ImagePath,
    style: LsStyle,
    out: &'a mut W,
}

impl<W: Write> Query for Recursive<'_, W> {
    type Answer = ();
    type Error = ViewError;

    fn streams(&self) -> bool {
        false
    }

    fn streamed(&mut self, _: &Input) -> Result<Result<(), Fallback>, ViewError> {
        Ok(Err(Fallback::Unstreamable))
    }

    fn loaded(&mut self, ns: &Namespace) -> Result<(), ViewError> {
        ls::write_recursive(ns, self.path, self.style, self.out).map(|_| ())
    }
}

/// The end of a listing on stdout: a reader that went away (`| head`) is
/// not an error; any other write error is an I/O error (exit 2).
pub(super) fn finish(r: std::io::Result<()>) -> anyhow::Result<ExitCode> {
    match r {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(anyhow::Error::new(e).context("writing to stdout")),
    }
}
