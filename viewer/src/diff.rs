//! `diff`: what changed between two images of the same namespace (two
//! checkpoints of a store, last night's image and this morning's), matched
//! by inode id.
//!
//! [`diff`] walks both node tables once, in id order, and compares each
//! inode present in both; it resolves paths only for the inodes it reports.
//! What it reports ([`Diff`]):
//!
//! - **created**: an id live in NEW only, with its path and type;
//! - **deleted**: an id live in OLD only, with its old path and type. A
//!   deleted subtree lists every deleted inode (each counted once in the
//!   summary); [`Deleted::top`] marks the roots of deleted subtrees;
//! - **renamed**: an inode whose *own* parent or name changed (a rename or a
//!   move), with its old and new path. An inode whose path changed only
//!   because an ancestor was renamed is not reported: the ancestor's entry
//!   says it all;
//! - **modified**: an inode whose attributes changed ([`Attr`]), with the
//!   old and new values, and its blocks added, removed or changed (same
//!   block id, another length or generation stamp);
//! - a [`Summary`]: counts per kind, blocks and bytes added and removed.
//!
//! An id whose type differs between the images (which a namespace never
//! does: ids are not reused) is reported as deleted and created.
//!
//! Every list is sorted by path in [`path_order`] (component by component,
//! so a subtree follows its root), then by id.
//!
//! Rendering: [`write_text`] (one line per change, sorted by path, then the
//! summary; a created or deleted subtree as its top unless
//! [`Detail::EveryInode`]), [`write_snapshot_diff`] (`hdfs snapshotDiff`'s
//! report) and [`write_json`] (one document).

mod compute;
mod model;
mod render;

pub use compute::diff;
pub use model::{
    path_order, Attr, AttrChange, AttrValue, BlockChange, Created, Deleted, Diff, Modified,
    Renamed, Summary,
};
pub use render::{kind_name, to_json, write_json, write_snapshot_diff, write_text, Detail};
