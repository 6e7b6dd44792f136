//! The command line contract: JSON keys, exit codes (0 ok, 1 corrupt data,
//! 2 usage or I/O), and error messages that say where.

use crate::common;

use common::{json, nsimage};
use serde_json::Value;

use std::path::Path;

fn generate(path: &Path, inodes: &str) -> Value {
    json(&nsimage(&[
        "generate",
        "-o",
        path.to_str().unwrap(),
        "--inodes",
        inodes,
        "--seed",
        "7",
        "--sub-section-bytes",
        "65536",
        "--sub-section-min-inodes",
        "0",
        "--json",
    ]))
}

#[test]
fn generate_then_load_agree() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("x.nsi");
    let g = generate(&img, "50000");
    let l = json(&nsimage(&["load", img.to_str().unwrap(), "--json"]));
    for k in [
        "inodes",
        "files",
        "directories",
        "symlinks",
        "blocks",
        "bytes",
        "digest",
    ] {
        assert_eq!(g[k], l[k], "{k}");
    }
    assert_eq!(g["inodes"], 50000);
    assert!(l["seconds"].is_number() && l["threads"].is_number());
    assert!(g["seconds"].is_number());
    // Where the heap goes: the parts sum to the whole, and the node table
    // holds at least 32 bytes an inode.
    let parts = l["heap_parts"].as_object().unwrap();
    let sum: u64 = parts.values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(sum, l["heap_bytes"].as_u64().unwrap(), "{parts:?}");
    assert!(parts["nodes"].as_u64().unwrap() >= 32 * 50_000, "{parts:?}");
    assert!(parts["names"].as_u64().unwrap() > 0 && parts["blocks"].as_u64().unwrap() > 0);

    let info = json(&nsimage(&["info", img.to_str().unwrap(), "--json"]));
    assert_eq!(info["format"], "nsimage");
    assert_eq!(info["version"], 1);
    let sections = info["sections"].as_array().unwrap();
    for kind in ["INODE", "INODE_DIR"] {
        let s = sections.iter().find(|s| s["kind"] == kind).unwrap();
        assert!(
            s["sub_sections"].as_array().unwrap().len() > 1,
            "{kind} has sub-sections"
        );
        for key in ["offset", "length", "records", "checksum"] {
            assert!(!s[key].is_null(), "{key}");
        }
        assert!(!s["sub_sections"][0]["first_key"].is_null());
    }

    let v = nsimage(&["verify", img.to_str().unwrap()]);
    assert_eq!(v.status.code(), Some(0));
}

#[test]
fn flipped_byte_exits_1_and_names_the_place() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("x.nsi");
    generate(&img, "20000");
    let mut bytes = std::fs::read(&img).unwrap();
    let len = bytes.len();
    for (i, pos) in [5, 40, len / 3, len / 2, len - 200, len - 30, len - 3]
        .into_iter()
        .enumerate()
    {
        let bad = dir.path().join(format!("bad{i}.nsi"));
        bytes[pos] ^= 0x10;
        std::fs::write(&bad, &bytes).unwrap();
        bytes[pos] ^= 0x10;
        for cmd in ["verify", "load"] {
            let out = nsimage(&[cmd, bad.to_str().unwrap()]);
            assert_eq!(out.status.code(), Some(1), "{cmd} at byte {pos}");
            let msg = String::from_utf8_lossy(if cmd == "verify" {
                &out.stdout
            } else {
                &out.stderr
            })
            .to_string();
            assert!(
                msg.contains("byte offset") && msg.contains(bad.to_str().unwrap()),
                "{cmd}: {msg}"
            );
        }
    }
    let out = nsimage(&[
        "verify",
        dir.path().join("bad2.nsi").to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["problems"][0]["section"], "INODE");
}

#[test]
fn usage_and_io_errors_exit_2() {
    assert_eq!(
        nsimage(&["load", "/nonexistent/image.nsi"]).status.code(),
        Some(2)
    );
    assert_eq!(nsimage(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(
        nsimage(&["generate", "--inodes", "many"]).status.code(),
        Some(2)
    );
    assert_eq!(
        nsimage(&["generate", "-o", "/nonexistent/dir/x.nsi", "--inodes", "10"])
            .status
            .code(),
        Some(2)
    );
}

/// An I/O error prints its cause once, with the path the user gave (not a
/// temporary name): anyhow's chain used to repeat the cause that thiserror
/// had already put in the message.
#[test]
fn io_errors_print_one_cause_and_the_given_path() {
    let cause = "No such file or directory";
    for (args, path) in [
        (
            vec!["load", "/nonexistent/image.nsi"],
            "/nonexistent/image.nsi",
        ),
        (
            vec!["info", "/nonexistent/image.nsi"],
            "/nonexistent/image.nsi",
        ),
        (
            vec!["verify", "/nonexistent/image.nsi"],
            "/nonexistent/image.nsi",
        ),
        (
            vec!["generate", "-o", "/nonexistent/dir/x.nsi", "--inodes", "10"],
            "/nonexistent/dir/x.nsi",
        ),
    ] {
        let out = nsimage(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.matches(cause).count(), 1, "{args:?}: {err}");
        assert_eq!(err.matches("os error").count(), 1, "{args:?}: {err}");
        assert!(err.contains(&format!("{path}:")), "{args:?}: {err}");
        assert!(!err.contains(".tmp"), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn not_an_image_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("junk");
    std::fs::write(
        &p,
        b"this is not an image at all, just some text that is long enough",
    )
    .unwrap();
    for cmd in ["load", "verify", "info"] {
        assert_eq!(
            nsimage(&[cmd, p.to_str().unwrap()]).status.code(),
            Some(1),
            "{cmd}"
        );
    }
}

#[test]
fn bench_measures_the_two_process_ceiling() {
    let dir = tempfile::tempdir().unwrap();
    let out = nsimage(&[
        "bench",
        "--inodes",
        "20000",
        "--threads",
        "1,2",
        "--repeat",
        "3",
        "--no-peers",
        "--no-at-rest",
        "--ceiling",
        "--dir",
        dir.path().to_str().unwrap(),
        "--json",
    ]);
    let v = json(&out);
    let c = &v["ceilings"].as_array().unwrap()[..];
    assert_eq!(c.len(), 1, "{v}");
    let c = &c[0];
    let f = |k: &str| c[k].as_f64().unwrap();
    assert_eq!(
        (c["inodes"].as_u64(), c["rounds"].as_u64()),
        (Some(20_000), Some(3))
    );
    for k in ["alone_seconds", "pair_seconds", "two_threads_seconds"] {
        assert!(f(k) > 0.0, "{k}: {c}");
    }
    // What the ratios are made of: the ceiling from the runs, the share
    // from the ceiling.
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9 * b.abs().max(1.0);
    assert!(
        close(f("ceiling"), 2.0 * f("alone_seconds") / f("pair_seconds")),
        "{c}"
    );
    assert!(
        close(f("speedup"), f("alone_seconds") / f("two_threads_seconds")),
        "{c}"
    );
    assert!(close(f("of_ceiling"), f("speedup") / f("ceiling")), "{c}");
    // Without --json the table says it in words.
    let table = nsimage(&[
        "bench",
        "--inodes",
        "20000",
        "--threads",
        "1",
        "--repeat",
        "1",
        "--no-peers",
        "--no-at-rest",
        "--ceiling",
        "--dir",
        dir.path().to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("the two-process ceiling"), "{text}");
}

#[test]
fn bench_reports_every_strategy_with_one_digest_and_a_plot() {
    let dir = tempfile::tempdir().unwrap();
    let plot = dir.path().join("b.svg");
    let out = nsimage(&[
        "bench",
        "--inodes",
        "3000,12000",
        "--threads",
        "1,2",
        "--repeat",
        "1",
        "--dir",
        dir.path().to_str().unwrap(),
        "--plot",
        plot.to_str().unwrap(),
        "--json",
    ]);
    let v = json(&out);
    let runs = v["runs"].as_array().unwrap();
    for n in [3000, 12000] {
        let at: Vec<&Value> = runs.iter().filter(|r| r["inodes"] == n).collect();
        let mut names: Vec<String> = at
            .iter()
            .map(|r| format!("{}/{}", r["strategy"].as_str().unwrap(), r["threads"]))
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "bulk/1",
                "bulk/2",
                "hdfs-zlib/1",
                "hdfs-zlib/2",
                "hdfs/1",
                "hdfs/2",
                "jsonl/1",
                "mmap/1",
                "mmap/2",
                "nsimage-aes/1",
                "nsimage-aes/2",
                "nsimage-lz4/1",
                "nsimage-lz4/2",
                "nsimage-zstd-aes/1",
                "nsimage-zstd-aes/2",
                "nsimage-zstd/1",
                "nsimage-zstd/2",
                "sqlite/1",
                "stream/1"
            ]
        );
        // The Hadoop copies hold the same namespace (one digest, checked
        // below) and load in parallel from their sub-sections.
        for r in at
            .iter()
            .filter(|r| r["strategy"] == "hdfs" && r["threads"] == 2)
        {
            assert_eq!(r["mode"], "parallel");
        }
        // Each Hadoop copy has the sidecar a NameNode writes, and its
        // loads hash the file against it (their CPU seconds reported);
        // the others have none.
        for r in &at {
            let hadoop = r["strategy"].as_str().unwrap().starts_with("hdfs");
            let md5 = r["md5_cpu_seconds"].as_f64().unwrap();
            assert_eq!(md5 > 0.0, hadoop, "{}: md5 {md5}", r["strategy"]);
        }
        for name in ["hdfs", "zlib.hdfs"] {
            let sidecar = dir.path().join(format!("ns-{n}-s1.{name}.md5"));
            assert!(sidecar.exists(), "{}", sidecar.display());
        }
        let digest = &at[0]["digest"];
        assert!(at.iter().all(|r| &r["digest"] == digest));
        let stream = at.iter().find(|r| r["strategy"] == "stream").unwrap();
        assert_eq!(stream["speedup_vs_stream"], 1.0);
        for r in &at {
            assert!(r["seconds"].as_f64().unwrap() > 0.0);
            assert!(
                r["allocations_per_inode"].is_number() && r["resident_bytes_per_inode"].is_number()
            );
        }
    }
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("mmap") && svg.contains("sqlite"));
    // A second run reuses the generated files.
    let again = nsimage(&[
        "bench",
        "--inodes",
        "3000",
        "--threads",
        "2",
        "--repeat",
        "1",
        "--no-peers",
        "--dir",
        dir.path().to_str().unwrap(),
        "--json",
    ]);
    assert!(json(&again)["saves"].as_array().unwrap().is_empty());
    // The table explains its columns under it; the peers' rows leave the
    // figures that do not apply to them blank; without --cold there is no
    // cold column.
    let table = nsimage(&[
        "bench",
        "--inodes",
        "3000",
        "--threads",
        "1",
        "--repeat",
        "1",
        "--dir",
        dir.path().to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&table.stdout);
    for word in ["B/inode ", "eff ", "serial s ", "speedup ", "A blank cell"] {
        assert!(text.contains(word), "{word}: {text}");
    }
    assert!(
        !text.contains("cold s") && !text.contains("cold/warm"),
        "{text}"
    );
    for peer in ["jsonl", "sqlite"] {
        let row = text
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(peer))
            .unwrap_or_else(|| panic!("no {peer} row: {text}"));
        assert!(!row.contains('%'), "{row}");
    }
    let mmap = text
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("mmap"))
        .unwrap();
    assert!(mmap.contains('%'), "{mmap}");
    let help = nsimage(&["bench", "--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("A blank cell"));
}

#[test]
fn store_commands_and_their_exit_codes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("st");
    let d = dir.to_str().unwrap();
    assert_eq!(nsimage(&["store", "init", d]).status.code(), Some(0));
    assert_eq!(
        nsimage(&["store", "init", d]).status.code(),
        Some(1),
        "a second init"
    );
    let a = json(&nsimage(&[
        "store",
        "apply",
        d,
        "--ops",
        "3000",
        "--checkpoint-every",
        "1000",
        "--json",
    ]));
    assert_eq!(a["txid"], 3000);
    assert_eq!(a["checkpoints"], 3);
    assert_eq!(a["refused"], 300);
    let r = json(&nsimage(&["store", "recover", d, "--json"]));
    assert_eq!(r["digest"], a["digest"]);
    assert_eq!(r["txid"], 3000);
    let st = json(&nsimage(&["store", "status", d, "--json"]));
    assert_eq!(
        st["images"].as_array().unwrap().len(),
        2,
        "retention keeps two images"
    );
    // More ops without a checkpoint, then the journal viewer sees them.
    json(&nsimage(&["store", "apply", d, "--ops", "50", "--json"]));
    let dump = nsimage(&["journal", "dump", d, "--json"]);
    assert_eq!(dump.status.code(), Some(0));
    // Retention keeps the journal from the oldest kept image (txid 2000),
    // and replayed over that image every op names its paths.
    let ops: Vec<Value> = String::from_utf8_lossy(&dump.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(ops.len(), 1050);
    assert_eq!(ops[0]["txid"], 2001);
    assert_eq!(ops[1049]["txid"], 3050);
    for op in &ops {
        let named = ["path", "src"]
            .iter()
            .any(|k| op[k].as_str().is_some_and(|p| p.starts_with('/')));
        assert!(named, "{op}");
        assert!(op["opcode"].as_str().unwrap().starts_with("OP_"), "{op}");
    }
    // The default is oev's XML: one RECORD an op, the same opcodes.
    let xml = nsimage(&["journal", "dump", d]);
    assert_eq!(xml.status.code(), Some(0));
    let xml = String::from_utf8_lossy(&xml.stdout).to_string();
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<EDITS>\n"));
    assert!(xml.ends_with("</EDITS>\n"));
    let opcodes: Vec<&str> = xml
        .lines()
        .filter_map(|l| l.trim().strip_prefix("<OPCODE>")?.strip_suffix("</OPCODE>"))
        .collect();
    let want: Vec<&str> = ops.iter().map(|o| o["opcode"].as_str().unwrap()).collect();
    assert_eq!(opcodes, want);
    // One segment alone (the open one, after the finished ones): the
    // segments before it replayed unprinted, its ops named by path as in
    // the whole store's dump.
    let open_seg = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("edits_inprogress"))
        .unwrap();
    let one = nsimage(&["journal", "dump", open_seg.to_str().unwrap(), "--json"]);
    assert!(
        one.status.success(),
        "{}",
        String::from_utf8_lossy(&one.stderr)
    );
    assert!(
        one.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&one.stderr)
    );
    let one: Vec<Value> = String::from_utf8_lossy(&one.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!one.is_empty() && one.len() < ops.len());
    assert_eq!(one[..], ops[ops.len() - one.len()..]);
    // Damage in the middle of the open segment: recovery refuses, exit 1.
    let seg = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("edits_inprogress"))
        .unwrap();
    let mut bytes = std::fs::read(&seg).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x20;
    std::fs::write(&seg, &bytes).unwrap();
    let bad = nsimage(&["store", "recover", d]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("edits_inprogress"));
    assert_eq!(
        nsimage(&["store", "recover", "/nonexistent/store"])
            .status
            .code(),
        Some(2)
    );
}
