//! nsimage: filesystem-namespace snapshot images.
//!
//! This facade re-exports the workspace's crates: [`format`] (spec, records,
//! namespace model), [`writer`] and [`loader`], and adds the synthetic
//! namespace [`generate`]or used by the CLI, the benches and the tests.
#![forbid(unsafe_code)]

pub mod generate;
pub mod mem;
pub mod peers;

pub use nsimage_format as format;
pub use nsimage_loader as loader;
pub use nsimage_store as store;
pub use nsimage_writer as writer;

pub use nsimage_format::model::{Digest, Stats};
pub use nsimage_format::Namespace;
