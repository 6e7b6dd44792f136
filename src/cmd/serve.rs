//! `nsimage serve`: a read-only WebHDFS server on an image, or on a store
//! directory's newest checkpoint (followed as new ones appear).

use super::{EXIT_DATA, EXIT_USAGE_IO};
use nsimage_server::http::{self, Config, ServeError};
use nsimage_server::source::SourceError;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    /// Image file (nsimage or Hadoop fsimage), or a store directory.
    source: PathBuf,
    /// Address to listen on (port 0: any free port; the bound address is
    /// printed on stdout).
    #[arg(long, default_value = "127.0.0.1:5978")]
    addr: SocketAddr,
    /// One line per request (and each store switch) on stderr.
    #[arg(long)]
    log: bool,
    /// For a store directory: milliseconds between looks for a newer
    /// checkpoint.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..=3_600_000))]
    poll_ms: u64,
    /// Most connections open at once; past that a new connection takes
    /// the place of the oldest one with no request in flight.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=65_536))]
    max_connections: u64,
    /// Milliseconds a client may leave the server's writes waiting (not
    /// reading its answer) before its connection is dropped.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(100..=3_600_000))]
    write_timeout_ms: u64,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let config = Config {
        addr: a.addr,
        log: a.log || std::env::var_os("NSIMAGE_SERVE_LOG").is_some(),
        max_connections: usize::try_from(a.max_connections).unwrap_or(1024),
        poll_every: Duration::from_millis(a.poll_ms),
        write_timeout: Duration::from_millis(a.write_timeout_ms),
        key: super::key()?,
        ..Config::default()
    };
    let r = http::run(a.source, config, |bound| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "listening on http://{bound}/webhdfs/v1/");
        let _ = out.flush();
    });
    match r {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            eprintln!("nsimage: {e}");
            let data = matches!(e, ServeError::Source(SourceError::Image { .. }));
            Ok(ExitCode::from(if data { EXIT_DATA } else { EXIT_USAGE_IO }))
        }
    }
}
