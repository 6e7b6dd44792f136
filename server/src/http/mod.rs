//! The HTTP side: an axum router on tokio, served connection by connection
//! with hyper's HTTP/1 so that every limit is set here: request heads over
//! [`MAX_HEAD_BYTES`] are refused by hyper (431), URIs over
//! [`MAX_URI_BYTES`](crate::request::MAX_URI_BYTES) get 414, a client that
//! does not finish its request head within [`Config::header_timeout`] is
//! dropped, so is one that leaves a write waiting past
//! [`Config::write_timeout`] (it does not read its answer), at most [`Config::max_connections`] connections are open at
//! once (past that, a new connection takes the place of the oldest one
//! with no request in flight, so idle or slow-header connections cannot
//! keep fresh clients out), each answer is computed off the reactor (a
//! blocking task) within [`Config::request_timeout`], and a directory's
//! LISTSTATUS is streamed a bounded chunk at a time. Shutdown (SIGINT, SIGTERM) stops
//! accepting, lets requests in flight finish, and closes idle
//! connections.

//!
//! - [`config`]: [`Config`] and what a server answers from;
//! - [`runtime`]: [`run`]: the source or store opened, the listener, the
//!   accept loop with its limits, shutdown;
//! - [`error`]: [`ServeError`], why a server did not start or stopped;
//! - [`tls`]: the rustls acceptor;
//! - [`dispatch`]: one request, from its URL to the op table's handler;
//! - [`conns`]: the registry of open connections (the connection cap);
//! - [`deadline`]: the write deadline of a connection's socket.

pub mod config;
pub mod conns;
pub mod deadline;
pub mod dispatch;
pub mod error;
pub mod runtime;
pub mod tls;

pub use config::{
    Backend, Config, Listening, PermissionConfig, TlsFiles, Writable, MAX_HEAD_BYTES,
};
pub use error::ServeError;
pub use runtime::{run, run_until};
