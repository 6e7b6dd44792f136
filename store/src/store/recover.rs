//! Recovery, the reading half of opening a store: choose the newest image
//! that loads, replay every journal record after it, and find what the
//! open segment's tail needs (a cut, a replacement, a new segment). All of
//! that reads only; [`open_tail`], the last step, then does to the files
//! what recovery found.

use super::at_rest::AtRestSettings;
use super::files::{self, image_name, Listing, NewSegment};
use super::options::StoreOptions;
use crate::edit;
use crate::error::{io_err, StoreError};
use crate::fs::Fs;
use crate::journal::{self, Sealing, Segment, SegmentSealer};
use crate::op_view::JournalOpView;
use nsimage_format::cipher::{Key, ID_LEN};
use nsimage_format::Location;
use nsimage_loader::{load, ImageSource, LoadError};
use nsimage_namespace::Namespace;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// What opening (recovering) a store did. With the feature `serde` it
/// serializes as `nsimage store recover --json` prints it (less the
/// digest): every field but `image`, each skipped image as
/// `{"path", "error"}`.
#[derive(Clone, Debug, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct RecoveryReport {
    /// The image recovery started from.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub image: PathBuf,
    /// Its txid.
    pub image_txid: u64,
    /// Newer images that did not load, with why.
    #[cfg_attr(
        feature = "serde",
        serde(serialize_with = "super::json::skipped_images")
    )]
    pub skipped_images: Vec<(PathBuf, String)>,
    /// Journal records applied after the image.
    pub replayed: u64,
    /// Segments read.
    pub segments: usize,
    /// Segments read with one bulk read (the rest were streamed).
    pub bulk_segments: usize,
    /// Read calls made through the store's `Fs` (image loads not counted).
    pub read_calls: u64,
    /// Bytes of a torn tail cut off the open segment.
    pub torn_tail_bytes: u64,
    /// The txid recovery reached.
    pub txid: u64,
    /// Seconds spent loading images.
    pub load_seconds: f64,
    /// Seconds spent replaying the journal.
    pub replay_seconds: f64,
    /// Seconds the whole open took.
    pub seconds: f64,
}

/// What opening must do to the open segment once recovery has read it.
#[derive(Debug)]
pub(super) enum Tail {
    /// No open segment holds txids after the namespace: start a new one.
    Create,
    /// Go on appending to the open segment (first txid `first`) after its
    /// first `len` bytes; `torn` bytes after them are a torn tail to cut;
    /// `id` is a sealed segment's id.
    Append {
        first: u64,
        len: u64,
        torn: u64,
        id: Option<[u8; ID_LEN]>,
    },
    /// The open segment is a torn create (no complete header, nothing
    /// else), or holds no record and starts at or below the image's txid:
    /// remove it and start a new one.
    Replace { path: PathBuf },
    /// The open segment's records all lie below the image's txid (an image
    /// adopted from a peer, `Store::adopt_image`): finish it at its last
    /// record (`first..=last`, after cutting `len`'s torn tail) and start a
    /// new one after the image, so that no segment's txids jump.
    Finish {
        first: u64,
        last: u64,
        len: u64,
        torn: u64,
    },
}

/// The state recovery reaches, found without changing any file.
pub(super) struct Recovered {
    pub(super) ns: Namespace,
    pub(super) report: RecoveryReport,
    pub(super) listing: Listing,
    pub(super) tail: Tail,
}

/// Reads the store in `dir`: the newest image that loads, then every
/// journal record after it. Reads only: what the files need (a cut, a
/// replaced segment) is returned in `tail` for [`open_tail`] to do.
/// `opts` carry the store's key (checked already) when it is encrypted.
pub(super) fn recover(
    fs: &dyn Fs,
    dir: &Path,
    opts: &StoreOptions,
    at_rest: &AtRestSettings,
) -> Result<Recovered, StoreError> {
    let started = Instant::now();
    let reads_before = fs.read_calls();
    let timeline = opts.load.timeline.as_deref();
    let listing = in_phase(timeline, "store: list", || {
        files::list_store(fs, dir, !at_rest.is_plain())
    })?;
    let mut report = RecoveryReport::default();
    let mut ns = choose_image(dir, &listing, opts, at_rest, &mut report)?;
    report.load_seconds = started.elapsed().as_secs_f64();

    let replay_started = Instant::now();
    let sealing = at_rest.sealing(opts.key.as_ref());
    let tail = in_phase(timeline, "store: replay", || {
        replay(fs, &listing, opts, &sealing, &mut ns, &mut report)
    })?;
    report.replay_seconds = replay_started.elapsed().as_secs_f64();
    report.txid = ns.info().last_txid;
    report.read_calls = fs.read_calls().saturating_sub(reads_before);
    report.seconds = started.elapsed().as_secs_f64();
    Ok(Recovered {
        ns,
        report,
        listing,
        tail,
    })
}

/// Runs `f` as the phase `name` of the load's timeline, if one is kept.
fn in_phase<T>(
    timeline: Option<&nsimage_loader::trace::Timeline>,
    name: &'static str,
    f: impl FnOnce() -> T,
) -> T {
    match timeline {
        Some(t) => t.phase(name, f),
        None => f(),
    }
}

/// Loads the newest image whose namespace is at the txid its name says;
/// the ones that do not load are recorded in `report` with why. In an
/// encrypted store an image that is not encrypted is refused (so a plain
/// image put in its place cannot stand in for the store's).
fn choose_image(
    dir: &Path,
    listing: &Listing,
    opts: &StoreOptions,
    at_rest: &AtRestSettings,
    report: &mut RecoveryReport,
) -> Result<Namespace, StoreError> {
    for &t in &listing.images {
        let path = dir.join(image_name(t));
        if at_rest.is_encrypted() {
            match ImageSource::open(&path) {
                Ok(src) if src.is_encrypted() => {}
                Ok(_) => {
                    report
                        .skipped_images
                        .push((path, "not encrypted, in an encrypted store: refused".into()));
                    continue;
                }
                // The load below reports why it does not open.
                Err(_) => {}
            }
        }
        match load(&path, &opts.load) {
            Ok(l) if l.namespace.info().last_txid == t => {
                if opts.release_memory_after_load {
                    nsimage_loader::release_free_memory();
                }
                report.image = path;
                report.image_txid = t;
                return Ok(l.namespace);
            }
            Ok(l) => report.skipped_images.push((
                path,
                format!(
                    "holds txid {}, its name says {t}",
                    l.namespace.info().last_txid
                ),
            )),
            // A namespace the memory cannot hold is not a damaged image:
            // the store's older images hold the same namespace a few ops
            // back, no smaller for the memory, and falling back to one
            // would hide why the newest was not used.
            Err(e @ LoadError::TooLarge { .. }) => return Err(StoreError::Load(e)),
            Err(e) => {
                // The load error names the image already: keep its cause
                // only, the path is beside it.
                let text = e.to_string();
                let prefix = format!("{}: ", path.display());
                let cause = text.strip_prefix(&prefix).unwrap_or(&text).to_string();
                report.skipped_images.push((path, cause))
            }
        }
    }
    let detail = report
        .skipped_images
        .iter()
        .map(|(p, e)| format!("{}: {e}", p.display()))
        .collect::<Vec<_>>()
        .join("; ");
    Err(StoreError::NoImage {
        path: dir.to_path_buf(),
        detail: if detail.is_empty() {
            "no images".into()
        } else {
            detail
        },
    })
}

/// Replays every segment of `listing` holding txids after the image onto
/// `ns`; returns what the open segment's tail needs.
fn replay(
    fs: &dyn Fs,
    listing: &Listing,
    opts: &StoreOptions,
    sealing: &Sealing,
    ns: &mut Namespace,
    report: &mut RecoveryReport,
) -> Result<Tail, StoreError> {
    let base = report.image_txid;
    check_segment_names(&listing.segments)?;
    let mut tail = Tail::Create;
    let n_segments = listing.segments.len();
    for (k, seg) in listing.segments.iter().enumerate() {
        if seg.last.is_some_and(|last| last <= base) {
            continue;
        }
        let is_open = seg.last.is_none();
        let at0 = |detail: String| StoreError::Corrupt {
            path: seg.path.clone(),
            at: Location::at(0),
            detail,
        };
        if is_open && k + 1 != n_segments {
            return Err(at0("an open segment is followed by another segment".into()));
        }
        // A gap: the segment starts after the txid that comes next.
        if seg.first.saturating_sub(1) > ns.info().last_txid {
            return Err(at0(format!(
                "journal gap: segment starts at txid {}, the namespace is at {}",
                seg.first,
                ns.info().last_txid
            )));
        }
        let (r, replayed) = in_phase(opts.load.timeline.as_deref(), "replay a segment", || {
            replay_segment(fs, seg, is_open, opts, sealing, ns)
        })?;
        report.replayed += replayed;
        report.segments += 1;
        report.bulk_segments += usize::from(r.bulk);
        if let Some(last) = seg.last {
            if ns.info().last_txid < last {
                return Err(StoreError::Corrupt {
                    path: seg.path.clone(),
                    at: Location::at(r.valid_len),
                    detail: format!(
                        "finished segment ends at txid {} but its name says {last}",
                        ns.info().last_txid
                    ),
                });
            }
        }
        if is_open {
            report.torn_tail_bytes += r.torn_bytes;
            // The txid of the segment's last record (none: `first - 1`).
            let last_record = seg.first.saturating_add(r.ops).saturating_sub(1);
            // (A store at the last txid keeps its segment: no new one can
            // follow, and no op will be appended.)
            let below = base < u64::MAX;
            tail = if r.headerless || (below && r.ops == 0 && seg.first <= base) {
                Tail::Replace {
                    path: seg.path.clone(),
                }
            } else if below && last_record < base {
                Tail::Finish {
                    first: seg.first,
                    last: last_record,
                    len: r.valid_len,
                    torn: r.torn_bytes,
                }
            } else {
                Tail::Append {
                    first: seg.first,
                    len: r.valid_len,
                    torn: r.torn_bytes,
                    id: r.id,
                }
            };
        }
    }
    Ok(tail)
}

/// Refuses a finished segment whose name ends before it starts.
fn check_segment_names(segments: &[Segment]) -> Result<(), StoreError> {
    for seg in segments {
        if let Some(last) = seg.last.filter(|&l| l < seg.first) {
            return Err(StoreError::Corrupt {
                path: seg.path.clone(),
                at: Location::at(0),
                detail: format!(
                    "segment name says it ends at txid {last}, before its first txid {}",
                    seg.first
                ),
            });
        }
    }
    Ok(())
}

/// Applies the records of one segment after the namespace's txid, in
/// order and without a gap; returns how the segment read and how many
/// records were applied. A record that is out of order or whose op does
/// not apply is named at the offset of the frame holding it.
fn replay_segment(
    fs: &dyn Fs,
    seg: &Segment,
    is_open: bool,
    opts: &StoreOptions,
    sealing: &Sealing,
    ns: &mut Namespace,
) -> Result<(journal::SegmentRead, u64), StoreError> {
    let mut replayed = 0u64;
    let mut apply = |offset: u64, rec: JournalOpView<'_>| -> Result<(), StoreError> {
        let now = ns.info().last_txid;
        if rec.txid <= now {
            return Ok(());
        }
        let bad = |detail: String| StoreError::Corrupt {
            path: seg.path.clone(),
            at: Location::at(offset),
            detail,
        };
        // rec.txid > now, so now < u64::MAX and this never fails.
        let want = now
            .checked_add(1)
            .ok_or_else(|| bad("txid overflow".into()))?;
        if rec.txid != want {
            return Err(bad(format!(
                "journal gap: txid {} where {want} was expected",
                rec.txid
            )));
        }
        // The reader gives only records holding an op (their shape is
        // checked before they decode).
        edit::apply_view(ns, &rec.op)
            .map_err(|e| bad(format!("replaying txid {}: {e}", rec.txid)))?;
        ns.info_mut().last_txid = rec.txid;
        replayed += 1;
        Ok(())
    };
    let read = journal::ReadOptions {
        open: is_open,
        sealing,
        bulk_limit: opts.bulk_replay_bytes,
    };
    let r = journal::read(journal::Source::File(fs), seg, &read, &mut apply)?;
    Ok((r, replayed))
}

/// Makes the open segment ready for appends, as recovery found it in
/// `tail`: cuts a torn tail, replaces a torn create, or creates a new
/// segment after `txid` (sealed with `key` in an encrypted store).
/// Returns the open segment and its first txid.
pub(super) fn open_tail(
    fs: &dyn Fs,
    dir: &Path,
    tail: Tail,
    txid: u64,
    key: Option<&Key>,
) -> Result<(NewSegment, u64), StoreError> {
    let new_segment = |fs: &dyn Fs| {
        let first = txid.checked_add(1).ok_or_else(|| StoreError::Invalid {
            path: dir.to_path_buf(),
            detail: format!("the namespace is at txid {txid}, the last one: no op can follow"),
        })?;
        let seg = files::create_segment(fs, dir, first, key)?;
        Ok::<_, StoreError>((seg, first))
    };
    match tail {
        Tail::Append {
            first,
            len,
            torn,
            id,
        } => {
            let p = dir.join(journal::open_name(first));
            // The reader checked the segment's kind against the store's.
            let sealer = match (id, key) {
                (Some(id), Some(k)) => Some(Arc::new(SegmentSealer::new(k, id, first))),
                _ => None,
            };
            if torn > 0 {
                fs.truncate(&p, len).map_err(io_err(&p))?;
            }
            let file = fs.append(&p).map_err(io_err(&p))?;
            Ok((NewSegment { file, sealer, len }, first))
        }
        Tail::Replace { path } => {
            fs.remove(&path).map_err(io_err(&path))?;
            fs.sync_dir(dir).map_err(io_err(dir))?;
            new_segment(fs)
        }
        Tail::Finish {
            first,
            last,
            len,
            torn,
        } => {
            let p = dir.join(journal::open_name(first));
            if torn > 0 {
                fs.truncate(&p, len).map_err(io_err(&p))?;
            }
            let to = dir.join(journal::finished_name(first, last));
            fs.rename(&p, &to).map_err(io_err(&p))?;
            fs.sync_dir(dir).map_err(io_err(dir))?;
            new_segment(fs)
        }
        Tail::Create => new_segment(fs),
    }
}
