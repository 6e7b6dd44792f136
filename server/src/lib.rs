//! nsimage's WebHDFS server: the WebHDFS REST API (`/webhdfs/v1/<path>?op=...`)
//! answered from a loaded image or from the newest checkpoint of a store
//! directory (read-only, switched atomically when a newer one appears), or
//! from a store's live namespace with WebHDFS's writes (`--writable`: each
//! write journaled and answered once durable, checkpoints in the
//! background).
//!
//! # Module map
//!
//! | file | what it holds |
//! |------|---------------|
//! | `lib.rs` | this page |
//! | `request.rs` | [`request`]: the request line checked and decoded (percent-decoding, UTF-8, the path rules of [`nsimage_viewer::paths::ImagePath`], bounded query parameters) |
//! | `params/` | [`params`]: the one table of WebHDFS operations (`params/table.rs`: each op's name, method, parameters, who may run it and its handler), from which the parameter checks, both servers' dispatch, the read-only server's refusals and the permission checks derive; the parameters' values (`params/values.rs`) |
//! | `ops.rs` | [`ops`]: the read operations over a [`nsimage_namespace::Namespace`], as WebHDFS's JSON documents |
//! | `writes.rs` | [`writes`]: the write operations over a [`nsimage_store::Store`], with the NameNode's semantics |
//! | `acl.rs` | [`acl`]: HDFS's ACL transformations |
//! | `xattrs.rs` | [`xattrs`]: extended attributes' names and values in WebHDFS's encodings (hex, base64, text) |
//! | `perm.rs` | [`perm`]: HDFS's permission checks of every operation, for the request's [`perm::Caller`] |
//! | `identity.rs` | [`identity`]: a user's groups (a groups file or the system's databases, read again when they change) |
//! | `error.rs` | [`error`]: [`RemoteError`], Hadoop's `RemoteException` bodies and status codes |
//! | `source.rs` | [`source`]: what a read-only server serves (one image, or a store's newest checkpoint) behind an `Arc` swapped under a lock |
//! | `live.rs` | [`live`]: a writable server's store (recovery, durability waits shared by all requests, the checkpointer and its lines) |
//! | `ha/` | [`ha`]: high availability on etcd: the group's journal in etcd (fenced appends), the election of the active, standbys that tail the journal and take the checkpoints, checkpoints fetched from peers |
//! | `audit.rs` | [`audit`]: the audit log (`--audit-log`), one line per request in the NameNode's `FSNamesystem.audit` form |
//! | `fdlimit.rs` | [`fdlimit`]: the open-file limit raised at startup, connections kept below it |
//! | `http/` | [`http`]: the HTTP server (axum on tokio), a module per job: its configuration, its run (listener, limits, shutdown), TLS, the dispatch of a request through the op table, the connection registry, the write deadline, [`http::ServeError`] |
//!
//! Adding a WebHDFS operation: a row in `params/table.rs` and its handler
//! (a read in [`ops`], a write in [`writes`]; a new kind of check, a
//! [`perm::Who`]); nothing else lists operations.
//!
//! Layering: above the viewer and the store (it reads images through
//! `nsimage-loader`, answers through `nsimage-viewer`, and reads and
//! writes a store through `nsimage-store`); the command line's
//! `nsimage serve` is a thin wrapper over [`http::run`]. It must never
//! import the writer (images are written by the store's atomic save), the
//! export, the testkit or the command line, nor the tooling's crates
//! (clap, indicatif, plotters, rusqlite, rand); `anyhow` stays in the
//! binary (errors here are [`RemoteError`] and [`http::ServeError`]).
//!
//! An operation's row, its check and its answer, over a namespace built
//! in memory:
//!
//! ```
//! use nsimage_namespace::{Namespace, NsInfo, PermSpec};
//! use nsimage_server::params::{self, Handler, Method};
//! use nsimage_server::perm::{Gate, Permissions};
//! use nsimage_server::request::parse;
//! use std::sync::Arc;
//!
//! let mut ns = Namespace::new(NsInfo::default());
//! let alice = PermSpec { user: b"alice", group: b"staff", mode: 0o750 };
//! ns.mkdirs(b"/user/alice", &alice, 1).unwrap();
//! let perms = Arc::new(Permissions::for_namespace(&ns));
//! let gate = |user: &str| Gate { caller: perms.caller(user, vec![]), perms: Arc::clone(&perms) };
//!
//! // The table finds the op and names its method, check and handler; a
//! // parameter no op reads is ignored, as the NameNode ignores it.
//! let req = parse("/webhdfs/v1/user/alice", Some("op=liststatus_batch&tempdir=/x")).unwrap();
//! let row = params::check(&req).unwrap();
//! assert_eq!((row.name, row.method, row.writes()), ("LISTSTATUS_BATCH", Method::Get, false));
//! let bogus = parse("/webhdfs/v1/", Some("op=FROBNICATE")).unwrap();
//! assert_eq!(params::check(&bogus).unwrap_err().status, 400);
//!
//! // Alice may list her directory; bob, in none of its classes, may not.
//! let path = req.path.components();
//! assert!(gate("alice").check_who(&ns, path, row.who, []).is_ok());
//! let refused = gate("bob").check_who(&ns, path, row.who, []).unwrap_err();
//! assert_eq!((refused.status, refused.exception), (403, "AccessControlException"));
//!
//! let Handler::Read(answer) = row.handler else { unreachable!() };
//! let page = answer(&ns, &req, &gate("alice")).unwrap();
//! assert_eq!(page["DirectoryListing"]["remainingEntries"], 0);
//! ```
#![forbid(unsafe_code)]

pub mod acl;
pub mod audit;
pub mod error;
pub mod fdlimit;
pub mod ha;
pub mod http;
pub mod identity;
pub mod live;
pub mod ops;
pub mod params;
pub mod perm;
pub mod request;
pub mod source;
pub mod writes;
pub mod xattrs;

pub use error::RemoteError;
