//! The bench plot (SVG): load time against threads at the largest size, and
//! against inode count at the most threads, one line per strategy and peer.

use super::Row;
use plotters::coord::Shift;
use plotters::prelude::*;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

const COLORS: [RGBColor; 6] = [BLACK, BLUE, RED, GREEN, MAGENTA, CYAN];

/// One chart: a line and its points per labelled series.
fn panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    caption: &str,
    x_desc: &str,
    x: std::ops::Range<f64>,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<()> {
    let ymax = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.1))
        .fold(0.0, f64::max)
        * 1.1;
    let mut c = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(50)
        .build_cartesian_2d(x, 0.0..ymax.max(1e-3))?;
    c.configure_mesh()
        .x_desc(x_desc)
        .y_desc("seconds")
        // Threads and inode counts are whole numbers: label only those.
        .x_label_formatter(&|x| {
            if x.fract() == 0.0 {
                format!("{x:.0}")
            } else {
                String::new()
            }
        })
        .draw()?;
    for (i, (label, pts)) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        c.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
            .label(label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], color));
        c.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    c.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

/// The plot of `rows` as an SVG document; `None` without rows. Drawn in
/// memory: the caller writes it (atomically, never through a link or into
/// a FIFO or device).
pub fn render(rows: &[Row]) -> Result<Option<String>> {
    if rows.is_empty() {
        return Ok(None);
    }
    let mut svg = String::new();
    draw(rows, &mut svg)?;
    Ok(Some(svg))
}

fn draw(rows: &[Row], svg: &mut String) -> Result<()> {
    let root = SVGBackend::with_string(svg, (1200, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(600);
    let mut strategies: Vec<&str> = rows.iter().map(|r| r.strategy.as_str()).collect();
    strategies.sort_unstable();
    strategies.dedup();
    let max_n = rows.iter().map(|r| r.inodes).max().unwrap_or(1);
    let min_n = rows.iter().map(|r| r.inodes).min().unwrap_or(1);
    let max_t = rows.iter().map(|r| r.threads).max().unwrap_or(1).max(2) as f64;

    let by_threads: Vec<(String, Vec<(f64, f64)>)> = strategies
        .iter()
        .map(|&s| {
            let mut pts: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| r.inodes == max_n && r.strategy == s)
                .map(|r| (r.threads as f64, r.seconds))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            if pts.len() == 1 {
                // Serial-only strategies: a flat reference line.
                pts.push((max_t, pts[0].1));
            }
            (s.to_string(), pts)
        })
        .collect();
    panel(
        &left,
        &format!("load time, {max_n} inodes"),
        "threads",
        1.0..max_t,
        &by_threads,
    )?;

    let by_size: Vec<(String, Vec<(f64, f64)>)> = strategies
        .iter()
        .map(|&s| {
            let t = rows
                .iter()
                .filter(|r| r.strategy == s)
                .map(|r| r.threads)
                .max()
                .unwrap_or(1);
            let mut pts: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| r.strategy == s && r.threads == t)
                .map(|r| (r.inodes as f64, r.seconds))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            (format!("{s} ({t} thr)"), pts)
        })
        .collect();
    let x = min_n as f64 * 0.9..max_n as f64 * 1.05;
    panel(&right, "load time against size", "inodes", x, &by_size)?;
    root.present()?;
    Ok(())
}
