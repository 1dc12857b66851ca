//! `--engine ballista`: the query as a job on a Ballista cluster (issue 32 part 4).
//!
//! Ballista's executors rebuild the plan from what the scheduler sends them, and they can read
//! files only: a PostgreSQL or SQLite table is a provider of this process. So each database table
//! the query reads is scanned here first, by the same partitions as in-process (PostgreSQL's
//! ctid-range `COPY` connections under one snapshot, with the projection and the filters the
//! query pushes down), each partition written as one Parquet file of the stage directory; the
//! query then runs on the cluster over those files, the file sources and the runs' exported events
//! (all listing tables at absolute paths the executors must see: the same machine, or a file
//! system shared at the same path).

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::TableProviderFilterPushDown;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use datafusion::prelude::{Expr, SessionContext};
use futures::StreamExt;

use crate::error::one_line;

/// The scans a local planning made, by table label.
pub(crate) type Seen = Arc<Mutex<Vec<(String, Arc<dyn ExecutionPlan>)>>>;

/// A database table as planned for staging: the source's own provider, whose pushed filters are
/// declared inexact (so the columns they test stay in the projection, and the staged rows can be
/// filtered again on the cluster by the same query), and whose scans are kept in `seen`.
#[derive(Debug)]
pub(crate) struct Staged {
    pub inner: Arc<dyn TableProvider>,
    pub label: String,
    pub seen: Seen,
}

#[async_trait]
impl TableProvider for Staged {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(self
            .inner
            .supports_filters_pushdown(filters)?
            .into_iter()
            .map(|p| match p {
                TableProviderFilterPushDown::Exact => TableProviderFilterPushDown::Inexact,
                other => other,
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let plan = self.inner.scan(state, projection, filters, limit).await?;
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((self.label.clone(), plan.clone()));
        Ok(plan)
    }
}

/// The scans to stage: the one scan of each database table the query plans, or, for a table the
/// query scans more than once (a self-join), the whole table.
pub(crate) async fn scans_to_stage(
    local: &SessionContext,
    seen: &Seen,
) -> Result<Vec<(String, Arc<dyn ExecutionPlan>)>, String> {
    let planned: Vec<(String, Arc<dyn ExecutionPlan>)> = seen
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .drain(..)
        .collect();
    let mut out: Vec<(String, Arc<dyn ExecutionPlan>)> = Vec::new();
    let mut whole: Vec<String> = Vec::new();
    for (label, plan) in planned {
        match out.iter().position(|(l, _)| *l == label) {
            None => out.push((label, plan)),
            Some(i) if !whole.contains(&label) => {
                let all = async {
                    local
                        .table(label.as_str())
                        .await?
                        .create_physical_plan()
                        .await
                }
                .await
                .map_err(|e| format!("staging {label}: {}", one_line(&e)))?;
                out[i].1 = all;
                whole.push(label);
            }
            Some(_) => {}
        }
    }
    Ok(out)
}

/// Runs every partition of `plan` at once, each into `dir/part-N.parquet`; returns rows and
/// bytes written.
pub(crate) async fn stage(
    local: &SessionContext,
    label: &str,
    plan: Arc<dyn ExecutionPlan>,
    dir: &Path,
) -> Result<(u64, u64), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let n = plan.output_partitioning().partition_count();
    let mut tasks = Vec::new();
    for i in 0..n {
        let stream = plan
            .execute(i, local.task_ctx())
            .map_err(|e| format!("staging {label}: {}", one_line(&e)))?;
        let path = dir.join(format!("part-{i}.parquet"));
        let label = label.to_string();
        tasks.push(tokio::spawn(async move {
            let mut stream = stream;
            let file = std::fs::File::create(&path)
                .map_err(|e| format!("staging {label}: {}: {e}", path.display()))?;
            let mut w = ArrowWriter::try_new(file, stream.schema(), None)
                .map_err(|e| format!("staging {label}: {e}"))?;
            let mut rows = 0u64;
            while let Some(b) = stream.next().await {
                let b = b.map_err(|e| format!("staging {label}: {}", one_line(&e)))?;
                rows += b.num_rows() as u64;
                w.write(&b).map_err(|e| format!("staging {label}: {e}"))?;
            }
            w.close().map_err(|e| format!("staging {label}: {e}"))?;
            let bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
            Ok::<_, String>((rows, bytes))
        }));
    }
    let mut rows = 0;
    let mut bytes = 0;
    let mut first_err = None;
    for t in tasks {
        match t.await {
            Ok(Ok((r, b))) => {
                rows += r;
                bytes += b;
            }
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(e) => {
                first_err.get_or_insert(format!("staging {label}: {e}"));
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok((rows, bytes)),
    }
}
