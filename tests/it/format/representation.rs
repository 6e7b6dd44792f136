//! The namespace's in-memory representation may change (issue 42: a
//! 40-byte node, blocks as varints after the name in one record; then a
//! 32-byte node, a file's access time in its record, children numbered in
//! name order kept as a run of slots); what a
//! namespace holds and what every command says about it may not. For every
//! testkit shape, the generator, a namespace mutated through every kind of
//! edit (with a snapshot taken half-way and kept), and every real Hadoop
//! image under `tests/data/hdfs`, this test compares with what the build
//! before the change gave (`tests/data/representation.json`, written by
//! that build): the digest, the bytes of the image the writer makes, the
//! Hadoop image `convert --to hdfs` makes, and the output of every viewer
//! command that reads a whole namespace or streams one (`ls -R`, `find
//! --sorted`, `stat`, `du`, the three dumps, `diff`).
//!
//! `NSIMAGE_UPDATE_GOLDEN=1` rewrites the file instead of comparing: only
//! for a build whose answers are known right (the file's history says
//! which build wrote it), or where a command's output changed on purpose
//! and the rewrite changes that command's answers alone (issue 43: `ls`'s
//! text became Hadoop's, and only the `ls -R` answers moved; then `diff`'s
//! text came to show values and subtrees as their tops, and only `diff
//! text` moved; then `dump --format jsonl` took the one inode shape of
//! docs/inode.schema.json, and only `dump jsonl` moved).

use crate::common::nsimage;
use nsimage_namespace::{Block, FileSpec, Namespace, PermSpec, XAttrNs, ROOT_ID};
use nsimage_testkit::generate::{generate, GenSpec};
use nsimage_testkit::shapes::{build, Names, Shape, Tree};
use nsimage_writer::{write_image, WriteOptions};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const GOLDEN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/representation.json"
);

fn hash(bytes: &[u8]) -> String {
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(bytes))
}

/// Every testkit shape: each tree, each naming, uniform or not, with
/// blocks and all-zero xattrs.
fn shapes() -> Vec<(String, Shape)> {
    let mut v = Vec::new();
    for (t, tree) in [
        ("wide", Tree::Wide),
        ("spread", Tree::Spread { dirs: 7 }),
        ("chain", Tree::Chain),
        ("random", Tree::Random { dir_every: 3 }),
    ] {
        for (n, names) in [
            ("identical", Names::Identical),
            ("near", Names::NearIdentical { prefix: 200 }),
            ("any", Names::AnyBytes { max_len: 3 }),
        ] {
            for uniform in [true, false] {
                let shape = Shape {
                    seed: 9,
                    inodes: 157,
                    tree,
                    names,
                    max_blocks: 3,
                    zero_xattr_inodes: 2,
                    zero_xattrs_each: 2,
                    zero_xattr_len: 100,
                    uniform,
                };
                v.push((format!("shape-{t}-{n}-{uniform}"), shape));
            }
        }
    }
    v
}

/// Every kind of edit, on a generated namespace: creates of each kind,
/// blocks added to old and new files (in place and copied), renames of
/// files with blocks, of links and of directories, times, owners, modes,
/// replication, quotas, xattrs, ACLs, under-construction marks and deletes.
/// Returns the namespace after half the edits (a snapshot) and at the end.
fn mutated() -> (Namespace, Namespace) {
    let mut ns = generate(GenSpec {
        inodes: 2_000,
        seed: 7,
    });
    let p = PermSpec {
        user: b"etl",
        group: b"hadoop",
        mode: 0o750,
    };
    let spec = FileSpec {
        replication: 2,
        preferred_block_size: 64 << 20,
        storage_policy: 7,
    };
    let mut block = ns.info().last_block_id;
    let mut next = |len: u64| {
        block += 1;
        Block {
            id: block,
            generation_stamp: 5_000 + block % 97,
            length: len,
        }
    };
    let files: Vec<u64> = ns
        .iter()
        .filter(|n| n.kind() == nsimage_namespace::InodeKind::File)
        .map(|n| n.id())
        .collect();
    let dirs: Vec<u64> = ns
        .iter()
        .filter(|n| n.kind() == nsimage_namespace::InodeKind::Directory)
        .map(|n| n.id())
        .collect();
    let t = 1_750_000_000_000u64;
    let new_dir = ns.mkdirs(b"/moved/here", &p, t).unwrap();
    for (i, &f) in files.iter().step_by(37).enumerate() {
        // Blocks on an old file: its record copied to the arena's tail.
        ns.add_block(f, next(1 + i as u64 * 1_000_003)).unwrap();
    }
    for i in 0..40u64 {
        let name = format!("new-{i:03}");
        let f = ns
            .create_in(new_dir, name.as_bytes(), &p, &spec, t + i)
            .unwrap();
        // Blocks on the newest file: in place, the record ends its chunk.
        for k in 0..(i % 4) {
            ns.add_block(f, next((k + 1) << 20)).unwrap();
        }
        if i % 5 == 0 {
            ns.symlink_in(new_dir, format!("ln-{i}").as_bytes(), b"/data/x", &p, t)
                .unwrap();
        }
    }
    let snapshot = ns.snapshot();
    for (i, &f) in files.iter().step_by(53).enumerate() {
        let name = format!("renamed-{i}-with-a-longer-name-than-before");
        ns.rename_in(f, new_dir, name.as_bytes(), t + 100).unwrap();
        // Blocks after the rename: the moved record grows.
        ns.add_block(f, next(77)).unwrap();
        ns.set_times(f, Some(t + 200), Some(t + 300)).unwrap();
        if i % 3 == 0 {
            ns.set_replication(f, 5).unwrap();
            ns.set_xattr(f, XAttrNs::User, b"tag", b"v").unwrap();
        }
        if i % 4 == 0 {
            ns.set_under_construction(f, Some((b"client", b"10.0.0.1")))
                .unwrap();
        }
    }
    let link = ns.resolve(b"/moved/here/ln-5").unwrap();
    ns.rename_in(link, ROOT_ID, b"top-link", t + 400).unwrap();
    for (i, &d) in dirs.iter().skip(20).step_by(41).enumerate() {
        if ns.inode(d).is_none() {
            continue;
        }
        match i % 4 {
            0 => ns.set_mode(d, 0o700).unwrap(),
            1 => ns
                .set_owner(d, Some(&b"alice"[..]), Some(&b"analysts"[..]))
                .unwrap(),
            2 => ns.set_quota(d, 50_000, 1 << 42).unwrap(),
            _ => ns
                .set_acl(
                    d,
                    &[(b"", 0, false, 7), (b"", 2, false, 5), (b"", 3, false, 0)],
                )
                .unwrap(),
        }
    }
    let moved = dirs[30];
    if ns.inode(moved).is_some() {
        ns.rename_in(moved, new_dir, b"a-moved-directory", t + 500)
            .unwrap();
    }
    for &f in files.iter().skip(11).step_by(61) {
        if ns.inode(f).is_some() {
            ns.delete_id(f, false, t + 600).unwrap();
        }
    }
    let gone = dirs[45];
    if ns.inode(gone).is_some() && !ns.path_of(gone).unwrap().starts_with(b"/moved") {
        ns.delete_id(gone, true, t + 700).unwrap();
    }
    (snapshot, ns)
}

/// What a case's answers hash to, command by command.
type Answers = BTreeMap<String, String>;

fn run(args: &[&str]) -> Vec<u8> {
    let out = nsimage(args);
    assert!(
        out.status.success(),
        "nsimage {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("a temporary path is UTF-8")
}

/// The answers of the viewer commands on `image`, and the Hadoop image
/// `convert --to hdfs` makes of it.
fn commands(dir: &Path, image: &Path, a: &mut Answers) {
    let img = path_str(image);
    for (what, args) in [
        ("ls -R", vec!["ls", "-R", img, "/"]),
        ("ls -R --json", vec!["ls", "-R", "--json", img, "/"]),
        (
            "find --sorted",
            vec!["find", "--sorted", "--json", img, "/"],
        ),
        ("du -d 3", vec!["du", "-d", "3", "--json", img, "/"]),
        ("dump xml", vec!["dump", "--format", "xml", img]),
        ("dump delimited", vec!["dump", "--format", "delimited", img]),
        ("dump jsonl", vec!["dump", "--format", "jsonl", img]),
        ("stat /", vec!["stat", "--json", img, "/"]),
    ] {
        a.insert(what.into(), hash(&run(&args)));
    }
    // One stat per kind: the last file, directory and link the dump lists.
    let jsonl = run(&["ls", "-R", "--json", img, "/"]);
    let mut last = BTreeMap::new();
    for line in jsonl.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let v: serde_json::Value = serde_json::from_slice(line).unwrap();
        let kind = v["type"].as_str().unwrap_or("?").to_string();
        // Paths the command line can name back (a name of any byte is
        // printed lossily).
        if let Some(p) = v["path"]
            .as_str()
            .filter(|p| p.bytes().all(|b| b.is_ascii_graphic()))
        {
            last.insert(kind, p.to_string());
        }
    }
    for (kind, p) in last {
        a.insert(
            format!("stat {kind}"),
            hash(&run(&["stat", "--json", img, &p])),
        );
    }
    let hdfs = dir.join("out.fsimage");
    run(&["convert", "--to", "hdfs", img, path_str(&hdfs)]);
    a.insert(
        "convert --to hdfs".into(),
        hash(&std::fs::read(&hdfs).unwrap()),
    );
}

fn write(ns: &Namespace, path: &Path) -> String {
    let mut bytes = Vec::new();
    write_image(ns, &mut bytes, &WriteOptions::default()).unwrap();
    std::fs::write(path, &bytes).unwrap();
    hash(&bytes)
}

/// A namespace's answers: digest, image bytes, and the commands on it.
fn answers_of(dir: &Path, ns: &Namespace) -> (Answers, PathBuf) {
    let mut a = Answers::new();
    a.insert("digest".into(), ns.digest().to_string());
    let image = dir.join("ns.nsi");
    a.insert("image".into(), write(ns, &image));
    commands(dir, &image, &mut a);
    (a, image)
}

fn hadoop_images() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hdfs");
    let mut v = Vec::new();
    for d in std::fs::read_dir(&root).unwrap() {
        let d = d.unwrap().path();
        if !d.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&d).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_none_or(|e| e != "md5") && f.is_file() {
                v.push(f);
            }
        }
    }
    v.sort();
    v
}

fn all_answers() -> BTreeMap<String, Answers> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut all = BTreeMap::new();
    for (name, shape) in shapes() {
        all.insert(name, answers_of(dir, &build(&shape)).0);
    }
    let generated = generate(GenSpec {
        inodes: 3_000,
        seed: 42,
    });
    all.insert("generate-3000".into(), answers_of(dir, &generated).0);
    let (half, end) = mutated();
    let (mut a, _) = answers_of(dir, &half);
    let old = dir.join("half.nsi");
    std::fs::rename(dir.join("ns.nsi"), &old).unwrap();
    let (b, new) = answers_of(dir, &end);
    a.insert(
        "diff".into(),
        hash(&run(&["diff", "--json", path_str(&old), path_str(&new)])),
    );
    a.insert(
        "diff text".into(),
        hash(&run(&["diff", path_str(&old), path_str(&new)])),
    );
    all.insert("mutated-snapshot".into(), a);
    all.insert("mutated".into(), b);
    for f in hadoop_images() {
        let rel = f
            .strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")))
            .unwrap()
            .display()
            .to_string();
        let mut a = Answers::new();
        let nsi = dir.join("from-hadoop.nsi");
        run(&["convert", "--to", "nsimage", path_str(&f), path_str(&nsi)]);
        let load = run(&["load", "--json", path_str(&nsi)]);
        let load: serde_json::Value = serde_json::from_slice(&load).unwrap();
        a.insert(
            "digest".into(),
            load["digest"].as_str().unwrap().to_string(),
        );
        a.insert(
            "convert --to nsimage".into(),
            hash(&std::fs::read(&nsi).unwrap()),
        );
        commands(dir, &nsi, &mut a);
        let fs = path_str(&f);
        a.insert("hadoop ls -R".into(), hash(&run(&["ls", "-R", fs, "/"])));
        a.insert(
            "hadoop find --sorted".into(),
            hash(&run(&["find", "--sorted", "--json", fs, "/"])),
        );
        all.insert(rel, a);
    }
    all
}

#[test]
fn every_namespace_answers_as_it_did_before_the_representation_changed() {
    let got = all_answers();
    if std::env::var_os("NSIMAGE_UPDATE_GOLDEN").is_some() {
        let text = serde_json::to_string_pretty(&got).unwrap();
        std::fs::write(GOLDEN, text + "\n").unwrap();
        return;
    }
    let want: BTreeMap<String, Answers> =
        serde_json::from_str(&std::fs::read_to_string(GOLDEN).unwrap()).unwrap();
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "the cases"
    );
    let mut differ = Vec::new();
    for (case, answers) in &want {
        for (what, h) in answers {
            if got[case].get(what) != Some(h) {
                differ.push(format!("{case}: {what}"));
            }
        }
        assert_eq!(got[case].len(), answers.len(), "{case}: the answers");
    }
    assert!(differ.is_empty(), "answers that changed: {differ:#?}");
    // Not vacuous: every case answered every command, and the cases differ.
    assert!(want.len() >= 24 + 3 + 5, "{} cases", want.len());
    let digests: std::collections::BTreeSet<_> = want.values().map(|a| &a["digest"]).collect();
    assert!(digests.len() > 20);
}
