//! Subcommands, their shared output helpers and the exit-code policy.

/// Prints a line on stdout; a closed pipe (`nsimage info x | head`) is not
/// an error worth a panic, so write errors are ignored.
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

mod bench;
mod convert;
mod count;
mod diff;
mod distribution;
mod du;
mod dump;
mod export;
mod find;
mod generate;
mod ha;
mod info;
mod journal;
mod keygen;
mod load;
mod lookup;
mod ls;
mod memory;
mod output;
mod peer;
mod progress;
mod serve;
mod stat;
mod store;
mod verify;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use nsimage_loader::LoadError;
use nsimage_namespace::Stats;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

/// Exit code for data that is corrupt or invalid.
pub const EXIT_DATA: u8 = 1;
/// Exit code for usage and I/O errors.
pub const EXIT_USAGE_IO: u8 = 2;

#[derive(Parser)]
#[command(
    name = "nsimage",
    version,
    about = "Filesystem-namespace snapshot images"
)]
pub struct Cli {
    /// Key file of encrypted images (32 bytes, or 64 hex digits and a
    /// newline; `nsimage keygen` makes one), for every command that reads
    /// or writes one. Never the key itself on the command line.
    #[arg(long, global = true, env = "NSIMAGE_KEY_FILE", value_name = "FILE")]
    key_file: Option<std::path::PathBuf>,
    /// What is done with a Hadoop image's `.md5` sidecar, for every command
    /// that reads one: `check` (a sidecar must name the image's own file
    /// and hold its MD5, as a NameNode checks it) or `ignore` (not read,
    /// as `hdfs oiv` does: for an image copied under another name with its
    /// sidecar). An image without a sidecar is read either way.
    #[arg(long, global = true, value_name = "POLICY", default_value = "check", value_parser = ["check", "ignore"])]
    md5: String,
    #[command(subcommand)]
    cmd: Command,
}

/// `--md5`, as given to this process.
static MD5: std::sync::OnceLock<nsimage_loader::hdfs::Md5Policy> = std::sync::OnceLock::new();

/// What `--md5` says of a Hadoop image's sidecar (check, by default).
pub fn md5() -> nsimage_loader::hdfs::Md5Policy {
    MD5.get().copied().unwrap_or_default()
}

/// The key file given to this process, if any.
static KEY_FILE: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();

/// The key of `--key-file` (or `NSIMAGE_KEY_FILE`), read when first asked.
pub fn key() -> anyhow::Result<Option<nsimage_format::cipher::Key>> {
    static KEY: std::sync::OnceLock<Option<nsimage_format::cipher::Key>> =
        std::sync::OnceLock::new();
    if let Some(k) = KEY.get() {
        return Ok(k.clone());
    }
    let k = match KEY_FILE.get().and_then(Option::as_ref) {
        Some(path) => Some(nsimage_format::cipher::Key::read(path)?),
        None => None,
    };
    Ok(KEY.get_or_init(|| k).clone())
}

/// The key for writing an encrypted image: `--encrypt` needs a key file.
pub fn encryption_key(encrypt: bool) -> anyhow::Result<Option<nsimage_format::cipher::Key>> {
    if !encrypt {
        return Ok(None);
    }
    match key()? {
        Some(k) => Ok(Some(k)),
        None => anyhow::bail!("--encrypt needs a key file (--key-file FILE or NSIMAGE_KEY_FILE)"),
    }
}

/// Parses `--compress`: none, lz4, zstd or zstd:LEVEL.
pub fn parse_compression(s: &str) -> Result<nsimage_format::codec::Compression, String> {
    nsimage_format::codec::Compression::parse(s)
}

#[derive(Subcommand)]
enum Command {
    /// Generate a synthetic namespace and save it as an image.
    Generate(generate::Args),
    /// Show an image's format version, sections and sub-sections.
    Info(info::Args),
    /// Load an image into memory and report what it holds.
    Load(load::Args),
    /// Check every checksum and structural rule of an image.
    Verify(verify::Args),
    /// List a directory of an image, like `hdfs dfs -ls` (`-R` loads the
    /// whole namespace).
    Ls(ls::Args),
    /// Everything an image holds for one inode.
    Stat(stat::Args),
    /// Per-subtree counts, bytes, space consumed and quota use (streamed
    /// in bounded memory).
    Du(du::Args),
    /// Directories, files and bytes of each path's subtree, and its quotas,
    /// in the columns of `hdfs dfs -count [-q] [-h] [-v]` (streamed in
    /// bounded memory).
    Count(count::Args),
    /// Find inodes by name, type, size, time or owner (streamed in bounded
    /// memory, in file order; `--sorted` loads the whole namespace).
    Find(find::Args),
    /// Rewrite an image as nsimage or as a Hadoop fsimage (with its .md5).
    Convert(convert::Args),
    /// Dump every inode: OIV XML, OIV Delimited or JSON lines (streamed in
    /// bounded memory).
    Dump(dump::Args),
    /// Every inode as Parquet: one file, or a dataset directory (streamed
    /// in bounded memory).
    Export(export::Args),
    /// File-size histogram, with an SVG bar chart (streamed in bounded
    /// memory).
    Distribution(distribution::Args),
    /// What changed between two images of the same namespace (loads both
    /// whole namespaces).
    Diff(diff::Args),
    /// Measure load time for every strategy and thread count, against the
    /// streaming baseline and the JSON-lines and SQLite peers.
    #[command(after_long_help = bench::long_help())]
    Bench(bench::Args),
    /// A WebHDFS server on an image or a store directory (loads the whole
    /// namespace).
    Serve(serve::Args),
    /// A checkpoint store: journaled ops, atomic checkpoints, recovery.
    #[command(
        after_help = "Examples:\n  nsimage store init st --from fsimage_0000000000000001234\n  nsimage store apply st --ops 100000\n  nsimage store status st --json"
    )]
    Store(store::Args),
    /// The journal viewer.
    #[command(
        subcommand,
        after_help = "Examples:\n  nsimage journal dump st > edits.xml\n  nsimage journal dump st --json | tail -1"
    )]
    Journal(journal::Cmd),
    /// A high-availability group on etcd: its state, a manual failover.
    #[command(
        subcommand,
        after_help = "Examples:\n  nsimage ha status --ha-etcd http://127.0.0.1:2379\n  nsimage ha transfer --ha-etcd http://127.0.0.1:2379 --to nn2"
    )]
    Ha(ha::Cmd),
    /// Write a new random key file for encrypted images.
    Keygen(keygen::Args),
    /// Look one path up reading only the pieces on the way (used by the
    /// bench).
    #[command(hide = true)]
    Lookup(lookup::Args),
    /// Load a namespace from a peer format (used by the bench).
    #[command(hide = true)]
    PeerLoad(peer::Args),
}

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let _ = KEY_FILE.set(cli.key_file);
    let _ = MD5.set(nsimage_loader::hdfs::Md5Policy::parse(&cli.md5).unwrap_or_default());
    match cli.cmd {
        Command::Keygen(a) => keygen::run(a),
        Command::Generate(a) => generate::run(a),
        Command::Info(a) => info::run(a),
        Command::Load(a) => load::run(a),
        Command::Verify(a) => verify::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Ls(a) => ls::run(a),
        Command::Stat(a) => stat::run(a),
        Command::Du(a) => du::run(a),
        Command::Count(a) => count::run(a),
        Command::Find(a) => find::run(a),
        Command::Dump(a) => dump::run(a),
        Command::Export(a) => export::run(a),
        Command::Convert(a) => convert::run(a),
        Command::Distribution(a) => distribution::run(a),
        Command::Diff(a) => diff::run(a),
        Command::Lookup(a) => lookup::run(a),
        Command::PeerLoad(a) => peer::run(a),
        Command::Serve(a) => serve::run(a),
        Command::Store(c) => store::run(c),
        Command::Journal(c) => journal::run(c),
        Command::Ha(c) => ha::run(c),
    }
}

/// Maps an error to the exit code policy: data errors 1, the rest 2.
pub fn exit_code(e: &anyhow::Error) -> u8 {
    let code = |data: bool| if data { EXIT_DATA } else { EXIT_USAGE_IO };
    for cause in e.chain() {
        if let Some(s) = cause.downcast_ref::<nsimage_store::StoreError>() {
            return code(s.is_data_error());
        }
        if let Some(l) = cause.downcast_ref::<LoadError>() {
            return code(l.is_data_error());
        }
        if let Some(v) = cause.downcast_ref::<nsimage_viewer::ViewError>() {
            return code(v.is_data_error());
        }
    }
    EXIT_USAGE_IO
}

/// The error and its causes on one line, each cause once: layers whose
/// message already ends with their source's (thiserror's `{source}`) would
/// otherwise print it twice through anyhow's chain.
pub fn message(e: &anyhow::Error) -> String {
    let mut msg = String::new();
    for cause in e.chain() {
        let s = cause.to_string();
        // Only a repetition of what the line already ends with is dropped
        // (a cause that merely occurs inside an earlier message is kept).
        if s.is_empty() || msg.ends_with(&s) {
            continue;
        }
        if !msg.is_empty() {
            msg.push_str(": ");
        }
        msg.push_str(&s);
    }
    msg
}

/// Most worker threads a command accepts: far more than any machine this
/// runs on has cores, far fewer than the OS refuses to start.
pub const MAX_THREADS: usize = 1024;

/// Parses a `--threads` value (0: the available cores), refusing more than
/// [`MAX_THREADS`] with a usage error.
pub fn parse_threads(s: &str) -> Result<usize, String> {
    let n: usize = s
        .parse()
        .map_err(|e| format!("{e} (a thread count, 0 to {MAX_THREADS})"))?;
    if n > MAX_THREADS {
        return Err(format!("at most {MAX_THREADS} threads"));
    }
    Ok(n)
}

/// A spinner on stderr when it is a terminal; hidden otherwise.
pub fn spinner(msg: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new_spinner();
    pb.set_style(
        ProgressStyle::with_template("{spinner} {msg} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    pb.set_message(msg.to_string());
    pb.enable_steady_tick(Duration::from_millis(100));
    pb
}

/// The counts every namespace-producing command reports.
pub fn stats_json(
    st: &Stats,
    digest: &str,
    seconds: f64,
) -> serde_json::Map<String, serde_json::Value> {
    let v = serde_json::json!({
        "inodes": st.inodes,
        "files": st.files,
        "directories": st.directories,
        "symlinks": st.symlinks,
        "blocks": st.blocks,
        "bytes": st.bytes,
        "digest": digest,
        "seconds": seconds,
    });
    match v {
        serde_json::Value::Object(m) => m,
        _ => unreachable!("json! of an object literal is an object"),
    }
}

/// A load's phases as JSON (`load --json`, `bench --json`): each with its
/// `name`, `seconds`, `busy_seconds`, `parallel_efficiency` and
/// `serial_seconds`, the whole load's last (named `load`).
pub fn phases_json(phases: &[nsimage_loader::trace::PhaseStats]) -> serde_json::Value {
    phases
        .iter()
        .map(|p| {
            serde_json::json!({
                "name": p.name,
                "seconds": p.seconds,
                "busy_seconds": p.busy_seconds,
                "parallel_efficiency": p.parallel_efficiency,
                "serial_seconds": p.serial_seconds,
            })
        })
        .collect()
}

pub fn stats_text(st: &Stats, digest: &str) -> String {
    format!(
        "{} inodes ({} files, {} directories, {} symlinks), {} blocks, {}, digest {digest}",
        st.inodes,
        st.files,
        st.directories,
        st.symlinks,
        st.blocks,
        nsimage_viewer::text::bytes_summary(st.bytes, false)
    )
}
