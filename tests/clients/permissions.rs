//! Issue 27: HDFS's permission checks, table-driven. Each case is a user,
//! an operation, a path and what HDFS's documented semantics say of it
//! (allowed, or refused with an AccessControlException whose message
//! names the user, the access and the inode), grouped by the document and
//! section that says so. The table runs over HTTP against a writable store
//! server with raw requests and with the PyPI `hdfs` client
//! (`tests/python/permissions.py`), and every read is sent to a read-only
//! server of the same namespace too, which must answer it the same,
//! refusals word for word.
//!
//! Identities: `user.name` (none: `dr.who`), groups from a groups file;
//! the superuser is the owner of `/` (`hdfs`), the supergroup `supergroup`
//! (`admin` is in it).

use crate::python_env;
use crate::serve_common::{request, Server};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

/// Users' groups (a user with none has no line).
const GROUPS: &str = "\
alice: alice analysts
bob: bob etl
carol: carol analysts etl
dave: dave
eve: eve auditors
admin: admin supergroup
";

/// One entry of the fixture, made as the superuser: a directory (`d`) or
/// a file (`f`), its owner, group and mode, an ACL spec and xattrs.
struct Entry {
    path: &'static str,
    kind: char,
    owner: &'static str,
    group: &'static str,
    mode: &'static str,
    acl: &'static str,
    xattrs: &'static [(&'static str, &'static str)],
}

const fn e(
    path: &'static str,
    kind: char,
    owner: &'static str,
    group: &'static str,
    mode: &'static str,
) -> Entry {
    Entry {
        path,
        kind,
        owner,
        group,
        mode,
        acl: "",
        xattrs: &[],
    }
}

const fn with_acl(mut x: Entry, acl: &'static str) -> Entry {
    x.acl = acl;
    x
}

const fn with_xattrs(mut x: Entry, xattrs: &'static [(&'static str, &'static str)]) -> Entry {
    x.xattrs = xattrs;
    x
}

const SU: &str = "hdfs";
const SG: &str = "supergroup";

/// The namespace every case runs on, in the order it is made.
const FIXTURE: &[Entry] = &[
    e("/public", 'd', SU, SG, "755"),
    e("/public/readme", 'f', SU, SG, "644"),
    e("/public/dir", 'd', SU, SG, "755"),
    e("/public/dir/x", 'f', SU, SG, "644"),
    e("/home", 'd', SU, SG, "755"),
    e("/home/alice", 'd', "alice", "alice", "700"),
    e("/home/alice/secret", 'f', "alice", "alice", "600"),
    e("/home/alice/sub", 'd', "alice", "alice", "755"),
    e("/home/alice/sub/f", 'f', "alice", "alice", "644"),
    e("/home/bob", 'd', "bob", "bob", "750"),
    e("/home/bob/notes", 'f', "bob", "bob", "640"),
    e("/home/bob/etl", 'd', "bob", "etl", "770"),
    e("/home/bob/etl/data", 'f', "bob", "etl", "660"),
    e("/team", 'd', "alice", "analysts", "770"),
    e("/team/plan", 'f', "alice", "analysts", "660"),
    e("/team/ro", 'f', "alice", "analysts", "640"),
    e("/team/mv", 'f', "alice", "analysts", "660"),
    e("/tmp", 'd', SU, SG, "1777"),
    e("/tmp/a1", 'f', "alice", "alice", "644"),
    e("/tmp/a2", 'f', "alice", "alice", "644"),
    e("/tmp/a3", 'f', "alice", "alice", "644"),
    e("/tmp/a4", 'f', "alice", "alice", "644"),
    e("/tmp/b1", 'f', "bob", "bob", "644"),
    e("/tmp/b2", 'f', "bob", "bob", "666"),
    e("/tmp/bobdir", 'd', "bob", "bob", "777"),
    e("/tmp/bobdir/f", 'f', "dave", "dave", "644"),
    e("/dave-sticky", 'd', "dave", "dave", "1777"),
    e("/dave-sticky/alicefile", 'f', "alice", "alice", "644"),
    with_acl(
        e("/acl", 'd', SU, SG, "750"),
        "user::rwx,user:dave:r-x,user:eve:--x,group::r-x,group:etl:---,mask::r-x,other::---",
    ),
    with_acl(
        e("/acl/file", 'f', SU, SG, "640"),
        "user::rw-,user:eve:rw-,group::r--,mask::r--,other::---",
    ),
    with_acl(
        e("/acl/masked", 'd', SU, SG, "770"),
        "user::rwx,user:dave:rwx,group::---,mask::---,other::---",
    ),
    with_acl(
        e("/aclgrp", 'd', SU, SG, "700"),
        "user::rwx,group::---,group:auditors:r-x,group:etl:rwx,mask::rwx,other::---",
    ),
    e("/owner-denied", 'd', "alice", "analysts", "070"),
    e("/xattr", 'd', SU, SG, "755"),
    with_xattrs(
        e("/xattr/f", 'f', "alice", "alice", "644"),
        &[("user.a", "0x31"), ("trusted.t", "0x31")],
    ),
    with_xattrs(e("/xattr/ro", 'f', SU, SG, "644"), &[("user.b", "0x31")]),
    with_xattrs(
        e("/xattr/private", 'f', "alice", "alice", "600"),
        &[("user.p", "0x31")],
    ),
    with_xattrs(
        e("/xattr/sticky", 'd', "alice", "alice", "1777"),
        &[("user.s", "0x31")],
    ),
    e("/del", 'd', SU, SG, "777"),
    e("/del/tree", 'd', "alice", "alice", "755"),
    e("/del/tree/locked", 'd', "alice", "alice", "555"),
    e("/del/tree/locked/f", 'f', "alice", "alice", "644"),
    e("/del/empty", 'd', "alice", "alice", "755"),
    e("/del/empty/locked", 'd', "alice", "alice", "555"),
    e("/del/bobs", 'd', "bob", "bob", "755"),
    e("/del/bobs/f", 'f', "bob", "bob", "644"),
    e("/own", 'd', SU, SG, "777"),
    e("/own/f1", 'f', "alice", "alice", "644"),
    e("/own/f2", 'f', "alice", "alice", "644"),
    e("/own/f3", 'f', "alice", "alice", "644"),
    e("/own/d", 'd', "alice", "alice", "755"),
    e("/ren", 'd', SU, SG, "755"),
    e("/ren/f", 'f', "alice", "alice", "644"),
    e("/ren-w", 'd', SU, SG, "777"),
    e("/ren-w/a1", 'f', "alice", "alice", "644"),
    e("/ren-w/a2", 'f', "alice", "alice", "644"),
    e("/ren-w/a5", 'f', "alice", "alice", "644"),
    e("/ren-w/a6", 'f', "alice", "alice", "644"),
    e("/ren-dst", 'd', SU, SG, "755"),
    e("/ren-dst-w", 'd', SU, SG, "777"),
    e("/r-only", 'd', SU, SG, "744"),
    e("/r-only/f", 'f', SU, SG, "644"),
    e("/x-only", 'd', SU, SG, "711"),
    e("/x-only/f", 'f', SU, SG, "644"),
    e("/w-only", 'd', SU, SG, "733"),
    e("/deep", 'd', SU, SG, "755"),
    e("/deep/a", 'd', SU, SG, "755"),
    e("/deep/a/b", 'd', SU, SG, "755"),
    e("/deep/a/b/c", 'd', "bob", "bob", "700"),
    e("/deep/a/b/c/d", 'd', "bob", "bob", "755"),
    e("/deep/a/b/c/d/e", 'd', "bob", "bob", "755"),
    e("/deep/a/b/c/d/e/f", 'f', "bob", "bob", "644"),
];

/// One case: `user` (empty: no `user.name`, so `dr.who`) sends `op` on
/// `path` with `extra` parameters; `expect` is empty when HDFS allows it,
/// else a part of the refusal's message (the access and inode, or the
/// owner, sticky-bit, chown or xattr refusal).
#[derive(Clone, Copy)]
struct Case {
    user: &'static str,
    op: &'static str,
    path: &'static str,
    extra: &'static str,
    expect: &'static str,
}

const fn c(
    user: &'static str,
    op: &'static str,
    path: &'static str,
    extra: &'static str,
    expect: &'static str,
) -> Case {
    Case {
        user,
        op,
        path,
        extra,
        expect,
    }
}

/// Allowed.
const OK: &str = "";
/// Refused for not owning the inode.
const NOT_OWNER: &str = "is not the owner of inode=";
/// Refused by a sticky bit.
const STICKY: &str = "Permission denied by sticky bit";

/// The cases, grouped by the document and section that gives each
/// group's semantics.
fn table() -> Vec<(&'static str, Vec<Case>)> {
    vec![
        (
            "HDFS Permissions Guide, \"Permission Checks\": all operations require traversal access (EXECUTE on every existing component but the last); FSPermissionChecker.checkTraverse",
            vec![
                c("dave", "GETFILESTATUS", "/home/alice/secret", "", "access=EXECUTE, inode=\"/home/alice\":alice:alice:drwx------"),
                c("dave", "GETFILESTATUS", "/home/alice", "", OK),
                c("dave", "GETFILESTATUS", "/home/alice/nothing", "", "access=EXECUTE, inode=\"/home/alice\""),
                c("bob", "GETFILESTATUS", "/home/alice/sub/f", "", "user=bob, access=EXECUTE, inode=\"/home/alice\""),
                c("alice", "GETFILESTATUS", "/home/alice/sub/f", "", OK),
                c("dave", "GETFILESTATUS", "/x-only/f", "", OK),
                c("dave", "GETFILESTATUS", "/r-only/f", "", "access=EXECUTE, inode=\"/r-only\":hdfs:supergroup:drwxr--r--"),
                c("dave", "GETFILESTATUS", "/deep/a/b/c/d/e/f", "", "access=EXECUTE, inode=\"/deep/a/b/c\":bob:bob:drwx------"),
                c("bob", "GETFILESTATUS", "/deep/a/b/c/d/e/f", "", OK),
                c("alice", "GETFILESTATUS", "/deep/a/b/c", "", OK),
                c("", "GETFILESTATUS", "/public/dir/x", "", OK),
                c("", "GETFILESTATUS", "/home/bob/notes", "", "user=dr.who, access=EXECUTE, inode=\"/home/bob\""),
                c("carol", "GETFILESTATUS", "/home/bob/etl/data", "", "access=EXECUTE, inode=\"/home/bob\""),
                c("dave", "GETACLSTATUS", "/home/alice/secret", "", "access=EXECUTE, inode=\"/home/alice\""),
                c("dave", "GETACLSTATUS", "/public/readme", "", OK),
                c("dave", "MKDIRS", "/home/alice/x", "", "access=EXECUTE, inode=\"/home/alice\""),
                c("dave", "LISTXATTRS", "/home/alice/secret", "", "access=EXECUTE, inode=\"/home/alice\""),
            ],
        ),
        (
            "HDFS Permissions Guide, \"Permission Checks\" table: getListing needs READ, EXECUTE on the final component (a directory; a file needs traversal only); FSDirStatAndListingOp.getListingInt",
            vec![
                c("dave", "LISTSTATUS", "/public", "", OK),
                c("dave", "LISTSTATUS", "/home/alice", "", "user=dave, access=READ_EXECUTE, inode=\"/home/alice\":alice:alice:drwx------"),
                c("alice", "LISTSTATUS", "/home/alice", "", OK),
                c("dave", "LISTSTATUS", "/x-only", "", "access=READ_EXECUTE, inode=\"/x-only\":hdfs:supergroup:drwx--x--x"),
                c("dave", "LISTSTATUS", "/r-only", "", "access=READ_EXECUTE, inode=\"/r-only\""),
                c("dave", "LISTSTATUS", "/w-only", "", "access=READ_EXECUTE, inode=\"/w-only\":hdfs:supergroup:drwx-wx-wx"),
                c("bob", "LISTSTATUS", "/home/bob/etl", "", OK),
                c("carol", "LISTSTATUS", "/team", "", OK),
                c("dave", "LISTSTATUS", "/team", "", "access=READ_EXECUTE, inode=\"/team\":alice:analysts:drwxrwx---"),
                c("dave", "LISTSTATUS", "/public/readme", "", OK),
                c("dave", "LISTSTATUS", "/home/bob/notes", "", "access=EXECUTE, inode=\"/home/bob\""),
                c("", "LISTSTATUS", "/", "", OK),
                c("dave", "LISTSTATUS", "/tmp", "", OK),
                c("dave", "LISTSTATUS_BATCH", "/home/alice", "", "access=READ_EXECUTE, inode=\"/home/alice\""),
                c("alice", "LISTSTATUS_BATCH", "/home/alice", "", OK),
                c("bob", "LISTSTATUS", "/deep/a/b/c", "", OK),
                c("alice", "LISTSTATUS", "/deep/a/b/c", "", "access=READ_EXECUTE, inode=\"/deep/a/b/c\""),
            ],
        ),
        (
            "HDFS Permissions Guide, \"Permission Checks\" table: getContentSummary needs READ, EXECUTE on the sub-tree (every directory of it, HDFS-12130)",
            vec![
                c("dave", "GETCONTENTSUMMARY", "/public", "", OK),
                c("dave", "GETCONTENTSUMMARY", "/home", "", "user=dave, access=READ_EXECUTE, inode=\"/home/alice\""),
                c("alice", "GETCONTENTSUMMARY", "/home", "", "access=READ_EXECUTE, inode=\"/home/bob\""),
                c("bob", "GETCONTENTSUMMARY", "/deep", "", OK),
                c("dave", "GETCONTENTSUMMARY", "/deep", "", "access=READ_EXECUTE, inode=\"/deep/a/b/c\""),
                c("dave", "GETCONTENTSUMMARY", "/tmp", "", OK),
                c("dave", "GETCONTENTSUMMARY", "/public/readme", "", OK),
                c("carol", "GETCONTENTSUMMARY", "/team", "", OK),
                c("eve", "GETCONTENTSUMMARY", "/team", "", "access=READ_EXECUTE, inode=\"/team\""),
            ],
        ),
        (
            "HDFS Permissions Guide, \"Permission Checks\" table: mkdirs and create need WRITE on the ancestor (the nearest existing one, which traversal reaches with EXECUTE), create with overwrite WRITE on the final component too; FSDirMkdirOp, FSDirWriteFileOp.startFile, FSDirSymlinkOp",
            vec![
                c("dave", "MKDIRS", "/public/new", "", "user=dave, access=WRITE, inode=\"/public\":hdfs:supergroup:drwxr-xr-x"),
                c("alice", "MKDIRS", "/home/alice/new", "", OK),
                c("alice", "MKDIRS", "/home/alice/new2/deeper", "", OK),
                c("dave", "MKDIRS", "/w-only/newdir", "", OK),
                c("dave", "MKDIRS", "/x-only/newdir", "", "access=WRITE, inode=\"/x-only\""),
                c("carol", "MKDIRS", "/team/newdir", "", OK),
                c("eve", "MKDIRS", "/team/x", "", "access=EXECUTE, inode=\"/team\""),
                c("bob", "MKDIRS", "/home/bob/etl/newdir", "", OK),
                c("dave", "MKDIRS", "/tmp/dave-dir", "", OK),
                c("dave", "MKDIRS", "/public/dir/a/b/c", "", "access=WRITE, inode=\"/public/dir\""),
                c("dave", "MKDIRS", "/public", "", OK),
                c("admin", "MKDIRS", "/public/admin-dir", "", OK),
                c("dave", "CREATE", "/public/newfile", "", "access=WRITE, inode=\"/public\""),
                c("alice", "CREATE", "/home/alice/newfile", "", OK),
                c("dave", "CREATE", "/w-only/newfile", "", OK),
                c("carol", "CREATE", "/team/newfile", "", OK),
                c("eve", "CREATE", "/team/f", "", "access=EXECUTE, inode=\"/team\""),
                c("dave", "CREATE", "/tmp/dave-file", "", OK),
                c("carol", "CREATE", "/team/plan", "overwrite=true", OK),
                c("carol", "CREATE", "/team/ro", "overwrite=true", "access=WRITE, inode=\"/team/ro\":alice:analysts:-rw-r-----"),
                c("dave", "CREATE", "/tmp/b2", "overwrite=true", OK),
                c("dave", "CREATE", "/public/dir/deep/newfile", "", "access=WRITE, inode=\"/public/dir\""),
                c("dave", "CREATESYMLINK", "/public/link", "destination=/public/readme", "access=WRITE, inode=\"/public\""),
                c("alice", "CREATESYMLINK", "/home/alice/link", "destination=/public/readme", OK),
                c("dave", "CREATESYMLINK", "/tmp/dlink", "destination=/public/readme", OK),
            ],
        ),
        (
            "HDFS Permissions Guide, \"Permission Checks\" table: delete needs WRITE on the parent and READ, WRITE, EXECUTE on the sub-tree (empty directories left out); \"Overview\": the sticky bit lets only the owner of the file or of the directory (or the superuser) delete or move a file; FSDirDeleteOp",
            vec![
                c("dave", "DELETE", "/public/readme", "", "user=dave, access=WRITE, inode=\"/public\""),
                c("alice", "DELETE", "/home/alice/sub/f", "", OK),
                c("alice", "DELETE", "/tmp/a1", "", OK),
                c("bob", "DELETE", "/tmp/a2", "", STICKY),
                c("dave", "DELETE", "/tmp/b1", "", "user=dave, path=\"/tmp/b1\":bob:bob:-rw-r--r--, parent=\"/tmp\":hdfs:supergroup:drwxrwxrwt"),
                c("bob", "DELETE", "/tmp/b1", "", OK),
                c("dave", "DELETE", "/dave-sticky/alicefile", "", OK),
                c("alice", "DELETE", "/tmp/bobdir", "recursive=true", STICKY),
                c("bob", "DELETE", "/tmp/bobdir/f", "", OK),
                c("alice", "DELETE", "/del/bobs", "recursive=true", "access=ALL, inode=\"/del/bobs\":bob:bob:drwxr-xr-x"),
                c("bob", "DELETE", "/del/bobs", "recursive=true", OK),
                c("alice", "DELETE", "/del/empty", "recursive=true", OK),
                c("alice", "DELETE", "/del/tree", "recursive=true", "access=ALL, inode=\"/del/tree/locked\":alice:alice:dr-xr-xr-x"),
                c("carol", "DELETE", "/team/newdir-none", "", OK),
                c("eve", "DELETE", "/team/ro", "", "access=EXECUTE, inode=\"/team\""),
                c("admin", "DELETE", "/home/bob/notes", "", OK),
                c("dave", "DELETE", "/home/alice/sub", "recursive=true", "access=EXECUTE, inode=\"/home/alice\""),
            ],
        ),
        (
            "HDFS Permissions Guide, \"Permission Checks\" table: rename needs WRITE on the source's parent and WRITE on the destination's ancestor (the sticky bit of the source's parent applies); FSDirRenameOp",
            vec![
                c("alice", "RENAME", "/ren/f", "destination=/ren-w/f", "user=alice, access=WRITE, inode=\"/ren\""),
                c("alice", "RENAME", "/ren-w/a1", "destination=/ren-dst/a1", "access=WRITE, inode=\"/ren-dst\""),
                c("alice", "RENAME", "/ren-w/a1", "destination=/ren-dst-w/a1", OK),
                c("alice", "RENAME", "/ren-w/a2", "destination=/ren-dst-w", OK),
                c("alice", "RENAME", "/tmp/a3", "destination=/tmp/a3-renamed", OK),
                c("bob", "RENAME", "/tmp/a4", "destination=/tmp/x", STICKY),
                c("dave", "RENAME", "/home/alice/secret", "destination=/tmp/s", "access=EXECUTE, inode=\"/home/alice\""),
                c("carol", "RENAME", "/team/mv", "destination=/team/mv2", OK),
                c("alice", "RENAME", "/ren-w/a5", "destination=/ren-dst-w/a5&renameoptions=OVERWRITE", OK),
                c("alice", "RENAME", "/ren-w/a6", "destination=/ren-dst/x&renameoptions=OVERWRITE", "access=WRITE, inode=\"/ren-dst\""),
                c("dave", "RENAME", "/public/dir", "destination=/tmp/dir", "access=WRITE, inode=\"/public\""),
            ],
        ),
        (
            "HDFS Permissions Guide, \"Permission Checks\" table, footnote 3, and \"Changes to the File System API\": setOwner needs ownership; only the superuser changes the owner, an owner changes the group only to one it is in; FSDirAttrOp.setOwner",
            vec![
                c("alice", "SETOWNER", "/own/f1", "owner=bob", "User alice is not a super user (non-super user cannot change owner)."),
                c("alice", "SETOWNER", "/own/f1", "group=analysts", OK),
                c("alice", "SETOWNER", "/own/f2", "group=etl", "User alice does not belong to etl"),
                c("bob", "SETOWNER", "/own/f2", "group=etl", NOT_OWNER),
                c("hdfs", "SETOWNER", "/own/f2", "owner=bob", OK),
                c("admin", "SETOWNER", "/own/f3", "owner=carol&group=etl", OK),
                c("alice", "SETOWNER", "/own/d", "owner=alice", OK),
                c("dave", "SETOWNER", "/public/readme", "owner=dave", "Permission denied. user=dave is not the owner of inode=/public/readme"),
            ],
        ),
        (
            "HDFS Permissions Guide, \"Permission Checks\" table: setPermission, setAcl, modifyAclEntries, removeAclEntries, removeDefaultAcl and removeAcl need ownership; FSDirAttrOp.setPermission, FSDirAclOp",
            vec![
                c("alice", "SETPERMISSION", "/own/d", "permission=700", OK),
                c("bob", "SETPERMISSION", "/own/d", "permission=777", NOT_OWNER),
                c("bob", "SETPERMISSION", "/home/bob/etl/data", "permission=600", OK),
                c("carol", "SETPERMISSION", "/team/ro", "permission=666", NOT_OWNER),
                c("alice", "SETACL", "/own/d", "aclspec=user::rwx,user:bob:r-x,group::r-x,other::---", OK),
                c("bob", "SETACL", "/own/d", "aclspec=user::rwx,group::r-x,other::rwx", NOT_OWNER),
                c("alice", "MODIFYACLENTRIES", "/own/d", "aclspec=default:user:carol:rwx", OK),
                c("bob", "MODIFYACLENTRIES", "/own/d", "aclspec=user:bob:rwx", NOT_OWNER),
                c("alice", "REMOVEACLENTRIES", "/own/d", "aclspec=user:bob", OK),
                c("bob", "REMOVEDEFAULTACL", "/own/d", "", NOT_OWNER),
                c("alice", "REMOVEDEFAULTACL", "/own/d", "", OK),
                c("bob", "REMOVEACL", "/own/d", "", NOT_OWNER),
                c("alice", "REMOVEACL", "/own/d", "", OK),
                c("dave", "SETACL", "/home/alice/secret", "aclspec=user::rwx,group::---,other::---", "access=EXECUTE, inode=\"/home/alice\""),
            ],
        ),
        (
            "HDFS Permissions Guide, \"Permission Checks\" table: setTimes and setReplication need WRITE on the final component; FSDirAttrOp",
            vec![
                c("alice", "SETTIMES", "/home/alice/secret", "modificationtime=5000", OK),
                c("dave", "SETTIMES", "/public/readme", "modificationtime=5000", "user=dave, access=WRITE, inode=\"/public/readme\":hdfs:supergroup:-rw-r--r--"),
                c("carol", "SETTIMES", "/team/plan", "accesstime=7000", OK),
                c("eve", "SETTIMES", "/team/plan", "accesstime=7000", "access=EXECUTE, inode=\"/team\""),
                c("bob", "SETREPLICATION", "/home/bob/etl/data", "replication=2", OK),
                c("dave", "SETREPLICATION", "/public/readme", "replication=2", "access=WRITE, inode=\"/public/readme\""),
                c("carol", "SETREPLICATION", "/team/ro", "replication=2", "access=WRITE, inode=\"/team/ro\""),
                c("carol", "SETREPLICATION", "/team/plan", "replication=2", OK),
            ],
        ),
        (
            "HDFS Permissions Guide, \"ACLs (Access Control Lists)\": the owner's bits only for the owner; a named user's entry masked; any group entry (owning or named) the user is in, masked, and denied if none grants; else other; the mask is the group bits",
            vec![
                c("dave", "LISTSTATUS", "/acl", "", OK),
                c("eve", "LISTSTATUS", "/acl", "", "user=eve, access=READ_EXECUTE, inode=\"/acl\":hdfs:supergroup:drwxr-x---"),
                c("eve", "GETFILESTATUS", "/acl/file", "", OK),
                c("eve", "GETXATTRS", "/acl/file", "", OK),
                c("eve", "SETTIMES", "/acl/file", "modificationtime=1", "access=WRITE, inode=\"/acl/file\""),
                c("bob", "LISTSTATUS", "/acl", "", "user=bob, access=READ_EXECUTE, inode=\"/acl\""),
                c("carol", "LISTSTATUS", "/acl", "", "user=carol, access=READ_EXECUTE, inode=\"/acl\""),
                c("alice", "LISTSTATUS", "/acl", "", "access=READ_EXECUTE, inode=\"/acl\""),
                c("alice", "GETFILESTATUS", "/acl/file", "", "access=EXECUTE, inode=\"/acl\""),
                c("dave", "LISTSTATUS", "/acl/masked", "", "access=READ_EXECUTE, inode=\"/acl/masked\":hdfs:supergroup:drwx------"),
                c("dave", "GETFILESTATUS", "/acl/masked", "", OK),
                c("eve", "LISTSTATUS", "/aclgrp", "", OK),
                c("eve", "MKDIRS", "/aclgrp/e", "", "access=WRITE, inode=\"/aclgrp\""),
                c("bob", "MKDIRS", "/aclgrp/b", "", OK),
                c("carol", "MKDIRS", "/aclgrp/c", "", OK),
                c("dave", "LISTSTATUS", "/aclgrp", "", "access=READ_EXECUTE, inode=\"/aclgrp\""),
                c("alice", "LISTSTATUS", "/owner-denied", "", "user=alice, access=READ_EXECUTE, inode=\"/owner-denied\":alice:analysts:d---rwx---"),
                c("carol", "LISTSTATUS", "/owner-denied", "", OK),
            ],
        ),
        (
            "HDFS Permissions Guide, \"Permission Checks\" table: getXAttrs READ on the final component, setXAttr and removeXAttr WRITE (ownership in a sticky directory); Hadoop 3's FSDirXAttrOp.listXAttrs: READ on the final component (Hadoop 2 asked EXECUTE on the parent); Extended Attributes in HDFS, \"Namespaces and Permissions\": trusted is the superuser's, security and raw are not reachable over WebHDFS, security.hdfs.unreadable.by.superuser is write-once (FSDirXAttrOp.filterINodeXAttrs); XAttrPermissionFilter",
            vec![
                c("alice", "GETXATTRS", "/xattr/f", "", OK),
                c("dave", "GETXATTRS", "/xattr/f", "", OK),
                c("dave", "SETXATTR", "/xattr/f", "xattr.name=user.n&xattr.value=0x01&flag=CREATE", "user=dave, access=WRITE, inode=\"/xattr/f\""),
                c("alice", "SETXATTR", "/xattr/f", "xattr.name=user.n&xattr.value=0x01&flag=CREATE", OK),
                c("alice", "SETXATTR", "/xattr/f", "xattr.name=trusted.x&xattr.value=0x01&flag=CREATE", "User doesn't have permission for xattr: trusted.x"),
                c("hdfs", "SETXATTR", "/xattr/f", "xattr.name=trusted.x2&xattr.value=0x01&flag=CREATE", OK),
                c("alice", "GETXATTRS", "/xattr/f", "xattr.name=trusted.t", "User doesn't have permission for xattr: trusted.t"),
                c("hdfs", "GETXATTRS", "/xattr/f", "xattr.name=trusted.t", OK),
                c("alice", "SETXATTR", "/xattr/f", "xattr.name=security.x&xattr.value=0x01&flag=CREATE", "User doesn't have permission for xattr: security.x"),
                c("hdfs", "SETXATTR", "/xattr/f", "xattr.name=security.y&xattr.value=0x01&flag=CREATE", "User doesn't have permission for xattr: security.y"),
                c("hdfs", "SETXATTR", "/xattr/f", "xattr.name=raw.r&xattr.value=0x01&flag=CREATE", "User doesn't have permission for xattr: raw.r"),
                c("alice", "REMOVEXATTR", "/xattr/f", "xattr.name=user.a", OK),
                c("dave", "REMOVEXATTR", "/xattr/ro", "xattr.name=user.b", "access=WRITE, inode=\"/xattr/ro\""),
                c("dave", "SETXATTR", "/xattr/sticky", "xattr.name=user.d&xattr.value=0x01&flag=CREATE", "user=dave is not the owner of inode=/xattr/sticky"),
                c("alice", "SETXATTR", "/xattr/sticky", "xattr.name=user.s2&xattr.value=0x01&flag=CREATE", OK),
                c("dave", "GETXATTRS", "/home/alice/secret", "", "access=EXECUTE, inode=\"/home/alice\""),
                c("alice", "GETXATTRS", "/home/alice/secret", "", OK),
                c("dave", "LISTXATTRS", "/xattr/f", "", OK),
                c("dave", "LISTXATTRS", "/xattr/private", "", "user=dave, access=READ, inode=\"/xattr/private\":alice:alice:-rw-------"),
                c("alice", "LISTXATTRS", "/xattr/private", "", OK),
                c("dave", "GETXATTRS", "/xattr/private", "", "user=dave, access=READ, inode=\"/xattr/private\""),
                c("alice", "SETXATTR", "/xattr/private", "xattr.name=security.hdfs.unreadable.by.superuser&flag=CREATE", OK),
                c("alice", "REMOVEXATTR", "/xattr/private", "xattr.name=security.hdfs.unreadable.by.superuser", "The xattr 'security.hdfs.unreadable.by.superuser' can not be deleted."),
                c("hdfs", "REMOVEXATTR", "/xattr/private", "xattr.name=security.hdfs.unreadable.by.superuser", "can not be deleted"),
            ],
        ),
        (
            "HDFS Permissions Guide, \"The Super-User\": the NameNode's user (here the owner of /) and members of the supergroup (dfs.permissions.superusergroup) pass every check",
            vec![
                c("hdfs", "LISTSTATUS", "/home/alice", "", OK),
                c("admin", "LISTSTATUS", "/home/alice", "", OK),
                c("hdfs", "GETFILESTATUS", "/home/alice/secret", "", OK),
                c("admin", "GETCONTENTSUMMARY", "/", "", OK),
                c("hdfs", "SETPERMISSION", "/home/alice/secret", "permission=640", OK),
                c("admin", "DELETE", "/del/tree", "recursive=true", OK),
                c("hdfs", "LISTSTATUS", "/aclgrp", "", OK),
                c("admin", "MKDIRS", "/acl/masked/sub", "", OK),
                c("hdfs", "RENAME", "/ren/f", "destination=/ren-dst/f", OK),
                c("admin", "SETOWNER", "/public/dir/x", "owner=dave&group=dave", OK),
            ],
        ),
        (
            "HDFS Permissions Guide, \"User Identity\" (simple mode: the user the client names) and \"The Web Server\" (no user.name: hadoop.http.staticuser.user, dr.who)",
            vec![
                c("", "GETFILESTATUS", "/public/readme", "", OK),
                c("", "LISTSTATUS", "/home/alice", "", "user=dr.who, access=READ_EXECUTE, inode=\"/home/alice\""),
                c("", "MKDIRS", "/public/x", "", "user=dr.who, access=WRITE, inode=\"/public\""),
                c("", "MKDIRS", "/tmp/drwho", "", OK),
                c("", "DELETE", "/tmp/a4", "", "user=dr.who, path=\"/tmp/a4\""),
                c("", "SETPERMISSION", "/public/readme", "permission=777", "user=dr.who is not the owner"),
                c("nobody", "GETFILESTATUS", "/home/bob/etl/data", "", "user=nobody, access=EXECUTE, inode=\"/home/bob\""),
                c("nobody", "LISTSTATUS", "/public", "", OK),
            ],
        ),
    ]
}

/// The HTTP method of an op.
fn method(op: &str) -> &'static str {
    match op {
        "GETFILESTATUS" | "LISTSTATUS" | "LISTSTATUS_BATCH" | "GETCONTENTSUMMARY"
        | "GETACLSTATUS" | "GETXATTRS" | "LISTXATTRS" | "GETHOMEDIRECTORY" => "GET",
        "DELETE" => "DELETE",
        _ => "PUT",
    }
}

fn is_read(op: &str) -> bool {
    method(op) == "GET"
}

/// An answer: status, exception class, message.
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    status: u16,
    exception: String,
    message: String,
}

fn send(addr: SocketAddr, method: &str, target: &str) -> (Answer, Value) {
    let (status, body) = request(addr, method, target.as_bytes());
    let v: Value = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("{target}: {e}: {}", String::from_utf8_lossy(&body)))
    };
    let r = &v["RemoteException"];
    (
        Answer {
            status,
            exception: r["exception"].as_str().unwrap_or("").to_string(),
            message: r["message"].as_str().unwrap_or("").to_string(),
        },
        v,
    )
}

/// `op` on `path` as `user` (empty: none), CREATE's two steps followed.
fn run_op(addr: SocketAddr, user: &str, op: &str, path: &str, extra: &str) -> (Answer, Value) {
    let mut q = format!("op={op}");
    if !extra.is_empty() {
        q.push('&');
        q.push_str(extra);
    }
    if !user.is_empty() {
        q.push_str("&user.name=");
        q.push_str(user);
    }
    let target = format!("/webhdfs/v1{path}?{q}");
    let (first, v) = send(addr, method(op), &target);
    if op != "CREATE" || first.status != 307 {
        return (first, v);
    }
    // The redirect names this server; its second step creates the file.
    let second = format!("{target}&namenoderpcaddress={addr}");
    send(addr, "PUT", &second)
}

/// Makes the fixture through `addr` as the superuser.
fn make_fixture(addr: SocketAddr) {
    let ok = |user: &str, op: &str, path: &str, extra: &str| {
        let (a, v) = run_op(addr, user, op, path, extra);
        assert!(
            a.status == 200 || a.status == 201,
            "fixture {op} {path} {extra}: {a:?} {v}"
        );
    };
    ok(SU, "SETOWNER", "/", &format!("owner={SU}&group={SG}"));
    ok(SU, "SETPERMISSION", "/", "permission=755");
    for x in FIXTURE {
        if x.kind == 'd' {
            ok(SU, "MKDIRS", x.path, "");
        } else {
            ok(SU, "CREATE", x.path, "");
        }
        ok(
            SU,
            "SETOWNER",
            x.path,
            &format!("owner={}&group={}", x.owner, x.group),
        );
        ok(
            SU,
            "SETPERMISSION",
            x.path,
            &format!("permission={}", x.mode),
        );
        // After the mode: an ACL's mask is the mode's group bits.
        if !x.acl.is_empty() {
            ok(SU, "SETACL", x.path, &format!("aclspec={}", x.acl));
        }
        for (name, value) in x.xattrs {
            ok(
                SU,
                "SETXATTR",
                x.path,
                &format!("xattr.name={name}&xattr.value={value}&flag=CREATE"),
            );
        }
    }
}

/// The cases as JSON, for the Python client.
fn cases_json(table: &[(&str, Vec<Case>)]) -> Value {
    let mut out = Vec::new();
    for (doc, cases) in table {
        for k in cases {
            out.push(json!({
                "doc": doc, "user": k.user, "op": k.op, "path": k.path,
                "extra": k.extra, "expect": k.expect,
            }));
        }
    }
    Value::Array(out)
}

/// Checks `got` against case `k`: allowed (no AccessControlException), or
/// refused with a 403 AccessControlException whose message holds
/// `k.expect` and names the user.
fn verdict(k: &Case, got: &Answer) -> Result<(), String> {
    let who = if k.user.is_empty() { "dr.who" } else { k.user };
    let what = format!("{} {} {} {}?{}", k.user, k.op, k.path, k.extra, k.expect);
    if k.expect.is_empty() {
        if got.exception == "AccessControlException" || got.status >= 400 {
            return Err(format!("{what}: refused: {got:?}"));
        }
        return Ok(());
    }
    if got.status != 403 || got.exception != "AccessControlException" {
        return Err(format!(
            "{what}: not refused as AccessControlException: {got:?}"
        ));
    }
    if !got.message.contains(k.expect) {
        return Err(format!("{what}: message {:?}", got.message));
    }
    if !got.message.contains(who) {
        return Err(format!(
            "{what}: the message names no user: {:?}",
            got.message
        ));
    }
    Ok(())
}

fn start(store: &Path, groups: &str, writable: bool) -> Server {
    let mut args = vec!["--groups-file", groups];
    if writable {
        args.extend(["--writable", "--checkpoint-on-exit"]);
    }
    Server::start(store, &args)
}

fn sigterm(server: &mut Server) {
    let pid = server.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    assert!(server.child.wait().unwrap().success());
}

fn copy_dir(from: &Path, to: &Path) {
    let st = Command::new("cp")
        .args(["-a", from.to_str().unwrap(), to.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(st.success());
}

#[test]
fn hdfs_permission_semantics_table_over_raw_requests_and_the_hdfs_client() {
    let dir = tempfile::tempdir().unwrap();
    let groups = dir.path().join("groups");
    std::fs::write(&groups, GROUPS).unwrap();
    let groups = groups.to_str().unwrap().to_string();
    let store = dir.path().join("store");
    let out = crate::common::nsimage(&["store", "init", store.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The fixture, made as the superuser (the root has no owner yet: hdfs),
    // checkpointed at SIGTERM.
    let mut server = start(&store, &groups, true);
    make_fixture(server.addr);
    sigterm(&mut server);
    let table = table();
    let total: usize = table.iter().map(|g| g.1.len()).sum();
    assert!(total >= 150, "{total} cases");
    let for_python = dir.path().join("store-py");
    copy_dir(&store, &for_python);
    let for_reads = dir.path().join("store-ro");
    copy_dir(&store, &for_reads);

    let writable = start(&store, &groups, true);
    let read_only = start(&for_reads, &groups, false);
    let mut failures = Vec::new();
    // Reads first, on both servers (the writes below change the namespace).
    for (_, cases) in &table {
        for k in cases.iter().filter(|k| is_read(k.op)) {
            let (w, _) = run_op(writable.addr, k.user, k.op, k.path, k.extra);
            let (r, _) = run_op(read_only.addr, k.user, k.op, k.path, k.extra);
            if let Err(e) = verdict(k, &w) {
                failures.push(format!("writable: {e}"));
            }
            if w != r {
                failures.push(format!(
                    "{} {} {}: the read-only server answers {r:?}, the writable one {w:?}",
                    k.user, k.op, k.path
                ));
            }
        }
    }
    for (_, cases) in &table {
        for k in cases.iter().filter(|k| !is_read(k.op)) {
            let (w, _) = run_op(writable.addr, k.user, k.op, k.path, k.extra);
            if let Err(e) = verdict(k, &w) {
                failures.push(format!("writable: {e}"));
            }
        }
    }
    // What a listing shows: trusted.* only to the superuser.
    let (_, v) = run_op(read_only.addr, "alice", "GETXATTRS", "/xattr/f", "");
    assert_eq!(v["XAttrs"].as_array().map(Vec::len), Some(1), "{v}");
    let (_, v) = run_op(read_only.addr, "hdfs", "GETXATTRS", "/xattr/f", "");
    assert_eq!(v["XAttrs"].as_array().map(Vec::len), Some(2), "{v}");
    let (_, v) = run_op(read_only.addr, "", "GETHOMEDIRECTORY", "/", "");
    assert_eq!(v["Path"], "/user/dr.who");
    drop(writable);
    drop(read_only);

    // The same table through the PyPI client, on a fresh copy.
    let cases = dir.path().join("cases.json");
    std::fs::write(&cases, cases_json(&table).to_string()).unwrap();
    let py = start(&for_python, &groups, true);
    let url = format!("http://{}", py.addr);
    let got = python_env::run_json(
        "tests/python/permissions.py",
        &[&url, cases.to_str().unwrap()],
    );
    let got = got.as_array().expect("one result per case");
    assert_eq!(got.len(), total);
    let all: Vec<&Case> = table.iter().flat_map(|g| g.1.iter()).collect();
    for (k, r) in all.iter().zip(got) {
        let a = Answer {
            status: if r["ok"] == true { 200 } else { 403 },
            exception: r["exception"].as_str().unwrap_or("").to_string(),
            message: r["message"].as_str().unwrap_or("").to_string(),
        };
        // The client reports other failures (a listing of a file, say) as
        // errors of their own: only a refusal counts against an allowed case.
        let a = if k.expect.is_empty() && a.exception != "AccessControlException" {
            Answer { status: 200, ..a }
        } else {
            a
        };
        if let Err(e) = verdict(k, &a) {
            failures.push(format!("hdfs client: {e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {total} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// No identity, group or ACL state is kept past a change: a SETPERMISSION,
/// a SETACL and a groups-file edit acknowledged are enforced on the very
/// next request.
#[test]
fn changes_to_permissions_acls_and_groups_apply_at_the_next_request() {
    let dir = tempfile::tempdir().unwrap();
    let groups = dir.path().join("groups");
    std::fs::write(&groups, "alice: alice\nbob: bob\n").unwrap();
    let store = dir.path().join("store");
    let out = crate::common::nsimage(&["store", "init", store.to_str().unwrap()]);
    assert!(out.status.success());
    let server = start(&store, groups.to_str().unwrap(), true);
    let a = server.addr;
    let must = |user: &str, op: &str, path: &str, extra: &str, allowed: bool| {
        let (r, v) = run_op(a, user, op, path, extra);
        let refused = r.exception == "AccessControlException";
        assert_eq!(!refused, allowed, "{user} {op} {path} {extra}: {r:?} {v}");
    };
    must(SU, "MKDIRS", "/d", "permission=750", true);
    must(SU, "SETOWNER", "/d", "owner=alice&group=team", true);
    must("bob", "LISTSTATUS", "/d", "", false);
    // An ACL entry for bob: allowed at once; removed: refused at once.
    must(
        "alice",
        "MODIFYACLENTRIES",
        "/d",
        "aclspec=user:bob:r-x",
        true,
    );
    must("bob", "LISTSTATUS", "/d", "", true);
    must("alice", "REMOVEACL", "/d", "", true);
    must("bob", "LISTSTATUS", "/d", "", false);
    // Other bits opened, then closed.
    must("alice", "SETPERMISSION", "/d", "permission=755", true);
    must("bob", "LISTSTATUS", "/d", "", true);
    must("alice", "SETPERMISSION", "/d", "permission=750", true);
    must("bob", "LISTSTATUS", "/d", "", false);
    // bob joins the group in the groups file, then leaves it.
    std::fs::write(&groups, "alice: alice\nbob: bob team\n").unwrap();
    must("bob", "LISTSTATUS", "/d", "", true);
    std::fs::write(&groups, "alice: alice\nbob: bob\n").unwrap();
    must("bob", "LISTSTATUS", "/d", "", false);
    // Ownership moved: alice may no longer change the mode.
    must(SU, "SETOWNER", "/d", "owner=bob", true);
    must("alice", "SETPERMISSION", "/d", "permission=777", false);
    must("bob", "SETPERMISSION", "/d", "permission=700", true);
}

/// HDFS with `dfs.permissions.enabled=false` (`--no-permissions`): only
/// what HDFS checks anyway is checked: ownership, and the traverse to the
/// inode, for SETPERMISSION, SETOWNER and the ACL operations
/// (`FSDirectory.checkOwner`), SETOWNER's rules, and the xattr namespaces.
#[test]
fn with_permissions_off_only_what_hdfs_always_checks_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let groups = dir.path().join("groups");
    std::fs::write(&groups, "alice: alice\nbob: bob\n").unwrap();
    let store = dir.path().join("store");
    let out = crate::common::nsimage(&["store", "init", store.to_str().unwrap()]);
    assert!(out.status.success());
    let server = Server::start(
        &store,
        &[
            "--groups-file",
            groups.to_str().unwrap(),
            "--writable",
            "--no-permissions",
        ],
    );
    let a = server.addr;
    let must = |user: &str, op: &str, path: &str, extra: &str, expect: Option<&str>| {
        let (r, v) = run_op(a, user, op, path, extra);
        match expect {
            None => assert!(r.status < 400, "{user} {op} {path} {extra}: {r:?} {v}"),
            Some(m) => assert!(
                r.status == 403 && r.exception == "AccessControlException" && r.message.contains(m),
                "{user} {op} {path} {extra}: {r:?} {v}"
            ),
        }
    };
    must(SU, "MKDIRS", "/d/inner", "permission=700", None);
    must(SU, "SETOWNER", "/d", "owner=alice&group=alice", None);
    must(SU, "SETOWNER", "/d/inner", "owner=bob&group=bob", None);
    must(SU, "SETPERMISSION", "/d", "permission=1700", None);
    // Reads and namespace writes: unchecked.
    must("bob", "LISTSTATUS", "/d", "", None);
    must("bob", "GETCONTENTSUMMARY", "/", "", None);
    must("bob", "MKDIRS", "/d/b", "", None);
    must("bob", "DELETE", "/d/b", "", None);
    // A user xattr, even on a sticky directory bob does not own.
    must(
        "bob",
        "SETXATTR",
        "/d",
        "xattr.name=user.x&xattr.value=0x01&flag=CREATE",
        None,
    );
    // What HDFS checks whatever the setting.
    must(
        "bob",
        "SETPERMISSION",
        "/d",
        "permission=777",
        Some("user=bob is not the owner of inode=/d"),
    );
    must(
        "bob",
        "MODIFYACLENTRIES",
        "/d",
        "aclspec=user:bob:rwx",
        Some("is not the owner"),
    );
    must(
        "alice",
        "SETOWNER",
        "/d",
        "owner=bob",
        Some("non-super user cannot change owner"),
    );
    must(
        "alice",
        "SETOWNER",
        "/d",
        "group=bob",
        Some("does not belong to bob"),
    );
    must(
        "bob",
        "SETXATTR",
        "/d",
        "xattr.name=trusted.x&xattr.value=0x01&flag=CREATE",
        Some("User doesn't have permission for xattr: trusted.x"),
    );
    // bob owns /d/inner but may not traverse alice's 0700 /d to chmod it.
    must(
        "bob",
        "SETPERMISSION",
        "/d/inner",
        "permission=755",
        Some("user=bob, access=EXECUTE, inode=\"/d\""),
    );
    must(SU, "SETPERMISSION", "/d", "permission=711", None);
    must("bob", "SETPERMISSION", "/d/inner", "permission=755", None);
}
