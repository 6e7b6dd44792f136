//! nsimage checkpoint store: what a metadata server does around its image.
//! It journals every mutation, checkpoints the namespace now and then, and at
//! restart loads the newest image that verifies and replays the journal
//! after it. File names and formats: `format-spec/STORE.md`.
//!
//! - [`io`]: the file-system trait the store writes through (real, or with
//!   injected faults for tests);
//! - [`journal`]: segment files, record framing (shared with images), bulk or
//!   streamed replay, torn-tail detection;
//! - [`op`]: journal operations applied to the namespace model;
//! - [`store`]: the `Store`: lock, group commit, checkpoints, retention,
//!   recovery;
#![forbid(unsafe_code)]

pub mod edit;
pub mod fs;
pub mod journal;
mod store;

pub use store::{RecoveryReport, Status, Store, StoreOptions};

use nsimage_format::Location;
use nsimage_namespace::NsError;
use std::path::PathBuf;

/// Errors of the store layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A journal segment or image is damaged where damage is not expected.
    #[error("{}: corrupt at {at}: {detail}", path.display())]
    Corrupt {
        path: PathBuf,
        at: Location,
        detail: String,
    },
    /// The namespace refused the operation; nothing was journaled.
    #[error("operation refused: {0}")]
    Refused(#[from] NsError),
    /// An earlier write or fsync of the journal failed: what is durable is
    /// unknown past the last acknowledged op, so the store accepts nothing
    /// more until it is reopened (which recovers the durable state).
    #[error("the journal failed earlier ({0}); reopen the store to recover")]
    Poisoned(String),
    /// Another process holds the store.
    #[error("{}: the store is locked by another process", path.display())]
    Locked { path: PathBuf },
    #[error("{}: {detail}", path.display())]
    Invalid { path: PathBuf, detail: String },
    /// The path is not a store (missing VERSION, not a directory): a usage
    /// error.
    #[error("{}: {detail}", path.display())]
    NotAStore { path: PathBuf, detail: String },
    /// No image in the store loads.
    #[error("{}: no image verifies: {detail}", path.display())]
    NoImage { path: PathBuf, detail: String },
    #[error(transparent)]
    Load(#[from] nsimage_loader::LoadError),
}

impl StoreError {
    /// True when stored data is at fault (exit code 1 in the CLI).
    pub fn is_data_error(&self) -> bool {
        matches!(
            self,
            StoreError::Corrupt { .. } | StoreError::NoImage { .. } | StoreError::Invalid { .. }
        ) || matches!(self, StoreError::Load(l) if l.is_data_error())
    }
}

/// Aborts the process at a named point when `NSIMAGE_FAILPOINT` names it,
/// so crash tests can stop a store exactly inside a checkpoint or a purge.
pub fn failpoint(name: &str) {
    static POINT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let point = POINT.get_or_init(|| std::env::var("NSIMAGE_FAILPOINT").ok());
    if point.as_deref() == Some(name) {
        eprintln!("nsimage: failpoint {name} reached, aborting");
        std::process::abort();
    }
}
