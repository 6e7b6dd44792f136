//! Where an export goes: one file, or a dataset directory of
//! `part-00000.parquet`, `part-00001.parquet`, ... Every file is written
//! beside its final name, synced and renamed into place, so no half-written
//! file ever appears under a final name.

use crate::error::ExportError;
use crate::options::{ExportOptions, ExportStats};
use crate::write::write_parts;
use nsimage_namespace::Namespace;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Whether `out` names a dataset directory: an existing directory, or a
/// path ending in `/`.
pub fn is_dataset_target(out: &Path) -> bool {
    out.is_dir() || out.as_os_str().as_encoded_bytes().ends_with(b"/")
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ExportError + '_ {
    move |source| ExportError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Temporary names tried beside a final name before giving up.
const TEMP_ATTEMPTS: u32 = 64;

/// A fresh temporary file for `name` in `dir`: `.NAME.tmp.RANDOM`, created
/// new, so a leftover of an earlier run (whatever its process id) or
/// another writer's file is neither opened nor removed; a name already
/// taken is skipped for the next random one. The randomness is std's
/// per-process hash keys (seeded by the OS), enough to keep names apart.
fn create_temp_beside(dir: &Path, name: &std::ffi::OsStr) -> Result<(PathBuf, File), ExportError> {
    use std::hash::BuildHasher;
    let keys = std::collections::hash_map::RandomState::new();
    let mut attempt = 0u32;
    loop {
        let suffix = keys.hash_one((attempt, std::process::id()));
        let mut t = std::ffi::OsString::from(".");
        t.push(name);
        t.push(format!(".tmp.{suffix:016x}"));
        let tmp = dir.join(t);
        match File::options().write(true).create_new(true).open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e)
                if e.kind() == std::io::ErrorKind::AlreadyExists && attempt + 1 < TEMP_ATTEMPTS =>
            {
                attempt += 1;
            }
            Err(e) => return Err(io(&tmp)(e)),
        }
    }
}

/// Refuses `out` unless it names nothing or a regular file, looked at
/// without following a symbolic link.
fn check_final_name(out: &Path) -> Result<(), ExportError> {
    let t = match std::fs::symlink_metadata(out) {
        Ok(m) => m.file_type(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(out)(e)),
    };
    if t.is_file() {
        return Ok(());
    }
    let kind = nsimage_format::file_type::describe(t);
    Err(ExportError::TargetRefused {
        path: out.to_path_buf(),
        kind,
    })
}

/// Flushes, syncs and renames a finished temporary file; its size. The
/// final name is checked just before the rename (see
/// [`check_final_name`]): whatever appeared there while the file was
/// written is never replaced unless it is a regular file.
fn seal(w: BufWriter<File>, tmp: &Path, out: &Path) -> Result<u64, ExportError> {
    let file = w.into_inner().map_err(|e| io(tmp)(e.into_error()))?;
    file.sync_all().map_err(io(tmp))?;
    let len = file.metadata().map_err(io(tmp))?.len();
    drop(file);
    check_final_name(out)?;
    std::fs::rename(tmp, out).map_err(io(out))?;
    Ok(len)
}

fn sync_dir(dir: &Path) {
    // A directory that cannot be opened for a sync (some filesystems)
    // leaves the renames done but not yet durable.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// The name of dataset part `k`.
pub fn part_name(k: usize) -> String {
    format!("part-{k:05}.parquet")
}

/// Exports `ns` to `out`: a dataset when [`is_dataset_target`] says so
/// (parts of `opts.row_groups_per_file` row groups; stale parts of an
/// earlier, longer export removed), else one file.
pub fn export_to_path(
    ns: &Namespace,
    opts: &ExportOptions,
    out: &Path,
) -> Result<ExportStats, ExportError> {
    export_via(opts, out, &mut |per_file, open, close| {
        write_parts(ns, opts, per_file, open, close)
    })
}

/// The writer of one output file.
pub(crate) type Part = BufWriter<File>;
/// Opens part `k`.
pub(crate) type Open<'a> = dyn FnMut(usize) -> Result<Part, ExportError> + Send + 'a;
/// Closes part `k`, giving its size.
pub(crate) type Close<'a> = dyn FnMut(usize, Part) -> Result<u64, ExportError> + Send + 'a;

/// Writes the parts: given the row groups per file (`None`: one file),
/// opening and closing each.
pub(crate) type WriteParts<'a> =
    dyn FnMut(Option<u32>, &mut Open<'_>, &mut Close<'_>) -> Result<ExportStats, ExportError> + 'a;

/// Exports to `out` (as [`export_to_path`] says) what `write` writes into
/// the parts it opens and closes, given the row groups per file (`None`:
/// one file).
pub(crate) fn export_via(
    opts: &ExportOptions,
    out: &Path,
    write: &mut WriteParts<'_>,
) -> Result<ExportStats, ExportError> {
    let dataset = is_dataset_target(out);
    let (dir, file_name) = if dataset {
        std::fs::create_dir_all(out).map_err(io(out))?;
        (out.to_path_buf(), None)
    } else {
        let name = out.file_name().ok_or_else(|| ExportError::Io {
            path: out.to_path_buf(),
            source: std::io::Error::other("not a file name"),
        })?;
        let dir = match out.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        (dir, Some(name.to_os_string()))
    };
    let target = |k: usize| -> PathBuf {
        match &file_name {
            Some(n) => dir.join(n),
            None => dir.join(part_name(k)),
        }
    };
    // The temporary file of the part being written, if any.
    let open_tmp: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);
    let result = {
        let open_tmp = &open_tmp;
        let mut open = |k: usize| -> Result<BufWriter<File>, ExportError> {
            let final_name = target(k);
            let name = final_name.file_name().unwrap_or_default().to_os_string();
            let (tmp, f) = create_temp_beside(&dir, &name)?;
            *open_tmp.lock().unwrap_or_else(|p| p.into_inner()) = Some(tmp);
            Ok(BufWriter::with_capacity(1 << 20, f))
        };
        let mut close = |k: usize, mut w: BufWriter<File>| -> Result<u64, ExportError> {
            let tmp = open_tmp
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
                .ok_or_else(|| ExportError::Io {
                    path: target(k),
                    source: std::io::Error::other("a part closed that was never opened"),
                })?;
            w.flush().map_err(io(&tmp))?;
            let len = seal(w, &tmp, &target(k))?;
            *open_tmp.lock().unwrap_or_else(|p| p.into_inner()) = None;
            Ok(len)
        };
        let groups_per_file = dataset.then_some(opts.row_groups_per_file);
        write(groups_per_file, &mut open, &mut close)
    };
    match result {
        Ok(stats) => {
            if dataset {
                remove_stale_parts(&dir, stats.files)?;
            }
            sync_dir(&dir);
            Ok(stats)
        }
        Err(e) => {
            if let Some(tmp) = open_tmp.into_inner().unwrap_or_else(|p| p.into_inner()) {
                let _ = std::fs::remove_file(tmp);
            }
            Err(e)
        }
    }
}

/// Removes `part-NNNNN.parquet` files numbered `files` and up.
fn remove_stale_parts(dir: &Path, files: u64) -> Result<(), ExportError> {
    for e in std::fs::read_dir(dir).map_err(io(dir))? {
        let e = e.map_err(io(dir))?;
        let name = e.file_name();
        let Some(n) = name.to_str() else { continue };
        let Some(k) = n
            .strip_prefix("part-")
            .and_then(|r| r.strip_suffix(".parquet"))
            .and_then(|d| d.parse::<u64>().ok())
        else {
            continue;
        };
        if k >= files {
            std::fs::remove_file(e.path()).map_err(io(&e.path()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileTypeExt;

    /// A fresh directory under the system's temporary directory, removed
    /// on drop.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(tag: &str) -> Scratch {
            let d = std::env::temp_dir().join(format!(
                "nsimage-export-{tag}-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir(&d).unwrap();
            Scratch(d)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A finished temporary file beside `out`, as `export_to_path` leaves it
    /// for `seal`.
    fn finished(dir: &Path, out: &Path) -> (BufWriter<File>, PathBuf) {
        let (tmp, f) = create_temp_beside(dir, out.file_name().unwrap()).unwrap();
        let mut w = BufWriter::new(f);
        w.write_all(b"new parquet bytes").unwrap();
        (w, tmp)
    }

    #[test]
    fn seal_refuses_a_link_a_fifo_or_a_directory_at_the_final_name() {
        let s = Scratch::new("seal");
        let victim = s.0.join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let link = s.0.join("link.parquet");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let fifo = s.0.join("fifo.parquet");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let dir = s.0.join("dir.parquet");
        std::fs::create_dir(&dir).unwrap();
        for (out, kind) in [
            (&link, "a symbolic link"),
            (&fifo, "a FIFO"),
            (&dir, "a directory"),
        ] {
            let (w, tmp) = finished(&s.0, out);
            let e = seal(w, &tmp, out).unwrap_err();
            match &e {
                ExportError::TargetRefused { path, kind: k } => {
                    assert_eq!(path, out);
                    assert_eq!(*k, kind);
                }
                other => panic!("{}: {other}", out.display()),
            }
            assert!(e.to_string().contains(kind), "{e}");
            // The temporary file is still there for the caller to remove.
            assert!(tmp.exists());
            std::fs::remove_file(&tmp).unwrap();
        }
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
        assert!(dir.is_dir());
    }

    #[test]
    fn seal_replaces_a_regular_file_or_creates_a_missing_one() {
        let s = Scratch::new("seal-ok");
        let old = s.0.join("old.parquet");
        std::fs::write(&old, b"old").unwrap();
        let missing = s.0.join("missing.parquet");
        for out in [&old, &missing] {
            let (w, tmp) = finished(&s.0, out);
            assert_eq!(seal(w, &tmp, out).unwrap(), 17);
            assert_eq!(std::fs::read(out).unwrap(), b"new parquet bytes");
            assert!(!tmp.exists());
        }
    }
}
