//! Every row of the server's op table (`nsimage_server::params::OPS`)
//! sent to both servers on the same namespace: a read-only one on an image
//! and a writable one on a store made from that image. Reads get the same
//! status and the same document from both; a write neither serves the same
//! 400 UnsupportedOperationException from both; any other write gets the
//! read-only server's 403 AccessControlException (sent with GET or with
//! its own method) and, on the writable server, what its row's handler
//! calls for. Parameters no op defines change no answer. Loopback only;
//! every request is bounded by the clients' timeouts.

use crate::common;
use crate::serve_common;

use nsimage_server::params::{Handler, Method, OPS};
use serde_json::Value;
use serve_common::{request, Server};

/// The body as JSON, whether it came chunked (a streamed listing) or not
/// (Null when empty).
fn json_of(body: &[u8]) -> Value {
    if body.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(body)
        .or_else(|_| serde_json::from_slice(&serve_common::dechunk(body)))
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(body)))
}

fn exception(v: &Value) -> String {
    v["RemoteException"]["exception"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn method_name(m: Method) -> &'static str {
    match m {
        Method::Get => "GET",
        Method::Put => "PUT",
        Method::Post => "POST",
        Method::Delete => "DELETE",
    }
}

/// Parameters no WebHDFS op defines (and one a client sends beside
/// CREATE's): ignored, as the NameNode ignores them.
const UNKNOWN: &str = "tempdir=/tmp/x&NoSuchParameter=1&x.y.z=";

#[test]
fn every_op_of_the_table_is_answered_alike_by_both_servers() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("sample.nsi");
    std::fs::write(&img, common::image(&common::sample(), &Default::default())).unwrap();
    let store = dir.path().join("store");
    common::store_from(&store, &img);
    let image_server = Server::start(&img, &[]);
    let store_server = Server::start(&store, &["--writable"]);
    let ask = |server: &Server, method: &str, target: &str| {
        let (status, body) = request(server.addr, method, target.as_bytes());
        (status, json_of(&body))
    };
    for p in UNKNOWN.split('&').map(|kv| kv.split('=').next().unwrap()) {
        let p = p.to_ascii_lowercase();
        assert!(
            OPS.iter().all(|r| !r.params.contains(&p.as_str())),
            "{p} is a parameter of an op"
        );
    }

    // Reads first, so that no write of the loop below changes what they
    // answer.
    let mut answered = Vec::new();
    for row in OPS.iter().filter(|r| r.method == Method::Get) {
        let target = format!("/webhdfs/v1/?op={}", row.name);
        let from_image = ask(&image_server, "GET", &target);
        let from_store = ask(&store_server, "GET", &target);
        assert_eq!(from_image, from_store, "GET op={}", row.name);
        // Unknown parameters change nothing.
        let with_unknown = format!("{target}&{UNKNOWN}");
        for server in [&image_server, &store_server] {
            assert_eq!(
                ask(server, "GET", &with_unknown),
                from_image,
                "GET op={} with {UNKNOWN}",
                row.name
            );
        }
        match row.handler {
            Handler::Read(_) | Handler::List => {
                assert_eq!(from_image.0, 200, "op={}: {}", row.name, from_image.1);
                answered.push(row.name);
            }
            _ => assert_eq!(
                (from_image.0, exception(&from_image.1)),
                (400, "UnsupportedOperationException".to_string()),
                "op={}",
                row.name
            ),
        }
        // A read sent with another method is the same 400 from both.
        let put = (
            ask(&image_server, "PUT", &target),
            ask(&store_server, "PUT", &target),
        );
        assert_eq!(put.0, put.1, "PUT op={}", row.name);
        assert_eq!(put.0 .0, 400, "PUT op={}: {}", row.name, put.0 .1);
    }
    assert_eq!(answered.len(), 9, "{answered:?}");

    for row in OPS.iter().filter(|r| r.method != Method::Get) {
        let target = format!("/webhdfs/v1/?op={}", row.name);
        let own = method_name(row.method);
        if row.unsupported_write() {
            // Neither server serves it: the same 400 from both, with any
            // method, unknown parameters or not.
            for m in ["GET", own] {
                for t in [target.clone(), format!("{target}&{UNKNOWN}")] {
                    let (a, b) = (ask(&image_server, m, &t), ask(&store_server, m, &t));
                    assert_eq!(a, b, "{m} {t}");
                    assert_eq!(
                        (a.0, exception(&a.1)),
                        (400, "UnsupportedOperationException".to_string()),
                        "{m} {t}"
                    );
                }
            }
            continue;
        }
        for m in ["GET", own] {
            let (status, body) = ask(&image_server, m, &target);
            assert_eq!(
                (status, exception(&body)),
                (403, "AccessControlException".to_string()),
                "read-only server, {m} op={}",
                row.name
            );
            assert!(
                body["RemoteException"]["message"]
                    .as_str()
                    .is_some_and(|t| t.contains("read-only")),
                "{m} op={}: {body}",
                row.name
            );
        }
        // The writable server takes a write only with its own method.
        let (status, body) = ask(&store_server, "GET", &target);
        assert_eq!(
            (status, exception(&body)),
            (400, "IllegalArgumentException".to_string()),
            "writable server, GET op={}",
            row.name
        );
        let (status, body) = ask(&store_server, own, &target);
        let shown = format!("writable server, {own} op={}: {status} {body}", row.name);
        // The same write again with unknown parameters: the same status
        // (each of these writes on `/` answers the same when repeated).
        let again = ask(&store_server, own, &format!("{target}&{UNKNOWN}"));
        assert_eq!(
            (again.0, exception(&again.1)),
            (status, exception(&body)),
            "{shown}, then with {UNKNOWN}: {again:?}"
        );
        match row.handler {
            Handler::Create(_) => assert_eq!(status, 307, "{shown}"),
            _ => {
                // Served: answered by its handler (a result, or the
                // refusal its own checks give), never the read-only
                // server's refusal or an op not served.
                assert!(status < 500, "{shown}");
                let message = body["RemoteException"]["message"].as_str().unwrap_or("");
                assert!(!message.contains("read-only"), "{shown}");
                assert_ne!(exception(&body), "UnsupportedOperationException", "{shown}");
            }
        }
    }
}
