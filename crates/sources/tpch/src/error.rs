//! The errors of dbscope-tpch: one enum per job, variants by category (I/O, input, format).
//!
//! As DataFusion's `DataFusionError`: I/O on a named file, unusable input or options, data that is
//! not what TPC-H's tools write. Each message says what is wrong and what to do.

use std::fmt;
use std::path::PathBuf;

use parquet::basic::{LogicalType, Type as PhysicalType};
use parquet::errors::ParquetError;

/// Errors of the Q1 job: every message names the file (and, for bad data, the line and field).
#[derive(Debug, thiserror::Error)]
pub enum Q1Error {
    /// I/O: a file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Input: the paths do not name usable lineitem data.
    #[error(transparent)]
    Input(#[from] InputError),
    /// Format: a line that is not a lineitem row.
    #[error("{path}:{line}: field {field} ({name}): {msg}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Line number, from 1.
        line: u64,
        /// Field number, from 1 (as in the TPC-H specification's column order).
        field: usize,
        /// The field's name.
        name: &'static str,
        /// What was expected and what was found.
        msg: String,
    },
    /// Format: the last line has no newline: the file was cut short.
    #[error("{path}:{line}: truncated last line (no newline at the end): the file is incomplete; regenerate it with `dbscope tpch gen`")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Line number, from 1.
        line: u64,
    },
    /// I/O: the file changed size while the job read it (another process truncated or appended
    /// to it): what was read is not the file, so there is no answer.
    #[error("{path}: the file changed while it was read ({was} bytes when the job started, now {now}): no answer from a partial read; run again on a file nothing else writes")]
    Changed {
        /// The file.
        path: PathBuf,
        /// Its size when the job was planned.
        was: u64,
        /// Its size (or the size its map could still read) when the change was seen.
        now: u64,
    },
    /// Format: a Parquet file that is not lineitem as `tpch gen --format parquet` writes it.
    #[error("{path}: {source}")]
    Parquet {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        source: LineitemParquetError,
    },
}

/// Input: why the paths given to Q1 are not usable lineitem data.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// No path at all.
    #[error("no input: give lineitem.tbl files or directories made by `dbscope tpch gen`")]
    NoPaths,
    /// A directory holding both text and Parquet lineitem files.
    #[error("{dir}: holds both lineitem .tbl and .parquet files; name the files to read")]
    MixedFormats {
        /// The directory.
        dir: PathBuf,
    },
    /// A directory without lineitem files.
    #[error("{dir}: no lineitem*.tbl files in this directory (nor lineitem*.parquet){}", other_formats_hint(.dir, .csv))]
    NoLineitemFiles {
        /// The directory.
        dir: PathBuf,
        /// A lineitem CSV file the directory holds instead, if any.
        csv: Option<PathBuf>,
    },
    /// A lineitem file in CSV, which Q1 does not read.
    #[error("{path}: CSV with a header line, as `dbscope tpch gen --format csv` writes it; tpch q1 reads dbgen's '|'-separated .tbl or Parquet: make them with `dbscope tpch gen --table lineitem --format parquet --out DIR` (or --format tbl) at the same --sf")]
    Csv {
        /// The file.
        path: PathBuf,
    },
    /// An empty file.
    #[error("{path}: empty file: no lineitem rows")]
    EmptyFile {
        /// The file.
        path: PathBuf,
    },
}

/// The end of [`InputError::NoLineitemFiles`]'s message: what the directory holds instead and
/// the command that makes what Q1 reads.
fn other_formats_hint(dir: &std::path::Path, csv: &Option<PathBuf>) -> String {
    match csv {
        Some(f) => format!(
            "; it holds {} (CSV, from `dbscope tpch gen --format csv`), which tpch q1 does not read: make .tbl or Parquet with `dbscope tpch gen --table lineitem --format parquet --out DIR` (or --format tbl) at the same --sf",
            f.display()
        ),
        None => format!(
            "; generate them with `dbscope tpch gen --table lineitem --out {}`",
            dir.display()
        ),
    }
}

/// Why a Parquet file cannot be read as lineitem (the messages name no file: [`Q1Error::Parquet`]
/// adds it).
#[derive(Debug, thiserror::Error)]
pub enum LineitemParquetError {
    /// I/O: the file could not be opened.
    #[error("{0}")]
    Open(#[source] std::io::Error),
    /// Format: the footer is not Parquet's.
    #[error("not a Parquet file: {0}")]
    NotParquet(#[source] ParquetError),
    /// Format: fewer columns than lineitem has.
    #[error(
        "{columns} columns; lineitem has 16 (write it with `dbscope tpch gen --format parquet`)"
    )]
    TooFewColumns {
        /// Columns in the file.
        columns: usize,
    },
    /// Format: a column Q1 reads is not the one `tpch gen` writes there.
    #[error("column {column} is {found} {found_type:?} {found_logical:?}; expected {expected} {expected_type:?} {expected_logical:?} (write it with `dbscope tpch gen --format parquet`)")]
    WrongColumn {
        /// Column number, from 1.
        column: usize,
        /// Its name in the file.
        found: String,
        /// Its physical type in the file.
        found_type: PhysicalType,
        /// Its logical type in the file (boxed: parquet 59's `LogicalType` is large, and this
        /// error travels in every `Result` of the job).
        found_logical: Option<Box<LogicalType>>,
        /// lineitem's column at that place.
        expected: &'static str,
        /// The physical type Q1 reads.
        expected_type: PhysicalType,
        /// The logical type Q1 reads (`None`: any).
        expected_logical: Option<Box<LogicalType>>,
    },
    /// Format: the Parquet reader failed on the data.
    #[error("{0}")]
    Read(#[source] ParquetError),
    /// Format: a column's reader is not of the type the schema declared.
    #[error("column {column} is not {expected}")]
    ColumnType {
        /// Column number, from 1.
        column: usize,
        /// The physical type expected (`INT64`, `INT32`, `BYTE_ARRAY`).
        expected: &'static str,
    },
    /// Format: a column of a row group holds another number of values than the row group has rows.
    #[error("row group {row_group}: a column has {values} values, the row group {rows} rows")]
    ColumnLength {
        /// The row group, from 0.
        row_group: usize,
        /// Values in the column.
        values: usize,
        /// Rows in the row group.
        rows: usize,
    },
    /// Format: a flag that is not one character.
    #[error("row group {row_group}, row {row}: {column} {value:?} is not one character")]
    NotOneCharacter {
        /// The row group, from 0.
        row_group: usize,
        /// The row in the row group, from 1.
        row: usize,
        /// The column's name.
        column: &'static str,
        /// Its value (lossy UTF-8).
        value: String,
    },
    /// Format: the Parquet reader panicked on corrupt data (caught, so bad input never crashes).
    #[error("corrupt Parquet data in {place} (the Parquet reader failed: {panic})")]
    ReaderPanicked {
        /// Where it was reading.
        place: ParquetPlace,
        /// The panic's message.
        panic: String,
    },
}

/// Where in a Parquet file the reader was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParquetPlace {
    /// The footer (metadata).
    Footer,
    /// A row group, from 0.
    RowGroup(usize),
}

impl fmt::Display for ParquetPlace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParquetPlace::Footer => write!(f, "the footer"),
            ParquetPlace::RowGroup(rg) => write!(f, "row group {rg}"),
        }
    }
}

/// Errors of generation.
#[derive(Debug, thiserror::Error)]
pub enum GenError {
    /// Input: a bad option.
    #[error(transparent)]
    Config(#[from] GenConfigError),
    /// I/O: a file could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// I/O: the Parquet writer failed.
    #[error("{path}: {source}")]
    Parquet {
        /// The file.
        path: PathBuf,
        /// The error.
        source: ParquetError,
    },
}

/// Input: why a generation's configuration cannot run.
#[derive(Debug, thiserror::Error)]
pub enum GenConfigError {
    /// A scale factor that is not positive (or absurdly large).
    #[error("--sf {scale_factor}: the scale factor must be greater than 0 (e.g. 0.01, 1, 10)")]
    ScaleFactor {
        /// The scale factor given.
        scale_factor: f64,
    },
    /// Zero parts.
    #[error("--parts must be at least 1")]
    NoParts,
    /// Parquet asked for a table other than lineitem.
    #[error("--format parquet writes lineitem only; add --table lineitem")]
    ParquetNotLineitem,
    /// A table TPC-H does not have.
    #[error("unknown table {table:?}: expected one of {} or all", .known.join(", "))]
    UnknownTable {
        /// The name given.
        table: String,
        /// The tables there are.
        known: &'static [&'static str],
    },
}

/// Format: a line of an answer file that is not in the TPC-H kit's form.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    /// Not ten fields.
    #[error("answer line {line}: expected 10 '|'-separated fields, found {found}")]
    FieldCount {
        /// Line number, from 1.
        line: usize,
        /// Fields found.
        found: usize,
    },
    /// A count that is not an integer.
    #[error("answer line {line}: count_order {value:?} is not an integer")]
    Count {
        /// Line number, from 1.
        line: usize,
        /// The field.
        value: String,
    },
    /// A number that is not a decimal.
    #[error("answer line {line}: {column} {value:?} is not a decimal")]
    Decimal {
        /// Line number, from 1.
        line: usize,
        /// The column's name.
        column: &'static str,
        /// The field.
        value: String,
    },
}

/// An answer that differs from the expected one: every difference, then both answers.
#[derive(Debug, thiserror::Error)]
#[error("{} difference(s): {}. got: {got}. expected: {expected}", .differences.len(), joined(.differences))]
pub struct Mismatch {
    /// Each difference, in row order.
    pub differences: Vec<Difference>,
    /// The answer compared, rows as `A|F|…` joined by `; `.
    pub got: String,
    /// The expected answer, likewise.
    pub expected: String,
}

/// One difference between two answers.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Difference {
    /// Another number of rows.
    #[error("{got} rows, expected {expected}")]
    Rows {
        /// Rows compared.
        got: usize,
        /// Rows expected.
        expected: usize,
    },
    /// Another group at the same place.
    #[error("group {got}, expected {expected}")]
    Group {
        /// The group compared, `A|F`.
        got: String,
        /// The group expected.
        expected: String,
    },
    /// Another value in the same group.
    #[error("{group} {column}: got {got}, expected {expected}")]
    Value {
        /// The group, `A|F`.
        group: String,
        /// The column's name.
        column: &'static str,
        /// The value compared, as printed.
        got: String,
        /// The value expected, as printed.
        expected: String,
    },
}

/// The differences, comma-separated.
fn joined(differences: &[Difference]) -> String {
    differences
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
