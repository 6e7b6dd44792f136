//! `nsimage count`: `hdfs dfs -count [-q] [-h] [-v]` on an image, one line
//! per path (the viewer's `count` lays it out; `du` sums the subtree).

use super::du::subtree_row;
use super::memory::{open_input, MemoryLimit};
use nsimage_viewer::count;
use nsimage_viewer::paths::ImagePath;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    disable_help_flag = true,
    after_help = "Examples:\n  nsimage count fsimage /user/alice\n  nsimage count -q -h -v fsimage /data /tmp"
)]
pub struct Args {
    /// Image file.
    image: PathBuf,
    /// Absolute paths inside the image, each counted on its own line.
    #[arg(required = true)]
    paths: Vec<String>,
    /// Also the namespace and space quotas and what is left of them
    /// (`none` and `inf` where none is set), as `hdfs dfs -count -q`.
    #[arg(short = 'q', long)]
    quotas: bool,
    /// Every figure in Hadoop's binary prefixes (`30.5 M`), as `hdfs dfs
    /// -count -h`.
    #[arg(short = 'h', long)]
    human: bool,
    /// A header line naming the columns first, as `hdfs dfs -count -v`.
    #[arg(short = 'v', long)]
    header: bool,
    /// One JSON object per path on stdout instead.
    #[arg(long)]
    json: bool,
    /// Print help (`-h` is `--human` here).
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// Worker threads (default: available cores; at most 1024).
    #[arg(long, default_value_t = 0, value_parser = super::parse_threads)]
    threads: usize,
    #[command(flatten)]
    memory: MemoryLimit,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let paths = a
        .paths
        .iter()
        .map(|p| ImagePath::parse(p))
        .collect::<Result<Vec<_>, _>>()?;
    // Opened once (its index, its tree's estimate); each path is a read.
    let input = open_input(&a.image, a.memory, a.threads)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if a.header && !a.json {
        if let Err(e) = writeln!(out, "{}", count::header(a.quotas)) {
            return super::ls::finish(Err(e));
        }
    }
    for (given, path) in a.paths.iter().zip(&paths) {
        let row = subtree_row(&input, path, a.threads)?;
        let written = if a.json {
            let v = serde_json::json!({
                "path": given,
                "directories": row.usage.directories,
                "files": row.usage.files.saturating_add(row.usage.symlinks),
                "bytes": row.usage.bytes,
                "space_consumed": row.usage.space_consumed,
                "ns_quota": row.ns_quota,
                "ns_remaining": row.ns_remaining().map(|v| v.to_string()),
                "ds_quota": row.ds_quota,
                "ds_remaining": row.ds_remaining().map(|v| v.to_string()),
            });
            writeln!(out, "{v}")
        } else {
            writeln!(out, "{}", count::line(&row, a.quotas, a.human, given))
        };
        // A closed pipe (`| head`) ends the output quietly.
        if let Err(e) = written {
            return super::ls::finish(Err(e));
        }
    }
    super::ls::finish(out.flush())
}
