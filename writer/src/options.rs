//! [`WriteOptions`]: how the writer lays an image out.

pub use crate::at_rest::AtRestOptions;

/// How images are laid out.
#[derive(Clone, Debug)]
pub struct WriteOptions {
    /// Largest sub-section target in bytes; the target of a section is a
    /// 64th of its bytes within 64 KiB..=this ([`sub_section_target`](crate::sub_section_target)), and
    /// a record that would take a sub-section past it starts the next one.
    pub sub_section_bytes: u64,
    /// Sections of namespaces with fewer live inodes than this get no
    /// sub-sections.
    pub sub_section_min_inodes: u64,
    /// Inodes encoded per parallel task.
    pub batch_inodes: usize,
    /// How pieces are stored: compressed, encrypted (FORMAT.md, "Pieces
    /// at rest"); plain by default.
    pub at_rest: AtRestOptions,
    /// Write the one-path lookup index as the NAME_INDEX section of older
    /// images (one `NameEntry` per child) instead of NAME_RUNS: for tests
    /// that images written before NAME_RUNS still read.
    pub legacy_name_index: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            sub_section_bytes: 2 << 20,
            sub_section_min_inodes: 10_000,
            batch_inodes: 16_384,
            at_rest: AtRestOptions::default(),
            legacy_name_index: false,
        }
    }
}
