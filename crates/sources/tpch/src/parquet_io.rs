//! lineitem as Apache Parquet: `tpch gen --format parquet` writes it (decimals as INT64
//! DECIMAL(15,2), dates as INT32 DATE, text as UTF8), and Q1's mappers read the seven columns they
//! need one row group at a time (a row group is Parquet's split, as a byte range is a text file's).

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parquet::basic::{Compression, DecimalType, LogicalType, Type as PhysicalType};
use parquet::column::reader::{ColumnReader, ColumnReaderImpl};
use parquet::data_type::{ByteArray, ByteArrayType, DataType, Int32Type, Int64Type};
use parquet::errors::ParquetError;
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, RowGroupReader, SerializedFileReader};
use parquet::file::writer::{SerializedFileWriter, SerializedRowGroupWriter};
use parquet::schema::parser::parse_message_type;
use tpchgen::generators::LineItemGenerator;

use crate::error::{LineitemParquetError, ParquetPlace};
use crate::lineitem::RowValues;

/// lineitem's Parquet schema, in TPC-H column order.
pub const LINEITEM_SCHEMA: &str = "message lineitem {
  required int64 l_orderkey;
  required int64 l_partkey;
  required int64 l_suppkey;
  required int32 l_linenumber;
  required int64 l_quantity (DECIMAL(15,2));
  required int64 l_extendedprice (DECIMAL(15,2));
  required int64 l_discount (DECIMAL(15,2));
  required int64 l_tax (DECIMAL(15,2));
  required binary l_returnflag (UTF8);
  required binary l_linestatus (UTF8);
  required int32 l_shipdate (DATE);
  required int32 l_commitdate (DATE);
  required int32 l_receiptdate (DATE);
  required binary l_shipinstruct (UTF8);
  required binary l_shipmode (UTF8);
  required binary l_comment (UTF8);
}";

/// A lineitem Parquet file open for reading.
pub type LineitemReader = SerializedFileReader<Bytes>;

/// Default rows per row group.
pub const ROW_GROUP_ROWS: usize = 65_536;

/// Column buffers of one row group.
#[derive(Default)]
struct Columns {
    i64s: [Vec<i64>; 7],
    i32s: [Vec<i32>; 4],
    text: [Vec<ByteArray>; 5],
}

impl Columns {
    fn len(&self) -> usize {
        self.i64s[0].len()
    }
}

/// Writes one part of lineitem (as tpchgen generates it) to `path`; returns the rows written.
pub fn write_lineitem(
    path: &Path,
    scale_factor: f64,
    part: i32,
    parts: i32,
    row_group_rows: usize,
    rows_done: &AtomicU64,
) -> Result<u64, ParquetError> {
    let schema = Arc::new(parse_message_type(LINEITEM_SCHEMA)?);
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(row_group_rows.max(1)))
        .build();
    let file = File::create(path).map_err(|e| ParquetError::External(Box::new(e)))?;
    let mut w = SerializedFileWriter::new(file, schema, Arc::new(props))?;
    let mut c = Columns::default();
    let mut rows = 0u64;
    for l in LineItemGenerator::new(scale_factor, part, parts).iter() {
        for (v, x) in c.i64s.iter_mut().zip([
            l.l_orderkey,
            l.l_partkey,
            l.l_suppkey,
            l.l_quantity * 100,
            l.l_extendedprice.into_inner(),
            l.l_discount.into_inner(),
            l.l_tax.into_inner(),
        ]) {
            v.push(x);
        }
        for (v, x) in c.i32s.iter_mut().zip([
            l.l_linenumber,
            l.l_shipdate.to_unix_epoch(),
            l.l_commitdate.to_unix_epoch(),
            l.l_receiptdate.to_unix_epoch(),
        ]) {
            v.push(x);
        }
        for (v, x) in c.text.iter_mut().zip([
            l.l_returnflag,
            l.l_linestatus,
            l.l_shipinstruct,
            l.l_shipmode,
            l.l_comment,
        ]) {
            v.push(ByteArray::from(x));
        }
        rows += 1;
        if c.len() >= row_group_rows.max(1) {
            flush(&mut w, &mut c)?;
            rows_done.fetch_add(row_group_rows as u64, Ordering::Relaxed);
        }
    }
    let tail = c.len() as u64;
    flush(&mut w, &mut c)?;
    rows_done.fetch_add(tail, Ordering::Relaxed);
    w.close()?;
    Ok(rows)
}

fn flush(w: &mut SerializedFileWriter<File>, c: &mut Columns) -> Result<(), ParquetError> {
    if c.len() == 0 {
        return Ok(());
    }
    let mut rg = w.next_row_group()?;
    let [ok, pk, sk, qty, price, disc, tax] = &c.i64s;
    let [ln, ship, commit, receipt] = &c.i32s;
    let [flag, status, instruct, mode, comment] = &c.text;
    column::<Int64Type>(&mut rg, ok)?;
    column::<Int64Type>(&mut rg, pk)?;
    column::<Int64Type>(&mut rg, sk)?;
    column::<Int32Type>(&mut rg, ln)?;
    column::<Int64Type>(&mut rg, qty)?;
    column::<Int64Type>(&mut rg, price)?;
    column::<Int64Type>(&mut rg, disc)?;
    column::<Int64Type>(&mut rg, tax)?;
    column::<ByteArrayType>(&mut rg, flag)?;
    column::<ByteArrayType>(&mut rg, status)?;
    column::<Int32Type>(&mut rg, ship)?;
    column::<Int32Type>(&mut rg, commit)?;
    column::<Int32Type>(&mut rg, receipt)?;
    column::<ByteArrayType>(&mut rg, instruct)?;
    column::<ByteArrayType>(&mut rg, mode)?;
    column::<ByteArrayType>(&mut rg, comment)?;
    rg.close()?;
    *c = Columns::default();
    Ok(())
}

fn column<T: DataType>(
    rg: &mut SerializedRowGroupWriter<'_, File>,
    values: &[T::T],
) -> Result<(), ParquetError> {
    let mut col = rg
        .next_column()?
        .ok_or_else(|| ParquetError::General("schema has fewer columns than written".into()))?;
    col.typed::<T>().write_batch(values, None, None)?;
    col.close()
}

/// Runs `f`, turning a panic inside the Parquet reader (it panics on some corrupt files) into an
/// error, so bad input never crashes dbscope.
fn guarded<T>(
    place: ParquetPlace,
    f: impl FnOnce() -> Result<T, LineitemParquetError>,
) -> Result<T, LineitemParquetError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let panic = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown failure".into());
        Err(LineitemParquetError::ReaderPanicked { place, panic })
    })
}

/// True when a panic's location is inside the Parquet reader: the CLI's panic hook stays quiet about
/// those, because [`open_lineitem`] and [`scan_row_group`] turn them into errors.
pub fn is_parquet_panic(location: Option<&std::panic::Location<'_>>) -> bool {
    location.is_some_and(|l| l.file().contains("/parquet-"))
}

/// Opens a lineitem Parquet file and checks the columns Q1 reads have the types it expects.
/// Returns the reader and the compressed size of each row group.
pub fn open_lineitem(path: &Path) -> Result<(LineitemReader, Vec<u64>), LineitemParquetError> {
    open_lineitem_watched(path).map(|(reader, sizes, _)| (reader, sizes))
}

/// The flag raised when a read of a mapped file faulted: the file shrank under its map (see
/// `dbscope_core::mapped`).
pub type FaultFlag = std::sync::Arc<std::sync::atomic::AtomicBool>;

/// [`open_lineitem`], and the flag that says whether a read of the file's memory map faulted
/// since (`None` when it was read in rather than mapped).
pub fn open_lineitem_watched(
    path: &Path,
) -> Result<(LineitemReader, Vec<u64>, Option<FaultFlag>), LineitemParquetError> {
    guarded(ParquetPlace::Footer, || open_lineitem_unguarded(path))
}

fn open_lineitem_unguarded(
    path: &Path,
) -> Result<(LineitemReader, Vec<u64>, Option<FaultFlag>), LineitemParquetError> {
    let file = File::open(path).map_err(LineitemParquetError::Open)?;
    // The whole file as one buffer the reader slices (no copies, no per-page seek and read, and
    // shared by every map task): a memory map (guarded against the file shrinking under it: see
    // `dbscope_core::mapped`), or the file read in when it cannot be mapped.
    let (data, faulted) = match dbscope_core::mapped::map_from(&file, 0) {
        Some(map) => {
            let faulted = map.fault_flag();
            (Bytes::from_owner(map), Some(faulted))
        }
        None => (
            Bytes::from(std::fs::read(path).map_err(LineitemParquetError::Open)?),
            None,
        ),
    };
    let reader = SerializedFileReader::new(data).map_err(LineitemParquetError::NotParquet)?;
    let schema = reader.metadata().file_metadata().schema_descr();
    let expect: [(&str, PhysicalType, Option<LogicalType>); 7] = [
        ("l_quantity", PhysicalType::INT64, Some(decimal())),
        ("l_extendedprice", PhysicalType::INT64, Some(decimal())),
        ("l_discount", PhysicalType::INT64, Some(decimal())),
        ("l_tax", PhysicalType::INT64, Some(decimal())),
        ("l_returnflag", PhysicalType::BYTE_ARRAY, None),
        ("l_linestatus", PhysicalType::BYTE_ARRAY, None),
        ("l_shipdate", PhysicalType::INT32, Some(LogicalType::Date)),
    ];
    if schema.num_columns() < 11 {
        return Err(LineitemParquetError::TooFewColumns {
            columns: schema.num_columns(),
        });
    }
    for (i, (name, phys, logical)) in expect.iter().enumerate() {
        let col = schema.column(i + 4);
        let ok = col.name() == *name
            && col.physical_type() == *phys
            && (logical.is_none() || col.logical_type_ref() == logical.as_ref());
        if !ok {
            return Err(LineitemParquetError::WrongColumn {
                column: i + 5,
                found: col.name().to_string(),
                found_type: col.physical_type(),
                found_logical: col.logical_type_ref().cloned().map(Box::new),
                expected: name,
                expected_type: *phys,
                expected_logical: logical.clone().map(Box::new),
            });
        }
    }
    let sizes = reader
        .metadata()
        .row_groups()
        .iter()
        .map(|rg| rg.compressed_size().max(0) as u64)
        .collect();
    Ok((reader, sizes, faulted))
}

fn decimal() -> LogicalType {
    LogicalType::Decimal(DecimalType {
        scale: 2,
        precision: 15,
    })
}

/// Days since 1970-01-01 → `YYYYMMDD` (Howard Hinnant's civil-from-days).
pub fn yyyymmdd(days: i32) -> u32 {
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y * 10_000 + m * 100 + d).max(0) as u32
}

/// `YYYYMMDD` → days since 1970-01-01 (the inverse of [`yyyymmdd`] for valid dates).
pub fn days_since_epoch(ymd: u32) -> i32 {
    let (y, m, d) = ((ymd / 10_000) as i32, ymd / 100 % 100, ymd % 100);
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).expect("valid date");
    chrono::NaiveDate::from_ymd_opt(y, m, d)
        .map(|date| date.signed_duration_since(epoch).num_days() as i32)
        .unwrap_or(i32::MAX)
}

/// Reads Q1's seven columns of row group `rg`; calls `emit` for rows with `l_shipdate <= cutoff`.
/// Returns the rows read.
pub fn scan_row_group(
    reader: &LineitemReader,
    rg: usize,
    cutoff: u32,
    emit: impl FnMut(RowValues),
) -> Result<u64, LineitemParquetError> {
    guarded(ParquetPlace::RowGroup(rg), || {
        scan_row_group_unguarded(reader, rg, cutoff, emit)
    })
}

fn scan_row_group_unguarded(
    reader: &LineitemReader,
    rg: usize,
    cutoff: u32,
    mut emit: impl FnMut(RowValues),
) -> Result<u64, LineitemParquetError> {
    let group = reader
        .get_row_group(rg)
        .map_err(LineitemParquetError::Read)?;
    let n = group.metadata().num_rows().max(0) as usize;
    let int64 = |i| {
        Column::<Int64Type>::open(group.as_ref(), i, "INT64", |r| match r {
            ColumnReader::Int64ColumnReader(r) => Some(r),
            _ => None,
        })
    };
    let (mut qty, mut price, mut disc, mut tax) = (int64(4)?, int64(5)?, int64(6)?, int64(7)?);
    let bytes = |i| {
        Column::<ByteArrayType>::open(group.as_ref(), i, "BYTE_ARRAY", |r| match r {
            ColumnReader::ByteArrayColumnReader(r) => Some(r),
            _ => None,
        })
    };
    let (mut flag, mut status) = (bytes(8)?, bytes(9)?);
    let mut ship = Column::<Int32Type>::open(group.as_ref(), 10, "INT32", |r| match r {
        ColumnReader::Int32ColumnReader(r) => Some(r),
        _ => None,
    })?;
    // The cutoff as days since the epoch: compare integers, convert nothing per row.
    let cut_days = days_since_epoch(cutoff);
    // The columns are read in step, BATCH rows at a time, into buffers reused batch after batch:
    // they stay in cache, and no row group's worth of fresh memory is faulted in and zeroed per
    // task.
    let mut done = 0usize;
    while done < n {
        let want = BATCH.min(n - done);
        let got = qty.read(want)?;
        for values in [
            price.read(want)?,
            disc.read(want)?,
            tax.read(want)?,
            flag.read(want)?,
            status.read(want)?,
            ship.read(want)?,
        ] {
            if values != got || got == 0 {
                return Err(LineitemParquetError::ColumnLength {
                    row_group: rg,
                    values: done + values,
                    rows: n,
                });
            }
        }
        for i in 0..got {
            let one = |b: &ByteArray, column: &'static str| match b.data() {
                [c] => Ok(*c),
                other => Err(LineitemParquetError::NotOneCharacter {
                    row_group: rg,
                    row: done + i + 1,
                    column,
                    value: String::from_utf8_lossy(other).into_owned(),
                }),
            };
            let (f, s) = (
                one(&flag.values[i], "l_returnflag")?,
                one(&status.values[i], "l_linestatus")?,
            );
            if ship.values[i] > cut_days {
                continue;
            }
            emit(RowValues {
                flag: f,
                status: s,
                qty: qty.values[i],
                price: price.values[i],
                disc: disc.values[i],
                tax: tax.values[i],
            });
        }
        done += got;
    }
    // A row group whose columns hold more values than its row count is as corrupt as one with
    // fewer.
    if qty.read(1)? != 0 {
        return Err(LineitemParquetError::ColumnLength {
            row_group: rg,
            values: n + 1,
            rows: n,
        });
    }
    Ok(n as u64)
}

/// Rows read from each column at a time.
const BATCH: usize = 4096;

/// One column of a row group being read in batches into a reused buffer.
struct Column<T: DataType> {
    reader: ColumnReaderImpl<T>,
    values: Vec<T::T>,
}

impl<T: DataType> Column<T> {
    /// The reader of column `i` (from 0) of a row group, taken out of the column's reader by
    /// `pick`; a column of another physical type is an error naming `expected`.
    fn open(
        group: &dyn RowGroupReader,
        i: usize,
        expected: &'static str,
        pick: impl FnOnce(ColumnReader) -> Option<ColumnReaderImpl<T>>,
    ) -> Result<Self, LineitemParquetError> {
        let reader = group
            .get_column_reader(i)
            .map_err(LineitemParquetError::Read)?;
        let Some(reader) = pick(reader) else {
            return Err(LineitemParquetError::ColumnType {
                column: i + 1,
                expected,
            });
        };
        Ok(Column {
            reader,
            values: Vec::with_capacity(BATCH),
        })
    }

    /// Replaces the buffer with the next `want` values (fewer at the end); returns how many.
    fn read(&mut self, want: usize) -> Result<usize, LineitemParquetError> {
        self.values.clear();
        let (records, _, _) = self
            .reader
            .read_records(want, None, None, &mut self.values)
            .map_err(LineitemParquetError::Read)?;
        Ok(records.min(self.values.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(yyyymmdd(0), 19700101);
        assert_eq!(yyyymmdd(10_471), 19980902);
        assert_eq!(yyyymmdd(-1), 19691231);
        assert_eq!(yyyymmdd(11_017), 20000301);
        assert_eq!(yyyymmdd(11_016), 20000229);
        for d in [-1000, 0, 10_471, 11_016, 11_017, 20_000] {
            assert_eq!(days_since_epoch(yyyymmdd(d)), d);
        }
    }
}
