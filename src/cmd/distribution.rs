//! `nsimage distribution`: the file-size histogram of OIV FileDistribution
//! (nsimage_viewer::distribution), as text, JSON, and an SVG bar chart
//! drawn here (plotters belongs to the command line, not the viewer).

use super::memory::{open_input, parse_size, MemoryLimit};
use super::output::{check_output, write_atomically};
use nsimage_namespace::Namespace;
use nsimage_viewer::distribution::{
    distribution, distribution_streamed, Bucket, Distribution, DEFAULT_MAX, DEFAULT_STEP,
};
use nsimage_viewer::input::{Input, Query};
use nsimage_viewer::streamed::Fallback;
use nsimage_viewer::text::{bytes_summary, human_size, label_size, size_text};
use nsimage_viewer::ViewError;
use plotters::prelude::*;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    disable_help_flag = true,
    after_help = "Rows as OIV's FileDistribution processor counts them: files per size bucket \
                  (0 B, then (low, high] of --step bytes up to --max, then one bucket above), \
                  with their bytes.\n\nExamples:\n  nsimage distribution fsimage\n  nsimage \
                  distribution fsimage --step 16M --max 1G -h\n  nsimage distribution fsimage \
                  --plot sizes.svg"
)]
pub struct Args {
    /// Image file.
    image: PathBuf,
    /// Bucket width: bytes, or with a binary unit (K, M, G, T, P; `2M`,
    /// `2MiB`, `2MB` all mean 2 MiB). OIV's default: 2 MiB.
    #[arg(long, default_value_t = DEFAULT_STEP, value_parser = parse_size)]
    step: u64,
    /// Largest size with buckets of its own; larger files share one
    /// bucket. OIV's default: 128 GiB.
    #[arg(long, default_value_t = DEFAULT_MAX, value_parser = parse_size)]
    max: u64,
    /// Draw an SVG bar chart of the histogram into this file.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Print help (`-h` is `--human` here).
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// Sizes as `hdfs dfs -h` prints them (binary prefixes, one
    /// decimal: `1.5 K`, `9.7 T`) instead of byte counts.
    #[arg(short = 'h', long)]
    human: bool,
    /// Print JSON on stdout (every bucket, empty ones included).
    #[arg(long)]
    json: bool,
    /// Worker threads (default: available cores; at most 1024).
    #[arg(long, default_value_t = 0, value_parser = super::parse_threads)]
    threads: usize,
    #[command(flatten)]
    memory: MemoryLimit,
}

/// A bucket's bounds, in the units of the output (`-h`: Hadoop's).
fn range_text(b: &Bucket, hadoop_units: bool) -> String {
    let l = |v| label_size(v, hadoop_units);
    match (b.low, b.high) {
        (_, 0) if hadoop_units => "0".to_string(),
        (_, 0) => "0 B".to_string(),
        (lo, u64::MAX) => format!("> {}", l(lo)),
        (lo, h) => format!("({}, {}]", l(lo), l(h)),
    }
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    if let Some(p) = &a.plot {
        check_output(p)?;
    }
    let d = histogram(&a)?;
    if let Some(p) = &a.plot {
        write_atomically(p, |w| {
            let svg = draw(&d).map_err(|e| anyhow::anyhow!("drawing the chart: {e}"))?;
            std::io::Write::write_all(w, svg.as_bytes()).map_err(|e| {
                anyhow::Error::new(ViewError::Io {
                    path: p.clone(),
                    source: e,
                })
            })
        })?;
    }
    if a.json {
        // Written as it is serialized (a tree of values for a million
        // buckets would outweigh the streamed image's tree); keys in the
        // sorted order serde_json's maps give.
        #[derive(serde::Serialize)]
        struct JsonBucket {
            bytes: u64,
            files: u64,
            high: Option<u64>,
            low: u64,
        }
        #[derive(serde::Serialize)]
        struct Json<I: Iterator<Item = JsonBucket> + Clone> {
            #[serde(serialize_with = "buckets_seq")]
            buckets: I,
            bytes: u64,
            files: u64,
            image: String,
            largest: u64,
            max: u64,
            plot: Option<String>,
            step: u64,
        }
        fn buckets_seq<S: serde::Serializer, I: Iterator<Item = JsonBucket> + Clone>(
            it: &I,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            s.collect_seq(it.clone())
        }
        let json = Json {
            buckets: d.buckets.iter().map(|b| JsonBucket {
                bytes: b.bytes,
                files: b.files,
                high: (b.high != u64::MAX).then_some(b.high),
                low: b.low,
            }),
            bytes: d.bytes,
            files: d.files,
            image: a.image.display().to_string(),
            largest: d.largest,
            max: d.max,
            plot: a.plot.as_ref().map(|p| p.display().to_string()),
            step: d.step,
        };
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        let _ = serde_json::to_writer(&mut out, &json);
        let _ = std::io::Write::write_all(&mut out, b"\n");
        let _ = std::io::Write::flush(&mut out);
    } else {
        out!(
            "{}: {} files, {}, largest {}; buckets of {} up to {} (empty buckets not shown)",
            a.image.display(),
            d.files,
            bytes_summary(d.bytes, a.human),
            size_text(d.largest, a.human),
            label_size(d.step, a.human),
            label_size(d.max, a.human)
        );
        out!(
            "{:<26} {:>12} {:>7} {:>12}",
            "Size",
            "NumFiles",
            "%",
            "Bytes"
        );
        for b in d.buckets.iter().filter(|b| b.files > 0) {
            out!(
                "{:<26} {:>12} {:>6.2}% {:>12}",
                range_text(b, a.human),
                b.files,
                100.0 * b.files as f64 / d.files.max(1) as f64,
                size_text(b.bytes, a.human)
            );
        }
        if let Some(p) = &a.plot {
            out!("plot: {}", p.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Most bars in the chart: neighbouring buckets are merged beyond it.
const MAX_BARS: usize = 64;

/// The chart as SVG text: one bar per bucket (or run of neighbouring
/// buckets) from the empty files up to the last non-empty bucket.
fn draw(d: &Distribution) -> Result<String, Box<dyn std::error::Error>> {
    let last = d.buckets.iter().rposition(|b| b.files > 0).unwrap_or(0);
    let shown = &d.buckets[..=last];
    // Bucket 0 (empty files) keeps its own bar; the rest are grouped.
    let per_bar = (shown.len().saturating_sub(1))
        .div_ceil(MAX_BARS - 1)
        .max(1);
    let mut bars: Vec<(String, u64)> = vec![("0 B".to_string(), shown[0].files)];
    for g in shown[1..].chunks(per_bar) {
        let (first, lastb) = (g[0], g[g.len() - 1]);
        let label = if lastb.high == u64::MAX {
            format!(">{}", human_size(first.low))
        } else {
            format!("≤{}", human_size(lastb.high))
        };
        bars.push((label, g.iter().map(|b| b.files).sum()));
    }
    let ymax = bars.iter().map(|b| b.1).max().unwrap_or(0).max(1) as f64 * 1.1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1000, 500)).into_drawing_area();
        root.fill(&WHITE)?;
        let n = bars.len();
        let mut c = ChartBuilder::on(&root)
            .caption(
                format!(
                    "File sizes: {} files, {} (buckets of {})",
                    d.files,
                    human_size(d.bytes),
                    human_size(d.step * per_bar as u64)
                ),
                ("sans-serif", 20),
            )
            .margin(15)
            .x_label_area_size(60)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..n as f64, 0.0..ymax)?;
        let labels: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
        c.configure_mesh()
            .disable_x_mesh()
            .x_desc("file size")
            .y_desc("files")
            .x_labels(n.min(16))
            .x_label_formatter(&|x| {
                let i = x.floor();
                if i < 0.0 || (x - i).abs() > 1e-9 {
                    return String::new();
                }
                labels.get(i as usize).cloned().unwrap_or_default()
            })
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()?;
        c.draw_series(bars.iter().enumerate().map(|(i, b)| {
            let x = i as f64;
            Rectangle::new(
                [(x + 0.1, 0.0), (x + 0.9, b.1 as f64)],
                BLUE.mix(0.7).filled(),
            )
        }))?;
        root.present()?;
    }
    Ok(svg)
}

/// The file-size histogram, as a question the viewer's [`Input`] answers:
/// streamed from the image (its tree read and checked first, within
/// `--memory-limit`), or from the whole namespace.
struct Histogram {
    step: u64,
    max: u64,
    threads: usize,
}

impl Query for Histogram {
    type Answer = Distribution;
    type Error = ViewError;

    fn streamed(&mut self, input: &Input) -> Result<Result<Distribution, Fallback>, ViewError> {
        distribution_streamed(input.source(), self.threads, self.step, self.max)
    }

    fn loaded(&mut self, ns: &Namespace) -> Result<Distribution, ViewError> {
        distribution(ns, self.step, self.max)
    }
}

/// The histogram, read however the input decides.
fn histogram(a: &Args) -> anyhow::Result<Distribution> {
    let pb = super::spinner(&format!("reading {}", a.image.display()));
    let r = open_input(&a.image, a.memory, a.threads).and_then(|input| {
        let mut q = Histogram {
            step: a.step,
            max: a.max,
            threads: a.threads,
        };
        Ok(input.read(&mut q)?.0)
    });
    pb.finish_and_clear();
    r
}
