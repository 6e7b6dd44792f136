//! One column chunk, encoded (pages compressed) into memory by a worker,
//! then spliced into a row group of the output file by the writer.

use crate::columns::{Column, Values};
use crate::error::ExportError;
use bytes::Bytes;
use parquet::basic::Type as PhysicalType;
use parquet::column::page::PageWriter;
use parquet::column::writer::{ColumnCloseResult, ColumnWriterImpl};
use parquet::data_type::{ByteArrayType, DataType, Int32Type, Int64Type};
use parquet::file::properties::WriterPropertiesPtr;
use parquet::file::writer::{SerializedPageWriter, SerializedRowGroupWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;
use std::io::Write;

/// An encoded column chunk: its pages and what closing its writer said
/// (offsets relative to the start of `pages`).
pub(crate) struct Chunk {
    pages: Bytes,
    close: ColumnCloseResult,
}

impl Chunk {
    /// Rows in the chunk.
    pub(crate) fn rows(&self) -> u64 {
        self.close.rows_written
    }
}

fn mismatch(descr: &ColumnDescPtr, what: &str) -> ExportError {
    ExportError::Internal {
        detail: format!("column {}: {what}", descr.path()),
    }
}

/// Encodes `column` as a chunk of the column `descr`.
pub(crate) fn encode(
    descr: ColumnDescPtr,
    props: &WriterPropertiesPtr,
    column: Column,
) -> Result<Chunk, ExportError> {
    let optional = descr.max_def_level() > 0;
    if descr.max_rep_level() != 0 || optional != column.def.is_some() {
        return Err(mismatch(&descr, "levels do not match the schema"));
    }
    let mut sink = TrackedWrite::new(Vec::new());
    let close = {
        let pages = Box::new(SerializedPageWriter::new(&mut sink));
        let def = column.def.as_deref();
        match (descr.physical_type(), column.values) {
            (PhysicalType::INT32, Values::Int32(v)) => {
                write::<Int32Type>(descr, props, pages, &v, def)?
            }
            (PhysicalType::INT64, Values::Int64(v)) => {
                write::<Int64Type>(descr, props, pages, &v, def)?
            }
            (PhysicalType::BYTE_ARRAY, v) => match v.into_byte_arrays() {
                Some(v) => write::<ByteArrayType>(descr, props, pages, &v, def)?,
                None => return Err(mismatch(&descr, "values of another physical type")),
            },
            _ => return Err(mismatch(&descr, "values of another physical type")),
        }
    };
    let pages = Bytes::from(sink.into_inner()?);
    Ok(Chunk { pages, close })
}

fn write<'a, T: DataType>(
    descr: ColumnDescPtr,
    props: &WriterPropertiesPtr,
    pages: Box<dyn PageWriter + 'a>,
    values: &[T::T],
    def: Option<&[i16]>,
) -> Result<ColumnCloseResult, ExportError> {
    let mut w = ColumnWriterImpl::<T>::new(descr.clone(), props.clone(), pages);
    let written = w.write_batch(values, def, None)?;
    if written != values.len() {
        return Err(mismatch(
            &descr,
            &format!(
                "{written} of {} values written (definition levels disagree)",
                values.len()
            ),
        ));
    }
    Ok(w.close()?)
}

/// Appends `chunk` as the next column of `rg`.
pub(crate) fn append<W: Write + Send>(
    rg: &mut SerializedRowGroupWriter<'_, W>,
    chunk: Chunk,
) -> Result<(), ExportError> {
    rg.append_column(&chunk.pages, chunk.close)?;
    Ok(())
}
