//! What writing a Hadoop fsimage reports: [`HdfsWritten`] and its
//! [`HdfsSection`] entries.

/// One entry of the image's FileSummary: a section or a sub-section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HdfsSection {
    /// Hadoop's section name (`NS_INFO`, `INODE`, `INODE_SUB`, ...).
    pub name: String,
    /// Byte offset of the section in the file.
    pub offset: u64,
    /// Length in bytes (compressed bytes when the image has a codec).
    pub length: u64,
}

/// What [`write_hdfs_image`](crate::hdfs::write_hdfs_image) wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HdfsWritten {
    /// MD5 of every byte of the file, computed as the bytes went out (what
    /// the NameNode's `.md5` sidecar holds).
    pub md5: [u8; 16],
    /// Bytes written.
    pub bytes: u64,
    /// The FileSummary's entries, in its order (sub-sections before their
    /// section, as Hadoop lists them).
    pub sections: Vec<HdfsSection>,
    /// Offset of the varint-delimited FileSummary.
    pub summary_offset: u64,
    /// Inodes written (INODE section).
    pub inodes: u64,
    /// DirEntry records written (INODE_DIR section).
    pub dir_entries: u64,
    /// Files under construction written (FILES_UNDERCONSTRUCTION section).
    pub under_construction: u64,
    /// String table entries written (STRING_TABLE section).
    pub strings: u64,
}

impl HdfsWritten {
    /// The summary entries named `name`, in summary order.
    pub fn named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a HdfsSection> + 'a {
        self.sections.iter().filter(move |s| s.name == name)
    }
}
