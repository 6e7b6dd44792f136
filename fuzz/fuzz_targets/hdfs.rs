//! Any bytes as a Hadoop fsimage (raw, or mutations of a small valid one
//! with every offset and length laid out again): the serial and parallel
//! loads, `verify` and `describe` must agree and never panic (see
//! `fuzz/src/hdfs.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| nsimage_fuzz::hdfs::run(data));
