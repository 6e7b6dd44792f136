//! `nsimage stat`: everything an image holds for one inode.

use nsimage_namespace::Namespace;
use nsimage_viewer::paths::ImagePath;
use nsimage_viewer::stat;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Image file.
    image: PathBuf,
    /// Absolute path inside the image.
    path: String,
    /// One JSON document on stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let path = ImagePath::parse(&a.path)?;
    let ns = namespace_for(&a.image, &path, false)?;
    let info = stat::stat(&ns, &path)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let r = if a.json {
        serde_json::to_writer(&mut out, &stat::to_json(&info))
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(out))
    } else {
        stat::write_text(&info, &mut out)
    };
    super::ls::finish(r.and_then(|()| out.flush()))
}

/// The namespace `stat` reads `path` from: today the whole image; a
/// one-path lookup needs only the path's inodes (`children`: also the
/// target's children).
fn namespace_for(image: &Path, path: &ImagePath, children: bool) -> anyhow::Result<Namespace> {
    let _ = (path, children);
    super::ls::load_whole(image)
}
