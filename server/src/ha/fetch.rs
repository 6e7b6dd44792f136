//! Checkpoints between members: a member serves its newest image at
//! `GET /nsimage/ha/checkpoint` (its txid in the `X-Nsimage-Txid`
//! header), and a member that etcd's journal no longer reaches back to
//! fetches one, checks it as its own recovery would take a checkpoint (it
//! verifies, holds this group's namespace, and is at the txid the peer
//! named), and has its store adopt it.

use super::HaError;
use crate::live::Live;
use crate::source::{load_checkpoint, Served, SourceError};
use hyper::body::{Bytes, Frame};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// The header naming a served checkpoint's txid.
pub const TXID_HEADER: &str = "x-nsimage-txid";
/// The path a member serves its newest checkpoint at.
pub const CHECKPOINT_PATH: &str = "/nsimage/ha/checkpoint";
/// The path a member serves its status at.
pub const STATUS_PATH: &str = "/nsimage/ha/status";
/// Bytes a served checkpoint sends at a time.
const CHUNK: usize = 1 << 20;

/// Fetches `peer`'s newest checkpoint beside the store `dir`
/// (`<dir>.fetched`), checks it (refused, once fetched, where its load
/// would not fit `budget`), and returns its txid, path and namespace.
///
/// # Errors
/// [`HaError::Fetch`]: the peer did not answer, sent something short, or
/// an image that is not this group's checkpoint at the txid it named.
pub fn fetch_checkpoint(
    peer: &str,
    user: &str,
    dir: &Path,
    namespace_id: u64,
    encrypted: bool,
    key: Option<nsimage_format::cipher::Key>,
    budget: Option<nsimage_loader::budget::Budget>,
) -> Result<(u64, PathBuf, Served), HaError> {
    let bad = |detail: String| HaError::Fetch {
        peer: peer.to_string(),
        detail,
    };
    let agent = ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(2))
        .timeout_read(Duration::from_secs(30))
        .build();
    let url = format!("{}{CHECKPOINT_PATH}", peer.trim_end_matches('/'));
    let resp = agent
        .get(&url)
        .query("user.name", user)
        .call()
        .map_err(|e| bad(e.to_string()))?;
    let txid: u64 = resp
        .header(TXID_HEADER)
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| bad(format!("no {TXID_HEADER} header")))?;
    // The length is required: what is read is bounded by it.
    let length: u64 = resp
        .header("content-length")
        .and_then(|l| l.parse().ok())
        .ok_or_else(|| bad("no Content-Length".into()))?;
    let mut name = dir.as_os_str().to_owned();
    name.push(".fetched");
    let path = PathBuf::from(name);
    let mut out =
        std::fs::File::create(&path).map_err(|e| bad(format!("{}: {e}", path.display())))?;
    let got = std::io::copy(
        &mut std::io::Read::take(resp.into_reader(), length),
        &mut out,
    )
    .map_err(|e| bad(format!("reading the image: {e}")))?;
    if got != length {
        let _ = std::fs::remove_file(&path);
        return Err(bad(format!("{got} bytes of {length} sent")));
    }
    out.sync_all()
        .map_err(|e| bad(format!("{}: {e}", path.display())))?;
    drop(out);
    match load_checkpoint(
        &path,
        txid,
        Some(namespace_id),
        encrypted,
        key.as_ref(),
        budget,
    ) {
        Ok(served) => Ok((txid, path, served)),
        Err(e @ SourceError::TooLarge(_)) => {
            let _ = std::fs::remove_file(&path);
            Err(HaError::TooLarge {
                peer: peer.to_string(),
                detail: e.to_string(),
            })
        }
        Err(e) => {
            let _ = std::fs::remove_file(&path);
            Err(bad(format!("not usable: {e}")))
        }
    }
}

/// The namespace id a peer serves (from its status).
///
/// # Errors
/// [`HaError::Fetch`]: the peer did not answer with a status.
pub fn peer_namespace_id(peer: &str) -> Result<u64, HaError> {
    let url = format!("{}{STATUS_PATH}", peer.trim_end_matches('/'));
    let bad = |detail: String| HaError::Fetch {
        peer: peer.to_string(),
        detail,
    };
    let text = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(5))
        .build()
        .get(&url)
        .call()
        .map_err(|e| bad(e.to_string()))?
        .into_string()
        .map_err(|e| bad(e.to_string()))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    v["namespace_id"]
        .as_u64()
        .ok_or_else(|| bad(format!("{url} names no namespace_id")))
}

/// A member's newest checkpoint, opened to be served: its txid, length
/// and file (opened before anything is sent, with the readers' shared
/// lock, so a purge meanwhile removes it without cutting it short).
///
/// # Errors
/// The file's.
pub fn open_checkpoint(live: &Live) -> std::io::Result<(u64, u64, FileBody)> {
    let (txid, path) = live.store.newest_image();
    let file = nsimage_loader::source::open_regular(&path)?;
    let len = file.metadata()?.len();
    Ok((txid, len, FileBody { file, left: len }))
}

/// A file sent as a response body, a chunk at a time.
#[derive(Debug)]
pub struct FileBody {
    file: std::fs::File,
    left: u64,
}

impl hyper::body::Body for FileBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let this = self.get_mut();
        if this.left == 0 {
            return Poll::Ready(None);
        }
        let want = usize::try_from(this.left).map_or(CHUNK, |l| l.min(CHUNK));
        let mut buf = vec![0u8; want];
        match this.file.read(&mut buf) {
            Ok(0) => Poll::Ready(Some(Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the checkpoint got shorter while it was sent",
            )))),
            Ok(n) => {
                buf.truncate(n);
                this.left = this.left.saturating_sub(n as u64);
                Poll::Ready(Some(Ok(Frame::data(Bytes::from(buf)))))
            }
            Err(e) => Poll::Ready(Some(Err(e))),
        }
    }
}
