//! `nsimage bench`: the arguments of every bench, and each mode sent to
//! its own module: the load bench (`load`, the default), one-path lookups
//! against a full load (`lookup`, `--lookup`), the read-only WebHDFS
//! server (`serve`, `--serve`) and the writable metadata server (`server`,
//! `--server`; `server::ha`, `--server --ha`: against an HA group on
//! etcd); `webhdfs` holds what the two server benches share, `legend` what
//! the load table's columns mean.

mod legend;
mod load;
pub use legend::long_help;
mod lookup;
mod serve;
mod server;
mod webhdfs;

use anyhow::Context;
use nsimage_namespace::Namespace;
use nsimage_store::fs::RealFs;
use nsimage_store::save::save_image;
use nsimage_testkit::generate::{generate, GenSpec};
use nsimage_writer::WriteOptions;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Namespace sizes, comma-separated (default: 200000,1000000; with
    /// --server: 5000000).
    #[arg(long, value_delimiter = ',')]
    inodes: Vec<u64>,
    /// Thread counts, comma-separated (default: 1 up to the available
    /// cores; each at most 1024).
    #[arg(long, value_delimiter = ',', value_parser = super::parse_threads)]
    threads: Vec<usize>,
    /// Loads per configuration (with --server --ha: rounds of a single and
    /// an HA run); medians are reported.
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
    /// Bench the writable metadata server instead: a store holding the
    /// generated namespace (DIR/server-N-sSEED, reused), `nsimage serve
    /// --writable` on it with background checkpoints, `--clients`
    /// keep-alive connections mixing `--writes` percent of writes (a job's
    /// output pattern in each client's own directory) with GETFILESTATUS
    /// and LISTSTATUS; latencies, ops/s and server memory during
    /// checkpoints and outside them, ops per fsync, then the restart after
    /// a SIGKILL under load against `store recover`.
    #[arg(long, conflicts_with_all = ["lookup", "serve"])]
    server: bool,
    /// With --server: the server alone against a high-availability group
    /// on etcd, side by side in one run: `--repeat` rounds (default 3,
    /// medians reported), each the measured run of --server on the store,
    /// then 3 etcd members and two servers on copies of it (an active and
    /// its standby, lease 3 s) under the same clients against the active;
    /// the standby's lag, who checkpoints, the active's write p99.9 while
    /// the standby checkpoints, and the failover (SIGKILL of the active to
    /// the first write acknowledged through the new one, with its parts).
    /// Needs etcd: `etcd` on PATH or NSIMAGE_ETCD (tests/ha/setup.sh
    /// installs it).
    #[arg(long, requires = "server")]
    ha: bool,
    /// With --serve or --server: concurrent clients, one connection each.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=4096))]
    clients: u64,
    /// With --serve or --server: seconds the clients run (default: 10;
    /// with --server: 60).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    seconds: Option<u64>,
    /// With --server: percent of the requests that are writes.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(0..=100))]
    writes: u64,
    /// With --server: the server's --checkpoint-every-secs.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    checkpoint_every_secs: u64,
    /// Also run every load on a cold page cache (rows with cache "cold"
    /// beside the "warm" ones). Before each cold run the file the load
    /// reads is taken out of the page cache: fdatasync, then
    /// posix_fadvise(POSIX_FADV_DONTNEED) on that file (no privilege
    /// needed); if pages stay resident (another process maps the file),
    /// the whole page cache is dropped through /proc/sys/vm/drop_caches,
    /// which needs root. mincore(2) checks the result: a file still
    /// resident is an error (exit 2) saying why. Before each warm run the
    /// file is read through.
    #[arg(long, conflicts_with_all = ["lookup", "serve", "server"])]
    cold: bool,
    /// Skip the compressed and encrypted copies of the image (strategies
    /// nsimage-zstd, nsimage-lz4, nsimage-aes, nsimage-zstd-aes; the
    /// encrypted ones use the key DIR/bench.key, made on first use).
    #[arg(long)]
    no_at_rest: bool,
    /// Also write FILE (SVG): the median run of each nsimage and Hadoop
    /// load configuration as a per-thread timeline (a Gantt chart of its
    /// phases, pieces, waits and read-ahead, from `load --trace`).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["lookup", "serve", "server"])]
    timeline: Option<PathBuf>,
    /// Also measure, for each size, the machine's own ceiling for a
    /// 2-thread load: two 1-thread loads of the mapped image in two
    /// processes at once against one alone and one 2-thread load, taken
    /// in turn --repeat times; reported as "ceiling" (2 x alone / the
    /// pair) and the share of it the 2-thread load reaches.
    #[arg(long, conflicts_with_all = ["lookup", "serve", "server"])]
    ceiling: bool,
}

impl Args {
    /// `--seconds`, or the default of the mode (60 with --server, else 10).
    fn seconds(&self) -> u64 {
        self.seconds.unwrap_or(if self.server { 60 } else { 10 })
    }
}
/// Sets the defaults that depend on the machine and the mode, then runs
/// the mode.
pub fn run(mut a: Args) -> anyhow::Result<ExitCode> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if a.threads.is_empty() {
        a.threads = (1..=cores).collect();
    }
    if a.inodes.is_empty() {
        a.inodes = if a.server {
            vec![5_000_000]
        } else {
            vec![200_000, 1_000_000]
        };
    }
    a.repeat = a.repeat.max(1);
    std::fs::create_dir_all(&a.dir).with_context(|| format!("creating {}", a.dir.display()))?;
    let exe = std::env::current_exe()?;
    if a.lookup {
        lookup::run(&a, &exe)?;
    } else if a.serve {
        serve::run(&a, &exe)?;
    } else if a.server && a.ha {
        server::ha::run(&a, &exe)?;
    } else if a.server {
        server::run(&a, &exe)?;
    } else {
        load::run(&a, &exe, cores)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The image `DIR/<name>-<n>-s<seed>.nsi` of the bench modes (`--lookup`,
/// `--serve`) and its namespace: loaded when it exists, else generated and
/// saved (its size and save time printed on stderr).
fn reused_image(a: &Args, name: &str, n: u64) -> anyhow::Result<(PathBuf, Namespace)> {
    let image = a.dir.join(format!("{name}-{n}-s{}.nsi", a.seed));
    if image.exists() {
        let ns = nsimage_loader::load(&image, &nsimage_loader::LoadOptions::default())
            .with_context(|| format!("loading {}", image.display()))?
            .namespace;
        return Ok((image, ns));
    }
    nsimage_testkit::generate::check_fits(n)?;
    let ns = generate(GenSpec {
        inodes: n,
        seed: a.seed,
    });
    let t = Instant::now();
    let s = save_image(&RealFs::default(), &image, &ns, &WriteOptions::default())
        .with_context(|| format!("saving {}", image.display()))?;
    // On stderr: with --json, stdout holds the JSON documents alone.
    eprintln!(
        "saved {} ({} bytes) in {:.2} s",
        image.display(),
        s.bytes,
        t.elapsed().as_secs_f64()
    );
    Ok((image, ns))
}
