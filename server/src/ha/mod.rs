//! High availability on etcd: the writable servers of one namespace
//! (`serve STORE --writable --ha-etcd URLS --ha-id NAME`) share an etcd
//! cluster, which holds the group's journal and elects the one **active**
//! member; the others are **standbys** that apply the journal as it grows,
//! take the checkpoints, and take over when the active's lease expires.
//! The key layout, the fencing and what is authoritative when:
//! `format-spec/STORE.md`, "High availability".
//!
//! | file | what it holds |
//! |------|---------------|
//! | `mod.rs` | this page: [`HaConfig`], [`Role`], [`HaError`], the [`Keys`] of a group |
//! | `admin.rs` | [`admin`]: an operator's questions to etcd (the group's state; a handover to a named standby) |
//! | `etcd.rs` | [`etcd`]: the etcd v3 client (JSON gateway, blocking) |
//! | `journal.rs` | [`journal`]: the group's journal in etcd: the active's fenced appends (the store's [`nsimage_store::replica::Replica`]) and the batches a standby applies |
//! | `member.rs` | [`member`]: one member: its role, election, lease, the standby's tailing, promotion and demotion, trimming, its status |
//! | `fetch.rs` | [`fetch`]: a peer's checkpoint fetched over HTTP, checked, and adopted by the store; a checkpoint served to peers |

pub mod admin;
pub mod etcd;
pub mod fetch;
pub mod journal;
pub mod member;

use std::time::Duration;

/// How a member joins its group.
#[derive(Clone, Debug)]
pub struct HaConfig {
    /// The etcd cluster's client URLs.
    pub endpoints: Vec<String>,
    /// This member's name, unique in the group.
    pub id: String,
    /// The prefix of the group's keys in etcd.
    pub prefix: String,
    /// The lease of the active's leadership (and of each member's
    /// record): how long a silent member keeps its place.
    pub lease: Duration,
    /// Longest one etcd request may take on one endpoint.
    pub etcd_timeout: Duration,
    /// Standbys answer reads (from their own namespace, which lags the
    /// active's by the standby's lag); otherwise they refuse them with
    /// `StandbyException`, as a standby NameNode does.
    pub standby_reads: bool,
    /// The most memory a peer's checkpoint may take when a standby catches
    /// up from it: it loads beside the namespace the member still holds
    /// (a given limit less that one's heap; else the machine's memory as
    /// it is then). `None`: no limit.
    pub memory: Option<nsimage_loader::budget::Budget>,
}

impl HaConfig {
    /// A group on `endpoints` for member `id`, with the defaults: prefix
    /// `/nsimage`, a 3 s lease, 1 s per etcd request, no standby reads.
    pub fn new(endpoints: Vec<String>, id: String) -> HaConfig {
        HaConfig {
            endpoints,
            id,
            prefix: "/nsimage".into(),
            lease: Duration::from_secs(3),
            etcd_timeout: Duration::from_secs(1),
            standby_reads: false,
            memory: None,
        }
    }
}

/// A member's role.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Applies the journal, refuses writes.
    Standby,
    /// Won the election; applying what the journal holds before it takes
    /// writes.
    Promoting,
    /// Takes writes.
    Active,
}

impl Role {
    /// Its name in status answers.
    pub fn name(self) -> &'static str {
        match self {
            Role::Standby => "standby",
            Role::Promoting => "promoting",
            Role::Active => "active",
        }
    }
}

/// Errors of a member.
#[derive(Debug, thiserror::Error)]
pub enum HaError {
    /// No etcd endpoint answered in time.
    #[error("etcd unreachable: {0}")]
    Unreachable(String),
    /// etcd answered something unexpected.
    #[error("etcd: {0}")]
    Etcd(String),
    /// The group's keys are not this store's (another namespace), or this
    /// store is ahead of the group's journal.
    #[error("{0}")]
    Mismatch(String),
    /// What etcd holds is damaged.
    #[error("etcd key {key}: corrupt: {detail}")]
    Corrupt {
        /// The key.
        key: String,
        /// What is wrong.
        detail: String,
    },
    /// The store refused or failed.
    #[error(transparent)]
    Store(#[from] nsimage_store::StoreError),
    /// A peer's checkpoint could not be fetched or used.
    #[error("fetching a checkpoint from {peer}: {detail}")]
    Fetch {
        /// The peer's URL.
        peer: String,
        /// Why.
        detail: String,
    },
    /// A peer's checkpoint, fetched, needs more memory than is left beside
    /// the namespace this member holds: tried again later, not the image's
    /// fault.
    #[error("a checkpoint fetched from {peer} does not fit: {detail}")]
    TooLarge {
        /// The peer's URL.
        peer: String,
        /// What it needs and what is left.
        detail: String,
    },
}

/// The keys of one group, under its prefix.
#[derive(Clone, Debug)]
pub struct Keys {
    prefix: String,
}

impl Keys {
    /// The keys under `prefix` (a trailing `/` is dropped).
    pub fn new(prefix: &str) -> Keys {
        Keys {
            prefix: prefix.trim_end_matches('/').to_string(),
        }
    }

    /// `P/meta`: the group's namespace id (JSON).
    pub fn meta(&self) -> Vec<u8> {
        format!("{}/meta", self.prefix).into_bytes()
    }

    /// `P/trimmed`: the journal holds every txid above this one.
    pub fn trimmed(&self) -> Vec<u8> {
        format!("{}/trimmed", self.prefix).into_bytes()
    }

    /// `P/leader`: the active's name, on its lease.
    pub fn leader(&self) -> Vec<u8> {
        format!("{}/leader", self.prefix).into_bytes()
    }

    /// `P/transfer`: the member a manual failover hands over to.
    pub fn transfer(&self) -> Vec<u8> {
        format!("{}/transfer", self.prefix).into_bytes()
    }

    /// `P/journal/`: the prefix of the journal's batches.
    pub fn journal_dir(&self) -> Vec<u8> {
        format!("{}/journal/", self.prefix).into_bytes()
    }

    /// `P/journal/<first txid, 20 digits>`: one batch.
    pub fn batch(&self, first: u64) -> Vec<u8> {
        format!("{}/journal/{first:020}", self.prefix).into_bytes()
    }

    /// The first txid of a batch's key.
    pub fn batch_first(&self, key: &[u8]) -> Option<u64> {
        let digits = key.strip_prefix(self.journal_dir().as_slice())?;
        let s = std::str::from_utf8(digits).ok()?;
        (s.len() == 20 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    }

    /// `P/members/`: the prefix of the members' records.
    pub fn members_dir(&self) -> Vec<u8> {
        format!("{}/members/", self.prefix).into_bytes()
    }

    /// `P/members/<name>`: a member's record (JSON), on its lease.
    pub fn member(&self, id: &str) -> Vec<u8> {
        format!("{}/members/{id}", self.prefix).into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_keys_round_trip() {
        let k = Keys::new("/g/");
        assert_eq!(k.batch(42), b"/g/journal/00000000000000000042".to_vec());
        assert_eq!(k.batch_first(&k.batch(42)), Some(42));
        assert_eq!(k.batch_first(b"/g/journal/42"), None);
        assert_eq!(k.batch_first(b"/h/journal/00000000000000000042"), None);
    }
}
