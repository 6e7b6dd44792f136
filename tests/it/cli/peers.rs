//! The bench's peers (JSON lines, SQLite) hold the same namespace: a round
//! trip through each gives the same digest, rare attributes included.

use crate::common;

use nsimage_namespace::Namespace;
use nsimage_testkit::peers::{jsonl, sqlite};

fn assert_peers_round_trip(ns: &Namespace) {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("ns.jsonl");
    jsonl::export(ns, &j).unwrap();
    assert_eq!(jsonl::load(&j).unwrap().digest(), ns.digest());
    let s = dir.path().join("ns.sqlite");
    sqlite::export(ns, &s).unwrap();
    assert_eq!(sqlite::load(&s).unwrap().digest(), ns.digest());
}

#[test]
fn peers_round_trip_the_sample() {
    assert_peers_round_trip(&common::sample());
}

#[test]
fn peers_round_trip_a_generated_namespace() {
    use nsimage_testkit::generate::{generate, GenSpec};
    assert_peers_round_trip(&generate(GenSpec {
        inodes: 5_000,
        seed: 4,
    }));
}
