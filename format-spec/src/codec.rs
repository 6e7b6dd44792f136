//! The compression codecs of pieces at rest (FORMAT.md, "Pieces at rest"):
//! zstd frames and LZ4 blocks, with the plain length known from the index
//! so that output is sized and checked exactly.

use crate::error::shown;
use std::fmt;

/// Largest plain length of one piece (1 GiB).
pub const MAX_PLAIN_LENGTH: u64 = 1 << 30;
/// Largest ratio of a compressed piece's plain length to its stored
/// length; a larger claim is refused from the index alone.
pub const MAX_EXPANSION: u64 = 255;

/// How a piece's plain bytes are compressed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Codec {
    /// Stored as they are.
    #[default]
    None,
    /// One zstd frame.
    Zstd,
    /// One LZ4 block (no frame, no size prefix).
    Lz4,
}

impl Codec {
    /// The codec stored as `v` in the index, if defined.
    pub fn from_u32(v: u32) -> Option<Codec> {
        match v {
            0 => Some(Codec::None),
            1 => Some(Codec::Zstd),
            2 => Some(Codec::Lz4),
            _ => None,
        }
    }

    /// The number stored in the index.
    pub fn as_u32(self) -> u32 {
        match self {
            Codec::None => 0,
            Codec::Zstd => 1,
            Codec::Lz4 => 2,
        }
    }

    /// Its name, as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            Codec::None => "none",
            Codec::Zstd => "zstd",
            Codec::Lz4 => "lz4",
        }
    }
}

impl fmt::Display for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a writer compresses with: a codec and, for zstd, a level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Compression {
    /// The codec.
    pub codec: Codec,
    /// The zstd level (1 to 22; 0 for zstd's default, 3); ignored otherwise.
    pub level: i32,
}

impl Compression {
    /// No compression.
    pub const NONE: Compression = Compression {
        codec: Codec::None,
        level: 0,
    };

    /// Parses `none`, `lz4`, `zstd` or `zstd:LEVEL` (1 to 22).
    pub fn parse(s: &str) -> Result<Compression, String> {
        let (name, level) = match s.split_once(':') {
            Some((n, l)) => (n, Some(l)),
            None => (s, None),
        };
        let codec = match name {
            "none" => Codec::None,
            "zstd" => Codec::Zstd,
            "lz4" => Codec::Lz4,
            _ => {
                return Err(format!(
                    "unknown codec {} (none, zstd[:LEVEL] or lz4)",
                    shown(name)
                ))
            }
        };
        let level = match (codec, level) {
            (_, None) => 0,
            (Codec::Zstd, Some(l)) => match l.parse::<i32>() {
                Ok(v) if (1..=22).contains(&v) => v,
                _ => return Err(format!("zstd level {} is not 1 to 22", shown(l))),
            },
            (c, Some(_)) => return Err(format!("{c} takes no level")),
        };
        Ok(Compression { codec, level })
    }

    /// Compresses `plain` into `out` (cleared first). Returns false, with
    /// `out` unspecified, when the codec is `None` or compressing did not
    /// make the bytes smaller: the piece is then stored plain.
    pub fn compress(&self, plain: &[u8], out: &mut Vec<u8>) -> bool {
        out.clear();
        match self.codec {
            Codec::None => return false,
            Codec::Zstd => {
                out.resize(zstd::zstd_safe::compress_bound(plain.len()), 0);
                match zstd::bulk::compress_to_buffer(plain, out, self.level) {
                    Ok(n) => out.truncate(n),
                    Err(_) => return false,
                }
            }
            Codec::Lz4 => {
                out.resize(lz4_flex::block::get_maximum_output_size(plain.len()), 0);
                match lz4_flex::block::compress_into(plain, out) {
                    Ok(n) => out.truncate(n),
                    Err(_) => return false,
                }
            }
        }
        out.len() < plain.len()
    }
}

/// The magic number that starts every zstd frame (little-endian); a
/// skippable frame's magic differs and is refused.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// Checks that `stored` is exactly one zstd frame (not a skippable one),
/// with nothing after it, whose declared content size, when it has one,
/// is `plain_len` (FORMAT.md, "Pieces at rest").
fn check_zstd_frame(stored: &[u8], plain_len: u64) -> Result<(), String> {
    if stored.get(..4) != Some(&ZSTD_MAGIC[..]) {
        return Err("not a zstd frame (a skippable frame, or no zstd magic)".into());
    }
    let frame = zstd::zstd_safe::find_frame_compressed_size(stored)
        .map_err(|_| "zstd: the frame is cut short or malformed".to_string())?;
    if frame != stored.len() {
        return Err(format!(
            "zstd: the frame ends at byte {frame} of {}; nothing may follow it",
            stored.len()
        ));
    }
    match zstd::zstd_safe::get_frame_content_size(stored) {
        Ok(Some(n)) if n != plain_len => Err(format!(
            "zstd: the frame declares {n} bytes, {plain_len} expected"
        )),
        Ok(_) => Ok(()),
        Err(_) => Err("zstd: malformed frame header".into()),
    }
}

/// Decompresses `stored` into `out` (cleared first), which must come out
/// exactly `plain_len` bytes long. The caller has checked `plain_len`
/// against [`MAX_PLAIN_LENGTH`] and [`MAX_EXPANSION`]; nothing beyond
/// `plain_len` bytes is ever allocated, and the codec writes into that
/// buffer only, stopping with an error at its end. zstd: exactly one frame
/// (no skippable frame, nothing after it), its declared content size if
/// any `plain_len`.
pub fn decompress(
    codec: Codec,
    stored: &[u8],
    plain_len: u64,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let n = usize::try_from(plain_len)
        .ok()
        .filter(|&n| n as u64 <= MAX_PLAIN_LENGTH)
        .ok_or_else(|| format!("plain length {plain_len} is too large"))?;
    out.clear();
    match codec {
        Codec::None => {
            if stored.len() != n {
                return Err(format!(
                    "{} stored bytes, {plain_len} plain bytes expected",
                    stored.len()
                ));
            }
            out.extend_from_slice(stored);
        }
        Codec::Zstd => {
            check_zstd_frame(stored, plain_len)?;
            out.resize(n, 0);
            let got =
                zstd::bulk::decompress_to_buffer(stored, out).map_err(|e| format!("zstd: {e}"))?;
            if got != n {
                return Err(format!("zstd gave {got} bytes, {plain_len} expected"));
            }
        }
        Codec::Lz4 => {
            out.resize(n, 0);
            let got =
                lz4_flex::block::decompress_into(stored, out).map_err(|e| format!("lz4: {e}"))?;
            if got != n {
                return Err(format!("lz4 gave {got} bytes, {plain_len} expected"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_wrong_lengths() {
        let plain: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        for c in ["zstd", "zstd:19", "lz4"] {
            let comp = Compression::parse(c).unwrap();
            let mut stored = Vec::new();
            assert!(comp.compress(&plain, &mut stored), "{c}");
            assert!(stored.len() < plain.len() / 4, "{c}: {}", stored.len());
            let mut out = Vec::new();
            decompress(comp.codec, &stored, plain.len() as u64, &mut out).unwrap();
            assert_eq!(out, plain, "{c}");
            assert!(decompress(comp.codec, &stored, plain.len() as u64 - 1, &mut out).is_err());
            assert!(decompress(comp.codec, &stored, plain.len() as u64 + 1, &mut out).is_err());
            let mut bad = stored.clone();
            bad.truncate(bad.len() / 2);
            assert!(decompress(comp.codec, &bad, plain.len() as u64, &mut out).is_err());
        }
        // Incompressible bytes stay plain.
        let noise: Vec<u8> = (0..4096u64)
            .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8)
            .collect();
        let mut out = Vec::new();
        assert!(!Compression::parse("lz4")
            .unwrap()
            .compress(&noise[..16], &mut out));
        assert!(!Compression::NONE.compress(&noise, &mut out));
        assert!(Compression::parse("zstd:0").is_err());
        assert!(Compression::parse("lz4:3").is_err());
        assert!(Compression::parse("gzip").is_err());
        let long = "x".repeat(100_000);
        let e = Compression::parse(&long).unwrap_err();
        assert!(e.len() < 200 && e.contains("100000 characters"), "{e}");
        let e = Compression::parse(&format!("zstd:{long}")).unwrap_err();
        assert!(e.len() < 200 && e.contains("100000 characters"), "{e}");
        let e = Compression::parse("\u{1b}[2J").unwrap_err();
        assert!(!e.contains('\u{1b}'), "{e}");
    }

    #[test]
    fn zstd_takes_exactly_one_frame() {
        let plain = vec![7u8; 10_000];
        let comp = Compression::parse("zstd").unwrap();
        let mut one = Vec::new();
        assert!(comp.compress(&plain, &mut one));
        let mut out = Vec::new();
        decompress(Codec::Zstd, &one, 10_000, &mut out).unwrap();
        // Two frames of 5,000 bytes each: the right total, refused.
        let mut two = Vec::new();
        let mut half = Vec::new();
        assert!(comp.compress(&plain[..5000], &mut half));
        two.extend_from_slice(&half);
        two.extend_from_slice(&half);
        assert!(decompress(Codec::Zstd, &two, 10_000, &mut out).is_err());
        // A skippable frame before or after the frame: refused.
        let skip = [0x50, 0x2A, 0x4D, 0x18, 4, 0, 0, 0, 1, 2, 3, 4];
        let mut before = skip.to_vec();
        before.extend_from_slice(&one);
        assert!(decompress(Codec::Zstd, &before, 10_000, &mut out).is_err());
        let mut after = one.clone();
        after.extend_from_slice(&skip);
        assert!(decompress(Codec::Zstd, &after, 10_000, &mut out).is_err());
        // Trailing garbage: refused.
        let mut tail = one.clone();
        tail.push(0);
        assert!(decompress(Codec::Zstd, &tail, 10_000, &mut out).is_err());
    }
}

#[cfg(test)]
mod lz4_tail {
    use super::*;

    /// FORMAT.md: an LZ4 piece is one block with nothing after its last
    /// sequence. A trailing empty sequence (a token of no literals and no
    /// match, which LZ4 decoders take as the block's end) is a byte after
    /// it, and refused; so is any other.
    #[test]
    fn bytes_after_the_last_sequence_are_refused() {
        let plain: Vec<u8> = (0..5000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
        let c = Compression {
            codec: Codec::Lz4,
            level: 1,
        };
        let mut stored = Vec::new();
        assert!(c.compress(&plain, &mut stored));
        let mut out = Vec::new();
        decompress(Codec::Lz4, &stored, plain.len() as u64, &mut out).unwrap();
        assert_eq!(out, plain);
        for tail in [&[0u8][..], &[0, 0], &[0x10, b'x'], &[0xff]] {
            let mut s = stored.clone();
            s.extend_from_slice(tail);
            let r = decompress(Codec::Lz4, &s, plain.len() as u64, &mut out);
            assert!(r.is_err(), "tail {tail:?} accepted");
        }
    }
}
