//! What an export is asked to do and what it did.

/// Default rows (slots) per row group: small enough that a 1M-inode
/// namespace gives every worker of a small machine several row groups.
pub const DEFAULT_ROW_GROUP_ROWS: u32 = 1 << 17;

/// How to export.
#[derive(Clone, Copy, Debug)]
pub struct ExportOptions {
    /// Worker threads; 0: the available cores.
    pub threads: usize,
    /// Slots of the node table per row group (a row group holds the live
    /// inodes of its slots: at most this many rows).
    pub row_group_rows: u32,
    /// For a dataset: row groups per file.
    pub row_groups_per_file: u32,
    /// The zstd level.
    pub zstd_level: i32,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            threads: 0,
            row_group_rows: DEFAULT_ROW_GROUP_ROWS,
            row_groups_per_file: 1,
            zstd_level: 3,
        }
    }
}

/// What an export wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportStats {
    /// Rows written (one per live inode).
    pub rows: u64,
    /// Row groups written.
    pub row_groups: u64,
    /// Files written.
    pub files: u64,
    /// Bytes written, all files together.
    pub bytes: u64,
    /// Worker threads used.
    pub threads: usize,
}
