//! nsimage checkpoint store: what a metadata server does around its image.
//! It journals every mutation, checkpoints the namespace now and then, and
//! at restart loads the newest image that verifies and replays the journal
//! after it. File names and formats: `format-spec/STORE.md`.
//!
//! # What this crate owns
//!
//! The store directory (journal segments framed like image records, group
//! commit, atomic checkpoints, retention, recovery with image fallback and
//! torn-tail cut), the one atomic save of an image to a file (used by the
//! checkpoint and by `nsimage generate`), and the [`fs::Fs`] trait that all
//! of its file I/O goes through, so that faults and power cuts can be
//! injected. Errors are [`StoreError`].
//!
//! # Layering
//!
//! The store sits above `nsimage-namespace`, `nsimage-format`,
//! `nsimage-writer` and `nsimage-loader`. It must never import the tooling
//! crate (`nsimage-testkit`: generator, workload, power-cut simulation,
//! peers) or the command line (`nsimage`, clap and the rest): those sit
//! above it and use it. Tests reach it only through its public API.
//!
//! # Modules
//!
//! - [`fs`]: the file-system trait the store writes through (real, or with
//!   injected faults for tests);
//! - [`save`]: the atomic save of an image (temporary file, fsync, rename,
//!   fsync of the directory), for the checkpoint and for any caller;
//! - [`journal`]: segment files, record framing (shared with images), bulk
//!   or streamed replay, torn-tail detection;
//! - [`edit`]: journal operations applied to the namespace model;
//! - `store`: the [`Store`] (recovery, commit, checkpoint, files, the
//!   at-rest settings: compressed and encrypted checkpoints, sealed
//!   journal batches, [`AtRestSettings`]);
//! - `error`: [`StoreError`]; `failpoint`: [`failpoint()`] for crash tests.
//!
//! # Example
//!
//! Create a store, journal two operations, and find them again after a
//! restart:
//!
//! ```
//! use nsimage_format::pb::{journal_op::Op, CreateOp};
//! use nsimage_store::{fs::RealFs, Store, StoreError, StoreOptions};
//! use std::sync::Arc;
//!
//! # fn main() -> Result<(), StoreError> {
//! let tmp = tempfile::tempdir().expect("a temporary directory");
//! let dir = tmp.path().join("store");
//! Store::init(&dir, Arc::new(RealFs::default()), &Default::default())?;
//!
//! let mkdir = |name: &str| {
//!     Op::Mkdir(CreateOp {
//!         parent: nsimage_namespace::ROOT_ID,
//!         name: name.as_bytes().to_vec(),
//!         user: b"hdfs".to_vec(),
//!         group: b"supergroup".to_vec(),
//!         mode: 0o755,
//!         ..Default::default()
//!     })
//! };
//! let store = Store::open(&dir, Arc::new(RealFs::default()), StoreOptions::default())?;
//! assert_eq!(store.apply(mkdir("user"))?, 1); // durable once it returns
//! assert_eq!(store.apply(mkdir("tmp"))?, 2);
//! let digest = store.with_namespace(|ns| ns.digest().to_string());
//! drop(store); // a restart: the journal is replayed onto image 0
//!
//! let store = Store::open_default(&dir)?;
//! assert_eq!(store.report().txid, 2);
//! assert_eq!(store.report().replayed, 2);
//! assert_eq!(store.with_namespace(|ns| ns.digest().to_string()), digest);
//! assert_eq!(store.checkpoint()?, 2); // image_<2> now holds both
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

pub mod edit;
mod error;
mod failpoint;
pub mod fs;
pub mod journal;
pub mod op_view;
pub mod save;
mod store;

pub use error::StoreError;
pub use failpoint::failpoint;
pub use store::{AtRestSettings, RecoveryReport, Status, Store, StoreOptions};
