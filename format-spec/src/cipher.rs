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
    /// Group or others may read or write the file.
    #[error(
        "key file {path} has mode {mode:04o}: group or others may read or write it; \
         make it private with `chmod 600 {path}`"
    )]
    Exposed {
        /// The key file.
        path: std::path::PathBuf,
        /// Its permission bits.
        mode: u32,
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

    /// The key a key file holds (FORMAT.md, "Pieces at rest"): exactly 32
    /// bytes (the raw key), or 64 hexadecimal digits of either case
    /// optionally followed by one LF (0x0A); nothing else. A 32-byte file
    /// made only of hex digits is refused as a hex key file cut short, not
    /// taken as a raw key. The message says what is wrong (a length, a
    /// byte offset), never the key's bytes.
    pub fn parse(contents: &[u8]) -> Result<Key, String> {
        const RULE: &str = "a key file holds 32 bytes, or 64 hex digits and at most one LF";
        if contents.len() == KEY_LEN {
            if contents.iter().all(u8::is_ascii_hexdigit) {
                return Err(format!(
                    "32 bytes, all hex digits: a hex key file cut short (a hex key \
                     file holds 64 hex digits); {RULE}"
                ));
            }
            let mut k = [0u8; KEY_LEN];
            k.copy_from_slice(contents);
            return Ok(Key::from_bytes(k));
        }
        let text = contents.strip_suffix(b"\n").unwrap_or(contents);
        if text.len() != 2 * KEY_LEN {
            let ending = if contents.ends_with(b"\r\n") {
                " (ends with CR LF: only a single LF may follow the digits)"
            } else if contents.ends_with(b"\n\n") {
                " (more than one LF at the end)"
            } else {
                ""
            };
            return Err(format!("{} bytes{ending}; {RULE}", contents.len()));
        }
        let mut k = Zeroizing::new([0u8; KEY_LEN]);
        for (i, pair) in text.chunks_exact(2).enumerate() {
            let digit = |b: u8| (b as char).to_digit(16);
            match (digit(pair[0]), digit(pair[1])) {
                (Some(h), Some(l)) => k[i] = u8::try_from(h * 16 + l).unwrap_or(0),
                (h, _) => {
                    let at = if h.is_none() { 2 * i } else { 2 * i + 1 };
                    let what = match text[at] {
                        b'\r' => " (a CR: only a single LF may follow the digits)",
                        b' ' | b'\t' => " (white space)",
                        b'\n' => " (a line break inside the key)",
                        _ => "",
                    };
                    return Err(format!(
                        "the byte at offset {at} is not a hex digit{what}; {RULE}"
                    ));
                }
            }
        }
        Ok(Key(k))
    }

    /// Reads and parses a key file: a regular file of at most 4096 bytes
    /// that neither group nor others may read or write (mode & 0o077 = 0,
    /// as ssh asks of a private key).
    pub fn read(path: &Path) -> Result<Key, KeyError> {
        use std::os::unix::fs::PermissionsExt;
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
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o077 != 0 {
            return Err(KeyError::Exposed {
                path: path.to_path_buf(),
                mode,
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

    /// Issue 24, defect 10: the key-file rule of FORMAT.md, every case.
    #[test]
    fn key_file_shapes() {
        let raw: [u8; 32] = core::array::from_fn(|i| u8::try_from(i * 7 + 1).unwrap());
        let key = Key::from_bytes(raw);
        let lower = key.to_hex_line();
        let upper = lower.to_ascii_uppercase();
        let fp = key.fingerprint();
        // 64 digits of either case (or mixed), with or without one LF.
        for ok in [
            lower.as_bytes(),
            &lower.as_bytes()[..64],
            upper.as_bytes(),
            &upper.as_bytes()[..64],
        ] {
            assert_eq!(Key::parse(ok).unwrap().fingerprint(), fp);
        }
        let mut mixed = lower.as_bytes().to_vec();
        mixed[..10].make_ascii_uppercase();
        assert_eq!(Key::parse(&mixed).unwrap().fingerprint(), fp);
        // A raw key that happens to contain some hex digits is a raw key.
        let mut near = [b'a'; 32];
        near[31] = b'z';
        assert!(Key::parse(&near).is_ok());

        let refused = |bytes: &[u8], says: &str| {
            let e = Key::parse(bytes).unwrap_err();
            assert!(e.contains(says), "{e:?} should say {says:?}");
            // Never the key's digits.
            assert!(!e.contains(&lower[..8]) && !e.contains(&upper[..8]), "{e}");
            assert!(!e.to_ascii_lowercase().contains("wrong key"), "{e}");
        };
        // A hex key file cut to 32 digits is malformed, not a raw key.
        refused(&lower.as_bytes()[..32], "cut short");
        refused(&upper.as_bytes()[..32], "cut short");
        // CR LF, two LFs, a trailing space, a leading space, a CR alone.
        let with = |tail: &[u8]| [&lower.as_bytes()[..64], tail].concat();
        refused(&with(b"\r\n"), "CR LF");
        refused(&with(b"\n\n"), "more than one LF");
        refused(&with(b" "), "65 bytes");
        refused(&with(b" \n"), "66 bytes");
        refused(&with(b"\r"), "65 bytes");
        let mut cr = lower.as_bytes()[..64].to_vec();
        cr[63] = b'\r';
        cr.push(b'\n');
        refused(&cr, "offset 63");
        refused(&cr, "CR");
        let spaced = [b" ", &lower.as_bytes()[..63], b"\n"].concat();
        refused(&spaced, "offset 0");
        refused(&spaced, "white space");
        let mut bad = lower.as_bytes().to_vec();
        bad[41] = b'g';
        refused(&bad, "offset 41");
        refused(&lower.as_bytes()[..63], "63 bytes");
        refused(b"", "0 bytes");
    }

    /// A key file group or others may read or write is refused, naming the
    /// file, its mode and the fix; 0600 and 0400 are read.
    #[test]
    fn exposed_key_files_are_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("nsimage-key-mode-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("k.key");
        let key = Key::generate();
        std::fs::write(&p, key.to_hex_line().as_bytes()).unwrap();
        for (mode, ok) in [
            (0o600, true),
            (0o400, true),
            (0o644, false),
            (0o640, false),
            (0o604, false),
            (0o620, false),
            (0o602, false),
        ] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            match Key::read(&p) {
                Ok(k) => {
                    assert!(ok, "mode {mode:o} was accepted");
                    assert_eq!(k.fingerprint(), key.fingerprint());
                }
                Err(e) => {
                    assert!(!ok, "mode {mode:o}: {e}");
                    let m = e.to_string();
                    assert!(matches!(e, KeyError::Exposed { .. }), "{m}");
                    assert!(m.contains(&format!("{mode:04o}")), "{m}");
                    assert!(
                        m.contains("chmod 600") && m.contains(p.to_str().unwrap()),
                        "{m}"
                    );
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

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
