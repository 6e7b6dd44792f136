//! `nsimage du`: per-subtree counts, bytes, space consumed, small files and
//! quota use, like `hdfs dfs -count -q` and `du`; with `--by owner|group`,
//! the subtree's usage per user or group instead.

use nsimage_viewer::du::{self, DuOptions, Sort};
use nsimage_viewer::owners::{self, Key};
use nsimage_viewer::paths::ImagePath;
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
    let ns = super::ls::load_whole(&a.image)?;
    if let Some(by) = a.by {
        return by_key(&ns, &path, by, a.json, a.human);
    }
    let pb = super::spinner("summing subtrees");
    let report = du::du(
        &ns,
        &path,
        &DuOptions {
            depth: a.depth,
            sort: a.sort,
        },
    );
    pb.finish_and_clear();
    let report = report?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let r = if a.json {
        serde_json::to_writer(&mut out, &du::to_json(&report))
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(out))
    } else {
        du::write_text(&report, a.human, &mut out)
    };
    super::ls::finish(r.and_then(|()| out.flush()))
}

fn by_key(
    ns: &nsimage_namespace::Namespace,
    path: &ImagePath,
    by: Key,
    json: bool,
    human: bool,
) -> anyhow::Result<ExitCode> {
    let pb = super::spinner(&format!("summing per {}", by.name()));
    let report = owners::usage_by(ns, path, by);
    pb.finish_and_clear();
    let report = report?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let r = if json {
        serde_json::to_writer(&mut out, &owners::to_json(&report))
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(out))
    } else {
        owners::write_text(&report, human, &mut out)
    };
    super::ls::finish(r.and_then(|()| out.flush()))
}
