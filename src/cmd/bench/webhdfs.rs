//! What the two WebHDFS benches (`--serve`, `--server`) share: the seeded
//! generator, the sample of paths a server can name, keep-alive HTTP/1.1
//! client connections, nearest-rank percentiles and /proc/PID/status
//! fields.

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use nsimage_namespace::{InodeKind, Namespace};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

/// Most paths sampled for each operation.
pub(super) const SAMPLE: usize = 10_000;
/// The longest request target sent (the server refuses longer URIs).
pub(super) const MAX_TARGET: usize = 8 * 1024;

/// A small seeded generator (SplitMix64): the sample and each client's
/// choices are the same for the same seed.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0; the modulo bias is negligible here).
    pub(super) fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).unwrap_or(0)
    }
}

/// Reservoir sampling of at most [`SAMPLE`] items.
pub(super) struct Reservoir {
    seen: usize,
    items: Vec<String>,
}

impl Reservoir {
    pub(super) fn new() -> Self {
        Reservoir {
            seen: 0,
            items: Vec::new(),
        }
    }

    pub(super) fn offer(&mut self, rng: &mut Rng, item: &str) {
        self.seen += 1;
        if self.items.len() < SAMPLE {
            self.items.push(item.to_string());
        } else {
            let k = rng.below(self.seen);
            if let Some(slot) = self.items.get_mut(k) {
                *slot = item.to_string();
            }
        }
    }
}

/// Percent-encodes a path for a request target: every byte but the
/// unreserved ones of RFC 3986 and `/` becomes `%XX`.
pub(super) fn encode_path(path: &[u8]) -> String {
    let mut out = String::with_capacity(path.len());
    for &b in path {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The sampled request targets (percent-encoded, without the query).
#[derive(Serialize, Deserialize)]
pub(super) struct Targets {
    /// Directories, for LISTSTATUS.
    pub(super) dirs: Vec<String>,
    /// Files and directories, for GETFILESTATUS.
    pub(super) stats: Vec<String>,
}

/// Draws the seeded samples from `ns`, of paths at least `min_depth`
/// components deep. Paths the server cannot name are left out: names that
/// are not UTF-8 or are `.`/`..` (WebHDFS paths are UTF-8 text), and
/// targets longer than [`MAX_TARGET`].
pub(super) fn sample(ns: &Namespace, seed: u64, min_depth: usize) -> Targets {
    let mut rng = Rng(seed ^ 0x5e4e_be4c);
    let (mut dirs, mut stats) = (Reservoir::new(), Reservoir::new());
    for slot in 0..ns.slot_count() {
        let Some(n) = ns.at(slot) else { continue };
        let kind = n.kind();
        if kind == InodeKind::Symlink {
            continue;
        }
        let Some(p) = ns.path_of(n.id()) else {
            continue;
        };
        let Ok(text) = std::str::from_utf8(&p) else {
            continue;
        };
        if text.split('/').any(|c| c == "." || c == "..") || text.contains('\0') {
            continue;
        }
        if text.split('/').filter(|c| !c.is_empty()).count() < min_depth {
            continue;
        }
        let target = format!("/webhdfs/v1{}", encode_path(&p));
        if target.len() > MAX_TARGET {
            continue;
        }
        if kind == InodeKind::Directory {
            dirs.offer(&mut rng, &target);
        }
        stats.offer(&mut rng, &target);
    }
    Targets {
        dirs: dirs.items,
        stats: stats.items,
    }
}

/// A keep-alive HTTP/1.1 connection's sending half.
pub(super) type Sender = SendRequest<Empty<Bytes>>;

/// Opens a connection to `addr` (TCP_NODELAY), its driver on a task of the
/// current runtime.
pub(super) async fn connect(addr: SocketAddr) -> anyhow::Result<Sender> {
    let stream = tokio::net::TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        // Ends when the connection closes; a failure shows on the sender.
        let _ = conn.await;
    });
    Ok(sender)
}

/// A completed answer.
pub(super) struct Answer {
    /// Its status code.
    pub(super) status: u16,
    /// Its `Location` header, when it has one that is text.
    pub(super) location: Option<String>,
    /// Its whole body.
    pub(super) body: Bytes,
}

/// One request with an empty body: the answer, or the transport error. A
/// PUT or POST says `Content-Length: 0`.
pub(super) async fn exchange(
    sender: &mut Sender,
    method: hyper::Method,
    host: &str,
    target: &str,
) -> anyhow::Result<Answer> {
    let mut req = hyper::Request::builder()
        .method(method.clone())
        .uri(target)
        .header(hyper::header::HOST, host);
    if method == hyper::Method::PUT || method == hyper::Method::POST {
        req = req.header(hyper::header::CONTENT_LENGTH, "0");
    }
    let resp = sender
        .send_request(req.body(Empty::<Bytes>::new())?)
        .await?;
    let status = resp.status().as_u16();
    let location = resp
        .headers()
        .get(hyper::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = resp.into_body().collect().await?.to_bytes();
    Ok(Answer {
        status,
        location,
        body,
    })
}

/// The `per_mille`-th per-mille of `sorted` (ascending), by nearest rank:
/// the ⌈per_mille/1000 · n⌉-th smallest; 0 when empty.
pub(super) fn nearest_rank(sorted: &[u64], per_mille: u64) -> u64 {
    let n = sorted.len() as u64;
    if n == 0 {
        return 0;
    }
    let rank = (per_mille * n).div_ceil(1000).clamp(1, n);
    sorted[usize::try_from(rank - 1).unwrap_or(0)]
}

/// A `kB` field of /proc/PID/status in bytes; 0 when unknown.
pub(super) fn proc_status(pid: u32, field: &str) -> u64 {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return 0;
    };
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(nearest_rank(&v, 500), 50);
        assert_eq!(nearest_rank(&v, 990), 99);
        assert_eq!(nearest_rank(&v, 999), 100);
        assert_eq!(nearest_rank(&[7], 500), 7);
        assert_eq!(nearest_rank(&[], 500), 0);
        assert_eq!(nearest_rank(&[1, 2, 3], 0), 1);
    }

    #[test]
    fn paths_are_percent_encoded() {
        assert_eq!(encode_path(b"/a b/c%d"), "/a%20b/c%25d");
        assert_eq!(encode_path("/é?#&+".as_bytes()), "/%C3%A9%3F%23%26%2B");
        assert_eq!(encode_path(b"/x-y_z.~1"), "/x-y_z.~1");
    }
}
