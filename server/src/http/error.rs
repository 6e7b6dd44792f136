//! [`ServeError`]: why a server did not start, or stopped (a journal that
//! could not be made durable).

use crate::identity::GroupsFileError;
use crate::source::SourceError;

/// Errors starting the server.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Nothing could be loaded to serve.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The store of a writable server failed to open (recover).
    #[error(transparent)]
    Store(#[from] nsimage_store::StoreError),
    /// The groups file does not read.
    #[error(transparent)]
    Groups(#[from] GroupsFileError),
    /// A write of the journal, or its fsync, failed (a full disk, an I/O
    /// error): the writable server stopped, as HDFS's NameNode stops when
    /// it cannot sync its edits.
    #[error(
        "the journal could not be made durable ({0}): the server stopped. Every write \
         acknowledged before is durable and is recovered at the next start; the writes that \
         failed were answered 500 and were never seen by a reader. Restart it once the file \
         system has space again"
    )]
    JournalFailed(String),
    /// An HA member could not join its group, or could not go on.
    #[error("high availability: {0}")]
    Ha(#[from] crate::ha::HaError),
    /// An HA member stopped: its store would not reopen.
    #[error("high availability: {0}")]
    HaStopped(String),
    /// The TLS certificate or key does not read.
    #[error("{path}: {detail}")]
    Tls {
        /// The file.
        path: String,
        /// What is wrong.
        detail: String,
    },
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
