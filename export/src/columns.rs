//! The columns of an export and the Arrow arrays of one range of slots.
//!
//! | column | type | null when |
//! |---|---|---|
//! | `id` | UInt64 | never |
//! | `parent_id` | UInt64 | the root |
//! | `path` | Utf8 (full path; bytes that are not UTF-8 become U+FFFD) | never |
//! | `path_raw` | Binary (the path's exact bytes) | the path is valid UTF-8 |
//! | `name` | Utf8 (lossy as `path`; empty for the root) | never |
//! | `type` | Dictionary(Int8, Utf8): `FILE`, `DIRECTORY`, `SYMLINK` | never |
//! | `size` | UInt64, sum of block lengths (0 unless a file) | never |
//! | `blocks` | UInt32, block count (0 unless a file) | never |
//! | `replication` | UInt16 | not a file |
//! | `preferred_block_size` | UInt64 | not a file |
//! | `storage_policy` | UInt8 | not a file |
//! | `mtime` | Timestamp(ms, UTC) | past the year 292 million |
//! | `atime` | Timestamp(ms, UTC) | not a file |
//! | `permission` | UInt16, the mode bits (`0o755`) | never |
//! | `permission_string` | Utf8, `ls -l`'s `drwxr-xr-x` | never |
//! | `owner`, `group` | Dictionary(Int32, Utf8), lossy | never |
//! | `symlink_target` | Utf8, lossy | not a symlink |
//! | `ns_quota`, `ds_quota` | Int64 | not a directory, or no quota (-1) |

use crate::error::ExportError;
use arrow_array::builder::{
    BinaryBuilder, Int64Builder, StringBuilder, TimestampMillisecondBuilder, UInt16Builder,
    UInt32Builder, UInt64Builder, UInt8Builder,
};
use arrow_array::types::{Int32Type, Int8Type};
use arrow_array::{ArrayRef, DictionaryArray, Int32Array, Int8Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use nsimage_namespace::{Attrs, InodeKind, Namespace};
use nsimage_viewer::dump::PathCache;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

/// The values of the `type` column's dictionary, in key order.
const KINDS: [&str; 3] = ["FILE", "DIRECTORY", "SYMLINK"];

fn dict(key: DataType) -> DataType {
    DataType::Dictionary(Box::new(key), Box::new(DataType::Utf8))
}

fn millis() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
}

/// The Arrow schema of every export (columns in the module's table).
pub fn schema() -> SchemaRef {
    static SCHEMA: OnceLock<SchemaRef> = OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            Arc::new(Schema::new(vec![
                Field::new("id", DataType::UInt64, false),
                Field::new("parent_id", DataType::UInt64, true),
                Field::new("path", DataType::Utf8, false),
                Field::new("path_raw", DataType::Binary, true),
                Field::new("name", DataType::Utf8, false),
                Field::new("type", dict(DataType::Int8), false),
                Field::new("size", DataType::UInt64, false),
                Field::new("blocks", DataType::UInt32, false),
                Field::new("replication", DataType::UInt16, true),
                Field::new("preferred_block_size", DataType::UInt64, true),
                Field::new("storage_policy", DataType::UInt8, true),
                Field::new("mtime", millis(), true),
                Field::new("atime", millis(), true),
                Field::new("permission", DataType::UInt16, false),
                Field::new("permission_string", DataType::Utf8, false),
                Field::new("owner", dict(DataType::Int32), false),
                Field::new("group", dict(DataType::Int32), false),
                Field::new("symlink_target", DataType::Utf8, true),
                Field::new("ns_quota", DataType::Int64, true),
                Field::new("ds_quota", DataType::Int64, true),
            ]))
        })
        .clone()
}

/// A dictionary column built through the string table's ids: each name is
/// checked and copied once per row group.
struct DictColumn {
    keys: Vec<i32>,
    index: HashMap<u32, i32>,
    values: StringBuilder,
}

impl DictColumn {
    fn new(rows: usize) -> DictColumn {
        DictColumn {
            keys: Vec::with_capacity(rows),
            index: HashMap::new(),
            values: StringBuilder::new(),
        }
    }

    fn push(&mut self, id: u32, bytes: &[u8]) -> Result<(), ExportError> {
        let next = i32::try_from(self.index.len()).map_err(|_| ExportError::Internal {
            detail: "more than 2^31 distinct owner or group names".into(),
        })?;
        let key = *self.index.entry(id).or_insert_with(|| {
            self.values.append_value(String::from_utf8_lossy(bytes));
            next
        });
        self.keys.push(key);
        Ok(())
    }

    fn finish(mut self) -> Result<ArrayRef, ExportError> {
        let values = Arc::new(self.values.finish()) as ArrayRef;
        let keys = Int32Array::from(self.keys);
        Ok(Arc::new(DictionaryArray::<Int32Type>::try_new(
            keys, values,
        )?))
    }
}

fn ms(v: u64) -> Option<i64> {
    i64::try_from(v).ok()
}

/// The live inodes of `range`, in slot order, as one record batch.
pub(crate) fn build(ns: &Namespace, range: Range<u32>) -> Result<RecordBatch, ExportError> {
    let rows = range.len();
    let mut id = UInt64Builder::with_capacity(rows);
    let mut parent = UInt64Builder::with_capacity(rows);
    let mut path = StringBuilder::with_capacity(rows, rows * 64);
    let mut path_raw = BinaryBuilder::new();
    let mut name = StringBuilder::with_capacity(rows, rows * 16);
    let mut kind: Vec<i8> = Vec::with_capacity(rows);
    let mut size = UInt64Builder::with_capacity(rows);
    let mut blocks = UInt32Builder::with_capacity(rows);
    let mut replication = UInt16Builder::with_capacity(rows);
    let mut pbs = UInt64Builder::with_capacity(rows);
    let mut policy = UInt8Builder::with_capacity(rows);
    let mut mtime = TimestampMillisecondBuilder::with_capacity(rows);
    let mut atime = TimestampMillisecondBuilder::with_capacity(rows);
    let mut perm = UInt16Builder::with_capacity(rows);
    let mut perm_s = StringBuilder::with_capacity(rows, rows * 10);
    let mut owner = DictColumn::new(rows);
    let mut group = DictColumn::new(rows);
    let mut target = StringBuilder::new();
    let mut nsq = Int64Builder::with_capacity(rows);
    let mut dsq = Int64Builder::with_capacity(rows);
    let mut cache = PathCache::new();
    let mut buf: Vec<u8> = Vec::with_capacity(512);
    for slot in range {
        let Some(inode) = ns.at(slot) else { continue };
        id.append_value(inode.id());
        parent.append_option(inode.parent());
        buf.clear();
        cache.push_path(ns, &inode, &mut buf);
        match std::str::from_utf8(&buf) {
            Ok(s) => {
                path.append_value(s);
                path_raw.append_null();
            }
            Err(_) => {
                path.append_value(String::from_utf8_lossy(&buf));
                path_raw.append_value(&buf);
            }
        }
        name.append_value(String::from_utf8_lossy(inode.name()));
        let k = inode.kind();
        kind.push(match k {
            InodeKind::File => 0,
            InodeKind::Directory => 1,
            InodeKind::Symlink => 2,
        });
        mtime.append_option(ms(inode.mtime()));
        let mode = inode.mode();
        perm.append_value(mode);
        perm_s.append_value(nsimage_viewer::text::permission_string(k, mode));
        let p = inode.perm();
        owner.push(p.user(), inode.user())?;
        group.push(p.group(), inode.group())?;
        match inode.attrs() {
            Attrs::File(f) => {
                size.append_value(f.length());
                blocks.append_value(u32::try_from(f.blocks.len()).unwrap_or(u32::MAX));
                replication.append_value(f.replication);
                pbs.append_value(f.preferred_block_size);
                policy.append_value(f.storage_policy);
                atime.append_option(ms(f.atime));
                target.append_null();
                nsq.append_null();
                dsq.append_null();
            }
            Attrs::Directory { ns_quota, ds_quota } => {
                size.append_value(0);
                blocks.append_value(0);
                replication.append_null();
                pbs.append_null();
                policy.append_null();
                atime.append_null();
                target.append_null();
                nsq.append_option((ns_quota >= 0).then_some(ns_quota));
                dsq.append_option((ds_quota >= 0).then_some(ds_quota));
            }
            Attrs::Symlink { target: t } => {
                size.append_value(0);
                blocks.append_value(0);
                replication.append_null();
                pbs.append_null();
                policy.append_null();
                atime.append_null();
                target.append_value(String::from_utf8_lossy(t));
                nsq.append_null();
                dsq.append_null();
            }
        }
    }
    let kinds = Arc::new(StringArray::from(KINDS.to_vec())) as ArrayRef;
    let kind = Arc::new(DictionaryArray::<Int8Type>::try_new(
        Int8Array::from(kind),
        kinds,
    )?) as ArrayRef;
    let utc =
        |b: &mut TimestampMillisecondBuilder| Arc::new(b.finish().with_timezone("UTC")) as ArrayRef;
    let columns: Vec<ArrayRef> = vec![
        Arc::new(id.finish()),
        Arc::new(parent.finish()),
        Arc::new(path.finish()),
        Arc::new(path_raw.finish()),
        Arc::new(name.finish()),
        kind,
        Arc::new(size.finish()),
        Arc::new(blocks.finish()),
        Arc::new(replication.finish()),
        Arc::new(pbs.finish()),
        Arc::new(policy.finish()),
        utc(&mut mtime),
        utc(&mut atime),
        Arc::new(perm.finish()),
        Arc::new(perm_s.finish()),
        owner.finish()?,
        group.finish()?,
        Arc::new(target.finish()),
        Arc::new(nsq.finish()),
        Arc::new(dsq.finish()),
    ];
    Ok(RecordBatch::try_new(schema(), columns)?)
}
