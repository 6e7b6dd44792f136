//! The lock traffic of a load, counted so that the bench can show it stays
//! small as threads grow: the node table's range locks (`table`), each
//! taken once per piece by the one worker that decodes it. (Parents were
//! once merged into a table sharded behind locks; every path now sets them
//! each worker in its own range of the node table, with no lock.)

/// Lock traffic of one load.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockStats {
    /// Lock acquisitions.
    pub acquisitions: u64,
    /// Acquisitions that found the lock held and had to wait.
    pub contended: u64,
    /// Total time spent waiting, in nanoseconds.
    pub wait_ns: u64,
}

impl LockStats {
    /// Adds the traffic of `o` to this one.
    pub fn add(&mut self, o: LockStats) {
        self.acquisitions = self.acquisitions.saturating_add(o.acquisitions);
        self.contended = self.contended.saturating_add(o.contended);
        self.wait_ns = self.wait_ns.saturating_add(o.wait_ns);
    }
}
