//! `nsimage dump`: every inode as OIV XML, OIV Delimited text or JSON lines
//! (nsimage_viewer::dump), to stdout or to a file written beside its final
//! name and renamed into place once complete and synced. Streamed in
//! bounded memory or from the whole namespace, as the viewer's [`Input`]
//! decides.

use super::memory::{open_input, MemoryLimit};
use super::output::{check_output, write_atomically};
use super::progress::{LoadBar, RowCounter, Unit};
use indicatif::ProgressBar;
use nsimage_loader::Streamable;
use nsimage_namespace::Namespace;
use nsimage_viewer::distribution::distribution_streamed;
use nsimage_viewer::dump::hadoop_xml::dump_hadoop_xml;
use nsimage_viewer::dump::{dump, DumpFormat, DumpOptions, DumpStats};
use nsimage_viewer::input::{Input, Query, Read};
use nsimage_viewer::streamed::dump::dump_streamed;
use nsimage_viewer::streamed::Fallback;
use nsimage_viewer::ViewError;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  nsimage dump ns.nsi --format xml -o ns.xml\n  nsimage dump fsimage_0000000000000001234 --format delimited --header -o ns.tsv\n  nsimage dump ns.nsi --format jsonl | head"
)]
pub struct Args {
    /// Image file.
    image: PathBuf,
    /// Output format: xml (OIV XML), delimited (OIV Delimited) or jsonl.
    #[arg(long)]
    format: DumpFormat,
    /// Output file (default: stdout). Written to a temporary file beside it
    /// and renamed into place: never left half-written under this name.
    #[arg(short = 'o', long)]
    output: Option<PathBuf>,
    /// Column separator of the delimited format: one ASCII character, or
    /// `\t` (default: a tab, as OIV).
    #[arg(long, default_value = "\\t", value_parser = parse_delimiter)]
    delimiter: u8,
    /// Start the delimited format with a header row.
    #[arg(long)]
    header: bool,
    /// Worker threads (default: available cores; at most 1024).
    #[arg(long, default_value_t = 0, value_parser = super::parse_threads)]
    threads: usize,
    /// With -o: print the summary as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    memory: MemoryLimit,
}

fn parse_delimiter(s: &str) -> Result<u8, String> {
    let d = match s {
        "\\t" | "tab" => b'\t',
        _ if s.len() == 1 && s.is_ascii() => s.as_bytes()[0],
        _ => {
            return Err(format!(
                "{s:?}: the delimiter is one ASCII character (or \\t)"
            ))
        }
    };
    if matches!(d, b'\n' | b'\r' | b'\\') {
        return Err("the delimiter may not be a line break or a backslash".into());
    }
    Ok(d)
}

/// A dump into `w`, as a question the viewer's [`Input`] answers: streamed
/// from the image, or from its whole namespace (an image the stream
/// cannot take, XML of an image whose lists are not in Hadoop's order).
struct Dump<'a, 'w> {
    opts: &'a DumpOptions,
    w: &'a mut (dyn Write + Send + 'w),
    name: &'a Path,
    load: Option<LoadBar>,
}

impl Query for Dump<'_, '_> {
    type Answer = DumpStats;
    type Error = ViewError;

    fn streamed(&mut self, input: &Input) -> Result<Result<DumpStats, Fallback>, ViewError> {
        dump_streamed(input.source(), self.opts, self.w, self.name)
    }

    fn load_begins(&mut self, image: &Path) {
        self.load = Some(LoadBar::start(image));
    }

    fn load_ends(&mut self) {
        if let Some(lb) = self.load.take() {
            lb.finish().finish_and_clear();
        }
    }

    fn loaded(&mut self, ns: &Namespace) -> Result<DumpStats, ViewError> {
        dump(ns, self.opts, self.w, self.name)
    }
}

/// The tree of an image read and checked as the streamed commands read
/// it (its file sizes counted, the cheapest streamed question), or loaded
/// whole where the stream cannot take it: the verdict on the image.
struct Verdict {
    threads: usize,
}

impl Query for Verdict {
    type Answer = ();
    type Error = ViewError;

    fn streamed(&mut self, input: &Input) -> Result<Result<(), Fallback>, ViewError> {
        let counted = distribution_streamed(input.source(), self.threads, 1 << 30, 1 << 40)?;
        Ok(counted.map(|_| ()))
    }

    fn loaded(&mut self, _: &Namespace) -> Result<(), ViewError> {
        Ok(())
    }
}

/// A bar of the rows to write where a row is a line (delimited, JSON
/// lines: one per inode), a spinner for XML.
fn rows_bar(input: &Input, format: DumpFormat, image: &Path) -> ProgressBar {
    let msg = format!("dumping {}", image.display());
    let total = (format != DumpFormat::Xml).then(|| input.inode_count());
    super::progress::bar(total, Unit::Items("rows"), &msg)
}

/// The dump into `w`, through a row counter behind its own 1 MiB buffer
/// when the bar is shown (the counter then sees buffers, not rows);
/// straight into `w` otherwise.
fn dump_counted(
    input: &Input,
    opts: &DumpOptions,
    w: &mut (dyn Write + Send),
    name: &Path,
    pb: &ProgressBar,
) -> anyhow::Result<(DumpStats, Read)> {
    if pb.is_hidden() || pb.length().is_none() {
        return Ok(input.read(&mut Dump {
            opts,
            w,
            name,
            load: None,
        })?);
    }
    let inner = RowCounter {
        inner: w,
        pb: pb.clone(),
    };
    let mut counted = BufWriter::with_capacity(1 << 20, inner);
    let answer = input.read(&mut Dump {
        opts,
        w: &mut counted,
        name,
        load: None,
    })?;
    counted.flush().map_err(|source| ViewError::Io {
        path: name.to_path_buf(),
        source,
    })?;
    Ok(answer)
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    if a.format != DumpFormat::Delimited && (a.header || a.delimiter != b'\t') {
        anyhow::bail!(ViewError::BadArgument {
            detail: "--header and --delimiter apply to --format delimited only".into()
        });
    }
    let opts = DumpOptions {
        format: a.format,
        delimiter: a.delimiter,
        header: a.header,
        threads: a.threads,
        ..DumpOptions::default()
    };
    if let Some(out) = &a.output {
        check_output(out)?;
    }
    let start = Instant::now();
    // OIV's XML of a Hadoop image is printed from its stored sections, as
    // they come, in one pass; every other dump from the viewer's input.
    let input = open_input(&a.image, a.memory, a.threads)?;
    let hadoop_xml = a.format == DumpFormat::Xml && matches!(input.source(), Streamable::Hdfs(_));
    let pb = rows_bar(&input, a.format, &a.image);
    let fill = |w: &mut (dyn Write + Send), name: &Path| -> anyhow::Result<(DumpStats, Read)> {
        if !hadoop_xml {
            return dump_counted(&input, &opts, w, name, &pb);
        }
        // OIV's XML of a Hadoop image is printed from its stored sections,
        // while the image's tree is read and checked as every other
        // command reads it: one verdict on a damaged image, the check's.
        std::thread::scope(|s| {
            let check = s.spawn(|| input.read(&mut Verdict { threads: a.threads }));
            let dumped = dump_hadoop_xml(&a.image, super::md5(), a.threads, w, name);
            let checked = check
                .join()
                .map_err(|_| anyhow::anyhow!("the tree check panicked"))?;
            checked?;
            // The check ran beside the dump: no load time to take off it.
            Ok((dumped?, Read::Streamed))
        })
    };
    let (stats, read) = match &a.output {
        None => {
            let mut w = BufWriter::with_capacity(1 << 20, std::io::stdout());
            let r = fill(&mut w, Path::new("<stdout>")).and_then(|s| {
                w.flush().map(|_| s).map_err(|e| {
                    ViewError::Io {
                        path: "<stdout>".into(),
                        source: e,
                    }
                    .into()
                })
            });
            pb.finish_and_clear();
            match r {
                Ok(s) => s,
                // `nsimage dump ... | head`: a closed pipe ends the dump quietly.
                Err(e)
                    if matches!(
                        e.downcast_ref::<ViewError>(),
                        Some(ViewError::Io { source, .. })
                            if source.kind() == std::io::ErrorKind::BrokenPipe
                    ) =>
                {
                    return Ok(ExitCode::SUCCESS)
                }
                Err(e) => return Err(e),
            }
        }
        Some(out) => {
            let r = write_atomically(out, |w| fill(w, out));
            pb.finish_and_clear();
            r?
        }
    };
    let load_secs = match read {
        Read::Whole { seconds } => seconds,
        Read::Streamed | Read::Lookup { .. } => 0.0,
    };
    let secs = start.elapsed().as_secs_f64();
    let dump_secs = secs - load_secs;
    if let Some(out) = &a.output {
        let rate = stats.rows as f64 / secs.max(1e-9);
        let dump_rate = stats.rows as f64 / dump_secs.max(1e-9);
        if a.json {
            out!(
                "{}",
                serde_json::json!({
                    "output": out.display().to_string(),
                    "rows": stats.rows,
                    "bytes": stats.bytes,
                    "threads": stats.threads,
                    "seconds": secs,
                    "load_seconds": load_secs,
                    "streamed": read == Read::Streamed,
                    "dump_seconds": dump_secs,
                    "rows_per_second": rate,
                    "dump_rows_per_second": dump_rate,
                    "peak_rss_bytes": crate::mem::peak_rss_bytes(),
                })
            );
        } else {
            out!(
                "{}: {} rows, {} bytes in {secs:.3} s ({rate:.0} rows/s; load {load_secs:.3} s, dump and sync {dump_secs:.3} s, {dump_rate:.0} rows/s; {} threads)",
                out.display(),
                stats.rows,
                stats.bytes,
                stats.threads
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
