//! One zlib or gzip stream, compressed in parallel: the input is cut into
//! 1 MiB chunks, a window of chunks at a time is deflated by rayon tasks,
//! each chunk on its own and ended by a sync flush (so it ends on a byte
//! boundary), and the pieces are written in order between the format's
//! header and an empty final block and trailer. The checksum (Adler-32 or
//! CRC-32) of each chunk is computed by its task and combined. The result
//! is one ordinary stream that any inflater reads; memory stays bounded
//! by the window, whatever the stream's length.

use flate2::{Compress, Compression, Crc, FlushCompress};
use rayon::prelude::*;
use std::io::{self, Write};

/// Uncompressed bytes per chunk.
const CHUNK: usize = 1 << 20;

/// An empty final block with fixed codes: BFINAL 1, BTYPE 01, the
/// end-of-block code.
const FINAL_BLOCK: [u8; 2] = [0x03, 0x00];

/// zlib's header for deflate with a 32 KiB window at the default level
/// (what Hadoop's DefaultCodec writes).
const ZLIB_HEADER: [u8; 2] = [0x78, 0x9c];

/// gzip's member header: deflate, no flags, no time, OS unknown.
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0xff];

/// Which framing the stream has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// zlib (RFC 1950): Adler-32, big-endian.
    Zlib,
    /// gzip (RFC 1952): CRC-32 and length, little-endian.
    Gzip,
}

/// The Adler-32 of `data`.
pub(crate) fn adler32(data: &[u8]) -> u32 {
    const BASE: u32 = 65_521;
    let (mut a, mut b) = (1u32, 0u32);
    // 5552 bytes is the most before `b` could overflow 32 bits.
    for block in data.chunks(5552) {
        for &x in block {
            a += u32::from(x);
            b += a;
        }
        a %= BASE;
        b %= BASE;
    }
    (b << 16) | a
}

/// The Adler-32 of two pieces one after the other, from theirs and the
/// second one's length.
pub(crate) fn adler32_combine(adler1: u32, adler2: u32, len2: u64) -> u32 {
    const BASE: u64 = 65_521;
    let rem = len2 % BASE;
    let mut sum1 = u64::from(adler1 & 0xffff);
    let mut sum2 = (rem * sum1) % BASE;
    sum1 += u64::from(adler2 & 0xffff) + BASE - 1;
    sum2 += u64::from(adler1 >> 16) + u64::from(adler2 >> 16) + BASE - rem;
    if sum1 >= BASE {
        sum1 -= BASE;
    }
    if sum1 >= BASE {
        sum1 -= BASE;
    }
    if sum2 >= BASE << 1 {
        sum2 -= BASE << 1;
    }
    if sum2 >= BASE {
        sum2 -= BASE;
    }
    // Both sums are below 65521 here.
    #[allow(clippy::cast_possible_truncation)]
    let r = (sum1 | (sum2 << 16)) as u32;
    r
}

/// The checksum of what the stream has taken so far.
enum Check {
    Adler(u32),
    Crc(Crc),
}

/// One chunk, deflated, with its checksum.
struct Piece {
    bytes: Vec<u8>,
    adler: u32,
    crc: Option<Crc>,
    len: u64,
}

fn deflate_chunk(chunk: &[u8], framing: Framing) -> io::Result<Piece> {
    let mut c = Compress::new(Compression::default(), false);
    let mut out = Vec::with_capacity(chunk.len() / 4 + 1024);
    loop {
        let done = usize::try_from(c.total_in())
            .unwrap_or(usize::MAX)
            .min(chunk.len());
        c.compress_vec(&chunk[done..], &mut out, FlushCompress::Sync)
            .map_err(|e| io::Error::other(format!("deflate: {e}")))?;
        let all_in = usize::try_from(c.total_in()).is_ok_and(|n| n >= chunk.len());
        // The flush is complete once deflate returns with output space left.
        if all_in && out.len() < out.capacity() {
            break;
        }
        out.reserve(out.capacity().max(4096));
    }
    let (adler, crc) = match framing {
        Framing::Zlib => (adler32(chunk), None),
        Framing::Gzip => {
            let mut crc = Crc::new();
            crc.update(chunk);
            (1, Some(crc))
        }
    };
    Ok(Piece {
        bytes: out,
        adler,
        crc,
        len: chunk.len() as u64,
    })
}

/// A stream being written.
pub(crate) struct ParStream {
    framing: Framing,
    pending: Vec<u8>,
    check: Check,
    window: usize,
}

impl ParStream {
    /// Starts a stream: writes its header to `out`.
    pub(crate) fn start(framing: Framing, out: &mut impl Write) -> io::Result<ParStream> {
        let (header, check): (&[u8], Check) = match framing {
            Framing::Zlib => (&ZLIB_HEADER, Check::Adler(1)),
            Framing::Gzip => (&GZIP_HEADER, Check::Crc(Crc::new())),
        };
        out.write_all(header)?;
        let window = (2 * rayon::current_num_threads()).clamp(2, 32);
        Ok(ParStream {
            framing,
            pending: Vec::new(),
            check,
            window,
        })
    }

    /// Takes `b`; deflates and writes a window of chunks once one is full.
    pub(crate) fn write(&mut self, b: &[u8], out: &mut impl Write) -> io::Result<()> {
        self.pending.extend_from_slice(b);
        if self.pending.len() >= CHUNK * self.window {
            self.deflate_pending(out, false)?;
        }
        Ok(())
    }

    /// Deflates the whole chunks pending (all of them when `all`), in
    /// parallel, and writes them in order.
    fn deflate_pending(&mut self, out: &mut impl Write, all: bool) -> io::Result<()> {
        let whole = if all {
            self.pending.len()
        } else {
            self.pending.len() / CHUNK * CHUNK
        };
        if whole == 0 {
            return Ok(());
        }
        let framing = self.framing;
        let pieces: Vec<io::Result<Piece>> = self.pending[..whole]
            .par_chunks(CHUNK)
            .map(|c| deflate_chunk(c, framing))
            .collect();
        for p in pieces {
            let p = p?;
            out.write_all(&p.bytes)?;
            match (&mut self.check, p.crc) {
                (Check::Adler(a), _) => *a = adler32_combine(*a, p.adler, p.len),
                (Check::Crc(c), Some(pc)) => c.combine(&pc),
                (Check::Crc(_), None) => {}
            }
        }
        self.pending.drain(..whole);
        Ok(())
    }

    /// Ends the stream: the rest of the chunks, the final block, the
    /// trailer.
    pub(crate) fn finish(mut self, out: &mut impl Write) -> io::Result<()> {
        self.deflate_pending(out, true)?;
        out.write_all(&FINAL_BLOCK)?;
        match &self.check {
            Check::Adler(a) => out.write_all(&a.to_be_bytes()),
            Check::Crc(c) => {
                out.write_all(&c.sum().to_le_bytes())?;
                out.write_all(&c.amount().to_le_bytes())
            }
        }
    }
}
