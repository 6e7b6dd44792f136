//! The streamed generator (version 2): its image is the one the writer
//! writes for the namespace it loads into (byte for byte, whatever the
//! layout options), its digest is the loaded one's, the same spec gives the
//! same bytes on any number of threads, and its shape is version 1's.

use crate::common;

use common::{image, load_bytes, tiny};
use nsimage_format::codec::Compression;
use nsimage_testkit::generate::{generate, GenSpec};
use nsimage_testkit::streamed::{write_generated, Generated};
use nsimage_writer::{AtRestOptions, WriteOptions};

fn streamed(spec: GenSpec, opts: &WriteOptions, threads: usize) -> (Vec<u8>, Generated) {
    let mut out = Vec::new();
    let g = write_generated(spec, &mut out, opts, threads).expect("writing to a Vec");
    assert_eq!(g.summary.bytes, out.len() as u64);
    (out, g)
}

#[test]
fn streamed_image_is_the_writers_image_of_what_it_loads_into() {
    let layouts = [
        WriteOptions::default(),
        tiny(4096),
        tiny(1),
        WriteOptions {
            legacy_name_index: true,
            ..tiny(300)
        },
        WriteOptions {
            at_rest: AtRestOptions {
                compression: Compression::parse("zstd:3").expect("a codec"),
                key: None,
            },
            ..WriteOptions::default()
        },
    ];
    for (inodes, seed) in [
        (1, 1),
        (2, 1),
        (57, 3),
        (9_999, 1),
        (10_000, 2),
        (40_000, 7),
    ] {
        let spec = GenSpec { inodes, seed };
        for (l, opts) in layouts.iter().enumerate() {
            let (bytes, g) = streamed(spec, opts, 2);
            let ns = load_bytes(&bytes)
                .unwrap_or_else(|e| panic!("{inodes} inodes, seed {seed}, layout {l}: {e}"));
            assert_eq!(ns.digest(), g.digest, "{inodes} inodes, layout {l}");
            assert_eq!(ns.stats(), g.stats, "{inodes} inodes, layout {l}");
            assert_eq!(g.stats.inodes, inodes, "every inode asked for");
            assert!(
                image(&ns, opts) == bytes,
                "{inodes} inodes, seed {seed}, layout {l}: the writer writes other bytes"
            );
        }
    }
}

#[test]
fn streamed_image_depends_on_the_spec_alone() {
    // Several pieces of parallel work (a piece covers about 65,536
    // entries), so that block ids, directory ids and the order of
    // directories cross pieces.
    let spec = GenSpec {
        inodes: 150_000,
        seed: 5,
    };
    let opts = tiny(8192);
    let (one, a) = streamed(spec, &opts, 1);
    let (three, b) = streamed(spec, &opts, 3);
    assert!(one == three, "1 and 3 threads write the same bytes");
    assert_eq!(a.digest, b.digest);
    let (other, c) = streamed(GenSpec { seed: 6, ..spec }, &opts, 2);
    assert!(other != one && c.digest != a.digest, "the seed matters");
}

#[test]
fn streamed_namespace_has_version_1s_shape() {
    let spec = GenSpec {
        inodes: 200_000,
        seed: 1,
    };
    let (bytes, g) = streamed(spec, &WriteOptions::default(), 2);
    let v2 = load_bytes(&bytes).expect("loads");
    // Several pieces, written as the writer writes what they load into.
    assert_eq!(v2.digest(), g.digest);
    assert!(
        image(&v2, &WriteOptions::default()) == bytes,
        "the writer's bytes"
    );
    let v1 = generate(spec);
    let (s1, s2) = (v1.stats(), g.stats);
    let near = |a: u64, b: u64, tol: f64| (a as f64 - b as f64).abs() <= tol * a as f64;
    assert_eq!(s2.directories, s1.directories);
    assert!(near(s1.files, s2.files, 0.001), "{s1:?} {s2:?}");
    assert!(near(s1.symlinks, s2.symlinks, 0.01), "{s1:?} {s2:?}");
    assert!(near(s1.blocks, s2.blocks, 0.01), "{s1:?} {s2:?}");
    assert!(near(s1.bytes, s2.bytes, 0.05), "{s1:?} {s2:?}");
    // The same spread of files: the widest directories hold the same
    // shares, and names take about as many bytes.
    let widest = |ns: &nsimage_namespace::Namespace| {
        let mut w: Vec<usize> = ns.iter().map(|n| n.child_slots().len()).collect();
        w.sort_unstable_by(|a, b| b.cmp(a));
        w.truncate(3);
        w
    };
    let (w1, w2) = (widest(&v1), widest(&v2));
    for (a, b) in w1.iter().zip(&w2) {
        assert!(near(*a as u64, *b as u64, 0.02), "{w1:?} {w2:?}");
    }
    let names =
        |ns: &nsimage_namespace::Namespace| ns.iter().map(|n| n.name().len() as u64).sum::<u64>();
    assert!(
        near(names(&v1), names(&v2), 0.1),
        "{} {}",
        names(&v1),
        names(&v2)
    );
}
