//! `stat`: everything an image holds for one inode.
//!
//! Text, one `field: value` per line (a file shown; a directory has
//! `quota` lines instead of the file's, a symlink a `target`):
//!
//! ```text
//!   path: /user/alice/open
//!   id: 16433
//!   type: file
//!   name: open
//!   parent: /user/alice
//!   permission: 0755 (-rwxr-xr-x)
//!   owner: hdfs
//!   group: supergroup
//!   mtime: 1970-01-01T00:00:00Z (40)
//!   atime: 1970-01-01T00:00:00Z (40)
//!   replication: 3
//!   preferred block size: 134217728 (128.0 MiB)
//!   storage policy: 0 (unspecified)
//!   length: 0
//!   blocks: 0
//!   under construction: client client-1 on host-1
//! ```
//!
//! followed by `block <id> genstamp <gs> length <n>`, `xattr user.team =
//! "core"` (or `base64:...`) and `acl user:bob:r-x` lines. JSON: one
//! document with the same fields (`permission` as `{"octal","string"}`,
//! times in ms with `_utc` twins, `blocks` as `[{"id","generation_stamp",
//! "length"}]`, `xattrs` as `[{"namespace","name","value","encoding"}]`
//! where encoding is `text` or `base64`, `acl` as
//! `[{"scope","type","name","permission","text"}]`, `quota` as
//! `{"namespace","space"}` (null: none), `symlink_target`,
//! `under_construction` as `{"client_name","client_machine"}`), each
//! null where the kind has none.

use crate::error::ViewError;
use crate::paths::ImagePath;
use crate::text::{
    acl_kind_name, escaped, hadoop_size, human_size, permission_string, rwx, size_text, stat_time,
    utc_iso8601,
};
use crate::walk::{kind_name, length, lossy, resolve};
use base64::Engine as _;
use nsimage_namespace::{Attrs, Block, InodeKind, Namespace, XAttrNs};
use serde_json::json;
use std::io::{self, Write};

/// Everything the image holds for one inode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatInfo {
    /// The path as resolved (canonical).
    pub path: Vec<u8>,
    /// Inode id.
    pub id: u64,
    /// File, directory or symlink.
    pub kind: InodeKind,
    /// Name within the parent (empty for the root).
    pub name: Vec<u8>,
    /// The parent's path; `None` for the root.
    pub parent: Option<Vec<u8>>,
    /// Permission bits.
    pub mode: u16,
    /// Owning user.
    pub owner: Vec<u8>,
    /// Owning group.
    pub group: Vec<u8>,
    /// Modification time, ms since the epoch.
    pub mtime: u64,
    /// File attributes, for a file.
    pub file: Option<FileStat>,
    /// Namespace and disk-space quotas of a directory (`None`: no quota).
    pub quota: Option<(Option<i64>, Option<i64>)>,
    /// A symlink's target.
    pub symlink_target: Option<Vec<u8>>,
    /// Extended attributes, sorted by namespace and name.
    pub xattrs: Vec<XAttrStat>,
    /// ACL entries, in the image's order.
    pub acl: Vec<AclStat>,
    /// The client holding the file open, and its machine.
    pub under_construction: Option<(Vec<u8>, Vec<u8>)>,
}

/// A file's own attributes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileStat {
    /// Access time, ms since the epoch.
    pub atime: u64,
    /// Replicas per block.
    pub replication: u16,
    /// Block size new blocks get.
    pub preferred_block_size: u64,
    /// HDFS storage policy id (0: unspecified).
    pub storage_policy: u8,
    /// The blocks in file order.
    pub blocks: Vec<Block>,
    /// Sum of block lengths.
    pub length: u64,
}

/// One extended attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XAttrStat {
    /// Its namespace (`user`, `trusted`, `security`, `system`, `raw`).
    pub namespace: &'static str,
    /// Its name (without the namespace prefix).
    pub name: Vec<u8>,
    /// Its value.
    pub value: Vec<u8>,
}

impl XAttrStat {
    /// The value as shown: `("text", value)` when it is printable UTF-8,
    /// `("base64", encoded)` otherwise.
    pub fn shown_value(&self) -> (&'static str, String) {
        match crate::text::printable(&self.value) {
            Some(s) => ("text", s.to_string()),
            None => (
                "base64",
                base64::engine::general_purpose::STANDARD.encode(&self.value),
            ),
        }
    }
}

/// One ACL entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AclStat {
    /// Part of the default ACL rather than the access ACL.
    pub default_scope: bool,
    /// `user`, `group`, `mask` or `other`.
    pub kind: &'static str,
    /// The named user or group; empty for the unnamed entry.
    pub name: Vec<u8>,
    /// rwx bits.
    pub perm: u8,
}

impl AclStat {
    /// `getfacl`'s form: `default:user:bob:r-x`.
    pub fn text(&self) -> String {
        format!(
            "{}{}:{}:{}",
            if self.default_scope { "default:" } else { "" },
            self.kind,
            lossy(&self.name),
            lossy(&rwx(u32::from(self.perm)))
        )
    }
}

/// The name of an xattr namespace, as HDFS prefixes names with it.
pub fn xattr_ns_name(ns: XAttrNs) -> &'static str {
    match ns {
        XAttrNs::User => "user",
        XAttrNs::Trusted => "trusted",
        XAttrNs::Security => "security",
        XAttrNs::System => "system",
        XAttrNs::Raw => "raw",
    }
}

/// HDFS's name of a block storage policy id (`unspecified` for 0).
pub fn storage_policy_name(id: u8) -> &'static str {
    match id {
        0 => "unspecified",
        1 => "PROVIDED",
        2 => "COLD",
        5 => "WARM",
        7 => "HOT",
        10 => "ONE_SSD",
        12 => "ALL_SSD",
        15 => "LAZY_PERSIST",
        _ => "unknown",
    }
}

/// `stat` of `path`: needs only the path's inodes.
pub fn stat(ns: &Namespace, path: &ImagePath) -> Result<StatInfo, ViewError> {
    let inode = resolve(ns, path)?;
    let canonical = path.canonical();
    let parent = path.components().split_last().map(|(_, up)| {
        let mut p = Vec::new();
        for c in up {
            p.push(b'/');
            p.extend_from_slice(c);
        }
        if p.is_empty() {
            p.push(b'/');
        }
        p
    });
    let string = |id: u32| ns.strings().get(id).unwrap_or_default().to_vec();
    let (mut file, mut quota) = (None, None);
    match inode.attrs() {
        Attrs::File(f) => {
            file = Some(FileStat {
                atime: f.atime,
                replication: f.replication,
                preferred_block_size: f.preferred_block_size,
                storage_policy: f.storage_policy,
                blocks: f.blocks.to_vec(),
                length: length(&inode),
            });
        }
        Attrs::Directory { ns_quota, ds_quota } => {
            let q = |v: i64| (v >= 0).then_some(v);
            quota = Some((q(ns_quota), q(ds_quota)));
        }
        Attrs::Symlink { .. } => {}
    }
    let (mut xattrs, mut acl, mut under_construction) = (Vec::new(), Vec::new(), None);
    if let Some(x) = inode.extra() {
        xattrs = x
            .xattrs
            .iter()
            .map(|a| XAttrStat {
                namespace: xattr_ns_name(a.ns),
                name: string(a.name),
                value: a.value.to_vec(),
            })
            .collect();
        acl = x
            .acl
            .iter()
            .map(|e| AclStat {
                default_scope: e.default_scope,
                kind: acl_kind_name(e.kind),
                name: if e.name == 0 {
                    Vec::new()
                } else {
                    string(e.name)
                },
                perm: e.perm,
            })
            .collect();
        under_construction = x
            .under_construction
            .as_ref()
            .map(|u| (u.client_name.to_vec(), u.client_machine.to_vec()));
    }
    Ok(StatInfo {
        path: canonical,
        id: inode.id(),
        kind: inode.kind(),
        name: inode.name().to_vec(),
        parent,
        mode: inode.mode(),
        owner: inode.user().to_vec(),
        group: inode.group().to_vec(),
        mtime: inode.mtime(),
        file,
        quota,
        symlink_target: inode.symlink_target().map(<[u8]>::to_vec),
        xattrs,
        acl,
        under_construction,
    })
}

/// `s` in `hdfs dfs -stat FORMAT`'s format: `%a` the permission in
/// octal as Hadoop prints it (`755`, `1777`), `%A` symbolically
/// (`rwxr-xr-x`), `%b` the length, `%F` `directory`, `regular file` or
/// `symlink`, `%g` the group, `%n` the name, `%o` the block size, `%r` the
/// replication (0 for a directory, as Hadoop's), `%u` the owner, `%x`/`%y`
/// the access/modification time as `yyyy-MM-dd HH:mm:ss` (UTC), `%X`/`%Y`
/// the same in ms since the epoch. Any other character after `%` is
/// printed as itself (`%%` is `%`), and a trailing `%` is dropped, as
/// Hadoop's shell does.
pub fn hadoop_format(s: &StatInfo, fmt: &str) -> String {
    let mut out = String::new();
    let mut chars = fmt.chars();
    let atime = s.file.as_ref().map_or(0, |f| f.atime);
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(c) = chars.next() else { break };
        match c {
            'a' => {
                let m = u32::from(s.mode);
                let n = (m >> 9 & 1) * 1000 + (m >> 6 & 7) * 100 + (m >> 3 & 7) * 10 + (m & 7);
                out.push_str(&n.to_string());
            }
            'A' => out.push_str(&permission_string(s.kind, s.mode)[1..]),
            'b' => out.push_str(&s.file.as_ref().map_or(0, |f| f.length).to_string()),
            'F' => out.push_str(match s.kind {
                InodeKind::Directory => "directory",
                InodeKind::File => "regular file",
                InodeKind::Symlink => "symlink",
            }),
            'g' => out.push_str(&escaped(&s.group)),
            'n' => out.push_str(&escaped(&s.name)),
            'o' => {
                let b = s.file.as_ref().map_or(0, |f| f.preferred_block_size);
                out.push_str(&b.to_string());
            }
            'r' => out.push_str(&s.file.as_ref().map_or(0, |f| f.replication).to_string()),
            'u' => out.push_str(&escaped(&s.owner)),
            'x' => out.push_str(&stat_time(atime)),
            'X' => out.push_str(&atime.to_string()),
            'y' => out.push_str(&stat_time(s.mtime)),
            'Y' => out.push_str(&s.mtime.to_string()),
            other => out.push(other),
        }
    }
    out
}

/// Writes `s` as `field: value` lines; with `human`, the file's length,
/// its blocks' lengths and the space quota in Hadoop's binary prefixes (`1.5 K`).
pub fn write_text(s: &StatInfo, human: bool, out: &mut impl Write) -> io::Result<()> {
    let time = |ms: u64| format!("{} ({ms})", utc_iso8601(ms));
    writeln!(out, "  path: {}", escaped(&s.path))?;
    writeln!(out, "  id: {}", s.id)?;
    writeln!(out, "  type: {}", kind_name(s.kind))?;
    writeln!(out, "  name: {}", escaped(&s.name))?;
    match &s.parent {
        Some(p) => writeln!(out, "  parent: {}", escaped(p))?,
        None => writeln!(out, "  parent: (none: the root)")?,
    }
    writeln!(
        out,
        "  permission: {:04o} ({})",
        s.mode,
        permission_string(s.kind, s.mode)
    )?;
    writeln!(out, "  owner: {}", escaped(&s.owner))?;
    writeln!(out, "  group: {}", escaped(&s.group))?;
    writeln!(out, "  mtime: {}", time(s.mtime))?;
    if let Some(f) = &s.file {
        writeln!(out, "  atime: {}", time(f.atime))?;
        writeln!(out, "  replication: {}", f.replication)?;
        writeln!(
            out,
            "  preferred block size: {} ({})",
            f.preferred_block_size,
            human_size(f.preferred_block_size)
        )?;
        writeln!(
            out,
            "  storage policy: {} ({})",
            f.storage_policy,
            storage_policy_name(f.storage_policy)
        )?;
        writeln!(out, "  length: {}", size_text(f.length, human))?;
        writeln!(out, "  blocks: {}", f.blocks.len())?;
        for b in &f.blocks {
            writeln!(
                out,
                "    block {} genstamp {} length {}",
                b.id,
                b.generation_stamp,
                size_text(b.length, human)
            )?;
        }
    }
    if let Some((nsq, dsq)) = s.quota {
        let show = |q: Option<i64>| q.map_or_else(|| "none".to_string(), |v| v.to_string());
        writeln!(out, "  namespace quota: {}", show(nsq))?;
        let space = match dsq {
            Some(v) if human => hadoop_size(i128::from(v)),
            q => show(q),
        };
        writeln!(out, "  space quota: {space}")?;
    }
    if let Some(t) = &s.symlink_target {
        writeln!(out, "  target: {}", escaped(t))?;
    }
    if let Some((client, machine)) = &s.under_construction {
        writeln!(
            out,
            "  under construction: client {} on {}",
            escaped(client),
            escaped(machine)
        )?;
    }
    writeln!(out, "  xattrs: {}", s.xattrs.len())?;
    for x in &s.xattrs {
        let (enc, v) = x.shown_value();
        let v = if enc == "text" {
            format!("{v:?}")
        } else {
            format!("base64:{v}")
        };
        writeln!(out, "    xattr {}.{} = {v}", x.namespace, escaped(&x.name))?;
    }
    writeln!(out, "  acl entries: {}", s.acl.len())?;
    for a in &s.acl {
        writeln!(out, "    acl {}", escaped(a.text().as_bytes()))?;
    }
    Ok(())
}

/// The JSON document of `s`.
pub fn to_json(s: &StatInfo) -> serde_json::Value {
    let f = s.file.as_ref();
    json!({
        "path": lossy(&s.path),
        "id": s.id,
        "type": kind_name(s.kind),
        "name": lossy(&s.name),
        "parent": s.parent.as_deref().map(lossy),
        "permission": {
            "octal": format!("{:04o}", s.mode),
            "string": permission_string(s.kind, s.mode),
        },
        "owner": lossy(&s.owner),
        "group": lossy(&s.group),
        "modification_time": s.mtime,
        "modification_time_utc": utc_iso8601(s.mtime),
        "access_time": f.map(|f| f.atime),
        "access_time_utc": f.map(|f| utc_iso8601(f.atime)),
        "replication": f.map(|f| f.replication),
        "preferred_block_size": f.map(|f| f.preferred_block_size),
        "storage_policy": f.map(|f| json!({
            "id": f.storage_policy,
            "name": storage_policy_name(f.storage_policy),
        })),
        "length": f.map_or(0, |f| f.length),
        "blocks": f.map(|f| f.blocks.iter().map(|b| json!({
            "id": b.id,
            "generation_stamp": b.generation_stamp,
            "length": b.length,
        })).collect::<Vec<_>>()),
        "quota": s.quota.map(|(n, d)| json!({"namespace": n, "space": d})),
        "symlink_target": s.symlink_target.as_deref().map(lossy),
        "xattrs": s.xattrs.iter().map(|x| {
            let (enc, v) = x.shown_value();
            json!({
                "namespace": x.namespace,
                "name": lossy(&x.name),
                "value": v,
                "encoding": enc,
            })
        }).collect::<Vec<_>>(),
        "acl": s.acl.iter().map(|a| json!({
            "scope": if a.default_scope { "default" } else { "access" },
            "type": a.kind,
            "name": lossy(&a.name),
            "permission": a.perm,
            "text": a.text(),
        })).collect::<Vec<_>>(),
        "under_construction": s.under_construction.as_ref().map(|(c, m)| json!({
            "client_name": lossy(c),
            "client_machine": lossy(m),
        })),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsimage_namespace::{FileSpec, PermSpec};

    #[test]
    fn formats_as_hdfs_dfs_stat() {
        let mut ns = Namespace::default();
        let p = PermSpec {
            user: b"alice",
            group: b"etl",
            mode: 0o1750,
        };
        ns.mkdirs(b"/d", &p, 86_400_000).unwrap();
        let f = FileSpec {
            replication: 3,
            preferred_block_size: 128 << 20,
            storage_policy: 0,
        };
        let file = PermSpec { mode: 0o640, ..p };
        let id = ns
            .create(b"/d/part-0", &file, &f, 1_600_000_000_123)
            .unwrap();
        ns.set_times(id, None, Some(1_600_000_061_000)).unwrap();
        let at = |path: &str| stat(&ns, &ImagePath::parse(path).unwrap()).unwrap();
        // The example of Hadoop's FileSystemShell documentation.
        let fmt = "type:%F perm:%a %u:%g size:%b mtime:%y atime:%x name:%n";
        assert_eq!(
            hadoop_format(&at("/d/part-0"), fmt),
            "type:regular file perm:640 alice:etl size:0 mtime:2020-09-13 12:26:40 \
             atime:2020-09-13 12:27:41 name:part-0"
        );
        assert_eq!(
            hadoop_format(&at("/d"), "%F %a %A %o %r %Y %X %q %% %"),
            "directory 1750 rwxr-x--T 0 0 1600000000123 0 q % "
        );
        assert_eq!(
            hadoop_format(&at("/d/part-0"), "%o %r %y"),
            "134217728 3 2020-09-13 12:26:40"
        );
    }
}
