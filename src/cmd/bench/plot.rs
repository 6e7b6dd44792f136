//! The bench plot (SVG): load time against threads at the largest size, and
//! against inode count at the most threads, one line per strategy and peer.

use super::Row;
use plotters::prelude::*;
use std::path::Path;

const COLORS: [RGBColor; 6] = [BLACK, BLUE, RED, GREEN, MAGENTA, CYAN];

fn strategies(rows: &[Row]) -> Vec<String> {
    let mut s: Vec<String> = rows.iter().map(|r| r.strategy.clone()).collect();
    s.sort();
    s.dedup();
    s
}

pub fn draw(rows: &[Row], path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    if rows.is_empty() {
        return Ok(());
    }
    let root = SVGBackend::new(path, (1200, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(600);
    let strategies = strategies(rows);
    let max_n = rows.iter().map(|r| r.inodes).max().unwrap_or(1);
    let max_t = rows.iter().map(|r| r.threads).max().unwrap_or(1);

    // Left: seconds against threads at the largest size.
    let at_n: Vec<&Row> = rows.iter().filter(|r| r.inodes == max_n).collect();
    let ymax = at_n.iter().map(|r| r.seconds).fold(0.0, f64::max) * 1.1;
    let mut c = ChartBuilder::on(&left)
        .caption(format!("load time, {max_n} inodes"), ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(50)
        .build_cartesian_2d(1usize..max_t.max(2), 0.0..ymax.max(1e-3))?;
    c.configure_mesh()
        .x_desc("threads")
        .y_desc("seconds")
        .draw()?;
    for (i, s) in strategies.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let mut pts: Vec<(usize, f64)> = at_n
            .iter()
            .filter(|r| &r.strategy == s)
            .map(|r| (r.threads, r.seconds))
            .collect();
        pts.sort_by_key(|p| p.0);
        if pts.len() == 1 {
            // Serial-only strategies: a flat reference line.
            pts.push((max_t.max(2), pts[0].1));
        }
        c.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
            .label(s.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], color));
        c.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    c.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;

    // Right: seconds against inodes, each strategy at its most threads.
    let ymax = rows.iter().map(|r| r.seconds).fold(0.0, f64::max) * 1.1;
    let min_n = rows.iter().map(|r| r.inodes).min().unwrap_or(1);
    let mut c = ChartBuilder::on(&right)
        .caption("load time against size", ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(50)
        .build_cartesian_2d(min_n as f64 * 0.9..max_n as f64 * 1.05, 0.0..ymax.max(1e-3))?;
    c.configure_mesh()
        .x_desc("inodes")
        .y_desc("seconds")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .draw()?;
    for (i, s) in strategies.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let t = rows
            .iter()
            .filter(|r| &r.strategy == s)
            .map(|r| r.threads)
            .max()
            .unwrap_or(1);
        let mut pts: Vec<(f64, f64)> = rows
            .iter()
            .filter(|r| &r.strategy == s && r.threads == t)
            .map(|r| (r.inodes as f64, r.seconds))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        c.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
            .label(format!("{s} ({t} thr)"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], color));
        c.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    c.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
