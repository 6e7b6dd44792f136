//! Hostile Hadoop fsimage files (magic `HDFSIMG1`) built by hand: a small
//! file must never make the reader allocate without bound, panic or hang.
//! Each is refused with exit 1 and a located error (file, section, offset),
//! checked through the CLI run under a virtual memory limit, so that an
//! allocation sized from the file aborts the process instead of passing.

use flate2::write::ZlibEncoder;
use nsimage_format::hdfs_pb::file_summary::Section;
use nsimage_format::hdfs_pb::i_node_section::{i_node, INode, INodeDirectory};
use nsimage_format::hdfs_pb::{FileSummary, INodeSection, NameSystemSection};
use prost::Message;
use std::io::Write;
use std::path::Path;
use std::process::Command;

const ZLIB: &str = "org.apache.hadoop.io.compress.DefaultCodec";

fn delimited(msgs: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for m in msgs {
        prost::encoding::encode_varint(m.len() as u64, &mut out);
        out.extend_from_slice(m);
    }
    out
}

fn zlib(bytes: &[u8]) -> Vec<u8> {
    let mut e = ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// An image of the named sections (plain bytes, deflated when `codec`).
fn image(codec: Option<&str>, sections: &[(&str, Vec<u8>)]) -> Vec<u8> {
    image_with(codec, sections, |_| {})
}

fn image_with(
    codec: Option<&str>,
    sections: &[(&str, Vec<u8>)],
    edit: impl FnOnce(&mut FileSummary),
) -> Vec<u8> {
    let mut out = b"HDFSIMG1".to_vec();
    let mut entries = Vec::new();
    for (name, plain) in sections {
        let body = match codec {
            Some(_) => zlib(plain),
            None => plain.clone(),
        };
        entries.push(Section {
            name: Some((*name).to_string()),
            offset: Some(out.len() as u64),
            length: Some(body.len() as u64),
        });
        out.extend_from_slice(&body);
    }
    let mut fs = FileSummary {
        ondisk_version: 1,
        layout_version: (-63i32) as u32,
        codec: codec.map(str::to_string),
        sections: entries,
    };
    edit(&mut fs);
    let d = fs.encode_length_delimited_to_vec();
    out.extend_from_slice(&d);
    out.extend_from_slice(&(d.len() as u32).to_be_bytes());
    out
}

fn ns_info() -> Vec<u8> {
    delimited(&[NameSystemSection {
        namespace_id: Some(1),
        ..Default::default()
    }
    .encode_to_vec()])
}

fn root() -> Vec<u8> {
    INode {
        r#type: i_node::Type::Directory as i32,
        id: 16385,
        name: Some(Vec::new()),
        directory: Some(INodeDirectory::default()),
        ..Default::default()
    }
    .encode_to_vec()
}

fn inode_section(num_inodes: u64, records: &[Vec<u8>]) -> Vec<u8> {
    let mut msgs = vec![INodeSection {
        last_inode_id: Some(16385),
        num_inodes: Some(num_inodes),
    }
    .encode_to_vec()];
    msgs.extend_from_slice(records);
    delimited(&msgs)
}

/// `n` empty messages (one zero byte each): the densest records a section
/// can hold, each decoding to a default message.
fn empties(n: usize) -> Vec<u8> {
    vec![0u8; n]
}

/// Runs `nsimage ARGS` with its address space limited to `limit_mb`
/// (stdout discarded for a dump, whose text is not the point).
fn limited(limit_mb: u64, args: &[&str]) -> std::process::Output {
    let bin = env!("CARGO_BIN_EXE_nsimage");
    let mut cmd = format!("ulimit -v {} && exec '{bin}'", limit_mb * 1024);
    for a in args {
        cmd.push_str(&format!(" '{a}'"));
    }
    if args.first() == Some(&"dump") {
        cmd.push_str(" > /dev/null");
    }
    Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .output()
        .expect("running nsimage")
}

/// `verify`, `load` (serial and parallel) and the OIV XML dump (read
/// from the stored sections) refuse the image with exit 1, a located
/// error, within the memory limit.
fn refused(path: &Path, limit_mb: u64, section: &str) {
    let p = path.to_str().unwrap();
    for args in [
        vec!["verify", p],
        vec!["load", p, "--threads", "1"],
        vec!["load", p, "--threads", "2"],
        vec!["dump", p, "--format", "xml"],
    ] {
        let out = limited(limit_mb, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        let text = format!("{err}{}", String::from_utf8_lossy(&out.stdout));
        assert_eq!(out.status.code(), Some(1), "{args:?}: {text}");
        assert!(text.contains(section), "{args:?}: {text}");
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// 16 MiB of inflated bytes from a 16 KiB section: every count taken from
/// it is bounded by the bytes, but a structure per byte would still be
/// gigabytes.
const BOMB: usize = 16 << 20;
const LIMIT_MB: u64 = 1024;

#[test]
fn inode_records_that_cannot_hold_an_inode_do_not_size_the_node_table() {
    let dir = tempfile::tempdir().unwrap();
    let mut plain = inode_section(BOMB as u64, &[]);
    plain.extend(empties(BOMB));
    let img = image(Some(ZLIB), &[("NS_INFO", ns_info()), ("INODE", plain)]);
    assert!(img.len() < 1 << 20, "{}", img.len());
    let p = write(dir.path(), "fsimage_0000000000000000001", &img);
    refused(&p, LIMIT_MB, "INODE");
}

#[test]
fn empty_small_section_entries_do_not_allocate_per_byte() {
    let dir = tempfile::tempdir().unwrap();
    let inode = inode_section(1, &[root()]);
    for (name, plain) in [
        ("INODE_REFERENCE", empties(BOMB)),
        ("SNAPSHOT_DIFF", empties(BOMB)),
        ("FILES_UNDERCONSTRUCTION", empties(BOMB)),
        ("SNAPSHOT", {
            let mut s = delimited(&[nsimage_format::hdfs_pb::SnapshotSection {
                snapshot_counter: Some(1),
                snapshottable_dir: vec![16385],
                num_snapshots: Some(BOMB as u32 - 16),
            }
            .encode_to_vec()]);
            s.extend(empties(BOMB));
            s
        }),
    ] {
        let img = image(
            Some(ZLIB),
            &[
                ("NS_INFO", ns_info()),
                ("INODE", inode.clone()),
                (name, plain),
            ],
        );
        assert!(img.len() < 1 << 20, "{name}: {}", img.len());
        let p = write(dir.path(), &format!("fsimage_{name}"), &img);
        refused(&p, LIMIT_MB, name);
    }
}

/// A SNAPSHOT_DIFF entry declaring as many diffs as its section has bytes,
/// each an empty message: a diff is hundreds of bytes in memory.
#[test]
fn empty_snapshot_diffs_do_not_allocate_per_byte() {
    use nsimage_format::hdfs_pb::snapshot_diff_section::{diff_entry, DiffEntry};
    let dir = tempfile::tempdir().unwrap();
    let inode = inode_section(1, &[root()]);
    for ty in [diff_entry::Type::Filediff, diff_entry::Type::Directorydiff] {
        let mut plain = delimited(&[DiffEntry {
            r#type: ty as i32,
            inode_id: Some(16385),
            num_of_diff: Some(BOMB as u32 - 16),
        }
        .encode_to_vec()]);
        plain.extend(empties(BOMB));
        let img = image(
            Some(ZLIB),
            &[
                ("NS_INFO", ns_info()),
                ("INODE", inode.clone()),
                ("SNAPSHOT_DIFF", plain),
            ],
        );
        let p = write(dir.path(), &format!("fsimage_{ty:?}"), &img);
        refused(&p, LIMIT_MB, "SNAPSHOT_DIFF");
    }
}

/// A summary at its 64 MiB bound, millions of entries: decoded within a
/// bounded multiple of its bytes (every entry is a valid NS_INFO here, so
/// the image loads).
#[test]
fn a_summary_of_millions_of_entries_stays_within_memory() {
    let dir = tempfile::tempdir().unwrap();
    let inode = inode_section(1, &[root()]);
    let img = image_with(None, &[("NS_INFO", ns_info()), ("INODE", inode)], |fs| {
        let s = fs.sections[0].clone();
        fs.sections.resize(4 << 20, s);
    });
    let p = write(dir.path(), "fsimage_0000000000000000002", &img);
    let out = limited(LIMIT_MB, &["verify", p.to_str().unwrap()]);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// MD5 threads of this process once no other test's load holds one: the
/// count is process-wide and the tests run in parallel (a Hadoop load of
/// another test hashes its sidecar for a moment), so it is sampled until
/// it reaches 0, for at most 10 s; a thread a load leaked stays past that.
fn md5_threads() -> usize {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let n = md5_threads_now();
        if n == 0 || std::time::Instant::now() >= deadline {
            return n;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn md5_threads_now() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
                .filter(|c| c.trim() == "nsimage-md5")
                .count()
        })
        .unwrap_or(0)
}

/// A load that fails while the `.md5` sidecar is still being hashed stops
/// and joins the hashing thread before it returns its (located) error.
#[test]
fn a_failed_load_leaves_no_md5_thread_running() {
    use md5::{Digest, Md5};
    let dir = tempfile::tempdir().unwrap();
    // 64 MiB of bytes nothing refers to, then an INODE section whose header
    // declares two inodes for one record.
    let inode = inode_section(2, &[root()]);
    let mut img = image(None, &[("NS_INFO", ns_info()), ("INODE", inode)]);
    let pad = vec![0u8; 64 << 20];
    img.splice(8..8, pad.iter().copied());
    // Offsets moved: lay the summary out again over the padded body.
    let n = img.len();
    let slen = u32::from_be_bytes(img[n - 4..].try_into().unwrap()) as usize;
    let body_end = n - 4 - slen;
    let mut fs = FileSummary::decode_length_delimited(&img[body_end..n - 4]).unwrap();
    for s in &mut fs.sections {
        s.offset = Some(s.offset() + (64 << 20));
    }
    img.truncate(body_end);
    let d = fs.encode_length_delimited_to_vec();
    img.extend_from_slice(&d);
    img.extend_from_slice(&(d.len() as u32).to_be_bytes());
    let name = "fsimage_0000000000000000007";
    let p = write(dir.path(), name, &img);
    let digest: [u8; 16] = Md5::digest(&img).into();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    std::fs::write(
        dir.path().join(format!("{name}.md5")),
        format!("{hex} *{name}\n"),
    )
    .unwrap();
    for threads in [1, 2] {
        let opts = nsimage_loader::LoadOptions {
            threads,
            serial: threads == 1,
            parallel_threshold: 0,
            ..Default::default()
        };
        let e = match nsimage_loader::load(&p, &opts) {
            Ok(_) => panic!("a header declaring 2 inodes for 1 record loads"),
            Err(e) => e,
        };
        assert!(e.is_data_error(), "{e}");
        assert!(e.to_string().contains("INODE"), "{e}");
        assert_eq!(md5_threads(), 0, "an MD5 thread outlived the load");
    }
    // `verify` reports the same problem.
    let report = nsimage_loader::verify(&p, &Default::default()).unwrap();
    assert!(!report.is_ok());
}

/// With a codec, a bad STRING_TABLE entry is named by its byte in the
/// inflated section (not a file offset mixing compressed and inflated
/// positions).
#[test]
fn string_table_errors_in_an_inflated_section_name_the_inflated_byte() {
    use nsimage_format::hdfs_pb::string_table_section::Entry;
    use nsimage_format::hdfs_pb::StringTableSection;
    let dir = tempfile::tempdir().unwrap();
    let table = delimited(&[
        StringTableSection {
            num_entry: Some(1),
            mask_bits: Some(0),
        }
        .encode_to_vec(),
        // Serial 0 names no string.
        Entry {
            id: Some(0),
            str: Some("hdfs".into()),
        }
        .encode_to_vec(),
    ]);
    let img = image(
        Some(ZLIB),
        &[
            ("NS_INFO", ns_info()),
            ("INODE", inode_section(1, &[root()])),
            ("STRING_TABLE", table),
        ],
    );
    let p = write(dir.path(), "fsimage_0000000000000000008", &img);
    let out = limited(LIMIT_MB, &["verify", p.to_str().unwrap()]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("STRING_TABLE"), "{text}");
    assert!(text.contains("of the inflated section"), "{text}");
}

/// A million empty INODE_SUB entries (they tile their section: each starts
/// where the last ended) make a million pieces: the load runs them in
/// bounded time and memory.
#[test]
fn a_million_empty_sub_sections_load_in_bounded_time() {
    let dir = tempfile::tempdir().unwrap();
    let inode = inode_section(1, &[root()]);
    let img = image_with(None, &[("NS_INFO", ns_info()), ("INODE", inode)], |fs| {
        let at = fs.sections[1].offset();
        let len = fs.sections[1].length();
        let mut subs: Vec<Section> = (0..1_000_000)
            .map(|_| Section {
                name: Some("INODE_SUB".into()),
                offset: Some(at),
                length: Some(0),
            })
            .collect();
        subs.push(Section {
            name: Some("INODE_SUB".into()),
            offset: Some(at),
            length: Some(len),
        });
        fs.sections.splice(0..0, subs);
    });
    let p = write(dir.path(), "fsimage_0000000000000000009", &img);
    let p = p.to_str().unwrap();
    for args in [
        vec!["verify", p],
        vec!["load", p, "--threads", "2", "--parallel-threshold", "0"],
    ] {
        let t = std::time::Instant::now();
        let out = limited(LIMIT_MB, &args);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{args:?}: {:?} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(t.elapsed().as_secs() < 30, "{args:?}: {:?}", t.elapsed());
    }
}

const GZIP: &str = "org.apache.hadoop.io.compress.GzipCodec";

/// A gzip image whose sections are given already compressed.
fn gzip_image(sections: &[(&str, Vec<u8>)]) -> Vec<u8> {
    compressed_image(GZIP, sections)
}

/// An image of codec `codec` whose sections are given already compressed.
fn compressed_image(codec: &str, sections: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut out = b"HDFSIMG1".to_vec();
    let mut entries = Vec::new();
    for (name, body) in sections {
        entries.push(Section {
            name: Some((*name).to_string()),
            offset: Some(out.len() as u64),
            length: Some(body.len() as u64),
        });
        out.extend_from_slice(body);
    }
    let fs = FileSummary {
        ondisk_version: 1,
        layout_version: (-63i32) as u32,
        codec: Some(codec.to_string()),
        sections: entries,
    };
    let d = fs.encode_length_delimited_to_vec();
    out.extend_from_slice(&d);
    out.extend_from_slice(&(d.len() as u32).to_be_bytes());
    out
}

/// `head` then `times` copies of `unit`, gzipped as one stream without
/// holding the inflated bytes.
fn gzip_of(head: &[u8], unit: &[u8], times: usize) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(head).unwrap();
    for _ in 0..times {
        e.write_all(unit).unwrap();
    }
    e.finish().unwrap()
}

/// What [`run_peak`] saw of one run of `nsimage`.
struct Run {
    code: Option<i32>,
    out: String,
    err: String,
    /// The peak resident set, in bytes.
    peak: u64,
}

/// Runs `nsimage ARGS` and returns its exit code, its stderr and its peak
/// resident set in bytes (see [`run_peak`]).
fn peak_rss(args: &[&str]) -> (Option<i32>, String, u64) {
    let r = run_peak(args);
    (r.code, r.err, r.peak)
}

/// Runs `nsimage ARGS` (whose output must be small: it is read once the
/// process has exited) and returns its exit code, stdout, stderr and peak
/// resident set in bytes: `VmHWM` of `/proc/<pid>/status`, polled until
/// the process exits (the high-water mark only grows, so the last value
/// read is a lower bound of the peak and a bomb inflating whole is seen).
fn run_peak(args: &[&str]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nsimage"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("running nsimage");
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0u64;
    let started = std::time::Instant::now();
    let code = loop {
        if let Ok(s) = std::fs::read_to_string(&status) {
            if let Some(kb) = s
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                peak = peak.max(kb * 1024);
            }
        }
        if let Some(st) = child.try_wait().unwrap() {
            break st.code();
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(120),
            "nsimage {args:?} still running after 120 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    let (mut out, mut err) = (String::new(), String::new());
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    Run {
        code,
        out,
        err,
        peak,
    }
}

/// Issue 24, defect 5 (its "Must show"): a 1 MB gzip image whose INODE
/// section inflates to 1 GiB (a header declaring 50 inodes, the root, then
/// zeros: empty records) is refused with exit 1 within 256 MB of peak RSS,
/// at its first record past the declared count, not after inflating.
#[test]
fn a_1_mb_image_inflating_to_1_gib_is_refused_within_256_mb() {
    let dir = tempfile::tempdir().unwrap();
    let head = inode_section(50, &[root()]);
    let section = gzip_of(&head, &vec![0u8; 1 << 20], 1024);
    let img = gzip_image(&[("NS_INFO", gzip_of(&ns_info(), &[], 0)), ("INODE", section)]);
    assert!(img.len() < 1_200_000, "{}", img.len());
    let p = write(dir.path(), "fsimage_0000000000000000001", &img);
    let p = p.to_str().unwrap();
    for threads in ["1", "2"] {
        let (code, err, peak) = peak_rss(&["load", p, "--threads", threads]);
        assert_eq!(code, Some(1), "{err}");
        assert!(peak <= 256 << 20, "peak RSS {peak} bytes: {err}");
        assert!(err.contains("INODE"), "{err}");
        assert!(err.contains("record 2 at byte"), "{err}");
        assert!(err.contains("is empty"), "{err}");
    }
}

/// Issue 24, defect 5, for the sections without a header of their own: a
/// 1 MB gzip image whose INODE_DIR, SNAPSHOT_DIFF, INODE_REFERENCE or
/// FILES_UNDERCONSTRUCTION inflates to 1 GiB of zeros (empty records) is
/// refused with exit 1 within 256 MB of peak RSS, at its first record.
#[test]
fn a_1_mb_bomb_in_any_record_section_is_refused_within_256_mb() {
    let dir = tempfile::tempdir().unwrap();
    let zeros = gzip_of(&[], &vec![0u8; 1 << 20], 1024);
    let inode = gzip_of(&inode_section(1, &[root()]), &[], 0);
    for name in [
        "INODE_DIR",
        "SNAPSHOT_DIFF",
        "INODE_REFERENCE",
        "FILES_UNDERCONSTRUCTION",
    ] {
        let img = gzip_image(&[
            ("NS_INFO", gzip_of(&ns_info(), &[], 0)),
            ("INODE", inode.clone()),
            (name, zeros.clone()),
        ]);
        assert!(img.len() < 1_200_000, "{}", img.len());
        let p = write(dir.path(), &format!("fsimage_{name}"), &img);
        let (code, err, peak) = peak_rss(&["load", p.to_str().unwrap()]);
        assert_eq!(code, Some(1), "{name}: {err}");
        assert!(peak <= 256 << 20, "{name}: peak RSS {peak} bytes: {err}");
        assert!(err.contains(name), "{name}: {err}");
        assert!(err.contains("record 0 at byte 0"), "{name}: {err}");
    }
}

/// A bomb of valid-looking directory entries (the root's, repeated) is
/// bounded by numInodes: Hadoop writes one entry per directory with
/// children.
#[test]
fn a_bomb_of_repeated_directory_entries_is_bounded_by_the_inode_count() {
    use nsimage_format::hdfs_pb::i_node_directory_section::DirEntry;
    let dir = tempfile::tempdir().unwrap();
    let entry = delimited(&[DirEntry {
        parent: Some(16385),
        children: vec![16386],
        ref_children: Vec::new(),
    }
    .encode_to_vec()]);
    let times = (64 << 20) / entry.len();
    let file = INode {
        r#type: i_node::Type::File as i32,
        id: 16386,
        name: Some(b"f".to_vec()),
        file: Some(Default::default()),
        ..Default::default()
    }
    .encode_to_vec();
    let img = gzip_image(&[
        ("NS_INFO", gzip_of(&ns_info(), &[], 0)),
        ("INODE", gzip_of(&inode_section(2, &[root(), file]), &[], 0)),
        ("INODE_DIR", gzip_of(&[], &entry, times)),
    ]);
    let p = write(dir.path(), "fsimage_0000000000000000001", &img);
    let (code, err, peak) = peak_rss(&["load", p.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("INODE_DIR"), "{err}");
    assert!(err.contains("more than 2 records"), "{err}");
    assert!(peak <= 48 << 20, "peak RSS {peak} bytes: {err}");
}

/// A bomb of valid-looking records (a run of 1,000 file inodes, ids in
/// order, repeated) is bounded by the count the INODE header declares:
/// refused at the first record past it, well before the stream is
/// inflated (and before any id repeats).
#[test]
fn a_bomb_of_repeated_inodes_is_bounded_by_the_declared_count() {
    let dir = tempfile::tempdir().unwrap();
    let head = inode_section(50, &[root()]);
    let files: Vec<Vec<u8>> = (16386..17386u64)
        .map(|id| file_inode(id, format!("f{id}").as_bytes()))
        .collect();
    let unit = delimited(&files);
    let times = (64 << 20) / unit.len();
    let section = gzip_of(&head, &unit, times);
    let img = gzip_image(&[("NS_INFO", gzip_of(&ns_info(), &[], 0)), ("INODE", section)]);
    let p = write(dir.path(), "fsimage_0000000000000000001", &img);
    let p = p.to_str().unwrap();
    let (code, err, peak) = peak_rss(&["load", p]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("more than 51 records"), "{err}");
    assert!(peak <= 48 << 20, "peak RSS {peak} bytes: {err}");
}

/// Issue 24, defect 4: a summary listing INODE twice is refused (Hadoop
/// would load the section twice), naming the section.
#[test]
fn a_summary_listing_a_section_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let img = image_with(
        None,
        &[
            ("NS_INFO", ns_info()),
            ("INODE", inode_section(1, &[root()])),
        ],
        |fs| {
            let again = fs.sections[1].clone();
            fs.sections.push(again);
        },
    );
    let p = write(dir.path(), "fsimage_0000000000000000001", &img);
    let e = nsimage_loader::load(&p, &nsimage_loader::LoadOptions::default())
        .err()
        .expect("loaded an image listing INODE twice");
    assert!(
        e.to_string().contains("lists section \"INODE\" twice"),
        "{e}"
    );
    refused(&p, LIMIT_MB, "INODE");
}

/// `head` then `times` copies of `unit`, as one zlib stream, without
/// holding the inflated bytes.
fn zlib_of(head: &[u8], unit: &[u8], times: usize) -> Vec<u8> {
    let mut e = ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(head).unwrap();
    for _ in 0..times {
        e.write_all(unit).unwrap();
    }
    e.finish().unwrap()
}

/// A file inode record (its permission naming string 0, as `root()`'s).
fn file_inode(id: u64, name: &[u8]) -> Vec<u8> {
    INode {
        r#type: i_node::Type::File as i32,
        id,
        name: Some(name.to_vec()),
        file: Some(Default::default()),
        ..Default::default()
    }
    .encode_to_vec()
}

/// An INODE header declaring `num_inodes` up to id `last`.
fn inode_header(last: u64, num_inodes: u64) -> Vec<u8> {
    delimited(&[INodeSection {
        last_inode_id: Some(last),
        num_inodes: Some(num_inodes),
    }
    .encode_to_vec()])
}

const MIB: u64 = 1 << 20;

/// Issue 39, 5c: a 6 MB zlib image whose INODE piece inflates to 1.5 GiB
/// of one well-formed file record repeated after the root, its header
/// declaring every record (so no count refuses it early). The second copy
/// repeats the first's id: the piece is refused there, as its records come
/// out, with exit 1 and within 256 MB of peak RSS, by `load` (1 and 2
/// threads), `verify`, `du` and `dump` (streamed: each reads the piece as
/// it inflates), and `du --memory-limit 700M` stays within its limit.
#[test]
fn a_compressed_piece_is_refused_as_its_records_come_out() {
    let dir = tempfile::tempdir().unwrap();
    let unit = delimited(&[file_inode(16386, &[b'f'; 200])]);
    let times = (1536 << 20) / unit.len();
    let mut head = inode_header(16386, times as u64 + 1);
    head.extend(delimited(&[root()]));
    let inode = zlib_of(&head, &unit, times);
    let img = compressed_image(
        ZLIB,
        &[("NS_INFO", zlib_of(&ns_info(), &[], 0)), ("INODE", inode)],
    );
    assert!(img.len() < 8 << 20, "{}", img.len());
    let p = write(dir.path(), "fsimage_0000000000000000001", &img);
    let p = p.to_str().unwrap();
    let tsv = dir.path().join("dump.tsv");
    let tsv = tsv.to_str().unwrap();
    for (args, limit) in [
        (vec!["load", p, "--threads", "1"], 256 * MIB),
        (
            vec!["load", p, "--threads", "2", "--parallel-threshold", "0"],
            256 * MIB,
        ),
        (vec!["verify", p], 256 * MIB),
        (vec!["du", p, "/"], 256 * MIB),
        (
            vec!["dump", p, "--format", "delimited", "-o", tsv],
            256 * MIB,
        ),
        (vec!["du", p, "/", "--memory-limit", "700M"], 256 * MIB),
    ] {
        let r = run_peak(&args);
        assert_eq!(r.code, Some(1), "{args:?}: {}", r.err);
        assert!(
            r.peak <= limit,
            "{args:?}: peak RSS {} MiB: {}",
            r.peak / MIB,
            r.err
        );
        // `verify` reports on stdout.
        let text = format!("{}{}", r.out, r.err);
        assert!(text.contains("INODE"), "{args:?}: {text}");
        assert!(
            text.contains("inode id 16386 is not greater than the previous one"),
            "{args:?}: {text}"
        );
        assert!(text.contains("of the inflated piece"), "{args:?}: {text}");
    }
}

/// Issue 39, 5c: a 3 MB zlib image of well-formed records only (files of
/// 60,000-byte names, in id order, all listed by the root) whose INODE
/// piece inflates to 1 GiB: `du --memory-limit 700M` streams it within the
/// limit it was given (the piece inflated a chunk at a time, its records
/// decoded as they come out), with the right counts.
#[test]
fn du_keeps_its_memory_limit_on_a_piece_inflating_past_it() {
    use nsimage_format::hdfs_pb::i_node_directory_section::DirEntry;
    let dir = tempfile::tempdir().unwrap();
    let files = (1u64 << 30) / 60_010;
    let last = 16385 + files;
    let mut e = ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(&inode_header(last, files + 1)).unwrap();
    e.write_all(&delimited(&[root()])).unwrap();
    let mut name = vec![b'a'; 60_000];
    for id in 16386..=last {
        name.truncate(60_000);
        name.extend_from_slice(format!("{id:010}").as_bytes());
        e.write_all(&delimited(&[file_inode(id, &name)])).unwrap();
    }
    let inode = e.finish().unwrap();
    let entry = delimited(&[DirEntry {
        parent: Some(16385),
        children: (16386..=last).collect(),
        ref_children: Vec::new(),
    }
    .encode_to_vec()]);
    let img = compressed_image(
        ZLIB,
        &[
            ("NS_INFO", zlib_of(&ns_info(), &[], 0)),
            ("INODE", inode),
            ("INODE_DIR", zlib_of(&entry, &[], 0)),
        ],
    );
    assert!(img.len() < 8 << 20, "{}", img.len());
    let p = write(dir.path(), "fsimage_0000000000000000001", &img);
    let r = run_peak(&["du", p.to_str().unwrap(), "/", "--memory-limit", "700M"]);
    assert_eq!(r.code, Some(0), "{}", r.err);
    assert!(r.peak <= 700 * MIB, "peak RSS {} MiB", r.peak / MIB);
    let row = r.out.lines().nth(1).unwrap_or_default().to_string();
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cols.first(), Some(&files.to_string().as_str()), "{}", r.out);
    assert_eq!(cols.get(1), Some(&"1"), "{}", r.out);
}

/// Issue 39, item 6: a summary naming a codec of 100,000 characters is
/// refused (exit 1, at the summary) with the codec's first 64 characters,
/// escaped, and its length, not with the whole name.
#[test]
fn a_long_codec_name_is_not_echoed_whole() {
    let dir = tempfile::tempdir().unwrap();
    let codec = format!("org.example\n{}", "x".repeat(100_000));
    let img = image_with(
        None,
        &[
            ("NS_INFO", ns_info()),
            ("INODE", inode_section(1, &[root()])),
        ],
        |fs| fs.codec = Some(codec.clone()),
    );
    let p = write(dir.path(), "fsimage_0000000000000000001", &img);
    let p = p.to_str().unwrap();
    for args in [
        vec!["info", p],
        vec!["load", p],
        vec!["verify", p],
        vec!["du", p, "/"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_nsimage"))
            .args(&args)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?}: {}",
            &text[..text.len().min(400)]
        );
        assert!(
            text.len() < 2000,
            "{args:?}: {} bytes of output",
            text.len()
        );
        assert!(
            text.contains("unsupported HDFS image codec"),
            "{args:?}: {text}"
        );
        assert!(text.contains("100012 characters"), "{args:?}: {text}");
        // Escaped: the newline shown as `\n`, the text on one line.
        assert!(text.contains(r"org.example\nxxx"), "{args:?}: {text}");
        assert!(text.contains("FILE_SUMMARY"), "{args:?}: {text}");
    }
}
