//! [`AtRestSettings`]: how a store keeps its files at rest (checkpoint
//! images compressed and/or encrypted, journal batches sealed), recorded
//! once at init in the `AT_REST` file (STORE.md, "At rest"), and the key
//! check every open does against it before reading or writing anything
//! else.

use crate::error::{io_err, StoreError};
use crate::fs::Fs;
use crate::journal::Sealing;
use nsimage_format::cipher::{hex, Key, ID_LEN};
use nsimage_format::codec::{Codec, Compression};
use std::io::Write;
use std::path::Path;

/// The file that records a store's at-rest settings.
pub(super) const AT_REST_FILE: &str = "AT_REST";
/// Its first line.
const FIRST_LINE: &str = "nsimage-store-at-rest 1";
/// The largest `AT_REST` file read.
const MAX_LEN: u64 = 4096;

/// How a store keeps its files at rest, as recorded at init.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AtRestSettings {
    /// The codec (and level) of checkpoint images.
    pub compression: Compression,
    /// When the store is encrypted: the fingerprint of its key (never the
    /// key itself).
    pub key_fingerprint: Option<[u8; ID_LEN]>,
}

impl AtRestSettings {
    /// What the journal reader expects of the segments of a store with
    /// these settings, with `key`.
    pub(crate) fn sealing(&self, key: Option<&Key>) -> Sealing {
        Sealing {
            expect: Some(self.is_encrypted()),
            key: key.filter(|_| self.is_encrypted()).cloned(),
        }
    }

    /// The settings of a store initialized with `compression` and, when
    /// given, encrypted with `key`.
    pub fn new(compression: Compression, key: Option<&Key>) -> AtRestSettings {
        AtRestSettings {
            compression,
            key_fingerprint: key.map(Key::fingerprint),
        }
    }

    /// Neither compressed nor encrypted: a plain (version 1) store.
    pub fn is_plain(&self) -> bool {
        self.compression.codec == Codec::None && self.key_fingerprint.is_none()
    }

    /// Whether the store is encrypted.
    pub fn is_encrypted(&self) -> bool {
        self.key_fingerprint.is_some()
    }

    /// The compression as `--compress` takes it: `none`, `lz4`, `zstd` or
    /// `zstd:LEVEL`.
    pub fn compression_text(&self) -> String {
        match (self.compression.codec, self.compression.level) {
            (Codec::Zstd, l) if l != 0 => format!("zstd:{l}"),
            (c, _) => c.name().to_string(),
        }
    }

    /// The `AT_REST` file's contents.
    fn encode(&self) -> String {
        let mut s = format!("{FIRST_LINE}\ncompress {}\n", self.compression_text());
        if let Some(fp) = &self.key_fingerprint {
            s.push_str(&format!("encrypt aes-256-gcm {}\n", hex(fp)));
        }
        s
    }

    /// Parses an `AT_REST` file, strictly: the first line, one `compress`
    /// line, at most one `encrypt` line, each ending in a newline, nothing
    /// else.
    fn parse(bytes: &[u8]) -> Result<AtRestSettings, String> {
        let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())?;
        let body = text
            .strip_suffix('\n')
            .ok_or_else(|| "does not end with a newline".to_string())?;
        let mut lines = body.split('\n');
        if lines.next() != Some(FIRST_LINE) {
            return Err(format!("the first line is not {FIRST_LINE:?}"));
        }
        let compress = lines
            .next()
            .and_then(|l| l.strip_prefix("compress "))
            .ok_or_else(|| "no compress line".to_string())?;
        let compression = Compression::parse(compress)?;
        let key_fingerprint = match lines.next() {
            None => None,
            Some(l) => {
                let h = l
                    .strip_prefix("encrypt aes-256-gcm ")
                    .ok_or_else(|| format!("unknown line {l:?}"))?;
                Some(parse_fingerprint(h)?)
            }
        };
        if let Some(l) = lines.next() {
            return Err(format!("unknown line {l:?}"));
        }
        Ok(AtRestSettings {
            compression,
            key_fingerprint,
        })
    }

    /// Reads the `AT_REST` file of the store in `dir`.
    pub(super) fn read(fs: &dyn Fs, dir: &Path) -> Result<AtRestSettings, StoreError> {
        let path = dir.join(AT_REST_FILE);
        let invalid = |detail: String| StoreError::Invalid {
            path: path.clone(),
            detail,
        };
        let len = match fs.len(&path) {
            Ok(len) => len,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(invalid(
                    "missing: a version 2 store records its at-rest settings here".into(),
                ))
            }
            Err(e) => return Err(io_err(&path)(e)),
        };
        if len > MAX_LEN {
            return Err(invalid(format!(
                "{len} bytes: not an at-rest settings file"
            )));
        }
        let bytes = fs.read(&path).map_err(io_err(&path))?;
        AtRestSettings::parse(&bytes).map_err(|e| invalid(format!("bad at-rest settings: {e}")))
    }

    /// Writes the `AT_REST` file durably (before `VERSION`, which makes
    /// the directory a store).
    pub(super) fn write(&self, fs: &dyn Fs, dir: &Path) -> Result<(), StoreError> {
        let path = dir.join(AT_REST_FILE);
        let mut f = fs.create(&path).map_err(io_err(&path))?;
        f.write_all(self.encode().as_bytes())
            .map_err(io_err(&path))?;
        f.sync().map_err(io_err(&path))?;
        fs.sync_dir(dir).map_err(io_err(dir))
    }

    /// Checks `key` against an encrypted store's fingerprint: no key, or
    /// another one, is [`StoreError::Key`] naming `dir`. A plain store
    /// needs none (a key given is not used).
    pub fn check_key(&self, dir: &Path, key: Option<&Key>) -> Result<(), StoreError> {
        let Some(want) = &self.key_fingerprint else {
            return Ok(());
        };
        let err = |detail: String| StoreError::Key {
            path: dir.to_path_buf(),
            detail,
        };
        let Some(key) = key else {
            return Err(err(format!(
                "the store is encrypted (key fingerprint {}); give its key file \
                 (--key-file or NSIMAGE_KEY_FILE)",
                hex(want)
            )));
        };
        let got = key.fingerprint();
        if &got != want {
            return Err(err(format!(
                "wrong key: the store was encrypted with key fingerprint {}, the key given has {}",
                hex(want),
                hex(&got)
            )));
        }
        Ok(())
    }
}

/// 32 lower-case hex digits.
fn parse_fingerprint(h: &str) -> Result<[u8; ID_LEN], String> {
    let bad = || format!("key fingerprint {h:?} is not {} hex digits", 2 * ID_LEN);
    if h.len() != 2 * ID_LEN {
        return Err(bad());
    }
    let mut out = [0u8; ID_LEN];
    for (o, pair) in out.iter_mut().zip(h.as_bytes().chunks_exact(2)) {
        let s = std::str::from_utf8(pair).map_err(|_| bad())?;
        if !s
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(bad());
        }
        *o = u8::from_str_radix(s, 16).map_err(|_| bad())?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_and_strict_parse() {
        let k = Key::generate();
        for s in [
            AtRestSettings::new(Compression::NONE, Some(&k)),
            AtRestSettings::new(Compression::parse("zstd:7").unwrap(), None),
            AtRestSettings::new(Compression::parse("lz4").unwrap(), Some(&k)),
            AtRestSettings::new(Compression::parse("zstd").unwrap(), None),
        ] {
            assert_eq!(AtRestSettings::parse(s.encode().as_bytes()), Ok(s));
        }
        for bad in [
            "",
            "nsimage-store-at-rest 1\n",
            "nsimage-store-at-rest 2\ncompress none\n",
            "nsimage-store-at-rest 1\ncompress none",
            "nsimage-store-at-rest 1\ncompress brotli\n",
            "nsimage-store-at-rest 1\ncompress none\nencrypt aes-256-gcm 00\n",
            "nsimage-store-at-rest 1\ncompress none\nencrypt aes-256-gcm 0123456789ABCDEF0123456789abcdef\n",
            "nsimage-store-at-rest 1\ncompress none\nextra\n",
        ] {
            assert!(AtRestSettings::parse(bad.as_bytes()).is_err(), "{bad:?}");
        }
        let s = AtRestSettings::new(Compression::NONE, Some(&k));
        let dir = Path::new("/x");
        assert!(s.check_key(dir, Some(&k)).is_ok());
        assert!(matches!(
            s.check_key(dir, None),
            Err(StoreError::Key { .. })
        ));
        assert!(matches!(
            s.check_key(dir, Some(&Key::generate())),
            Err(StoreError::Key { .. })
        ));
    }
}
