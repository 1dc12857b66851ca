//! What the tables read in one go share (SQLite, MariaDB/MySQL): the SELECT of the projection,
//! the filters pushed and the LIMIT, the plan and the part logged, the batch handed to DataFusion.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::{DataFusionError, Result as DfResult};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;

use crate::pushdown::{sent, where_limit, Dialect, PushColumn, Sent};
use crate::scanlog::{ScanLog, ScanPart, ScanPlan};

/// A table read by one statement when DataFusion plans its scan.
pub(crate) struct OneRead<'a> {
    pub log: &'a ScanLog,
    /// The table as the query names it.
    pub label: &'a str,
    /// The table as the database names it, quoted.
    pub table_sql: &'a str,
    /// The source as shown (password redacted).
    pub source: String,
    /// How it is read, for `--explain`.
    pub split: &'static str,
    pub schema: &'a SchemaRef,
    pub by_name: &'a HashMap<String, PushColumn>,
    pub dialect: Dialect,
    /// Send filters and LIMIT (off: `--no-pushdown`).
    pub pushdown: bool,
    /// Quotes a column name in the database's SQL.
    pub quote: fn(&str) -> String,
}

impl OneRead<'_> {
    /// Runs the scan: `read(columns, sql)` gives the batch and the bytes received; a failure is
    /// logged and returned with `what` (the source) before it.
    pub(crate) fn scan(
        &self,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
        what: &str,
        read: impl FnOnce(&[usize], &str) -> Result<(RecordBatch, u64), String>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let cols: Vec<usize> = projection
            .cloned()
            .unwrap_or_else(|| (0..self.schema.fields().len()).collect());
        let list = if cols.is_empty() {
            "1".to_string()
        } else {
            cols.iter()
                .map(|&i| (self.quote)(self.schema.field(i).name()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let Sent {
            pushed,
            kept,
            limit,
        } = sent(filters, self.by_name, self.dialect, self.pushdown, limit);
        let sql = format!(
            "SELECT {list} FROM {}{}",
            self.table_sql,
            where_limit(pushed.iter().map(String::as_str), limit)
        );
        self.log.plan(ScanPlan {
            label: self.label.to_string(),
            source: self.source.clone(),
            columns: cols
                .iter()
                .map(|&i| self.schema.field(i).name().clone())
                .collect(),
            pushed,
            kept,
            limit,
            split: self.split.into(),
            sql: vec![sql.clone()],
        });
        let start_ns = self.log.now_ns();
        let r = read(&cols, &sql);
        let mut part = ScanPart {
            label: self.label.to_string(),
            partition: 0,
            sql,
            start_ns,
            end_ns: self.log.now_ns(),
            ..Default::default()
        };
        match r {
            Ok((batch, bytes)) => {
                part.rows = batch.num_rows() as u64;
                part.bytes = bytes;
                self.log.part(part);
                let schema = batch.schema();
                Ok(MemorySourceConfig::try_new_exec(
                    &[vec![batch]],
                    schema,
                    None,
                )?)
            }
            Err(e) => {
                let msg = format!("{what}: {e}");
                part.error = Some(msg.clone());
                self.log.part(part);
                Err(DataFusionError::External(msg.into()))
            }
        }
    }
}
