//! MariaDB/MySQL tables as DataFusion table providers: one connection per source, in one
//! `START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY` (every table of the source read as of
//! one moment); each scan reads the projected columns with the filters MariaDB answers exactly as
//! DataFusion does in its WHERE (then the LIMIT), streamed row by row from the text protocol
//! into Arrow arrays, when DataFusion plans it (one `scan:` event).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use datafusion::arrow::array::{
    ArrayBuilder, ArrayRef, BinaryBuilder, Date32Builder, Decimal128Builder, Float64Builder,
    Int64Builder, StringBuilder, TimestampMicrosecondBuilder,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::catalog::{Session as DfSession, TableProvider};
use datafusion::common::Result as DfResult;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::ExecutionPlan;
use dbscope_core::redact::redact;
use dbscope_db::{MyTarget, Session, Target};

use crate::oneread::OneRead;
use crate::pushdown::{plain_columns, support, Dialect, PushColumn};
use crate::scanlog::ScanLog;
use crate::source::PgTables;
use crate::Error;

/// One MariaDB/MySQL source: its connection, in its snapshot.
pub(crate) struct MySource {
    name: String,
    shown: String,
    conn: Mutex<Box<dyn Session>>,
    pushdown: bool,
    log: Arc<ScanLog>,
}

impl std::fmt::Debug for MySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MySource({} = {})", self.name, self.shown)
    }
}

fn quote(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

fn sql_text(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

impl MySource {
    /// Connects and starts the read-only transaction with its consistent snapshot.
    pub(crate) fn open(
        name: &str,
        conn: &str,
        pushdown: bool,
        log: Arc<ScanLog>,
    ) -> Result<Arc<MySource>, Error> {
        let shown = redact(conn);
        let fail = |e: String| {
            Error::Source(format!(
                "source {name}: cannot connect to {shown}: {}",
                redact(&e)
            ))
        };
        let target = MyTarget::new(conn, &[]).map_err(|e| fail(e.message))?;
        let mut s = target.connect().map_err(|e| fail(e.message))?;
        let start = [
            "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ",
            "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY",
        ];
        for sql in start {
            s.batch(sql).map_err(|e| {
                Error::Source(format!("source {name} ({shown}): {sql}: {}", e.message))
            })?;
        }
        Ok(Arc::new(MySource {
            name: name.to_string(),
            shown,
            conn: Mutex::new(s),
            pushdown,
            log,
        }))
    }

    fn session(&self) -> std::sync::MutexGuard<'_, Box<dyn Session>> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Rows of `sql`, each column as the server's text (`None`: NULL).
    fn rows(&self, sql: &str) -> Result<Vec<Vec<Option<String>>>, String> {
        let mut out = Vec::new();
        self.session()
            .query_each(sql, &mut |r| {
                out.push(
                    r.iter()
                        .map(|f| f.map(|b| String::from_utf8_lossy(b).into_owned()))
                        .collect(),
                );
                Ok(())
            })
            .map_err(|e| e.message)?;
        Ok(out)
    }

    /// The tables the source holds: (the name in the query, the table on the server).
    pub(crate) fn tables(&self, which: &PgTables) -> Result<Vec<(String, String)>, Error> {
        Ok(match which {
            PgTables::One(t) => vec![(self.name.clone(), t.clone())],
            PgTables::Listed(ts) => ts
                .iter()
                .map(|t| {
                    let last = t.rsplit('.').next().unwrap_or(t);
                    (format!("{}.{last}", self.name), t.clone())
                })
                .collect(),
            PgTables::Schema(db) => self
                .rows(&format!(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = {} \
                     ORDER BY 1",
                    sql_text(db)
                ))
                .map_err(|e| {
                    Error::Source(format!(
                        "source {} ({}): listing the tables: {e}",
                        self.name, self.shown
                    ))
                })?
                .into_iter()
                .filter_map(|r| r.into_iter().next().flatten())
                .map(|t| (format!("{}.{}", self.name, t.to_ascii_lowercase()), t))
                .collect(),
        })
    }

    /// Ends the transaction.
    pub(crate) fn close(&self) {
        let _ = self.session().batch("COMMIT");
    }
}

/// The Arrow type of a column (`information_schema.columns`' data_type, column_type, numeric
/// precision and scale); `None` when the hub has no mapping.
fn map_type(
    data_type: &str,
    column_type: &str,
    p: Option<u32>,
    s: Option<u32>,
) -> Option<DataType> {
    let unsigned = column_type.to_ascii_lowercase().contains("unsigned");
    Some(match data_type.to_ascii_lowercase().as_str() {
        "tinyint" | "smallint" | "mediumint" | "int" | "integer" | "year" => DataType::Int64,
        "bigint" if !unsigned => DataType::Int64,
        "bigint" => DataType::Decimal128(20, 0),
        "decimal" | "numeric" => {
            let (p, s) = (p?, s.unwrap_or(0));
            if !(1..=38).contains(&p) || s > p {
                return None;
            }
            DataType::Decimal128(p as u8, s as i8)
        }
        "float" | "double" | "real" => DataType::Float64,
        "date" => DataType::Date32,
        "datetime" | "timestamp" => DataType::Timestamp(TimeUnit::Microsecond, None),
        "char" | "varchar" | "tinytext" | "text" | "mediumtext" | "longtext" | "enum" | "set"
        | "json" | "time" => DataType::Utf8,
        "binary" | "varbinary" | "tinyblob" | "blob" | "mediumblob" | "longblob" => {
            DataType::Binary
        }
        _ => return None,
    })
}

/// A table of a MariaDB/MySQL source.
#[derive(Debug)]
pub(crate) struct MyTable {
    src: Arc<MySource>,
    label: String,
    table: String,
    schema: SchemaRef,
    by_name: HashMap<String, PushColumn>,
}

impl MyTable {
    /// Reads the table's columns from `information_schema`; a column of a type the hub cannot
    /// map is an error naming it.
    pub(crate) fn open(src: &Arc<MySource>, label: &str, table: &str) -> Result<MyTable, Error> {
        let (db, name) = match table.split_once('.') {
            Some((d, t)) => (sql_text(d), t),
            None => ("DATABASE()".to_string(), table),
        };
        let fail = |e: String| {
            Error::Source(format!(
                "source {} ({}): table {table}: {e}",
                src.name, src.shown
            ))
        };
        let rows = src
            .rows(&format!(
                "SELECT column_name, data_type, column_type, numeric_precision, numeric_scale, \
                 is_nullable FROM information_schema.columns WHERE table_schema = {db} \
                 AND table_name = {} ORDER BY ordinal_position",
                sql_text(name)
            ))
            .map_err(fail)?;
        if rows.is_empty() {
            return Err(fail("no such table (or no privilege on it)".into()));
        }
        let mut fields = Vec::new();
        for r in rows {
            let get = |i: usize| r.get(i).cloned().flatten().unwrap_or_default();
            let (col, dt, ct) = (get(0), get(1), get(2));
            let num = |i: usize| get(i).parse::<u32>().ok();
            let t = map_type(&dt, &ct, num(3), num(4)).ok_or_else(|| {
                fail(format!(
                    "column {col}: type {ct} cannot be mapped to an Arrow type \
                     (cast it in a view, or leave the column out)"
                ))
            })?;
            fields.push(Field::new(col, t, get(5) == "YES"));
        }
        let by_name = plain_columns(&fields, quote);
        Ok(MyTable {
            src: src.clone(),
            label: label.to_string(),
            table: table.split('.').map(quote).collect::<Vec<_>>().join("."),
            schema: Arc::new(Schema::new(fields)),
            by_name,
        })
    }

    /// Runs `sql` and builds the batch of `cols`; returns it with the bytes received.
    fn read(&self, cols: &[usize], sql: &str) -> Result<(RecordBatch, u64), String> {
        let schema = Arc::new(self.schema.project(cols).map_err(|e| e.to_string())?);
        let mut builders: Vec<Box<dyn ArrayBuilder>> = schema
            .fields()
            .iter()
            .map(|f| -> Box<dyn ArrayBuilder> {
                match f.data_type() {
                    DataType::Int64 => Box::new(Int64Builder::new()),
                    DataType::Float64 => Box::new(Float64Builder::new()),
                    DataType::Decimal128(p, s) => Box::new(
                        Decimal128Builder::new()
                            .with_precision_and_scale(*p, *s)
                            .expect("precision and scale checked when mapped"),
                    ),
                    DataType::Date32 => Box::new(Date32Builder::new()),
                    DataType::Timestamp(..) => Box::new(TimestampMicrosecondBuilder::new()),
                    DataType::Utf8 => Box::new(StringBuilder::new()),
                    _ => Box::new(BinaryBuilder::new()),
                }
            })
            .collect();
        let mut n = 0u64;
        let mut bytes = 0u64;
        let table = &self.table;
        self.src
            .session()
            .query_each(sql, &mut |row| {
                n += 1;
                for (i, (b, v)) in builders.iter_mut().zip(row).enumerate() {
                    bytes += v.map_or(0, |v| v.len() as u64);
                    let f = schema.field(i);
                    append(b.as_mut(), f.data_type(), *v).map_err(|what| {
                        format!("table {table}, row {n}, column {}: {what}", f.name())
                    })?;
                }
                Ok(())
            })
            .map_err(|e| format!("{}: {}", redact(sql), e.message))?;
        let arrays: Vec<ArrayRef> = builders.iter_mut().map(|b| b.finish()).collect();
        let batch = RecordBatch::try_new_with_options(
            schema,
            arrays,
            &RecordBatchOptions::new().with_row_count(Some(n as usize)),
        )
        .map_err(|e| e.to_string())?;
        Ok((batch, bytes))
    }
}

/// Days since 1970-01-01 of `YYYY-MM-DD`.
fn days(d: &str) -> Option<i32> {
    let date = chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").ok()?;
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1)?;
    i32::try_from((date - epoch).num_days()).ok()
}

/// Appends the server's text of a value to the builder of type `t`.
fn append(b: &mut dyn ArrayBuilder, t: &DataType, v: Option<&[u8]>) -> Result<(), String> {
    let any = b.as_any_mut();
    let text = || {
        v.map(|v| std::str::from_utf8(v).map_err(|_| "text that is not UTF-8".to_string()))
            .transpose()
    };
    let bad = |s: &str| format!("{s:?} is not a {t} value");
    macro_rules! put {
        ($builder:ty, $parse:expr) => {{
            let b = any
                .downcast_mut::<$builder>()
                .expect("builder of the column's type");
            match text()? {
                None => b.append_null(),
                Some(s) => b.append_value($parse(s).ok_or_else(|| bad(s))?),
            }
        }};
    }
    match t {
        DataType::Int64 => put!(Int64Builder, |s: &str| s.parse::<i64>().ok()),
        DataType::Float64 => put!(Float64Builder, |s: &str| s.parse::<f64>().ok()),
        DataType::Decimal128(_, scale) => {
            put!(Decimal128Builder, |s: &str| parse_decimal(s, *scale))
        }
        DataType::Date32 => put!(Date32Builder, days),
        DataType::Timestamp(..) => put!(TimestampMicrosecondBuilder, |s: &str| {
            chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f")
                .ok()
                .map(|t| t.and_utc().timestamp_micros())
        }),
        DataType::Utf8 => put!(StringBuilder, |s: &str| Some(s.to_string())),
        _ => {
            let b = any
                .downcast_mut::<BinaryBuilder>()
                .expect("builder of the column's type");
            match v {
                None => b.append_null(),
                Some(v) => b.append_value(v),
            }
        }
    }
    Ok(())
}

/// `-123.45` at `scale` 2 → -12345 (the server prints exactly `scale` decimals).
fn parse_decimal(s: &str, scale: i8) -> Option<i128> {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if frac.len() > scale.max(0) as usize
        || !int.bytes().chain(frac.bytes()).all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let padded = format!("{int}{frac:0<width$}", width = scale.max(0) as usize);
    let x: i128 = padded.parse().ok()?;
    Some(if neg { -x } else { x })
}

#[async_trait]
impl TableProvider for MyTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(support(
            filters,
            &self.by_name,
            Dialect::MySql,
            self.src.pushdown,
        ))
    }

    async fn scan(
        &self,
        _state: &dyn DfSession,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let source = format!("{} = {}", self.src.name, self.src.shown);
        let one = OneRead {
            log: &self.src.log,
            label: &self.label,
            table_sql: &self.table,
            source: source.clone(),
            split: "one read, in the source's snapshot (MariaDB/MySQL)",
            schema: &self.schema,
            by_name: &self.by_name,
            dialect: Dialect::MySql,
            pushdown: self.src.pushdown,
            quote,
        };
        let what = format!("source {} ({})", self.src.name, self.src.shown);
        one.scan(projection, filters, limit, &what, |cols, sql| {
            self.read(cols, sql)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_map_and_decimals_parse_exactly() {
        assert_eq!(
            map_type("decimal", "decimal(15,2)", Some(15), Some(2)),
            Some(DataType::Decimal128(15, 2))
        );
        assert_eq!(
            map_type("decimal", "decimal(65,2)", Some(65), Some(2)),
            None
        );
        assert_eq!(
            map_type("bigint", "bigint(20) unsigned", None, None),
            Some(DataType::Decimal128(20, 0))
        );
        assert_eq!(map_type("bit", "bit(1)", None, None), None);
        assert_eq!(map_type("geometry", "geometry", None, None), None);
        assert_eq!(parse_decimal("-123.45", 2), Some(-12345));
        assert_eq!(parse_decimal("7", 2), Some(700));
        assert_eq!(parse_decimal("0.5", 2), Some(50));
        assert_eq!(parse_decimal("1.234", 2), None);
        assert_eq!(parse_decimal("1e3", 2), None);
        assert_eq!(days("1970-01-02"), Some(1));
        assert_eq!(days("0000-00-00"), None);
    }
}
