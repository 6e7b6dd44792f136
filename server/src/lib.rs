//! nsimage's WebHDFS server: the WebHDFS REST API (`/webhdfs/v1/<path>?op=...`)
//! answered from a loaded image or from the newest checkpoint of a store
//! directory (read-only, switched atomically when a newer one appears), or
//! from a store's live namespace with WebHDFS's writes (`--writable`: each
//! write journaled and answered once durable, checkpoints in the
//! background).
//!
//! - [`request`]: the request line checked and decoded (percent-decoding,
//!   UTF-8, the path rules of [`nsimage_viewer::paths::ImagePath`], bounded
//!   query parameters);
//! - [`params`]: the parameters each operation takes, and their values;
//! - [`ops`]: the read operations over a [`nsimage_namespace::Namespace`],
//!   as WebHDFS's JSON documents;
//! - [`writes`]: the write operations over a [`nsimage_store::Store`],
//!   with the NameNode's semantics; [`acl`]: HDFS's ACL transformations;
//! - [`perm`]: HDFS's permission checks of every operation, for the
//!   request's [`perm::Caller`]; [`identity`]: a user's groups (a groups
//!   file or the system's databases, read again when they change);
//! - [`error`]: [`RemoteError`], Hadoop's `RemoteException` bodies and
//!   status codes;
//! - [`source`]: what a read-only server serves (one image, or a store's
//!   newest checkpoint) behind an `Arc` swapped under a lock;
//! - [`live`]: a writable server's store (recovery, durability waits
//!   shared by all requests, the checkpointer and its lines);
//! - [`fdlimit`]: the open-file limit raised at startup, connections
//!   kept below it;
//! - [`http`]: the HTTP server (axum on tokio): limits, timeouts, request
//!   log, graceful shutdown.
//!
//! Layering: above the viewer and the store (it reads images through
//! `nsimage-loader`, answers through `nsimage-viewer`, and reads and
//! writes a store through `nsimage-store`); the command line's
//! `nsimage serve` is a thin wrapper over [`http::run`].
#![forbid(unsafe_code)]

pub mod acl;
pub mod error;
pub mod fdlimit;
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
