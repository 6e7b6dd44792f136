//! Model-based: random ops on a store, random damage to its journal, then
//! recovery must keep every op acknowledged before the damage and match the
//! reference namespace (see `fuzz/src/journal.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| nsimage_fuzz::journal::run(data));
