//! The audit log (`serve --audit-log FILE`): one line per WebHDFS request,
//! answered or refused, in the form of the NameNode's `FSNamesystem.audit`
//! logger, so that what operators grep for (`allowed= ugi= ip= cmd= src=
//! dst= perm= proto=`) reads the same:
//!
//! ```text
//! 2026-12-07 07:10:01,123 INFO FSNamesystem.audit: allowed=true ugi=etl (auth:SIMPLE) ip=/127.0.0.1 cmd=mkdirs src=/data/in dst=null perm=etl:etl:rwxr-xr-x proto=webhdfs
//! ```
//!
//! The fields are separated by tabs (shown as spaces above). `cmd` is the NameNode's name for the
//! operation where it has one (the op table's `audit` column), else the op
//! in lower case; `perm` is the inode's `owner:group:mode` after a write
//! that sets it (mkdirs, create, createSymlink, setPermission, setOwner);
//! `allowed=false` marks a request that was refused (any 4xx or 5xx
//! answer: a permission refusal as the NameNode marks it, and every other
//! refusal too, which the NameNode does not log). Every field is written
//! with control characters escaped (`\x0a`), so that no path, user, owner
//! or group name forges a line or a field. Only WebHDFS requests are
//! logged (an HA member's own paths are not), and CREATE's two steps are
//! two lines (the redirect's with `perm=null`).
//! Lines are appended, each in one write, to a file opened in append mode,
//! before the request's answer is sent (off the runtime's other tasks:
//! `block_in_place`); the log is not synced (nor is the NameNode's).

use nsimage_viewer::text::{escaped, log_time};
use parking_lot::Mutex;
use std::fs::File;
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// One request as the audit log records it.
#[derive(Clone, Debug)]
pub struct AuditEntry<'a> {
    /// The answer was not a refusal (its status is below 400).
    pub allowed: bool,
    /// The caller (`user.name`, `dr.who` without one).
    pub user: &'a str,
    /// The client's address.
    pub ip: IpAddr,
    /// The NameNode's name for the operation.
    pub cmd: &'a str,
    /// The request's path.
    pub src: &'a [u8],
    /// RENAME's and CREATESYMLINK's destination.
    pub dst: Option<&'a str>,
    /// `owner:group:mode` after a write that sets it.
    pub perm: Option<String>,
}

/// An open audit log.
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    file: Mutex<File>,
}

impl AuditLog {
    /// Opens (or creates) `path` for appending.
    ///
    /// # Errors
    /// The file cannot be opened for appending.
    pub fn open(path: &Path) -> std::io::Result<AuditLog> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(AuditLog {
            path: path.to_path_buf(),
            file: Mutex::new(file),
        })
    }

    /// The file it writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `e`'s line, stamped with the time now. A write that fails
    /// is said on stderr; the request it records has been answered.
    pub fn record(&self, e: &AuditEntry<'_>) {
        let line = line(&log_time(crate::ha::journal::now_ms()), e);
        let append = || {
            if let Err(err) = self.file.lock().write_all(line.as_bytes()) {
                eprintln!("nsimage serve: audit log {}: {err}", self.path.display());
            }
        };
        // The line is written before the answer goes out (a client that
        // has its answer finds its line), so the append blocks; on a
        // worker of the server's multi-threaded runtime, the runtime is
        // told first, and moves the worker's other tasks to another
        // thread while a slow disk holds this one.
        match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(append),
            _ => append(),
        }
    }
}

/// The line of `e` at time `at` (with its newline).
pub fn line(at: &str, e: &AuditEntry<'_>) -> String {
    format!(
        "{at} INFO FSNamesystem.audit: allowed={}\tugi={} (auth:SIMPLE)\tip=/{}\tcmd={}\tsrc={}\tdst={}\tperm={}\tproto=webhdfs\n",
        e.allowed,
        escaped(e.user.as_bytes()),
        e.ip,
        escaped(e.cmd.as_bytes()),
        escaped(e.src),
        e.dst.map_or("null".into(), |d| escaped(d.as_bytes())),
        e.perm
            .as_deref()
            .map_or("null".into(), |p| escaped(p.as_bytes())),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_as_the_namenodes() {
        let e = AuditEntry {
            allowed: false,
            user: "etl",
            ip: IpAddr::from([127, 0, 0, 1]),
            cmd: "rename",
            src: b"/a\nallowed=true\tb",
            dst: Some("/c"),
            perm: Some("x\ny:g:rwx------".into()),
        };
        assert_eq!(
            line("2026-12-07 07:10:01,123", &e),
            "2026-12-07 07:10:01,123 INFO FSNamesystem.audit: allowed=false\tugi=etl (auth:SIMPLE)\t\
             ip=/127.0.0.1\tcmd=rename\tsrc=/a\\x0aallowed=true\\x09b\tdst=/c\t\
             perm=x\\x0ay:g:rwx------\tproto=webhdfs\n"
        );
    }
}
