//! The authoritative journal a store may hand each group commit to before
//! it writes its own copy: a [`Replica`]. A store with one (the active
//! member of a highly available group, whose replica is a journal in a
//! quorum) writes and fsyncs a batch of records only after the replica
//! has committed them, and acknowledges nothing the replica refused: a
//! refusal (the member was deposed, the quorum is out of reach) poisons
//! the store, as a failed fsync does. A member that follows another
//! applies the leader's batches with
//! [`Store::submit_replicated`](crate::Store::submit_replicated).

/// Where a store's group commits go first (see the module's page).
pub trait Replica: Send + Sync {
    /// Commits the records of txids `first..=last` (`records`: their
    /// journal frames, in order, unsealed, as STORE.md's "Record" frames
    /// them), returning once they are committed. An error means that the
    /// store must acknowledge none of them; they may or may not have been
    /// committed (a timeout cannot tell), so whoever reads the replica
    /// next decides.
    ///
    /// # Errors
    /// Why the batch is not known to be committed.
    fn commit(&self, first: u64, last: u64, records: &[u8]) -> Result<(), String>;
}
