//! `nsimage serve`: a read-only WebHDFS server on an image, or on a store
//! directory's newest checkpoint (followed as new ones appear); with
//! `--writable`, a WebHDFS metadata server on a store's live namespace
//! (writes journaled, checkpoints in the background).

use super::{EXIT_DATA, EXIT_USAGE_IO};
use nsimage_loader::budget::Budget;
use nsimage_loader::ReadStrategy;
use nsimage_server::ha::HaConfig;
use nsimage_server::http::{self, Config, PermissionConfig, ServeError, TlsFiles, Writable};
use nsimage_server::identity::GroupSource;
use nsimage_server::source::SourceError;
use nsimage_store::{CheckpointPolicy, StoreOptions};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  nsimage serve ns.nsi\n  nsimage serve store/ --writable --audit-log audit.log\n  nsimage serve store/ --writable --ha-etcd http://127.0.0.1:2379 --ha-id nn1"
)]
pub struct Args {
    /// Image file (nsimage or Hadoop fsimage), or a store directory.
    source: PathBuf,
    /// Address to listen on (port 0: any free port; the bound address is
    /// printed on stdout). Loopback unless an address beyond it is given
    /// here.
    #[arg(long, default_value = "127.0.0.1:5978")]
    addr: SocketAddr,
    /// Turn HDFS's permission checks off (`dfs.permissions.enabled=false`):
    /// any caller reads and changes anything, but for the ownership HDFS
    /// always checks (SETOWNER, SETPERMISSION, the ACL operations) and the
    /// xattr namespaces.
    #[arg(long)]
    no_permissions: bool,
    /// The superuser, whom no check stops [default: the owner of `/`, or
    /// `hdfs` where `/` has no owner].
    #[arg(long, value_name = "NAME")]
    superuser: Option<String>,
    /// Members of this group pass every check, as the superuser does.
    #[arg(long, value_name = "NAME", default_value = "supergroup")]
    supergroup: String,
    /// Users' groups from this file (`user: group group ...`, a user a
    /// line), read again whenever it changes; without it, the system's
    /// user and group databases (the primary group first).
    #[arg(long, value_name = "FILE")]
    groups_file: Option<PathBuf>,
    /// Serve HTTPS with this certificate chain (PEM, leaf first); needs
    /// --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// One line per request (and each store switch) on stderr, each
    /// request's with its time (UTC).
    #[arg(long)]
    log: bool,
    /// Append one line per request, answered or refused, to FILE in the
    /// NameNode's audit log form (`allowed= ugi= ip= cmd= src= dst= perm=
    /// proto=`, tab-separated; allowed=false for a refusal).
    #[arg(long, value_name = "FILE")]
    audit_log: Option<PathBuf>,
    /// Threads that answer requests, and that load a writable store's
    /// checkpoint (default: available cores; at most 1024).
    #[arg(long, default_value_t = 0, value_parser = super::parse_threads)]
    threads: usize,
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
    /// Serve a store directory writable: recover it (newest image that
    /// verifies, journal replayed), then answer reads from its live
    /// namespace and WebHDFS writes (each journaled, answered once
    /// durable).
    #[arg(long)]
    writable: bool,
    /// With --writable: a checkpoint in the background once this many ops
    /// were applied since the newest image.
    #[arg(long, requires = "writable", value_parser = clap::value_parser!(u64).range(1..))]
    checkpoint_every_ops: Option<u64>,
    /// With --writable: a checkpoint in the background every this many
    /// seconds (when there were ops since the last).
    #[arg(long, requires = "writable", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    checkpoint_every_secs: Option<u64>,
    /// With --writable: take a checkpoint at shutdown (SIGINT, SIGTERM);
    /// without it a shutdown takes none.
    #[arg(long, requires = "writable")]
    checkpoint_on_exit: bool,
    /// With --writable: write a checkpoint's image at no more than this
    /// many MB (10^6 bytes) a second, leaving the disk to the journal's
    /// fsyncs (an HA group's standby, which checkpoints beside the active,
    /// defaults to 40; without --ha-etcd the default is no limit).
    #[arg(long, value_name = "MB_PER_S", requires = "writable", value_parser = clap::value_parser!(u64).range(1..=100_000))]
    checkpoint_write_limit: Option<u64>,
    /// With --writable: join the high-availability group whose journal
    /// and election are in this etcd cluster (its client URLs, comma
    /// separated). One member is active and takes writes; the others are
    /// standbys: they apply the journal, take the checkpoints, answer
    /// writes with 403 StandbyException and take over when the active's
    /// lease expires. See docs/server.md, "High availability".
    #[arg(long, value_name = "URL,URL,...", requires_all = ["writable", "ha_id"], value_delimiter = ',')]
    ha_etcd: Vec<String>,
    /// With --ha-etcd: this member's name, unique in the group.
    #[arg(long, value_name = "NAME", requires = "ha_etcd")]
    ha_id: Option<String>,
    /// With --ha-etcd: the prefix of the group's keys in etcd.
    #[arg(
        long,
        value_name = "PREFIX",
        default_value = "/nsimage",
        requires = "ha_etcd"
    )]
    ha_prefix: String,
    /// With --ha-etcd: seconds of the leadership's lease: a silent active
    /// is replaced this long after its last renewal (etcd's least is 2).
    #[arg(long, value_name = "SECS", default_value_t = 3, requires = "ha_etcd", value_parser = clap::value_parser!(u64).range(2..=600))]
    ha_lease_secs: u64,
    /// With --ha-etcd: milliseconds one etcd request may take on one
    /// endpoint before the next is tried (a write is refused 503 once every
    /// endpoint failed).
    #[arg(long, value_name = "MS", default_value_t = 1000, requires = "ha_etcd", value_parser = clap::value_parser!(u64).range(50..=60_000))]
    ha_etcd_timeout_ms: u64,
    /// With --ha-etcd: standbys answer reads from their own namespace
    /// (behind the active's by their lag); without it they refuse reads
    /// with StandbyException, as a standby NameNode does.
    #[arg(long, requires = "ha_etcd")]
    standby_reads: bool,
    #[command(flatten)]
    memory: super::memory::MemoryLimit,
}

/// The checkpoint write limit of an HA group's members (MB a second)
/// when none is given.
const HA_CHECKPOINT_WRITE_LIMIT_MB: u64 = 40;

/// The writable server's store, opened as `nsimage store recover` opens
/// one: images mapped and the allocator trimmed after the load.
fn store_options(budget: Budget, threads: usize) -> StoreOptions {
    let mut opts = StoreOptions {
        release_memory_after_load: true,
        ..StoreOptions::default()
    };
    opts.load.budget = Some(budget);
    opts.load.threads = threads;
    // SAFETY: the store's images are written once, renamed into place and
    // never changed while a reader has them open: a purge cuts an old one
    // only under an exclusive lock that no reader's shared lock allows
    // (taken by the loader's open, held while mapped); the store holds its
    // lock while it is open, so no other nsimage process rewrites them.
    opts.load.read = unsafe { ReadStrategy::mmap() };
    opts
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let config = Config {
        addr: a.addr,
        log: a.log || std::env::var_os("NSIMAGE_SERVE_LOG").is_some(),
        max_connections: usize::try_from(a.max_connections).unwrap_or(1024),
        poll_every: Duration::from_millis(a.poll_ms),
        write_timeout: Duration::from_millis(a.write_timeout_ms),
        key: super::key()?,
        writable: a.writable.then(|| Writable {
            store: StoreOptions {
                checkpoint_write_limit: a
                    .checkpoint_write_limit
                    .or(a.ha_id.is_some().then_some(HA_CHECKPOINT_WRITE_LIMIT_MB))
                    .map(|mb| mb.saturating_mul(1_000_000)),
                ..store_options(a.memory.budget(), a.threads)
            },
            policy: CheckpointPolicy {
                every_ops: a.checkpoint_every_ops,
                every: a.checkpoint_every_secs.map(Duration::from_secs),
            },
            checkpoint_on_exit: a.checkpoint_on_exit,
            fs: None,
        }),
        permissions: PermissionConfig {
            enabled: !a.no_permissions,
            superuser: a.superuser,
            supergroup: a.supergroup,
            groups: a.groups_file.map_or(GroupSource::System, GroupSource::File),
        },
        tls: a
            .tls_cert
            .zip(a.tls_key)
            .map(|(cert, key)| TlsFiles { cert, key }),
        ha: a.ha_id.clone().map(|id| {
            let mut ha = HaConfig::new(a.ha_etcd.clone(), id);
            ha.prefix.clone_from(&a.ha_prefix);
            ha.lease = Duration::from_secs(a.ha_lease_secs);
            ha.etcd_timeout = Duration::from_millis(a.ha_etcd_timeout_ms);
            ha.standby_reads = a.standby_reads;
            ha
        }),
        memory: Some(a.memory.budget()),
        audit_log: a.audit_log,
        md5: super::md5(),
        threads: a.threads,
        ..Config::default()
    };
    if a.writable && !a.source.is_dir() {
        eprintln!(
            "nsimage: {}: --writable serves a store directory (made by `nsimage store init`)",
            a.source.display()
        );
        return Ok(ExitCode::from(EXIT_USAGE_IO));
    }
    let r = http::run(a.source, config, |l| {
        if !l.addr.ip().is_loopback() && !l.permissions.enabled {
            eprintln!(
                "nsimage serve: warning: listening on {} (beyond loopback) with permission checks off: whoever reaches it can read everything{}",
                l.addr,
                if a.writable { " and change it" } else { "" }
            );
        }
        if !l.addr.ip().is_loopback() && !l.tls {
            eprintln!(
                "nsimage serve: warning: listening on {} (beyond loopback) without TLS: user names and answers cross the network in clear text (--tls-cert, --tls-key)",
                l.addr
            );
        }
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", l.line());
        let _ = out.flush();
    });
    match r {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            eprintln!("nsimage: {e}");
            let data = match &e {
                ServeError::Source(SourceError::Image { .. }) => true,
                ServeError::Source(SourceError::TooLarge(_)) => false,
                ServeError::Store(s) => s.is_data_error(),
                _ => false,
            };
            Ok(ExitCode::from(if data { EXIT_DATA } else { EXIT_USAGE_IO }))
        }
    }
}
