//! The JSON form of the store's reports (feature `serde`), as
//! `nsimage store status|recover --json` print them.
//! [`RecoveryReport`](super::RecoveryReport) derives `Serialize` (its
//! skipped images through [`skipped_images`]); [`Status`] serializes
//! through a derived view, because what it shows of a store it could not
//! read (an encrypted one listed without its key) depends on `recovered`:
//! the txids and the digest are then `null`, not zero.

use super::files::Status;
use serde::{Serialize, Serializer};
use std::path::PathBuf;

/// The JSON of [`Status`]: its fields, with the at-rest settings spelled
/// out, the images and segments as objects, and the keys in alphabetical
/// order.
#[derive(Serialize)]
struct StatusJson<'a> {
    /// As `--compress` takes it.
    compression: String,
    digest: Option<&'a str>,
    encrypted: bool,
    /// `None` when not recovered.
    image_txid: Option<u64>,
    images: Vec<Image>,
    /// Hex.
    key_fingerprint: Option<String>,
    recovered: bool,
    segments: Vec<SegmentFile<'a>>,
    temporary_files: &'a [String],
    torn_create: bool,
    torn_tail_bytes: u64,
    /// `None` when not recovered.
    txid: Option<u64>,
    unknown_files: &'a [String],
}

/// One checkpoint image of [`Status::images`].
#[derive(Serialize)]
struct Image {
    bytes: u64,
    txid: u64,
}

/// One journal segment of [`Status::segments`].
#[derive(Serialize)]
struct SegmentFile<'a> {
    bytes: u64,
    name: &'a str,
}

impl Serialize for Status {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let known = |v: u64| self.recovered.then_some(v);
        StatusJson {
            compression: self.at_rest.compression_text(),
            digest: self.digest.as_deref(),
            encrypted: self.at_rest.is_encrypted(),
            image_txid: known(self.image_txid),
            images: self
                .images
                .iter()
                .map(|&(txid, bytes)| Image { bytes, txid })
                .collect(),
            key_fingerprint: self
                .at_rest
                .key_fingerprint
                .as_ref()
                .map(|f| nsimage_format::cipher::hex(f)),
            recovered: self.recovered,
            segments: self
                .segments
                .iter()
                .map(|(name, bytes)| SegmentFile {
                    bytes: *bytes,
                    name,
                })
                .collect(),
            temporary_files: &self.temps,
            torn_create: self.torn_create,
            torn_tail_bytes: self.torn_tail_bytes,
            txid: known(self.txid),
            unknown_files: &self.unknown,
        }
        .serialize(s)
    }
}

/// One skipped image of a recovery.
#[derive(Serialize)]
struct Skipped<'a> {
    error: &'a str,
    path: String,
}

/// [`RecoveryReport::skipped_images`](super::RecoveryReport::skipped_images)
/// as `[{"error", "path"}]`, the path shown lossily.
pub(super) fn skipped_images<S: Serializer>(
    v: &[(PathBuf, String)],
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|(p, e)| Skipped {
        error: e,
        path: p.display().to_string(),
    }))
}
