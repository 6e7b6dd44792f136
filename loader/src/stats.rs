//! What a load gives back: the namespace and the figures of the load.

use crate::lock_stats::LockStats;
use nsimage_namespace::Namespace;

/// What a load did.
#[derive(Clone, Debug, Default)]
pub struct LoadStats {
    /// "serial" or "parallel".
    pub mode: &'static str,
    /// The read strategy's name ([`ReadStrategy::name`](crate::ReadStrategy::name)).
    pub read: &'static str,
    /// Threads that decoded pieces (1 on the serial path).
    pub threads: usize,
    /// Pieces (sections or sub-sections) decoded.
    pub pieces: u64,
    /// Read calls that reached the file, the open's and a mapping's included.
    pub read_calls: u64,
    /// Bytes those calls read (a mapping counts none; an encrypted piece is
    /// read, mapped or not).
    pub bytes_read: u64,
    /// Wall-clock seconds of the whole load.
    pub seconds: f64,
    /// Seconds of the INODE phase.
    pub inode_phase_seconds: f64,
    /// Seconds of the INODE_DIR phase (linking and the reachability check).
    pub dir_phase_seconds: f64,
    /// Lock traffic: the INODE phase's slot ranges (an nsimage image's
    /// pieces, a Hadoop image's tasks), each taken once by the worker that
    /// fills it; no other phase takes a lock (parents are set each worker
    /// in its own range of the node table).
    pub locks: LockStats,
    /// Whether a Hadoop image's `.md5` sidecar was found and the file's
    /// digest checked against it (while the load decoded).
    pub md5_checked: bool,
    /// With a sidecar: seconds the file's hashing took on its own thread,
    /// beside the workers (from the thread's start, just after the load
    /// opened the file); 0 without.
    pub md5_seconds: f64,
    /// With a sidecar: the hashing thread's CPU seconds (its share of the
    /// machine's cores, which the workers do not get); 0 without.
    pub md5_cpu_seconds: f64,
    /// Each phase's figures in order, then the whole load's (`load`): see
    /// [`trace`](crate::trace).
    pub phases: Vec<crate::trace::PhaseStats>,
}

/// A loaded image.
pub struct Loaded {
    /// The namespace the image holds.
    pub namespace: Namespace,
    /// How the load went.
    pub stats: LoadStats,
    /// For a Hadoop image, what it holds beside the namespace (summary,
    /// snapshots, references, ...); `None` for an nsimage image.
    pub hdfs: Option<Box<crate::hdfs::image::HdfsImage>>,
    /// For an nsimage image converted from a Hadoop image with snapshots,
    /// its HDFS_SNAPSHOTS section's carry; `None` otherwise (a Hadoop
    /// image's is in [`hdfs`](Self::hdfs)).
    pub hdfs_carry: Option<nsimage_format::hdfs::SnapshotCarry>,
    /// Where the load's time went, span by span.
    pub timeline: std::sync::Arc<crate::trace::Timeline>,
}

impl Loaded {
    /// The snapshot carry of the image, whichever its format: a Hadoop
    /// image's (built by the load) or an nsimage image's HDFS_SNAPSHOTS.
    pub fn carry(&self) -> Option<&nsimage_format::hdfs::SnapshotCarry> {
        self.hdfs
            .as_ref()
            .and_then(|h| h.carry.as_ref())
            .or(self.hdfs_carry.as_ref())
    }
}
