//! Stores at rest (STORE.md, "At rest"): `store init --compress/--encrypt`,
//! checkpoints compressed and encrypted, the journal sealed batch by
//! batch; the same namespace as a plain store fed the same ops; a missing
//! or wrong key refused before anything changes; damage to a sealed batch
//! refused in the middle and cut as a torn tail at the end.

use crate::common;

use common::{json, names, nsimage};
use nsimage_format::cipher::Key;
use nsimage_format::codec::Compression;
use nsimage_store::fs::RealFs;
use nsimage_store::{Store, StoreError, StoreOptions};
use nsimage_testkit::workload::Workload;
use nsimage_writer::AtRestOptions;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A fresh key file in `dir`.
fn keygen(dir: &Path, name: &str) -> PathBuf {
    let k = dir.join(name);
    let out = nsimage(&["keygen", s(&k)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    k
}

/// Every file of `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    names(dir)
        .into_iter()
        .map(|n| {
            let b = std::fs::read(dir.join(&n)).unwrap();
            (n, b)
        })
        .collect()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `nsimage ARGS` with `--key-file KEY` when a key is given.
fn run(key: Option<&Path>, args: &[&str]) -> std::process::Output {
    let mut v: Vec<&str> = args.to_vec();
    if let Some(k) = key {
        v.push("--key-file");
        v.push(s(k));
    }
    nsimage(&v)
}

/// Inits a store with `init_args`, applies 600 ops of seed 7 with a
/// checkpoint every 250 txids, and returns the recovered digest.
fn fill(dir: &Path, key: Option<&Path>, init_args: &[&str]) -> String {
    let d = s(dir);
    let mut args = vec!["store", "init", d];
    args.extend_from_slice(init_args);
    let out = run(key, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let applied = json(&run(
        key,
        &[
            "store",
            "apply",
            d,
            "--ops",
            "600",
            "--seed",
            "7",
            "--checkpoint-every",
            "250",
            "--batch",
            "32",
            "--json",
        ],
    ));
    assert_eq!(applied["txid"], 600);
    let r = json(&run(key, &["store", "recover", d, "--json"]));
    assert_eq!(r["txid"], 600);
    assert_eq!(r["image_txid"], 500);
    assert_eq!(r["replayed"], 100);
    assert_eq!(r["digest"], applied["digest"]);
    r["digest"].as_str().unwrap().to_string()
}

#[test]
fn compressed_and_encrypted_stores_recover_the_plain_stores_namespace() {
    let tmp = tempfile::tempdir().unwrap();
    let key = keygen(tmp.path(), "k.key");
    let plain = fill(&tmp.path().join("plain"), None, &[]);
    assert_eq!(
        std::fs::read(tmp.path().join("plain/VERSION")).unwrap(),
        b"nsimage-store 1\n"
    );
    assert!(!tmp.path().join("plain/AT_REST").exists());

    let cases: [(&str, &[&str], bool, Option<&str>); 4] = [
        ("zstd", &["--compress", "zstd:3"], false, Some("zstd")),
        ("enc", &["--encrypt"], true, None),
        (
            "both",
            &["--compress", "zstd", "--encrypt"],
            true,
            Some("zstd"),
        ),
        (
            "lz4enc",
            &["--compress", "lz4", "--encrypt"],
            true,
            Some("lz4"),
        ),
    ];
    for (name, init, encrypted, codec) in cases {
        let dir = tmp.path().join(name);
        let k = encrypted.then_some(key.as_path());
        assert_eq!(fill(&dir, k, init), plain, "{name}");
        assert_eq!(
            std::fs::read(dir.join("VERSION")).unwrap(),
            b"nsimage-store 2\n",
            "{name}"
        );
        let st = json(&run(k, &["store", "status", s(&dir), "--json"]));
        assert_eq!(st["recovered"], true, "{name}");
        assert_eq!(st["encrypted"], encrypted, "{name}");
        assert_eq!(st["digest"].as_str(), Some(plain.as_str()), "{name}");
        assert!(
            !st["unknown_files"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| n == "AT_REST"),
            "{name}: {st}"
        );
        // The checkpoint image is stored as the store says.
        let image = dir.join(format!("image_{:020}", 500));
        let info = json(&run(k, &["info", s(&image), "--json"]));
        assert_eq!(info["encryption"].is_object(), encrypted, "{name}: {info}");
        if let Some(c) = codec {
            assert!(
                info["codecs"].as_array().unwrap().iter().any(|x| x == c),
                "{name}: {info}"
            );
        }
        if encrypted {
            // Only with the key.
            let out = nsimage(&["load", s(&image), "--json"]);
            assert_eq!(out.status.code(), Some(1), "{name}: {}", stderr(&out));
            assert!(stderr(&out).contains("encrypted"), "{}", stderr(&out));
            let loaded = json(&run(k, &["load", s(&image), "--json"]));
            assert!(loaded.is_object());
            // The journal is sealed: no op's bytes in the clear (the
            // workload's names are ASCII; a plain segment shows them).
            let seg = dir.join(format!("edits_inprogress_{:020}", 501));
            let bytes = std::fs::read(&seg).unwrap();
            assert_eq!(&bytes[..10], b"NSJOURNL\x02\x00", "{name}");
            let dump = json_lines(&run(k, &["journal", "dump", s(&dir), "--json"]));
            assert_eq!(dump.len(), 100 + 250, "{name}");
            assert_eq!(dump.last().unwrap()["txid"], 600);
        }
    }
}

fn json_lines(out: &std::process::Output) -> Vec<serde_json::Value> {
    assert!(out.status.success(), "{}", stderr(out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn no_key_or_another_key_is_one_clear_error_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let key = keygen(tmp.path(), "k.key");
    let other = keygen(tmp.path(), "other.key");
    let dir = tmp.path().join("enc");
    let d = s(&dir);
    fill(&dir, Some(&key), &["--compress", "lz4", "--encrypt"]);
    // A torn tail too, so an open would cut something if it went ahead.
    let seg = dir.join(format!("edits_inprogress_{:020}", 501));
    let mut f = std::fs::OpenOptions::new().append(true).open(&seg).unwrap();
    std::io::Write::write_all(&mut f, &[7u8; 5]).unwrap();
    drop(f);
    let before = snapshot(&dir);

    for (k, what) in [(None, "encrypted"), (Some(other.as_path()), "wrong key")] {
        for args in [
            vec!["store", "recover", d, "--json"],
            vec!["store", "apply", d, "--ops", "5"],
            vec!["store", "checkpoint", d],
            vec!["journal", "dump", d],
        ] {
            let out = run(k, &args);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
            assert!(stderr(&out).contains(what), "{args:?}: {}", stderr(&out));
            assert!(stderr(&out).contains("fingerprint"), "{}", stderr(&out));
            assert!(out.stdout.is_empty(), "{args:?}");
            assert_eq!(snapshot(&dir), before, "{args:?} changed the store");
        }
    }
    // One sealed segment file without its key.
    let out = nsimage(&["journal", "dump", s(&seg)]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("encrypted"), "{}", stderr(&out));
    // Status reads without a key: it lists, says encrypted, knows no txid.
    let st = json(&nsimage(&["store", "status", d, "--json"]));
    assert_eq!(st["recovered"], false);
    assert_eq!(st["encrypted"], true);
    assert_eq!(st["compression"], "lz4");
    assert!(st["txid"].is_null());
    assert_eq!(st["images"].as_array().unwrap().len(), 2);
    let text = nsimage(&["store", "status", d]);
    assert!(text.status.success());
    assert!(String::from_utf8_lossy(&text.stdout).contains("encrypted"));
    // Another key: refused there too.
    let out = run(Some(&other), &["store", "status", d, "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(snapshot(&dir), before);
    // With the key: the torn tail is cut, everything else recovers.
    let r = json(&run(Some(&key), &["store", "recover", d, "--json"]));
    assert_eq!(r["txid"], 600);
    assert_eq!(r["torn_tail_bytes"], 5);
    // --encrypt without a key file is a usage error, nothing created.
    let out = nsimage(&["store", "init", s(&tmp.path().join("nokey")), "--encrypt"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!tmp.path().join("nokey").exists());
}

/// The frames (offset, length with prefix) of a sealed segment.
fn frames(bytes: &[u8]) -> Vec<(usize, usize)> {
    frames_from(bytes, 48)
}

#[test]
fn a_damaged_sealed_batch_is_refused_in_the_middle_and_cut_at_the_end() {
    let tmp = tempfile::tempdir().unwrap();
    let key = keygen(tmp.path(), "k.key");
    let dir = tmp.path().join("enc");
    let d = s(&dir);
    let k = Some(key.as_path());
    assert!(run(k, &["store", "init", d, "--encrypt"]).status.success());
    let applied = json(&run(
        k,
        &[
            "store", "apply", d, "--ops", "100", "--batch", "10", "--json",
        ],
    ));
    let seg = dir.join(format!("edits_inprogress_{:020}", 1));
    let good = std::fs::read(&seg).unwrap();
    let fr = frames(&good);
    assert_eq!(fr.len(), 10, "one sealed batch per group commit");
    assert_eq!(fr.last().map(|&(o, l)| o + l), Some(good.len()));

    // A flipped byte in a middle batch: refused, named, nothing cut.
    let (mid, mid_len) = fr[4];
    let mut bad = good.clone();
    bad[mid + mid_len / 2] ^= 0x10;
    std::fs::write(&seg, &bad).unwrap();
    let out = run(k, &["store", "recover", d]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(e.contains("does not authenticate"), "{e}");
    assert!(e.contains(&format!("{mid}")), "{e}");
    assert!(e.contains("nothing was cut"), "{e}");
    assert_eq!(std::fs::read(&seg).unwrap(), bad);
    // The clear first txid changed: also refused.
    let width = if good[mid] & 0x80 == 0 {
        1
    } else if good[mid + 1] & 0x80 == 0 {
        2
    } else {
        3
    };
    let mut bad = good.clone();
    bad[mid + width] ^= 1;
    std::fs::write(&seg, &bad).unwrap();
    assert_eq!(run(k, &["store", "recover", d]).status.code(), Some(1));
    // Two batches swapped: refused (their offsets are bound).
    let (a, al) = fr[1];
    let (b, bl) = fr[2];
    let mut swapped = good[..a].to_vec();
    swapped.extend_from_slice(&good[b..b + bl]);
    swapped.extend_from_slice(&good[a..a + al]);
    swapped.extend_from_slice(&good[b + bl..]);
    std::fs::write(&seg, &swapped).unwrap();
    assert_eq!(run(k, &["store", "recover", d]).status.code(), Some(1));

    // A flipped byte in the last batch: a torn tail, cut with its ops.
    let (last, last_len) = *fr.last().unwrap();
    let mut bad = good.clone();
    bad[last + last_len - 3] ^= 0x01;
    std::fs::write(&seg, &bad).unwrap();
    let st = json(&run(k, &["store", "status", d, "--json"]));
    assert_eq!(st["torn_tail_bytes"], last_len);
    assert_eq!(std::fs::read(&seg).unwrap(), bad, "status reads only");
    let r = json(&run(k, &["store", "recover", d, "--json"]));
    assert_eq!(r["torn_tail_bytes"], last_len);
    assert_eq!(r["txid"], 90);
    assert_eq!(std::fs::read(&seg).unwrap(), good[..last]);

    // A good batch replayed at the end (a copy of the first): its offset
    // is bound, so it authenticates nowhere else, and its clear txids are
    // not those that belong there: written data out of place, which no
    // crash leaves, so refused (as a plain store refuses a copied record:
    // a journal gap), nothing cut, never applied twice.
    let mut replayed = good[..last].to_vec();
    replayed.extend_from_slice(&good[fr[0].0..fr[0].0 + fr[0].1]);
    std::fs::write(&seg, &replayed).unwrap();
    let out = run(k, &["store", "recover", d]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("journal gap"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&seg).unwrap(), replayed);
    std::fs::write(&seg, &good[..last]).unwrap();

    // The store goes on: the same 10 ops again reach the same state.
    let again = json(&run(k, &["store", "apply", d, "--ops", "10", "--json"]));
    assert_eq!(again["txid"], 100);
    assert_eq!(again["digest"], applied["digest"]);
    let r = json(&run(k, &["store", "recover", d, "--json"]));
    assert_eq!(r["digest"], applied["digest"]);
}

/// The frames (offset, length with prefix) of a segment whose header is
/// `header` bytes: sealed batches, or a plain segment's records.
fn frames_from(bytes: &[u8], header: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut pos = header;
    while pos < bytes.len() {
        let (mut len, mut shift, mut w) = (0usize, 0, 0);
        loop {
            let b = bytes[pos + w];
            len |= usize::from(b & 0x7f) << shift;
            shift += 7;
            w += 1;
            if b & 0x80 == 0 {
                break;
            }
        }
        out.push((pos, w + len));
        pos += w + len;
    }
    out
}

/// `bytes` with the ranges `a` and `b` (offset, length; `a` before `b`,
/// adjacent or not) swapped in place.
fn swap_ranges(bytes: &[u8], a: (usize, usize), b: (usize, usize)) -> Vec<u8> {
    let mut out = bytes[..a.0].to_vec();
    out.extend_from_slice(&bytes[b.0..b.0 + b.1]);
    out.extend_from_slice(&bytes[a.0 + a.1..b.0]);
    out.extend_from_slice(&bytes[a.0..a.0 + a.1]);
    out.extend_from_slice(&bytes[b.0 + b.1..]);
    out
}

/// Issue 24, defect 3: 200 ops in group commits of 50, all durable; the
/// open segment's group commits then swapped in place. No crash tears a
/// group commit that was fsynced before the next was written, so an
/// encrypted store refuses the damage (non-zero, naming the segment and
/// the offset, nothing changed) exactly as a plain store does; only a cut
/// last group commit is a torn tail, recovered at the one before. Before
/// the fix the encrypted store cut the two swapped batches as a torn tail
/// and recovered at txid 100 with exit 0.
#[test]
fn swapped_group_commits_are_refused_by_encrypted_and_plain_stores_alike() {
    let tmp = tempfile::tempdir().unwrap();
    let key = keygen(tmp.path(), "k.key");
    for encrypted in [true, false] {
        let dir = tmp.path().join(if encrypted { "enc" } else { "plain" });
        let d = s(&dir);
        let k = encrypted.then_some(key.as_path());
        let mut init = vec!["store", "init", d];
        if encrypted {
            init.push("--encrypt");
        }
        let out = run(k, &init);
        assert!(out.status.success(), "{}", stderr(&out));
        let out = run(
            k,
            &[
                "store",
                "apply",
                d,
                "--ops",
                "200",
                "--batch",
                "50",
                "--print-durable",
            ],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let printed = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(printed.contains("200"), "durable 200: {printed}");
        let seg = dir.join(format!("edits_inprogress_{:020}", 1));
        let good = std::fs::read(&seg).unwrap();
        let what = if encrypted { "encrypted" } else { "plain" };
        // The four group commits (offset, length): one sealed batch each,
        // or 50 plain records each.
        let rec = frames_from(&good, if encrypted { 48 } else { 16 });
        let groups: Vec<(usize, usize)> = if encrypted {
            rec.clone()
        } else {
            assert_eq!(rec.len(), 200);
            rec.chunks(50)
                .map(|c| (c[0].0, c.iter().map(|r| r.1).sum()))
                .collect()
        };
        assert_eq!(groups.len(), 4, "{what}");
        assert_eq!(groups[3].0 + groups[3].1, good.len(), "{what}");
        let reference = json(&run(k, &["store", "recover", d, "--json"]));
        assert_eq!(reference["txid"], 200, "{what}");
        let before = snapshot(&dir);

        // The last two swapped, then a middle pair swapped (the damage
        // then starts at the second group commit): refused, the segment
        // and the offset where the damage starts named, nothing changed.
        for (x, y) in [(2, 3), (1, 2)] {
            let bad = swap_ranges(&good, groups[x], groups[y]);
            std::fs::write(&seg, &bad).unwrap();
            let mut damaged = before.clone();
            damaged.insert(seg.file_name().unwrap().to_str().unwrap().into(), bad);
            let case = format!("{what}, group commits {x} and {y} swapped");
            for cmd in ["status", "recover"] {
                let out = run(k, &["store", cmd, d]);
                let e = stderr(&out);
                assert_eq!(out.status.code(), Some(1), "{case}: {cmd}: {e}");
                assert!(e.contains("edits_inprogress_"), "{case}: {cmd}: {e}");
                assert!(
                    e.contains(&format!("offset {}", groups[x].0)),
                    "{case}: {cmd}: {e}"
                );
                assert!(e.contains("journal gap"), "{case}: {cmd}: {e}");
                assert_eq!(snapshot(&dir), damaged, "{case}: {cmd} changed the store");
            }
        }

        // The last group commit cut short (a torn last write): cut back to
        // the last whole frame. Sealed, that is the group commit before
        // (txid 150); plain, the whole records of the torn write stay.
        let (last, last_len) = groups[3];
        let at = last + last_len / 2;
        std::fs::write(&seg, &good[..at]).unwrap();
        let whole: Vec<&(usize, usize)> = rec.iter().filter(|r| r.0 + r.1 <= at).collect();
        let kept = if encrypted { 150 } else { whole.len() };
        let kept_len = whole.last().map(|r| r.0 + r.1).unwrap();
        assert!(!encrypted || kept_len == last);
        let r = json(&run(k, &["store", "recover", d, "--json"]));
        assert_eq!(r["txid"], kept, "{what}: {r}");
        assert_eq!(r["torn_tail_bytes"], at - kept_len, "{what}: {r}");
        assert_eq!(std::fs::read(&seg).unwrap(), good[..kept_len], "{what}");
        // The same ops again reach the same state.
        let more = (200 - kept).to_string();
        let again = json(&run(k, &["store", "apply", d, "--ops", &more, "--json"]));
        assert_eq!(again["txid"], 200, "{what}");
        assert_eq!(again["digest"], reference["digest"], "{what}");
    }
}

/// The library: many small sealed segments rolled and checkpointed, reopened,
/// give the plain store's namespace; a plain segment dropped into an
/// encrypted store, and a plain image, are refused.
#[test]
fn sealed_segments_roll_and_recover_through_the_library() {
    let tmp = tempfile::tempdir().unwrap();
    let key = Key::generate();
    let w = Workload { seed: 3 };
    let fill = |dir: &Path, at_rest: &AtRestOptions| -> String {
        Store::init(dir, Arc::new(RealFs::default()), at_rest).unwrap();
        let opts = StoreOptions {
            segment_bytes: 4096,
            key: at_rest.key.clone(),
            ..StoreOptions::default()
        };
        let store = Store::open(dir, Arc::new(RealFs::default()), opts.clone()).unwrap();
        for t in 1..=400u64 {
            let op = store.with_namespace(|ns| w.op(ns, t));
            store.submit(op).unwrap();
            if t % 7 == 0 {
                store.sync().unwrap();
            }
            if t == 200 {
                store.checkpoint().unwrap();
            }
        }
        store.sync().unwrap();
        let digest = store.with_namespace(|ns| ns.digest().to_string());
        drop(store);
        let again = Store::open(dir, Arc::new(RealFs::default()), opts).unwrap();
        assert_eq!(again.report().txid, 400);
        assert_eq!(again.report().image_txid, 200);
        assert_eq!(again.with_namespace(|ns| ns.digest().to_string()), digest);
        digest
    };
    let plain_dir = tmp.path().join("plain");
    let plain = fill(&plain_dir, &AtRestOptions::default());
    let enc_dir = tmp.path().join("enc");
    let enc = fill(
        &enc_dir,
        &AtRestOptions {
            compression: Compression::parse("zstd").unwrap(),
            key: Some(key.clone()),
        },
    );
    assert_eq!(enc, plain);
    let sealed_segments = names(&enc_dir)
        .into_iter()
        .filter(|n| n.starts_with("edits_"))
        .count();
    assert!(sealed_segments > 3, "{sealed_segments} segments");

    let opts = StoreOptions {
        key: Some(key.clone()),
        ..StoreOptions::default()
    };
    // The plain store's newest finished segment put in place of the
    // encrypted store's: refused as a plain segment in an encrypted store.
    let newest_finished = |dir: &Path| {
        names(dir)
            .into_iter()
            .rfind(|n| n.starts_with("edits_0"))
            .unwrap()
    };
    let victim = newest_finished(&enc_dir);
    let saved = std::fs::read(enc_dir.join(&victim)).unwrap();
    let donor = std::fs::read(plain_dir.join(newest_finished(&plain_dir))).unwrap();
    std::fs::write(enc_dir.join(&victim), &donor).unwrap();
    match Store::open(&enc_dir, Arc::new(RealFs::default()), opts.clone()) {
        Err(e @ StoreError::Corrupt { .. }) => {
            assert!(e.to_string().contains("plain (unencrypted) segment"), "{e}")
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a plain segment was accepted in an encrypted store"),
    }
    std::fs::write(enc_dir.join(&victim), &saved).unwrap();
    // A plain image in place of the newest: skipped, the older one used.
    let img = format!("image_{:020}", 200);
    std::fs::copy(plain_dir.join(&img), enc_dir.join(&img)).unwrap();
    let s = Store::open(&enc_dir, Arc::new(RealFs::default()), opts).unwrap();
    assert_eq!(s.report().image_txid, 0);
    assert!(s.report().skipped_images[0].1.contains("not encrypted"));
    assert_eq!(s.with_namespace(|ns| ns.digest().to_string()), plain);
}

/// Issue 24, defect 1 in a store: a compressed store holding many
/// near-identical inodes (one name repeated in every directory, all with
/// the same owner, mode and times: records that compress far past the
/// 9-bytes-per-record bound when it is applied to the stored length)
/// checkpoints images it recovers from, with the namespace's digest.
/// Checked for an INODE split into pieces (10,100 inodes) and an unsplit
/// one (300), under zstd and lz4, plain and encrypted.
#[test]
fn compressed_stores_recover_checkpoints_of_near_identical_names() {
    use nsimage_format::pb::journal_op::Op;
    use nsimage_format::pb::CreateOp;
    let tmp = tempfile::tempdir().unwrap();
    let key = Key::generate();
    let same = |parent: u64, name: String, dir: bool| {
        let c = CreateOp {
            parent,
            name: name.into_bytes(),
            user: b"hdfs".to_vec(),
            group: b"hadoop".to_vec(),
            mode: if dir { 0o755 } else { 0o644 },
            mtime: 1_700_000_000_000,
            replication: 3,
            preferred_block_size: 128 << 20,
            storage_policy: 0,
            target: Vec::new(),
            new_id: 0,
        };
        if dir {
            Op::Mkdir(c)
        } else {
            Op::Create(c)
        }
    };
    for (dirs, files) in [(100u64, 100u64), (10, 29)] {
        for codec in ["zstd", "lz4"] {
            for encrypted in [false, true] {
                let what = format!("{dirs}x{files}, {codec}, encrypted {encrypted}");
                let dir = tmp.path().join(format!("{dirs}-{codec}-{encrypted}"));
                let at_rest = AtRestOptions {
                    compression: Compression::parse(codec).unwrap(),
                    key: encrypted.then(|| key.clone()),
                };
                Store::init(&dir, Arc::new(RealFs::default()), &at_rest).unwrap();
                let opts = StoreOptions {
                    key: at_rest.key.clone(),
                    ..StoreOptions::default()
                };
                let store = Store::open(&dir, Arc::new(RealFs::default()), opts.clone()).unwrap();
                for d in 0..dirs {
                    // Names that differ only in their last digits.
                    store
                        .submit(same(
                            nsimage_namespace::ROOT_ID,
                            format!("{}{d:04}", "n".repeat(60)),
                            true,
                        ))
                        .unwrap();
                    let parent = store.with_namespace(|ns| ns.info().last_inode_id);
                    for f in 0..files {
                        // The same names in every directory.
                        let name = format!("{}{f:04}", "f".repeat(60));
                        store.submit(same(parent, name, false)).unwrap();
                    }
                }
                store.sync().unwrap();
                let inodes = store.with_namespace(|ns| ns.slot_count());
                assert_eq!(u64::from(inodes), 1 + dirs * (1 + files), "{what}");
                let txid = store.checkpoint().unwrap();
                let digest = store.with_namespace(|ns| ns.digest().to_string());
                drop(store);
                let again = Store::open(&dir, Arc::new(RealFs::default()), opts)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(again.report().image_txid, txid, "{what}");
                assert!(again.report().skipped_images.is_empty(), "{what}");
                assert_eq!(again.report().replayed, 0, "{what}");
                assert_eq!(
                    again.with_namespace(|ns| ns.digest().to_string()),
                    digest,
                    "{what}"
                );
            }
        }
    }
}
