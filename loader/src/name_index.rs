//! `nsimage verify`'s check of the optional one-path lookup index,
//! NAME_RUNS or, in older images, NAME_INDEX (FORMAT.md, "NAME_RUNS" and
//! "NAME_INDEX"): every entry, in order, agrees with INODE_DIR (the
//! children of each directory, in name order) and INODE (each child's name
//! and type), and every sub-section's first key follows the section's rule.
//! Its checksums are checked with every other piece's. A disagreement is
//! a warning of `verify`, not a problem: no load reads the section, and
//! every read path must give the same verdict on an image.

use crate::error::LoadError;
use crate::sections::pieces;
use crate::source::ImageSource;
use nsimage_format::consts::name_index;
use nsimage_format::framing::Records;
use nsimage_format::name_runs::{decode_run, Entry};
use nsimage_format::wire::{check, schema};
use nsimage_format::{pb, Location, SectionKind};
use nsimage_namespace::{InodeKind, Namespace};
use prost::Message;

/// The first disagreement between the image's NAME_INDEX (if it has one)
/// and the namespace loaded from its INODE and INODE_DIR sections, with its
/// place; at most one per sub-section's first key, then the first entry
/// that differs.
pub(crate) fn check_names(
    src: &ImageSource,
    ns: &Namespace,
) -> Result<Vec<(Location, String)>, LoadError> {
    let mut problems = Vec::new();
    let Some(sec) = src
        .index
        .section(SectionKind::NAME_RUNS)
        .or_else(|| src.index.section(SectionKind::NAME_INDEX))
    else {
        return Ok(problems);
    };
    let runs = sec.kind == SectionKind::NAME_RUNS;
    let kind = |k: InodeKind| match k {
        InodeKind::File => pb::InodeType::File,
        InodeKind::Directory => pb::InodeType::Directory,
        InodeKind::Symlink => pb::InodeType::Symlink,
    } as i32;
    let mut expected = ns.iter().flat_map(|d| {
        let parent = d.id();
        d.children()
            .map(move |c| (parent, c.name(), c.id(), kind(c.kind())))
    });
    let split = !sec.sub_sections.is_empty();
    let mut buf = crate::source::PieceBuf::default();
    let mut last_first: Option<(u64, u64)> = None;
    let mut msg = pb::NameEntry::default();
    let mut got: Vec<Entry> = Vec::new();
    for (p, at) in pieces(sec) {
        let bytes = src.piece(&p, &at, &mut buf)?;
        let mut first = true;
        let mut found = 0u64;
        for r in Records::new(bytes, at.clone()) {
            found = found.saturating_add(1);
            let (off, body) = match r {
                Ok(x) => x,
                Err(e) => {
                    problems.push((at.clone(), e.to_string()));
                    return Ok(problems);
                }
            };
            let here = Location {
                offset: off,
                ..at.clone()
            };
            got.clear();
            let decoded = if runs {
                decode_run(body, &mut got).map_err(|e| format!("undecodable NameRun: {e}"))
            } else {
                msg.clear();
                check(body, schema::NAME_ENTRY)
                    .map_err(str::to_string)
                    .and_then(|()| msg.merge(body).map_err(|e| e.to_string()))
                    .and_then(|()| {
                        nsimage_format::name_runs::check_entry(
                            msg.parent, &msg.name, msg.child, msg.r#type,
                        )
                        .map_err(str::to_string)
                    })
                    .map(|()| {
                        got.push(Entry {
                            parent: msg.parent,
                            name: std::mem::take(&mut msg.name),
                            child: msg.child,
                            ty: msg.r#type,
                        })
                    })
                    .map_err(|e| format!("undecodable NameEntry: {e}"))
            };
            if let Err(e) = decoded {
                problems.push((here, e));
                return Ok(problems);
            }
            let Some(head) = got.first() else {
                problems.push((here, "a record without entries".into()));
                return Ok(problems);
            };
            if first && split {
                first = false;
                let seq = match last_first {
                    Some((parent, seq)) if parent == head.parent => seq.saturating_add(1),
                    _ => 0,
                };
                if name_index::key(head.parent, seq) != Some(p.first_key) {
                    problems.push((
                        at.clone(),
                        format!(
                            "first key {} is not parent {} << {} | {seq}",
                            p.first_key,
                            head.parent,
                            name_index::SEQ_BITS
                        ),
                    ));
                }
                last_first = Some((head.parent, seq));
            }
            for e in &got {
                let seen = (e.parent, e.name.as_slice(), e.child, e.ty);
                match expected.next() {
                    Some(want) if want == seen => {}
                    Some((parent, name, child, ty)) => {
                        problems.push((
                            here.clone(),
                            format!(
                                "entry (parent {}, {:?}, child {}, type {}) disagrees with INODE_DIR and INODE, \
                                 which say (parent {parent}, {:?}, child {child}, type {ty})",
                                e.parent,
                                String::from_utf8_lossy(&e.name),
                                e.child,
                                e.ty,
                                String::from_utf8_lossy(name),
                            ),
                        ));
                        return Ok(problems);
                    }
                    None => {
                        problems.push((here, "entry beyond the children INODE_DIR lists".into()));
                        return Ok(problems);
                    }
                }
            }
        }
        if found != p.records {
            problems.push((
                at.clone(),
                format!("{found} records, the index says {}", p.records),
            ));
            return Ok(problems);
        }
    }
    if let Some((parent, name, ..)) = expected.next() {
        problems.push((
            Location::in_section(sec.kind, None, sec.end()),
            format!(
                "no entry for child {:?} of {parent} (and perhaps more)",
                String::from_utf8_lossy(name)
            ),
        ));
    }
    Ok(problems)
}
