//! A writable `nsimage serve` driven by a real WebHDFS client: the PyPI
//! `hdfs` package's `InsecureClient` (tests/python/webhdfs_writes.py)
//! sends every write op; then the server is stopped with SIGTERM and
//! `--checkpoint-on-exit`, and each answer the client got is checked
//! against `nsimage stat`/`ls` of that checkpoint's image. Loopback only;
//! the client's every request has a timeout.

use crate::common;
use crate::python_env;
use crate::serve_common;

use common::{json, nsimage};
use serde_json::Value;
use serve_common::{lines, Server};
use std::process::Command;
use std::time::{Duration, Instant};

fn acl_texts(st: &Value) -> Vec<String> {
    st["acl"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["text"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_hdfs_client_writes_and_a_checkpoint_holds_every_answer() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let out = nsimage(&["store", "init", store.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The client writes as `writer`, made a superuser: this test is about
    // HDFS's write semantics, not who may write.
    let groups = serve_common::superusers_file(dir.path(), &["writer"]);
    let mut server = Server::start(
        &store,
        &[
            "--writable",
            "--checkpoint-on-exit",
            "--groups-file",
            &groups,
            "--supergroup",
            serve_common::TEST_SUPERGROUP,
        ],
    );
    let url = format!("http://{}", server.addr);
    let seen = python_env::run_json("tests/python/webhdfs_writes.py", &[&url]);
    let steps = &seen["steps"];
    let ok = |name: &str| {
        assert_eq!(steps[name]["ok"], true, "{name}: {}", steps[name]);
    };
    let failed = |name: &str, exc: &str| {
        assert_eq!(steps[name]["ok"], false, "{name}: {}", steps[name]);
        if !exc.is_empty() {
            assert_eq!(steps[name]["exception"], exc, "{name}: {}", steps[name]);
        }
    };
    for s in [
        "makedirs",
        "write",
        "write_g",
        "rename_into_dir",
        "set_owner",
        "set_permission",
        "set_times",
        "set_replication",
        "set_acl",
        "modify_acl",
        "remove_acl_entries",
        "symlink",
        "xattr_create",
        "xattr_hex",
        "xattr_tmp",
        "xattr_remove",
        "makedirs_gone",
        "delete_recursive",
        "delete_missing",
        "makedirs_acl2",
        "set_default_acl",
        "remove_default_acl",
        "makedirs_acl3",
        "set_acl3",
        "remove_acl",
    ] {
        ok(s);
    }
    assert_eq!(steps["delete_recursive"]["value"], true);
    assert_eq!(steps["delete_missing"]["value"], false);
    failed("write_again", "FileAlreadyExistsException");
    failed("write_bytes", "UnsupportedOperationException");
    assert!(
        steps["write_bytes"]["message"]
            .as_str()
            .unwrap()
            .contains("namespace only"),
        "{}",
        steps["write_bytes"]
    );
    // The client turns an old rename's false into an error of its own.
    failed("rename_onto_file", "");
    failed("set_replication_dir", "");
    failed("xattr_create_again", "IOException");
    failed("delete_not_empty", "PathIsNotEmptyDirectoryException");

    // Stop: SIGTERM, with the checkpoint asked for.
    let kill = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            assert!(status.success(), "{status:?}");
            break;
        }
        assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
    let img = common::newest_image(&store);
    let img_s = img.to_str().unwrap();
    let stat = |p: &str| json(&nsimage(&["stat", img_s, p, "--json"]));
    let paths = &seen["paths"];
    // Every status the client saw is the checkpoint's inode.
    for p in [
        "/w/a", "/w/a/b", "/w/a/f", "/w/a/b/g", "/w/link", "/w/acl2", "/w/acl3",
    ] {
        let st = stat(p);
        let got = &paths[p]["status"];
        assert_eq!(got["fileId"], st["id"], "{p}");
        assert_eq!(got["owner"], st["owner"], "{p}");
        assert_eq!(got["group"], st["group"], "{p}");
        assert_eq!(got["modificationTime"], st["modification_time"], "{p}");
        let octal = st["permission"]["octal"]
            .as_str()
            .unwrap()
            .trim_start_matches('0');
        assert_eq!(got["permission"], octal, "{p}");
        if let Some(acl) = paths[p]["acl"].as_object() {
            let entries: Vec<String> = acl["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e.as_str().unwrap().to_string())
                .collect();
            assert_eq!(entries, acl_texts(&st), "{p}");
        }
    }
    for p in ["/w/a/big", "/w/gone", "/w/a/g"] {
        assert_eq!(paths[p]["status"], Value::Null, "{p}");
        assert!(
            !nsimage(&["stat", img_s, p, "--json"]).status.success(),
            "{p}"
        );
    }
    // Each write's effect, as the checkpoint has it.
    assert_eq!(stat("/w/a/b")["permission"]["octal"], "0750");
    let f = stat("/w/a/f");
    assert_eq!(
        (f["type"].as_str(), f["length"].as_u64()),
        (Some("file"), Some(0))
    );
    assert_eq!(
        (f["owner"].as_str(), f["group"].as_str()),
        (Some("carol"), Some("eng"))
    );
    assert_eq!(f["permission"]["octal"], "0600");
    assert_eq!(
        (f["modification_time"].as_u64(), f["access_time"].as_u64()),
        (Some(4000), Some(5000))
    );
    assert_eq!(f["replication"], 4);
    let xattrs: Vec<(String, String)> = f["xattrs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                format!(
                    "{}.{}",
                    x["namespace"].as_str().unwrap(),
                    x["name"].as_str().unwrap()
                ),
                x["value"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(xattrs.len(), 2, "{xattrs:?}");
    assert!(
        xattrs
            .iter()
            .any(|(n, v)| n == "user.team" && v.contains("eng")),
        "{xattrs:?}"
    );
    assert!(
        xattrs
            .iter()
            .any(|(n, v)| n == "trusted.k" && v.contains("hi")),
        "{xattrs:?}"
    );
    assert_eq!(stat("/w/a/b/g")["type"], "file");
    assert_eq!(stat("/w/link")["symlink_target"], "/w/a/f");
    let a = stat("/w/a");
    assert_eq!(acl_texts(&a), ["user:dan:rwx", "group::r-x"]);
    assert_eq!(a["permission"]["octal"], "0770");
    let a2 = stat("/w/acl2");
    assert!(
        acl_texts(&a2).iter().all(|t| !t.starts_with("default:")),
        "{a2}"
    );
    let a3 = stat("/w/acl3");
    assert!(acl_texts(&a3).is_empty(), "{a3}");
    assert_eq!(a3["permission"]["octal"], "0750");
    let names: Vec<String> = lines(&nsimage(&["ls", img_s, "/w", "--json"]))
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["/w/a", "/w/acl2", "/w/acl3", "/w/link"]);
}
