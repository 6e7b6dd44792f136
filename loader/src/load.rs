//! The entry point of a load: opens the image, chooses the serial or the
//! parallel path from the options and the index's inode count, builds the
//! thread pool, and runs the indexed path (`indexed`) or the streaming
//! baseline (`baseline`).

use crate::baseline::load_stream;
use crate::error::LoadError;
use crate::indexed::load_indexed;
use crate::options::LoadOptions;
use crate::source::{ImageSource, ReadStrategy};
use crate::stats::{LoadStats, Loaded};
use crate::trace::Timeline;
use nsimage_format::SectionKind;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// Loads the image at `path`: an nsimage image, or a Hadoop fsimage
/// (magic `HDFSIMG1`, see [`hdfs`](crate::hdfs)).
///
/// Every checksum and structural rule is checked on the way; the first
/// violation is returned as [`LoadError::Corrupt`] naming the section,
/// sub-section and offset. The load has no process-wide side effect: a
/// caller that wants the decode scratch's freed pages back from the
/// allocator calls [`release_free_memory`](crate::release_free_memory)
/// afterwards. With [`LoadOptions::budget`], an image whose declared
/// inodes need more memory than the budget is refused first
/// ([`LoadError::TooLarge`]).
pub fn load(path: &Path, opts: &LoadOptions) -> Result<Loaded, LoadError> {
    if crate::hdfs::is_hdfs_file(path)? {
        crate::need::hdfs_fits(path, opts.budget)?;
        return crate::hdfs::run::load_hdfs(path, opts);
    }
    let started = Instant::now();
    let timeline = opts
        .timeline
        .clone()
        .unwrap_or_else(|| Arc::new(Timeline::new(false)));
    let mut src = timeline.phase("open", || -> Result<ImageSource, LoadError> {
        let mut src = ImageSource::open(path)?;
        src.unlock(opts.key.as_ref())?;
        crate::need::image_fits(&src, opts.budget, opts.key.as_ref())?;
        Ok(src)
    })?;
    src.set_timeline(Arc::clone(&timeline));
    let all = src.index.sections.iter().flat_map(|s| s.pieces());
    let (n, bytes) = all.fold((0u64, 0u64), |(n, b), p| {
        (n.saturating_add(1), b.saturating_add(p.length))
    });
    timeline.plan(n, bytes);
    let threads = threads(&src, opts);
    let mut stats = LoadStats {
        mode: if threads == 1 { "serial" } else { "parallel" },
        read: opts.read.name(),
        threads,
        ..LoadStats::default()
    };
    let namespace = match opts.read {
        ReadStrategy::Stream => load_stream(&src)?,
        strategy => {
            let window = crate::prefetch::window_from_env();
            if let ReadStrategy::Mmap(opt_in) = strategy {
                timeline.phase("map", || match window {
                    Some(_) => src.map_lazily(opt_in),
                    None => src.map(opt_in),
                })?;
            }
            let pool = timeline.phase("pool", || crate::run::pool(path, threads))?;
            crate::prefetch::with_prefetch(&src, window, || {
                load_indexed(&src, pool.as_ref(), &mut stats)
            })?
        }
    };
    // The optional carry of a Hadoop image's snapshots (its checksum was
    // checked with the other optional sections').
    let hdfs_carry = timeline.phase("carry", || crate::sections::hdfs_carry(&src))?;
    // Every piece read and checked: those of optional sections this build
    // does not decode (their checksums are checked) included.
    stats.pieces = src
        .index
        .sections
        .iter()
        .map(|s| u64::try_from(s.pieces().len()).unwrap_or(u64::MAX))
        .sum();
    stats.read_calls = src.read_calls();
    stats.bytes_read = src.bytes_read();
    timeline.phase("close", || drop(src));
    stats.seconds = started.elapsed().as_secs_f64();
    stats.phases = timeline.phase_stats(threads);
    Ok(Loaded {
        namespace,
        stats,
        hdfs: None,
        hdfs_carry,
        timeline,
    })
}

/// Threads the load runs on: 1 (the serial path) when forced, for the
/// streaming baseline, or below the threshold of inodes; else the option's
/// count, or every core for 0.
fn threads(src: &ImageSource, opts: &LoadOptions) -> usize {
    let inodes = src
        .index
        .section(SectionKind::INODE)
        .map_or(0, |s| s.records);
    let serial =
        opts.serial || opts.read == ReadStrategy::Stream || inodes < opts.parallel_threshold;
    if serial {
        1
    } else if opts.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        opts.threads
    }
}
