//! The commands that hold a whole namespace (`load`, `verify`, `convert`,
//! `diff`, `serve` on an image or a store, `store init --from`, `store
//! recover` and the other store commands, a lookup that loads a Hadoop
//! image whole) under `--memory-limit` (issue
//! 42): an image whose declared inodes need more than the limit (about
//! `LOAD_BYTES_PER_INODE` bytes each) is refused before anything is read
//! or written, with exit 2 and the size it needs, and nothing is left
//! behind; at the limit the command runs as without one. A declared count
//! that lies is damage (exit 1), never a shortfall.

use crate::common::{self, nsimage};
use nsimage_format::SectionKind;
use nsimage_loader::budget::LOAD_BYTES_PER_INODE;
use nsimage_testkit::generate::{generate, GenSpec};
use nsimage_writer::WriteOptions;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Runs `nsimage args`, killed (and the test failed) past 60 s: a server
/// that was not refused would never exit.
fn bounded(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nsimage"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} still running after 60 s: not refused");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Refused for its size: exit 2, nothing on stdout, a message that says
/// how much the load needs and which limit it is over.
fn assert_refused(o: &Output, what: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{what}: {err}");
    assert!(o.stdout.is_empty(), "{what}: printed something");
    assert!(
        err.contains("needs about") && err.contains("--memory-limit"),
        "{what}: {err}"
    );
}

#[test]
fn whole_loads_over_the_limit_are_refused_before_they_start() {
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| dir.path().join(n);
    let ns = generate(GenSpec {
        inodes: 20_000,
        seed: 11,
    });
    let inodes = ns.stats().inodes;
    let need = inodes * LOAD_BYTES_PER_INODE;
    let (below, at) = ((need - 1).to_string(), need.to_string());
    let img = d("img.nsi");
    std::fs::write(&img, common::image(&ns, &WriteOptions::default())).unwrap();
    let hadoop = d("fsimage_hadoop");
    let o = nsimage(&["convert", s(&img), s(&hadoop), "--to", "hdfs"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let digest = common::json(&nsimage(&["load", s(&img), "--json"]))["digest"].clone();

    for image in [&img, &hadoop] {
        let (out, store) = (d("out.nsi"), d("store"));
        let commands: [&[&str]; 5] = [
            &["load", s(image)],
            &["verify", s(image)],
            &["convert", s(image), s(&out), "--to", "nsimage"],
            &["store", "init", s(&store), "--from", s(image)],
            &["serve", s(image), "--addr", "127.0.0.1:0"],
        ];
        for args in commands {
            let what = format!("{args:?}");
            let mut all = args.to_vec();
            all.extend(["--memory-limit", &below]);
            assert_refused(&bounded(&all), &what);
            assert!(!out.exists() && !store.exists(), "{what}: left a file");
        }
        // At the limit: loaded, the same namespace.
        let o = nsimage(&["load", s(image), "--json", "--memory-limit", &at]);
        assert_eq!(common::json(&o)["digest"], digest);
        let o = nsimage(&["verify", s(image), "--memory-limit", &at]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }

    // A one-path lookup of an image without a name section (a Hadoop
    // image) loads it whole: sized as a load.
    for args in [&["stat", s(&hadoop), "/"][..], &["ls", s(&hadoop), "/"][..]] {
        let mut all = args.to_vec();
        all.extend(["--memory-limit", &below]);
        assert_refused(&nsimage(&all), &format!("{args:?}"));
    }

    // diff holds both namespaces at once: a limit that fits either alone
    // is not enough.
    let o = nsimage(&["diff", s(&img), s(&hadoop), "--memory-limit", &at]);
    assert_refused(&o, "diff");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("both namespaces"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let twice = (2 * need).to_string();
    let o = nsimage(&["diff", s(&img), s(&hadoop), "--memory-limit", &twice]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // A store whose checkpoint does not fit: every command that opens it
    // (and the servers, read-only or writable) refuses, and its files stay
    // as they were: no image skipped as damaged, no segment cut or made.
    let store = d("kept");
    common::store_from(&store, &img);
    let before = common::names(&store);
    let commands: [&[&str]; 6] = [
        &["store", "recover", s(&store)],
        &["store", "status", s(&store)],
        &["store", "checkpoint", s(&store)],
        &["store", "apply", s(&store), "--ops", "10"],
        &["serve", s(&store), "--addr", "127.0.0.1:0"],
        &["serve", s(&store), "--writable", "--addr", "127.0.0.1:0"],
    ];
    for args in commands {
        let mut all = args.to_vec();
        all.extend(["--memory-limit", &below]);
        let what = format!("{args:?}");
        assert_refused(&bounded(&all), &what);
        assert_eq!(common::names(&store), before, "{what}: changed the store");
    }
    let o = nsimage(&[
        "store",
        "recover",
        s(&store),
        "--json",
        "--memory-limit",
        &at,
    ]);
    assert_eq!(common::json(&o)["digest"], digest);
}

/// An image that declares 50 inodes more than its records hold (an
/// nsimage piece's count, within what its bytes could hold, so that the
/// index opens; a Hadoop INODE header's `numInodes`) under a limit that
/// fits its real inodes but not the lie: the count is read and found false
/// before any refusal, so the image is reported damaged (exit 1), not too
/// large (exit 2), by `load`, `store init --from` (which makes no store of
/// it) and `diff`.
#[test]
fn a_declared_count_that_lies_is_damage_not_a_shortfall() {
    use prost::Message as _;
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| dir.path().join(n);
    let ns = generate(GenSpec {
        inodes: 20_000,
        seed: 12,
    });
    let inodes = ns.stats().inodes;
    let good = common::image(&ns, &common::tiny(64 << 10));
    // nsimage: the first INODE piece's count and the section's.
    let mut idx = common::index_of(&good);
    let end = idx
        .sections
        .iter()
        .map(|s| s.offset + s.length)
        .max()
        .unwrap();
    let inode = idx.section_mut(SectionKind::INODE).unwrap();
    assert!(inode.sub_sections.len() > 1, "the test wants pieces");
    inode.records += 50;
    inode.sub_sections[0].records += 50;
    let lying_nsi = d("lies.nsi");
    std::fs::write(
        &lying_nsi,
        common::with_index(good[..end as usize].to_vec(), &idx),
    )
    .unwrap();
    // Hadoop: the INODE section's header, the same number of bytes.
    let nsi = d("good.nsi");
    std::fs::write(&nsi, &good).unwrap();
    let hadoop = d("fsimage_good");
    let o = nsimage(&["convert", s(&nsi), s(&hadoop), "--to", "hdfs"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut bytes = std::fs::read(&hadoop).unwrap();
    let summary = crate::hdfs_common::summary_of(&bytes);
    let at = summary
        .sections
        .iter()
        .find(|x| x.name() == "INODE")
        .unwrap()
        .offset() as usize;
    let mut cur = &bytes[at..];
    let len = prost::encoding::decode_varint(&mut cur).unwrap() as usize;
    let w = bytes.len() - at - cur.len();
    let mut h = nsimage_format::hdfs_pb::INodeSection::decode(&cur[..len]).unwrap();
    assert_eq!(h.num_inodes(), inodes);
    h.num_inodes = Some(inodes + 50);
    let new = h.encode_to_vec();
    assert_eq!(new.len(), len, "the header keeps its length");
    bytes[at + w..at + w + len].copy_from_slice(&new);
    // Without its sidecar, which would now refuse it for its MD5.
    let lying_hadoop = d("fsimage_lies");
    std::fs::write(&lying_hadoop, &bytes).unwrap();

    let limit = (inodes * LOAD_BYTES_PER_INODE).to_string();
    let twice = (2 * inodes * LOAD_BYTES_PER_INODE).to_string();
    for lying in [&lying_nsi, &lying_hadoop] {
        let store = d("store");
        let commands: [&[&str]; 3] = [
            &["load", s(lying), "--memory-limit", &limit],
            &[
                "store",
                "init",
                s(&store),
                "--from",
                s(lying),
                "--memory-limit",
                &limit,
            ],
            &["diff", s(&nsi), s(lying), "--memory-limit", &twice],
        ];
        for args in commands {
            let o = nsimage(args);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
            assert!(err.contains("corrupt"), "{args:?}: {err}");
            assert!(!err.contains("--memory-limit"), "{args:?}: {err}");
        }
        assert!(!store.exists());
    }
    // The honest images under the same limits: loaded.
    for args in [
        &["load", s(&nsi), "--memory-limit", &limit][..],
        &["load", s(&hadoop), "--memory-limit", &limit][..],
        &["diff", s(&nsi), s(&hadoop), "--memory-limit", &twice][..],
    ] {
        let o = nsimage(args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
