//! The columns of an export and their values for one range of slots.
//!
//! | column | Parquet type | null when |
//! |---|---|---|
//! | `id` | INT64, INTEGER(64, unsigned) | never |
//! | `parent_id` | INT64, INTEGER(64, unsigned) | the root |
//! | `path` | BYTE_ARRAY, STRING (full path; bytes that are not UTF-8 become U+FFFD) | never |
//! | `path_raw` | BYTE_ARRAY (the path's exact bytes) | the path is valid UTF-8 |
//! | `name` | BYTE_ARRAY, STRING (lossy as `path`; empty for the root) | never |
//! | `type` | BYTE_ARRAY, STRING, dictionary-encoded: `FILE`, `DIRECTORY`, `SYMLINK` | never |
//! | `size` | INT64, INTEGER(64, unsigned), sum of block lengths (0 unless a file) | never |
//! | `blocks` | INT32, INTEGER(32, unsigned), block count (0 unless a file) | never |
//! | `replication` | INT32, INTEGER(16, unsigned) | not a file |
//! | `preferred_block_size` | INT64, INTEGER(64, unsigned) | not a file |
//! | `storage_policy` | INT32, INTEGER(8, unsigned) | not a file |
//! | `mtime` | INT64, TIMESTAMP(MILLIS, UTC-adjusted) | past the year 292 million |
//! | `atime` | INT64, TIMESTAMP(MILLIS, UTC-adjusted) | not a file |
//! | `permission` | INT32, INTEGER(16, unsigned), the mode bits (`0o755`) | never |
//! | `permission_string` | BYTE_ARRAY, STRING, `ls -l`'s `drwxr-xr-x` | never |
//! | `owner`, `group` | BYTE_ARRAY, STRING, dictionary-encoded, lossy | never |
//! | `symlink_target` | BYTE_ARRAY, STRING, lossy | not a symlink |
//! | `ns_quota`, `ds_quota` | INT64 | not a directory, or no quota (-1) |
//!
//! A nullable column is OPTIONAL (a definition level per row, a value per
//! non-null row); the others are REQUIRED. Unsigned values are stored in
//! the signed physical type bit for bit, as the Parquet format says.

use crate::error::ExportError;
use bytes::Bytes;
use nsimage_namespace::{Attrs, InodeKind, Namespace};
use nsimage_viewer::dump::PathCache;
use parquet::data_type::ByteArray;
use parquet::schema::types::TypePtr;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

/// The schema of every export, in the module's table's order.
const MESSAGE: &str = "
message nsimage {
  REQUIRED INT64 id (INTEGER(64,false));
  OPTIONAL INT64 parent_id (INTEGER(64,false));
  REQUIRED BYTE_ARRAY path (STRING);
  OPTIONAL BYTE_ARRAY path_raw;
  REQUIRED BYTE_ARRAY name (STRING);
  REQUIRED BYTE_ARRAY type (STRING);
  REQUIRED INT64 size (INTEGER(64,false));
  REQUIRED INT32 blocks (INTEGER(32,false));
  OPTIONAL INT32 replication (INTEGER(16,false));
  OPTIONAL INT64 preferred_block_size (INTEGER(64,false));
  OPTIONAL INT32 storage_policy (INTEGER(8,false));
  OPTIONAL INT64 mtime (TIMESTAMP(MILLIS,true));
  OPTIONAL INT64 atime (TIMESTAMP(MILLIS,true));
  REQUIRED INT32 permission (INTEGER(16,false));
  REQUIRED BYTE_ARRAY permission_string (STRING);
  REQUIRED BYTE_ARRAY owner (STRING);
  REQUIRED BYTE_ARRAY group (STRING);
  OPTIONAL BYTE_ARRAY symlink_target (STRING);
  OPTIONAL INT64 ns_quota;
  OPTIONAL INT64 ds_quota;
}
";

/// The Parquet schema of every export (columns in the module's table).
pub fn schema() -> Result<TypePtr, ExportError> {
    static SCHEMA: OnceLock<TypePtr> = OnceLock::new();
    if let Some(s) = SCHEMA.get() {
        return Ok(s.clone());
    }
    let parsed = Arc::new(parquet::schema::parser::parse_message_type(MESSAGE)?);
    Ok(SCHEMA.get_or_init(|| parsed).clone())
}

/// The values of one column chunk, in the column's physical type.
pub(crate) enum Values {
    /// INT32 values.
    Int32(Vec<i32>),
    /// INT64 values.
    Int64(Vec<i64>),
    /// BYTE_ARRAY values.
    Bytes(Vec<ByteArray>),
    /// BYTE_ARRAY values held as one buffer and each value's end, made
    /// into [`ByteArray`]s (32 bytes each) only while the column is
    /// encoded, so a row group under construction holds its text once.
    Text(Text),
    /// BYTE_ARRAY values from a small dictionary, by index (likewise).
    Indexed(Vec<ByteArray>, Vec<u32>),
}

impl Values {
    /// BYTE_ARRAY values as the encoder takes them; `None` for numbers.
    pub(crate) fn into_byte_arrays(self) -> Option<Vec<ByteArray>> {
        match self {
            Values::Bytes(v) => Some(v),
            Values::Text(t) => Some(t.into_byte_arrays()),
            Values::Indexed(dict, idx) => Some(
                idx.iter()
                    .map(|&i| dict.get(i as usize).cloned().unwrap_or_default())
                    .collect(),
            ),
            Values::Int32(_) | Values::Int64(_) => None,
        }
    }
}

/// One column of a row group: its values (the non-null ones) and, for an
/// OPTIONAL column, a definition level per row (1: a value, 0: null).
pub(crate) struct Column {
    /// The non-null values, in row order.
    pub(crate) values: Values,
    /// A definition level per row; `None` for a REQUIRED column.
    pub(crate) def: Option<Vec<i16>>,
}

/// The values of a column under construction.
trait Sink<T> {
    fn add(&mut self, v: T);
    fn finish(self) -> Values;
}

impl Sink<i32> for Vec<i32> {
    fn add(&mut self, v: i32) {
        self.push(v);
    }
    fn finish(self) -> Values {
        Values::Int32(self)
    }
}

impl Sink<i64> for Vec<i64> {
    fn add(&mut self, v: i64) {
        self.push(v);
    }
    fn finish(self) -> Values {
        Values::Int64(self)
    }
}

impl Sink<ByteArray> for Vec<ByteArray> {
    fn add(&mut self, v: ByteArray) {
        self.push(v);
    }
    fn finish(self) -> Values {
        Values::Bytes(self)
    }
}

/// Byte strings copied into one buffer, cut into values at the end (one
/// allocation per column chunk, not one per value).
#[derive(Default)]
pub(crate) struct Text {
    data: Vec<u8>,
    ends: Vec<usize>,
}

impl Text {
    fn with_capacity(rows: usize, bytes: usize) -> Text {
        Text {
            data: Vec::with_capacity(bytes),
            ends: Vec::with_capacity(rows),
        }
    }
}

impl Sink<&[u8]> for Text {
    fn add(&mut self, v: &[u8]) {
        self.data.extend_from_slice(v);
        self.ends.push(self.data.len());
    }
    fn finish(self) -> Values {
        Values::Text(self)
    }
}

impl Text {
    /// The values, sharing one copy of the bytes.
    fn into_byte_arrays(self) -> Vec<ByteArray> {
        let data = Bytes::from(self.data);
        let mut start = 0;
        self.ends
            .into_iter()
            .map(|end| {
                let v = ByteArray::from(data.slice(start..end));
                start = end;
                v
            })
            .collect()
    }
}

/// A REQUIRED column under construction.
struct Required<S>(S);

impl<S> Required<S> {
    fn add<T>(&mut self, v: T)
    where
        S: Sink<T>,
    {
        self.0.add(v);
    }

    fn finish<T>(self) -> Column
    where
        S: Sink<T>,
    {
        Column {
            values: self.0.finish(),
            def: None,
        }
    }
}

/// An OPTIONAL column under construction.
struct Optional<S> {
    values: S,
    def: Vec<i16>,
}

impl<S> Optional<S> {
    fn new(values: S, rows: usize) -> Optional<S> {
        Optional {
            values,
            def: Vec::with_capacity(rows),
        }
    }

    fn add<T>(&mut self, v: T)
    where
        S: Sink<T>,
    {
        self.values.add(v);
        self.def.push(1);
    }

    fn null(&mut self) {
        self.def.push(0);
    }

    fn add_option<T>(&mut self, v: Option<T>)
    where
        S: Sink<T>,
    {
        match v {
            Some(v) => self.add(v),
            None => self.null(),
        }
    }

    fn finish<T>(self) -> Column
    where
        S: Sink<T>,
    {
        Column {
            values: self.values.finish(),
            def: Some(self.def),
        }
    }
}

/// A dictionary-encoded string column filled through the string table's
/// ids: each name is made valid UTF-8 once per row group, and every row
/// shares its bytes.
struct Names {
    /// String id to its index in `dict`.
    index: HashMap<u32, u32>,
    dict: Vec<ByteArray>,
    rows: Vec<u32>,
}

impl Names {
    fn new(rows: usize) -> Names {
        Names {
            index: HashMap::new(),
            dict: Vec::new(),
            rows: Vec::with_capacity(rows),
        }
    }

    fn push(&mut self, id: u32, bytes: &[u8]) {
        let dict = &mut self.dict;
        let i = *self.index.entry(id).or_insert_with(|| {
            dict.push(ByteArray::from(
                String::from_utf8_lossy(bytes).into_owned().into_bytes(),
            ));
            u32::try_from(dict.len().saturating_sub(1)).unwrap_or(u32::MAX)
        });
        self.rows.push(i);
    }

    fn finish(self) -> Column {
        Column {
            values: Values::Indexed(self.dict, self.rows),
            def: None,
        }
    }
}

/// An unsigned 64-bit value in INT64, bit for bit.
fn u64_bits(v: u64) -> i64 {
    i64::from_ne_bytes(v.to_ne_bytes())
}

/// An unsigned 32-bit value in INT32, bit for bit.
fn u32_bits(v: u32) -> i32 {
    i32::from_ne_bytes(v.to_ne_bytes())
}

/// A time in milliseconds since the epoch; `None` past `i64::MAX`.
fn ms(v: u64) -> Option<i64> {
    i64::try_from(v).ok()
}

/// What a row holds of one inode, from a loaded namespace or from a
/// record streamed from an image.
pub(crate) struct RowFacts<'a> {
    pub(crate) id: u64,
    pub(crate) parent: Option<u64>,
    pub(crate) path: &'a [u8],
    pub(crate) name: &'a [u8],
    pub(crate) kind: InodeKind,
    pub(crate) mtime: u64,
    pub(crate) mode: u16,
    /// The owner's string id and bytes.
    pub(crate) user: (u32, &'a [u8]),
    /// The group's string id and bytes.
    pub(crate) group: (u32, &'a [u8]),
    pub(crate) attrs: Attrs<'a>,
}

/// The columns of one row group under construction.
pub(crate) struct Builder {
    id: Required<Vec<i64>>,
    parent: Optional<Vec<i64>>,
    path: Required<Text>,
    path_raw: Optional<Text>,
    name: Required<Text>,
    kind: Vec<u32>,
    size: Required<Vec<i64>>,
    blocks: Required<Vec<i32>>,
    replication: Optional<Vec<i32>>,
    pbs: Optional<Vec<i64>>,
    policy: Optional<Vec<i32>>,
    mtime: Optional<Vec<i64>>,
    atime: Optional<Vec<i64>>,
    perm: Required<Vec<i32>>,
    perm_s: Required<Text>,
    owner: Names,
    group: Names,
    target: Optional<Text>,
    nsq: Optional<Vec<i64>>,
    dsq: Optional<Vec<i64>>,
    kinds: [ByteArray; 3],
}

impl Builder {
    /// A row group of about `rows` rows.
    pub(crate) fn new(rows: usize) -> Builder {
        Builder {
            id: Required(Vec::with_capacity(rows)),
            parent: Optional::new(Vec::with_capacity(rows), rows),
            path: Required(Text::with_capacity(rows, rows * 64)),
            path_raw: Optional::new(Text::default(), rows),
            name: Required(Text::with_capacity(rows, rows * 16)),
            kind: Vec::with_capacity(rows),
            size: Required(Vec::with_capacity(rows)),
            blocks: Required(Vec::with_capacity(rows)),
            replication: Optional::new(Vec::with_capacity(rows), rows),
            pbs: Optional::new(Vec::with_capacity(rows), rows),
            policy: Optional::new(Vec::with_capacity(rows), rows),
            mtime: Optional::new(Vec::with_capacity(rows), rows),
            atime: Optional::new(Vec::with_capacity(rows), rows),
            perm: Required(Vec::with_capacity(rows)),
            perm_s: Required(Text::with_capacity(rows, rows * 10)),
            owner: Names::new(rows),
            group: Names::new(rows),
            target: Optional::new(Text::default(), rows),
            nsq: Optional::new(Vec::with_capacity(rows), rows),
            dsq: Optional::new(Vec::with_capacity(rows), rows),
            kinds: ["FILE", "DIRECTORY", "SYMLINK"]
                .map(|k| ByteArray::from(Bytes::from_static(k.as_bytes()))),
        }
    }

    /// Appends one row.
    pub(crate) fn add(&mut self, r: &RowFacts<'_>) {
        self.id.add(u64_bits(r.id));
        self.parent.add_option(r.parent.map(u64_bits));
        match std::str::from_utf8(r.path) {
            Ok(_) => {
                self.path.add(r.path);
                self.path_raw.null();
            }
            Err(_) => {
                self.path.add(String::from_utf8_lossy(r.path).as_bytes());
                self.path_raw.add(r.path);
            }
        }
        self.name.add(String::from_utf8_lossy(r.name).as_bytes());
        let kind_index = match r.kind {
            InodeKind::File => 0,
            InodeKind::Directory => 1,
            InodeKind::Symlink => 2,
        };
        self.kind.push(kind_index);
        self.mtime.add_option(ms(r.mtime));
        self.perm.add(i32::from(r.mode));
        self.perm_s
            .add(nsimage_viewer::text::permission_string(r.kind, r.mode).as_bytes());
        self.owner.push(r.user.0, r.user.1);
        self.group.push(r.group.0, r.group.1);
        match r.attrs {
            Attrs::File(f) => {
                self.size.add(u64_bits(f.length()));
                self.blocks
                    .add(u32_bits(u32::try_from(f.blocks.len()).unwrap_or(u32::MAX)));
                self.replication.add(i32::from(f.replication));
                self.pbs.add(u64_bits(f.preferred_block_size));
                self.policy.add(i32::from(f.storage_policy));
                self.atime.add_option(ms(f.atime));
                self.target.null();
                self.nsq.null();
                self.dsq.null();
            }
            Attrs::Directory { ns_quota, ds_quota } => {
                self.size.add(0);
                self.blocks.add(0);
                self.replication.null();
                self.pbs.null();
                self.policy.null();
                self.atime.null();
                self.target.null();
                self.nsq.add_option((ns_quota >= 0).then_some(ns_quota));
                self.dsq.add_option((ds_quota >= 0).then_some(ds_quota));
            }
            Attrs::Symlink { target: t } => {
                self.size.add(0);
                self.blocks.add(0);
                self.replication.null();
                self.pbs.null();
                self.policy.null();
                self.atime.null();
                self.target.add(String::from_utf8_lossy(t).as_bytes());
                self.nsq.null();
                self.dsq.null();
            }
        }
    }

    /// The columns, in the schema's order.
    pub(crate) fn finish(self) -> Vec<Column> {
        vec![
            self.id.finish(),
            self.parent.finish(),
            self.path.finish::<&[u8]>(),
            self.path_raw.finish::<&[u8]>(),
            self.name.finish::<&[u8]>(),
            Column {
                values: Values::Indexed(self.kinds.to_vec(), self.kind),
                def: None,
            },
            self.size.finish(),
            self.blocks.finish(),
            self.replication.finish(),
            self.pbs.finish(),
            self.policy.finish(),
            self.mtime.finish(),
            self.atime.finish(),
            self.perm.finish(),
            self.perm_s.finish::<&[u8]>(),
            self.owner.finish(),
            self.group.finish(),
            self.target.finish::<&[u8]>(),
            self.nsq.finish(),
            self.dsq.finish(),
        ]
    }
}

/// The live inodes of `range`, in slot order, column by column in the
/// schema's order.
pub(crate) fn build(ns: &Namespace, range: Range<u32>) -> Vec<Column> {
    let mut b = Builder::new(range.len());
    let mut cache = PathCache::new();
    let mut buf: Vec<u8> = Vec::with_capacity(512);
    for slot in range {
        let Some(inode) = ns.at(slot) else { continue };
        buf.clear();
        cache.push_path(ns, &inode, &mut buf);
        let p = inode.perm();
        b.add(&RowFacts {
            id: inode.id(),
            parent: inode.parent(),
            path: &buf,
            name: inode.name(),
            kind: inode.kind(),
            mtime: inode.mtime(),
            mode: inode.mode(),
            user: (p.user(), inode.user()),
            group: (p.group(), inode.group()),
            attrs: inode.attrs(),
        });
    }
    b.finish()
}
