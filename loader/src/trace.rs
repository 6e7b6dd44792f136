//! Where a load's time goes (issue 29): a [`Timeline`] of spans, one per
//! phase on the coordinating thread and one per piece (or per share of an
//! uncut step) on the worker that ran it, kept as the load goes. A load
//! records a few hundred spans (one per piece and phase), so the timeline
//! is always kept; a caller's timeline made with `Timeline::new(true)`
//! ([`LoadOptions::timeline`](crate::LoadOptions::timeline)) adds the fine
//! spans (waits at the end of each parallel step) for a Chrome
//! trace-event file ([`Timeline::chrome_json`]).
//!
//! From the spans, per phase and for the whole load ([`PhaseStats`]):
//! - `busy_seconds`: the sum of the workers' spans within the phase (on
//!   the serial path, the phase's wall time);
//! - `parallel_efficiency`: busy time over threads times the wall time of
//!   the phases that ran on the pool;
//! - `serial_seconds`: wall time when at most one thread works (a
//!   coordinator step, or a parallel step's tail where one worker is left).

use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The thread a span ran on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Track {
    /// The thread that called the load.
    Coordinator,
    /// Worker `i` of the load's pool.
    Worker(usize),
    /// The prefetch thread, reading ahead of the workers.
    ReadAhead,
}

/// What a span measures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum What {
    /// A phase (or a step of one) on the coordinating thread.
    Phase(&'static str),
    /// One piece decoded: its section, sub-section (`None`: a section
    /// stored whole), stored bytes and records.
    Piece {
        /// The section's name.
        section: &'static str,
        /// The sub-section's index.
        sub_section: Option<usize>,
        /// Its stored bytes.
        bytes: u64,
        /// Its records (as the index declares them).
        records: u64,
    },
    /// One worker's share of a parallel step that is not cut in pieces.
    Task(&'static str),
    /// A worker idle at the end of a parallel step, waiting for the
    /// others (recorded only when tracing).
    Wait(&'static str),
    /// A range of the file the prefetch thread asked the kernel to read
    /// ahead, or found already in the page cache (`resident`) and left.
    ReadAhead {
        /// The range's bytes.
        bytes: u64,
        /// Whether it was found in the page cache (and not asked for).
        resident: bool,
    },
}

/// One span: what, on which thread, from when to when (since the load
/// started).
#[derive(Clone, Debug)]
pub struct Span {
    /// The thread.
    pub track: Track,
    /// What it measures.
    pub what: What,
    /// Its start.
    pub start: Duration,
    /// Its end.
    pub end: Duration,
}

/// The figures of one phase, or of the whole load (`name` "load").
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PhaseStats {
    /// The phase.
    pub name: &'static str,
    /// Its wall time.
    pub seconds: f64,
    /// The workers' busy time within it (its wall time on one thread).
    pub busy_seconds: f64,
    /// Busy time over threads times the wall time of its parallel steps (1
    /// on one thread; for the whole load, over the phases run on the pool).
    pub parallel_efficiency: f64,
    /// Wall time when at most one thread works.
    pub serial_seconds: f64,
}

/// How far a load has got, for a progress display on another thread
/// ([`Timeline::progress`]): the NameNode's "Startup Progress" figures.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LoadProgress {
    /// The phase the coordinating thread is in ("" before the first and
    /// after the last).
    pub phase: &'static str,
    /// Pieces decoded so far, and in all (0: not known yet).
    pub pieces_done: u64,
    /// The pieces the load will decode.
    pub pieces_total: u64,
    /// Their stored bytes so far.
    pub bytes_done: u64,
    /// Their stored bytes in all.
    pub bytes_total: u64,
    /// Time since the load started.
    pub elapsed: Duration,
}

/// A load's spans: see the module documentation.
pub struct Timeline {
    origin: Instant,
    detail: bool,
    spans: Mutex<Vec<Span>>,
    /// The coordinator's open phases, innermost last.
    phases: Mutex<Vec<&'static str>>,
    pieces_done: AtomicU64,
    bytes_done: AtomicU64,
    pieces_total: AtomicU64,
    bytes_total: AtomicU64,
}

impl std::fmt::Debug for Timeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timeline")
            .field("detail", &self.detail)
            .field("spans", &self.spans.lock().len())
            .finish()
    }
}

impl Timeline {
    /// A timeline starting now; `detail` adds the fine spans (waits).
    pub fn new(detail: bool) -> Timeline {
        Timeline {
            origin: Instant::now(),
            detail,
            spans: Mutex::new(Vec::with_capacity(1024)),
            phases: Mutex::new(Vec::new()),
            pieces_done: AtomicU64::new(0),
            bytes_done: AtomicU64::new(0),
            pieces_total: AtomicU64::new(0),
            bytes_total: AtomicU64::new(0),
        }
    }

    /// Tells the timeline what the load will decode, for
    /// [`progress`](Self::progress).
    pub(crate) fn plan(&self, pieces: u64, bytes: u64) {
        self.pieces_total.store(pieces, Ordering::Relaxed);
        self.bytes_total.store(bytes, Ordering::Relaxed);
    }

    /// How far the load has got (callable from any thread while it runs).
    pub fn progress(&self) -> LoadProgress {
        LoadProgress {
            phase: self.phases.lock().last().copied().unwrap_or(""),
            pieces_done: self.pieces_done.load(Ordering::Relaxed),
            pieces_total: self.pieces_total.load(Ordering::Relaxed),
            bytes_done: self.bytes_done.load(Ordering::Relaxed),
            bytes_total: self.bytes_total.load(Ordering::Relaxed),
            elapsed: self.now(),
        }
    }

    /// Whether the fine spans are recorded.
    pub fn detailed(&self) -> bool {
        self.detail
    }

    /// Time since the load started.
    pub(crate) fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    /// The calling thread's track.
    pub(crate) fn track() -> Track {
        rayon::current_thread_index().map_or(Track::Coordinator, Track::Worker)
    }

    /// Records a span from `start` to now on this thread's track; a piece
    /// counts as done in [`progress`](Self::progress).
    pub(crate) fn record(&self, what: What, start: Duration) {
        if let What::Piece { bytes, .. } = what {
            self.advance(1, bytes);
        }
        self.record_quiet(what, start);
    }

    /// Adds `pieces` and `bytes` to those done, for a step whose pieces'
    /// spans do not stand one for one for the pieces planned (a Hadoop
    /// image's INODE pieces, counted in one pass and decoded in cuts).
    pub(crate) fn advance(&self, pieces: u64, bytes: u64) {
        self.pieces_done.fetch_add(pieces, Ordering::Relaxed);
        self.bytes_done.fetch_add(bytes, Ordering::Relaxed);
    }

    /// [`record`](Self::record), the progress left as it is.
    pub(crate) fn record_quiet(&self, what: What, start: Duration) {
        let span = Span {
            track: Self::track(),
            what,
            start,
            end: self.now(),
        };
        self.spans.lock().push(span);
    }

    /// Records a span on `track` from `start` to `end`.
    pub(crate) fn record_on(&self, track: Track, what: What, start: Duration, end: Duration) {
        self.spans.lock().push(Span {
            track,
            what,
            start,
            end,
        });
    }

    /// Runs `f` as the phase (or step) `name` of the calling thread: how
    /// a caller adds its own stages to a load's timeline (a store's
    /// journal replay after its image's load).
    pub fn phase<T>(&self, name: &'static str, f: impl FnOnce() -> T) -> T {
        let start = self.now();
        self.phases.lock().push(name);
        let r = f();
        self.phases.lock().pop();
        self.record(What::Phase(name), start);
        r
    }

    /// Runs `f` as a worker's share `name` of a parallel step.
    pub(crate) fn task<T>(&self, name: &'static str, f: impl FnOnce() -> T) -> T {
        let start = self.now();
        let r = f();
        self.record(What::Task(name), start);
        r
    }

    /// Every span, by track then start (a span before those it holds).
    pub fn spans(&self) -> Vec<Span> {
        let mut v = self.spans.lock().clone();
        v.sort_by(|a, b| {
            (a.track, a.start, std::cmp::Reverse(a.end)).cmp(&(
                b.track,
                b.start,
                std::cmp::Reverse(b.end),
            ))
        });
        v
    }

    /// The figures of each coordinator phase in order, then of the whole
    /// load (`load`, from `0` to the end of the last span), for a load on
    /// `threads` threads.
    pub fn phase_stats(&self, threads: usize) -> Vec<PhaseStats> {
        let spans = self.spans();
        let work: Vec<(Duration, Duration)> = spans
            .iter()
            .filter(|s| matches!(s.track, Track::Worker(_)))
            .filter(|s| matches!(s.what, What::Piece { .. } | What::Task(_)))
            .map(|s| (s.start, s.end))
            .collect();
        // Top-level phases: coordinator phases no other phase holds.
        let mut tops: Vec<&Span> = Vec::new();
        for s in spans
            .iter()
            .filter(|s| s.track == Track::Coordinator && matches!(s.what, What::Phase(_)))
        {
            if tops.last().is_none_or(|t| s.start >= t.end) {
                tops.push(s);
            }
        }
        let end = spans.iter().map(|s| s.end).max().unwrap_or_default();
        let threads = threads.max(1);
        let mut out: Vec<PhaseStats> = tops
            .iter()
            .map(|t| {
                let name = match t.what {
                    What::Phase(n) => n,
                    _ => "",
                };
                window_stats(name, t.start, t.end, &work, threads)
            })
            .collect();
        let mut whole = window_stats("load", Duration::ZERO, end, &work, threads);
        // Efficiency over the phases that ran on the pool.
        let parallel: Vec<&PhaseStats> = out
            .iter()
            .filter(|p| p.busy_seconds > 0.0 && threads > 1)
            .collect();
        let wall: f64 = parallel.iter().map(|p| p.seconds).sum();
        let busy: f64 = parallel.iter().map(|p| p.busy_seconds).sum();
        whole.parallel_efficiency = if threads == 1 {
            1.0
        } else if wall > 0.0 {
            busy / (threads as f64 * wall)
        } else {
            0.0
        };
        out.push(whole);
        out
    }

    /// The timeline as a Chrome trace-event file (JSON; opens in Perfetto
    /// and chrome://tracing): one track per worker and one for the
    /// coordinating thread, every span a complete event (`ph` `X`, times
    /// in microseconds) with its piece's section, sub-section, bytes and
    /// records as `args`.
    pub fn chrome_json(&self, label: &str) -> serde_json::Value {
        use serde_json::json;
        let spans = self.spans();
        // The read-ahead track after the workers'.
        let workers = spans
            .iter()
            .filter_map(|s| match s.track {
                Track::Worker(i) => Some(i.saturating_add(1)),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        let tid = |t: Track| match t {
            Track::Coordinator => 0,
            Track::Worker(i) => i.saturating_add(1),
            Track::ReadAhead => workers.saturating_add(1),
        };
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let mut events = vec![json!({
            "name": "process_name", "ph": "M", "pid": 1,
            "args": {"name": format!("nsimage load {label}")}
        })];
        let mut tracks: Vec<Track> = spans.iter().map(|s| s.track).collect();
        tracks.dedup();
        tracks.insert(0, Track::Coordinator);
        tracks.dedup();
        for t in tracks {
            let name = match t {
                Track::Coordinator => "coordinator".to_string(),
                Track::Worker(i) => format!("worker {i}"),
                Track::ReadAhead => "read-ahead".to_string(),
            };
            events.push(json!({
                "name": "thread_name", "ph": "M", "pid": 1, "tid": tid(t),
                "args": {"name": name}
            }));
        }
        for s in &spans {
            let (name, cat, args) = match &s.what {
                What::Phase(n) => (n.to_string(), "phase", json!({})),
                What::Task(n) => (n.to_string(), "task", json!({})),
                What::Wait(n) => (format!("wait: {n}"), "wait", json!({})),
                What::ReadAhead { bytes, resident } => (
                    if *resident { "resident" } else { "read ahead" }.to_string(),
                    "read-ahead",
                    json!({"bytes": bytes, "resident": resident}),
                ),
                What::Piece {
                    section,
                    sub_section,
                    bytes,
                    records,
                } => (
                    match sub_section {
                        Some(i) => format!("{section} #{i}"),
                        None => section.to_string(),
                    },
                    "piece",
                    json!({"section": section, "sub_section": sub_section, "bytes": bytes, "records": records}),
                ),
            };
            events.push(json!({
                "name": name, "cat": cat, "ph": "X", "pid": 1, "tid": tid(s.track),
                "ts": us(s.start), "dur": us(s.end.saturating_sub(s.start)), "args": args
            }));
        }
        json!({"traceEvents": events, "displayTimeUnit": "ms"})
    }
}

/// The span of piece `p` at `at`.
pub(crate) fn piece(p: &nsimage_format::SubSectionInfo, at: &nsimage_format::Location) -> What {
    What::Piece {
        section: at.section.and_then(|k| k.name()).unwrap_or("unknown"),
        sub_section: at.sub_section,
        bytes: p.length,
        records: p.records,
    }
}

/// Runs `f` as the phase `name` of `timeline`, if one is kept.
pub(crate) fn in_phase<T>(
    timeline: Option<&Timeline>,
    name: &'static str,
    f: impl FnOnce() -> T,
) -> T {
    match timeline {
        Some(t) => t.phase(name, f),
        None => f(),
    }
}

/// Runs `f` as a worker's share `name` of a parallel step of `timeline`,
/// if one is kept.
pub(crate) fn in_task<T>(
    timeline: Option<&Timeline>,
    name: &'static str,
    f: impl FnOnce() -> T,
) -> T {
    match timeline {
        Some(t) => t.task(name, f),
        None => f(),
    }
}

/// The figures of the window `a..b` given the workers' busy spans `work`.
fn window_stats(
    name: &'static str,
    a: Duration,
    b: Duration,
    work: &[(Duration, Duration)],
    threads: usize,
) -> PhaseStats {
    let wall = b.saturating_sub(a).as_secs_f64();
    // The workers' spans clipped to the window, as +1/-1 events.
    let mut edges: Vec<(Duration, i32)> = Vec::new();
    let mut busy = 0.0;
    for &(s, e) in work {
        let (s, e) = (s.max(a), e.min(b));
        if s < e {
            busy += (e - s).as_secs_f64();
            edges.push((s, 1));
            edges.push((e, -1));
        }
    }
    edges.sort();
    // Time with two workers or more at work.
    let (mut active, mut parallel, mut last) = (0i32, 0.0, a);
    for (t, d) in edges {
        if active >= 2 {
            parallel += t.saturating_sub(last).as_secs_f64();
        }
        active += d;
        last = t;
    }
    let on_pool = busy > 0.0 && threads > 1;
    PhaseStats {
        name,
        seconds: wall,
        busy_seconds: if on_pool { busy } else { wall },
        parallel_efficiency: if !on_pool {
            1.0
        } else if wall > 0.0 {
            busy / (threads as f64 * wall)
        } else {
            0.0
        },
        serial_seconds: if threads > 1 {
            (wall - parallel).max(0.0)
        } else {
            wall
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn serial_time_is_what_fewer_than_two_workers_cover() {
        // Two workers from 10 to 90 and 10 to 60 ms in a 100 ms window: 50
        // ms with both at work, so 50 serial; 130 busy of 200.
        let w = [(ms(10), ms(90)), (ms(10), ms(60))];
        let p = window_stats("x", ms(0), ms(100), &w, 2);
        assert!((p.serial_seconds - 0.050).abs() < 1e-9, "{p:?}");
        assert!((p.busy_seconds - 0.130).abs() < 1e-9, "{p:?}");
        assert!((p.parallel_efficiency - 0.65).abs() < 1e-9, "{p:?}");
        // One thread: all of it is serial, and fully efficient.
        let p = window_stats("x", ms(0), ms(100), &[], 1);
        assert_eq!((p.serial_seconds, p.parallel_efficiency), (0.1, 1.0));
    }
}
