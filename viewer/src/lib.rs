//! nsimage offline image viewer: what an operator or a developer looks at
//! inside an image without starting a metadata server.
//!
//! - [`paths`]: the paths users type (absolute, no `.` or `..`), checked
//!   before anything is read;
//! - [`diff`]: what changed between two images of one namespace;
//! - [`lookup`]: one-path lookups that read only the pieces on the way;
//! - [`text`]: the human-readable forms shared by the commands (permission
//!   strings, UTC times, sizes);
//! - [`walk`]: a path resolved component by component, a subtree walked
//!   depth first in name order;
//! - [`ls`], [`stat`], [`du`], [`find`]: the commands over a loaded
//!   namespace, each as plain data plus text and JSON renderers.
//! - [`dump`]: every inode as OIV XML, OIV Delimited text or JSON lines,
//!   in parallel, the same bytes for any thread count;
//! - [`distribution`]: the file-size histogram of OIV FileDistribution;
//! - [`owners`]: a subtree's usage per owner or per group (`du --by`).
//! - [`streamed`]: `du`, `du --by` and `find` read from an image's tree
//!   and pieces in bounded memory, without loading the namespace.
//!
//! Layering: above the loader (it reads images through `nsimage-loader`
//! and looks at `nsimage-namespace`); it must never import the writer, the
//! store, the testkit or the command line. The command line has one file
//! per viewer command in `src/cmd/`.
#![forbid(unsafe_code)]

pub mod diff;
pub mod distribution;
pub mod du;
pub mod dump;
pub mod error;
pub mod find;
pub mod lookup;
pub mod ls;
pub mod owners;
pub mod paths;
pub mod stat;
pub mod streamed;
pub mod text;
pub mod walk;

pub use error::ViewError;
