//! The JSON-lines peer: a first line with the namespace counters, then one
//! line per inode in id order (names as strings when they are UTF-8), read
//! back line by line with serde_json.

use super::{info_fields, info_from, ExtraRow, PeerError, Rebuild, Row};
use nsimage_namespace::Namespace;
use nsimage_namespace::{Attrs, Block};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

#[derive(Serialize, Deserialize)]
struct Line {
    id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parent: Option<u64>,
    name: String,
    user: String,
    group: String,
    mode: u16,
    mtime: u64,
    kind: u8,
    #[serde(default, skip_serializing_if = "is_zero")]
    atime: u64,
    #[serde(default, skip_serializing_if = "is_zero16")]
    replication: u16,
    #[serde(default, skip_serializing_if = "is_zero")]
    block_size: u64,
    #[serde(default, skip_serializing_if = "is_zero8")]
    policy: u8,
    /// (id, generation stamp, length)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    blocks: Vec<(u64, u64, u64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    quota: Option<(i64, i64)>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    target: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    extra: Option<ExtraRow>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}
fn is_zero16(v: &u16) -> bool {
    *v == 0
}
fn is_zero8(v: &u8) -> bool {
    *v == 0
}

fn text(b: &[u8]) -> Result<String, PeerError> {
    String::from_utf8(b.to_vec())
        .map_err(|_| PeerError::Corrupt("JSON lines cannot hold a non-UTF-8 name".into()))
}

/// Writes `ns` as JSON lines.
pub fn export(ns: &Namespace, path: &Path) -> Result<u64, PeerError> {
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    serde_json::to_writer(&mut out, &info_fields(ns.info()))?;
    out.write_all(b"\n")?;
    for n in ns.iter() {
        let mut l = Line {
            id: n.id(),
            parent: n.parent(),
            name: text(n.name())?,
            user: text(n.user())?,
            group: text(n.group())?,
            mode: n.mode(),
            mtime: n.mtime(),
            kind: 0,
            atime: 0,
            replication: 0,
            block_size: 0,
            policy: 0,
            blocks: Vec::new(),
            quota: None,
            target: String::new(),
            extra: n.extra().map(|e| ExtraRow::of(ns, e)),
        };
        match n.attrs() {
            Attrs::File(f) => {
                l.kind = 1;
                l.atime = f.atime;
                l.replication = f.replication;
                l.block_size = f.preferred_block_size;
                l.policy = f.storage_policy;
                l.blocks = f
                    .blocks
                    .iter()
                    .map(|b| (b.id, b.generation_stamp, b.length))
                    .collect();
            }
            Attrs::Directory { ns_quota, ds_quota } => {
                l.kind = 2;
                l.quota = Some((ns_quota, ds_quota));
            }
            Attrs::Symlink { target } => {
                l.kind = 3;
                l.target = text(target)?;
            }
        }
        serde_json::to_writer(&mut out, &l)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(std::fs::metadata(path)?.len())
}

/// Reads a JSON-lines dump back into a namespace.
pub fn load(path: &Path) -> Result<Namespace, PeerError> {
    let mut rd = BufReader::with_capacity(1 << 20, std::fs::File::open(path)?);
    let mut line = String::new();
    rd.read_line(&mut line)?;
    let info: [u64; 6] = serde_json::from_str(&line)?;
    let mut rb = Rebuild::new(info_from(info), 0);
    let mut blocks: Vec<Block> = Vec::new();
    loop {
        line.clear();
        if rd.read_line(&mut line)? == 0 {
            break;
        }
        let l: Line = serde_json::from_str(&line)?;
        blocks.clear();
        blocks.extend(
            l.blocks
                .iter()
                .map(|&(id, generation_stamp, length)| Block {
                    id,
                    generation_stamp,
                    length,
                }),
        );
        let (ns_quota, ds_quota) = l.quota.unwrap_or((-1, -1));
        rb.push(
            Row {
                id: l.id,
                parent: l.parent,
                name: l.name.as_bytes(),
                user: l.user.as_bytes(),
                group: l.group.as_bytes(),
                mode: l.mode,
                mtime: l.mtime,
                kind: l.kind,
                atime: l.atime,
                replication: l.replication,
                block_size: l.block_size,
                policy: l.policy,
                blocks: &blocks,
                ns_quota,
                ds_quota,
                target: l.target.as_bytes(),
                extra: l.extra,
            },
            true,
        )?;
    }
    rb.finish_from_links()
}
