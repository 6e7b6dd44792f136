//! `nsimage diff`: what changed between two images of the same namespace,
//! matched by inode id (the logic is `nsimage_viewer::diff`).
//!
//! A path that changed only because an ancestor was renamed is not listed
//! as a rename: only inodes whose own parent or name changed are. A deleted
//! subtree lists every deleted inode.

use anyhow::{bail, Context as _};
use nsimage_loader::budget::{human_size, Budget};
use nsimage_loader::{load, LoadOptions};
use nsimage_viewer::diff;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(after_help = "\
Inodes are matched by id. Text output: one line per change, sorted by path, then a summary:
  + /path                 created (directories and symlinks marked after the path); a
                          created directory's subtree is its one line, `(directory, N
                          below)`, unless --every-inode
  - /path                 deleted, the same way
  R /old -> /new          renamed or moved: only where the inode's own parent or name
                          changed, not its descendants, whose paths changed with it
  M /path (mode 0644 -> 0600, ...)
                          modified: each attribute that changed with its old and new
                          value, and blocks +added -removed ~changed (same block id, new
                          length or generation stamp)
--summary: the summary alone. --hdfs: `hdfs snapshotDiff`'s report instead (M, +, -, R, a
tab and the path relative to the root). --json: one document {summary, created[],
deleted[], renamed[], modified[], warnings[]}, every inode listed, modified entries with
each attribute's old and new value.

Exit 1 when the images belong to different namespaces or one is corrupt; a NEW image
older than OLD (lower last txid) is compared with a warning on stderr.

Examples:
  nsimage diff store/image_00000000000000000300 store/image_00000000000000000340
  nsimage diff yesterday.fsimage today.fsimage --summary
  nsimage diff old.nsi new.nsi --hdfs | grep -c '^-'")]
pub struct Args {
    /// The older image.
    old: PathBuf,
    /// The newer image (of the same namespace).
    new: PathBuf,
    /// Print one JSON document on stdout: {summary, created[], deleted[],
    /// renamed[], modified[], warnings[]}.
    #[arg(long)]
    json: bool,
    /// The summary alone, no line per change.
    #[arg(long, conflicts_with_all = ["json", "hdfs", "every_inode"])]
    summary: bool,
    /// A line for every inode of a created or deleted subtree, not only
    /// its top.
    #[arg(long, conflicts_with_all = ["json", "hdfs"])]
    every_inode: bool,
    /// The report as `hdfs snapshotDiff` prints it.
    #[arg(long, conflicts_with = "json")]
    hdfs: bool,
    /// Worker threads of each load (default: available cores; at most
    /// 1024).
    #[arg(long, default_value_t = 0, value_parser = super::parse_threads)]
    threads: usize,
    /// Most memory the two namespaces may take together (about 72 bytes
    /// an inode each): a size (160M, 2G); a pair that needs more is refused
    /// before either is loaded, saying how much it needs. Default: the
    /// memory the machine has available (MemAvailable), or the process's
    /// cgroup limit where that is less.
    #[arg(long = "memory-limit", value_name = "SIZE", value_parser = super::memory::parse_size)]
    memory_limit: Option<u64>,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let opts = LoadOptions {
        key: super::key()?,
        md5: super::md5(),
        threads: a.threads,
        ..LoadOptions::default()
    };
    both_fit(&a, &opts)?;
    let pb = super::spinner(&format!("loading {}", a.old.display()));
    let old = load(&a.old, &opts)?.namespace;
    pb.set_message(format!("loading {}", a.new.display()));
    let new = load(&a.new, &opts)?.namespace;
    pb.set_message("comparing".to_string());
    let d = diff::diff(&old, &new)
        .with_context(|| format!("{} vs {}", a.old.display(), a.new.display()))?;
    pb.finish_and_clear();
    for w in &d.warnings {
        eprintln!("warning: {w}");
    }
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    let detail = if a.summary {
        diff::Detail::Summary
    } else if a.every_inode {
        diff::Detail::EveryInode
    } else {
        diff::Detail::Tops
    };
    let res = if a.json {
        diff::write_json(&d, &mut w)
    } else if a.hdfs {
        let (old, new) = (a.old.display().to_string(), a.new.display().to_string());
        diff::write_snapshot_diff(&d, &old, &new, &mut w)
    } else {
        diff::write_text(&d, detail, &mut w)
    };
    match res.and_then(|()| w.flush()) {
        // A closed pipe (`nsimage diff a b | head`) is not an error.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::Error::new(e).context("writing the diff to stdout"))
        }
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// Refuses the pair before either is loaded where their namespaces, held
/// together, would not fit the budget: each image's declared counts are
/// checked first, so damage is reported as damage.
fn both_fit(a: &Args, opts: &LoadOptions) -> anyhow::Result<()> {
    let budget = Budget::new(a.memory_limit);
    let key = opts.key.as_ref();
    let old = nsimage_loader::load_need(&a.old, key)?;
    let new = nsimage_loader::load_need(&a.new, key)?;
    if old.saturating_add(new) > budget.bytes() {
        nsimage_loader::check_declared(&a.old, key)?;
        nsimage_loader::check_declared(&a.new, key)?;
        bail!(
            "{} and {}: comparing them needs about {}, both namespaces at once ({} + {}), more than the memory limit of {} ({}); raise --memory-limit or use a larger machine",
            a.old.display(),
            a.new.display(),
            human_size(old.saturating_add(new)),
            human_size(old),
            human_size(new),
            human_size(budget.bytes()),
            if budget.is_given() { "--memory-limit" } else { "the memory available" }
        );
    }
    Ok(())
}
