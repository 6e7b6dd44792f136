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
struct Text {
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
        let data = Bytes::from(self.data);
        let mut start = 0;
        let values = self
            .ends
            .into_iter()
            .map(|end| {
                let v = ByteArray::from(data.slice(start..end));
                start = end;
                v
            })
            .collect();
        Values::Bytes(values)
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
    index: HashMap<u32, ByteArray>,
    column: Required<Vec<ByteArray>>,
}

impl Names {
    fn new(rows: usize) -> Names {
        Names {
            index: HashMap::new(),
            column: Required(Vec::with_capacity(rows)),
        }
    }

    fn push(&mut self, id: u32, bytes: &[u8]) {
        let v = self
            .index
            .entry(id)
            .or_insert_with(|| {
                ByteArray::from(String::from_utf8_lossy(bytes).into_owned().into_bytes())
            })
            .clone();
        self.column.add(v);
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

/// The live inodes of `range`, in slot order, column by column in the
/// schema's order.
pub(crate) fn build(ns: &Namespace, range: Range<u32>) -> Vec<Column> {
    let rows = range.len();
    let mut id = Required(Vec::<i64>::with_capacity(rows));
    let mut parent = Optional::new(Vec::<i64>::with_capacity(rows), rows);
    let mut path = Required(Text::with_capacity(rows, rows * 64));
    let mut path_raw = Optional::new(Text::default(), rows);
    let mut name = Required(Text::with_capacity(rows, rows * 16));
    let mut kind = Required(Vec::<ByteArray>::with_capacity(rows));
    let mut size = Required(Vec::<i64>::with_capacity(rows));
    let mut blocks = Required(Vec::<i32>::with_capacity(rows));
    let mut replication = Optional::new(Vec::<i32>::with_capacity(rows), rows);
    let mut pbs = Optional::new(Vec::<i64>::with_capacity(rows), rows);
    let mut policy = Optional::new(Vec::<i32>::with_capacity(rows), rows);
    let mut mtime = Optional::new(Vec::<i64>::with_capacity(rows), rows);
    let mut atime = Optional::new(Vec::<i64>::with_capacity(rows), rows);
    let mut perm = Required(Vec::<i32>::with_capacity(rows));
    let mut perm_s = Required(Text::with_capacity(rows, rows * 10));
    let mut owner = Names::new(rows);
    let mut group = Names::new(rows);
    let mut target = Optional::new(Text::default(), rows);
    let mut nsq = Optional::new(Vec::<i64>::with_capacity(rows), rows);
    let mut dsq = Optional::new(Vec::<i64>::with_capacity(rows), rows);
    let kinds =
        ["FILE", "DIRECTORY", "SYMLINK"].map(|k| ByteArray::from(Bytes::from_static(k.as_bytes())));
    let mut cache = PathCache::new();
    let mut buf: Vec<u8> = Vec::with_capacity(512);
    for slot in range {
        let Some(inode) = ns.at(slot) else { continue };
        id.add(u64_bits(inode.id()));
        parent.add_option(inode.parent().map(u64_bits));
        buf.clear();
        cache.push_path(ns, &inode, &mut buf);
        match std::str::from_utf8(&buf) {
            Ok(_) => {
                path.add(buf.as_slice());
                path_raw.null();
            }
            Err(_) => {
                path.add(String::from_utf8_lossy(&buf).as_bytes());
                path_raw.add(buf.as_slice());
            }
        }
        name.add(String::from_utf8_lossy(inode.name()).as_bytes());
        let k = inode.kind();
        let kind_index = match k {
            InodeKind::File => 0,
            InodeKind::Directory => 1,
            InodeKind::Symlink => 2,
        };
        kind.add(kinds[kind_index].clone());
        mtime.add_option(ms(inode.mtime()));
        let mode = inode.mode();
        perm.add(i32::from(mode));
        perm_s.add(nsimage_viewer::text::permission_string(k, mode).as_bytes());
        let p = inode.perm();
        owner.push(p.user(), inode.user());
        group.push(p.group(), inode.group());
        match inode.attrs() {
            Attrs::File(f) => {
                size.add(u64_bits(f.length()));
                blocks.add(u32_bits(u32::try_from(f.blocks.len()).unwrap_or(u32::MAX)));
                replication.add(i32::from(f.replication));
                pbs.add(u64_bits(f.preferred_block_size));
                policy.add(i32::from(f.storage_policy));
                atime.add_option(ms(f.atime));
                target.null();
                nsq.null();
                dsq.null();
            }
            Attrs::Directory { ns_quota, ds_quota } => {
                size.add(0);
                blocks.add(0);
                replication.null();
                pbs.null();
                policy.null();
                atime.null();
                target.null();
                nsq.add_option((ns_quota >= 0).then_some(ns_quota));
                dsq.add_option((ds_quota >= 0).then_some(ds_quota));
            }
            Attrs::Symlink { target: t } => {
                size.add(0);
                blocks.add(0);
                replication.null();
                pbs.null();
                policy.null();
                atime.null();
                target.add(String::from_utf8_lossy(t).as_bytes());
                nsq.null();
                dsq.null();
            }
        }
    }
    vec![
        id.finish(),
        parent.finish(),
        path.finish::<&[u8]>(),
        path_raw.finish::<&[u8]>(),
        name.finish::<&[u8]>(),
        kind.finish(),
        size.finish(),
        blocks.finish(),
        replication.finish(),
        pbs.finish(),
        policy.finish(),
        mtime.finish(),
        atime.finish(),
        perm.finish(),
        perm_s.finish::<&[u8]>(),
        owner.column.finish(),
        group.column.finish(),
        target.finish::<&[u8]>(),
        nsq.finish(),
        dsq.finish(),
    ]
}
