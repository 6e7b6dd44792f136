//! `nsimage ls`: list a directory of an image (or one inode), like `hdfs
//! dfs -ls`; `-R` lists everything below it.

use nsimage_loader::{load, LoadOptions, ReadStrategy};
use nsimage_namespace::Namespace;
use nsimage_viewer::ls::{self, Format};
use nsimage_viewer::paths::ImagePath;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(disable_help_flag = true)]
pub struct Args {
    /// Image file.
    image: PathBuf,
    /// Absolute path inside the image.
    #[arg(default_value = "/")]
    path: String,
    /// List everything below the path, depth first in name order.
    #[arg(short = 'R', long)]
    recursive: bool,
    /// Print help (`-h` is `--human` here).
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// Sizes in binary units (`1.5 KiB`, `9.7 TiB`) instead of byte
    /// counts, as `hdfs dfs -du -h`.
    #[arg(short = 'h', long)]
    human: bool,
    /// JSON lines on stdout, one object per entry.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let path = ImagePath::parse(&a.path)?;
    let format = if a.json {
        Format::JsonLines
    } else if a.human {
        Format::HumanText
    } else {
        Format::Text
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if a.recursive {
        let ns = load_whole(&a.image)?;
        match ls::write_recursive(&ns, &path, format, &mut out) {
            Err(nsimage_viewer::ViewError::Io { source, .. }) => return finish(Err(source)),
            r => {
                r?;
            }
        }
        return finish(out.flush());
    }
    // One path and its children: only the pieces on the way are read
    // (images without a NAME_INDEX section are loaded whole).
    let opts = nsimage_viewer::lookup::PathOptions {
        with_children: true,
        key: super::key()?,
    };
    let view = super::lookup::load_path(&a.image, &path, &opts)?;
    let listing = ls::ls(&view.namespace, &path)?;
    finish(ls::write_listing(&listing, format, &mut out).and_then(|()| out.flush()))
}

/// The whole image, mapped (the CLI's default read, as `nsimage load`),
/// with a spinner on a terminal.
pub(super) fn load_whole(image: &Path) -> anyhow::Result<Namespace> {
    let pb = super::spinner(&format!("loading {}", image.display()));
    let opts = LoadOptions {
        // SAFETY: as in `nsimage load`: images nsimage saved are never
        // rewritten in place, and the process exits after reading.
        read: unsafe { ReadStrategy::mmap() },
        key: super::key()?,
        ..LoadOptions::default()
    };
    let loaded = load(image, &opts);
    pb.finish_and_clear();
    Ok(loaded?.namespace)
}

/// The end of a listing on stdout: a reader that went away (`| head`) is
/// not an error; any other write error is an I/O error (exit 2).
pub(super) fn finish(r: std::io::Result<()>) -> anyhow::Result<ExitCode> {
    match r {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(anyhow::Error::new(e).context("writing to stdout")),
    }
}
