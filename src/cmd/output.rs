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
/// that the export could replace or remove must be a regular file. A path
/// ending in `/` names a dataset, so with its trailing slashes stripped it
/// must name a directory (looked at without following a link) or nothing;
/// `link/` is refused, never written through. Any other target is checked
/// as [`check_output`].
pub fn check_export_output(out: &Path) -> anyhow::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = out.as_os_str().as_bytes();
    let mut end = bytes.len();
    while end > 1 && bytes[end - 1] == b'/' {
        end -= 1;
    }
    let slash = end < bytes.len();
    let base = if slash {
        Path::new(std::ffi::OsStr::from_bytes(&bytes[..end]))
    } else {
        out
    };
    match std::fs::symlink_metadata(base) {
        Ok(m) if m.is_dir() => {
            let entries = std::fs::read_dir(base).map_err(|e| view_io(base, e))?;
            for e in entries {
                let e = e.map_err(|e| view_io(base, e))?;
                let name = e.file_name();
                let b = name.as_encoded_bytes();
                if b.starts_with(b"part-") && b.ends_with(b".parquet") {
                    check_output(&e.path())?;
                }
            }
            Ok(())
        }
        Ok(m) if slash => Err(anyhow::Error::new(ViewError::BadArgument {
            detail: format!(
                "{}: is {}; a dataset directory must be a directory or a missing path",
                out.display(),
                nsimage_format::file_type::describe(m.file_type())
            ),
        })),
        Err(e) if slash && e.kind() != std::io::ErrorKind::NotFound => Err(view_io(base, e)),
        _ => check_output(out),
    }
}

fn view_io(p: &Path, e: std::io::Error) -> anyhow::Error {
    anyhow::Error::new(ViewError::Io {
        path: p.to_path_buf(),
        source: e,
    })
}

/// Temporary names tried beside an output before giving up.
const TEMP_ATTEMPTS: u32 = 64;

/// The temporary name of `name` in `dir` with the random `suffix`.
fn temp_name(dir: &Path, name: &std::ffi::OsStr, suffix: u64) -> PathBuf {
    let mut t = std::ffi::OsString::from(".");
    t.push(name);
    t.push(format!(".tmp.{suffix:016x}"));
    dir.join(t)
}

/// Creates a fresh temporary file for `name` in `dir`: a random name,
/// created new, so a leftover of an earlier run (whatever its process id)
/// or another writer's file is neither opened nor removed; a name already
/// taken is skipped for the next random one. On failure, the last name
/// tried and its error.
fn create_temp_beside(
    dir: &Path,
    name: &std::ffi::OsStr,
) -> Result<(PathBuf, File), (PathBuf, std::io::Error)> {
    let mut attempt = 0;
    loop {
        let mut r = [0u8; 8];
        nsimage_format::cipher::fill_random(&mut r);
        let tmp = temp_name(dir, name, u64::from_le_bytes(r));
        match File::options().write(true).create_new(true).open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e)
                if e.kind() == std::io::ErrorKind::AlreadyExists && attempt + 1 < TEMP_ATTEMPTS =>
            {
                attempt += 1;
            }
            Err(e) => return Err((tmp, e)),
        }
    }
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
    let (tmp, file) = create_temp_beside(&dir, name).map_err(|(p, e)| {
        io(
            &format!("creating a temporary file beside {}", out.display()),
            &p,
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
