//! nsimage offline image viewer: what an operator or a developer looks at
//! inside an image without starting a metadata server.
//!
//! - [`paths`]: the paths users type (absolute, no `.` or `..`), checked
//!   before anything is read;
//! - [`lookup`]: one-path lookups that read only the pieces on the way;
//! - [`text`]: the human-readable forms shared by the commands (permission
//!   strings, UTC times, sizes).
//!
//! Layering: above the loader (it reads images through `nsimage-loader`
//! and looks at `nsimage-namespace`); it must never import the writer, the
//! store, the testkit or the command line. The command line has one file
//! per viewer command in `src/cmd/`.
#![forbid(unsafe_code)]

pub mod error;
pub mod lookup;
pub mod paths;
pub mod text;

pub use error::ViewError;
