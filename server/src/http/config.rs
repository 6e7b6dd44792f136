//! How a server is configured: its [`Config`] (address, limits,
//! timeouts, the store of a writable server, permissions, TLS), what it
//! answers from ([`Backend`]), and what it reports once bound
//! ([`Listening`]).

use crate::identity::GroupSource;
use crate::live::Live;
use crate::perm::Permissions;
use crate::source::Current;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Largest request head (request line and headers) hyper buffers.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// How the server runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// Address to bind (loopback by default).
    pub addr: SocketAddr,
    /// One line per request on stderr.
    pub log: bool,
    /// Connections open at once. A new one past the limit takes the place
    /// of the oldest connection with no request in flight (one that has
    /// not sent a whole request head, or is idle between requests); only
    /// when every connection has a request in flight does it wait.
    pub max_connections: usize,
    /// Time a client has to send its request head.
    pub header_timeout: Duration,
    /// Time an answer may take to compute.
    pub request_timeout: Duration,
    /// Time a client may leave the server's writes waiting (not reading
    /// what it asked for) before its connection is dropped, so that
    /// clients that never read cannot hold every connection.
    pub write_timeout: Duration,
    /// How often a store directory is polled for a newer checkpoint.
    pub poll_every: Duration,
    /// Time requests in flight get to finish at shutdown.
    pub shutdown_grace: Duration,
    /// The key of encrypted images.
    pub key: Option<nsimage_format::cipher::Key>,
    /// Serve a store directory writable (its live namespace, recovered at
    /// start), not its newest checkpoint read-only.
    pub writable: Option<Writable>,
    /// Who may see and change what.
    pub permissions: PermissionConfig,
    /// Serve HTTPS with this certificate and key, not plain HTTP.
    pub tls: Option<TlsFiles>,
    /// With [`writable`](Self::writable): join this HA group (the
    /// journal in etcd, one active member, standbys).
    pub ha: Option<crate::ha::HaConfig>,
    /// The memory a namespace may take: an image (or a store's checkpoint)
    /// whose load would need more is refused before it is read; `None`: no
    /// check. A writable store's recovery takes its budget from
    /// [`Writable::store`]'s load options.
    pub memory: Option<nsimage_loader::budget::Budget>,
    /// Append one line per request to this file, in the NameNode's audit
    /// log form ([`crate::audit`]).
    pub audit_log: Option<std::path::PathBuf>,
    /// Whether a Hadoop image's `.md5` sidecar is checked when it is
    /// loaded (the default) or ignored.
    pub md5: nsimage_loader::hdfs::Md5Policy,
    /// Threads that read requests and compute answers (each pool of the
    /// runtime); 0: the available cores.
    pub threads: usize,
}

/// The permission settings as given (the superuser's default needs the
/// namespace: see [`Permissions::for_namespace`]).
#[derive(Clone, Debug)]
pub struct PermissionConfig {
    /// Checks made (`--no-permissions` turns them off).
    pub enabled: bool,
    /// The superuser; `None`: the owner of `/` (`hdfs` when it has none).
    pub superuser: Option<String>,
    /// The supergroup.
    pub supergroup: String,
    /// Where users' groups come from.
    pub groups: GroupSource,
}

impl Default for PermissionConfig {
    fn default() -> Self {
        PermissionConfig {
            enabled: true,
            superuser: None,
            supergroup: crate::perm::DEFAULT_SUPERGROUP.to_string(),
            groups: GroupSource::System,
        }
    }
}

impl PermissionConfig {
    /// The settings for a server of `ns`.
    pub(crate) fn resolve(&self, ns: &nsimage_namespace::Namespace) -> Permissions {
        let mut p = Permissions::for_namespace(ns);
        p.enabled = self.enabled;
        if let Some(u) = &self.superuser {
            p.superuser.clone_from(u);
        }
        p.supergroup.clone_from(&self.supergroup);
        p
    }
}

/// A TLS certificate chain and its private key, PEM files.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The certificate chain, leaf first.
    pub cert: PathBuf,
    /// The private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// What the server listens with, once bound.
#[derive(Clone, Debug)]
pub struct Listening {
    /// The bound address.
    pub addr: SocketAddr,
    /// Whether it speaks HTTPS.
    pub tls: bool,
    /// Its permission settings.
    pub permissions: Permissions,
}

impl Listening {
    /// The start-up line: the address as a WebHDFS URL, and the
    /// permission settings.
    pub fn line(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        let p = &self.permissions;
        let perms = if p.enabled {
            format!(
                "permissions on: superuser {}, supergroup {}",
                p.superuser, p.supergroup
            )
        } else {
            "permissions off".to_string()
        };
        format!(
            "listening on {scheme}://{}/webhdfs/v1/ ({perms})",
            self.addr
        )
    }

    /// The address and whether it is HTTPS, read back from a start-up
    /// [`line`](Self::line).
    pub fn parse_line(line: &str) -> Option<(SocketAddr, bool)> {
        let url = line.trim().strip_prefix("listening on ")?;
        let url = url.split_whitespace().next()?;
        let (rest, tls) = match url.strip_prefix("https://") {
            Some(r) => (r, true),
            None => (url.strip_prefix("http://")?, false),
        };
        let addr = rest.strip_suffix("/webhdfs/v1/")?.parse().ok()?;
        Some((addr, tls))
    }
}

/// How a writable server opens its store and checkpoints.
#[derive(Clone, Default)]
pub struct Writable {
    /// How the store is opened and recovered (its key is
    /// [`Config::key`] when this one has none).
    pub store: nsimage_store::StoreOptions,
    /// When the background checkpointer takes a checkpoint.
    pub policy: nsimage_store::CheckpointPolicy,
    /// Take a checkpoint at shutdown (the only way one is taken then).
    pub checkpoint_on_exit: bool,
    /// The file system the store's files are reached through (`None`: the
    /// real one; tests give one with injected faults).
    pub fs: Option<Arc<dyn nsimage_store::fs::Fs>>,
}

impl std::fmt::Debug for Writable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writable")
            .field("store", &self.store)
            .field("policy", &self.policy)
            .field("checkpoint_on_exit", &self.checkpoint_on_exit)
            .field("fs", &self.fs.as_ref().map(|_| "injected"))
            .finish()
    }
}

/// What a server answers from.
#[derive(Clone, Debug)]
pub enum Backend {
    /// A loaded image or a store's newest checkpoint, read-only.
    Image(Arc<Current>),
    /// A store's live namespace, writable.
    Store(Arc<Live>),
    /// A member of an HA group: writable while it is the active.
    Ha(Arc<crate::ha::member::Member>),
}

impl Default for Config {
    fn default() -> Self {
        Config {
            addr: SocketAddr::from(([127, 0, 0, 1], 5978)),
            log: false,
            max_connections: 1024,
            header_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
            write_timeout: Duration::from_secs(20),
            poll_every: Duration::from_secs(1),
            shutdown_grace: Duration::from_secs(10),
            key: None,
            writable: None,
            permissions: PermissionConfig::default(),
            tls: None,
            ha: None,
            memory: None,
            audit_log: None,
            md5: nsimage_loader::hdfs::Md5Policy::Check,
            threads: 0,
        }
    }
}
