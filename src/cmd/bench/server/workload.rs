//! The clients of `bench --server`: each a tokio task with one keep-alive
//! HTTP/1.1 connection (opened again if the server closes it), mixing
//! writes and reads, every answer checked.
//!
//! Writes follow a job's output pattern (a MapReduce or Spark job writing
//! through the classic output committer), each client in its own directory
//! `/bench/PHASE/c<k>/`: for job `j`, `MKDIRS job<j>/_temporary`; then per
//! task `t` (4 to 12 tasks, seeded) `MKDIRS _temporary/attempt_<t>`,
//! `CREATE attempt_<t>/part-<t>` (the two WebHDFS steps, no data),
//! `SETPERMISSION` 644 and `SETTIMES` on it, and the task commit, a
//! `RENAME` to `job<j>/part-<t>`; then the job commit: `DELETE _temporary`
//! (recursive), `CREATE job<j>/_SUCCESS`, and retention, `DELETE
//! job<j-2>` (recursive). Reads are GETFILESTATUS and LISTSTATUS: three in
//! four of a random path of the generated namespace (the seeded sample, as
//! `bench --serve` draws it), one in four of the client's own entries (its
//! directory listed, or the status of the last entry it made).
//!
//! A request is a write with probability `writes` percent. An answer
//! counts when it is what WebHDFS answers on success: 200 and
//! `{"boolean": true}` for MKDIRS, RENAME and DELETE; 307 with a
//! `Location` and then 201 for CREATE's two steps (the CREATE's latency
//! covers both); 200 for SETPERMISSION and SETTIMES; 200 and a
//! `FileStatus` or `FileStatuses` object for the reads. Anything else, a
//! transport failure or no answer within [`REQUEST_TIMEOUT`] is an error:
//! the client records it and stops (its later writes would depend on it).

use crate::cmd::bench::webhdfs::{connect, exchange, Answer, Rng, Sender, Targets};
use hyper::Method;
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The slowest answer still counted as one; a slower one is an error.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Error descriptions kept per client.
const ERRORS_KEPT: usize = 5;
/// Answers this large are checked with the worker handed to the others.
const LARGE_ANSWER: usize = 1 << 20;
/// The directory the clients work in (the generated namespace has no such
/// top directory).
pub const BENCH_ROOT: &str = "/bench";

/// The operations, reads first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    GetFileStatus,
    ListStatus,
    Mkdirs,
    Create,
    SetPermission,
    SetTimes,
    Rename,
    Delete,
}

impl Op {
    /// Every operation, in index order.
    pub const ALL: [Op; 8] = [
        Op::GetFileStatus,
        Op::ListStatus,
        Op::Mkdirs,
        Op::Create,
        Op::SetPermission,
        Op::SetTimes,
        Op::Rename,
        Op::Delete,
    ];

    /// Its WebHDFS name.
    pub fn name(self) -> &'static str {
        match self {
            Op::GetFileStatus => "GETFILESTATUS",
            Op::ListStatus => "LISTSTATUS",
            Op::Mkdirs => "MKDIRS",
            Op::Create => "CREATE",
            Op::SetPermission => "SETPERMISSION",
            Op::SetTimes => "SETTIMES",
            Op::Rename => "RENAME",
            Op::Delete => "DELETE",
        }
    }

    /// Whether it changes the namespace.
    pub fn is_write(self) -> bool {
        !matches!(self, Op::GetFileStatus | Op::ListStatus)
    }

    fn method(self) -> Method {
        match self {
            Op::GetFileStatus | Op::ListStatus => Method::GET,
            Op::Delete => Method::DELETE,
            _ => Method::PUT,
        }
    }
}

/// One successful request: when it was sent, how long until its whole
/// answer was read.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// When the request (CREATE: its first step) was sent.
    pub sent: Instant,
    /// Nanoseconds from sending to the end of the answer.
    pub nanos: u64,
    /// The operation.
    pub op: Op,
}

/// What one client did.
#[derive(Default)]
pub struct ClientOut {
    /// Its successful requests.
    pub samples: Vec<Sample>,
    /// Requests that failed (at most one but for setup: the client stops).
    pub errors: u64,
    /// Connections opened.
    pub connects: u64,
    /// The first errors, described.
    pub first_errors: Vec<String>,
}

impl ClientOut {
    fn error(&mut self, what: String) {
        self.errors += 1;
        if self.first_errors.len() < ERRORS_KEPT {
            self.first_errors.push(what);
        }
    }
}

/// What the clients of one run share.
pub struct Ctx {
    /// The server.
    pub addr: SocketAddr,
    /// The sampled paths of the generated namespace.
    pub targets: Arc<Targets>,
    /// Percent of requests that are writes.
    pub writes: u64,
    /// Generator seed.
    pub seed: u64,
    /// The run's directory under [`BENCH_ROOT`] (`m`: measured, `k`: the
    /// load the SIGKILL lands in).
    pub phase: &'static str,
    /// No request is sent after this (set before the clients start).
    pub deadline: OnceLock<Instant>,
    /// Set just before the server is killed: from then on a failed
    /// request ends the client without counting as an error.
    pub killed: AtomicBool,
}

/// The job output pattern's next write, per client.
struct Jobs {
    dir: String,
    job: u64,
    tasks: u64,
    task: u64,
    step: Step,
    /// An entry of the client's that exists now (for its own reads).
    last_own: String,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Step {
    JobStart,
    TaskDir,
    TaskCreate,
    TaskPermission,
    TaskTimes,
    TaskCommit,
    JobCleanup,
    JobSuccess,
    JobRetire,
}

fn tasks_per_job(rng: &mut Rng) -> u64 {
    4 + rng.below(9) as u64
}

impl Jobs {
    fn new(dir: String, rng: &mut Rng) -> Jobs {
        Jobs {
            last_own: dir.clone(),
            dir,
            job: 0,
            tasks: tasks_per_job(rng),
            task: 0,
            step: Step::JobStart,
        }
    }

    fn job_dir(&self, job: u64) -> String {
        format!("{}/job{job}", self.dir)
    }

    fn attempt(&self) -> String {
        format!(
            "{}/_temporary/attempt_{}",
            self.job_dir(self.job),
            self.task
        )
    }

    fn part_name(&self) -> String {
        format!("part-{:05}", self.task)
    }

    /// The next write: operation, path, extra query parameters.
    fn next(&self) -> (Op, String, String) {
        let job = self.job_dir(self.job);
        match self.step {
            Step::JobStart => (Op::Mkdirs, format!("{job}/_temporary"), String::new()),
            Step::TaskDir => (Op::Mkdirs, self.attempt(), String::new()),
            Step::TaskCreate => (
                Op::Create,
                format!("{}/{}", self.attempt(), self.part_name()),
                "&overwrite=false".into(),
            ),
            Step::TaskPermission => (
                Op::SetPermission,
                format!("{}/{}", self.attempt(), self.part_name()),
                "&permission=644".into(),
            ),
            Step::TaskTimes => {
                let ms = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis());
                (
                    Op::SetTimes,
                    format!("{}/{}", self.attempt(), self.part_name()),
                    format!("&modificationtime={ms}&accesstime={ms}"),
                )
            }
            Step::TaskCommit => (
                Op::Rename,
                format!("{}/{}", self.attempt(), self.part_name()),
                format!("&destination={job}/{}", self.part_name()),
            ),
            Step::JobCleanup => (
                Op::Delete,
                format!("{job}/_temporary"),
                "&recursive=true".into(),
            ),
            Step::JobSuccess => (
                Op::Create,
                format!("{job}/_SUCCESS"),
                "&overwrite=false".into(),
            ),
            Step::JobRetire => (
                Op::Delete,
                self.job_dir(self.job.saturating_sub(2)),
                "&recursive=true".into(),
            ),
        }
    }

    /// Moves on after the write `next` named succeeded.
    fn done(&mut self, rng: &mut Rng) {
        let job = self.job_dir(self.job);
        match self.step {
            Step::JobStart => {
                self.last_own = job;
                self.step = Step::TaskDir;
            }
            Step::TaskDir => {
                self.last_own = self.attempt();
                self.step = Step::TaskCreate;
            }
            Step::TaskCreate => {
                self.last_own = format!("{}/{}", self.attempt(), self.part_name());
                self.step = Step::TaskPermission;
            }
            Step::TaskPermission => self.step = Step::TaskTimes,
            Step::TaskTimes => self.step = Step::TaskCommit,
            Step::TaskCommit => {
                self.last_own = format!("{job}/{}", self.part_name());
                self.task += 1;
                self.step = if self.task < self.tasks {
                    Step::TaskDir
                } else {
                    Step::JobCleanup
                };
            }
            Step::JobCleanup => self.step = Step::JobSuccess,
            Step::JobSuccess => {
                self.last_own = format!("{job}/_SUCCESS");
                self.step = if self.job >= 2 {
                    Step::JobRetire
                } else {
                    self.next_job(rng);
                    Step::JobStart
                };
            }
            Step::JobRetire => {
                self.next_job(rng);
                self.step = Step::JobStart;
            }
        }
    }

    fn next_job(&mut self, rng: &mut Rng) {
        self.job += 1;
        self.task = 0;
        self.tasks = tasks_per_job(rng);
    }
}

/// A request target for `path` (ASCII without reserved characters, or
/// already encoded) and `op`.
fn target(path: &str, op: Op, extra: &str) -> String {
    format!("/webhdfs/v1{path}?op={}{extra}", op.name())
}

/// The request target of an absolute `Location` (`http://host:port/...`)
/// or of a relative one.
fn location_target(loc: &str) -> Option<String> {
    if loc.starts_with('/') {
        return Some(loc.to_string());
    }
    let rest = loc.split_once("://")?.1;
    let slash = rest.find('/')?;
    Some(rest[slash..].to_string())
}

/// An answer's body as text for an error, shortened.
fn excerpt(body: &[u8]) -> String {
    String::from_utf8_lossy(&body[..body.len().min(300)]).replace('\n', " ")
}

/// The shape of a read's answer: one key, `FileStatus` holding an object
/// or `FileStatuses` holding `{"FileStatus": [objects]}`; deserialized only
/// to check the shape, nothing kept (a wide listing is tens of MB).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // fields are read by deserializing them
enum ReadAnswer {
    FileStatus(Object),
    FileStatuses(Statuses),
}

#[derive(serde::Deserialize)]
#[allow(non_snake_case, dead_code)] // WebHDFS's key; read by deserializing
struct Statuses {
    FileStatus: Vec<Object>,
}

/// A JSON object, its entries skipped.
struct Object;

impl<'de> serde::Deserialize<'de> for Object {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Skip;
        impl<'de> serde::de::Visitor<'de> for Skip {
            type Value = Object;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Object, A::Error> {
                while m
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Object)
            }
        }
        d.deserialize_map(Skip)
    }
}

/// Checks a final answer of `op`.
fn check(op: Op, a: &Answer) -> Result<(), String> {
    let want = if op == Op::Create { 201 } else { 200 };
    if a.status != want {
        return Err(format!(
            "status {} (not {want}): {}",
            a.status,
            excerpt(&a.body)
        ));
    }
    let not_json = |e: serde_json::Error| format!("body is not JSON ({e}): {}", excerpt(&a.body));
    match op {
        Op::Mkdirs | Op::Rename | Op::Delete => {
            let v: Value = serde_json::from_slice(&a.body).map_err(not_json)?;
            if v != serde_json::json!({ "boolean": true }) {
                return Err(format!("answer is not {{\"boolean\": true}}: {v}"));
            }
        }
        Op::GetFileStatus | Op::ListStatus => {
            let v: ReadAnswer = serde_json::from_slice(&a.body)
                .map_err(|e| format!("not a {} answer ({e}): {}", op.name(), excerpt(&a.body)))?;
            match (op, v) {
                (Op::GetFileStatus, ReadAnswer::FileStatus(_))
                | (Op::ListStatus, ReadAnswer::FileStatuses(_)) => {}
                _ => {
                    return Err(format!(
                        "no {} answer: {}",
                        if op == Op::ListStatus {
                            "FileStatuses array"
                        } else {
                            "FileStatus object"
                        },
                        excerpt(&a.body)
                    ))
                }
            }
        }
        Op::Create | Op::SetPermission | Op::SetTimes => {}
    }
    Ok(())
}

/// A live connection: the one kept if the server has not closed it, else
/// a new one.
async fn live(
    conn: &mut Option<Sender>,
    addr: SocketAddr,
    out: &mut ClientOut,
) -> anyhow::Result<Sender> {
    if let Some(mut s) = conn.take() {
        if !s.is_closed() && s.ready().await.is_ok() {
            return Ok(s);
        }
    }
    let s = connect(addr).await?;
    out.connects += 1;
    Ok(s)
}

/// One request on the kept connection (opened again if needed).
async fn send(
    conn: &mut Option<Sender>,
    addr: SocketAddr,
    host: &str,
    method: Method,
    target: &str,
    out: &mut ClientOut,
) -> Result<Answer, String> {
    let mut s = live(conn, addr, out)
        .await
        .map_err(|e| format!("connecting to {addr}: {e}"))?;
    match tokio::time::timeout(REQUEST_TIMEOUT, exchange(&mut s, method, host, target)).await {
        Ok(Ok(a)) => {
            *conn = Some(s);
            Ok(a)
        }
        Ok(Err(e)) => Err(format!("{e}")),
        Err(_) => Err(format!("no answer within {} s", REQUEST_TIMEOUT.as_secs())),
    }
}

/// One operation, CREATE's two steps included; checked. Returns when its
/// (last) answer was read whole, before the check: the check is the
/// client's work, not the server's.
async fn perform(
    conn: &mut Option<Sender>,
    addr: SocketAddr,
    host: &str,
    op: Op,
    target: &str,
    out: &mut ClientOut,
) -> Result<Instant, String> {
    let a = send(conn, addr, host, op.method(), target, out).await?;
    if op != Op::Create || a.status == 201 {
        let read = Instant::now();
        return checked(op, &a).map(|()| read);
    }
    if a.status != 307 {
        return Err(format!(
            "status {} (not 307 or 201): {}",
            a.status,
            excerpt(&a.body)
        ));
    }
    let next = a
        .location
        .as_deref()
        .and_then(location_target)
        .ok_or_else(|| format!("307 without a usable Location: {:?}", a.location))?;
    let b = send(conn, addr, host, Method::PUT, &next, out).await?;
    let read = Instant::now();
    checked(op, &b).map(|()| read)
}

/// [`check`], off the runtime's workers for a large answer (a listing of
/// a wide directory takes a core for a while to parse), so that the other
/// clients on this worker are not held up by it.
fn checked(op: Op, a: &Answer) -> Result<(), String> {
    if a.body.len() >= LARGE_ANSWER {
        tokio::task::block_in_place(|| check(op, a))
    } else {
        check(op, a)
    }
}

/// The client's directory in `phase`.
pub fn client_dir(phase: &str, index: usize) -> String {
    format!("{BENCH_ROOT}/{phase}/c{index}")
}

/// One client: its directory made, then (after `ready` and `go`) requests
/// until the deadline or the kill.
pub async fn client(
    ctx: Arc<Ctx>,
    index: usize,
    ready: Arc<tokio::sync::Barrier>,
    go: Arc<tokio::sync::Barrier>,
) -> ClientOut {
    let host = ctx.addr.to_string();
    let addr = ctx.addr;
    let mut out = ClientOut::default();
    let mut rng = Rng(ctx.seed.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ (index as u64) ^ 0x5e_4f_e4);
    let dir = client_dir(ctx.phase, index);
    let mut conn = None;
    let setup = perform(
        &mut conn,
        addr,
        &host,
        Op::Mkdirs,
        &target(&dir, Op::Mkdirs, ""),
        &mut out,
    )
    .await;
    let mut ok = match setup {
        Ok(_) => true,
        Err(e) => {
            out.error(format!("MKDIRS {dir} (setup): {e}"));
            false
        }
    };
    ready.wait().await;
    go.wait().await;
    let Some(&deadline) = ctx.deadline.get() else {
        out.error("no deadline set".into());
        return out;
    };
    let mut jobs = Jobs::new(dir.clone(), &mut rng);
    let targets = Arc::clone(&ctx.targets);
    while ok && Instant::now() < deadline && !ctx.killed.load(Ordering::Acquire) {
        let write = rng.below(100) < usize::try_from(ctx.writes).unwrap_or(100);
        let (op, t) = if write {
            let (op, path, extra) = jobs.next();
            (op, target(&path, op, &extra))
        } else {
            let list = rng.below(2) == 0;
            let op = if list {
                Op::ListStatus
            } else {
                Op::GetFileStatus
            };
            let t = if rng.below(4) == 0 {
                let path = if list { &jobs.dir } else { &jobs.last_own };
                target(path, op, "")
            } else {
                let pool = if list { &targets.dirs } else { &targets.stats };
                format!("{}?op={}", pool[rng.below(pool.len())], op.name())
            };
            (op, t)
        };
        let sent = Instant::now();
        let r = perform(&mut conn, addr, &host, op, &t, &mut out).await;
        if ctx.killed.load(Ordering::Acquire) {
            // The server is being killed: whatever came back is not counted.
            break;
        }
        match r {
            Ok(read) => {
                let nanos = u64::try_from(read.saturating_duration_since(sent).as_nanos())
                    .unwrap_or(u64::MAX);
                out.samples.push(Sample { sent, nanos, op });
                if write {
                    jobs.done(&mut rng);
                }
            }
            Err(e) => {
                out.error(format!("{} {t}: {e}", op.method()));
                ok = false;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_walks_its_tasks_and_retires_the_job_two_before() {
        let mut rng = Rng(7);
        let mut j = Jobs::new("/bench/m/c0".into(), &mut rng);
        let mut seen = Vec::new();
        // Three jobs, to the first retirement.
        while j.job < 3 {
            let (op, path, extra) = j.next();
            seen.push((op, path, extra));
            j.done(&mut rng);
        }
        assert_eq!(seen[0].0, Op::Mkdirs);
        assert_eq!(seen[0].1, "/bench/m/c0/job0/_temporary");
        let renames = seen.iter().filter(|s| s.0 == Op::Rename).count();
        assert!((3 * 4..=3 * 12).contains(&renames), "{renames}");
        let retire: Vec<_> = seen
            .iter()
            .filter(|s| s.0 == Op::Delete && !s.1.ends_with("_temporary"))
            .collect();
        assert_eq!(retire.len(), 1);
        assert_eq!(retire[0].1, "/bench/m/c0/job0");
        let commit = seen.iter().find(|s| s.0 == Op::Rename).unwrap();
        assert_eq!(commit.1, "/bench/m/c0/job0/_temporary/attempt_0/part-00000");
        assert_eq!(commit.2, "&destination=/bench/m/c0/job0/part-00000");
        assert!(j.last_own.starts_with("/bench/m/c0/job"));
    }

    #[test]
    fn locations_become_targets() {
        assert_eq!(
            location_target("http://127.0.0.1:5/webhdfs/v1/a?op=CREATE&x=1").as_deref(),
            Some("/webhdfs/v1/a?op=CREATE&x=1")
        );
        assert_eq!(
            location_target("/webhdfs/v1/a").as_deref(),
            Some("/webhdfs/v1/a")
        );
        assert_eq!(location_target("http://host"), None);
    }

    #[test]
    fn answers_are_checked() {
        let a = |status, body: &str| Answer {
            status,
            location: None,
            body: hyper::body::Bytes::from(body.to_string()),
        };
        assert!(check(Op::Mkdirs, &a(200, r#"{"boolean":true}"#)).is_ok());
        assert!(check(Op::Mkdirs, &a(200, r#"{"boolean":false}"#)).is_err());
        assert!(check(Op::Rename, &a(403, r#"{"RemoteException":{}}"#)).is_err());
        assert!(check(Op::Create, &a(201, "")).is_ok());
        assert!(check(Op::Create, &a(200, "")).is_err());
        assert!(check(Op::GetFileStatus, &a(200, r#"{"FileStatus":{}}"#)).is_ok());
        assert!(check(
            Op::ListStatus,
            &a(200, r#"{"FileStatuses":{"FileStatus":[]}}"#)
        )
        .is_ok());
        assert!(check(Op::ListStatus, &a(200, r#"{"FileStatus":{}}"#)).is_err());
    }
}
