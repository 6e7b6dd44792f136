//! `nsimage du`: per-subtree counts, bytes, space consumed, small files and
//! quota use, like `hdfs dfs -count -q` and `du`; with `--by owner|group`,
//! the subtree's usage per user or group instead. An image (nsimage
//! or Hadoop) is streamed in bounded memory (nsimage_viewer::streamed);
//! one the stream cannot take is loaded whole.

use super::lookup::load_path;
use super::memory::{open_streamed, MemoryLimit};
use nsimage_namespace::Namespace;
use nsimage_viewer::du::{self, DuOptions, DuReport, Sort};
use nsimage_viewer::lookup::PathOptions;
use nsimage_viewer::owners::{self, Key, OwnerReport};
use nsimage_viewer::paths::ImagePath;
use nsimage_viewer::streamed::{self, Fallback};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(disable_help_flag = true)]
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
    /// Print help (`-h` is `--human` here).
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// Sizes in binary units (`1.5 KiB`, `9.7 TiB`) instead of byte
    /// counts, as `hdfs dfs -du -h`.
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
    let opts = DuOptions {
        depth: a.depth,
        sort: a.sort,
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
        Answer::Tree(report) => du::write_text(&report, a.human, &mut out),
    };
    super::ls::finish(r.and_then(|()| out.flush()))
}

/// A report of either kind.
enum Answer {
    Tree(DuReport),
    ByKey(OwnerReport),
}

/// The report: streamed from the image; from a one-path lookup where the
/// path is not a directory with children; from the whole namespace of an
/// image the stream cannot take.
fn answer(a: &Args, path: &ImagePath, opts: &DuOptions) -> anyhow::Result<Answer> {
    let whole = |ns: &Namespace| -> anyhow::Result<Answer> {
        Ok(match a.by {
            Some(by) => Answer::ByKey(owners::usage_by(ns, path, by)?),
            None => Answer::Tree(du::du(ns, path, opts)?),
        })
    };
    if let Some(src) = open_streamed(&a.image, a.memory)? {
        let streamed = match a.by {
            Some(by) => {
                streamed::owners::usage_by_streamed(&src, path, by, a.threads)?.map(Answer::ByKey)
            }
            None => streamed::du::du_streamed(&src, path, opts, a.threads)?.map(Answer::Tree),
        };
        match streamed {
            Ok(answer) => return Ok(answer),
            Err(Fallback::NotATree) => {
                let lookup = PathOptions {
                    with_children: true,
                    key: super::key()?,
                };
                return whole(&load_path(&a.image, path, &lookup)?.namespace);
            }
            Err(Fallback::Unstreamable) => a.memory.check_load(&src, &a.image)?,
        }
    }
    whole(&super::ls::load_whole(&a.image)?)
}
