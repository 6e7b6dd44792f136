//! One shape for an inode: every inode `ls --json`, `find --json`, `stat
//! --json` and `dump --format jsonl` print validates against
//! docs/inode.schema.json, and where two commands print the same inode,
//! the fields both print are equal.

use crate::common::{image, inode_schema_errors, nsimage, tiny};
use nsimage_testkit::generate::{generate, GenSpec};
use nsimage_testkit::shapes::{build, Names, Shape, Tree};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn lines(args: &[&str]) -> Vec<Value> {
    let out = nsimage(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{args:?}: {e}: {l}")))
        .collect()
}

/// Images with every kind of field: the rich sample (xattrs, text and
/// binary, an ACL, quotas, a file under construction, a symlink, a sticky
/// directory), a generated namespace, names of any bytes (not UTF-8), and
/// real Hadoop images.
fn images(dir: &Path) -> Vec<PathBuf> {
    let any_bytes = build(&Shape {
        seed: 3,
        inodes: 120,
        tree: Tree::Random { dir_every: 3 },
        names: Names::AnyBytes { max_len: 3 },
        max_blocks: 2,
        zero_xattr_inodes: 2,
        zero_xattrs_each: 1,
        zero_xattr_len: 10,
        uniform: false,
    });
    let gen = generate(GenSpec {
        inodes: 3000,
        seed: 4,
    });
    let mut v = Vec::new();
    for (name, ns) in [
        ("rich.nsi", super::commands::rich_sample()),
        ("gen.nsi", gen),
        ("bytes.nsi", any_bytes),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, image(&ns, &tiny(1 << 12))).unwrap();
        v.push(p);
    }
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hdfs");
    v.push(data.join("hadoop252/fsimage_0000000000000000003"));
    v.push(data.join("upgrade26/fsimage_0000000000000000026"));
    v.push(data.join("zero_block_size/fsimage_0000000000000000004"));
    v
}

/// The fields two objects both have, but for `_base64` twins.
fn shared(a: &Value, b: &Value) -> Vec<String> {
    let (Value::Object(a), Value::Object(b)) = (a, b) else {
        return Vec::new();
    };
    a.keys()
        .filter(|k| b.contains_key(*k) && !k.ends_with("_base64"))
        .cloned()
        .collect()
}

#[test]
fn every_inode_printed_as_json_has_the_one_shape() {
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0usize;
    for img in images(dir.path()) {
        let i = img.to_str().unwrap();
        let mut outputs: Vec<(String, Vec<Value>)> = vec![
            ("ls".into(), lines(&["ls", i, "/", "--json"])),
            ("ls -R".into(), lines(&["ls", i, "/", "-R", "--json"])),
            ("find".into(), lines(&["find", i, "/", "--json"])),
            (
                "find --sorted".into(),
                lines(&["find", i, "/", "--sorted", "--json"]),
            ),
            (
                "dump jsonl".into(),
                lines(&["dump", i, "--format", "jsonl"]),
            ),
        ];
        // stat of the root and of up to 40 paths the command line can name.
        let mut stats = lines(&["stat", i, "/", "--json"]);
        for e in outputs[1].1.iter().take(40) {
            let p = e["path"].as_str().unwrap();
            if p.bytes().all(|b| b.is_ascii_graphic()) {
                stats.extend(lines(&["stat", i, p, "--json"]));
            }
        }
        outputs.push(("stat".into(), stats));
        // Every object against the schema.
        for (what, objs) in &outputs {
            assert!(!objs.is_empty(), "{i}: {what} printed nothing");
            for o in objs {
                let errors = inode_schema_errors(o);
                assert!(errors.is_empty(), "{i}: {what}: {o}\n{}", errors.join("\n"));
                checked += 1;
            }
        }
        // The same inode, the same fields, in every command that prints it
        // (by id: a path that is not UTF-8 prints lossily).
        let mut by_id: BTreeMap<u64, Vec<(&str, &Value)>> = BTreeMap::new();
        for (what, objs) in &outputs {
            for o in objs {
                by_id
                    .entry(o["id"].as_u64().unwrap())
                    .or_default()
                    .push((what, o));
            }
        }
        for (id, seen) in &by_id {
            for (wa, a) in seen {
                for (wb, b) in seen {
                    for k in shared(a, b) {
                        assert_eq!(a[&k], b[&k], "{i}: inode {id}: {k} in {wa} and {wb}");
                    }
                }
            }
        }
        let dumped = outputs.iter().find(|o| o.0 == "dump jsonl").unwrap();
        // The not-UTF-8 names come with their bytes.
        if i.ends_with("bytes.nsi") {
            assert!(
                dumped.1.iter().any(|o| o.get("name_base64").is_some()),
                "{i}"
            );
        }
    }
    assert!(checked > 10_000, "{checked} objects checked");
}
