//! [`BlockRules`]: the image-wide block rules checked from each batch's
//! statistics and id bitmap alone, for a reader that streams an image.

use crate::block_ids::{unique, BatchIds};
use crate::errors::BuildError;
use crate::inode_batch::{BlockStats, InodeParts};
use crate::values::NsInfo;

/// The block rules of a whole image (ids at most `last_block_id`,
/// generation stamps at most `generation_stamp`, ids unique) checked from
/// its batches alone, for a reader that streams an image and keeps no
/// namespace: per batch, its block statistics and the bitmap of its ids
/// (one bit per id of its range, when ids are dense).
#[derive(Debug, Default)]
pub struct BlockRules {
    stats: BlockStats,
    batches: Vec<BatchIds>,
}

impl BlockRules {
    /// Keeps what the rules need of one batch's parts (in any order).
    pub fn add(&mut self, parts: InodeParts) {
        self.stats.merge(&parts.block_stats);
        self.batches.push(parts.block_ids);
    }

    /// Keeps what the rules need of other rules' batches.
    pub fn merge(&mut self, other: BlockRules) {
        self.stats.merge(&other.stats);
        self.batches.extend(other.batches);
    }

    /// Checks the rules against `info`: `Ok(true)` when they hold,
    /// `Ok(false)` when uniqueness cannot be decided from the bitmaps (ids
    /// too sparse: a load sorts them), the broken rule otherwise.
    ///
    /// # Errors
    /// The first rule broken, as a load reports it.
    pub fn check(&self, info: &NsInfo) -> Result<bool, BuildError> {
        let st = &self.stats;
        if st.count == 0 {
            return Ok(true);
        }
        if st.max_id > info.last_block_id {
            return Err(BuildError::BlockIdTooLarge {
                id: st.max_id,
                last: info.last_block_id,
            });
        }
        if st.max_generation_stamp > info.generation_stamp {
            return Err(BuildError::GenerationStampTooLarge {
                stamp: st.max_generation_stamp,
                max: info.generation_stamp,
            });
        }
        match unique(&self.batches, st.min_id, st.max_id, st.count) {
            Some(Ok(())) => Ok(true),
            Some(Err(id)) => Err(BuildError::DuplicateBlock(id)),
            None => Ok(false),
        }
    }
}
