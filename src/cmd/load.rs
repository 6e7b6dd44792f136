//! `nsimage load`: loads an image into memory and reports counts, digest,
//! time, memory, allocations and lock contention.

use crate::mem;
use nsimage_loader::{
    load, release_free_memory, LoadOptions, ReadStrategy, DEFAULT_PARALLEL_THRESHOLD,
};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  nsimage load ns.nsi\n  nsimage load ns.nsi --threads 2 --json\n  nsimage load fsimage_0000000000000001234"
)]
pub struct Args {
    /// Image file.
    file: PathBuf,
    /// Worker threads (default: available cores; at most 1024).
    #[arg(long, default_value_t = 0, value_parser = super::parse_threads)]
    threads: usize,
    /// How piece bytes are read: mmap, bulk (one read per piece) or stream
    /// (the buffered record-by-record baseline, always serial).
    #[arg(long, default_value = "mmap", value_parser = parse_read)]
    read: ReadStrategy,
    /// Force the serial path.
    #[arg(long)]
    serial: bool,
    /// Below this many inodes the load is serial.
    #[arg(long, default_value_t = DEFAULT_PARALLEL_THRESHOLD)]
    parallel_threshold: u64,
    /// Print JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Write the load's timeline to FILE as a Chrome trace-event file (opens
    /// in Perfetto and chrome://tracing): a track per worker and one for
    /// the coordinating thread, each piece decoded (section, sub-section,
    /// bytes, records), each phase, each worker's wait at a step's end, and
    /// one for the read-ahead thread (each range asked for, or found in
    /// the page cache and left).
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Startup progress on stderr: auto (a bar with the phase, pieces,
    /// bytes, rate and ETA when stderr is a terminal), json (a JSON line
    /// every 250 ms and at each phase: phase, done, total, unit,
    /// bytes_done, bytes_total, elapsed_seconds) or none.
    #[arg(long, value_enum, default_value_t = super::progress::ProgressMode::Auto)]
    progress: super::progress::ProgressMode,
    #[command(flatten)]
    memory: super::memory::MemoryLimit,
}

/// Parses `--read`. The CLI maps images by default (README: "default: all
/// cores, mmap"), which the library makes an explicit opt-in.
fn parse_read(s: &str) -> Result<ReadStrategy, String> {
    match s {
        // SAFETY: the CLI loads image files that nsimage saved, which are
        // never rewritten in place while a reader holds them (a new image
        // is renamed over the old one; a store's purge cuts an old image
        // only under an exclusive lock that the loader's shared one, held
        // while mapped, refuses), and the process exits after the load; a
        // file changed by another program while it is mapped is outside
        // what the CLI supports, as for any reader of a mapped file.
        "mmap" => Ok(unsafe { ReadStrategy::mmap() }),
        "bulk" => Ok(ReadStrategy::Bulk),
        "stream" => Ok(ReadStrategy::Stream),
        _ => Err(format!(
            "unknown read strategy {s:?} (mmap, bulk or stream)"
        )),
    }
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let timeline = std::sync::Arc::new(nsimage_loader::trace::Timeline::new(a.trace.is_some()));
    let opts = LoadOptions {
        threads: a.threads,
        read: a.read,
        serial: a.serial,
        parallel_threshold: a.parallel_threshold,
        key: super::key()?,
        timeline: Some(timeline.clone()),
        budget: Some(a.memory.budget()),
        md5: super::md5(),
    };
    let label = format!("loading {}", a.file.display());
    let startup = super::progress::StartupProgress::start(timeline, a.progress, &label);
    let rss_before = mem::rss_bytes();
    let allocs_before = crate::allocations();
    let loaded = load(&a.file, &opts);
    startup.finish();
    let mut loaded = loaded?;
    // The library leaves the allocator alone; the CLI gives the load's
    // freed pages back before measuring, as a server would, and counts the
    // trim in the load's time.
    let trim = std::time::Instant::now();
    release_free_memory();
    let trim_seconds = trim.elapsed().as_secs_f64();
    loaded.stats.seconds += trim_seconds;
    let allocations = crate::allocations() - allocs_before;
    let rss_after = mem::rss_bytes();
    let ns = &loaded.namespace;
    let st = ns.stats();
    let digest = ns.digest().to_string();
    let s = &loaded.stats;
    if let Some(path) = &a.trace {
        let label = a.file.display().to_string();
        super::output::write_atomically(path, |w| {
            serde_json::to_writer(&mut *w, &loaded.timeline.chrome_json(&label))?;
            Ok(())
        })?;
    }
    let whole = s.phases.last().cloned().unwrap_or_default();
    let per_inode = |v: u64| v as f64 / st.inodes.max(1) as f64;
    if a.json {
        let mut m = super::stats_json(&st, &digest, s.seconds);
        let extra = serde_json::json!({
            "threads": s.threads,
            "mode": s.mode,
            "read": s.read,
            "sub_sections": s.pieces,
            "read_calls": s.read_calls,
            "bytes_read": s.bytes_read,
            "peak_rss_bytes": mem::peak_rss_bytes(),
            "rss_after_bytes": rss_after,
            "resident_bytes_per_inode": per_inode(rss_after.saturating_sub(rss_before)),
            "heap_bytes": ns.heap_bytes(),
            "heap_parts": ns
                .heap_parts()
                .named()
                .iter()
                .map(|&(k, v)| (k.to_string(), serde_json::Value::from(v)))
                .collect::<serde_json::Map<_, _>>(),
            "allocations": allocations,
            "allocations_per_inode": per_inode(allocations as u64),
            "inode_phase_seconds": s.inode_phase_seconds,
            "dir_phase_seconds": s.dir_phase_seconds,
            "trim_seconds": trim_seconds,
            "lock_acquisitions": s.locks.acquisitions,
            "lock_contended": s.locks.contended,
            "lock_wait_seconds": s.locks.wait_ns as f64 / 1e9,
            "md5_checked": s.md5_checked,
            "md5_seconds": s.md5_seconds,
            "md5_cpu_seconds": s.md5_cpu_seconds,
            "parallel_efficiency": whole.parallel_efficiency,
            "serial_seconds": whole.serial_seconds,
            "phases": super::phases_json(&s.phases),
        });
        if let serde_json::Value::Object(e) = extra {
            m.extend(e);
        }
        out!("{}", serde_json::Value::Object(m));
    } else {
        out!("{}: {}", a.file.display(), super::stats_text(&st, &digest));
        out!(
            "loaded in {:.3} s ({} mode, {} threads, {} reads): {} pieces, {} read calls, {} bytes read",
            s.seconds, s.mode, s.threads, s.read, s.pieces, s.read_calls, s.bytes_read
        );
        out!(
            "time: {:.1}% parallel efficiency, {:.3} s with at most one thread at work",
            whole.parallel_efficiency * 100.0,
            whole.serial_seconds
        );
        out!(
            "memory: {:.1} resident bytes per inode, {:.3} allocations per inode; locks: {} taken, {} contended",
            per_inode(rss_after.saturating_sub(rss_before)),
            per_inode(allocations as u64),
            s.locks.acquisitions,
            s.locks.contended
        );
    }
    Ok(ExitCode::SUCCESS)
}
