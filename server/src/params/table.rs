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

/// Parameters every operation takes.
const COMMON: [&str; 4] = ["op", "user.name", "doas", "delegation"];

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
    /// refused by the writable server ([`writes::data_refused`]).
    Data,
    /// An operation neither server serves (no file data, tokens,
    /// snapshots, storage policies or quotas here): a read is 400
    /// UnsupportedOperationException on both servers, a write 403 on the
    /// read-only one and 400 on the writable one.
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
    /// The parameters it takes beyond those every op takes (`op`,
    /// `user.name`, `doas`, `delegation`); any other is 400.
    pub params: &'static [&'static str],
    /// Those of its parameters that may be given more than once with
    /// different values (GETXATTRS' `xattr.name`).
    pub repeats: &'static [&'static str],
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
        repeats: &[],
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
    ),
    row("LISTSTATUS", Get, &[], Who::List, List),
    row(
        "LISTSTATUS_BATCH",
        Get,
        &["startafter"],
        Who::List,
        Read(ops::list_status_batch),
    ),
    row(
        "GETCONTENTSUMMARY",
        Get,
        &[],
        Who::Summary,
        Read(ops::content_summary),
    ),
    row(
        "GETACLSTATUS",
        Get,
        &[],
        Who::Traverse,
        Read(ops::acl_status),
    ),
    OpSpec {
        repeats: &["xattr.name"],
        ..row(
            "GETXATTRS",
            Get,
            &["xattr.name", "encoding"],
            Who::ReadXattrs,
            Read(ops::get_xattrs),
        )
    },
    row(
        "LISTXATTRS",
        Get,
        &[],
        Who::ReadInode,
        Read(ops::list_xattrs),
    ),
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
    ),
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
    ),
    row("CHECKACCESS", Get, &["fsaction"], Who::Anyone, NotServed),
    row(
        "GETSNAPSHOTDIFF",
        Get,
        &["oldsnapshotname", "snapshotname"],
        Who::Anyone,
        NotServed,
    ),
    row(
        "GETSNAPSHOTTABLEDIRECTORYLIST",
        Get,
        &[],
        Who::Anyone,
        NotServed,
    ),
    row("GETALLSTORAGEPOLICY", Get, &[], Who::Anyone, NotServed),
    row("GETSTORAGEPOLICY", Get, &[], Who::Anyone, NotServed),
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
    ),
    row(
        "MKDIRS",
        Put,
        &["permission", "unmaskedpermission"],
        Who::Traverse,
        Write(writes::mkdirs),
    ),
    row(
        "CREATESYMLINK",
        Put,
        &["destination", "createparent"],
        Who::AncestorWrite,
        Write(writes::symlink),
    ),
    row(
        "RENAME",
        Put,
        &["destination", "renameoptions"],
        Who::Rename,
        Write(writes::rename),
    ),
    row(
        "SETREPLICATION",
        Put,
        &["replication"],
        Who::InodeWrite,
        Write(writes::set_replication),
    ),
    row(
        "SETOWNER",
        Put,
        &["owner", "group"],
        Who::Owner,
        Write(writes::set_owner),
    ),
    row(
        "SETPERMISSION",
        Put,
        &["permission"],
        Who::Owner,
        Write(writes::set_permission),
    ),
    row(
        "SETTIMES",
        Put,
        &["modificationtime", "accesstime"],
        Who::InodeWrite,
        Write(writes::set_times),
    ),
    row(
        "RENEWDELEGATIONTOKEN",
        Put,
        &["token"],
        Who::Anyone,
        NotServed,
    ),
    row(
        "CANCELDELEGATIONTOKEN",
        Put,
        &["token"],
        Who::Anyone,
        NotServed,
    ),
    row(
        "MODIFYACLENTRIES",
        Put,
        &["aclspec"],
        Who::Owner,
        Write(writes::set_acl),
    ),
    row(
        "REMOVEACLENTRIES",
        Put,
        &["aclspec"],
        Who::Owner,
        Write(writes::set_acl),
    ),
    row(
        "REMOVEDEFAULTACL",
        Put,
        &[],
        Who::Owner,
        Write(writes::set_acl),
    ),
    row("REMOVEACL", Put, &[], Who::Owner, Write(writes::set_acl)),
    row(
        "SETACL",
        Put,
        &["aclspec"],
        Who::Owner,
        Write(writes::set_acl),
    ),
    row(
        "SETXATTR",
        Put,
        &["xattr.name", "xattr.value", "flag"],
        Who::XattrWrite,
        Write(writes::set_xattr),
    ),
    row(
        "REMOVEXATTR",
        Put,
        &["xattr.name"],
        Who::XattrWrite,
        Write(writes::remove_xattr),
    ),
    row(
        "CREATESNAPSHOT",
        Put,
        &["snapshotname"],
        Who::Anyone,
        NotServed,
    ),
    row(
        "RENAMESNAPSHOT",
        Put,
        &["oldsnapshotname", "snapshotname"],
        Who::Anyone,
        NotServed,
    ),
    row(
        "SETSTORAGEPOLICY",
        Put,
        &["storagepolicy"],
        Who::Anyone,
        NotServed,
    ),
    row(
        "SETQUOTA",
        Put,
        &["namespacequota", "storagespacequota"],
        Who::Anyone,
        NotServed,
    ),
    row(
        "APPEND",
        Post,
        &["buffersize", "noredirect"],
        Who::Anyone,
        Data,
    ),
    row("CONCAT", Post, &["sources"], Who::Anyone, Data),
    row("TRUNCATE", Post, &["newlength"], Who::Anyone, Data),
    row("UNSETSTORAGEPOLICY", Post, &[], Who::Anyone, NotServed),
    row(
        "DELETE",
        Delete,
        &["recursive"],
        Who::Delete,
        Write(writes::delete),
    ),
    row(
        "DELETESNAPSHOT",
        Delete,
        &["snapshotname"],
        Who::Anyone,
        NotServed,
    ),
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

/// The row of the request's op, its parameters checked: every parameter
/// is one the op takes, none given twice with two values (but those the
/// row lets repeat); an op WebHDFS does not have is refused.
///
/// # Errors
/// 400 IllegalArgumentException, naming the op or parameter.
pub fn check(req: &Parsed) -> Result<&'static OpSpec, RemoteError> {
    let op = req
        .param("op")
        .ok_or_else(|| RemoteError::bad_argument("the op parameter is missing"))?
        .to_ascii_uppercase();
    let Some(row) = find(&op) else {
        return Err(RemoteError::bad_argument(format!(
            "Invalid value for webhdfs parameter \"op\": No enum constant for op \"{}\"",
            echo(&op)
        )));
    };
    let name = row.name;
    for (i, (n, value)) in req.params.iter().enumerate() {
        if !COMMON.contains(&n.as_str()) && !row.params.contains(&n.as_str()) {
            return Err(RemoteError::bad_argument(format!(
                "Unknown parameter \"{}\" for op={name}",
                echo(n)
            )));
        }
        // The same value twice is one (a client's session adds
        // `user.name` to a redirect's URL that holds it already).
        let repeatable = row.repeats.contains(&n.as_str());
        if !repeatable && req.params[..i].iter().any(|(m, v)| m == n && v != value) {
            return Err(RemoteError::bad_argument(format!(
                "Parameter \"{}\" is given more than once",
                echo(n)
            )));
        }
    }
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::parse;

    #[test]
    fn ops_take_only_their_parameters() {
        let req = |q: &str| parse("/webhdfs/v1/a", Some(q)).unwrap();
        assert_eq!(
            check(&req("op=mkdirs&permission=700")).unwrap().method,
            Method::Put
        );
        assert_eq!(check(&req("op=MKDIRS&bogus=1")).unwrap_err().status, 400);
        assert_eq!(
            check(&req("op=DELETE&recursive=true&recursive=false"))
                .unwrap_err()
                .status,
            400
        );
        assert!(check(&req("op=GETXATTRS&xattr.name=user.a&xattr.name=user.b")).is_ok());
        assert_eq!(check(&req("op=NOPE")).unwrap_err().status, 400);
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
            assert!(r.repeats.iter().all(|p| r.params.contains(p)));
            assert_eq!(Method::of(r.method.name()), Some(r.method));
        }
    }
}
