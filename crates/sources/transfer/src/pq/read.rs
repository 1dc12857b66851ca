//! A Parquet file back into COPY text rows, decoded a row group at a time.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use chrono::Datelike;
use parquet::basic::{DecimalType, LogicalType, TimeUnit, TimestampType, Type as Physical};
use parquet::column::reader::ColumnReader;
use parquet::data_type::{ByteArray, FixedLenByteArray};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::schema::types::ColumnDescriptor;

use super::columns::EPOCH;

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

pub(super) fn be_i128(b: &[u8]) -> i128 {
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

pub(super) fn write_decimal(out: &mut Vec<u8>, v: i128, scale: i32) {
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

pub(super) fn write_date(out: &mut Vec<u8>, days: i64) {
    if write_date_part(out, days) {
        out.extend_from_slice(b" BC");
    }
}

/// COPY text's escapes for a text value.
pub(super) fn escape(out: &mut Vec<u8>, v: &[u8]) {
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
