//! An HDFS image's namespace rebuilt through nsimage's public mutation
//! API (`mkdir_in`, `create_in`, `add_block`, the setters), from the
//! records the emulation decodes: a way to check the XML dump's text for
//! Hadoop-derived namespaces without the loader's HDFS reader. Inodes are
//! created in id order with their image ids (each created after setting
//! `last_inode_id` to the id before it), so this covers images where every
//! inode's parent has a smaller id (true of images without renames into
//! newer directories, all the shared ones among them).

use super::{load_dirs, load_inodes, load_strings, summary, Table};
use nsimage_namespace::{Block, FileSpec, Namespace, NsInfo, PermSpec, XAttrNs, ROOT_ID};
use std::collections::HashMap;

fn perm_of(strings: &super::Strings, perm: u64) -> Result<(String, String, u16), String> {
    let user = ((perm >> 40) & 0xff_ffff) as u32;
    let group = ((perm >> 16) & 0xff_ffff) as u32;
    let u = strings
        .get(Table::User, user)?
        .ok_or("user id not in the table")?;
    let g = strings
        .get(Table::Group, group)?
        .ok_or("group id not in the table")?;
    Ok((u.to_string(), g.to_string(), (perm & 0o1777) as u16))
}

fn xattr_ns(n: u32) -> Result<XAttrNs, String> {
    Ok(match n {
        0 => XAttrNs::User,
        1 => XAttrNs::Trusted,
        2 => XAttrNs::Security,
        3 => XAttrNs::System,
        4 => XAttrNs::Raw,
        n => return Err(format!("xattr namespace {n}")),
    })
}

/// The namespace of the HDFS image `file`, built through the API.
pub fn namespace_of(file: &[u8]) -> Result<Namespace, String> {
    let sum = summary(file)?;
    let strings = load_strings(file, &sum)?;
    let (header, mut inodes) = load_inodes(file, &sum)?;
    let mut parent_of: HashMap<u64, u64> = HashMap::new();
    for e in load_dirs(file, &sum)? {
        if !e.ref_children.is_empty() {
            return Err("refChildren".into());
        }
        for &c in &e.children {
            parent_of.insert(c, e.parent());
        }
    }
    inodes.sort_by_key(|p| p.id);
    let mut ns = Namespace::new(NsInfo::default());
    let e = |x: nsimage_namespace::NsError| x.to_string();
    let mut max_block = 0u64;
    let mut max_gs = 0u64;
    // Creation first (each creation touches its parent's mtime), times after.
    for p in &inodes {
        let (u, g, mode);
        let id = p.id;
        if id == ROOT_ID {
            let d = p.directory.as_ref().ok_or("the root is not a directory")?;
            (u, g, mode) = perm_of(&strings, d.permission())?;
            ns.set_owner(id, Some(u.as_bytes()), Some(g.as_bytes()))
                .map_err(e)?;
            ns.set_mode(id, mode).map_err(e)?;
        } else {
            let parent = *parent_of
                .get(&id)
                .ok_or(format!("inode {id} has no parent"))?;
            if parent >= id {
                return Err(format!("inode {id} is under a newer directory"));
            }
            ns.info_mut().last_inode_id = id - 1;
            let name = p.name();
            let got = if let Some(d) = &p.directory {
                (u, g, mode) = perm_of(&strings, d.permission())?;
                let ps = PermSpec {
                    user: u.as_bytes(),
                    group: g.as_bytes(),
                    mode,
                };
                ns.mkdir_in(parent, name, &ps, 0).map_err(e)?
            } else if let Some(f) = &p.file {
                (u, g, mode) = perm_of(&strings, f.permission())?;
                let ps = PermSpec {
                    user: u.as_bytes(),
                    group: g.as_bytes(),
                    mode,
                };
                let spec = FileSpec {
                    replication: u16::try_from(f.replication()).map_err(|x| x.to_string())?,
                    preferred_block_size: f.preferred_block_size(),
                    storage_policy: u8::try_from(f.storage_policy_id())
                        .map_err(|x| x.to_string())?,
                };
                ns.create_in(parent, name, &ps, &spec, 0).map_err(e)?
            } else if let Some(s) = &p.symlink {
                (u, g, mode) = perm_of(&strings, s.permission())?;
                let ps = PermSpec {
                    user: u.as_bytes(),
                    group: g.as_bytes(),
                    mode,
                };
                ns.symlink_in(parent, name, s.target(), &ps, 0).map_err(e)?
            } else {
                return Err(format!("inode {id} has no body"));
            };
            if got != id {
                return Err(format!("inode {id} was created as {got}"));
            }
        }
    }
    for p in &inodes {
        let id = p.id;
        let (mtime, atime, acl, xattrs) = if let Some(d) = &p.directory {
            ns.set_quota(id, d.ns_quota() as i64, d.ds_quota() as i64)
                .map_err(e)?;
            (
                d.modification_time(),
                None,
                d.acl.as_ref(),
                d.x_attrs.as_ref(),
            )
        } else if let Some(f) = &p.file {
            for b in &f.blocks {
                ns.info_mut().last_block_id = b.block_id.wrapping_sub(1);
                let blk = Block {
                    id: b.block_id,
                    generation_stamp: b.gen_stamp,
                    length: b.num_bytes(),
                };
                ns.add_block(id, blk).map_err(e)?;
                max_block = max_block.max(b.block_id);
                max_gs = max_gs.max(b.gen_stamp);
            }
            if let Some(uc) = &f.file_uc {
                let c = (uc.client_name().as_bytes(), uc.client_machine().as_bytes());
                ns.set_under_construction(id, Some(c)).map_err(e)?;
            }
            (
                f.modification_time(),
                Some(f.access_time()),
                f.acl.as_ref(),
                f.x_attrs.as_ref(),
            )
        } else if let Some(s) = &p.symlink {
            (s.modification_time(), None, None, None)
        } else {
            continue;
        };
        if let Some(x) = xattrs {
            for a in &x.x_attrs {
                let v = a.name;
                let nsn = ((v >> 30) & 3) | (((v >> 5) & 1) << 2);
                let name = strings
                    .get(Table::XAttr, (v >> 6) & 0xff_ffff)?
                    .ok_or("xattr name not in the table")?;
                ns.set_xattr(id, xattr_ns(nsn)?, name.as_bytes(), a.value())
                    .map_err(e)?;
            }
        }
        if let Some(a) = acl {
            let mut names = Vec::new();
            for &v in &a.entries {
                let ty = (v >> 3) & 3;
                let nid = (v >> 6) & 0xff_ffff;
                let name = match ty {
                    0 => strings.get(Table::User, nid)?,
                    1 => strings.get(Table::Group, nid)?,
                    _ => None,
                };
                names.push((name.unwrap_or("").as_bytes().to_vec(), v));
            }
            let entries: Vec<(&[u8], u8, bool, u8)> = names
                .iter()
                .map(|(n, v)| {
                    (
                        n.as_slice(),
                        ((v >> 3) & 3) as u8,
                        (v >> 5) & 1 == 1,
                        (v & 7) as u8,
                    )
                })
                .collect();
            ns.set_acl(id, &entries).map_err(e)?;
        }
        ns.set_times(id, Some(mtime), atime).map_err(e)?;
    }
    let info = ns.info_mut();
    info.last_inode_id = header.last_inode_id();
    info.last_block_id = info.last_block_id.max(max_block);
    info.generation_stamp = info.generation_stamp.max(max_gs);
    Ok(ns)
}
