//! The Parquet writer of an export: rows buffered column by column and written one row group at a
//! time (Snappy, dictionary-encoded strings), into any `io::Write` (the export's file manager hands
//! it the output file).

use std::io::Write;
use std::sync::Arc;

use parquet::basic::Compression;
use parquet::data_type::{BoolType, ByteArrayType, DataType, Int32Type, Int64Type};
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::{
    SerializedColumnWriter, SerializedFileWriter, SerializedRowGroupWriter,
};
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::ColumnPath;

use super::row::{Row, StringPool};

/// The Parquet schema of an export (same columns as [`super::row::COLUMNS`]).
const PARQUET_SCHEMA: &str = "
message dbscope_events {
  required int32 session;
  required binary event (STRING);
  required int64 start_utc (TIMESTAMP(NANOS,true));
  required int64 start_ns;
  required int64 duration_ns;
  optional int64 intended_start_ns;
  required binary outcome (STRING);
  required int64 rows;
  required boolean warmup;
  optional int64 obj;
  optional int64 p1;
  optional int64 p2;
  optional int64 p3;
  optional binary p1_name (STRING);
  optional binary p2_name (STRING);
  optional binary p3_name (STRING);
}
";

/// Rows per Parquet row group: the writer buffers this many rows before flushing them to the file.
pub const ROW_GROUP_ROWS: usize = 256 * 1024;

/// String values are handed to the Parquet writer in chunks of this many rows.
const STRING_CHUNK: usize = 8192;

/// Column buffers of one Parquet row group.
#[derive(Default)]
struct Columns {
    session: Vec<i32>,
    event: Vec<u32>,
    start_utc: Vec<i64>,
    start_ns: Vec<i64>,
    duration_ns: Vec<i64>,
    /// Values of the non-null intended starts only, as Parquet wants them.
    intended: Vec<i64>,
    /// Definition level per row: 1 when there is an intended start, 0 for null.
    intended_def: Vec<i16>,
    outcome: Vec<u32>,
    rows: Vec<i64>,
    warmup: Vec<bool>,
    obj: Optional<i64>,
    p: [Optional<i64>; 3],
    p_names: [Optional<u32>; 3],
}

/// An optional column: the non-null values, and a definition level per row (1 set, 0 null).
#[derive(Default)]
struct Optional<T> {
    values: Vec<T>,
    def: Vec<i16>,
}

impl<T: Copy> Optional<T> {
    fn push(&mut self, v: Option<T>) {
        if let Some(v) = v {
            self.values.push(v);
        }
        self.def.push(i16::from(v.is_some()));
    }

    fn clear(&mut self) {
        self.values.clear();
        self.def.clear();
    }
}

impl Columns {
    fn with_capacity(n: usize) -> Self {
        Columns {
            session: Vec::with_capacity(n),
            event: Vec::with_capacity(n),
            start_utc: Vec::with_capacity(n),
            start_ns: Vec::with_capacity(n),
            duration_ns: Vec::with_capacity(n),
            intended: Vec::with_capacity(n),
            intended_def: Vec::with_capacity(n),
            outcome: Vec::with_capacity(n),
            rows: Vec::with_capacity(n),
            warmup: Vec::with_capacity(n),
            ..Columns::default()
        }
    }

    fn len(&self) -> usize {
        self.session.len()
    }

    fn push(&mut self, r: &Row) {
        self.session.push(r.session);
        self.event.push(r.event);
        self.start_utc.push(r.start_utc_ns);
        self.start_ns.push(r.start_ns);
        self.duration_ns.push(r.duration_ns);
        match r.intended_start_ns {
            Some(v) => {
                self.intended.push(v);
                self.intended_def.push(1);
            }
            None => self.intended_def.push(0),
        }
        self.outcome.push(r.outcome);
        self.rows.push(r.rows);
        self.warmup.push(r.warmup);
        self.obj.push(r.obj);
        for i in 0..3 {
            self.p[i].push(r.p[i]);
            self.p_names[i].push(r.p_names[i]);
        }
    }

    fn clear(&mut self) {
        self.session.clear();
        self.event.clear();
        self.start_utc.clear();
        self.start_ns.clear();
        self.duration_ns.clear();
        self.intended.clear();
        self.intended_def.clear();
        self.outcome.clear();
        self.rows.clear();
        self.warmup.clear();
        self.obj.clear();
        for i in 0..3 {
            self.p[i].clear();
            self.p_names[i].clear();
        }
    }
}

/// Writes rows as Parquet into `W`, one row group per `row_group_rows` rows.
pub(super) struct ParquetWriter<W: Write + Send> {
    writer: SerializedFileWriter<W>,
    columns: Columns,
    row_group_rows: usize,
}

impl<W: Write + Send> ParquetWriter<W> {
    /// Starts the output; `manifest_json` goes into the file's key-value metadata as
    /// `dbscope.manifest`, beside `dbscope.version`.
    pub(super) fn new(
        out: W,
        manifest_json: Option<String>,
        row_group_rows: usize,
    ) -> Result<Self, ParquetError> {
        let schema = Arc::new(parse_message_type(PARQUET_SCHEMA)?);
        let mut metadata = vec![KeyValue::new(
            "dbscope.version".to_string(),
            env!("CARGO_PKG_VERSION").to_string(),
        )];
        if let Some(json) = manifest_json {
            metadata.push(KeyValue::new("dbscope.manifest".to_string(), json));
        }
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_dictionary_enabled(false)
            .set_column_dictionary_enabled(ColumnPath::from("event"), true)
            .set_column_dictionary_enabled(ColumnPath::from("outcome"), true)
            .set_column_dictionary_enabled(ColumnPath::from("session"), true)
            .set_column_dictionary_enabled(ColumnPath::from("p1_name"), true)
            .set_column_dictionary_enabled(ColumnPath::from("p2_name"), true)
            .set_column_dictionary_enabled(ColumnPath::from("p3_name"), true)
            .set_max_row_group_row_count(Some(row_group_rows))
            .set_key_value_metadata(Some(metadata))
            .build();
        let writer = SerializedFileWriter::new(out, schema, Arc::new(props))?;
        Ok(ParquetWriter {
            writer,
            columns: Columns::with_capacity(row_group_rows.min(ROW_GROUP_ROWS)),
            row_group_rows,
        })
    }

    /// Buffers one row, writing a row group when the buffer is full.
    pub(super) fn push(&mut self, row: &Row, strings: &StringPool) -> Result<(), ParquetError> {
        self.columns.push(row);
        if self.columns.len() >= self.row_group_rows {
            self.flush(strings)?;
        }
        Ok(())
    }

    /// Writes the buffered rows as one row group.
    fn flush(&mut self, strings: &StringPool) -> Result<(), ParquetError> {
        if self.columns.len() == 0 {
            return Ok(());
        }
        let c = &self.columns;
        let mut rg = self.writer.next_row_group()?;
        write_column::<Int32Type, W>(&mut rg, &c.session, None)?;
        write_strings(&mut rg, &c.event, None, strings)?;
        write_column::<Int64Type, W>(&mut rg, &c.start_utc, None)?;
        write_column::<Int64Type, W>(&mut rg, &c.start_ns, None)?;
        write_column::<Int64Type, W>(&mut rg, &c.duration_ns, None)?;
        write_column::<Int64Type, W>(&mut rg, &c.intended, Some(&c.intended_def))?;
        write_strings(&mut rg, &c.outcome, None, strings)?;
        write_column::<Int64Type, W>(&mut rg, &c.rows, None)?;
        write_column::<BoolType, W>(&mut rg, &c.warmup, None)?;
        write_column::<Int64Type, W>(&mut rg, &c.obj.values, Some(&c.obj.def))?;
        for p in &c.p {
            write_column::<Int64Type, W>(&mut rg, &p.values, Some(&p.def))?;
        }
        for n in &c.p_names {
            write_strings(&mut rg, &n.values, Some(&n.def), strings)?;
        }
        rg.close()?;
        self.columns.clear();
        Ok(())
    }

    /// Writes what is buffered and the footer (with `dbscope.incomplete` when the export may lack
    /// events) and gives the output back.
    pub(super) fn finish(
        mut self,
        strings: &StringPool,
        incomplete: Option<&str>,
    ) -> Result<W, ParquetError> {
        self.flush(strings)?;
        if let Some(reason) = incomplete {
            self.writer.append_key_value_metadata(KeyValue::new(
                "dbscope.incomplete".to_string(),
                reason.to_string(),
            ));
        }
        self.writer.into_inner()
    }
}

/// Writes the next column of a row group; `def` gives definition levels for an optional column.
fn write_column<T: DataType, W: Write + Send>(
    rg: &mut SerializedRowGroupWriter<'_, W>,
    values: &[T::T],
    def: Option<&[i16]>,
) -> Result<(), ParquetError> {
    let mut col = next_column(rg)?;
    col.typed::<T>().write_batch(values, def, None)?;
    col.close()
}

/// Writes the next column of a row group from string-pool indices; `def` gives definition levels
/// for an optional column (`ids` then holds the non-null values only).
fn write_strings<W: Write + Send>(
    rg: &mut SerializedRowGroupWriter<'_, W>,
    ids: &[u32],
    def: Option<&[i16]>,
    strings: &StringPool,
) -> Result<(), ParquetError> {
    let mut col = next_column(rg)?;
    let writer = col.typed::<ByteArrayType>();
    match def {
        // Nulls make value and level chunks differ in length: one batch (these columns are
        // sparse and their strings few).
        Some(def) => {
            let values: Vec<_> = ids.iter().map(|&i| strings.get(i).clone()).collect();
            writer.write_batch(&values, Some(def), None)?;
        }
        None => {
            let mut chunk = Vec::with_capacity(STRING_CHUNK.min(ids.len()));
            for part in ids.chunks(STRING_CHUNK) {
                chunk.clear();
                chunk.extend(part.iter().map(|&i| strings.get(i).clone()));
                writer.write_batch(&chunk, None, None)?;
            }
        }
    }
    col.close()
}

fn next_column<'a, W: Write + Send>(
    rg: &'a mut SerializedRowGroupWriter<'_, W>,
) -> Result<SerializedColumnWriter<'a>, ParquetError> {
    rg.next_column()?.ok_or_else(|| {
        ParquetError::General("the export schema has fewer columns than rows".into())
    })
}
