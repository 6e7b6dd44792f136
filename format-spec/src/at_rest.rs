//! How a piece is stored (FORMAT.md, "Pieces at rest"): its codec, its
//! plain length, and for an encrypted image its nonce and associated data;
//! the index decoder's checks of those fields.

use crate::cipher::{PiecePlace, AAD_LEN, ID_LEN, NONCE_LEN, TAG_LEN};
use crate::codec::Codec;
use crate::error::{FormatError, Location, Result};

/// An encrypted image's `Encryption` message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncryptionInfo {
    /// This image's own random id (its data key's salt).
    pub image_id: [u8; ID_LEN],
    /// The fingerprint of the key it was encrypted with.
    pub key_fingerprint: [u8; ID_LEN],
}

/// An encrypted piece's nonce and associated data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sealed {
    /// The AES-GCM nonce.
    pub nonce: [u8; NONCE_LEN],
    /// The associated data that binds the piece to its place.
    pub aad: [u8; AAD_LEN],
}

/// How one piece is stored.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct AtRest {
    /// Its compression.
    pub codec: Codec,
    /// Its plain length; 0 for a plain piece (the stored bytes are the
    /// plain bytes).
    pub raw_length: u64,
    /// Encrypted: how.
    pub sealed: Option<Sealed>,
}

impl AtRest {
    /// Stored as is: neither compressed nor encrypted.
    pub fn is_plain(&self) -> bool {
        self.codec == Codec::None && self.sealed.is_none()
    }

    /// The plain length of a piece of `stored` bytes.
    pub fn plain_length(&self, stored: u64) -> u64 {
        if self.is_plain() {
            stored
        } else {
            self.raw_length
        }
    }

    /// Checks a piece's stored fields and builds its `AtRest`: the codec is
    /// defined; a nonce exactly when the image is encrypted; the plain
    /// length, compressed, within [`check_expansion`](crate::rules::check_expansion)'s
    /// bound (255 times the stored bytes, 1 GiB), so that nothing is
    /// allocated from an absurd claim.
    pub(crate) fn check(
        at: &Location,
        length: u64,
        codec: u32,
        raw_length: u64,
        nonce: &[u8],
        enc: Option<&EncryptionInfo>,
        place: PiecePlace,
    ) -> Result<AtRest> {
        let bad = |d: String| FormatError::corrupt(at.clone(), d);
        let codec = Codec::from_u32(codec).ok_or_else(|| bad(format!("unknown codec {codec}")))?;
        let payload = match enc {
            Some(_) => length.checked_sub(TAG_LEN as u64).ok_or_else(|| {
                bad(format!(
                    "an encrypted piece of {length} bytes cannot hold its {TAG_LEN}-byte tag"
                ))
            })?,
            None => length,
        };
        let sealed = match (enc, nonce.len()) {
            (None, 0) => None,
            (None, n) => {
                return Err(bad(format!(
                    "a nonce of {n} bytes in an image that is not encrypted"
                )))
            }
            (Some(e), NONCE_LEN) => {
                let mut n = [0u8; NONCE_LEN];
                n.copy_from_slice(nonce);
                let aad = PiecePlace {
                    raw_length,
                    ..place
                }
                .aad(&e.image_id);
                Some(Sealed { nonce: n, aad })
            }
            (Some(_), n) => {
                return Err(bad(format!(
                    "an encrypted piece needs a {NONCE_LEN}-byte nonce, not {n} bytes"
                )))
            }
        };
        let raw_length = match codec {
            Codec::None if sealed.is_none() => {
                if raw_length != 0 && raw_length != length {
                    return Err(bad(format!(
                        "plain length {raw_length} of an untransformed piece of {length} bytes"
                    )));
                }
                0
            }
            Codec::None => {
                if raw_length != payload {
                    return Err(bad(format!(
                        "plain length {raw_length}, but {payload} bytes are stored after encryption"
                    )));
                }
                raw_length
            }
            _ => {
                crate::rules::check_expansion(codec, payload, raw_length).map_err(bad)?;
                raw_length
            }
        };
        Ok(AtRest {
            codec,
            raw_length,
            sealed,
        })
    }
}
