//! A SQLite table as a DataFusion table provider: the projected columns read when the query
//! scans it (one event), typed by their declared types (SQLite's affinity rules), with the
//! filters SQLite answers exactly as DataFusion would sent in its WHERE (and then the LIMIT):
//! [`crate::pushdown`] says which.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{
    ArrayRef, BinaryBuilder, Float64Builder, Int64Builder, StringBuilder,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::Result as DfResult;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::ExecutionPlan;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

use crate::oneread::OneRead;
use crate::pushdown::{plain_columns, support, Dialect, PushColumn};
use crate::scanlog::ScanLog;
use crate::Error;

fn open(path: &str) -> Result<Connection, String> {
    Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| format!("sqlite:{path}: cannot open: {e}"))
}

/// The tables of a SQLite database (the one given, or all of them).
pub(crate) fn tables(path: &str, one: Option<&str>) -> Result<Vec<String>, Error> {
    if !std::path::Path::new(path).is_file() {
        return Err(Error::Input(format!(
            "sqlite:{path}: no such database file"
        )));
    }
    let c = open(path).map_err(Error::Input)?;
    let mut st = c
        .prepare("SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' ORDER BY 1")
        .map_err(|e| Error::Input(format!("sqlite:{path}: {e}")))?;
    let all: Vec<String> = st
        .query_map([], |r| r.get::<_, String>(0))
        .and_then(|rows| rows.collect())
        .map_err(|e| Error::Input(format!("sqlite:{path}: {e}")))?;
    match one {
        Some(t) if all.iter().any(|a| a == t) => Ok(vec![t.to_string()]),
        Some(t) => Err(Error::Input(format!(
            "sqlite:{path}: no table {t} (it holds: {})",
            all.join(", ")
        ))),
        None => Ok(all),
    }
}

/// A table of a SQLite database.
#[derive(Debug)]
pub(crate) struct SqliteTable {
    path: PathBuf,
    label: String,
    table: String,
    schema: SchemaRef,
    log: Arc<ScanLog>,
    /// Send filters and LIMIT (off: `--no-pushdown`).
    pushdown: bool,
    /// How the filters are said, and whether text orders as bytes here.
    dialect: Dialect,
    /// The columns by name, for the filters.
    by_name: HashMap<String, PushColumn>,
}

fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A declared type's Arrow type (SQLite's affinity rules, section 3.1 of its datatype page).
fn affinity(decl: &str) -> DataType {
    let d = decl.to_ascii_uppercase();
    if d.contains("INT") {
        DataType::Int64
    } else if d.contains("CHAR")
        || d.contains("CLOB")
        || d.contains("TEXT")
        || d.contains("DATE")
        || d.contains("TIME")
    {
        DataType::Utf8
    } else if d.is_empty() || d.contains("BLOB") {
        DataType::Binary
    } else {
        DataType::Float64
    }
}

impl SqliteTable {
    pub(crate) fn open(
        path: &str,
        label: &str,
        table: &str,
        log: Arc<ScanLog>,
        pushdown: bool,
    ) -> Result<SqliteTable, Error> {
        let c = open(path).map_err(Error::Input)?;
        let mut st = c
            .prepare(&format!(
                "SELECT name, type, \"notnull\" FROM pragma_table_info('{}')",
                table.replace('\'', "''")
            ))
            .map_err(|e| Error::Input(format!("sqlite:{path}: table {table}: {e}")))?;
        let fields: Vec<Field> = st
            .query_map([], |r| {
                Ok(Field::new(
                    r.get::<_, String>(0)?,
                    affinity(&r.get::<_, String>(1)?),
                    r.get::<_, i64>(2)? == 0,
                ))
            })
            .and_then(|rows| rows.collect())
            .map_err(|e| Error::Input(format!("sqlite:{path}: table {table}: {e}")))?;
        // Text compares as bytes unless a collation is declared: a COLLATE anywhere in a table's
        // definition, or a view (whose columns keep their tables' collations), leaves text
        // filters to DataFusion.
        let (kind, sql): (String, Option<String>) = c
            .query_row(
                "SELECT type, sql FROM sqlite_schema WHERE name = ?1",
                [table],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| Error::Input(format!("sqlite:{path}: table {table}: {e}")))?;
        let text_ordered = kind == "table"
            && !sql
                .unwrap_or_default()
                .to_ascii_uppercase()
                .contains("COLLATE");
        let by_name = plain_columns(&fields, quote);
        Ok(SqliteTable {
            path: PathBuf::from(path),
            label: label.to_string(),
            table: table.to_string(),
            schema: Arc::new(Schema::new(fields)),
            log,
            pushdown,
            dialect: Dialect::Sqlite { text_ordered },
            by_name,
        })
    }

    fn read(&self, cols: &[usize], sql: &str) -> Result<(RecordBatch, u64), String> {
        let path = self.path.display().to_string();
        let c = open(&path)?;
        let schema = Arc::new(self.schema.project(cols).map_err(|e| e.to_string())?);
        let mut st = c.prepare(sql).map_err(|e| format!("{sql}: {e}"))?;
        enum B {
            I(Int64Builder),
            F(Float64Builder),
            S(StringBuilder),
            Y(BinaryBuilder),
        }
        let mut bs: Vec<B> = schema
            .fields()
            .iter()
            .map(|f| match f.data_type() {
                DataType::Int64 => B::I(Int64Builder::new()),
                DataType::Float64 => B::F(Float64Builder::new()),
                DataType::Utf8 => B::S(StringBuilder::new()),
                _ => B::Y(BinaryBuilder::new()),
            })
            .collect();
        let mut rows = st.query([]).map_err(|e| format!("{sql}: {e}"))?;
        let mut n = 0u64;
        let mut bytes = 0u64;
        while let Some(r) = rows.next().map_err(|e| format!("{sql}: {e}"))? {
            n += 1;
            for (i, b) in bs.iter_mut().enumerate() {
                let v = r.get_ref(i).map_err(|e| e.to_string())?;
                let bad = |what: &str| {
                    format!(
                        "table {}, row {n}, column {}: {what} in a column declared {:?}",
                        self.table,
                        schema.field(i).name(),
                        schema.field(i).data_type()
                    )
                };
                match (b, v) {
                    (B::I(b), ValueRef::Null) => b.append_null(),
                    (B::F(b), ValueRef::Null) => b.append_null(),
                    (B::S(b), ValueRef::Null) => b.append_null(),
                    (B::Y(b), ValueRef::Null) => b.append_null(),
                    (B::I(b), ValueRef::Integer(x)) => b.append_value(x),
                    (B::F(b), ValueRef::Integer(x)) => b.append_value(x as f64),
                    (B::F(b), ValueRef::Real(x)) => b.append_value(x),
                    (B::S(b), ValueRef::Text(t)) => {
                        bytes += t.len() as u64;
                        b.append_value(
                            std::str::from_utf8(t).map_err(|_| bad("text that is not UTF-8"))?,
                        )
                    }
                    (B::Y(b), ValueRef::Blob(t) | ValueRef::Text(t)) => {
                        bytes += t.len() as u64;
                        b.append_value(t)
                    }
                    (_, ValueRef::Real(_)) => return Err(bad("a real value")),
                    (_, ValueRef::Integer(_)) => return Err(bad("an integer value")),
                    (_, ValueRef::Text(_)) => return Err(bad("a text value")),
                    (_, ValueRef::Blob(_)) => return Err(bad("a blob value")),
                }
            }
        }
        let arrays: Vec<ArrayRef> = bs
            .into_iter()
            .map(|b| match b {
                B::I(mut b) => Arc::new(b.finish()) as ArrayRef,
                B::F(mut b) => Arc::new(b.finish()),
                B::S(mut b) => Arc::new(b.finish()),
                B::Y(mut b) => Arc::new(b.finish()),
            })
            .collect();
        let batch = RecordBatch::try_new_with_options(
            schema,
            arrays,
            &RecordBatchOptions::new().with_row_count(Some(n as usize)),
        )
        .map_err(|e| e.to_string())?;
        Ok((batch, bytes))
    }
}

#[async_trait]
impl TableProvider for SqliteTable {
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
        Ok(support(filters, &self.by_name, self.dialect, self.pushdown))
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let one = OneRead {
            log: &self.log,
            label: &self.label,
            table_sql: &quote(&self.table),
            source: format!("sqlite:{}", self.path.display()),
            split: "one read (SQLite)",
            schema: &self.schema,
            by_name: &self.by_name,
            dialect: self.dialect,
            pushdown: self.pushdown,
            quote,
        };
        let what = format!("sqlite:{}", self.path.display());
        one.scan(projection, filters, limit, &what, |cols, sql| {
            self.read(cols, sql)
        })
    }
}
