//! Helpers shared by the integration tests.
#![allow(dead_code)]

use nsimage::format::model::{Block, FileSpec, Namespace, PermSpec};
use nsimage::writer::{write_image, WriteOptions};

pub const P: PermSpec<'static> = PermSpec {
    user: b"hdfs",
    group: b"supergroup",
    mode: 0o755,
};

pub const F: FileSpec = FileSpec {
    replication: 3,
    preferred_block_size: 128 << 20,
    storage_policy: 0,
};

/// Options that cut a sub-section after every `bytes` bytes, whatever the size.
pub fn tiny(bytes: u64) -> WriteOptions {
    WriteOptions {
        sub_section_bytes: bytes,
        sub_section_min_inodes: 0,
        batch_inodes: 7,
    }
}

pub fn image(ns: &Namespace, opts: &WriteOptions) -> Vec<u8> {
    let mut out = Vec::new();
    write_image(ns, &mut out, opts).expect("writing to a Vec");
    out
}

/// A small namespace with every kind of inode and attribute.
pub fn sample() -> Namespace {
    let mut ns = Namespace::default();
    let d = ns.mkdirs(b"/data/2024/01", &P, 10).unwrap();
    for i in 0..40u64 {
        let f = ns
            .create_in(d, format!("part-{i:03}").as_bytes(), &P, &F, 20 + i)
            .unwrap();
        for b in 0..(i % 4) {
            ns.add_block(
                f,
                Block {
                    id: 1000 + i * 4 + b,
                    generation_stamp: 5000 + i,
                    length: 1 + i * b,
                },
            )
            .unwrap();
        }
    }
    let u = ns.mkdirs(b"/user/alice", &P, 30).unwrap();
    ns.symlink(b"/user/alice/latest", b"/data/2024/01", &P, 31)
        .unwrap();
    ns.set_xattr(u, nsimage::format::model::XAttrNs::User, b"team", b"core")
        .unwrap();
    ns.set_acl(u, &[(b"", 0, false, 7), (b"bob", 0, false, 5)])
        .unwrap();
    ns.set_quota(u, 100, 1 << 30).unwrap();
    let f = ns.create(b"/user/alice/open", &P, &F, 40).unwrap();
    ns.set_under_construction(f, Some((b"client-1", b"host-1")))
        .unwrap();
    ns
}

/// Loads an image from bytes through a temporary file.
pub fn load_bytes(bytes: &[u8]) -> Result<Namespace, nsimage::loader::LoadError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("img.nsi");
    std::fs::write(&path, bytes).expect("write image");
    nsimage::loader::load(&path, &Default::default()).map(|l| l.namespace)
}

/// The index of an image held in memory.
pub fn index_of(bytes: &[u8]) -> nsimage::format::Index {
    use nsimage::format::{consts::footer, Footer, Index};
    let f = Footer::decode(&bytes[bytes.len() - footer::SIZE..], bytes.len() as u64).unwrap();
    let s = f.index_offset as usize;
    Index::decode(
        &bytes[s..s + f.index_length as usize],
        f.index_offset,
        f.index_checksum,
    )
    .unwrap()
}

/// Appends `idx` and a matching footer to `body` (header and sections).
pub fn with_index(mut body: Vec<u8>, idx: &nsimage::format::Index) -> Vec<u8> {
    use nsimage::format::{consts::footer, Footer};
    let ib = idx.encode();
    let index_offset = body.len() as u64;
    body.extend_from_slice(&ib);
    let foot = Footer {
        index_offset,
        index_length: ib.len() as u64,
        index_checksum: xxhash_rust::xxh3::xxh3_64(&ib),
        file_length: (body.len() + footer::SIZE) as u64,
    };
    body.extend_from_slice(&foot.encode());
    body
}
