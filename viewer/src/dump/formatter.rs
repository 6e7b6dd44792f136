//! [`Formatter`]: what each dump format implements for the driver.

use super::row::Row;
use super::scratch::Scratch;
use nsimage_namespace::Namespace;

/// A format: a number of passes over the node table, each with its opening
/// and closing text and one piece of text per live inode.
pub(crate) trait Formatter: Sync {
    /// Passes over the node table (XML: inodes, then directories).
    fn passes(&self) -> usize {
        1
    }
    /// Whether the format can be written from a streamed image (one pass
    /// whose text depends on each inode alone).
    fn streams(&self) -> bool {
        false
    }
    /// Text before pass `pass`'s rows; `ns` is the loaded namespace (none
    /// when streamed).
    fn begin(&self, _ns: Option<&Namespace>, _pass: usize, _out: &mut Vec<u8>) {}
    /// Appends `row`'s text in pass `pass`.
    fn inode(&self, pass: usize, row: &Row<'_>, scratch: &mut Scratch, out: &mut Vec<u8>);
    /// Text after pass `pass`'s rows.
    fn end(&self, _ns: Option<&Namespace>, _pass: usize, _out: &mut Vec<u8>) {}
}
