//! Any bytes as an INODE and as an INODE_DIR record: whatever the walker
//! accepts, prost decodes to the same fields (see `fuzz/src/walker.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| nsimage_fuzz::walker::run(data));
