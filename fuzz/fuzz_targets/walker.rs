//! Any bytes as an INODE, an INODE_DIR and a NAME_RUNS record: whatever the
//! walker accepts, prost decodes to the same fields, and a run the decoder
//! accepts survives being written again (see `fuzz/src/walker.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| nsimage_fuzz::walker::run(data));
