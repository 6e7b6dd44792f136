//! Commit: ops applied to the namespace and queued as journal records,
//! written and fsynced by one waiter for all (group commit), and the open
//! segment finished and the next one created once it is large enough.

use super::{files, JournalState, Store};
use crate::edit;
use crate::error::{io_err, StoreError, SubmitError};
use crate::failpoint;
use crate::journal;
use crate::replica::Replica;
use nsimage_format::pb;
use nsimage_format::pb::journal_op::Op;
use nsimage_namespace::{Namespace, NsError};
use parking_lot::MutexGuard;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Store {
    /// Applies `op` and journals it; returns its txid once it is durable.
    ///
    /// # Errors
    /// As [`submit`](Self::submit) and
    /// [`wait_durable`](Self::wait_durable).
    pub fn apply(&self, op: Op) -> Result<u64, StoreError> {
        let txid = self.submit(op)?;
        self.wait_durable(txid)?;
        Ok(txid)
    }

    /// Applies `op` and queues its journal record; returns its txid, which
    /// is durable only after [`wait_durable`](Self::wait_durable) or
    /// [`sync`](Self::sync) returns. Takes the namespace's lock
    /// exclusively for the check and the apply (never for an fsync).
    ///
    /// # Errors
    /// [`StoreError::Refused`] when the namespace refuses the op (nothing
    /// changes, no txid is taken), [`StoreError::Poisoned`] after an
    /// earlier journal failure, [`StoreError::Invalid`] past the last txid.
    pub fn submit(&self, op: Op) -> Result<u64, StoreError> {
        let mut ns = self.ns.write();
        self.check_poisoned()?;
        self.submit_locked(&mut ns, op)
    }

    /// Builds an op from the namespace and submits it atomically: `build`
    /// runs under the namespace's exclusive lock and returns the op to
    /// apply (`None`: nothing to do), which applies before any other op,
    /// so what `build` checked (a path resolves, a name is free, a flag's
    /// condition holds) cannot change in between. For a server resolving
    /// a client's paths to the ids an op names. Returns the op's txid
    /// (`None` when `build` returned `None`); it is durable only after
    /// [`wait_durable`](Self::wait_durable), where concurrent callers
    /// share one fsync (group commit). Keep `build` short: every other op
    /// and read waits for it.
    ///
    /// # Errors
    /// [`SubmitError::Build`] with `build`'s error (nothing changes),
    /// [`SubmitError::Store`] as [`submit`](Self::submit) (checked before
    /// `build` runs for a poisoned store).
    pub fn submit_with<E>(
        &self,
        build: impl FnOnce(&Namespace) -> Result<Option<Op>, E>,
    ) -> Result<Option<u64>, SubmitError<E>> {
        let mut ns = self.ns.write();
        self.check_poisoned()?;
        let Some(op) = build(&ns).map_err(SubmitError::Build)? else {
            return Ok(None);
        };
        Ok(Some(self.submit_locked(&mut ns, op)?))
    }

    /// [`submit_with`](Self::submit_with) for an operation of several ops
    /// (a directory and its inherited ACL; the missing parents of a path):
    /// `build` is called again under the same exclusive lock after each op
    /// it returned applied, until it returns `None`, so no other op or read
    /// comes between them. Returns the txid of the last op applied (`None`
    /// when there was none) and the outcome: an error from `build` or the
    /// store stops the chain and leaves the ops before it applied (each is
    /// journaled on its own: after a crash a prefix of the chain may
    /// survive, so order a chain so that every prefix is a safe state).
    pub fn submit_chain_with<E>(
        &self,
        mut build: impl FnMut(&Namespace) -> Result<Option<Op>, E>,
    ) -> (Option<u64>, Result<(), SubmitError<E>>) {
        let mut ns = self.ns.write();
        if let Err(e) = self.check_poisoned() {
            return (None, Err(e.into()));
        }
        let mut last = None;
        loop {
            let op = match build(&ns) {
                Ok(Some(op)) => op,
                Ok(None) => return (last, Ok(())),
                Err(e) => return (last, Err(SubmitError::Build(e))),
            };
            match self.submit_locked(&mut ns, op) {
                Ok(t) => last = Some(t),
                Err(e) => return (last, Err(e.into())),
            }
        }
    }

    /// Hands every group commit from now on to `replica` before the
    /// journal writes it (`None`: to no one). See [`crate::replica`].
    pub fn set_replica(&self, replica: Option<Arc<dyn Replica>>) {
        *self.replica.write() = replica;
    }

    /// Applies a batch of another member's journal records (`records`:
    /// frames as [`Replica::commit`] is given them) and queues them for
    /// this store's journal, each with its own txid, which must follow
    /// this store's last one without a gap; records at or below it are
    /// skipped (a batch seen twice). Returns the last txid applied; it is
    /// durable here after [`wait_durable`](Self::wait_durable).
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] for a record that does not decode, or
    /// whose checksum fails, or a gap in the txids; the namespace's
    /// refusal as [`StoreError::Refused`] (the records before it stay
    /// applied); [`StoreError::Poisoned`].
    pub fn submit_replicated(&self, records: &[u8], from: &str) -> Result<u64, StoreError> {
        let mut ns = self.ns.write();
        self.check_poisoned()?;
        let bad = |at: usize, detail: String| StoreError::Corrupt {
            path: std::path::PathBuf::from(from),
            at: nsimage_format::Location::at(at as u64),
            detail,
        };
        let mut pos = 0usize;
        while pos < records.len() {
            let (view, n) = journal::frame_at(&records[pos..])
                .map_err(|why| bad(pos, format!("a replicated record: {}", why.text(false))))?;
            let have = ns.info().last_txid;
            if view.txid > have {
                if Some(view.txid) != have.checked_add(1) {
                    return Err(bad(
                        pos,
                        format!("txid {} follows txid {have}: a gap", view.txid),
                    ));
                }
                let rec = view.to_owned();
                let op = rec
                    .op
                    .ok_or_else(|| bad(pos, "a record without an op".into()))?;
                self.submit_locked(&mut ns, op)?;
            }
            pos = pos.saturating_add(n);
        }
        Ok(ns.info().last_txid)
    }

    /// [`StoreError::Poisoned`] after a journal failure.
    fn check_poisoned(&self) -> Result<(), StoreError> {
        match &self.journal.lock().failed {
            Some(e) => Err(StoreError::Poisoned(e.clone())),
            None => Ok(()),
        }
    }

    /// Applies `op` to `ns` (the namespace, locked exclusively) and queues
    /// its record.
    fn submit_locked(&self, ns: &mut Namespace, mut op: Op) -> Result<u64, StoreError> {
        // Checked before the op changes the namespace: a refused op takes
        // no txid.
        let txid = ns
            .info()
            .last_txid
            .checked_add(1)
            .ok_or_else(|| StoreError::Invalid {
                path: self.dir.clone(),
                detail: format!("txid {} is the last txid: no op can follow", u64::MAX),
            })?;
        // A record the replay would refuse is refused here, before the op
        // changes anything (applying may add `new_id`: a few bytes more).
        let size = op.encoded_len();
        if !journal::fits(size.saturating_add(64)) {
            return Err(StoreError::Refused(NsError::Invalid(format!(
                "a journal record of {size} bytes exceeds the largest the journal holds"
            ))));
        }
        edit::apply(ns, &mut op)?;
        ns.info_mut().last_txid = txid;
        self.applied.store(txid, Ordering::Release);
        let rec = pb::JournalOp { txid, op: Some(op) };
        let mut j = self.journal.lock();
        if j.pending.is_empty() {
            j.pending_first = txid;
        }
        journal::encode(&rec, &mut j.pending);
        j.pending_last = txid;
        Ok(txid)
    }

    /// Makes every submitted op durable; returns the durable txid.
    ///
    /// # Errors
    /// As [`wait_durable`](Self::wait_durable).
    pub fn sync(&self) -> Result<u64, StoreError> {
        let last = self.journal.lock().pending_last;
        self.wait_durable(last)?;
        Ok(last)
    }

    /// Waits until `txid` is durable. One waiter at a time writes and
    /// fsyncs everything queued so far (group commit); the others wait for
    /// it. A failed write or fsync poisons the store: it is never retried
    /// as if it had succeeded. With [`StoreOptions::durable_view`], the
    /// namespace as of the last op written is published as
    /// [`durable_namespace`](Self::durable_namespace) once the fsync is
    /// done, before any waiter returns.
    ///
    /// # Errors
    /// [`StoreError::Poisoned`] when this or an earlier write or fsync of
    /// the journal failed.
    ///
    /// [`StoreOptions::durable_view`]: crate::StoreOptions::durable_view
    pub fn wait_durable(&self, txid: u64) -> Result<(), StoreError> {
        let mut j = self.journal.lock();
        loop {
            if j.durable >= txid {
                return Ok(());
            }
            if let Some(e) = &j.failed {
                return Err(StoreError::Poisoned(e.clone()));
            }
            if j.flushing {
                self.flushed.wait(&mut j);
                continue;
            }
            // The durable view needs the namespace as of exactly the last
            // queued op. Under the namespace's shared lock no op is being
            // applied, and an op is queued under the exclusive lock it is
            // applied under, so every applied op is queued: taken (it comes
            // before the journal's lock), then the journal's again.
            let ns = if self.opts.durable_view {
                drop(j);
                let ns = self.ns.read();
                j = self.journal.lock();
                if j.durable >= txid || j.failed.is_some() || j.flushing {
                    continue;
                }
                Some(ns)
            } else {
                None
            };
            let mut buf = std::mem::take(&mut j.pending);
            let last = j.pending_last;
            let (first, offset, sealer) = (j.pending_first, j.seg_bytes, j.sealer.clone());
            let Some(mut file) = j.file.take() else {
                return Err(StoreError::Poisoned("no open segment".into()));
            };
            j.flushing = true;
            drop(j);
            // The snapshot (a reference count per chunk) under the shared
            // lock alone: reads go on, ops wait for it.
            let view = ns.map(|ns| {
                let snap =
                    (last > self.durable_txid_hint()).then(|| Arc::new(ns.frequent_snapshot()));
                drop(ns);
                snap
            });
            // The replica (an HA group's quorum) commits the batch first:
            // the journal's copy is written only once it has, and a batch
            // it refused is neither written nor acknowledged.
            let replica = self.replica.read().clone();
            let replicated = match replica {
                Some(r) if !buf.is_empty() => r.commit(first, last, &buf),
                _ => Ok(()),
            };
            // An encrypted store seals the whole group commit (one seal per
            // batch of up to 8 MiB), outside the lock.
            if let Some(s) = &sealer {
                let mut sealed = Vec::with_capacity(buf.len().saturating_add(64));
                s.seal(&buf, first, offset, &mut sealed);
                buf = sealed;
            }
            let res = match replicated {
                Ok(()) => file.write_all(&buf).and_then(|()| {
                    failpoint("journal-before-sync");
                    file.sync()
                }),
                Err(e) => Err(std::io::Error::other(format!(
                    "txids {first}..={last} not committed by the replica: {e}"
                ))),
            };
            j = self.journal.lock();
            j.file = Some(file);
            j.flushing = false;
            let mut replaced = None;
            match res {
                Ok(()) => {
                    j.durable = last;
                    // Published before any waiter is told: whoever sees
                    // its op durable finds it in the view.
                    if let Some(Some(snap)) = view {
                        debug_assert_eq!(snap.info().last_txid, last);
                        replaced = self.durable_view.lock().replace(snap);
                    }
                    j.seg_bytes += buf.len() as u64;
                    if j.seg_bytes >= self.opts.segment_bytes {
                        if let Err(e) = self.roll(&mut j) {
                            j.failed = Some(e.to_string());
                        }
                    }
                }
                Err(e) => {
                    let path = self.dir.join(journal::open_name(j.seg_first));
                    j.failed = Some(format!("{}: {e}", path.display()));
                }
            }
            self.flushed.notify_all();
            if replaced.is_some() {
                // The old view's chunks let go outside the lock.
                drop(j);
                drop(replaced);
                j = self.journal.lock();
            }
        }
    }

    /// The txid of the newest op the durable view holds (0 without one).
    fn durable_txid_hint(&self) -> u64 {
        self.durable_view
            .lock()
            .as_ref()
            .map_or(0, |ns| ns.info().last_txid)
    }

    /// The txid up to which every op is durable (written and fsynced).
    pub fn durable_txid(&self) -> u64 {
        self.journal.lock().durable
    }

    /// Why the store is poisoned (a write or fsync of the journal, or a
    /// segment roll, failed), or `None` while it takes ops.
    pub fn failure(&self) -> Option<String> {
        self.journal.lock().failed.clone()
    }

    /// Finishes the open segment at the durable txid and opens the next one.
    /// Called with everything up to `durable` written and fsynced and no
    /// group commit in flight. The rename, the directory fsync and the new
    /// segment's create run with the journal's lock released (marked as a
    /// flush in flight, so no one writes meanwhile): ops go on being
    /// submitted and queued; their records go to the new segment.
    pub(super) fn roll(&self, j: &mut MutexGuard<'_, JournalState>) -> Result<(), StoreError> {
        if j.durable < j.seg_first {
            return Ok(()); // nothing in the open segment yet
        }
        let (first, last) = (j.seg_first, j.durable);
        j.file = None;
        j.flushing = true;
        let res = MutexGuard::unlocked(j, || self.finish_segment(first, last));
        j.flushing = false;
        self.flushed.notify_all();
        let seg = res?;
        j.file = Some(seg.file);
        j.sealer = seg.sealer;
        // `last` < u64::MAX: finish_segment checked it.
        j.seg_first = last + 1;
        j.seg_bytes = seg.len;
        Ok(())
    }

    /// The file work of a roll: `edits_inprogress_<first>` renamed to
    /// `edits_<first>-<last>`, the directory fsynced, and
    /// `edits_inprogress_<last + 1>` created.
    fn finish_segment(&self, first: u64, last: u64) -> Result<files::NewSegment, StoreError> {
        let from = self.dir.join(journal::open_name(first));
        let to = self.dir.join(journal::finished_name(first, last));
        self.fs.rename(&from, &to).map_err(io_err(&from))?;
        self.fs.sync_dir(&self.dir).map_err(io_err(&self.dir))?;
        failpoint("roll-renamed");
        let next = last.checked_add(1).ok_or_else(|| StoreError::Invalid {
            path: self.dir.clone(),
            detail: format!("txid {last} is the last txid: no segment can follow"),
        })?;
        let key = self.opts.write.at_rest.key.as_ref();
        files::create_segment(&*self.fs, &self.dir, next, key)
    }
}
