//! Paths and sizes a hostile or careless user gives on the command line:
//! each is refused with exit 2 and one clear message, quickly, and nothing
//! that is not a regular file is replaced.

use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs nsimage, killing it if it has not exited within `limit` (a command
/// that blocks or grows without end fails the test instead of hanging it).
fn nsimage_within(args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nsimage"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run nsimage");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("nsimage {args:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("collect output")
}

fn nsimage(args: &[&str]) -> Output {
    nsimage_within(args, Duration::from_secs(30))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn mkfifo(p: &Path) {
    let st = Command::new("mkfifo").arg(p).status().expect("run mkfifo");
    assert!(st.success(), "mkfifo {}", p.display());
}

fn generate_to(p: &Path) -> Output {
    nsimage(&["generate", "-o", p.to_str().unwrap(), "--inodes", "200"])
}

/// `generate -o` writes only to a missing path or over a regular file: a
/// FIFO, a directory and symbolic links (to a directory, to a regular file)
/// are refused with exit 2 and left as they were.
#[test]
fn generate_replaces_only_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let regular = dir.path().join("regular.nsi");
    std::fs::write(&regular, b"old").unwrap();
    let to_dir = dir.path().join("to-dir");
    std::os::unix::fs::symlink(&sub, &to_dir).unwrap();
    let to_file = dir.path().join("to-file");
    std::os::unix::fs::symlink(&regular, &to_file).unwrap();

    for (p, what) in [
        (&fifo, "a FIFO"),
        (&sub, "a directory"),
        (&to_dir, "a symbolic link"),
        (&to_file, "a symbolic link"),
    ] {
        let before = std::fs::symlink_metadata(p).unwrap().file_type();
        let out = generate_to(p);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{}: {err}", p.display());
        assert!(
            err.contains(p.to_str().unwrap()) && err.contains(what),
            "{err}"
        );
        let after = std::fs::symlink_metadata(p).unwrap().file_type();
        assert_eq!(before, after, "{} was replaced", p.display());
    }
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    assert_eq!(std::fs::read(&regular).unwrap(), b"old");
    // No temporary file is left behind.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 5, "{names:?}");

    // A regular file and a missing path are written.
    assert_eq!(generate_to(&regular).status.code(), Some(0));
    assert_ne!(std::fs::read(&regular).unwrap(), b"old");
    let new = dir.path().join("new.nsi");
    assert_eq!(generate_to(&new).status.code(), Some(0));
    assert!(new.is_file());
}

/// `verify`, `load` (every read strategy) and `info` refuse a FIFO and a
/// directory with exit 2 at once; a plain open of a FIFO blocked forever.
#[test]
fn readers_refuse_a_fifo_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("image.nsi");
    mkfifo(&fifo);
    let f = fifo.to_str().unwrap();
    let d = dir.path().to_str().unwrap();
    for (path, what) in [(f, "a FIFO"), (d, "a directory")] {
        for args in [
            vec!["verify", path],
            vec!["load", path],
            vec!["load", path, "--read", "bulk"],
            vec!["load", path, "--read", "stream"],
            vec!["info", path],
            vec!["info", path, "--json"],
        ] {
            let out = nsimage_within(&args, Duration::from_secs(10));
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains(path) && err.contains(what), "{args:?}: {err}");
        }
    }
}

/// A namespace that cannot fit this machine's memory, its disk (or the
/// 32-bit slot space) is refused up front, not generated until the
/// allocator aborts or the disk fills.
#[test]
fn generate_refuses_what_cannot_fit() {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("x.nsi");
    let o = out_path.to_str().unwrap();
    let bench_dir = dir.path().join("bench");
    let b = bench_dir.to_str().unwrap();
    for (args, says) in [
        (
            vec!["generate", "-o", o, "--inodes", "1000000000000"],
            "at most",
        ),
        // Below the slot limit, but 4e9 inodes need about a terabyte of
        // memory built whole (version 1), and some 380 GB of disk streamed.
        (
            vec![
                "generate",
                "-o",
                o,
                "--inodes",
                "4000000000",
                "--generator",
                "1",
            ],
            "memory",
        ),
        (
            vec!["generate", "-o", o, "--inodes", "4000000000"],
            "of disk",
        ),
        (
            vec![
                "bench",
                "--inodes",
                "1000000000000",
                "--dir",
                b,
                "--no-peers",
            ],
            "at most",
        ),
    ] {
        let out = nsimage_within(&args, Duration::from_secs(20));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!out_path.exists());
    }
}

/// `--threads` above the limit is a usage error with one message, for every
/// command that takes it; the OS error used to be printed three times (or,
/// where the OS let it, 100,000 threads were started).
#[test]
fn thread_counts_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("x.nsi");
    assert_eq!(generate_to(&img).status.code(), Some(0));
    let i = img.to_str().unwrap();
    let b = dir.path().join("bench");
    for args in [
        // The parallel path: the serial one never started the pool.
        vec![
            "load",
            i,
            "--threads",
            "100000",
            "--parallel-threshold",
            "0",
        ],
        vec!["load", i, "--threads", "1025"],
        vec![
            "bench",
            "--inodes",
            "200",
            "--threads",
            "1,100000",
            "--dir",
            b.to_str().unwrap(),
            "--no-peers",
        ],
    ] {
        let out = nsimage(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.matches("at most 1024 threads").count(), 1, "{err}");
        assert!(!err.contains("os error"), "{err}");
    }
    // The limit itself is accepted.
    let out = nsimage(&["load", i, "--threads", "1024", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// A file left at the temporary name a save would use (by a crashed run
/// that had the same process id, say: a FIFO here) neither blocks the save
/// nor is opened or removed: the next temporary name is taken.
#[test]
fn a_stale_temporary_file_does_not_block_a_save() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("x.nsi");
    let stale = nsimage_store::save::temp_path(&target, 0);
    mkfifo(&stale);
    let mut ns = nsimage_namespace::Namespace::default();
    ns.mkdirs(b"/a/b", &PERM, 1).unwrap();
    nsimage_store::save::save_image(
        &nsimage_store::fs::RealFs::default(),
        &target,
        &ns,
        &Default::default(),
    )
    .expect("save beside a stale temp");
    let loaded = nsimage_loader::load(&target, &Default::default()).unwrap();
    assert_eq!(loaded.namespace.digest(), ns.digest());
    assert!(std::fs::symlink_metadata(&stale)
        .unwrap()
        .file_type()
        .is_fifo());
    assert!(!nsimage_store::save::temp_path(&target, 1).exists());
}

const PERM: nsimage_namespace::PermSpec<'static> = nsimage_namespace::PermSpec {
    user: b"u",
    group: b"g",
    mode: 0o755,
};

/// `journal dump` of a FIFO named like a segment is refused at once
/// (exit 2), not read without end.
#[test]
fn journal_dump_refuses_a_fifo_without_blocking() {
    let tmp = tempfile::tempdir().unwrap();
    let seg = tmp.path().join("edits_inprogress_00000000000000000001");
    mkfifo(&seg);
    let out = nsimage_within(
        &["journal", "dump", seg.to_str().unwrap()],
        Duration::from_secs(20),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("FIFO"), "{}", stderr(&out));
}

/// Makes a character device node like /dev/null (1, 3) at `p`; false where
/// this process may not (not root).
fn mknod_null(p: &Path) -> bool {
    Command::new("mknod")
        .arg(p)
        .args(["c", "1", "3"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A command's arguments for an image and an output path.
type Args = fn(&str, &str) -> Vec<String>;

/// Defect 9 of issue 24: `dump -o`, `export -o` and `distribution --plot`
/// over a FIFO, a device node or a symbolic link (to a regular file, to a
/// device) exit 2 naming the path, and the target is untouched: same kind
/// of file, a linked file's content unchanged, no temporary file left.
/// A regular file is still replaced.
#[test]
fn every_output_path_replaces_only_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("image.nsi");
    assert_eq!(generate_to(&image).status.code(), Some(0));
    let img = image.to_str().unwrap();
    let commands: [(&str, Args); 3] = [
        ("dump", |i, o| {
            ["dump", i, "--format", "jsonl", "-o", o]
                .map(String::from)
                .to_vec()
        }),
        ("export", |i, o| {
            ["export", i, "-o", o].map(String::from).to_vec()
        }),
        ("distribution", |i, o| {
            ["distribution", i, "--plot", o].map(String::from).to_vec()
        }),
    ];
    for (name, args) in commands {
        let sub = dir.path().join(name);
        std::fs::create_dir(&sub).unwrap();
        let fifo = sub.join("fifo");
        mkfifo(&fifo);
        let kept = sub.join("kept");
        std::fs::write(&kept, b"keep me").unwrap();
        let to_file = sub.join("to-file");
        std::os::unix::fs::symlink(&kept, &to_file).unwrap();
        let mut targets = vec![
            (fifo.clone(), "a FIFO"),
            (to_file.clone(), "a symbolic link"),
        ];
        let node = sub.join("null");
        if mknod_null(&node) {
            let to_node = sub.join("to-null");
            std::os::unix::fs::symlink(&node, &to_node).unwrap();
            targets.push((node.clone(), "a character device"));
            targets.push((to_node, "a symbolic link"));
        } else {
            eprintln!("not root: the device-node cases of {name} are not run");
        }
        for (p, what) in &targets {
            let before = std::fs::symlink_metadata(p).unwrap().file_type();
            let a = args(img, p.to_str().unwrap());
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            let out = nsimage_within(&a, Duration::from_secs(30));
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{a:?}: {err}");
            assert!(
                err.contains(p.to_str().unwrap()) && err.contains(what),
                "{a:?}: {err}"
            );
            let after = std::fs::symlink_metadata(p).unwrap().file_type();
            assert_eq!(before, after, "{a:?} replaced {}", p.display());
        }
        assert_eq!(std::fs::read(&kept).unwrap(), b"keep me", "{name}");
        if node.exists() {
            let t = std::fs::symlink_metadata(&node).unwrap().file_type();
            assert!(t.is_char_device(), "{name} replaced the device node");
        }
        // Nothing but what the test made is left in the directory.
        let names = std::fs::read_dir(&sub).unwrap().count();
        assert_eq!(names, targets.len() + 1, "{name}: a file was left behind");
        // A regular file is replaced.
        let a = args(img, kept.to_str().unwrap());
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let out = nsimage(&a);
        assert_eq!(out.status.code(), Some(0), "{a:?}: {}", stderr(&out));
        assert_ne!(std::fs::read(&kept).unwrap(), b"keep me", "{name}");
    }
}

/// `export -o DIR` into a dataset directory refuses a FIFO or a symbolic
/// link among the parts it would replace, and a link to a directory.
#[test]
fn export_dataset_replaces_only_regular_parts() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("image.nsi");
    assert_eq!(generate_to(&image).status.code(), Some(0));
    let set = dir.path().join("set");
    std::fs::create_dir(&set).unwrap();
    let part = set.join("part-00000.parquet");
    mkfifo(&part);
    let out = nsimage(&[
        "export",
        image.to_str().unwrap(),
        "-o",
        set.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("a FIFO"), "{}", stderr(&out));
    assert!(std::fs::symlink_metadata(&part)
        .unwrap()
        .file_type()
        .is_fifo());
    let link = dir.path().join("to-set");
    std::os::unix::fs::symlink(&set, &link).unwrap();
    let out = nsimage(&[
        "export",
        image.to_str().unwrap(),
        "-o",
        link.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("a symbolic link"), "{}", stderr(&out));
}

/// `export -o LINK/` (a symbolic link to a directory, named with trailing
/// slashes) is refused like `export -o LINK`, not written through into the
/// link's target; so is `FILE/` over a regular file. `NEW/` (missing) still
/// makes a dataset.
#[test]
fn export_refuses_a_link_named_with_a_trailing_slash() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("image.nsi");
    assert_eq!(generate_to(&image).status.code(), Some(0));
    let img = image.to_str().unwrap();
    let target = dir.path().join("elsewhere");
    std::fs::create_dir(&target).unwrap();
    let link = dir.path().join("to-elsewhere");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for slashes in ["/", "//"] {
        let o = format!("{}{slashes}", link.display());
        let out = nsimage(&["export", img, "-o", &o]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{o}: {err}");
        assert!(err.contains("a symbolic link"), "{o}: {err}");
        assert_eq!(
            std::fs::read_dir(&target).unwrap().count(),
            0,
            "{o}: written through the link"
        );
    }
    let file = dir.path().join("file");
    std::fs::write(&file, b"keep me").unwrap();
    let o = format!("{}/", file.display());
    let out = nsimage(&["export", img, "-o", &o]);
    assert_eq!(out.status.code(), Some(2), "{o}: {}", stderr(&out));
    assert!(stderr(&out).contains("a regular file"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&file).unwrap(), b"keep me");
    let fresh = dir.path().join("fresh");
    let o = format!("{}/", fresh.display());
    let out = nsimage(&["export", img, "-o", &o]);
    assert_eq!(out.status.code(), Some(0), "{o}: {}", stderr(&out));
    assert!(fresh.join("part-00000.parquet").is_file());
}

/// A file left beside the output by an earlier run that had this run's
/// process id (`.NAME.tmp.PID`: the name the temporary file used to get)
/// neither blocks `dump -o` nor `export -o` nor is touched. `sh` makes the
/// file under its own pid and then `exec`s nsimage, which keeps that pid.
#[test]
fn a_leftover_temporary_name_of_the_same_pid_does_not_block_an_output() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("image.nsi");
    assert_eq!(generate_to(&image).status.code(), Some(0));
    let cases: [(&str, &[&str]); 2] = [
        ("out.jsonl", &["dump", "--format", "jsonl"]),
        ("out.parquet", &["export"]),
    ];
    let mut failed = Vec::new();
    for (name, cmd) in cases {
        let script = format!(
            "printf leftover > \"$1/.{name}.tmp.$$\" && exec \"$0\" {} \"$2\" {} -o \"$1/{name}\"",
            cmd[0],
            cmd[1..].join(" ")
        );
        let out = Command::new("sh")
            .arg("-c")
            .arg(&script)
            .arg(env!("CARGO_BIN_EXE_nsimage"))
            .arg(dir.path())
            .arg(&image)
            .stdin(Stdio::null())
            .output()
            .expect("run sh");
        if out.status.code() != Some(0) {
            failed.push(format!("{name}: {}", stderr(&out)));
            continue;
        }
        assert!(dir.path().join(name).is_file(), "{name}");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with(&format!(".{name}.tmp.")))
            .collect();
        assert_eq!(left.len(), 1, "{name}: {left:?}");
        let kept = std::fs::read(dir.path().join(&left[0])).unwrap();
        assert_eq!(kept, b"leftover", "{name}: the leftover was touched");
    }
    assert!(failed.is_empty(), "{failed:#?}");
}
