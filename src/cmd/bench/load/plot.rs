//! The bench plot (SVG): load time against threads at the largest size, and
//! against inode count at the most threads, one series per strategy and
//! peer. Each series has a colour of its own from a colour-blind-safe
//! palette (Okabe and Ito's eight, then four of Paul Tol's muted ones) and
//! a marker of its own (filled shapes, then hollow ones), so that no two
//! series look alike even in grey. A series measured on one thread only
//! (the streaming baseline, the peers) is drawn as points, not as a line
//! across thread counts it never ran on. The legend sits in a strip below
//! both panels, outside the data; the size axis spans the sizes measured,
//! labelled in whole inodes (`100k`, `1.5M`).

use plotters::coord::Shift;
use plotters::prelude::*;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// One measured point: a strategy's median load time at a size and a
/// thread count.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample<'a> {
    /// The read strategy or peer (`mmap`, `jsonl`, ...).
    pub strategy: &'a str,
    /// Worker threads.
    pub threads: usize,
    /// Inodes in the image.
    pub inodes: u64,
    /// The median wall time of the load.
    pub seconds: f64,
}

/// The series' colours: Okabe and Ito's palette, then Paul Tol's wine,
/// teal, olive and grey; readable with any common colour blindness.
pub const PALETTE: [RGBColor; 12] = [
    RGBColor(0x00, 0x00, 0x00),
    RGBColor(0xE6, 0x9F, 0x00),
    RGBColor(0x56, 0xB4, 0xE9),
    RGBColor(0x00, 0x9E, 0x73),
    RGBColor(0xF0, 0xE4, 0x42),
    RGBColor(0x00, 0x72, 0xB2),
    RGBColor(0xD5, 0x5E, 0x00),
    RGBColor(0xCC, 0x79, 0xA7),
    RGBColor(0x88, 0x22, 0x55),
    RGBColor(0x44, 0xAA, 0x99),
    RGBColor(0x99, 0x99, 0x33),
    RGBColor(0x88, 0x88, 0x88),
];

/// Series `i`'s colour and marker (each of the twelve once).
fn style(i: usize) -> (RGBColor, usize) {
    (PALETTE[i % PALETTE.len()], i % 12)
}

/// Marker `m`'s outline in pixels around its point, each of the twelve
/// unlike the others: filled circle, square, triangle, diamond, bar and
/// downward triangle; hollow circle, square, triangle and diamond; a plus
/// and an x.
fn outline(m: usize) -> Vec<(i32, i32)> {
    match m % 12 {
        0 | 6 => (0..12)
            .map(|k| {
                let a = f64::from(k) * std::f64::consts::PI / 6.0;
                (
                    (5.0 * a.cos()).round() as i32,
                    (5.0 * a.sin()).round() as i32,
                )
            })
            .collect(),
        1 | 7 => vec![(-4, -4), (4, -4), (4, 4), (-4, 4)],
        2 | 8 => vec![(0, -6), (5, 4), (-5, 4)],
        3 | 9 => vec![(0, -6), (5, 0), (0, 6), (-5, 0)],
        4 => vec![(-6, -2), (6, -2), (6, 2), (-6, 2)],
        5 => vec![(0, 6), (5, -4), (-5, -4)],
        10 => vec![(-5, 0), (5, 0), (0, 0), (0, -5), (0, 5)],
        _ => vec![(-4, -4), (4, 4), (0, 0), (-4, 4), (4, -4)],
    }
}

/// Whether marker `m` is drawn filled (else as a line along its
/// outline).
fn filled(m: usize) -> bool {
    m % 12 < 6
}

/// Marker `m`'s outline as a path: closed for the hollow shapes, as it is
/// for the plus and the x.
fn path(m: usize) -> Vec<(i32, i32)> {
    let mut v = outline(m);
    if m % 12 < 10 {
        v.push(v[0]);
    }
    v
}

/// A named series: its index (its style) and points.
struct Series {
    style: usize,
    points: Vec<(f64, f64)>,
    /// Drawn as a line through its points (more than one thread count).
    line: bool,
}

/// `n` inodes in short: `950`, `20k`, `1.5M`.
fn inodes_label(n: f64) -> String {
    if n >= 1e6 {
        let m = n / 1e6;
        if m.fract() == 0.0 {
            format!("{m:.0}M")
        } else {
            format!("{m:.1}M")
        }
    } else if n >= 1e3 {
        format!("{:.0}k", n / 1e3)
    } else {
        format!("{n:.0}")
    }
}

/// One chart: its series, markers at every point.
fn panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    caption: &str,
    x_desc: &str,
    x: std::ops::Range<f64>,
    whole_x: bool,
    series: &[Series],
) -> Result<()> {
    let ymax = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0, f64::max)
        * 1.1;
    let mut c = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .build_cartesian_2d(x.clone(), 0.0..ymax.max(1e-3))?;
    let fmt = |v: &f64| {
        if whole_x {
            // Thread counts: only whole numbers.
            if v.fract() == 0.0 {
                format!("{v:.0}")
            } else {
                String::new()
            }
        } else {
            inodes_label(*v)
        }
    };
    let span = (x.end - x.start).max(1.0);
    c.configure_mesh()
        .x_desc(x_desc)
        .y_desc("seconds")
        .x_labels(if whole_x { span as usize + 1 } else { 6 })
        .x_label_formatter(&fmt)
        .draw()?;
    for s in series {
        let (color, m) = style(s.style);
        if s.line {
            c.draw_series(LineSeries::new(s.points.clone(), color.stroke_width(2)))?;
        }
        if filled(m) {
            let shape = outline(m);
            c.draw_series(
                s.points
                    .iter()
                    .map(|&p| EmptyElement::at(p) + Polygon::new(shape.clone(), color.filled())),
            )?;
        } else {
            let shape = path(m);
            c.draw_series(s.points.iter().map(|&p| {
                EmptyElement::at(p) + PathElement::new(shape.clone(), color.stroke_width(2))
            }))?;
        }
    }
    Ok(())
}

/// The legend strip: each series' marker, line (where drawn as one) and
/// name, in columns.
fn legend(area: &DrawingArea<SVGBackend<'_>, Shift>, names: &[(String, bool)]) -> Result<()> {
    let (w, _) = area.dim_in_pixel();
    let per_row = 4usize;
    let col = (w as usize / per_row) as i32;
    for (i, (name, line)) in names.iter().enumerate() {
        let (color, m) = style(i);
        let x = 20 + col * (i % per_row) as i32;
        let y = 15 + 22 * (i / per_row) as i32;
        if *line {
            area.draw(&PathElement::new(
                vec![(x, y), (x + 30, y)],
                color.stroke_width(2),
            ))?;
        }
        let at = EmptyElement::at((x + 15, y));
        if filled(m) {
            area.draw(&(at + Polygon::new(outline(m), color.filled())))?;
        } else {
            area.draw(&(at + PathElement::new(path(m), color.stroke_width(2))))?;
        }
        area.draw(&Text::new(
            name.clone(),
            (x + 40, y - 7),
            ("sans-serif", 14).into_font(),
        ))?;
    }
    Ok(())
}

/// The plot of `samples` as an SVG document; `None` without samples.
/// Drawn in memory: the caller writes it (atomically, never through a
/// link or into a FIFO or device).
pub fn render(samples: &[Sample<'_>]) -> Result<Option<String>> {
    if samples.is_empty() {
        return Ok(None);
    }
    let mut svg = String::new();
    draw(samples, &mut svg)?;
    Ok(Some(svg))
}

/// The left panel's series: each strategy's load time per thread count at
/// `max_n` inodes, a line only where it ran on more than one.
fn by_threads(samples: &[Sample<'_>], strategies: &[&str], max_n: u64) -> Vec<Series> {
    strategies
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            let mut points: Vec<(f64, f64)> = samples
                .iter()
                .filter(|r| r.inodes == max_n && r.strategy == s)
                .map(|r| (r.threads as f64, r.seconds))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let line = points.len() > 1;
            Series {
                style: i,
                points,
                line,
            }
        })
        .collect()
}

fn draw(samples: &[Sample<'_>], svg: &mut String) -> Result<()> {
    let mut strategies: Vec<&str> = samples.iter().map(|r| r.strategy).collect();
    strategies.sort_unstable();
    strategies.dedup();
    let legend_rows = strategies.len().div_ceil(4) as u32;
    let height = 480 + 22 * legend_rows + 20;
    let root = SVGBackend::with_string(svg, (1200, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let (charts, below) = root.split_vertically(480);
    let (left, right) = charts.split_horizontally(600);
    let max_n = samples.iter().map(|r| r.inodes).max().unwrap_or(1);
    let min_n = samples.iter().map(|r| r.inodes).min().unwrap_or(1);
    let max_t = samples.iter().map(|r| r.threads).max().unwrap_or(1).max(2);
    let threads_of = |s: &str| {
        let mut t: Vec<usize> = samples
            .iter()
            .filter(|r| r.strategy == s)
            .map(|r| r.threads)
            .collect();
        t.sort_unstable();
        t.dedup();
        t
    };

    let by_threads = by_threads(samples, &strategies, max_n);
    panel(
        &left,
        &format!("load time, {} inodes", inodes_label(max_n as f64)),
        "threads",
        1.0..max_t as f64,
        true,
        &by_threads,
    )?;

    let by_size: Vec<Series> = strategies
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            let t = threads_of(s).last().copied().unwrap_or(1);
            let mut points: Vec<(f64, f64)> = samples
                .iter()
                .filter(|r| r.strategy == s && r.threads == t)
                .map(|r| (r.inodes as f64, r.seconds))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let line = points.len() > 1;
            Series {
                style: i,
                points,
                line,
            }
        })
        .collect();
    // The sizes measured, edge to edge (one size: a little either side).
    let x = if max_n > min_n {
        min_n as f64..max_n as f64
    } else {
        max_n as f64 * 0.9..max_n as f64 * 1.1
    };
    panel(
        &right,
        "load time against size (each at its most threads)",
        "inodes",
        x,
        false,
        &by_size,
    )?;
    let names: Vec<(String, bool)> = strategies
        .iter()
        .map(|&s| {
            let t = threads_of(s);
            let most = t.last().copied().unwrap_or(1);
            let least = t.first().copied().unwrap_or(1);
            let name = if t.len() > 1 {
                format!("{s} ({least}-{most} threads)")
            } else {
                format!("{s} ({most} thread{})", if most == 1 { "" } else { "s" })
            };
            (name, t.len() > 1)
        })
        .collect();
    legend(&below, &names)?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Eleven series as the bench makes them: strategies on 1 to 4
    /// threads and peers on one, at three sizes.
    fn samples() -> Vec<Sample<'static>> {
        let parallel = [
            "bulk",
            "mmap",
            "hdfs",
            "hdfs-zlib",
            "nsimage-lz4",
            "nsimage-zstd",
            "nsimage-aes",
            "nsimage-zstd-aes",
        ];
        let mut v = Vec::new();
        for (k, &n) in [20_000u64, 100_000, 1_000_000].iter().enumerate() {
            for (i, s) in parallel.iter().enumerate() {
                for t in 1..=4 {
                    let seconds = (n as f64 / 1e6) * (1.0 + i as f64 / 10.0) / t as f64;
                    v.push(Sample {
                        strategy: s,
                        threads: t,
                        inodes: n,
                        seconds: seconds + k as f64 * 0.001,
                    });
                }
            }
            for (i, s) in ["stream", "jsonl", "sqlite"].iter().enumerate() {
                v.push(Sample {
                    strategy: s,
                    threads: 1,
                    inodes: n,
                    seconds: (n as f64 / 1e6) * (2.0 + i as f64),
                });
            }
        }
        v
    }

    #[test]
    fn each_series_its_own_colour_and_marker_and_peers_as_points() {
        let n = 11;
        let styles: Vec<(RGBColor, usize)> = (0..n).map(style).collect();
        for i in 0..n {
            for j in 0..i {
                assert_ne!(styles[i].0, styles[j].0, "colours {i} and {j}");
                // The markers drawn, not their numbers: each shape (outline
                // and fill) unlike the others.
                let (mi, mj) = (styles[i].1, styles[j].1);
                assert!(
                    outline(mi) != outline(mj) || filled(mi) != filled(mj),
                    "markers {i} and {j}"
                );
            }
        }
        let all = samples();
        let svg = render(&all).unwrap().unwrap();
        // Every series in the legend, the peers without "1-" ranges.
        for name in [
            "bulk (1-4 threads)",
            "jsonl (1 thread)",
            "stream (1 thread)",
        ] {
            assert!(svg.contains(name), "{name}");
        }
        // Against threads: a line for each strategy that ran on 1 to 4,
        // points alone for the three that ran on one.
        let mut names: Vec<&str> = all.iter().map(|s| s.strategy).collect();
        names.sort_unstable();
        names.dedup();
        for (name, s) in names.iter().zip(by_threads(&all, &names, 1_000_000)) {
            let peer = ["stream", "jsonl", "sqlite"].contains(name);
            assert_eq!(s.line, !peer, "{name}");
            assert_eq!(s.points.len(), if peer { 1 } else { 4 }, "{name}");
        }
        // The legend in a strip of its own below the 480-pixel panels:
        // three rows of four.
        assert!(svg.contains("height=\"566\""), "{}", &svg[..200]);
        // The size axis ends at the largest size measured.
        let labels: Vec<&str> = svg
            .split("</text>")
            .filter_map(|t| t.rsplit('>').next())
            .map(str::trim)
            .collect();
        assert!(labels.contains(&"1M"), "{labels:?}");
        assert!(labels.contains(&"200k"), "{labels:?}");
        assert!(
            !labels.iter().any(|l| l.ends_with('M') && *l != "1M"),
            "{labels:?}"
        );
    }

    /// The plot rendered to PNG (resvg): it parses as SVG, draws, and
    /// every series' colour is on the picture.
    #[test]
    fn it_renders_to_png_with_every_series_colour() {
        use resvg::{tiny_skia, usvg};
        let svg = render(&samples()).unwrap().unwrap();
        let mut opt = usvg::Options::default();
        opt.fontdb_mut().load_system_fonts();
        let tree = usvg::Tree::from_str(&svg, &opt).unwrap();
        let size = tree.size().to_int_size();
        assert_eq!((size.width(), size.height()), (1200, 566));
        let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height()).unwrap();
        resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
        let png = pixmap.encode_png().unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        // Series 0 is black, as the axes and text are: not counted.
        for (i, c) in PALETTE.iter().enumerate().take(11).skip(1) {
            let drawn = pixmap
                .pixels()
                .iter()
                .filter(|p| p.alpha() == 255 && (p.red(), p.green(), p.blue()) == (c.0, c.1, c.2))
                .count();
            assert!(drawn >= 20, "series {i}'s colour {c:?}: {drawn} pixels");
        }
    }
}
