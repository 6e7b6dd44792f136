//! nsimage format v1: exactly what an independent reader of the format
//! needs, and what the writer and the loader share.
//!
//! This crate owns the specification, `format-spec/FORMAT.md` (the image)
//! and `format-spec/STORE.md` (the checkpoint store's journal), which the
//! code here links to rather than restates, and the code an independent
//! reader needs to follow it: the schemas, the constants, the codecs of the
//! header, footer and index, record framing, checksums (xxh3-64 over the
//! header, footer, index, sections and sub-sections: FORMAT.md, "Checksum
//! coverage"), pieces at rest, and Hadoop's fsimage format.
//!
//! Layering: this crate is the ground of the image path. It must never
//! import the writer, the loader, the store, the testkit or the command
//! line (`nsimage-writer`, `nsimage-loader`, `nsimage-store`,
//! `nsimage-testkit`, `nsimage`); they import it. It imports the namespace
//! model (`nsimage-namespace`) only for the conversions of
//! [`wire::convert`]; the model never imports the format.
//!
//! # Module map
//!
//! | file | what it holds |
//! |------|---------------|
//! | `lib.rs` | this page, the generated schemas and the re-exports |
//! | `pb` | the protobuf messages generated from `proto/nsimage.proto` (inline: `build.rs` generates them) |
//! | `hdfs_pb` | the messages generated from `proto/hdfs_fsimage.proto`, Hadoop's fsimage schema in our own words with Hadoop's field numbers |
//! | `consts.rs` | [`consts`]: magic bytes, versions, feature bits, section kinds ([`SectionKind`]), header and footer offsets, the format's limits |
//! | `header_footer.rs` | [`header_footer`]: the header and footer codec |
//! | `index.rs` | [`index`]: the trailing index of sections and sub-sections |
//! | `rules.rs` | [`rules`]: the rules a reader applies to every piece from the index (record bounds, expansion), which the writer checks before it commits a piece |
//! | `codec.rs` | [`codec`]: pieces compressed at rest (zstd, LZ4) |
//! | `cipher.rs` | [`cipher`]: keys, AES-256-GCM and the associated data of encrypted pieces |
//! | `at_rest.rs` | [`at_rest`]: how each piece is stored, checked from the index |
//! | `name_runs.rs` | [`name_runs`]: the NAME_RUNS section's front-coded records, encoded (for the writer) and decoded (for the lookups and `verify`) |
//! | `wire/` | [`wire`]: the protobuf wire format as nsimage uses it: field numbers and keys of every message, varints, the cursor over a record's fields, varint-length-delimited records written and read from memory ([`framing::Records`]), the streamed frame reader, the wire rules every reader applies, and the conversions between the messages and the namespace model |
//! | `error.rs` | [`error`]: located errors ([`FormatError`], [`Location`]) |
//! | `file_type.rs` | [`file_type`]: words for the kinds of file that readers and writers refuse (an image is read from, and saved over, regular files only) |
//! | `hdfs/` | [`hdfs`]: Hadoop's fsimage format (magic `HDFSIMG1`): the summary at the tail, section names, layout versions, codecs and packed fields |
//!
//! A folder module's own page lists its modules.
//!
//! # Example
//!
//! A record framed and read back, from memory and as a stream, and a header
//! written and read:
//!
//! ```
//! use nsimage_format::framing::{put_record, Records};
//! use nsimage_format::wire::FrameReader;
//! use nsimage_format::{pb, Header, Location};
//! use prost::Message;
//!
//! let entry = pb::StringEntry { value: b"alice".to_vec() };
//! let mut bytes = Vec::new();
//! put_record(&mut bytes, &entry);
//!
//! // From memory: (offset of the record, its message bytes).
//! let mut records = Records::new(&bytes, Location::at(32));
//! let (offset, body) = records.next().unwrap()?;
//! assert_eq!(offset, 32);
//! assert_eq!(pb::StringEntry::decode(body)?, entry);
//! assert!(records.next().is_none());
//!
//! // As a stream, from any `std::io::Read`.
//! let mut frames = FrameReader::new(&bytes[..], 32);
//! let mut body = Vec::new();
//! assert_eq!(frames.read_frame(&mut body)?, Some(32));
//! assert_eq!(pb::StringEntry::decode(&body[..])?, entry);
//! assert_eq!(frames.read_frame(&mut body)?, None);
//!
//! // The header codec.
//! let header = Header::current().encode();
//! assert_eq!(Header::decode(&header)?, Header::current());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

pub mod at_rest;
pub mod cipher;
pub mod codec;
pub mod consts;
pub mod error;
pub mod file_type;
pub mod hdfs;
pub mod header_footer;
pub mod index;
pub mod name_runs;
pub mod rules;
pub mod wire;

/// Protobuf messages of the format, generated at build time from
/// `proto/nsimage.proto` (each message's fields are documented there).
#[allow(clippy::all, missing_docs)]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/nsimage.v1.rs"));
}

/// The messages of Hadoop's fsimage format (magic `HDFSIMG1`), generated
/// from `proto/hdfs_fsimage.proto`: nsimage's own description of the
/// schema, with Hadoop's field numbers.
#[allow(clippy::all, missing_docs)]
pub mod hdfs_pb {
    include!(concat!(env!("OUT_DIR"), "/hdfs.fsimage.rs"));
}

pub use at_rest::{AtRest, EncryptionInfo};
pub use consts::{SectionKind, CURRENT_VERSION, OLDEST_VERSION, ROOT_ID};
pub use error::{FormatError, Location};
pub use header_footer::{Footer, Header};
pub use index::{Index, SectionInfo, SubSectionInfo};
/// Record framing, at its historical path (it lives in [`wire`]).
pub use wire::framing;
