//! What one worker keeps while it formats a range of slots: the path of
//! the last parent ([`PathCache`]) and the dates already formatted
//! ([`DayCache`]).

use super::paths::PathCache;
use crate::text::oiv_time;
use nsimage_loader::skeleton::DirIndex;

/// A worker's state over one range of slots.
pub(crate) struct Scratch {
    /// Full paths.
    pub(crate) paths: PathCache,
    /// OIV times.
    pub(crate) days: DayCache,
    /// Streamed rows: the directory whose path `stream_path` holds.
    pub(crate) stream_dir: Option<DirIndex>,
    /// Its path, without a trailing slash.
    pub(crate) stream_path: Vec<u8>,
}

impl Scratch {
    /// A fresh worker's state.
    pub(crate) fn new() -> Scratch {
        Scratch {
            paths: PathCache::new(),
            days: DayCache::new(),
            stream_dir: None,
            stream_path: Vec::with_capacity(256),
        }
    }
}

const MS_PER_DAY: u64 = 86_400_000;
const SLOTS: usize = 1024;

/// A direct-mapped cache of `yyyy-MM-dd ` strings by day since the epoch:
/// [`oiv_time`] runs once per day met (times cluster in a few years), the
/// hours and minutes are appended without formatting machinery.
pub(crate) struct DayCache {
    days: Vec<(u64, [u8; 11])>,
}

impl DayCache {
    /// An empty cache.
    pub(crate) fn new() -> DayCache {
        DayCache {
            days: vec![(u64::MAX, [0; 11]); SLOTS],
        }
    }

    /// Appends `ms` as [`oiv_time`] writes it (`yyyy-MM-dd HH:mm`, UTC).
    pub(crate) fn push_oiv_time(&mut self, ms: u64, out: &mut Vec<u8>) {
        let day = ms / MS_PER_DAY;
        // The modulo keeps the index below SLOTS.
        #[allow(clippy::cast_possible_truncation)]
        let e = &mut self.days[(day % SLOTS as u64) as usize];
        if e.0 != day {
            let s = oiv_time(day * MS_PER_DAY);
            // Years beyond 9999 make a longer date: not cached.
            if s.len() != 16 {
                out.extend_from_slice(oiv_time(ms).as_bytes());
                return;
            }
            e.1.copy_from_slice(&s.as_bytes()[..11]);
            e.0 = day;
        }
        out.extend_from_slice(&e.1);
        let mins = (ms % MS_PER_DAY) / 60_000;
        let (h, m) = (mins / 60, mins % 60);
        #[allow(clippy::cast_possible_truncation)] // digits: each below 10
        out.extend_from_slice(&[
            b'0' + (h / 10) as u8,
            b'0' + (h % 10) as u8,
            b':',
            b'0' + (m / 10) as u8,
            b'0' + (m % 10) as u8,
        ]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_times_are_oiv_times() {
        let mut c = DayCache::new();
        let mut t = 0u64;
        for i in 0..20_000u64 {
            t = t
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407 + i);
            let ms = match i % 3 {
                0 => t % 2_000_000_000_000,
                1 => t % (400 * MS_PER_DAY),
                _ => i * 61_000,
            };
            let mut out = Vec::new();
            c.push_oiv_time(ms, &mut out);
            assert_eq!(out, oiv_time(ms).as_bytes(), "{ms}");
        }
        let mut out = Vec::new();
        c.push_oiv_time(u64::MAX, &mut out);
        assert_eq!(out, oiv_time(u64::MAX).as_bytes());
    }
}
