//! Atomic save: the image is written to a temporary file in the target's
//! directory, fsynced, renamed over the target, and the directory fsynced, so
//! a crash at any point leaves either the old file or the new one. Only a
//! missing path or a regular file is replaced: a directory, FIFO, socket,
//! device or symbolic link at the target is refused, never renamed over.

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

/// Refuses a target that [`save`] must not replace: anything but a missing
/// path or a regular file (a symbolic link is refused, not followed, even
/// to a regular file). The check is repeated just before the rename.
pub fn check_target(path: &Path) -> Result<(), WriteError> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_file() => Ok(()),
        Ok(m) => Err(WriteError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "is {}; only a missing path or a regular file is replaced",
                    nsimage_format::file_type::describe(m.file_type())
                ),
            ),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err(path)(e)),
    }
}

/// Saves `ns` to `path` atomically; see [`check_target`] for what `path`
/// may hold.
pub fn save(ns: &Namespace, path: &Path, opts: &WriteOptions) -> Result<ImageSummary, WriteError> {
    check_target(path)?;
    let tmp = temp_path(path);
    // Errors name the path the caller gave, not the temporary one.
    // A new file: an existing one (a FIFO left there, say) is neither opened
    // nor removed.
    let file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(io_err(path))?;
    let result = (|| {
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let summary = write_image(ns, &mut out, opts).map_err(io_err(path))?;
        let file = out.into_inner().map_err(|e| io_err(path)(e.into_error()))?;
        file.sync_all().map_err(io_err(path))?;
        drop(file);
        check_target(path)?;
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
