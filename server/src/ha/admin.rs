//! What an operator asks a group, from etcd alone (`nsimage ha status`,
//! `nsimage ha transfer`, as `hdfs haadmin -getAllServiceState` and
//! `-failover`): who is active, each member's record, where the journal
//! in etcd begins and how many batches it holds; and a handover to a
//! named standby.

use super::etcd::{prefix_end, put_op, Etcd};
use super::{HaConfig, HaError, Keys};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The group's state as etcd holds it: `leader`, `members` (each
/// member's record: id, url, role, txid, checkpoint_txid, lag_ms, at_ms),
/// `journal_batches`, `trimmed`, `namespace_id`.
///
/// # Errors
/// etcd unreachable.
pub fn group_status(cfg: &HaConfig) -> Result<Value, HaError> {
    let etcd = Etcd::new(cfg.endpoints.clone(), cfg.etcd_timeout);
    let keys = Keys::new(&cfg.prefix);
    let text =
        |kv: Option<super::etcd::Kv>| kv.map(|kv| String::from_utf8_lossy(&kv.value).into_owned());
    let leader = text(etcd.get(&keys.leader())?);
    let meta: Value = text(etcd.get(&keys.meta())?)
        .and_then(|m| serde_json::from_str(&m).ok())
        .unwrap_or(Value::Null);
    let trimmed = trimmed(&etcd, &keys)?;
    let members = member_records(&etcd, &keys)?;
    let journal = keys.journal_dir();
    let batches = etcd
        .range(&journal, Some(&prefix_end(&journal)), 0, true)?
        .kvs
        .len();
    Ok(json!({
        "prefix": cfg.prefix,
        "leader": leader,
        "namespace_id": meta["namespace_id"],
        "trimmed": trimmed,
        "journal_batches": batches,
        "members": members,
    }))
}

/// The members' records (those that are not JSON left out).
///
/// # Errors
/// etcd unreachable.
pub fn member_records(etcd: &Etcd, keys: &Keys) -> Result<Vec<Value>, HaError> {
    let dir = keys.members_dir();
    Ok(etcd
        .range(&dir, Some(&prefix_end(&dir)), 0, false)?
        .kvs
        .iter()
        .filter_map(|kv| serde_json::from_slice(&kv.value).ok())
        .collect())
}

/// Where etcd's journal begins (`P/trimmed`; `None` before the first
/// member's start, or when it is not a number).
///
/// # Errors
/// etcd unreachable.
pub fn trimmed(etcd: &Etcd, keys: &Keys) -> Result<Option<u64>, HaError> {
    Ok(etcd
        .get(&keys.trimmed())?
        .and_then(|kv| String::from_utf8(kv.value).ok())
        .and_then(|t| t.parse().ok()))
}

/// Hands the leadership to standby `to`: asks the active (a key it
/// watches, on a lease of `wait`), which stops taking writes, lets `to`
/// apply everything and steps down; `to` alone campaigns meanwhile.
/// Returns the seconds until `to` was active.
///
/// # Errors
/// [`HaError::Mismatch`] when `to` is not a standby of the group, or was
/// not active within `wait`; etcd unreachable.
pub fn transfer(cfg: &HaConfig, to: &str, wait: Duration) -> Result<f64, HaError> {
    let started = Instant::now();
    let etcd = Etcd::new(cfg.endpoints.clone(), cfg.etcd_timeout);
    let keys = Keys::new(&cfg.prefix);
    let status = group_status(cfg)?;
    if status["leader"].as_str() == Some(to) {
        return Ok(0.0);
    }
    let known = status["members"]
        .as_array()
        .is_some_and(|ms| ms.iter().any(|m| m["id"].as_str() == Some(to)));
    if !known {
        return Err(HaError::Mismatch(format!(
            "{to} is not a member of the group under {} (see `nsimage ha status`)",
            cfg.prefix
        )));
    }
    let lease = etcd.grant(wait.max(Duration::from_secs(2)))?;
    etcd.txn(
        vec![],
        vec![put_op(&keys.transfer(), to.as_bytes(), lease)],
        vec![],
    )?;
    let result = loop {
        let leader = etcd
            .get(&keys.leader())?
            .map(|kv| String::from_utf8_lossy(&kv.value).into_owned());
        if leader.as_deref() == Some(to) {
            break Ok(started.elapsed().as_secs_f64());
        }
        if started.elapsed() > wait {
            break Err(HaError::Mismatch(format!(
                "{to} was not active within {wait:?} (the leader is {})",
                leader.unwrap_or_else(|| "nobody".into())
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = etcd.revoke(lease);
    result
}
