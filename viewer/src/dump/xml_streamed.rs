//! XML from a streamed image: the three passes of `xml.rs` without the
//! namespace. `INodeSection` is the INODE pieces formatted on the pool and
//! written in file order, as the other formats are; `INodeDirectorySection`
//! is INODE_DIR's lists read in file order on this thread (a directory
//! Hadoop cut into consecutive entries written as one element), which the
//! caller has checked are in Hadoop's order
//! ([`Skeleton::lists_in_hadoop_order`]); `FileUnderConstructionSection`
//! reads the INODE pieces again for the files under construction, only
//! when the first pass met any (their paths need their parents' paths,
//! which the skeleton gives, and their names, which it does not keep).

use super::formatter::{Formatter, Head};
use super::row::{Row, Streamed};
use super::scratch::Scratch;
use super::xml::{directory, under_construction, Xml};
use super::DumpStats;
use crate::error::ViewError;
use crate::streamed::write_in_order;
use nsimage_loader::skeleton::Skeleton;
use nsimage_loader::Streamable;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Text of `INodeDirectorySection` held before it is written.
const DIR_TEXT: usize = 1 << 20;

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
    let under_construction_seen = AtomicU64::new(0);
    let written = write_in_order(
        skeleton,
        src,
        pool,
        out,
        out_name,
        Scratch::new,
        |(work, scratch), i, buf| {
            let mut n = 0u64;
            let rules = skeleton.for_each_in_piece(src, i, work, |node, parent, _| {
                let row = Streamed::new(node, parent, skeleton);
                xml.inode(0, &Row::Stream(&row), scratch, buf);
                if row
                    .extra
                    .as_ref()
                    .is_some_and(|e| e.under_construction.is_some())
                {
                    under_construction_seen.fetch_add(1, Ordering::Relaxed);
                }
                n += 1;
                Ok(())
            })?;
            Ok((n, rules))
        },
    )?;
    stats.bytes += written.bytes;
    stats.rows += written.rows;
    xml.end(0, &mut text);
    xml.begin(&head, 1, &mut text);
    // One directory's list at a time (Hadoop may cut it into consecutive
    // entries).
    let mut dir: Option<(u64, Vec<u64>)> = None;
    skeleton.for_each_dir_entry(src, |parent, kids| -> Result<(), ViewError> {
        match &mut dir {
            Some((p, list)) if *p == parent => list.extend_from_slice(kids),
            _ => {
                if let Some((p, list)) = dir.take() {
                    directory(p, list.into_iter(), &mut text);
                }
                dir = Some((parent, kids.to_vec()));
            }
        }
        if text.len() >= DIR_TEXT {
            put(&mut text, stats, out)?;
        }
        Ok(())
    })?;
    if let Some((p, list)) = dir.take() {
        directory(p, list.into_iter(), &mut text);
    }
    xml.end(1, &mut text);
    xml.begin(&head, 2, &mut text);
    put(&mut text, stats, out)?;
    if under_construction_seen.load(Ordering::Relaxed) > 0 {
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
