//! nsimage's read-only WebHDFS server: the WebHDFS REST API's read
//! operations (`/webhdfs/v1/<path>?op=...`) answered from a loaded image,
//! or from the newest checkpoint of a live store directory, switched
//! atomically when a newer one appears.
//!
//! - [`request`]: the request line checked and decoded (percent-decoding,
//!   UTF-8, the path rules of [`nsimage_viewer::paths::ImagePath`], bounded
//!   query parameters);
//! - [`ops`]: the operations over a [`nsimage_namespace::Namespace`], as
//!   WebHDFS's JSON documents;
//! - [`error`]: [`RemoteError`], Hadoop's `RemoteException` bodies and
//!   status codes;
//! - [`source`]: what is served (one image, or a store's newest checkpoint)
//!   behind an `Arc` swapped under a lock;
//! - [`fdlimit`]: the open-file limit raised at startup, connections
//!   kept below it;
//! - [`http`]: the HTTP server (axum on tokio): limits, timeouts, request
//!   log, graceful shutdown.
//!
//! Layering: above the viewer and the store (it reads images through
//! `nsimage-loader`, answers through `nsimage-viewer` and reads a store's
//! at-rest settings through `nsimage-store`); the command line's
//! `nsimage serve` is a thin wrapper over [`http::serve`].
#![forbid(unsafe_code)]

pub mod acl;
pub mod error;
pub mod fdlimit;
pub mod http;
pub mod live;
pub mod ops;
pub mod params;
pub mod request;
pub mod source;
pub mod writes;

pub use error::RemoteError;
