//! The bodies of the fuzz targets, as plain functions that panic when a
//! property fails, so that `tests/fuzz_regressions.rs` (stable toolchain, no
//! libFuzzer) replays saved inputs through exactly the same checks.

pub mod at_rest;
pub mod hdfs;
pub mod image;
pub mod input;
pub mod journal;
pub mod streamed;
pub mod walker;
