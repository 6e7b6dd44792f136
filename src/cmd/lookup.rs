//! `nsimage lookup` (hidden): one path looked up through the NAME_INDEX,
//! reading only the pieces on the way, with what it cost (bytes read,
//! read calls, the fraction of the image). The bench runs it against
//! `nsimage load`.

use nsimage_namespace::InodeKind;
use nsimage_viewer::lookup::{PathOptions, PathView};
use nsimage_viewer::paths::ImagePath;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Image file.
    image: PathBuf,
    /// Absolute path inside the image.
    path: String,
    /// Also read the directory's children.
    #[arg(long)]
    children: bool,
    /// One JSON document on stdout.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    memory: super::memory::MemoryLimit,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let path = ImagePath::parse(&a.path)?;
    let t = Instant::now();
    let opts = PathOptions {
        with_children: a.children,
        key: super::key()?,
        budget: Some(a.memory.budget()),
        md5: super::md5(),
    };
    let view = load_path(&a.image, &path, &opts)?;
    let seconds = t.elapsed().as_secs_f64();
    let image_bytes = std::fs::metadata(&a.image)?.len();
    let ns = &view.namespace;
    let id = ns.resolve(&path.canonical())?;
    let node = ns
        .slot_of(id)
        .and_then(|s| ns.at(s))
        .ok_or_else(|| anyhow::anyhow!("inode {id} missing from the lookup's namespace"))?;
    let kind = match node.kind() {
        InodeKind::File => "file",
        InodeKind::Directory => "directory",
        InodeKind::Symlink => "symlink",
    };
    let children: Vec<String> = node
        .children()
        .map(|c| String::from_utf8_lossy(c.name()).into_owned())
        .collect();
    let fraction = view.bytes_read as f64 / image_bytes.max(1) as f64;
    if a.json {
        out!(
            "{}",
            serde_json::json!({
                "path": path.given(),
                "id": id,
                "type": kind,
                "indexed": view.indexed,
                "unused_index": view.unused_index,
                "children": if a.children { Some(&children) } else { None },
                "bytes_read": view.bytes_read,
                "read_calls": view.read_calls,
                "pieces": view.pieces,
                "image_bytes": image_bytes,
                "fraction_read": fraction,
                "seconds": seconds,
            })
        );
    } else {
        out!("{}: inode {id}, {kind}", path.given());
        if a.children {
            for c in &children {
                out!("  {c}");
            }
        }
        out!(
            "read {} of {image_bytes} bytes ({:.4}%) in {} calls, {} pieces{}, {:.3} ms",
            view.bytes_read,
            fraction * 100.0,
            view.read_calls,
            view.pieces,
            if view.indexed {
                ""
            } else {
                " (no NAME_INDEX: full load)"
            },
            seconds * 1e3
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// [`nsimage_viewer::lookup::load_path`] for a command: a name section the
/// lookup could not use (it breaks its own rules or disagrees with
/// INODE_DIR or INODE) is said on stderr, the answer then coming from a
/// full load.
pub(super) fn load_path(
    image: &Path,
    path: &ImagePath,
    opts: &PathOptions,
) -> anyhow::Result<PathView> {
    let view = nsimage_viewer::lookup::load_path(image, path, opts)?;
    super::memory::report(&nsimage_viewer::input::Read::Lookup {
        unused_index: view.unused_index.clone(),
    });
    Ok(view)
}
