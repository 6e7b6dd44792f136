//! WebHDFS's parameter values parsed with HDFS's rules (booleans, octal
//! permissions, numbers, paths), and HDFS's reserved paths
//! (`/.reserved`, `/.reserved/.inodes/<id>`). Which parameters an op
//! takes is its row's in the op table (`table.rs` beside this file).

use crate::error::{echo, RemoteError};
use crate::request::Parsed;
use nsimage_namespace::RESERVED_NAME;
use nsimage_viewer::paths::ImagePath;

fn invalid(name: &str, value: &str, why: &str) -> RemoteError {
    RemoteError::bad_argument(format!(
        "Invalid value for webhdfs parameter \"{name}\": \"{}\" ({why})",
        echo(value)
    ))
}

/// A boolean parameter (`true`/`false`, any case; empty: the default).
pub fn boolean(req: &Parsed, name: &str, default: bool) -> Result<bool, RemoteError> {
    match req.param(name).filter(|v| !v.is_empty()) {
        None => Ok(default),
        Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
        Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
        Some(v) => Err(invalid(name, v, "true or false")),
    }
}

/// A numeric parameter's text: `None` when absent, empty or HDFS's
/// `null` (its numeric parameters' way of saying "the default").
fn numeric<'a>(req: &'a Parsed, name: &str) -> Option<&'a str> {
    req.param(name).filter(|v| !v.is_empty() && *v != "null")
}

/// An octal permission, 0 to 1777 (HDFS's PermissionParam: a radix-8
/// short, a sign allowed, leading zeros too).
pub fn permission(req: &Parsed, default: u16) -> Result<u16, RemoteError> {
    match numeric(req, "permission") {
        None => Ok(default),
        Some(v) => i32::from_str_radix(v, 8)
            .ok()
            .and_then(|p| u16::try_from(p).ok())
            .filter(|&p| p <= 0o1777)
            .ok_or_else(|| invalid("permission", v, "octal, 0 to 1777")),
    }
}

/// A decimal number in `min..=max` (absent, empty or `null`: `None`).
pub fn number(req: &Parsed, name: &str, min: i64, max: i64) -> Result<Option<i64>, RemoteError> {
    match numeric(req, name) {
        None => Ok(None),
        Some(v) => v
            .parse::<i64>()
            .ok()
            .filter(|n| (min..=max).contains(n))
            .map(Some)
            .ok_or_else(|| invalid(name, v, &format!("a number from {min} to {max}"))),
    }
}

/// A text parameter that must be there and not empty.
pub fn required<'a>(req: &'a Parsed, name: &str) -> Result<&'a str, RemoteError> {
    req.param(name)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| RemoteError::bad_argument(format!("the {name} parameter is missing")))
}

/// An absolute path parameter (RENAME's `destination`), under the same
/// rules as a request's path.
pub fn path(req: &Parsed, name: &str) -> Result<ImagePath, RemoteError> {
    let v = required(req, name)?;
    if !v.starts_with('/') {
        return Err(invalid(name, v, "not an absolute path"));
    }
    let p = ImagePath::parse(v).map_err(|e| invalid(name, v, &e.to_string()))?;
    check_new_path(&p, v)?;
    Ok(p)
}

/// A path where something is created or moved to: no `:` in a name
/// (HDFS's `DFSUtil.isValidName`; `.`, `..` and NUL are refused by every
/// path's parse).
pub fn check_new_path(p: &ImagePath, given: &str) -> Result<(), RemoteError> {
    if p.components().iter().any(|c| c.contains(&b':')) {
        return Err(RemoteError::bad_argument(format!(
            "Invalid path name {}",
            echo(given)
        )));
    }
    Ok(())
}

/// The directory under HDFS's `/.reserved` that names inodes by id
/// (`/.reserved/.inodes/<id>`).
pub const DOT_INODES: &[u8] = b".inodes";

/// Whether `p` is HDFS's `/.reserved` or a path under it: a path that
/// names no ordinary inode (the name itself is the namespace's
/// [`RESERVED_NAME`], which no write can create under the root).
pub fn is_reserved(p: &ImagePath) -> bool {
    p.components()
        .first()
        .is_some_and(|c| c.as_slice() == RESERVED_NAME)
}

/// `/.reserved/.inodes/<id>` and what follows it: the id as given (a
/// decimal number or not: the caller judges) and the components after it.
/// `None` for any other path.
pub fn inode_path(p: &ImagePath) -> Option<(&[u8], &[Vec<u8>])> {
    match p.components() {
        [r, i, id, rest @ ..] if r.as_slice() == RESERVED_NAME && i.as_slice() == DOT_INODES => {
            Some((id.as_slice(), rest))
        }
        _ => None,
    }
}

/// The refusal of write `op` naming `given`, a path under `/.reserved`
/// (the op's own path, RENAME's destination, CREATESYMLINK's link or
/// target), as HDFS refuses reserved paths: MKDIRS with HDFS's
/// HadoopIllegalArgumentException (it will not create `/.reserved`), every
/// other write with its InvalidPathException. Both are 400. (HDFS writes
/// through `/.reserved/.inodes/<id>` and `/.reserved/raw`; this server
/// does not.)
pub fn reserved_refused(op: &str, given: &str) -> RemoteError {
    if op == "MKDIRS" {
        return reserved_name(given);
    }
    RemoteError {
        status: 400,
        exception: "InvalidPathException",
        java_class: "org.apache.hadoop.fs.InvalidPathException",
        message: format!(
            "Invalid path name {}: /.reserved and the paths under it are reserved (op={op})",
            echo(given)
        ),
    }
}

/// HDFS's refusal to make `/.reserved` (its HadoopIllegalArgumentException,
/// 400), for an operation on `given` that would make it or move an inode
/// to it (the namespace refuses both, whatever the route).
pub fn reserved_name(given: &str) -> RemoteError {
    RemoteError {
        status: 400,
        exception: "HadoopIllegalArgumentException",
        java_class: "org.apache.hadoop.HadoopIllegalArgumentException",
        message: format!(
            "{}: \"/.reserved\" is a reserved name: nothing is made or moved there",
            echo(given)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::parse;

    #[test]
    fn values_follow_hdfs_rules() {
        let req = |q: &str| parse("/webhdfs/v1/a", Some(q)).unwrap();
        let r = req("op=MKDIRS&permission=1777");
        assert_eq!(permission(&r, 0o755).unwrap(), 0o1777);
        assert_eq!(
            permission(&req("op=MKDIRS&permission=000755"), 0).unwrap(),
            0o755
        );
        assert_eq!(
            permission(&req("op=MKDIRS&permission=%2B644"), 0).unwrap(),
            0o644
        );
        assert_eq!(
            permission(&req("op=MKDIRS&permission=null"), 0o700).unwrap(),
            0o700
        );
        assert_eq!(
            number(
                &req("op=SETTIMES&modificationtime=null"),
                "modificationtime",
                -1,
                9
            )
            .unwrap(),
            None
        );
        for bad in ["8", "2000", "-1", "abc", "01777x", "99999999999"] {
            assert!(
                permission(&req(&format!("op=MKDIRS&permission={bad}")), 0).is_err(),
                "{bad}"
            );
        }
        assert!(boolean(&req("op=DELETE&recursive=yes"), "recursive", false).is_err());
        assert!(boolean(&req("op=DELETE&recursive=TRUE"), "recursive", false).unwrap());
    }
}
