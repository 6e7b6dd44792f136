//! The server's run: the source loaded or the store recovered, the
//! runtime started, the listener bound, connections accepted (with the
//! connection cap, the header timeout, TLS handshakes and the write
//! deadline) until shutdown, then requests in flight given their grace.

use super::config::{Backend, Config, Listening, Writable, MAX_HEAD_BYTES};
use super::conns::{Busy, Connections, Guarded};
use super::deadline::WriteDeadline;
use super::dispatch::{handle, AppState, Peer};
use super::error::ServeError;
use super::tls::tls_acceptor;
use crate::identity::Groups;
use crate::live::Live;
use crate::perm::Permissions;
use crate::source::{load_image, newest_checkpoint, poll_store, Current};
use axum::body::Body;
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::convert::Infallible;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

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
        if let Some(ha) = config.ha.clone() {
            return run_ha(&source, &config, &w, ha, on_bound, shutdown);
        }
        return run_writable(&source, &config, &w, on_bound, shutdown);
    }
    let is_store = source.is_dir();
    let first = if is_store {
        newest_checkpoint(
            &source,
            &|l: &str| eprintln!("nsimage serve: {l}"),
            config.key.as_ref(),
            config.memory,
        )?
    } else {
        load_image(
            &source,
            None,
            config.key.as_ref(),
            config.md5,
            config.memory,
        )?
    };
    logger(&format!("serving {}", first.image.display()));
    let perms = config.permissions.resolve(&first.namespace);
    let current = Arc::new(Current::new(first));
    let stop = Arc::new(AtomicBool::new(false));
    let poller = is_store.then(|| {
        let (current, stop, every) = (Arc::clone(&current), Arc::clone(&stop), config.poll_every);
        let (key, memory) = (config.key.clone(), config.memory);
        std::thread::spawn(move || {
            // Store switches and refusals are always worth a line.
            poll_store(
                &source,
                &current,
                every,
                &stop,
                &|l: &str| eprintln!("nsimage serve: {l}"),
                key.as_ref(),
                memory,
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
    let (opts, fs) = store_setup(config, w);
    let live = Arc::new(Live::open(dir, fs, opts, w.policy)?);
    log_recovered(config, &live, dir, started);
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

/// How a writable server opens its store: `w`'s options with the
/// server's key when they name none, on `w`'s file system or the real
/// one.
fn store_setup(
    config: &Config,
    w: &Writable,
) -> (nsimage_store::StoreOptions, Arc<dyn nsimage_store::fs::Fs>) {
    let mut opts = w.store.clone();
    if opts.key.is_none() {
        opts.key = config.key.clone();
    }
    let fs =
        w.fs.clone()
            .unwrap_or_else(|| Arc::new(nsimage_store::fs::RealFs::default()));
    (opts, fs)
}

/// With `--log`, the recovery's line.
fn log_recovered(config: &Config, live: &Live, dir: &std::path::Path, started: Instant) {
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
}

/// Serves store `dir` as a member of the HA group `ha`: the store
/// recovered and the group joined (as a standby) before anything is
/// bound; the member's threads started once it is, with its URL; served
/// until SIGINT or SIGTERM (or until its store will not reopen), then the
/// member stopped (its lease given back, so a standby takes over at once)
/// and the store closed.
fn run_ha(
    dir: &std::path::Path,
    config: &Config,
    w: &Writable,
    ha: crate::ha::HaConfig,
    on_bound: impl FnOnce(&Listening),
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let started = Instant::now();
    let (opts, fs) = store_setup(config, w);
    let (at, policy) = (dir.to_path_buf(), w.policy);
    let opener: crate::ha::member::Opener =
        Arc::new(move || Live::open(&at, Arc::clone(&fs), opts.clone(), policy));
    let mut ha = ha;
    ha.memory = ha.memory.or(config.memory);
    let member = crate::ha::member::Member::join(ha, dir.to_path_buf(), opener, config.log)?;
    let live = member
        .live()
        .ok_or_else(|| ServeError::HaStopped("the store is not open".into()))?;
    log_recovered(config, &live, dir, started);
    let perms = live
        .store
        .with_namespace(|ns| config.permissions.resolve(ns));
    drop(live);
    // Peers serve their checkpoints to the superuser: fetched as this one.
    member.set_fetch_user(&perms.superuser);
    let starting = Arc::clone(&member);
    let mut begun = None;
    let bound = |l: &Listening| {
        let scheme = if l.tls { "https" } else { "http" };
        begun = Some(starting.start(format!("{scheme}://{}", l.addr)));
        on_bound(l);
    };
    let failed = Arc::clone(&member);
    let stop = async move {
        tokio::select! {
            () = shutdown => None,
            why = failed.failed() => Some(why),
        }
    };
    let stopped = Arc::new(parking_lot::Mutex::new(None));
    let why = Arc::clone(&stopped);
    let result = run_runtime(
        Backend::Ha(Arc::clone(&member)),
        perms,
        config,
        bound,
        async move {
            *why.lock() = stop.await;
        },
    );
    let live = member.stop();
    let closed = live.map(|l| l.close(w.checkpoint_on_exit));
    result?;
    if let Some(Err(e)) = begun {
        return Err(ServeError::Io {
            what: "starting the HA member's threads".into(),
            source: e,
        });
    }
    if let Some(why) = stopped.lock().take() {
        return Err(ServeError::HaStopped(why));
    }
    closed.transpose().map(drop).map_err(ServeError::Store)
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
    let audit = config
        .audit_log
        .as_deref()
        .map(|p| {
            crate::audit::AuditLog::open(p).map_err(|source| ServeError::Io {
                what: format!("opening the audit log {}", p.display()),
                source,
            })
        })
        .transpose()?
        .map(Arc::new);
    // Answers are computed on the blocking pool (they are CPU work over the
    // namespace); as many threads as cores (or `threads`), so that a burst of clients
    // queues instead of growing a thread (and an allocator arena) per
    // request in flight: memory stays bounded by the cores, not the load.
    // A write waits for durability off that pool (the syncer answers it).
    let cores = match config.threads {
        0 => std::thread::available_parallelism().map_or(2, usize::from),
        n => n,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .worker_threads(cores)
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
            audit,
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
        spawn_connection(stream, &app, &conns, tls.as_ref(), &graceful, config);
    }
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(config.shutdown_grace) => {}
    }
}

/// Serves one accepted connection on a task of its own: registered in
/// `conns` (closed when evicted), each request marking it busy until its
/// answer's body is sent, its socket's writes under the write deadline,
/// watched by `graceful` for shutdown; with `tls`, its handshake first,
/// within the header timeout.
fn spawn_connection(
    stream: tokio::net::TcpStream,
    app: &Router,
    conns: &Arc<Connections>,
    tls: Option<&tokio_rustls::TlsAcceptor>,
    graceful: &GracefulShutdown,
    config: &Config,
) {
    let _ = stream.set_nodelay(true);
    let peer = Peer(stream.peer_addr().ok());
    let slot = conns.add();
    let service = {
        let inner = TowerToHyperService::new(app.clone());
        let slot = Arc::clone(&slot);
        let conns = Arc::clone(conns);
        hyper::service::service_fn(move |mut req: axum::http::Request<Incoming>| {
            req.extensions_mut().insert(peer);
            let busy = Busy::begin(&slot, &conns);
            let answer = hyper::service::Service::call(&inner, req);
            async move {
                let response = answer.await?;
                Ok::<_, Infallible>(response.map(|body| Body::new(Guarded { body, _busy: busy })))
            }
        })
    };
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(config.header_timeout)
        .max_buf_size(MAX_HEAD_BYTES);
    let conns = Arc::clone(conns);
    let write_timeout = config.write_timeout;
    match tls {
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
