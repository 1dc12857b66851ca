//! Parquet files of `transfer`: the rows of a table's `COPY … TO STDOUT (FORMAT text)` stream
//! written as one Parquet file per mapper, typed from the catalog (`columns_sql`), and Parquet
//! files turned back into COPY text for `COPY … FROM STDIN`.
//!
//! Types (PostgreSQL → Parquet → what Arrow readers such as pyarrow make of it): `int2` → INT32
//! (INT(16)) → int16; `int4` → INT32 → int32; `int8` → INT64 → int64; `numeric(p,s)` with
//! 0 ≤ s ≤ p ≤ 38 → DECIMAL(p,s) on INT64 (p ≤ 18) or FIXED_LEN_BYTE_ARRAY(16) → decimal128(p,s);
//! `float4`/`float8` → FLOAT/DOUBLE → float/double; `text`, `varchar`, `char` → BYTE_ARRAY
//! (STRING) → string; `date` → INT32 (DATE) → date32; `timestamp` → INT64 (TIMESTAMP(MICROS,
//! false)) → timestamp[us]; `timestamptz` → INT64 (TIMESTAMP(MICROS, true)) → timestamp[us, UTC];
//! `bool` → BOOLEAN → bool. Everything else — unconstrained `numeric` (any precision, NaN and
//! ±Infinity: no Decimal128 holds them all), numeric scales outside 0..=p, domains, arrays, json,
//! bytea, intervals, … — is a STRING column holding PostgreSQL's text form, which loads back
//! exactly. NOT NULL columns are `required`, the others `optional` (NULLs kept).

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use chrono::{Datelike, NaiveDate};
use parquet::basic::{
    Compression, DecimalType, IntType, LogicalType, Repetition, TimeUnit, TimestampType,
    Type as Physical,
};
use parquet::column::reader::ColumnReader;
use parquet::data_type::{
    BoolType, ByteArray, ByteArrayType, DoubleType, FixedLenByteArray, FixedLenByteArrayType,
    FloatType, Int32Type, Int64Type,
};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{ColumnDescriptor, Type};

/// Rows per row group (or fewer, when the buffered text passes `ROW_GROUP_BYTES`).
const ROW_GROUP_ROWS: usize = 256 * 1024;
/// Buffered text per row group at most.
const ROW_GROUP_BYTES: usize = 64 << 20;

/// The query that lists a table's columns for [`PqColumn::from_catalog`]: name, type name,
/// typmod, NOT NULL.
pub fn columns_sql(table: &str) -> String {
    format!(
        "SELECT a.attname, t.typname, a.atttypmod, a.attnotnull FROM pg_attribute a \
         JOIN pg_type t ON t.oid = a.atttypid \
         WHERE a.attrelid = '{table}'::regclass AND a.attnum > 0 AND NOT a.attisdropped \
         ORDER BY a.attnum"
    )
}

/// How a column is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// int2.
    Int16,
    /// int4.
    Int32,
    /// int8.
    Int64,
    /// numeric(p,s), 0 ≤ s ≤ p ≤ 38.
    Decimal {
        /// Precision.
        precision: u8,
        /// Scale.
        scale: u8,
    },
    /// float4.
    Float32,
    /// float8.
    Float64,
    /// date.
    Date,
    /// timestamp without time zone.
    Timestamp,
    /// timestamp with time zone (UTC).
    TimestampTz,
    /// bool.
    Bool,
    /// text, varchar, char and every other type's text form.
    Text,
}

/// One column of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct PqColumn {
    /// Column name.
    pub name: String,
    /// PostgreSQL type name (`pg_type.typname`).
    pub pg_type: String,
    /// Storage.
    pub kind: Kind,
    /// False for NOT NULL columns.
    pub nullable: bool,
}

impl PqColumn {
    /// A column from a row of [`columns_sql`].
    pub fn from_catalog(row: &[Option<String>]) -> Result<PqColumn, String> {
        let get = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
        let (name, typ) = (get(0), get(1));
        let typmod: i32 = get(2)
            .parse()
            .map_err(|_| format!("column {name}: bad typmod"))?;
        let kind = match typ.as_str() {
            "int2" => Kind::Int16,
            "int4" => Kind::Int32,
            "int8" => Kind::Int64,
            "float4" => Kind::Float32,
            "float8" => Kind::Float64,
            "date" => Kind::Date,
            "timestamp" => Kind::Timestamp,
            "timestamptz" => Kind::TimestampTz,
            "bool" => Kind::Bool,
            "numeric" if typmod >= 4 => {
                // numeric's typmod: precision in the high 16 bits, the scale (11 bits, signed
                // since PostgreSQL 15) in the low ones, both offset by VARHDRSZ.
                let m = typmod - 4;
                let p = (m >> 16) & 0xffff;
                let s = ((m & 0x7ff) ^ 1024) - 1024;
                if (1..=38).contains(&p) && (0..=p).contains(&s) {
                    Kind::Decimal {
                        precision: p as u8,
                        scale: s as u8,
                    }
                } else {
                    Kind::Text
                }
            }
            _ => Kind::Text,
        };
        Ok(PqColumn {
            name,
            pg_type: typ,
            kind,
            nullable: get(3) != "t",
        })
    }

    fn parquet_type(&self) -> parquet::errors::Result<Type> {
        let (phys, logical, len) = match self.kind {
            Kind::Int16 => (
                Physical::INT32,
                Some(LogicalType::Integer(IntType {
                    bit_width: 16,
                    is_signed: true,
                })),
                None,
            ),
            Kind::Int32 => (Physical::INT32, None, None),
            Kind::Int64 => (Physical::INT64, None, None),
            Kind::Decimal { precision, scale } => (
                if precision <= 18 {
                    Physical::INT64
                } else {
                    Physical::FIXED_LEN_BYTE_ARRAY
                },
                Some(LogicalType::Decimal(DecimalType {
                    scale: scale as i32,
                    precision: precision as i32,
                })),
                (precision > 18).then_some(16),
            ),
            Kind::Float32 => (Physical::FLOAT, None, None),
            Kind::Float64 => (Physical::DOUBLE, None, None),
            Kind::Date => (Physical::INT32, Some(LogicalType::Date), None),
            Kind::Timestamp | Kind::TimestampTz => (
                Physical::INT64,
                Some(LogicalType::Timestamp(TimestampType {
                    is_adjusted_to_u_t_c: self.kind == Kind::TimestampTz,
                    unit: TimeUnit::MICROS,
                })),
                None,
            ),
            Kind::Bool => (Physical::BOOLEAN, None, None),
            Kind::Text => (Physical::BYTE_ARRAY, Some(LogicalType::String), None),
        };
        let mut b = Type::primitive_type_builder(&self.name, phys)
            .with_repetition(if self.nullable {
                Repetition::OPTIONAL
            } else {
                Repetition::REQUIRED
            })
            .with_logical_type(logical);
        if let Kind::Decimal { precision, scale } = self.kind {
            b = b.with_precision(precision as i32).with_scale(scale as i32);
        }
        if let Some(l) = len {
            b = b.with_length(l);
        }
        b.build()
    }
}

/// One column's values of the row group being built.
enum Values {
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    Bool(Vec<bool>),
    Bytes(Vec<ByteArray>),
    Fixed(Vec<FixedLenByteArray>),
}

struct ColBuf {
    values: Values,
    /// Definition levels (1 set, 0 NULL) of an optional column.
    def: Vec<i16>,
}

/// Writes COPY text rows (one row per [`PqWriter::push_row`]) to a Parquet file.
pub struct PqWriter<W: Write + Send> {
    writer: SerializedFileWriter<W>,
    cols: Vec<PqColumn>,
    bufs: Vec<ColBuf>,
    buffered_rows: usize,
    buffered_bytes: usize,
    /// Rows written so far.
    pub rows: u64,
    scratch: Vec<u8>,
}

impl<W: Write + Send> PqWriter<W> {
    /// A writer of `cols` into `out`, compressed with `compression`.
    pub fn new(out: W, cols: Vec<PqColumn>, compression: Compression) -> Result<Self, String> {
        let fields = cols
            .iter()
            .map(|c| c.parquet_type().map(Arc::new))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("Parquet schema: {e}"))?;
        let schema = Type::group_type_builder("schema")
            .with_fields(fields)
            .build()
            .map_err(|e| format!("Parquet schema: {e}"))?;
        let props = WriterProperties::builder()
            .set_compression(compression)
            .set_created_by("dbscope transfer".into())
            .build();
        let writer = SerializedFileWriter::new(out, Arc::new(schema), Arc::new(props))
            .map_err(|e| format!("Parquet: {e}"))?;
        let bufs = cols
            .iter()
            .map(|c| ColBuf {
                values: match c.kind {
                    Kind::Int16 | Kind::Int32 | Kind::Date => Values::I32(Vec::new()),
                    Kind::Int64 | Kind::Timestamp | Kind::TimestampTz => Values::I64(Vec::new()),
                    Kind::Decimal { precision, .. } if precision <= 18 => Values::I64(Vec::new()),
                    Kind::Decimal { .. } => Values::Fixed(Vec::new()),
                    Kind::Float32 => Values::F32(Vec::new()),
                    Kind::Float64 => Values::F64(Vec::new()),
                    Kind::Bool => Values::Bool(Vec::new()),
                    Kind::Text => Values::Bytes(Vec::new()),
                },
                def: Vec::new(),
            })
            .collect();
        Ok(PqWriter {
            writer,
            cols,
            bufs,
            buffered_rows: 0,
            buffered_bytes: 0,
            rows: 0,
            scratch: Vec::new(),
        })
    }

    /// Adds one row of COPY's text format (tab-separated, `\N` for NULL, backslash escapes,
    /// ending in a newline).
    pub fn push_row(&mut self, line: &[u8]) -> Result<(), String> {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let row = self.rows + 1;
        let mut fields = line.split(|&b| b == b'\t');
        for (c, col) in self.cols.iter().enumerate() {
            let Some(raw) = fields.next() else {
                return Err(format!(
                    "row {row}: {} fields, the table has {} columns",
                    c,
                    self.cols.len()
                ));
            };
            let buf = &mut self.bufs[c];
            if raw == b"\\N" {
                if !col.nullable {
                    return Err(format!(
                        "row {row}, column {}: NULL in a NOT NULL column",
                        col.name
                    ));
                }
                buf.def.push(0);
                continue;
            }
            if col.nullable {
                buf.def.push(1);
            }
            let field: &[u8] = if raw.contains(&b'\\') {
                unescape(raw, &mut self.scratch);
                &self.scratch
            } else {
                raw
            };
            push_value(&mut buf.values, col.kind, field).map_err(|why| {
                format!(
                    "row {row}, column {} ({}): {:?} {why}",
                    col.name,
                    col.pg_type,
                    String::from_utf8_lossy(field)
                )
            })?;
        }
        if fields.next().is_some() {
            return Err(format!(
                "row {row}: more fields than the table's {} columns",
                self.cols.len()
            ));
        }
        self.rows += 1;
        self.buffered_rows += 1;
        self.buffered_bytes += line.len();
        if self.buffered_rows >= ROW_GROUP_ROWS || self.buffered_bytes >= ROW_GROUP_BYTES {
            self.flush().map_err(|e| format!("Parquet: {e}"))?;
        }
        Ok(())
    }

    fn flush(&mut self) -> parquet::errors::Result<()> {
        if self.buffered_rows == 0 {
            return Ok(());
        }
        let mut rg = self.writer.next_row_group()?;
        for (buf, col) in self.bufs.iter_mut().zip(&self.cols) {
            let mut w = rg.next_column()?.expect("a column per field");
            let def = col.nullable.then_some(&buf.def[..]);
            match &mut buf.values {
                Values::I32(v) => {
                    w.typed::<Int32Type>().write_batch(v, def, None)?;
                    v.clear()
                }
                Values::I64(v) => {
                    w.typed::<Int64Type>().write_batch(v, def, None)?;
                    v.clear()
                }
                Values::F32(v) => {
                    w.typed::<FloatType>().write_batch(v, def, None)?;
                    v.clear()
                }
                Values::F64(v) => {
                    w.typed::<DoubleType>().write_batch(v, def, None)?;
                    v.clear()
                }
                Values::Bool(v) => {
                    w.typed::<BoolType>().write_batch(v, def, None)?;
                    v.clear()
                }
                Values::Bytes(v) => {
                    w.typed::<ByteArrayType>().write_batch(v, def, None)?;
                    v.clear()
                }
                Values::Fixed(v) => {
                    w.typed::<FixedLenByteArrayType>()
                        .write_batch(v, def, None)?;
                    v.clear()
                }
            }
            buf.def.clear();
            w.close()?;
        }
        rg.close()?;
        self.buffered_rows = 0;
        self.buffered_bytes = 0;
        Ok(())
    }

    /// Writes the last row group and the footer; returns the output.
    pub fn finish(mut self) -> Result<W, String> {
        self.flush().map_err(|e| format!("Parquet: {e}"))?;
        self.writer
            .into_inner()
            .map_err(|e| format!("Parquet: {e}"))
    }
}

/// COPY text's backslash escapes undone (`\\`, `\n`, `\t`, `\r`, `\b`, `\f`, `\v`, octal `\ooo`,
/// hex `\xhh`; any other escaped character stands for itself).
fn unescape(raw: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b != b'\\' || i + 1 == raw.len() {
            out.push(b);
            i += 1;
            continue;
        }
        let e = raw[i + 1];
        i += 2;
        match e {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'v' => out.push(11),
            b'0'..=b'7' => {
                let mut v = (e - b'0') as u32;
                for _ in 0..2 {
                    match raw.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            v = v * 8 + (d - b'0') as u32;
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push(v as u8);
            }
            b'x' if raw.get(i).is_some_and(u8::is_ascii_hexdigit) => {
                let mut v = 0u32;
                for _ in 0..2 {
                    match raw.get(i).and_then(|d| (*d as char).to_digit(16)) {
                        Some(d) => {
                            v = v * 16 + d;
                            i += 1;
                        }
                        None => break,
                    }
                }
                out.push(v as u8);
            }
            other => out.push(other),
        }
    }
}

fn text(field: &[u8]) -> Result<&str, &'static str> {
    std::str::from_utf8(field).map_err(|_| "is not UTF-8")
}

fn push_value(values: &mut Values, kind: Kind, field: &[u8]) -> Result<(), String> {
    let t = || text(field).map_err(str::to_string);
    match (values, kind) {
        (Values::I32(v), Kind::Int16) => {
            v.push(t()?.parse::<i16>().map_err(|e| e.to_string())? as i32)
        }
        (Values::I32(v), Kind::Int32) => v.push(t()?.parse().map_err(|e| format!("{e}"))?),
        (Values::I32(v), Kind::Date) => v.push(parse_date(t()?)?),
        (Values::I64(v), Kind::Int64) => v.push(t()?.parse().map_err(|e| format!("{e}"))?),
        (Values::I64(v), Kind::Timestamp | Kind::TimestampTz) => v.push(parse_timestamp(t()?)?),
        (Values::I64(v), Kind::Decimal { scale, .. }) => {
            let d = parse_decimal(t()?, scale)?;
            v.push(i64::try_from(d).map_err(|_| "does not fit in 18 digits".to_string())?)
        }
        (Values::Fixed(v), Kind::Decimal { scale, .. }) => {
            let d = parse_decimal(t()?, scale)?;
            v.push(FixedLenByteArray::from(d.to_be_bytes().to_vec()))
        }
        (Values::F32(v), Kind::Float32) => v.push(parse_float(t()?)? as f32),
        (Values::F64(v), Kind::Float64) => v.push(parse_float(t()?)?),
        (Values::Bool(v), Kind::Bool) => v.push(match field {
            b"t" => true,
            b"f" => false,
            _ => return Err("is not t or f".into()),
        }),
        (Values::Bytes(v), Kind::Text) => v.push(ByteArray::from(field.to_vec())),
        _ => unreachable!("buffers are made from the kinds"),
    }
    Ok(())
}

fn parse_float(t: &str) -> Result<f64, String> {
    match t {
        "Infinity" => Ok(f64::INFINITY),
        "-Infinity" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => t.parse().map_err(|e| format!("{e}")),
    }
}

/// `-123.45` as an integer of `scale` decimals (12345 × 10^(scale−2)).
fn parse_decimal(t: &str, scale: u8) -> Result<i128, String> {
    let bad = || format!("is not a decimal number with at most {scale} decimals");
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if int.is_empty() && frac.is_empty()
        || frac.len() > scale as usize
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let mut v: i128 = 0;
    for b in int.bytes().chain(frac.bytes()) {
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add((b - b'0') as i128))
            .ok_or_else(bad)?;
    }
    for _ in frac.len()..scale as usize {
        v = v.checked_mul(10).ok_or_else(bad)?;
    }
    Ok(if neg { -v } else { v })
}

const EPOCH: NaiveDate = NaiveDate::from_ymd_opt(1970, 1, 1).expect("valid");

/// `YYYY-MM-DD[ BC]` (DateStyle ISO) as days since 1970-01-01.
fn parse_date(t: &str) -> Result<i32, String> {
    let (t, bc) = match t.strip_suffix(" BC") {
        Some(t) => (t, true),
        None => (t, false),
    };
    let bad = || "is not a date of the form YYYY-MM-DD (±infinity has no Parquet DATE)".to_string();
    let mut p = t.splitn(3, '-');
    let mut num = || p.next().and_then(|s| s.parse::<i32>().ok()).ok_or_else(bad);
    let (y, m, d) = (num()?, num()?, num()?);
    let y = if bc { 1 - y } else { y };
    let date = NaiveDate::from_ymd_opt(y, m as u32, d as u32).ok_or_else(bad)?;
    Ok((date - EPOCH).num_days() as i32)
}

/// `YYYY-MM-DD HH:MM:SS[.ffffff][±HH[:MM[:SS]]][ BC]` as µs since 1970-01-01 00:00 (UTC when an
/// offset is given).
fn parse_timestamp(t: &str) -> Result<i64, String> {
    let bad = || {
        "is not a timestamp of the form YYYY-MM-DD HH:MM:SS[.ffffff][+HH] (±infinity has no \
         Parquet TIMESTAMP)"
            .to_string()
    };
    let (t, bc) = match t.strip_suffix(" BC") {
        Some(t) => (t, true),
        None => (t, false),
    };
    let (date, time) = t.split_once(' ').ok_or_else(bad)?;
    let days = parse_date(&if bc {
        format!("{date} BC")
    } else {
        date.to_string()
    })
    .map_err(|_| bad())? as i64;
    // The offset starts at the first sign after the seconds.
    let (clock, offset) = match time.find(['+', '-']) {
        Some(i) => (&time[..i], Some(&time[i..])),
        None => (time, None),
    };
    let (hms, frac) = clock.split_once('.').unwrap_or((clock, ""));
    let mut p = hms.split(':');
    let num = |s: Option<&str>| s.and_then(|s| s.parse::<i64>().ok()).ok_or_else(bad);
    let (h, mi, s) = (num(p.next())?, num(p.next())?, num(p.next())?);
    if frac.len() > 6 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let micros = if frac.is_empty() {
        0
    } else {
        frac.parse::<i64>().map_err(|_| bad())? * 10i64.pow(6 - frac.len() as u32)
    };
    let mut off_s = 0i64;
    if let Some(o) = offset {
        let sign = if o.starts_with('-') { -1 } else { 1 };
        let mut parts = o[1..].split(':');
        let mut unit = 3600;
        for part in parts.by_ref() {
            off_s += unit * part.parse::<i64>().map_err(|_| bad())?;
            unit /= 60;
        }
        off_s *= sign;
    }
    let secs = days * 86_400 + h * 3600 + mi * 60 + s - off_s;
    secs.checked_mul(1_000_000)
        .and_then(|v| v.checked_add(micros))
        .ok_or_else(bad)
}

/// The COPY column list and text rows of a Parquet file, read one row group at a time.
pub struct PqRows {
    reader: SerializedFileReader<File>,
    cols: Vec<OutCol>,
    group: usize,
    /// Decoded columns of the current row group.
    data: Vec<Decoded>,
    row: usize,
    rows_in_group: usize,
    path: String,
}

#[derive(Clone, Copy)]
enum OutKind {
    Int,
    Decimal(i32),
    Date,
    Timestamp {
        per_micro: i64,
        micro_div: i64,
        utc: bool,
    },
    Float,
    Bool,
    Text,
}

struct OutCol {
    name: String,
    kind: OutKind,
    optional: bool,
}

enum DecodedValues {
    Bool(Vec<bool>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    Bytes(Vec<ByteArray>),
    Fixed(Vec<FixedLenByteArray>),
}

struct Decoded {
    values: DecodedValues,
    def: Vec<i16>,
    next: usize,
}

impl PqRows {
    /// Opens a Parquet file; refuses nested columns and types with no PostgreSQL text form here.
    pub fn open(path: &Path) -> Result<PqRows, String> {
        let shown = path.display().to_string();
        let f = File::open(path).map_err(|e| format!("{shown}: {e}"))?;
        let reader = SerializedFileReader::new(f).map_err(|e| format!("{shown}: {e}"))?;
        let schema = reader.metadata().file_metadata().schema_descr_ptr();
        let cols = schema
            .columns()
            .iter()
            .map(|d| out_col(d).map_err(|e| format!("{shown}: column {}: {e}", d.name())))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(PqRows {
            reader,
            cols,
            group: 0,
            data: Vec::new(),
            row: 0,
            rows_in_group: 0,
            path: shown,
        })
    }

    /// `("a", "b", …)` for `COPY t (…) FROM STDIN`.
    pub fn column_list(&self) -> String {
        let names: Vec<String> = self
            .cols
            .iter()
            .map(|c| format!("\"{}\"", c.name.replace('"', "\"\"")))
            .collect();
        format!("({})", names.join(", "))
    }

    fn next_group(&mut self) -> Result<bool, String> {
        let md = self.reader.metadata();
        if self.group >= md.num_row_groups() {
            return Ok(false);
        }
        let rg = self
            .reader
            .get_row_group(self.group)
            .map_err(|e| format!("{}: row group {}: {e}", self.path, self.group))?;
        let n = rg.metadata().num_rows() as usize;
        let mut data = Vec::with_capacity(self.cols.len());
        for i in 0..self.cols.len() {
            let cr = rg
                .get_column_reader(i)
                .map_err(|e| format!("{}: {e}", self.path))?;
            let mut def = Vec::with_capacity(n);
            let defs = self.cols[i].optional.then_some(&mut def);
            let values = read_all(cr, n, defs)
                .map_err(|e| format!("{}: column {}: {e}", self.path, self.cols[i].name))?;
            data.push(Decoded {
                values,
                def,
                next: 0,
            });
        }
        self.data = data;
        self.group += 1;
        self.row = 0;
        self.rows_in_group = n;
        Ok(true)
    }

    /// Appends COPY text rows to `out` until it holds about `limit` bytes; false at the end.
    pub fn fill(&mut self, out: &mut Vec<u8>, limit: usize) -> Result<bool, String> {
        while out.len() < limit {
            if self.row == self.rows_in_group && !self.next_group()? {
                return Ok(false);
            }
            for (c, (col, d)) in self.cols.iter().zip(self.data.iter_mut()).enumerate() {
                if c > 0 {
                    out.push(b'\t');
                }
                if col.optional && d.def[self.row] == 0 {
                    out.extend_from_slice(b"\\N");
                    continue;
                }
                let k = d.next;
                d.next += 1;
                write_value(out, col.kind, &d.values, k);
            }
            out.push(b'\n');
            self.row += 1;
        }
        Ok(true)
    }
}

fn read_all(
    cr: ColumnReader,
    n: usize,
    mut def: Option<&mut Vec<i16>>,
) -> parquet::errors::Result<DecodedValues> {
    macro_rules! all {
        ($r:expr, $variant:ident) => {{
            let mut r = $r;
            let mut v = Vec::with_capacity(n);
            let mut got = 0;
            while got < n {
                let (records, _, _) = r.read_records(n - got, def.as_deref_mut(), None, &mut v)?;
                if records == 0 {
                    break;
                }
                got += records;
            }
            DecodedValues::$variant(v)
        }};
    }
    Ok(match cr {
        ColumnReader::BoolColumnReader(r) => all!(r, Bool),
        ColumnReader::Int32ColumnReader(r) => all!(r, I32),
        ColumnReader::Int64ColumnReader(r) => all!(r, I64),
        ColumnReader::FloatColumnReader(r) => all!(r, F32),
        ColumnReader::DoubleColumnReader(r) => all!(r, F64),
        ColumnReader::ByteArrayColumnReader(r) => all!(r, Bytes),
        ColumnReader::FixedLenByteArrayColumnReader(r) => all!(r, Fixed),
        ColumnReader::Int96ColumnReader(_) => {
            return Err(parquet::errors::ParquetError::General(
                "INT96 timestamps are not supported".into(),
            ))
        }
    })
}

fn out_col(d: &ColumnDescriptor) -> Result<OutCol, String> {
    if d.max_rep_level() > 0 || d.max_def_level() > 1 {
        return Err("nested (list or struct) columns have no COPY text form here".into());
    }
    let logical = d.logical_type_ref();
    let kind = match (d.physical_type(), logical) {
        (_, Some(LogicalType::Decimal(DecimalType { scale, .. }))) => OutKind::Decimal(*scale),
        (Physical::INT32, Some(LogicalType::Date)) => OutKind::Date,
        (
            Physical::INT64,
            Some(LogicalType::Timestamp(TimestampType {
                is_adjusted_to_u_t_c,
                unit,
            })),
        ) => {
            let (per_micro, micro_div) = match unit {
                TimeUnit::MILLIS => (1000, 1),
                TimeUnit::MICROS => (1, 1),
                TimeUnit::NANOS => (1, 1000),
            };
            OutKind::Timestamp {
                per_micro,
                micro_div,
                utc: *is_adjusted_to_u_t_c,
            }
        }
        (Physical::INT32 | Physical::INT64, None | Some(LogicalType::Integer(_))) => OutKind::Int,
        (Physical::FLOAT | Physical::DOUBLE, _) => OutKind::Float,
        (Physical::BOOLEAN, _) => OutKind::Bool,
        (Physical::BYTE_ARRAY, _) => OutKind::Text,
        (p, l) => return Err(format!("Parquet type {p} {l:?} is not supported")),
    };
    Ok(OutCol {
        name: d.name().to_string(),
        kind,
        optional: d.max_def_level() == 1,
    })
}

fn write_value(out: &mut Vec<u8>, kind: OutKind, values: &DecodedValues, k: usize) {
    match (kind, values) {
        (OutKind::Bool, DecodedValues::Bool(v)) => out.push(if v[k] { b't' } else { b'f' }),
        (OutKind::Int, DecodedValues::I32(v)) => write!(out, "{}", v[k]).expect("vec"),
        (OutKind::Int, DecodedValues::I64(v)) => write!(out, "{}", v[k]).expect("vec"),
        (OutKind::Decimal(s), DecodedValues::I32(v)) => write_decimal(out, v[k] as i128, s),
        (OutKind::Decimal(s), DecodedValues::I64(v)) => write_decimal(out, v[k] as i128, s),
        (OutKind::Decimal(s), DecodedValues::Fixed(v)) => {
            write_decimal(out, be_i128(v[k].data()), s)
        }
        (OutKind::Decimal(s), DecodedValues::Bytes(v)) => {
            write_decimal(out, be_i128(v[k].data()), s)
        }
        (OutKind::Date, DecodedValues::I32(v)) => write_date(out, v[k] as i64),
        (
            OutKind::Timestamp {
                per_micro,
                micro_div,
                utc,
            },
            DecodedValues::I64(v),
        ) => {
            let us = (v[k] * per_micro).div_euclid(micro_div);
            let (days, rem) = (us.div_euclid(86_400_000_000), us.rem_euclid(86_400_000_000));
            let bc = write_date_part(out, days);
            let (s, frac) = (rem / 1_000_000, rem % 1_000_000);
            write!(out, " {:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60).expect("vec");
            if frac != 0 {
                write!(out, ".{frac:06}").expect("vec");
            }
            if utc {
                out.extend_from_slice(b"+00");
            }
            if bc {
                out.extend_from_slice(b" BC");
            }
        }
        (OutKind::Float, DecodedValues::F32(v)) => {
            write_float(out, v[k] as f64, || format!("{:?}", v[k]))
        }
        (OutKind::Float, DecodedValues::F64(v)) => write_float(out, v[k], || format!("{:?}", v[k])),
        (OutKind::Text, DecodedValues::Bytes(v)) => escape(out, v[k].data()),
        _ => unreachable!("decoded as the column's physical type"),
    }
}

fn be_i128(b: &[u8]) -> i128 {
    // Big-endian two's complement, sign-extended.
    let mut v: i128 = if b.first().is_some_and(|&x| x & 0x80 != 0) {
        -1
    } else {
        0
    };
    for &x in b {
        v = (v << 8) | x as i128;
    }
    v
}

fn write_float(out: &mut Vec<u8>, v: f64, shortest: impl Fn() -> String) {
    if v.is_nan() {
        out.extend_from_slice(b"NaN");
    } else if v.is_infinite() {
        out.extend_from_slice(if v > 0.0 { b"Infinity" } else { b"-Infinity" });
    } else {
        // Debug prints the shortest text that reads back as the same value.
        out.extend_from_slice(shortest().as_bytes());
    }
}

fn write_decimal(out: &mut Vec<u8>, v: i128, scale: i32) {
    let digits = v.unsigned_abs().to_string();
    if v < 0 {
        out.push(b'-');
    }
    let s = scale.max(0) as usize;
    if s == 0 {
        out.extend_from_slice(digits.as_bytes());
        return;
    }
    let padded = format!("{digits:0>width$}", width = s + 1);
    let (i, f) = padded.split_at(padded.len() - s);
    out.extend_from_slice(i.as_bytes());
    out.push(b'.');
    out.extend_from_slice(f.as_bytes());
}

/// Writes `YYYY-MM-DD` of days since 1970-01-01; true when the year is BC (the caller appends
/// ` BC` after whatever follows the date).
fn write_date_part(out: &mut Vec<u8>, days: i64) -> bool {
    let d = EPOCH + chrono::Duration::days(days);
    let (y, bc) = if d.year() <= 0 {
        (1 - d.year(), true)
    } else {
        (d.year(), false)
    };
    write!(out, "{y:04}-{:02}-{:02}", d.month(), d.day()).expect("vec");
    bc
}

fn write_date(out: &mut Vec<u8>, days: i64) {
    if write_date_part(out, days) {
        out.extend_from_slice(b" BC");
    }
}

/// COPY text's escapes for a text value.
fn escape(out: &mut Vec<u8>, v: &[u8]) {
    for &b in v {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            _ => out.push(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms_parse_and_print_back() {
        assert_eq!(parse_decimal("-123.45", 2), Ok(-12345));
        assert_eq!(parse_decimal("7", 3), Ok(7000));
        assert!(parse_decimal("1.234", 2).is_err());
        assert!(parse_decimal("NaN", 2).is_err());
        let mut o = Vec::new();
        write_decimal(&mut o, -5, 2);
        o.push(b' ');
        write_decimal(&mut o, 12345, 2);
        assert_eq!(o, b"-0.05 123.45");
        assert_eq!(parse_date("1970-01-02"), Ok(1));
        assert_eq!(
            parse_date("0001-01-01 BC"),
            parse_date("0001-01-01").map(|d| d - 366)
        );
        let mut o = Vec::new();
        write_date(&mut o, parse_date("0044-03-15 BC").unwrap() as i64);
        assert_eq!(o, b"0044-03-15 BC");
        assert_eq!(parse_timestamp("1970-01-01 00:00:01.5+00"), Ok(1_500_000));
        assert_eq!(parse_timestamp("1970-01-01 02:00:00+02"), Ok(0));
        assert_eq!(parse_timestamp("1969-12-31 23:59:59"), Ok(-1_000_000));
        assert!(parse_timestamp("infinity").is_err());
        let mut u = Vec::new();
        unescape(b"a\\tb\\\\c\\nd\\101\\x41", &mut u);
        assert_eq!(u, b"a\tb\\c\nd\x41\x41");
        let mut e = Vec::new();
        escape(&mut e, b"a\tb\\c\nd");
        assert_eq!(e, b"a\\tb\\\\c\\nd");
        assert_eq!(be_i128(&(-2i128).to_be_bytes()), -2);
        assert_eq!(be_i128(&[0xff, 0xfe]), -2);
    }

    #[test]
    fn numeric_typmods_map_to_decimals_or_text() {
        let col = |typ: &str, typmod: i32| {
            PqColumn::from_catalog(&[
                Some("c".into()),
                Some(typ.into()),
                Some(typmod.to_string()),
                Some("f".into()),
            ])
            .unwrap()
            .kind
        };
        // numeric(12,2): ((12 << 16) | 2) + 4.
        assert_eq!(
            col("numeric", (12 << 16 | 2) + 4),
            Kind::Decimal {
                precision: 12,
                scale: 2
            }
        );
        assert_eq!(col("numeric", -1), Kind::Text);
        assert_eq!(col("numeric", (50 << 16) + 4), Kind::Text);
        // numeric(5,-2) (PostgreSQL 15): a negative scale has no Parquet DECIMAL.
        assert_eq!(col("numeric", (5 << 16 | (-2i32 & 0x7ff)) + 4), Kind::Text);
        assert_eq!(col("jsonb", -1), Kind::Text);
        assert_eq!(col("int2", -1), Kind::Int16);
    }
}
