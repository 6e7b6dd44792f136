//! `nsimage stat`: everything an image holds for one inode.

use nsimage_viewer::paths::ImagePath;
use nsimage_viewer::{lookup, stat};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    disable_help_flag = true,
    after_help = "Examples:\n  nsimage stat fsimage /user/alice/part-0\n  nsimage stat fsimage \
                  /data --json\n  nsimage stat fsimage /data/part-0 --format '%F %u:%g %b %y'"
)]
pub struct Args {
    /// Image file.
    image: PathBuf,
    /// Absolute path inside the image.
    path: String,
    /// One line in `hdfs dfs -stat FORMAT`'s format instead of every
    /// field: %a/%A permission (octal/symbolic), %b length, %F type, %g
    /// group, %n name, %o block size, %r replication, %u owner, %x/%y
    /// access/modification time (UTC), %X/%Y the same in ms.
    #[arg(long, conflicts_with_all = ["json", "human"])]
    format: Option<String>,
    /// Print help (`-h` is `--human` here).
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// Sizes as `hdfs dfs -h` prints them (binary prefixes, one
    /// decimal: `1.5 K`, `9.7 T`) instead of byte counts.
    #[arg(short = 'h', long)]
    human: bool,
    /// One JSON document on stdout.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    memory: super::memory::MemoryLimit,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let path = ImagePath::parse(&a.path)?;
    let opts = lookup::PathOptions {
        with_children: false,
        key: super::key()?,
        budget: Some(a.memory.budget()),
        md5: super::md5(),
    };
    let view = super::lookup::load_path(&a.image, &path, &opts)?;
    let info = stat::stat(&view.namespace, &path)?;
    if let Some(fmt) = &a.format {
        let mut out = std::io::stdout().lock();
        let line = stat::hadoop_format(&info, fmt);
        return super::ls::finish(writeln!(out, "{line}").and_then(|()| out.flush()));
    }
    // A Hadoop image's snapshots of this directory, if it is snapshottable.
    let snapshots = view.hdfs.as_ref().and_then(|h| {
        let s = &h.snapshots;
        s.snapshottable_dirs.contains(&info.id).then(|| {
            s.snapshots
                .iter()
                .filter(|e| e.root == info.id)
                .collect::<Vec<_>>()
        })
    });
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let r = if a.json {
        let mut doc = stat::to_json(&info);
        if let Some(list) = &snapshots {
            doc["snapshottable"] = true.into();
            doc["snapshots"] = list
                .iter()
                .map(|e| {
                    serde_json::json!({
                        "id": e.id,
                        "name": String::from_utf8_lossy(&e.name),
                        "modification_time": e.mtime,
                        "modification_time_utc": nsimage_viewer::text::utc_iso8601(e.mtime),
                    })
                })
                .collect();
        }
        let image_bytes = std::fs::metadata(&a.image).map_or(0, |m| m.len());
        // What the one-path lookup read: counted by the image source.
        doc["io"] = serde_json::json!({
            "indexed": view.indexed,
            "unused_index": view.unused_index,
            "bytes_read": view.bytes_read,
            "read_calls": view.read_calls,
            "pieces": view.pieces,
            "image_bytes": image_bytes,
        });
        serde_json::to_writer(&mut out, &doc)
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(out))
    } else {
        stat::write_text(&info, a.human, &mut out).and_then(|()| match &snapshots {
            Some(list) => {
                writeln!(out, "  snapshottable: yes, {} snapshots", list.len())?;
                for e in list {
                    writeln!(
                        out,
                        "    {} (id {}, taken at mtime {})",
                        nsimage_viewer::text::escaped(&e.name),
                        e.id,
                        nsimage_viewer::text::utc_iso8601(e.mtime)
                    )?;
                }
                Ok(())
            }
            None => Ok(()),
        })
    };
    super::ls::finish(r.and_then(|()| out.flush()))
}
