//! JSON lines: one object per inode, in id order, with its full path and
//! everything the image holds for it, in the one shape every command
//! prints an inode in (docs/inode.schema.json; `stat --json` has the same
//! names and types).
//!
//! Keys: `path`, `id`, `parent_id` (absent for the root), `name`, `type`
//! (`file`, `directory`, `symlink`), `owner`, `group`, `permission`
//! (`{"octal": "0755", "string": "drwxr-xr-x"}`), `modification_time`
//! (ms since the epoch) and `modification_time_utc`; files add
//! `replication`, `access_time`, `access_time_utc`, `preferred_block_size`,
//! `storage_policy` (`{"id", "name"}`), `length` (sum of block lengths) and
//! `blocks` (`[{"id", "generation_stamp", "length"}]`); directories
//! `quota` (`{"namespace", "space"}`, null where none is set); symlinks
//! `symlink_target`. Where the inode has any: `xattrs` (`[{"namespace",
//! "name", "value", "encoding"}]`, the value as text or base64), `acl`
//! (`[{"scope", "type", "name", "permission", "text"}]`) and
//! `under_construction` (`{"client_name", "client_machine"}`). A byte
//! string that is not UTF-8 (path, name, owner, target, ...) is written
//! with U+FFFD in place of its bad bytes, plus a `<key>_base64` field with
//! its exact bytes.

use super::escape::{base64, json_bytes_field, json_str, num};
use super::formatter::Formatter;
use super::row::Row;
use super::scratch::Scratch;
use crate::stat::{storage_policy_name, xattr_ns_name};
use crate::text::{acl_kind_name, push_permission, push_utc_iso8601};
use crate::walk::kind_name;
use nsimage_namespace::Attrs;

pub(crate) struct Jsonl;

/// `,"key":` then a time in ms and `,"key_utc":"..."`.
fn time(key: &str, ms: u64, out: &mut Vec<u8>) {
    out.extend_from_slice(b",\"");
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\":");
    num(ms, out);
    out.extend_from_slice(b",\"");
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"_utc\":\"");
    push_utc_iso8601(ms, out);
    out.push(b'"');
}

/// A quota as the shape holds it: the number, or null where none is set.
fn quota(q: i64, out: &mut Vec<u8>) {
    if q >= 0 {
        num(q, out);
    } else {
        out.extend_from_slice(b"null");
    }
}

impl Formatter for Jsonl {
    fn streams(&self) -> bool {
        true
    }

    fn inode(&self, _pass: usize, inode: &Row<'_>, scratch: &mut Scratch, out: &mut Vec<u8>) {
        out.push(b'{');
        let mut path = Vec::with_capacity(128);
        inode.push_path(scratch, &mut path);
        json_bytes_field("path", &path, out);
        out.extend_from_slice(b",\"id\":");
        num(inode.id(), out);
        if let Some(p) = inode.parent() {
            out.extend_from_slice(b",\"parent_id\":");
            num(p, out);
        }
        out.push(b',');
        json_bytes_field("name", inode.name(), out);
        out.extend_from_slice(b",\"type\":\"");
        out.extend_from_slice(kind_name(inode.kind()).as_bytes());
        out.extend_from_slice(b"\",");
        json_bytes_field("owner", inode.user(), out);
        out.push(b',');
        json_bytes_field("group", inode.group(), out);
        let mode = inode.mode();
        out.extend_from_slice(b",\"permission\":{\"octal\":\"");
        // Four octal digits (more for a mode above 0o7777).
        let mut octal = [b'0'; 6];
        let mut n = u32::from(mode);
        let mut i = octal.len();
        while n > 0 || octal.len() - i < 4 {
            i -= 1;
            octal[i] = b'0' + (n & 7) as u8;
            n >>= 3;
        }
        out.extend_from_slice(&octal[i..]);
        out.extend_from_slice(b"\",\"string\":\"");
        push_permission(inode.kind(), mode, out);
        out.extend_from_slice(b"\"}");
        time("modification_time", inode.mtime(), out);
        match inode.attrs() {
            Attrs::File(f) => {
                out.extend_from_slice(b",\"replication\":");
                num(f.replication, out);
                time("access_time", f.atime, out);
                out.extend_from_slice(b",\"preferred_block_size\":");
                num(f.preferred_block_size, out);
                out.extend_from_slice(b",\"storage_policy\":{\"id\":");
                num(f.storage_policy, out);
                out.extend_from_slice(b",\"name\":\"");
                out.extend_from_slice(storage_policy_name(f.storage_policy).as_bytes());
                out.extend_from_slice(b"\"},\"length\":");
                num(f.length(), out);
                out.extend_from_slice(b",\"blocks\":[");
                for (i, b) in f.blocks.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(b"{\"id\":");
                    num(b.id, out);
                    out.extend_from_slice(b",\"generation_stamp\":");
                    num(b.generation_stamp, out);
                    out.extend_from_slice(b",\"length\":");
                    num(b.length, out);
                    out.push(b'}');
                }
                out.push(b']');
            }
            Attrs::Directory { ns_quota, ds_quota } => {
                out.extend_from_slice(b",\"quota\":{\"namespace\":");
                quota(ns_quota, out);
                out.extend_from_slice(b",\"space\":");
                quota(ds_quota, out);
                out.push(b'}');
            }
            Attrs::Symlink { target } => {
                out.push(b',');
                json_bytes_field("symlink_target", target, out);
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
                    out.extend_from_slice(b"{\"namespace\":\"");
                    out.extend_from_slice(xattr_ns_name(x.ns).as_bytes());
                    out.extend_from_slice(b"\",");
                    json_bytes_field("name", strings.get(x.name).unwrap_or_default(), out);
                    // As `stat` shows a value: printable text, else base64.
                    match crate::text::printable(&x.value) {
                        Some(_) => {
                            out.extend_from_slice(b",\"value\":");
                            json_str(&x.value, out);
                            out.extend_from_slice(b",\"encoding\":\"text\"");
                        }
                        _ => {
                            out.extend_from_slice(b",\"value\":\"");
                            base64(&x.value, out);
                            out.extend_from_slice(b"\",\"encoding\":\"base64\"");
                        }
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
                    let kind = acl_kind_name(e.kind);
                    let scope = if e.default_scope { "default" } else { "access" };
                    out.extend_from_slice(
                        format!("{{\"scope\":\"{scope}\",\"type\":\"{kind}\",").as_bytes(),
                    );
                    let name = if e.name == 0 {
                        &[][..]
                    } else {
                        strings.get(e.name).unwrap_or_default()
                    };
                    json_bytes_field("name", name, out);
                    out.extend_from_slice(b",\"permission\":");
                    num(e.perm, out);
                    out.extend_from_slice(b",\"text\":");
                    json_str(&super::names::acl_text(strings, e), out);
                    out.push(b'}');
                }
                out.push(b']');
            }
            if let Some(uc) = &extra.under_construction {
                out.extend_from_slice(b",\"under_construction\":{");
                json_bytes_field("client_name", &uc.client_name, out);
                out.push(b',');
                json_bytes_field("client_machine", &uc.client_machine, out);
                out.push(b'}');
            }
        }
        out.extend_from_slice(b"}\n");
    }
}
