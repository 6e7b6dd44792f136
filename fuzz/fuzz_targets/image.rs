//! Any bytes as an image (raw, or mutations of a small valid image with every
//! checksum recomputed): mmap, bulk and stream loads with 1 and 2 threads and
//! `verify` must agree (see `fuzz/src/image.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| nsimage_fuzz::image::run(data));
