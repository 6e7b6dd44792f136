//! `nsimage peer-load` (hidden): loads a namespace from one of the peer
//! formats the bench compares against, reporting like `load --json`.

use crate::mem;
use nsimage_testkit::peers::{jsonl, sqlite};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// jsonl or sqlite.
    #[arg(long)]
    format: String,
    file: PathBuf,
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let rss_before = mem::rss_bytes();
    let allocs_before = crate::allocations();
    let t = Instant::now();
    let ns = match a.format.as_str() {
        "jsonl" => jsonl::load(&a.file)?,
        "sqlite" => sqlite::load(&a.file)?,
        f => anyhow::bail!("unknown peer format {f:?} (jsonl or sqlite)"),
    };
    let seconds = t.elapsed().as_secs_f64();
    let allocations = crate::allocations() - allocs_before;
    let rss_after = mem::rss_bytes();
    let st = ns.stats();
    let per_inode = |v: u64| v as f64 / st.inodes.max(1) as f64;
    let mut m = super::stats_json(&st, &ns.digest().to_string(), seconds);
    let extra = serde_json::json!({
        "threads": 1,
        "mode": "serial",
        "read": a.format,
        "peak_rss_bytes": mem::peak_rss_bytes(),
        "resident_bytes_per_inode": per_inode(rss_after.saturating_sub(rss_before)),
        "allocations_per_inode": per_inode(allocations as u64),
    });
    if let serde_json::Value::Object(e) = extra {
        m.extend(e);
    }
    if a.json {
        out!("{}", serde_json::Value::Object(m));
    } else {
        out!(
            "{}: {} in {seconds:.3} s",
            a.file.display(),
            super::stats_text(&st, &ns.digest().to_string())
        );
    }
    Ok(ExitCode::SUCCESS)
}
