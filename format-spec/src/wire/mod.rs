//! The protobuf wire format as nsimage uses it, in one place: wire types and
//! keys, the field numbers and keys of every message of
//! `proto/nsimage.proto`, varints, the wire rules every reader applies, the
//! streamed frame reader, and the conversions between the prost messages
//! ([`crate::pb`]) and the namespace model (`nsimage_namespace`).
//!
//! - [`fields`]: field numbers (`fields::inode::NAME == 3`);
//! - [`keys`]: wire types, and [`key`] and [`split_key`] between a field
//!   number with its wire type and the key;
//! - [`tags`]: one-byte keys with the declared wire type
//!   (`tags::inode::NAME == 0x1a`), built by [`key`];
//! - [`varint`]: LEB128 varints, read and written;
//! - [`cursor`]: [`Cursor`], the one zero-copy walker of messages, which
//!   every reader of a message by hand uses (the loader's records and
//!   Hadoop records, the one-path lookups, the journal's op views);
//! - [`rules`]: the wire rules of FORMAT.md as a schema-driven check;
//! - [`frames`]: the streamed reader of varint-framed records, for readers
//!   that go through a file record by record (the loader's streaming
//!   baseline, the store's journal);
//! - [`convert`]: `From`/`TryFrom` between prost messages and the model.
//!
//! ```
//! use nsimage_format::wire::{fields, key, split_key, tags, LEN, VARINT};
//!
//! assert_eq!(tags::inode::ID, 0x08);
//! assert_eq!(tags::inode::FILE, key(fields::inode::FILE, LEN));
//! assert_eq!(split_key(u64::from(tags::dir_entry::PARENT)), Ok((1, VARINT)));
//! ```
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

pub mod convert;
pub mod cursor;
pub mod fields;
pub mod frames;
pub mod framing;
pub mod keys;
pub mod rules;
pub mod tags;
pub mod varint;

pub use cursor::{Bad, Cursor};
pub use frames::FrameReader;
pub use keys::{key, split_key, FIXED32, FIXED64, LEN, VARINT};
pub use rules::{check, schema, varint_fits, Ty};
pub use varint::read_varint;
