//! Atomic save: the image is written to a temporary file in the target's
//! directory, fsynced, renamed over the target, and the directory fsynced, so
//! a crash at any point leaves either the old file or the new one.

use crate::{write_image, ImageSummary, WriteError, WriteOptions};
use nsimage_format::Namespace;
use std::fs::{self, File};
use std::io::BufWriter;
use std::path::{Path, PathBuf};

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> WriteError + '_ {
    move |source| WriteError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The temporary name used while `path` is being written.
pub fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp.{}", std::process::id()));
    path.with_file_name(name)
}

/// Saves `ns` to `path` atomically.
pub fn save(ns: &Namespace, path: &Path, opts: &WriteOptions) -> Result<ImageSummary, WriteError> {
    let tmp = temp_path(path);
    let result = (|| {
        let file = File::create(&tmp).map_err(io_err(&tmp))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let summary = write_image(ns, &mut out, opts).map_err(io_err(&tmp))?;
        let file = out.into_inner().map_err(|e| io_err(&tmp)(e.into_error()))?;
        file.sync_all().map_err(io_err(&tmp))?;
        drop(file);
        fs::rename(&tmp, path).map_err(io_err(path))?;
        sync_dir(path).map_err(io_err(path))?;
        Ok(summary)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Fsyncs the directory holding `path`, making a rename in it durable.
pub fn sync_dir(path: &Path) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}
