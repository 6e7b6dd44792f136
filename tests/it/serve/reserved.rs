//! HDFS's `/.reserved` on both servers: no write makes or moves anything
//! there (MKDIRS and CREATE under it, RENAME to it, a symlink at or to it,
//! a directory named `.reserved` moved into the root), each refused with
//! HDFS's exception; reads resolve `/.reserved/.inodes/<id>` to the inode
//! as HDFS does and find nothing else under `/.reserved`; nothing made
//! there comes back after a restart. Loopback only; every wait is bounded.

use crate::common;
use crate::serve_common;

use serde_json::Value;
use serve_common::Server;
use std::net::SocketAddr;

/// Status, exception (empty for none), body.
fn call(addr: SocketAddr, method: &str, path: &str, query: &str) -> (u16, String, Value) {
    let target = format!("/webhdfs/v1{path}?{query}");
    let (status, body) = serve_common::request(addr, method, target.as_bytes());
    let v: Value = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("{target}: {e}: {}", String::from_utf8_lossy(&body)))
    };
    let exc = v["RemoteException"]["exception"]
        .as_str()
        .unwrap_or("")
        .to_string();
    (status, exc, v)
}

/// `path`'s FileStatus (200 required).
fn status(addr: SocketAddr, path: &str) -> Value {
    let (s, _, v) = call(addr, "GET", path, "op=GETFILESTATUS");
    assert_eq!(s, 200, "{path}: {v}");
    v["FileStatus"].clone()
}

fn file_id(addr: SocketAddr, path: &str) -> u64 {
    status(addr, path)["fileId"].as_u64().unwrap()
}

/// The names LISTSTATUS lists at `path`.
fn names(addr: SocketAddr, path: &str) -> Vec<String> {
    let (s, _, v) = call(addr, "GET", path, "op=LISTSTATUS");
    assert_eq!(s, 200, "{path}: {v}");
    v["FileStatuses"]["FileStatus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["pathSuffix"].as_str().unwrap().to_string())
        .collect()
}

/// The reads every server answers alike: `/.reserved/.inodes/<id>` is the
/// inode (then what follows it), nothing else under `/.reserved` is found.
/// `/d` holds `.reserved/f`, a directory named like the root's reserved
/// one (legal anywhere but the root).
fn reads_resolve_inode_paths(addr: SocketAddr) {
    let d = file_id(addr, "/d");
    let inode = format!("/.reserved/.inodes/{d}");
    assert_eq!(status(addr, &inode)["fileId"].as_u64(), Some(d));
    assert_eq!(names(addr, &inode), [".reserved"]);
    assert_eq!(
        status(addr, &format!("{inode}/.reserved/f"))["fileId"],
        status(addr, "/d/.reserved/f")["fileId"]
    );
    let root = status(addr, "/.reserved/.inodes/16385");
    assert_eq!(root["fileId"].as_u64(), Some(16385));
    let (s, _, v) = call(addr, "GET", &inode, "op=GETCONTENTSUMMARY");
    assert_eq!(s, 200, "{v}");
    // /d, /d/.reserved, /d/.reserved/f.
    assert_eq!(v["ContentSummary"]["directoryCount"], 3, "{v}");
    for missing in [
        "/.reserved",
        "/.reserved/.inodes",
        "/.reserved/.inodes/99999999",
        "/.reserved/.inodes/abc",
        "/.reserved/.inodes/-1",
        "/.reserved/raw/d",
        "/.reserved/d",
    ] {
        let (s, exc, v) = call(addr, "GET", missing, "op=GETFILESTATUS");
        assert_eq!(
            (s, exc.as_str()),
            (404, "FileNotFoundException"),
            "{missing}: {v}"
        );
    }
    let (s, exc, v) = call(
        addr,
        "GET",
        &format!("/.reserved/.inodes/{d}/nope"),
        "op=GETFILESTATUS",
    );
    assert_eq!((s, exc.as_str()), (404, "FileNotFoundException"), "{v}");
}

#[test]
fn nothing_is_made_under_reserved_and_inode_paths_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let out = common::nsimage(&["store", "init", store.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut server = Server::start(&store, &["--writable", "--no-permissions"]);
    let addr = server.addr;
    let ok = |method: &str, path: &str, query: &str| {
        let (s, exc, v) = call(addr, method, path, query);
        assert!(
            s == 200 || s == 201,
            "{method} {path}?{query}: {s} {exc} {v}"
        );
    };
    ok("PUT", "/a", "op=MKDIRS");
    ok("PUT", "/d/.reserved/f", "op=MKDIRS");
    let root = file_id(addr, "/");
    let a = file_id(addr, "/a");
    let a_before = status(addr, "/a");

    // (method, path, query, HDFS's exception).
    let refused = [
        (
            "PUT",
            "/.reserved",
            "op=MKDIRS",
            "HadoopIllegalArgumentException",
        ),
        (
            "PUT",
            "/.reserved/x",
            "op=MKDIRS",
            "HadoopIllegalArgumentException",
        ),
        (
            "PUT",
            &format!("/.reserved/.inodes/{root}/x"),
            "op=MKDIRS",
            "HadoopIllegalArgumentException",
        ),
        ("PUT", "/.reserved/f", "op=CREATE", "InvalidPathException"),
        (
            "PUT",
            "/.reserved/f",
            "op=CREATE&namenoderpcaddress=localhost",
            "InvalidPathException",
        ),
        (
            "PUT",
            "/.reserved/l",
            "op=CREATESYMLINK&destination=/a&createparent=true",
            "InvalidPathException",
        ),
        (
            "PUT",
            "/l",
            &format!("op=CREATESYMLINK&destination=/.reserved/.inodes/{a}"),
            "InvalidPathException",
        ),
        (
            "PUT",
            "/a",
            "op=RENAME&destination=/.reserved",
            "InvalidPathException",
        ),
        (
            "PUT",
            "/a",
            "op=RENAME&destination=/.reserved/x&renameoptions=OVERWRITE",
            "InvalidPathException",
        ),
        (
            "PUT",
            "/.reserved",
            "op=RENAME&destination=/b",
            "InvalidPathException",
        ),
        // Into the root under its own name, `.reserved`: HDFS's refusal to
        // make it.
        (
            "PUT",
            "/d/.reserved",
            "op=RENAME&destination=/",
            "HadoopIllegalArgumentException",
        ),
        ("DELETE", "/.reserved", "op=DELETE", "InvalidPathException"),
        (
            "PUT",
            &format!("/.reserved/.inodes/{a}"),
            "op=SETPERMISSION&permission=700",
            "InvalidPathException",
        ),
        (
            "PUT",
            &format!("/.reserved/.inodes/{a}"),
            "op=SETTIMES&modificationtime=5",
            "InvalidPathException",
        ),
    ];
    for (method, path, query, exc) in &refused {
        let (s, got, v) = call(addr, method, path, query);
        assert_eq!(
            (s, got.as_str()),
            (400, *exc),
            "{method} {path}?{query}: {v}"
        );
    }
    assert_eq!(names(addr, "/"), ["a", "d"]);
    assert_eq!(names(addr, "/d"), [".reserved"]);
    assert_eq!(
        status(addr, "/a"),
        a_before,
        "a refused write changes nothing"
    );
    reads_resolve_inode_paths(addr);

    // Nothing came in through the journal either: after a SIGKILL and a
    // restart the root holds the same.
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let again = Server::start(&store, &["--writable", "--no-permissions"]);
    assert_eq!(names(again.addr, "/"), ["a", "d"]);
    reads_resolve_inode_paths(again.addr);
    drop(again);

    // The read-only server on the store's checkpoint resolves them too.
    let ck = common::nsimage(&["store", "checkpoint", store.to_str().unwrap()]);
    assert!(
        ck.status.success(),
        "{}",
        String::from_utf8_lossy(&ck.stderr)
    );
    let ro = Server::start(&store, &[]);
    reads_resolve_inode_paths(ro.addr);
    let (s, exc, v) = call(ro.addr, "PUT", "/.reserved", "op=MKDIRS");
    assert_eq!((s, exc.as_str()), (403, "AccessControlException"), "{v}");
}
