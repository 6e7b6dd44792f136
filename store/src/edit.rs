//! Journal operations applied to the namespace model. The same function
//! applies an operation the first time (filling in the id it allocates) and
//! on replay (checking that it allocates the same id).

use nsimage_format::pb;
use nsimage_format::pb::journal_op::Op;
use nsimage_format::wire::convert;
use nsimage_format::FormatError;
use nsimage_namespace::{Block, FileSpec, Namespace, NsError, PermSpec, XAttrNs};

fn mode(m: u32) -> Result<u16, NsError> {
    u16::try_from(m).map_err(|_| NsError::Invalid(format!("mode {m:#o} out of range")))
}

fn xattr_ns(v: i32) -> Result<XAttrNs, NsError> {
    convert::xattr_ns(v).map_err(|_| NsError::Invalid(format!("xattr namespace {v}")))
}

fn invalid(e: FormatError) -> NsError {
    NsError::Invalid(e.to_string())
}

fn create(
    ns: &mut Namespace,
    c: &mut pb::CreateOp,
    make: impl FnOnce(&mut Namespace, &pb::CreateOp, &PermSpec<'_>) -> Result<u64, NsError>,
) -> Result<(), NsError> {
    let expect = ns
        .info()
        .last_inode_id
        .checked_add(1)
        .ok_or(NsError::IdsExhausted)?;
    if c.new_id != 0 && c.new_id != expect {
        return Err(NsError::Invalid(format!(
            "journal says the new inode is {}, the namespace allocates {expect}",
            c.new_id
        )));
    }
    let perm = PermSpec {
        user: &c.user,
        group: &c.group,
        mode: mode(c.mode)?,
    };
    let id = make(ns, c, &perm)?;
    c.new_id = id;
    Ok(())
}

/// Applies `op` to `ns`. A creation records the id it allocated in the op
/// (`new_id`); when the op already names one (replay), a different
/// allocation is an error. A refused op changes nothing.
pub fn apply(ns: &mut Namespace, op: &mut Op) -> Result<(), NsError> {
    match op {
        Op::Mkdir(c) => create(ns, c, |ns, c, perm| {
            ns.mkdir_in(c.parent, &c.name, perm, c.mtime)
        }),
        Op::Create(c) => create(ns, c, |ns, c, perm| {
            let spec = FileSpec::try_from(c).map_err(invalid)?;
            ns.create_in(c.parent, &c.name, perm, &spec, c.mtime)
        }),
        Op::Symlink(c) => create(ns, c, |ns, c, perm| {
            ns.symlink_in(c.parent, &c.name, &c.target, perm, c.mtime)
        }),
        Op::AddBlock(a) => ns.add_block(a.id, Block::from(a.block.unwrap_or_default())),
        Op::Rename(r) => ns.rename_in(r.id, r.new_parent, &r.new_name, r.mtime),
        Op::Delete(d) => ns.delete_id(d.id, d.recursive, d.mtime).map(drop),
        Op::SetTimes(t) => ns.set_times(t.id, Some(t.mtime), Some(t.atime)),
        Op::SetOwner(o) => ns.set_owner(o.id, Some(&o.user), Some(&o.group)),
        Op::SetMode(m) => ns.set_mode(m.id, mode(m.mode)?),
        Op::SetReplication(r) => {
            ns.set_replication(r.id, convert::replication(r.replication).map_err(invalid)?)
        }
        Op::SetXattr(x) => ns.set_xattr(x.id, xattr_ns(x.namespace)?, &x.name, &x.value),
        Op::RemoveXattr(x) => ns
            .remove_xattr(x.id, xattr_ns(x.namespace)?, &x.name)
            .map(drop),
    }
}

/// A one-line description of an op, for `nsimage journal dump`.
pub fn describe(op: &pb::JournalOp) -> String {
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let body = match &op.op {
        None => "(empty)".to_string(),
        Some(Op::Mkdir(c)) => format!("mkdir {} in {} -> {}", s(&c.name), c.parent, c.new_id),
        Some(Op::Create(c)) => format!("create {} in {} -> {}", s(&c.name), c.parent, c.new_id),
        Some(Op::Symlink(c)) => format!(
            "symlink {} in {} -> {} ({})",
            s(&c.name),
            c.parent,
            c.new_id,
            s(&c.target)
        ),
        Some(Op::AddBlock(a)) => {
            let b = a.block.unwrap_or_default();
            format!(
                "add_block {} block {} gs {} len {}",
                a.id, b.id, b.generation_stamp, b.length
            )
        }
        Some(Op::Rename(r)) => format!("rename {} to {}/{}", r.id, r.new_parent, s(&r.new_name)),
        Some(Op::Delete(d)) => format!(
            "delete {}{}",
            d.id,
            if d.recursive { " recursive" } else { "" }
        ),
        Some(Op::SetTimes(t)) => format!("set_times {} mtime {} atime {}", t.id, t.mtime, t.atime),
        Some(Op::SetOwner(o)) => format!("set_owner {} {}:{}", o.id, s(&o.user), s(&o.group)),
        Some(Op::SetMode(m)) => format!("set_mode {} {:o}", m.id, m.mode),
        Some(Op::SetReplication(r)) => format!("set_replication {} {}", r.id, r.replication),
        Some(Op::SetXattr(x)) => format!("set_xattr {} {}", x.id, s(&x.name)),
        Some(Op::RemoveXattr(x)) => format!("remove_xattr {} {}", x.id, s(&x.name)),
    };
    format!("{:>10} {body}", op.txid)
}
