//! Exports of a run's events to CSV and Parquet, one row per event, for analysis in R, pandas, DuckDB
//! or a spreadsheet.
//!
//! Both formats have the same columns, in this order (see also `docs/export.md`):
//!
//! | column              | Parquet type                                   | CSV                          | meaning |
//! |---------------------|------------------------------------------------|------------------------------|---------|
//! | `session`           | INT32                                          | integer                      | session (connection) number, from 0 |
//! | `event`             | BYTE_ARRAY (STRING), dictionary                | text                         | event name |
//! | `start_utc`         | INT64 TIMESTAMP(NANOS, isAdjustedToUTC=true)   | RFC 3339, 9 decimals, `Z`    | wall-clock start: `clock_origin_unix_ns + start_ns` |
//! | `start_ns`          | INT64                                          | integer                      | start, ns since the run's clock origin |
//! | `duration_ns`       | INT64                                          | integer                      | duration, ns |
//! | `intended_start_ns` | INT64, optional                                | integer or empty             | open-loop schedule, ns since the origin; null for closed-loop events |
//! | `outcome`           | BYTE_ARRAY (STRING), dictionary                | text                         | `ok`, or the error class (e.g. `pg:40P01`) |
//! | `rows`              | INT64                                          | integer                      | rows affected or returned (0 when unknown) |
//! | `warmup`            | BOOLEAN                                        | `true` / `false`             | the event happened during warm-up |
//!
//! Exports stream the event file block by block, so memory stays bounded however long the run (Parquet
//! buffers one row group of [`ROW_GROUP_ROWS`] rows). The output is written to a temporary file next to
//! the destination and renamed into place at the end: a failed export never leaves a partial file.
//! Runs that were killed, or whose event file ends in a torn block, are exported up to the last
//! complete block and reported as incomplete in [`ExportSummary::incomplete`].

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use dbscope_core::{Event, NameId, NameTable, RunDir};
use parquet::basic::Compression;
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DataType, Int32Type, Int64Type};
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::{SerializedFileWriter, SerializedRowGroupWriter};
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::ColumnPath;

/// The exported columns, in order; CSV header and Parquet schema use exactly these names.
pub const COLUMNS: [&str; 9] = [
    "session",
    "event",
    "start_utc",
    "start_ns",
    "duration_ns",
    "intended_start_ns",
    "outcome",
    "rows",
    "warmup",
];

/// Rows per Parquet row group: the writer buffers this many rows before flushing them to the file.
pub const ROW_GROUP_ROWS: usize = 256 * 1024;

/// The Parquet schema of an export (same columns as [`COLUMNS`]).
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
}
";

/// `incomplete` reason for a run whose manifest still says `running`.
const NOT_ENDED: &str = "the run did not record an end (killed or still running)";

/// String values are handed to the Parquet writer in chunks of this many rows.
const STRING_CHUNK: usize = 8192;

/// Output format of an export.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// Comma-separated values with a header line (RFC 4180 quoting).
    Csv,
    /// Apache Parquet, Snappy-compressed, dictionary-encoded strings.
    Parquet,
}

impl ExportFormat {
    /// The usual file extension, without the dot: `csv` or `parquet`.
    pub fn extension(&self) -> &'static str {
        match self {
            ExportFormat::Csv => "csv",
            ExportFormat::Parquet => "parquet",
        }
    }
}

impl fmt::Display for ExportFormat {
    /// The name as accepted by [`FromStr`]: `csv` or `parquet`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.extension())
    }
}

/// An export format name that is neither `csv` nor `parquet`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown export format {0:?}; choose one of: csv, parquet")]
pub struct UnknownFormat(pub String);

impl FromStr for ExportFormat {
    type Err = UnknownFormat;

    /// Parses `csv` or `parquet` (ASCII case ignored).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.eq_ignore_ascii_case("csv") {
            Ok(ExportFormat::Csv)
        } else if s.eq_ignore_ascii_case("parquet") {
            Ok(ExportFormat::Parquet)
        } else {
            Err(UnknownFormat(s.to_string()))
        }
    }
}

/// What an export wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportSummary {
    /// Rows written: one per event, warm-up events included.
    pub rows: u64,
    /// The file written.
    pub path: PathBuf,
    /// Why the export may lack events, when it may: the run did not record an end, and/or an event
    /// file ended in a torn or damaged block (every complete block before it was exported).
    pub incomplete: Option<String>,
}

/// Errors of [`export_run`]. Whatever the error, no partial output file is left behind.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The run could not be read (not a run, unreadable event file, newer format).
    #[error(transparent)]
    Run(#[from] dbscope_core::Error),
    /// Writing, syncing or renaming the output failed.
    #[error("{path}: cannot write the export: {source}; check that the directory exists, is writable and has free space")]
    Io {
        /// The output file involved.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The output path cannot name a file.
    #[error("{path}: {msg}")]
    Output {
        /// The path given.
        path: PathBuf,
        /// What is wrong with it and what to give instead.
        msg: String,
    },
    /// The Parquet writer failed.
    #[error(
        "{path}: cannot write Parquet: {source}; nothing was written, try again or export to CSV"
    )]
    Parquet {
        /// The output file.
        path: PathBuf,
        /// The underlying error.
        source: ParquetError,
    },
    /// The CSV writer failed.
    #[error("{path}: cannot write CSV: {source}; check that the directory is writable and has free space")]
    Csv {
        /// The output file.
        path: PathBuf,
        /// The underlying error.
        source: csv::Error,
    },
    /// An event holds a value that does not fit its column (only a damaged event file can).
    #[error("{path}: event {index}: {msg}; the event file is probably damaged")]
    Value {
        /// The event file.
        path: PathBuf,
        /// Index of the event in that file (0-based).
        index: u64,
        /// Which value, and why it does not fit.
        msg: String,
    },
}

/// Writes one row per event of the run (warm-up events included, flagged) to `out`.
///
/// `out` is replaced if it exists. The file appears only when the export succeeded: it is written
/// next to `out` under a temporary name, synced, then renamed. Reads the run block by block, so memory
/// stays bounded for runs of any length.
pub fn export_run(
    run: &RunDir,
    format: ExportFormat,
    out: &Path,
) -> Result<ExportSummary, ExportError> {
    export_with(run, format, out, ROW_GROUP_ROWS)
}

/// [`export_run`] with a chosen Parquet row-group size (tests use small ones).
fn export_with(
    run: &RunDir,
    format: ExportFormat,
    out: &Path,
    row_group_rows: usize,
) -> Result<ExportSummary, ExportError> {
    let readers = run.event_readers()?;
    refuse_run_file(run, out)?;
    let tmp = TempOutput::create(out)?;
    let file = tmp.file()?;
    let mut sink = match format {
        ExportFormat::Csv => Sink::Csv(Box::new(CsvSink::new(file, out)?)),
        ExportFormat::Parquet => Sink::Parquet(Box::new(ParquetSink::new(
            file,
            out,
            run,
            row_group_rows.max(1),
        )?)),
    };

    let origin = run.manifest.clock_origin_unix_ns;
    let mut strings = StringPool::default();
    let mut problems = Vec::new();
    if run.is_incomplete() {
        problems.push(NOT_ENDED.to_string());
    }
    let mut rows = 0u64;
    let mut block = Vec::new();
    for (mut reader, file_name) in readers.into_iter().zip(&run.manifest.event_files) {
        let events_path = run.path.join(file_name);
        strings.begin_file();
        let mut index = 0u64;
        while reader.next_block(&mut block)? {
            for ev in &block {
                let row = Row::new(ev, origin, reader.names(), &mut strings).map_err(|msg| {
                    ExportError::Value {
                        path: events_path.clone(),
                        index,
                        msg,
                    }
                })?;
                sink.push(&row, &strings)?;
                index += 1;
            }
        }
        rows += index;
        let tail = reader.tail();
        if let Some(problem) = &tail.problem {
            problems.push(format!(
                "{}: {problem}; the last {} bytes were ignored (every complete block before them was exported)",
                events_path.display(),
                tail.ignored_bytes
            ));
        }
    }
    let incomplete = (!problems.is_empty()).then(|| problems.join("; "));
    let file = sink.finish(&strings, incomplete.as_deref())?;
    tmp.commit(file)?;
    Ok(ExportSummary {
        rows,
        path: out.to_owned(),
        incomplete,
    })
}

/// Refuses an output path that is one of the run's own files (the export would replace it).
fn refuse_run_file(run: &RunDir, out: &Path) -> Result<(), ExportError> {
    let Ok(target) = out.canonicalize() else {
        return Ok(()); // does not exist yet, so it is no run file
    };
    let run_files = std::iter::once(dbscope_core::run::MANIFEST_FILE)
        .chain(run.manifest.event_files.iter().map(String::as_str));
    for f in run_files {
        if run.path.join(f).canonicalize().ok().as_deref() == Some(target.as_path()) {
            return Err(ExportError::Output {
                path: out.to_owned(),
                msg: "is a file of the run being exported; give a path outside the run's files"
                    .into(),
            });
        }
    }
    Ok(())
}

/// One event as column values; strings are indices into a [`StringPool`].
#[derive(Clone, Copy, Debug)]
struct Row {
    session: i32,
    event: u32,
    start_utc_ns: i64,
    start_ns: i64,
    duration_ns: i64,
    intended_start_ns: Option<i64>,
    outcome: u32,
    rows: i64,
    warmup: bool,
}

impl Row {
    /// Converts an event; the error says which value does not fit its column.
    fn new(
        ev: &Event,
        origin_unix_ns: i64,
        names: &NameTable,
        strings: &mut StringPool,
    ) -> Result<Row, String> {
        let signed = |what: &str, v: u64| {
            i64::try_from(v).map_err(|_| format!("{what} {v} does not fit a signed 64-bit column"))
        };
        let session = i32::try_from(ev.session)
            .map_err(|_| format!("session {} does not fit a signed 32-bit column", ev.session))?;
        let start_ns = signed("start_ns", ev.start_ns)?;
        let start_utc_ns = origin_unix_ns.checked_add(start_ns).ok_or_else(|| {
            format!("start_ns {start_ns} past the clock origin {origin_unix_ns} is not a representable time")
        })?;
        let intended_start_ns = match ev.intended_start_ns {
            Some(v) => Some(signed("intended_start_ns", v)?),
            None => None,
        };
        let outcome = if ev.outcome == 0 {
            StringPool::OK
        } else {
            strings.resolve(names, NameId::from(ev.outcome))
        };
        Ok(Row {
            session,
            event: strings.resolve(names, ev.name),
            start_utc_ns,
            start_ns,
            duration_ns: signed("duration_ns", ev.duration_ns)?,
            intended_start_ns,
            outcome,
            rows: i64::from(ev.rows),
            warmup: ev.is_warmup(),
        })
    }
}

/// The distinct strings of an export (event names and outcomes), each stored once.
///
/// Name ids are per event file, so the id-to-string map is reset for each file while the pool itself
/// (what buffered rows point into) lives for the whole export.
#[derive(Debug)]
struct StringPool {
    values: Vec<ByteArray>,
    by_text: HashMap<String, u32>,
    by_id: HashMap<NameId, u32>,
}

impl Default for StringPool {
    fn default() -> Self {
        let mut pool = StringPool {
            values: Vec::new(),
            by_text: HashMap::new(),
            by_id: HashMap::new(),
        };
        pool.intern("ok".to_string());
        pool
    }
}

impl StringPool {
    /// Index of `ok`, the outcome of a successful event.
    const OK: u32 = 0;

    /// Forgets the id mapping of the previous event file.
    fn begin_file(&mut self) {
        self.by_id.clear();
    }

    /// The pool index of the name with this id in the current file's table.
    fn resolve(&mut self, names: &NameTable, id: NameId) -> u32 {
        if let Some(&i) = self.by_id.get(&id) {
            return i;
        }
        let i = self.intern(names.name(id));
        // An id the table does not know yet prints as "#id"; do not pin that in case it appears later.
        if (id as usize) < names.len() {
            self.by_id.insert(id, i);
        }
        i
    }

    fn intern(&mut self, text: String) -> u32 {
        if let Some(&i) = self.by_text.get(&text) {
            return i;
        }
        let i = self.values.len() as u32;
        self.values.push(ByteArray::from(text.as_bytes().to_vec()));
        self.by_text.insert(text, i);
        i
    }

    fn get(&self, i: u32) -> &ByteArray {
        &self.values[i as usize]
    }
}

/// Where rows go.
enum Sink {
    Csv(Box<CsvSink>),
    Parquet(Box<ParquetSink>),
}

impl Sink {
    fn push(&mut self, row: &Row, strings: &StringPool) -> Result<(), ExportError> {
        match self {
            Sink::Csv(s) => s.push(row, strings),
            Sink::Parquet(s) => s.push(row, strings),
        }
    }

    /// Writes what is buffered (and the Parquet footer) and returns the file for syncing.
    fn finish(self, strings: &StringPool, incomplete: Option<&str>) -> Result<File, ExportError> {
        match self {
            Sink::Csv(s) => s.finish(),
            Sink::Parquet(s) => s.finish(strings, incomplete),
        }
    }
}

struct CsvSink {
    writer: csv::Writer<File>,
    record: csv::ByteRecord,
    scratch: String,
    out: PathBuf,
}

impl CsvSink {
    /// Starts the file with the header line.
    fn new(file: File, out: &Path) -> Result<Self, ExportError> {
        let mut sink = CsvSink {
            writer: csv::WriterBuilder::new()
                .has_headers(false)
                .from_writer(file),
            record: csv::ByteRecord::new(),
            scratch: String::new(),
            out: out.to_owned(),
        };
        sink.writer.write_record(COLUMNS).map_err(|e| sink.err(e))?;
        Ok(sink)
    }

    fn err(&self, source: csv::Error) -> ExportError {
        ExportError::Csv {
            path: self.out.clone(),
            source,
        }
    }

    fn push(&mut self, row: &Row, strings: &StringPool) -> Result<(), ExportError> {
        self.record.clear();
        let ts = chrono::DateTime::from_timestamp_nanos(row.start_utc_ns);
        let (rec, s) = (&mut self.record, &mut self.scratch);
        push_display(rec, s, row.session);
        rec.push_field(strings.get(row.event).data());
        push_display(rec, s, ts.format("%Y-%m-%dT%H:%M:%S%.9fZ"));
        push_display(rec, s, row.start_ns);
        push_display(rec, s, row.duration_ns);
        match row.intended_start_ns {
            Some(v) => push_display(rec, s, v),
            None => rec.push_field(b""),
        }
        rec.push_field(strings.get(row.outcome).data());
        push_display(rec, s, row.rows);
        rec.push_field(if row.warmup { b"true" } else { b"false" });
        self.writer
            .write_byte_record(&self.record)
            .map_err(|e| self.err(e))
    }

    fn finish(self) -> Result<File, ExportError> {
        let out = self.out;
        self.writer.into_inner().map_err(|e| ExportError::Io {
            path: out,
            source: e.into_error(),
        })
    }
}

/// Appends the text of `v` as a field, reusing `scratch`.
fn push_display(rec: &mut csv::ByteRecord, scratch: &mut String, v: impl fmt::Display) {
    scratch.clear();
    // Formatting into a String cannot fail.
    let _ = write!(scratch, "{v}");
    rec.push_field(scratch.as_bytes());
}

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
    }
}

struct ParquetSink {
    writer: SerializedFileWriter<File>,
    columns: Columns,
    row_group_rows: usize,
    out: PathBuf,
}

impl ParquetSink {
    fn new(
        file: File,
        out: &Path,
        run: &RunDir,
        row_group_rows: usize,
    ) -> Result<Self, ExportError> {
        let err = |source| ExportError::Parquet {
            path: out.to_owned(),
            source,
        };
        let schema = Arc::new(parse_message_type(PARQUET_SCHEMA).map_err(err)?);
        let mut metadata = vec![KeyValue::new(
            "dbscope.version".to_string(),
            env!("CARGO_PKG_VERSION").to_string(),
        )];
        if let Ok(json) = serde_json::to_string(&run.manifest) {
            metadata.push(KeyValue::new("dbscope.manifest".to_string(), json));
        }
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_dictionary_enabled(false)
            .set_column_dictionary_enabled(ColumnPath::from("event"), true)
            .set_column_dictionary_enabled(ColumnPath::from("outcome"), true)
            .set_column_dictionary_enabled(ColumnPath::from("session"), true)
            .set_max_row_group_size(row_group_rows)
            .set_key_value_metadata(Some(metadata))
            .build();
        let writer = SerializedFileWriter::new(file, schema, Arc::new(props)).map_err(err)?;
        Ok(ParquetSink {
            writer,
            columns: Columns::with_capacity(row_group_rows.min(ROW_GROUP_ROWS)),
            row_group_rows,
            out: out.to_owned(),
        })
    }

    fn err(&self, source: ParquetError) -> ExportError {
        ExportError::Parquet {
            path: self.out.clone(),
            source,
        }
    }

    fn push(&mut self, row: &Row, strings: &StringPool) -> Result<(), ExportError> {
        self.columns.push(row);
        if self.columns.len() >= self.row_group_rows {
            self.flush(strings).map_err(|e| self.err(e))?;
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
        write_column::<Int32Type>(&mut rg, &c.session, None)?;
        write_strings(&mut rg, &c.event, strings)?;
        write_column::<Int64Type>(&mut rg, &c.start_utc, None)?;
        write_column::<Int64Type>(&mut rg, &c.start_ns, None)?;
        write_column::<Int64Type>(&mut rg, &c.duration_ns, None)?;
        write_column::<Int64Type>(&mut rg, &c.intended, Some(&c.intended_def))?;
        write_strings(&mut rg, &c.outcome, strings)?;
        write_column::<Int64Type>(&mut rg, &c.rows, None)?;
        write_column::<BoolType>(&mut rg, &c.warmup, None)?;
        rg.close()?;
        self.columns.clear();
        Ok(())
    }

    fn finish(
        mut self: Box<Self>,
        strings: &StringPool,
        incomplete: Option<&str>,
    ) -> Result<File, ExportError> {
        self.flush(strings).map_err(|e| self.err(e))?;
        if let Some(reason) = incomplete {
            self.writer.append_key_value_metadata(KeyValue::new(
                "dbscope.incomplete".to_string(),
                reason.to_string(),
            ));
        }
        let out = self.out;
        self.writer
            .into_inner()
            .map_err(|source| ExportError::Parquet { path: out, source })
    }
}

/// Writes the next column of a row group; `def` gives definition levels for an optional column.
fn write_column<T: DataType>(
    rg: &mut SerializedRowGroupWriter<'_, File>,
    values: &[T::T],
    def: Option<&[i16]>,
) -> Result<(), ParquetError> {
    let mut col = next_column(rg)?;
    col.typed::<T>().write_batch(values, def, None)?;
    col.close()
}

/// Writes the next column of a row group from string-pool indices.
fn write_strings(
    rg: &mut SerializedRowGroupWriter<'_, File>,
    ids: &[u32],
    strings: &StringPool,
) -> Result<(), ParquetError> {
    let mut col = next_column(rg)?;
    let writer = col.typed::<ByteArrayType>();
    let mut chunk = Vec::with_capacity(STRING_CHUNK.min(ids.len()));
    for part in ids.chunks(STRING_CHUNK) {
        chunk.clear();
        chunk.extend(part.iter().map(|&i| strings.get(i).clone()));
        writer.write_batch(&chunk, None, None)?;
    }
    col.close()
}

fn next_column<'a>(
    rg: &'a mut SerializedRowGroupWriter<'_, File>,
) -> Result<parquet::file::writer::SerializedColumnWriter<'a>, ParquetError> {
    rg.next_column()?.ok_or_else(|| {
        ParquetError::General("the export schema has fewer columns than rows".into())
    })
}

/// The output under a temporary name next to it; removed on drop unless committed.
struct TempOutput {
    tmp: PathBuf,
    out: PathBuf,
    committed: bool,
}

impl TempOutput {
    fn create(out: &Path) -> Result<Self, ExportError> {
        let name = match out.file_name() {
            Some(n) if !out.as_os_str().to_string_lossy().ends_with('/') => n,
            _ => {
                return Err(ExportError::Output {
                    path: out.to_owned(),
                    msg: "not a file name; give the path of the file to write, e.g. run.parquet"
                        .into(),
                })
            }
        };
        if out.is_dir() {
            return Err(ExportError::Output {
                path: out.to_owned(),
                msg: "is a directory; give the path of the file to write, e.g. run.parquet".into(),
            });
        }
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".{}.tmp", std::process::id()));
        Ok(TempOutput {
            tmp: out.with_file_name(tmp_name),
            out: out.to_owned(),
            committed: false,
        })
    }

    fn io(&self, source: std::io::Error) -> ExportError {
        ExportError::Io {
            path: self.out.clone(),
            source,
        }
    }

    /// Creates (or truncates) the temporary file.
    fn file(&self) -> Result<File, ExportError> {
        File::create(&self.tmp).map_err(|e| self.io(e))
    }

    /// Syncs the written file and renames it to the output path.
    fn commit(mut self, file: File) -> Result<(), ExportError> {
        file.sync_all().map_err(|e| self.io(e))?;
        drop(file);
        std::fs::rename(&self.tmp, &self.out).map_err(|e| self.io(e))?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for TempOutput {
    fn drop(&mut self) {
        if !self.committed {
            // Best effort: the file may not have been created.
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbscope_core::{EventWriter, Manifest, Outcome, WorkloadInfo, EVENT_WARMUP};
    use parquet::basic::{LogicalType, TimeUnit};
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;

    const ORIGIN: i64 = 1_796_233_530_123_456_789; // 2026-12-02T17:45:30.123456789Z

    /// What a row of the export should hold for an event.
    #[derive(Clone, Debug, PartialEq)]
    struct Expected {
        session: i32,
        event: String,
        start_utc_ns: i64,
        start_ns: i64,
        duration_ns: i64,
        intended_start_ns: Option<i64>,
        outcome: String,
        rows: i64,
        warmup: bool,
    }

    const TRICKY: &str = "select \"a\", b";

    /// The `i`th test event and the row it should export to: two event names (one with a comma and
    /// quotes), errors of two classes, warm-up events, some intended starts.
    fn event_at(i: u64, names: &NameTable) -> (Event, Expected) {
        let event = if i.is_multiple_of(3) {
            TRICKY
        } else {
            "commit"
        };
        let class = ["pg:40P01", "connection, reset"][(i % 2) as usize];
        let ev = Event {
            session: (i % 4) as u32,
            name: names.intern(event),
            start_ns: i * 1_000_003 + 999_999_999,
            duration_ns: 500 + i * 7,
            intended_start_ns: i.is_multiple_of(5).then_some(i * 1_000_000),
            outcome: if i % 7 == 3 {
                names.intern_outcome(class)
            } else {
                0
            },
            flags: if i < 40 { EVENT_WARMUP } else { 0 },
            rows: (i % 11) as u32,
        };
        let expected = Expected {
            session: ev.session as i32,
            event: event.to_string(),
            start_utc_ns: ORIGIN + ev.start_ns as i64,
            start_ns: ev.start_ns as i64,
            duration_ns: ev.duration_ns as i64,
            intended_start_ns: ev.intended_start_ns.map(|v| v as i64),
            outcome: if ev.outcome == 0 { "ok" } else { class }.to_string(),
            rows: ev.rows as i64,
            warmup: i < 40,
        };
        (ev, expected)
    }

    /// Writes a run of `blocks` blocks of `per_block` events, handing each expected row to `keep`.
    fn write_run_with(
        dir: &Path,
        blocks: u64,
        per_block: u64,
        outcome: Outcome,
        mut keep: impl FnMut(Expected),
    ) -> RunDir {
        let mut m = Manifest::new("workload", WorkloadInfo::default(), 1);
        m.clock_origin_unix_ns = ORIGIN;
        m.outcome = outcome;
        let run = RunDir::create(&dir.join("run"), m).unwrap();
        let names = NameTable::new();
        let path = run.path.join(&run.manifest.event_files[0]);
        let mut w = EventWriter::create(&path, names.clone()).unwrap();
        let mut evs = Vec::new();
        for b in 0..blocks {
            evs.clear();
            for j in 0..per_block {
                let (ev, expected) = event_at(b * per_block + j, &names);
                evs.push(ev);
                keep(expected);
            }
            w.write_block(&evs).unwrap();
        }
        run
    }

    /// [`write_run_with`], returning the expected rows.
    fn write_run(
        dir: &Path,
        blocks: u64,
        per_block: u64,
        outcome: Outcome,
    ) -> (RunDir, Vec<Expected>) {
        let mut expected = Vec::new();
        let run = write_run_with(dir, blocks, per_block, outcome, |e| expected.push(e));
        (run, expected)
    }

    fn read_csv(path: &Path) -> Vec<Expected> {
        let mut r = csv::Reader::from_path(path).unwrap();
        assert_eq!(
            r.headers().unwrap(),
            &csv::StringRecord::from(COLUMNS.to_vec())
        );
        r.records()
            .map(|rec| {
                let rec = rec.unwrap();
                assert_eq!(rec.len(), COLUMNS.len());
                let ts = chrono::DateTime::parse_from_rfc3339(&rec[2]).unwrap();
                // Exactly nine decimals and Z, as documented.
                assert_eq!(
                    rec[2].len(),
                    "2026-12-02T17:45:30.123456789Z".len(),
                    "{}",
                    &rec[2]
                );
                assert!(rec[2].ends_with('Z'));
                Expected {
                    session: rec[0].parse().unwrap(),
                    event: rec[1].to_string(),
                    start_utc_ns: ts.timestamp_nanos_opt().unwrap(),
                    start_ns: rec[3].parse().unwrap(),
                    duration_ns: rec[4].parse().unwrap(),
                    intended_start_ns: (!rec[5].is_empty()).then(|| rec[5].parse().unwrap()),
                    outcome: rec[6].to_string(),
                    rows: rec[7].parse().unwrap(),
                    warmup: match &rec[8] {
                        "true" => true,
                        "false" => false,
                        other => panic!("warmup {other:?}"),
                    },
                }
            })
            .collect()
    }

    fn read_parquet(path: &Path) -> (Vec<Expected>, SerializedFileReader<File>) {
        let reader = SerializedFileReader::new(File::open(path).unwrap()).unwrap();
        let schema = reader.metadata().file_metadata().schema_descr();
        let names: Vec<_> = schema
            .columns()
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        assert_eq!(names, COLUMNS);
        assert!(matches!(
            schema.column(2).logical_type(),
            Some(LogicalType::Timestamp {
                is_adjusted_to_u_t_c: true,
                unit: TimeUnit::NANOS(_)
            })
        ));
        assert_eq!(schema.column(1).logical_type(), Some(LogicalType::String));
        assert_eq!(schema.column(6).logical_type(), Some(LogicalType::String));
        let rows = reader
            .get_row_iter(None)
            .unwrap()
            .map(|row| {
                let row = row.unwrap();
                let f: Vec<Field> = row.get_column_iter().map(|(_, f)| f.clone()).collect();
                assert_eq!(f.len(), COLUMNS.len());
                let long = |f: &Field| match f {
                    Field::Long(v) => *v,
                    other => panic!("expected a long, got {other:?}"),
                };
                let string = |f: &Field| match f {
                    Field::Str(s) => s.clone(),
                    other => panic!("expected a string, got {other:?}"),
                };
                Expected {
                    session: match f[0] {
                        Field::Int(v) => v,
                        ref other => panic!("session {other:?}"),
                    },
                    event: string(&f[1]),
                    start_utc_ns: long(&f[2]),
                    start_ns: long(&f[3]),
                    duration_ns: long(&f[4]),
                    intended_start_ns: match f[5] {
                        Field::Null => None,
                        ref v => Some(long(v)),
                    },
                    outcome: string(&f[6]),
                    rows: long(&f[7]),
                    warmup: match f[8] {
                        Field::Bool(b) => b,
                        ref other => panic!("warmup {other:?}"),
                    },
                }
            })
            .collect();
        (rows, reader)
    }

    fn no_stray_files(dir: &Path, keep: &[&str]) {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "run")
            .collect();
        names.sort();
        assert_eq!(names, keep, "files left in {}", dir.display());
    }

    #[test]
    fn format_names() {
        assert_eq!("csv".parse::<ExportFormat>().unwrap(), ExportFormat::Csv);
        assert_eq!(
            "Parquet".parse::<ExportFormat>().unwrap(),
            ExportFormat::Parquet
        );
        let err = "json".parse::<ExportFormat>().unwrap_err().to_string();
        assert!(
            err.contains("\"json\"") && err.contains("csv, parquet"),
            "{err}"
        );
        assert_eq!(ExportFormat::Parquet.extension(), "parquet");
        assert_eq!(ExportFormat::Csv.to_string(), "csv");
    }

    #[test]
    fn csv_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let (run, expected) = write_run(dir.path(), 3, 100, Outcome::Complete);
        let out = dir.path().join("events.csv");
        let s = export_run(&run, ExportFormat::Csv, &out).unwrap();
        assert_eq!(s.rows, 300);
        assert_eq!(s.path, out);
        assert_eq!(s.incomplete, None);
        let got = read_csv(&out);
        assert_eq!(got, expected);
        // The awkward name is quoted per RFC 4180, and the first timestamp is spelled out exactly.
        let text = std::fs::read_to_string(&out).unwrap();
        let first = text.lines().nth(1).unwrap();
        assert_eq!(
            first,
            "0,\"select \"\"a\"\", b\",2026-12-02T17:45:31.123456788Z,999999999,500,0,ok,0,true"
        );
        no_stray_files(dir.path(), &["events.csv"]);
    }

    #[test]
    fn parquet_round_trip_over_row_groups() {
        let dir = tempfile::tempdir().unwrap();
        let (run, expected) = write_run(dir.path(), 5, 70, Outcome::Complete);
        let out = dir.path().join("events.parquet");
        let s = export_with(&run, ExportFormat::Parquet, &out, 100).unwrap();
        assert_eq!((s.rows, s.incomplete), (350, None));
        let (got, reader) = read_parquet(&out);
        assert_eq!(got, expected);
        assert_eq!(reader.metadata().num_row_groups(), 4);
        assert!(expected.iter().any(|e| e.intended_start_ns.is_none()));
        let kv = reader
            .metadata()
            .file_metadata()
            .key_value_metadata()
            .unwrap();
        assert!(kv.iter().any(|k| k.key == "dbscope.manifest"));
        assert!(!kv.iter().any(|k| k.key == "dbscope.incomplete"));
        let rg = reader.metadata().row_group(0);
        assert_eq!(rg.column(1).compression(), Compression::SNAPPY);
        no_stray_files(dir.path(), &["events.parquet"]);

        // The public entry point (one row group at this size) gives the same rows.
        let out2 = dir.path().join("again.parquet");
        export_run(&run, ExportFormat::Parquet, &out2).unwrap();
        let (got2, reader2) = read_parquet(&out2);
        assert_eq!(got2, expected);
        assert_eq!(reader2.metadata().num_row_groups(), 1);
    }

    #[test]
    fn torn_tail_exports_complete_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let (run, expected) = write_run(dir.path(), 4, 50, Outcome::Running);
        let events = run.path.join(&run.manifest.event_files[0]);
        let len = std::fs::metadata(&events).unwrap().len();
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&events)
            .unwrap();
        f.set_len(len - 37).unwrap();
        drop(f);
        for format in [ExportFormat::Csv, ExportFormat::Parquet] {
            let out = dir.path().join(format!("torn.{}", format.extension()));
            let s = export_run(&run, format, &out).unwrap();
            assert_eq!(s.rows, 150);
            let why = s.incomplete.unwrap();
            assert!(why.contains("did not record an end"), "{why}");
            assert!(
                why.contains("torn block") && why.contains("the last"),
                "{why}"
            );
            assert!(why.contains("events.dsev"), "{why}");
            let got = match format {
                ExportFormat::Csv => read_csv(&out),
                ExportFormat::Parquet => {
                    let (rows, reader) = read_parquet(&out);
                    let kv = reader
                        .metadata()
                        .file_metadata()
                        .key_value_metadata()
                        .unwrap();
                    assert!(kv.iter().any(|k| k.key == "dbscope.incomplete"));
                    rows
                }
            };
            assert_eq!(got, expected[..150]);
        }
    }

    #[test]
    fn name_ids_are_per_event_file() {
        let dir = tempfile::tempdir().unwrap();
        let (mut run, mut expected) = write_run(dir.path(), 2, 10, Outcome::Complete);
        // A second file whose table gives the same names other ids (and adds one).
        let names = NameTable::new();
        let second = "events-2.dsev";
        let mut w = EventWriter::create(&run.path.join(second), names.clone()).unwrap();
        let mut evs = Vec::new();
        for (i, name) in ["commit", "vacuum", TRICKY].into_iter().enumerate() {
            let ev = Event {
                session: 9,
                name: names.intern(name),
                start_ns: 10 + i as u64,
                outcome: if i == 1 {
                    names.intern_outcome("pg:40P01")
                } else {
                    0
                },
                ..Event::default()
            };
            evs.push(ev);
            expected.push(Expected {
                session: 9,
                event: name.to_string(),
                start_utc_ns: ORIGIN + 10 + i as i64,
                start_ns: 10 + i as i64,
                duration_ns: 0,
                intended_start_ns: None,
                outcome: if i == 1 { "pg:40P01" } else { "ok" }.to_string(),
                rows: 0,
                warmup: false,
            });
        }
        w.write_block(&evs).unwrap();
        drop(w);
        run.manifest.event_files.push(second.to_string());
        run.save_manifest().unwrap();
        let run = RunDir::open(&run.path).unwrap();
        let csv_out = dir.path().join("two.csv");
        assert_eq!(
            export_run(&run, ExportFormat::Csv, &csv_out).unwrap().rows,
            23
        );
        assert_eq!(read_csv(&csv_out), expected);
        let pq_out = dir.path().join("two.parquet");
        export_with(&run, ExportFormat::Parquet, &pq_out, 7).unwrap();
        assert_eq!(read_parquet(&pq_out).0, expected);
    }

    #[test]
    fn empty_run_has_header_only() {
        let dir = tempfile::tempdir().unwrap();
        let (run, _) = write_run(dir.path(), 0, 0, Outcome::Complete);
        let csv_out = dir.path().join("e.csv");
        assert_eq!(
            export_run(&run, ExportFormat::Csv, &csv_out).unwrap().rows,
            0
        );
        assert_eq!(
            std::fs::read_to_string(&csv_out).unwrap(),
            COLUMNS.join(",") + "\n"
        );
        let pq_out = dir.path().join("e.parquet");
        assert_eq!(
            export_run(&run, ExportFormat::Parquet, &pq_out)
                .unwrap()
                .rows,
            0
        );
        assert!(read_parquet(&pq_out).0.is_empty());
    }

    #[test]
    fn failures_leave_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let (run, _) = write_run(dir.path(), 1, 10, Outcome::Complete);
        // A session that does not fit INT32: only a damaged file has one.
        let mut w = EventWriter::create(&run.path.join("events.dsev"), NameTable::new()).unwrap();
        let bad = Event {
            session: u32::MAX,
            ..Event::default()
        };
        w.write_block(&[Event::default(), bad]).unwrap();
        drop(w);
        for format in [ExportFormat::Csv, ExportFormat::Parquet] {
            let out = dir.path().join(format!("bad.{}", format.extension()));
            let err = export_run(&run, format, &out).unwrap_err().to_string();
            assert!(
                err.contains("events.dsev: event 1: session 4294967295"),
                "{err}"
            );
            assert!(err.contains("damaged"), "{err}");
        }
        no_stray_files(dir.path(), &[]);

        let events = run.path.join("events.dsev");
        let before = std::fs::read(&events).unwrap();
        let err = export_run(&run, ExportFormat::Csv, &events)
            .unwrap_err()
            .to_string();
        assert!(err.contains("is a file of the run"), "{err}");
        assert_eq!(std::fs::read(&events).unwrap(), before);

        let missing = dir.path().join("no/such/dir/x.csv");
        let err = export_run(&run, ExportFormat::Csv, &missing)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no/such/dir/x.csv") && err.contains("check that"),
            "{err}"
        );
        let err = export_run(&run, ExportFormat::Csv, dir.path())
            .unwrap_err()
            .to_string();
        assert!(err.contains("is a directory"), "{err}");
        let err = export_run(&run, ExportFormat::Csv, Path::new("/"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a file name"), "{err}");

        let not_run = RunDir {
            path: dir.path().join("nothing"),
            manifest: run.manifest.clone(),
        };
        let err = export_run(&not_run, ExportFormat::Csv, &dir.path().join("x.csv"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("nothing/events.dsev"), "{err}");
        no_stray_files(dir.path(), &[]);
    }

    /// Peak memory stays bounded for a long run: `cargo test -p dbscope-analysis --release --lib
    /// export::tests::four_million_events -- --ignored --nocapture`.
    #[test]
    #[ignore = "slow: writes and exports 4 M events"]
    fn four_million_events() {
        let dir = tempfile::tempdir().unwrap();
        let run = write_run_with(dir.path(), 400, 10_000, Outcome::Complete, |_| {});
        for format in [ExportFormat::Csv, ExportFormat::Parquet] {
            let out = dir.path().join(format!("big.{}", format.extension()));
            assert_eq!(export_run(&run, format, &out).unwrap().rows, 4_000_000);
            let size = std::fs::metadata(&out).unwrap().len();
            eprintln!("{format}: {size} bytes");
        }
        // Peak resident memory of the whole test process (Linux); the events alone are 160 MB.
        if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
            let hwm_kb: u64 = status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap_or(0);
            eprintln!("peak RSS {hwm_kb} kB");
            assert!(hwm_kb < 150 * 1024, "peak RSS {hwm_kb} kB");
        }
    }
}
