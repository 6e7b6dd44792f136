//! Hadoop's string serial numbers (`SerialNumberManager`): the ids that
//! permissions, ACL entries and xattr names carry in an fsimage, and the
//! STRING_TABLE entries that name them.
//!
//! Hadoop numbers strings from 1 (0 is "no string") in one global space
//! (`maskBits` 0) or, with expanded string tables, in one space per kind:
//! users (permission owners, named-user ACL entries), groups (permission
//! groups, named-group ACL entries) and xattr names. Expanded table
//! entries carry the kind's ordinal (USER 1, GROUP 2, XATTR 3) in their top
//! `maskBits` (3) bits of the 32-bit id; the ids inside permissions, ACL
//! entries and xattr names are the bare serials (at most 24 bits).
//!
//! The writer numbers the strings in use, in the order of the namespace's
//! own string ids, so the same namespace always gets the same image.

use nsimage_namespace::Namespace;
use std::io;

/// Largest serial a 24-bit field holds.
const MAX_SERIAL: u32 = (1 << 24) - 1;

/// What a string names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    User = 1,
    Group = 2,
    XAttr = 3,
}

/// The serial of every string in use, by kind.
pub(crate) struct Serials {
    mask_bits: u32,
    /// By namespace string id: the serial (0: not in use). One table in
    /// the global space, one per kind when expanded.
    tables: Vec<Vec<u32>>,
    count: u64,
}

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

impl Serials {
    /// Numbers the strings `ns` uses; `mask_bits` 0 (one global space) or
    /// 3 (one space per kind).
    pub(crate) fn collect(ns: &Namespace, mask_bits: u32) -> io::Result<Serials> {
        Self::collect_with(ns, mask_bits, ns.strings().len(), &[])
    }

    /// [`collect`](Self::collect), over a string table of `table_len`
    /// strings (the namespace's, extended), with `extra` (kind, string
    /// id) uses besides the namespace's (the snapshot carry's).
    pub(crate) fn collect_with(
        ns: &Namespace,
        mask_bits: u32,
        table_len: usize,
        extra: &[(Kind, u32)],
    ) -> io::Result<Serials> {
        let n = table_len.max(ns.strings().len());
        let spaces = if mask_bits == 0 { 1 } else { 3 };
        let mut tables = vec![vec![0u32; n]; spaces];
        let slot = |kind: Kind| if spaces == 1 { 0 } else { kind as usize - 1 };
        let mark = |tables: &mut Vec<Vec<u32>>, kind: Kind, id: u32| -> io::Result<()> {
            match tables[slot(kind)].get_mut(id as usize) {
                Some(s) => {
                    *s = 1;
                    Ok(())
                }
                None => Err(bad(format!(
                    "string id {id} is not in the namespace's table"
                ))),
            }
        };
        for inode in ns.iter() {
            let p = inode.perm();
            mark(&mut tables, Kind::User, p.user())?;
            mark(&mut tables, Kind::Group, p.group())?;
            if let Some(x) = inode.extra() {
                for a in &x.acl {
                    match (a.kind, a.name) {
                        (_, 0) => {}
                        (0, name) => mark(&mut tables, Kind::User, name)?,
                        (1, name) => mark(&mut tables, Kind::Group, name)?,
                        _ => {}
                    }
                }
                for a in &x.xattrs {
                    mark(&mut tables, Kind::XAttr, a.name)?;
                }
            }
        }
        for &(kind, id) in extra {
            mark(&mut tables, kind, id)?;
        }
        let mut count = 0u64;
        for t in &mut tables {
            for (next, s) in (1u32..).zip(t.iter_mut().filter(|s| **s != 0)) {
                if next > MAX_SERIAL {
                    return Err(bad(format!(
                        "more than {MAX_SERIAL} strings of one kind: Hadoop's 24-bit ids cannot hold them"
                    )));
                }
                *s = next;
                count += 1;
            }
        }
        Ok(Serials {
            mask_bits,
            tables,
            count,
        })
    }

    fn table(&self, kind: Kind) -> &[u32] {
        if self.tables.len() == 1 {
            &self.tables[0]
        } else {
            &self.tables[kind as usize - 1]
        }
    }

    /// The serial of namespace string `id` as a `kind` (0 if unused, which
    /// `collect` rules out for the strings it was given).
    pub(crate) fn serial(&self, kind: Kind, id: u32) -> u32 {
        self.table(kind).get(id as usize).copied().unwrap_or(0)
    }

    /// The string table's `maskBits`.
    pub(crate) fn mask_bits(&self) -> u32 {
        self.mask_bits
    }

    /// Number of table entries.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// The table's entries: (id as written, namespace string id), kinds in
    /// ordinal order, serials ascending.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let kinds: &[Kind] = if self.tables.len() == 1 {
            &[Kind::User]
        } else {
            &[Kind::User, Kind::Group, Kind::XAttr]
        };
        kinds.iter().flat_map(move |&k| {
            let tag = if self.mask_bits == 0 {
                0
            } else {
                (k as u32) << (32 - self.mask_bits)
            };
            self.table(k)
                .iter()
                .enumerate()
                .filter(|(_, s)| **s != 0)
                .map(move |(id, s)| {
                    // Namespace string ids are below 2^24.
                    #[allow(clippy::cast_possible_truncation)]
                    let id = id as u32;
                    (*s | tag, id)
                })
        })
    }
}
