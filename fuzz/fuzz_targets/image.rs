//! Any bytes as an image: load and verify must return, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("fuzz.nsi");
    std::fs::write(&path, data).expect("write");
    let _ = nsimage::loader::load(&path, &Default::default());
    let _ = nsimage::loader::verify(&path);
});
