//! What is served: one image, or the newest checkpoint of a store
//! directory. The namespace sits behind an `Arc` swapped under a lock: a
//! request takes the current `Arc` and answers from it to the end, so a
//! switch never changes an answer half-way; the old namespace is freed
//! when its last request finishes.

use nsimage_format::cipher::Key;
use nsimage_loader::budget::Budget;
use nsimage_loader::hdfs::Md5Policy;
use nsimage_loader::{
    load, verify, ImageSource, LoadError, LoadOptions, ReadStrategy, VerifyOptions,
};
use nsimage_namespace::Namespace;
use parking_lot::RwLock;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A loaded image being served.
#[derive(Debug)]
pub struct Served {
    /// The namespace.
    pub namespace: Namespace,
    /// The image file it was loaded from.
    pub image: PathBuf,
    /// For a store's checkpoint, its txid.
    pub txid: Option<u64>,
}

/// Errors choosing or loading what to serve.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The image failed to load or verify.
    #[error("{}: {detail}", path.display())]
    Image {
        /// The image.
        path: PathBuf,
        /// Why.
        detail: String,
    },
    /// The image's namespace needs more memory than the budget allows
    /// (refused before it is read): not the image's fault, and an older
    /// checkpoint is no smaller.
    #[error(transparent)]
    TooLarge(LoadError),
    /// The image could not be read for a reason that is not its data's
    /// (an I/O error, a `.md5` sidecar naming another file).
    #[error(transparent)]
    NotData(LoadError),
    /// The store directory could not be listed, or holds no image.
    #[error("{}: {detail}", path.display())]
    Store {
        /// The directory.
        path: PathBuf,
        /// Why.
        detail: String,
    },
}

/// The namespace now served, swapped atomically.
#[derive(Debug)]
pub struct Current {
    served: RwLock<Arc<Served>>,
}

impl Current {
    /// Starts with `first`.
    pub fn new(first: Served) -> Current {
        Current {
            served: RwLock::new(Arc::new(first)),
        }
    }

    /// The namespace now served (kept alive by the caller's `Arc`).
    pub fn get(&self) -> Arc<Served> {
        Arc::clone(&self.served.read())
    }

    /// Serves `next` from now on.
    pub fn replace(&self, next: Served) {
        *self.served.write() = Arc::new(next);
    }
}

/// A load's error as the server's: a memory shortfall stays one, and what
/// is not the data's fault (I/O, a sidecar naming another file) another.
fn image_error(path: &Path, e: LoadError) -> SourceError {
    match e {
        LoadError::TooLarge { .. } => SourceError::TooLarge(e),
        e if !e.is_data_error() => SourceError::NotData(e),
        e => SourceError::Image {
            path: path.to_path_buf(),
            detail: e.to_string(),
        },
    }
}

/// Loads the image at `path` (nsimage or Hadoop fsimage; `key` unlocks an
/// encrypted one; a Hadoop image's `.md5` sidecar checked as `md5` says),
/// refused first where its load would not fit `budget`.
pub fn load_image(
    path: &Path,
    txid: Option<u64>,
    key: Option<&Key>,
    md5: Md5Policy,
    budget: Option<Budget>,
) -> Result<Served, SourceError> {
    let opts = LoadOptions {
        key: key.cloned(),
        budget,
        md5,
        ..LoadOptions::default()
    };
    let loaded = load(path, &opts).map_err(|e| image_error(path, e))?;
    Ok(Served {
        namespace: loaded.namespace,
        image: path.to_path_buf(),
        txid,
    })
}

/// Verifies, then loads a store's checkpoint image, taken only as the
/// store's own recovery takes one: its namespace must be at the txid its
/// name says (NS_INFO's last txid), and, once a checkpoint of the store is
/// served (`namespace_id`), of the same namespace; in an encrypted store
/// (`encrypted_store`) it must be encrypted. So an image of another
/// namespace, one renamed to look newer, or a plain one put in an
/// encrypted store's place, is never served. One whose load would not fit
/// `budget` is refused before it is verified.
pub fn load_checkpoint(
    path: &Path,
    txid: u64,
    namespace_id: Option<u64>,
    encrypted_store: bool,
    key: Option<&Key>,
    budget: Option<Budget>,
) -> Result<Served, SourceError> {
    let bad = |detail: String| SourceError::Image {
        path: path.to_path_buf(),
        detail,
    };
    if encrypted_store {
        // One that does not open is named by the verification below.
        if ImageSource::open(path).is_ok_and(|src| !src.is_encrypted()) {
            return Err(bad(
                "is not encrypted, in an encrypted store: not this store's checkpoint".into(),
            ));
        }
    }
    // Sized from the index before anything reads its records (a shortfall
    // stays one, not a bad image).
    let report = verify(
        path,
        &VerifyOptions {
            read: ReadStrategy::Bulk,
            key: key.cloned(),
            budget,
            md5: Md5Policy::Check,
        },
    )
    .map_err(|e| image_error(path, e))?;
    if !report.is_ok() {
        let first = report
            .problems
            .first()
            .map(|p| format!("{p:?}"))
            .unwrap_or_default();
        return Err(bad(format!(
            "fails verification ({} problems; first: {first})",
            report.problems.len()
        )));
    }
    let served = load_image(path, Some(txid), key, Md5Policy::Check, None)?;
    let info = served.namespace.info();
    if let Some(id) = namespace_id.filter(|&id| id != info.namespace_id) {
        return Err(bad(format!(
            "holds namespace {}, the store's is {id}: not this store's checkpoint",
            info.namespace_id
        )));
    }
    if info.last_txid != txid {
        return Err(bad(format!(
            "holds txid {}, its name says {txid}: not this store's checkpoint",
            info.last_txid
        )));
    }
    Ok(served)
}

/// `image_<20 digits>`: a store checkpoint's txid.
fn parse_image_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("image_")?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The store's checkpoint images, `(txid, path)`, newest first (the
/// temporary files of unfinished checkpoints are not among them).
pub fn checkpoints(dir: &Path) -> Result<Vec<(u64, PathBuf)>, SourceError> {
    let err = |detail: String| SourceError::Store {
        path: dir.to_path_buf(),
        detail,
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| err(e.to_string()))? {
        let entry = entry.map_err(|e| err(e.to_string()))?;
        if let Some(txid) = entry.file_name().to_str().and_then(parse_image_name) {
            out.push((txid, entry.path()));
        }
    }
    out.sort_by_key(|c| std::cmp::Reverse(c.0));
    Ok(out)
}

/// Whether store `dir` is encrypted at rest (as its own files say).
pub fn is_encrypted_store(dir: &Path) -> Result<bool, SourceError> {
    nsimage_store::Store::at_rest_of(dir)
        .map(|a| a.is_encrypted())
        .map_err(|e| SourceError::Store {
            path: dir.to_path_buf(),
            detail: e.to_string(),
        })
}

/// The newest checkpoint of store `dir` that verifies and loads; older
/// ones are tried when a newer one fails (each failure goes to `log`),
/// except for a namespace `budget` cannot hold, which is the error.
pub fn newest_checkpoint(
    dir: &Path,
    log: &dyn Fn(&str),
    key: Option<&Key>,
    budget: Option<Budget>,
) -> Result<Served, SourceError> {
    let encrypted = is_encrypted_store(dir)?;
    let images = checkpoints(dir)?;
    for (txid, path) in &images {
        match load_checkpoint(path, *txid, None, encrypted, key, budget) {
            Ok(s) => return Ok(s),
            Err(e @ SourceError::TooLarge(_)) => return Err(e),
            Err(e) => log(&format!("not serving {e}")),
        }
    }
    Err(SourceError::Store {
        path: dir.to_path_buf(),
        detail: if images.is_empty() {
            "holds no checkpoint image (is it a store made by `nsimage store init`?)".to_string()
        } else {
            "no checkpoint image verifies".to_string()
        },
    })
}

/// Polls store `dir` every `every` until `stop` is set: a checkpoint newer
/// than the one served is verified, loaded and then served; one that fails
/// is logged (once) and skipped, except one refused for want of memory,
/// tried again every [`RETRY_POLLS`] polls (at most every
/// [`RETRY_TOO_LARGE`]) until it fits. The new namespace is loaded beside
/// the one served: with a `budget`, it must fit what is left of it (a
/// given limit less the heap of the namespace served; the machine's
/// memory as it is then).
pub fn poll_store(
    dir: &Path,
    current: &Current,
    every: Duration,
    stop: &AtomicBool,
    log: &dyn Fn(&str),
    key: Option<&Key>,
    budget: Option<Budget>,
) {
    // A checkpoint refused for good (it does not verify), and one refused
    // for want of memory with when to try it again.
    let mut refused: Option<u64> = None;
    let mut retry: Option<(u64, Instant)> = None;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(every);
        let (served, namespace_id) = {
            let now = current.get();
            (now.txid.unwrap_or(0), now.namespace.info().namespace_id)
        };
        let newest = match checkpoints(dir) {
            Ok(list) => list.into_iter().next(),
            Err(e) => {
                log(&format!("polling the store: {e}"));
                continue;
            }
        };
        let Some((txid, path)) = newest else { continue };
        let waiting = retry.is_some_and(|(t, at)| t == txid && Instant::now() < at);
        if txid <= served || refused == Some(txid) || waiting {
            continue;
        }
        let encrypted = match is_encrypted_store(dir) {
            Ok(e) => e,
            Err(e) => {
                log(&format!("polling the store: {e}"));
                continue;
            }
        };
        // One pass over the nodes, only when a newer checkpoint is there
        // to load and a limit was given.
        let room = budget.map(|b| b.beside(|| current.get().namespace.heap_bytes() as u64));
        match load_checkpoint(&path, txid, Some(namespace_id), encrypted, key, room) {
            Ok(next) => {
                retry = None;
                current.replace(next);
                log(&format!("serving {} (txid {txid})", path.display()));
            }
            Err(SourceError::TooLarge(e)) => {
                // Memory may be freed later (another process ends, the
                // namespace served is dropped): tried again, and said
                // again, after a while.
                let wait = every.saturating_mul(RETRY_POLLS).min(RETRY_TOO_LARGE);
                retry = Some((txid, Instant::now() + wait));
                log(&format!("not serving {} for now: {e}", path.display()));
            }
            Err(e) => {
                refused = Some(txid);
                log(&format!("not serving {e}"));
            }
        }
    }
}

/// Polls the poller lets pass before it tries again a checkpoint it
/// refused for want of memory.
pub const RETRY_POLLS: u32 = 30;

/// The longest a server waits before it tries again a checkpoint it
/// refused for want of memory.
pub const RETRY_TOO_LARGE: Duration = Duration::from_secs(30);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_names() {
        assert_eq!(parse_image_name("image_00000000000000000042"), Some(42));
        assert_eq!(parse_image_name("image_00000000000000000042.tmp"), None);
        assert_eq!(parse_image_name("image_42"), None);
        assert_eq!(parse_image_name("VERSION"), None);
    }
}
