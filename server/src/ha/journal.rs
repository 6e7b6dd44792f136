//! The group's journal in etcd: one key per batch (`P/journal/<first
//! txid>`), whose value is the time the active committed it (8 bytes,
//! little-endian milliseconds since the Unix epoch) and then the batch's
//! journal records, framed as the store frames them (STORE.md, "Record":
//! each carries its txid and checksum).
//!
//! The active appends each group commit through [`EtcdJournal`], the
//! store's [`Replica`]: one transaction per batch (a group commit larger
//! than [`MAX_BATCH_RECORDS`] is cut into several, each on record
//! boundaries), which puts the batch only if the active's leadership key
//! still has the create revision it had when this member won it and the
//! batch's key does not exist yet. A member deposed (its lease expired
//! while it was paused, say) has its append refused, so it never
//! acknowledges a write after losing the leadership: that is the fencing.

use super::etcd::{created_at, get_op, put_op, Etcd, Kv};
use super::{HaError, Keys};
use nsimage_format::wire::read_varint;
use nsimage_store::replica::Replica;
use serde_json::Value;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Most record bytes in one batch's value (etcd refuses requests over
/// 1.5 MiB by default).
pub const MAX_BATCH_RECORDS: usize = 1 << 20;

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The active's appends, fenced by its leadership's create revision.
pub struct EtcdJournal {
    /// The cluster.
    pub etcd: Arc<Etcd>,
    /// The group's keys.
    pub keys: Keys,
    /// The create revision of the leadership key this member won.
    pub leader_revision: i64,
}

impl Replica for EtcdJournal {
    fn commit(&self, first: u64, _last: u64, records: &[u8]) -> Result<(), String> {
        for (at, chunk) in cut(first, records)? {
            if let Err(e) = self.append(at, chunk) {
                // Part of the group commit is in etcd: for its waiters the
                // outcome is not "certainly not committed".
                return Err(if at > first {
                    format!("txids {first} to {} committed, the rest not: {e}", at - 1)
                        .replace("fenced", "refused")
                } else {
                    e
                });
            }
        }
        Ok(())
    }
}

impl EtcdJournal {
    /// Appends the batch of records `chunk`, whose first txid is `at`.
    fn append(&self, at: u64, chunk: &[u8]) -> Result<(), String> {
        let key = self.keys.batch(at);
        let mut value = Vec::with_capacity(chunk.len().saturating_add(8));
        value.extend_from_slice(&now_ms().to_le_bytes());
        value.extend_from_slice(chunk);
        let (ok, answer) = self
            .etcd
            .txn(
                vec![
                    created_at(&self.keys.leader(), self.leader_revision),
                    created_at(&key, 0),
                ],
                vec![put_op(&key, &value, 0)],
                vec![get_op(&self.keys.leader()), get_op(&key)],
            )
            .map_err(|e| e.to_string())?;
        if !ok {
            refused(&answer, self.leader_revision, at, chunk_value(&value))?;
        }
        Ok(())
    }
}

/// The records of a batch's value (after its 8-byte stamp).
fn chunk_value(value: &[u8]) -> &[u8] {
    value.get(8..).unwrap_or_default()
}

/// Why an append's transaction did not succeed, from its failure branch's
/// reads of the leadership key and the batch's key: `Ok` when the batch
/// is there with these records (an earlier try of this same append,
/// retried on another endpoint after a timeout, was committed); "fenced"
/// when the leadership is no longer this member's (certainly not
/// committed); otherwise the txid is another's batch.
fn refused(answer: &Value, revision: i64, at: u64, records: &[u8]) -> Result<(), String> {
    let read = |i: usize| {
        super::etcd::kvs(&answer["responses"][i]["response_range"]["kvs"])
            .ok()
            .and_then(|v| v.into_iter().next())
    };
    let (leader, batch) = (read(0), read(1));
    if batch
        .as_ref()
        .is_some_and(|b| chunk_value(&b.value) == records)
    {
        return Ok(());
    }
    let ours = leader
        .as_ref()
        .is_some_and(|l| l.create_revision == revision);
    if !ours {
        return Err(format!(
            "fenced: this member no longer holds the leadership it won at etcd revision \
             {revision}; txid {at} is not committed"
        ));
    }
    Err(format!(
        "fenced: txid {at} is already another batch in etcd's journal; this one is not \
         committed"
    ))
}

/// `records` (txids from `first`) cut on record boundaries into pieces of
/// at most [`MAX_BATCH_RECORDS`] bytes, each with its first txid.
fn cut(first: u64, records: &[u8]) -> Result<Vec<(u64, &[u8])>, String> {
    let mut out = Vec::new();
    let (mut start, mut pos, mut txid, mut chunk_first) = (0usize, 0usize, first, first);
    for end in frame_ends(records)? {
        if end - start > MAX_BATCH_RECORDS && pos > start {
            out.push((chunk_first, &records[start..pos]));
            (start, chunk_first) = (pos, txid);
        }
        if end - start > MAX_BATCH_RECORDS {
            return Err(format!(
                "the record of txid {txid} ({} bytes) is larger than a batch in etcd may be",
                end - pos
            ));
        }
        pos = end;
        txid = txid.saturating_add(1);
    }
    if pos > start {
        out.push((chunk_first, &records[start..pos]));
    }
    Ok(out)
}

/// How many records `records` frames (each whole).
///
/// # Errors
/// A record that runs past the end.
pub fn count_records(records: &[u8]) -> Result<u64, String> {
    Ok(frame_ends(records)?.len() as u64)
}

/// Where each record framed in `records` ends (each whole, the last at
/// the end).
fn frame_ends(records: &[u8]) -> Result<Vec<usize>, String> {
    let (mut pos, mut ends) = (0usize, Vec::new());
    while pos < records.len() {
        let (len, width) = read_varint(&records[pos..]).ok_or("a record's length is unreadable")?;
        let len = usize::try_from(len).map_err(|_| "a record's length is too large")?;
        pos = pos
            .checked_add(width)
            .and_then(|p| p.checked_add(len))
            .filter(|&e| e <= records.len())
            .ok_or("a record runs past the batch")?;
        ends.push(pos);
    }
    Ok(ends)
}

/// One batch read back from etcd.
#[derive(Debug)]
pub struct Batch {
    /// The txid of its first record.
    pub first: u64,
    /// When the active committed it (milliseconds since the epoch).
    pub committed_ms: u64,
    /// Its records.
    pub records: Vec<u8>,
}

impl Batch {
    /// The batch a journal key holds.
    ///
    /// # Errors
    /// [`HaError::Corrupt`] for a key or value of another shape.
    pub fn of(keys: &Keys, kv: Kv) -> Result<Batch, HaError> {
        let name = String::from_utf8_lossy(&kv.key).into_owned();
        let first = keys.batch_first(&kv.key).ok_or_else(|| HaError::Corrupt {
            key: name.clone(),
            detail: "not a journal batch's key".into(),
        })?;
        let Some((stamp, _)) = kv.value.split_first_chunk::<8>() else {
            return Err(HaError::Corrupt {
                key: name,
                detail: format!("a batch of {} bytes (at least 8)", kv.value.len()),
            });
        };
        let committed_ms = u64::from_le_bytes(*stamp);
        let mut records = kv.value;
        records.drain(..8);
        Ok(Batch {
            first,
            committed_ms,
            records,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(n: usize) -> Vec<u8> {
        let mut v = Vec::new();
        nsimage_format::framing::put_frame(&mut v, &vec![7u8; n]);
        v
    }

    #[test]
    fn cuts_on_record_boundaries() {
        let mut all = Vec::new();
        for _ in 0..5 {
            all.extend(frame(400 << 10));
        }
        let pieces = cut(10, &all).unwrap();
        let firsts: Vec<u64> = pieces.iter().map(|p| p.0).collect();
        assert_eq!(firsts, vec![10, 12, 14]);
        assert_eq!(pieces.iter().map(|p| p.1.len()).sum::<usize>(), all.len());
        assert!(pieces.iter().all(|p| p.1.len() <= MAX_BATCH_RECORDS));
        assert!(cut(1, &frame(2 << 20)).is_err());
        assert!(cut(1, &all[..all.len() - 1]).is_err());
        assert!(cut(1, &[]).unwrap().is_empty());
        assert_eq!(count_records(&all), Ok(5));
        assert!(count_records(&all[..10]).is_err());
    }

    #[test]
    fn a_refused_append_tells_its_own_committed_batch_from_fencing() {
        use super::super::etcd::b64;
        let answer = |leader_rev: Option<i64>, batch: Option<&[u8]>| {
            let kv = |v: &[u8], rev: i64| {
                serde_json::json!([{ "key": b64(b"k"), "value": b64(v),
                                     "create_revision": rev.to_string() }])
            };
            let mut stamped = 9u64.to_le_bytes().to_vec();
            stamped.extend_from_slice(batch.unwrap_or_default());
            serde_json::json!({ "responses": [
                { "response_range": { "kvs": leader_rev.map(|r| kv(b"a", r)) } },
                { "response_range": { "kvs": batch.map(|_| kv(&stamped, 7)) } },
            ]})
        };
        // Our records there: an earlier try committed them.
        assert!(refused(&answer(Some(5), Some(b"recs")), 5, 10, b"recs").is_ok());
        // The leadership gone, or another's: certainly not committed.
        for a in [answer(None, None), answer(Some(6), None)] {
            let e = refused(&a, 5, 10, b"recs").unwrap_err();
            assert!(e.starts_with("fenced: this member no longer"), "{e}");
        }
        // Another batch at this txid.
        let e = refused(&answer(Some(5), Some(b"other")), 5, 10, b"recs").unwrap_err();
        assert!(e.starts_with("fenced: txid 10 is already"), "{e}");
    }

    #[test]
    fn batches_decode() {
        let keys = Keys::new("/g");
        let mut value = 5u64.to_le_bytes().to_vec();
        value.extend(frame(3));
        let b = Batch::of(
            &keys,
            Kv {
                key: keys.batch(9),
                value,
                ..Kv::default()
            },
        )
        .unwrap();
        assert_eq!((b.first, b.committed_ms, b.records.len()), (9, 5, 4));
        let short = Kv {
            key: keys.batch(9),
            value: vec![1, 2],
            ..Kv::default()
        };
        assert!(Batch::of(&keys, short).is_err());
    }
}
