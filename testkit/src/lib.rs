//! Tooling around nsimage, never a dependency of the product crates.
//!
//! # Module map
//!
//! | file | what it holds |
//! |------|---------------|
//! | `lib.rs` | this page |
//! | `etcd.rs` | [`etcd`]: a throwaway etcd cluster on loopback (members killed, paused, started again) for the HA tests and `bench --server --ha` |
//! | `generate.rs` | [`generate`]: the deterministic synthetic namespace of `nsimage generate`, the bench and the tests |
//! | `streamed/` | [`streamed`]: version 2 of the synthetic namespace, the same shape drawn per directory and written straight to an image in bounded memory (`nsimage generate`'s default) |
//! | `shapes.rs` | [`shapes`]: deterministic namespaces shaped to be hard to store (identical names, one huge directory, all-zero attributes, ...), for the property tests of the writer and readers |
//! | `workload.rs` | [`workload`]: the deterministic mixed journal workload of `nsimage store apply` and the store's crash and power-cut tests |
//! | `powercut.rs` | [`powercut`]: a file system for the store that forgets, at a simulated power cut, everything fsync did not make durable |
//! | `peers/` | `peers` (feature `peers`): the JSON-lines and SQLite formats the bench compares loads against |
//!
//! # Layering
//!
//! It may import every library crate of the workspace, never the command
//! line (`nsimage`, the binary above it); no library crate imports it
//! (`tests/it/cli/layering.rs` checks both).
//!
//! # Example
//!
//! ```
//! use nsimage_namespace::Namespace;
//! use nsimage_testkit::generate::{generate, GenSpec};
//! use nsimage_testkit::workload::Workload;
//!
//! // The same (inodes, seed) always gives the same namespace.
//! let a = generate(GenSpec { inodes: 2_000, seed: 7 });
//! let b = generate(GenSpec { inodes: 2_000, seed: 7 });
//! assert_eq!(a.stats().inodes, 2_000);
//! assert_eq!(a.digest(), b.digest());
//!
//! // The workload's state after txid t depends only on the seed and t.
//! let (mut x, mut y) = (Namespace::default(), Namespace::default());
//! Workload { seed: 3 }.advance(&mut x, 500);
//! Workload { seed: 3 }.advance(&mut y, 200);
//! Workload { seed: 3 }.advance(&mut y, 500);
//! assert_eq!(x.digest(), y.digest());
//! ```
#![forbid(unsafe_code)]
// The generator computes with floats it draws itself, and the peers are the
// plain code a user of JSON lines or SQLite would write (they read only
// files the bench wrote): the workspace's cast lints guard decoders of
// untrusted bytes, which this crate is not.
#![allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]

pub mod etcd;
pub mod generate;
#[cfg(feature = "peers")]
pub mod peers;
pub mod powercut;
pub mod shapes;
pub mod streamed;
pub mod workload;

/// The README's Rust examples, run as doctests so the documented API cannot
/// drift.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
