//! [`StoreOptions`]: how a store behaves.

use nsimage_loader::LoadOptions;
use nsimage_writer::WriteOptions;

/// How a store behaves.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// Images kept after a checkpoint (the newest ones).
    pub keep_images: usize,
    /// An open segment is finished once it reaches this many bytes.
    pub segment_bytes: u64,
    /// Segments up to this size are replayed from one bulk read.
    pub bulk_replay_bytes: u64,
    /// How checkpoints lay their images out.
    pub write: WriteOptions,
    /// How recovery loads images.
    pub load: LoadOptions,
    /// After recovery has loaded its image, give the allocator's free
    /// pages back to the system ([`nsimage_loader::release_free_memory`]:
    /// process-wide, so off unless the caller asks).
    pub release_memory_after_load: bool,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            keep_images: 2,
            segment_bytes: 64 << 20,
            bulk_replay_bytes: 64 << 20,
            write: WriteOptions::default(),
            load: LoadOptions::default(),
            release_memory_after_load: false,
        }
    }
}
