//! `nsimage serve` browsed by a real WebHDFS client: the PyPI `hdfs`
//! package's `InsecureClient` (tests/python/webhdfs_client.py) walks the
//! whole tree and asks `status`, `content`, `list` and `acl_status`; every
//! answer equals what `dump`, `stat`, `ls` and `du` say of the image.
//! Loopback only; the client's every request has a timeout.

use crate::common;
use crate::python_env;
use crate::serve_common;

use common::{json, nsimage};
use serde_json::Value;
use serve_common::{lines, Server};
use std::collections::{BTreeMap, BTreeSet};

/// WebHDFS's permission string from a four-digit octal ("0755" -> "755").
fn perm(octal: &str) -> String {
    let s = octal.trim_start_matches('0');
    if s.is_empty() {
        "0".into()
    } else {
        s.into()
    }
}

/// A WebHDFS FileStatus agrees with the `dump --format jsonl` row of the
/// same inode.
fn check_status(what: &str, st: &Value, row: &Value) {
    assert_eq!(st["fileId"], row["id"], "{what}");
    // WebHDFS's types are upper case; the dump's, the one inode shape's.
    assert_eq!(
        st["type"].as_str().map(str::to_ascii_lowercase).as_deref(),
        row["type"].as_str(),
        "{what}"
    );
    assert_eq!(st["owner"], row["owner"], "{what}");
    assert_eq!(st["group"], row["group"], "{what}");
    assert_eq!(
        st["permission"],
        perm(row["permission"]["octal"].as_str().unwrap()),
        "{what}"
    );
    assert_eq!(st["modificationTime"], row["modification_time"], "{what}");
    assert_eq!(
        st["aclBit"].as_bool().unwrap_or(false),
        row.get("acl").is_some(),
        "{what}"
    );
    if row["type"] == "file" {
        assert_eq!(st["length"], row["length"], "{what}");
        assert_eq!(st["replication"], row["replication"], "{what}");
        assert_eq!(st["blockSize"], row["preferred_block_size"], "{what}");
        assert_eq!(st["accessTime"], row["access_time"], "{what}");
    } else {
        assert_eq!(st["length"], 0, "{what}");
    }
}

#[test]
fn the_hdfs_client_sees_what_dump_stat_ls_and_du_see() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("img");
    let img_s = img.to_str().unwrap();
    let out = nsimage(&["generate", "-o", img_s, "--inodes", "4000", "--seed", "7"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = lines(&nsimage(&["dump", img_s, "--format", "jsonl"]));
    let by_path: BTreeMap<String, &Value> = rows
        .iter()
        .map(|r| (r["path"].as_str().unwrap().to_string(), r))
        .collect();
    // The client's walk lists directories and files; it leaves symlinks
    // out (they are asked about one by one below).
    let mut children: BTreeMap<u64, BTreeSet<String>> = BTreeMap::new();
    let symlinks = rows.iter().filter(|r| r["type"] == "symlink").count();
    assert!(symlinks > 0);
    for r in &rows {
        if r["type"] == "symlink" {
            continue;
        }
        if let Some(p) = r["parent_id"].as_u64() {
            children
                .entry(p)
                .or_default()
                .insert(r["name"].as_str().unwrap().to_string());
        }
    }
    // The paths asked one by one: the root, the first directories with and
    // without an ACL, a file, a symlink.
    let mut asked = vec!["/".to_string()];
    let first = |pred: &dyn Fn(&Value) -> bool| {
        rows.iter()
            .find(|r| r["path"] != "/" && pred(r))
            .map(|r| r["path"].as_str().unwrap().to_string())
            .expect("the generated image has one")
    };
    asked.push(first(&|r| {
        r["type"] == "directory" && r.get("acl").is_some()
    }));
    asked.push(first(&|r| {
        r["type"] == "directory" && r.get("acl").is_none()
    }));
    asked.push(first(&|r| r["type"] == "file"));
    asked.push(first(&|r| r["type"] == "symlink"));

    let server = Server::start(&img, &[]);
    let url = format!("http://{}", server.addr);
    let mut args = vec![url.as_str()];
    args.extend(asked.iter().map(String::as_str));
    let seen = python_env::run_json("tests/python/webhdfs_client.py", &args);

    // walk: every directory once, each with exactly its children, and
    // every status equal to the dump's row.
    let walk = seen["walk"].as_array().unwrap();
    let dirs: BTreeSet<&str> = rows
        .iter()
        .filter(|r| r["type"] == "directory")
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    let walked: BTreeSet<&str> = walk.iter().map(|w| w["path"].as_str().unwrap()).collect();
    assert_eq!(walked.len(), walk.len(), "a directory walked twice");
    assert_eq!(walked, dirs);
    let mut statuses = 0;
    for w in walk {
        let path = w["path"].as_str().unwrap();
        let row = by_path[path];
        check_status(path, &w["status"], row);
        let mut names = BTreeSet::new();
        for kid in w["dirs"]
            .as_array()
            .unwrap()
            .iter()
            .chain(w["files"].as_array().unwrap())
        {
            let name = kid[0].as_str().unwrap();
            let full = if path == "/" {
                format!("/{name}")
            } else {
                format!("{path}/{name}")
            };
            check_status(&full, &kid[1], by_path[&full]);
            assert!(names.insert(name.to_string()), "{full} listed twice");
            statuses += 1;
        }
        let id = row["id"].as_u64().unwrap();
        assert_eq!(names, children.remove(&id).unwrap_or_default(), "{path}");
    }
    assert_eq!(
        statuses + 1 + symlinks,
        rows.len(),
        "every inode but the root and the symlinks listed once"
    );

    // status, content, list and acl_status against stat, du and ls.
    for p in &asked {
        let got = &seen["paths"][p.as_str()];
        let st = json(&nsimage(&["stat", img_s, p, "--json"]));
        check_status(p, &got["status"], by_path[p.as_str()]);
        assert_eq!(got["status"]["fileId"], st["id"], "{p}");
        let acl: Vec<&Value> = st["acl"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| &a["text"])
            .collect();
        let entries: Vec<&Value> = got["acl_status"]["entries"]
            .as_array()
            .unwrap()
            .iter()
            .collect();
        assert_eq!(entries, acl, "{p}");
        assert_eq!(got["acl_status"]["owner"], st["owner"], "{p}");
        assert_eq!(got["acl_status"]["group"], st["group"], "{p}");

        let du = json(&nsimage(&["du", img_s, p, "--json", "--depth", "0"]));
        let row = &du["rows"][0];
        let cs = &got["content"];
        assert_eq!(cs["directoryCount"], row["directories"], "{p}");
        let files = row["files"].as_u64().unwrap() + row["symlinks"].as_u64().unwrap();
        assert_eq!(cs["fileCount"], files, "{p}");
        assert_eq!(cs["length"], row["bytes"], "{p}");
        assert_eq!(cs["spaceConsumed"], row["space_consumed"], "{p}");

        if st["type"] == "directory" {
            let ls = lines(&nsimage(&["ls", img_s, p, "--json"]));
            let names: Vec<&str> = ls
                .iter()
                .map(|e| e["path"].as_str().unwrap().rsplit('/').next().unwrap())
                .collect();
            let listed: Vec<&str> = got["list"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            assert_eq!(listed, names, "{p}");
            assert!(!listed.is_empty(), "{p}");
        }
    }
    drop(server);
}
