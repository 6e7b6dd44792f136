//! nsimage format v1: everything the writer and the loader share.
//!
//! - [`consts`]: magic bytes, versions, section kinds, header and footer offsets;
//! - [`layout`]: the header and footer codec;
//! - [`index`]: the trailing index of sections and sub-sections;
//! - [`framing`]: varint-length-delimited records;
//! - [`pb`]: the protobuf messages generated from `proto/nsimage.proto`;
//! - [`wire`]: the protobuf wire rules every reader applies.
//!
//! The byte layout is specified in `format-spec/FORMAT.md`; code here links to
//! it rather than restating it.
#![forbid(unsafe_code)]

pub mod consts;
pub mod error;
pub mod file_type;
pub mod framing;
pub mod header_footer;
pub mod index;
pub mod wire;

/// Protobuf messages of the format, generated at build time.
#[allow(clippy::all, missing_docs)]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/nsimage.v1.rs"));
}

pub use consts::{SectionKind, CURRENT_VERSION, OLDEST_VERSION, ROOT_ID};
pub use error::{FormatError, Location};
pub use header_footer::{Footer, Header};
pub use index::{Index, SectionInfo, SubSectionInfo};
