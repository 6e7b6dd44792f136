//! The in-memory namespace: what a metadata server holds and what an image
//! stores. Shared by the writer (which reads it), the loader (which builds it)
//! and the journal (which mutates it).
//!
//! # What this crate owns
//!
//! The model of an HDFS-like namespace ([`Namespace`]: inodes, names,
//! blocks, owners, attributes), every mutation a metadata server journals
//! (each validated in full before anything changes, so a refused one leaves
//! the namespace as it was), the bulk builder a loader fills from decoded
//! records while checking the structural rules of the image format, and the
//! canonical [`Digest`] that tells whether two namespaces hold the same
//! thing.
//!
//! Layout, chosen for resident memory: one 32-byte [`Node`] per inode in a
//! table indexed by slot (slots follow id order), in chunks of
//! [`NODE_CHUNK`] nodes; what many inodes share (owner, mode, block size,
//! replication, quotas) is an interned attribute class the node names by
//! id; each inode's name, with a file's access time and blocks (varints)
//! or a link's target after it, is one record in a chunked arena, and
//! child lists live in another (children numbered in name order keep only
//! their run of slots), not in per-inode allocations; rare attributes (xattrs, ACLs,
//! under-construction info) sit in a side map.
//!
//! Every table is chunked behind reference counts, so that
//! [`Namespace::snapshot`] (a clone) shares all of the namespace's memory
//! and a later mutation of either copy copies only the chunks it touches:
//! a background checkpoint serialises a snapshot while writers go on.
//!
//! This crate is the ground floor: it imports no other nsimage crate, and
//! must never do so. The image format, the HDFS reader and the journal all
//! build or mutate the same [`Namespace`]; none of them is known here.
//!
//! # Module map
//!
//! | file | what it holds |
//! |------|---------------|
//! | `lib.rs` | this page: the module map and the re-exports, nothing else |
//! | `consts.rs` | [`ROOT_ID`], [`MAX_NAME_LENGTH`], [`Slot`] and [`NO_SLOT`] |
//! | `values.rs` | the small value types: [`NsInfo`], [`Block`], [`Perm`], [`InodeKind`], [`XAttrNs`], [`XAttr`], [`AclEntry`], [`UnderConstruction`], [`Extra`]; [`PermSpec`] and [`FileSpec`] for new inodes |
//! | `arena.rs` | [`Arena`] and [`Span`]: chunked storage of the inodes' records (name, blocks, target) and child lists, chunks shared between clones and never changed once shared |
//! | `nodes.rs` | [`Nodes`], the node table: chunks of [`NODE_CHUNK`] nodes shared copy-on-write between clones; [`NodeRange`], whole chunks of it borrowed for a thread to write |
//! | `shards.rs` | the maps keyed by slot (edited child lists, extras), in shards shared copy-on-write between clones |
//! | `ids.rs` | [`IdIndex`]: inode id to slot and back |
//! | `strings.rs` | [`StringTable`]: interned user, group and attribute names |
//! | `classes.rs` | attribute classes: owner, mode, block size, replication and quotas, interned once and shared by nodes |
//! | `node.rs` | the node table's types: [`Node`] (32 bytes: kind, flags and class id share 4), [`Body`] (its unpacked view), [`NameRef`], where a directory's children are, a file's access time as its record keeps it |
//! | `children.rs` | child lists: [`Children`] (a directory's children, however stored) and its [`ChildIter`]; the chunked, sorted lists that mutations edit, with their name keys |
//! | `namespace.rs` | [`Namespace`]: its tables, [`Namespace::new`], counters, slots and ids, [`Stats`], reading names, listing a directory's children and finding one by name |
//! | `view.rs` | [`Inode`] (the read view), [`Attrs`], [`FileAttrs`]; [`Namespace::at`], [`inode`](Namespace::inode), [`root`](Namespace::root), [`iter`](Namespace::iter) |
//! | `lookup.rs` | paths: [`Namespace::resolve`], [`Namespace::path_of`] |
//! | `mutate.rs` | [`Namespace::mkdirs`], [`create`](Namespace::create), [`symlink`](Namespace::symlink), [`add_block`](Namespace::add_block), [`rename`](Namespace::rename), [`delete`](Namespace::delete) and their by-id forms; editing a directory's child list |
//! | `setters.rs` | owner, mode, times, replication, quota, xattr, ACL and under-construction setters of existing inodes |
//! | `errors.rs` | [`NsError`]: why a mutation was refused |
//! | `rules.rs` | `valid_name`, `acl_error`: per-record rules shared by loads and mutations |
//! | `inode_batch.rs` | the inode phase of a load: [`LoadedNode`], [`Interned`], [`InodeBatch`] and its [`NodeSink`], [`InodeParts`], [`BlockStats`] |
//! | `blocks.rs` | a file's blocks as the name arena holds them after the file's name (three varints a block), [`Blocks`], the iterator that reads them, and where the last files appended to end |
//! | `block_ids.rs` | the whole-image check that block ids are unique: bitmaps per INODE batch, merged |
//! | `block_rules.rs` | [`BlockRules`]: the image-wide block rules checked from each batch's statistics and id bitmap alone, for a reader that streams an image |
//! | `build.rs` | the directory phase and whole-tree checks: [`DirBatch`], [`NamespaceBuilder`] |
//! | `digest.rs` | [`Digest`] and [`Namespace::digest`] |
//!
//! Each module imports what it uses from the module that defines it, never
//! from this page's re-exports, and no two modules import each other.
//!
//! # Example
//!
//! Build a small namespace, look a path up, rename, and compare digests:
//! the digest covers what the namespace holds, not how it got there.
//!
//! ```
//! use nsimage_namespace::{Block, FileSpec, Namespace, NsError, NsInfo, PermSpec, XAttrNs};
//!
//! let hdfs = PermSpec { user: b"hdfs", group: b"supergroup", mode: 0o755 };
//! let spec = FileSpec { replication: 3, preferred_block_size: 128 << 20, storage_policy: 0 };
//! let block = Block { id: 1, generation_stamp: 1001, length: 42 };
//!
//! // Times are milliseconds since the Unix epoch.
//! let mut a = Namespace::new(NsInfo::default());
//! a.mkdirs(b"/data/logs", &hdfs, 1_000)?;
//! let f = a.create(b"/data/logs/today", &hdfs, &spec, 2_000)?;
//! a.add_block(f, block)?;
//! a.set_xattr(f, XAttrNs::User, b"color", b"blue")?;
//! a.set_xattr(f, XAttrNs::User, b"size", b"small")?;
//! assert_eq!(a.resolve(b"/data/logs/today")?, f);
//!
//! // A rename moves the inode: same id, new path; the old path is gone.
//! a.rename(b"/data/logs/today", b"/data/yesterday", 3_000)?;
//! assert_eq!(a.path_of(f).as_deref(), Some(&b"/data/yesterday"[..]));
//! assert!(matches!(a.resolve(b"/data/logs/today"), Err(NsError::NotFound(_))));
//!
//! // The same tree built another way: the file made under its final name,
//! // its attributes set (and their names interned) in the other order, the
//! // directories' times set directly instead of by the rename.
//! let mut b = Namespace::new(NsInfo::default());
//! b.mkdirs(b"/data/logs", &hdfs, 1_000)?;
//! let g = b.create(b"/data/yesterday", &hdfs, &spec, 2_000)?;
//! b.add_block(g, block)?;
//! b.set_xattr(g, XAttrNs::User, b"size", b"small")?;
//! b.set_xattr(g, XAttrNs::User, b"color", b"blue")?;
//! for dir in [&b"/data"[..], b"/data/logs"] {
//!     let id = b.resolve(dir)?;
//!     b.set_times(id, Some(3_000), None)?;
//! }
//! assert_eq!(g, f);
//! assert_eq!(b.digest(), a.digest());
//!
//! // One changed attribute changes the digest.
//! b.set_mode(g, 0o700)?;
//! assert_ne!(b.digest(), a.digest());
//! # Ok::<(), NsError>(())
//! ```
#![forbid(unsafe_code)]

mod arena;
mod block_ids;
mod block_rules;
mod blocks;
mod build;
mod children;
mod classes;
mod consts;
mod digest;
mod errors;
mod ids;
mod inode_batch;
mod lookup;
mod mutate;
mod namespace;
mod node;
mod nodes;
mod rules;
mod setters;
mod shards;
mod strings;
mod values;
mod view;

pub use arena::{Arena, Span};
pub use block_rules::BlockRules;
pub use blocks::Blocks;
pub use build::{DirBatch, NamespaceBuilder};
pub use children::{ChildIter, Children};
pub use consts::{Slot, MAX_NAME_LENGTH, NO_SLOT, RESERVED_NAME, ROOT_ID};
pub use digest::{canon_inode, CanonExtra, CanonInode, Digest, Digester};
pub use errors::{BuildError, NsError};
pub use ids::IdIndex;
pub use inode_batch::{
    BlockStats, InodeBatch, InodeParts, Interned, LoadedBody, LoadedNode, NodeSink,
};
pub use namespace::{HeapParts, Namespace, Stats};
pub use node::{Body, NameRef, Node};
pub use nodes::{NodeChunk, NodeRange, Nodes, NODE_CHUNK, NODE_CHUNK_SHIFT};
pub use strings::StringTable;
pub use values::{
    AclEntry, Block, Extra, FileSpec, InodeKind, NsInfo, Perm, PermSpec, UnderConstruction, XAttr,
    XAttrNs,
};
pub use view::{Attrs, FileAttrs, Inode};

#[cfg(test)]
mod fixtures;
