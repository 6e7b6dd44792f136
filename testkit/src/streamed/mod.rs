//! The streamed generator (version 2 of the synthetic namespace): the shape
//! of [`generate`](crate::generate::generate) (the same tree of directories
//! with heavy-tailed fan-out, the same Zipf-like spread of files over them,
//! the same names, owners, times, blocks and rare attributes, drawn from the
//! same distributions), written straight to an image in bounded memory, so
//! that a namespace of hundreds of millions of inodes is generated on a
//! machine that could not hold it.
//!
//! What differs from version 1, so that nothing but a few numbers per
//! directory is ever held:
//! - every directory draws its entries from random streams of its own,
//!   seeded by `(seed, directory number)`, so any directory can be drawn
//!   again, alone and in any order;
//! - the numbers in file and link names are zero-padded to one width per
//!   directory and pattern, so that a directory's entries come out of the
//!   draw already in name order (version 1 sorts them);
//! - a directory keeps the modification time it is created with (version 1
//!   moves it to that of its last child).
//!
//! The image is written in four passes over the draw, each in parallel over
//! pieces of directories and each in bounded memory: the first measures
//! (records, bytes, blocks, strings in use, the id of every directory), the
//! others write INODE (and compute the digest), NAME_RUNS and INODE_DIR
//! through [`StreamWriter`]. The same `(inodes, seed)` gives the same image.
//!
//! | file | what it holds |
//! |------|---------------|
//! | `mod.rs` | [`write_generated`]: the passes, in order, into a [`StreamWriter`] |
//! | `shape.rs` | the tree and the spread of files, a few numbers per directory; a directory's entry names drawn in name order; the walks of the passes |
//! | `draw.rs` | an entry's attributes drawn, and turned into its INODE record and its digest bytes |
//! | `ordered.rs` | pieces drawn in parallel and written in order, a bounded queue per piece |

mod draw;
mod ordered;
mod shape;

use crate::generate::{available_memory, GenSpec, SizeError, EPOCH_MS};
use draw::{candidates, Encoder};
use nsimage_format::name_runs::{RunEntry, MAX_ENTRIES, TARGET_NAME_BYTES};
use nsimage_format::pb;
use nsimage_namespace::{
    canon_inode, Attrs, CanonInode, Digest, Digester, NsInfo, Perm, Stats, ROOT_ID,
};
use nsimage_writer::{Encoded, ImageSummary, Size, StreamWriter, WriteOptions};
use ordered::ordered;
use shape::{Measured, Shape};
use std::io::{self, Write};
use std::ops::Range;

/// The version of the synthetic namespace this module draws.
pub const VERSION: u32 = 2;

/// Most inodes of a streamed namespace: every id fits 32 bits.
pub const MAX_INODES: u64 = u32::MAX as u64 - ROOT_ID;

/// Memory a streamed generation of `inodes` inodes takes, about: four
/// numbers of 4 bytes per directory (its subdirectories, its files, its
/// id, and its place in the order files are spread in), and 256 MiB for
/// the queues of pieces and a widest directory's records.
pub fn memory_needed(inodes: u64) -> u64 {
    let dirs = (inodes as f64 * 0.095) as u64;
    dirs.saturating_mul(16).saturating_add(256 << 20)
}

/// Refuses up front a streamed namespace too large to number (more than
/// [`MAX_INODES`]) or to plan in this machine's available memory
/// ([`memory_needed`]).
///
/// # Errors
/// [`SizeError::TooMany`] or [`SizeError::NoMemory`].
pub fn check_fits(inodes: u64) -> Result<(), SizeError> {
    if inodes > MAX_INODES {
        return Err(SizeError::TooMany {
            inodes,
            max: MAX_INODES,
        });
    }
    let need = memory_needed(inodes);
    match available_memory() {
        Some(available) if need > available => Err(SizeError::NoMemory {
            inodes,
            need,
            available,
        }),
        _ => Ok(()),
    }
}

/// Records a batch handed to the writer holds, at most.
const BATCH_RECORDS: usize = 8192;

/// What a streamed generation wrote.
#[derive(Clone, Debug)]
pub struct Generated {
    /// The namespace's counts.
    pub stats: Stats,
    /// Its digest, as a load of the image computes it.
    pub digest: Digest,
    /// The image written.
    pub summary: ImageSummary,
}

/// What the passes over directories in id order share.
struct Places<'a> {
    shape: &'a Shape,
    pieces: &'a [(Range<u32>, u64)],
    ids: &'a [u32],
    /// Per piece, the id of the first entry of its first subdirectory.
    first_entry: &'a [u64],
    threads: usize,
}

/// Appends the records of one directory: `(batch, number, id, id of its
/// first entry, entries)`.
type DirRecords<'f> = dyn Fn(&mut Encoded, u32, u64, u64, u64) + Sync + 'f;

impl Places<'_> {
    /// Writes the records `each` makes of every directory, in id order,
    /// into `w`'s open section.
    fn write<W: Write>(&self, w: &mut StreamWriter<W>, each: &DirRecords<'_>) -> io::Result<()> {
        ordered(
            self.pieces.len(),
            self.threads,
            |p, emit| {
                let mut batch = Encoded::default();
                let parents = self.pieces[p].0.clone();
                self.shape.dirs_in_id_order(
                    parents,
                    self.ids,
                    self.first_entry[p],
                    |c, id, base, n| {
                        each(&mut batch, c, id, base, n);
                        if batch.records.len() >= BATCH_RECORDS {
                            return emit(std::mem::take(&mut batch));
                        }
                        true
                    },
                );
                emit(batch);
            },
            |b| w.put(&b),
        )
    }
}

/// Writes the streamed (version 2) namespace of `spec` as an image to
/// `out`, laid out and stored as `opts` says, drawing on `threads` threads.
///
/// # Errors
/// `InvalidInput` for more than [`MAX_INODES`] inodes; the output's error.
pub fn write_generated<W: Write + Send>(
    spec: GenSpec,
    out: W,
    opts: &WriteOptions,
    threads: usize,
) -> io::Result<Generated> {
    if spec.inodes > MAX_INODES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} inodes: a streamed namespace holds at most {MAX_INODES}",
                spec.inodes
            ),
        ));
    }
    let shape = Shape::plan(spec);
    let pieces = shape.pieces();

    // Pass 1, in parallel: the blocks of each piece, whose ids and
    // generation stamps follow those before them.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .map_err(io::Error::other)?;
    let block_base: Vec<u64> = {
        use rayon::prelude::*;
        let counts: Vec<u64> = pool.install(|| {
            pieces
                .par_iter()
                .map(|(d, _)| shape.blocks(d.clone()))
                .collect()
        });
        counts
            .iter()
            .scan(0u64, |acc, &n| {
                let before = *acc;
                *acc += n;
                Some(before)
            })
            .collect()
    };

    // Pass 2, in parallel: what the sections hold, and every directory's
    // id. Each piece's subdirectories are numbered together: they take
    // their own slice of `ids`.
    let mut ids = vec![0u32; shape.dirs() as usize];
    ids[0] = u32::try_from(ROOT_ID).unwrap_or(u32::MAX);
    let mut slices = Vec::with_capacity(pieces.len());
    let mut rest = &mut ids[1..];
    for (dirs, _) in &pieces {
        let kids = shape.kids[dirs.start as usize]..shape.kids[dirs.end as usize];
        let (mine, more) = rest.split_at_mut((kids.end - kids.start) as usize);
        slices.push((mine, kids.start));
        rest = more;
    }
    let measured: Vec<Measured> = {
        use rayon::prelude::*;
        pool.install(|| {
            pieces
                .par_iter()
                .zip(&block_base)
                .zip(slices.into_par_iter())
                .map(|(((dirs, base), first_block), (ids, first))| {
                    shape.measure(dirs.clone(), *base, *first_block, ids, first)
                })
                .collect()
        })
    };
    let mut stats = Stats {
        inodes: 1,
        directories: 1,
        ..Stats::default()
    };
    let mut inode_size = Size::default();
    let mut used = 0u64;
    for m in &measured {
        stats.inodes += m.stats.inodes;
        stats.files += m.stats.files;
        stats.directories += m.stats.directories;
        stats.symlinks += m.stats.symlinks;
        stats.blocks += m.stats.blocks;
        stats.bytes += m.stats.bytes;
        inode_size = inode_size + m.inodes;
        used |= m.used;
    }
    drop(measured);
    let strings = candidates();
    let mut written_ids = vec![0u32; strings.len()];
    let mut in_use = Vec::new();
    for (i, s) in strings.iter().enumerate() {
        if used & (1 << i) != 0 {
            in_use.push(*s);
            written_ids[i] = u32::try_from(in_use.len()).unwrap_or(u32::MAX);
        }
    }
    let info = NsInfo {
        namespace_id: shape.namespace_id,
        creation_time: EPOCH_MS,
        last_block_id: (1 << 30) + stats.blocks,
        generation_stamp: if stats.blocks > 0 {
            1001 + stats.blocks
        } else {
            1000
        },
        last_inode_id: ROOT_ID + stats.inodes - 1,
        last_txid: stats.inodes,
    };

    let mut w = StreamWriter::new(out, opts, &info, stats.inodes, in_use.iter().copied())?;
    let mut digest = Digester::new(&info);

    // The root, then every piece's entries, in id order.
    let root = pb::Inode {
        id: ROOT_ID,
        r#type: pb::InodeType::Directory as i32,
        permission: Perm::new(0, 0, 0o755).0,
        mtime: EPOCH_MS,
        directory: Some(pb::DirectoryAttrs {
            ns_quota: -1,
            ds_quota: -1,
        }),
        ..pb::Inode::default()
    };
    let mut first = Encoded::default();
    first.put(ROOT_ID, &root);
    let mut canon = Vec::new();
    canon_inode(
        &mut canon,
        &CanonInode {
            id: ROOT_ID,
            parent: 0,
            name: b"",
            user: b"",
            group: b"",
            mode: 0o755,
            mtime: EPOCH_MS,
            attrs: Attrs::Directory {
                ns_quota: -1,
                ds_quota: -1,
            },
            extra: None,
        },
    );
    let root_size = Size {
        records: 1,
        bytes: first.bytes.len() as u64,
    };
    w.begin_inodes(Some(inode_size + root_size))?;
    w.put(&first)?;
    digest.update(&canon);
    let ids = &ids;
    ordered(
        pieces.len(),
        threads,
        |p, emit| {
            let (dirs, base) = &pieces[p];
            let mut enc = Encoder::new(
                written_ids.clone(),
                (1 << 30) + 1 + block_base[p],
                1001 + block_base[p],
            );
            let mut batch = Encoded::default();
            shape.walk(dirs.clone(), *base, |k, id, name, kind, _, d| {
                enc.fill(id, name, kind, d);
                batch.put(id, &enc.msg);
                enc.canon(u64::from(ids[k as usize]), kind, d);
                if batch.records.len() >= BATCH_RECORDS {
                    return emit((std::mem::take(&mut batch), std::mem::take(&mut enc.canon)));
                }
                true
            });
            emit((batch, enc.canon));
        },
        |(batch, canon)| {
            digest.update(&canon);
            w.put(&batch)
        },
    )?;

    // The directories in id order, in pieces of parents; the first entry
    // of each piece's first subdirectory comes from the pieces' bases.
    let first_entry: Vec<u64> = pieces
        .iter()
        .map(|(dirs, _)| {
            let c = shape.kids[dirs.start as usize];
            // The piece holding directory c starts at or before it.
            let at = pieces.partition_point(|(d, _)| d.end <= c);
            pieces.get(at).map_or(ROOT_ID + stats.inodes, |(d, b)| {
                b + (d.start..c).map(|k| shape.entries(k)).sum::<u64>()
            })
        })
        .collect();
    let places = Places {
        shape: &shape,
        pieces: &pieces,
        ids,
        first_entry: &first_entry,
        threads,
    };
    if w.begin_name_runs()? {
        let runs = |batch: &mut Encoded, c: u32, id: u64, base: u64, _: u64| {
            let mut kid_names = Vec::new();
            let mut names: Vec<u8> = Vec::new();
            let mut run: Vec<(Range<usize>, u64, pb::InodeType)> = Vec::new();
            let flush =
                |batch: &mut Encoded,
                 names: &mut Vec<u8>,
                 run: &mut Vec<(Range<usize>, u64, pb::InodeType)>| {
                    if !run.is_empty() {
                        let entries: Vec<RunEntry<'_>> = run
                            .iter()
                            .map(|(r, child, ty)| (&names[r.clone()], *child, *ty))
                            .collect();
                        batch.put_run(id, &entries);
                        run.clear();
                        names.clear();
                    }
                };
            shape.names(c, &mut kid_names, |pos, name, kind, _| {
                let ty = match kind {
                    0 => pb::InodeType::Directory,
                    1 => pb::InodeType::File,
                    _ => pb::InodeType::Symlink,
                };
                if opts.legacy_name_index {
                    batch.put_name_entry(id, name, base + pos, ty);
                    return;
                }
                run.push((names.len()..names.len() + name.len(), base + pos, ty));
                names.extend_from_slice(name);
                if run.len() == MAX_ENTRIES || names.len() >= TARGET_NAME_BYTES {
                    flush(batch, &mut names, &mut run);
                }
            });
            flush(batch, &mut names, &mut run);
        };
        places.write(&mut w, &runs)?;
    }

    let mut dir_size = Size::default();
    let mut base = ROOT_ID + 1;
    for k in 0..shape.dirs() {
        let n = shape.entries(k);
        if n > 0 {
            let id = u64::from(ids[k as usize]);
            let bytes = Encoded::dir_len(id, base..base + n);
            dir_size = dir_size + Size { records: 1, bytes };
        }
        base += n;
    }
    w.begin_dirs(Some(dir_size))?;
    let dirs = |batch: &mut Encoded, _: u32, id: u64, base: u64, n: u64| {
        if n > 0 {
            batch.put_dir(id, base..base + n);
        }
    };
    places.write(&mut w, &dirs)?;
    let summary = w.finish(None)?;
    Ok(Generated {
        stats,
        digest: digest.finish(),
        summary,
    })
}
