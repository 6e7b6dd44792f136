//! The SQLite peer: one row per inode and one per block, read back with
//! plain SELECTs ordered by key (names as BLOBs, so any bytes round-trip).

use super::{info_fields, info_from, ExtraRow, PeerError, Rebuild, Row};
use nsimage_namespace::Namespace;
use nsimage_namespace::{Attrs, Block};
use rusqlite::{params, Connection};
use std::path::Path;

const SCHEMA: &str = "
CREATE TABLE info (k INTEGER PRIMARY KEY, v INTEGER NOT NULL);
CREATE TABLE inodes (
    id INTEGER PRIMARY KEY, parent INTEGER, name BLOB NOT NULL, kind INTEGER NOT NULL,
    user BLOB NOT NULL, grp BLOB NOT NULL, mode INTEGER NOT NULL, mtime INTEGER NOT NULL,
    atime INTEGER, replication INTEGER, block_size INTEGER, policy INTEGER,
    ns_quota INTEGER, ds_quota INTEGER, target BLOB, extra TEXT);
CREATE INDEX inodes_by_parent ON inodes (parent, name);
CREATE TABLE blocks (
    inode INTEGER NOT NULL, idx INTEGER NOT NULL, id INTEGER NOT NULL, gs INTEGER NOT NULL,
    len INTEGER NOT NULL, PRIMARY KEY (inode, idx)) WITHOUT ROWID;
";

/// Writes `ns` to a new SQLite database at `path`.
pub fn export(ns: &Namespace, path: &Path) -> Result<u64, PeerError> {
    let _ = std::fs::remove_file(path);
    let mut db = Connection::open(path)?;
    db.execute_batch("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;")?;
    db.execute_batch(SCHEMA)?;
    let tx = db.transaction()?;
    {
        let mut info = tx.prepare("INSERT INTO info VALUES (?1, ?2)")?;
        for (k, v) in info_fields(ns.info()).into_iter().enumerate() {
            info.execute(params![k as i64, v as i64])?;
        }
        let mut ins = tx.prepare(
            "INSERT INTO inodes VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
        )?;
        let mut blk = tx.prepare("INSERT INTO blocks VALUES (?1, ?2, ?3, ?4, ?5)")?;
        for n in ns.iter() {
            let (kind, atime, repl, bs, policy, nq, dq) = match n.attrs() {
                Attrs::File(f) => (
                    1,
                    Some(f.atime as i64),
                    Some(f.replication),
                    Some(f.preferred_block_size as i64),
                    Some(f.storage_policy),
                    None,
                    None,
                ),
                Attrs::Directory { ns_quota, ds_quota } => {
                    (2, None, None, None, None, Some(ns_quota), Some(ds_quota))
                }
                Attrs::Symlink { .. } => (3, None, None, None, None, None, None),
            };
            let extra = n
                .extra()
                .map(|e| serde_json::to_string(&ExtraRow::of(ns, e)))
                .transpose()?;
            ins.execute(params![
                n.id() as i64,
                n.parent().map(|p| p as i64),
                n.name(),
                kind,
                n.user(),
                n.group(),
                n.mode(),
                n.mtime() as i64,
                atime,
                repl,
                bs,
                policy,
                nq,
                dq,
                n.symlink_target(),
                extra,
            ])?;
            for (i, b) in n.blocks().iter().enumerate() {
                blk.execute(params![
                    n.id() as i64,
                    i as i64,
                    b.id as i64,
                    b.generation_stamp as i64,
                    b.length as i64
                ])?;
            }
        }
    }
    tx.commit()?;
    drop(db);
    Ok(std::fs::metadata(path)?.len())
}

/// Reads a database written by [`export`] back into a namespace.
pub fn load(path: &Path) -> Result<Namespace, PeerError> {
    let db = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut f = [0u64; 6];
    {
        let mut q = db.prepare("SELECT k, v FROM info ORDER BY k")?;
        let mut rows = q.query([])?;
        while let Some(r) = rows.next()? {
            let k: i64 = r.get(0)?;
            if let Some(slot) = f.get_mut(k as usize) {
                *slot = r.get::<_, i64>(1)? as u64;
            }
        }
    }
    let count: i64 = db.query_row("SELECT count(*) FROM inodes", [], |r| r.get(0))?;
    let mut rb = Rebuild::new(info_from(f), count.max(0) as usize);
    let mut q = db.prepare(
        "SELECT id, parent, name, kind, user, grp, mode, mtime, atime, replication, block_size, policy,
                ns_quota, ds_quota, target, extra FROM inodes ORDER BY id",
    )?;
    let mut bq = db.prepare("SELECT inode, id, gs, len FROM blocks ORDER BY inode, idx")?;
    let mut brows = bq.query([])?;
    let mut pending: Option<(u64, Block)> = None;
    let mut blocks: Vec<Block> = Vec::new();
    let mut rows = q.query([])?;
    while let Some(r) = rows.next()? {
        let id = r.get::<_, i64>(0)? as u64;
        // Merge-join the blocks, both sides in inode order.
        blocks.clear();
        loop {
            if pending.is_none() {
                if let Some(b) = brows.next()? {
                    pending = Some((
                        b.get::<_, i64>(0)? as u64,
                        Block {
                            id: b.get::<_, i64>(1)? as u64,
                            generation_stamp: b.get::<_, i64>(2)? as u64,
                            length: b.get::<_, i64>(3)? as u64,
                        },
                    ));
                }
            }
            match pending {
                Some((owner, b)) if owner == id => {
                    blocks.push(b);
                    pending = None;
                }
                _ => break,
            }
        }
        let name: Vec<u8> = r.get(2)?;
        let user: Vec<u8> = r.get(4)?;
        let group: Vec<u8> = r.get(5)?;
        let target: Option<Vec<u8>> = r.get(14)?;
        let extra: Option<String> = r.get(15)?;
        let extra = extra
            .map(|e| serde_json::from_str::<ExtraRow>(&e))
            .transpose()?;
        rb.push(
            Row {
                id,
                parent: None,
                name: &name,
                user: &user,
                group: &group,
                mode: r.get(6)?,
                mtime: r.get::<_, i64>(7)? as u64,
                kind: r.get(3)?,
                atime: r.get::<_, Option<i64>>(8)?.unwrap_or(0) as u64,
                replication: r.get::<_, Option<u16>>(9)?.unwrap_or(0),
                block_size: r.get::<_, Option<i64>>(10)?.unwrap_or(0) as u64,
                policy: r.get::<_, Option<u8>>(11)?.unwrap_or(0),
                blocks: &blocks,
                ns_quota: r.get::<_, Option<i64>>(12)?.unwrap_or(-1),
                ds_quota: r.get::<_, Option<i64>>(13)?.unwrap_or(-1),
                target: target.as_deref().unwrap_or_default(),
                extra,
            },
            false,
        )?;
    }
    // Child lists straight from the (parent, name) index.
    let mut cq =
        db.prepare("SELECT parent, id FROM inodes WHERE parent IS NOT NULL ORDER BY parent, name")?;
    let mut crow = cq.query([])?;
    let mut dirs: Vec<(u64, Vec<u64>)> = Vec::new();
    while let Some(r) = crow.next()? {
        let (p, c) = (r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64);
        match dirs.last_mut() {
            Some((q, kids)) if *q == p => kids.push(c),
            _ => dirs.push((p, vec![c])),
        }
    }
    rb.finish(dirs.into_iter())
}
