//! The HTTP side: an axum router on tokio, served connection by connection
//! with hyper's HTTP/1 so that every limit is set here: request heads over
//! [`MAX_HEAD_BYTES`] are refused by hyper (431), URIs over
//! [`MAX_URI_BYTES`] get 414, a client that
//! does not finish its request head within [`Config::header_timeout`] is
//! dropped, so is one that leaves a write waiting past
//! [`Config::write_timeout`] (it does not read its answer), at most [`Config::max_connections`] connections are open at
//! once (past that, a new connection takes the place of the oldest one
//! with no request in flight, so idle or slow-header connections cannot
//! keep fresh clients out), each answer is computed off the reactor (a
//! blocking task) within [`Config::request_timeout`], and a directory's
//! LISTSTATUS is streamed a bounded chunk at a time. Shutdown (SIGINT, SIGTERM) stops
//! accepting, lets requests in flight finish, and closes idle
//! connections.

use crate::error::RemoteError;
use crate::identity::{GroupSource, Groups, GroupsFileError};
use crate::live::Live;
use crate::ops::{answer, list_status_start, write_refused, ListStart, Listing};
use crate::params;
use crate::perm::{Gate, Permissions};
use crate::request::{parse, Parsed, MAX_URI_BYTES};
use crate::source::{load_image, newest_checkpoint, poll_store, Current, Served, SourceError};
use crate::writes::{self, Done};
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper::body::{Bytes, Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::Notify;

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
    fn resolve(&self, ns: &nsimage_namespace::Namespace) -> Permissions {
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
        }
    }
}

/// Errors starting the server.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Nothing could be loaded to serve.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The store of a writable server failed to open (recover).
    #[error(transparent)]
    Store(#[from] nsimage_store::StoreError),
    /// The groups file does not read.
    #[error(transparent)]
    Groups(#[from] GroupsFileError),
    /// A write of the journal, or its fsync, failed (a full disk, an I/O
    /// error): the writable server stopped, as HDFS's NameNode stops when
    /// it cannot sync its edits.
    #[error(
        "the journal could not be made durable ({0}): the server stopped. Every write \
         acknowledged before is durable and is recovered at the next start; the writes that \
         failed were answered 500 and were never seen by a reader. Restart it once the file \
         system has space again"
    )]
    JournalFailed(String),
    /// The TLS certificate or key does not read.
    #[error("{path}: {detail}")]
    Tls {
        /// The file.
        path: String,
        /// What is wrong.
        detail: String,
    },
    /// Binding or running failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

struct AppState {
    backend: Backend,
    perms: Arc<Permissions>,
    groups: Arc<Groups>,
    log: bool,
    request_timeout: Duration,
    /// The bound address (CREATE's redirect names it).
    addr: SocketAddr,
    /// Served over TLS (CREATE's redirect is to `https`).
    tls: bool,
}

/// Serves `source` (an image file, or a store directory whose newest
/// checkpoint is served and followed; with [`Config::writable`], a store
/// directory's live namespace, writable) until SIGINT or SIGTERM. `on_bound`
/// is called with the bound address once the server accepts connections.
pub fn run(
    source: PathBuf,
    config: Config,
    on_bound: impl FnOnce(&Listening),
) -> Result<(), ServeError> {
    run_until(source, config, on_bound, shutdown_signal())
}

/// [`run`], stopped when `shutdown` resolves instead of by a signal (a
/// server run inside another program, or a test).
pub fn run_until(
    source: PathBuf,
    config: Config,
    on_bound: impl FnOnce(&Listening),
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let log = config.log;
    let logger = move |line: &str| {
        if log {
            eprintln!("nsimage serve: {line}");
        }
    };
    if let Some(w) = config.writable.clone() {
        return run_writable(&source, &config, &w, on_bound, shutdown);
    }
    let is_store = source.is_dir();
    let first = if is_store {
        newest_checkpoint(
            &source,
            &|l: &str| eprintln!("nsimage serve: {l}"),
            config.key.as_ref(),
        )?
    } else {
        load_image(&source, None, config.key.as_ref())?
    };
    logger(&format!("serving {}", first.image.display()));
    let perms = config.permissions.resolve(&first.namespace);
    let current = Arc::new(Current::new(first));
    let stop = Arc::new(AtomicBool::new(false));
    let poller = is_store.then(|| {
        let (current, stop, every) = (Arc::clone(&current), Arc::clone(&stop), config.poll_every);
        let key = config.key.clone();
        std::thread::spawn(move || {
            // Store switches and refusals are always worth a line.
            poll_store(
                &source,
                &current,
                every,
                &stop,
                &|l: &str| eprintln!("nsimage serve: {l}"),
                key.as_ref(),
            )
        })
    });
    let result = run_runtime(
        Backend::Image(Arc::clone(&current)),
        perms,
        &config,
        on_bound,
        shutdown,
    );
    stop.store(true, Ordering::Relaxed);
    if let Some(p) = poller {
        let _ = p.join();
    }
    result
}

/// Serves store `dir` writable: recovered first (nothing is bound before
/// recovery is done), served until SIGINT or SIGTERM, requests in flight
/// finished (their writes durable), then closed (a checkpoint only when
/// asked).
fn run_writable(
    dir: &std::path::Path,
    config: &Config,
    w: &Writable,
    on_bound: impl FnOnce(&Listening),
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let started = Instant::now();
    let mut opts = w.store.clone();
    if opts.key.is_none() {
        opts.key = config.key.clone();
    }
    let fs =
        w.fs.clone()
            .unwrap_or_else(|| Arc::new(nsimage_store::fs::RealFs::default()));
    let live = Arc::new(Live::open(dir, fs, opts, w.policy)?);
    if config.log {
        let r = live.store.report();
        eprintln!(
            "nsimage serve: recovered {} at txid {} ({} ops replayed) in {:.3} s",
            dir.display(),
            r.txid,
            r.replayed,
            started.elapsed().as_secs_f64()
        );
    }
    let perms = live
        .store
        .with_namespace(|ns| config.permissions.resolve(ns));
    // A journal failure stops the server as a signal does: no new
    // connection, requests in flight finish (reads from the durable view,
    // writes refused by the poisoned store).
    let failed = Arc::clone(&live);
    let stop = async move {
        tokio::select! {
            () = shutdown => {}
            () = failed.journal_failed() => {}
        }
    };
    let result = run_runtime(
        Backend::Store(Arc::clone(&live)),
        perms,
        config,
        on_bound,
        stop,
    );
    let closed = live.close(w.checkpoint_on_exit);
    result?;
    if let Some(e) = live.failure() {
        return Err(ServeError::JournalFailed(e));
    }
    closed.map_err(ServeError::Store)
}

/// Binds and serves `backend` on a runtime of its own until `shutdown`
/// resolves.
fn run_runtime(
    backend: Backend,
    perms: Permissions,
    config: &Config,
    on_bound: impl FnOnce(&Listening),
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let groups = Groups::new(config.permissions.groups.clone())?;
    let tls = config.tls.as_ref().map(tls_acceptor).transpose()?;
    // Answers are computed on the blocking pool (they are CPU work over the
    // namespace); as many threads as cores, so that a burst of clients
    // queues instead of growing a thread (and an allocator arena) per
    // request in flight: memory stays bounded by the cores, not the load.
    // A write waits for durability off that pool (the syncer answers it).
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(cores.max(2))
        .build()
        .map_err(|source| ServeError::Io {
            what: "starting the runtime".into(),
            source,
        })?;
    runtime.block_on(async {
        let listener = TcpListener::bind(config.addr)
            .await
            .map_err(|source| ServeError::Io {
                what: format!("binding {}", config.addr),
                source,
            })?;
        let bound = listener.local_addr().map_err(|source| ServeError::Io {
            what: "reading the bound address".into(),
            source,
        })?;
        on_bound(&Listening {
            addr: bound,
            tls: tls.is_some(),
            permissions: perms.clone(),
        });
        let app = Arc::new(AppState {
            backend,
            perms: Arc::new(perms),
            groups: Arc::new(groups),
            log: config.log,
            request_timeout: config.request_timeout,
            addr: bound,
            tls: tls.is_some(),
        });
        serve(listener, app, tls, config, shutdown).await;
        Ok(())
    })
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let int = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = int => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = int.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = int.await;
    }
}

/// The TLS side of a server with `files`: a rustls acceptor with their
/// certificate chain and key.
fn tls_acceptor(files: &TlsFiles) -> Result<tokio_rustls::TlsAcceptor, ServeError> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let bad = |path: &std::path::Path, detail: String| ServeError::Tls {
        path: path.display().to_string(),
        detail,
    };
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|e| bad(&files.cert, e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(&files.cert, e.to_string()))?;
    if certs.is_empty() {
        return Err(bad(&files.cert, "no certificate in the file".into()));
    }
    let key =
        PrivateKeyDer::from_pem_file(&files.key).map_err(|e| bad(&files.key, e.to_string()))?;
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(&files.cert, e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| bad(&files.key, e.to_string()))?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// Accepts connections on `listener` until `shutdown` resolves, then waits
/// (at most [`Config::shutdown_grace`]) for open connections to finish.
/// With `tls`, each connection's handshake comes first (within
/// [`Config::header_timeout`]); one that fails (plain HTTP to an HTTPS
/// port, say) is closed without an answer.
async fn serve(
    listener: TcpListener,
    state: Arc<AppState>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    config: &Config,
    shutdown: impl Future<Output = ()>,
) {
    // Every path and method goes to one handler, which checks the request
    // itself (WebHDFS errors, not axum's rejections).
    let app = Router::new().fallback(handle).with_state(state);
    let graceful = GracefulShutdown::new();
    let conns = Arc::new(Connections::default());
    let open_files = crate::fdlimit::raise_open_files();
    let max = crate::fdlimit::connections_within(config.max_connections, open_files);
    if max < config.max_connections {
        eprintln!(
            "nsimage serve: at most {max} connections (not {}): the open-file limit is {}",
            config.max_connections,
            open_files.unwrap_or_default()
        );
    }
    let mut shutdown = std::pin::pin!(shutdown);
    'accept: loop {
        let stream = tokio::select! {
            r = listener.accept() => match r {
                Ok((s, _)) => s,
                Err(e) => {
                    if config.log {
                        eprintln!("nsimage serve: accept: {e}");
                    }
                    // Out of descriptors: the oldest connection with no
                    // request in flight gives its one up. Otherwise (or
                    // when none can) wait a little, do not spin.
                    let freed = crate::fdlimit::is_out_of_descriptors(&e)
                        && conns.evict_oldest_idle();
                    let pause = if freed { 1 } else { 50 };
                    tokio::time::sleep(Duration::from_millis(pause)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Make room: the oldest connection without a request in flight
        // gives way; when all have one, wait until one finishes.
        while conns.open() >= max && !conns.evict_oldest_idle() {
            tokio::select! {
                () = conns.changed.notified() => {}
                () = &mut shutdown => break 'accept,
            }
        }
        let _ = stream.set_nodelay(true);
        let slot = conns.add();
        let service = {
            let inner = TowerToHyperService::new(app.clone());
            let slot = Arc::clone(&slot);
            let conns = Arc::clone(&conns);
            hyper::service::service_fn(move |req: axum::http::Request<Incoming>| {
                let busy = Busy::begin(&slot, &conns);
                let answer = hyper::service::Service::call(&inner, req);
                async move {
                    let response = answer.await?;
                    Ok::<_, Infallible>(
                        response.map(|body| Body::new(Guarded { body, _busy: busy })),
                    )
                }
            })
        };
        let mut http = http1::Builder::new();
        http.timer(TokioTimer::new())
            .header_read_timeout(config.header_timeout)
            .max_buf_size(MAX_HEAD_BYTES);
        let conns = Arc::clone(&conns);
        let write_timeout = config.write_timeout;
        match &tls {
            None => {
                let conn = http.serve_connection(
                    TokioIo::new(WriteDeadline::new(stream, write_timeout)),
                    service,
                );
                let conn = graceful.watch(conn);
                tokio::spawn(async move {
                    tokio::select! {
                        _ = conn => {}
                        () = slot.evicted.notified() => {}
                    }
                    conns.remove(slot.id);
                });
            }
            Some(acceptor) => {
                let handshake = acceptor.accept(stream);
                let header_timeout = config.header_timeout;
                let watcher = graceful.watcher();
                tokio::spawn(async move {
                    tokio::select! {
                        r = tokio::time::timeout(header_timeout, handshake) => {
                            if let Ok(Ok(s)) = r {
                                let conn = http.serve_connection(
                                    TokioIo::new(WriteDeadline::new(s, write_timeout)),
                                    service,
                                );
                                let conn = watcher.watch(conn);
                                tokio::select! {
                                    _ = conn => {}
                                    () = slot.evicted.notified() => {}
                                }
                            }
                        }
                        () = slot.evicted.notified() => {}
                    }
                    conns.remove(slot.id);
                });
            }
        }
    }
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(config.shutdown_grace) => {}
    }
}

async fn handle(
    State(st): State<Arc<AppState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let started = Instant::now();
    let result = dispatch(&st, &method, &uri, &headers, body).await;
    let mut location = None;
    let (status, body) = match result {
        Ok(Answer::Whole(text)) => (200, Body::from(text)),
        Ok(Answer::Listing(listing, from)) => (
            200,
            Body::new(ListingBody {
                listing,
                from,
                yield_next: false,
            }),
        ),
        Ok(Answer::Empty) => (200, Body::empty()),
        Ok(Answer::Redirect { status, to }) => {
            location = Some(to);
            (status, Body::empty())
        }
        Err(e) => (e.status, Body::from(e.body().to_string())),
    };
    if st.log {
        let shown: String = uri.to_string().chars().take(200).collect();
        let method = crate::error::echo(method.as_str());
        eprintln!(
            "nsimage serve: {method} {shown} {status} {}us",
            started.elapsed().as_micros()
        );
    }
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (code, [(header::CONTENT_TYPE, "application/json")], body).into_response();
    if let Some(to) = location.and_then(|l| header::HeaderValue::from_str(&l).ok()) {
        response.headers_mut().insert(header::LOCATION, to);
    }
    response
}

/// A successful answer: a whole document, a directory's listing
/// streamed, an empty 200, or a status with a `Location` (CREATE's 307
/// and 201).
enum Answer {
    Whole(String),
    Listing(Listing, ListingFrom),
    Empty,
    Redirect { status: u16, to: String },
}

/// The namespace a listing is read from, a chunk at a time.
enum ListingFrom {
    /// The image it was started on.
    Image(Arc<Served>),
    /// The live store's durable view, the newest for each chunk, the
    /// caller's listing check made again with each (as HDFS checks each
    /// `getListing` batch of a WebHDFS listing): a change of permissions
    /// acknowledged while a listing streams stops it.
    Store(Arc<Live>, Box<(Gate, Parsed)>),
}

async fn dispatch(
    st: &AppState,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Body,
) -> Result<Answer, RemoteError> {
    let len = uri.path().len() + uri.query().map_or(0, |q| q.len() + 1);
    if len > MAX_URI_BYTES {
        return Err(RemoteError::uri_too_long(len, MAX_URI_BYTES));
    }
    let live = match &st.backend {
        Backend::Image(current) => {
            if method != Method::GET {
                return Err(write_refused(method.as_str()));
            }
            let parsed = parse(uri.path(), uri.query())?;
            params::check(&parsed)?;
            let gate = gate(st, &parsed).await?;
            let served = current.get();
            return timed(st, move || {
                let ns = &served.namespace;
                read(ns, &parsed, &gate, |_| {
                    ListingFrom::Image(Arc::clone(&served))
                })
            })
            .await;
        }
        Backend::Store(live) => Arc::clone(live),
    };
    let parsed = parse(uri.path(), uri.query())?;
    let (op, wanted) = params::check(&parsed)?;
    let gate = gate(st, &parsed).await?;
    let sent = match *method {
        Method::GET => params::Method::Get,
        Method::PUT => params::Method::Put,
        Method::POST => params::Method::Post,
        Method::DELETE => params::Method::Delete,
        _ => {
            return Err(RemoteError::bad_argument(format!(
                "method {} is not a WebHDFS method",
                crate::error::echo(method.as_str())
            )))
        }
    };
    if sent != wanted {
        return Err(RemoteError::bad_argument(format!(
            "Invalid value for webhdfs parameter \"op\": op={op} is not a {} operation",
            crate::error::echo(method.as_str())
        )));
    }
    if sent == params::Method::Get {
        // Answered from the durable view: never a write before it is
        // acknowledged.
        let ns = live.reader()?;
        return timed(st, move || {
            read(&ns, &parsed, &gate, |answered| {
                ListingFrom::Store(
                    Arc::clone(&live),
                    Box::new((gate.clone(), answered.clone())),
                )
            })
        })
        .await;
    }
    if op == "CREATE" || op == "APPEND" {
        if !body_is_empty(headers, body).await {
            return Err(writes::data_refused(&op));
        }
        if op == "CREATE" && parsed.param("namenoderpcaddress").is_none() {
            // Checked before the redirect: its `Location` carries only what
            // the second step takes.
            writes::create_args(&parsed)?;
            return create_redirect(st, uri, headers, &parsed);
        }
    }
    let ticket = live.begin_write();
    let store_live = Arc::clone(&live);
    let outcome = timed(st, move || {
        Ok(writes::run(&store_live.store, &op, &parsed, &gate))
    })
    .await?;
    // Answered only once durable, error or not (an earlier step of it
    // may have applied; its checks may have seen ops not yet durable).
    live.durable(ticket, outcome.txid).await?;
    live.check_failed();
    match outcome.result? {
        Done::Json(v) => Ok(Answer::Whole(v.to_string())),
        Done::Empty => Ok(Answer::Empty),
        Done::Created { location } => Ok(Answer::Redirect {
            status: 201,
            to: location,
        }),
    }
}

/// A read's answer from `ns` for `gate`'s caller; `from` names it for a
/// streamed listing, given the request as answered (a path under
/// `/.reserved/.inodes/<id>` resolved to the inode's).
fn read(
    ns: &nsimage_namespace::Namespace,
    parsed: &Parsed,
    gate: &Gate,
    from: impl FnOnce(&Parsed) -> ListingFrom,
) -> Result<Answer, RemoteError> {
    let resolved = crate::ops::resolve_reserved(ns, parsed)?;
    let parsed = resolved.as_ref().unwrap_or(parsed);
    match list_status_start(ns, parsed, gate) {
        Some(Ok(ListStart::Directory(listing))) => Ok(Answer::Listing(listing, from(parsed))),
        Some(Ok(ListStart::Whole(v))) => Ok(Answer::Whole(v.to_string())),
        Some(Err(e)) => Err(e),
        None => answer(ns, parsed, gate).map(|v| Answer::Whole(v.to_string())),
    }
}

/// The request's caller: `user.name` (HDFS's `dr.who` without one) with
/// its groups, looked up now (on the blocking pool when the system's
/// databases must be asked). A name outside HDFS's default
/// `dfs.webhdfs.user.provider.user.pattern` is refused, as WebHDFS refuses
/// it. `doas` (a proxy user) is refused unless it names the caller: simple
/// authentication has no proxy users.
async fn gate(st: &AppState, parsed: &Parsed) -> Result<Gate, RemoteError> {
    let user = parsed
        .param("user.name")
        .filter(|u| !u.is_empty())
        .unwrap_or(crate::perm::DEFAULT_USER);
    crate::perm::check_user_name("user.name", user)?;
    if let Some(d) = parsed.param("doas").filter(|d| !d.is_empty()) {
        crate::perm::check_user_name("doas", d)?;
    }
    if let Some(d) = parsed.param("doas").filter(|d| !d.is_empty() && *d != user) {
        return Err(RemoteError {
            status: 403,
            exception: "AuthorizationException",
            java_class: "org.apache.hadoop.security.authorize.AuthorizationException",
            message: format!(
                "User: {} is not allowed to impersonate {}",
                crate::error::echo(user),
                crate::error::echo(d)
            ),
        });
    }
    let groups = match st.groups.known(user) {
        Some(g) => g,
        None => {
            let (groups, name) = (Arc::clone(&st.groups), user.to_string());
            timed(st, move || Ok(groups.of(&name))).await?
        }
    };
    Ok(Gate {
        perms: Arc::clone(&st.perms),
        caller: st.perms.caller(user, groups),
    })
}

/// `work` on the blocking pool, within the request timeout.
async fn timed<T: Send + 'static>(
    st: &AppState,
    work: impl FnOnce() -> Result<T, RemoteError> + Send + 'static,
) -> Result<T, RemoteError> {
    let task = tokio::task::spawn_blocking(work);
    match tokio::time::timeout(st.request_timeout, task).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => Err(RemoteError::internal(format!("the request failed: {e}"))),
        Err(_) => Err(RemoteError::internal(format!(
            "the request took over {:?}",
            st.request_timeout
        ))),
    }
}

/// Whether a request came without data: no `Content-Length` above 0, and
/// no byte of a chunked body (read for at most a few seconds).
async fn body_is_empty(headers: &HeaderMap, body: Body) -> bool {
    if let Some(v) = headers.get(header::CONTENT_LENGTH) {
        return v.to_str().ok().and_then(|v| v.trim().parse::<u64>().ok()) == Some(0);
    }
    matches!(
        tokio::time::timeout(Duration::from_secs(5), axum::body::to_bytes(body, 0)).await,
        Ok(Ok(b)) if b.is_empty()
    )
}

/// CREATE's first step, as the NameNode answers it: 307 Temporary
/// Redirect to the "datanode" that takes the data, here this same server
/// with `namenoderpcaddress` added (the DataNode's parameter), whose PUT
/// without data creates the empty file; with `noredirect=true`, 200 and
/// the location as JSON. Nothing changes yet.
fn create_redirect(
    st: &AppState,
    uri: &Uri,
    headers: &HeaderMap,
    parsed: &Parsed,
) -> Result<Answer, RemoteError> {
    let noredirect = params::boolean(parsed, "noredirect", false)?;
    // The host the client asked, when it is a plain host[:port].
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.len() <= 255
                && h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b))
        })
        .map_or_else(|| st.addr.to_string(), str::to_string);
    let query = uri.query().unwrap_or("");
    let scheme = if st.tls { "https" } else { "http" };
    let to = format!(
        "{scheme}://{host}{}?{query}&namenoderpcaddress={}",
        uri.path(),
        st.addr
    );
    if noredirect {
        return Ok(Answer::Whole(
            serde_json::json!({ "Location": to }).to_string(),
        ));
    }
    Ok(Answer::Redirect { status: 307, to })
}

/// A directory's LISTSTATUS as a streamed body: each poll writes the next
/// chunk (at most about [`crate::ops::LISTING_CHUNK_BYTES`]), so a listing
/// holds one chunk however wide the directory and however slow the client.
/// After each chunk the next poll yields once (wakes itself and returns
/// `Pending`, which puts the connection's task at the back of its worker's
/// queue): hyper otherwise polls the body again for as long as the socket
/// takes data, and a fast client reading a wide directory would keep a
/// runtime worker to itself for the whole listing (two such listings, every
/// worker of a 2-core server). On a live store each chunk is read from the
/// durable view of that moment (writes acknowledged between chunks may move
/// entries, as between the pages of LISTSTATUS_BATCH).
struct ListingBody {
    listing: Listing,
    from: ListingFrom,
    /// A chunk was just written: yield before the next.
    yield_next: bool,
}

impl hyper::body::Body for ListingBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let this = self.get_mut();
        if this.yield_next {
            this.yield_next = false;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let listing = &mut this.listing;
        let chunk = match &this.from {
            ListingFrom::Image(served) => Ok(listing.next_chunk(&served.namespace)),
            ListingFrom::Store(live, again) => live
                .reader()
                .map_err(|e| std::io::Error::other(e.message))
                .and_then(|ns| {
                    let (gate, parsed) = &**again;
                    if let Err(e) = crate::ops::listing_check(&ns, parsed, gate) {
                        // The answer's status is sent: the stream is cut,
                        // and the client sees a broken answer, never more
                        // entries.
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::PermissionDenied,
                            e.message,
                        ));
                    }
                    Ok(listing.next_chunk(&ns))
                }),
        };
        match chunk {
            Ok(chunk) => {
                this.yield_next = chunk.is_some();
                Poll::Ready(chunk.map(|c| Ok(Frame::data(Bytes::from(c)))))
            }
            Err(e) => Poll::Ready(Some(Err(e))),
        }
    }
}

/// The open connections, oldest first, each with whether it has a request
/// in flight.
#[derive(Default)]
struct Connections {
    slots: Mutex<BTreeMap<u64, Arc<Slot>>>,
    next_id: Mutex<u64>,
    /// Signalled when a connection closes or finishes a request.
    changed: Notify,
}

/// One connection's state: [`IDLE`], [`BUSY`] or [`EVICTED`].
struct Slot {
    id: u64,
    state: AtomicU8,
    evicted: Notify,
}

const IDLE: u8 = 0;
const BUSY: u8 = 1;
const EVICTED: u8 = 2;

impl Connections {
    fn open(&self) -> usize {
        self.slots.lock().len()
    }

    fn add(&self) -> Arc<Slot> {
        let id = {
            let mut next = self.next_id.lock();
            *next = next.wrapping_add(1);
            *next
        };
        let slot = Arc::new(Slot {
            id,
            state: AtomicU8::new(IDLE),
            evicted: Notify::new(),
        });
        self.slots.lock().insert(id, Arc::clone(&slot));
        slot
    }

    fn remove(&self, id: u64) {
        self.slots.lock().remove(&id);
        self.changed.notify_one();
    }

    /// Closes the oldest connection with no request in flight; false when
    /// every connection has one.
    fn evict_oldest_idle(&self) -> bool {
        let mut slots = self.slots.lock();
        let victim = slots.iter().find_map(|(&id, s)| {
            s.state
                .compare_exchange(IDLE, EVICTED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
                .then_some(id)
        });
        match victim.and_then(|id| slots.remove(&id)) {
            Some(s) => {
                s.evicted.notify_one();
                true
            }
            None => false,
        }
    }
}

/// A request in flight on a connection (from its head to the end of its
/// answer's body): that connection is not evicted meanwhile.
struct Busy {
    slot: Arc<Slot>,
    conns: Arc<Connections>,
}

impl Busy {
    fn begin(slot: &Arc<Slot>, conns: &Arc<Connections>) -> Busy {
        // An evicted connection is closing: its state stays EVICTED.
        let _ = slot
            .state
            .compare_exchange(IDLE, BUSY, Ordering::AcqRel, Ordering::Acquire);
        Busy {
            slot: Arc::clone(slot),
            conns: Arc::clone(conns),
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let _ = self
            .slot
            .state
            .compare_exchange(BUSY, IDLE, Ordering::AcqRel, Ordering::Acquire);
        self.conns.changed.notify_one();
    }
}

/// An answer's body that keeps its connection [`Busy`] until it is sent.
struct Guarded {
    body: Body,
    _busy: Busy,
}

impl hyper::body::Body for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A connection's socket whose writes may wait at most a deadline: a
/// write (or flush) that has made no progress for the timeout fails with
/// [`std::io::ErrorKind::TimedOut`], which ends the connection (and the
/// answer it was sending, releasing what that held). Reads are as is.
struct WriteDeadline<S> {
    inner: S,
    timeout: Duration,
    /// Armed when a write first waits; cleared when one goes through.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> WriteDeadline<S> {
    fn new(inner: S, timeout: Duration) -> Self {
        WriteDeadline {
            inner,
            timeout,
            stalled: None,
        }
    }

    /// `r` from the socket, or the timeout's error once a wait has lasted
    /// past it.
    fn check<T>(
        &mut self,
        cx: &mut Context<'_>,
        r: Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>> {
        if r.is_ready() {
            self.stalled = None;
            return r;
        }
        let timeout = self.timeout;
        let sleep = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("the client read nothing for {timeout:?}"),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for WriteDeadline<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for WriteDeadline<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.check(cx, r)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.check(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_flush(cx);
        this.check(cx, r)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.check(cx, r)
    }
}
