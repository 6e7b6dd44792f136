//! Reading ahead of the workers, and the page-cache tools of cold-cache
//! benchmarks.
//!
//! A prefetch thread follows the workers: they tell it the pieces they
//! start (`Progress::started`, called by `run_pieces_tracked`), and it asks
//! the kernel for the pieces in the next window of bytes after them that it
//! has not asked for yet (`madvise(MADV_WILLNEED)` on the mapping,
//! `posix_fadvise(POSIX_FADV_WILLNEED)` on the file for bulk reads). The
//! workers take pieces in file order, so they read one front moving
//! forward; the thread is woken again once that front has moved a quarter
//! of the window (or jumped back), not for every piece.
//!
//! The kernel reads at most its read-ahead limit of one such hint (the
//! larger of the device's read-ahead and largest request, often 128 KiB
//! and 1,280 KiB) and drops the rest of the range without a word: a hint
//! of a whole 32 MiB window read 8 MiB of it on the development machine,
//! and the workers then faulted the rest in. So every range is asked for in
//! requests no larger than that limit ([`hint_limit`]).
//!
//! A range the page cache already seems to hold is not asked for: the
//! thread probes one page of every MiB of it (`mincore(2)`, a few
//! microseconds a window) and skips the hints, whose page-by-page lookups
//! would otherwise take a core from the workers of a warm load (a 128 MiB
//! window's hints cost 2.3 ms; the probes, 0.1). Linux answers such a
//! probe truly only for a file the process owns or could write; for any
//! other it says "resident" and the range goes unhinted (a known gap). A
//! load's timeline shows each range on a track of its own, asked for or
//! found resident.
//!
//! `NSIMAGE_NO_PREFETCH=1` turns the prefetch thread off (then a mapping
//! gets one whole-file hint on the loading thread, which the kernel cuts
//! to its read-ahead limit, and bulk reads only the kernel's own
//! read-ahead); `NSIMAGE_PREFETCH_MIB=N` sets the window (default
//! [`DEFAULT_WINDOW_MIB`]); `NSIMAGE_HINT_KIB=N` sets the request size,
//! whatever the device says.

pub use crate::progress::Progress;
use crate::source::ImageSource;
use crate::trace::{Track, What};
use std::path::Path;

/// The default read-ahead window, in MiB, after the workers' front. Large
/// enough that the disk, faster than the decoders, works ahead through the
/// INODE phase and has NAME_INDEX and INODE_DIR read by the time the
/// workers get there (cold 2-thread loads 1.10x a warm one with 32 MiB,
/// 1.07x with 128; README, "Cold cache").
pub const DEFAULT_WINDOW_MIB: u64 = 128;

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

/// What a load of a file at `path` (a file, or the directory holding it)
/// in this process reads ahead, in words: `off (NSIMAGE_NO_PREFETCH)`, or
/// the window and the request size (for the bench's report).
pub fn describe(path: &Path) -> String {
    match window_from_env() {
        None => "off (NSIMAGE_NO_PREFETCH)".to_string(),
        Some(w) => {
            let limit = hint_from_env()
                .unwrap_or_else(|| std::fs::File::open(path).map_or(MIN_HINT, |f| hint_limit(&f)));
            format!("{} MiB ahead in requests of {} KiB", w >> 20, limit >> 10)
        }
    }
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
/// after the pieces workers start, woken again once their front has moved
/// a quarter of the window past the piece it last hinted from (or gone
/// back before it), so that at least three quarters of a window stay asked
/// for ahead of the front.
fn prefetch(src: &ImageSource, spans: &[Span], window: u64) {
    let progress = src.progress();
    let step = (window / 4).max(1);
    let mut asked = vec![false; spans.len()];
    let limit = hint_from_env().unwrap_or_else(|| hint_limit(src.file()));
    // What the page cache holds is probed on the load's own mapping, or on
    // one made for the probes when the load reads the file.
    let own;
    let probe = match src.mapping() {
        Some(m) => Some(m),
        None => {
            own = crate::mmap::map_for_probes(src.file()).ok();
            own.as_ref()
        }
    };
    let timeline = src.timeline();
    let mut hint = |from: usize| {
        for (offset, len) in ask(spans, &mut asked, from, window) {
            let start = timeline.map(|t| t.now());
            // A range the page cache already holds is not asked for: on a
            // warm cache, hints would only take a core from the workers
            // (one `madvise` per request, each looking up every page).
            let resident =
                probe.is_some_and(|m| match (usize::try_from(offset), usize::try_from(len)) {
                    (Ok(o), Ok(l)) => crate::mmap::looks_resident(m, o, l),
                    _ => false,
                });
            if !resident {
                will_need(src, offset, len, limit);
            }
            if let (Some(t), Some(start)) = (timeline, start) {
                t.record_on(
                    Track::ReadAhead,
                    What::ReadAhead {
                        bytes: len,
                        resident,
                    },
                    start,
                    t.now(),
                );
            }
        }
    };
    hint(0);
    while let Some(started) = progress.wait() {
        let mut low = u64::MAX;
        for offset in started {
            if let Some(i) = locate(spans, offset) {
                hint(i);
                low = low.min(offset);
            }
        }
        if low != u64::MAX {
            progress.wake_outside(low, low.saturating_add(step));
        }
    }
}

/// Asks the kernel to read `len` bytes at `offset` soon, without waiting
/// for them, in requests of at most `limit` bytes (see the module's doc).
/// A hint: failures are ignored.
fn will_need(src: &ImageSource, offset: u64, len: u64, limit: u64) {
    for (at, n) in requests(offset, len, limit) {
        match src.mapping() {
            Some(m) => {
                if let (Ok(o), Ok(l)) = (usize::try_from(at), usize::try_from(n)) {
                    let _ = crate::mmap::will_need(m, o, l);
                }
            }
            None => {
                let _ = crate::mmap::fadvise(src.file(), at, n, libc::POSIX_FADV_WILLNEED);
            }
        }
    }
}

/// `len` bytes at `offset` cut into consecutive requests of at most
/// `limit` bytes (at least 1).
fn requests(offset: u64, len: u64, limit: u64) -> impl Iterator<Item = Span> {
    let end = offset.saturating_add(len);
    let limit = limit.max(1);
    std::iter::successors(Some(offset), move |&at| Some(at.saturating_add(limit)))
        .take_while(move |&at| at < end)
        .map(move |at| (at, limit.min(end - at)))
}

/// The most bytes one read-ahead hint on `file` gets read: the larger of
/// its block device's read-ahead and largest request
/// (`queue/read_ahead_kb` and `queue/max_sectors_kb` in sysfs, the
/// partition's disk for a partition), [`MIN_HINT`] when they cannot be read
/// (a file system without a block device, no sysfs), at most [`MAX_HINT`].
pub fn hint_limit(file: &std::fs::File) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = file.metadata() else {
        return MIN_HINT;
    };
    let dev = meta.dev();
    limit_in_sysfs(
        Path::new("/sys/dev/block"),
        libc::major(dev),
        libc::minor(dev),
    )
}

/// [`hint_limit`] of device `major:minor` under `root` (`/sys/dev/block`):
/// its `queue/` files, else those of the directory above it (a partition's
/// disk).
fn limit_in_sysfs(root: &Path, major: u32, minor: u32) -> u64 {
    let base = root.join(format!("{major}:{minor}"));
    let kib = |name: &str| {
        [
            base.join("queue").join(name),
            base.join("../queue").join(name),
        ]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| t.trim().parse::<u64>().ok())
        .map_or(0, |k| k.saturating_mul(1024))
    };
    kib("read_ahead_kb")
        .max(kib("max_sectors_kb"))
        .clamp(MIN_HINT, MAX_HINT)
}

/// `NSIMAGE_HINT_KIB=N`: hints of at most N KiB (at least 4), whatever the
/// device.
fn hint_from_env() -> Option<u64> {
    std::env::var("NSIMAGE_HINT_KIB")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&k| k > 0)
        .map(|k| k.max(4).saturating_mul(1024))
}

/// The kernel's default read-ahead (128 KiB): a hint never larger than
/// this is read whole on any block device left at its defaults.
pub const MIN_HINT: u64 = 128 << 10;

/// The largest request a hint is split into.
pub const MAX_HINT: u64 = 8 << 20;

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
    fn a_hint_is_cut_into_requests_no_larger_than_the_limit() {
        let r: Vec<Span> = requests(4096, 10 * MIB, 4 * MIB).collect();
        assert_eq!(
            r,
            vec![
                (4096, 4 * MIB),
                (4096 + 4 * MIB, 4 * MIB),
                (4096 + 8 * MIB, 2 * MIB)
            ]
        );
        assert_eq!(requests(7, 0, MIB).count(), 0);
        assert_eq!(
            requests(0, 3, 0).collect::<Vec<_>>(),
            vec![(0, 1), (1, 1), (2, 1)]
        );
        // Near the end of the offsets, without overflow.
        assert_eq!(
            requests(u64::MAX - 5, 100, 4).collect::<Vec<_>>(),
            vec![(u64::MAX - 5, 4), (u64::MAX - 1, 1)]
        );
    }

    #[test]
    fn the_hint_limit_is_read_from_the_device_or_its_disk() {
        let root = tempfile::tempdir().unwrap();
        let write = |dir: &str, name: &str, text: &str| {
            let d = root.path().join(dir).join("queue");
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join(name), text).unwrap();
        };
        // A disk: the larger of its two limits.
        write("8:0", "read_ahead_kb", "128\n");
        write("8:0", "max_sectors_kb", "1280\n");
        assert_eq!(limit_in_sysfs(root.path(), 8, 0), 1280 << 10);
        // A partition has no queue of its own: its disk's, one level up
        // (sysfs links the partition inside its disk's directory).
        std::fs::create_dir_all(root.path().join("disk/part")).unwrap();
        write("disk", "read_ahead_kb", "4096");
        let part = root.path().join("8:1");
        std::os::unix::fs::symlink(root.path().join("disk/part"), &part).unwrap();
        assert_eq!(limit_in_sysfs(root.path(), 8, 1), 4 << 20);
        // Bounds: below the floor, above the ceiling, unreadable, garbage.
        write("9:0", "read_ahead_kb", "16");
        assert_eq!(limit_in_sysfs(root.path(), 9, 0), MIN_HINT);
        write("9:1", "max_sectors_kb", "65536");
        assert_eq!(limit_in_sysfs(root.path(), 9, 1), MAX_HINT);
        write("9:2", "read_ahead_kb", "lots");
        assert_eq!(limit_in_sysfs(root.path(), 9, 2), MIN_HINT);
        assert_eq!(limit_in_sysfs(root.path(), 7, 7), MIN_HINT);
        // A real file: within the bounds, whatever its device.
        let f = tempfile::tempfile().unwrap();
        assert!((MIN_HINT..=MAX_HINT).contains(&hint_limit(&f)));
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
