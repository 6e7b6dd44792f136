//! Layout versions and codecs of Hadoop images.

use crate::error::{FormatError, Location};
use crate::SectionKind;

/// The oldest layout version read: -57 (Hadoop 2.5, `XATTRS`).
pub const OLDEST_LAYOUT_VERSION: i32 = -57;
/// The newest layout version read: -67 (`NVDIMM_SUPPORT`, Hadoop 3.4);
/// -65 is `EXPANDED_STRING_TABLE` (3.2+), -66 `SNAPSHOT_MODIFICATION_TIME`.
pub const NEWEST_LAYOUT_VERSION: i32 = -67;

/// The NameNode layout version Hadoop 3.3 writes (branch-3.3's
/// `NameNodeLayoutVersion`: SNAPSHOT_MODIFICATION_TIME, -66; HDFS-16536).
pub const HADOOP_3_3_LAYOUT_VERSION: i32 = -66;

/// The layout version from which Hadoop writes an ERASURE_CODING section,
/// block types and `lastAllocatedStripedBlockId` (Hadoop 3.0).
pub const ERASURE_CODING_LAYOUT_VERSION: i32 = -64;

/// The layout version from which the string table may be expanded (one
/// serial number space per kind, `maskBits` 3) (Hadoop 3.0's
/// EXPANDED_STRING_TABLE).
pub const EXPANDED_STRING_TABLE_LAYOUT_VERSION: i32 = -65;

/// The most bytes one delimited message of a section may hold (Hadoop's
/// protobuf reader's default limit, 64 MiB): readers refuse a longer
/// one, writers never write one.
pub const MAX_MESSAGE_BYTES: u64 = 64 << 20;

/// The summary's `layoutVersion` (a uint32 holding a negative int32) as the
/// signed number Hadoop means, checked against the range this build reads.
pub fn check_layout_version(stored: u32, at: &Location) -> Result<i32, FormatError> {
    let v = i32::from_ne_bytes(stored.to_ne_bytes());
    if (NEWEST_LAYOUT_VERSION..=OLDEST_LAYOUT_VERSION).contains(&v) {
        Ok(v)
    } else {
        Err(FormatError::corrupt(
            at.clone(),
            format!(
                "unsupported HDFS layout version {v} (this build reads {OLDEST_LAYOUT_VERSION} to {NEWEST_LAYOUT_VERSION})"
            ),
        ))
    }
}

/// How each section's bytes are compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    /// No codec named: sections are plain.
    None,
    /// `org.apache.hadoop.io.compress.DefaultCodec`: a zlib stream.
    Zlib,
    /// `org.apache.hadoop.io.compress.GzipCodec`: a gzip stream.
    Gzip,
}

/// Hadoop's class name of the zlib codec.
pub const DEFAULT_CODEC: &str = "org.apache.hadoop.io.compress.DefaultCodec";
/// Hadoop's class name of the gzip codec.
pub const GZIP_CODEC: &str = "org.apache.hadoop.io.compress.GzipCodec";

impl Codec {
    /// The codec a summary's `codec` field names; any other class (Snappy,
    /// LZ4, Zstandard, BZip2, ...) is an error naming it.
    pub fn from_name(name: Option<&str>, at: &Location) -> Result<Codec, FormatError> {
        match name {
            None | Some("") => Ok(Codec::None),
            Some(DEFAULT_CODEC) => Ok(Codec::Zlib),
            Some(GZIP_CODEC) => Ok(Codec::Gzip),
            Some(other) => Err(FormatError::corrupt(
                at.clone(),
                format!(
                    "unsupported HDFS image codec {} (this build reads none, {DEFAULT_CODEC}, {GZIP_CODEC})",
                    crate::error::shown(other)
                ),
            )),
        }
    }

    /// The name `info` shows: `none`, `zlib` or `gzip`.
    pub fn name(self) -> &'static str {
        match self {
            Codec::None => "none",
            Codec::Zlib => "zlib",
            Codec::Gzip => "gzip",
        }
    }

    /// Hadoop's class name of the codec (`None` for no codec).
    pub fn class_name(self) -> Option<&'static str> {
        match self {
            Codec::None => None,
            Codec::Zlib => Some(DEFAULT_CODEC),
            Codec::Gzip => Some(GZIP_CODEC),
        }
    }

    /// The most bytes a stream of `compressed` bytes can inflate to
    /// (deflate expands at most 1032:1), plus slack for a tiny stream; a
    /// reader refuses output beyond it. Plain sections are their length.
    pub fn max_output(self, compressed: u64) -> u64 {
        match self {
            Codec::None => compressed,
            Codec::Zlib | Codec::Gzip => compressed.saturating_mul(1032).saturating_add(1 << 16),
        }
    }
}

/// A location in the file summary (for errors of the summary itself).
pub fn summary_at(offset: u64) -> Location {
    Location::in_section(SectionKind::HDFS_FILE_SUMMARY, None, offset)
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::unusual_byte_groupings
)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_codecs() {
        let at = Location::default();
        assert_eq!(check_layout_version(4294967233, &at).unwrap(), -63);
        assert!(check_layout_version((-56i32) as u32, &at).is_err());
        assert!(check_layout_version((-68i32) as u32, &at).is_err());
        assert!(check_layout_version(1, &at)
            .unwrap_err()
            .to_string()
            .contains("version 1"));
        assert_eq!(Codec::from_name(None, &at).unwrap(), Codec::None);
        assert_eq!(
            Codec::from_name(Some(DEFAULT_CODEC), &at).unwrap(),
            Codec::Zlib
        );
        let e = Codec::from_name(Some("org.apache.hadoop.io.compress.SnappyCodec"), &at)
            .unwrap_err()
            .to_string();
        assert!(e.contains("SnappyCodec"), "{e}");
        // A codec name from the file is echoed cut to its first 64
        // characters, escaped, with its length.
        let long = format!("a\n{}", "b".repeat(100_000));
        let e = Codec::from_name(Some(&long), &at).unwrap_err().to_string();
        assert!(e.len() < 400, "{} bytes", e.len());
        assert!(e.contains(r#""a\nbbb"#), "{e}");
        assert!(e.contains("(100002 characters)"), "{e}");
    }
}
