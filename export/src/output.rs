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

/// The temporary name of `name` in `dir` for this process.
fn temp_beside(dir: &Path, name: &std::ffi::OsStr) -> PathBuf {
    let mut t = std::ffi::OsString::from(".");
    t.push(name);
    t.push(format!(".tmp.{}", std::process::id()));
    dir.join(t)
}

/// Flushes, syncs and renames a finished temporary file; its size.
fn seal(w: BufWriter<File>, tmp: &Path, out: &Path) -> Result<u64, ExportError> {
    let file = w.into_inner().map_err(|e| io(tmp)(e.into_error()))?;
    file.sync_all().map_err(io(tmp))?;
    let len = file.metadata().map_err(io(tmp))?.len();
    drop(file);
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
    let mut open_tmp: Option<PathBuf> = None;
    let result = {
        let open_tmp = &mut open_tmp;
        let mut open = |k: usize| -> Result<BufWriter<File>, ExportError> {
            let final_name = target(k);
            let name = final_name.file_name().unwrap_or_default().to_os_string();
            let tmp = temp_beside(&dir, &name);
            let f = File::options()
                .write(true)
                .create_new(true)
                .open(&tmp)
                .map_err(io(&tmp))?;
            *open_tmp = Some(tmp);
            Ok(BufWriter::with_capacity(1 << 20, f))
        };
        let mut close = |k: usize, mut w: BufWriter<File>| -> Result<u64, ExportError> {
            let tmp = temp_beside(&dir, target(k).file_name().unwrap_or_default());
            w.flush().map_err(io(&tmp))?;
            seal(w, &tmp, &target(k))
        };
        let groups_per_file = dataset.then_some(opts.row_groups_per_file);
        write_parts(ns, opts, groups_per_file, &mut open, &mut close)
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
            if let Some(tmp) = open_tmp {
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
