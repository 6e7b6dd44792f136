//! The WebHDFS read operations over a loaded namespace, each answered as
//! the JSON document WebHDFS sends (field names as Hadoop's `JsonUtil`
//! writes them), or a [`RemoteError`].

use crate::error::{echo, RemoteError};
use crate::params::values;
use crate::perm::{Gate, Who};
use crate::request::Parsed;
use nsimage_namespace::{Attrs, Inode, InodeKind, Namespace};
use nsimage_viewer::du::{du, DuOptions};
use nsimage_viewer::stat::{stat, StatInfo};
use nsimage_viewer::walk::{length, lossy, resolve};
use nsimage_viewer::ViewError;
use serde_json::{json, Value};

/// Entries per LISTSTATUS_BATCH page (HDFS's `dfs.ls.limit` default).
pub const BATCH_SIZE: usize = 1000;

/// A read operation's handler (its row's in the op table): the JSON
/// document answering `req` from `ns`, for `gate`'s caller, whose check
/// the row names was made before it on the same namespace (a handler
/// checks only what the answer itself filters, such as the xattrs the
/// caller may see).
pub type ReadFn = fn(&Namespace, &Parsed, &Gate) -> Result<Value, RemoteError>;

/// GETFILESTATUS.
pub fn get_file_status(ns: &Namespace, req: &Parsed, _: &Gate) -> Result<Value, RemoteError> {
    let inode = find(ns, req)?;
    Ok(json!({ "FileStatus": file_status(&inode, "") }))
}

/// LISTXATTRS: the names of the xattrs the caller may see.
pub fn list_xattrs(ns: &Namespace, req: &Parsed, gate: &Gate) -> Result<Value, RemoteError> {
    let info = stat_of(ns, req)?;
    let names: Vec<String> = info
        .xattrs
        .iter()
        .filter(|x| gate.xattr_visible(x.namespace, &x.name))
        .map(|x| xattr_name(&info, x))
        .collect();
    // WebHDFS sends the names as a JSON string holding a JSON array.
    let inner = serde_json::to_string(&names).unwrap_or_else(|_| "[]".to_string());
    Ok(json!({ "XAttrNames": inner }))
}

/// GETHOMEDIRECTORY: `/user/<caller>`.
pub fn home_directory(_: &Namespace, _: &Parsed, gate: &Gate) -> Result<Value, RemoteError> {
    Ok(json!({ "Path": format!("/user/{}", gate.caller.user) }))
}

/// The inode at the request's path as the audit log shows it after a
/// write: `owner:group:rwxr-xr-x` (`None` when there is none).
pub fn owner_group_mode(ns: &Namespace, req: &Parsed) -> Option<String> {
    let inode = find(ns, req).ok()?;
    let mode = nsimage_viewer::text::permission_string(inode.kind(), inode.mode());
    Some(format!(
        "{}:{}:{}",
        lossy(inode.user()),
        lossy(inode.group()),
        mode.get(1..).unwrap_or_default()
    ))
}

/// GETTRASHROOT: `/user/<caller>/.Trash`, HDFS's answer outside an
/// encryption zone (an image records none).
pub fn trash_root(_: &Namespace, _: &Parsed, gate: &Gate) -> Result<Value, RemoteError> {
    Ok(json!({ "Path": format!("/user/{}/.Trash", gate.caller.user) }))
}

/// The answer of an op that neither server serves, when it is a read:
/// both keep the namespace only (no file data, checksums or block
/// locations, no tokens, snapshots' diffs or listings, storage or erasure
/// coding policies).
pub fn not_served(op: &str) -> RemoteError {
    RemoteError::unsupported(format!(
        "op={} is not served: this server keeps the namespace's metadata only (no file data, \
         block locations, tokens, snapshot listings or storage policies)",
        echo(op)
    ))
}

/// A read's path under HDFS's `/.reserved`, resolved as HDFS resolves it:
/// `/.reserved/.inodes/<id>` is inode `id` (its path, then whatever
/// follows the id), whose answer and checks are then those of that path.
/// `None` for a path outside `/.reserved`.
///
/// # Errors
/// 404 FileNotFoundException for any other path under `/.reserved` (which
/// names no inode), an id that is not a decimal number, or one no live
/// inode has; 400 when the inode's path is not UTF-8 (no WebHDFS path can
/// name it).
pub fn resolve_reserved(ns: &Namespace, req: &Parsed) -> Result<Option<Parsed>, RemoteError> {
    if !values::is_reserved(&req.path) {
        return Ok(None);
    }
    let given = echo(req.path.given());
    let Some((id, rest)) = values::inode_path(&req.path) else {
        return Err(RemoteError::not_found(format!(
            "File does not exist: {given} (under /.reserved only /.reserved/.inodes/<inode id> names an inode)"
        )));
    };
    let id = std::str::from_utf8(id)
        .ok()
        .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|t| t.parse::<u64>().ok())
        .ok_or_else(|| RemoteError::not_found(format!("Invalid inode path: {given}")))?;
    let mut path = ns.path_of(id).ok_or_else(|| {
        RemoteError::not_found(format!("File for the inode path does not exist: {given}"))
    })?;
    for c in rest {
        if path != b"/" {
            path.push(b'/');
        }
        path.extend_from_slice(c);
    }
    let text = String::from_utf8(path).map_err(|_| {
        RemoteError::bad_argument(format!(
            "{given}: the inode's path is not UTF-8, which no WebHDFS path can name"
        ))
    })?;
    let path = nsimage_viewer::paths::ImagePath::parse(&text)
        .map_err(|e| RemoteError::bad_argument(format!("{given}: {e}")))?;
    Ok(Some(Parsed {
        path,
        params: req.params.clone(),
    }))
}

/// The read-only server's refusal of a write (any PUT, POST or DELETE,
/// or a write `op` sent with GET): 403.
pub fn write_refused(what: &str) -> RemoteError {
    RemoteError::read_only(format!(
        "{}: this WebHDFS server is read-only (it serves a namespace image)",
        echo(what)
    ))
}

fn view_error(e: ViewError) -> RemoteError {
    match e {
        ViewError::NoSuchPath { path, why } => RemoteError::not_found(match why {
            Some(w) => format!("File does not exist: {path} ({w})"),
            None => format!("File does not exist: {path}"),
        }),
        ViewError::BadPath { .. } | ViewError::BadArgument { .. } => {
            RemoteError::bad_argument(e.to_string())
        }
        other => RemoteError::internal(other.to_string()),
    }
}

/// LISTSTATUS's check ([`Who::List`]): READ_EXECUTE on a directory,
/// traverse to a file; made again before each chunk of a listing streamed
/// from the writable server.
pub fn listing_check(ns: &Namespace, req: &Parsed, gate: &Gate) -> Result<(), RemoteError> {
    gate.check_who(ns, req.path.components(), Who::List, [])
}

fn find<'a>(ns: &'a Namespace, req: &Parsed) -> Result<Inode<'a>, RemoteError> {
    resolve(ns, &req.path).map_err(view_error)
}

fn stat_of(ns: &Namespace, req: &Parsed) -> Result<StatInfo, RemoteError> {
    stat(ns, &req.path).map_err(view_error)
}

fn kind_word(kind: InodeKind) -> &'static str {
    match kind {
        InodeKind::Directory => "DIRECTORY",
        InodeKind::Symlink => "SYMLINK",
        _ => "FILE",
    }
}

/// Permission as WebHDFS writes it: octal without leading zeros, the
/// sticky bit included (`"755"`, `"1777"`).
fn permission(mode: u16) -> String {
    format!("{:o}", mode & 0o1777)
}

/// One `FileStatus` object, serialized straight from the inode (no JSON
/// tree built): a wide listing writes hundreds of thousands of them. Its
/// keys are in the sorted order WebHDFS answers have always had here (a
/// `serde_json::Map` sorts them), `aclBit` and `symlink` only when set.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileStatus<'a> {
    access_time: u64,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    acl_bit: bool,
    block_size: u64,
    children_num: usize,
    file_id: u64,
    group: std::borrow::Cow<'a, str>,
    length: u64,
    modification_time: u64,
    owner: std::borrow::Cow<'a, str>,
    path_suffix: &'a str,
    permission: String,
    replication: u16,
    storage_policy: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    symlink: Option<std::borrow::Cow<'a, str>>,
    #[serde(rename = "type")]
    kind: &'static str,
}

/// The `FileStatus` of `inode`, with `suffix` as its `pathSuffix`.
pub fn file_status<'a>(inode: &Inode<'a>, suffix: &'a str) -> FileStatus<'a> {
    let (mut atime, mut block_size, mut replication, mut policy) = (0u64, 0u64, 0u16, 0u8);
    if let Attrs::File(f) = inode.attrs() {
        atime = f.atime;
        block_size = f.preferred_block_size;
        replication = f.replication;
        policy = f.storage_policy;
    }
    let children = match inode.kind() {
        InodeKind::Directory => inode.child_slots().len(),
        _ => 0,
    };
    FileStatus {
        access_time: atime,
        acl_bit: inode.extra().is_some_and(|x| !x.acl.is_empty()),
        block_size,
        children_num: children,
        file_id: inode.id(),
        group: lossy(inode.group()),
        length: length(inode),
        modification_time: inode.mtime(),
        owner: lossy(inode.user()),
        path_suffix: suffix,
        permission: permission(inode.mode()),
        replication,
        storage_policy: policy,
        symlink: inode.symlink_target().map(lossy),
        kind: kind_word(inode.kind()),
    }
}

/// Bytes of JSON a streamed listing writes at a time (a chunk ends after
/// the entry that reaches it).
pub const LISTING_CHUNK_BYTES: usize = 64 * 1024;

/// What a LISTSTATUS answers: a directory's listing, written in chunks by
/// [`Listing::next_chunk`], or one document (the status of a file, or an
/// error).
#[derive(Debug)]
pub enum ListStart {
    /// A directory: stream its children.
    Directory(Listing),
    /// The whole answer.
    Whole(Value),
}

/// A directory's LISTSTATUS being written: the document's bytes are
/// exactly those of the whole JSON value (`{"FileStatuses":{"FileStatus":
/// [...]}}`), made a chunk at a time so that a wide directory never sits
/// in memory as one document.
#[derive(Debug)]
pub struct Listing {
    dir: nsimage_namespace::Slot,
    next: usize,
    written: usize,
    done: bool,
}

/// Starts a LISTSTATUS of `req`'s path (its check made).
pub fn list_status_start(ns: &Namespace, req: &Parsed) -> Result<ListStart, RemoteError> {
    find(ns, req).map(|inode| {
        if inode.kind() == InodeKind::Directory {
            ListStart::Directory(Listing {
                dir: inode.slot(),
                next: 0,
                written: 0,
                done: false,
            })
        } else {
            ListStart::Whole(json!({ "FileStatuses": { "FileStatus": [file_status(&inode, "")] } }))
        }
    })
}

impl Listing {
    /// The next chunk of the document (about [`LISTING_CHUNK_BYTES`]), or
    /// `None` once it is all written. `ns` is the namespace the listing
    /// was started on.
    pub fn next_chunk(&mut self, ns: &Namespace) -> Option<Vec<u8>> {
        if self.done {
            return None;
        }
        let mut out = Vec::with_capacity(LISTING_CHUNK_BYTES + 4096);
        if self.next == 0 {
            out.extend_from_slice(br#"{"FileStatuses":{"FileStatus":["#);
        }
        // Resumed with the child iterator's own `nth`, which steps over
        // whole chunks of an edited list (and indexes a flat one), so a
        // chunk costs its own entries, not every entry before it.
        let mut children = ns.at(self.dir).map(|d| d.child_slots().iter());
        let mut resume = Some(self.next);
        while out.len() < LISTING_CHUNK_BYTES {
            let slot = children.as_mut().and_then(|c| match resume.take() {
                Some(n) => c.nth(n),
                None => c.next(),
            });
            let Some(slot) = slot else {
                out.extend_from_slice(b"]}}");
                self.done = true;
                break;
            };
            if let Some(c) = ns.at(slot) {
                if self.written > 0 {
                    out.push(b',');
                }
                self.written += 1;
                // A FileStatus (strings and integers) serialises to memory
                // without failing.
                let name = lossy(c.name());
                let _ = serde_json::to_writer(&mut out, &file_status(&c, &name));
            }
            self.next += 1;
        }
        Some(out)
    }
}

/// LISTSTATUS_BATCH: a page of [`BATCH_SIZE`] entries after `startafter`.
pub fn list_status_batch(ns: &Namespace, req: &Parsed, _: &Gate) -> Result<Value, RemoteError> {
    let inode = find(ns, req)?;
    let (page, remaining): (Vec<Value>, usize) = if inode.kind() == InodeKind::Directory {
        let slots = inode.child_slots();
        let start = match req.param("startafter").filter(|s| !s.is_empty()) {
            None => 0,
            Some(after) => {
                let name_of = |s| ns.at(s).map(|i| i.name()).unwrap_or_default();
                slots.partition_point(|s| name_of(s) <= after.as_bytes())
            }
        };
        let end = start.saturating_add(BATCH_SIZE).min(slots.len());
        let page = slots
            .iter()
            .skip(start)
            .take(end.saturating_sub(start))
            .filter_map(|s| ns.at(s))
            .map(|c| json!(file_status(&c, &lossy(c.name()))))
            .collect();
        (page, slots.len().saturating_sub(end))
    } else {
        (vec![json!(file_status(&inode, ""))], 0)
    };
    Ok(json!({
        "DirectoryListing": {
            "partialListing": { "FileStatuses": { "FileStatus": page } },
            "remainingEntries": remaining,
        }
    }))
}

/// GETCONTENTSUMMARY.
pub fn content_summary(ns: &Namespace, req: &Parsed, _: &Gate) -> Result<Value, RemoteError> {
    let opts = DuOptions {
        depth: 0,
        ..DuOptions::default()
    };
    let report = du(ns, &req.path, &opts).map_err(view_error)?;
    let row = report
        .total()
        .ok_or_else(|| RemoteError::internal("du gave no total"))?;
    let u = &row.usage;
    Ok(json!({
        "ContentSummary": {
            "directoryCount": u.directories,
            // HDFS counts symlinks among the files of a content summary.
            "fileCount": u.files.saturating_add(u.symlinks),
            "length": u.bytes,
            "quota": row.ns_quota.unwrap_or(-1),
            "spaceConsumed": u.space_consumed,
            "spaceQuota": row.ds_quota.unwrap_or(-1),
            "ecPolicy": "",
            "typeQuota": {},
        }
    }))
}

/// GETACLSTATUS.
pub fn acl_status(ns: &Namespace, req: &Parsed, _: &Gate) -> Result<Value, RemoteError> {
    let info = stat_of(ns, req)?;
    let entries: Vec<String> = info.acl.iter().map(|a| a.text()).collect();
    Ok(json!({
        "AclStatus": {
            "entries": entries,
            "group": lossy(&info.group),
            "owner": lossy(&info.owner),
            "permission": permission(info.mode),
            "stickyBit": info.mode & 0o1000 != 0,
        }
    }))
}

fn xattr_name(_info: &StatInfo, x: &nsimage_viewer::stat::XAttrStat) -> String {
    format!("{}.{}", x.namespace, lossy(&x.name))
}

/// GETXATTRS: the named attributes (their namespaces and READ on the
/// inode checked first, [`Who::ReadXattrs`]); without names, every
/// attribute the caller may see.
pub fn get_xattrs(ns: &Namespace, req: &Parsed, gate: &Gate) -> Result<Value, RemoteError> {
    let asked: Vec<&str> = req.params_named("xattr.name").collect();
    let info = stat_of(ns, req)?;
    let encoding = req.param("encoding").unwrap_or("HEX");
    // Checked even when there is nothing to encode.
    crate::xattrs::encode_value(b"", encoding)?;
    let mut out = Vec::new();
    for x in &info.xattrs {
        if !gate.xattr_visible(x.namespace, &x.name) {
            continue;
        }
        let name = xattr_name(&info, x);
        if asked.is_empty() || asked.iter().any(|a| *a == name) {
            out.push(
                json!({ "name": name, "value": crate::xattrs::encode_value(&x.value, encoding)? }),
            );
        }
    }
    if !asked.is_empty() && out.len() < asked.len() {
        return Err(RemoteError::io(
            "At least one of the attributes provided was not found.",
        ));
    }
    Ok(json!({ "XAttrs": out }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_as_webhdfs_writes_them() {
        assert_eq!(permission(0o1777), "1777");
        assert_eq!(permission(0o755), "755");
    }

    /// A `FileStatus` is written with its keys in sorted order, as the JSON
    /// map it replaced wrote them (serde_json's map sorts its keys), so
    /// answers stay byte for byte what they were: for a directory, a file
    /// with blocks and an ACL (`aclBit`) and a symlink (`symlink`).
    #[test]
    fn file_status_keys_come_out_sorted_as_before() {
        use nsimage_namespace::{Block, FileSpec, NsInfo, PermSpec};
        let mut ns = Namespace::new(NsInfo::default());
        let p = PermSpec {
            user: b"hdfs",
            group: b"super\"group",
            mode: 0o1755,
        };
        let spec = FileSpec {
            replication: 3,
            preferred_block_size: 128 << 20,
            storage_policy: 7,
        };
        ns.mkdirs(b"/d", &p, 5).unwrap();
        let f = ns.create(b"/d/f", &p, &spec, 6).unwrap();
        ns.add_block(
            f,
            Block {
                id: 1 << 30,
                generation_stamp: 1001,
                length: 42,
            },
        )
        .unwrap();
        ns.set_acl(f, &[(b"etl", 0, false, 5), (b"", 2, false, 7)])
            .unwrap();
        ns.symlink(b"/d/l", b"/d/f", &p, 7).unwrap();
        for (path, name, has) in [
            (&b"/d"[..], "d", ""),
            (b"/d/f", "f", "\"aclBit\":true"),
            (b"/d/l", "l", "\"symlink\":\"/d/f\""),
        ] {
            let inode = ns.inode(ns.resolve(path).unwrap()).unwrap();
            let direct = serde_json::to_string(&file_status(&inode, name)).unwrap();
            let through_map = serde_json::to_value(file_status(&inode, name))
                .unwrap()
                .to_string();
            assert_eq!(direct, through_map);
            assert!(direct.contains(has), "{direct}");
        }
    }
}
