//! One request: the URL and parameters checked, the op's row found in
//! the op table (`params::table`), the caller and their groups, then the
//! row's handler: a read answered from the served image or the store's
//! durable view (a directory's LISTSTATUS streamed), a write applied and
//! answered once durable, or the refusal the row and the server call for.

use super::config::Backend;
use crate::audit::{AuditEntry, AuditLog};
use crate::error::RemoteError;
use crate::identity::Groups;
use crate::live::Live;
use crate::ops::{list_status_start, write_refused, ListStart, Listing};
use crate::params::table::{self, Handler, Method as OpMethod, OpSpec};
use crate::params::values;
use crate::perm::{Gate, Permissions};
use crate::request::{parse, Parsed, MAX_URI_BYTES};
use crate::source::Served;
use crate::writes::{self, Done};
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use hyper::body::{Bytes, Frame};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// The client's address, in each request's extensions (the audit log's
/// `ip=`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Peer(pub(crate) Option<SocketAddr>);

/// What every request of a server shares.
pub(crate) struct AppState {
    pub(crate) backend: Backend,
    pub(crate) perms: Arc<Permissions>,
    pub(crate) groups: Arc<Groups>,
    pub(crate) log: bool,
    pub(crate) audit: Option<Arc<AuditLog>>,
    pub(crate) request_timeout: Duration,
    /// The bound address (CREATE's redirect names it).
    pub(crate) addr: SocketAddr,
    /// Served over TLS (CREATE's redirect is to `https`).
    pub(crate) tls: bool,
}

pub(crate) async fn handle(
    State(st): State<Arc<AppState>>,
    peer: Option<axum::extract::Extension<Peer>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let started = Instant::now();
    if let Backend::Ha(m) = &st.backend {
        if uri.path().starts_with("/nsimage/ha/") {
            return ha_answer(&st, m, &method, &uri);
        }
    }
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
    if let Some(audit) = &st.audit {
        let ip = peer
            .and_then(|p| p.0 .0)
            .map_or(std::net::IpAddr::from([0, 0, 0, 0]), |a| a.ip());
        audited(&st, audit, ip, &uri, status);
    }
    if st.log {
        let shown: String = uri.to_string().chars().take(200).collect();
        let method = crate::error::echo(method.as_str());
        eprintln!(
            "nsimage serve: {} {method} {shown} {status} {}us",
            nsimage_viewer::text::log_time(crate::ha::journal::now_ms()),
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

/// The audit log's line for the request to `uri`, answered `status`.
fn audited(st: &AppState, audit: &AuditLog, ip: std::net::IpAddr, uri: &Uri, status: u16) {
    let allowed = status < 400;
    let Ok(parsed) = parse(uri.path(), uri.query()) else {
        audit.record(&AuditEntry {
            allowed,
            user: crate::perm::DEFAULT_USER,
            ip,
            cmd: "null",
            src: uri.path().as_bytes(),
            dst: None,
            perm: None,
        });
        return;
    };
    let row = table::check(&parsed).ok();
    let cmd = row.map_or_else(
        || parsed.param("op").unwrap_or("null").to_ascii_lowercase(),
        |r| {
            r.audit
                .map_or_else(|| r.name.to_ascii_lowercase(), str::to_string)
        },
    );
    let user = parsed
        .param("user.name")
        .filter(|u| !u.is_empty())
        .unwrap_or(crate::perm::DEFAULT_USER);
    // The inode as a write that sets its owner, group or mode left it
    // (CREATE's first step, a redirect, sets nothing yet).
    let sets = row.is_some_and(|r| {
        matches!(
            r.name,
            "MKDIRS" | "CREATE" | "CREATESYMLINK" | "SETPERMISSION" | "SETOWNER"
        )
    });
    let perm = if allowed && status != 307 && sets {
        durable(st).and_then(|ns| crate::ops::owner_group_mode(&ns, &parsed))
    } else {
        None
    };
    let dst = row
        .filter(|r| matches!(r.name, "RENAME" | "CREATESYMLINK"))
        .and_then(|_| parsed.param("destination"));
    audit.record(&AuditEntry {
        allowed,
        user,
        ip,
        cmd: &cmd,
        src: &parsed.path.canonical(),
        dst,
        perm,
    });
}

/// The live store's durable namespace (none for a read-only server, or an
/// HA member reopening its store).
fn durable(st: &AppState) -> Option<Arc<nsimage_namespace::Namespace>> {
    match &st.backend {
        Backend::Image(_) => None,
        Backend::Store(live) => live.reader().ok(),
        Backend::Ha(m) => m.live().and_then(|l| l.reader().ok()),
    }
}

/// An HA member's own paths: its status, and its newest checkpoint for a
/// peer to fetch.
fn ha_answer(st: &AppState, m: &crate::ha::member::Member, method: &Method, uri: &Uri) -> Response {
    use crate::ha::fetch::{open_checkpoint, CHECKPOINT_PATH, STATUS_PATH, TXID_HEADER};
    let json = |code: StatusCode, v: serde_json::Value| {
        (
            code,
            [(header::CONTENT_TYPE, "application/json")],
            v.to_string(),
        )
            .into_response()
    };
    let path = uri.path();
    if method != Method::GET {
        return json(
            StatusCode::METHOD_NOT_ALLOWED,
            RemoteError::bad_argument(format!("{} takes GET only", crate::error::echo(path)))
                .body(),
        );
    }
    // The checkpoint is the whole namespace: its superuser's alone while
    // permission checks are on (peers fetch it as the superuser).
    let user = uri
        .query()
        .unwrap_or("")
        .split('&')
        .find_map(|kv| kv.strip_prefix("user.name="));
    if path == CHECKPOINT_PATH && st.perms.enabled && user != Some(st.perms.superuser.as_str()) {
        return json(
            StatusCode::FORBIDDEN,
            RemoteError::read_only(format!(
                "{CHECKPOINT_PATH} is served to the superuser ({}) only",
                st.perms.superuser
            ))
            .body(),
        );
    }
    match path {
        STATUS_PATH => json(StatusCode::OK, m.status()),
        CHECKPOINT_PATH => match m.live().map(|l| open_checkpoint(&l)) {
            Some(Ok((txid, len, body))) => (
                StatusCode::OK,
                [
                    (header::CONTENT_TYPE, "application/octet-stream".to_string()),
                    (header::CONTENT_LENGTH, len.to_string()),
                    (
                        header::HeaderName::from_static(TXID_HEADER),
                        txid.to_string(),
                    ),
                ],
                Body::new(body),
            )
                .into_response(),
            Some(Err(e)) => json(
                StatusCode::INTERNAL_SERVER_ERROR,
                RemoteError::internal(format!("the checkpoint: {e}")).body(),
            ),
            None => json(
                StatusCode::SERVICE_UNAVAILABLE,
                RemoteError::no_quorum("this member is reopening its store").body(),
            ),
        },
        _ => json(
            StatusCode::NOT_FOUND,
            RemoteError::not_found(format!("no such HA path: {}", crate::error::echo(path))).body(),
        ),
    }
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
    /// (Held weakly: an HA member reopening its store must not wait for
    /// a slow reader's listing; one whose store was replaced is cut.)
    Store(std::sync::Weak<Live>, Box<(Gate, Parsed)>),
}

/// The request's answer: its op's row found in the table, its
/// parameters checked, its caller known, then what the row and the server
/// call for.
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
    let parsed = parse(uri.path(), uri.query())?;
    let row = table::check(&parsed)?;
    let Some(sent) = OpMethod::of(method.as_str()) else {
        return Err(RemoteError::bad_argument(format!(
            "method {} is not a WebHDFS method",
            crate::error::echo(method.as_str())
        )));
    };
    // A write neither server serves is refused alike by both, whatever
    // it is sent with.
    if row.unsupported_write() {
        return Err(match row.handler {
            Handler::Data => writes::data_refused(row.name),
            _ => writes::write_not_served(row.name),
        });
    }
    let wrong_method = || {
        RemoteError::bad_argument(format!(
            "Invalid value for webhdfs parameter \"op\": op={} is not a {} operation",
            row.name,
            crate::error::echo(method.as_str())
        ))
    };
    match &st.backend {
        Backend::Image(current) => {
            // The read-only server refuses every write it would otherwise
            // serve, sent with GET or with its own method.
            if row.writes() {
                return Err(write_refused(row.name));
            }
            if sent != row.method {
                return Err(wrong_method());
            }
            let gate = gate(st, &parsed).await?;
            let served = current.get();
            return timed(st, move || {
                let ns = &served.namespace;
                read(ns, row, &parsed, &gate, |_| {
                    ListingFrom::Image(Arc::clone(&served))
                })
            })
            .await;
        }
        Backend::Store(_) | Backend::Ha(_) => {}
    }
    let (live, member) = match &st.backend {
        Backend::Store(live) => (Arc::clone(live), None),
        Backend::Ha(m) => (m.serving(row.writes())?, Some(Arc::clone(m))),
        Backend::Image(_) => return Err(RemoteError::internal("no store is served")),
    };
    let gate = gate(st, &parsed).await?;
    if sent != row.method {
        return Err(wrong_method());
    }
    if !row.writes() {
        // Answered from the durable view: never a write before it is
        // acknowledged.
        let ns = live.reader()?;
        return timed(st, move || {
            read(&ns, row, &parsed, &gate, |answered| {
                ListingFrom::Store(
                    Arc::downgrade(&live),
                    Box::new((gate.clone(), answered.clone())),
                )
            })
        })
        .await;
    }
    let handler = match row.handler {
        Handler::Write(f) => f,
        Handler::Create(f) => {
            if !body_is_empty(headers, body).await {
                return Err(writes::data_refused(row.name));
            }
            if parsed.param("namenoderpcaddress").is_none() {
                // Checked before the redirect: its `Location` carries only
                // what the second step takes.
                writes::create_args(&parsed)?;
                return create_redirect(st, uri, headers, &parsed);
            }
            f
        }
        Handler::Data => {
            if !body_is_empty(headers, body).await {
                return Err(writes::data_refused(row.name));
            }
            writes::carries_data
        }
        Handler::NotServed | Handler::Read(_) | Handler::List => writes::not_served,
    };
    let written = write(st, live, row, handler, parsed, gate).await;
    match member {
        // A write an HA member applied but could not acknowledge: the
        // client is told to go to the active (fenced) or to retry.
        Some(m) => written.map_err(|e| {
            if e.status == 500 {
                m.write_failed(e)
            } else {
                e
            }
        }),
        None => written,
    }
}

/// Write `row` applied on the live store by `handler`, answered once
/// durable.
async fn write(
    st: &AppState,
    live: Arc<Live>,
    row: &'static OpSpec,
    handler: writes::WriteFn,
    parsed: Parsed,
    gate: Gate,
) -> Result<Answer, RemoteError> {
    let ticket = live.begin_write();
    let store_live = Arc::clone(&live);
    let outcome = timed(st, move || {
        Ok(writes::run(
            &store_live.store,
            row.name,
            row.who,
            handler,
            &parsed,
            &gate,
        ))
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

/// A read's answer from `ns` for `gate`'s caller, as `row` calls for: its
/// check, then its handler (a write sent with GET to the read-only server
/// is refused 403, an op not served 400); `from` names the namespace for a
/// streamed listing, given the request as answered (a path under
/// `/.reserved/.inodes/<id>` resolved to the inode's).
fn read(
    ns: &nsimage_namespace::Namespace,
    row: &OpSpec,
    parsed: &Parsed,
    gate: &Gate,
    from: impl FnOnce(&Parsed) -> ListingFrom,
) -> Result<Answer, RemoteError> {
    let resolved = crate::ops::resolve_reserved(ns, parsed)?;
    let parsed = resolved.as_ref().unwrap_or(parsed);
    if row.writes() {
        return Err(write_refused(row.name));
    }
    let check = |gate: &Gate| {
        gate.check_who(
            ns,
            parsed.path.components(),
            row.who,
            parsed.params_named("xattr.name"),
        )
    };
    match row.handler {
        Handler::List => {
            check(gate)?;
            match list_status_start(ns, parsed)? {
                ListStart::Directory(listing) => Ok(Answer::Listing(listing, from(parsed))),
                ListStart::Whole(v) => Ok(Answer::Whole(v.to_string())),
            }
        }
        Handler::Read(f) => {
            check(gate)?;
            f(ns, parsed, gate).map(|v| Answer::Whole(v.to_string()))
        }
        _ => Err(crate::ops::not_served(row.name)),
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
    let noredirect = values::boolean(parsed, "noredirect", false)?;
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
                .upgrade()
                .ok_or_else(|| std::io::Error::other("the store was reopened"))
                .and_then(|live| live.reader().map_err(|e| std::io::Error::other(e.message)))
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
