//! [`Formatter`]: what each dump format implements for the driver.

use super::scratch::Scratch;
use nsimage_namespace::{Inode, Namespace};

/// A format: a number of passes over the node table, each with its opening
/// and closing text and one piece of text per live inode.
pub(crate) trait Formatter: Sync {
    /// Passes over the node table (XML: inodes, then directories).
    fn passes(&self) -> usize {
        1
    }
    /// Text before pass `pass`'s rows.
    fn begin(&self, _ns: &Namespace, _pass: usize, _out: &mut Vec<u8>) {}
    /// Appends `inode`'s text in pass `pass`.
    fn inode(
        &self,
        ns: &Namespace,
        pass: usize,
        inode: &Inode<'_>,
        scratch: &mut Scratch,
        out: &mut Vec<u8>,
    );
    /// Text after pass `pass`'s rows.
    fn end(&self, _ns: &Namespace, _pass: usize, _out: &mut Vec<u8>) {}
}
