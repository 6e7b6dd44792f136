//! The Rust-only integration tests, in one binary (one link instead of one
//! per file), grouped by area. Tests that drive Python clients are in
//! `tests/clients/`; `tests/fuzz_regressions.rs` (a counting global
//! allocator) and `tests/bench_cold.rs` (page-cache eviction) need a
//! process of their own.

#[path = "../support/common.rs"]
mod common;
#[path = "../support/hdfs_common.rs"]
mod hdfs_common;
#[path = "../support/oiv/mod.rs"]
mod oiv;
#[path = "../support/serve_common.rs"]
mod serve_common;

mod cli;
mod format;
pub(crate) mod hdfs;
mod serve;
mod store;
mod viewer;
