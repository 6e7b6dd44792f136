//! The viewer's commands over whole images: `ls`, `stat`, `du` and `find`
//! agree with one another, with `load`'s counts and with direct filters
//! over the namespace; bad paths and corrupt images get the exit codes and
//! messages of the contract.

use crate::common;

use common::{image, json, nsimage, sample, tiny};
use nsimage_namespace::{Attrs, InodeKind, Namespace, XAttrNs};
use nsimage_testkit::generate::{generate, GenSpec};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

/// The sample namespace with a binary xattr value and a sticky directory
/// added (what `stat` must show as base64 and `t`).
pub(super) fn rich_sample() -> Namespace {
    let mut ns = sample();
    let f = ns.resolve(b"/data/2024/01/part-003").unwrap();
    ns.set_xattr(f, XAttrNs::Trusted, b"bin", &[0, 159, 255, 10])
        .unwrap();
    ns.set_xattr(f, XAttrNs::User, b"note", b"hello").unwrap();
    let t = ns.mkdirs(b"/tmp", &common::P, 50).unwrap();
    ns.set_mode(t, 0o1777).unwrap();
    ns
}

/// Images to check: the rich sample (tiny sub-sections) and a generated
/// 20,000-inode namespace; each with its namespace.
fn images(dir: &Path) -> Vec<(PathBuf, Namespace)> {
    let gen = generate(GenSpec {
        inodes: 20_000,
        seed: 9,
    });
    let mut out = Vec::new();
    for (name, ns, opts) in [
        ("sample.nsi", rich_sample(), tiny(200)),
        ("gen.nsi", gen, tiny(64 << 10)),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, image(&ns, &opts)).unwrap();
        out.push((p, ns));
    }
    out
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The stdout of a command that must succeed.
fn stdout_of(args: &[&str]) -> Vec<u8> {
    let out = nsimage(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The same, as text.
fn text_of(args: &[&str]) -> String {
    String::from_utf8(stdout_of(args)).unwrap()
}

/// JSON lines on stdout of a successful command.
fn json_lines(out: &std::process::Output) -> Vec<Value> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// Every live inode's path, in depth-first name order (sorting by the
/// list of components is that order).
fn all_paths(ns: &Namespace) -> Vec<String> {
    let mut v: Vec<Vec<Vec<u8>>> = ns
        .iter()
        .map(|i| {
            let p = ns.path_of(i.id()).unwrap();
            p.split(|&b| b == b'/')
                .filter(|c| !c.is_empty())
                .map(<[u8]>::to_vec)
                .collect()
        })
        .collect();
    v.sort();
    v.into_iter()
        .map(|c| {
            let mut p = String::new();
            for x in c {
                p.push('/');
                p.push_str(std::str::from_utf8(&x).unwrap());
            }
            if p.is_empty() {
                p.push('/');
            }
            p
        })
        .collect()
}

fn length(ns: &Namespace, id: u64) -> u64 {
    ns.inode(id)
        .unwrap()
        .blocks()
        .iter()
        .map(|b| b.length)
        .sum()
}

#[test]
fn ls_recursive_lists_every_inode_once_and_agrees_with_load() {
    let dir = tempfile::tempdir().unwrap();
    for (img, ns) in images(dir.path()) {
        let load = json(&nsimage(&["load", s(&img), "--json"]));
        let lines = json_lines(&nsimage(&["ls", s(&img), "/", "-R", "--json"]));
        let paths: Vec<&str> = lines.iter().map(|l| l["path"].as_str().unwrap()).collect();
        let unique: HashSet<&str> = paths.iter().copied().collect();
        assert_eq!(unique.len(), paths.len(), "each inode once");
        assert_eq!(paths.len() as u64 + 1, load["inodes"].as_u64().unwrap());
        // The root is not listed; everything else in depth-first name order.
        assert_eq!(paths, all_paths(&ns)[1..]);
        let count = |t: &str| lines.iter().filter(|l| l["type"] == t).count() as u64;
        assert_eq!(count("file"), load["files"].as_u64().unwrap());
        assert_eq!(
            count("directory") + 1,
            load["directories"].as_u64().unwrap()
        );
        assert_eq!(count("symlink"), load["symlinks"].as_u64().unwrap());
        let bytes: u64 = lines.iter().map(|l| l["length"].as_u64().unwrap()).sum();
        assert_eq!(bytes, load["bytes"].as_u64().unwrap());
        for l in &lines {
            let id = l["id"].as_u64().unwrap();
            let i = ns.inode(id).unwrap();
            assert_eq!(
                ns.path_of(id).unwrap(),
                l["path"].as_str().unwrap().as_bytes()
            );
            assert_eq!(l["modification_time"], i.mtime());
            assert_eq!(l["owner"], std::str::from_utf8(i.user()).unwrap());
            assert_eq!(l["permission"]["octal"], format!("{:04o}", i.mode()), "{l}");
            match i.attrs() {
                Attrs::File(f) => assert_eq!(l["replication"], f.replication),
                _ => assert!(l["replication"].is_null()),
            }
            assert_eq!(
                l["symlink_target"].as_str().map(str::as_bytes),
                i.symlink_target()
            );
        }
        // The text form has one line per entry, no header when recursive.
        let text = nsimage(&["ls", s(&img), "-R"]);
        assert!(text.status.success());
        let text = String::from_utf8(text.stdout).unwrap();
        assert_eq!(text.lines().count(), lines.len());
        for (t, l) in text.lines().zip(&lines) {
            let p = l["path"].as_str().unwrap();
            match l["symlink_target"].as_str() {
                Some(target) => assert!(t.ends_with(&format!(" {p} -> {target}")), "{t}"),
                None => assert!(t.ends_with(&format!(" {p}")), "{t}"),
            }
            let mtime = l["modification_time"].as_u64().unwrap();
            assert!(t.contains(&format!(" {} ", nsimage_viewer::text::oiv_time(mtime))));
            let repl = t.split_whitespace().nth(1).unwrap();
            match l["replication"].as_u64() {
                Some(r) => assert_eq!(repl, r.to_string()),
                None => assert_eq!(repl, "-"),
            }
        }
    }
}

#[test]
fn ls_of_a_directory_a_file_and_a_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let (img, ns) = images(dir.path()).swap_remove(0);
    let out = nsimage(&["ls", s(&img), "/data/2024/01"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("Found 40 items"));
    let first = lines.next().unwrap();
    assert!(
        first.starts_with("-rwxr-xr-x   3 hdfs supergroup "),
        "{first}"
    );
    assert!(first.ends_with(" 1970-01-01 00:00 /data/2024/01/part-000"));
    assert_eq!(lines.count(), 39);
    // The root lists its children (default path).
    let out = nsimage(&["ls", s(&img)]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with(&format!("Found {} items\n", ns.root().children().count())));
    assert!(text.contains(" /tmp\n") && text.contains("drwxrwxrwt"));
    // A file lists itself, without a header; so does a symlink.
    let out = nsimage(&["ls", s(&img), "/data/2024/01/part-003"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.contains(" /data/2024/01/part-003\n"));
    let out = nsimage(&["ls", s(&img), "/user/alice/latest", "--json"]);
    let l = json_lines(&out);
    assert_eq!(l.len(), 1);
    assert_eq!(l[0]["type"], "symlink");
    assert_eq!(l[0]["symlink_target"], "/data/2024/01");
    assert_eq!(l[0]["permission"]["string"], "lrwxr-xr-x");
    let out = nsimage(&["ls", s(&img), "/user/alice"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(" /user/alice/latest -> /data/2024/01\n"),
        "{text}"
    );
}

/// `ls -t -S -r -d -C -u` and `stat --format` on the command line, against
/// the JSON lines of the same directory.
#[test]
fn ls_orders_and_forms_and_stat_formats_as_hdfs_dfs() {
    let dir = tempfile::tempdir().unwrap();
    let (img, _) = images(dir.path()).swap_remove(0);
    let img = s(&img);
    let text = text_of;
    let entries = json_lines(&nsimage(&["ls", img, "/data/2024/01", "--json"]));
    let paths = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| !l.starts_with("Found "))
            .map(|l| l.rsplit(' ').next().unwrap().to_string())
            .collect()
    };
    // -C: the paths alone, in name order; -r reverses them.
    let names: Vec<String> = entries
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(paths(&text(&["ls", img, "/data/2024/01", "-C"])), names);
    let mut reversed = names.clone();
    reversed.reverse();
    assert_eq!(
        paths(&text(&["ls", img, "/data/2024/01", "-C", "-r"])),
        reversed
    );
    // -S: largest first, equal lengths in name order (a stable sort).
    let mut by_size = entries.clone();
    by_size.sort_by_key(|e| std::cmp::Reverse(e["length"].as_u64().unwrap()));
    let want: Vec<&str> = by_size
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths(&text(&["ls", img, "/data/2024/01", "-S"])), want);
    // -t: newest first.
    let mut by_time = entries.clone();
    by_time.sort_by_key(|e| std::cmp::Reverse(e["modification_time"].as_u64().unwrap()));
    let want: Vec<&str> = by_time
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths(&text(&["ls", img, "/data/2024/01", "-t"])), want);
    // -d: the directory itself, no count line.
    let d = text(&["ls", img, "/data/2024/01", "-d"]);
    assert_eq!(d.lines().count(), 1, "{d}");
    assert!(
        d.starts_with("drwx") && d.ends_with(" /data/2024/01\n"),
        "{d}"
    );
    // -u: access times, in another minute than the modification time; a
    // directory's is 0. The ACL's `+` after the permission.
    let mut ns = Namespace::default();
    let f = ns
        .mkdirs(b"/t", &common::P, 0)
        .and_then(|_| ns.create(b"/t/f", &common::P, &common::F, 60_000))
        .unwrap();
    ns.set_times(f, None, Some(86_400_000)).unwrap();
    ns.set_acl(f, &[(b"bob", 0, false, 5)]).unwrap();
    let timed = dir.path().join("timed.nsi");
    std::fs::write(&timed, image(&ns, &tiny(200))).unwrap();
    let timed = s(&timed);
    let m = text(&["ls", timed, "/t"]);
    assert!(
        m.ends_with("+  3 hdfs supergroup          0 1970-01-01 00:01 /t/f\n"),
        "{m}"
    );
    let u = text(&["ls", timed, "/t", "-u"]);
    assert!(u.ends_with(" 1970-01-02 00:00 /t/f\n"), "{u}");
    let du = text(&["ls", timed, "/", "-u"]);
    assert!(du.ends_with(" 1970-01-01 00:00 /t\n"), "{du}");
    // stat --format, field by field against stat --json.
    let first = names[0].as_str();
    let st = json(&nsimage(&["stat", img, first, "--json"]));
    let line = text(&["stat", img, first, "--format", "%n|%b|%u:%g|%r|%o|%Y|%F"]);
    assert_eq!(
        line,
        format!(
            "{}|{}|{}:{}|{}|{}|{}|regular file\n",
            first.rsplit('/').next().unwrap(),
            st["length"],
            st["owner"].as_str().unwrap(),
            st["group"].as_str().unwrap(),
            st["replication"],
            st["preferred_block_size"],
            st["modification_time"],
        )
    );
}

/// `du --hdfs/-s/-v` as `hdfs dfs -du` prints it, against `ls --json` and
/// `du --json`; `--small-below` moves what SMALL_FILES counts.
#[test]
fn du_as_hdfs_dfs_du_and_a_small_file_threshold() {
    let dir = tempfile::tempdir().unwrap();
    let (img, _) = images(dir.path()).swap_remove(0);
    let img = s(&img);
    let text = text_of;
    let p = "/data/2024/01";
    let total = json(&nsimage(&["du", img, p, "-d", "0", "--json"]));
    let row = &total["rows"][0];
    let (bytes, space) = (
        row["bytes"].as_u64().unwrap(),
        row["space_consumed"].as_u64().unwrap(),
    );
    // -s -v: the header, then the path's own row, columns two spaces
    // apart and left-aligned.
    let sv = text(&["du", img, p, "-s", "-v"]);
    let w0 = bytes.to_string().len().max(4);
    let w1 = space.to_string().len().max(37);
    assert_eq!(
        sv,
        format!(
            "{:<w0$}  {:<w1$}  FULL_PATH_NAME\n{bytes:<w0$}  {space:<w1$}  {p}\n",
            "SIZE", "DISK_SPACE_CONSUMED_WITH_ALL_REPLICAS"
        )
    );
    // Without -s: one row per child, files too, each as ls sees it.
    let kids = json_lines(&nsimage(&["ls", img, p, "--json"]));
    let rows = text(&["du", img, p, "--hdfs"]);
    assert_eq!(rows.lines().count(), kids.len(), "{rows}");
    for (line, k) in rows.lines().zip(&kids) {
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cols[2], k["path"].as_str().unwrap());
        if k["type"] == "file" {
            let len = k["length"].as_u64().unwrap();
            let r = k["replication"].as_u64().unwrap();
            assert_eq!(cols[..2], [len.to_string(), (len * r).to_string()]);
        }
    }
    // --small-below: every file is shorter than 1P, none shorter than 0.
    let small = |args: &[&str]| {
        let mut a = vec!["du", img, p, "-d", "0", "--json"];
        a.extend_from_slice(args);
        json(&nsimage(&a))["rows"][0]["small_files"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(
        small(&["--small-below", "1P"]),
        row["files"].as_u64().unwrap()
    );
    assert_eq!(small(&["--small-below", "0"]), 0);
    let by = json(&nsimage(&[
        "du",
        img,
        p,
        "--by",
        "owner",
        "--small-below",
        "1P",
        "--json",
    ]));
    let in_rows: u64 = by["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["small_files"].as_u64().unwrap())
        .sum();
    assert_eq!(in_rows, row["files"].as_u64().unwrap(), "{by}");
}

/// `--threads` on the commands that read a whole image: the same answers
/// on one thread as on several.
#[test]
fn threads_change_no_answer() {
    let dir = tempfile::tempdir().unwrap();
    let (img, ns) = images(dir.path()).swap_remove(0);
    // A later image of the same namespace, so that the diff has changes.
    let mut later = ns.clone();
    later.mkdirs(b"/new/dir", &common::P, 99).unwrap();
    later.delete(b"/data/2024/01/part-007", false, 100).unwrap();
    let later_img = dir.path().join("later.nsi");
    std::fs::write(&later_img, image(&later, &tiny(200))).unwrap();
    let img = s(&img);
    let run = stdout_of;
    let changes = json(&nsimage(&["diff", img, s(&later_img), "--json"]));
    assert_eq!(changes["summary"]["created"], 2, "{changes}");
    for args in [
        vec!["ls", img, "/", "-R"],
        vec!["distribution", img, "--json"],
        vec!["diff", img, s(&later_img), "--json"],
        vec!["du", img, "/", "-d", "2"],
        vec!["count", img, "/", "/data"],
        vec!["find", img, "/", "--sorted"],
    ] {
        let all = run(&args);
        for t in ["1", "3"] {
            let mut with = args.clone();
            with.extend(["--threads", t]);
            assert_eq!(run(&with), all, "{with:?}");
        }
    }
}

#[test]
fn du_totals_equal_load_and_a_direct_sum() {
    let dir = tempfile::tempdir().unwrap();
    for (img, ns) in images(dir.path()) {
        let load = json(&nsimage(&["load", s(&img), "--json"]));
        let du = json(&nsimage(&["du", s(&img), "/", "-d", "2", "--json"]));
        let rows = du["rows"].as_array().unwrap();
        let top = &rows[0];
        assert_eq!(top["path"], "/");
        assert_eq!(top["depth"], 0);
        for k in ["files", "directories", "symlinks", "bytes"] {
            assert_eq!(top[k], load[k], "{k}");
        }
        assert_eq!(top["namespace"]["used"], load["inodes"]);
        // Every row against a sum over the namespace by path prefix.
        let mut direct: BTreeMap<String, [u64; 6]> = BTreeMap::new();
        let dirs: Vec<String> = all_paths(&ns)
            .into_iter()
            .filter(|p| {
                let depth = p.matches('/').count() - usize::from(p == "/");
                depth <= 2
                    && ns.inode(ns.resolve(p.as_bytes()).unwrap()).unwrap().kind()
                        == InodeKind::Directory
            })
            .collect();
        for i in ns.iter() {
            let p = String::from_utf8(ns.path_of(i.id()).unwrap()).unwrap();
            for d in &dirs {
                let under = d == "/" || p == *d || p.starts_with(&format!("{d}/"));
                if !under {
                    continue;
                }
                let e = direct.entry(d.clone()).or_default();
                match i.attrs() {
                    Attrs::File(f) => {
                        let len = length(&ns, i.id());
                        e[0] += 1;
                        e[3] += len;
                        e[4] += len * u64::from(f.replication);
                        e[5] += u64::from(len < f.preferred_block_size);
                    }
                    Attrs::Directory { .. } => e[1] += 1,
                    Attrs::Symlink { .. } => e[2] += 1,
                }
            }
        }
        let got: Vec<&str> = rows.iter().map(|r| r["path"].as_str().unwrap()).collect();
        assert_eq!(
            got, dirs,
            "rows: the path and its directories to depth 2, in order"
        );
        for r in rows {
            let e = direct[r["path"].as_str().unwrap()];
            let keys = [
                "files",
                "directories",
                "symlinks",
                "bytes",
                "space_consumed",
                "small_files",
            ];
            for (k, v) in keys.iter().zip(e) {
                assert_eq!(r[k], v, "{} {k}", r["path"]);
            }
            assert_eq!(r["space"]["used"], e[4]);
            assert_eq!(r["namespace"]["used"], e[0] + e[1] + e[2]);
        }
        // Sorted by bytes: the same rows, most first.
        let sorted = json(&nsimage(&[
            "du",
            s(&img),
            "/",
            "-d",
            "2",
            "--sort",
            "bytes",
            "--json",
        ]));
        let srows = sorted["rows"].as_array().unwrap();
        assert_eq!(srows.len(), rows.len());
        assert!(srows
            .windows(2)
            .all(|w| w[0]["bytes"].as_u64() >= w[1]["bytes"].as_u64()));
        // Text: a header, then one line per row ending with its path.
        let text = String::from_utf8(nsimage(&["du", s(&img), "/", "-d", "2"]).stdout).unwrap();
        let mut lines = text.lines();
        assert!(lines.next().unwrap().starts_with("FILES"));
        assert_eq!(lines.count(), rows.len());
    }
}

#[test]
fn du_shows_quota_use() {
    let dir = tempfile::tempdir().unwrap();
    let (img, _) = images(dir.path()).swap_remove(0);
    let du = json(&nsimage(&["du", s(&img), "/user", "--json"]));
    let rows = du["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let alice = &rows[1];
    assert_eq!(alice["path"], "/user/alice");
    // alice, latest, open: three inodes against a quota of 100.
    assert_eq!(alice["namespace"]["quota"], 100);
    assert_eq!(alice["namespace"]["used"], 3);
    assert_eq!(alice["namespace"]["remaining"], 97);
    assert_eq!(alice["space"]["quota"], 1u64 << 30);
    assert_eq!(alice["space"]["remaining"], 1u64 << 30);
    assert!(rows[0]["namespace"]["quota"].is_null());
    let text = String::from_utf8(nsimage(&["du", s(&img), "/user", "-d", "0"]).stdout).unwrap();
    assert_eq!(text.lines().count(), 2);
    assert!(text.contains(" none ") && text.contains(" inf "), "{text}");
    // A file's du is its own row.
    let du = json(&nsimage(&[
        "du",
        s(&img),
        "/data/2024/01/part-003",
        "--json",
    ]));
    assert_eq!(du["rows"].as_array().unwrap().len(), 1);
    assert_eq!(du["rows"][0]["files"], 1);
    assert_eq!(du["rows"][0]["bytes"], 1 + 4 + 7);
}

#[test]
fn find_without_filters_lists_every_inode_and_filters_match_a_direct_filter() {
    let dir = tempfile::tempdir().unwrap();
    for (img, ns) in images(dir.path()) {
        let lines = |args: &[&str]| -> Vec<String> {
            let o = nsimage(args);
            assert!(o.status.success());
            String::from_utf8(o.stdout)
                .unwrap()
                .lines()
                .map(String::from)
                .collect()
        };
        let all = lines(&["find", s(&img), "--sorted"]);
        assert_eq!(
            all,
            all_paths(&ns),
            "every inode, depth first in name order"
        );
        // Streamed (nsimage images): the same matches, in id order.
        let mut streamed = lines(&["find", s(&img)]);
        let ids: Vec<u64> = streamed
            .iter()
            .map(|p| ns.resolve(p.as_bytes()).unwrap())
            .collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "file order");
        streamed.sort();
        let mut sorted = all.clone();
        sorted.sort();
        assert_eq!(streamed, sorted);
        let check = |args: &[&str], keep: &dyn Fn(nsimage_namespace::Inode<'_>) -> bool| {
            let mut a = vec!["find", s(&img), "/", "--json"];
            a.extend_from_slice(args);
            a.push("--sorted");
            let got: Vec<String> = json_lines(&nsimage(&a))
                .iter()
                .map(|l| l["path"].as_str().unwrap().to_string())
                .collect();
            let want: Vec<String> = all_paths(&ns)
                .into_iter()
                .filter(|p| keep(ns.inode(ns.resolve(p.as_bytes()).unwrap()).unwrap()))
                .collect();
            assert_eq!(got, want, "{args:?}");
            // Streamed: the same matches.
            a.pop();
            let mut streamed: Vec<String> = json_lines(&nsimage(&a))
                .iter()
                .map(|l| l["path"].as_str().unwrap().to_string())
                .collect();
            streamed.sort();
            let mut want = want;
            want.sort();
            assert_eq!(streamed, want, "{args:?}, streamed");
            got.len()
        };
        let name = |i: nsimage_namespace::Inode<'_>| String::from_utf8(i.name().to_vec()).unwrap();
        let files = check(&["--type", "f"], &|i| i.kind() == InodeKind::File);
        assert!(files > 0);
        check(&["--type", "d"], &|i| i.kind() == InodeKind::Directory);
        check(&["--type", "l"], &|i| i.kind() == InodeKind::Symlink);
        check(&["--name", "part-0?1"], &|i| {
            let n = name(i);
            n.len() == 8 && n.starts_with("part-0") && n.ends_with('1')
        });
        check(&["--name", "*.csv"], &|i| name(i).ends_with(".csv"));
        check(&["--size", "+100M"], &|i| length(&ns, i.id()) > 100 << 20);
        check(&["--size", "-1k", "--type", "f"], &|i| {
            i.kind() == InodeKind::File && length(&ns, i.id()) < 1024
        });
        check(&["--size", "6"], &|i| length(&ns, i.id()) == 6);
        check(&["--user", "hdfs"], &|i| i.user() == b"hdfs");
        check(&["--mtime-before", "2024-06-01"], &|i| {
            i.mtime() < 1_717_200_000_000
        });
        check(&["--mtime-before", "30"], &|i| i.mtime() < 30);
        check(&["--mtime-after", "2024-06-01"], &|i| {
            i.mtime() > 1_717_200_000_000
        });
        check(&["--group", "supergroup"], &|i| i.group() == b"supergroup");
        // Access times: files only (directories and symlinks have none).
        let atime = |i: nsimage_namespace::Inode<'_>| match i.attrs() {
            Attrs::File(f) => Some(f.atime),
            _ => None,
        };
        check(&["--atime-before", "2024-06-01"], &|i| {
            atime(i).is_some_and(|a| a < 1_717_200_000_000)
        });
        check(&["--atime-after", "0"], &|i| {
            atime(i).is_some_and(|a| a > 0)
        });
        // --count: the number of matches, streamed and loaded alike;
        // --print0: the paths, each ended by a NUL.
        for sorted in [false, true] {
            let mut a = vec!["find", s(&img), "--type", "f", "--count"];
            if sorted {
                a.push("--sorted");
            }
            assert_eq!(lines(&a), [files.to_string()], "{a:?}");
        }
        let o = nsimage(&["find", s(&img), "--print0", "--sorted"]);
        let got: Vec<String> = o
            .stdout
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8(p.to_vec()).unwrap())
            .collect();
        assert_eq!(got, all);
        assert_eq!(o.stdout.last(), Some(&0));
        // Below a path: the path itself first.
        let sub = json_lines(&nsimage(&["find", s(&img), "/user", "--json", "--sorted"]));
        assert_eq!(sub[0]["path"], "/user");
        assert_eq!(sub[0]["type"], "directory");
    }
}

#[test]
fn stat_shows_each_kind() {
    let dir = tempfile::tempdir().unwrap();
    let (img, ns) = images(dir.path()).swap_remove(0);
    let st = |p: &str| json(&nsimage(&["stat", s(&img), p, "--json"]));

    let f = st("/data/2024/01/part-003");
    let id = ns.resolve(b"/data/2024/01/part-003").unwrap();
    let i = ns.inode(id).unwrap();
    assert_eq!(f["id"], id);
    assert_eq!(f["type"], "file");
    assert_eq!(f["name"], "part-003");
    assert_eq!(f["parent"], "/data/2024/01");
    assert_eq!(f["permission"]["octal"], "0755");
    assert_eq!(f["permission"]["string"], "-rwxr-xr-x");
    assert_eq!(f["owner"], "hdfs");
    assert_eq!(f["group"], "supergroup");
    assert_eq!(f["modification_time"], i.mtime());
    let Attrs::File(fa) = i.attrs() else {
        panic!("a file")
    };
    assert_eq!(f["access_time"], fa.atime);
    assert_eq!(f["replication"], 3);
    assert_eq!(f["preferred_block_size"], 128u64 << 20);
    assert_eq!(f["storage_policy"]["id"], 0);
    let blocks = f["blocks"].as_array().unwrap();
    assert_eq!(blocks.len(), fa.blocks.len());
    for (b, want) in blocks.iter().zip(fa.blocks) {
        assert_eq!(b["id"], want.id);
        assert_eq!(b["generation_stamp"], want.generation_stamp);
        assert_eq!(b["length"], want.length);
    }
    assert_eq!(f["length"], 1 + 4 + 7);
    let x = f["xattrs"].as_array().unwrap();
    assert_eq!(x.len(), 2);
    assert_eq!(x[0]["namespace"], "user");
    assert_eq!(x[0]["name"], "note");
    assert_eq!(x[0]["value"], "hello");
    assert_eq!(x[0]["encoding"], "text");
    assert_eq!(x[1]["namespace"], "trusted");
    assert_eq!(x[1]["value"], "AJ//Cg==");
    assert_eq!(x[1]["encoding"], "base64");
    assert!(f["under_construction"].is_null() && f["quota"].is_null());

    let d = st("/user/alice");
    assert_eq!(d["type"], "directory");
    assert_eq!(d["quota"]["namespace"], 100);
    assert_eq!(d["quota"]["space"], 1u64 << 30);
    assert_eq!(d["xattrs"][0]["value"], "core");
    let acl = d["acl"].as_array().unwrap();
    assert_eq!(acl.len(), 2);
    assert_eq!(acl[1]["type"], "user");
    assert_eq!(acl[1]["name"], "bob");
    assert_eq!(acl[1]["text"], "user:bob:r-x");
    assert!(d["blocks"].is_null() && d["replication"].is_null());

    let l = st("/user/alice/latest");
    assert_eq!(l["type"], "symlink");
    assert_eq!(l["symlink_target"], "/data/2024/01");

    let u = st("/user/alice/open");
    assert_eq!(u["under_construction"]["client_name"], "client-1");
    assert_eq!(u["under_construction"]["client_machine"], "host-1");

    let r = st("/");
    assert_eq!(r["id"], nsimage_namespace::ROOT_ID);
    assert!(r["parent"].is_null());
    assert_eq!(r["quota"]["namespace"], Value::Null);
    assert_eq!(st("/tmp")["permission"]["string"], "drwxrwxrwt");

    // Text: one field a line.
    let out = nsimage(&["stat", s(&img), "/data/2024/01/part-003"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for want in [
        "  type: file\n",
        "  permission: 0755 (-rwxr-xr-x)\n",
        "  replication: 3\n",
        "  preferred block size: 134217728 (128.0 MiB)\n",
        "    xattr user.note = \"hello\"\n",
        "    xattr trusted.bin = base64:AJ//Cg==\n",
    ] {
        assert!(text.contains(want), "{want:?} in {text}");
    }
    let text = String::from_utf8(nsimage(&["stat", s(&img), "/user/alice/open"]).stdout).unwrap();
    assert!(text.contains("under construction: client client-1 on host-1"));
}

#[test]
fn bad_paths_and_corrupt_images() {
    let dir = tempfile::tempdir().unwrap();
    let (img, _) = images(dir.path()).swap_remove(1);
    let img = s(&img);
    let file = String::from_utf8(nsimage(&["find", img, "--type", "f"]).stdout)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    let code = |args: &[&str]| {
        let o = nsimage(args);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    for cmd in ["stat", "ls", "du", "find"] {
        let (c, msg) = code(&[cmd, img, "/no/such/dir"]);
        assert_eq!(c, Some(1), "{cmd}: {msg}");
        assert!(msg.contains("no such path"), "{cmd}: {msg}");
        let through = format!("{file}/below");
        let (c, msg) = code(&[cmd, img, &through]);
        assert_eq!(c, Some(1), "{cmd}: {msg}");
        assert!(msg.contains("is a file, not a directory"), "{cmd}: {msg}");
        for bad in ["/a/../b", "relative/path", "/.."] {
            let (c, msg) = code(&[cmd, img, bad]);
            assert_eq!(c, Some(2), "{cmd} {bad}: {msg}");
        }
    }
    let (c, msg) = code(&["ls", img, "/", "-R", "--json", "/x"]);
    assert_eq!(c, Some(2), "{msg}");
    for args in [
        &["find", img, "--size", "+12Q"][..],
        &["find", img, "--type", "x"],
        &["find", img, "--mtime-before", "2024-13-01"],
        &["find", img, "--name", "[unclosed"],
        &["du", img, "--sort", "size"],
        &["stat", "/nonexistent/image.nsi", "/"],
    ] {
        assert_eq!(code(args).0, Some(2), "{args:?}");
    }
    // A corrupt image: exit 1 with the place named.
    let mut bytes = std::fs::read(img).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x10;
    let bad = dir.path().join("bad.nsi");
    std::fs::write(&bad, &bytes).unwrap();
    // `stat` and `ls` of one path read only the pieces on the way (and the
    // index): the damage is found when it lies there, here in the index.
    let mut in_index = std::fs::read(img).unwrap();
    let at = in_index.len() - nsimage_format::consts::footer::SIZE - 8;
    in_index[at] ^= 0x10;
    let bad_index = dir.path().join("bad-index.nsi");
    std::fs::write(&bad_index, &in_index).unwrap();
    for args in [
        &["stat", s(&bad_index), "/"][..],
        &["ls", s(&bad_index), "/"],
        &["ls", s(&bad), "/", "-R"],
        &["du", s(&bad)],
        &["find", s(&bad)],
    ] {
        let (c, msg) = code(args);
        assert_eq!(c, Some(1), "{args:?}: {msg}");
        assert!(
            msg.contains("byte offset") && msg.contains(args[1]),
            "{msg}"
        );
    }
}

/// Names an image could hold to attack the operator's terminal: a title
/// change (OSC ... BEL), a screen clear through C1 CSI (U+009B), a line
/// break that would forge a line, a DEL, a raw ESC in an owner, and a
/// literal backslash sequence that must stay distinguishable.
const HOSTILE: &str = "t\u{1b}]0;pwned\u{7}x";
const C1: &str = "c\u{9b}2J";
const NEWLINE: &str = "a\nb\u{7f}";
const LITERAL: &str = "lit\\x1b";
const OWNER: &str = "o\u{1b}[2J";

/// Whether `out` holds a control character: any C0 but LF, DEL, or a C1
/// control (as UTF-8).
fn has_control(out: &[u8]) -> bool {
    String::from_utf8_lossy(out)
        .chars()
        .any(|c| c != '\n' && c.is_control())
}

/// Issue 24, defect 10: `ls`, `find`, `du`, `stat` and `diff` print the
/// control characters of names, symlink targets and owners escaped
/// (`\xHH`, a backslash as `\\`); their JSON output holds the names as they
/// are.
#[test]
fn control_characters_of_names_are_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let build = |extra: bool| {
        let mut ns = Namespace::default();
        ns.info_mut().namespace_id = 77;
        let owner = nsimage_namespace::PermSpec {
            user: OWNER.as_bytes(),
            group: b"g",
            mode: 0o644,
        };
        let d = ns.mkdirs(b"/evil", &common::P, 1).unwrap();
        for name in [HOSTILE, C1, NEWLINE, LITERAL] {
            ns.create_in(d, name.as_bytes(), &owner, &common::F, 2)
                .unwrap();
        }
        ns.mkdir_in(d, format!("d{HOSTILE}").as_bytes(), &common::P, 2)
            .unwrap();
        ns.symlink(
            b"/evil/link",
            format!("/{HOSTILE}").as_bytes(),
            &common::P,
            3,
        )
        .unwrap();
        if extra {
            ns.info_mut().last_txid = 5;
            ns.create_in(d, format!("new{HOSTILE}").as_bytes(), &owner, &common::F, 4)
                .unwrap();
        }
        ns
    };
    let old = dir.path().join("old.nsi");
    let new = dir.path().join("new.nsi");
    std::fs::write(&old, image(&build(false), &tiny(1 << 20))).unwrap();
    std::fs::write(&new, image(&build(true), &tiny(1 << 20))).unwrap();
    let file = format!("/evil/{HOSTILE}");
    let runs: Vec<Vec<&str>> = vec![
        vec!["ls", s(&old), "/evil"],
        vec!["ls", s(&old), "/", "-R"],
        vec!["find", s(&old), "/evil"],
        vec!["du", s(&old), "/evil", "-d", "1"],
        vec!["stat", s(&old), &file],
        vec!["stat", s(&old), "/evil/link"],
        vec!["diff", s(&old), s(&new)],
    ];
    for args in &runs {
        let out = nsimage(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout.clone()).expect("escaped output is UTF-8");
        assert!(
            !has_control(&out.stdout),
            "{args:?} printed a control: {text:?}"
        );
        assert!(text.contains("t\\x1b]0;pwned\\x07x"), "{args:?}: {text}");
    }
    let by = nsimage(&["du", s(&old), "/evil", "--by", "owner"]);
    assert!(!has_control(&by.stdout), "{by:?}");
    assert!(
        String::from_utf8_lossy(&by.stdout).contains("o\\x1b[2J"),
        "{by:?}"
    );
    // Every form, once in a listing; the owner too.
    let ls = String::from_utf8(nsimage(&["ls", s(&old), "/evil"]).stdout).unwrap();
    for want in [
        "c\\xc2\\x9b2J",
        "a\\x0ab\\x7f",
        "lit\\\\x1b",
        "o\\x1b[2J",
        "-> /t\\x1b",
    ] {
        assert!(ls.contains(want), "{want:?} not in {ls}");
    }
    let find = String::from_utf8(nsimage(&["find", s(&old), "/evil"]).stdout).unwrap();
    assert_eq!(find.lines().count(), 7, "{find}");

    // An error naming a path through one of them (a file on the way).
    let under = format!("{file}/x");
    let out = nsimage(&["stat", s(&old), &under]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(!has_control(&out.stderr), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("t\\x1b]0;pwned\\x07x"),
        "{out:?}"
    );

    // JSON: the names as they are.
    let listed: HashSet<String> = json_lines(&nsimage(&["ls", s(&old), "/evil", "--json"]))
        .iter()
        .map(|v| v["path"].as_str().unwrap().to_string())
        .collect();
    for name in [HOSTILE, C1, NEWLINE, LITERAL] {
        assert!(listed.contains(&format!("/evil/{name}")), "{listed:?}");
    }
    let st = json(&nsimage(&["stat", s(&old), &file, "--json"]));
    assert_eq!(st["owner"], OWNER);
    assert_eq!(st["name"], HOSTILE);
    let found: Vec<String> = json_lines(&nsimage(&["find", s(&old), "/evil", "--json"]))
        .iter()
        .map(|v| v["path"].as_str().unwrap().to_string())
        .collect();
    assert!(found.contains(&file), "{found:?}");
    let d = json(&nsimage(&["diff", s(&old), s(&new), "--json"]));
    assert_eq!(d["created"][0]["path"], format!("/evil/new{HOSTILE}"));
}
