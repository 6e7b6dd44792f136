//! How to load: threads, read strategy, the serial threshold.

use crate::source::ReadStrategy;
use nsimage_format::cipher::Key;

/// Namespaces with fewer inodes than this load serially by default. Chosen
/// from the measured serial/parallel crossover (README, "Serial threshold").
pub const DEFAULT_PARALLEL_THRESHOLD: u64 = 10_000;

/// How to load. The default reads each piece with one positioned read
/// ([`ReadStrategy::Bulk`]) on all cores; mapping the file instead is an
/// explicit, `unsafe` opt-in ([`ReadStrategy::mmap`]).
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Worker threads; 0 means the number of available cores.
    pub threads: usize,
    /// How piece bytes are brought into memory.
    pub read: ReadStrategy,
    /// Force the serial path.
    pub serial: bool,
    /// Below this many inodes (from the index) the load is serial.
    pub parallel_threshold: u64,
    /// The key of an encrypted image (FORMAT.md, "Pieces at rest").
    pub key: Option<Key>,
    /// The timeline the load records into ([`Loaded::timeline`](crate::Loaded::timeline)
    /// gives it back): the caller's, to watch the load's progress from
    /// another thread ([`Timeline::progress`](crate::trace::Timeline::progress))
    /// or to ask for the fine spans of a trace file
    /// ([`Timeline::new`](crate::trace::Timeline::new)`(true)`); `None`:
    /// one of its own, without the fine spans. The pieces and phases are
    /// recorded either way (a few hundred spans).
    pub timeline: Option<std::sync::Arc<crate::trace::Timeline>>,
    /// The memory the load may take: with a budget, an image whose
    /// declared inodes need more ([`budget::load_bytes`](crate::budget::load_bytes))
    /// is refused before it is read ([`LoadError::TooLarge`](crate::LoadError::TooLarge));
    /// `None` (the default): no check.
    pub budget: Option<crate::budget::Budget>,
    /// Whether a Hadoop image's `.md5` sidecar is checked (the default)
    /// or ignored.
    pub md5: crate::hdfs::Md5Policy,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            threads: 0,
            read: ReadStrategy::default(),
            serial: false,
            parallel_threshold: DEFAULT_PARALLEL_THRESHOLD,
            key: None,
            timeline: None,
            budget: None,
            md5: crate::hdfs::Md5Policy::Check,
        }
    }
}
