//! Atomic save: the image is written to a temporary file in the target's
//! directory, fsynced, renamed over the target, and the directory fsynced, so
//! a crash at any point leaves either the old file or the new one. Only a
//! missing path or a regular file is replaced: a directory, FIFO, socket,
//! device or symbolic link at the target is refused, never renamed over.

use crate::{write_image, ImageSummary, WriteError, WriteOptions};
use nsimage_namespace::Namespace;
use std::fs::{self, File};
use std::io::BufWriter;
use std::path::{Path, PathBuf};

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> WriteError + '_ {
    move |source| WriteError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The `attempt`-th temporary name for `path` (beside it, so the rename
/// stays in one directory): `NAME.tmp.PID.ATTEMPT`.
pub fn temp_path(path: &Path, attempt: u32) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp.{}.{attempt}", std::process::id()));
    path.with_file_name(name)
}

/// Creates a new temporary file beside `path`. A file left at one name (by
/// a crashed run that had the same process id, say) is neither opened nor
/// removed: the next name is tried.
fn create_temp(path: &Path) -> Result<(PathBuf, File), WriteError> {
    const ATTEMPTS: u32 = 64;
    for attempt in 0..ATTEMPTS {
        let tmp = temp_path(path, attempt);
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_err(path)(e)),
        }
    }
    Err(io_err(path)(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        format!(
            "{ATTEMPTS} temporary names like {} are taken",
            temp_path(path, 0).display()
        ),
    )))
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
    // Errors name the path the caller gave, not the temporary one.
    let (tmp, file) = create_temp(path)?;
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
