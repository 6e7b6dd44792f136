//! The `nsimage serve STORE --writable` child of `bench --server`: started
//! on a free loopback port, its stdout and stderr read on threads, its
//! checkpoint lines timestamped on arrival, its memory sampled, stopped with
//! SIGTERM or killed with SIGKILL.
//!
//! The server prints `checkpoint started txid=T` and `checkpoint finished
//! txid=T seconds=S` on stderr; each is stamped with the [`Instant`] its
//! line arrived, and at each the server's VmRSS and VmHWM are read and its
//! peak (VmHWM) reset to its current size (`5` written to
//! /proc/PID/clear_refs), so that the VmHWM read at a finished line is the
//! peak of that checkpoint alone. A `journal: N ops in M fsyncs` line
//! (cumulative; the last one counts) gives the journal's group commit.
//!
//! A member of an HA group (`bench --server --ha`) prints `nsimage serve:
//! ha ID: active at txid T (leadership at etcd revision R; caught up in S
//! s)` when it becomes active; the first such line is stamped on arrival
//! with its catch-up seconds.

use crate::cmd::bench::webhdfs::proc_status;
use anyhow::{bail, Context};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

/// The superuser the bench's server is started with.
pub const BENCH_SUPERUSER: &str = "hdfs";
use std::time::{Duration, Instant};

/// How long the server may take to recover the store and listen.
const START_TIMEOUT: Duration = Duration::from_secs(900);
/// How long the server may take to stop after SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(60);
/// Lines of stderr kept for error messages.
const TAIL: usize = 20;

/// A checkpoint line of the server, stamped on arrival.
#[derive(Clone, Debug)]
pub struct Mark {
    /// When the line arrived.
    pub at: Instant,
    /// `started` or `finished`.
    pub started: bool,
    /// The checkpoint's txid.
    pub txid: u64,
    /// The seconds the server says the checkpoint took (finished lines).
    pub server_seconds: Option<f64>,
    /// The server's VmRSS when the line arrived (0: unknown).
    pub rss: u64,
    /// The server's VmHWM when the line arrived: its peak since the
    /// previous mark (0: unknown).
    pub hwm: u64,
    /// Whether the peak was reset after this mark.
    pub reset: bool,
}

/// What the server said on stderr.
#[derive(Default)]
struct Log {
    tail: VecDeque<String>,
    marks: Vec<Mark>,
    /// The last `journal: N ops in M fsyncs` line: (N, M).
    journal: Option<(u64, u64)>,
    /// The first `active at` line.
    active: Option<Active>,
}

/// An HA member's first `active at txid T (...; caught up in S s)` line.
#[derive(Clone, Copy, Debug)]
pub struct Active {
    /// When the line arrived.
    pub at: Instant,
    /// The txid it became active at.
    pub txid: u64,
    /// The seconds it says catching up took (from winning the election to
    /// taking writes).
    pub caught_up_seconds: Option<f64>,
}

/// The `(txid, caught-up seconds)` of an HA member's `active at` line.
fn active_line(line: &str) -> Option<(u64, Option<f64>)> {
    let rest = line.strip_prefix("nsimage serve: ha ")?;
    let (_, rest) = rest.split_once(": active at txid ")?;
    let txid = rest.split_whitespace().next()?.parse().ok()?;
    let secs = rest
        .split_once("caught up in ")
        .and_then(|(_, s)| s.split_whitespace().next())
        .and_then(|s| s.parse().ok());
    Some((txid, secs))
}

/// Resets the peak resident size of `pid` to its current size; whether
/// the kernel took it.
pub fn reset_peak(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), b"5").is_ok()
}

/// Parses one stderr line into the log.
fn take_line(pid: u32, line: &str, log: &Mutex<Log>) {
    let words: Vec<&str> = line.split_whitespace().collect();
    let txid = |w: &str| w.strip_prefix("txid=").and_then(|t| t.parse::<u64>().ok());
    let mark = match words.as_slice() {
        ["checkpoint", "started", t] => txid(t).map(|t| (true, t, None)),
        ["checkpoint", "finished", t, s] => txid(t).map(|t| {
            let secs = s.strip_prefix("seconds=").and_then(|v| v.parse().ok());
            (false, t, secs)
        }),
        _ => None,
    };
    let journal = match words.as_slice() {
        ["journal:", n, "ops", "in", m, "fsyncs"] => n.parse().ok().zip(m.parse().ok()),
        _ => None,
    };
    let at = Instant::now();
    let active = active_line(line).map(|(txid, caught_up_seconds)| Active {
        at,
        txid,
        caught_up_seconds,
    });
    let stamped = mark.map(|(started, txid, server_seconds)| {
        let (rss, hwm) = (proc_status(pid, "VmRSS"), proc_status(pid, "VmHWM"));
        Mark {
            at,
            started,
            txid,
            server_seconds,
            rss,
            hwm,
            reset: reset_peak(pid),
        }
    });
    if let Ok(mut l) = log.lock() {
        if l.tail.len() == TAIL {
            l.tail.pop_front();
        }
        l.tail.push_back(line.to_string());
        l.marks.extend(stamped);
        if journal.is_some() {
            l.journal = journal;
        }
        if l.active.is_none() {
            l.active = active;
        }
    }
}

/// The running server, killed and reaped if dropped still running.
pub struct Proc {
    child: Child,
    /// The address it listens on.
    pub addr: SocketAddr,
    /// When it was spawned.
    pub spawned: Instant,
    /// When its listening line arrived (the store recovered).
    pub listening: Instant,
    log: Arc<Mutex<Log>>,
    stderr_reader: Option<JoinHandle<()>>,
}

impl Proc {
    /// Starts `exe serve STORE --writable --addr 127.0.0.1:0` (with
    /// `--checkpoint-every-secs S` when given) and waits for its listening
    /// line.
    pub fn start(
        exe: &Path,
        store: &Path,
        checkpoint_every_secs: Option<u64>,
    ) -> anyhow::Result<Proc> {
        Proc::start_with(exe, store, checkpoint_every_secs, &[])
    }

    /// [`start`](Self::start) with more arguments (an HA member's).
    pub fn start_with(
        exe: &Path,
        store: &Path,
        checkpoint_every_secs: Option<u64>,
        more: &[String],
    ) -> anyhow::Result<Proc> {
        let mut cmd = Command::new(exe);
        cmd.arg("serve")
            .arg(store)
            .args(["--writable", "--addr", "127.0.0.1:0"])
            .args(["--superuser", BENCH_SUPERUSER])
            .args(more);
        if let Some(s) = checkpoint_every_secs {
            cmd.args(["--checkpoint-every-secs", &s.to_string()]);
        }
        let spawned = Instant::now();
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {} serve --writable", exe.display()))?;
        let pid = child.id();
        let stdout = child.stdout.take().context("the server's stdout")?;
        let stderr = child.stderr.take().context("the server's stderr")?;
        let log = Arc::new(Mutex::new(Log::default()));
        let keep = Arc::clone(&log);
        let stderr_reader = std::thread::Builder::new()
            .name("server-stderr".into())
            .spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    take_line(pid, &line, &keep);
                }
            })
            .context("starting the server's stderr reader")?;
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("server-stdout".into())
            .spawn(move || {
                let mut lines = BufReader::new(stdout).lines();
                if let Some(Ok(first)) = lines.next() {
                    let _ = tx.send((Instant::now(), first));
                }
                for _ in lines.map_while(Result::ok) {}
            })
            .context("starting the server's stdout reader")?;
        let mut p = Proc {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            spawned,
            listening: spawned,
            log,
            stderr_reader: Some(stderr_reader),
        };
        let (at, line) = loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(got) => break got,
                Err(mpsc::RecvTimeoutError::Timeout) if spawned.elapsed() < START_TIMEOUT => {
                    if let Some(status) = p.child.try_wait()? {
                        bail!("the server exited ({status}): {}", p.stderr_tail());
                    }
                }
                Err(_) => {
                    if let Some(status) = p.child.try_wait()? {
                        bail!("the server exited ({status}): {}", p.stderr_tail());
                    }
                    bail!(
                        "the server printed no listening line within {} s: {}",
                        START_TIMEOUT.as_secs(),
                        p.stderr_tail()
                    )
                }
            }
        };
        p.listening = at;
        p.addr = nsimage_server::http::Listening::parse_line(&line)
            .map(|(a, _)| a)
            .with_context(|| format!("unexpected first line from the server: {line:?}"))?;
        Ok(p)
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The last lines of its stderr, joined.
    pub fn stderr_tail(&self) -> String {
        // The reader thread may still be taking the last lines.
        std::thread::sleep(Duration::from_millis(50));
        self.log
            .lock()
            .map(|l| l.tail.iter().cloned().collect::<Vec<_>>().join("\n"))
            .unwrap_or_default()
    }

    /// The checkpoint lines so far.
    pub fn marks(&self) -> Vec<Mark> {
        self.log.lock().map(|l| l.marks.clone()).unwrap_or_default()
    }

    /// The last `journal: N ops in M fsyncs` line's (N, M).
    pub fn journal(&self) -> Option<(u64, u64)> {
        self.log.lock().ok().and_then(|l| l.journal)
    }

    /// Its first `active at` line (an HA member's), once it arrived.
    pub fn active(&self) -> Option<Active> {
        self.log.lock().ok().and_then(|l| l.active)
    }

    /// Whether it has exited.
    pub fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits for the stderr reader to have read everything (the process
    /// has exited), at most a few seconds.
    fn drain(&mut self) {
        if let Some(h) = self.stderr_reader.take() {
            let t = Instant::now();
            while !h.is_finished() && t.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(10));
            }
            if h.is_finished() {
                let _ = h.join();
            }
        }
    }

    /// SIGTERM, then a bounded wait; a kill if it does not stop. Whether
    /// it stopped by itself with status 0. Its stderr is read to the end.
    pub fn stop(&mut self) -> bool {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        let mut clean = false;
        if sent {
            let t = Instant::now();
            while t.elapsed() < STOP_TIMEOUT {
                match self.child.try_wait() {
                    Ok(Some(status)) => {
                        clean = status.success();
                        break;
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                    Err(_) => break,
                }
            }
        }
        if !clean {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        self.drain();
        clean
    }

    /// SIGKILL and reap.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.drain();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Samples a process's VmRSS every `every` on a thread until stopped.
pub struct RssSampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Vec<(Instant, u64)>>>,
}

impl RssSampler {
    /// Starts sampling `pid`.
    pub fn start(pid: u32, every: Duration) -> anyhow::Result<RssSampler> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("rss-sampler".into())
            .spawn(move || {
                let mut out = Vec::new();
                while !flag.load(Ordering::Relaxed) {
                    let rss = proc_status(pid, "VmRSS");
                    if rss > 0 {
                        out.push((Instant::now(), rss));
                    }
                    std::thread::sleep(every);
                }
                out
            })
            .context("starting the RSS sampler")?;
        Ok(RssSampler {
            stop,
            handle: Some(handle),
        })
    }

    /// Stops sampling; the samples (time, bytes).
    pub fn finish(mut self) -> Vec<(Instant, u64)> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for RssSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_lines_are_parsed() {
        let log = Mutex::new(Log::default());
        // A pid that is not ours: the memory fields read as 0.
        let pid = u32::MAX;
        take_line(pid, "checkpoint started txid=42", &log);
        take_line(pid, "checkpoint finished txid=42 seconds=1.5", &log);
        take_line(pid, "checkpoint started txid=x", &log);
        take_line(pid, "journal: 900 ops in 100 fsyncs", &log);
        take_line(pid, "journal: 1000 ops in 110 fsyncs", &log);
        take_line(pid, "something else", &log);
        let l = log.lock().unwrap();
        assert_eq!(l.marks.len(), 2);
        assert!(l.marks[0].started && l.marks[0].txid == 42);
        assert!(!l.marks[1].started && l.marks[1].server_seconds == Some(1.5));
        assert_eq!(l.journal, Some((1000, 110)));
        assert_eq!(l.tail.len(), 6);
        drop(l);
        take_line(
            pid,
            "nsimage serve: ha b: active at txid 77 (leadership at etcd revision 9; caught up in 0.125 s)",
            &log,
        );
        take_line(pid, "nsimage serve: ha b: active at txid 99 (x)", &log);
        let a = log.lock().unwrap().active.unwrap();
        assert_eq!((a.txid, a.caught_up_seconds), (77, Some(0.125)));
        assert_eq!(
            active_line("nsimage serve: ha b: active at txid 5 (x)"),
            Some((5, None))
        );
        assert_eq!(active_line("nsimage serve: ha b: standby: why"), None);
    }
}
