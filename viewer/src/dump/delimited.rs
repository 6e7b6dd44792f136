//! The delimited format: the columns of Hadoop's OIV Delimited processor,
//! one row per inode in id order.
//!
//! Path, Replication, ModificationTime, AccessTime, PreferredBlockSize,
//! BlocksCount, FileSize, NSQUOTA, DSQUOTA, Permission, UserName,
//! GroupName. As OIV writes them: times as `yyyy-MM-dd HH:mm` (UTC here);
//! for a directory replication, access time (the epoch), block size, block
//! count and size are 0 and the quotas are the directory's (-1: none); for
//! files and symlinks both quotas are 0 and a symlink's numbers are 0 (it
//! has no access time of its own: the epoch). The permission is OIV's:
//! `d` or `-` then the `rwx` triplets (a symlink gets `-`, as in OIV).
//!
//! A directory or file with ACL entries gets OIV's `+` after its
//! permission string.
//!
//! Text fields (the path, user and group) are escaped as OIV escapes them,
//! CSV style: a field holding a comma, a double quote, a line break or the
//! delimiter is wrapped in double quotes with its quotes doubled, and inside
//! it CR LF is written `%x0D%x0A`, LF `%x0A` and CR `%x0D`, so every row is
//! one line. (OIV quotes on the comma whatever the delimiter is and leaves
//! a lone CR, or an LF beside a CR LF, as it is; here the delimiter is
//! quoted too and every line break is replaced, the cases where OIV's rows
//! break apart.) Other bytes (names need not be UTF-8) are written as they
//! are.

use super::escape::num;
use super::formatter::{Formatter, Head};
use super::row::Row;
use super::scratch::Scratch;
use nsimage_namespace::{Attrs, InodeKind};

/// The header row's column names.
pub const COLUMNS: [&str; 12] = [
    "Path",
    "Replication",
    "ModificationTime",
    "AccessTime",
    "PreferredBlockSize",
    "BlocksCount",
    "FileSize",
    "NSQUOTA",
    "DSQUOTA",
    "Permission",
    "UserName",
    "GroupName",
];

pub(crate) struct Delimited {
    pub(crate) delimiter: u8,
    pub(crate) header: bool,
}

impl Delimited {
    /// Whether `s` must be quoted.
    fn needs_quotes(&self, s: &[u8]) -> bool {
        let d = self.delimiter;
        s.iter()
            .any(|&b| b == d || matches!(b, b',' | b'"' | b'\n' | b'\r'))
    }

    /// Appends `s`, quoted and escaped as above when it must be.
    fn field(&self, s: &[u8], out: &mut Vec<u8>) {
        if !self.needs_quotes(s) {
            out.extend_from_slice(s);
            return;
        }
        out.push(b'"');
        let mut i = 0;
        while i < s.len() {
            match s[i] {
                b'"' => out.extend_from_slice(b"\"\""),
                b'\r' if s.get(i + 1) == Some(&b'\n') => {
                    out.extend_from_slice(b"%x0D%x0A");
                    i += 1;
                }
                b'\r' => out.extend_from_slice(b"%x0D"),
                b'\n' => out.extend_from_slice(b"%x0A"),
                b => out.push(b),
            }
            i += 1;
        }
        out.push(b'"');
    }
}

impl Formatter for Delimited {
    fn streams(&self) -> bool {
        true
    }

    fn begin(&self, _head: &Head<'_>, _pass: usize, out: &mut Vec<u8>) {
        if self.header {
            for (i, c) in COLUMNS.iter().enumerate() {
                if i > 0 {
                    out.push(self.delimiter);
                }
                out.extend_from_slice(c.as_bytes());
            }
            out.push(b'\n');
        }
    }

    fn inode(&self, _pass: usize, inode: &Row<'_>, scratch: &mut Scratch, out: &mut Vec<u8>) {
        let d = self.delimiter;
        let start = out.len();
        inode.push_path(scratch, out);
        if self.needs_quotes(&out[start..]) {
            let raw = out.split_off(start);
            self.field(&raw, out);
        }
        let (repl, atime, bsize, nblocks, size, nsq, dsq) = match inode.attrs() {
            Attrs::File(f) => (
                f.replication,
                f.atime,
                f.preferred_block_size,
                f.blocks.len() as u64,
                f.length(),
                0,
                0,
            ),
            Attrs::Directory { ns_quota, ds_quota } => (0, 0, 0, 0, 0, ns_quota, ds_quota),
            Attrs::Symlink { .. } => (0, 0, 0, 0, 0, 0, 0),
        };
        out.push(d);
        num(repl, out);
        out.push(d);
        scratch.days.push_oiv_time(inode.mtime(), out);
        out.push(d);
        scratch.days.push_oiv_time(atime, out);
        out.push(d);
        num(bsize, out);
        out.push(d);
        num(nblocks, out);
        out.push(d);
        num(size, out);
        out.push(d);
        num(nsq, out);
        out.push(d);
        num(dsq, out);
        out.push(d);
        out.extend_from_slice(&oiv_permission(inode.kind(), inode.mode()));
        let has_acl = inode.extra().is_some_and(|e| !e.acl.is_empty());
        if has_acl && inode.kind() != InodeKind::Symlink {
            out.push(b'+');
        }
        out.push(d);
        self.field(inode.user(), out);
        out.push(d);
        self.field(inode.group(), out);
        out.push(b'\n');
    }
}

/// OIV's permission column: `d` or `-`, then `rwx` triplets as
/// [`permission_string`](crate::text::permission_string) writes them.
fn oiv_permission(kind: InodeKind, mode: u16) -> [u8; 10] {
    let mut p = [b'-'; 10];
    if kind == InodeKind::Directory {
        p[0] = b'd';
    }
    for (i, shift) in [6u16, 3, 0].into_iter().enumerate() {
        let bits = (mode >> shift) & 7;
        let at = 1 + 3 * i;
        if bits & 4 != 0 {
            p[at] = b'r';
        }
        if bits & 2 != 0 {
            p[at + 1] = b'w';
        }
        let x = bits & 1 != 0;
        p[at + 2] = if shift == 0 && mode & 0o1000 != 0 {
            if x {
                b't'
            } else {
                b'T'
            }
        } else if x {
            b'x'
        } else {
            b'-'
        };
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::permission_string;

    #[test]
    fn permission_column_is_oivs() {
        for kind in [InodeKind::File, InodeKind::Directory, InodeKind::Symlink] {
            for mode in 0..0o2000u16 {
                let mut want = permission_string(kind, mode).into_bytes();
                want[0] = if kind == InodeKind::Directory {
                    b'd'
                } else {
                    b'-'
                };
                assert_eq!(oiv_permission(kind, mode).as_slice(), &want[..]);
            }
        }
    }
}
