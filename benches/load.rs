//! Criterion benches of the loader's hot path: decoding one INODE
//! sub-section (walker and, for comparison, prost), decoding one INODE_DIR
//! sub-section, and what a load's timeline costs per span.
//!
//! The steps of issue 13, each against what it replaced, over every INODE
//! piece of the fixture (about 30 MB, more than the caches hold):
//! - `inode_section/checksum_then_walker` (a pass of xxh3 over each piece,
//!   then the decoder) against `walker_checking_ahead` (the checksum
//!   computed in 64 KiB blocks just ahead of the decoder);
//! - `inode_section/decode_then_copy` (decode into a batch's own vector,
//!   then copy into the table) against `decode_in_place` (decode straight
//!   into the table's slots), on a fresh table each time;
//! - `timeline/span`: one span kept on a load's timeline (a 5M-inode load
//!   keeps about 1,300), the cost of the timeline every load keeps.

// Offsets of an image this bench wrote itself.
#![allow(clippy::cast_possible_truncation)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use nsimage_format::framing::Records;
use nsimage_format::{pb, Footer, Index, Location, SectionKind, SubSectionInfo};
use nsimage_loader::{decode, table::NodeTable};
use nsimage_namespace::{Block, InodeBatch, Interned, Node};
use nsimage_testkit::generate::{generate, GenSpec};
use nsimage_writer::{write_image, WriteOptions};
use prost::Message;

struct Fixture {
    image: Vec<u8>,
    index: Index,
}

fn fixture() -> Fixture {
    let ns = generate(GenSpec {
        inodes: 300_000,
        seed: 1,
    });
    let mut image = Vec::new();
    write_image(&ns, &mut image, &WriteOptions::default()).unwrap();
    let n = image.len();
    let f = Footer::decode(&image[n - nsimage_format::consts::footer::SIZE..], n as u64).unwrap();
    let s = f.index_offset as usize;
    let index = Index::decode(
        &image[s..s + f.index_length as usize],
        f.index_offset,
        f.index_checksum,
    )
    .unwrap();
    Fixture { image, index }
}

fn piece(fx: &Fixture, kind: SectionKind) -> (SubSectionInfo, Location, &[u8]) {
    let sec = fx.index.section(kind).unwrap();
    let p = sec.sub_sections[1].clone();
    let at = Location::in_section(kind, Some(1), p.offset);
    let bytes = &fx.image[p.offset as usize..(p.offset + p.length) as usize];
    (p, at, bytes)
}

fn benches(c: &mut Criterion) {
    let fx = fixture();
    let tables = Interned::new({
        let sec = fx.index.section(SectionKind::STRING_TABLE).unwrap();
        let p = sec.pieces().remove(0);
        let at = Location::in_section(sec.kind, None, p.offset);
        decode::strings(
            &fx.image[p.offset as usize..(p.offset + p.length) as usize],
            &p,
            &at,
        )
        .unwrap()
    });
    let (p, at, bytes) = piece(&fx, SectionKind::INODE);
    let mut g = c.benchmark_group("inode_sub_section");
    g.throughput(Throughput::Elements(p.records));
    g.bench_function("walker", |b| {
        b.iter(|| decode::inodes(bytes, &p, &at, &tables, 1, Vec::new()).unwrap())
    });
    g.bench_function("prost", |b| {
        b.iter(|| {
            let mut batch = InodeBatch::new(0, p.records as usize, bytes.len());
            let mut blocks: Vec<Block> = Vec::new();
            for r in Records::new(bytes, at.clone()) {
                let (_, body) = r.unwrap();
                let msg = pb::Inode::decode(body).unwrap();
                let node = decode::loaded_from_pb(&msg, &mut blocks).unwrap();
                batch.push(node, &tables).unwrap();
            }
            batch
        })
    });
    g.bench_function("walk_only", |b| {
        let mut scratch = nsimage_loader::record::InodeScratch::default();
        b.iter(|| {
            let mut n = 0u64;
            for r in Records::new(bytes, at.clone()) {
                let (_, body) = r.unwrap();
                n += nsimage_loader::record::inode(body, &mut scratch)
                    .unwrap()
                    .id;
            }
            n
        })
    });
    g.bench_function("checksum", |b| b.iter(|| xxhash_rust::xxh3::xxh3_64(bytes)));
    g.finish();

    // Every INODE piece of the fixture, as a one-thread load decodes them.
    let sec = fx.index.section(SectionKind::INODE).unwrap();
    // Each with its arena chunk, the piece's index (chunk 0, the first
    // piece, starts with the root).
    let inode_pieces: Vec<(SubSectionInfo, Location, &[u8], u32)> = sec
        .pieces()
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let at = Location::in_section(SectionKind::INODE, Some(i), p.offset);
            let bytes = &fx.image[p.offset as usize..(p.offset + p.length) as usize];
            (p, at, bytes, i as u32)
        })
        .collect();
    let counts: Vec<usize> = inode_pieces
        .iter()
        .map(|(p, ..)| p.records as usize)
        .collect();
    let total: usize = counts.iter().sum();
    let mut g = c.benchmark_group("inode_section");
    g.throughput(Throughput::Elements(total as u64));
    g.bench_function("checksum_then_walker", |b| {
        let mut buffer = Vec::new();
        b.iter(|| {
            for (p, at, bytes, chunk) in &inode_pieces {
                assert_eq!(xxhash_rust::xxh3::xxh3_64(bytes), p.checksum);
                let batch =
                    decode::inodes(bytes, p, at, &tables, *chunk, std::mem::take(&mut buffer))
                        .unwrap();
                buffer = batch.into_parts_and_buffer().1;
            }
        })
    });
    g.bench_function("walker_checking_ahead", |b| {
        let mut buffer: Vec<Node> = Vec::new();
        b.iter(|| {
            for (p, at, bytes, chunk) in &inode_pieces {
                buffer.clear();
                let sink = std::mem::take(&mut buffer);
                let batch = decode::inodes_into(bytes, p, at, &tables, *chunk, sink, true).unwrap();
                buffer = batch.into_parts_and_sink().1;
            }
        })
    });
    g.bench_function("decode_then_copy", |b| {
        let mut buffer = Vec::new();
        b.iter(|| {
            let mut table = NodeTable::new(total);
            let ranges = table.ranges(&counts).unwrap();
            for ((p, at, bytes, chunk), r) in inode_pieces.iter().zip(&ranges) {
                let batch =
                    decode::inodes(bytes, p, at, &tables, *chunk, std::mem::take(&mut buffer))
                        .unwrap();
                assert!(r.fill(batch.nodes()));
                buffer = batch.into_parts_and_buffer().1;
            }
            drop(ranges);
            table.finish().unwrap()
        })
    });
    g.bench_function("decode_in_place", |b| {
        b.iter(|| {
            let mut table = NodeTable::new(total);
            let ranges = table.ranges(&counts).unwrap();
            for ((p, at, bytes, chunk), r) in inode_pieces.iter().zip(&ranges) {
                let w = r.writer().unwrap();
                let batch = decode::inodes_into(bytes, p, at, &tables, *chunk, w, false).unwrap();
                assert!(r.commit(batch.into_parts_and_sink().1));
            }
            drop(ranges);
            table.finish().unwrap()
        })
    });
    g.finish();
}

fn timeline(c: &mut Criterion) {
    let mut g = c.benchmark_group("timeline");
    g.throughput(Throughput::Elements(1));
    // A timeline that keeps growing, as a load's does; recreated every
    // million spans so that the bench's memory stays bounded.
    let mut t = nsimage_loader::trace::Timeline::new(false);
    let mut n = 0u32;
    g.bench_function("span", |b| {
        b.iter(|| {
            n += 1;
            if n == 1_000_000 {
                (t, n) = (nsimage_loader::trace::Timeline::new(false), 0);
            }
            t.phase("a span", || ())
        })
    });
    g.finish();
}

criterion_group! {
    name = load;
    config = Criterion::default().sample_size(30);
    targets = benches, timeline
}
criterion_main!(load);
