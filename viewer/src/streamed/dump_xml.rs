//! XML from a streamed image: the three passes of `crate::dump`'s `xml.rs`
//! without the namespace. `INodeSection` is the INODE pieces formatted on
//! the pool and written in file order, as the other formats are;
//! `INodeDirectorySection`
//! is INODE_DIR's lists read in file order on this thread (a directory
//! Hadoop cut into consecutive entries written as one element), which the
//! caller has checked are in Hadoop's order
//! ([`Skeleton::lists_in_hadoop_order`]), formatted on the pool a batch
//! of lists at a time; `FileUnderConstructionSection` is the text the
//! first pass made for the files under construction it met, kept per
//! piece up to [`UC_TEXT`] bytes, past which the INODE pieces are read a
//! second time for them instead (their paths need their names, which the
//! skeleton does not keep).

use super::write_in_order;
use crate::dump::formatter::{Formatter, Head};
use crate::dump::row::{Row, Streamed};
use crate::dump::scratch::Scratch;
use crate::dump::xml::{directory, under_construction, Xml};
use crate::dump::DumpStats;
use crate::error::ViewError;
use nsimage_loader::skeleton::Skeleton;
use nsimage_loader::Streamable;
use rayon::prelude::*;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Children in a batch of directory lists formatted at once.
const DIR_BATCH: usize = 1 << 18;

/// Text of `FileUnderConstructionSection` kept from the first pass.
const UC_TEXT: usize = 32 << 20;

/// A piece's index and text.
type PieceText = (usize, Vec<u8>);

/// Writes `src` as XML to `out`, adding to `stats`.
pub(crate) fn dump(
    xml: &Xml,
    skeleton: &Skeleton,
    src: &Streamable,
    pool: &rayon::ThreadPool,
    out: &mut (dyn Write + Send),
    out_name: &Path,
    stats: &mut DumpStats,
) -> Result<(), ViewError> {
    let io = |source: std::io::Error| ViewError::Io {
        path: out_name.to_path_buf(),
        source,
    };
    let head = Head {
        info: &skeleton.info,
        inodes: skeleton.inode_count(),
    };
    let mut text = Vec::new();
    let put = |text: &mut Vec<u8>, stats: &mut DumpStats, out: &mut (dyn Write + Send)| {
        stats.bytes += text.len() as u64;
        let r = out.write_all(text);
        text.clear();
        r.map_err(io)
    };
    xml.begin(&head, 0, &mut text);
    put(&mut text, stats, out)?;
    // The files under construction met: their text, per piece, while it
    // stays under UC_TEXT.
    let uc_count = AtomicU64::new(0);
    let uc_text: Mutex<(usize, Vec<PieceText>)> = Mutex::new((0, Vec::new()));
    let written = write_in_order(
        skeleton,
        src,
        pool,
        out,
        out_name,
        Scratch::new,
        |(work, scratch), i, buf| {
            let mut n = 0u64;
            let mut uc = Vec::new();
            let rules = skeleton.for_each_in_piece(src, i, work, |node, parent, _| {
                let row = Streamed::new(node, parent, skeleton);
                xml.inode(0, &Row::Stream(&row), scratch, buf);
                if under_construction(&Row::Stream(&row), scratch, &mut uc) {
                    uc_count.fetch_add(1, Ordering::Relaxed);
                }
                n += 1;
                Ok(())
            })?;
            if !uc.is_empty() {
                if let Ok(mut kept) = uc_text.lock() {
                    kept.0 = kept.0.saturating_add(uc.len());
                    if kept.0 <= UC_TEXT {
                        kept.1.push((i, uc));
                    } else {
                        kept.1 = Vec::new();
                    }
                }
            }
            Ok((n, rules))
        },
    )?;
    stats.bytes += written.bytes;
    stats.rows += written.rows;
    xml.end(0, &mut text);
    xml.begin(&head, 1, &mut text);
    put(&mut text, stats, out)?;
    // The lists in batches of about DIR_BATCH children, a directory Hadoop
    // cut into consecutive entries made one; each batch formatted on the
    // pool, in order.
    let mut batch: Vec<(u64, Vec<u64>)> = Vec::new();
    let mut kids_in_batch = 0usize;
    let flush = |batch: &mut Vec<(u64, Vec<u64>)>,
                 stats: &mut DumpStats,
                 out: &mut (dyn Write + Send)|
     -> Result<(), ViewError> {
        let threads = pool.current_num_threads().max(1);
        let per = batch.len().div_ceil(threads * 4).max(1);
        let parts: Vec<Vec<u8>> = pool.install(|| {
            batch
                .par_chunks(per)
                .map(|lists| {
                    let mut t = Vec::new();
                    for (p, kids) in lists {
                        directory(*p, kids.iter().copied(), &mut t);
                    }
                    t
                })
                .collect()
        });
        batch.clear();
        for mut t in parts {
            put(&mut t, stats, out)?;
        }
        Ok(())
    };
    skeleton.for_each_dir_entry(src, |parent, kids| -> Result<(), ViewError> {
        match batch.last_mut() {
            Some((p, list)) if *p == parent => list.extend_from_slice(kids),
            _ => {
                if kids_in_batch >= DIR_BATCH {
                    flush(&mut batch, stats, out)?;
                    kids_in_batch = 0;
                }
                batch.push((parent, kids.to_vec()));
            }
        }
        kids_in_batch = kids_in_batch.saturating_add(kids.len());
        Ok(())
    })?;
    flush(&mut batch, stats, out)?;
    xml.end(1, &mut text);
    xml.begin(&head, 2, &mut text);
    put(&mut text, stats, out)?;
    let (kept_bytes, mut kept) = uc_text.into_inner().unwrap_or_default();
    if kept_bytes <= UC_TEXT {
        kept.sort_by_key(|k| k.0);
        for (_, mut t) in kept {
            put(&mut t, stats, out)?;
        }
    } else if uc_count.load(Ordering::Relaxed) > 0 {
        let written = write_in_order(
            skeleton,
            src,
            pool,
            out,
            out_name,
            Scratch::new,
            |(work, scratch), i, buf| {
                let rules = skeleton.for_each_in_piece(src, i, work, |node, parent, _| {
                    let row = Streamed::new(node, parent, skeleton);
                    under_construction(&Row::Stream(&row), scratch, buf);
                    Ok(())
                })?;
                Ok((0, rules))
            },
        )?;
        stats.bytes += written.bytes;
    }
    xml.end(2, &mut text);
    put(&mut text, stats, out)?;
    out.flush().map_err(io)?;
    Ok(())
}
