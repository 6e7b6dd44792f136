//! Checkpoints: the namespace saved as an image at the current txid, the
//! journal segment finished there, and retention applied.

use super::{files, save_checkpoint, Store};
use crate::error::StoreError;

impl Store {
    /// Saves the namespace as an image at the current txid (atomically),
    /// finishes the journal segment there, and purges what retention no
    /// longer needs. Returns the image's txid.
    ///
    /// # Errors
    /// [`StoreError::Poisoned`] after an earlier journal failure,
    /// [`StoreError::Io`] when the image cannot be saved or a file removed.
    pub fn checkpoint(&self) -> Result<u64, StoreError> {
        let ns = self.ns.lock();
        let t = ns.info().last_txid;
        self.wait_durable(t)?;
        let path = self.dir.join(files::image_name(t));
        if self.fs.len(&path).is_err() {
            save_checkpoint(&*self.fs, &self.dir, &ns, t, &self.opts.write)?;
        }
        drop(ns);
        {
            let mut j = self.journal.lock();
            // Finish the segment at t unless ops submitted after the image
            // was taken are already durable in it (then it stays open; replay
            // skips what the image holds).
            if j.durable >= j.seg_first && j.durable == t {
                if let Err(e) = self.roll(&mut j) {
                    j.failed = Some(e.to_string());
                    return Err(e);
                }
            }
        }
        files::purge(&*self.fs, &self.dir, self.opts.keep_images)?;
        Ok(t)
    }
}
