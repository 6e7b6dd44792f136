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
    /// nsimage are never rewritten in place while a reader holds them (a
    /// new image is written to a temporary file and renamed over the old
    /// one; a store cuts an old image before removing it only under an
    /// exclusive `flock` that the shared one the loader takes when it
    /// opens a file, and keeps while the mapping lives, refuses), so
    /// mapping them is sound as long as nothing else writes to them.
    pub unsafe fn new() -> Self {
        MmapOptIn(())
    }
}

/// Maps `file` read-only, with one `MADV_WILLNEED` over the whole mapping,
/// of which the kernel reads only its read-ahead limit (the first few MiB
/// at most): the load maps with [`map_lazy`] and reads ahead on a thread of
/// its own (`prefetch`) unless that is turned off.
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

/// Maps `file` read-only without any hint: the prefetch thread asks for
/// the pieces ahead of the workers.
pub(crate) fn map_lazy(file: &File, _opt_in: MmapOptIn) -> std::io::Result<Mmap> {
    // Safety: as in `map`: the caller promised, by building `MmapOptIn`,
    // that the file is not modified while mapped.
    unsafe { Mmap::map(file) }
}

/// `madvise(MADV_WILLNEED)` over `len` bytes at `offset` of the mapping:
/// the kernel starts reading them and returns (a hint). The range is
/// clamped to the mapping (memmap2 checks the offset and the length, not
/// their sum).
pub(crate) fn will_need(m: &Mmap, offset: usize, len: usize) -> std::io::Result<()> {
    let len = len.min(m.len().saturating_sub(offset));
    if len == 0 {
        return Ok(());
    }
    m.advise_range(Advice::WillNeed, offset, len)
}

/// Bytes between two pages [`looks_resident`] probes.
pub(crate) const PROBE_EVERY: usize = 1 << 20;

/// Whether the page cache seems to hold `len` bytes at `offset` of the
/// mapping: `mincore(2)` on one page every [`PROBE_EVERY`] bytes and on the
/// last, each of them resident (the range is clamped to the mapping; an
/// empty one is resident). A probe, not a proof: a page between two probes
/// may be missing, and is then read when it is first touched, as it would
/// be without any hint. A failed call says "not resident".
///
/// Since Linux 5.2 mincore reports the page cache's pages only for a file
/// the process owns or could open for writing; for any other (an image
/// another user saved, read-only to us) it reports every page resident,
/// so such a file's ranges are never hinted (a known gap: the probe
/// should be trusted only for a file the process owns or can write).
pub(crate) fn looks_resident(m: &Mmap, offset: usize, len: usize) -> bool {
    let len = len.min(m.len().saturating_sub(offset));
    if len == 0 {
        return true;
    }
    let page = page_size();
    let last = offset.saturating_add(len - 1);
    let mut probes = (offset..=last)
        .step_by(PROBE_EVERY)
        .chain(std::iter::once(last));
    probes.all(|at| {
        let aligned = at - at % page;
        let mut state = 0u8;
        // Safety: `aligned` is a page-aligned offset below the mapping's
        // length (`at` is within it), the mapping's start is page-aligned
        // (as mmap returns it), so one page from there lies in the live
        // mapping, and `state` holds the one byte mincore writes for it.
        let rc =
            unsafe { libc::mincore(m.as_ptr().add(aligned) as *mut libc::c_void, 1, &mut state) };
        rc == 0 && state & 1 == 1
    })
}

/// The least a piece's pages must span for [`let_go`] to drop them: below
/// it the call (and the other cores' TLB flush it causes) costs more than
/// the unmapping at the load's end that it spares.
pub(crate) const LET_GO_MIN: usize = 1 << 20;

/// Drops the page-table entries of the whole pages within `len` bytes at
/// `offset` of a read-only file mapping (`madvise(MADV_DONTNEED)`), once a
/// worker is done with a piece: the page cache keeps the pages, a later
/// read of them faults them in again with the same bytes, and what the
/// kernel would otherwise tear down in one go when the load unmaps the file
/// (12 ms for a 464 MB image, with one thread working) is done piece by
/// piece on the workers, in parallel, and the pieces read stop counting in
/// the process's resident memory. Ranges under [`LET_GO_MIN`] are left. A
/// hint: failures are ignored.
pub(crate) fn let_go(m: &Mmap, offset: usize, len: usize) {
    let Some((first, last)) = whole_pages(offset, offset.saturating_add(len).min(m.len())) else {
        return;
    };
    // Safety: the mapping is a read-only mapping of a file (`map`,
    // `map_lazy`: shared, never written), so MADV_DONTNEED only drops
    // page-table entries: the next access faults in the page cache's page,
    // which holds the file's bytes, unchanged while the file is mapped (the
    // caller's `MmapOptIn` promise). Any `&[u8]` still borrowed from the
    // range reads the same bytes after as before. This rests on the mapping
    // being of a file and never written: on an anonymous mapping the next
    // access would read zeros, and on a private one written to, the file's
    // bytes instead of the written ones; every mapping here is made by
    // `map` or `map_lazy`. The range lies within the mapping (`end` is
    // clamped to its length).
    let _ = unsafe {
        m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, first, last - first)
    };
}

/// Pieces a worker is done with that are each smaller than
/// [`LET_GO_MIN`] (a NAME_RUNS piece of 64 KiB, an INODE_DIR one of 300
/// KiB), held until those next to each other add up to ranges worth
/// dropping: left alone, a 5M-inode image's 82 MB of such pieces stayed
/// mapped until the load's end, and its peak resident memory was 1.19x
/// what the load kept.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// `(offset, length)`, merged where adjacent after each flush.
    spans: Vec<(usize, usize)>,
    bytes: usize,
    /// The next flush comes once `bytes` reaches this: what the last one
    /// kept plus [`PENDING_FLUSH`], so that short runs kept never make
    /// every later piece sort the lot.
    flush_at: usize,
}

/// Bytes of small pieces [`Pending`] gathers before it looks for runs.
const PENDING_FLUSH: usize = 2 << 20;

impl Pending {
    /// Adds the piece at `offset`, `len` bytes long; returns the runs of
    /// adjacent pieces (each at least [`LET_GO_MIN`]) to drop now, once
    /// the pieces held add up to [`PENDING_FLUSH`]. Shorter runs stay
    /// (merged into one span each).
    pub(crate) fn add(&mut self, offset: usize, len: usize) -> Vec<(usize, usize)> {
        self.spans.push((offset, len));
        self.bytes = self.bytes.saturating_add(len);
        if self.bytes < self.flush_at.max(PENDING_FLUSH) {
            return Vec::new();
        }
        self.flush()
    }

    /// Every run held that is worth dropping, whatever the bytes held: at
    /// the end of a phase, so that its last small pieces go too.
    pub(crate) fn drain(&mut self) -> Vec<(usize, usize)> {
        self.flush()
    }

    fn flush(&mut self) -> Vec<(usize, usize)> {
        self.spans.sort_unstable();
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for &(o, l) in &self.spans {
            match runs.last_mut() {
                Some((ro, rl)) if ro.saturating_add(*rl) == o => *rl = rl.saturating_add(l),
                _ => runs.push((o, l)),
            }
        }
        let (out, keep): (Vec<_>, Vec<_>) = runs.into_iter().partition(|r| worth(r.0, r.1));
        self.bytes = keep.iter().map(|r| r.1).fold(0, usize::saturating_add);
        self.flush_at = self.bytes.saturating_add(PENDING_FLUSH);
        self.spans = keep;
        out
    }
}

/// The whole pages within `[offset, end)`, as `(first, last)` byte
/// offsets, when they span at least [`LET_GO_MIN`].
fn whole_pages(offset: usize, end: usize) -> Option<(usize, usize)> {
    let page = page_size();
    let first = offset.div_ceil(page).saturating_mul(page);
    let last = end - end % page;
    (last > first && last - first >= LET_GO_MIN).then_some((first, last))
}

/// Whether [`let_go`] would drop anything of the `len` bytes at `offset`.
pub(crate) fn worth(offset: usize, len: usize) -> bool {
    whole_pages(offset, offset.saturating_add(len)).is_some()
}

/// A mapping of `file` that is only probed ([`looks_resident`]), never
/// read: for a load that reads the file rather than mapping it.
pub(crate) fn map_for_probes(file: &File) -> std::io::Result<Mmap> {
    // Safety: the mapping is never read or written through (only its
    // addresses are passed to mincore), so the file changing under it
    // cannot be observed as a changing `&[u8]`.
    unsafe { Mmap::map(file) }
}

/// The system's page size (4096 when it cannot be had).
fn page_size() -> usize {
    // Safety: sysconf only reads its argument.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .ok()
        .filter(|&p| p > 0)
        .unwrap_or(4096)
}

/// `posix_fadvise(2)` over `len` bytes at `offset` of `file` (`len` 0: to
/// the end of the file).
pub(crate) fn fadvise(
    file: &File,
    offset: u64,
    len: u64,
    advice: libc::c_int,
) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let too_big = || std::io::Error::from(std::io::ErrorKind::InvalidInput);
    let offset = libc::off_t::try_from(offset).map_err(|_| too_big())?;
    let len = libc::off_t::try_from(len).map_err(|_| too_big())?;
    // Safety: posix_fadvise only reads its integer arguments; the
    // descriptor is open for the duration of the call (borrowed from
    // `file`). It returns the error number instead of setting errno.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), offset, len, advice) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::from_raw_os_error(rc))
    }
}

/// Bytes of `file` (of length `len`) in the page cache: `mincore(2)` over
/// a read-only mapping of it whose pages are never touched (so neither a
/// concurrent write nor a truncation can affect this process: mincore
/// only reports, and a page dropped by a truncation counts as absent).
pub(crate) fn resident_bytes(file: &File, len: u64) -> std::io::Result<u64> {
    if len == 0 {
        return Ok(0);
    }
    // Safety: the mapping is never read or written through (only its
    // address is passed to mincore), so the file changing under it cannot
    // be observed as a changing `&[u8]`.
    let m = unsafe { memmap2::MmapOptions::new().map(file)? };
    let page = page_size();
    let pages = m.len().div_ceil(page);
    let mut vec = vec![0u8; pages];
    // Safety: the address and length are those of a live mapping (the
    // address is page-aligned, as mmap returns), and `vec` holds one byte
    // per page of it, as mincore writes.
    let rc = unsafe { libc::mincore(m.as_ptr() as *mut libc::c_void, m.len(), vec.as_mut_ptr()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let resident = vec.iter().filter(|&&b| b & 1 == 1).count();
    let bytes = (resident as u64).saturating_mul(page as u64);
    Ok(bytes.min(len))
}

#[cfg(test)]
mod tests {
    use super::{Pending, LET_GO_MIN, PENDING_FLUSH};

    #[test]
    fn small_pieces_go_in_runs_of_adjacent_ones() {
        let mut p = Pending::default();
        let piece = 64 << 10;
        let n = PENDING_FLUSH / piece;
        // Pieces in file order but one (the 3rd) still being worked on.
        let mut dropped = Vec::new();
        for i in (0..n + 1).filter(|&i| i != 2) {
            dropped.extend(p.add(i * piece, piece));
        }
        // Nothing before the pieces held add up to the flush size; then
        // the run after the gap, and the two before it (128 KiB) kept.
        assert_eq!(dropped, [(3 * piece, (n - 2) * piece)]);
        assert_eq!(p.spans, [(0, 2 * piece)]);
        // The missing piece joins the two before it into a run still too
        // short to drop; the pieces after the dropped run gather on their
        // own until the flush size, and go as one run.
        assert!(p.add(2 * piece, piece).is_empty());
        let (first, count) = (n + 1, n);
        let mut later = Vec::new();
        for i in first..first + count {
            later.extend(p.add(i * piece, piece));
        }
        // The next flush waits for the flush size on top of the 128 KiB
        // the last one kept.
        let gathered = (2 * piece + PENDING_FLUSH - 3 * piece) / piece;
        assert_eq!(later, [(first * piece, gathered * piece)]);
        assert!(later[0].1 >= LET_GO_MIN);
        // Held: the short run, merged at the flush, and the pieces added
        // since, as they came.
        let left = count - gathered;
        let since: Vec<_> = (first + gathered..first + count)
            .map(|i| (i * piece, piece))
            .collect();
        assert_eq!(p.spans[0], (0, 3 * piece));
        assert_eq!(p.spans[1..], since[..]);
        assert_eq!(p.bytes, (3 + left) * piece);
        // The phase's end: what is worth dropping goes, whatever the
        // bytes held; runs too short stay.
        assert!(p.drain().is_empty(), "{:?}", p.spans);
        let last = first + count;
        let more = LET_GO_MIN / piece;
        for i in last..last + more {
            assert!(p.add(i * piece, piece).is_empty());
        }
        assert_eq!(
            p.drain(),
            [((first + gathered) * piece, (left + more) * piece)]
        );
        assert_eq!(p.spans, [(0, 3 * piece)]);
    }
}
