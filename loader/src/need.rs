//! A whole load sized before it starts (issue 42): the inodes an image
//! declares ([`load_need`]), an image the [`Budget`] cannot hold refused
//! at open, saying how much it needs ([`refuse_over`]), rather than killed
//! by the kernel half-way.
//!
//! The refusal rests on the count the image declares (its index's INODE
//! records, or a Hadoop INODE header's `numInodes`); before refusing, that
//! count is checked against the records themselves ([`check_declared`]),
//! so an image whose count lies is reported as damaged
//! ([`LoadError::Corrupt`]), never as a memory shortfall.

use crate::budget::{load_bytes, Budget};
use crate::error::LoadError;
use crate::source::ImageSource;
use crate::streamable::Streamable;
use std::path::Path;

/// The inodes `path` declares (nsimage or Hadoop, told apart by its bytes)
/// and what a whole load of them needs, read from the index or the INODE
/// header only; `key` unlocks an encrypted image's index.
///
/// # Errors
/// What opening the image refuses.
pub fn load_need(path: &Path, key: Option<&nsimage_format::cipher::Key>) -> Result<u64, LoadError> {
    let inodes = if crate::hdfs::is_hdfs_file(path)? {
        crate::hdfs::run::declared_inodes(path)?
    } else {
        let mut src = ImageSource::open(path)?;
        src.unlock(key)?;
        src.inode_count()
    };
    Ok(load_bytes(inodes))
}

/// What a load or `verify` checks before it reads an image it has opened:
/// with a `budget`, `src` (nsimage, its index read already) refused as
/// [`refuse_over`] refuses, sized from the index without another read.
pub(crate) fn image_fits(
    src: &ImageSource,
    budget: Option<Budget>,
    key: Option<&nsimage_format::cipher::Key>,
) -> Result<(), LoadError> {
    match budget {
        Some(b) => refuse_over(src.path(), load_bytes(src.inode_count()), b, key),
        None => Ok(()),
    }
}

/// [`image_fits`] for a Hadoop image, sized from its INODE header.
pub(crate) fn hdfs_fits(path: &Path, budget: Option<Budget>) -> Result<(), LoadError> {
    match budget {
        Some(b) => refuse_over(
            path,
            load_bytes(crate::hdfs::run::declared_inodes(path)?),
            b,
            None,
        ),
        None => Ok(()),
    }
}

/// Refuses a whole load of `path` that needs `needed` bytes where `budget`
/// holds less, once the image's declared counts are found honest (else
/// the damage is the error).
///
/// # Errors
/// [`LoadError::TooLarge`], or the [`LoadError::Corrupt`] of a count that
/// lies.
pub fn refuse_over(
    path: &Path,
    needed: u64,
    budget: Budget,
    key: Option<&nsimage_format::cipher::Key>,
) -> Result<(), LoadError> {
    if needed <= budget.bytes() {
        return Ok(());
    }
    check_declared(path, key)?;
    Err(LoadError::TooLarge {
        path: path.to_path_buf(),
        needed,
        limit: budget.bytes(),
        given: budget.is_given(),
    })
}

/// Checks the counts `path` declares (what [`load_need`] sizes from)
/// against its records, one piece at a time in bounded memory
/// ([`Streamable::check_counts`](Streamable::check_counts)): what a
/// caller does before it refuses an image for its size.
///
/// # Errors
/// The located [`LoadError::Corrupt`] of a count that lies; what opening
/// the image refuses.
pub fn check_declared(
    path: &Path,
    key: Option<&nsimage_format::cipher::Key>,
) -> Result<(), LoadError> {
    let src = if crate::hdfs::is_hdfs_file(path)? {
        // Only counts are checked: the sidecar is left to the load.
        Streamable::Hdfs(Box::new(crate::hdfs::HdfsSource::open(
            path,
            crate::hdfs::Md5Policy::Ignore,
        )?))
    } else {
        let mut src = ImageSource::open(path)?;
        src.unlock(key)?;
        Streamable::Image(src)
    };
    src.check_counts()
}
