//! A small etcd v3 client over etcd's JSON gateway (`/v3/kv/range`,
//! `/v3/kv/txn`, `/v3/lease/*`, `/v3/watch`), blocking, through `ureq`.
//!
//! Why the gateway and not gRPC: etcd serves its v3 API as JSON on the
//! client port (every etcd since 3.4 at `/v3/`), so this needs neither
//! etcd's protos compiled (the `etcd-client` crate runs a system `protoc`,
//! which a fresh machine lacks) nor an HTTP/2 stack; a group commit is one
//! small POST. Keys and values travel base64-encoded; 64-bit integers come
//! back as JSON strings.
//!
//! Every call tries the endpoints in turn, from the last one that answered,
//! each within the request timeout: a member that is down or cut off from
//! its quorum costs one timeout, and a call fails (as
//! [`HaError::Unreachable`]) only once every endpoint failed.

use super::HaError;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Longest JSON answer read from etcd (a range is paged well below it).
const MAX_ANSWER_BYTES: u64 = 64 << 20;

/// One key-value pair as etcd returns it.
#[derive(Clone, Debug, Default)]
pub struct Kv {
    /// The key.
    pub key: Vec<u8>,
    /// The value.
    pub value: Vec<u8>,
    /// The revision that created the key (0: it does not exist).
    pub create_revision: i64,
    /// The revision of its last change.
    pub mod_revision: i64,
    /// The lease it is attached to (0: none).
    pub lease: i64,
}

/// A client of one etcd cluster.
pub struct Etcd {
    endpoints: Vec<String>,
    agent: ureq::Agent,
    timeout: Duration,
    /// The endpoint that answered last (tried first).
    good: AtomicUsize,
}

impl std::fmt::Debug for Etcd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Etcd")
            .field("endpoints", &self.endpoints)
            .finish_non_exhaustive()
    }
}

/// A key as the gateway takes it.
pub fn b64(bytes: &[u8]) -> String {
    B64.encode(bytes)
}

/// A 64-bit integer of an answer (a JSON string, or absent: 0).
fn int(v: &Value) -> i64 {
    match v {
        Value::String(s) => s.parse().unwrap_or(0),
        Value::Number(n) => n.as_i64().unwrap_or(0),
        _ => 0,
    }
}

/// Bytes of an answer (base64; absent: empty).
fn bytes(v: &Value) -> Result<Vec<u8>, HaError> {
    match v.as_str() {
        None => Ok(Vec::new()),
        Some(s) => B64
            .decode(s)
            .map_err(|e| HaError::Etcd(format!("an answer's bytes are not base64: {e}"))),
    }
}

/// The pairs of an answer's `kvs` list.
///
/// # Errors
/// Bytes that are not base64.
pub fn kvs(v: &Value) -> Result<Vec<Kv>, HaError> {
    let Some(list) = v.as_array() else {
        return Ok(Vec::new());
    };
    list.iter()
        .map(|kv| {
            Ok(Kv {
                key: bytes(&kv["key"])?,
                value: bytes(&kv["value"])?,
                create_revision: int(&kv["create_revision"]),
                mod_revision: int(&kv["mod_revision"]),
                lease: int(&kv["lease"]),
            })
        })
        .collect()
}

/// The end of the range of every key that starts with `prefix`.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// What a range read returned.
#[derive(Debug, Default)]
pub struct Range {
    /// The pairs, in key order.
    pub kvs: Vec<Kv>,
    /// The store's revision the read saw.
    pub revision: i64,
    /// More pairs lie past the limit.
    pub more: bool,
}

impl Etcd {
    /// A client of the cluster whose client URLs are `endpoints`
    /// (`http://host:port`), each call within `timeout` per endpoint.
    pub fn new(endpoints: Vec<String>, timeout: Duration) -> Etcd {
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(timeout)
            .timeout(timeout)
            .max_idle_connections_per_host(4)
            .build();
        Etcd {
            endpoints: endpoints
                .into_iter()
                .map(|e| e.trim_end_matches('/').to_string())
                .collect(),
            agent,
            timeout,
            good: AtomicUsize::new(0),
        }
    }

    /// The endpoints, as given.
    pub fn endpoints(&self) -> &[String] {
        &self.endpoints
    }

    /// POSTs `body` to `path` on the first endpoint that answers.
    fn call(&self, path: &str, body: &Value) -> Result<Value, HaError> {
        let n = self.endpoints.len();
        let start = self.good.load(Ordering::Relaxed);
        let mut why = Vec::new();
        for i in 0..n {
            let at = (start + i) % n;
            let url = format!("{}{path}", self.endpoints[at]);
            match self
                .agent
                .post(&url)
                .set("content-type", "application/json")
                .send_string(&body.to_string())
            {
                Ok(resp) => {
                    let mut text = String::new();
                    std::io::Read::read_to_string(
                        &mut std::io::Read::take(resp.into_reader(), MAX_ANSWER_BYTES),
                        &mut text,
                    )
                    .map_err(|e| HaError::Unreachable(format!("{url}: {e}")))?;
                    self.good.store(at, Ordering::Relaxed);
                    return serde_json::from_str(&text)
                        .map_err(|e| HaError::Etcd(format!("{url}: not JSON: {e}")));
                }
                Err(ureq::Error::Status(code, resp)) => {
                    let text = resp.into_string().unwrap_or_default();
                    // A member without a leader (lost quorum, or an
                    // election) answers an error: the next may have one.
                    why.push(format!("{url}: {code} {}", text.trim()));
                }
                Err(e) => why.push(format!("{url}: {e}")),
            }
        }
        Err(HaError::Unreachable(why.join("; ")))
    }

    /// The pairs with keys in `[key, end)` (`end` `None`: `key` alone),
    /// at most `limit` (0: all), with or without their values.
    ///
    /// # Errors
    /// [`HaError::Unreachable`] when no endpoint answers.
    pub fn range(
        &self,
        key: &[u8],
        end: Option<&[u8]>,
        limit: i64,
        keys_only: bool,
    ) -> Result<Range, HaError> {
        self.range_ordered(key, end, limit, keys_only, false)
    }

    /// [`range`](Self::range), the keys in descending order when
    /// `descending` (the last `limit` of the range).
    ///
    /// # Errors
    /// As [`range`](Self::range).
    pub fn range_ordered(
        &self,
        key: &[u8],
        end: Option<&[u8]>,
        limit: i64,
        keys_only: bool,
        descending: bool,
    ) -> Result<Range, HaError> {
        let mut body = json!({ "key": b64(key), "limit": limit.to_string() });
        if descending {
            body["sort_order"] = Value::String("DESCEND".into());
            body["sort_target"] = Value::String("KEY".into());
        }
        if let Some(e) = end {
            body["range_end"] = Value::String(b64(e));
        }
        if keys_only {
            body["keys_only"] = Value::Bool(true);
        }
        let v = self.call("/v3/kv/range", &body)?;
        Ok(Range {
            kvs: kvs(&v["kvs"])?,
            revision: int(&v["header"]["revision"]),
            more: v["more"].as_bool().unwrap_or(false),
        })
    }

    /// One key's pair, if it exists.
    ///
    /// # Errors
    /// As [`range`](Self::range).
    pub fn get(&self, key: &[u8]) -> Result<Option<Kv>, HaError> {
        Ok(self.range(key, None, 1, false)?.kvs.into_iter().next())
    }

    /// A transaction: `success` runs when every `compare` holds, else
    /// `failure`. Returns whether it succeeded, and the answers of what
    /// ran.
    ///
    /// # Errors
    /// [`HaError::Unreachable`]: the transaction may or may not have been
    /// committed.
    pub fn txn(
        &self,
        compare: Vec<Value>,
        success: Vec<Value>,
        failure: Vec<Value>,
    ) -> Result<(bool, Value), HaError> {
        let body = json!({ "compare": compare, "success": success, "failure": failure });
        let v = self.call("/v3/kv/txn", &body)?;
        let ok = v["succeeded"].as_bool().unwrap_or(false);
        Ok((ok, v))
    }

    /// Grants a lease of `ttl`; returns its id.
    ///
    /// # Errors
    /// [`HaError::Unreachable`].
    pub fn grant(&self, ttl: Duration) -> Result<i64, HaError> {
        let secs = ttl.as_secs().max(1);
        let v = self.call("/v3/lease/grant", &json!({ "TTL": secs.to_string() }))?;
        match int(&v["ID"]) {
            0 => Err(HaError::Etcd(format!("no lease granted: {v}"))),
            id => Ok(id),
        }
    }

    /// Renews lease `id`; returns the seconds it has left (0: it had
    /// expired, and is gone).
    ///
    /// # Errors
    /// [`HaError::Unreachable`].
    pub fn keepalive(&self, id: i64) -> Result<i64, HaError> {
        let v = self.call("/v3/lease/keepalive", &json!({ "ID": id.to_string() }))?;
        Ok(int(&v["result"]["TTL"]))
    }

    /// Revokes lease `id` (its keys are deleted).
    ///
    /// # Errors
    /// [`HaError::Unreachable`].
    pub fn revoke(&self, id: i64) -> Result<(), HaError> {
        self.call("/v3/lease/revoke", &json!({ "ID": id.to_string() }))
            .map(drop)
    }

    /// Puts `value` at `key`, attached to `lease` (0: none).
    ///
    /// # Errors
    /// [`HaError::Unreachable`].
    pub fn put(&self, key: &[u8], value: &[u8], lease: i64) -> Result<(), HaError> {
        let mut body = json!({ "key": b64(key), "value": b64(value) });
        if lease != 0 {
            body["lease"] = Value::String(lease.to_string());
        }
        self.call("/v3/kv/put", &body).map(drop)
    }

    /// Compacts the key-value store's history below `revision`.
    ///
    /// # Errors
    /// [`HaError::Unreachable`].
    pub fn compact(&self, revision: i64) -> Result<(), HaError> {
        self.call(
            "/v3/kv/compaction",
            &json!({ "revision": revision.to_string() }),
        )
        .map(drop)
    }

    /// Watches the keys in `[key, end)` from `start_revision`, giving each
    /// answer's put pairs (deletions are left out) to `on_events` until it returns false, the
    /// stream ends, or nothing arrives within `idle` (then `Ok`).
    ///
    /// # Errors
    /// [`HaError::Unreachable`] when no endpoint takes the watch;
    /// [`HaError::Etcd`] when the revision was compacted away.
    pub fn watch(
        &self,
        key: &[u8],
        end: &[u8],
        start_revision: i64,
        idle: Duration,
        mut on_events: impl FnMut(Vec<Kv>) -> Result<bool, HaError>,
    ) -> Result<(), HaError> {
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(self.timeout)
            .timeout_read(idle)
            .build();
        let body = json!({ "create_request": {
            "key": b64(key), "range_end": b64(end),
            "start_revision": start_revision.to_string(),
        }});
        let at = self.good.load(Ordering::Relaxed) % self.endpoints.len().max(1);
        let url = format!(
            "{}/v3/watch",
            self.endpoints.get(at).map_or("", String::as_str)
        );
        let resp = agent
            .post(&url)
            .set("content-type", "application/json")
            .send_string(&body.to_string())
            .map_err(|e| HaError::Unreachable(format!("{url}: {e}")))?;
        let mut lines = BufReader::new(resp.into_reader());
        let mut line = String::new();
        loop {
            line.clear();
            match std::io::Read::take(&mut lines, MAX_ANSWER_BYTES).read_line(&mut line) {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                // Nothing within `idle`, or the connection went.
                Err(_) => return Ok(()),
            }
            let v: Value = serde_json::from_str(line.trim())
                .map_err(|e| HaError::Etcd(format!("{url}: a watch answer is not JSON: {e}")))?;
            let r = &v["result"];
            if int(&r["compact_revision"]) != 0 {
                return Err(HaError::Etcd(format!(
                    "{url}: revision {start_revision} was compacted"
                )));
            }
            let events = r["events"].as_array().cloned().unwrap_or_default();
            if events.is_empty() {
                continue;
            }
            // Deletions (the journal's trim) carry no value: skipped.
            let changed = events
                .iter()
                .filter(|e| e["type"].as_str() != Some("DELETE"))
                .map(|e| {
                    let one = kvs(&Value::Array(vec![e["kv"].clone()]))?;
                    Ok(one.into_iter().next().unwrap_or_default())
                })
                .collect::<Result<Vec<_>, HaError>>()?;
            if !on_events(changed)? {
                return Ok(());
            }
        }
    }
}

/// The store's revision an answer's header names (0: none).
pub fn revision_of(answer: &Value) -> i64 {
    int(&answer["header"]["revision"])
}

/// A compare: `key`'s create revision equals `rev` (0: it does not
/// exist).
pub fn created_at(key: &[u8], rev: i64) -> Value {
    json!({ "key": b64(key), "target": "CREATE", "result": "EQUAL",
            "create_revision": rev.to_string() })
}

/// A request of a transaction: put `value` at `key` (with `lease`, 0:
/// none).
pub fn put_op(key: &[u8], value: &[u8], lease: i64) -> Value {
    let mut p = json!({ "key": b64(key), "value": b64(value) });
    if lease != 0 {
        p["lease"] = Value::String(lease.to_string());
    }
    json!({ "request_put": p })
}

/// A request of a transaction: read `key`.
pub fn get_op(key: &[u8]) -> Value {
    json!({ "request_range": { "key": b64(key) } })
}

/// A request of a transaction: delete `key`.
pub fn delete_key_op(key: &[u8]) -> Value {
    json!({ "request_delete_range": { "key": b64(key) } })
}

/// A request of a transaction: delete the keys in `[key, end)`.
pub fn delete_op(key: &[u8], end: &[u8]) -> Value {
    json!({ "request_delete_range": { "key": b64(key), "range_end": b64(end) } })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_ends() {
        assert_eq!(prefix_end(b"/a/"), b"/a0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff"), vec![0]);
    }

    #[test]
    fn answers_decode() {
        let v = json!([{ "key": b64(b"k"), "value": b64(b"v"),
                         "create_revision": "7", "mod_revision": "9" }]);
        let got = kvs(&v).unwrap();
        assert_eq!(got[0].key, b"k");
        assert_eq!(got[0].value, b"v");
        assert_eq!(
            (got[0].create_revision, got[0].mod_revision, got[0].lease),
            (7, 9, 0)
        );
        assert!(kvs(&json!([{ "key": "not base64!" }])).is_err());
    }
}
