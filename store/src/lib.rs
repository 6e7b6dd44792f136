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
//! # Module map
//!
//! | file | what it holds |
//! |------|---------------|
//! | `lib.rs` | this page and the re-exports |
//! | `fs.rs` | [`fs`]: the file-system trait the store writes through (real, or with injected faults for tests) |
//! | `save.rs` | [`save`]: the atomic save of an image (temporary file, fsync, rename, fsync of the directory), for the checkpoint and for any caller |
//! | `journal/` | [`journal`]: segment files, record framing (shared with images), bulk or streamed replay, torn-tail detection |
//! | `op_view.rs` | [`op_view`]: journal records decoded without copying, names and values borrowed from the record's bytes |
//! | `edit.rs` | [`edit`]: journal operations applied to the namespace model |
//! | `replica.rs` | [`replica`]: the authoritative journal a group commit is handed to first (an HA group's quorum), before the store writes its own copy |
//! | `store/` | the [`Store`] (recovery, commit, checkpoints in the foreground and the background, files, the at-rest settings: compressed and encrypted checkpoints, sealed journal batches, [`AtRestSettings`]) |
//! | `error.rs` | [`StoreError`], and [`SubmitError`] of [`Store::submit_with`] |
//! | `failpoint.rs` | [`failpoint()`], for crash tests |
//!
//! A folder module's own page lists its modules.
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
//!
//! # A server's store: concurrent writers and background checkpoints
//!
//! Share the store as an `Arc<Store>`. Each writer builds its op from the
//! namespace and submits it in one step ([`Store::submit_with`]: what it
//! checked cannot change before the op applies), then waits until it is
//! durable ([`Store::wait_durable`]: concurrent writers share one fsync).
//! A [`Checkpointer`] saves images in the background as its
//! [`CheckpointPolicy`] says, while the writers go on; a restart finds
//! every acknowledged op:
//!
//! ```
//! use nsimage_format::pb::{journal_op::Op, CreateOp};
//! use nsimage_store::{fs::RealFs, CheckpointEvent, CheckpointPolicy, Store, StoreOptions};
//! use std::sync::{mpsc, Arc};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let tmp = tempfile::tempdir()?;
//! let dir = tmp.path().join("store");
//! Store::init(&dir, Arc::new(RealFs::default()), &Default::default())?;
//! let store = Arc::new(Store::open(&dir, Arc::new(RealFs::default()), StoreOptions::default())?);
//!
//! // A checkpoint every 50 ops, reported on a channel.
//! let (tx, events) = mpsc::channel();
//! let policy = CheckpointPolicy { every_ops: Some(50), every: None };
//! let checkpointer = store.spawn_checkpointer(policy, move |e| {
//!     let _ = tx.send(e);
//! })?;
//!
//! // Four writers, 100 directories each: "w<k>-<i>" unless it exists.
//! let writers: Vec<_> = (0..4)
//!     .map(|k| {
//!         let store = Arc::clone(&store);
//!         std::thread::spawn(move || -> Result<(), nsimage_store::StoreError> {
//!             for i in 0..100 {
//!                 let name = format!("w{k}-{i}");
//!                 let txid = store.submit_with(|ns| {
//!                     if ns.resolve(format!("/{name}").as_bytes()).is_ok() {
//!                         return Ok::<_, std::convert::Infallible>(None); // nothing to do
//!                     }
//!                     Ok(Some(Op::Mkdir(CreateOp {
//!                         parent: nsimage_namespace::ROOT_ID,
//!                         name: name.into_bytes(),
//!                         user: b"hdfs".to_vec(),
//!                         group: b"supergroup".to_vec(),
//!                         mode: 0o755,
//!                         ..Default::default()
//!                     })))
//!                 });
//!                 let txid = txid.map_err(|e| match e {
//!                     nsimage_store::SubmitError::Store(e) => e,
//!                     nsimage_store::SubmitError::Build(never) => match never {},
//!                 })?;
//!                 if let Some(txid) = txid {
//!                     store.wait_durable(txid)?; // acknowledged from here on
//!                 }
//!             }
//!             Ok(())
//!         })
//!     })
//!     .collect();
//! for w in writers {
//!     w.join().expect("a writer panicked")?;
//! }
//!
//! // At least one background checkpoint finished while they wrote.
//! let finished = loop {
//!     match events.recv()? {
//!         CheckpointEvent::Finished { txid, .. } => break txid,
//!         CheckpointEvent::Failed { error, .. } => return Err(error.into()),
//!         _ => {}
//!     }
//! };
//! assert!(finished >= 50);
//! checkpointer.stop(); // takes no checkpoint
//! let digest = store.with_namespace(|ns| ns.digest().to_string());
//! drop(store);
//!
//! // A restart: the newest image, then the journal after it.
//! let store = Store::open_default(&dir)?;
//! assert_eq!(store.report().txid, 400);
//! assert!(store.report().image_txid >= 50);
//! assert_eq!(store.with_namespace(|ns| ns.digest().to_string()), digest);
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
pub mod replica;
pub mod save;
mod store;

pub use error::{StoreError, SubmitError};
pub use failpoint::failpoint;
pub use store::{
    image_name, image_txid, AtRestSettings, CheckpointEvent, CheckpointPolicy, Checkpointer,
    RecoveryReport, Status, Store, StoreOptions,
};
