//! Encryption of pieces at rest (FORMAT.md, "Pieces at rest"): the user's
//! key and its fingerprint, each image's data key, the associated data that
//! binds a piece to its place, and AES-256-GCM sealing in place.
//!
//! The key never leaves memory it owns: it is not printed (`Debug` shows
//! the fingerprint) and its bytes are wiped when it is dropped.

use hkdf::Hkdf;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM as RING_AES_256_GCM};
use sha2::Sha256;
use std::fmt;
use std::path::Path;
use zeroize::Zeroizing;

/// Bytes of a key.
pub const KEY_LEN: usize = 32;
/// Bytes of a nonce.
pub const NONCE_LEN: usize = 12;
/// Bytes of the tag appended to every sealed piece.
pub const TAG_LEN: usize = 16;
/// Bytes of an image id and of a key fingerprint.
pub const ID_LEN: usize = 16;
/// Bytes of a piece's associated data.
pub const AAD_LEN: usize = 56;
/// The cipher number of AES-256-GCM in the index.
pub const AES_256_GCM: u32 = 1;

const FINGERPRINT_INFO: &[u8] = b"nsimage key fingerprint v1";
const IMAGE_KEY_INFO: &[u8] = b"nsimage image key v1";
const AAD_MAGIC: &[u8; 8] = b"NSIMGPC1";

/// Why a key file was refused.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The file could not be read.
    #[error("cannot read key file {path}: {source}")]
    Io {
        /// The key file.
        path: std::path::PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file holds neither 32 bytes nor 64 hex digits.
    #[error("key file {path}: {detail}")]
    Format {
        /// The key file.
        path: std::path::PathBuf,
        /// What is wrong with it.
        detail: String,
    },
}

/// A 32-byte key, wiped from memory when dropped.
#[derive(Clone)]
pub struct Key(Zeroizing<[u8; KEY_LEN]>);

impl Key {
    /// The key whose bytes are `bytes`.
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> Key {
        Key(Zeroizing::new(bytes))
    }

    /// The key a key file holds: exactly 32 bytes, or 64 hex digits with
    /// at most one trailing newline.
    pub fn parse(contents: &[u8]) -> Result<Key, String> {
        if contents.len() == KEY_LEN {
            let mut k = [0u8; KEY_LEN];
            k.copy_from_slice(contents);
            return Ok(Key::from_bytes(k));
        }
        let text = contents
            .strip_suffix(b"\n")
            .map(|t| t.strip_suffix(b"\r").unwrap_or(t))
            .unwrap_or(contents);
        if text.len() != 2 * KEY_LEN {
            return Err(format!(
                "{} bytes: a key file holds 32 bytes, or 64 hex digits and a newline",
                contents.len()
            ));
        }
        let mut k = Zeroizing::new([0u8; KEY_LEN]);
        for (i, pair) in text.chunks_exact(2).enumerate() {
            let hex = |b: u8| (b as char).to_digit(16);
            match (hex(pair[0]), hex(pair[1])) {
                (Some(h), Some(l)) => k[i] = u8::try_from(h * 16 + l).unwrap_or(0),
                _ => return Err(format!("byte {} is not a hex digit", 2 * i)),
            }
        }
        Ok(Key(k))
    }

    /// Reads and parses a key file.
    pub fn read(path: &Path) -> Result<Key, KeyError> {
        let meta = std::fs::metadata(path).map_err(|source| KeyError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        // A key file is tiny; refuse to read anything large (or a FIFO).
        if !meta.is_file() || meta.len() > 4096 {
            return Err(KeyError::Format {
                path: path.to_path_buf(),
                detail: "not a regular file of at most 4096 bytes".into(),
            });
        }
        let bytes = Zeroizing::new(std::fs::read(path).map_err(|source| KeyError::Io {
            path: path.to_path_buf(),
            source,
        })?);
        Key::parse(&bytes).map_err(|detail| KeyError::Format {
            path: path.to_path_buf(),
            detail,
        })
    }

    /// A new random key (for `nsimage keygen` and tests).
    pub fn generate() -> Key {
        let mut k = Zeroizing::new([0u8; KEY_LEN]);
        fill_random(&mut k[..]);
        Key(k)
    }

    /// The key as 64 hex digits and a newline: a key file's contents.
    pub fn to_hex_line(&self) -> Zeroizing<String> {
        let mut s = Zeroizing::new(String::with_capacity(2 * KEY_LEN + 1));
        for b in self.0.iter() {
            s.push_str(&format!("{b:02x}"));
        }
        s.push('\n');
        s
    }

    /// Identifies the key without revealing it: 16 bytes of
    /// HKDF-SHA256(key, info "nsimage key fingerprint v1").
    pub fn fingerprint(&self) -> [u8; ID_LEN] {
        let mut out = [0u8; ID_LEN];
        Hkdf::<Sha256>::new(None, &self.0[..])
            .expand(FINGERPRINT_INFO, &mut out)
            .unwrap_or_else(|_| unreachable!("16 bytes is a valid HKDF output length"));
        out
    }

    /// The data key of the image `image_id`, ready to seal and open.
    pub fn image_cipher(&self, image_id: &[u8; ID_LEN]) -> ImageCipher {
        let mut k = Zeroizing::new([0u8; KEY_LEN]);
        Hkdf::<Sha256>::new(Some(image_id), &self.0[..])
            .expand(IMAGE_KEY_INFO, &mut k[..])
            .unwrap_or_else(|_| unreachable!("32 bytes is a valid HKDF output length"));
        let unbound = UnboundKey::new(&RING_AES_256_GCM, &k[..])
            .unwrap_or_else(|_| unreachable!("a 32-byte key is an AES-256 key"));
        ImageCipher(Box::new(LessSafeKey::new(unbound)))
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key(fingerprint {})", hex(&self.fingerprint()))
    }
}

/// Lower-case hex of `b`.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Fills `buf` from the operating system's random source.
pub fn fill_random(buf: &mut [u8]) {
    // The OS source failing is not something a caller can recover from.
    getrandom::fill(buf).unwrap_or_else(|e| panic!("the OS random source failed: {e}"));
}

/// A fresh random nonce.
pub fn random_nonce() -> [u8; NONCE_LEN] {
    let mut n = [0u8; NONCE_LEN];
    fill_random(&mut n);
    n
}

/// A fresh random image id.
pub fn random_image_id() -> [u8; ID_LEN] {
    let mut n = [0u8; ID_LEN];
    fill_random(&mut n);
    n
}

/// Where a piece is, as its associated data binds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PiecePlace {
    /// The section's kind.
    pub kind: u32,
    /// The section's position in the index.
    pub section: u32,
    /// The piece's position in its section (0 for an unsplit section).
    pub piece: u32,
    /// The piece's offset in the file.
    pub offset: u64,
    /// Its plain length.
    pub raw_length: u64,
    /// Its codec number.
    pub codec: u32,
}

impl PiecePlace {
    /// The piece's associated data (FORMAT.md, "Pieces at rest").
    pub fn aad(&self, image_id: &[u8; ID_LEN]) -> [u8; AAD_LEN] {
        let mut a = [0u8; AAD_LEN];
        a[..8].copy_from_slice(AAD_MAGIC);
        a[8..24].copy_from_slice(image_id);
        a[24..28].copy_from_slice(&self.kind.to_le_bytes());
        a[28..32].copy_from_slice(&self.section.to_le_bytes());
        a[32..36].copy_from_slice(&self.piece.to_le_bytes());
        a[36..44].copy_from_slice(&self.offset.to_le_bytes());
        a[44..52].copy_from_slice(&self.raw_length.to_le_bytes());
        a[52..56].copy_from_slice(&self.codec.to_le_bytes());
        a
    }
}

/// A sealed buffer did not open: its bytes, its place (associated data),
/// its nonce or the key are not those it was sealed with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("authentication failed")]
pub struct AuthFailed;

/// One image's data key: seals and opens its pieces.
pub struct ImageCipher(Box<LessSafeKey>);

impl ImageCipher {
    /// Encrypts `buf` in place and appends the tag.
    pub fn seal(&self, nonce: &[u8; NONCE_LEN], aad: &[u8], buf: &mut Vec<u8>) {
        let tag = self
            .0
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(*nonce),
                Aad::from(aad),
                &mut buf[..],
            )
            .unwrap_or_else(|_| unreachable!("a piece is far below AES-GCM's length limit"));
        buf.extend_from_slice(tag.as_ref());
    }

    /// Checks the tag at the end of `buf` and decrypts the rest in place
    /// (the tag is removed). On failure `buf` is left unspecified.
    pub fn open(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        buf: &mut Vec<u8>,
    ) -> Result<(), AuthFailed> {
        let n = buf.len().checked_sub(TAG_LEN).ok_or(AuthFailed)?;
        self.0
            .open_in_place(
                Nonce::assume_unique_for_key(*nonce),
                Aad::from(aad),
                &mut buf[..],
            )
            .map_err(|_| AuthFailed)?;
        buf.truncate(n);
        Ok(())
    }
}

impl fmt::Debug for ImageCipher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ImageCipher(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_files_fingerprints_and_sealing() {
        let raw: [u8; 32] = core::array::from_fn(|i| u8::try_from(i).unwrap());
        let k = Key::parse(&raw).unwrap();
        let hexed = k.to_hex_line();
        let k2 = Key::parse(hexed.as_bytes()).unwrap();
        assert_eq!(k.fingerprint(), k2.fingerprint());
        assert!(Key::parse(&hexed.as_bytes()[..64]).is_ok());
        assert!(Key::parse(&raw[..31]).is_err());
        assert!(Key::parse(&[b'g'; 64]).is_err());
        assert!(!format!("{k:?}").contains("000102"));
        let other = Key::generate();
        assert_ne!(other.fingerprint(), k.fingerprint());

        let id = [7u8; 16];
        let place = PiecePlace {
            kind: 3,
            section: 2,
            piece: 5,
            offset: 1234,
            raw_length: 11,
            codec: 0,
        };
        let aad = place.aad(&id);
        let c = k.image_cipher(&id);
        let nonce = random_nonce();
        let mut buf = b"hello world".to_vec();
        c.seal(&nonce, &aad, &mut buf);
        assert_eq!(buf.len(), 11 + TAG_LEN);
        let sealed = buf.clone();
        c.open(&nonce, &aad, &mut buf).unwrap();
        assert_eq!(buf, b"hello world");
        // Another place, image, key or a flipped bit: refused.
        let moved = PiecePlace { piece: 4, ..place }.aad(&id);
        let mut b = sealed.clone();
        assert!(c.open(&nonce, &moved, &mut b).is_err());
        let mut b = sealed.clone();
        assert!(k
            .image_cipher(&[8u8; 16])
            .open(&nonce, &aad, &mut b)
            .is_err());
        let mut b = sealed.clone();
        assert!(other.image_cipher(&id).open(&nonce, &aad, &mut b).is_err());
        let mut b = sealed.clone();
        b[3] ^= 1;
        assert!(c.open(&nonce, &aad, &mut b).is_err());
        let mut b = sealed[..10].to_vec();
        assert!(c.open(&nonce, &aad, &mut b).is_err());
    }
}
