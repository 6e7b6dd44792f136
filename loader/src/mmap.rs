//! The one place the loader maps a file into memory.
#![allow(unsafe_code)]

use memmap2::{Advice, Mmap};
use std::fs::File;

/// Maps `file` read-only.
pub fn map(file: &File) -> std::io::Result<Mmap> {
    // Safety: memmap2 requires that the mapped file is not modified while
    // mapped. Images are immutable once saved: writers create a temporary
    // file and rename it into place, never rewriting an existing image. A
    // truncation by another process would raise SIGBUS, as with any reader
    // of a mapped file; the bytes themselves are still checked (checksums,
    // bounds) before use.
    let m = unsafe { Mmap::map(file)? };
    // Pieces are read by several threads at once; ask for read-ahead.
    let _ = m.advise(Advice::WillNeed);
    Ok(m)
}
