//! Differential test of the zero-copy record walker against prost: for
//! random records, both decode to the same loader record, field by field,
//! or both refuse it.

use nsimage_format::pb;
use nsimage_loader::{decode::loaded_from_pb, record};
use nsimage_namespace::Block;
use proptest::prelude::*;
use prost::Message;

fn block() -> impl Strategy<Value = pb::Block> {
    (any::<u64>(), any::<u64>(), any::<u64>()).prop_map(|(id, generation_stamp, length)| {
        pb::Block {
            id,
            generation_stamp,
            length,
        }
    })
}

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
}

fn file() -> impl Strategy<Value = pb::FileAttrs> {
    (
        any::<u64>(),
        prop_oneof![0u32..4, any::<u32>()],
        any::<u64>(),
        proptest::collection::vec(block(), 0..5),
        prop_oneof![0u32..16, any::<u32>()],
        proptest::option::of((bytes(10), bytes(10))),
    )
        .prop_map(
            |(atime, replication, preferred_block_size, blocks, storage_policy, uc)| {
                pb::FileAttrs {
                    atime,
                    replication,
                    preferred_block_size,
                    blocks,
                    storage_policy,
                    under_construction: uc.map(|(client_name, client_machine)| {
                        pb::UnderConstruction {
                            client_name,
                            client_machine,
                        }
                    }),
                }
            },
        )
}

fn inode() -> impl Strategy<Value = pb::Inode> {
    (
        any::<u64>(),
        prop_oneof![1i32..=3, -2i32..6],
        bytes(40),
        any::<u64>(),
        any::<u64>(),
        proptest::option::of(file()),
        proptest::option::of((prop_oneof![-1i64..5, any::<i64>()], -1i64..1 << 40)),
        proptest::option::of(bytes(20)),
        proptest::collection::vec((-1i32..6, any::<u32>(), bytes(8)), 0..3),
        proptest::collection::vec((any::<u32>(), -1i32..5, any::<bool>(), 0u32..9), 0..3),
    )
        .prop_map(
            |(id, ty, name, permission, mtime, file, dir, link, xattrs, acl)| pb::Inode {
                id,
                r#type: ty,
                name,
                permission,
                mtime,
                file,
                directory: dir
                    .map(|(ns_quota, ds_quota)| pb::DirectoryAttrs { ns_quota, ds_quota }),
                symlink: link.map(|target| pb::SymlinkAttrs { target }),
                xattrs: xattrs
                    .into_iter()
                    .map(|(namespace, name, value)| pb::XAttr {
                        namespace,
                        name,
                        value,
                    })
                    .collect(),
                acl: acl
                    .into_iter()
                    .map(|(name, r#type, default_scope, permission)| pb::AclEntry {
                        name,
                        r#type,
                        default_scope,
                        permission,
                    })
                    .collect(),
            },
        )
}

/// Walker and prost give the same record from `bytes`, or both refuse it.
fn agree(bytes: &[u8]) -> Result<(), TestCaseError> {
    let decoded = pb::Inode::decode(bytes).unwrap();
    let mut blocks: Vec<Block> = Vec::new();
    let by_prost = loaded_from_pb(&decoded, &mut blocks);
    let mut scratch = record::InodeScratch::default();
    let by_walker = record::inode(bytes, &mut scratch);
    match (&by_prost, &by_walker) {
        (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
        (Err(_), Err(_)) => {}
        _ => prop_assert!(false, "prost {:?} vs walker {:?}", by_prost, by_walker),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn walker_and_prost_agree_on_inodes(msg in inode()) {
        agree(&msg.encode_to_vec())?;
    }

    #[test]
    fn repeated_fields_merge_like_prost(a in inode(), b in inode()) {
        // Two encodings back to back are one message with merged fields.
        let mut bytes = a.encode_to_vec();
        bytes.extend(b.encode_to_vec());
        agree(&bytes)?;
    }

    #[test]
    fn walker_and_prost_agree_on_dir_entries(parent in any::<u64>(), children in proptest::collection::vec(any::<u64>(), 0..50)) {
        let msg = pb::DirEntry { parent, children: children.clone() };
        let bytes = msg.encode_to_vec();
        let mut got = Vec::new();
        prop_assert_eq!(record::dir_entry(&bytes, &mut got).unwrap(), parent);
        prop_assert_eq!(&got, &pb::DirEntry::decode(&bytes[..]).unwrap().children);
        // Unpacked encoding of the same list.
        let mut unpacked = Vec::new();
        prost::encoding::uint64::encode(1, &parent, &mut unpacked);
        for c in &children {
            prost::encoding::uint64::encode(2, c, &mut unpacked);
        }
        prop_assert_eq!(record::dir_entry(&unpacked, &mut got).unwrap(), parent);
        prop_assert_eq!(&got, &children);
        // The lazy walk reads the same children from both encodings, and
        // from one that splits them between a packed field and unpacked
        // ones, with the parent last and an unknown field between.
        for rec in [&bytes, &unpacked] {
            let (p, kids) = record::dir_entry_lazy(rec).unwrap();
            prop_assert_eq!(p, parent);
            prop_assert_eq!(kids.collect::<Vec<u64>>(), children.clone());
        }
        let half = children.len() / 2;
        let mut mixed = pb::DirEntry { parent: 0, children: children[..half].to_vec() }.encode_to_vec();
        prost::encoding::string::encode(9, &"x".to_string(), &mut mixed);
        for c in &children[half..] {
            prost::encoding::uint64::encode(2, c, &mut mixed);
        }
        prost::encoding::uint64::encode(1, &parent, &mut mixed);
        let (p, kids) = record::dir_entry_lazy(&mixed).unwrap();
        prop_assert_eq!(p, parent);
        prop_assert_eq!(kids.collect::<Vec<u64>>(), children);
    }

    #[test]
    fn walker_never_panics_on_garbage(bytes in bytes(200)) {
        let mut scratch = record::InodeScratch::default();
        let _ = record::inode(&bytes, &mut scratch);
        let mut got = Vec::new();
        let eager = record::dir_entry(&bytes, &mut got);
        // The lazy walk refuses what the eager one refuses, and reads the
        // same children from what both accept.
        match record::dir_entry_lazy(&bytes) {
            Ok((p, kids)) => {
                prop_assert_eq!(eager, Ok(p));
                prop_assert_eq!(kids.collect::<Vec<u64>>(), got);
            }
            Err(e) => prop_assert_eq!(eager, Err(e)),
        }
    }
}
