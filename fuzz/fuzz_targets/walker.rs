//! Any bytes as an INODE or INODE_DIR record: the walker must return.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nsimage::loader::walk;

fuzz_target!(|data: &[u8]| {
    let mut scratch = walk::InodeScratch::default();
    let _ = walk::inode(data, &mut scratch);
    let _ = walk::dir_entry(data, &mut Vec::new());
});
