//! Who may see and change what: the HDFS NameNode's permission checks
//! (HDFS Permissions Guide, "Permission Checks" and "ACLs"; Hadoop's
//! `FSPermissionChecker`), made against the namespace a request is
//! answered from, inside the same read or write of it, so that nothing is
//! checked against a state the operation does not see.
//!
//! A request's [`Caller`] is its `user.name` (HDFS's static `dr.who` when
//! absent) with the groups [`crate::identity`] finds for it, and is the
//! superuser when it is [`Permissions::superuser`] or a member of
//! [`Permissions::supergroup`]; the superuser passes every check.
//!
//! [`Gate::check`] takes what an operation needs ([`Need`]: the owner, an
//! access on the nearest existing ancestor, the parent, the inode itself,
//! or every directory below it) and checks, in `FSPermissionChecker`'s
//! order: EXECUTE on every existing component but the last (traverse),
//! the sticky bit when the parent is to be written, then the ancestor, the
//! parent, the inode, the subtree and the owner. An inode's permission is
//! its mode's owner, group or other bits (the first class the caller is
//! in), or, with an access ACL, HDFS's evaluation: the owner's bits; a
//! named user entry masked; any group entry (the owning group's or a named
//! one) the caller is in, masked, and denied if none of those grants it;
//! else the other bits. The mask is the mode's group bits, as HDFS stores
//! it.
//!
//! With [`Permissions::enabled`] off (`--no-permissions`, HDFS's
//! `dfs.permissions.enabled=false`) only what HDFS still checks is
//! checked: ownership for SETOWNER, SETPERMISSION and the ACL operations,
//! the rules of SETOWNER, and the xattr namespaces.

use crate::error::RemoteError;
use nsimage_namespace::{Inode, InodeKind, Namespace};
use std::fmt::Write as _;

/// The user of a request without `user.name` (HDFS's
/// `hadoop.http.staticuser.user`).
pub const DEFAULT_USER: &str = "dr.who";
/// HDFS's default `dfs.permissions.superusergroup`.
pub const DEFAULT_SUPERGROUP: &str = "supergroup";
/// The superuser when the root has no owner (as in generated images).
pub const FALLBACK_SUPERUSER: &str = "hdfs";

/// HDFS's default `dfs.webhdfs.user.provider.user.pattern`.
pub const USER_NAME_PATTERN: &str = "^[A-Za-z_][A-Za-z0-9._-]*[$]?$";
/// Longest user name taken (HDFS sets none; a bound on what a caller's name
/// may cost).
pub const MAX_USER_NAME: usize = 256;

/// Refuses a user name outside [`USER_NAME_PATTERN`] (or longer than
/// [`MAX_USER_NAME`]) given as parameter `param`, as WebHDFS's `UserParam`
/// does.
///
/// # Errors
/// 400 IllegalArgumentException.
pub fn check_user_name(param: &str, name: &str) -> Result<(), RemoteError> {
    let b = name.as_bytes();
    let body = b.strip_suffix(b"$").unwrap_or(b);
    let ok = b.len() <= MAX_USER_NAME
        && body
            .first()
            .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        && body
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || b"._-".contains(c));
    if ok {
        return Ok(());
    }
    Err(RemoteError::bad_argument(format!(
        "Invalid value for webhdfs parameter \"{param}\": Invalid value: \"{}\" does not belong to the domain {USER_NAME_PATTERN}",
        crate::error::echo(name)
    )))
}

/// What a request does with an xattr it names.
#[derive(Clone, Copy, Debug)]
pub enum XattrUse<'a> {
    /// GETXATTRS.
    Get,
    /// SETXATTR with this value.
    Set(&'a [u8]),
    /// REMOVEXATTR.
    Remove,
}

/// The permission settings of a server.
#[derive(Clone, Debug)]
pub struct Permissions {
    /// Whether checks are made (HDFS's `dfs.permissions.enabled`).
    pub enabled: bool,
    /// The user every check lets through (HDFS: the NameNode's user).
    pub superuser: String,
    /// Members of this group pass every check too.
    pub supergroup: String,
}

impl Permissions {
    /// Checks on, `superuser` the owner of `ns`'s root (or
    /// [`FALLBACK_SUPERUSER`] when it has none), the default supergroup.
    pub fn for_namespace(ns: &Namespace) -> Permissions {
        let owner = ns.root().user();
        Permissions {
            enabled: true,
            superuser: if owner.is_empty() {
                FALLBACK_SUPERUSER.to_string()
            } else {
                String::from_utf8_lossy(owner).into_owned()
            },
            supergroup: DEFAULT_SUPERGROUP.to_string(),
        }
    }

    /// The caller `user` with `groups`, the superuser when it is
    /// [`superuser`](Self::superuser) or in the supergroup.
    pub fn caller(&self, user: &str, groups: Vec<String>) -> Caller {
        let superuser = user == self.superuser || groups.contains(&self.supergroup);
        Caller {
            user: user.to_string(),
            groups,
            superuser,
        }
    }
}

/// Who sent a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The user name.
    pub user: String,
    /// Its groups (the primary one first, when the system has one).
    pub groups: Vec<String>,
    /// Whether checks let it through.
    pub superuser: bool,
}

impl Caller {
    /// Whether the caller is in group `g`.
    pub fn in_group(&self, g: &[u8]) -> bool {
        self.groups.iter().any(|x| x.as_bytes() == g)
    }
}

/// An access wanted: HDFS's `FsAction`, rwx bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access(u8);

impl Access {
    /// `x`.
    pub const EXECUTE: Access = Access(1);
    /// `w`.
    pub const WRITE: Access = Access(2);
    /// `r`.
    pub const READ: Access = Access(4);
    /// `r-x`.
    pub const READ_EXECUTE: Access = Access(5);
    /// `rwx`.
    pub const ALL: Access = Access(7);

    /// Whether `bits` (rwx) grant all of this access.
    fn granted_by(self, bits: u16) -> bool {
        u16::from(self.0) & !bits == 0
    }

    /// HDFS's name of the access, as its messages say it.
    pub fn name(self) -> &'static str {
        match self.0 {
            0 => "NONE",
            1 => "EXECUTE",
            2 => "WRITE",
            3 => "WRITE_EXECUTE",
            4 => "READ",
            5 => "READ_EXECUTE",
            6 => "READ_WRITE",
            _ => "ALL",
        }
    }
}

/// What an operation needs, HDFS's `checkPermission` arguments: traverse
/// (EXECUTE on every existing component but the last) always, then each
/// of these that is set.
#[derive(Clone, Copy, Debug, Default)]
pub struct Need {
    /// The caller must own the inode.
    pub owner: bool,
    /// On the nearest existing ancestor (the parent when it exists).
    pub ancestor: Option<Access>,
    /// On the parent (with WRITE, the sticky bit is checked too).
    pub parent: Option<Access>,
    /// On the inode itself, when it exists.
    pub inode: Option<Access>,
    /// On every directory of the subtree (an empty one left out when
    /// `ignore_empty_dir`), with the sticky bit of each checked for its
    /// children.
    pub subtree: Option<Access>,
    /// See `subtree`.
    pub ignore_empty_dir: bool,
    /// `inode` applies only when the inode is a directory (a listing).
    pub inode_if_dir: bool,
}

impl Need {
    /// Traverse only.
    pub const TRAVERSE: Need = Need {
        owner: false,
        ancestor: None,
        parent: None,
        inode: None,
        subtree: None,
        ignore_empty_dir: false,
        inode_if_dir: false,
    };

    /// Traverse and ownership.
    pub fn owner() -> Need {
        Need {
            owner: true,
            ..Need::TRAVERSE
        }
    }
}

/// Who may run an operation: the check the op table
/// (`params::table`) names for each WebHDFS operation, made on the
/// request's path by [`Gate::check_who`] against the namespace the
/// operation reads or changes, in the same read or write of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Who {
    /// No check: the answer reads no inode (GETHOMEDIRECTORY), or the
    /// operation is refused before anything is read (one not served, one
    /// that would carry file data).
    Anyone,
    /// Whoever may traverse to the path (EXECUTE on every directory on the
    /// way): GETFILESTATUS, GETACLSTATUS; MKDIRS, whose WRITE on the
    /// nearest existing ancestor is checked once, before the first missing
    /// directory is made.
    Traverse,
    /// READ_EXECUTE on a directory (traverse to anything else): a listing.
    List,
    /// READ_EXECUTE on every directory of the subtree: GETCONTENTSUMMARY.
    Summary,
    /// READ on the inode (Hadoop 3's listXAttrs): LISTXATTRS.
    ReadInode,
    /// The asked names' xattr namespaces, then READ on the inode:
    /// GETXATTRS.
    ReadXattrs,
    /// WRITE on the nearest existing ancestor: CREATE (and WRITE on the
    /// file it overwrites), CREATESYMLINK.
    AncestorWrite,
    /// WRITE on the parent (and its sticky bit), ALL on every non-empty
    /// directory below: DELETE.
    Delete,
    /// WRITE on the source's parent (and its sticky bit); WRITE on the
    /// nearest existing ancestor of where it lands, checked by the
    /// operation once it knows where that is: RENAME.
    Rename,
    /// The inode's owner (or the superuser): SETPERMISSION, SETOWNER (and
    /// [`Gate::check_chown`]'s rules), the ACL operations.
    Owner,
    /// WRITE on the inode: SETTIMES, SETREPLICATION.
    InodeWrite,
    /// The xattr namespace's rules ([`Gate::check_xattr`]), then for
    /// `user.` WRITE on the inode (its ownership on a sticky directory),
    /// checked by the operation: SETXATTR, REMOVEXATTR.
    XattrWrite,
}

impl Who {
    /// What [`Gate::check`] asks of the path for this op (traverse only
    /// for [`Who::Anyone`], [`Who::Summary`] and [`Who::XattrWrite`],
    /// whose checks are their own).
    pub fn need(self) -> Need {
        match self {
            Who::Anyone | Who::Traverse | Who::Summary | Who::XattrWrite => Need::TRAVERSE,
            Who::List => Need {
                inode: Some(Access::READ_EXECUTE),
                inode_if_dir: true,
                ..Need::TRAVERSE
            },
            Who::ReadInode | Who::ReadXattrs => Need {
                inode: Some(Access::READ),
                ..Need::TRAVERSE
            },
            Who::AncestorWrite => Need {
                ancestor: Some(Access::WRITE),
                ..Need::TRAVERSE
            },
            Who::Delete => Need {
                parent: Some(Access::WRITE),
                subtree: Some(Access::ALL),
                ignore_empty_dir: true,
                ..Need::TRAVERSE
            },
            Who::Rename => Need {
                parent: Some(Access::WRITE),
                ..Need::TRAVERSE
            },
            Who::Owner => Need::owner(),
            Who::InodeWrite => Need {
                inode: Some(Access::WRITE),
                ..Need::TRAVERSE
            },
        }
    }
}

/// The checks of one request: the server's settings and the caller.
#[derive(Clone, Debug)]
pub struct Gate {
    /// The server's settings.
    pub perms: std::sync::Arc<Permissions>,
    /// Who asks.
    pub caller: Caller,
}

/// The inodes along a path: the root, then each component while it
/// exists (a component under a file, or missing, ends it).
struct Walk<'n> {
    inodes: Vec<Inode<'n>>,
    /// Components in the path (the root is not one).
    len: usize,
}

impl<'n> Walk<'n> {
    fn of(ns: &'n Namespace, comps: &[Vec<u8>]) -> Walk<'n> {
        let mut inodes = Vec::with_capacity(comps.len() + 1);
        let mut cur = ns.root();
        inodes.push(cur);
        for c in comps {
            if cur.kind() != InodeKind::Directory {
                break;
            }
            let Some(next) = child(ns, &cur, c) else {
                break;
            };
            inodes.push(next);
            cur = next;
        }
        Walk {
            inodes,
            len: comps.len(),
        }
    }

    /// The inode of component `i` (0: the root), if it exists.
    fn at(&self, i: usize) -> Option<&Inode<'n>> {
        self.inodes.get(i)
    }

    /// The path's last inode, if it exists.
    fn last(&self) -> Option<&Inode<'n>> {
        self.at(self.len)
    }
}

/// Child `name` of directory `dir` (a binary search: children are in
/// name order).
pub(crate) fn child<'n>(ns: &'n Namespace, dir: &Inode<'n>, name: &[u8]) -> Option<Inode<'n>> {
    let kids = dir.child_slots();
    let i = kids
        .binary_search_by(|s| ns.at(s).map_or(&[][..], |k| k.name()).cmp(name))
        .ok()?;
    kids.get(i).and_then(|s| ns.at(s))
}

/// The path of the first `upto` components of `comps` (`/` for none).
fn prefix(comps: &[Vec<u8>], upto: usize) -> String {
    if upto == 0 {
        return "/".to_string();
    }
    let mut out = String::new();
    for c in &comps[..upto.min(comps.len())] {
        out.push('/');
        out.push_str(&String::from_utf8_lossy(c));
    }
    out
}

/// `rwxr-x---` (HDFS's `FsPermission.toString`: the last character `t`
/// or `T` with the sticky bit).
pub fn mode_string(mode: u16) -> String {
    let mut s = String::with_capacity(9);
    for shift in [6, 3, 0] {
        let b = (mode >> shift) & 7;
        s.push(if b & 4 != 0 { 'r' } else { '-' });
        s.push(if b & 2 != 0 { 'w' } else { '-' });
        s.push(if b & 1 != 0 { 'x' } else { '-' });
    }
    if mode & 0o1000 != 0 {
        let other_x = mode & 1 != 0;
        s.pop();
        s.push(if other_x { 't' } else { 'T' });
    }
    s
}

/// `"path":owner:group:drwxr-xr-x`, as HDFS's messages describe an inode.
fn describe(path: &str, n: &Inode<'_>) -> String {
    let mut s = String::new();
    let d = if n.kind() == InodeKind::Directory {
        'd'
    } else {
        '-'
    };
    let _ = write!(
        s,
        "\"{path}\":{}:{}:{d}{}",
        String::from_utf8_lossy(n.user()),
        String::from_utf8_lossy(n.group()),
        mode_string(n.mode())
    );
    s
}

/// The one `security.` xattr HDFS lets a client name.
const UNREADABLE_BY_SUPERUSER: &str = "hdfs.unreadable.by.superuser";

/// An xattr's full name as its namespace (lower case) and name.
fn split_xattr(full: &str) -> (String, &str) {
    match full.split_once('.') {
        Some((ns, name)) => (ns.to_ascii_lowercase(), name),
        None => (String::new(), full),
    }
}

/// 403 `AccessControlException`.
pub fn denied(message: String) -> RemoteError {
    RemoteError {
        status: 403,
        exception: "AccessControlException",
        java_class: "org.apache.hadoop.security.AccessControlException",
        message,
    }
}

impl Gate {
    /// The checks `need` asks for on `path` in `ns`, in HDFS's order; the
    /// superuser passes them all. Parts of the path that do not exist are
    /// left to the operation (its not-found or not-a-directory error).
    ///
    /// # Errors
    /// 403 AccessControlException naming the user, the access wanted and
    /// the inode (or the owner or sticky-bit refusal).
    pub fn check(&self, ns: &Namespace, path: &[Vec<u8>], need: Need) -> Result<(), RemoteError> {
        if self.caller.superuser {
            return Ok(());
        }
        let need = if self.perms.enabled {
            need
        } else if need.owner {
            // HDFS checks ownership (and so the traverse to the inode) for
            // chmod, chown and the ACL operations whatever
            // dfs.permissions.enabled says (`FSDirectory.checkOwner`).
            Need {
                owner: true,
                ..Need::TRAVERSE
            }
        } else {
            return Ok(());
        };
        let walk = Walk::of(ns, path);
        let len = walk.len;
        if len == 0 {
            // The root: no component to traverse to it.
            return self.final_checks(ns, path, &walk, need);
        }
        // The nearest existing ancestor: the last inode found, below the
        // path's own last component.
        let found = walk.inodes.len() - 1;
        let ancestor = found.min(len - 1);
        // Traverse: EXECUTE on every existing directory up to the ancestor.
        for i in 0..=ancestor {
            let Some(n) = walk.at(i) else { break };
            if n.kind() != InodeKind::Directory {
                // A file on the way: the operation's own error (not a
                // directory) comes before any other check.
                return Ok(());
            }
            self.access(ns, || prefix(path, i), n, Access::EXECUTE)?;
        }
        let last = walk.last();
        if let (Some(p), Some(l)) = (need.parent, last) {
            if p.0 & Access::WRITE.0 != 0 {
                if let Some(parent) = walk.at(len - 1) {
                    self.sticky(path, len, parent, l)?;
                }
            }
        }
        if let Some(a) = need.ancestor {
            if let Some(n) = walk.at(ancestor) {
                self.access(ns, || prefix(path, ancestor), n, a)?;
            }
        }
        if let Some(p) = need.parent {
            if let Some(n) = walk.at(len - 1) {
                self.access(ns, || prefix(path, len - 1), n, p)?;
            }
        }
        self.final_checks(ns, path, &walk, need)
    }

    /// The checks on the path's own inode: its access, its subtree, its
    /// owner.
    fn final_checks(
        &self,
        ns: &Namespace,
        path: &[Vec<u8>],
        walk: &Walk<'_>,
        need: Need,
    ) -> Result<(), RemoteError> {
        let len = walk.len;
        let last = walk.last();
        if let (Some(a), Some(n)) = (need.inode, last) {
            if !need.inode_if_dir || n.kind() == InodeKind::Directory {
                self.access(ns, || prefix(path, len), n, a)?;
            }
        }
        if let (Some(a), Some(n)) = (need.subtree, last) {
            self.subtree(ns, &prefix(path, len), n, a, need.ignore_empty_dir, true)?;
        }
        if let (true, Some(n)) = (need.owner, last) {
            self.owner(path, n)?;
        }
        Ok(())
    }

    /// The check `who` names, on `path` in `ns`; `xattr_names` are the
    /// names a [`Who::ReadXattrs`] asks for (their namespaces are checked
    /// first, as HDFS checks them).
    ///
    /// # Errors
    /// The refusal, 403.
    pub fn check_who<'a>(
        &self,
        ns: &Namespace,
        path: &[Vec<u8>],
        who: Who,
        xattr_names: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), RemoteError> {
        match who {
            Who::Anyone => Ok(()),
            Who::Summary => self.check_summary(ns, path),
            Who::ReadXattrs => {
                for a in xattr_names {
                    self.check_xattr(path, a, XattrUse::Get)?;
                }
                self.check(ns, path, who.need())
            }
            _ => self.check(ns, path, who.need()),
        }
    }

    /// READ_EXECUTE on every directory of the subtree at `path` (a
    /// content summary, HDFS-12130: empty directories too, no sticky bit).
    ///
    /// # Errors
    /// As [`check`](Self::check).
    pub fn check_summary(&self, ns: &Namespace, path: &[Vec<u8>]) -> Result<(), RemoteError> {
        self.check(ns, path, Need::TRAVERSE)?;
        if self.caller.superuser || !self.perms.enabled {
            return Ok(());
        }
        let walk = Walk::of(ns, path);
        match walk.last() {
            Some(n) => self.subtree(
                ns,
                &prefix(path, walk.len),
                n,
                Access::READ_EXECUTE,
                false,
                false,
            ),
            None => Ok(()),
        }
    }

    /// Whether the caller may `a` inode `n` (HDFS's `hasPermission`).
    pub fn permits(&self, ns: &Namespace, n: &Inode<'_>, a: Access) -> bool {
        if self.caller.superuser {
            return true;
        }
        let mode = n.mode();
        let is_owner = n.user() == self.caller.user.as_bytes();
        let acl = n
            .extra()
            .map(|x| &x.acl[..])
            .filter(|acl| acl.iter().any(|e| !e.default_scope));
        let Some(acl) = acl else {
            let bits = if is_owner {
                mode >> 6
            } else if self.caller.in_group(n.group()) {
                mode >> 3
            } else {
                mode
            };
            return a.granted_by(bits & 7);
        };
        // HDFS's ACL order: owner, named users, groups, other; the mask is
        // the mode's group bits.
        if is_owner {
            return a.granted_by((mode >> 6) & 7);
        }
        let mask = (mode >> 3) & 7;
        let name = |id: u32| ns.strings().get(id).unwrap_or_default();
        let access_entries = acl.iter().filter(|e| !e.default_scope);
        if let Some(e) = access_entries
            .clone()
            .find(|e| e.kind == 0 && e.name != 0 && name(e.name) == self.caller.user.as_bytes())
        {
            return a.granted_by(u16::from(e.perm) & mask);
        }
        let mut matched = false;
        for e in access_entries.filter(|e| e.kind == 1) {
            let group = if e.name == 0 { n.group() } else { name(e.name) };
            if self.caller.in_group(group) {
                if a.granted_by(u16::from(e.perm) & mask) {
                    return true;
                }
                matched = true;
            }
        }
        !matched && a.granted_by(mode & 7)
    }

    /// `a` on inode `n`, or HDFS's refusal naming it as `shown()` (made
    /// only for a refusal).
    fn access(
        &self,
        ns: &Namespace,
        shown: impl FnOnce() -> String,
        n: &Inode<'_>,
        a: Access,
    ) -> Result<(), RemoteError> {
        if self.permits(ns, n, a) {
            return Ok(());
        }
        Err(denied(format!(
            "Permission denied: user={}, access={}, inode={}",
            self.caller.user,
            a.name(),
            describe(&shown(), n)
        )))
    }

    /// The caller owns `n` (the path's last inode), or the refusal.
    fn owner(&self, path: &[Vec<u8>], n: &Inode<'_>) -> Result<(), RemoteError> {
        if self.caller.superuser || n.user() == self.caller.user.as_bytes() {
            return Ok(());
        }
        Err(denied(format!(
            "Permission denied. user={} is not the owner of inode={}",
            self.caller.user,
            prefix(path, path.len())
        )))
    }

    /// The sticky bit of `parent` (component `len - 1` of `path`) lets the
    /// caller remove or move `child` only if it owns one of the two.
    fn sticky(
        &self,
        path: &[Vec<u8>],
        len: usize,
        parent: &Inode<'_>,
        child: &Inode<'_>,
    ) -> Result<(), RemoteError> {
        self.sticky_shown(|| (prefix(path, len), prefix(path, len - 1)), parent, child)
    }

    /// The sticky-bit rule for `child` of `parent`; `shown()` gives their
    /// paths for a refusal.
    fn sticky_shown(
        &self,
        shown: impl FnOnce() -> (String, String),
        parent: &Inode<'_>,
        child: &Inode<'_>,
    ) -> Result<(), RemoteError> {
        let me = self.caller.user.as_bytes();
        if parent.mode() & 0o1000 == 0 || parent.user() == me || child.user() == me {
            return Ok(());
        }
        let (child_path, parent_path) = shown();
        Err(denied(format!(
            "Permission denied by sticky bit: user={}, path={}, parent={}",
            self.caller.user,
            describe(&child_path, child),
            describe(&parent_path, parent)
        )))
    }

    /// `a` on every directory of the subtree at `top`. With `sticky`, as
    /// HDFS's `checkSubAccess` (a stack: the last child directory next),
    /// each sticky directory's children checked against the sticky bit;
    /// without, in the order a content summary walks the tree (each
    /// directory before its children, children in name order), as HDFS
    /// checks a content summary (HDFS-12130).
    fn subtree(
        &self,
        ns: &Namespace,
        shown: &str,
        top: &Inode<'_>,
        a: Access,
        ignore_empty_dir: bool,
        sticky: bool,
    ) -> Result<(), RemoteError> {
        if top.kind() != InodeKind::Directory {
            return Ok(());
        }
        // The directories reached, each with its parent's index; a path is
        // built only for a refusal (a subtree of millions is checked under
        // the write lock for a DELETE).
        let mut seen: Vec<(usize, Inode<'_>)> = vec![(usize::MAX, *top)];
        let path_of = |seen: &[(usize, Inode<'_>)], mut i: usize, child: Option<&[u8]>| {
            let mut names: Vec<&[u8]> = child.into_iter().collect();
            while i != 0 {
                names.push(seen[i].1.name());
                i = seen[i].0;
            }
            let mut p = shown.to_string();
            for n in names.iter().rev() {
                if !p.ends_with('/') {
                    p.push('/');
                }
                p.push_str(&String::from_utf8_lossy(n));
            }
            p
        };
        let mut stack = vec![0usize];
        while let Some(i) = stack.pop() {
            let d = seen[i].1;
            if !(d.child_slots().is_empty() && ignore_empty_dir) {
                self.access(ns, || path_of(&seen, i, None), &d, a)?;
            }
            let first = stack.len();
            for c in d.children() {
                if sticky {
                    self.sticky_shown(
                        || (path_of(&seen, i, Some(c.name())), path_of(&seen, i, None)),
                        &d,
                        &c,
                    )?;
                }
                if c.kind() == InodeKind::Directory {
                    stack.push(seen.len());
                    seen.push((i, c));
                }
            }
            if !sticky {
                stack[first..].reverse();
            }
        }
        Ok(())
    }

    /// HDFS's xattr namespace rules for an attribute named in a get, set
    /// or remove (`XAttrPermissionFilter`), whether checks are on or not:
    /// `user.` is left to the inode's permissions, `trusted.` is the
    /// superuser's, `security.` holds only
    /// `security.hdfs.unreadable.by.superuser` (set without a value), and
    /// `system.` and `raw.` (reached only through `/.reserved/raw`, which
    /// this server does not serve) are refused to everyone.
    /// `security.hdfs.unreadable.by.superuser` is write-once: its removal
    /// is refused.
    ///
    /// # Errors
    /// 403 AccessControlException with HDFS's message, the user and the
    /// inode added.
    pub fn check_xattr(
        &self,
        path: &[Vec<u8>],
        full: &str,
        how: XattrUse<'_>,
    ) -> Result<(), RemoteError> {
        let (ns, name) = split_xattr(full);
        if ns == "security" && name == UNREADABLE_BY_SUPERUSER && matches!(how, XattrUse::Remove) {
            // Write-once: HDFS's `filterINodeXAttrs` refuses its removal.
            return Err(denied(format!(
                "The xattr 'security.{UNREADABLE_BY_SUPERUSER}' can not be deleted. (user={}, inode=\"{}\")",
                self.caller.user,
                prefix(path, path.len())
            )));
        }
        let allowed = match ns.as_str() {
            "user" => true,
            "trusted" => self.caller.superuser,
            "security" if name == UNREADABLE_BY_SUPERUSER => {
                if matches!(how, XattrUse::Set(v) if !v.is_empty()) {
                    return Err(denied(format!(
                        "Attempt to set a value for 'security.{UNREADABLE_BY_SUPERUSER}'. Values are not allowed for this xattr."
                    )));
                }
                true
            }
            _ => false,
        };
        if allowed {
            Ok(())
        } else {
            Err(denied(format!(
                "User doesn't have permission for xattr: {} (user={}, inode=\"{}\")",
                crate::error::echo(full),
                self.caller.user,
                prefix(path, path.len())
            )))
        }
    }

    /// Whether a listing shows the caller xattr `name` of namespace `ns`
    /// (lower case): `user.` always, `trusted.` to the superuser,
    /// `security.` only the one attribute it may hold.
    pub fn xattr_visible(&self, ns: &str, name: &[u8]) -> bool {
        match ns {
            "user" => true,
            "trusted" => self.caller.superuser,
            "security" => name == UNREADABLE_BY_SUPERUSER.as_bytes(),
            _ => false,
        }
    }

    /// SETOWNER's rules past ownership: only the superuser gives an inode
    /// to another user, and an owner gives it only to a group it is in.
    ///
    /// # Errors
    /// 403 AccessControlException with HDFS's messages.
    pub fn check_chown(&self, owner: Option<&str>, group: Option<&str>) -> Result<(), RemoteError> {
        if self.caller.superuser {
            return Ok(());
        }
        if let Some(o) = owner {
            if o != self.caller.user {
                return Err(denied(format!(
                    "User {} is not a super user (non-super user cannot change owner).",
                    self.caller.user
                )));
            }
        }
        if let Some(g) = group {
            if !self.caller.in_group(g.as_bytes()) {
                return Err(denied(format!(
                    "User {} does not belong to {g}",
                    self.caller.user
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_names_follow_webhdfs_pattern() {
        for ok in ["dr.who", "hdfs", "_svc", "svc-etl.1", "machine$", "A"] {
            assert!(check_user_name("user.name", ok).is_ok(), "{ok}");
        }
        let long = "a".repeat(MAX_USER_NAME + 1);
        for bad in ["", "9x", "a b", "a:b", "$", "a$b", "é", "-x", long.as_str()] {
            let e = check_user_name("user.name", bad).unwrap_err();
            assert_eq!(
                (e.status, e.exception),
                (400, "IllegalArgumentException"),
                "{bad}"
            );
        }
    }

    #[test]
    fn modes_read_as_hdfs_writes_them() {
        assert_eq!(mode_string(0o755), "rwxr-xr-x");
        assert_eq!(mode_string(0o1777), "rwxrwxrwt");
        assert_eq!(mode_string(0o1770), "rwxrwx--T");
        assert_eq!(mode_string(0o640), "rw-r-----");
        assert_eq!(Access::READ_EXECUTE.name(), "READ_EXECUTE");
        assert!(Access::READ_EXECUTE.granted_by(0o7));
        assert!(!Access::READ_EXECUTE.granted_by(0o4));
        assert!(Access::WRITE.granted_by(0o2));
    }
}
