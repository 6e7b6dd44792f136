//! Every read path gives the same verdict and the same digest on every
//! input: mmap, bulk and stream reads, serial and on two threads, and
//! `verify`. Inputs are images with every checksum recomputed after the
//! damage, so that only validation can catch it: seeded random byte
//! mutations, and record-level mutations that re-encode records with odd
//! wire features.

use crate::common;

use common::{image, index_of, reseal, rewrite_records, same_verdict, sample, tiny};
use nsimage_format::{pb, SectionKind};
use nsimage_testkit::generate::{generate, GenSpec};
use prost::Message;
use rand::{RngExt, SeedableRng};

fn varint(v: u64) -> Vec<u8> {
    let mut b = Vec::new();
    prost::encoding::encode_varint(v, &mut b);
    b
}

fn field(key: u64, body: &[u8]) -> Vec<u8> {
    let mut b = varint(key);
    b.extend_from_slice(&varint(body.len() as u64));
    b.extend_from_slice(body);
    b
}

#[test]
fn seeded_byte_mutations_get_one_verdict_from_every_path() {
    let bases = [
        image(&sample(), &tiny(40)),
        image(&sample(), &tiny(1 << 20)),
        image(
            &generate(GenSpec {
                inodes: 400,
                seed: 11,
            }),
            &tiny(700),
        ),
    ];
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(20);
    let (mut accepted, mut total) = (0, 0);
    for base in &bases {
        for _ in 0..250 {
            let mut b = base.clone();
            // Mostly inside the sections, where the records are.
            let body_end = index_of(base).sections.last().unwrap().end() as usize;
            for _ in 0..rng.random_range(1..=2) {
                let i = if rng.random_range(0..10) < 9 {
                    rng.random_range(32..body_end)
                } else {
                    rng.random_range(0..b.len())
                };
                match rng.random_range(0..3) {
                    0 => b[i] ^= 1 << rng.random_range(0..8),
                    1 => b[i] = rng.random(),
                    _ => b[i] = [0, 1, 0x7f, 0x80, 0xff][rng.random_range(0..5)],
                }
            }
            reseal(&mut b);
            total += 1;
            if same_verdict(&b, &format!("mutation {total}")).is_some() {
                accepted += 1;
            }
        }
    }
    // Some changes are valid (a time, a length, a mode): both verdicts occur.
    assert!(accepted > 10 && accepted < total, "{accepted} of {total}");
}

/// One record-level mutation: a name and what it does to an `Inode` body.
type InodeMutation = (&'static str, fn(&pb::Inode) -> Vec<u8>, bool);

#[test]
fn record_level_mutations_get_one_verdict_from_every_path() {
    let base = image(&sample(), &tiny(60));
    let digest = same_verdict(&base, "base").expect("the sample loads");
    // (name, bytes appended to every inode record, same digest as the base
    // or refused).
    let appended: &[(&str, Vec<u8>, bool)] = &[
        ("unknown varint field", vec![0x58, 0x01], true),
        ("unknown fixed32 field", vec![0x5d, 1, 2, 3, 4], true),
        (
            "unknown fixed64 field",
            vec![0x59, 1, 2, 3, 4, 5, 6, 7, 8],
            true,
        ),
        ("unknown bytes field", field(11 << 3 | 2, b"xyz"), true),
        ("unknown group", vec![0x5b, 0x58, 0x01, 0x5c], false),
        ("lone group end", vec![0x5c], false),
        ("field number 0", vec![0x00, 0x01], false),
        ("name as fixed32", vec![0x1d, 1, 2, 3, 4], false),
        ("permission as varint", vec![0x20, 0x01], false),
        (
            "field number 2^29",
            {
                let mut b = varint(1 << 32);
                b.push(0);
                b
            },
            false,
        ),
        (
            "acl with bool 2",
            field(10 << 3 | 2, &[0x18, 0x02, 0x20, 0x07]),
            false,
        ),
        (
            "xattr namespace 2^32",
            {
                let mut x = vec![0x08];
                x.extend_from_slice(&varint(1 << 32));
                field(9 << 3 | 2, &x)
            },
            false,
        ),
    ];
    for (what, tail, same) in appended {
        let b = rewrite_records(&base, &[SectionKind::INODE], |_, body| {
            let mut r = body.to_vec();
            r.extend_from_slice(tail);
            r
        });
        let v = same_verdict(&b, what);
        if *same {
            assert_eq!(v, Some(digest), "{what}");
        } else {
            assert_eq!(v, None, "{what} must be refused");
        }
    }
    // Re-encodings through prost of each inode.
    let edits: &[InodeMutation] = &[
        (
            "type 2^32 + type",
            |m| {
                let mut b = m.encode_to_vec();
                b.push(0x10);
                b.extend_from_slice(&varint((1 << 32) + m.r#type as u64));
                b
            },
            false,
        ),
        (
            "mtime given twice, last wins",
            |m| {
                let mut b = m.encode_to_vec();
                b.push(0x28);
                b.extend_from_slice(&varint(m.mtime));
                let mut a = vec![0x28, 0x07];
                a.extend_from_slice(&b);
                a
            },
            true,
        ),
        (
            "overlong varint id",
            |m| {
                let mut b = vec![0x08];
                let mut v = varint(m.id);
                let last = v.len() - 1;
                v[last] |= 0x80;
                v.push(0);
                b.extend_from_slice(&v);
                let mut rest = m.clone();
                rest.id = 0;
                b.extend_from_slice(&rest.encode_to_vec());
                b
            },
            true,
        ),
        (
            "attribute group split in two",
            |m| {
                let mut b = m.clone();
                let mut extra = Vec::new();
                if let Some(f) = &mut b.file {
                    let mut half = pb::FileAttrs::default();
                    std::mem::swap(&mut half.blocks, &mut f.blocks);
                    extra = field(6 << 3 | 2, &half.encode_to_vec());
                }
                let mut out = b.encode_to_vec();
                out.extend_from_slice(&extra);
                out
            },
            true,
        ),
        (
            "replication 2^32 + 3 in a second file group",
            |m| {
                let mut b = m.encode_to_vec();
                if m.file.is_some() {
                    let mut g = vec![0x10];
                    g.extend_from_slice(&varint((1 << 32) + 3));
                    b.extend_from_slice(&field(6 << 3 | 2, &g));
                } else {
                    b.extend_from_slice(&[0x5b, 0x5c]);
                }
                b
            },
            false,
        ),
    ];
    for (what, f, same) in edits {
        let b = rewrite_records(&base, &[SectionKind::INODE], |_, body| {
            f(&pb::Inode::decode(body).unwrap())
        });
        let v = same_verdict(&b, what);
        if *same {
            assert_eq!(v, Some(digest), "{what}");
        } else {
            assert_eq!(v, None, "{what} must be refused");
        }
    }
    // Children packed, unpacked and mixed: all the same namespace.
    for mode in 0..3 {
        let b = rewrite_records(&base, &[SectionKind::INODE_DIR], |_, body| {
            let m = pb::DirEntry::decode(body).unwrap();
            let mut out = vec![0x08];
            out.extend_from_slice(&varint(m.parent));
            let (packed, loose) = m.children.split_at(match mode {
                0 => m.children.len(),
                1 => 0,
                _ => m.children.len() / 2,
            });
            let mut p = Vec::new();
            for &c in packed {
                p.extend_from_slice(&varint(c));
            }
            if !p.is_empty() {
                out.extend_from_slice(&field(2 << 3 | 2, &p));
            }
            for &c in loose {
                out.push(0x10);
                out.extend_from_slice(&varint(c));
            }
            out
        });
        assert_eq!(same_verdict(&b, "children encodings"), Some(digest));
    }
    // One record at a time: each appended feature on each single record.
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(4);
    for _ in 0..40 {
        let (what, tail, _) = &appended[rng.random_range(0..appended.len())];
        let target = rng.random_range(0..48usize);
        let mut i = 0;
        let b = rewrite_records(&base, &[SectionKind::INODE], |_, body| {
            let mut r = body.to_vec();
            if i == target {
                r.extend_from_slice(tail);
            }
            i += 1;
            r
        });
        same_verdict(&b, what);
    }
}
