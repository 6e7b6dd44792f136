//! Sizes on the command line, and the memory a viewer command may take
//! (`--memory-limit`, by default what the machine has available), given to
//! the viewer's [`Input`], which decides how the image is read and refuses
//! a tree that would not fit before any output.

use nsimage_loader::{LoadOptions, ReadStrategy};
use nsimage_viewer::input::{Budget, Input, Read};
use std::path::Path;

pub use nsimage_viewer::text::parse_size;

/// `--memory-limit`.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct MemoryLimit {
    /// Most memory the command may take for the image: its tree while it
    /// streams it, or its namespace where it loads it whole (about 72
    /// bytes an inode). A size (160M, 2G); an image that needs more is
    /// refused before any output, saying how much it needs. Default: the memory
    /// the machine has available (MemAvailable), or the process's cgroup
    /// limit where that is less.
    #[arg(long = "memory-limit", value_name = "SIZE", value_parser = parse_size)]
    pub bytes: Option<u64>,
}

impl MemoryLimit {
    /// The budget: the limit given, else what the machine has available
    /// ([`Budget::new`]).
    pub fn budget(self) -> Budget {
        Budget::new(self.bytes)
    }
}

/// `image` opened for a viewer command ([`Input::open`]: nsimage or Hadoop,
/// the key of `--key-file` applied, its tree's estimate within `limit`),
/// a whole load, where the input decides on one, mapping the image (the
/// CLI's default read, as `nsimage load`) on `threads` workers.
pub fn open_input(image: &Path, limit: MemoryLimit, threads: usize) -> anyhow::Result<Input> {
    let input = Input::open(image, super::key()?, super::md5(), limit.budget())?;
    Ok(input.with_load_options(LoadOptions {
        md5: super::md5(),
        // SAFETY: as in `nsimage load`: images nsimage saved are never
        // rewritten in place while a reader holds them (a store's purge
        // cuts one only under an exclusive lock that the loader's shared
        // one refuses), and the process exits after reading.
        read: unsafe { ReadStrategy::mmap() },
        threads,
        ..LoadOptions::default()
    }))
}

/// What a command says of how its input was read: on stderr, a name
/// section a lookup could not use (the answer then came from a full
/// load).
pub fn report(read: &Read) {
    if let Read::Lookup {
        unused_index: Some(why),
    } = read
    {
        eprintln!(
            "warning: the image's name section was not used ({why}); answered from a full load"
        );
    }
}
