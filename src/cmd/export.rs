//! `nsimage export`: every inode of an image as Parquet (nsimage_export),
//! one file, or a dataset of `part-NNNNN.parquet` files when `-o` names a
//! directory (an existing one, or a path ending in `/`). Streamed in
//! bounded memory (nsimage_export::export_streamed_to_path) or from the
//! whole namespace, as the viewer's [`Input`] decides.

use super::memory::{open_input, MemoryLimit};
use super::progress::LoadBar;
use nsimage_export::{
    export_streamed_to_path, export_to_path, ExportOptions, ExportStats, DEFAULT_ROW_GROUP_ROWS,
};
use nsimage_namespace::Namespace;
use nsimage_viewer::input::{Input, Query, Read};
use nsimage_viewer::streamed::Fallback;
use nsimage_viewer::ViewError;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  nsimage export ns.nsi -o ns.parquet\n  nsimage export fsimage_0000000000000001234 -o dataset/ --row-groups-per-file 8\n  duckdb -c \"select owner, sum(length) from 'ns.parquet' group by owner\""
)]
pub struct Args {
    /// Image file (nsimage or Hadoop fsimage).
    image: PathBuf,
    /// Output format (parquet only).
    #[arg(long, default_value = "parquet")]
    format: String,
    /// Output file, or dataset directory (an existing directory or a path
    /// ending in `/`). Written beside the final name and renamed into place.
    #[arg(short = 'o', long)]
    output: PathBuf,
    /// Worker threads (default: available cores; at most 1024).
    #[arg(long, default_value_t = 0, value_parser = super::parse_threads)]
    threads: usize,
    /// Node-table slots per row group (at most this many rows each).
    #[arg(long, default_value_t = DEFAULT_ROW_GROUP_ROWS, value_parser = clap::value_parser!(u32).range(1..))]
    row_group_rows: u32,
    /// For a dataset: row groups per file.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    row_groups_per_file: u32,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    memory: MemoryLimit,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    if a.format != "parquet" {
        anyhow::bail!(ViewError::BadArgument {
            detail: format!("unknown format {:?} (parquet)", a.format)
        });
    }
    super::output::check_export_output(&a.output)?;
    let start = Instant::now();
    let opts = ExportOptions {
        threads: a.threads,
        row_group_rows: a.row_group_rows,
        row_groups_per_file: a.row_groups_per_file,
        ..ExportOptions::default()
    };
    let input = open_input(&a.image, a.memory, a.threads)?;
    let mut export = Export {
        opts,
        out: &a.output,
        image: &a.image,
        load: None,
    };
    let (stats, read) = input.read(&mut export)?;
    let was_streamed = read == Read::Streamed;
    let load_secs = match read {
        Read::Whole { seconds } => seconds,
        Read::Streamed | Read::Lookup { .. } => 0.0,
    };
    let secs = start.elapsed().as_secs_f64();
    let export_secs = secs - load_secs;
    let rate = stats.rows as f64 / export_secs.max(1e-9);
    if a.json {
        out!(
            "{}",
            serde_json::json!({
                "output": a.output.display().to_string(),
                "rows": stats.rows,
                "row_groups": stats.row_groups,
                "files": stats.files,
                "bytes": stats.bytes,
                "threads": stats.threads,
                "seconds": secs,
                "load_seconds": load_secs,
                "export_seconds": export_secs,
                "export_rows_per_second": rate,
                "streamed": was_streamed,
                "peak_rss_bytes": crate::mem::peak_rss_bytes(),
            })
        );
    } else {
        out!(
            "{}: {} rows in {} row groups, {} file(s), {} bytes; load {load_secs:.3} s, export {export_secs:.3} s ({rate:.0} rows/s; {} threads)",
            a.output.display(),
            stats.rows,
            stats.row_groups,
            stats.files,
            stats.bytes,
            stats.threads
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The export to `out`, as a question the viewer's [`Input`] answers:
/// streamed from the image, or from its whole namespace.
struct Export<'a> {
    opts: ExportOptions,
    out: &'a Path,
    image: &'a Path,
    load: Option<LoadBar>,
}

impl Query for Export<'_> {
    type Answer = ExportStats;
    type Error = anyhow::Error;

    fn streamed(&mut self, input: &Input) -> anyhow::Result<Result<ExportStats, Fallback>> {
        let pb = super::spinner(&format!("exporting {}", input.path().display()));
        // A worker holds the row group it builds (its columns, about 230
        // bytes a row before they are encoded, and the encoder's buffers)
        // and the groups it encoded: at 5M inodes each worker past the
        // first added 50 MB of peak RSS with 2^17 rows a group, and the
        // allocator keeps some of what is freed. 640 bytes a row.
        let per_worker = u64::from(self.opts.row_group_rows).saturating_mul(640);
        let streamed_opts = ExportOptions {
            threads: input
                .budget()
                .workers(input.tree_bytes(), per_worker, self.opts.threads),
            ..self.opts
        };
        let r = export_streamed_to_path(input.source(), &streamed_opts, self.out);
        pb.finish_and_clear();
        Ok(r?)
    }

    fn load_begins(&mut self, image: &Path) {
        self.load = Some(LoadBar::start(image));
    }

    fn load_ends(&mut self) {
        if let Some(lb) = self.load.take() {
            lb.finish().finish_and_clear();
        }
    }

    fn loaded(&mut self, ns: &Namespace) -> anyhow::Result<ExportStats> {
        // The exporter reports nothing while it runs: a spinner.
        let pb = super::spinner(&format!("exporting {}", self.image.display()));
        let r = export_to_path(ns, &self.opts, self.out);
        pb.finish_and_clear();
        Ok(r?)
    }
}
