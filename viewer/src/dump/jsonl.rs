//! JSON lines: one object per inode, in id order, with its full path and
//! everything the image holds for it.
//!
//! Keys: `id`, `parent` (id; absent for the root), `path`, `name`, `type`
//! (`FILE`, `DIRECTORY`, `SYMLINK`), `user`, `group`, `permission` (four
//! octal digits), `mtime` (milliseconds since the epoch); files add
//! `replication`, `atime`, `preferredBlockSize`, `storagePolicy`, `size`
//! (sum of block lengths) and `blocks` (`id`, `genstamp`, `numBytes`);
//! directories `nsQuota` and `dsQuota` (-1: none); symlinks `target`.
//! Optional: `xattrs` (`ns`, `name`, `value` when UTF-8, else
//! `valueBase64`), `acl` (entries as `[default:]user:name:rwx`) and
//! `underConstruction` (`clientName`, `clientMachine`). A byte string that
//! is not UTF-8 (path, name, target, ...) is written with U+FFFD in place
//! of its bad bytes, plus a `<key>Base64` field with its exact bytes.

use super::escape::{base64, json_bytes_field, json_str, num};
use super::formatter::Formatter;
use super::names::{acl_text, kind_name, xattr_ns_name};
use super::row::Row;
use super::scratch::Scratch;
use nsimage_namespace::Attrs;

pub(crate) struct Jsonl;

impl Formatter for Jsonl {
    fn streams(&self) -> bool {
        true
    }

    fn inode(&self, _pass: usize, inode: &Row<'_>, scratch: &mut Scratch, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"id\":");
        num(inode.id(), out);
        if let Some(p) = inode.parent() {
            out.extend_from_slice(b",\"parent\":");
            num(p, out);
        }
        out.push(b',');
        let mut path = Vec::with_capacity(128);
        inode.push_path(scratch, &mut path);
        json_bytes_field("path", &path, out);
        out.push(b',');
        json_bytes_field("name", inode.name(), out);
        out.extend_from_slice(b",\"type\":\"");
        out.extend_from_slice(kind_name(inode.kind()).as_bytes());
        out.extend_from_slice(b"\",");
        json_bytes_field("user", inode.user(), out);
        out.push(b',');
        json_bytes_field("group", inode.group(), out);
        out.extend_from_slice(format!(",\"permission\":\"{:04o}\"", inode.mode()).as_bytes());
        out.extend_from_slice(b",\"mtime\":");
        num(inode.mtime(), out);
        match inode.attrs() {
            Attrs::File(f) => {
                out.extend_from_slice(b",\"replication\":");
                num(f.replication, out);
                out.extend_from_slice(b",\"atime\":");
                num(f.atime, out);
                out.extend_from_slice(b",\"preferredBlockSize\":");
                num(f.preferred_block_size, out);
                out.extend_from_slice(b",\"storagePolicy\":");
                num(f.storage_policy, out);
                out.extend_from_slice(b",\"size\":");
                num(f.length(), out);
                out.extend_from_slice(b",\"blocks\":[");
                for (i, b) in f.blocks.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(b"{\"id\":");
                    num(b.id, out);
                    out.extend_from_slice(b",\"genstamp\":");
                    num(b.generation_stamp, out);
                    out.extend_from_slice(b",\"numBytes\":");
                    num(b.length, out);
                    out.push(b'}');
                }
                out.push(b']');
            }
            Attrs::Directory { ns_quota, ds_quota } => {
                out.extend_from_slice(b",\"nsQuota\":");
                num(ns_quota, out);
                out.extend_from_slice(b",\"dsQuota\":");
                num(ds_quota, out);
            }
            Attrs::Symlink { target } => {
                out.push(b',');
                json_bytes_field("target", target, out);
            }
        }
        if let Some(extra) = inode.extra() {
            let strings = inode.strings();
            if !extra.xattrs.is_empty() {
                out.extend_from_slice(b",\"xattrs\":[");
                for (i, x) in extra.xattrs.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(b"{\"ns\":\"");
                    out.extend_from_slice(xattr_ns_name(x.ns).as_bytes());
                    out.extend_from_slice(b"\",");
                    json_bytes_field("name", strings.get(x.name).unwrap_or_default(), out);
                    if std::str::from_utf8(&x.value).is_ok() {
                        out.extend_from_slice(b",\"value\":");
                        json_str(&x.value, out);
                    } else {
                        out.extend_from_slice(b",\"valueBase64\":\"");
                        base64(&x.value, out);
                        out.push(b'"');
                    }
                    out.push(b'}');
                }
                out.push(b']');
            }
            if !extra.acl.is_empty() {
                out.extend_from_slice(b",\"acl\":[");
                for (i, e) in extra.acl.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    json_str(&acl_text(strings, e), out);
                }
                out.push(b']');
            }
            if let Some(uc) = &extra.under_construction {
                out.extend_from_slice(b",\"underConstruction\":{");
                json_bytes_field("clientName", &uc.client_name, out);
                out.push(b',');
                json_bytes_field("clientMachine", &uc.client_machine, out);
                out.push(b'}');
            }
        }
        out.extend_from_slice(b"}\n");
    }
}
