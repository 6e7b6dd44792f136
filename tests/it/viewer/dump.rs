//! `nsimage dump` and `nsimage distribution` on generated images and on
//! the sample namespace: every format lists every inode once, agrees with
//! the namespace and with `load --json`, is the same bytes for 1 and 2
//! threads; an output that cannot be written is exit 2 with nothing left
//! under its name; the histogram's buckets sum to the file count.

use crate::common;

use nsimage_namespace::{Attrs, InodeKind, Namespace};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nsimage"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("running nsimage")
}

fn ok(args: &[&str]) -> Vec<u8> {
    let o = run(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// Writes `ns` as an image under `dir`.
fn save(ns: &Namespace, dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, common::image(ns, &common::tiny(4096))).unwrap();
    p
}

fn generated(dir: &Path) -> (Namespace, PathBuf) {
    let ns = nsimage_testkit::generate::generate(nsimage_testkit::generate::GenSpec {
        inodes: 20_000,
        seed: 9,
    });
    let p = save(&ns, dir, "gen.img");
    (ns, p)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every inode's path, size and kind, from the namespace itself.
fn expected(ns: &Namespace) -> HashMap<Vec<u8>, (u64, InodeKind, u64)> {
    ns.iter()
        .map(|i| {
            let size = match i.attrs() {
                Attrs::File(f) => f.blocks.iter().map(|b| b.length).sum(),
                _ => 0,
            };
            (ns.path_of(i.id()).unwrap(), (size, i.kind(), i.id()))
        })
        .collect()
}

fn load_inodes(img: &Path) -> u64 {
    let v: serde_json::Value = serde_json::from_slice(&ok(&["load", s(img), "--json"])).unwrap();
    v["inodes"].as_u64().unwrap()
}

/// Splits one delimited row as a CSV reader does (a quoted field may hold
/// the delimiter, `""` is a quote) and undoes OIV's line-break escapes.
fn split_row(line: &[u8], d: u8) -> Vec<Vec<u8>> {
    let mut fields = vec![Vec::new()];
    let mut quoted = false;
    let mut i = 0;
    while i < line.len() {
        let b = line[i];
        let f = fields.last_mut().unwrap();
        match b {
            b'"' if quoted && line.get(i + 1) == Some(&b'"') => {
                f.push(b'"');
                i += 1;
            }
            b'"' if quoted => quoted = false,
            b'"' if f.is_empty() => quoted = true,
            b if b == d && !quoted => fields.push(Vec::new()),
            b => f.push(b),
        }
        i += 1;
    }
    assert!(
        !quoted,
        "unclosed quote in {}",
        String::from_utf8_lossy(line)
    );
    let unescape = |f: Vec<u8>| {
        let mut out = Vec::new();
        let mut i = 0;
        while i < f.len() {
            if f[i..].starts_with(b"%x0A") {
                out.push(b'\n');
                i += 4;
            } else if f[i..].starts_with(b"%x0D") {
                out.push(b'\r');
                i += 4;
            } else {
                out.push(f[i]);
                i += 1;
            }
        }
        out
    };
    fields.into_iter().map(unescape).collect()
}

fn check_delimited(ns: &Namespace, img: &Path) {
    let out = ok(&["dump", s(img), "--format", "delimited", "--header"]);
    let want = expected(ns);
    let mut lines = out.split(|&b| b == b'\n');
    let header = lines.next().unwrap();
    assert_eq!(
        header,
        b"Path\tReplication\tModificationTime\tAccessTime\tPreferredBlockSize\tBlocksCount\tFileSize\tNSQUOTA\tDSQUOTA\tPermission\tUserName\tGroupName"
    );
    let mut seen = HashMap::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let cols = split_row(line, b'\t');
        assert_eq!(cols.len(), 12, "{}", String::from_utf8_lossy(line));
        let (size, kind, _) = want
            .get(&cols[0])
            .unwrap_or_else(|| panic!("unknown path {}", String::from_utf8_lossy(&cols[0])));
        assert_eq!(cols[6], size.to_string().as_bytes());
        let perm0 = if *kind == InodeKind::Directory {
            b'd'
        } else {
            b'-'
        };
        assert_eq!(cols[9][0], perm0);
        assert_eq!(cols[2].len(), "yyyy-MM-dd HH:mm".len());
        assert!(seen.insert(cols[0].to_vec(), ()).is_none(), "listed twice");
    }
    assert_eq!(seen.len(), want.len());
    assert_eq!(seen.len() as u64, load_inodes(img));
}

fn check_jsonl(ns: &Namespace, img: &Path) {
    let out = ok(&["dump", s(img), "--format", "jsonl"]);
    let want = expected(ns);
    let mut n = 0;
    let mut ids = std::collections::HashSet::new();
    for line in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let v: serde_json::Value = serde_json::from_slice(line).unwrap();
        let path = v["path"].as_str().unwrap().as_bytes().to_vec();
        let (size, kind, id) = want[&path];
        assert_eq!(v["id"].as_u64().unwrap(), id);
        let ty = match kind {
            InodeKind::File => "file",
            InodeKind::Directory => "directory",
            InodeKind::Symlink => "symlink",
        };
        assert_eq!(v["type"], ty);
        if kind == InodeKind::File {
            assert_eq!(v["length"].as_u64().unwrap(), size);
            let sum: u64 = v["blocks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b["length"].as_u64().unwrap())
                .sum();
            assert_eq!(sum, size);
        }
        assert!(ids.insert(id), "id {id} twice");
        n += 1;
    }
    assert_eq!(n, want.len());
    assert_eq!(n as u64, load_inodes(img));
}

/// A small well-formedness check: tags nest and match, attributes are
/// absent, text holds no raw `<` and every `&` starts a known entity.
/// Returns the element names in document order (opening tags).
fn xml_elements(doc: &str) -> Vec<String> {
    let body = doc
        .strip_prefix("<?xml version=\"1.0\"?>\n")
        .expect("XML declaration");
    let mut stack: Vec<&str> = Vec::new();
    let mut opened = Vec::new();
    let mut rest = body;
    while let Some(lt) = rest.find('<') {
        let text = &rest[..lt];
        check_text(text);
        let gt = rest[lt..].find('>').expect("unclosed tag") + lt;
        let tag = &rest[lt + 1..gt];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop(), Some(name), "mismatched </{name}>");
        } else {
            assert!(
                tag.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'),
                "bad tag {tag:?}"
            );
            stack.push(tag);
            opened.push(tag.to_string());
        }
        rest = &rest[gt + 1..];
        if stack.is_empty() {
            break;
        }
    }
    assert!(stack.is_empty(), "unclosed {stack:?}");
    assert!(rest.trim().is_empty(), "text after the root");
    opened
}

fn check_text(t: &str) {
    let mut r = t;
    while let Some(a) = r.find('&') {
        let semi = r[a..].find(';').expect("& without ;") + a;
        assert!(
            ["amp", "lt", "gt", "quot", "apos"].contains(&&r[a + 1..semi]),
            "unknown entity {}",
            &r[a..=semi]
        );
        r = &r[semi + 1..];
    }
    assert!(!t.contains('>'));
}

fn check_xml(img: &Path) {
    let out = String::from_utf8(ok(&["dump", s(img), "--format", "xml"])).unwrap();
    let els = xml_elements(&out);
    assert_eq!(els[0], "fsimage");
    let count = |n: &str| els.iter().filter(|e| *e == n).count();
    let inodes = load_inodes(img) as usize;
    // `inode` elements: one per inode in INodeSection, one per file under
    // construction in FileUnderConstructionSection.
    let uc = out
        .split("<FileUnderConstructionSection>")
        .nth(1)
        .unwrap()
        .matches("<inode>")
        .count();
    assert_eq!(count("inode") - uc, inodes);
    assert_eq!(count("INodeSection"), 1);
    assert_eq!(count("INodeDirectorySection"), 1);
    let num = out
        .split("<numInodes>")
        .nth(1)
        .unwrap()
        .split('<')
        .next()
        .unwrap();
    assert_eq!(num.parse::<usize>().unwrap(), inodes);
    // Every inode but the root is some directory's child, once.
    assert_eq!(count("child"), inodes - 1);
    // Hadoop 3's spelling (HDFS-9278), not Hadoop 2's `perferredBlockSize`.
    assert!(out.contains("<preferredBlockSize>"));
    assert!(!out.contains("perferred"));
}

fn same_bytes_for_1_and_2_threads(img: &Path, dir: &Path) {
    for format in ["xml", "delimited", "jsonl"] {
        let a = dir.join(format!("{format}.1"));
        let b = dir.join(format!("{format}.2"));
        ok(&[
            "dump",
            s(img),
            "--format",
            format,
            "--threads",
            "1",
            "-o",
            s(&a),
        ]);
        ok(&[
            "dump",
            s(img),
            "--format",
            format,
            "--threads",
            "2",
            "-o",
            s(&b),
        ]);
        let (x, y) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        assert!(x == y, "{format}: 1 and 2 threads differ");
        // The file holds what stdout gets.
        assert!(
            x == ok(&["dump", s(img), "--format", format]),
            "{format}: -o and stdout differ"
        );
    }
}

#[test]
fn generated_image_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let (ns, img) = generated(dir.path());
    check_delimited(&ns, &img);
    check_jsonl(&ns, &img);
    check_xml(&img);
    same_bytes_for_1_and_2_threads(&img, dir.path());
}

#[test]
fn sample_namespace_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let ns = common::sample();
    let img = save(&ns, dir.path(), "sample.img");
    check_delimited(&ns, &img);
    check_jsonl(&ns, &img);
    check_xml(&img);
    same_bytes_for_1_and_2_threads(&img, dir.path());
    // The rare attributes show in JSON lines and XML.
    let j = String::from_utf8(ok(&["dump", s(&img), "--format", "jsonl"])).unwrap();
    let alice = j
        .lines()
        .find(|l| l.contains("\"path\":\"/user/alice\""))
        .unwrap();
    assert!(alice.contains("\"quota\":{\"namespace\":100,"), "{alice}");
    assert!(
        alice.contains("\"value\":\"core\",\"encoding\":\"text\""),
        "{alice}"
    );
    assert!(alice.contains("\"text\":\"user:bob:r-x\""), "{alice}");
    let link = j
        .lines()
        .find(|l| l.contains("\"type\":\"symlink\""))
        .unwrap();
    assert!(
        link.contains("\"symlink_target\":\"/data/2024/01\""),
        "{link}"
    );
    assert!(j.contains("\"under_construction\":{\"client_name\":\"client-1\""));
    let x = String::from_utf8(ok(&["dump", s(&img), "--format", "xml"])).unwrap();
    assert!(x.contains("<permission>hdfs:supergroup:0755</permission>"));
    assert!(x.contains("<xattr><ns>USER</ns><name>team</name><val>core</val></xattr>"));
    assert!(x.contains("<target>/data/2024/01</target>"));
    assert!(x.contains("<clientName>client-1</clientName>"));
    // A delimiter of choice, and the directory row as OIV writes it.
    let d = String::from_utf8(ok(&[
        "dump",
        s(&img),
        "--format",
        "delimited",
        "--delimiter",
        ",",
    ]))
    .unwrap();
    let row = d.lines().find(|l| l.starts_with("/user/alice,")).unwrap();
    let cols: Vec<&str> = row.split(',').collect();
    assert_eq!(cols[1], "0");
    assert_eq!(cols[3], "1970-01-01 00:00");
    assert_eq!(&cols[4..9], &["0", "0", "0", "100", "1073741824"]);
    // `+`: /user/alice has ACL entries.
    assert_eq!(&cols[9..], &["drwxr-xr-x+", "hdfs", "supergroup"]);
    assert!(d
        .lines()
        .any(|l| l.starts_with("/data,") && l.contains(",drwxr-xr-x,")));
    // OIV's order inside an inode: permission, xattrs, acls, then quotas.
    let alice = x.split("<name>alice</name>").nth(1).unwrap();
    let at = |t: &str| alice.find(t).unwrap();
    assert!(at("<permission>") < at("<xattrs>"));
    assert!(at("<xattrs>") < at("<acls>"));
    assert!(at("<acls>") < at("<nsquota>"));
    assert!(x.ends_with("</FileUnderConstructionSection>\n<SnapshotDiffSection></SnapshotDiffSection>\n</fsimage>\n"));
}

#[test]
fn odd_names_stay_one_row_and_well_formed_xml() {
    let dir = tempfile::tempdir().unwrap();
    let mut ns = Namespace::default();
    let names: [&[u8]; 6] = [
        b"tab\there",
        b"nl\nx",
        b"amp&<lt>\\",
        b"bad\xff\x01",
        b"q\"c,x",
        b"crlf\r\nz\r",
    ];
    for n in names {
        let mut p = b"/".to_vec();
        p.extend_from_slice(n);
        ns.mkdirs(&p, &common::P, 5).unwrap();
    }
    let img = save(&ns, dir.path(), "odd.img");
    let d = ok(&["dump", s(&img), "--format", "delimited"]);
    let rows: Vec<&[u8]> = d.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    assert_eq!(rows.len(), 7);
    let mut paths: Vec<Vec<u8>> = rows
        .iter()
        .map(|r| {
            let cols = split_row(r, b'\t');
            assert_eq!(cols.len(), 12, "{}", String::from_utf8_lossy(r));
            cols[0].clone()
        })
        .collect();
    paths.sort();
    let mut want: Vec<Vec<u8>> = names.iter().map(|n| [b"/", *n].concat()).collect();
    want.push(b"/".to_vec());
    want.sort();
    assert_eq!(paths, want);
    // OIV's CSV escapes, byte for byte.
    let has = |w: &[u8]| d.windows(w.len()).any(|x| x == w);
    assert!(has(b"\n\"/tab\there\"\t"));
    assert!(has(b"\n\"/nl%x0Ax\"\t"));
    assert!(has(b"\n\"/q\"\"c,x\"\t"));
    assert!(has(b"\n\"/crlf%x0D%x0Az%x0D\"\t"));
    assert!(has(b"\n/amp&<lt>\\\t"));
    let x = String::from_utf8(ok(&["dump", s(&img), "--format", "xml"])).unwrap();
    xml_elements(&x);
    assert!(x.contains("<name>amp&amp;&lt;lt&gt;\\005c;</name>"), "{x}");
    assert!(x.contains("<name>bad\\00ff;\\0001;</name>"), "{x}");
    let j = ok(&["dump", s(&img), "--format", "jsonl"]);
    for line in j.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let v: serde_json::Value = serde_json::from_slice(line).unwrap();
        if v["name"].as_str().unwrap().starts_with("bad") {
            assert_eq!(v["name_base64"], "YmFk/wE=");
        }
    }
}

#[test]
fn unwritable_output_is_exit_2_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ns = common::sample();
    let img = save(&ns, dir.path(), "sample.img");
    // Into a directory that does not exist.
    let missing = dir.path().join("nope/out.tsv");
    let o = run(&["dump", s(&img), "--format", "delimited", "-o", s(&missing)]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!missing.exists());
    // Under a regular file.
    let under = img.join("out.tsv");
    let o = run(&["dump", s(&img), "--format", "jsonl", "-o", s(&under)]);
    assert_eq!(o.status.code(), Some(2));
    // Over a directory: written in full, the rename fails; the temporary
    // file is gone and the directory untouched.
    let d = dir.path().join("taken");
    std::fs::create_dir(&d).unwrap();
    std::fs::write(d.join("keep"), b"x").unwrap();
    let o = run(&["dump", s(&img), "--format", "xml", "-o", s(&d)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(d.join("keep").exists());
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(left.iter().all(|n| !n.contains(".tmp.")), "{left:?}");
    // A plot that cannot be written is exit 2 too.
    let o = run(&["distribution", s(&img), "--plot", s(&missing)]);
    assert_eq!(o.status.code(), Some(2));
    // A missing image is an I/O error; bad options are usage errors.
    let o = run(&["dump", s(&dir.path().join("none.img")), "--format", "xml"]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["dump", s(&img), "--format", "xml", "--header"]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["distribution", s(&img), "--step", "0"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn distribution_sums_to_the_file_count() {
    let dir = tempfile::tempdir().unwrap();
    let (ns, img) = generated(dir.path());
    let st = ns.stats();
    let plot = dir.path().join("d.svg");
    let v: serde_json::Value = serde_json::from_slice(&ok(&[
        "distribution",
        s(&img),
        "--step",
        "1M",
        "--max",
        "64M",
        "--plot",
        s(&plot),
        "--json",
    ]))
    .unwrap();
    let buckets = v["buckets"].as_array().unwrap();
    // [0], 64 buckets of 1 MiB, > 64 MiB.
    assert_eq!(buckets.len(), 66);
    let files: u64 = buckets.iter().map(|b| b["files"].as_u64().unwrap()).sum();
    assert_eq!(files, st.files);
    assert_eq!(v["files"].as_u64().unwrap(), st.files);
    assert_eq!(v["bytes"].as_u64().unwrap(), st.bytes);
    assert_eq!(buckets[1]["low"], 0);
    assert_eq!(buckets[1]["high"], 1 << 20);
    assert_eq!(buckets[64]["high"], 64 << 20);
    assert!(buckets[65]["high"].is_null());
    // Each file in the bucket its size says.
    let mut want = vec![0u64; 66];
    for i in ns.iter() {
        if let Attrs::File(f) = i.attrs() {
            let size: u64 = f.blocks.iter().map(|b| b.length).sum();
            let b = if size > 64 << 20 {
                65
            } else {
                size.div_ceil(1 << 20) as usize
            };
            want[b] += 1;
        }
    }
    let got: Vec<u64> = buckets
        .iter()
        .map(|b| b["files"].as_u64().unwrap())
        .collect();
    assert_eq!(got, want);
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("<rect"));
    // The default text form.
    let t = String::from_utf8(ok(&["distribution", s(&img)])).unwrap();
    assert!(t.contains("NumFiles"), "{t}");
}
