//! The load bench (`nsimage bench` without a mode): generates (or reuses)
//! images of the requested sizes,
//! loads each with every strategy and thread count in a child process (so
//! that memory and allocation figures are the load's own), compares with the
//! serial streaming baseline, with the same namespace as Hadoop fsimages
//! (sub-sectioned, uncompressed and zlib: strategies `hdfs` and
//! `hdfs-zlib`), with copies of the image stored compressed and encrypted
//! (`nsimage-zstd`, `nsimage-lz4`, `nsimage-aes`, `nsimage-zstd-aes`) and
//! with the JSON-lines and SQLite peers, and reports medians as a table,
//! JSON and an SVG plot (`plot`; `--timeline`: `timeline`). With `--cold`
//! every load also runs on a cold page cache (`cold`); with `--ceiling`,
//! each size also gets the machine's two-process ceiling for a 2-thread
//! load (`ceiling`).

mod ceiling;
mod cold;
mod plot;
mod timeline;

use super::Args;
use crate::cmd::output::{check_output, write_atomically};
use anyhow::{bail, Context};
use cold::{Cache, Eviction};
use indicatif::ProgressBar;
use nsimage_format::cipher::Key;
use nsimage_format::codec::{Codec, Compression};
use nsimage_namespace::Namespace;
use nsimage_store::fs::RealFs;
use nsimage_store::save::{save_hdfs_image, save_image};
use nsimage_testkit::generate::{generate, GenSpec};
use nsimage_testkit::peers::{jsonl, sqlite};
use nsimage_writer::hdfs::{HdfsCodec, HdfsWriteOptions};
use nsimage_writer::{AtRestOptions, WriteOptions};
use serde::Serialize;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The key file of the bench's encrypted copies, in `--dir`.
const KEY_FILE: &str = "bench.key";

/// The medians of one configuration.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub inodes: u64,
    pub strategy: String,
    /// "warm" or "cold" (`--cold`): the page cache the runs started with.
    pub cache: String,
    pub mode: String,
    pub threads: usize,
    pub seconds: f64,
    pub runs: Vec<f64>,
    pub inodes_per_second: f64,
    pub mb_per_second: f64,
    pub speedup_vs_stream: f64,
    pub file_bytes: u64,
    pub resident_bytes_per_inode: f64,
    pub allocations_per_inode: f64,
    pub peak_rss_bytes: u64,
    pub lock_acquisitions: u64,
    pub lock_contended: u64,
    pub lock_wait_seconds: f64,
    /// The median run's busy time of the workers over threads times the
    /// wall time of its parallel phases (1 on one thread).
    pub parallel_efficiency: f64,
    /// The median run's wall time with at most one thread at work.
    pub serial_seconds: f64,
    /// A Hadoop image's: the median run's CPU seconds of hashing the file
    /// for its `.md5` sidecar (on a thread of its own, beside the
    /// workers); 0 for the others.
    pub md5_cpu_seconds: f64,
    /// The median run's phases (`load --json`'s `phases`).
    pub phases: Value,
    pub digest: String,
    /// Seconds against the plain image mapped (`mmap`) on as many threads
    /// and the same cache; `null` without such a row.
    pub vs_plain_seconds: Option<f64>,
    /// File bytes against the plain image's.
    pub vs_plain_bytes: f64,
}

#[derive(Clone, Debug, Serialize)]
struct Save {
    inodes: u64,
    seconds: f64,
    image_bytes: u64,
}

struct Files {
    image: PathBuf,
    jsonl: PathBuf,
    sqlite: PathBuf,
    /// The same namespace as Hadoop fsimages with sub-sections (the cuts a
    /// NameNode makes for parallel loading): uncompressed, then zlib.
    hdfs: [(&'static str, PathBuf, HdfsCodec); 2],
    /// The image stored compressed and encrypted (FORMAT.md, "Pieces at
    /// rest"): name, path, codec, encrypted.
    at_rest: Vec<(&'static str, PathBuf, Compression, bool)>,
    save: Option<Save>,
}

/// One load configuration: run in a child process, on `file`.
struct Config {
    strategy: String,
    threads: usize,
    args: Vec<String>,
    bytes: u64,
    file: PathBuf,
}

/// The key of the encrypted copies: DIR/bench.key, made (64 hex digits, mode
/// 0600) when missing.
fn bench_key(dir: &Path) -> anyhow::Result<(PathBuf, Key)> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(KEY_FILE);
    // Never read through a link or from a FIFO or device.
    check_output(&path)?;
    if path.exists() {
        return Ok((path.clone(), Key::read(&path)?));
    }
    let key = Key::generate();
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("creating {}", path.display()))?;
    f.write_all(key.to_hex_line().as_bytes())
        .and_then(|()| f.sync_all())
        .with_context(|| format!("writing {}", path.display()))?;
    Ok((path, key))
}

/// Whether the at-rest copy at `path` must be (re)written: missing, not
/// readable as an image, or encrypted with another key than `key`.
fn stale(path: &Path, encrypted: bool, key: &Key) -> bool {
    if !path.exists() {
        return true;
    }
    if !encrypted {
        return false;
    }
    match nsimage_loader::ImageSource::open(path) {
        Ok(src) => src
            .index
            .encryption
            .as_ref()
            .is_none_or(|e| e.key_fingerprint != key.fingerprint()),
        Err(_) => true,
    }
}

/// Writes the at-rest copies of `ns` that are missing or stale.
fn write_at_rest(files: &Files, ns: &Namespace, key: &Key, pb: &ProgressBar) -> anyhow::Result<()> {
    for (name, path, compression, encrypted) in &files.at_rest {
        if !stale(path, *encrypted, key) {
            continue;
        }
        pb.set_message(format!("writing {name} {}", path.display()));
        let opts = WriteOptions {
            at_rest: AtRestOptions {
                compression: *compression,
                key: encrypted.then(|| key.clone()),
            },
            ..WriteOptions::default()
        };
        save_image(&RealFs::default(), path, ns, &opts)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Writes the Hadoop copies of `ns` that are missing, atomically, each
/// with the `.md5` sidecar a NameNode writes beside it: a load checks the
/// file against it as a NameNode's does (an MD5 pass over the file on a
/// thread of its own, beside the workers), so the rows time the path
/// users take.
fn write_hdfs(files: &Files, ns: &Namespace, pb: &ProgressBar) -> anyhow::Result<()> {
    for (name, path, codec) in &files.hdfs {
        if hdfs_ready(path) {
            continue;
        }
        pb.set_message(format!("writing {name} {}", path.display()));
        let opts = HdfsWriteOptions {
            sub_sections: true,
            inode_threshold: 0,
            codec: *codec,
            ..HdfsWriteOptions::default()
        };
        save_hdfs_image(&RealFs::default(), path, ns, &opts)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Whether a Hadoop copy and its `.md5` sidecar are both there (a copy an
/// older bench wrote without one is written again).
fn hdfs_ready(path: &Path) -> bool {
    path.exists() && nsimage_loader::hdfs::sidecar_path(path).exists()
}

fn prepare(a: &Args, n: u64, key: &Key, pb: &ProgressBar) -> anyhow::Result<Files> {
    let stem = a.dir.join(format!("ns-{n}-s{}", a.seed));
    let zstd = Compression {
        codec: Codec::Zstd,
        level: 0,
    };
    let lz4 = Compression {
        codec: Codec::Lz4,
        level: 0,
    };
    let at_rest = if a.no_at_rest {
        Vec::new()
    } else {
        vec![
            ("nsimage-zstd", stem.with_extension("zstd.nsi"), zstd, false),
            ("nsimage-lz4", stem.with_extension("lz4.nsi"), lz4, false),
            (
                "nsimage-aes",
                stem.with_extension("aes.nsi"),
                Compression::NONE,
                true,
            ),
            (
                "nsimage-zstd-aes",
                stem.with_extension("zstd-aes.nsi"),
                zstd,
                true,
            ),
        ]
    };
    let f = Files {
        image: stem.with_extension("nsi"),
        jsonl: stem.with_extension("jsonl"),
        sqlite: stem.with_extension("sqlite"),
        hdfs: [
            ("hdfs", stem.with_extension("hdfs"), HdfsCodec::None),
            (
                "hdfs-zlib",
                stem.with_extension("zlib.hdfs"),
                HdfsCodec::Zlib,
            ),
        ],
        at_rest,
        save: None,
    };
    // Every file of this size is a missing path or a regular file: the
    // peers are written in place, and a link or FIFO is never read.
    for p in [&f.image, &f.jsonl, &f.sqlite]
        .into_iter()
        .chain(f.hdfs.iter().map(|h| &h.1))
        .chain(f.at_rest.iter().map(|r| &r.1))
    {
        check_output(p)?;
    }
    let need_peers = !a.no_peers && (!f.jsonl.exists() || !f.sqlite.exists());
    let need_hdfs = f.hdfs.iter().any(|h| !hdfs_ready(&h.1));
    let need_at_rest = f.at_rest.iter().any(|r| stale(&r.1, r.3, key));
    if f.image.exists() && !need_peers {
        if need_hdfs || need_at_rest {
            // The namespace from the image already there: faster than
            // generating it again.
            pb.set_message(format!("loading {}", f.image.display()));
            let ns =
                nsimage_loader::load(&f.image, &nsimage_loader::LoadOptions::default())?.namespace;
            write_hdfs(&f, &ns, pb)?;
            write_at_rest(&f, &ns, key, pb)?;
        }
        return Ok(f);
    }
    nsimage_testkit::generate::check_fits(n)?;
    pb.set_message(format!("generating {n} inodes"));
    let ns = generate(GenSpec {
        inodes: n,
        seed: a.seed,
    });
    pb.set_message(format!("saving {}", f.image.display()));
    let t = Instant::now();
    let summary = save_image(&RealFs::default(), &f.image, &ns, &WriteOptions::default())?;
    let save = Save {
        inodes: n,
        seconds: t.elapsed().as_secs_f64(),
        image_bytes: summary.bytes,
    };
    if !a.no_peers {
        pb.set_message(format!("writing the JSON-lines peer for {n} inodes"));
        jsonl::export(&ns, &f.jsonl).context("writing the JSON-lines peer")?;
        pb.set_message(format!("writing the SQLite peer for {n} inodes"));
        sqlite::export(&ns, &f.sqlite).context("writing the SQLite peer")?;
    }
    write_hdfs(&f, &ns, pb)?;
    write_at_rest(&f, &ns, key, pb)?;
    Ok(Files {
        save: Some(save),
        ..f
    })
}

/// Runs one configuration `repeat` times in child processes.
fn measure(exe: &Path, args: &[String], repeat: usize) -> anyhow::Result<Vec<Value>> {
    let mut out = Vec::with_capacity(repeat);
    for _ in 0..repeat {
        let o = Command::new(exe).args(args).output()?;
        if !o.status.success() {
            bail!(
                "{} {}: {}",
                exe.display(),
                args.join(" "),
                String::from_utf8_lossy(&o.stderr)
            );
        }
        out.push(serde_json::from_slice(&o.stdout)?);
    }
    Ok(out)
}

fn num(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or(0.0)
}

/// The index of the median run (by seconds).
fn median(runs: &[Value]) -> usize {
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by(|&x, &y| num(&runs[x], "seconds").total_cmp(&num(&runs[y], "seconds")));
    order.get(order.len() / 2).copied().unwrap_or(0)
}

fn row(
    n: u64,
    strategy: &str,
    cache: Cache,
    threads: usize,
    runs: &[Value],
    file_bytes: u64,
) -> Row {
    let m = &runs[median(runs)];
    let seconds = num(m, "seconds");
    Row {
        inodes: n,
        strategy: strategy.to_string(),
        cache: cache.name().to_string(),
        mode: m["mode"].as_str().unwrap_or("").to_string(),
        threads,
        seconds,
        runs: runs.iter().map(|r| num(r, "seconds")).collect(),
        inodes_per_second: n as f64 / seconds,
        mb_per_second: file_bytes as f64 / 1e6 / seconds,
        speedup_vs_stream: 0.0,
        file_bytes,
        resident_bytes_per_inode: num(m, "resident_bytes_per_inode"),
        allocations_per_inode: num(m, "allocations_per_inode"),
        peak_rss_bytes: num(m, "peak_rss_bytes") as u64,
        lock_acquisitions: num(m, "lock_acquisitions") as u64,
        lock_contended: num(m, "lock_contended") as u64,
        lock_wait_seconds: num(m, "lock_wait_seconds"),
        parallel_efficiency: num(m, "parallel_efficiency"),
        serial_seconds: num(m, "serial_seconds"),
        md5_cpu_seconds: num(m, "md5_cpu_seconds"),
        phases: m["phases"].clone(),
        digest: m["digest"].as_str().unwrap_or("").to_string(),
        vs_plain_seconds: None,
        vs_plain_bytes: 0.0,
    }
}

/// The load bench: every configuration of each size in child processes,
/// then the plot, the timeline and the report. `a` has its defaults set
/// (see [`super::run`]).
pub fn run(a: &Args, exe: &Path, cores: usize) -> anyhow::Result<()> {
    let plot_path = a.plot.clone().unwrap_or_else(|| a.dir.join("bench.svg"));
    // Refused before any work is spent, and again when it is written.
    check_output(&plot_path)?;
    if let Some(t) = &a.timeline {
        check_output(t)?;
    }
    let mut timelines: Vec<timeline::Run> = Vec::new();
    let pb = crate::cmd::spinner("bench");
    let (key_path, key) = bench_key(&a.dir)?;
    let key_arg = key_path.display().to_string();
    let caches: &[Cache] = if a.cold {
        &[Cache::Warm, Cache::Cold]
    } else {
        &[Cache::Warm]
    };
    let mut eviction = Eviction::None;
    let mut rows: Vec<Row> = Vec::new();
    let mut saves = Vec::new();
    let mut ceilings = Vec::new();
    for &n in &a.inodes {
        let files = prepare(a, n, &key, &pb)?;
        saves.extend(files.save.clone());
        let image_bytes = std::fs::metadata(&files.image)?.len();
        let configs = configs(a, &files, &key_arg)?;
        let (results, traces) = run_configs(a, exe, n, &configs, caches, &pb, &mut eviction)?;
        let first = rows.len();
        for ((c, runs), traced) in configs.iter().zip(&results).zip(&traces) {
            for ((&cache, runs), traced) in caches.iter().zip(runs).zip(traced) {
                let r = row(n, &c.strategy, cache, c.threads, runs, c.bytes);
                if let Some(trace) = traced.get(median(runs)) {
                    timelines.push(timeline_run(n, &r, trace));
                }
                rows.push(r);
            }
        }
        compare(n, &mut rows[first..], image_bytes)?;
        if a.ceiling {
            pb.set_message(format!("{n} inodes: the two-process ceiling"));
            ceilings.push(ceiling::measure(exe, &files.image, n, a.repeat)?);
        }
    }
    pb.finish_and_clear();
    write_figures(a, &plot_path, &rows, &timelines)?;
    report(a, cores, &rows, &saves, &ceilings, eviction, &plot_path);
    Ok(())
}

/// The load configurations of one size: the serial streaming baseline,
/// then the plain image read and mapped, its Hadoop copies and its copies
/// at rest on each thread count, then the peers.
fn configs(a: &Args, files: &Files, key_arg: &str) -> anyhow::Result<Vec<Config>> {
    let path = files.image.display().to_string();
    let mut configs: Vec<Config> = Vec::new();
    let load = |file: &str, read: &str, t: usize| -> Vec<String> {
        let mut v: Vec<String> = [
            "load",
            file,
            "--json",
            "--read",
            read,
            "--threads",
            &t.to_string(),
            "--parallel-threshold",
            "0",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if t == 1 {
            v.push("--serial".into());
        }
        v
    };
    let mut add = |strategy: &str, t: usize, args: Vec<String>, file: &Path| {
        let bytes = std::fs::metadata(file)?.len();
        configs.push(Config {
            strategy: strategy.into(),
            threads: t,
            args,
            bytes,
            file: file.to_path_buf(),
        });
        anyhow::Ok(())
    };
    add("stream", 1, load(&path, "stream", 1), &files.image)?;
    for &t in &a.threads {
        for read in ["bulk", "mmap"] {
            add(read, t, load(&path, read, t), &files.image)?;
        }
    }
    for (name, hdfs, _) in &files.hdfs {
        for &t in &a.threads {
            add(name, t, load(&hdfs.display().to_string(), "bulk", t), hdfs)?;
        }
    }
    // The copies at rest load as the plain image does by default
    // (mapped), the encrypted ones with the bench's key.
    for (name, p, _, encrypted) in &files.at_rest {
        for &t in &a.threads {
            let mut args = load(&p.display().to_string(), "mmap", t);
            if *encrypted {
                args.extend(["--key-file".to_string(), key_arg.to_string()]);
            }
            add(name, t, args, p)?;
        }
    }
    if !a.no_peers {
        for (fmt, p) in [("jsonl", &files.jsonl), ("sqlite", &files.sqlite)] {
            let args = [
                "peer-load",
                "--format",
                fmt,
                &p.display().to_string(),
                "--json",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            add(fmt, 1, args, p)?;
        }
    }
    Ok(configs)
}

/// Per configuration and cache, each run's figures and, with
/// `--timeline`, each load's trace.
type Runs = Vec<Vec<Vec<Value>>>;

/// Every configuration `--repeat` times on each cache, in child
/// processes: configurations take turns within each repeat, so that a
/// noisy moment of the machine does not land on one configuration alone;
/// with --cold each runs warm, then cold (the eviction used kept in
/// `eviction`).
fn run_configs(
    a: &Args,
    exe: &Path,
    n: u64,
    configs: &[Config],
    caches: &[Cache],
    pb: &ProgressBar,
    eviction: &mut Eviction,
) -> anyhow::Result<(Runs, Runs)> {
    let mut results: Runs = vec![vec![Vec::new(); caches.len()]; configs.len()];
    // With --timeline, each load's trace beside its figures.
    let mut traces: Runs = vec![vec![Vec::new(); caches.len()]; configs.len()];
    for rep in 0..a.repeat {
        for (k, c) in configs.iter().enumerate() {
            for (ci, &cache) in caches.iter().enumerate() {
                pb.set_message(format!(
                    "{n} inodes: {}, {} threads, {}, run {}/{}",
                    c.strategy,
                    c.threads,
                    cache.name(),
                    rep + 1,
                    a.repeat
                ));
                if a.cold {
                    match cache {
                        Cache::Warm => cold::make_warm(&c.file)?,
                        Cache::Cold => *eviction = (*eviction).max(cold::make_cold(&c.file)?),
                    }
                }
                let traced = a.timeline.is_some() && c.args.first().is_some_and(|s| s == "load");
                if traced {
                    let file = a.dir.join(format!("trace-{n}-{k}-{ci}-{rep}.json"));
                    let mut args = c.args.clone();
                    args.extend(["--trace".to_string(), file.display().to_string()]);
                    results[k][ci].extend(measure(exe, &args, 1)?);
                    let t = std::fs::read(&file)
                        .with_context(|| format!("reading the trace {}", file.display()))?;
                    traces[k][ci].push(serde_json::from_slice(&t)?);
                    std::fs::remove_file(&file)?;
                } else {
                    results[k][ci].extend(measure(exe, &c.args, 1)?);
                }
            }
        }
    }
    Ok((results, traces))
}

/// The timeline panel of row `r`'s median run, from its `trace`.
fn timeline_run(n: u64, r: &Row, trace: &Value) -> timeline::Run {
    timeline::Run {
        title: format!(
            "{n} inodes, {} on {} thread{} ({}): {:.3} s, {:.1}% parallel efficiency, {:.3} s serial",
            r.strategy,
            r.threads,
            if r.threads == 1 { "" } else { "s" },
            r.cache,
            r.seconds,
            r.parallel_efficiency * 100.0,
            r.serial_seconds
        ),
        trace: trace.clone(),
    }
}

/// The rows of one size against one another: the speedup against the
/// serial streaming baseline, time and bytes against the plain mapped
/// image; every load must give the first row's digest.
fn compare(n: u64, rows: &mut [Row], image_bytes: u64) -> anyhow::Result<()> {
    let Some(digest) = rows.first().map(|r| r.digest.clone()) else {
        return Ok(());
    };
    let mut at = rows.to_vec();
    for r in &mut at {
        let same = |s: &str, cache: &str, t: usize| {
            rows.iter()
                .find(|o| o.strategy == s && o.cache == cache && o.threads == t)
                .map(|o| o.seconds)
        };
        if let Some(base) = same("stream", &r.cache, 1) {
            r.speedup_vs_stream = base / r.seconds;
        }
        r.vs_plain_seconds = same("mmap", &r.cache, r.threads).map(|p| r.seconds / p);
        r.vs_plain_bytes = r.file_bytes as f64 / image_bytes.max(1) as f64;
        if r.digest != digest {
            bail!(
                "{n} inodes: {} with {} threads ({}) loaded digest {}, the baseline {digest}",
                r.strategy,
                r.threads,
                r.cache,
                r.digest
            );
        }
    }
    rows.clone_from_slice(&at);
    Ok(())
}

/// The plot (the warm runs: one point per strategy and threads) at
/// `plot_path` and, with `--timeline`, the timeline.
fn write_figures(
    a: &Args,
    plot_path: &Path,
    rows: &[Row],
    timelines: &[timeline::Run],
) -> anyhow::Result<()> {
    let warm: Vec<Row> = rows
        .iter()
        .filter(|r| r.cache == Cache::Warm.name())
        .cloned()
        .collect();
    let samples: Vec<plot::Sample<'_>> = warm
        .iter()
        .map(|r| plot::Sample {
            strategy: &r.strategy,
            threads: r.threads,
            inodes: r.inodes,
            seconds: r.seconds,
        })
        .collect();
    let svg = plot::render(&samples)
        .map_err(|e| anyhow::anyhow!("drawing the plot {}: {e}", plot_path.display()))?;
    if let Some(svg) = svg {
        write_atomically(plot_path, |w| {
            w.write_all(svg.as_bytes())
                .with_context(|| format!("writing the plot {}", plot_path.display()))
        })?;
    }
    if let Some(path) = &a.timeline {
        let svg = timeline::render(timelines)
            .map_err(|e| anyhow::anyhow!("drawing the timeline {}: {e}", path.display()))?;
        if let Some(svg) = svg {
            write_atomically(path, |w| {
                w.write_all(svg.as_bytes())
                    .with_context(|| format!("writing the timeline {}", path.display()))
            })?;
        }
    }
    Ok(())
}

/// The rows on stdout: JSON with `--json`, else the tables.
fn report(
    a: &Args,
    cores: usize,
    rows: &[Row],
    saves: &[Save],
    ceilings: &[ceiling::Ceiling],
    eviction: Eviction,
    plot_path: &Path,
) {
    // The images are in `a.dir`: the same device, so the same request size.
    let prefetch = nsimage_loader::prefetch::describe(&a.dir);
    if a.json {
        let v = serde_json::json!({
            "cores": cores,
            "repeat": a.repeat,
            "cold": a.cold,
            "eviction": a.cold.then(|| eviction.name()),
            "prefetch": prefetch,
            "runs": rows,
            "saves": saves,
            "ceilings": ceilings,
            "plot": plot_path.display().to_string(),
        });
        out!("{v}");
    } else {
        print_table(rows, saves, cores, a.repeat);
        for c in ceilings {
            out!(
                "{} inodes, the two-process ceiling (medians of {} rounds, mmap): one 1-thread load \
                 {:.3} s alone, two at once {:.3} s: ceiling {:.2}x; one 2-thread load {:.3} s: \
                 {:.2}x, {:.3} of the ceiling",
                c.inodes,
                c.rounds,
                c.alone_seconds,
                c.pair_seconds,
                c.ceiling,
                c.two_threads_seconds,
                c.speedup,
                c.of_ceiling
            );
        }
        print_at_rest(rows, a.cold);
        if a.cold {
            out!(
                "cold runs: each file taken out of the page cache before the run with {}; \
                 loads read ahead: {prefetch}",
                eviction.name()
            );
        }
        out!("plot: {}", plot_path.display());
    }
}

/// Per strategy and threads: size, warm (and, with `--cold`, cold)
/// medians, and ratios against the plain mapped image: the at-rest table
/// of the README. Every `x` of this table is this row over the plain
/// image (above 1x: slower, or larger).
fn print_at_rest(rows: &[Row], cold: bool) {
    out!("");
    out!("against the plain image (mmap) on as many threads: x is this row over it (above 1x: slower, or larger)");
    let head = format!(
        "{:>9} {:<17} {:>3} {:>11} {:>6} {:>8} {:>7}",
        "inodes", "strategy", "thr", "bytes", "size x", "warm s", "time x"
    );
    if cold {
        out!("{head} {:>8} {:>7} {:>9}", "cold s", "cold x", "cold/warm");
    } else {
        out!("{head}");
    }
    for w in rows.iter().filter(|r| r.cache == Cache::Warm.name()) {
        let c = rows.iter().find(|c| {
            c.cache == Cache::Cold.name()
                && c.inodes == w.inodes
                && c.strategy == w.strategy
                && c.threads == w.threads
        });
        let ratio = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}x"));
        let (cs, cx, cw) = match c {
            Some(c) => (
                format!("{:.3}", c.seconds),
                ratio(c.vs_plain_seconds),
                format!("{:.2}x", c.seconds / w.seconds),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        let line = format!(
            "{:>9} {:<17} {:>3} {:>11} {:>5.2}x {:>8.3} {:>7}",
            w.inodes,
            w.strategy,
            w.threads,
            w.file_bytes,
            w.vs_plain_bytes,
            w.seconds,
            ratio(w.vs_plain_seconds),
        );
        if cold {
            out!("{line} {cs:>8} {cx:>7} {cw:>9}");
        } else {
            out!("{line}");
        }
    }
}

fn print_table(rows: &[Row], saves: &[Save], cores: usize, repeat: usize) {
    out!("medians of {repeat} runs, {cores} cores (the columns: under the table)");
    out!(
        "{:>9} {:<17} {:<5} {:<8} {:>3} {:>9} {:>11} {:>8} {:>8} {:>8} {:>9} {:>10} {:>6} {:>8} {:>6}",
        "inodes",
        "read",
        "cache",
        "mode",
        "thr",
        "seconds",
        "inodes/s",
        "MB/s",
        "speedup",
        "B/inode",
        "allocs/in",
        "contended",
        "eff",
        "serial s",
        "md5 s"
    );
    for r in rows {
        // A peer has no workers, locks, serial phases or sidecar.
        let ours = !is_peer(r);
        let md5 = if r.md5_cpu_seconds > 0.0 {
            format!("{:.3}", r.md5_cpu_seconds)
        } else {
            String::new()
        };
        let (contended, eff, serial) = if ours {
            (
                r.lock_contended.to_string(),
                format!("{:.1}%", r.parallel_efficiency * 100.0),
                format!("{:.3}", r.serial_seconds),
            )
        } else {
            (String::new(), String::new(), String::new())
        };
        out!(
            "{:>9} {:<17} {:<5} {:<8} {:>3} {:>9.3} {:>11.0} {:>8.0} {:>7.2}x {:>8.1} {:>9.3} {:>10} {:>6} {:>8} {:>6}",
            r.inodes,
            r.strategy,
            r.cache,
            r.mode,
            r.threads,
            r.seconds,
            r.inodes_per_second,
            r.mb_per_second,
            r.speedup_vs_stream,
            r.resident_bytes_per_inode,
            r.allocations_per_inode,
            contended,
            eff,
            serial,
            md5
        );
    }
    for s in saves {
        out!(
            "save of {} inodes: {:.3} s, {} bytes",
            s.inodes,
            s.seconds,
            s.image_bytes
        );
    }
    out!("");
    out!("{}", super::legend::LEGEND);
}

/// Whether `r` loads a peer's format (JSON lines, SQLite), not an image.
fn is_peer(r: &Row) -> bool {
    matches!(r.strategy.as_str(), "jsonl" | "sqlite")
}
