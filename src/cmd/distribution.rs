//! `nsimage distribution`: the file-size histogram of OIV FileDistribution
//! (nsimage_viewer::distribution), as text, JSON, and an SVG bar chart
//! drawn here (plotters belongs to the command line, not the viewer).

use super::output::{check_output, write_atomically};
use nsimage_loader::{load, LoadOptions};
use nsimage_viewer::distribution::{distribution, Bucket, Distribution, DEFAULT_MAX, DEFAULT_STEP};
use nsimage_viewer::text::{bytes_summary, human_size, size_text};
use nsimage_viewer::ViewError;
use plotters::prelude::*;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(disable_help_flag = true)]
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
    /// Sizes in binary units (`1.5 KiB`, `9.7 TiB`) instead of byte
    /// counts, as `hdfs dfs -du -h`.
    #[arg(short = 'h', long)]
    human: bool,
    /// Print JSON on stdout (every bucket, empty ones included).
    #[arg(long)]
    json: bool,
}

/// Parses a size: digits and an optional binary unit.
fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(digits);
    let n: u64 = n
        .parse()
        .map_err(|_| format!("{s:?}: a size is a number of bytes, e.g. 2M or 128G"))?;
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        "p" | "pb" | "pib" => 50,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (K, M, G, T or P)")),
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{s:?}: too large"))
}

fn range_text(b: &Bucket) -> String {
    match (b.low, b.high) {
        (_, 0) => "0 B".to_string(),
        (l, u64::MAX) => format!("> {}", human_size(l)),
        (l, h) => format!("({}, {}]", human_size(l), human_size(h)),
    }
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    if let Some(p) = &a.plot {
        check_output(p)?;
    }
    let pb = super::spinner(&format!("loading {}", a.image.display()));
    let opts = LoadOptions {
        key: super::key()?,
        ..LoadOptions::default()
    };
    let loaded = load(&a.image, &opts)?;
    pb.finish_and_clear();
    let d = distribution(&loaded.namespace, a.step, a.max)?;
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
        let buckets: Vec<_> = d
            .buckets
            .iter()
            .map(|b| {
                serde_json::json!({
                    "low": b.low,
                    "high": (b.high != u64::MAX).then_some(b.high),
                    "files": b.files,
                    "bytes": b.bytes,
                })
            })
            .collect();
        out!(
            "{}",
            serde_json::json!({
                "image": a.image.display().to_string(),
                "step": d.step,
                "max": d.max,
                "files": d.files,
                "bytes": d.bytes,
                "largest": d.largest,
                "plot": a.plot.as_ref().map(|p| p.display().to_string()),
                "buckets": buckets,
            })
        );
    } else {
        out!(
            "{}: {} files, {}, largest {}; buckets of {} up to {} (empty buckets not shown)",
            a.image.display(),
            d.files,
            bytes_summary(d.bytes),
            size_text(d.largest, a.human),
            human_size(d.step),
            human_size(d.max)
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
                range_text(b),
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
