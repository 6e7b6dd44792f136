//! `nsimage verify`'s check of the optional NAME_INDEX (FORMAT.md,
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
    let Some(sec) = src.index.section(SectionKind::NAME_INDEX) else {
        return Ok(problems);
    };
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
            msg.clear();
            if let Err(e) = check(body, schema::NAME_ENTRY)
                .map_err(str::to_string)
                .and_then(|()| msg.merge(body).map_err(|e| e.to_string()))
            {
                problems.push((here, format!("undecodable NameEntry: {e}")));
                return Ok(problems);
            }
            if first && split {
                first = false;
                let seq = match last_first {
                    Some((parent, seq)) if parent == msg.parent => seq.saturating_add(1),
                    _ => 0,
                };
                if name_index::key(msg.parent, seq) != Some(p.first_key) {
                    problems.push((
                        at.clone(),
                        format!(
                            "first key {} is not parent {} << {} | {seq}",
                            p.first_key,
                            msg.parent,
                            name_index::SEQ_BITS
                        ),
                    ));
                }
                last_first = Some((msg.parent, seq));
            }
            let got = (msg.parent, msg.name.as_slice(), msg.child, msg.r#type);
            match expected.next() {
                Some(want) if want == got => {}
                Some((parent, name, child, ty)) => {
                    problems.push((
                        here,
                        format!(
                            "entry (parent {}, {:?}, child {}, type {}) disagrees with INODE_DIR and INODE, \
                             which say (parent {parent}, {:?}, child {child}, type {ty})",
                            msg.parent,
                            String::from_utf8_lossy(&msg.name),
                            msg.child,
                            msg.r#type,
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
            Location::in_section(SectionKind::NAME_INDEX, None, sec.end()),
            format!(
                "no entry for child {:?} of {parent} (and perhaps more)",
                String::from_utf8_lossy(name)
            ),
        ));
    }
    Ok(problems)
}
