//! `nsimage bench`: generates (or reuses) images of the requested sizes,
//! loads each with every strategy and thread count in a child process (so
//! that memory and allocation figures are the load's own), compares with the
//! serial streaming baseline, with the same namespace as Hadoop fsimages
//! (sub-sectioned, uncompressed and zlib: strategies `hdfs` and
//! `hdfs-zlib`) and with the JSON-lines and SQLite peers, and reports
//! medians as a table, JSON and an SVG plot.

mod lookup;
mod plot;
mod serve;

use anyhow::{bail, Context};
use indicatif::ProgressBar;
use nsimage_namespace::Namespace;
use nsimage_store::fs::RealFs;
use nsimage_store::save::{save_image, save_with};
use nsimage_testkit::generate::{generate, GenSpec};
use nsimage_testkit::peers::{jsonl, sqlite};
use nsimage_writer::hdfs::{write_hdfs_image, HdfsCodec, HdfsWriteOptions};
use nsimage_writer::WriteOptions;
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Namespace sizes, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [200_000u64, 1_000_000])]
    inodes: Vec<u64>,
    /// Thread counts, comma-separated (default: 1 up to the available
    /// cores; each at most 1024).
    #[arg(long, value_delimiter = ',', value_parser = super::parse_threads)]
    threads: Vec<usize>,
    /// Loads per configuration; medians are reported.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Generator seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where images and peer files are kept and reused.
    #[arg(long, default_value = "bench-out")]
    dir: PathBuf,
    /// SVG plot to write (default: DIR/bench.svg).
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Skip the JSON-lines and SQLite peers.
    #[arg(long)]
    no_peers: bool,
    /// Print JSON on stdout instead of the table.
    #[arg(long)]
    json: bool,
    /// Bench a one-path lookup (a file 6 levels deep) against a full load
    /// instead.
    #[arg(long)]
    lookup: bool,
    /// Bench the WebHDFS server instead: `nsimage serve` on each image,
    /// `--clients` keep-alive connections alternating GETFILESTATUS and
    /// LISTSTATUS for `--seconds`; latency percentiles per operation.
    #[arg(long, conflicts_with = "lookup")]
    serve: bool,
    /// With --serve: concurrent clients, one connection each.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=4096))]
    clients: u64,
    /// With --serve: seconds the clients run.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    seconds: u64,
}

/// The medians of one configuration.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub inodes: u64,
    pub strategy: String,
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
    pub digest: String,
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
    save: Option<Save>,
}

/// Writes the Hadoop copies of `ns` that are missing, atomically and
/// without a `.md5` sidecar (the bench times the decoding; a sidecar would
/// add an MD5 pass over the file on a thread of its own).
fn write_hdfs(files: &Files, ns: &Namespace, pb: &ProgressBar) -> anyhow::Result<()> {
    for (name, path, codec) in &files.hdfs {
        if path.exists() {
            continue;
        }
        pb.set_message(format!("writing {name} {}", path.display()));
        let opts = HdfsWriteOptions {
            sub_sections: true,
            inode_threshold: 0,
            codec: *codec,
            ..HdfsWriteOptions::default()
        };
        save_with(&RealFs::default(), path, |out| {
            write_hdfs_image(ns, out, &opts)
        })
        .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

fn prepare(a: &Args, n: u64, pb: &ProgressBar) -> anyhow::Result<Files> {
    let stem = a.dir.join(format!("ns-{n}-s{}", a.seed));
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
        save: None,
    };
    let need_peers = !a.no_peers && (!f.jsonl.exists() || !f.sqlite.exists());
    let need_hdfs = f.hdfs.iter().any(|h| !h.1.exists());
    if f.image.exists() && !need_peers {
        if need_hdfs {
            // The namespace from the image already there: faster than
            // generating it again.
            pb.set_message(format!("loading {}", f.image.display()));
            let ns =
                nsimage_loader::load(&f.image, &nsimage_loader::LoadOptions::default())?.namespace;
            write_hdfs(&f, &ns, pb)?;
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

fn row(n: u64, strategy: &str, threads: usize, runs: &[Value], file_bytes: u64) -> Row {
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by(|&x, &y| num(&runs[x], "seconds").total_cmp(&num(&runs[y], "seconds")));
    let m = &runs[order[order.len() / 2]];
    let seconds = num(m, "seconds");
    Row {
        inodes: n,
        strategy: strategy.to_string(),
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
        digest: m["digest"].as_str().unwrap_or("").to_string(),
    }
}

pub fn run(mut a: Args) -> anyhow::Result<ExitCode> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if a.threads.is_empty() {
        a.threads = (1..=cores).collect();
    }
    a.repeat = a.repeat.max(1);
    std::fs::create_dir_all(&a.dir).with_context(|| format!("creating {}", a.dir.display()))?;
    let exe = std::env::current_exe()?;
    if a.lookup {
        lookup::run(&a, &exe)?;
        return Ok(ExitCode::SUCCESS);
    }
    if a.serve {
        serve::run(&a, &exe)?;
        return Ok(ExitCode::SUCCESS);
    }
    let pb = super::spinner("bench");
    let mut rows: Vec<Row> = Vec::new();
    let mut saves = Vec::new();
    for &n in &a.inodes {
        let files = prepare(&a, n, &pb)?;
        saves.extend(files.save.clone());
        let image_bytes = std::fs::metadata(&files.image)?.len();
        let path = files.image.display().to_string();
        let mut configs: Vec<(String, usize, Vec<String>, u64)> = Vec::new();
        let load = |read: &str, t: usize| -> Vec<String> {
            let mut v: Vec<String> = [
                "load",
                &path,
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
        configs.push(("stream".into(), 1, load("stream", 1), image_bytes));
        for &t in &a.threads {
            for read in ["bulk", "mmap"] {
                configs.push((read.into(), t, load(read, t), image_bytes));
            }
        }
        for (name, hdfs, _) in &files.hdfs {
            let bytes = std::fs::metadata(hdfs)?.len();
            for &t in &a.threads {
                let mut args = load("bulk", t);
                args[1] = hdfs.display().to_string();
                configs.push(((*name).into(), t, args, bytes));
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
                configs.push((fmt.into(), 1, args, std::fs::metadata(p)?.len()));
            }
        }
        // Configurations take turns within each repeat, so that a noisy
        // moment of the machine does not land on one configuration alone.
        let first = rows.len();
        let mut results: Vec<Vec<Value>> = vec![Vec::new(); configs.len()];
        for rep in 0..a.repeat {
            for (k, (strategy, t, args, _)) in configs.iter().enumerate() {
                pb.set_message(format!(
                    "{n} inodes: {strategy}, {t} threads, run {}/{}",
                    rep + 1,
                    a.repeat
                ));
                results[k].extend(measure(&exe, args, 1)?);
            }
        }
        for ((strategy, t, _, bytes), runs) in configs.iter().zip(&results) {
            rows.push(row(n, strategy, *t, runs, *bytes));
        }
        let base = rows[first].seconds;
        let digest = rows[first].digest.clone();
        for r in &mut rows[first..] {
            r.speedup_vs_stream = base / r.seconds;
            if r.digest != digest {
                bail!(
                    "{n} inodes: {} with {} threads loaded digest {}, the baseline {digest}",
                    r.strategy,
                    r.threads,
                    r.digest
                );
            }
        }
    }
    pb.finish_and_clear();
    let plot_path = a.plot.clone().unwrap_or_else(|| a.dir.join("bench.svg"));
    plot::draw(&rows, &plot_path)
        .map_err(|e| anyhow::anyhow!("drawing the plot {}: {e}", plot_path.display()))?;
    if a.json {
        let v = serde_json::json!({
            "cores": cores,
            "repeat": a.repeat,
            "runs": rows,
            "saves": saves,
            "plot": plot_path.display().to_string(),
        });
        out!("{v}");
    } else {
        print_table(&rows, &saves, cores, a.repeat);
        out!("plot: {}", plot_path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn print_table(rows: &[Row], saves: &[Save], cores: usize, repeat: usize) {
    out!("medians of {repeat} runs, {cores} cores; speedup against the serial streaming baseline");
    out!(
        "{:>9} {:<9} {:<8} {:>3} {:>9} {:>11} {:>8} {:>8} {:>8} {:>9} {:>10}",
        "inodes",
        "read",
        "mode",
        "thr",
        "seconds",
        "inodes/s",
        "MB/s",
        "speedup",
        "B/inode",
        "allocs/in",
        "contended"
    );
    for r in rows {
        out!(
            "{:>9} {:<9} {:<8} {:>3} {:>9.3} {:>11.0} {:>8.0} {:>7.2}x {:>8.1} {:>9.3} {:>10}",
            r.inodes,
            r.strategy,
            r.mode,
            r.threads,
            r.seconds,
            r.inodes_per_second,
            r.mb_per_second,
            r.speedup_vs_stream,
            r.resident_bytes_per_inode,
            r.allocations_per_inode,
            r.lock_contended
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
}
