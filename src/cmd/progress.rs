//! Progress on stderr, only when it is a terminal: a bar with a total, a
//! rate and an ETA where the size of the work is known, a spinner where it
//! is not, nothing otherwise (pipes, files, tests).

use indicatif::{ProgressBar, ProgressState, ProgressStyle};
use nsimage_loader::prefetch::Progress;
use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// What a bar counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Bytes, shown as sizes with a byte rate.
    Bytes,
    /// Things with this plural name (rows, inodes, pieces).
    Items(&'static str),
}

/// What is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Hidden,
    Spinner,
    Bar,
}

/// Hidden off a terminal; a bar for a known, non-zero total; a spinner
/// otherwise.
pub fn kind(terminal: bool, total: Option<u64>) -> Kind {
    match (terminal, total) {
        (false, _) => Kind::Hidden,
        (true, Some(n)) if n > 0 => Kind::Bar,
        (true, _) => Kind::Spinner,
    }
}

/// The template of a bar of `unit`: position/total, rate (`{rate}`: per
/// second, whole), ETA.
pub fn template(unit: Unit) -> String {
    match unit {
        Unit::Bytes => {
            "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}".to_string()
        }
        Unit::Items(what) => {
            format!("{{msg}} [{{bar:30}}] {{pos}}/{{len}} {what} {{rate}} ETA {{eta}}")
        }
    }
}

/// A bar of `total` `unit` on stderr (a spinner if `total` is unknown),
/// hidden when stderr is not a terminal.
pub fn bar(total: Option<u64>, unit: Unit, msg: &str) -> ProgressBar {
    match kind(std::io::stderr().is_terminal(), total) {
        Kind::Hidden => ProgressBar::hidden(),
        Kind::Spinner => super::spinner(msg),
        Kind::Bar => {
            let pb = ProgressBar::new(total.unwrap_or(0));
            pb.set_style(
                ProgressStyle::with_template(&template(unit))
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .with_key("rate", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = write!(w, "{:.0}/s", s.per_sec());
                    })
                    .progress_chars("=> "),
            );
            pb.set_message(msg.to_string());
            pb.enable_steady_tick(Duration::from_millis(200));
            pb
        }
    }
}

/// A bar of a load's bytes: the furthest piece the loader has started
/// (polled every 100 ms from [`Progress::front`], so the load's workers
/// pay one relaxed add per piece), the pieces started in its message.
/// Dropping it stops the poller; the bar is left for the caller to reuse.
pub struct LoadBar {
    pub pb: ProgressBar,
    stop: Arc<AtomicBool>,
    poller: Option<JoinHandle<()>>,
}

impl LoadBar {
    pub fn start(image: &Path) -> LoadBar {
        let total = std::fs::metadata(image).ok().map(|m| m.len());
        let msg = format!("loading {}", image.display());
        let pb = bar(total, Unit::Bytes, &msg);
        let stop = Arc::new(AtomicBool::new(false));
        let poller = (kind(std::io::stderr().is_terminal(), total) == Kind::Bar).then(|| {
            Progress::reset_front();
            let (pb, stop) = (pb.clone(), stop.clone());
            let len = total.unwrap_or(0);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let f = Progress::front();
                    pb.set_position(f.offset.min(len));
                    pb.set_message(format!("{msg}: {} pieces", f.pieces));
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
        });
        LoadBar { pb, stop, poller }
    }

    /// The load is over: stop polling, hand back the bar.
    pub fn finish(mut self) -> ProgressBar {
        self.stop_poller();
        self.pb.clone()
    }

    fn stop_poller(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.poller.take() {
            let _ = h.join();
        }
    }
}

impl Drop for LoadBar {
    fn drop(&mut self) {
        self.stop_poller();
    }
}

/// A writer that moves a bar of rows on by the line breaks it passes
/// (delimited and JSON-lines output: one row a line). It sees the 1 MiB
/// buffers of the `BufWriter` above it, not single rows.
pub struct RowCounter<W> {
    pub inner: W,
    pub pb: ProgressBar,
}

impl<W: std::io::Write> std::io::Write for RowCounter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        let rows = buf[..n].iter().filter(|&&b| b == b'\n').count();
        self.pb.inc(rows as u64);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_bar_for_a_known_total_on_a_terminal_only() {
        assert_eq!(kind(false, Some(10)), Kind::Hidden);
        assert_eq!(kind(false, None), Kind::Hidden);
        assert_eq!(kind(true, Some(10)), Kind::Bar);
        assert_eq!(kind(true, Some(0)), Kind::Spinner);
        assert_eq!(kind(true, None), Kind::Spinner);
    }

    #[test]
    fn templates_show_total_rate_and_eta() {
        for unit in [Unit::Bytes, Unit::Items("rows")] {
            let t = template(unit);
            assert!(ProgressStyle::with_template(&t).is_ok(), "{t}");
            assert!(t.contains("ETA {eta}"), "{t}");
        }
        assert!(template(Unit::Bytes).contains("{bytes}/{total_bytes} {bytes_per_sec}"));
        assert!(template(Unit::Items("rows")).contains("{pos}/{len} rows {rate}"));
    }

    #[test]
    fn the_row_counter_counts_line_breaks_and_passes_bytes_on() {
        let pb = ProgressBar::hidden();
        let mut w = RowCounter {
            inner: Vec::new(),
            pb: pb.clone(),
        };
        w.write_all(b"a\nb\n").unwrap();
        w.write_all(b"c").unwrap();
        w.write_all(b"\n").unwrap();
        assert_eq!(pb.position(), 3);
        assert_eq!(w.inner, b"a\nb\nc\n");
    }
}

/// How `load` and `store recover` report startup progress (`--progress`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ProgressMode {
    /// A bar on stderr when it is a terminal, nothing otherwise.
    #[default]
    Auto,
    /// JSON lines on stderr, for a tool that supervises a restart.
    Json,
    /// Nothing.
    None,
}

/// Startup progress of a load, as the NameNode's "Startup Progress" page
/// lists it: the phase, pieces done of total, bytes, rate and ETA, polled
/// every 100 ms (a bar) or 250 ms and at each change of phase (a JSON line
/// each: `phase`, `done`, `total`, `unit` ("pieces"), `bytes_done`,
/// `bytes_total`, `elapsed_seconds`) from the load's
/// [`Timeline`](nsimage_loader::trace::Timeline), whose counters the
/// workers move with one relaxed add per piece.
pub struct StartupProgress {
    stop: Arc<AtomicBool>,
    poller: Option<JoinHandle<()>>,
    pb: ProgressBar,
}

impl StartupProgress {
    pub fn start(
        timeline: Arc<nsimage_loader::trace::Timeline>,
        mode: ProgressMode,
        label: &str,
    ) -> StartupProgress {
        let stop = Arc::new(AtomicBool::new(false));
        let terminal = std::io::stderr().is_terminal();
        let pb = match mode {
            ProgressMode::Auto if terminal => bar(Some(1), Unit::Bytes, label),
            _ => ProgressBar::hidden(),
        };
        let poller = match mode {
            ProgressMode::None => None,
            ProgressMode::Auto if !terminal => None,
            ProgressMode::Auto => {
                let (pb, stop, label) = (pb.clone(), stop.clone(), label.to_string());
                Some(std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let p = timeline.progress();
                        pb.set_length(p.bytes_total.max(1));
                        pb.set_position(p.bytes_done.min(p.bytes_total));
                        pb.set_message(format!(
                            "{label}: {} ({}/{} pieces)",
                            if p.phase.is_empty() {
                                "starting"
                            } else {
                                p.phase
                            },
                            p.pieces_done,
                            p.pieces_total
                        ));
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }))
            }
            ProgressMode::Json => {
                let stop = stop.clone();
                Some(std::thread::spawn(move || {
                    let mut last_phase = "";
                    let mut last_line: Option<Duration> = None;
                    loop {
                        let done = stop.load(Ordering::Relaxed);
                        let p = timeline.progress();
                        let phase = match p.phase {
                            _ if done => "done",
                            "" => "starting",
                            named => named,
                        };
                        // A line at each change of phase, else every 250 ms.
                        let due =
                            last_line.is_none_or(|t| p.elapsed >= t + Duration::from_millis(250));
                        if done || phase != last_phase || due {
                            json_line(phase, &p);
                            last_phase = phase;
                            last_line = Some(p.elapsed);
                        }
                        if done {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }))
            }
        };
        StartupProgress { stop, poller, pb }
    }

    /// The load is over: a last line (`phase` "done") for JSON, the bar
    /// cleared.
    pub fn finish(mut self) {
        self.stop_poller();
        self.pb.finish_and_clear();
    }

    fn stop_poller(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.poller.take() {
            let _ = h.join();
        }
    }
}

impl Drop for StartupProgress {
    fn drop(&mut self) {
        self.stop_poller();
    }
}

/// One JSON line of startup progress on stderr.
fn json_line(phase: &str, p: &nsimage_loader::trace::LoadProgress) {
    let v = serde_json::json!({
        "phase": phase,
        "done": p.pieces_done,
        "total": p.pieces_total,
        "unit": "pieces",
        "bytes_done": p.bytes_done,
        "bytes_total": p.bytes_total,
        "elapsed_seconds": p.elapsed.as_secs_f64(),
    });
    eprintln!("{v}");
}
