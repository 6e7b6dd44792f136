//! A running `nsimage serve` for the tests: started on a free loopback
//! port, its address read from its first line, killed when dropped; plain
//! HTTP/1.1 requests with every wait bounded.
#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub const IO_TIMEOUT: Duration = Duration::from_secs(20);

/// The supergroup of [`superusers_file`].
pub const TEST_SUPERGROUP: &str = "testers";

/// A groups file in `dir` putting `users` in [`TEST_SUPERGROUP`]: with
/// `--groups-file FILE --supergroup testers`, a server lets them through
/// every permission check, for tests of HDFS's write semantics where who
/// may write is not the point (permission checks have their own tests).
pub fn superusers_file(dir: &Path, users: &[&str]) -> String {
    let p = dir.join("superusers.groups");
    let text: String = users
        .iter()
        .map(|u| format!("{u}: {TEST_SUPERGROUP}\n"))
        .collect();
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// A running `nsimage serve`, killed when dropped.
pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    stderr: mpsc::Receiver<String>,
}

impl Server {
    pub fn start(source: &Path, extra: &[&str]) -> Server {
        Server::start_limited(source, extra, None)
    }

    /// As [`Server::start`], the server's open-file limit (soft and hard)
    /// set to `open_files` first when given. The test process's own soft
    /// limit is raised to its hard one, for tests that hold many sockets.
    pub fn start_limited(source: &Path, extra: &[&str], open_files: Option<u32>) -> Server {
        nsimage_server::fdlimit::raise_open_files();
        let bin = env!("CARGO_BIN_EXE_nsimage");
        let mut cmd = match open_files {
            None => Command::new(bin),
            Some(n) => {
                let mut c = Command::new("sh");
                c.args(["-c", &format!("ulimit -n {n} && exec \"$0\" \"$@\""), bin]);
                c
            }
        };
        let mut child = cmd
            .arg("serve")
            .arg(source)
            .args(["--addr", "127.0.0.1:0", "--log"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start nsimage serve");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let stderr = child.stderr.take().unwrap();
        let (etx, erx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = etx.send(line);
            }
        });
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("serve printed its address");
        let addr = nsimage_server::http::Listening::parse_line(&line)
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .0;
        Server {
            child,
            addr,
            stderr: erx,
        }
    }

    /// A request with `method` for `target` (sent as is): status, body.
    pub fn request(&self, method: &str, target: &[u8]) -> (u16, Vec<u8>) {
        request(self.addr, method, target)
    }

    pub fn get(&self, target: &str) -> (u16, Value) {
        let (status, body) = self.request("GET", target.as_bytes());
        let v = serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("{target}: {e}: {}", String::from_utf8_lossy(&body)));
        (status, v)
    }

    pub fn ok(&self, target: &str) -> Value {
        let (status, v) = self.get(target);
        assert_eq!(status, 200, "{target}: {v}");
        v
    }

    pub fn stderr_lines(&self) -> Vec<String> {
        self.stderr.try_iter().collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request on its own connection.
pub fn request(addr: SocketAddr, method: &str, target: &[u8]) -> (u16, Vec<u8>) {
    request_observed(addr, method, target, || {})
}

/// [`request`], calling `answering` once the first bytes of the answer
/// have arrived (the rest still to come).
pub fn request_observed(
    addr: SocketAddr,
    method: &str,
    target: &[u8],
    answering: impl FnOnce(),
) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect_timeout(&addr, IO_TIMEOUT).expect("connect");
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    s.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    let mut req = Vec::new();
    req.extend_from_slice(method.as_bytes());
    req.push(b' ');
    req.extend_from_slice(target);
    req.extend_from_slice(b" HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    // The server may answer (and close) before a huge request is written.
    let _ = s.write_all(&req);
    let mut resp = vec![0; 1];
    if s.read_exact(&mut resp).is_ok() {
        answering();
        let _ = s.read_to_end(&mut resp);
    } else {
        resp.clear();
    }
    let head_end = resp
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head: {:?}", String::from_utf8_lossy(&resp)));
    let head = String::from_utf8_lossy(&resp[..head_end]).to_string();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("bad status line: {head}"));
    let body = &resp[head_end + 4..];
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    (
        status,
        if chunked {
            dechunk(body)
        } else {
            body.to_vec()
        },
    )
}

/// The payload of a `Transfer-Encoding: chunked` body.
pub fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let eol = body
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("a chunk size line");
        let size_text = String::from_utf8_lossy(&body[..eol]).to_string();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16)
            .unwrap_or_else(|_| panic!("bad chunk size {size_text:?}"));
        body = &body[eol + 2..];
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&body[..size]);
        body = &body[size + 2..];
    }
}

/// A `/proc/<pid>/status` field in kB (`VmRSS`, `VmHWM`).
pub fn proc_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// The JSON lines a successful command printed.
pub fn lines(out: &std::process::Output) -> Vec<Value> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
