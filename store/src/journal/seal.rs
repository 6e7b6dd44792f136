//! Sealed (encrypted) segments: what a reader expects ([`Sealing`]), the
//! per-segment sealer of group-commit batches ([`SegmentSealer`]), and the
//! opening of a sealed batch on read (STORE.md, "Sealed batch").
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use nsimage_format::cipher::{self, ImageCipher, Key, ID_LEN, NONCE_LEN, TAG_LEN};
use nsimage_format::framing::put_frame;
use nsimage_format::wire::read_varint;

/// A writer closes a batch before a record would take its plain bytes
/// past this (a batch always holds at least one record).
const BATCH_TARGET: usize = 8 << 20;
/// Bytes of a batch before its ciphertext: first txid, record count, nonce.
pub(super) const BATCH_CLEAR: usize = 8 + 4 + NONCE_LEN;
/// The smallest batch body: its clear part, one byte, the tag.
pub(super) const MIN_BATCH_BODY: usize = BATCH_CLEAR + 1 + TAG_LEN;
/// The first bytes of a batch's associated data.
const BATCH_AAD_MAGIC: &[u8; 8] = b"NSJBATC1";
/// Bytes of a batch's associated data.
const BATCH_AAD_LEN: usize = 52;

/// What segments a reader expects, and the key that opens sealed ones.
#[derive(Clone, Debug, Default)]
pub struct Sealing {
    /// `Some(true)`: every segment must be sealed (an encrypted store);
    /// `Some(false)`: every one must be plain (a plain store); `None`: as
    /// each segment's header says (`journal dump` of one file).
    pub expect: Option<bool>,
    /// The key of sealed segments.
    pub key: Option<Key>,
}

/// The associated data of a sealed batch (STORE.md, "Sealed batch").
pub(super) fn batch_aad(
    id: &[u8; ID_LEN],
    seg_first: u64,
    first: u64,
    count: u32,
    offset: u64,
) -> [u8; BATCH_AAD_LEN] {
    let mut a = [0u8; BATCH_AAD_LEN];
    a[..8].copy_from_slice(BATCH_AAD_MAGIC);
    a[8..24].copy_from_slice(id);
    a[24..32].copy_from_slice(&seg_first.to_le_bytes());
    a[32..40].copy_from_slice(&first.to_le_bytes());
    a[40..44].copy_from_slice(&count.to_le_bytes());
    a[44..52].copy_from_slice(&offset.to_le_bytes());
    a
}

/// Seals the batches of one open sealed segment: its data key (derived
/// from the store's key and the segment's random id), the id and the
/// segment's first txid.
pub struct SegmentSealer {
    pub(super) cipher: ImageCipher,
    pub(super) id: [u8; ID_LEN],
    pub(super) first: u64,
}

impl std::fmt::Debug for SegmentSealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SegmentSealer(segment {})", self.first)
    }
}

impl SegmentSealer {
    /// The sealer of the segment whose id is `id` and whose first txid is
    /// `first`, with the store's `key`.
    pub fn new(key: &Key, id: [u8; ID_LEN], first: u64) -> SegmentSealer {
        SegmentSealer {
            cipher: key.image_cipher(&id),
            id,
            first,
        }
    }

    /// Appends to `out` the sealed batches holding the records `plain`
    /// (whole records as [`encode`](super::encode) writes them, the first with txid
    /// `first_txid`, the rest consecutive) when they are written at
    /// `offset` in the segment. Records are grouped into batches of at
    /// most 8 MiB (or one record), so one seal covers a whole group
    /// commit. Returns the bytes appended.
    pub fn seal(&self, plain: &[u8], first_txid: u64, offset: u64, out: &mut Vec<u8>) -> u64 {
        let start = out.len();
        let mut txid = first_txid;
        let mut rest = plain;
        let mut buf = Vec::new();
        while !rest.is_empty() {
            // The records of this batch: whole frames up to the target.
            let (mut end, mut count) = (0usize, 0u32);
            while end < rest.len() {
                let Some(n) = read_varint(&rest[end..]).and_then(|(len, w)| {
                    usize::try_from(len)
                        .ok()
                        .and_then(|l| l.checked_add(w))
                        .and_then(|l| l.checked_add(end))
                }) else {
                    break;
                };
                if count > 0 && n > BATCH_TARGET || n > rest.len() {
                    break;
                }
                end = n;
                count = count.saturating_add(1);
            }
            if count == 0 {
                // Not the records `encode` writes: keep every byte anyway
                // (the reader refuses the batch: never happens).
                end = rest.len();
                count = 1;
            }
            let (batch, more) = rest.split_at(end);
            let here = offset.saturating_add((out.len().saturating_sub(start)) as u64);
            let nonce = cipher::random_nonce();
            let aad = batch_aad(&self.id, self.first, txid, count, here);
            buf.clear();
            buf.extend_from_slice(batch);
            self.cipher.seal(&nonce, &aad, &mut buf);
            let mut body = Vec::with_capacity(BATCH_CLEAR.saturating_add(buf.len()));
            body.extend_from_slice(&txid.to_le_bytes());
            body.extend_from_slice(&count.to_le_bytes());
            body.extend_from_slice(&nonce);
            body.extend_from_slice(&buf);
            put_frame(out, &body);
            txid = txid.saturating_add(u64::from(count));
            rest = more;
        }
        (out.len().saturating_sub(start)) as u64
    }
}
