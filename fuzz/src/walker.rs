//! The walker target: any bytes as an `Inode` record and as a `DirEntry`
//! record, through the loader's zero-copy walker and through prost, and as
//! a `NameRun` record through its decoder.
//!
//! The property (differential): whatever the walker accepts, prost decodes
//! too, to the same fields (`decode::loaded_from_pb` turns prost's message
//! into the loader's record with the same range checks). The converse is not
//! asserted here: prost skips unknown groups (wire types 3 and 4) that the
//! walker refuses (issue 7, item 8; the image target checks that the read
//! paths agree).

use nsimage_format::pb;
use nsimage_loader::{decode::loaded_from_pb, record};
use nsimage_namespace::Block;
use prost::Message;

/// Panics if the walker accepts `rec` as an inode and prost disagrees.
pub fn check_inode(rec: &[u8]) {
    let mut scratch = record::InodeScratch::default();
    let Ok(by_walker) = record::inode(rec, &mut scratch) else {
        return;
    };
    let msg = match pb::Inode::decode(rec) {
        Ok(m) => m,
        Err(e) => panic!("the walker accepts an inode that prost refuses ({e}): {by_walker:?}"),
    };
    let mut blocks: Vec<Block> = Vec::new();
    match loaded_from_pb(&msg, &mut blocks) {
        Ok(by_prost) => assert_eq!(by_walker, by_prost, "walker and prost disagree"),
        Err(e) => {
            panic!("the walker accepts an inode that prost's path refuses ({e}): {by_walker:?}")
        }
    }
}

/// Panics if the walker accepts `rec` as a directory entry and prost
/// disagrees, or if the lazy walk (the load's) and the eager one (the
/// viewer's) disagree on it.
pub fn check_dir_entry(rec: &[u8]) {
    let mut children = Vec::new();
    let eager = record::dir_entry(rec, &mut children);
    match record::dir_entry_lazy(rec) {
        Ok((parent, kids)) => {
            assert_eq!(
                eager,
                Ok(parent),
                "the lazy walk accepts what the eager one refuses"
            );
            assert_eq!(
                kids.collect::<Vec<u64>>(),
                children,
                "the lazy walk's children differ"
            );
        }
        Err(e) => assert_eq!(
            eager,
            Err(e),
            "the lazy walk refuses what the eager one accepts"
        ),
    }
    let Ok(parent) = eager else {
        return;
    };
    match pb::DirEntry::decode(rec) {
        Ok(m) => {
            assert_eq!(parent, m.parent, "parent differs");
            assert_eq!(children, m.children, "children differ");
        }
        Err(e) => panic!("the walker accepts a directory entry that prost refuses ({e})"),
    }
}

/// Panics if the NAME_RUNS decoder accepts `rec` and prost refuses it, or
/// its entries do not survive being written again by the writer's encoder.
pub fn check_name_run(rec: &[u8]) {
    use nsimage_format::name_runs::{decode_run, put_run, RunEntry};
    let mut entries = Vec::new();
    if decode_run(rec, &mut entries).is_err() {
        assert!(entries.is_empty(), "a refused run left entries");
        return;
    }
    if let Err(e) = pb::NameRun::decode(rec) {
        panic!("the decoder accepts a name run that prost refuses ({e})");
    }
    let ty = |t: i32| match t {
        1 => pb::InodeType::File,
        2 => pb::InodeType::Directory,
        _ => pb::InodeType::Symlink,
    };
    let list: Vec<RunEntry<'_>> = entries
        .iter()
        .map(|e| (e.name.as_slice(), e.child, ty(e.ty)))
        .collect();
    let mut framed = Vec::new();
    put_run(&mut framed, entries[0].parent, &list);
    let (_, n) = nsimage_format::wire::read_varint(&framed).expect("a framed run");
    let mut again = Vec::new();
    decode_run(&framed[n..], &mut again).expect("a written run decodes");
    assert_eq!(again, entries, "a run written again decodes differently");
}

/// The fuzz target's body.
pub fn run(data: &[u8]) {
    check_inode(data);
    check_dir_entry(data);
    check_name_run(data);
}
