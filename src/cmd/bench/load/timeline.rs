//! `bench --timeline FILE.svg`: the median run of each configuration as a
//! Gantt chart, one panel per configuration, drawn from the run's trace
//! (`load --trace`): a row per thread (the coordinator, each worker, the
//! read-ahead thread), a bar per phase, piece, task, wait and read-ahead
//! range, so idle gaps show at a glance.

use plotters::coord::Shift;
use plotters::prelude::*;
use serde_json::Value;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// One configuration's median run: its title and its trace file's JSON.
pub struct Run {
    pub title: String,
    pub trace: Value,
}

/// A bar: row, start and end (ms), colour, and how much of the row's
/// height it takes (phases full, what they hold narrower).
struct Bar {
    row: u64,
    start: f64,
    end: f64,
    color: RGBColor,
    height: f64,
}

const PHASE: RGBColor = RGBColor(176, 190, 214);
const INODE: RGBColor = RGBColor(31, 119, 180);
const DIR: RGBColor = RGBColor(255, 127, 14);
const OTHER: RGBColor = RGBColor(44, 160, 44);
const TASK: RGBColor = RGBColor(214, 39, 40);
const WAIT: RGBColor = RGBColor(220, 220, 220);
const AHEAD: RGBColor = RGBColor(148, 103, 189);
const RESIDENT: RGBColor = RGBColor(197, 176, 213);

fn bars(trace: &Value) -> Vec<Bar> {
    let Some(events) = trace["traceEvents"].as_array() else {
        return Vec::new();
    };
    events
        .iter()
        .filter(|e| e["ph"] == "X")
        .filter_map(|e| {
            let start = e["ts"].as_f64()? / 1000.0;
            let end = start + e["dur"].as_f64()? / 1000.0;
            let (color, height) = match e["cat"].as_str()? {
                "phase" => (PHASE, 0.9),
                "task" => (TASK, 0.6),
                "wait" => (WAIT, 0.6),
                "read-ahead" if e["args"]["resident"] == true => (RESIDENT, 0.6),
                "read-ahead" => (AHEAD, 0.6),
                _ => match e["args"]["section"].as_str() {
                    Some("INODE") => (INODE, 0.6),
                    Some("INODE_DIR") => (DIR, 0.6),
                    _ => (OTHER, 0.6),
                },
            };
            Some(Bar {
                row: e["tid"].as_u64()?,
                start,
                end,
                color,
                height,
            })
        })
        .collect()
}

/// Each track's name, from the trace's `thread_name` metadata events.
fn thread_names(trace: &Value) -> Vec<(u64, String)> {
    let Some(events) = trace["traceEvents"].as_array() else {
        return Vec::new();
    };
    events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .filter_map(|e| Some((e["tid"].as_u64()?, e["args"]["name"].as_str()?.to_string())))
        .collect()
}

/// The chart of `runs` as an SVG document; `None` without runs.
pub fn render(runs: &[Run]) -> Result<Option<String>> {
    if runs.is_empty() {
        return Ok(None);
    }
    let mut svg = String::new();
    {
        let height = u32::try_from(runs.len())
            .unwrap_or(u32::MAX / 200)
            .saturating_mul(170)
            + 40;
        let root = SVGBackend::with_string(&mut svg, (1200, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let (legend, body) = root.split_vertically(40);
        draw_legend(&legend)?;
        for (area, run) in body.split_evenly((runs.len(), 1)).iter().zip(runs) {
            panel(area, run)?;
        }
        root.present()?;
    }
    Ok(Some(svg))
}

fn draw_legend(area: &DrawingArea<SVGBackend<'_>, Shift>) -> Result<()> {
    let items = [
        (PHASE, "phase (coordinator)"),
        (INODE, "INODE piece"),
        (DIR, "INODE_DIR piece"),
        (OTHER, "other piece"),
        (TASK, "task (links, reads, tree)"),
        (WAIT, "waiting for the step's end"),
        (AHEAD, "read ahead"),
        (RESIDENT, "found cached"),
    ];
    let mut x = 10;
    for (color, label) in items {
        area.draw(&Rectangle::new([(x, 14), (x + 14, 28)], color.filled()))?;
        area.draw(&Text::new(label, (x + 20, 14), ("sans-serif", 14)))?;
        x += 30 + 7 * i32::try_from(label.len()).unwrap_or(20);
    }
    Ok(())
}

fn panel(area: &DrawingArea<SVGBackend<'_>, Shift>, run: &Run) -> Result<()> {
    let bars = bars(&run.trace);
    let end = bars.iter().map(|b| b.end).fold(0.0, f64::max).max(1e-3);
    let rows = bars.iter().map(|b| b.row).max().unwrap_or(0) + 1;
    let names = thread_names(&run.trace);
    let mut c = ChartBuilder::on(area)
        .caption(&run.title, ("sans-serif", 16))
        .margin(8)
        .x_label_area_size(28)
        .y_label_area_size(90)
        .build_cartesian_2d(0.0..end * 1.01, 0.0..rows as f64)?;
    c.configure_mesh()
        .disable_y_mesh()
        .x_desc("ms since the load started")
        .y_labels(usize::try_from(rows).unwrap_or(1) * 2 + 1)
        .y_label_formatter(&|y| {
            // A row's label at its middle.
            let r = y - 0.5;
            if (r - r.round()).abs() > 1e-6 || r < 0.0 {
                return String::new();
            }
            let row = rows.saturating_sub(1).saturating_sub(r.round() as u64);
            names
                .iter()
                .find(|(t, _)| *t == row)
                .map_or_else(String::new, |(_, n)| n.clone())
        })
        .draw()?;
    // Rows top down: the coordinator first.
    let y = |row: u64| (rows - 1 - row) as f64;
    c.draw_series(bars.iter().map(|b| {
        let pad = (1.0 - b.height) / 2.0;
        Rectangle::new(
            [(b.start, y(b.row) + pad), (b.end, y(b.row) + 1.0 - pad)],
            b.color.filled(),
        )
    }))?;
    Ok(())
}
