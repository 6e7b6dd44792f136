//! Reading ahead of the workers, and the page-cache tools of cold-cache
//! benchmarks.
//!
//! A cold load used to read and decode one after the other: one
//! `MADV_WILLNEED` of the whole mapping on the loading thread, which
//! returns only once the kernel has queued reads for every page, then the
//! decode; the bulk reads had only the kernel's own read-ahead. Now a
//! prefetch thread follows the workers: each worker tells it the piece it
//! starts (`Progress::started`, called by `run_pieces`), and the thread
//! asks the kernel for the next window of bytes of pieces after it that it
//! has not asked for yet (`madvise(MADV_WILLNEED)` on the mapping,
//! `posix_fadvise(POSIX_FADV_WILLNEED)` on the file for bulk reads). The
//! workers take pieces in file order, so they read one front moving
//! forward; the window follows every piece started all the same, not only
//! the lowest one. The disk reads one
//! window while the workers decode the one before.
//!
//! `NSIMAGE_NO_PREFETCH=1` turns the prefetch thread off (the load then
//! behaves as before: one blocking whole-file hint for a mapping, none for
//! bulk reads); `NSIMAGE_PREFETCH_MIB=N` sets the window (default
//! [`DEFAULT_WINDOW_MIB`]).

pub use crate::progress::Progress;
use crate::source::ImageSource;
use std::path::Path;

/// The default read-ahead window, in MiB, after each piece started.
pub const DEFAULT_WINDOW_MIB: u64 = 32;

/// A piece's stored byte range in the file: `(offset, length)`.
type Span = (u64, u64);

/// The prefetch settings of this process, from the environment: `None`
/// when `NSIMAGE_NO_PREFETCH` is set (to anything but `0` or empty), else
/// the window in bytes.
pub(crate) fn window_from_env() -> Option<u64> {
    let off = std::env::var_os("NSIMAGE_NO_PREFETCH")
        .is_some_and(|v| !v.is_empty() && v.as_encoded_bytes() != b"0");
    if off {
        return None;
    }
    let mib = std::env::var("NSIMAGE_PREFETCH_MIB")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&m| m > 0)
        .unwrap_or(DEFAULT_WINDOW_MIB);
    Some(mib.saturating_mul(1 << 20))
}

/// Runs `load` with a prefetch thread reading `window` bytes ahead of the
/// workers over every piece of `src` (none when `window` is `None`).
pub(crate) fn with_prefetch<T>(
    src: &ImageSource,
    window: Option<u64>,
    load: impl FnOnce() -> T,
) -> T {
    let Some(window) = window else {
        return load();
    };
    let mut spans: Vec<Span> = src
        .index
        .sections
        .iter()
        .flat_map(|s| s.pieces())
        .map(|p| (p.offset, p.length))
        .filter(|&(_, len)| len > 0)
        .collect();
    spans.sort_unstable();
    let progress = src.progress();
    progress.activate();
    std::thread::scope(|scope| {
        let thread = std::thread::Builder::new()
            .name("nsimage-prefetch".into())
            .spawn_scoped(scope, || prefetch(src, &spans, window));
        let out = load();
        progress.finish();
        // A failed spawn only means no read-ahead; a panic of the thread
        // (none expected: it only gives hints) is not the load's.
        if let Ok(t) = thread {
            let _ = t.join();
        }
        out
    })
}

/// The prefetch thread: the window from the first piece, then the window
/// after every piece a worker starts, until the load finishes.
fn prefetch(src: &ImageSource, spans: &[Span], window: u64) {
    let progress = src.progress();
    let mut asked = vec![false; spans.len()];
    let mut hint = |from: usize| {
        for (offset, len) in ask(spans, &mut asked, from, window) {
            will_need(src, offset, len);
        }
    };
    hint(0);
    while let Some(started) = progress.wait() {
        for offset in started {
            if let Some(i) = locate(spans, offset) {
                hint(i);
            }
        }
    }
}

/// Asks the kernel to read `len` bytes at `offset` soon, without waiting
/// for them. A hint: failures are ignored.
fn will_need(src: &ImageSource, offset: u64, len: u64) {
    match src.mapping() {
        Some(m) => {
            if let (Ok(o), Ok(l)) = (usize::try_from(offset), usize::try_from(len)) {
                let _ = crate::mmap::will_need(m, o, l);
            }
        }
        None => {
            let _ = crate::mmap::fadvise(src.file(), offset, len, libc::POSIX_FADV_WILLNEED);
        }
    }
}

/// The index of the span holding `offset` (spans sorted by offset).
fn locate(spans: &[Span], offset: u64) -> Option<usize> {
    let i = spans
        .partition_point(|&(o, _)| o <= offset)
        .checked_sub(1)?;
    let (o, len) = spans[i];
    (offset < o.saturating_add(len)).then_some(i)
}

/// The pieces in the window starting at piece `from`: `from` itself and
/// those after it while the bytes from `from`'s start to their end stay
/// within `window`, the next piece always included.
fn window_of(spans: &[Span], from: usize, window: u64) -> std::ops::Range<usize> {
    let Some(&(start, _)) = spans.get(from) else {
        return from..from;
    };
    let mut end = from;
    while let Some(&(o, len)) = spans.get(end) {
        let reach = o.saturating_add(len).saturating_sub(start);
        if end > from.saturating_add(1) && reach > window {
            break;
        }
        end += 1;
    }
    from..end
}

/// Marks the pieces of the window from `from` as asked for and returns the
/// byte ranges of those not asked for before, adjacent pieces merged into
/// one range.
fn ask(spans: &[Span], asked: &mut [bool], from: usize, window: u64) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    for i in window_of(spans, from, window) {
        if std::mem::replace(&mut asked[i], true) {
            continue;
        }
        let (o, len) = spans[i];
        match out.last_mut() {
            Some((lo, llen)) if lo.saturating_add(*llen) == o => *llen = llen.saturating_add(len),
            _ => out.push((o, len)),
        }
    }
    out
}

/// How much of a file the page cache holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Residency {
    /// Bytes of the file in the page cache (whole pages).
    pub resident_bytes: u64,
    /// The file's length.
    pub file_bytes: u64,
}

/// How much of the file at `path` the page cache holds (`mincore(2)` over
/// a mapping of it that is never read).
pub fn residency(path: &Path) -> std::io::Result<Residency> {
    let file = std::fs::File::open(path)?;
    let file_bytes = file.metadata()?.len();
    let resident_bytes = crate::mmap::resident_bytes(&file, file_bytes)?;
    Ok(Residency {
        resident_bytes,
        file_bytes,
    })
}

/// Asks the kernel to drop the file at `path` from the page cache: its
/// dirty pages written first (`fdatasync`), then
/// `posix_fadvise(POSIX_FADV_DONTNEED)` over the whole file, which needs no
/// privilege but leaves pages that another process maps. Returns what stays
/// resident; the caller decides whether that is cold enough.
pub fn evict(path: &Path) -> std::io::Result<Residency> {
    let file = std::fs::File::open(path)?;
    file.sync_data()?;
    crate::mmap::fadvise(&file, 0, 0, libc::POSIX_FADV_DONTNEED)?;
    residency(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    /// Ten pieces of 4 MiB back to back from 4 KiB, and a gap before the
    /// last one.
    fn spans() -> Vec<Span> {
        let mut v: Vec<Span> = (0..9).map(|i| (4096 + i * 4 * MIB, 4 * MIB)).collect();
        v.push((4096 + 40 * MIB, 4 * MIB));
        v
    }

    #[test]
    fn the_window_covers_the_pieces_within_its_bytes_and_always_the_next() {
        let s = spans();
        assert_eq!(window_of(&s, 0, 16 * MIB), 0..4);
        assert_eq!(window_of(&s, 0, 16 * MIB - 1), 0..3);
        assert_eq!(window_of(&s, 3, 16 * MIB), 3..7);
        // A window smaller than a piece still takes the piece and the next.
        assert_eq!(window_of(&s, 5, 1), 5..7);
        // The gap counts: from piece 7 (at 28 MiB) the last ends at 44 MiB.
        assert_eq!(window_of(&s, 7, 16 * MIB - 1), 7..9);
        assert_eq!(window_of(&s, 7, 16 * MIB), 7..10);
        // At the end, and past it.
        assert_eq!(window_of(&s, 9, 64 * MIB), 9..10);
        assert_eq!(window_of(&s, 10, 64 * MIB), 10..10);
        assert_eq!(window_of(&[], 0, MIB), 0..0);
        // A huge window is the whole rest, without overflow.
        assert_eq!(window_of(&s, 0, u64::MAX), 0..10);
    }

    #[test]
    fn asking_merges_adjacent_pieces_and_never_asks_twice() {
        let s = spans();
        let mut asked = vec![false; s.len()];
        assert_eq!(ask(&s, &mut asked, 0, 8 * MIB), vec![(4096, 8 * MIB)]);
        // Piece 1 started: pieces 1..3, of which 2 is new.
        assert_eq!(
            ask(&s, &mut asked, 1, 8 * MIB),
            vec![(4096 + 8 * MIB, 4 * MIB)]
        );
        // A second worker at piece 7: 7 and 8, then the gap splits 9.
        assert_eq!(
            ask(&s, &mut asked, 7, 20 * MIB),
            vec![(4096 + 28 * MIB, 8 * MIB), (4096 + 40 * MIB, 4 * MIB)]
        );
        assert_eq!(ask(&s, &mut asked, 8, 64 * MIB), vec![]);
        assert_eq!(
            ask(&s, &mut asked, 3, 64 * MIB),
            vec![(4096 + 12 * MIB, 16 * MIB)]
        );
        assert!(asked.iter().all(|&a| a));
    }

    #[test]
    fn locating_finds_the_piece_holding_an_offset() {
        let s = spans();
        assert_eq!(locate(&s, 0), None);
        assert_eq!(locate(&s, 4096), Some(0));
        assert_eq!(locate(&s, 4096 + 4 * MIB - 1), Some(0));
        assert_eq!(locate(&s, 4096 + 4 * MIB), Some(1));
        // In the gap, and past the end.
        assert_eq!(locate(&s, 4096 + 37 * MIB), None);
        assert_eq!(locate(&s, 4096 + 44 * MIB), None);
        assert_eq!(locate(&s, u64::MAX), None);
    }

    #[test]
    fn eviction_leaves_a_written_file_out_of_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 1 << 20]).unwrap();
        let before = residency(&path).unwrap();
        assert_eq!(before.file_bytes, 1 << 20);
        let after = evict(&path).unwrap();
        // Some file systems (tmpfs) cannot drop a file's only copy.
        assert!(after.resident_bytes <= before.resident_bytes);
        let empty = dir.path().join("e");
        std::fs::write(&empty, b"").unwrap();
        assert_eq!(
            evict(&empty).unwrap(),
            Residency {
                resident_bytes: 0,
                file_bytes: 0
            }
        );
    }
}
