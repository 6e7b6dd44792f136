//! `nsimage serve STORE --writable`: every WebHDFS write op with HDFS's
//! semantics and exception classes, writes seen by reads at once, bad
//! requests answered 400, acknowledged writes found after a SIGKILL and a
//! restart, SIGTERM with `--checkpoint-on-exit`, background checkpoints'
//! lines. Loopback only; every wait is bounded.

use crate::common;
use crate::serve_common;

use common::nsimage;
use serde_json::Value;
use serve_common::{Server, IO_TIMEOUT};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// An answer: status, the `Location` header, the body as JSON (Null when
/// empty).
struct Reply {
    status: u16,
    location: Option<String>,
    body: Value,
}

impl Reply {
    fn exception(&self) -> &str {
        self.body["RemoteException"]["exception"]
            .as_str()
            .unwrap_or("")
    }
}

/// One request with `body` (sent with a Content-Length).
fn call(addr: SocketAddr, method: &str, target: &str, body: &[u8]) -> Reply {
    let mut s = TcpStream::connect_timeout(&addr, IO_TIMEOUT).expect("connect");
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    let head = format!(
        "{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    let _ = s.write_all(body);
    let mut resp = Vec::new();
    let _ = s.read_to_end(&mut resp);
    let end = resp
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("{target}: no head: {:?}", String::from_utf8_lossy(&resp)));
    let head = String::from_utf8_lossy(&resp[..end]).to_string();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let location = head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case("location")
            .then(|| v.trim().to_string())
    });
    let mut raw = resp[end + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        raw = serve_common::dechunk(&raw);
    }
    let body = if raw.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&raw)
            .unwrap_or_else(|e| panic!("{target}: {e}: {}", String::from_utf8_lossy(&raw)))
    };
    Reply {
        status,
        location,
        body,
    }
}

/// The arguments' groups file making this file's users superusers.
fn su(dir: &Path) -> String {
    serve_common::superusers_file(dir, &["dr.who", "alice", "bob"])
}

/// `serve STORE --writable` with this file's superusers (a groups file in
/// `dir`), and `extra` arguments.
fn su_server(dir: &Path, store: &Path, extra: &[&str]) -> Server {
    let groups = su(dir);
    let mut args = vec![
        "--writable",
        "--groups-file",
        &groups,
        "--supergroup",
        serve_common::TEST_SUPERGROUP,
    ];
    args.extend_from_slice(extra);
    Server::start(store, &args)
}

/// A store made by `nsimage store init` in `dir`.
fn new_store(dir: &Path) -> PathBuf {
    let store = dir.join("store");
    let out = nsimage(&["store", "init", store.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    store
}

struct Client {
    addr: SocketAddr,
}

impl Client {
    fn put(&self, path: &str, query: &str) -> Reply {
        call(self.addr, "PUT", &format!("/webhdfs/v1{path}?{query}"), b"")
    }

    /// A write that must answer `status` (and `exception`, if any).
    fn expect(&self, method: &str, path: &str, query: &str, status: u16, exc: &str) -> Reply {
        let r = call(
            self.addr,
            method,
            &format!("/webhdfs/v1{path}?{query}"),
            b"",
        );
        assert_eq!(r.status, status, "{method} {path}?{query}: {}", r.body);
        assert_eq!(r.exception(), exc, "{method} {path}?{query}: {}", r.body);
        r
    }

    fn ok(&self, path: &str, query: &str) -> Value {
        self.expect("PUT", path, query, 200, "").body
    }

    fn status(&self, path: &str) -> Value {
        let r = call(
            self.addr,
            "GET",
            &format!("/webhdfs/v1{path}?op=GETFILESTATUS"),
            b"",
        );
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        r.body["FileStatus"].clone()
    }

    fn missing(&self, path: &str) {
        let r = call(
            self.addr,
            "GET",
            &format!("/webhdfs/v1{path}?op=GETFILESTATUS"),
            b"",
        );
        assert_eq!(r.exception(), "FileNotFoundException", "{path}: {}", r.body);
        assert_eq!(r.status, 404);
    }

    fn acl(&self, path: &str) -> Value {
        let r = call(
            self.addr,
            "GET",
            &format!("/webhdfs/v1{path}?op=GETACLSTATUS"),
            b"",
        );
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        r.body["AclStatus"].clone()
    }

    /// CREATE's two steps; the second's reply.
    fn create(&self, path: &str, query: &str) -> Reply {
        let first = self.put(path, &format!("op=CREATE&{query}"));
        assert_eq!(first.status, 307, "{path}: {}", first.body);
        let to = first.location.expect("a Location");
        let rest = to
            .strip_prefix(&format!("http://{}", self.addr))
            .unwrap_or_else(|| panic!("{to}"));
        assert!(rest.contains("namenoderpcaddress="), "{to}");
        call(self.addr, "PUT", rest, b"")
    }
}

fn true_(v: &Value) -> bool {
    v["boolean"].as_bool().expect("a boolean answer")
}

/// CREATE's first step checks what its second takes before it answers, so
/// that its `Location` never carries a value the second refuses; the
/// second's refusal of an existing file names the caller.
#[test]
fn create_checks_its_parameters_at_the_first_step_and_names_its_caller() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path());
    let server = su_server(dir.path(), &store, &[]);
    let c = Client { addr: server.addr };
    // (query, status, exception) at the first step, with and without
    // noredirect: none is redirected.
    for (query, status, exc) in [
        ("blocksize=abc", 400, "IllegalArgumentException"),
        ("blocksize=-1", 400, "IllegalArgumentException"),
        ("blocksize=0", 400, "IllegalArgumentException"),
        ("blocksize=4096", 403, "IOException"),
        ("replication=0", 403, "IOException"),
        ("replication=x", 400, "IllegalArgumentException"),
        ("permission=9", 400, "IllegalArgumentException"),
        ("overwrite=maybe", 400, "IllegalArgumentException"),
    ] {
        for extra in ["", "&noredirect=true"] {
            let q = format!("op=CREATE&{query}{extra}");
            let r = c.expect("PUT", "/f", &q, status, exc);
            assert!(r.location.is_none(), "{q}: {:?}", r.location);
        }
    }
    c.missing("/f");
    // Good parameters go into the Location as given.
    let first = c.put("/f", "op=CREATE&blocksize=2097152&replication=2");
    assert_eq!(first.status, 307, "{}", first.body);
    assert!(first
        .location
        .as_deref()
        .is_some_and(|l| l.contains("blocksize=2097152&replication=2")));
    assert_eq!(c.create("/f", "user.name=alice").status, 201);
    assert_eq!(c.status("/f")["owner"], "alice");
    let again = c.create("/f", "user.name=bob");
    assert_eq!(
        (again.status, again.exception()),
        (403, "FileAlreadyExistsException")
    );
    let msg = again.body["RemoteException"]["message"].as_str().unwrap();
    assert!(
        msg.contains("bob") && !msg.contains("dr.who"),
        "the refusal names the caller: {msg}"
    );
}

#[test]
fn every_write_op_answers_as_hdfs_and_is_read_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path());
    let server = su_server(dir.path(), &store, &[]);
    let c = Client { addr: server.addr };
    let root_group = c.status("/")["group"].clone();

    // MKDIRS: parents made (u+wx added), owner from user.name, group the
    // parent's.
    assert!(true_(
        &c.ok("/a/b/c", "op=MKDIRS&permission=500&user.name=alice")
    ));
    let st = c.status("/a/b/c");
    assert_eq!(
        (st["permission"].as_str(), st["owner"].as_str()),
        (Some("500"), Some("alice"))
    );
    assert_eq!(st["group"], root_group);
    assert_eq!(c.status("/a")["permission"], "700");
    assert!(true_(&c.ok("/a/b/c", "op=MKDIRS")));
    assert!(true_(&c.ok("/d", "op=MKDIRS")));
    assert_eq!(c.status("/d")["owner"], "dr.who");

    // CREATE: 307 to the "datanode" step, which creates the empty file.
    let r = c.create("/a/f", "user.name=bob");
    assert_eq!(r.status, 201, "{}", r.body);
    assert!(r.location.unwrap().starts_with("hdfs://"));
    let f = c.status("/a/f");
    assert_eq!(
        (f["type"].as_str(), f["length"].as_u64()),
        (Some("FILE"), Some(0))
    );
    assert_eq!(
        (f["replication"].as_u64(), f["blockSize"].as_u64()),
        (Some(3), Some(128 << 20))
    );
    assert_eq!(
        (f["permission"].as_str(), f["owner"].as_str()),
        (Some("644"), Some("bob"))
    );
    let again = c.create("/a/f", "");
    assert_eq!(
        (again.status, again.exception()),
        (403, "FileAlreadyExistsException")
    );
    let r = c.create("/a/f", "overwrite=true&replication=2&permission=600");
    assert_eq!(r.status, 201);
    let f2 = c.status("/a/f");
    assert_ne!(f2["fileId"], f["fileId"]);
    assert_eq!(
        (f2["replication"].as_u64(), f2["permission"].as_str()),
        (Some(2), Some("600"))
    );
    assert_eq!(
        c.create("/a/b", "overwrite=true").exception(),
        "FileAlreadyExistsException"
    );
    assert_eq!(c.create("/new/deep/f", "").status, 201);
    assert_eq!(c.status("/new/deep")["type"], "DIRECTORY");
    // Bytes are refused, at either step, and nothing is created.
    let r = call(server.addr, "PUT", "/webhdfs/v1/a/g?op=CREATE", b"data");
    assert_eq!(
        (r.status, r.exception()),
        (400, "UnsupportedOperationException")
    );
    assert!(r.body["RemoteException"]["message"]
        .as_str()
        .unwrap()
        .contains("namespace only"));
    let r = call(
        server.addr,
        "PUT",
        &format!(
            "/webhdfs/v1/a/g?op=CREATE&namenoderpcaddress={}",
            server.addr
        ),
        b"x",
    );
    assert_eq!(
        (r.status, r.exception()),
        (400, "UnsupportedOperationException")
    );
    c.missing("/a/g");
    let r = c.put("/a/g", "op=CREATE&noredirect=true");
    assert!(r.body["Location"]
        .as_str()
        .unwrap()
        .contains("namenoderpcaddress"));
    c.missing("/a/g");
    c.expect(
        "POST",
        "/a/f",
        "op=APPEND",
        400,
        "UnsupportedOperationException",
    );
    c.expect(
        "PUT",
        "/a/f/x",
        "op=MKDIRS",
        403,
        "ParentNotDirectoryException",
    );
    c.expect(
        "PUT",
        "/a/f",
        "op=MKDIRS",
        403,
        "FileAlreadyExistsException",
    );

    // CREATESYMLINK.
    assert_eq!(
        c.ok("/a/l", "op=CREATESYMLINK&destination=/a/f"),
        Value::Null
    );
    let l = c.status("/a/l");
    assert_eq!(
        (l["type"].as_str(), l["symlink"].as_str()),
        (Some("SYMLINK"), Some("/a/f"))
    );
    c.expect(
        "PUT",
        "/a/l",
        "op=CREATESYMLINK&destination=/x",
        403,
        "FileAlreadyExistsException",
    );
    c.expect(
        "PUT",
        "/nope/l",
        "op=CREATESYMLINK&destination=/x",
        404,
        "FileNotFoundException",
    );
    c.ok("/up/l", "op=CREATESYMLINK&destination=/x&createParent=true");
    c.expect(
        "PUT",
        "/a/l2",
        "op=CREATESYMLINK&destination=rel",
        400,
        "IllegalArgumentException",
    );

    // RENAME, HDFS's old rename: into an existing directory; false for an
    // existing file, a missing source, the source's own subtree.
    assert!(true_(&c.ok("/a/f", "op=RENAME&destination=/a/b")));
    c.status("/a/b/f");
    c.missing("/a/f");
    assert!(!true_(&c.ok("/a/b/f", "op=RENAME&destination=/a/l")));
    assert!(!true_(&c.ok("/a", "op=RENAME&destination=/a/b/c/x")));
    assert!(!true_(&c.ok("/a", "op=RENAME&destination=/a")));
    assert!(!true_(&c.ok("/missing", "op=RENAME&destination=/z")));
    assert!(!true_(&c.ok("/a/b/f", "op=RENAME&destination=/nope/f")));
    assert!(true_(&c.ok("/a/b/f", "op=RENAME&destination=/a/g")));
    c.expect(
        "PUT",
        "/a/g",
        "op=RENAME&destination=a/h",
        400,
        "IllegalArgumentException",
    );
    c.expect(
        "PUT",
        "/a/g",
        "op=RENAME&destination=/a/f/../h",
        400,
        "IllegalArgumentException",
    );
    // With OVERWRITE (rename2): a file replaced; exceptions, not false;
    // an empty 200 as WebHDFS answers rename2.
    assert_eq!(c.create("/a/h", "").status, 201);
    let g = c.status("/a/g")["fileId"].clone();
    assert_eq!(
        c.ok("/a/g", "op=RENAME&destination=/a/h&renameoptions=OVERWRITE"),
        Value::Null
    );
    assert_eq!(c.status("/a/h")["fileId"], g);
    c.missing("/a/g");
    c.expect(
        "PUT",
        "/nope",
        "op=RENAME&destination=/z&renameoptions=OVERWRITE",
        404,
        "FileNotFoundException",
    );
    // NONE is rename2 too (WebHDFS sends any option set there): an
    // existing destination is an error, never "into it" as the old rename.
    c.expect(
        "PUT",
        "/a/h",
        "op=RENAME&destination=/a/l&renameoptions=NONE",
        403,
        "FileAlreadyExistsException",
    );
    c.expect(
        "PUT",
        "/a/h",
        "op=RENAME&destination=/a&renameoptions=NONE",
        403,
        "FileAlreadyExistsException",
    );
    c.expect(
        "PUT",
        "/a/h",
        "op=RENAME&destination=/a/z&renameoptions=NONE,OVERWRITE",
        200,
        "",
    );
    c.expect(
        "PUT",
        "/a/z",
        "op=RENAME&destination=/a/h&renameoptions=OVERWRITE",
        200,
        "",
    );
    // A user name outside WebHDFS's pattern is refused (and so is a doas
    // of one); an empty doas is none.
    c.expect(
        "PUT",
        "/a/bad",
        "op=MKDIRS&user.name=no%20body",
        400,
        "IllegalArgumentException",
    );
    c.expect(
        "PUT",
        "/a/bad",
        "op=MKDIRS&user.name=9lives",
        400,
        "IllegalArgumentException",
    );
    c.expect(
        "PUT",
        "/a/bad",
        "op=MKDIRS&user.name=a&doas=b:c",
        400,
        "IllegalArgumentException",
    );
    assert!(true_(&c.ok("/a/ok", "op=MKDIRS&user.name=alice&doas=")));
    c.expect("GET", "/", "op=GETFILESTATUS&user.name=svc_etl$", 200, "");
    c.missing("/a/bad");

    // DELETE.
    c.expect(
        "DELETE",
        "/a",
        "op=DELETE",
        403,
        "PathIsNotEmptyDirectoryException",
    );
    c.expect(
        "DELETE",
        "/a",
        "op=DELETE&recursive=false",
        403,
        "PathIsNotEmptyDirectoryException",
    );
    assert!(!true_(
        &c.expect("DELETE", "/missing", "op=DELETE", 200, "").body
    ));
    assert!(!true_(
        &c.expect("DELETE", "/", "op=DELETE&recursive=true", 200, "")
            .body
    ));
    assert!(true_(
        &c.expect("DELETE", "/a/b/c", "op=DELETE", 200, "").body
    ));
    c.missing("/a/b/c");
    assert!(true_(
        &c.expect("DELETE", "/new", "op=DELETE&recursive=true", 200, "")
            .body
    ));
    c.missing("/new/deep/f");

    // SETOWNER, SETPERMISSION, SETTIMES, SETREPLICATION.
    assert_eq!(c.ok("/a/h", "op=SETOWNER&owner=carol"), Value::Null);
    let h = c.status("/a/h");
    assert_eq!(
        (h["owner"].as_str(), &h["group"]),
        (Some("carol"), &root_group)
    );
    c.ok("/a/h", "op=SETOWNER&group=eng");
    assert_eq!(c.status("/a/h")["group"], "eng");
    c.expect(
        "PUT",
        "/a/h",
        "op=SETOWNER",
        400,
        "IllegalArgumentException",
    );
    c.expect(
        "PUT",
        "/nope",
        "op=SETOWNER&owner=x",
        404,
        "FileNotFoundException",
    );
    c.ok("/a/h", "op=SETPERMISSION&permission=1750");
    assert_eq!(c.status("/a/h")["permission"], "1750");
    c.ok("/a/h", "op=SETPERMISSION");
    assert_eq!(c.status("/a/h")["permission"], "755");
    c.expect(
        "PUT",
        "/a/h",
        "op=SETPERMISSION&permission=9",
        400,
        "IllegalArgumentException",
    );
    let atime = c.status("/a/h")["accessTime"].clone();
    c.ok("/a/h", "op=SETTIMES&modificationtime=1000");
    let h = c.status("/a/h");
    assert_eq!(
        (&h["modificationTime"], &h["accessTime"]),
        (&Value::from(1000), &atime)
    );
    c.ok("/a/h", "op=SETTIMES&accesstime=2000&modificationtime=-1");
    let h = c.status("/a/h");
    assert_eq!(
        (h["modificationTime"].as_u64(), h["accessTime"].as_u64()),
        (Some(1000), Some(2000))
    );
    c.expect(
        "PUT",
        "/a/h",
        "op=SETTIMES&accesstime=-5",
        400,
        "IllegalArgumentException",
    );
    assert!(true_(&c.ok("/a/h", "op=SETREPLICATION&replication=5")));
    assert_eq!(c.status("/a/h")["replication"], 5);
    assert!(!true_(&c.ok("/a", "op=SETREPLICATION&replication=5")));
    c.expect(
        "PUT",
        "/a/h",
        "op=SETREPLICATION&replication=0",
        403,
        "IOException",
    );

    // SETXATTR / REMOVEXATTR with HDFS's flags and value encodings.
    c.ok(
        "/a/h",
        "op=SETXATTR&xattr.name=user.team&xattr.value=%22eng%22&flag=CREATE",
    );
    c.expect(
        "PUT",
        "/a/h",
        "op=SETXATTR&xattr.name=user.team&xattr.value=x&flag=CREATE",
        403,
        "IOException",
    );
    c.expect(
        "PUT",
        "/a/h",
        "op=SETXATTR&xattr.name=user.new&xattr.value=x&flag=REPLACE",
        403,
        "IOException",
    );
    c.ok(
        "/a/h",
        "op=SETXATTR&xattr.name=user.team&xattr.value=0x6869&flag=REPLACE",
    );
    c.ok(
        "/a/h",
        "op=SETXATTR&xattr.name=trusted.k&xattr.value=0sYWJj&flag=CREATE,REPLACE",
    );
    let r = call(
        server.addr,
        "GET",
        "/webhdfs/v1/a/h?op=GETXATTRS&encoding=TEXT",
        b"",
    );
    let xs = r.body["XAttrs"].as_array().unwrap().clone();
    let find = |n: &str| {
        xs.iter()
            .find(|x| x["name"] == n)
            .map(|x| x["value"].clone())
    };
    assert_eq!(find("user.team"), Some(Value::from("\"hi\"")));
    assert_eq!(find("trusted.k"), Some(Value::from("\"abc\"")));
    c.expect(
        "PUT",
        "/a/h",
        "op=SETXATTR&xattr.name=team&xattr.value=x&flag=CREATE",
        400,
        "IllegalArgumentException",
    );
    c.ok("/a/h", "op=REMOVEXATTR&xattr.name=user.team");
    c.expect(
        "PUT",
        "/a/h",
        "op=REMOVEXATTR&xattr.name=user.team",
        403,
        "IOException",
    );

    // ACLs: computed as HDFS's NameNode does, the mask in the group bits.
    c.ok("/d", "op=SETPERMISSION&permission=755");
    c.ok(
        "/d",
        "op=SETACL&aclspec=user::rwx,user:bob:r-x,group::r-x,other::---",
    );
    let a = c.acl("/d");
    assert_eq!(
        a["entries"],
        serde_json::json!(["user:bob:r-x", "group::r-x"])
    );
    assert_eq!(a["permission"], "750");
    assert_eq!(c.status("/d")["aclBit"], true);
    c.ok("/d", "op=MODIFYACLENTRIES&aclspec=user:dan:rwx");
    let a = c.acl("/d");
    assert_eq!(
        a["entries"],
        serde_json::json!(["user:bob:r-x", "user:dan:rwx", "group::r-x"])
    );
    assert_eq!(a["permission"], "770");
    c.ok("/d", "op=REMOVEACLENTRIES&aclspec=user:dan");
    assert_eq!(c.acl("/d")["permission"], "750");
    c.ok("/d", "op=MODIFYACLENTRIES&aclspec=default:user:bob:r-x");
    let a = c.acl("/d");
    assert!(
        a["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e == "default:user:bob:r-x"),
        "{a}"
    );
    c.expect(
        "PUT",
        "/a/h",
        "op=MODIFYACLENTRIES&aclspec=default:user:bob:r-x",
        403,
        "AclException",
    );
    c.expect(
        "PUT",
        "/d",
        "op=SETACL&aclspec=user:bob:rwz",
        400,
        "IllegalArgumentException",
    );
    c.expect(
        "PUT",
        "/d",
        "op=SETACL&aclspec=user::rwx,group::r-x",
        403,
        "AclException",
    );
    // New children inherit the default ACL (their mode filtering it).
    assert_eq!(c.create("/d/inh", "").status, 201);
    let a = c.acl("/d/inh");
    assert_eq!(
        a["entries"],
        serde_json::json!(["user:bob:r-x", "group::r-x"])
    );
    assert_eq!(a["permission"], "640");
    c.ok("/d/sub", "op=MKDIRS");
    let a = c.acl("/d/sub");
    assert_eq!(a["permission"], "750");
    assert_eq!(a["entries"].as_array().unwrap().len(), 7, "{a}");
    // Missing parents too, each with the ACL its own parent passes down.
    c.ok("/d/p/q", "op=MKDIRS&user.name=alice");
    assert_eq!(c.acl("/d/p/q")["entries"], c.acl("/d/p")["entries"]);
    // Journaled as the inode with no group bits, then its ACL, then its
    // mode: whatever prefix a crash keeps grants no more than the whole.
    let dump = nsimage(&["journal", "dump", store.to_str().unwrap(), "--json"]);
    let ops: Vec<Value> = String::from_utf8_lossy(&dump.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let at = ops
        .iter()
        .position(|o| o["opcode"] == "OP_ADD" && o["path"] == "/d/inh")
        .unwrap_or_else(|| panic!("no create of /d/inh in {ops:?}"));
    assert_eq!(ops[at + 1]["opcode"], "OP_SET_ACL", "{}", ops[at + 1]);
    assert_eq!(ops[at + 1]["src"], "/d/inh", "{}", ops[at + 1]);
    // Its mode, 0640 (416 in decimal, as oev prints modes).
    assert_eq!(
        ops[at + 2]["opcode"],
        "OP_SET_PERMISSIONS",
        "{}",
        ops[at + 2]
    );
    assert_eq!(ops[at + 2]["mode"], 0o640, "{}", ops[at + 2]);
    c.ok("/d", "op=REMOVEDEFAULTACL");
    assert!(c.acl("/d")["entries"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| !e.as_str().unwrap().starts_with("default:")));
    c.ok("/d", "op=REMOVEACL");
    let a = c.acl("/d");
    assert_eq!(
        (
            a["entries"].as_array().unwrap().len(),
            a["permission"].as_str()
        ),
        (0, Some("750"))
    );
    assert!(c.status("/d").get("aclBit").is_none());

    // Bad requests: 400, never a panic, and the server goes on.
    for (method, target) in [
        ("PUT", "/webhdfs/v1/x?op=FROBNICATE"),
        ("PUT", "/webhdfs/v1/x"),
        ("GET", "/webhdfs/v1/x?op=MKDIRS"),
        ("PUT", "/webhdfs/v1/x?op=GETFILESTATUS"),
        ("DELETE", "/webhdfs/v1/x?op=MKDIRS"),
        ("PUT", "/webhdfs/v1/x?op=MKDIRS&permission=8&permission=7"),
        ("PUT", "/webhdfs/v1/a/../x?op=MKDIRS"),
        ("PUT", "/webhdfs/v1/a/%2e%2e/x?op=MKDIRS"),
        ("PUT", "/webhdfs/v1/a/./x?op=MKDIRS"),
        ("PUT", "/webhdfs/v1/a%00x?op=MKDIRS"),
        ("PUT", "/webhdfs/v1/a:x?op=MKDIRS"),
        ("PUT", "/webhdfs/v1/%zz?op=MKDIRS"),
        ("DELETE", "/webhdfs/v1/a?op=DELETE&recursive=maybe"),
        ("PUT", "/webhdfs/v1/a?op=RENAME"),
        ("PATCH", "/webhdfs/v1/a?op=MKDIRS"),
        ("PUT", "/elsewhere?op=MKDIRS"),
    ] {
        let r = call(server.addr, method, target, b"");
        assert_eq!(r.status, 400, "{method} {target}: {}", r.body);
        assert!(!r.exception().is_empty(), "{method} {target}");
    }
    c.missing("/x");
    c.status("/a");
}

fn wait_for_line(server: &Server, seen: &mut Vec<String>, pat: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        seen.extend(server.stderr_lines());
        if let Some(l) = seen.iter().find(|l| l.starts_with(pat)) {
            return l.clone();
        }
        assert!(Instant::now() < deadline, "no {pat:?} line in {seen:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn acknowledged_writes_survive_sigkill_and_sigterm_checkpoints_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path());
    let server = su_server(dir.path(), &store, &[]);
    let addr = server.addr;
    // 8 concurrent clients, 10 directories each.
    let threads: Vec<_> = (0..8)
        .map(|t| {
            std::thread::spawn(move || {
                for i in 0..10 {
                    let r = call(
                        addr,
                        "PUT",
                        &format!("/webhdfs/v1/t/d{t}-{i}?op=MKDIRS"),
                        b"",
                    );
                    assert_eq!(r.status, 200, "{}", r.body);
                    let r = call(
                        addr,
                        "GET",
                        &format!("/webhdfs/v1/t/d{t}-{i}?op=GETFILESTATUS"),
                        b"",
                    );
                    assert_eq!(r.status, 200, "read at once: {}", r.body);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    drop(server); // SIGKILL
    let mut server = su_server(dir.path(), &store, &["--checkpoint-on-exit"]);
    let listed = |server: &Server| {
        let r = call(server.addr, "GET", "/webhdfs/v1/t?op=LISTSTATUS", b"");
        r.body["FileStatuses"]["FileStatus"]
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(listed(&server), 80);
    let images_before = common::names(&store)
        .iter()
        .filter(|n| n.starts_with("image_"))
        .count();
    assert_eq!(
        call(server.addr, "PUT", "/webhdfs/v1/t/last?op=MKDIRS", b"").status,
        200
    );
    let kill = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            assert!(status.success(), "{status:?}");
            break;
        }
        assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut seen = Vec::new();
    let started = wait_for_line(&server, &mut seen, "checkpoint started txid=");
    let finished = wait_for_line(&server, &mut seen, "checkpoint finished txid=");
    let txid = |l: &str| {
        l.split("txid=")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(txid(&started), txid(&finished));
    // The group commit's count, for bench --server: one op, one fsync.
    assert_eq!(
        wait_for_line(&server, &mut seen, "journal: "),
        "journal: 1 ops in 1 fsyncs"
    );
    assert!(finished.contains(" seconds="), "{finished}");
    let images_after = common::names(&store)
        .iter()
        .filter(|n| n.starts_with("image_"))
        .count();
    assert!(
        images_after >= images_before.min(1),
        "{images_before} -> {images_after}"
    );
    let img = common::newest_image(&store);
    let ls = serve_common::lines(&nsimage(&["ls", img.to_str().unwrap(), "/t", "--json"]));
    assert_eq!(ls.len(), 81);

    // Without --checkpoint-on-exit a SIGTERM takes none.
    let mut server = su_server(dir.path(), &store, &[]);
    assert_eq!(listed(&server), 81);
    let before = common::names(&store);
    Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    let status = server.child.wait().unwrap();
    assert!(status.success());
    let mut seen = server.stderr_lines();
    std::thread::sleep(Duration::from_millis(100));
    seen.extend(server.stderr_lines());
    assert!(
        !seen.iter().any(|l| l.starts_with("checkpoint")),
        "{seen:?}"
    );
    let after: Vec<String> = common::names(&store)
        .into_iter()
        .filter(|n| n.starts_with("image_"))
        .collect();
    assert_eq!(
        after,
        before
            .into_iter()
            .filter(|n| n.starts_with("image_"))
            .collect::<Vec<_>>()
    );
}

#[test]
fn background_checkpoints_print_their_lines_while_writes_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path());
    let server = su_server(dir.path(), &store, &["--checkpoint-every-ops", "5"]);
    for i in 0..12 {
        let r = call(
            server.addr,
            "PUT",
            &format!("/webhdfs/v1/c{i}?op=MKDIRS"),
            b"",
        );
        assert_eq!(r.status, 200);
    }
    let mut seen = Vec::new();
    let line = wait_for_line(&server, &mut seen, "checkpoint finished txid=");
    let txid: u64 = line
        .split("txid=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(txid >= 5, "{line}");
    assert!(
        common::names(&store)
            .iter()
            .any(|n| *n == format!("image_{txid:020}")),
        "{line}"
    );
    // A read-only serve of the same store refuses writes as before.
    drop(server);
    let ro = Server::start(&store, &[]);
    let r = call(ro.addr, "PUT", "/webhdfs/v1/x?op=MKDIRS", b"");
    assert_eq!((r.status, r.exception()), (403, "AccessControlException"));
}

/// `--audit-log FILE`: one line per request in the NameNode's audit form,
/// refusals included (`allowed=false`), `perm=` the inode's after a write
/// that sets it (escaped: an owner with a line break forges no line),
/// `dst=` a rename's destination; a parameter no op defines (a client's
/// `tempdir=` beside CREATE) changes nothing.
#[test]
fn the_audit_log_has_a_line_per_request_in_the_namenodes_form() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path());
    let log = dir.path().join("audit.log");
    let server = su_server(dir.path(), &store, &["--audit-log", log.to_str().unwrap()]);
    let c = Client { addr: server.addr };
    // A new directory takes its parent's group, as in HDFS.
    let root_group = c.status("/")["group"].as_str().unwrap().to_string();
    let made = format!("alice:{root_group}:rwxr-x---");
    // An owner with a line break forges no line: written escaped.
    let owned = format!("x\\x0aallowed=true:{root_group}:rwxr-x---");
    let requests: &[(&str, &str, u16)] = &[
        ("GET", "/?op=GETFILESTATUS", 200),
        ("PUT", "/in?op=MKDIRS&user.name=alice&permission=750", 200),
        ("PUT", "/in/f?op=CREATE&user.name=alice&tempdir=/tmp/x", 307),
        ("PUT", "/in?op=RENAME&user.name=alice&destination=/out", 200),
        (
            "PUT",
            "/out?op=SETOWNER&owner=x%0aallowed=true&user.name=alice",
            200,
        ),
        ("PUT", "/out/sub?op=MKDIRS&user.name=eve", 403),
        ("GET", "/nope?op=GETFILESTATUS&user.name=eve", 404),
        ("GET", "/?op=FROBNICATE", 400),
        ("PUT", "/?op=SETQUOTA&namespacequota=5", 400),
    ];
    for (method, target, want) in requests {
        let r = call(c.addr, method, &format!("/webhdfs/v1{target}"), b"");
        assert_eq!(r.status, *want, "{method} {target}: {}", r.body);
    }
    drop(server);
    let text = std::fs::read_to_string(&log).unwrap();
    // The status read above, then the requests.
    let lines: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(lines.len(), requests.len(), "{text}");
    let fields = |line: &str| -> Vec<(String, String)> {
        let (head, rest) = line.split_once(" INFO FSNamesystem.audit: ").unwrap();
        // `yyyy-MM-dd HH:mm:ss,SSS`
        assert_eq!(head.len(), 23, "{line}");
        assert_eq!(&head[19..20], ",", "{line}");
        rest.split('\t')
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap();
                (k.to_string(), v.to_string())
            })
            .collect()
    };
    // (allowed, user, cmd, src, dst, perm) of each line.
    let want: &[(bool, &str, &str, &str, &str, &str)] = &[
        (true, "dr.who", "getfileinfo", "/", "null", "null"),
        (true, "alice", "mkdirs", "/in", "null", &made),
        (true, "alice", "create", "/in/f", "null", "null"),
        (true, "alice", "rename", "/in", "/out", "null"),
        (true, "alice", "setOwner", "/out", "null", &owned),
        (false, "eve", "mkdirs", "/out/sub", "null", "null"),
        (false, "eve", "getfileinfo", "/nope", "null", "null"),
        (false, "dr.who", "frobnicate", "/", "null", "null"),
        (false, "dr.who", "setQuota", "/", "null", "null"),
    ];
    let want: Vec<Vec<(String, String)>> = want
        .iter()
        .map(|(allowed, user, cmd, src, dst, perm)| {
            [
                ("allowed", allowed.to_string()),
                ("ugi", format!("{user} (auth:SIMPLE)")),
                ("ip", "/127.0.0.1".to_string()),
                ("cmd", cmd.to_string()),
                ("src", src.to_string()),
                ("dst", dst.to_string()),
                ("perm", perm.to_string()),
                ("proto", "webhdfs".to_string()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
        })
        .collect();
    for (line, want) in lines.iter().zip(&want) {
        assert_eq!(&fields(line), want, "{line}");
    }
}
