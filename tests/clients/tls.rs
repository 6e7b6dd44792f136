//! Issue 27: `nsimage serve --tls-cert --tls-key` speaks HTTPS. The PyPI
//! `hdfs` client (trusting only the test's own certificate) and
//! `curl --cacert` read over it; plain HTTP sent to the port gets no HTTP
//! answer, and the server goes on serving. The certificate is made by the
//! test with `openssl req` (a self-signed P-256 key for 127.0.0.1).

use crate::common::{image, nsimage, F, P};
use crate::python_env;
use crate::serve_common::{Server, IO_TIMEOUT};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;

/// A self-signed certificate and its key for 127.0.0.1, in `dir`.
fn certificate(dir: &Path) -> (String, String) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let out = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ])
        .args(["-nodes", "-days", "2", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl (the test makes its certificate with it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        cert.to_str().unwrap().to_string(),
        key.to_str().unwrap().to_string(),
    )
}

#[test]
fn https_is_read_by_the_hdfs_client_and_curl_and_plain_http_gets_no_answer() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("ns.nsi");
    let mut ns = nsimage_namespace::Namespace::default();
    ns.mkdirs(b"/data/2026", &P, 1).unwrap();
    ns.create(b"/data/readme", &P, &F, 2).unwrap();
    std::fs::write(&img, image(&ns, &nsimage_writer::WriteOptions::default())).unwrap();
    let (cert, key) = certificate(dir.path());
    let server = Server::start(&img, &["--tls-cert", &cert, "--tls-key", &key]);
    let url = format!("https://{}", server.addr);

    let seen = python_env::run_json("tests/python/webhdfs_tls.py", &[&url, &cert, "/data"]);
    assert_eq!(
        seen["list"],
        serde_json::json!(["2026", "readme"]),
        "{seen}"
    );
    assert_eq!(seen["status"]["type"], "DIRECTORY", "{seen}");

    let out = Command::new("curl")
        .args(["-sS", "--max-time", "20", "--cacert", &cert])
        .arg(format!("{url}/webhdfs/v1/data/readme?op=GETFILESTATUS"))
        .output()
        .expect("curl");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["FileStatus"]["type"], "FILE", "{v}");
    // Without the certificate as its trust root, curl refuses the server.
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "20"])
        .arg(format!("{url}/webhdfs/v1/?op=GETFILESTATUS"))
        .output()
        .unwrap();
    assert!(!out.status.success(), "an unknown certificate was trusted");

    // Plain HTTP to the HTTPS port: no HTTP answer, the connection closed.
    for _ in 0..3 {
        let mut s = TcpStream::connect_timeout(&server.addr, IO_TIMEOUT).unwrap();
        s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        s.write_all(b"GET /webhdfs/v1/?op=GETFILESTATUS HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got);
        assert!(
            !got.starts_with(b"HTTP/"),
            "plain HTTP was answered: {:?}",
            String::from_utf8_lossy(&got)
        );
    }
    // And the server goes on serving HTTPS.
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "20", "--cacert", &cert])
        .arg(format!("{url}/webhdfs/v1/data?op=LISTSTATUS"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["FileStatuses"]["FileStatus"].as_array().map(Vec::len),
        Some(2)
    );
}

/// CREATE's first step over HTTPS redirects to HTTPS (plain HTTP to the
/// port would get no answer): curl follows it and the file is made.
#[test]
fn create_over_https_redirects_to_https() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let out = crate::common::nsimage(&["store", "init", store.to_str().unwrap()]);
    assert!(out.status.success());
    let (cert, key) = certificate(dir.path());
    let server = Server::start(
        &store,
        &["--writable", "--tls-cert", &cert, "--tls-key", &key],
    );
    let url = format!("https://{}", server.addr);
    let curl = |args: &[&str]| {
        let out = Command::new("curl")
            .args(["-sS", "--max-time", "20", "--cacert", &cert])
            .args(args)
            .output()
            .expect("curl");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let head = curl(&[
        "-X",
        "PUT",
        "-D",
        "-",
        "-o",
        "/dev/null",
        &format!("{url}/webhdfs/v1/f?op=CREATE&user.name=hdfs"),
    ]);
    let location = head
        .lines()
        .find_map(|l| {
            l.strip_prefix("location: ")
                .or_else(|| l.strip_prefix("Location: "))
        })
        .unwrap_or_else(|| panic!("no Location: {head}"));
    assert!(location.starts_with(&format!("{url}/")), "{location}");
    curl(&[
        "-X",
        "PUT",
        "-L",
        "--data",
        "",
        &format!("{url}/webhdfs/v1/g?op=CREATE&user.name=hdfs"),
    ]);
    let v: Value =
        serde_json::from_str(&curl(&[&format!("{url}/webhdfs/v1/g?op=GETFILESTATUS")])).unwrap();
    assert_eq!(v["FileStatus"]["type"], "FILE", "{v}");
}

#[test]
fn a_bad_certificate_or_key_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("ns.nsi");
    let empty = nsimage_namespace::Namespace::default();
    std::fs::write(
        &img,
        image(&empty, &nsimage_writer::WriteOptions::default()),
    )
    .unwrap();
    let (cert, key) = certificate(dir.path());
    let junk = dir.path().join("junk.pem");
    std::fs::write(&junk, "not a certificate\n").unwrap();
    let junk = junk.to_str().unwrap();
    for (c, k, names) in [
        (junk, key.as_str(), junk),
        (cert.as_str(), junk, junk),
        (cert.as_str(), cert.as_str(), cert.as_str()),
    ] {
        let out = nsimage(&[
            "serve",
            img.to_str().unwrap(),
            "--addr",
            "127.0.0.1:0",
            "--tls-cert",
            c,
            "--tls-key",
            k,
        ]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(names), "{err}");
    }
}
