//! Every file the command line writes goes through here: the path may name
//! nothing yet or a regular file, never a FIFO, a device node, a socket or
//! a symbolic link (checked without following it, with the same rule as
//! `generate` and `convert`: [`nsimage_store::save::check_target`]), and a
//! file is written beside its final name, synced and renamed into place.

use anyhow::Context;
use nsimage_store::fs::RealFs;
use nsimage_viewer::ViewError;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// Refuses `out` unless it is missing or a regular file (a usage error,
/// exit 2). Called before any work is spent and again just before the
/// rename that would replace it.
pub fn check_output(out: &Path) -> anyhow::Result<()> {
    nsimage_store::save::check_target(&RealFs::default(), out)?;
    Ok(())
}

/// For `export -o`: a dataset directory (an existing directory, not a link
/// to one) is checked part by part: every `part-*.parquet` already in it
/// that the export could replace or remove must be a regular file. Any
/// other target is checked as [`check_output`].
pub fn check_export_output(out: &Path) -> anyhow::Result<()> {
    match std::fs::symlink_metadata(out) {
        Ok(m) if m.is_dir() => {
            let entries = std::fs::read_dir(out).map_err(|e| view_io(out, e))?;
            for e in entries {
                let e = e.map_err(|e| view_io(out, e))?;
                let name = e.file_name();
                let b = name.as_encoded_bytes();
                if b.starts_with(b"part-") && b.ends_with(b".parquet") {
                    check_output(&e.path())?;
                }
            }
            Ok(())
        }
        _ => check_output(out),
    }
}

fn view_io(p: &Path, e: std::io::Error) -> anyhow::Error {
    anyhow::Error::new(ViewError::Io {
        path: p.to_path_buf(),
        source: e,
    })
}

/// Writes `out` through `fill` into a temporary file beside it, syncs it,
/// renames it over `out` and syncs the directory; on any failure the
/// temporary file is removed and nothing appears under `out`. `out` is
/// refused as [`check_output`] says, before `fill` runs and before the
/// rename.
pub fn write_atomically<T>(
    out: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let io = |what: &str, p: &Path, e: std::io::Error| -> anyhow::Error {
        view_io(p, e).context(what.to_string())
    };
    check_output(out)?;
    let name = out
        .file_name()
        .ok_or_else(|| io("output", out, std::io::Error::other("not a file name")))?;
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp.{}", std::process::id()));
    let tmp = dir.join(tmp_name);
    let file = File::options()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| {
            io(
                &format!("creating a temporary file beside {}", out.display()),
                &tmp,
                e,
            )
        })?;
    let result = (|| {
        let mut w = BufWriter::with_capacity(1 << 20, file);
        let v = fill(&mut w)?;
        let file = w
            .into_inner()
            .map_err(|e| io("writing the output", &tmp, e.into_error()))?;
        file.sync_all()
            .map_err(|e| io("syncing the output", &tmp, e))?;
        drop(file);
        // Whatever appeared under the name while `fill` ran is held to the
        // same rule as what was there at the start.
        check_output(out)?;
        std::fs::rename(&tmp, out).map_err(|e| io("renaming the output", out, e))?;
        Ok(v)
    })();
    match result {
        Ok(v) => {
            // The rename is durable once the directory is synced; a
            // directory that cannot be opened for it (some filesystems)
            // leaves the rename done but not yet durable.
            if let Ok(d) = File::open(&dir) {
                d.sync_all()
                    .map_err(|e| io("syncing the output's directory", &dir, e))
                    .context(out.display().to_string())?;
            }
            Ok(v)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}
