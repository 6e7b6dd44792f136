//! Pieces at rest (FORMAT.md, "Pieces at rest"): a finished piece's plain
//! bytes compressed and sealed into the bytes the file stores, with the
//! index fields that say how.

use nsimage_format::cipher::{random_image_id, random_nonce, ImageCipher, Key, PiecePlace};
use nsimage_format::codec::{Codec, Compression};
use nsimage_format::consts::features;
use nsimage_format::{AtRest, EncryptionInfo};

/// How pieces are stored: compressed, encrypted, both, or plain.
#[derive(Clone, Debug, Default)]
pub struct AtRestOptions {
    /// The codec (and level) every piece is compressed with; a piece that
    /// does not shrink is stored uncompressed.
    pub compression: Compression,
    /// Encrypts every piece with this key (AES-256-GCM).
    pub key: Option<Key>,
}

impl AtRestOptions {
    /// Neither compressed nor encrypted: the plain format.
    pub fn is_plain(&self) -> bool {
        self.compression.codec == Codec::None && self.key.is_none()
    }

    /// The header's required feature bits for these options.
    pub fn required_features(&self) -> u32 {
        let mut f = 0;
        if self.compression.codec != Codec::None {
            f |= features::COMPRESSED;
        }
        if self.key.is_some() {
            f |= features::ENCRYPTED;
        }
        f
    }
}

/// Turns finished pieces into stored bytes, for one image.
pub(crate) struct Transform {
    compression: Compression,
    cipher: Option<(ImageCipher, EncryptionInfo)>,
    /// The stored bytes of the last piece.
    pub(crate) out: Vec<u8>,
}

impl Transform {
    /// For one image written with `opts` (a fresh image id when
    /// encrypting); `None` for the plain format.
    pub(crate) fn new(opts: &AtRestOptions) -> Option<Transform> {
        if opts.is_plain() {
            return None;
        }
        let cipher = opts.key.as_ref().map(|k| {
            let image_id = random_image_id();
            let info = EncryptionInfo {
                image_id,
                key_fingerprint: k.fingerprint(),
            };
            (k.image_cipher(&image_id), info)
        });
        Some(Transform {
            compression: opts.compression,
            cipher,
            out: Vec::new(),
        })
    }

    /// The index's `encryption`, when encrypting.
    pub(crate) fn encryption(&self) -> Option<EncryptionInfo> {
        self.cipher.as_ref().map(|(_, e)| e.clone())
    }

    /// Transforms `plain`, the piece at `place` (its offset the stored
    /// one; its codec and plain length are filled in here), into
    /// [`out`](Self::out), and says how it is stored.
    ///
    /// A compressed piece is kept only when it passes every rule a reader
    /// applies to it ([`nsimage_format::rules::compressed_piece_ok`], with
    /// its `records`): otherwise it is stored plain, which is always
    /// readable.
    pub(crate) fn piece(&mut self, plain: &[u8], records: u64, place: PiecePlace) -> AtRest {
        let compressed = self.compression.compress(plain, &mut self.out)
            && nsimage_format::rules::compressed_piece_ok(
                nsimage_format::SectionKind(place.kind),
                records,
                self.compression.codec,
                self.out.len() as u64,
                plain.len() as u64,
            )
            .is_ok();
        let codec = if compressed {
            self.compression.codec
        } else {
            self.out.clear();
            self.out.extend_from_slice(plain);
            Codec::None
        };
        let raw_length = plain.len() as u64;
        let Some((cipher, info)) = &self.cipher else {
            return AtRest {
                codec,
                raw_length: if compressed { raw_length } else { 0 },
                sealed: None,
            };
        };
        let place = PiecePlace {
            raw_length,
            codec: codec.as_u32(),
            ..place
        };
        let nonce = random_nonce();
        let aad = place.aad(&info.image_id);
        cipher.seal(&nonce, &aad, &mut self.out);
        AtRest {
            codec,
            raw_length,
            sealed: Some(nsimage_format::at_rest::Sealed { nonce, aad }),
        }
    }
}
