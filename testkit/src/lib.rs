//! Tooling around nsimage, never a dependency of the product crates:
//!
//! - [`generate`]: the deterministic synthetic namespace of `nsimage
//!   generate`, the bench and the tests;
//! - [`workload`]: the deterministic mixed journal workload of `nsimage
//!   store apply` and the store's crash and power-cut tests;
//! - [`powercut`]: a file system for the store that forgets, at a simulated
//!   power cut, everything fsync did not make durable;
//! - `peers` (feature `peers`): the JSON-lines and SQLite formats the bench
//!   compares loads against.
//!
//! It may import every library crate of the workspace; no library crate
//! imports it.
#![forbid(unsafe_code)]
// The generator computes with floats it draws itself, and the peers are the
// plain code a user of JSON lines or SQLite would write (they read only
// files the bench wrote): the workspace's cast lints guard decoders of
// untrusted bytes, which this crate is not.
#![allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]

pub mod generate;
#[cfg(feature = "peers")]
pub mod peers;
pub mod powercut;
pub mod workload;
