//! `nsimage journal dump`: the offline edits viewer, for one segment or a
//! whole store.

use nsimage_store::edit::describe;
use nsimage_store::fs::Fs as _;
use nsimage_store::journal::{self, Segment};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Print the ops of a journal segment, or of every segment of a store.
    #[command(
        after_help = "Examples:\n  nsimage journal dump store/\n  nsimage journal dump store/edits_00000000000000000301-00000000000000000400 --json"
    )]
    Dump {
        /// A store directory (every segment, in txid order) or one
        /// segment file.
        path: PathBuf,
        /// JSON lines on stdout, one object per op.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: Cmd) -> anyhow::Result<ExitCode> {
    let Cmd::Dump { path, json } = cmd;
    let fs = nsimage_store::fs::RealFs::default();
    let key = super::key()?;
    // One segment file goes by its header (plain, or sealed: then the key
    // is needed); a store's segments must all be of the store's kind.
    let mut sealing = journal::Sealing {
        expect: None,
        key: key.clone(),
    };
    let mut segments: Vec<Segment> = if path.is_dir() {
        // A store: exit 2 with a message for a directory that is not one.
        let at_rest = nsimage_store::Store::at_rest_of(&path)?;
        // An encrypted store without its key, or with another: exit 1
        // before any segment is read.
        at_rest.check_key(&path, key.as_ref())?;
        sealing = nsimage_store::Store::journal_sealing(&at_rest, key.as_ref());
        let names = fs
            .list(&path)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        let mut v: Vec<Segment> = names
            .iter()
            .filter_map(|n| Segment::parse(&path, n))
            .collect();
        v.sort_by_key(|s| (s.first, s.last.is_none()));
        v
    } else {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = path.parent().unwrap_or(std::path::Path::new("."));
        vec![Segment::parse(dir, &name)
            .ok_or_else(|| anyhow::anyhow!("{}: not a journal segment name", path.display()))?]
    };
    segments.dedup();
    for seg in &segments {
        let name = seg.name();
        let opts = journal::ReadOptions {
            open: seg.last.is_none(),
            sealing: &sealing,
            bulk_limit: nsimage_store::StoreOptions::default().bulk_replay_bytes,
        };
        let r = journal::read(journal::Source::File(&fs), seg, &opts, &mut |_, op| {
            let op = op.to_owned();
            if json {
                let text = describe(&op);
                let body = text.trim_start().split_once(' ').map_or("", |x| x.1);
                out!(
                    "{}",
                    serde_json::json!({"segment": name, "txid": op.txid, "op": body})
                );
            } else {
                // Names from the segment, safe on a terminal.
                out!(
                    "{}",
                    nsimage_viewer::text::escaped(describe(&op).as_bytes())
                );
            }
            Ok(())
        })?;
        if r.torn_bytes > 0 {
            eprintln!(
                "{}: {} torn bytes at the end",
                seg.path.display(),
                r.torn_bytes
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
