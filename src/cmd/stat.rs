//! `nsimage stat`: everything an image holds for one inode.

use nsimage_viewer::paths::ImagePath;
use nsimage_viewer::{lookup, stat};
use std::io::Write;
use std::path::PathBuf;
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
    let view = lookup::load_path(&a.image, &path, false)?;
    let info = stat::stat(&view.namespace, &path)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let r = if a.json {
        let mut doc = stat::to_json(&info);
        let image_bytes = std::fs::metadata(&a.image).map_or(0, |m| m.len());
        // What the one-path lookup read: counted by the image source.
        doc["io"] = serde_json::json!({
            "indexed": view.indexed,
            "bytes_read": view.bytes_read,
            "read_calls": view.read_calls,
            "pieces": view.pieces,
            "image_bytes": image_bytes,
        });
        serde_json::to_writer(&mut out, &doc)
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(out))
    } else {
        stat::write_text(&info, &mut out)
    };
    super::ls::finish(r.and_then(|()| out.flush()))
}
