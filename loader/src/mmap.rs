//! The one place the loader maps a file into memory, and the opt-in that
//! lets a caller ask for it.
#![allow(unsafe_code)]

use memmap2::{Advice, Mmap};
use std::fs::File;

/// A caller's promise that the image file stays unchanged while it is
/// mapped: the only way to build [`ReadStrategy::Mmap`](crate::ReadStrategy::Mmap),
/// through [`ReadStrategy::mmap`](crate::ReadStrategy::mmap) or
/// [`MmapOptIn::new`], both `unsafe`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmapOptIn(());

impl MmapOptIn {
    /// Opts in to mapping image files.
    ///
    /// # Safety
    ///
    /// While a load or a verification maps the file, no process may modify
    /// or truncate it: the mapped bytes are read as a `&[u8]`, which Rust
    /// assumes immutable, so a concurrent write is undefined behaviour, and
    /// a truncation makes the next access raise `SIGBUS`. Images saved by
    /// nsimage are never rewritten in place (a new image is written to a
    /// temporary file and renamed over the old one), so mapping them is
    /// sound as long as nothing else writes to them.
    pub unsafe fn new() -> Self {
        MmapOptIn(())
    }
}

/// Maps `file` read-only.
pub(crate) fn map(file: &File, _opt_in: MmapOptIn) -> std::io::Result<Mmap> {
    // Safety: memmap2 requires that the mapped file is not modified while
    // mapped; the caller promised so by building `MmapOptIn` (see its
    // Safety section). A truncation by another process would raise SIGBUS,
    // as with any reader of a mapped file; the bytes themselves are still
    // checked (checksums, bounds) before use.
    let m = unsafe { Mmap::map(file)? };
    // Pieces are read by several threads at once; ask for read-ahead.
    let _ = m.advise(Advice::WillNeed);
    Ok(m)
}
