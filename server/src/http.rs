//! The HTTP side: an axum router on tokio, served connection by connection
//! with hyper's HTTP/1 so that every limit is set here: request heads over
//! [`MAX_HEAD_BYTES`] are refused by hyper (431), URIs over
//! [`MAX_URI_BYTES`] get 414, a client that
//! does not finish its request head within [`Config::header_timeout`] is
//! dropped, at most [`Config::max_connections`] connections are open at
//! once, and each answer is computed off the reactor (a blocking task)
//! within [`Config::request_timeout`]. Shutdown (SIGINT, SIGTERM) stops
//! accepting, lets requests in flight finish, and closes idle
//! connections.

use crate::error::RemoteError;
use crate::ops::{answer, write_refused};
use crate::request::{parse, MAX_URI_BYTES};
use crate::source::{load_image, newest_checkpoint, poll_store, Current, SourceError};
use axum::extract::State;
use axum::http::{header, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// Largest request head (request line and headers) hyper buffers.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// How the server runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// Address to bind (loopback by default).
    pub addr: SocketAddr,
    /// One line per request on stderr.
    pub log: bool,
    /// Connections open at once; more wait to be accepted.
    pub max_connections: usize,
    /// Time a client has to send its request head.
    pub header_timeout: Duration,
    /// Time an answer may take to compute.
    pub request_timeout: Duration,
    /// How often a store directory is polled for a newer checkpoint.
    pub poll_every: Duration,
    /// Time requests in flight get to finish at shutdown.
    pub shutdown_grace: Duration,
    /// The key of encrypted images.
    pub key: Option<nsimage_format::cipher::Key>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            addr: SocketAddr::from(([127, 0, 0, 1], 5978)),
            log: false,
            max_connections: 1024,
            header_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
            poll_every: Duration::from_secs(1),
            shutdown_grace: Duration::from_secs(10),
            key: None,
        }
    }
}

/// Errors starting the server.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Nothing could be loaded to serve.
    #[error(transparent)]
    Source(#[from] SourceError),
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
    current: Arc<Current>,
    log: bool,
    request_timeout: Duration,
}

/// Serves `source` (an image file, or a store directory whose newest
/// checkpoint is served and followed) until SIGINT or SIGTERM. `on_bound`
/// is called with the bound address once the server accepts connections.
pub fn run(
    source: PathBuf,
    config: Config,
    on_bound: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    let log = config.log;
    let logger = move |line: &str| {
        if log {
            eprintln!("nsimage serve: {line}");
        }
    };
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
    // Answers are computed on the blocking pool (they are CPU work over the
    // namespace); as many threads as cores, so that a burst of clients
    // queues instead of growing a thread (and an allocator arena) per
    // request in flight: memory stays bounded by the cores, not the load.
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(cores.max(2))
        .build()
        .map_err(|source| ServeError::Io {
            what: "starting the runtime".into(),
            source,
        })?;
    let result = runtime.block_on(async {
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
        on_bound(bound);
        serve(listener, Arc::clone(&current), &config, shutdown_signal()).await;
        Ok(())
    });
    stop.store(true, Ordering::Relaxed);
    if let Some(p) = poller {
        let _ = p.join();
    }
    result
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

/// The router: every path and method goes to one handler, which checks the
/// request itself (WebHDFS errors, not axum's rejections).
pub fn router(current: Arc<Current>, config: &Config) -> Router {
    let state = Arc::new(AppState {
        current,
        log: config.log,
        request_timeout: config.request_timeout,
    });
    Router::new().fallback(handle).with_state(state)
}

/// Accepts connections on `listener` until `shutdown` resolves, then waits
/// (at most [`Config::shutdown_grace`]) for open connections to finish.
pub async fn serve(
    listener: TcpListener,
    current: Arc<Current>,
    config: &Config,
    shutdown: impl Future<Output = ()>,
) {
    let app = router(current, config);
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(config.max_connections.max(1)));
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            p = Arc::clone(&slots).acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            r = listener.accept() => match r {
                Ok((s, _)) => s,
                Err(e) => {
                    // Out of descriptors and the like: wait, do not spin.
                    if config.log {
                        eprintln!("nsimage serve: accept: {e}");
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let conn = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(config.header_timeout)
            .max_buf_size(MAX_HEAD_BYTES)
            .serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
            drop(permit);
        });
    }
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(config.shutdown_grace) => {}
    }
}

async fn handle(State(st): State<Arc<AppState>>, method: Method, uri: Uri) -> Response {
    let started = Instant::now();
    let result = dispatch(&st, &method, &uri).await;
    let (status, body) = match result {
        Ok(body) => (200, body),
        Err(e) => (e.status, e.body().to_string()),
    };
    if st.log {
        let shown: String = uri.to_string().chars().take(200).collect();
        eprintln!(
            "nsimage serve: {method} {shown} {status} {}us",
            started.elapsed().as_micros()
        );
    }
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (code, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn dispatch(st: &AppState, method: &Method, uri: &Uri) -> Result<String, RemoteError> {
    let len = uri.path().len() + uri.query().map_or(0, |q| q.len() + 1);
    if len > MAX_URI_BYTES {
        return Err(RemoteError::uri_too_long(len, MAX_URI_BYTES));
    }
    if method != Method::GET {
        return Err(write_refused(method.as_str()));
    }
    let parsed = parse(uri.path(), uri.query())?;
    let served = st.current.get();
    let task = tokio::task::spawn_blocking(move || {
        answer(&served.namespace, &parsed).map(|v| v.to_string())
    });
    match tokio::time::timeout(st.request_timeout, task).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => Err(RemoteError::internal(format!("the request failed: {e}"))),
        Err(_) => Err(RemoteError::internal(format!(
            "the request took over {:?}",
            st.request_timeout
        ))),
    }
}
