//! The image file as the loader sees it. Opening reads the header and the
//! tail (footer and, usually, the whole index) with one read each; pieces are
//! then read with one positioned read each.
#![deny(
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use crate::error::LoadError;
use crate::mmap::MmapOptIn;
use nsimage_format::cipher::{hex, ImageCipher, Key};
use nsimage_format::codec::{decompress, Codec};
use nsimage_format::consts::{footer, header};
use nsimage_format::{Footer, Header, Index, Location, SubSectionInfo};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes read from the end of the file at open, enough for most indexes.
const TAIL_READ: u64 = 256 << 10;

/// How piece bytes are brought into memory.
///
/// The default, [`Bulk`](ReadStrategy::Bulk), only ever reads the file.
/// Mapping it is faster on large images but sound only while the file does
/// not change, so [`Mmap`](ReadStrategy::Mmap) can only be built through an
/// `unsafe` opt-in: [`ReadStrategy::mmap`].
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadStrategy {
    /// Map the file; pieces are slices of the mapping. Built with
    /// [`ReadStrategy::mmap`], whose Safety section the caller upholds.
    Mmap(MmapOptIn),
    /// One positioned read per piece into a buffer.
    #[default]
    Bulk,
    /// The baseline of loaders without an index: a buffered reader, record
    /// by record, one section after another, each record decoded by prost.
    Stream,
}

impl ReadStrategy {
    /// Maps the file instead of reading it.
    ///
    /// # Safety
    ///
    /// The image file must not be modified or truncated by anyone while a
    /// load or verification with this strategy maps it (see
    /// [`MmapOptIn::new`]).
    #[allow(unsafe_code)]
    pub unsafe fn mmap() -> Self {
        // SAFETY: this function's caller upholds the same contract.
        ReadStrategy::Mmap(unsafe { MmapOptIn::new() })
    }

    /// The strategy's name: "mmap", "bulk" or "stream".
    pub fn name(self) -> &'static str {
        match self {
            ReadStrategy::Mmap(_) => "mmap",
            ReadStrategy::Bulk => "bulk",
            ReadStrategy::Stream => "stream",
        }
    }
}

/// Shown as the variant's name alone (`Mmap`, `Bulk`, `Stream`).
impl std::fmt::Debug for ReadStrategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ReadStrategy::Mmap(_) => "Mmap",
            ReadStrategy::Bulk => "Bulk",
            ReadStrategy::Stream => "Stream",
        })
    }
}

/// Opens `path` for reading if it is a regular file (symbolic links
/// followed). Anything else is refused before it is opened (opening some
/// devices has side effects); a file swapped in between is caught on the
/// handle: `O_NONBLOCK` makes the open of a FIFO return at once,
/// `O_NOCTTY` keeps a terminal from becoming the controlling one, and the
/// type is checked again on the handle itself, so the file checked is the
/// file read. Reads of a regular file ignore `O_NONBLOCK`.
///
/// The handle holds a shared lock on the file (`flock(LOCK_SH)`, taken
/// without waiting) for as long as it, or a mapping made from it, lives:
/// a store cuts an old image in place before removing it only while it
/// holds the exclusive lock (format-spec/STORE.md, "Checkpoint", step 5),
/// so a file read or mapped through this handle is never cut under it.
/// A file another process holds under an exclusive lock is refused
/// ([`std::io::ErrorKind::ResourceBusy`]: a purge is removing it); on a
/// file system without locks the file is read without one.
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let refuse = |t: std::fs::FileType| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "is {}, not a regular file",
                nsimage_format::file_type::describe(t)
            ),
        )
    };
    let t = std::fs::metadata(path)?.file_type();
    if !t.is_file() {
        return Err(refuse(t));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let t = file.metadata()?.file_type();
    if !t.is_file() {
        return Err(refuse(t));
    }
    match file.try_lock_shared() {
        Ok(()) | Err(std::fs::TryLockError::Error(_)) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(std::io::Error::new(
            std::io::ErrorKind::ResourceBusy,
            "is locked by another process (a store's purge removing it)",
        )),
    }
}

/// An open image with its validated header and index.
pub struct ImageSource {
    path: PathBuf,
    file: File,
    map: Option<memmap2::Mmap>,
    /// Small pieces done with, until they add up to ranges worth dropping
    /// from the mapping ([`crate::mmap::Pending`]).
    pending: parking_lot::Mutex<crate::mmap::Pending>,
    len: u64,
    /// The file's header.
    pub header: Header,
    /// The file's index, validated against the file's length.
    pub index: Index,
    read_calls: AtomicU64,
    bytes_read: AtomicU64,
    /// The image's data key, once [`unlock`](Self::unlock)ed.
    cipher: Option<ImageCipher>,
    /// The pieces the workers start, for the prefetch thread.
    progress: crate::progress::Progress,
    /// The load's timeline, when a load reads this source.
    timeline: Option<std::sync::Arc<crate::trace::Timeline>>,
}

/// A reader's reusable buffers for pieces: the stored bytes (read, or
/// copied to be decrypted in place) and the plain bytes decompressed.
#[derive(Default)]
pub struct PieceBuf {
    stored: Vec<u8>,
    plain: Vec<u8>,
}

impl ImageSource {
    /// Opens the image at `path`: reads and validates its header, footer
    /// and index (one read for the tail, one more when the index does not
    /// fit in it).
    pub fn open(path: &Path) -> Result<ImageSource, LoadError> {
        let io = |source| LoadError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = open_regular(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let mut src = ImageSource {
            path: path.to_path_buf(),
            file,
            len,
            map: None,
            pending: parking_lot::Mutex::default(),
            header: Header::current(),
            index: Index::default(),
            read_calls: AtomicU64::new(0),
            bytes_read: AtomicU64::new(0),
            cipher: None,
            progress: crate::progress::Progress::default(),
            timeline: None,
        };
        let fmt = |e| LoadError::from_format(path, e);
        let head = src.read_at(0, (header::SIZE as u64).min(len))?;
        // Within two bytes of either format's magic (over the bytes there
        // are): a damaged or cut image, not a file of another kind.
        let near = |m: &[u8]| head.iter().zip(m).filter(|(a, b)| a != b).count() <= 2;
        if !head.is_empty()
            && !near(&nsimage_format::consts::HEADER_MAGIC)
            && !near(&nsimage_format::hdfs::MAGIC)
        {
            // Neither magic: a file of another kind, not a damaged image
            // (one damaged at its start still ends with the footer's).
            let end = src.read_at(len.saturating_sub(8), len.min(8))?;
            if end != nsimage_format::consts::FOOTER_MAGIC {
                // Named only when it is a kind `guess` knows: other bytes
                // may be an image damaged at its start (a Hadoop image
                // has no magic at its end to tell).
                if let Some(looks_like) = crate::kind::guess(&head) {
                    return Err(LoadError::NotAnImage {
                        path: path.to_path_buf(),
                        looks_like,
                    });
                }
            }
        }
        src.header = Header::decode(&head).map_err(fmt)?;
        let tail_len = len.min(TAIL_READ);
        let tail_start = len.saturating_sub(tail_len);
        let tail = src.read_at(tail_start, tail_len)?;
        let foot =
            Footer::decode(&tail[tail.len().saturating_sub(footer::SIZE)..], len).map_err(fmt)?;
        // The index inside the tail already read, else one more read (which
        // checks its range against the file).
        let in_tail = foot
            .index_offset
            .checked_sub(tail_start)
            .and_then(|s| usize::try_from(s).ok())
            .and_then(|s| {
                let e = s.checked_add(usize::try_from(foot.index_length).ok()?)?;
                tail.get(s..e)
            });
        let index_bytes = match in_tail {
            Some(b) => b.to_vec(),
            None => src.read_at(foot.index_offset, foot.index_length)?,
        };
        src.index =
            Index::decode(&index_bytes, foot.index_offset, foot.index_checksum).map_err(fmt)?;
        src.index
            .check_features(src.header.required_features)
            .map_err(fmt)?;
        Ok(src)
    }

    /// The inodes the index declares (its INODE section's records).
    pub fn inode_count(&self) -> u64 {
        self.index
            .section(nsimage_format::SectionKind::INODE)
            .map_or(0, |s| s.records)
    }

    /// Whether the image is encrypted.
    pub fn is_encrypted(&self) -> bool {
        self.index.encryption.is_some()
    }

    /// Gets an encrypted image's data key from `key`, checked against the
    /// fingerprint in the index before anything is decrypted: no key, or
    /// another one, is one clear error. A plain image needs none (a key
    /// given is not used).
    pub fn unlock(&mut self, key: Option<&Key>) -> Result<(), LoadError> {
        let Some(enc) = &self.index.encryption else {
            return Ok(());
        };
        let Some(key) = key else {
            return Err(LoadError::Key {
                path: self.path.clone(),
                detail: format!(
                    "the image is encrypted (key fingerprint {}); give its key file \
                     (--key-file or NSIMAGE_KEY_FILE)",
                    hex(&enc.key_fingerprint)
                ),
            });
        };
        let fp = key.fingerprint();
        if fp != enc.key_fingerprint {
            return Err(LoadError::Key {
                path: self.path.clone(),
                detail: format!(
                    "wrong key: the image was encrypted with key fingerprint {}, the key \
                     given has {}",
                    hex(&enc.key_fingerprint),
                    hex(&fp)
                ),
            });
        }
        self.cipher = Some(key.image_cipher(&enc.image_id));
        Ok(())
    }

    /// Maps the whole file, for [`ReadStrategy::Mmap`] (counted as one
    /// call); pieces are then slices of the mapping.
    pub fn map(&mut self, opt_in: MmapOptIn) -> Result<(), LoadError> {
        self.install_map(crate::mmap::map(&self.file, opt_in))
    }

    /// Counts the mapping as one read call and keeps it, if it maps the
    /// file at the length opened.
    fn install_map(&mut self, m: std::io::Result<memmap2::Mmap>) -> Result<(), LoadError> {
        self.read_calls.fetch_add(1, Ordering::Relaxed);
        let m = m.map_err(|source| LoadError::Io {
            path: self.path.clone(),
            source,
        })?;
        if m.len() as u64 != self.len {
            return Err(LoadError::Corrupt {
                path: self.path.clone(),
                at: nsimage_format::Location::at(m.len() as u64),
                detail: "file changed size while being opened".into(),
            });
        }
        self.map = Some(m);
        Ok(())
    }

    /// The file handle, for readers that stream it.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Counts read calls made by a caller that reads the file itself.
    pub fn count_reads(&self, calls: u64, bytes: u64) {
        self.read_calls.fetch_add(calls, Ordering::Relaxed);
        self.bytes_read.fetch_add(bytes, Ordering::Relaxed);
    }

    /// The plain bytes of one piece: its stored bytes checksum checked (a
    /// slice of the mapping when the file is mapped and the piece is not
    /// encrypted, else one read into `buf`), then, for a piece at rest,
    /// authenticated and decrypted and decompressed into `buf`'s reused
    /// buffers.
    pub fn piece<'s>(
        &'s self,
        piece: &SubSectionInfo,
        at: &Location,
        buf: &'s mut PieceBuf,
    ) -> Result<&'s [u8], LoadError> {
        self.piece_hashing(piece, at, buf, None)
    }

    /// [`piece`](Self::piece), feeding the stored bytes (those the
    /// checksums cover) to `hash` on the way.
    pub fn piece_hashing<'s>(
        &'s self,
        piece: &SubSectionInfo,
        at: &Location,
        buf: &'s mut PieceBuf,
        hash: Option<&mut xxhash_rust::xxh3::Xxh3>,
    ) -> Result<&'s [u8], LoadError> {
        let mapped = self.stored(piece, at, &mut buf.stored)?;
        if let Some(h) = hash {
            h.update(mapped.unwrap_or(&buf.stored));
        }
        if piece.at_rest.is_plain() {
            return Ok(mapped.unwrap_or(&buf.stored));
        }
        let corrupt = |detail: String| LoadError::Corrupt {
            path: self.path.clone(),
            at: at.clone(),
            detail,
        };
        let decrypted = match &piece.at_rest.sealed {
            None => false,
            Some(seal) => {
                let Some(cipher) = &self.cipher else {
                    return Err(LoadError::Key {
                        path: self.path.clone(),
                        detail: "the image is encrypted and was not unlocked with its key".into(),
                    });
                };
                // Sealed pieces are always read into `buf` (`stored_unchecked`).
                debug_assert!(mapped.is_none());
                cipher
                    .open(&seal.nonce, &seal.aad, &mut buf.stored)
                    .map_err(|_| {
                        corrupt(
                            "authentication failed: the piece was altered, or moved from \
                             another place or image"
                                .into(),
                        )
                    })?;
                true
            }
        };
        let stored: &[u8] = match (decrypted, mapped) {
            (false, Some(m)) => m,
            _ => &buf.stored,
        };
        if piece.at_rest.codec == Codec::None {
            return Ok(stored);
        }
        decompress(
            piece.at_rest.codec,
            stored,
            piece.at_rest.raw_length,
            &mut buf.plain,
        )
        .map_err(|e| {
            corrupt(format!(
                "{} piece does not decompress: {e}",
                piece.at_rest.codec
            ))
        })?;
        Ok(&buf.plain)
    }

    /// The bytes of a piece stored plain (neither compressed nor
    /// encrypted), its checksum NOT checked: for a decoder that checks it as
    /// it goes ([`Ahead`](crate::ahead::Ahead)) and keeps nothing unless it
    /// matches. `None` for a piece at rest, which [`piece`](Self::piece)
    /// opens (its checksum checked first).
    pub(crate) fn plain_unchecked<'s>(
        &'s self,
        piece: &SubSectionInfo,
        at: &Location,
        buf: &'s mut PieceBuf,
    ) -> Result<Option<&'s [u8]>, LoadError> {
        if !piece.at_rest.is_plain() {
            return Ok(None);
        }
        let mapped = self.stored_unchecked(piece, at, &mut buf.stored)?;
        Ok(Some(mapped.unwrap_or(&buf.stored)))
    }

    /// The stored bytes of a piece, checksum checked: `Some` slice of the
    /// mapping, or `None` when they were read into `buf`.
    fn stored<'s>(
        &'s self,
        piece: &SubSectionInfo,
        at: &Location,
        buf: &mut Vec<u8>,
    ) -> Result<Option<&'s [u8]>, LoadError> {
        let mapped = self.stored_unchecked(piece, at, buf)?;
        let actual = xxhash_rust::xxh3::xxh3_64(mapped.unwrap_or(buf));
        if actual != piece.checksum {
            return Err(LoadError::from_format(
                &self.path,
                checksum_mismatch(piece, at, actual),
            ));
        }
        Ok(mapped)
    }

    /// The stored bytes of a piece: `Some` slice of the mapping, or `None`
    /// when they were read into `buf`.
    fn stored_unchecked<'s>(
        &'s self,
        piece: &SubSectionInfo,
        at: &Location,
        buf: &mut Vec<u8>,
    ) -> Result<Option<&'s [u8]>, LoadError> {
        // A sealed piece is decrypted in place in `buf`: read it there
        // rather than fault it in through the mapping and copy it.
        let Some(m) = self.map.as_ref().filter(|_| piece.at_rest.sealed.is_none()) else {
            self.read_into(piece.offset, piece.length, buf)?;
            return Ok(None);
        };
        let range = usize::try_from(piece.offset).ok().and_then(|s| {
            let e = s.checked_add(usize::try_from(piece.length).ok()?)?;
            m.get(s..e)
        });
        match range {
            Some(range) => Ok(Some(range)),
            None => Err(LoadError::Corrupt {
                path: self.path.clone(),
                at: at.clone(),
                detail: format!(
                    "range of {} bytes runs past the end of the file",
                    piece.length
                ),
            }),
        }
    }

    /// The image's path, as given to [`open`](Self::open).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's length in bytes, taken at open.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True for an empty file (which `open` refuses).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Reads `len` bytes at `offset` with one positioned read (retried only
    /// on short reads). The range must have been validated against the file
    /// length by the index decoder.
    pub fn read_at(&self, offset: u64, len: u64) -> Result<Vec<u8>, LoadError> {
        let mut buf = Vec::new();
        self.read_into(offset, len, &mut buf)?;
        Ok(buf)
    }

    /// Like [`read_at`](Self::read_at) into a reusable buffer.
    pub fn read_into(&self, offset: u64, len: u64, buf: &mut Vec<u8>) -> Result<(), LoadError> {
        let end = offset.checked_add(len).filter(|&e| e <= self.len);
        if end.is_none() {
            return Err(LoadError::Corrupt {
                path: self.path.clone(),
                at: nsimage_format::Location::at(offset),
                detail: format!(
                    "range of {len} bytes runs past the end of the file ({})",
                    self.len
                ),
            });
        }
        // Within the file's length, which is in memory's range on this
        // machine only if it fits usize.
        let n = usize::try_from(len).map_err(|_| LoadError::Corrupt {
            path: self.path.clone(),
            at: nsimage_format::Location::at(offset),
            detail: format!("range of {len} bytes does not fit in memory"),
        })?;
        // Every byte is overwritten by the read (or the call fails and the
        // buffer is not used): only bytes past the reused buffer's length
        // are zeroed, not the whole piece again for each piece.
        if buf.len() >= n {
            buf.truncate(n);
        } else {
            buf.resize(n, 0);
        }
        self.read_calls.fetch_add(1, Ordering::Relaxed);
        self.bytes_read.fetch_add(len, Ordering::Relaxed);
        self.file
            .read_exact_at(buf, offset)
            .map_err(|source| LoadError::Io {
                path: self.path.clone(),
                source,
            })
    }

    /// Read calls issued so far (open included).
    pub fn read_calls(&self) -> u64 {
        self.read_calls.load(Ordering::Relaxed)
    }

    /// Bytes read so far (open included; a mapping counts none, an
    /// encrypted piece is read even from a mapped file).
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read.load(Ordering::Relaxed)
    }

    /// [`map`](Self::map) without the whole-file read-ahead hint, for a
    /// load whose prefetch thread reads ahead of the workers (`prefetch`).
    pub(crate) fn map_lazily(&mut self, opt_in: MmapOptIn) -> Result<(), LoadError> {
        self.install_map(crate::mmap::map_lazy(&self.file, opt_in))
    }

    /// The mapping, once [`map`](Self::map)ped.
    pub(crate) fn mapping(&self) -> Option<&memmap2::Mmap> {
        self.map.as_ref()
    }

    /// Tells the source a worker is done with piece `p` for this load: a
    /// mapped file drops the page-table entries of its pages (see
    /// `mmap::let_go`), so that they stop counting in the process's
    /// resident memory and unmapping the file at the end costs little; a
    /// piece with less than `mmap::LET_GO_MIN` of whole pages goes once it
    /// and its neighbours add up to more (`mmap::Pending`), or at the end
    /// of its phase ([`release_pending`](Self::release_pending)).
    pub(crate) fn done_with(&self, p: &SubSectionInfo) {
        let (Some(m), Ok(o), Ok(l)) = (
            self.map.as_ref(),
            usize::try_from(p.offset),
            usize::try_from(p.length),
        ) else {
            return;
        };
        if crate::mmap::worth(o, l) {
            crate::mmap::let_go(m, o, l);
            return;
        }
        let runs = self.pending.lock().add(o, l);
        for (o, l) in runs {
            crate::mmap::let_go(m, o, l);
        }
    }

    /// At the end of a phase: drops the runs of small pieces
    /// ([`done_with`](Self::done_with)) still held that are worth it.
    pub(crate) fn release_pending(&self) {
        let Some(m) = self.map.as_ref() else {
            return;
        };
        let runs = self.pending.lock().drain();
        for (o, l) in runs {
            crate::mmap::let_go(m, o, l);
        }
    }

    /// Where the workers tell the prefetch thread which pieces they start.
    pub(crate) fn progress(&self) -> &crate::progress::Progress {
        &self.progress
    }

    /// Records this source's pieces in `timeline` from now on.
    pub(crate) fn set_timeline(&mut self, timeline: std::sync::Arc<crate::trace::Timeline>) {
        self.timeline = Some(timeline);
    }

    /// The load's timeline, if one is kept.
    pub(crate) fn timeline(&self) -> Option<&crate::trace::Timeline> {
        self.timeline.as_deref()
    }

    /// What the pieces of a step report to: the prefetch thread and the
    /// timeline.
    pub(crate) fn tracked(&self) -> crate::run::Tracked<'_> {
        crate::run::Tracked {
            progress: Some(&self.progress),
            timeline: self.timeline(),
            quiet: false,
        }
    }
}

/// The error of a piece whose stored bytes do not hash to the index's
/// checksum (`computed`).
pub(crate) fn checksum_mismatch(
    piece: &SubSectionInfo,
    at: &Location,
    computed: u64,
) -> nsimage_format::FormatError {
    nsimage_format::FormatError::corrupt(
        at.clone(),
        format!(
            "checksum mismatch over {} bytes (stored {:016x}, computed {computed:016x})",
            piece.length, piece.checksum
        ),
    )
}
