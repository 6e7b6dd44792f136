//! `store status` and `journal dump` never change a store (no lock, no
//! cleanup, no cut) and work where nothing can be written; errors name the
//! path the user gave; `--ops` that would overflow the txid is refused.

use crate::common;

use common::{json, nsimage};

use nsimage_store::fs::{Fs, FsFile, RealFs};
use nsimage_store::{Store, StoreOptions};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Every entry of the directory: its bytes (None for a directory) and mtime.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Option<Vec<u8>>, SystemTime)> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let bytes = m.is_file().then(|| std::fs::read(&p).unwrap());
            (p, (bytes, m.modified().unwrap()))
        })
        .collect()
}

/// A file system on which every change fails, as on a read-only mount.
struct ReadOnlyFs(RealFs);

fn erofs<T>() -> io::Result<T> {
    Err(io::Error::from_raw_os_error(30)) // EROFS
}

impl Fs for ReadOnlyFs {
    fn create(&self, _: &Path) -> io::Result<Box<dyn FsFile>> {
        erofs()
    }
    fn create_new(&self, _: &Path) -> io::Result<Box<dyn FsFile>> {
        erofs()
    }
    fn append(&self, _: &Path) -> io::Result<Box<dyn FsFile>> {
        erofs()
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.0.read(path)
    }
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn io::Read + Send>> {
        self.0.open_read(path)
    }
    fn rename(&self, _: &Path, _: &Path) -> io::Result<()> {
        erofs()
    }
    fn remove(&self, _: &Path) -> io::Result<()> {
        erofs()
    }
    fn sync_dir(&self, _: &Path) -> io::Result<()> {
        erofs()
    }
    fn truncate(&self, _: &Path, _: u64) -> io::Result<()> {
        erofs()
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.0.list(dir)
    }
    fn len(&self, path: &Path) -> io::Result<u64> {
        self.0.len(path)
    }
    fn file_type(&self, path: &Path) -> io::Result<std::fs::FileType> {
        self.0.file_type(path)
    }
    fn read_calls(&self) -> u64 {
        self.0.read_calls()
    }
    fn sync_calls(&self) -> u64 {
        self.0.sync_calls()
    }
}

#[test]
fn status_and_dump_change_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("st");
    let d = dir.to_str().unwrap();
    assert_eq!(nsimage(&["store", "init", d]).status.code(), Some(0));
    let a = json(&nsimage(&[
        "store",
        "apply",
        d,
        "--ops",
        "300",
        "--checkpoint-every",
        "100",
        "--json",
    ]));
    json(&nsimage(&["store", "apply", d, "--ops", "40", "--json"]));
    // A torn tail, an unfinished checkpoint, a user's file; and no LOCK, as
    // in a read-only copy of a store.
    let seg = dir.join(nsimage_store::journal::open_name(301));
    let mut bytes = std::fs::read(&seg).unwrap();
    bytes.extend_from_slice(b"\x40\x01\x02");
    std::fs::write(&seg, &bytes).unwrap();
    std::fs::write(dir.join("image_00000000000000000340.tmp"), b"half").unwrap();
    std::fs::write(dir.join("notes.tmp.txt"), b"mine").unwrap();
    std::fs::remove_file(dir.join("LOCK")).unwrap();
    let before = snapshot(&dir);

    let st = json(&nsimage(&["store", "status", d, "--json"]));
    assert_eq!(st["txid"], 340);
    assert_eq!(st["torn_tail_bytes"], 3);
    assert_eq!(st["unknown_files"], serde_json::json!(["notes.tmp.txt"]));
    assert_eq!(
        st["temporary_files"],
        serde_json::json!(["image_00000000000000000340.tmp"])
    );
    assert_eq!(st["images"].as_array().unwrap().len(), 2);
    assert_ne!(st["digest"], a["digest"], "40 more ops since");
    assert_eq!(
        snapshot(&dir),
        before,
        "store status --json changed the store"
    );
    let text = nsimage(&["store", "status", d]);
    assert_eq!(text.status.code(), Some(0));
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(text.contains("txid 340"), "{text}");
    assert!(text.contains("unknown file: notes.tmp.txt"), "{text}");
    assert!(text.contains("torn tail: 3 bytes"), "{text}");
    assert_eq!(snapshot(&dir), before, "store status changed the store");
    let dump = nsimage(&["journal", "dump", d]);
    assert_eq!(dump.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&dump.stderr).contains("3 torn bytes"));
    assert_eq!(snapshot(&dir), before, "journal dump changed the store");
    let dump = nsimage(&["journal", "dump", seg.to_str().unwrap()]);
    assert_eq!(dump.status.code(), Some(0));
    assert_eq!(snapshot(&dir), before, "journal dump changed the segment");

    // Where every change fails, inspection still works.
    let ro = ReadOnlyFs(RealFs::default());
    let s = Store::inspect(&dir, &ro, &StoreOptions::default()).unwrap();
    assert_eq!((s.txid, s.torn_tail_bytes), (340, 3));
    assert_eq!(snapshot(&dir), before);

    // Recovery then cuts the tail and removes the temporary file.
    let r = json(&nsimage(&["store", "recover", d, "--json"]));
    assert_eq!(r["txid"], 340);
    assert_eq!(r["torn_tail_bytes"], 3);
    assert_eq!(r["digest"], st["digest"]);
    assert!(!dir.join("image_00000000000000000340.tmp").exists());
    assert!(dir.join("notes.tmp.txt").exists());
}

#[test]
fn a_directory_that_is_not_a_store_is_a_usage_error_and_stays_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().to_str().unwrap();
    std::fs::write(
        tmp.path().join("edits_inprogress_00000000000000000001"),
        b"",
    )
    .unwrap();
    let before = snapshot(tmp.path());
    for args in [
        &["journal", "dump", d][..],
        &["store", "status", d],
        &["store", "recover", d],
        &["store", "apply", d, "--ops", "1"],
    ] {
        let out = nsimage(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("not a store"), "{args:?}: {err}");
        assert!(err.contains(d), "{args:?}: {err}");
        assert_eq!(
            snapshot(tmp.path()),
            before,
            "{args:?} changed the directory"
        );
    }
}

#[test]
fn errors_name_the_store_directory_not_its_lock_file() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-store");
    let m = missing.to_str().unwrap();
    for args in [
        &["store", "status", m][..],
        &["store", "recover", m],
        &["store", "checkpoint", m],
        &["store", "apply", m, "--ops", "1"],
        &["journal", "dump", m],
    ] {
        let out = nsimage(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(m), "{args:?}: {err}");
        assert!(!err.contains("LOCK"), "{args:?}: {err}");
    }
    assert!(!missing.exists());
}

#[test]
fn apply_refuses_an_op_count_past_the_last_txid() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("st");
    let d = dir.to_str().unwrap();
    assert_eq!(nsimage(&["store", "init", d]).status.code(), Some(0));
    json(&nsimage(&["store", "apply", d, "--ops", "5", "--json"]));
    let out = nsimage(&["store", "apply", d, "--ops", &u64::MAX.to_string()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--ops"), "{err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("applied"));
    let st = json(&nsimage(&["store", "status", d, "--json"]));
    assert_eq!(st["txid"], 5);
}
