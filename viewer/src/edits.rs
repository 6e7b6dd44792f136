//! `journal dump`: a store's journal ops as Hadoop's edits viewer (`hdfs
//! oev`) prints an edit log, in its XML or as JSON lines.
//!
//! Each op is an [`EditRecord`]: Hadoop's opcode (`OP_MKDIR`, `OP_ADD`,
//! `OP_RENAME_OLD`, ...), the txid and the op's fields under oev's element
//! names, with the paths, owners and times the op carries. A journal op
//! names inodes by id; given the namespace as it was just before the op
//! (the caller replays the journal from a checkpoint), [`record`] writes
//! them as paths (`PATH`, `SRC`, `DST`); without it, as ids (`INODEID`,
//! `PARENT_INODEID`, `DST_PARENT_INODEID`).
//!
//! XML, as oev writes it (two spaces a level; a byte value in hex, `0x`
//! first):
//!
//! ```text
//! <?xml version="1.0" encoding="UTF-8"?>
//! <EDITS>
//!   <EDITS_VERSION>-66</EDITS_VERSION>
//!   <RECORD>
//!     <OPCODE>OP_MKDIR</OPCODE>
//!     <DATA>
//!       <TXID>7</TXID>
//!       <LENGTH>0</LENGTH>
//!       <INODEID>16392</INODEID>
//!       <PATH>/user/alice</PATH>
//!       <TIMESTAMP>1700000000000</TIMESTAMP>
//!       <PERMISSION_STATUS>
//!         <USERNAME>alice</USERNAME>
//!         <GROUPNAME>staff</GROUPNAME>
//!         <MODE>493</MODE>
//!       </PERMISSION_STATUS>
//!     </DATA>
//!   </RECORD>
//! </EDITS>
//! ```
//!
//! Where it differs from an edit log Hadoop wrote: no `OP_START_LOG_SEGMENT`
//! or `OP_END_LOG_SEGMENT` records and no RPC ids (the journal has none),
//! `OP_DELETE` carries `RECURSIVE`, and an op the namespace cannot name
//! has ids in place of paths; `hdfs oev -p binary` does not read it back.
//!
//! JSON lines, one object an op (keys in alphabetical order): `{"opcode",
//! "txid",...}`, each field under its element's name in lower case (`"path"`, `"permission_status":
//! {"username","groupname","mode"}`), a repeated element (an ACL's
//! `ENTRY`) as an array, names as text (bytes that are not UTF-8 replaced),
//! byte values as `0x` hex.

use crate::dump::escape::xml_text;
use crate::text::{acl_kind_name, rwx};
use nsimage_format::pb::journal_op::Op;
use nsimage_format::pb::{self, JournalOp};
use nsimage_namespace::Namespace;
use serde_json::{Map, Value as Json};
use std::io::{self, Write};

/// The layout version the XML's `EDITS_VERSION` names: the one `convert
/// --to hdfs` writes by default, so that readers of oev XML take it.
pub const EDITS_VERSION: i32 = nsimage_format::hdfs::HADOOP_3_3_LAYOUT_VERSION;

/// One field's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A number (an id, a time in ms, a mode in decimal as oev prints it).
    Num(u64),
    /// A flag.
    Bool(bool),
    /// Text (a path, a name), as the op holds it.
    Text(Vec<u8>),
    /// Fields of their own (`PERMISSION_STATUS`, `BLOCK`, `XATTR`,
    /// `ENTRY`).
    Group(Vec<(&'static str, Value)>),
}

/// One op as oev shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EditRecord {
    /// The op's transaction id.
    pub txid: u64,
    /// Hadoop's opcode name.
    pub opcode: &'static str,
    /// The fields after `TXID`, in oev's order.
    pub fields: Vec<(&'static str, Value)>,
}

/// The path of inode `id` in `ns`, if it is there.
fn path(ns: Option<&Namespace>, id: u64) -> Option<Vec<u8>> {
    ns.and_then(|ns| ns.path_of(id))
}

/// The path of child `name` of directory `parent` in `ns`.
fn child_path(ns: Option<&Namespace>, parent: u64, name: &[u8]) -> Option<Vec<u8>> {
    path(ns, parent).map(|p| crate::walk::join(&p, name))
}

/// `key` as the path of `id` where `ns` knows it, else `INODEID`.
fn by_id(ns: Option<&Namespace>, key: &'static str, id: u64) -> (&'static str, Value) {
    match path(ns, id) {
        Some(p) => (key, Value::Text(p)),
        None => ("INODEID", Value::Num(id)),
    }
}

fn perm(user: &[u8], group: &[u8], mode: u32) -> (&'static str, Value) {
    (
        "PERMISSION_STATUS",
        Value::Group(vec![
            ("USERNAME", Value::Text(user.to_vec())),
            ("GROUPNAME", Value::Text(group.to_vec())),
            ("MODE", Value::Num(u64::from(mode))),
        ]),
    )
}

/// An xattr namespace as oev names it (`USER`, ...; `UNKNOWN` for a value
/// the format does not define).
fn xattr_namespace(v: i32) -> &'static str {
    nsimage_format::wire::convert::xattr_ns(v).map_or("UNKNOWN", crate::dump::names::xattr_ns_name)
}

/// An ACL entry's type as oev names it (`USER`, ...; `UNKNOWN` for a
/// value the format does not define).
fn acl_type(v: i32) -> Vec<u8> {
    u8::try_from(v)
        .ok()
        .filter(|&k| k <= 3)
        .map_or("UNKNOWN", acl_kind_name)
        .to_ascii_uppercase()
        .into_bytes()
}

/// `op` as oev shows it; `ns`, where given, is the namespace just before
/// the op (its paths, and the created inode's parent).
pub fn record(op: &JournalOp, ns: Option<&Namespace>) -> EditRecord {
    use Value::{Bool, Group, Num, Text};
    let created = |c: &pb::CreateOp| match child_path(ns, c.parent, &c.name) {
        Some(p) => vec![("PATH", Text(p))],
        None => vec![
            ("PARENT_INODEID", Num(c.parent)),
            ("NAME", Text(c.name.clone())),
        ],
    };
    let (opcode, fields) = match &op.op {
        None => ("OP_INVALID", Vec::new()),
        Some(Op::Mkdir(c)) => {
            let mut f = vec![("LENGTH", Num(0)), ("INODEID", Num(c.new_id))];
            f.extend(created(c));
            f.push(("TIMESTAMP", Num(c.mtime)));
            f.push(perm(&c.user, &c.group, c.mode));
            ("OP_MKDIR", f)
        }
        Some(Op::Create(c)) => {
            let mut f = vec![("LENGTH", Num(0)), ("INODEID", Num(c.new_id))];
            f.extend(created(c));
            f.extend([
                ("REPLICATION", Num(u64::from(c.replication))),
                ("MTIME", Num(c.mtime)),
                ("ATIME", Num(c.mtime)),
                ("BLOCKSIZE", Num(c.preferred_block_size)),
                ("CLIENT_NAME", Text(Vec::new())),
                ("CLIENT_MACHINE", Text(Vec::new())),
                ("OVERWRITE", Bool(false)),
                ("STORAGE_POLICY_ID", Num(u64::from(c.storage_policy))),
            ]);
            f.push(perm(&c.user, &c.group, c.mode));
            ("OP_ADD", f)
        }
        Some(Op::Symlink(c)) => {
            let mut f = vec![("LENGTH", Num(0)), ("INODEID", Num(c.new_id))];
            f.extend(created(c));
            f.extend([
                ("VALUE", Text(c.target.clone())),
                ("MTIME", Num(c.mtime)),
                ("ATIME", Num(c.mtime)),
            ]);
            f.push(perm(&c.user, &c.group, c.mode));
            ("OP_SYMLINK", f)
        }
        Some(Op::AddBlock(a)) => {
            let b = a.block.unwrap_or_default();
            let block = Group(vec![
                ("BLOCK_ID", Num(b.id)),
                ("NUM_BYTES", Num(b.length)),
                ("GENSTAMP", Num(b.generation_stamp)),
            ]);
            (
                "OP_ADD_BLOCK",
                vec![by_id(ns, "PATH", a.id), ("BLOCK", block)],
            )
        }
        Some(Op::Rename(r)) => {
            let mut f = vec![("LENGTH", Num(0)), by_id(ns, "SRC", r.id)];
            match child_path(ns, r.new_parent, &r.new_name) {
                Some(p) => f.push(("DST", Text(p))),
                None => f.extend([
                    ("DST_PARENT_INODEID", Num(r.new_parent)),
                    ("DST_NAME", Text(r.new_name.clone())),
                ]),
            }
            f.push(("TIMESTAMP", Num(r.mtime)));
            ("OP_RENAME_OLD", f)
        }
        Some(Op::Delete(d)) => (
            "OP_DELETE",
            vec![
                ("LENGTH", Num(0)),
                by_id(ns, "PATH", d.id),
                ("TIMESTAMP", Num(d.mtime)),
                ("RECURSIVE", Bool(d.recursive)),
            ],
        ),
        Some(Op::SetTimes(t)) => (
            "OP_TIMES",
            vec![
                ("LENGTH", Num(0)),
                by_id(ns, "PATH", t.id),
                ("MTIME", Num(t.mtime)),
                ("ATIME", Num(t.atime)),
            ],
        ),
        Some(Op::SetOwner(o)) => (
            "OP_SET_OWNER",
            vec![
                by_id(ns, "SRC", o.id),
                ("USERNAME", Text(o.user.clone())),
                ("GROUPNAME", Text(o.group.clone())),
            ],
        ),
        Some(Op::SetMode(m)) => (
            "OP_SET_PERMISSIONS",
            vec![by_id(ns, "SRC", m.id), ("MODE", Num(u64::from(m.mode)))],
        ),
        Some(Op::SetReplication(r)) => (
            "OP_SET_REPLICATION",
            vec![
                by_id(ns, "PATH", r.id),
                ("REPLICATION", Num(u64::from(r.replication))),
            ],
        ),
        Some(Op::SetXattr(x)) => {
            let xattr = Group(vec![
                ("NAMESPACE", Text(xattr_namespace(x.namespace).into())),
                ("NAME", Text(x.name.clone())),
                ("VALUE", Text(crate::dump::escape::hex0x(&x.value))),
            ]);
            (
                "OP_SET_XATTR",
                vec![by_id(ns, "SRC", x.id), ("XATTR", xattr)],
            )
        }
        Some(Op::RemoveXattr(x)) => {
            let xattr = Group(vec![
                ("NAMESPACE", Text(xattr_namespace(x.namespace).into())),
                ("NAME", Text(x.name.clone())),
            ]);
            (
                "OP_REMOVE_XATTR",
                vec![by_id(ns, "SRC", x.id), ("XATTR", xattr)],
            )
        }
        Some(Op::SetAcl(a)) => {
            let mut f = vec![by_id(ns, "SRC", a.id)];
            for e in &a.entries {
                let mut entry = vec![
                    (
                        "SCOPE",
                        Text(if e.default_scope { "DEFAULT" } else { "ACCESS" }.into()),
                    ),
                    ("TYPE", Text(acl_type(e.r#type))),
                ];
                if !e.name.is_empty() {
                    entry.push(("NAME", Text(e.name.clone())));
                }
                entry.push(("PERM", Text(rwx(e.permission).to_vec())));
                f.push(("ENTRY", Group(entry)));
            }
            ("OP_SET_ACL", f)
        }
    };
    EditRecord {
        txid: op.txid,
        opcode,
        fields,
    }
}

/// The XML's head: the declaration, `<EDITS>` and `EDITS_VERSION`.
pub fn write_xml_head(out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>")?;
    writeln!(out, "<EDITS>")?;
    writeln!(out, "  <EDITS_VERSION>{EDITS_VERSION}</EDITS_VERSION>")
}

/// The XML's end.
pub fn write_xml_tail(out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "</EDITS>")
}

fn xml_fields(fields: &[(&'static str, Value)], depth: usize, buf: &mut Vec<u8>) {
    for (name, v) in fields {
        buf.extend(std::iter::repeat_n(b' ', depth * 2));
        match v {
            Value::Group(inner) => {
                buf.extend_from_slice(format!("<{name}>\n").as_bytes());
                xml_fields(inner, depth + 1, buf);
                buf.extend(std::iter::repeat_n(b' ', depth * 2));
                buf.extend_from_slice(format!("</{name}>\n").as_bytes());
                continue;
            }
            Value::Num(n) => buf.extend_from_slice(format!("<{name}>{n}").as_bytes()),
            Value::Bool(b) => buf.extend_from_slice(format!("<{name}>{b}").as_bytes()),
            Value::Text(t) => {
                buf.extend_from_slice(format!("<{name}>").as_bytes());
                xml_text(t, buf);
            }
        }
        buf.extend_from_slice(format!("</{name}>\n").as_bytes());
    }
}

/// One `<RECORD>` of the XML.
pub fn write_xml_record(r: &EditRecord, out: &mut impl Write) -> io::Result<()> {
    let mut buf = Vec::with_capacity(256);
    buf.extend_from_slice(b"  <RECORD>\n");
    buf.extend_from_slice(format!("    <OPCODE>{}</OPCODE>\n", r.opcode).as_bytes());
    buf.extend_from_slice(b"    <DATA>\n");
    buf.extend_from_slice(format!("      <TXID>{}</TXID>\n", r.txid).as_bytes());
    xml_fields(&r.fields, 3, &mut buf);
    buf.extend_from_slice(b"    </DATA>\n  </RECORD>\n");
    out.write_all(&buf)
}

fn json_fields(fields: &[(&'static str, Value)]) -> Map<String, Json> {
    let mut m = Map::new();
    for (name, v) in fields {
        let key = name.to_ascii_lowercase();
        let value = match v {
            Value::Num(n) => Json::from(*n),
            Value::Bool(b) => Json::from(*b),
            Value::Text(t) => Json::from(String::from_utf8_lossy(t).into_owned()),
            Value::Group(inner) => Json::Object(json_fields(inner)),
        };
        // An ACL's entries are a list whatever their count.
        let repeated = *name == "ENTRY" || fields.iter().filter(|(n, _)| n == name).count() > 1;
        match m.get_mut(&key) {
            Some(Json::Array(a)) if repeated => a.push(value),
            _ if repeated => {
                m.insert(key, Json::Array(vec![value]));
            }
            _ => {
                m.insert(key, value);
            }
        }
    }
    m
}

/// The record as one JSON object: `txid`, `opcode`, then its fields.
pub fn to_json(r: &EditRecord) -> Json {
    let mut m = Map::new();
    m.insert("txid".into(), Json::from(r.txid));
    m.insert("opcode".into(), Json::from(r.opcode));
    m.extend(json_fields(&r.fields));
    Json::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsimage_namespace::PermSpec;

    fn op(txid: u64, op: Op) -> JournalOp {
        JournalOp { txid, op: Some(op) }
    }

    #[test]
    fn ops_as_oev_shows_them_with_paths_or_ids() {
        let mut ns = Namespace::default();
        let p = PermSpec {
            user: b"alice",
            group: b"staff",
            mode: 0o755,
        };
        let user = ns.mkdirs(b"/user", &p, 1).unwrap();
        let mkdir = op(
            7,
            Op::Mkdir(pb::CreateOp {
                parent: user,
                name: b"a<b".to_vec(),
                user: b"alice".to_vec(),
                group: b"staff".to_vec(),
                mode: 0o755,
                mtime: 1_700_000_000_000,
                new_id: 16392,
                ..Default::default()
            }),
        );
        let mut xml = Vec::new();
        write_xml_record(&record(&mkdir, Some(&ns)), &mut xml).unwrap();
        assert_eq!(
            String::from_utf8(xml).unwrap(),
            "  <RECORD>\n    <OPCODE>OP_MKDIR</OPCODE>\n    <DATA>\n      <TXID>7</TXID>\n\
             \x20     <LENGTH>0</LENGTH>\n      <INODEID>16392</INODEID>\n\
             \x20     <PATH>/user/a&lt;b</PATH>\n      <TIMESTAMP>1700000000000</TIMESTAMP>\n\
             \x20     <PERMISSION_STATUS>\n        <USERNAME>alice</USERNAME>\n\
             \x20       <GROUPNAME>staff</GROUPNAME>\n        <MODE>493</MODE>\n\
             \x20     </PERMISSION_STATUS>\n    </DATA>\n  </RECORD>\n"
        );
        // Without the namespace: the parent's id and the name.
        let j = to_json(&record(&mkdir, None));
        assert_eq!(j["parent_inodeid"], user);
        assert_eq!(j["name"], "a<b");
        assert_eq!(j["permission_status"]["mode"], 493);
        // A rename by path, an ACL's entries as an array.
        let rename = op(
            8,
            Op::Rename(pb::RenameOp {
                id: user,
                new_parent: nsimage_namespace::ROOT_ID,
                new_name: b"home".to_vec(),
                mtime: 5,
            }),
        );
        let j = to_json(&record(&rename, Some(&ns)));
        assert_eq!(j["opcode"], "OP_RENAME_OLD");
        assert_eq!((&j["src"], &j["dst"]), (&"/user".into(), &"/home".into()));
        let acl = op(
            9,
            Op::SetAcl(pb::SetAclOp {
                id: user,
                entries: vec![
                    pb::JournalAclEntry {
                        name: b"bob".to_vec(),
                        r#type: pb::AclType::AclUser as i32,
                        default_scope: false,
                        permission: 5,
                    },
                    pb::JournalAclEntry {
                        name: Vec::new(),
                        r#type: pb::AclType::AclMask as i32,
                        default_scope: true,
                        permission: 7,
                    },
                ],
            }),
        );
        let j = to_json(&record(&acl, Some(&ns)));
        assert_eq!(
            j["entry"],
            serde_json::json!([
                {"scope": "ACCESS", "type": "USER", "name": "bob", "perm": "r-x"},
                {"scope": "DEFAULT", "type": "MASK", "perm": "rwx"},
            ])
        );
        let xattr = op(
            10,
            Op::SetXattr(pb::SetXAttrOp {
                id: 999,
                namespace: pb::XAttrNamespace::Trusted as i32,
                name: b"k".to_vec(),
                value: vec![0, 0xff],
            }),
        );
        let j = to_json(&record(&xattr, Some(&ns)));
        assert_eq!(j["inodeid"], 999, "an id the namespace lacks: {j}");
        assert_eq!(j["xattr"]["value"], "0x00ff");
        assert_eq!(j["xattr"]["namespace"], "TRUSTED");
    }
}
