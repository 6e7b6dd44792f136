//! [`Formatter`]: what each dump format implements for the driver.

use super::row::Row;
use super::scratch::Scratch;
use nsimage_namespace::NsInfo;

/// What a format's opening text may name: the namespace's NS_INFO and its
/// live inodes.
pub(crate) struct Head<'a> {
    pub(crate) info: &'a NsInfo,
    pub(crate) inodes: u64,
}

/// A format: a number of passes over the inodes, each with its opening
/// and closing text and one piece of text per live inode.
pub(crate) trait Formatter: Sync {
    /// Passes over the inodes (XML: inodes, then directories, then files
    /// under construction).
    fn passes(&self) -> usize {
        1
    }
    /// Whether the format can be written from a streamed image: its text
    /// depends on each inode alone (XML's other passes have drivers of
    /// their own, see `crate::streamed`'s `dump_xml.rs`).
    fn streams(&self) -> bool {
        false
    }
    /// Text before pass `pass`'s rows.
    fn begin(&self, _head: &Head<'_>, _pass: usize, _out: &mut Vec<u8>) {}
    /// Appends `row`'s text in pass `pass`.
    fn inode(&self, pass: usize, row: &Row<'_>, scratch: &mut Scratch, out: &mut Vec<u8>);
    /// Text after pass `pass`'s rows.
    fn end(&self, _pass: usize, _out: &mut Vec<u8>) {}
}
