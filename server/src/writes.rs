//! The WebHDFS write operations over a live [`Store`], with the HDFS
//! NameNode's semantics and exception classes. Each operation is one or a
//! few journal ops, each built from the namespace and applied atomically
//! with its checks ([`Store::submit_with`]); the answer is sent once the
//! last of them is durable (the caller waits for [`Outcome::txid`]).
//!
//! Owner of new inodes: the `user.name` parameter (`dr.who` without one);
//! group: the parent directory's group; a directory's default ACL is
//! inherited by its new files and directories (HDFS's rules; the mode at
//! creation, the ACL entries as the next op).

use crate::acl;
use crate::error::{echo, RemoteError};
use crate::ha::journal::now_ms;
use crate::params::values::{self, boolean, check_new_path, number, permission, required};
use crate::perm::{child, Access, Gate, Need, Who, XattrUse};
use crate::request::Parsed;
use crate::xattrs::{xattr_name, xattr_value};
use nsimage_format::pb::{self, journal_op::Op};
use nsimage_namespace::{Attrs, Inode, InodeKind, Namespace, NsError, XAttrNs};
use nsimage_store::{Store, StoreError, SubmitError};
use nsimage_viewer::paths::ImagePath;
use serde_json::json;

/// HDFS's default replication (`dfs.replication`).
pub const DEFAULT_REPLICATION: u16 = 3;
/// HDFS's most replicas (`dfs.replication.max`).
pub const MAX_REPLICATION: i64 = 512;
/// HDFS's default block size (`dfs.blocksize`).
pub const DEFAULT_BLOCK_SIZE: u64 = 128 << 20;
/// HDFS's least block size (`dfs.namenode.fs-limits.min-block-size`).
pub const MIN_BLOCK_SIZE: i64 = 1 << 20;
/// The user of a request without `user.name` (HDFS's static user).
pub const DEFAULT_USER: &str = "dr.who";

/// What a write answers.
#[derive(Debug, PartialEq)]
pub enum Done {
    /// 200 with a JSON document.
    Json(serde_json::Value),
    /// 200 with an empty body.
    Empty,
    /// 201 Created with a `Location` (CREATE's second step).
    Created {
        /// The new file's `hdfs://` URI.
        location: String,
    },
}

/// A write's result and the txid its answer waits for.
#[derive(Debug)]
pub struct Outcome {
    /// The answer or the error.
    pub result: Result<Done, RemoteError>,
    /// Durable before the answer goes out: the last op this request
    /// applied, or (none applied) the newest op its checks saw.
    pub txid: u64,
}

/// The refusal of an op that would carry file data.
pub fn data_refused(op: &str) -> RemoteError {
    RemoteError::unsupported(format!(
        "op={}: this server keeps the namespace only (no file data): a file can only be created empty",
        echo(op)
    ))
}

fn already_exists(message: String) -> RemoteError {
    RemoteError {
        status: 403,
        exception: "FileAlreadyExistsException",
        java_class: "org.apache.hadoop.fs.FileAlreadyExistsException",
        message,
    }
}

fn parent_not_dir(message: String) -> RemoteError {
    RemoteError {
        status: 403,
        exception: "ParentNotDirectoryException",
        java_class: "org.apache.hadoop.fs.ParentNotDirectoryException",
        message,
    }
}

fn not_empty(message: String) -> RemoteError {
    RemoteError {
        status: 403,
        exception: "PathIsNotEmptyDirectoryException",
        java_class: "org.apache.hadoop.fs.PathIsNotEmptyDirectoryException",
        message,
    }
}

/// A refusal of the namespace as HDFS's exception, about `path`.
fn ns_error(e: &NsError, path: &str) -> RemoteError {
    match e {
        NsError::NotFound(_) | NsError::NoInode(_) => {
            RemoteError::not_found(format!("File does not exist: {path}"))
        }
        NsError::AlreadyExists(n) => already_exists(format!("{path}: {n} already exists")),
        NsError::NotADirectory(_) => parent_not_dir(format!("{path}: a parent is not a directory")),
        NsError::NotEmpty(_) => not_empty(format!("`{path} is non empty': Directory is not empty")),
        NsError::NotAFile(_) => RemoteError::io(format!("{path}: not a file")),
        NsError::IntoOwnSubtree(_) => RemoteError::io(format!(
            "{path}: a directory cannot be moved into its own subtree"
        )),
        NsError::Root(what) => RemoteError::io(format!("cannot {what} the root directory")),
        NsError::Reserved(_) => values::reserved_name(path),
        NsError::IdsExhausted | NsError::StringTableFull | NsError::ClassTableFull => {
            RemoteError::io(format!("{path}: {e}"))
        }
        _ => RemoteError::bad_argument(format!("{path}: {e}")),
    }
}

fn store_error(e: StoreError, path: &str) -> RemoteError {
    match e {
        StoreError::Refused(ns) => ns_error(&ns, path),
        other => RemoteError::internal(format!("the store failed: {other}")),
    }
}

/// A write operation's handler (its row's in the op table): the answer
/// of `req`'s write, made through the [`Steps`] (each step checks, in the
/// namespace it builds its op from, what the op's row names).
pub type WriteFn = fn(&mut Steps<'_>, &Parsed) -> Result<Done, RemoteError>;

/// The one way this module changes the store: each step builds at most
/// one op from the namespace and applies it atomically with what it
/// checked (`Store::submit_with`); the last txid applied is kept for the
/// durability wait.
pub struct Steps<'a> {
    store: &'a Store,
    /// The op's name, upper case.
    op: &'static str,
    /// Who may run it: the check of its row in the op table.
    who: Who,
    /// The caller's checks, made in each step against the namespace it
    /// builds its op from.
    gate: &'a Gate,
    path: String,
    last: Option<u64>,
}

impl Steps<'_> {
    /// One step; true when it applied an op.
    fn step(
        &mut self,
        build: impl FnOnce(&Namespace) -> Result<Option<Op>, RemoteError>,
    ) -> Result<bool, RemoteError> {
        match self.store.submit_with(build) {
            Ok(Some(t)) => {
                self.last = Some(t);
                Ok(true)
            }
            Ok(None) => Ok(false),
            Err(SubmitError::Build(e)) => Err(e),
            Err(SubmitError::Store(e)) => Err(store_error(e, &self.path)),
        }
    }
}

impl Steps<'_> {
    /// Ops built one after another under one exclusive lock
    /// (`Store::submit_chain_with`) until `build` returns `None`: an
    /// operation of several ops that nothing comes between. True when one
    /// applied.
    fn chain(
        &mut self,
        build: impl FnMut(&Namespace) -> Result<Option<Op>, RemoteError>,
    ) -> Result<bool, RemoteError> {
        let (last, outcome) = self.store.submit_chain_with(build);
        if last.is_some() {
            self.last = last;
        }
        match outcome {
            Ok(()) => Ok(last.is_some()),
            Err(SubmitError::Build(e)) => Err(e),
            Err(SubmitError::Store(e)) => Err(store_error(e, &self.path)),
        }
    }
}

/// Where a path is: its inode id, `None` when it (or only its last
/// component) is missing; an ancestor that is not a directory is
/// ParentNotDirectoryException.
fn lookup(ns: &Namespace, path: &[u8], shown: &str) -> Result<Option<u64>, RemoteError> {
    match ns.resolve(path) {
        Ok(id) => Ok(Some(id)),
        Err(NsError::NotFound(_)) => Ok(None),
        Err(NsError::NotADirectory(_)) => Err(parent_not_dir(format!(
            "{shown}: a parent of it is not a directory"
        ))),
        Err(e) => Err(ns_error(&e, shown)),
    }
}

fn existing<'n>(ns: &'n Namespace, path: &[u8], shown: &str) -> Result<Inode<'n>, RemoteError> {
    lookup(ns, path, shown)?
        .and_then(|id| ns.inode(id))
        .ok_or_else(|| RemoteError::not_found(format!("File does not exist: {shown}")))
}

/// The directory `parent` of a path to be made (`shown` in messages):
/// ParentNotDirectoryException when it is not one, FileNotFoundException
/// when it does not exist.
fn parent_dir<'n>(ns: &'n Namespace, parent: &[u8], shown: &str) -> Result<Inode<'n>, RemoteError> {
    match lookup(ns, parent, shown)?.and_then(|id| ns.inode(id)) {
        Some(d) if d.kind() == InodeKind::Directory => Ok(d),
        Some(_) => Err(parent_not_dir(format!(
            "{shown}: a parent of it is not a directory"
        ))),
        None => Err(RemoteError::not_found(format!(
            "Parent directory doesn't exist: {}",
            String::from_utf8_lossy(parent)
        ))),
    }
}

fn canonical(p: &ImagePath) -> Vec<u8> {
    p.canonical()
}

fn parent_of(p: &ImagePath) -> Option<(Vec<u8>, Vec<u8>)> {
    let (name, up) = p.components().split_last()?;
    let mut parent = Vec::new();
    for c in up {
        parent.push(b'/');
        parent.extend_from_slice(c);
    }
    if parent.is_empty() {
        parent.push(b'/');
    }
    Some((parent, name.clone()))
}

fn user(req: &Parsed) -> Vec<u8> {
    req.param("user.name")
        .filter(|u| !u.is_empty())
        .unwrap_or(DEFAULT_USER)
        .as_bytes()
        .to_vec()
}

/// Runs write `op` (upper case, its row's `who` and `handler`) on `req`'s
/// path (CREATE here is its second step, whose request came without
/// data). No write goes through `/.reserved` (HDFS's reserved paths).
pub fn run(
    store: &Store,
    op: &'static str,
    who: Who,
    handler: WriteFn,
    req: &Parsed,
    gate: &Gate,
) -> Outcome {
    let shown = String::from_utf8_lossy(&req.path.canonical()).into_owned();
    let mut steps = Steps {
        store,
        op,
        who,
        gate,
        path: shown,
        last: None,
    };
    let result = if values::is_reserved(&req.path) {
        Err(values::reserved_refused(op, req.path.given()))
    } else {
        handler(&mut steps, req)
    };
    let txid = steps.last.unwrap_or_else(|| store.txid());
    Outcome { result, txid }
}

/// The handler of a write that would carry file data (APPEND, CONCAT,
/// TRUNCATE): [`data_refused`].
pub fn carries_data(s: &mut Steps<'_>, _: &Parsed) -> Result<Done, RemoteError> {
    Err(data_refused(s.op))
}

/// The handler of a write this metadata server does not serve
/// (snapshots, storage policies, quotas, tokens): 400
/// UnsupportedOperationException.
pub fn not_served(s: &mut Steps<'_>, _: &Parsed) -> Result<Done, RemoteError> {
    Err(write_not_served(s.op))
}

/// The refusal of a write neither server serves, the same from both
/// (the read-only server's too): 400 UnsupportedOperationException.
pub fn write_not_served(op: &str) -> RemoteError {
    RemoteError::unsupported(format!(
        "op={} is not served by this metadata server (no snapshots, quotas, storage or \
         erasure coding policies, tokens)",
        crate::error::echo(op)
    ))
}

/// The next missing directory of `comps` (all of a path, or all but its
/// last component) as a Mkdir op, `None` once every one exists: the last
/// gets `mode`, the ones above it `mode | 0o300` (HDFS's implicit u+wx).
/// Fails as HDFS's mkdirs when a component is a file. Before the first
/// directory is made, WRITE on the nearest existing ancestor of `checked`
/// (the path the operation names: HDFS's ancestor check of mkdirs and
/// create) is checked once (`*ancestor_checked`), as HDFS checks it once
/// before making them all.
struct DirMaker<'a> {
    gate: &'a Gate,
    comps: &'a [Vec<u8>],
    checked: &'a [Vec<u8>],
    mode: u16,
    user: &'a [u8],
    shown: &'a str,
    mtime: u64,
    ancestor_checked: bool,
}

impl<'a> DirMaker<'a> {
    /// The missing parents of `comps` (a new file's or symlink's), 0755
    /// as HDFS makes them, owned by `user`; the ancestor check is the
    /// caller's, made before anything is made.
    fn parents(
        gate: &'a Gate,
        comps: &'a [Vec<u8>],
        user: &'a [u8],
        shown: &'a str,
        mtime: u64,
    ) -> DirMaker<'a> {
        DirMaker {
            gate,
            comps: &comps[..comps.len().saturating_sub(1)],
            checked: comps,
            mode: 0o755,
            user,
            shown,
            mtime,
            ancestor_checked: true,
        }
    }

    fn next(&mut self, ns: &Namespace, follow: &mut Follow) -> Result<Option<Op>, RemoteError> {
        let shown = self.shown;
        let mut cur = nsimage_namespace::ROOT_ID;
        for (i, c) in self.comps.iter().enumerate() {
            let dir = ns
                .inode(cur)
                .ok_or_else(|| RemoteError::not_found(format!("File does not exist: {shown}")))?;
            if dir.kind() != InodeKind::Directory {
                return Err(parent_not_dir(format!(
                    "{shown}: a parent of it is not a directory"
                )));
            }
            match child(ns, &dir, c) {
                Some(k) => cur = k.id(),
                None => {
                    if !self.ancestor_checked {
                        self.gate
                            .check(ns, self.checked, Who::AncestorWrite.need())?;
                        self.ancestor_checked = true;
                    }
                    let last = i + 1 == self.comps.len();
                    let wanted = if last { self.mode } else { self.mode | 0o300 };
                    let mode = follow.new_inode(ns, &dir, c, wanted, true);
                    return Ok(Some(Op::Mkdir(pb::CreateOp {
                        parent: cur,
                        name: c.clone(),
                        user: self.user.to_vec(),
                        group: dir.group().to_vec(),
                        mode: u32::from(mode),
                        mtime: self.mtime,
                        ..Default::default()
                    })));
                }
            }
        }
        // All there: the last must be a directory.
        match ns.inode(cur) {
            Some(n) if n.kind() != InodeKind::Directory => {
                Err(already_exists(format!("Path is not a directory: {shown}")))
            }
            _ => Ok(None),
        }
    }
}

/// What follows, in the same chain, the creation of an inode that
/// inherits its parent's default ACL (HDFS's `copyINodeDefaultAcl`): it is
/// created with no group bits, then given its ACL, then its mode (whose
/// group bits are the ACL's mask). Each is journaled on its own, and every
/// prefix of the three grants no more than the whole, so a crash between
/// them fails closed.
#[derive(Default)]
struct Follow {
    /// The new inode: its parent and name.
    target: Option<(u64, Vec<u8>)>,
    acl: Option<Vec<acl::Entry>>,
    mode: u16,
}

impl Follow {
    /// The mode to create child `name` of `dir` with, asking `mode`; what
    /// must follow is kept for [`next`](Self::next).
    fn new_inode(
        &mut self,
        ns: &Namespace,
        dir: &Inode<'_>,
        name: &[u8],
        mode: u16,
        is_dir: bool,
    ) -> u16 {
        match acl::inherit(&stored_acl(ns, dir), mode, is_dir) {
            Some((entries, m)) if !entries.is_empty() => {
                *self = Follow {
                    target: Some((dir.id(), name.to_vec())),
                    acl: Some(entries),
                    mode: m,
                };
                m & !0o070
            }
            Some((_, m)) => m,
            None => mode,
        }
    }

    /// The next op for the inode created last, `None` when none is left.
    fn next(&mut self, ns: &Namespace) -> Option<Op> {
        let (parent, name) = self.target.as_ref()?;
        let id = ns
            .inode(*parent)
            .and_then(|p| child(ns, &p, name))
            .map(|k| k.id());
        let Some(id) = id else {
            *self = Follow::default();
            return None;
        };
        if let Some(entries) = self.acl.take() {
            return Some(acl_op(id, entries));
        }
        self.target = None;
        (self.mode & 0o070 != 0).then(|| {
            Op::SetMode(pb::SetModeOp {
                id,
                mode: u32::from(self.mode),
            })
        })
    }
}

fn acl_op(id: u64, entries: Vec<acl::Entry>) -> Op {
    Op::SetAcl(pb::SetAclOp {
        id,
        entries: entries
            .into_iter()
            .map(|e| pb::JournalAclEntry {
                name: e.name,
                r#type: e.kind as i32,
                default_scope: e.default,
                permission: u32::from(e.perm),
            })
            .collect(),
    })
}

/// MKDIRS (as `mkdir -p`).
pub fn mkdirs(s: &mut Steps<'_>, req: &Parsed) -> Result<Done, RemoteError> {
    check_new_path(&req.path, req.path.given())?;
    let mode = permission(req, 0o755)?;
    let shown = s.path.clone();
    let comps = req.path.components();
    let owner = user(req);
    let gate = s.gate;
    let mut dirs = DirMaker {
        gate,
        comps,
        checked: comps,
        mode,
        user: &owner,
        shown: &shown,
        mtime: now_ms(),
        ancestor_checked: false,
    };
    let mut follow = Follow::default();
    let mut first = true;
    let need = s.who.need();
    s.chain(|ns| {
        if first {
            gate.check(ns, comps, need)?;
            first = false;
        }
        match follow.next(ns) {
            Some(op) => Ok(Some(op)),
            None => dirs.next(ns, &mut follow),
        }
    })?;
    Ok(Done::Json(json!({ "boolean": true })))
}

/// CREATE's request, checked: what both steps check before anything is
/// done (the first step, the redirect, so that its `Location` never
/// carries a value the second would refuse).
pub struct CreateArgs {
    overwrite: bool,
    create_parent: bool,
    mode: u16,
    replication: u16,
    block_size: u64,
}

/// Checks CREATE's path (not under `/.reserved`, a valid new name) and
/// parameters (`overwrite`, `createparent`, `permission`, `replication`,
/// `blocksize` with HDFS's limits).
///
/// # Errors
/// The refusal each bad one gets.
pub fn create_args(req: &Parsed) -> Result<CreateArgs, RemoteError> {
    if values::is_reserved(&req.path) {
        return Err(values::reserved_refused("CREATE", req.path.given()));
    }
    check_new_path(&req.path, req.path.given())?;
    let overwrite = boolean(req, "overwrite", false)?;
    let create_parent = boolean(req, "createparent", true)?;
    let mode = permission(req, 0o644)?;
    let replication = number(req, "replication", i64::MIN, i64::MAX)?
        .map_or(Ok(DEFAULT_REPLICATION), check_replication)?;
    // At least 1 (HDFS's BlockSizeParam: 400 otherwise), then at least
    // the NameNode's minimum (its startFile's IOException).
    let block_size = match number(req, "blocksize", 1, i64::MAX)? {
        None => DEFAULT_BLOCK_SIZE,
        Some(b) if b < MIN_BLOCK_SIZE => {
            return Err(RemoteError::io(format!(
                "Specified block size is less than configured minimum value (dfs.namenode.fs-limits.min-block-size): {b} < {MIN_BLOCK_SIZE}"
            )))
        }
        // Positive here: its magnitude is itself.
        Some(b) => b.unsigned_abs(),
    };
    Ok(CreateArgs {
        overwrite,
        create_parent,
        mode,
        replication,
        block_size,
    })
}

/// What CREATE and CREATESYMLINK share: the new entry's parent and name,
/// owner and time, and the start of its chain (HDFS's startFile and
/// createSymlink under one lock): the ops that follow an inode just made
/// (an inherited default ACL) first at every step, then once the row's
/// check (WRITE on the nearest existing ancestor, [`Who::AncestorWrite`],
/// with `extra` added), then the missing parents when asked.
struct NewEntry {
    shown: String,
    parent: Vec<u8>,
    name: Vec<u8>,
    owner: Vec<u8>,
    mtime: u64,
    follow: Follow,
    checked: bool,
    parents_done: bool,
}

impl NewEntry {
    /// The entry `req` names; `at_root`: the refusal of `/` itself.
    fn of(s: &Steps<'_>, req: &Parsed, at_root: &str) -> Result<NewEntry, RemoteError> {
        let (parent, name) =
            parent_of(&req.path).ok_or_else(|| already_exists(at_root.to_string()))?;
        Ok(NewEntry {
            shown: s.path.clone(),
            parent,
            name,
            owner: user(req),
            mtime: now_ms(),
            follow: Follow::default(),
            checked: false,
            parents_done: false,
        })
    }

    /// The next op before the entry's own: `None` once they are next.
    fn before(
        &mut self,
        ns: &Namespace,
        dirs: &mut DirMaker<'_>,
        need: Need,
        create_parent: bool,
    ) -> Result<Option<Op>, RemoteError> {
        if let Some(op) = self.follow.next(ns) {
            return Ok(Some(op));
        }
        if !self.checked {
            dirs.gate.check(ns, dirs.checked, need)?;
            self.checked = true;
        }
        if !self.parents_done {
            if create_parent {
                if let Some(op) = dirs.next(ns, &mut self.follow)? {
                    return Ok(Some(op));
                }
            }
            self.parents_done = true;
        }
        Ok(None)
    }

    /// The entry's parent directory, where nothing by its name is:
    /// `exists` names the refusal when something is.
    fn parent_dir<'n>(
        &self,
        ns: &'n Namespace,
        exists: impl FnOnce(&Inode<'_>) -> RemoteError,
    ) -> Result<Inode<'n>, RemoteError> {
        let dir = parent_dir(ns, &self.parent, &self.shown)?;
        match child(ns, &dir, &self.name) {
            Some(n) => Err(exists(&n)),
            None => Ok(dir),
        }
    }
}

/// CREATE's second step (the first, the redirect, is the HTTP layer's):
/// an empty file.
pub fn create(s: &mut Steps<'_>, req: &Parsed) -> Result<Done, RemoteError> {
    let CreateArgs {
        overwrite,
        create_parent,
        mode,
        replication,
        block_size,
    } = create_args(req)?;
    let mut e = NewEntry::of(s, req, "/ already exists as a directory")?;
    let (path, comps, gate) = (canonical(&req.path), req.path.components(), s.gate);
    // WRITE on the file that is overwritten too.
    let need = Need {
        inode: overwrite.then_some(Access::WRITE),
        ..s.who.need()
    };
    let (owner, shown) = (e.owner.clone(), e.shown.clone());
    let mut dirs = DirMaker::parents(gate, comps, &owner, &shown, e.mtime);
    // The missing parents, the old file deleted, the new one made.
    let mut stage = 0;
    s.chain(|ns| {
        if let Some(op) = e.before(ns, &mut dirs, need, create_parent)? {
            return Ok(Some(op));
        }
        if stage == 0 {
            stage = 1;
            if overwrite {
                match lookup(ns, &path, &shown)?.and_then(|id| ns.inode(id)) {
                    Some(n) if n.kind() == InodeKind::Directory => {
                        return Err(already_exists(format!(
                            "{shown} already exists as a directory"
                        )))
                    }
                    Some(n) => {
                        return Ok(Some(Op::Delete(pb::DeleteOp {
                            id: n.id(),
                            recursive: false,
                            mtime: e.mtime,
                        })))
                    }
                    None => {}
                }
            }
        }
        if stage == 1 {
            stage = 2;
            let dir = e.parent_dir(ns, |n| {
                already_exists(if n.kind() == InodeKind::Directory {
                    format!("{shown} already exists as a directory")
                } else {
                    format!(
                        "{shown} for client {} already exists",
                        String::from_utf8_lossy(&owner)
                    )
                })
            })?;
            let mode = e.follow.new_inode(ns, &dir, &e.name, mode, false);
            return Ok(Some(Op::Create(pb::CreateOp {
                parent: dir.id(),
                name: e.name.clone(),
                user: owner.clone(),
                group: dir.group().to_vec(),
                mode: u32::from(mode),
                mtime: e.mtime,
                replication: u32::from(replication),
                preferred_block_size: block_size,
                ..Default::default()
            })));
        }
        Ok(None)
    })?;
    let location = format!(
        "hdfs://{}{}",
        req.param("namenoderpcaddress").unwrap_or("localhost"),
        shown
    );
    Ok(Done::Created { location })
}

fn check_replication(r: i64) -> Result<u16, RemoteError> {
    if r < 1 {
        return Err(RemoteError::io(format!(
            "Requested replication factor of {r} is less than the required minimum of 1"
        )));
    }
    if r > MAX_REPLICATION {
        return Err(RemoteError::io(format!(
            "Requested replication factor of {r} exceeds maximum of {MAX_REPLICATION}"
        )));
    }
    u16::try_from(r).map_err(|_| RemoteError::io(format!("replication {r}")))
}

/// CREATESYMLINK.
pub fn symlink(s: &mut Steps<'_>, req: &Parsed) -> Result<Done, RemoteError> {
    check_new_path(&req.path, req.path.given())?;
    let target = required(req, "destination")?.to_string();
    if !target.starts_with('/') {
        return Err(RemoteError::bad_argument(format!(
            "Invalid value for webhdfs parameter \"destination\": {} is not an absolute path",
            echo(&target)
        )));
    }
    let parsed = ImagePath::parse(&target).map_err(|e| RemoteError::bad_argument(e.to_string()))?;
    if values::is_reserved(&parsed) {
        // HDFS's "Invalid target name".
        return Err(values::reserved_refused("CREATESYMLINK", &target));
    }
    let create_parent = boolean(req, "createparent", false)?;
    let mut e = NewEntry::of(s, req, "Path / already exists")?;
    let (comps, gate, need) = (req.path.components(), s.gate, s.who.need());
    let (owner, shown) = (e.owner.clone(), e.shown.clone());
    let mut dirs = DirMaker::parents(gate, comps, &owner, &shown, e.mtime);
    let mut made = false;
    s.chain(|ns| {
        if let Some(op) = e.before(ns, &mut dirs, need, create_parent)? {
            return Ok(Some(op));
        }
        if made {
            return Ok(None);
        }
        made = true;
        let dir = e.parent_dir(ns, |_| {
            already_exists(format!("Path {shown} already exists"))
        })?;
        Ok(Some(Op::Symlink(pb::CreateOp {
            parent: dir.id(),
            name: e.name.clone(),
            user: owner.clone(),
            group: dir.group().to_vec(),
            mode: 0o777,
            mtime: e.mtime,
            target: target.as_bytes().to_vec(),
            ..Default::default()
        })))
    })?;
    Ok(Done::Empty)
}

/// DELETE (`recursive`).
pub fn delete(s: &mut Steps<'_>, req: &Parsed) -> Result<Done, RemoteError> {
    let recursive = boolean(req, "recursive", false)?;
    let shown = s.path.clone();
    let path = canonical(&req.path);
    let gate = s.gate;
    let need = s.who.need();
    let deleted = s.step(|ns| {
        // HDFS: WRITE on the parent (and its sticky bit), everything on
        // each non-empty directory below.
        gate.check(ns, req.path.components(), need)?;
        let Some(n) = lookup(ns, &path, &shown)?.and_then(|id| ns.inode(id)) else {
            return Ok(None);
        };
        if !recursive && n.kind() == InodeKind::Directory && !n.child_slots().is_empty() {
            return Err(not_empty(format!(
                "`{shown} is non empty': Directory is not empty"
            )));
        }
        if n.id() == nsimage_namespace::ROOT_ID {
            // HDFS refuses to delete the root by answering false.
            return Ok(None);
        }
        Ok(Some(Op::Delete(pb::DeleteOp {
            id: n.id(),
            recursive,
            mtime: now_ms(),
        })))
    })?;
    Ok(Done::Json(json!({ "boolean": deleted })))
}

/// RENAME, HDFS's rename (or rename2 with `renameoptions`).
pub fn rename(s: &mut Steps<'_>, req: &Parsed) -> Result<Done, RemoteError> {
    let dst = values::path(req, "destination")?;
    if values::is_reserved(&dst) {
        return Err(values::reserved_refused("RENAME", dst.given()));
    }
    // WebHDFS sends any option set given, NONE included, to rename2 (the
    // old rename only without the parameter): a comma-separated list.
    let options = req.param("renameoptions").unwrap_or("");
    let mut overwrite = None;
    for o in options.split(',').filter(|o| !o.is_empty()) {
        if o.eq_ignore_ascii_case("OVERWRITE") {
            overwrite = Some(true);
        } else if o.eq_ignore_ascii_case("NONE") {
            overwrite = Some(overwrite.unwrap_or(false));
        } else {
            return Err(RemoteError::bad_argument(format!(
                "Invalid value for webhdfs parameter \"renameoptions\": {} (NONE or OVERWRITE)",
                echo(o)
            )));
        }
    }
    let src = canonical(&req.path);
    let shown = s.path.clone();
    match overwrite {
        None => rename_old(s, req.path.components(), &src, &dst, &shown),
        Some(o) => rename2(s, req.path.components(), &src, &dst, &shown, o),
    }
}

/// RENAME's checks (HDFS's renameTo): WRITE on the source's parent (and
/// its sticky bit), WRITE on the nearest existing ancestor of where it
/// lands: `dst`, or `dst/<source name>` when `dst` is a directory.
fn rename_checks(
    gate: &Gate,
    ns: &Namespace,
    src: &[Vec<u8>],
    dst: &ImagePath,
    into_dir: bool,
) -> Result<(), RemoteError> {
    gate.check(ns, src, Who::Rename.need())?;
    let mut lands: Vec<Vec<u8>> = dst.components().to_vec();
    if into_dir {
        if let Some(name) = src.last() {
            lands.push(name.clone());
        }
    }
    gate.check(ns, &lands, Who::AncestorWrite.need())
}

/// HDFS's rename without options: false when the source is missing or the
/// root, the destination (or `dst/<name>` for a destination directory)
/// exists or has no parent, or is the source's own subtree.
fn rename_old(
    s: &mut Steps<'_>,
    src_comps: &[Vec<u8>],
    src: &[u8],
    dst: &ImagePath,
    shown: &str,
) -> Result<Done, RemoteError> {
    let dst_path = canonical(dst);
    let mut same = false;
    let gate = s.gate;
    let applied = s.step(|ns| {
        let into_dir = ns
            .resolve(&dst_path)
            .ok()
            .and_then(|id| ns.inode(id))
            .is_some_and(|d| d.kind() == InodeKind::Directory);
        rename_checks(gate, ns, src_comps, dst, into_dir)?;
        let Some(sid) = lookup(ns, src, shown)? else {
            return Ok(None);
        };
        if sid == nsimage_namespace::ROOT_ID {
            return Ok(None);
        }
        let src_name = ns.inode(sid).map(|n| n.name().to_vec()).unwrap_or_default();
        let dshown = String::from_utf8_lossy(&dst_path).into_owned();
        let (parent, name) = match lookup(ns, &dst_path, &dshown)?.and_then(|id| ns.inode(id)) {
            // Onto a directory: into it (a directory onto itself lands
            // in its own subtree: false, as HDFS).
            Some(d) if d.kind() == InodeKind::Directory => (d.id(), src_name),
            Some(d) if d.id() == sid => {
                same = true;
                return Ok(None);
            }
            Some(_) => return Ok(None),
            None => {
                let Some((p, n)) = parent_of(dst) else {
                    return Ok(None);
                };
                let pshown = String::from_utf8_lossy(&p).into_owned();
                match lookup(ns, &p, &pshown)?.and_then(|id| ns.inode(id)) {
                    Some(d) if d.kind() == InodeKind::Directory => (d.id(), n),
                    Some(_) => {
                        return Err(parent_not_dir(format!(
                            "{dshown}: a parent of it is not a directory"
                        )))
                    }
                    None => return Ok(None),
                }
            }
        };
        let Some(pn) = ns.inode(parent) else {
            return Ok(None);
        };
        if let Some(k) = child(ns, &pn, &name) {
            same = k.id() == sid;
            return Ok(None);
        }
        if in_subtree(ns, parent, sid) {
            return Ok(None);
        }
        Ok(Some(Op::Rename(pb::RenameOp {
            id: sid,
            new_parent: parent,
            new_name: name,
            mtime: now_ms(),
        })))
    })?;
    Ok(Done::Json(json!({ "boolean": applied || same })))
}

/// Whether `dir` is `top` or below it.
fn in_subtree(ns: &Namespace, dir: u64, top: u64) -> bool {
    let mut cur = Some(dir);
    while let Some(c) = cur {
        if c == top {
            return true;
        }
        cur = ns.inode(c).and_then(|n| n.parent());
    }
    false
}

/// HDFS's rename with OVERWRITE (rename2): exceptions instead of false; an
/// existing destination of the source's kind (an empty directory for a
/// directory) is replaced.
fn rename2(
    s: &mut Steps<'_>,
    src_comps: &[Vec<u8>],
    src: &[u8],
    dst: &ImagePath,
    shown: &str,
    overwrite: bool,
) -> Result<Done, RemoteError> {
    let dst_path = canonical(dst);
    let dshown = String::from_utf8_lossy(&dst_path).into_owned();
    let (parent_path, name) = parent_of(dst)
        .ok_or_else(|| RemoteError::io("rename destination cannot be the root".to_string()))?;
    let gate = s.gate;
    // Checks shared by both steps; the source's and the parent's ids.
    let checks = |ns: &Namespace| -> Result<(u64, u64, Option<u64>), RemoteError> {
        rename_checks(gate, ns, src_comps, dst, false)?;
        let sid = lookup(ns, src, shown)?.ok_or_else(|| {
            RemoteError::not_found(format!("rename source {shown} is not found."))
        })?;
        if sid == nsimage_namespace::ROOT_ID {
            return Err(RemoteError::io("rename source cannot be the root"));
        }
        if src == dst_path.as_slice() {
            return Err(already_exists(format!(
                "The source {shown} and destination {dshown} are the same"
            )));
        }
        let pshown = String::from_utf8_lossy(&parent_path).into_owned();
        let parent = match lookup(ns, &parent_path, &pshown)?.and_then(|id| ns.inode(id)) {
            Some(p) if p.kind() == InodeKind::Directory => p.id(),
            Some(_) => {
                return Err(parent_not_dir(format!(
                    "rename destination parent {pshown} is a file."
                )))
            }
            None => {
                return Err(RemoteError::not_found(format!(
                    "rename destination parent {pshown} not found."
                )))
            }
        };
        if in_subtree(ns, parent, sid) {
            return Err(RemoteError::io(format!(
                "Rename destination {dshown} is a directory or file under source {shown}"
            )));
        }
        let existing = lookup(ns, &dst_path, &dshown)?;
        Ok((sid, parent, existing))
    };
    // Under one lock: the checks, the destination deleted when it is to be
    // overwritten, the move.
    let mut moved = false;
    s.chain(|ns| {
        if moved {
            return Ok(None);
        }
        let (sid, parent, existing) = checks(ns)?;
        if let Some(d) = existing.and_then(|id| ns.inode(id)) {
            if !overwrite {
                return Err(already_exists(format!(
                    "rename destination {dshown} already exists"
                )));
            }
            let src_dir = ns
                .inode(sid)
                .is_some_and(|n| n.kind() == InodeKind::Directory);
            let dst_dir = d.kind() == InodeKind::Directory;
            if src_dir != dst_dir {
                return Err(RemoteError::io(format!(
                    "Source {shown} and destination {dshown} must both be directories or both be files"
                )));
            }
            if dst_dir && !d.child_slots().is_empty() {
                return Err(RemoteError::io(format!(
                    "rename destination directory is not empty: {dshown}"
                )));
            }
            return Ok(Some(Op::Delete(pb::DeleteOp {
                id: d.id(),
                recursive: false,
                mtime: now_ms(),
            })));
        }
        moved = true;
        Ok(Some(Op::Rename(pb::RenameOp {
            id: sid,
            new_parent: parent,
            new_name: name.clone(),
            mtime: now_ms(),
        })))
    })?;
    // WebHDFS answers rename2 with an empty 200.
    Ok(Done::Empty)
}

/// SETOWNER.
pub fn set_owner(s: &mut Steps<'_>, req: &Parsed) -> Result<Done, RemoteError> {
    let owner = req.param("owner").filter(|v| !v.is_empty());
    let group = req.param("group").filter(|v| !v.is_empty());
    if owner.is_none() && group.is_none() {
        return Err(RemoteError::bad_argument("Both owner and group are empty."));
    }
    let shown = s.path.clone();
    let path = canonical(&req.path);
    let (gate, need) = (s.gate, s.who.need());
    s.step(|ns| {
        gate.check(ns, req.path.components(), need)?;
        let n = existing(ns, &path, &shown)?;
        gate.check_chown(owner, group)?;
        Ok(Some(Op::SetOwner(pb::SetOwnerOp {
            id: n.id(),
            user: owner.map_or_else(|| n.user().to_vec(), |o| o.as_bytes().to_vec()),
            group: group.map_or_else(|| n.group().to_vec(), |g| g.as_bytes().to_vec()),
        })))
    })?;
    Ok(Done::Empty)
}

/// SETPERMISSION.
pub fn set_permission(s: &mut Steps<'_>, req: &Parsed) -> Result<Done, RemoteError> {
    let mode = permission(req, 0o755)?;
    let shown = s.path.clone();
    let path = canonical(&req.path);
    let (gate, need) = (s.gate, s.who.need());
    s.step(|ns| {
        gate.check(ns, req.path.components(), need)?;
        let n = existing(ns, &path, &shown)?;
        Ok(Some(Op::SetMode(pb::SetModeOp {
            id: n.id(),
            mode: u32::from(mode),
        })))
    })?;
    Ok(Done::Empty)
}

/// SETTIMES (-1: unchanged).
pub fn set_times(s: &mut Steps<'_>, req: &Parsed) -> Result<Done, RemoteError> {
    let mtime = number(req, "modificationtime", -1, i64::MAX)?.unwrap_or(-1);
    let atime = number(req, "accesstime", -1, i64::MAX)?.unwrap_or(-1);
    let shown = s.path.clone();
    let path = canonical(&req.path);
    let (gate, need) = (s.gate, s.who.need());
    s.step(|ns| {
        gate.check(ns, req.path.components(), need)?;
        let n = existing(ns, &path, &shown)?;
        if mtime == -1 && atime == -1 {
            return Ok(None);
        }
        let old_atime = match n.attrs() {
            Attrs::File(f) => f.atime,
            _ => 0,
        };
        let pick = |v: i64, old: u64| u64::try_from(v).unwrap_or(old);
        Ok(Some(Op::SetTimes(pb::SetTimesOp {
            id: n.id(),
            mtime: pick(mtime, n.mtime()),
            atime: pick(atime, old_atime),
        })))
    })?;
    Ok(Done::Empty)
}

/// SETREPLICATION (`false` for a directory).
pub fn set_replication(s: &mut Steps<'_>, req: &Parsed) -> Result<Done, RemoteError> {
    let replication = number(req, "replication", i64::MIN, i64::MAX)?
        .map_or(Ok(DEFAULT_REPLICATION), check_replication)?;
    let shown = s.path.clone();
    let path = canonical(&req.path);
    let mut is_file = false;
    let (gate, need) = (s.gate, s.who.need());
    s.step(|ns| {
        gate.check(ns, req.path.components(), need)?;
        let n = existing(ns, &path, &shown)?;
        if n.kind() != InodeKind::File {
            return Ok(None);
        }
        is_file = true;
        Ok(Some(Op::SetReplication(pb::SetReplicationOp {
            id: n.id(),
            replication: u32::from(replication),
        })))
    })?;
    Ok(Done::Json(json!({ "boolean": is_file })))
}

fn ns_number(ns: XAttrNs) -> i32 {
    ns as i32
}

/// SETXATTR (flags CREATE, REPLACE).
pub fn set_xattr(s: &mut Steps<'_>, req: &Parsed) -> Result<Done, RemoteError> {
    let full = required(req, "xattr.name")?.to_string();
    let (xns, name) = xattr_name(&full)?;
    let value = xattr_value(req.param("xattr.value").unwrap_or(""))?;
    s.gate
        .check_xattr(req.path.components(), &full, XattrUse::Set(&value))?;
    let flags = req.param("flag").unwrap_or("");
    let (mut create, mut replace) = (false, false);
    for f in flags.split(',').filter(|f| !f.is_empty()) {
        match f.to_ascii_uppercase().as_str() {
            "CREATE" => create = true,
            "REPLACE" => replace = true,
            _ => {
                return Err(RemoteError::bad_argument(format!(
                    "Invalid value for webhdfs parameter \"flag\": {} (CREATE, REPLACE)",
                    echo(f)
                )))
            }
        }
    }
    let shown = s.path.clone();
    let path = canonical(&req.path);
    let gate = s.gate;
    s.step(|ns| {
        xattr_change_check(gate, ns, req, xns)?;
        let n = existing(ns, &path, &shown)?;
        if xns == XAttrNs::Security && n.kind() != InodeKind::File {
            // HDFS's `unprotectedSetXAttrs` (the one security xattr
            // allowed is this one).
            return Err(RemoteError::io(format!(
                "Can only set '{}' on a file.",
                echo(&full)
            )));
        }
        let exists = has_xattr(ns, &n, xns, &name);
        if exists && !replace {
            return Err(RemoteError::io(format!(
                "XAttr: {} already exists. The REPLACE flag must be specified.",
                echo(&full)
            )));
        }
        if !exists && !create {
            return Err(RemoteError::io(format!(
                "XAttr: {} does not exist. The CREATE flag must be specified.",
                echo(&full)
            )));
        }
        Ok(Some(Op::SetXattr(pb::SetXAttrOp {
            id: n.id(),
            namespace: ns_number(xns),
            name: name.clone(),
            value: value.clone(),
        })))
    })?;
    Ok(Done::Empty)
}

/// HDFS's `checkXAttrChangeAccess`: a `user.` attribute needs WRITE on
/// the inode, or, on a directory with the sticky bit, its ownership;
/// others (the superuser's, by [`Gate::check_xattr`]) traverse only.
fn xattr_change_check(
    gate: &Gate,
    ns: &Namespace,
    req: &Parsed,
    xns: XAttrNs,
) -> Result<(), RemoteError> {
    if !gate.perms.enabled {
        // HDFS: no check at all with dfs.permissions.enabled=false.
        return Ok(());
    }
    let comps = req.path.components();
    if xns != XAttrNs::User {
        return gate.check(ns, comps, Need::TRAVERSE);
    }
    let sticky_dir = ns
        .resolve(&canonical(&req.path))
        .ok()
        .and_then(|id| ns.inode(id))
        .is_some_and(|n| n.kind() == InodeKind::Directory && n.mode() & 0o1000 != 0);
    gate.check(
        ns,
        comps,
        if sticky_dir {
            Who::Owner.need()
        } else {
            Who::InodeWrite.need()
        },
    )
}

fn has_xattr(ns: &Namespace, n: &Inode<'_>, xns: XAttrNs, name: &[u8]) -> bool {
    let Some(id) = ns.strings().lookup(name) else {
        return false;
    };
    n.extra()
        .is_some_and(|x| x.xattrs.iter().any(|a| a.ns == xns && a.name == id))
}

/// REMOVEXATTR.
pub fn remove_xattr(s: &mut Steps<'_>, req: &Parsed) -> Result<Done, RemoteError> {
    let full = required(req, "xattr.name")?.to_string();
    let (xns, name) = xattr_name(&full)?;
    s.gate
        .check_xattr(req.path.components(), &full, XattrUse::Remove)?;
    let shown = s.path.clone();
    let path = canonical(&req.path);
    let gate = s.gate;
    s.step(|ns| {
        xattr_change_check(gate, ns, req, xns)?;
        let n = existing(ns, &path, &shown)?;
        if !has_xattr(ns, &n, xns, &name) {
            return Err(RemoteError::io(
                "No matching attributes found for remove operation".to_string(),
            ));
        }
        Ok(Some(Op::RemoveXattr(pb::RemoveXAttrOp {
            id: n.id(),
            namespace: ns_number(xns),
            name: name.clone(),
        })))
    })?;
    Ok(Done::Empty)
}

/// The entries an inode stores, as [`acl::Entry`]s.
fn stored_acl(ns: &Namespace, n: &Inode<'_>) -> Vec<acl::Entry> {
    let Some(x) = n.extra() else {
        return Vec::new();
    };
    x.acl
        .iter()
        .map(|e| acl::Entry {
            default: e.default_scope,
            kind: match e.kind {
                0 => acl::Kind::User,
                1 => acl::Kind::Group,
                2 => acl::Kind::Mask,
                _ => acl::Kind::Other,
            },
            name: if e.name == 0 {
                Vec::new()
            } else {
                ns.strings().get(e.name).unwrap_or_default().to_vec()
            },
            perm: e.perm,
        })
        .collect()
}

/// The ACL ops: the new ACL computed here from the inode's (HDFS's
/// transformations), journaled as one SetAcl op, then its mode's group
/// bits (the mask) as a SetMode op when they change.
pub fn set_acl(s: &mut Steps<'_>, req: &Parsed) -> Result<Done, RemoteError> {
    let op = s.op;
    let spec = match op {
        "SETACL" | "MODIFYACLENTRIES" => Some(acl::parse_spec(required(req, "aclspec")?, true)?),
        "REMOVEACLENTRIES" => Some(acl::parse_spec(required(req, "aclspec")?, false)?),
        _ => None,
    };
    let shown = s.path.clone();
    let path = canonical(&req.path);
    let mut wanted: Option<(u64, u16)> = None;
    let (gate, need) = (s.gate, s.who.need());
    s.step(|ns| {
        gate.check(ns, req.path.components(), need)?;
        let n = existing(ns, &path, &shown)?;
        let now = acl::logical(n.mode(), &stored_acl(ns, &n));
        let spec = spec.as_deref().unwrap_or(&[]);
        let next = match op {
            "SETACL" => acl::replace(&now, spec)?,
            "MODIFYACLENTRIES" => acl::modify(&now, spec)?,
            "REMOVEACLENTRIES" => acl::remove_entries(&now, spec)?,
            "REMOVEDEFAULTACL" => acl::remove_default(&now),
            _ => acl::remove_all(&now),
        };
        let (stored, mode) = acl::split(&next, n.mode(), n.kind() == InodeKind::Directory)?;
        wanted = Some((n.id(), mode));
        Ok(Some(acl_op(n.id(), stored)))
    })?;
    if let Some((id, mode)) = wanted {
        s.step(|ns| match ns.inode(id) {
            Some(n) if n.mode() != mode => Ok(Some(Op::SetMode(pb::SetModeOp {
                id,
                mode: u32::from(mode),
            }))),
            _ => Ok(None),
        })?;
    }
    Ok(Done::Empty)
}
