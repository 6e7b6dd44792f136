//! Pieces at rest: compressed, encrypted and compressed+encrypted images,
//! their stored bytes and at-rest index fields mutated with every checksum
//! recomputed; every read path, given the key, must agree, refuse what the
//! rules of "Pieces at rest" refuse, and allocate within bounds (see
//! `fuzz/src/at_rest.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| nsimage_fuzz::at_rest::run(data));
