//! The one table of WebHDFS operations: one row per operation, with its
//! HTTP method (GET: a read, any other: a write, WebHDFS's own split), the
//! parameters it takes, who may run it ([`Who`], the check
//! [`crate::perm`] makes) and its handler. The parameter checks
//! ([`check`]), the dispatch of both servers, the read-only server's
//! refusals and the permission check of each operation derive from its
//! row; a new operation is a row and its handler.

use crate::error::{echo, RemoteError};
use crate::ops::{self, ReadFn};
use crate::perm::Who;
use crate::request::Parsed;
use crate::writes::{self, WriteFn};

/// Parameters every operation takes (the caller's, and the op itself).
pub const COMMON: [&str; 4] = ["op", "user.name", "doas", "delegation"];

/// The HTTP method WebHDFS sends an operation with. It says whether the
/// operation changes what the server holds: every GET operation is a read,
/// every other one a write (WebHDFS's own split).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// GET: reads.
    Get,
    /// PUT: most writes.
    Put,
    /// POST: APPEND, CONCAT, TRUNCATE, UNSETSTORAGEPOLICY.
    Post,
    /// DELETE: DELETE, DELETESNAPSHOT.
    Delete,
}

impl Method {
    /// Whether an operation sent with this method is a write (anything but
    /// GET): refused by a read-only server.
    pub fn writes(self) -> bool {
        self != Method::Get
    }

    /// The method's name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Put => "PUT",
            Method::Post => "POST",
            Method::Delete => "DELETE",
        }
    }

    /// The method of an HTTP request's method name; `None` for one
    /// WebHDFS does not use.
    pub fn of(name: &str) -> Option<Method> {
        [Method::Get, Method::Put, Method::Post, Method::Delete]
            .into_iter()
            .find(|m| m.name() == name)
    }
}

/// What answers an operation.
#[derive(Clone, Copy)]
pub enum Handler {
    /// A read over a namespace, answered as one JSON document by both
    /// servers.
    Read(ReadFn),
    /// LISTSTATUS: a directory's listing streamed a chunk at a time
    /// ([`ops::list_status_start`]).
    List,
    /// A write of the writable server ([`writes::run`]).
    Write(WriteFn),
    /// CREATE: the first step redirects (the HTTP layer's, after
    /// [`writes::create_args`]), the second, without data, is this write.
    Create(WriteFn),
    /// A write that would carry file data (APPEND, CONCAT, TRUNCATE):
    /// refused alike by both servers ([`writes::data_refused`]), 400.
    Data,
    /// An operation neither server serves (no file data, block locations,
    /// tokens, snapshots, storage or erasure coding policies, quotas):
    /// 400 UnsupportedOperationException on both servers, read or write,
    /// whatever method it is sent with.
    NotServed,
}

impl std::fmt::Debug for Handler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Handler::Read(_) => "Read",
            Handler::List => "List",
            Handler::Write(_) => "Write",
            Handler::Create(_) => "Create",
            Handler::Data => "Data",
            Handler::NotServed => "NotServed",
        })
    }
}

/// One WebHDFS operation.
#[derive(Clone, Copy, Debug)]
pub struct OpSpec {
    /// Its name, upper case (`op=` takes it in any case).
    pub name: &'static str,
    /// The method it is sent with (GET: a read).
    pub method: Method,
    /// The parameters HDFS's WebHDFS defines for it beyond those every op
    /// takes (`op`, `user.name`, `doas`, `delegation`). Any other parameter
    /// is ignored, as the NameNode ignores it (clients send their own, such
    /// as `tempdir=` with CREATE).
    pub params: &'static [&'static str],
    /// The command the NameNode's audit log names it by (`cmd=`), or
    /// `None` for an op the NameNode does not audit (the log then names
    /// the op).
    pub audit: Option<&'static str>,
    /// Who may run it: the permission check of its path.
    pub who: Who,
    /// What answers it.
    pub handler: Handler,
}

impl OpSpec {
    /// Whether it changes the namespace (its method is not GET).
    pub fn writes(&self) -> bool {
        self.method.writes()
    }

    /// Whether it is a write neither server serves (file data, snapshots,
    /// storage and erasure-coding policies, quotas, tokens): refused alike
    /// by both, 400 UnsupportedOperationException.
    pub fn unsupported_write(&self) -> bool {
        self.writes() && matches!(self.handler, Handler::Data | Handler::NotServed)
    }

    /// The row named by the NameNode's audit command `cmd`.
    const fn audited(self, cmd: &'static str) -> OpSpec {
        OpSpec {
            audit: Some(cmd),
            ..self
        }
    }
}

const fn row(
    name: &'static str,
    method: Method,
    params: &'static [&'static str],
    who: Who,
    handler: Handler,
) -> OpSpec {
    OpSpec {
        name,
        method,
        params,
        audit: None,
        who,
        handler,
    }
}

use Handler::{Create, Data, List, NotServed, Read, Write};
use Method::{Delete, Get, Post, Put};

/// Every WebHDFS operation, reads and writes.
pub const OPS: &[OpSpec] = &[
    row(
        "GETFILESTATUS",
        Get,
        &[],
        Who::Traverse,
        Read(ops::get_file_status),
    )
    .audited("getfileinfo"),
    row("LISTSTATUS", Get, &[], Who::List, List).audited("listStatus"),
    row(
        "LISTSTATUS_BATCH",
        Get,
        &["startafter"],
        Who::List,
        Read(ops::list_status_batch),
    )
    .audited("listStatus"),
    row(
        "GETCONTENTSUMMARY",
        Get,
        &[],
        Who::Summary,
        Read(ops::content_summary),
    )
    .audited("contentSummary"),
    row(
        "GETACLSTATUS",
        Get,
        &[],
        Who::Traverse,
        Read(ops::acl_status),
    )
    .audited("getAclStatus"),
    row(
        "GETXATTRS",
        Get,
        &["xattr.name", "encoding"],
        Who::ReadXattrs,
        Read(ops::get_xattrs),
    )
    .audited("getXAttrs"),
    row(
        "LISTXATTRS",
        Get,
        &[],
        Who::ReadInode,
        Read(ops::list_xattrs),
    )
    .audited("listXAttrs"),
    row(
        "GETHOMEDIRECTORY",
        Get,
        &[],
        Who::Anyone,
        Read(ops::home_directory),
    ),
    row(
        "OPEN",
        Get,
        &["offset", "length", "buffersize", "noredirect"],
        Who::Anyone,
        NotServed,
    )
    .audited("open"),
    row(
        "GETFILECHECKSUM",
        Get,
        &["noredirect"],
        Who::Anyone,
        NotServed,
    ),
    row(
        "GETDELEGATIONTOKEN",
        Get,
        &["renewer", "service", "kind"],
        Who::Anyone,
        NotServed,
    )
    .audited("getDelegationToken"),
    row("CHECKACCESS", Get, &["fsaction"], Who::Anyone, NotServed).audited("checkAccess"),
    row(
        "GETSNAPSHOTDIFF",
        Get,
        &["oldsnapshotname", "snapshotname"],
        Who::Anyone,
        NotServed,
    )
    .audited("computeSnapshotDiff"),
    row(
        "GETSNAPSHOTTABLEDIRECTORYLIST",
        Get,
        &[],
        Who::Anyone,
        NotServed,
    )
    .audited("listSnapshottableDirectory"),
    row("GETALLSTORAGEPOLICY", Get, &[], Who::Anyone, NotServed),
    row("GETSTORAGEPOLICY", Get, &[], Who::Anyone, NotServed).audited("getStoragePolicy"),
    row("GETTRASHROOT", Get, &[], Who::Anyone, Read(ops::trash_root)),
    row("GETQUOTAUSAGE", Get, &[], Who::Anyone, NotServed).audited("quotaUsage"),
    row(
        "GETFILEBLOCKLOCATIONS",
        Get,
        &["offset", "length"],
        Who::Anyone,
        NotServed,
    )
    .audited("open"),
    row(
        "GET_BLOCK_LOCATIONS",
        Get,
        &["offset", "length"],
        Who::Anyone,
        NotServed,
    )
    .audited("open"),
    row("GETSERVERDEFAULTS", Get, &[], Who::Anyone, NotServed),
    row("GETSTATUS", Get, &[], Who::Anyone, NotServed),
    row("GETECPOLICY", Get, &[], Who::Anyone, NotServed).audited("getErasureCodingPolicy"),
    row("GETSNAPSHOTLIST", Get, &[], Who::Anyone, NotServed),
    row(
        "GETSNAPSHOTDIFFLISTING",
        Get,
        &[
            "oldsnapshotname",
            "snapshotname",
            "snapshotdiffstartpath",
            "snapshotdiffindex",
        ],
        Who::Anyone,
        NotServed,
    )
    .audited("computeSnapshotDiff"),
    row("GETLINKTARGET", Get, &[], Who::Anyone, NotServed),
    row("GETFILELINKSTATUS", Get, &[], Who::Anyone, NotServed).audited("getfileinfo"),
    row(
        "CREATE",
        Put,
        &[
            "overwrite",
            "blocksize",
            "replication",
            "permission",
            "unmaskedpermission",
            "buffersize",
            "noredirect",
            "createparent",
            "createflag",
            "storagepolicy",
            "namenoderpcaddress",
        ],
        Who::AncestorWrite,
        Create(writes::create),
    )
    .audited("create"),
    row(
        "MKDIRS",
        Put,
        &["permission", "unmaskedpermission"],
        Who::Traverse,
        Write(writes::mkdirs),
    )
    .audited("mkdirs"),
    row(
        "CREATESYMLINK",
        Put,
        &["destination", "createparent"],
        Who::AncestorWrite,
        Write(writes::symlink),
    )
    .audited("createSymlink"),
    row(
        "RENAME",
        Put,
        &["destination", "renameoptions"],
        Who::Rename,
        Write(writes::rename),
    )
    .audited("rename"),
    row(
        "SETREPLICATION",
        Put,
        &["replication"],
        Who::InodeWrite,
        Write(writes::set_replication),
    )
    .audited("setReplication"),
    row(
        "SETOWNER",
        Put,
        &["owner", "group"],
        Who::Owner,
        Write(writes::set_owner),
    )
    .audited("setOwner"),
    row(
        "SETPERMISSION",
        Put,
        &["permission"],
        Who::Owner,
        Write(writes::set_permission),
    )
    .audited("setPermission"),
    row(
        "SETTIMES",
        Put,
        &["modificationtime", "accesstime"],
        Who::InodeWrite,
        Write(writes::set_times),
    )
    .audited("setTimes"),
    row(
        "RENEWDELEGATIONTOKEN",
        Put,
        &["token"],
        Who::Anyone,
        NotServed,
    )
    .audited("renewDelegationToken"),
    row(
        "CANCELDELEGATIONTOKEN",
        Put,
        &["token"],
        Who::Anyone,
        NotServed,
    )
    .audited("cancelDelegationToken"),
    row(
        "MODIFYACLENTRIES",
        Put,
        &["aclspec"],
        Who::Owner,
        Write(writes::set_acl),
    )
    .audited("modifyAclEntries"),
    row(
        "REMOVEACLENTRIES",
        Put,
        &["aclspec"],
        Who::Owner,
        Write(writes::set_acl),
    )
    .audited("removeAclEntries"),
    row(
        "REMOVEDEFAULTACL",
        Put,
        &[],
        Who::Owner,
        Write(writes::set_acl),
    )
    .audited("removeDefaultAcl"),
    row("REMOVEACL", Put, &[], Who::Owner, Write(writes::set_acl)).audited("removeAcl"),
    row(
        "SETACL",
        Put,
        &["aclspec"],
        Who::Owner,
        Write(writes::set_acl),
    )
    .audited("setAcl"),
    row(
        "SETXATTR",
        Put,
        &["xattr.name", "xattr.value", "flag"],
        Who::XattrWrite,
        Write(writes::set_xattr),
    )
    .audited("setXAttr"),
    row(
        "REMOVEXATTR",
        Put,
        &["xattr.name"],
        Who::XattrWrite,
        Write(writes::remove_xattr),
    )
    .audited("removeXAttr"),
    row(
        "CREATESNAPSHOT",
        Put,
        &["snapshotname"],
        Who::Anyone,
        NotServed,
    )
    .audited("createSnapshot"),
    row(
        "RENAMESNAPSHOT",
        Put,
        &["oldsnapshotname", "snapshotname"],
        Who::Anyone,
        NotServed,
    )
    .audited("renameSnapshot"),
    row(
        "SETSTORAGEPOLICY",
        Put,
        &["storagepolicy"],
        Who::Anyone,
        NotServed,
    )
    .audited("setStoragePolicy"),
    row(
        "SETQUOTA",
        Put,
        &["namespacequota", "storagespacequota"],
        Who::Anyone,
        NotServed,
    )
    .audited("setQuota"),
    row("ALLOWSNAPSHOT", Put, &[], Who::Anyone, NotServed).audited("allowSnapshot"),
    row("DISALLOWSNAPSHOT", Put, &[], Who::Anyone, NotServed).audited("disallowSnapshot"),
    row(
        "SETQUOTABYSTORAGETYPE",
        Put,
        &["storagespacequota", "storagetype"],
        Who::Anyone,
        NotServed,
    )
    .audited("setQuota"),
    row("SATISFYSTORAGEPOLICY", Put, &[], Who::Anyone, NotServed).audited("satisfyStoragePolicy"),
    row("ENABLEECPOLICY", Put, &["ecpolicy"], Who::Anyone, NotServed)
        .audited("enableErasureCodingPolicy"),
    row(
        "DISABLEECPOLICY",
        Put,
        &["ecpolicy"],
        Who::Anyone,
        NotServed,
    )
    .audited("disableErasureCodingPolicy"),
    row("SETECPOLICY", Put, &["ecpolicy"], Who::Anyone, NotServed)
        .audited("setErasureCodingPolicy"),
    row(
        "APPEND",
        Post,
        &["buffersize", "noredirect"],
        Who::Anyone,
        Data,
    )
    .audited("append"),
    row("CONCAT", Post, &["sources"], Who::Anyone, Data).audited("concat"),
    row("TRUNCATE", Post, &["newlength"], Who::Anyone, Data).audited("truncate"),
    row("UNSETSTORAGEPOLICY", Post, &[], Who::Anyone, NotServed).audited("unsetStoragePolicy"),
    row("UNSETECPOLICY", Post, &[], Who::Anyone, NotServed).audited("unsetErasureCodingPolicy"),
    row(
        "DELETE",
        Delete,
        &["recursive"],
        Who::Delete,
        Write(writes::delete),
    )
    .audited("delete"),
    row(
        "DELETESNAPSHOT",
        Delete,
        &["snapshotname"],
        Who::Anyone,
        NotServed,
    )
    .audited("deleteSnapshot"),
];

/// The row of operation `op` (upper case), `None` for one WebHDFS does
/// not have.
pub fn find(op: &str) -> Option<&'static OpSpec> {
    OPS.iter().find(|r| r.name == op)
}

/// The method of WebHDFS operation `op` (upper case), `None` for an op
/// WebHDFS does not have.
pub fn method_of(op: &str) -> Option<Method> {
    find(op).map(|r| r.method)
}

/// Every operation of the table with its method.
pub fn ops() -> impl Iterator<Item = (&'static str, Method)> {
    OPS.iter().map(|r| (r.name, r.method))
}

/// The row of the request's op (`op=`, any case). Other parameters are
/// not checked here: one the op does not read is ignored and one given
/// twice takes its first value, as the NameNode takes them; each op's
/// handler checks the values it reads (`values.rs`).
///
/// # Errors
/// 400 IllegalArgumentException: no `op`, or one WebHDFS does not have.
pub fn check(req: &Parsed) -> Result<&'static OpSpec, RemoteError> {
    let op = req
        .param("op")
        .filter(|o| !o.is_empty())
        .ok_or_else(|| RemoteError::bad_argument("the op parameter is missing"))?
        .to_ascii_uppercase();
    find(&op).ok_or_else(|| {
        RemoteError::bad_argument(format!(
            "Invalid value for webhdfs parameter \"op\": No enum constant for op \"{}\"",
            echo(&op)
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::parse;

    /// The op is found in any case; any other parameter, known or not, is
    /// left to the op (the NameNode ignores those an op does not read).
    #[test]
    fn ops_are_found_and_other_parameters_left_alone() {
        let req = |q: &str| parse("/webhdfs/v1/a", Some(q)).unwrap();
        assert_eq!(
            check(&req("op=mkdirs&permission=700")).unwrap().method,
            Method::Put
        );
        assert_eq!(check(&req("op=MKDIRS&bogus=1")).unwrap().name, "MKDIRS");
        assert_eq!(
            check(&req(
                "op=CREATE&tempdir=/tmp&recursive=true&recursive=false"
            ))
            .unwrap()
            .name,
            "CREATE"
        );
        assert_eq!(check(&req("op=NOPE")).unwrap_err().status, 400);
        assert_eq!(check(&req("op=")).unwrap_err().status, 400);
        assert_eq!(check(&req("bogus=1")).unwrap_err().status, 400);
    }

    /// Each row is consistent: one row a name; reads (GET) have read
    /// handlers or none, writes write handlers or a refusal; an op that
    /// is answered names its check; a repeatable parameter is one it
    /// takes.
    #[test]
    fn rows_agree_with_themselves() {
        for (i, r) in OPS.iter().enumerate() {
            assert!(OPS[..i].iter().all(|o| o.name != r.name), "{}", r.name);
            assert_eq!(r.name, r.name.to_ascii_uppercase());
            match r.handler {
                Handler::Read(_) | Handler::List => assert!(!r.writes(), "{}", r.name),
                Handler::Write(_) | Handler::Create(_) | Handler::Data => {
                    assert!(r.writes(), "{}", r.name);
                }
                Handler::NotServed => {}
            }
            if matches!(r.handler, Handler::Data | Handler::NotServed) {
                assert_eq!(r.who, Who::Anyone, "{}", r.name);
            }
            assert!(r.params.iter().all(|p| !COMMON.contains(p)), "{}", r.name);
            assert_eq!(Method::of(r.method.name()), Some(r.method));
        }
    }
}
