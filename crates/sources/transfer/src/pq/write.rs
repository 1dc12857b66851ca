//! COPY text rows into a Parquet file: parsed by column kind into column buffers, written a row
//! group at a time.

use std::io::Write;
use std::sync::Arc;

use chrono::NaiveDate;
use parquet::basic::Compression;
use parquet::data_type::{
    BoolType, ByteArray, ByteArrayType, DoubleType, FixedLenByteArray, FixedLenByteArrayType,
    FloatType, Int32Type, Int64Type,
};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

use super::columns::{Kind, PqColumn, EPOCH};

/// Rows per row group (or fewer, when the buffered text passes `ROW_GROUP_BYTES`).
const ROW_GROUP_ROWS: usize = 256 * 1024;
/// Buffered text per row group at most.
const ROW_GROUP_BYTES: usize = 64 << 20;

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
pub(super) fn unescape(raw: &[u8], out: &mut Vec<u8>) {
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
pub(super) fn parse_decimal(t: &str, scale: u8) -> Result<i128, String> {
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

/// `YYYY-MM-DD[ BC]` (DateStyle ISO) as days since 1970-01-01.
pub(super) fn parse_date(t: &str) -> Result<i32, String> {
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
pub(super) fn parse_timestamp(t: &str) -> Result<i64, String> {
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
