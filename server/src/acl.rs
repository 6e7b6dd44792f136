//! ACLs as HDFS's NameNode computes them: an `aclspec` parsed
//! (`user:bob:rwx,default:group::r-x`, HDFS's `AclEntry.parseAclSpec`),
//! an inode's logical ACL read from its mode and stored entries, the
//! transformations of SETACL, MODIFYACLENTRIES, REMOVEACLENTRIES,
//! REMOVEDEFAULTACL and REMOVEACL (HDFS's `AclTransformation`: masks
//! recalculated, default base entries copied from the access ones, the
//! result sorted and validated), and the result split back into the
//! entries an inode stores (HDFS's ACL feature: the access entries but the
//! owner, mask and other ones, then every default entry) and its new mode
//! (the mask in the group bits).

use crate::error::{echo, RemoteError};

/// Most entries of one scope (HDFS's `MAX_ENTRIES`).
pub const MAX_ENTRIES: usize = 32;

/// An entry's type, in HDFS's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// `user`.
    User = 0,
    /// `group`.
    Group = 1,
    /// `mask`.
    Mask = 2,
    /// `other`.
    Other = 3,
}

/// One ACL entry (field order is HDFS's sort order: scope, type, name).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    /// Part of the default ACL.
    pub default: bool,
    /// The type.
    pub kind: Kind,
    /// The user or group; empty for the unnamed entry.
    pub name: Vec<u8>,
    /// rwx bits (0 in a REMOVEACLENTRIES spec, which has none).
    pub perm: u8,
}

impl Entry {
    fn key(&self) -> (bool, Kind, &[u8]) {
        (self.default, self.kind, &self.name)
    }

    fn base(default: bool, kind: Kind, perm: u8) -> Entry {
        Entry {
            default,
            kind,
            name: Vec::new(),
            perm,
        }
    }
}

/// The HDFS `AclException` (an IOException: 403).
fn acl_error(message: impl Into<String>) -> RemoteError {
    RemoteError {
        status: 403,
        exception: "AclException",
        java_class: "org.apache.hadoop.hdfs.protocol.AclException",
        message: message.into(),
    }
}

fn bad_spec(message: &str, entry: &str) -> RemoteError {
    RemoteError::bad_argument(format!("{message} <aclSpec> : {}", echo(entry)))
}

/// `rwx`, `r-x`, `---` ... as bits (HDFS's `FsAction.getFsAction`).
fn parse_perm(s: &str) -> Option<u8> {
    let b = s.as_bytes();
    if b.len() != 3 {
        return None;
    }
    let mut p = 0;
    for (i, (&c, want)) in b.iter().zip([b'r', b'w', b'x']).enumerate() {
        if c == want {
            p |= 4 >> i;
        } else if c != b'-' {
            return None;
        }
    }
    Some(p)
}

/// Parses an `aclspec` (entries separated by `,`); `with_perm` false for
/// REMOVEACLENTRIES, whose entries name no permission.
pub fn parse_spec(spec: &str, with_perm: bool) -> Result<Vec<Entry>, RemoteError> {
    let mut out = Vec::new();
    for text in spec.split(',') {
        // Java's split drops trailing empty strings ("mask::" is "mask").
        let mut parts: Vec<&str> = text.split(':').collect();
        while parts.last().is_some_and(|p| p.is_empty()) {
            parts.pop();
        }
        let mut i = 0;
        let default = parts.first() == Some(&"default");
        if default {
            i += 1;
        }
        let kind = match parts.get(i).map(|t| t.to_ascii_uppercase()).as_deref() {
            Some("USER") => Kind::User,
            Some("GROUP") => Kind::Group,
            Some("MASK") => Kind::Mask,
            Some("OTHER") => Kind::Other,
            Some(_) => return Err(bad_spec("Invalid type of acl in", text)),
            None => return Err(bad_spec("Invalid", text)),
        };
        i += 1;
        let mut name = Vec::new();
        if let Some(n) = parts.get(i) {
            name = n.as_bytes().to_vec();
            i += 1;
        }
        let mut perm = 0;
        if with_perm {
            let p = parts.get(i).ok_or_else(|| bad_spec("Invalid", text))?;
            perm = parse_perm(p).ok_or_else(|| bad_spec("Invalid permission in", text))?;
            i += 1;
        }
        if parts.len() > i {
            return Err(bad_spec("Invalid", text));
        }
        if !name.is_empty() && matches!(kind, Kind::Mask | Kind::Other) {
            return Err(bad_spec("Invalid", text));
        }
        out.push(Entry {
            default,
            kind,
            name,
            perm,
        });
    }
    Ok(out)
}

/// The logical ACL of an inode with `mode` and stored entries `stored`
/// (HDFS's `readINodeLogicalAcl`).
pub fn logical(mode: u16, stored: &[Entry]) -> Vec<Entry> {
    let bits = |shift: u16| u8::try_from((mode >> shift) & 7).unwrap_or(0);
    let (access, defaults): (Vec<&Entry>, Vec<&Entry>) = stored.iter().partition(|e| !e.default);
    let mut out = vec![Entry::base(false, Kind::User, bits(6))];
    if access.is_empty() {
        out.push(Entry::base(false, Kind::Group, bits(3)));
    } else {
        out.extend(access.into_iter().cloned());
        out.push(Entry::base(false, Kind::Mask, bits(3)));
    }
    out.push(Entry::base(false, Kind::Other, bits(0)));
    out.extend(defaults.into_iter().cloned());
    out
}

/// What an inode stores for logical ACL `acl` (sorted and valid), and
/// its new mode from `mode` (the sticky and higher bits kept). `is_dir`:
/// only a directory may have default entries.
pub fn split(acl: &[Entry], mode: u16, is_dir: bool) -> Result<(Vec<Entry>, u16), RemoteError> {
    let (access, defaults): (Vec<&Entry>, Vec<&Entry>) = acl.iter().partition(|e| !e.default);
    if !defaults.is_empty() && !is_dir {
        return Err(acl_error(
            "Invalid ACL: only directories may have a default ACL.",
        ));
    }
    let perm = |e: Option<&&Entry>| u16::from(e.map_or(0, |e| e.perm));
    // Sorted access entries: user::, named users, group::, named groups,
    // [mask::], other:: (HDFS's createFsPermissionForExtendedAcl).
    let n = access.len();
    let user = perm(access.first());
    let group = perm(access.get(n.saturating_sub(2)));
    let other = perm(access.last());
    let new_mode = (mode & !0o777) | (user << 6) | (group << 3) | other;
    let mut stored: Vec<Entry> = Vec::new();
    if n > 3 {
        stored.extend(access[1..n - 2].iter().map(|e| (*e).clone()));
    }
    stored.extend(defaults.into_iter().cloned());
    Ok((stored, new_mode))
}

/// What a new child of a directory whose stored entries are `parent`
/// gets when that directory has a default ACL (HDFS's
/// `copyINodeDefaultAcl`): the entries it stores and its mode, from its
/// requested `mode` (which filters the owner, mask (or group) and other
/// entries); a new directory also gets the default ACL itself. `None`
/// without a default ACL.
pub fn inherit(parent: &[Entry], mode: u16, is_dir: bool) -> Option<(Vec<Entry>, u16)> {
    let defaults: Vec<&Entry> = parent.iter().filter(|e| e.default).collect();
    if defaults.is_empty() {
        return None;
    }
    let bits = |shift: u16| u8::try_from((mode >> shift) & 7).unwrap_or(0);
    let has_mask = defaults.iter().any(|e| e.kind == Kind::Mask);
    let mut access: Vec<Entry> = defaults
        .iter()
        .map(|e| {
            let perm = match (e.kind, e.name.is_empty()) {
                (Kind::User, true) => e.perm & bits(6),
                (Kind::Group, true) if !has_mask => e.perm & bits(3),
                (Kind::Mask, _) => e.perm & bits(3),
                (Kind::Other, _) => e.perm & bits(0),
                _ => e.perm,
            };
            Entry {
                default: false,
                perm,
                ..(*e).clone()
            }
        })
        .collect();
    access.sort();
    let mut acl = access;
    if is_dir {
        acl.extend(defaults.into_iter().cloned());
    }
    split(&acl, mode, true).ok()
}

/// Which scopes a transformation changed and the masks it was given.
#[derive(Default)]
struct Dirty {
    scope: [bool; 2],
    mask: [bool; 2],
    provided: [Option<Entry>; 2],
}

fn scope(e: &Entry) -> usize {
    usize::from(e.default)
}

/// Default base entries missing while default entries exist are copied
/// from the access ones (HDFS's `copyDefaultsIfNeeded`).
fn copy_defaults(acl: &mut Vec<Entry>) {
    if !acl.iter().any(|e| e.default) {
        return;
    }
    for kind in [Kind::User, Kind::Group, Kind::Other] {
        let has = acl
            .iter()
            .any(|e| e.default && e.kind == kind && e.name.is_empty());
        if !has {
            if let Some(a) = acl
                .iter()
                .find(|e| !e.default && e.kind == kind && e.name.is_empty())
            {
                let copied = Entry::base(true, kind, a.perm);
                acl.push(copied);
            }
        }
    }
}

/// Adds the masks (HDFS's `calculateMasks`); `acl` holds no mask entry.
fn masks(acl: &mut Vec<Entry>, d: &Dirty) -> Result<(), RemoteError> {
    let mut union = [0u8; 2];
    let mut found = [false; 2];
    let mut needed = [false; 2];
    for e in acl.iter() {
        let s = scope(e);
        if (e.kind == Kind::User && !e.name.is_empty()) || e.kind == Kind::Group {
            union[s] |= e.perm;
            found[s] = true;
            if !e.name.is_empty() {
                needed[s] = true;
            }
        }
    }
    for s in 0..2 {
        if !found[s] {
            continue;
        }
        let provided = d.provided[s].clone();
        if provided.is_none() && needed[s] && d.mask[s] {
            return Err(acl_error(
                "Invalid ACL: mask is required and cannot be deleted.",
            ));
        } else if let Some(m) = provided.filter(|_| !d.scope[s] || d.mask[s]) {
            acl.push(m);
        } else if needed[s] || d.provided[s].is_some() {
            acl.push(Entry::base(s == 1, Kind::Mask, union[s]));
        }
    }
    Ok(())
}

/// Sorts and validates (HDFS's `buildAndValidateAcl`).
fn finish(mut acl: Vec<Entry>) -> Result<Vec<Entry>, RemoteError> {
    acl.sort();
    if acl.windows(2).any(|w| w[0].key() == w[1].key()) {
        return Err(acl_error(
            "Invalid ACL: multiple entries with same scope, type and name.",
        ));
    }
    for s in [false, true] {
        let n = acl.iter().filter(|e| e.default == s).count();
        if n > MAX_ENTRIES {
            return Err(acl_error(format!(
                "Invalid ACL: ACL has {n} entries, which exceeds maximum of {MAX_ENTRIES}."
            )));
        }
        if n == 0 && s {
            continue;
        }
        for kind in [Kind::User, Kind::Group, Kind::Other] {
            if !acl
                .iter()
                .any(|e| e.default == s && e.kind == kind && e.name.is_empty())
            {
                return Err(acl_error(
                    "Invalid ACL: the user, group and other entries are required.",
                ));
            }
        }
        let named = acl
            .iter()
            .any(|e| e.default == s && !e.name.is_empty() && e.kind != Kind::Other);
        let mask = acl.iter().any(|e| e.default == s && e.kind == Kind::Mask);
        if named && !mask {
            return Err(acl_error(
                "Invalid ACL: the mask entry is required when there are named entries.",
            ));
        }
    }
    Ok(acl)
}

fn unique_spec(spec: &[Entry]) -> Result<(), RemoteError> {
    let mut keys: Vec<_> = spec.iter().map(Entry::key).collect();
    keys.sort();
    if keys.windows(2).any(|w| w[0] == w[1]) {
        return Err(acl_error(
            "Invalid ACL: multiple entries with same scope, type and name.",
        ));
    }
    Ok(())
}

/// SETACL: `spec` replaces the scopes it names.
pub fn replace(existing: &[Entry], spec: &[Entry]) -> Result<Vec<Entry>, RemoteError> {
    unique_spec(spec)?;
    let mut d = Dirty::default();
    let mut acl = Vec::new();
    for e in spec {
        d.scope[scope(e)] = true;
        if e.kind == Kind::Mask {
            d.provided[scope(e)] = Some(e.clone());
            d.mask[scope(e)] = true;
        } else {
            acl.push(e.clone());
        }
    }
    for e in existing {
        if !d.scope[scope(e)] {
            if e.kind == Kind::Mask {
                d.provided[scope(e)] = Some(e.clone());
            } else {
                acl.push(e.clone());
            }
        }
    }
    copy_defaults(&mut acl);
    masks(&mut acl, &d)?;
    finish(acl)
}

/// MODIFYACLENTRIES: `spec`'s entries replace or join the existing ones.
pub fn modify(existing: &[Entry], spec: &[Entry]) -> Result<Vec<Entry>, RemoteError> {
    unique_spec(spec)?;
    let mut d = Dirty::default();
    let mut acl = Vec::new();
    let put = |e: &Entry, d: &mut Dirty, acl: &mut Vec<Entry>, from_spec: bool| {
        if from_spec {
            d.scope[scope(e)] = true;
        }
        if e.kind == Kind::Mask {
            d.provided[scope(e)] = Some(e.clone());
            if from_spec {
                d.mask[scope(e)] = true;
            }
        } else {
            acl.push(e.clone());
        }
    };
    for e in existing {
        match spec.iter().find(|s| s.key() == e.key()) {
            Some(s) => put(s, &mut d, &mut acl, true),
            None => put(e, &mut d, &mut acl, false),
        }
    }
    for s in spec {
        if !existing.iter().any(|e| e.key() == s.key()) {
            put(s, &mut d, &mut acl, true);
        }
    }
    copy_defaults(&mut acl);
    masks(&mut acl, &d)?;
    finish(acl)
}

/// REMOVEACLENTRIES: the entries `spec` names are removed.
pub fn remove_entries(existing: &[Entry], spec: &[Entry]) -> Result<Vec<Entry>, RemoteError> {
    unique_spec(spec)?;
    let mut d = Dirty::default();
    let mut acl = Vec::new();
    for e in existing {
        if spec.iter().any(|s| s.key() == e.key()) {
            d.scope[scope(e)] = true;
            if e.kind == Kind::Mask {
                d.mask[scope(e)] = true;
            }
        } else if e.kind == Kind::Mask {
            d.provided[scope(e)] = Some(e.clone());
        } else {
            acl.push(e.clone());
        }
    }
    copy_defaults(&mut acl);
    masks(&mut acl, &d)?;
    finish(acl)
}

/// REMOVEDEFAULTACL: the default entries removed.
pub fn remove_default(existing: &[Entry]) -> Vec<Entry> {
    existing.iter().filter(|e| !e.default).cloned().collect()
}

/// REMOVEACL: back to the minimal ACL (the group bits from the unnamed
/// group entry, as HDFS restores them).
pub fn remove_all(existing: &[Entry]) -> Vec<Entry> {
    existing
        .iter()
        .filter(|e| !e.default && e.name.is_empty() && e.kind != Kind::Mask)
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(acl: &[Entry]) -> String {
        acl.iter()
            .map(|e| {
                let p = |m: u8, c: char| if e.perm & m != 0 { c } else { '-' };
                format!(
                    "{}{}:{}:{}{}{}",
                    if e.default { "default:" } else { "" },
                    ["user", "group", "mask", "other"][e.kind as usize],
                    String::from_utf8_lossy(&e.name),
                    p(4, 'r'),
                    p(2, 'w'),
                    p(1, 'x')
                )
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    #[test]
    fn specs_parse_as_hdfs_parses_them() {
        let s = parse_spec("user::rwx,user:bob:r-x,default:group::r--,mask::rw-", true).unwrap();
        assert_eq!(s.len(), 4);
        assert_eq!(
            (s[1].kind, &s[1].name[..], s[1].perm),
            (Kind::User, &b"bob"[..], 5)
        );
        assert!(s[2].default);
        let r = parse_spec("user:bob,default:group:eng", false).unwrap();
        assert_eq!(r[1].name, b"eng");
        for bad in [
            "user:bob",
            "people:bob:rwx",
            "user:bob:rwz",
            "mask:x:rwx",
            "user:a:rwx:x",
            "",
        ] {
            assert_eq!(parse_spec(bad, true).unwrap_err().status, 400, "{bad}");
        }
    }

    #[test]
    fn modify_adds_a_named_entry_and_its_mask() {
        let existing = logical(0o750, &[]);
        let spec = parse_spec("user:bob:rwx", true).unwrap();
        let acl = modify(&existing, &spec).unwrap();
        assert_eq!(
            text(&acl),
            "user::rwx,user:bob:rwx,group::r-x,mask::rwx,other::---"
        );
        let (stored, mode) = split(&acl, 0o1750, true).unwrap();
        assert_eq!(text(&stored), "user:bob:rwx,group::r-x");
        assert_eq!(mode, 0o1770);
        // Read back, then the named entry removed: the mask follows.
        let back = logical(mode, &stored);
        assert_eq!(back, acl);
        let acl = remove_entries(&back, &parse_spec("user:bob", false).unwrap()).unwrap();
        assert_eq!(text(&acl), "user::rwx,group::r-x,mask::r-x,other::---");
        // Removing everything restores the group bits from group::.
        let min = remove_all(&acl);
        let (stored, mode) = split(&min, 0o770, true).unwrap();
        assert!(stored.is_empty());
        assert_eq!(mode, 0o750);
    }

    #[test]
    fn new_children_inherit_the_default_acl() {
        let parent = replace(
            &logical(0o755, &[]),
            &parse_spec("default:user::rwx,default:user:bob:rwx,default:group::r-x,default:mask::rwx,default:other::r-x", true).unwrap(),
        )
        .unwrap();
        let (stored, _) = split(&parent, 0o755, true).unwrap();
        let (file, mode) = inherit(&stored, 0o644, false).unwrap();
        assert_eq!(text(&file), "user:bob:rwx,group::r-x");
        assert_eq!(mode, 0o644);
        let (dir, mode) = inherit(&stored, 0o755, true).unwrap();
        assert_eq!(dir.len(), 2 + 5);
        assert_eq!(mode, 0o755);
        assert!(inherit(&[], 0o644, false).is_none());
    }

    #[test]
    fn set_acl_validates_and_copies_defaults() {
        let existing = logical(0o755, &[]);
        let e = replace(
            &existing,
            &parse_spec("user::rwx,group::r-x", true).unwrap(),
        );
        assert_eq!(e.unwrap_err().exception, "AclException");
        let acl = replace(
            &existing,
            &parse_spec("default:user:bob:r-x", true).unwrap(),
        )
        .unwrap();
        assert_eq!(
            text(&acl),
            "user::rwx,group::r-x,other::r-x,default:user::rwx,default:user:bob:r-x,\
             default:group::r-x,default:mask::r-x,default:other::r-x"
        );
        let (stored, mode) = split(&acl, 0o755, true).unwrap();
        assert_eq!(mode, 0o755);
        assert_eq!(stored.len(), 5);
        assert!(split(&acl, 0o755, false).is_err());
        assert!(remove_default(&acl).iter().all(|e| !e.default));
        let dup = parse_spec("user:bob:rwx,user:bob:r--", true).unwrap();
        assert!(modify(&existing, &dup).is_err());
    }
}
