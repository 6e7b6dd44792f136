//! STRING_TABLE: Hadoop's serial ids of user, group and xattr names, mapped
//! to the namespace's [`StringTable`] ids. With `maskBits` 0 (one global
//! table) a serial id is looked up as is; with 1 to 3 (Hadoop 3.2+'s
//! expanded tables) the id carries its table's ordinal in its top bits.

use super::file::HdfsFile;
use crate::error::LoadError;
use nsimage_format::hdfs::bits::MAX_MASK_BITS;
use nsimage_format::hdfs::fields::string_table_section::entry as entry_f;
use nsimage_format::hdfs::StringTag;
use nsimage_format::hdfs_pb::StringTableSection;
use nsimage_format::wire::Cursor;
use nsimage_format::Location;
use nsimage_namespace::StringTable;
use prost::Message;
use std::collections::HashMap;

/// Serial ids to namespace string ids.
pub(crate) struct StringIds {
    mask_bits: u32,
    /// Keys (as the section stores them) below `dense.len()`: our id, or
    /// `u32::MAX` for none.
    dense: Vec<u32>,
    /// Larger keys.
    sparse: HashMap<u32, u32>,
}

impl StringIds {
    /// The namespace id of serial `serial` in table `tag`; serial 0 is "no
    /// name" (the empty string).
    #[inline]
    pub(crate) fn get(&self, tag: StringTag, serial: u32) -> Option<u32> {
        if serial == 0 {
            return Some(0);
        }
        let key = tag.key(serial, self.mask_bits);
        match self.dense.get(key as usize) {
            Some(&v) if v != u32::MAX => Some(v),
            Some(_) => None,
            None => self.sparse.get(&key).copied(),
        }
    }

    /// The table's declared `maskBits`.
    pub(crate) fn mask_bits(&self) -> u32 {
        self.mask_bits
    }
}

/// Decodes STRING_TABLE (absent: an empty table) into the namespace's
/// string table and the id map.
pub(crate) fn decode_strings(f: &HdfsFile) -> Result<(StringTable, StringIds), LoadError> {
    let mut table = StringTable::default();
    let mut ids = StringIds {
        mask_bits: 0,
        dense: Vec::new(),
        sparse: HashMap::new(),
    };
    let Some(sec) = f
        .summary
        .find(nsimage_format::hdfs::HdfsSection::StringTable)
        .cloned()
    else {
        return Ok((table, ids));
    };
    let at0 = sec.at();
    // A plain section's record lies at its file offset; an inflated one's
    // is named by its byte in the inflated stream (the file offset would
    // mix compressed and inflated positions).
    let plain = f.summary.codec == nsimage_format::hdfs::Codec::None;
    let mut buf = Vec::new();
    let mut recs = f.records(sec.offset, sec.length, &at0, "section", &mut buf);
    let bad = |off: usize, d: String| {
        if plain {
            let at = Location::in_section(
                sec.section.kind(),
                None,
                sec.offset.saturating_add(off as u64),
            );
            f.corrupt(at, d)
        } else {
            f.corrupt(
                at0.clone(),
                format!("{d} (byte {off} of the inflated section)"),
            )
        }
    };
    let Some((hoff, head)) = recs.next()? else {
        return Err(bad(0, "the string table has no header".into()));
    };
    let head = StringTableSection::decode(head).map_err(|e| {
        bad(
            hoff,
            format!("the string table header does not decode: {e}"),
        )
    })?;
    if head.mask_bits() > MAX_MASK_BITS {
        return Err(bad(
            hoff,
            format!(
                "string table maskBits {} > {MAX_MASK_BITS}",
                head.mask_bits()
            ),
        ));
    }
    ids.mask_bits = head.mask_bits();
    let declared = u64::from(head.num_entry());
    // Each entry is at least two bytes (its length prefix and a field);
    // a compressed section's entries are bounded by the count as they
    // inflate.
    if plain && declared > sec.length / 2 {
        return Err(bad(
            hoff,
            format!(
                "{declared} string entries cannot fit in {} bytes",
                sec.length
            ),
        ));
    }
    let mut pairs: Vec<(u32, u32)> = Vec::new();
    let mut count = 0u64;
    while let Some((off, body)) = recs.next()? {
        if count == declared {
            return Err(bad(
                off,
                format!("more string entries than the {declared} declared"),
            ));
        }
        count += 1;
        let (id, s) = entry(body).map_err(|why| bad(off, format!("string entry: {why}")))?;
        let (tag, serial) = StringTag::split(id, ids.mask_bits);
        if serial == 0 || (ids.mask_bits != 0 && tag.is_none()) {
            return Err(bad(
                off,
                format!("string entry id {id:#x} names no table and serial"),
            ));
        }
        let ours = table
            .intern(s)
            .ok_or_else(|| bad(off, "the string table is full".into()))?;
        pairs.push((id, ours));
    }
    if count != declared {
        return Err(bad(
            recs.pos(),
            format!("{count} string entries, {declared} declared"),
        ));
    }
    // Dense when the keys are (as Hadoop gives them) small serials.
    let limit = pairs.len().saturating_mul(4).saturating_add(1024);
    for (k, v) in pairs {
        let slot = k as usize;
        let fresh = if slot < limit {
            if ids.dense.len() <= slot {
                ids.dense.resize(slot + 1, u32::MAX);
            }
            std::mem::replace(&mut ids.dense[slot], v) == u32::MAX
        } else {
            ids.sparse.insert(k, v).is_none()
        };
        if !fresh {
            return Err(bad(0, format!("string id {k:#x} is defined twice")));
        }
    }
    Ok((table, ids))
}

/// One `StringTableSection.Entry`: (id, string).
fn entry(body: &[u8]) -> Result<(u32, &[u8]), &'static str> {
    let mut w = Cursor::new(body);
    let (mut id, mut s) = (0u32, &b""[..]);
    while !w.done() {
        let (field, wt) = w.key()?;
        match field {
            entry_f::ID => {
                Cursor::expect(wt, nsimage_format::wire::VARINT)?;
                id = w.u32()?;
            }
            entry_f::STR => {
                Cursor::expect(wt, nsimage_format::wire::LEN)?;
                s = w.bytes()?;
            }
            _ => w.skip(wt)?,
        }
    }
    if std::str::from_utf8(s).is_err() {
        return Err("a string is not UTF-8");
    }
    Ok((id, s))
}
