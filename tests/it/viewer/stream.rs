//! The viewer's streamed reads (issue 28): an image's tree read in
//! bounded memory ([`Skeleton`]), then its INODE pieces again. The results
//! equal those of the whole namespace on images of every shape, on 1 and 2
//! threads; `--memory-limit` refuses a tree that does not fit before any
//! output. (That a streamed read refuses what a load refuses is checked
//! with every read path, by `common::every_path`.)

use crate::common;

use nsimage_format::cipher::Key;
use nsimage_loader::skeleton::Skeleton;
use nsimage_loader::{load, ImageSource, LoadOptions, Streamable};
use nsimage_namespace::{Namespace, NsInfo};
use nsimage_testkit::generate::{generate, GenSpec};
use nsimage_viewer::distribution::{distribution, distribution_streamed};
use nsimage_viewer::dump::{dump, DumpFormat, DumpOptions};
use nsimage_viewer::streamed::dump::dump_streamed;
use nsimage_writer::{AtRestOptions, WriteOptions};
use std::path::Path;

/// Namespaces of every shape a streamed read meets: the root alone, the
/// sample (xattrs, ACLs, quotas, a file under construction), small
/// (unsplit sections), split into many small pieces, and with ids made
/// sparse by deletes.
fn namespaces() -> Vec<(&'static str, Namespace, WriteOptions)> {
    let split = WriteOptions {
        sub_section_bytes: 8 << 10,
        ..WriteOptions::default()
    };
    let mut sparse = generate(GenSpec {
        inodes: 30_000,
        seed: 3,
    });
    let victims: Vec<u64> = sparse
        .iter()
        .filter(|n| n.kind() == nsimage_namespace::InodeKind::File)
        .map(|n| n.id())
        .step_by(3)
        .collect();
    for id in victims {
        sparse.delete_id(id, false, 1).unwrap();
    }
    // Ids spread more than twice their count: links kept as sorted pairs.
    let mut sparser = generate(GenSpec {
        inodes: 30_000,
        seed: 5,
    });
    let victims: Vec<u64> = sparser
        .iter()
        .filter(|n| n.kind() == nsimage_namespace::InodeKind::File)
        .map(|n| n.id())
        .enumerate()
        .filter(|(i, _)| i % 4 != 0)
        .map(|(_, id)| id)
        .collect();
    for id in victims {
        sparser.delete_id(id, false, 1).unwrap();
    }
    vec![
        (
            "root only",
            Namespace::new(NsInfo::default()),
            WriteOptions::default(),
        ),
        ("sample", common::sample(), common::tiny(200)),
        (
            "3,000 inodes",
            generate(GenSpec {
                inodes: 3_000,
                seed: 1,
            }),
            WriteOptions::default(),
        ),
        (
            "20,000 inodes in small pieces",
            generate(GenSpec {
                inodes: 20_000,
                seed: 2,
            }),
            split.clone(),
        ),
        ("sparse ids", sparse, split.clone()),
        ("very sparse ids", sparser, split),
        ("names past ASCII", names_past_ascii(), common::tiny(200)),
    ]
}

/// The sample with names whose bytes 0x80 and above make Hadoop's order
/// (signed bytes) differ from the stored one (unsigned), in a directory
/// and among directories.
fn names_past_ascii() -> Namespace {
    let mut ns = common::sample();
    let d = ns
        .mkdirs(b"/data/\xc3\xa9t\xc3\xa9", &common::P, 50)
        .unwrap();
    for name in [&b"e"[..], b"\xc3\xa9", b"Zeta", b"\xff", b"a\x80", b"a"] {
        ns.create_in(d, name, &common::P, &common::F, 51).unwrap();
    }
    ns
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

#[test]
fn streamed_distribution_equals_the_whole_namespaces() {
    let dir = tempfile::tempdir().unwrap();
    for (what, ns, opts) in namespaces() {
        let img = dir.path().join("img.nsi");
        std::fs::write(&img, common::image(&ns, &opts)).unwrap();
        let full = load(&img, &LoadOptions::default()).unwrap().namespace;
        for (step, max) in [(2 << 20, 128 << 30), (7, 100), (1, 1)] {
            let want = distribution(&full, step, max).unwrap();
            for threads in [1, 2] {
                let src = Streamable::Image(ImageSource::open(&img).unwrap());
                let got = distribution_streamed(&src, threads, step, max)
                    .unwrap()
                    .unwrap_or_else(|_| panic!("{what}: not streamed"));
                assert_eq!(got, want, "{what}, step {step}, {threads} threads");
            }
        }
    }
}

/// Whether a name of `ns` has a byte 0x80 or above (its lists are then
/// not in Hadoop's order as an nsimage image stores them, and XML is
/// loaded whole).
fn high_names(ns: &Namespace) -> bool {
    ns.iter().any(|i| i.name().iter().any(|&b| b >= 0x80))
}

/// `dump` streamed writes the bytes `dump` of the loaded namespace writes,
/// for every format, any thread count; XML of an image with names the
/// stored order does not keep in Hadoop's order is left to the loaded
/// namespace (`None`, nothing written).
#[test]
fn streamed_dumps_equal_the_whole_namespaces() {
    let dir = tempfile::tempdir().unwrap();
    let formats = [
        (DumpFormat::Delimited, b'\t', false),
        (DumpFormat::Delimited, b',', true),
        (DumpFormat::Jsonl, b'\t', false),
        (DumpFormat::Xml, b'\t', false),
    ];
    for (what, ns, opts) in namespaces() {
        let img = dir.path().join("img.nsi");
        std::fs::write(&img, common::image(&ns, &opts)).unwrap();
        let full = load(&img, &LoadOptions::default()).unwrap().namespace;
        for (format, delimiter, header) in formats {
            let mut o = DumpOptions {
                format,
                delimiter,
                header,
                threads: 1,
                ..DumpOptions::default()
            };
            let mut want = Vec::new();
            let ws = dump(&full, &o, &mut want, Path::new("want")).unwrap();
            for threads in [1, 2] {
                o.threads = threads;
                let src = Streamable::Image(ImageSource::open(&img).unwrap());
                let mut got = Vec::new();
                let Ok(gs) = dump_streamed(&src, &o, &mut got, Path::new("got")).unwrap() else {
                    assert!(
                        format == DumpFormat::Xml && high_names(&full),
                        "{what}, {format:?}: not streamed"
                    );
                    assert!(got.is_empty());
                    continue;
                };
                assert!(
                    got == want,
                    "{what}, {format:?}, {threads} threads: {} bytes against {}",
                    got.len(),
                    want.len()
                );
                assert_eq!((gs.rows, gs.bytes), (ws.rows, ws.bytes), "{what}");
            }
        }
    }
}

/// The command line streams `dump` and says so in its summary; the bytes
/// are those of the loaded namespace.
#[test]
fn the_command_line_streams_dump() {
    let dir = tempfile::tempdir().unwrap();
    let ns = generate(GenSpec {
        inodes: 20_000,
        seed: 8,
    });
    let img = dir.path().join("img.nsi");
    std::fs::write(&img, common::image(&ns, &WriteOptions::default())).unwrap();
    let out = dir.path().join("out.tsv");
    let o = run(&[
        "dump",
        s(&img),
        "--format",
        "delimited",
        "-o",
        s(&out),
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = common::json(&o);
    assert_eq!(v["streamed"], true, "{v}");
    assert_eq!(v["rows"], 20_000);
    let mut want = Vec::new();
    let full = load(&img, &LoadOptions::default()).unwrap().namespace;
    dump(
        &full,
        &DumpOptions {
            format: DumpFormat::Delimited,
            ..DumpOptions::default()
        },
        &mut want,
        Path::new("want"),
    )
    .unwrap();
    assert!(std::fs::read(&out).unwrap() == want);
    let o = run(&["dump", s(&img), "--format", "xml", "-o", s(&out), "--json"]);
    assert!(o.status.success());
    assert_eq!(common::json(&o)["streamed"], true);
    let mut want = Vec::new();
    let xml = DumpOptions {
        format: DumpFormat::Xml,
        ..DumpOptions::default()
    };
    dump(&full, &xml, &mut want, Path::new("want")).unwrap();
    assert!(std::fs::read(&out).unwrap() == want);
    let o = run(&["dump", s(&img), "--format", "jsonl", "--memory-limit", "1K"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
}

/// Compressed and encrypted pieces stream too (each opened as a load
/// opens it).
#[test]
fn images_at_rest_stream() {
    let dir = tempfile::tempdir().unwrap();
    let ns = generate(GenSpec {
        inodes: 20_000,
        seed: 5,
    });
    let key = Key::from_bytes([7u8; 32]);
    let opts = WriteOptions {
        sub_section_bytes: 16 << 10,
        at_rest: AtRestOptions {
            compression: nsimage_format::codec::Compression::parse("zstd").unwrap(),
            key: Some(key.clone()),
        },
        ..WriteOptions::default()
    };
    let img = dir.path().join("img.nsi");
    std::fs::write(&img, common::image(&ns, &opts)).unwrap();
    let want = distribution(&ns, 1 << 20, 1 << 30).unwrap();
    let mut src = ImageSource::open(&img).unwrap();
    src.unlock(Some(&key)).unwrap();
    let got = distribution_streamed(&Streamable::Image(src), 2, 1 << 20, 1 << 30)
        .unwrap()
        .unwrap();
    assert_eq!(got, want);
}

/// The skeleton holds 4 bytes per inode (the generator's ids are dense)
/// and a directory entry per directory with children, within the estimate
/// the memory limit is checked against.
#[test]
fn the_skeleton_stays_within_its_estimate() {
    let dir = tempfile::tempdir().unwrap();
    let ns = generate(GenSpec {
        inodes: 200_000,
        seed: 4,
    });
    let img = dir.path().join("img.nsi");
    std::fs::write(&img, common::image(&ns, &WriteOptions::default())).unwrap();
    let src = Streamable::Image(ImageSource::open(&img).unwrap());
    let s = Skeleton::build(&src, Some(&pool(2))).unwrap().unwrap();
    assert_eq!(s.inode_count(), 200_000);
    let estimate = Skeleton::estimate(&src);
    assert!(s.bytes() <= estimate, "{} > {estimate}", s.bytes());
    assert!(
        s.bytes() < 200_000 * 8,
        "{} bytes for 200,000 inodes",
        s.bytes()
    );
}

fn run(args: &[&str]) -> std::process::Output {
    common::nsimage(args)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `--memory-limit` below what the tree needs: refused before any output,
/// saying how much it needs; above it, the same output as without.
#[test]
fn the_memory_limit_refuses_before_any_output() {
    let dir = tempfile::tempdir().unwrap();
    let ns = generate(GenSpec {
        inodes: 50_000,
        seed: 6,
    });
    let img = dir.path().join("img.nsi");
    std::fs::write(&img, common::image(&ns, &WriteOptions::default())).unwrap();
    let o = run(&["distribution", s(&img), "--memory-limit", "64K", "--json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("needs about") && err.contains("--memory-limit"),
        "{err}"
    );
    let plain = run(&["distribution", s(&img), "--json"]);
    let capped = run(&["distribution", s(&img), "--json", "--memory-limit", "64M"]);
    assert!(plain.status.success() && capped.status.success());
    assert_eq!(plain.stdout, capped.stdout);
    let o = run(&["distribution", s(&img), "--memory-limit", "lots"]);
    assert_eq!(o.status.code(), Some(2));
    // The commands that load the whole namespace (`ls -R`, `find
    // --sorted`) read through the same entry point: refused within the
    // limit before any output, the same bytes under a limit that fits.
    for args in [&["ls", "-R"][..], &["find", "--sorted"][..]] {
        let with = |limit: &[&str]| {
            let mut a = args.to_vec();
            a.push(s(&img));
            a.extend_from_slice(limit);
            run(&a)
        };
        let o = with(&["--memory-limit", "64K"]);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(o.stdout.is_empty(), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("needs about"), "{args:?}: {err}");
        let plain = with(&[]);
        let capped = with(&["--memory-limit", "64M"]);
        assert!(
            plain.status.success() && capped.status.success(),
            "{args:?}"
        );
        assert!(!plain.stdout.is_empty());
        assert_eq!(plain.stdout, capped.stdout, "{args:?}");
    }
}

/// Block ids too sparse for the pieces' bitmaps (old clusters' random
/// ids) are sorted to be checked, as a load sorts them: a duplicate among
/// them is refused by the streamed read as by a load.
#[test]
fn sparse_block_ids_are_checked_by_sorting() {
    use nsimage_namespace::{Block, FileSpec, PermSpec};
    let p = PermSpec {
        user: b"u",
        group: b"g",
        mode: 0o644,
    };
    let spec = FileSpec {
        replication: 3,
        preferred_block_size: 1 << 20,
        storage_policy: 0,
    };
    let build = || {
        let mut ns = Namespace::new(NsInfo::default());
        let d = ns.mkdirs(b"/d", &p, 1).unwrap();
        for i in 0..40u64 {
            let f = ns
                .create_in(d, format!("f{i}").as_bytes(), &p, &spec, 2)
                .unwrap();
            ns.add_block(
                f,
                Block {
                    id: i * 1_000_000_007 + 1,
                    generation_stamp: 1,
                    length: i,
                },
            )
            .unwrap();
        }
        ns
    };
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("img.nsi");
    let ns = build();
    let bytes = common::image(&ns, &common::tiny(300));
    std::fs::write(&img, &bytes).unwrap();
    let src = Streamable::Image(ImageSource::open(&img).unwrap());
    let got = distribution_streamed(&src, 2, 1, 100).unwrap().unwrap();
    assert_eq!(got, distribution(&ns, 1, 100).unwrap());
    assert_eq!(common::streamed(&img, None), Some(true));
    // The last file's block given the id of the eighth's: every path,
    // the streamed one included, refuses it.
    use prost::Message;
    let dup = common::rewrite_records(&bytes, &[nsimage_format::SectionKind::INODE], |_, body| {
        let mut m = nsimage_format::pb::Inode::decode(body).unwrap();
        if let Some(f) = m.file.as_mut() {
            if f.blocks
                .first()
                .is_some_and(|b| b.id == 39 * 1_000_000_007 + 1)
            {
                f.blocks[0].id = 7 * 1_000_000_007 + 1;
            }
        }
        m.encode_to_vec()
    });
    assert_eq!(
        common::same_verdict(&dup, "a sparse block id used twice"),
        None
    );
    std::fs::write(&img, &dup).unwrap();
    assert_eq!(common::streamed(&img, None), Some(false));
}

/// Paths to ask about in `ns`: the root, directories with children at
/// each of the first levels, an empty directory, a file, a missing path.
fn paths_in(ns: &Namespace) -> Vec<String> {
    use nsimage_namespace::InodeKind;
    let mut out = vec!["/".to_string()];
    let mut per_level = [0usize; 4];
    let (mut empty, mut file) = (false, false);
    nsimage_viewer::walk::walk(ns.root(), b"/", |inode, p, depth| {
        let p = String::from_utf8_lossy(p).into_owned();
        match inode.kind() {
            InodeKind::Directory if inode.children().next().is_some() => {
                if let Some(n) = per_level.get_mut(depth) {
                    if *n < 2 && depth > 0 {
                        *n += 1;
                        out.push(p);
                    }
                }
            }
            InodeKind::Directory if !empty && depth > 0 => {
                empty = true;
                out.push(p);
            }
            InodeKind::File if !file => {
                file = true;
                out.push(p);
            }
            _ => {}
        }
        Ok::<(), ()>(())
    })
    .unwrap();
    out.push("/no/such/path".into());
    out
}

/// `du`, `du --by` and `find` streamed answer as the loaded namespace
/// does, at 1 and 2 threads, at every depth and order; `find`'s matches
/// are the same set, in id order. A path that is not a directory with
/// children is left to a one-path lookup.
#[test]
fn streamed_du_and_find_equal_the_whole_namespaces() {
    use nsimage_viewer::du::{du, DuOptions, Sort};
    use nsimage_viewer::find::{find_each, write_found, FindOptions};
    use nsimage_viewer::owners::{usage_by, Key};
    use nsimage_viewer::paths::ImagePath;
    use nsimage_viewer::streamed::{self, Fallback};
    let dir = tempfile::tempdir().unwrap();
    for (what, ns, opts) in namespaces() {
        let img = dir.path().join("img.nsi");
        std::fs::write(&img, common::image(&ns, &opts)).unwrap();
        let full = load(&img, &LoadOptions::default()).unwrap().namespace;
        let src = Streamable::Image(ImageSource::open(&img).unwrap());
        let mut streamed_answers = 0;
        let finds = [
            FindOptions::default(),
            FindOptions {
                name: Some(FindOptions::glob("*1*").unwrap()),
                kind: Some(nsimage_namespace::InodeKind::File),
                ..FindOptions::default()
            },
        ];
        for p in paths_in(&full) {
            let path = ImagePath::parse(&p).unwrap();
            let tree = full.root().children().next().is_some();
            for threads in [1, 2] {
                for (depth, sort, files, small_below) in [
                    (0, Sort::Path, false, None),
                    (1, Sort::Path, false, None),
                    (2, Sort::Bytes, false, None),
                    (64, Sort::Path, false, None),
                    (3, Sort::Files, false, None),
                    // `hdfs dfs -du`'s rows: every child, files too.
                    (1, Sort::Path, true, None),
                    (2, Sort::Path, true, Some(1000)),
                ] {
                    let o = DuOptions {
                        depth,
                        sort,
                        files,
                        small_below,
                    };
                    let got = streamed::du::du_streamed(&src, &path, &o, threads).unwrap();
                    match (got, du(&full, &path, &o)) {
                        (Ok(g), Ok(w)) => {
                            assert_eq!(g, w, "{what}: du {p} -d {depth}, {threads} threads");
                            streamed_answers += 1;
                        }
                        (Err(Fallback::NotATree), _) => {
                            assert!(p != "/" || !tree, "{what}: {p} streams")
                        }
                        (g, w) => panic!("{what}: du {p}: {g:?} against {w:?}"),
                    }
                }
                for by in [Key::Owner, Key::Group] {
                    match (
                        streamed::owners::usage_by_streamed(&src, &path, by, None, threads)
                            .unwrap(),
                        usage_by(&full, &path, by, None),
                    ) {
                        (Ok(g), Ok(w)) => {
                            assert_eq!(g, w, "{what}: du --by {p}");
                            streamed_answers += 1;
                        }
                        (Err(Fallback::NotATree), _) => {}
                        (g, w) => panic!("{what}: du --by {p}: {g:?} against {w:?}"),
                    }
                }
                for f in &finds {
                    let mut got = Vec::new();
                    let r = streamed::find::find_streamed(
                        &src,
                        &path,
                        f,
                        nsimage_viewer::find::FindFormat::Json,
                        threads,
                        &mut got,
                        Path::new("got"),
                    )
                    .unwrap();
                    let mut want: Vec<Vec<u8>> = Vec::new();
                    let w = find_each(&full, &path, f, |m| {
                        let mut line = Vec::new();
                        write_found(m, nsimage_viewer::find::FindFormat::Json, &mut line).unwrap();
                        want.push(line);
                        Ok::<(), nsimage_viewer::ViewError>(())
                    });
                    match r {
                        Ok(stats) => {
                            w.unwrap();
                            let lines: Vec<Vec<u8>> = got
                                .split_inclusive(|&b| b == b'\n')
                                .map(<[u8]>::to_vec)
                                .collect();
                            assert_eq!(stats.matches as usize, lines.len());
                            let ids: Vec<u64> = lines
                                .iter()
                                .map(|l| {
                                    serde_json::from_slice::<serde_json::Value>(l).unwrap()["id"]
                                        .as_u64()
                                        .unwrap()
                                })
                                .collect();
                            assert!(
                                ids.windows(2).all(|w| w[0] < w[1]),
                                "{what}: find {p}: not in id order"
                            );
                            let (mut a, mut b) = (lines, want);
                            a.sort();
                            b.sort();
                            assert!(
                                a == b,
                                "{what}: find {p}, {threads} threads: {} matches against {}",
                                a.len(),
                                b.len()
                            );
                            streamed_answers += 1;
                        }
                        Err(Fallback::NotATree) => {}
                        Err(Fallback::Unstreamable) => panic!("{what}: not streamed"),
                    }
                }
            }
        }
        let tree = full.root().children().next().is_some();
        // Per streamed path: 2 thread counts, 5 du, 2 du --by, 2 find.
        assert!(
            !tree || streamed_answers >= 18 * 3,
            "{what}: {streamed_answers} streamed answers"
        );
    }
}

/// `export` streamed writes the bytes `export` of the loaded namespace
/// writes: one file and datasets, row groups that cut pieces anywhere,
/// 1 and 2 threads.
#[test]
fn streamed_exports_equal_the_whole_namespaces() {
    use nsimage_export::{export_streamed_to_path, export_to_path, ExportOptions};
    let dir = tempfile::tempdir().unwrap();
    for (what, ns, opts) in namespaces() {
        let img = dir.path().join("img.nsi");
        std::fs::write(&img, common::image(&ns, &opts)).unwrap();
        let full = load(&img, &LoadOptions::default()).unwrap().namespace;
        let src = Streamable::Image(ImageSource::open(&img).unwrap());
        for (rows, per_file) in [(1 << 17, 1), (777, 1), (3_000, 2), (1, 64)] {
            // A row group per inode: for the small namespaces only.
            if rows == 1 && ns.stats().inodes > 300 {
                continue;
            }
            for threads in [1, 2] {
                let o = ExportOptions {
                    threads,
                    row_group_rows: rows,
                    row_groups_per_file: per_file,
                    ..ExportOptions::default()
                };
                for dataset in [false, true] {
                    let name = |k: &str| {
                        let p = dir.path().join(k);
                        let _ = std::fs::remove_dir_all(&p);
                        let _ = std::fs::remove_file(&p);
                        if dataset {
                            std::fs::create_dir(&p).unwrap();
                        }
                        p
                    };
                    let (want, got) = (name("want"), name("got"));
                    let ws = export_to_path(&full, &o, &want).unwrap();
                    let gs = export_streamed_to_path(&src, &o, &got)
                        .unwrap()
                        .unwrap_or_else(|_| panic!("{what}: not streamed"));
                    assert_eq!(gs, ws, "{what}, {rows} rows a group, {threads} threads");
                    let files = |p: &Path| -> Vec<(std::ffi::OsString, Vec<u8>)> {
                        if !dataset {
                            return vec![(Default::default(), std::fs::read(p).unwrap())];
                        }
                        let mut v: Vec<_> = std::fs::read_dir(p)
                            .unwrap()
                            .map(|e| {
                                let e = e.unwrap();
                                (e.file_name(), std::fs::read(e.path()).unwrap())
                            })
                            .collect();
                        v.sort();
                        v
                    };
                    assert!(
                        files(&got) == files(&want),
                        "{what}, {rows} rows a group, {threads} threads, dataset {dataset}: bytes differ"
                    );
                }
            }
        }
    }
}

/// Images of the list: generated with 1, 10,001 and 200,000
/// inodes, and every real Hadoop image in the test data (one of 210,367
/// inodes), and one edited to hold snapshots, converted to nsimage (the
/// snapshots carried), whole and in small sub-sections.
fn converted_and_generated() -> Vec<(String, Vec<u8>)> {
    let split = WriteOptions {
        sub_section_bytes: 16 << 10,
        ..WriteOptions::default()
    };
    let mut out = vec![(
        "1 inode".to_string(),
        common::image(&Namespace::new(NsInfo::default()), &split),
    )];
    // As Hadoop stores them, lists in Hadoop's order: XML streams.
    let mut img = Vec::new();
    nsimage_writer::hdfs::write_hdfs_image(
        &names_past_ascii(),
        &mut img,
        &nsimage_writer::hdfs::HdfsWriteOptions::default(),
    )
    .unwrap();
    out.push(("names past ASCII, hdfs".to_string(), img));
    for inodes in [10_001, 200_000] {
        let ns = generate(GenSpec { inodes, seed: 7 });
        assert_eq!(ns.stats().inodes, inodes);
        out.push((format!("{inodes} inodes"), common::image(&ns, &split)));
        // As a Hadoop fsimage: in sub-sections (plain, and compressed in
        // pieces small enough to stream), and plain without.
        use nsimage_writer::hdfs::{write_hdfs_image, HdfsCodec, HdfsWriteOptions};
        for (how, sub_sections, codec) in [
            ("hdfs, sub-sections", true, HdfsCodec::None),
            ("hdfs, sub-sections, zlib", true, HdfsCodec::Zlib),
            ("hdfs, whole", false, HdfsCodec::None),
        ] {
            let o = HdfsWriteOptions {
                sub_sections,
                inode_threshold: 0,
                codec,
                ..HdfsWriteOptions::default()
            };
            let mut img = Vec::new();
            write_hdfs_image(&ns, &mut img, &o).unwrap();
            out.push((format!("{inodes} inodes, {how}"), img));
        }
    }
    // The largest generated image, as nsimage only (its Hadoop
    // forms read as the 200,000-inode ones do, five times over).
    let ns = generate(GenSpec {
        inodes: 1_000_000,
        seed: 7,
    });
    out.push((
        "1M inodes".to_string(),
        common::image(&ns, &WriteOptions::default()),
    ));
    drop(ns);
    let root = crate::hdfs_common::data();
    let mut real = Vec::new();
    for d in std::fs::read_dir(&root).unwrap() {
        let d = d.unwrap().path();
        if d.is_dir() {
            for f in std::fs::read_dir(&d).unwrap() {
                let f = f.unwrap().path();
                if !f.to_string_lossy().ends_with(".md5") {
                    real.push(f);
                }
            }
        }
    }
    real.sort();
    assert!(real.len() >= 9, "the real Hadoop images: {}", real.len());
    // The real image the snapshot tests edit to hold snapshots, diffs and
    // references.
    let dir = tempfile::tempdir().unwrap();
    let rich = dir.path().join("with snapshots");
    std::fs::write(&rich, crate::hdfs::snapshots::rich_image()).unwrap();
    real.push(rich);
    for f in real {
        let loaded = load(&f, &LoadOptions::default()).unwrap();
        let name = f.strip_prefix(&root).unwrap_or(&f).display().to_string();
        // The Hadoop file itself (one with snapshots is loaded whole).
        out.push((format!("{name}, hdfs"), std::fs::read(&f).unwrap()));
        for (how, opts) in [("whole", WriteOptions::default()), ("split", split.clone())] {
            let mut img = Vec::new();
            nsimage_writer::write_image_with_carry(
                &loaded.namespace,
                &mut img,
                &opts,
                loaded.carry(),
            )
            .unwrap();
            out.push((format!("{name}, {how}"), img));
        }
    }
    out
}

/// Every streamed command writes what the whole load writes, byte for
/// byte, at 1 and 2 threads, on the images: the generated ones
/// and every real Hadoop image converted to nsimage (snapshots included).
#[test]
fn real_and_generated_images_stream_as_they_load() {
    use nsimage_export::{export_streamed_to_path, export_to_path, ExportOptions};
    use nsimage_viewer::du::{du, DuOptions};
    use nsimage_viewer::find::{find_each, write_found, FindOptions};
    use nsimage_viewer::owners::{usage_by, Key};
    use nsimage_viewer::paths::ImagePath;
    use nsimage_viewer::streamed;
    let dir = tempfile::tempdir().unwrap();
    let mut snapshots = false;
    for (what, bytes) in converted_and_generated() {
        let img = dir.path().join("img.nsi");
        std::fs::write(&img, bytes).unwrap();
        let loaded = load(&img, &LoadOptions::default()).unwrap();
        snapshots |= loaded.carry().is_some_and(|c| !c.snapshots.is_empty());
        let hdfs_snapshots = loaded.hdfs.as_ref().is_some_and(|h| h.has_snapshots());
        let full = loaded.namespace;
        let root = ImagePath::parse("/").unwrap();
        let open = || {
            if nsimage_loader::hdfs::is_hdfs_file(&img).unwrap() {
                Streamable::Hdfs(Box::new(
                    nsimage_loader::hdfs::HdfsSource::open(
                        &img,
                        nsimage_loader::hdfs::Md5Policy::Check,
                    )
                    .unwrap(),
                ))
            } else {
                Streamable::Image(ImageSource::open(&img).unwrap())
            }
        };
        if hdfs_snapshots {
            let o = DumpOptions {
                format: DumpFormat::Delimited,
                ..DumpOptions::default()
            };
            let r = dump_streamed(&open(), &o, &mut Vec::new(), Path::new("got")).unwrap();
            assert!(
                r.is_err(),
                "{what}: a Hadoop image with snapshots is loaded whole"
            );
            continue;
        }
        for threads in [1, 2] {
            let src = open();
            for (format, header) in [
                (DumpFormat::Delimited, true),
                (DumpFormat::Jsonl, false),
                (DumpFormat::Xml, false),
            ] {
                let o = DumpOptions {
                    format,
                    header,
                    threads,
                    ..DumpOptions::default()
                };
                let (mut want, mut got) = (Vec::new(), Vec::new());
                dump(&full, &o, &mut want, Path::new("want")).unwrap();
                if dump_streamed(&src, &o, &mut got, Path::new("got"))
                    .unwrap()
                    .is_err()
                {
                    let hdfs = matches!(src, Streamable::Hdfs(_));
                    assert!(
                        format == DumpFormat::Xml && !hdfs && high_names(&full),
                        "{what}: dump {format:?} not streamed"
                    );
                    continue;
                }
                assert!(got == want, "{what}: dump {format:?}, {threads} threads");
            }
            for rows in [1 << 17, 777] {
                let o = ExportOptions {
                    threads,
                    row_group_rows: rows,
                    ..ExportOptions::default()
                };
                let (want, got) = (dir.path().join("want.pq"), dir.path().join("got.pq"));
                export_to_path(&full, &o, &want).unwrap();
                export_streamed_to_path(&src, &o, &got)
                    .unwrap()
                    .unwrap_or_else(|_| panic!("{what}: export not streamed"));
                assert!(
                    std::fs::read(&got).unwrap() == std::fs::read(&want).unwrap(),
                    "{what}: export, {rows} rows a group, {threads} threads"
                );
            }
            let o = DuOptions {
                depth: 2,
                ..DuOptions::default()
            };
            let tree = full.root().children().next().is_some();
            match streamed::du::du_streamed(&src, &root, &o, threads).unwrap() {
                Ok(g) => assert_eq!(g, du(&full, &root, &o).unwrap(), "{what}: du"),
                Err(f) => assert!(!tree, "{what}: du not streamed: {f:?}"),
            }
            match streamed::owners::usage_by_streamed(&src, &root, Key::Owner, Some(4096), threads)
                .unwrap()
            {
                Ok(g) => assert_eq!(
                    g,
                    usage_by(&full, &root, Key::Owner, Some(4096)).unwrap(),
                    "{what}"
                ),
                Err(f) => assert!(!tree, "{what}: du --by not streamed: {f:?}"),
            }
            let f = FindOptions::default();
            let mut got = Vec::new();
            let r = streamed::find::find_streamed(
                &src,
                &root,
                &f,
                nsimage_viewer::find::FindFormat::Lines,
                threads,
                &mut got,
                Path::new("got"),
            )
            .unwrap();
            let mut want: Vec<Vec<u8>> = Vec::new();
            find_each(&full, &root, &f, |m| {
                let mut line = Vec::new();
                write_found(m, nsimage_viewer::find::FindFormat::Lines, &mut line).unwrap();
                want.push(line);
                Ok::<(), nsimage_viewer::ViewError>(())
            })
            .unwrap();
            match r {
                Ok(_) => {
                    let mut got: Vec<&[u8]> = got.split_inclusive(|&b| b == b'\n').collect();
                    got.sort();
                    want.sort();
                    assert!(got == want, "{what}: find, {threads} threads");
                }
                Err(f) => assert!(!tree, "{what}: find not streamed: {f:?}"),
            }
            let got = distribution_streamed(&src, threads, 2 << 20, 128 << 30)
                .unwrap()
                .unwrap_or_else(|_| panic!("{what}: distribution not streamed"));
            assert_eq!(
                got,
                distribution(&full, 2 << 20, 128 << 30).unwrap(),
                "{what}"
            );
        }
    }
    assert!(snapshots, "no image with snapshots");
}
