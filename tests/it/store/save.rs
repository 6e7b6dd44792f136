//! The atomic save of `nsimage generate` and the bench
//! (`nsimage_store::save::save_image`), the same sequence as the store's
//! checkpoint, under injected faults and simulated power cuts: a failure at
//! any step leaves the old file or the new one, never a part of one, and a
//! failed save leaves no temporary file behind.

use crate::common;

use common::names;
use nsimage_namespace::Namespace;
use nsimage_store::fs::{Fault, FaultyFs, Fs, RealFs};
use nsimage_store::save::{check_target, save_image, temp_path};
use nsimage_testkit::generate::{generate, GenSpec};
use nsimage_testkit::powercut::{PowerCutFs, PowerCutOptions};
use nsimage_writer::{write_image, WriteOptions};

const OLD: &[u8] = b"the old image, which must survive whole or be replaced whole";

/// A namespace whose image is larger than the save's 1 MiB buffer, so that
/// it reaches the file in several writes.
fn namespace() -> (Namespace, Vec<u8>) {
    let ns = generate(GenSpec {
        inodes: 20_000,
        seed: 7,
    });
    let mut bytes = Vec::new();
    write_image(&ns, &mut bytes, &WriteOptions::default()).unwrap();
    assert!(bytes.len() > 1 << 20, "{} bytes", bytes.len());
    (ns, bytes)
}

/// Every fsync, short write and full disk at every call leaves the old
/// file (and no temporary file) or, once nothing failed, the new one.
#[test]
fn a_fault_at_each_step_leaves_the_old_file_or_the_new_one() {
    let (ns, new) = namespace();
    for fault in [Fault::Fsync, Fault::ShortWrite, Fault::NoSpace] {
        // From a fault at the first call of its kind to one past the last:
        // every call of that kind fails once.
        let mut succeeded = [false; 2];
        let mut failed = 0;
        for after in 0..64 {
            if succeeded == [true; 2] {
                break;
            }
            for (k, existed) in [true, false].into_iter().enumerate() {
                let tmp = tempfile::tempdir().unwrap();
                let target = tmp.path().join("x.nsi");
                if existed {
                    std::fs::write(&target, OLD).unwrap();
                }
                let fs = FaultyFs::new(fault, after);
                let r = save_image(&fs, &target, &ns, &WriteOptions::default());
                let what = format!("{fault:?} after {after}, existed {existed}");
                match r {
                    Ok(summary) => {
                        succeeded[k] = true;
                        assert_eq!(std::fs::read(&target).unwrap(), new, "{what}");
                        assert_eq!(summary.bytes, new.len() as u64, "{what}");
                    }
                    Err(e) => {
                        failed += 1;
                        // The error names the target, not the temporary file.
                        let msg = e.to_string();
                        assert!(msg.contains(target.to_str().unwrap()), "{what}: {msg}");
                        assert!(!msg.contains("x.nsi.tmp"), "{what}: {msg}");
                        if existed {
                            assert_eq!(std::fs::read(&target).unwrap(), OLD, "{what}");
                            assert_eq!(names(tmp.path()), ["x.nsi"], "{what}");
                        } else {
                            assert!(names(tmp.path()).is_empty(), "{what}");
                        }
                    }
                }
            }
        }
        assert_eq!(succeeded, [true; 2], "{fault:?}: never succeeded");
        assert!(failed >= 2, "{fault:?}: {failed} saves failed");
    }
}

/// A power cut before each `Fs` operation of the save (and one after it
/// ends): the target holds the old image or the new one, whole. Run with
/// the strict model, with torn tails, and with directory changes that may
/// persist in order (then a temporary file may survive beside the target,
/// but the target is still whole).
#[test]
fn a_power_cut_at_each_step_leaves_the_old_file_or_the_new_one() {
    let (ns, new) = namespace();
    // How many operations one save takes.
    let ops = {
        let tmp = tempfile::tempdir().unwrap();
        let sim = PowerCutFs::new(PowerCutOptions::new(0));
        save_image(
            &sim,
            &tmp.path().join("x.nsi"),
            &ns,
            &WriteOptions::default(),
        )
        .unwrap();
        sim.ops()
    };
    assert!(ops >= 6, "{ops} operations");
    let (mut old_seen, mut new_seen) = (0, 0);
    for seed in 0..3u64 {
        let models = [
            PowerCutOptions {
                torn_tails: false,
                garbage: false,
                ..PowerCutOptions::new(seed)
            },
            PowerCutOptions::new(seed),
            PowerCutOptions {
                dir_ops_may_persist: true,
                ..PowerCutOptions::new(seed)
            },
        ];
        for opts in models {
            for at in 0..=ops {
                for existed in [true, false] {
                    let tmp = tempfile::tempdir().unwrap();
                    let target = tmp.path().join("x.nsi");
                    if existed {
                        std::fs::write(&target, OLD).unwrap();
                    }
                    let sim = PowerCutFs::new(opts);
                    sim.arm(at);
                    let r = save_image(&sim, &target, &ns, &WriteOptions::default());
                    let what = format!("{opts:?}, cut at {at} of {ops}, existed {existed}");
                    assert_eq!(r.is_ok(), at >= ops, "{what}");
                    sim.cut_now().unwrap();
                    match std::fs::read(&target) {
                        Ok(b) if b == new => new_seen += 1,
                        Ok(b) if existed && b == OLD => old_seen += 1,
                        Ok(b) => panic!("{what}: a partial target of {} bytes", b.len()),
                        Err(e) if !existed && e.kind() == std::io::ErrorKind::NotFound => {
                            old_seen += 1
                        }
                        Err(e) => panic!("{what}: {e}"),
                    }
                    if r.is_ok() {
                        assert_eq!(std::fs::read(&target).unwrap(), new, "{what}");
                    }
                    if !opts.dir_ops_may_persist {
                        let want: &[&str] = if existed || r.is_ok() {
                            &["x.nsi"]
                        } else {
                            &[]
                        };
                        assert_eq!(names(tmp.path()), want, "{what}");
                    }
                }
            }
        }
    }
    assert!(
        old_seen > 0 && new_seen > 0,
        "{old_seen} old, {new_seen} new"
    );
}

/// The save refuses what it must not replace through the `Fs` too (a
/// symbolic link, even to a regular file, and a directory), and leaves it
/// as it was; a name taken at the first temporary name is skipped, never
/// opened or removed.
#[test]
fn the_target_check_and_fresh_temporary_names_go_through_the_fs() {
    let (ns, new) = namespace();
    let tmp = tempfile::tempdir().unwrap();
    let regular = tmp.path().join("regular.nsi");
    std::fs::write(&regular, OLD).unwrap();
    let link = tmp.path().join("link.nsi");
    std::os::unix::fs::symlink(&regular, &link).unwrap();
    let sub = tmp.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let sim = PowerCutFs::new(PowerCutOptions::new(1));
    for (p, what) in [(&link, "a symbolic link"), (&sub, "a directory")] {
        let e = check_target(&sim, p).unwrap_err().to_string();
        assert!(e.contains(what), "{e}");
        let e = save_image(&sim, p, &ns, &WriteOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains(what) && e.contains(p.to_str().unwrap()), "{e}");
    }
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read(&regular).unwrap(), OLD);
    // A file someone else holds at the first temporary name.
    let taken = temp_path(&regular, 0);
    std::fs::write(&taken, b"not ours").unwrap();
    save_image(&sim, &regular, &ns, &WriteOptions::default()).unwrap();
    assert_eq!(std::fs::read(&regular).unwrap(), new);
    assert_eq!(std::fs::read(&taken).unwrap(), b"not ours");
    assert!(!temp_path(&regular, 1).exists());
    // The same through the real file system.
    let fs = RealFs::default();
    save_image(&fs, &regular, &ns, &WriteOptions::default()).unwrap();
    assert_eq!(std::fs::read(&taken).unwrap(), b"not ours");
    assert!(fs.sync_calls() >= 1);
}
