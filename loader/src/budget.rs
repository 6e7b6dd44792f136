//! How much memory a command may take for an image ([`Budget`]), and what
//! a whole load takes (issue 42): about [`LOAD_BYTES_PER_INODE`] × N bytes
//! at its peak for N inodes. The refusal made from it before an image is
//! read is [`refuse_over`](crate::refuse_over)'s (`need.rs`).

/// Bytes a whole load takes per inode at its peak, about, at the
/// generator's default shape (docs/performance.md: 59-61 kept, 65-71 at the
/// peak, the most at small sizes): what a refusal to load is sized by.
pub const LOAD_BYTES_PER_INODE: u64 = 72;

/// The most memory a command may take for an image's tree (streamed) or
/// namespace (loaded whole).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    bytes: u64,
    given: bool,
}

impl Budget {
    /// `given` bytes when the user gave a limit, else [`Budget::available`].
    pub fn new(given: Option<u64>) -> Budget {
        match given {
            Some(bytes) => Budget { bytes, given: true },
            None => Budget::available(),
        }
    }

    /// What the machine has: the least of MemAvailable (`/proc/meminfo`)
    /// and the memory limit of this process's cgroup; no limit where
    /// neither can be read.
    pub fn available() -> Budget {
        Budget::of_machine(
            available()
                .unwrap_or(u64::MAX)
                .min(cgroup_limit().unwrap_or(u64::MAX)),
        )
    }

    /// A budget of `bytes` that stands for the machine's memory (not one the
    /// user gave): what [`Budget::available`] measured, or a test's.
    pub fn of_machine(bytes: u64) -> Budget {
        Budget {
            bytes,
            given: false,
        }
    }

    /// The budget in bytes.
    pub fn bytes(self) -> u64 {
        self.bytes
    }

    /// Whether the user gave it (rather than the machine's memory).
    pub fn is_given(self) -> bool {
        self.given
    }

    /// What is left of it once `used` bytes are taken (by a namespace
    /// already held, say); who gave it stays the same.
    pub fn less(self, used: u64) -> Budget {
        Budget {
            bytes: self.bytes.saturating_sub(used),
            given: self.given,
        }
    }

    /// What is left for a second namespace loaded while one of
    /// `held()` bytes is still held (a server switching to a newer
    /// checkpoint): a given limit less what is held; else the least of
    /// the machine's available memory as it is now (which already counts
    /// what is held) and this process's cgroup limit less what is held
    /// (which does not). `held` is only asked where it is subtracted.
    pub fn beside(self, held: impl FnOnce() -> u64) -> Budget {
        if self.given {
            return self.less(held());
        }
        let cgroup = cgroup_limit().map_or(u64::MAX, |l| l.saturating_sub(held()));
        Budget::of_machine(available().unwrap_or(u64::MAX).min(cgroup))
    }

    /// Workers that fit beside a tree of `tree` bytes when each takes
    /// `per_worker`: at most `asked` (0: the available cores), at least
    /// one. A streamed command whose workers hold large buffers (an
    /// export's row groups) runs fewer of them rather than go past the
    /// budget.
    pub fn workers(self, tree: u64, per_worker: u64, asked: usize) -> usize {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let asked = if asked == 0 { cores } else { asked };
        let room = self.bytes.saturating_sub(tree);
        let fit = usize::try_from(room / per_worker.max(1)).unwrap_or(usize::MAX);
        asked.min(fit).max(1)
    }
}

/// Bytes a whole load of `inodes` inodes needs, about.
pub fn load_bytes(inodes: u64) -> u64 {
    inodes.saturating_mul(LOAD_BYTES_PER_INODE)
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

/// Bytes in binary units, one decimal: `0 B`, `1023 B`, `1.5 KiB`,
/// `128.0 MiB`; as a refusal names a size, so that a limit of 1K is not
/// shown as 0 MiB (and as the viewer's summaries print sizes).
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    // Also go up a unit when one decimal would round to 1024.0
    // (1 MiB - 1 is `1.0 MiB`, not `1024.0 KiB`).
    while v >= 1023.95 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::{human_size, Budget};

    /// A given limit loses what is held; the machine's memory is measured
    /// again (available memory already counts what is held; a cgroup's
    /// limit does not, and loses it).
    #[test]
    fn beside_takes_what_is_held_from_a_given_limit_or_the_cgroups() {
        let given = Budget::new(Some(1000)).beside(|| 300);
        assert_eq!((given.bytes(), given.is_given()), (700, true));
        assert_eq!(Budget::new(Some(100)).beside(|| 300).bytes(), 0);
        let machine = Budget::of_machine(1000).beside(|| 0);
        assert!(!machine.is_given());
        assert!(machine.bytes() <= Budget::available().bytes().saturating_add(1 << 30));
        // Holding everything leaves nothing under a cgroup limit.
        if super::cgroup_limit().is_some() {
            assert_eq!(Budget::of_machine(1000).beside(|| u64::MAX).bytes(), 0);
        }
    }

    #[test]
    fn refusals_name_sizes_that_are_not_zero() {
        assert_eq!(human_size(1000), "1000 B");
        assert_eq!(human_size(1024), "1.0 KiB");
        assert_eq!(human_size(28_160), "27.5 KiB");
        assert_eq!(human_size(3 << 30), "3.0 GiB");
    }
}
