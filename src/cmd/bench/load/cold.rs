//! `bench --cold`: takes a file out of the page cache before a cold run
//! (and reads it in before a warm one), checking with `mincore(2)` that it
//! worked.
//!
//! Eviction first asks for the file alone: `fdatasync`, then
//! `posix_fadvise(POSIX_FADV_DONTNEED)`, which needs no privilege and
//! leaves the rest of the machine's cache alone. Pages it cannot drop
//! (another process maps the file) are then dropped with the whole page
//! cache through `/proc/sys/vm/drop_caches`, which needs root. A file still
//! resident after both is an error: the run would not be cold.

use anyhow::bail;
use nsimage_loader::prefetch::{evict, residency, Residency};
use std::io::Read;
use std::path::Path;

/// The page cache a run starts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cache {
    /// The file read in whole just before the run (or just written).
    Warm,
    /// The file out of the page cache.
    Cold,
}

impl Cache {
    /// "warm" or "cold".
    pub fn name(self) -> &'static str {
        match self {
            Cache::Warm => "warm",
            Cache::Cold => "cold",
        }
    }
}

/// How files were evicted, for the report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Eviction {
    /// Nothing evicted yet.
    #[default]
    None,
    /// `posix_fadvise(POSIX_FADV_DONTNEED)` on the file was enough.
    Fadvise,
    /// The whole page cache had to be dropped (`/proc/sys/vm/drop_caches`).
    DropCaches,
}

impl Eviction {
    /// The method's name in the table and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Eviction::None => "none",
            Eviction::Fadvise => "posix_fadvise(DONTNEED)",
            Eviction::DropCaches => "/proc/sys/vm/drop_caches",
        }
    }
}

/// What may stay resident and still count as cold: 1% of the file (a
/// page or two of the header another reader touched, say).
fn cold_enough(r: Residency) -> bool {
    r.resident_bytes <= r.file_bytes / 100
}

/// Takes `path` out of the page cache; returns the method that did it.
pub fn make_cold(path: &Path) -> anyhow::Result<Eviction> {
    let r = evict(path).map_err(|e| anyhow::anyhow!("evicting {}: {e}", path.display()))?;
    if cold_enough(r) {
        return Ok(Eviction::Fadvise);
    }
    // "1": the page cache only (not dentries and inodes). The file's
    // dirty pages were written by `evict`, so its pages are clean.
    let dropped = std::fs::write("/proc/sys/vm/drop_caches", "1");
    let r2 = residency(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    if cold_enough(r2) {
        return Ok(Eviction::DropCaches);
    }
    let why = match dropped {
        Ok(()) => "dropping the whole page cache (/proc/sys/vm/drop_caches) left them".to_string(),
        Err(e) => format!(
            "/proc/sys/vm/drop_caches cannot be written ({e}): dropping the whole page \
             cache needs root"
        ),
    };
    bail!(
        "--cold: cannot take {} out of the page cache: {} of its {} bytes stay resident after \
         posix_fadvise(POSIX_FADV_DONTNEED) (another process may map it), and {why}",
        path.display(),
        r2.resident_bytes,
        r2.file_bytes
    )
}

/// Reads `path` through, so that a warm run finds it in the page cache
/// whatever a cold run before it dropped.
pub fn make_warm(path: &Path) -> anyhow::Result<()> {
    let mut f = std::fs::File::open(path)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match f.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => bail!("reading {}: {e}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cold_enough_allows_one_percent() {
        let r = |resident_bytes, file_bytes| Residency {
            resident_bytes,
            file_bytes,
        };
        assert!(cold_enough(r(0, 0)));
        assert!(cold_enough(r(0, 1000)));
        assert!(cold_enough(r(10, 1000)));
        assert!(!cold_enough(r(11, 1000)));
        assert!(!cold_enough(r(4096, 4096)));
    }
}
