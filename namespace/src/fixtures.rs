//! Fixtures shared by the unit tests.

use crate::values::{FileSpec, PermSpec};

/// A directory owner's permission.
pub(crate) const P: PermSpec<'static> = PermSpec {
    user: b"hdfs",
    group: b"supergroup",
    mode: 0o755,
};

/// A file's attributes.
pub(crate) const F: FileSpec = FileSpec {
    replication: 3,
    preferred_block_size: 128 << 20,
    storage_policy: 0,
};
