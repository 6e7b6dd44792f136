//! Journal operations applied to the namespace model. The same function
//! applies an operation the first time (filling in the id it allocates) and
//! on replay (checking that it allocates the same id).

use crate::op_view::{AclEntryView, CreateView, OpView};
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

/// One ACL entry as [`Namespace::set_acl`] takes it: (name, type 0..=3,
/// default scope, rwx 0..=7).
type AclTuple<'a> = (&'a [u8], u8, bool, u8);

/// The journaled entries as [`Namespace::set_acl`] takes them, each range
/// checked here.
fn acl_entries<'a>(entries: &[AclEntryView<'a>]) -> Result<Vec<AclTuple<'a>>, NsError> {
    entries
        .iter()
        .map(|e| {
            let kind = u8::try_from(e.kind)
                .ok()
                .filter(|&k| k <= 3)
                .ok_or_else(|| NsError::Invalid(format!("ACL entry type {}", e.kind)))?;
            let perm = u8::try_from(e.permission)
                .ok()
                .filter(|&p| p <= 7)
                .ok_or_else(|| {
                    NsError::Invalid(format!("ACL entry permission {:#o}", e.permission))
                })?;
            Ok((e.name, kind, e.default_scope, perm))
        })
        .collect()
}

fn invalid(e: FormatError) -> NsError {
    NsError::Invalid(e.to_string())
}

fn create<'a>(
    ns: &mut Namespace,
    c: &CreateView<'a>,
    make: impl FnOnce(&mut Namespace, &CreateView<'a>, &PermSpec<'a>) -> Result<u64, NsError>,
) -> Result<u64, NsError> {
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
        user: c.user,
        group: c.group,
        mode: mode(c.mode)?,
    };
    make(ns, c, &perm)
}

fn file_spec(c: &CreateView<'_>) -> Result<FileSpec, NsError> {
    Ok(FileSpec {
        replication: convert::replication(c.replication).map_err(invalid)?,
        preferred_block_size: c.preferred_block_size,
        storage_policy: convert::storage_policy(c.storage_policy).map_err(invalid)?,
    })
}

/// Applies `op` to `ns`. A creation records the id it allocated in the op
/// (`new_id`); when the op already names one (replay), a different
/// allocation is an error. A refused op changes nothing.
pub fn apply(ns: &mut Namespace, op: &mut Op) -> Result<(), NsError> {
    let id = apply_view(ns, &OpView::of(op))?;
    if let (Some(id), Op::Mkdir(c) | Op::Create(c) | Op::Symlink(c)) = (id, op) {
        c.new_id = id;
    }
    Ok(())
}

/// Applies a borrowed op (replay's path, [`apply`] for an owned one);
/// returns the id a creation allocated. A creation whose op names an id
/// (`new_id` not 0) must allocate that one. A refused op changes nothing.
pub fn apply_view(ns: &mut Namespace, op: &OpView<'_>) -> Result<Option<u64>, NsError> {
    match op {
        OpView::Mkdir(c) => create(ns, c, |ns, c, perm| {
            ns.mkdir_in(c.parent, c.name, perm, c.mtime)
        })
        .map(Some),
        OpView::Create(c) => create(ns, c, |ns, c, perm| {
            let spec = file_spec(c)?;
            ns.create_in(c.parent, c.name, perm, &spec, c.mtime)
        })
        .map(Some),
        OpView::Symlink(c) => create(ns, c, |ns, c, perm| {
            ns.symlink_in(c.parent, c.name, c.target, perm, c.mtime)
        })
        .map(Some),
        OpView::AddBlock(a) => ns
            .add_block(a.id, Block::from(a.block.unwrap_or_default()))
            .map(|()| None),
        OpView::Rename(r) => ns
            .rename_in(r.id, r.new_parent, r.new_name, r.mtime)
            .map(|()| None),
        OpView::Delete(d) => ns.delete_id(d.id, d.recursive, d.mtime).map(|_| None),
        OpView::SetTimes(t) => ns
            .set_times(t.id, Some(t.mtime), Some(t.atime))
            .map(|()| None),
        OpView::SetOwner(o) => ns
            .set_owner(o.id, Some(o.user), Some(o.group))
            .map(|()| None),
        OpView::SetMode(m) => ns.set_mode(m.id, mode(m.mode)?).map(|()| None),
        OpView::SetReplication(r) => ns
            .set_replication(r.id, convert::replication(r.replication).map_err(invalid)?)
            .map(|()| None),
        OpView::SetXattr(x) => ns
            .set_xattr(x.id, xattr_ns(x.namespace)?, x.name, x.value)
            .map(|()| None),
        OpView::RemoveXattr(x) => ns
            .remove_xattr(x.id, xattr_ns(x.namespace)?, x.name)
            .map(|_| None),
        OpView::SetAcl(a) => {
            let entries = acl_entries(&a.entries)?;
            ns.set_acl(a.id, &entries).map(|()| None)
        }
    }
}
