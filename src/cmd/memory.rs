//! Sizes on the command line, and the memory a streamed command may take
//! (`--memory-limit`, by default what the machine has available): a tree
//! that would not fit is refused before any output.

use std::path::Path;

/// Parses a size: digits and an optional binary unit (K, M, G, T, P; `2M`,
/// `2MiB` and `2MB` all mean 2 MiB).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(digits);
    let n: u64 = n
        .parse()
        .map_err(|_| format!("{s:?}: a size is a number of bytes, e.g. 2M or 128G"))?;
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        "p" | "pb" | "pib" => 50,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (K, M, G, T or P)")),
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{s:?}: too large"))
}

/// `--memory-limit`.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct MemoryLimit {
    /// Most memory the image's tree may take while the command streams
    /// it (a size: 160M, 2G); an image whose tree needs more is refused
    /// before any output, saying how much it needs. Default: the memory
    /// the machine has available (MemAvailable), or the process's cgroup
    /// limit where that is less.
    #[arg(long = "memory-limit", value_parser = parse_size)]
    pub bytes: Option<u64>,
}

impl MemoryLimit {
    /// The limit: the one given, else the least of MemAvailable and the
    /// memory limit of the process's cgroup, else none.
    pub fn get(self) -> u64 {
        self.bytes.unwrap_or_else(|| {
            available()
                .unwrap_or(u64::MAX)
                .min(cgroup_limit().unwrap_or(u64::MAX))
        })
    }

    /// Refuses `needed` bytes for `src` past the limit, once its counts
    /// (what `needed` was sized from) are read and found true: an image
    /// whose counts lie is damaged (exit 1), never a memory shortfall.
    pub fn check(
        self,
        needed: u64,
        src: &nsimage_loader::Streamable,
        image: &Path,
    ) -> anyhow::Result<()> {
        let limit = self.get();
        if needed > limit {
            src.check_counts()?;
            anyhow::bail!(
                "{}: streaming its tree needs about {} MiB, more than the memory limit of {} MiB ({}); raise --memory-limit or use a larger machine",
                image.display(),
                needed.div_ceil(1 << 20),
                limit >> 20,
                if self.bytes.is_some() {
                    "--memory-limit"
                } else {
                    "the memory available"
                }
            );
        }
        Ok(())
    }
}

impl MemoryLimit {
    /// Workers that fit beside a tree of `tree` bytes when each takes
    /// `per_worker`: at most `asked` (0: the available cores), at least
    /// one. A streamed command whose workers hold large buffers (an
    /// export's row groups) runs fewer of them rather than go past the
    /// limit.
    pub fn workers(self, tree: u64, per_worker: u64, asked: usize) -> usize {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let asked = if asked == 0 { cores } else { asked };
        let room = self.get().saturating_sub(tree);
        let fit = usize::try_from(room / per_worker.max(1)).unwrap_or(usize::MAX);
        asked.min(fit).max(1)
    }

    /// Refuses a whole load of `image` (`src`, an image the stream cannot
    /// take) that would not fit: about 128 bytes an inode, once the count
    /// of inodes is read and found true (as [`check`](Self::check)).
    pub fn check_load(self, src: &nsimage_loader::Streamable, image: &Path) -> anyhow::Result<()> {
        let needed = src.inode_count().saturating_mul(128);
        let limit = self.get();
        if needed > limit {
            src.check_counts()?;
            anyhow::bail!(
                "{}: this image cannot be streamed and loading it whole needs about {} MiB, more than the memory limit of {} MiB",
                image.display(),
                needed.div_ceil(1 << 20),
                limit >> 20
            );
        }
        Ok(())
    }
}

/// `image` opened to be streamed (an nsimage image, its key applied, or a
/// Hadoop fsimage) and its tree's estimate checked against `limit`.
pub fn open_streamed(
    image: &Path,
    limit: MemoryLimit,
) -> anyhow::Result<Option<nsimage_loader::Streamable>> {
    let src = if nsimage_loader::hdfs::is_hdfs_file(image)? {
        nsimage_loader::Streamable::Hdfs(Box::new(nsimage_loader::hdfs::HdfsSource::open(image)?))
    } else {
        let mut src = nsimage_loader::ImageSource::open(image)?;
        src.unlock(super::key()?.as_ref())?;
        nsimage_loader::Streamable::Image(src)
    };
    limit.check(
        nsimage_loader::skeleton::Skeleton::estimate(&src),
        &src,
        image,
    )?;
    Ok(Some(src))
}

/// Inodes in `src` (as its index or INODE header declares them).
pub fn inode_count(src: &nsimage_loader::Streamable) -> u64 {
    src.inode_count()
}

/// The memory limit of this process's cgroup (v2 `memory.max`, v1
/// `memory.limit_in_bytes`), in bytes; `None` where there is none.
fn cgroup_limit() -> Option<u64> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mut least: Option<u64> = None;
    for line in own.lines() {
        // "ID:CONTROLLERS:PATH"; v2's line is "0::PATH".
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let file = if controllers.is_empty() {
            format!("/sys/fs/cgroup{path}/memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes")
        } else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        // "max" (v2) or a huge number (v1) mean none.
        if let Ok(n) = text.trim().parse::<u64>() {
            least = Some(least.map_or(n, |l| l.min(n)));
        }
    }
    least
}

/// MemAvailable from `/proc/meminfo`, in bytes.
fn available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}
