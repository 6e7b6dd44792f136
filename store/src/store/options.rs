//! [`StoreOptions`]: how a store behaves.

use nsimage_format::cipher::Key;
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
    /// How checkpoints lay their images out. Their at-rest options
    /// (`write.at_rest`) are the store's, recorded at init: opening sets
    /// them from its `AT_REST` settings, whatever is given here.
    pub write: WriteOptions,
    /// How recovery loads images (opening an encrypted store sets
    /// `load.key` to [`key`](Self::key)).
    pub load: LoadOptions,
    /// The key of an encrypted store: checked against the fingerprint the
    /// store recorded at init before anything else is read; seals new
    /// journal batches and checkpoints, opens old ones. Not used by a
    /// plain store.
    pub key: Option<Key>,
    /// After recovery has loaded its image, give the allocator's free
    /// pages back to the system ([`nsimage_loader::release_free_memory`]:
    /// process-wide, so off unless the caller asks).
    pub release_memory_after_load: bool,
    /// The nice value (Linux; 0 to 19) of the one thread that saves
    /// checkpoint images, set once when the store's first checkpoint
    /// starts that thread: 10 (the default) makes a save yield its core to
    /// the store's writers and readers, which on a busy machine makes the
    /// save take longer (the snapshot's copy-on-write chunks live that much
    /// longer); 0 leaves the thread at the process's priority. Values past
    /// 19 are taken as 19; a value the system refuses leaves the priority
    /// as it was.
    pub checkpoint_nice: u8,
    /// Keep the namespace as of the last durable op for readers
    /// ([`Store::durable_namespace`]): a copy-on-write snapshot taken with
    /// each group commit's records and published once they are durable,
    /// so that a reader never sees an op that is not durable (nor one
    /// whose journal write fails). Costs one snapshot per group commit
    /// (a reference count per chunk) and, while a reader or the published
    /// snapshot shares a chunk, a copy of each chunk an op then changes.
    /// Off by default: a store used without concurrent readers pays
    /// nothing.
    ///
    /// [`Store::durable_namespace`]: crate::Store::durable_namespace
    pub durable_view: bool,
    /// At most this many bytes a second of a checkpoint's image written
    /// (`None`: as fast as it goes). A checkpoint that leaves the disk to
    /// a server's journal takes longer; an HA group's standby, which takes
    /// the checkpoints while the active fsyncs on the same machine, is
    /// where it matters.
    pub checkpoint_write_limit: Option<u64>,
    /// An image older than the ones kept is cut this many bytes at a time
    /// before its removal (0: removed at once). Removing a large file at
    /// once frees all its blocks in one commit of the file system's
    /// journal; on a file system mounted with `discard` (and on a thin
    /// disk) that commit then discards the whole file while every fsync
    /// on the disk, the journal's included, waits behind it (on a virtio
    /// disk, about 100 ms for a 464 MB image). Cut in steps, each step
    /// fsynced and followed by a short pause, the discards come a few
    /// milliseconds at a time. The image is first renamed to its
    /// temporary name, so a crash in between leaves a file that opening
    /// removes, never a damaged image.
    pub purge_step_bytes: u64,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            keep_images: 2,
            segment_bytes: 64 << 20,
            bulk_replay_bytes: 64 << 20,
            write: WriteOptions::default(),
            load: LoadOptions::default(),
            key: None,
            release_memory_after_load: false,
            checkpoint_nice: 10,
            durable_view: false,
            checkpoint_write_limit: None,
            purge_step_bytes: 16 << 20,
        }
    }
}
