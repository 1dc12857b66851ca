//! A scan with a row estimate: DataFusion's join selection builds a hash join's table on the side
//! it expects to be smaller, and a database scan (a `StreamingTableExec`) says nothing of its
//! size, so the query's table order decided (TPC-H Q12 at SF 1 built on the 1.5 M orders rows
//! streaming from PostgreSQL, and the probe waited for the whole scan). This wrapper runs the
//! scan unchanged and reports the catalog's estimate (PostgreSQL's `pg_class.reltuples`) as an
//! inexact row count.

use std::sync::Arc;

use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{internal_err, Result as DfResult, Statistics};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, PlanProperties,
};

/// `inner` (a leaf), said to return about `rows` rows.
#[derive(Debug)]
pub(crate) struct Estimated {
    pub inner: Arc<dyn ExecutionPlan>,
    pub rows: usize,
}

impl DisplayAs for Estimated {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        self.inner.fmt_as(t, f)?;
        write!(f, ", estimated_rows={}", self.rows)
    }
}

impl ExecutionPlan for Estimated {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.inner.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        self.inner.apply_expressions(f)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            Ok(self)
        } else {
            internal_err!("a database scan has no children")
        }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        self.inner.execute(partition, context)
    }

    fn partition_statistics(&self, partition: Option<usize>) -> DfResult<Arc<Statistics>> {
        let parts = self.inner.output_partitioning().partition_count().max(1);
        let rows = match partition {
            None => self.rows,
            Some(_) => self.rows.div_ceil(parts),
        };
        let mut s = Statistics::new_unknown(&self.schema());
        s.num_rows = Precision::Inexact(rows);
        Ok(Arc::new(s))
    }
}
