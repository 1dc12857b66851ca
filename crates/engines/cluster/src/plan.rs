//! Q1's two plans on DataFusion: the official SQL text (planned by DataFusion, "Hive"), and the
//! hand-written job's shape as an explicit physical plan — scan, filter, project, partial
//! aggregate (the combiner), hash shuffle by (l_returnflag, l_linestatus), final aggregate (the
//! reducer), sort — with the combiner optional.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::ScalarValue;
use datafusion::datasource::file_format::csv::CsvFormat;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::execution::SessionState;
use datafusion::functions_aggregate::average::avg_udaf;
use datafusion::functions_aggregate::count::count_udaf;
use datafusion::functions_aggregate::sum::sum_udaf;
use datafusion::logical_expr::{col, lit};
use datafusion::physical_expr::aggregate::{AggregateExprBuilder, AggregateFunctionExpr};
use datafusion::physical_expr::expressions::{self, Column};
use datafusion::physical_expr::{LexOrdering, PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode, PhysicalGroupBy};
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::{ExecutionPlan, Partitioning};
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::error::ClusterError;

/// The lineitem files' format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// dbgen's text: `|`-separated, no header, every line ending in `|`.
    Tbl,
    /// Apache Parquet (`tpch gen --format parquet`).
    Parquet,
}

impl Format {
    /// `tbl` or `parquet`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Tbl => "tbl",
            Format::Parquet => "parquet",
        }
    }
}

/// The lineitem files of a job: absolute paths (every executor opens them at that path), one
/// format.
#[derive(Clone, Debug)]
pub struct Lineitem {
    /// Absolute paths.
    pub files: Vec<PathBuf>,
    /// Their format.
    pub format: Format,
}

impl Lineitem {
    /// Checks the files: all `.tbl` or all `.parquet`, made absolute.
    pub fn new(files: &[PathBuf]) -> Result<Lineitem, ClusterError> {
        let ext = |p: &Path| {
            p.extension()
                .and_then(|e| e.to_str())
                .unwrap_or("")
                .to_string()
        };
        let Some(first) = files.first() else {
            return Err(ClusterError::Input("no lineitem files".into()));
        };
        let format = match ext(first).as_str() {
            "parquet" => Format::Parquet,
            "tbl" => Format::Tbl,
            other => {
                return Err(ClusterError::Input(format!(
                    "{}: the cluster reads lineitem .tbl or .parquet files, not .{other}",
                    first.display()
                )))
            }
        };
        let mut abs = Vec::with_capacity(files.len());
        for f in files {
            if ext(f) != ext(first) {
                return Err(ClusterError::Input(format!(
                    "{} and {}: one job reads one format (.tbl or .parquet)",
                    first.display(),
                    f.display()
                )));
            }
            abs.push(
                std::fs::canonicalize(f)
                    .map_err(|e| ClusterError::Input(format!("{}: {e}", f.display())))?,
            );
        }
        Ok(Lineitem { files: abs, format })
    }
}

/// lineitem's columns as a `.tbl` line holds them, declared (a header-less file has no names) with
/// TPC-H's types: DECIMAL(15,2), DATE; the 17th column is the empty field after the trailing `|`.
pub fn tbl_schema() -> SchemaRef {
    let dec = || DataType::Decimal128(15, 2);
    Arc::new(Schema::new(vec![
        Field::new("l_orderkey", DataType::Int64, false),
        Field::new("l_partkey", DataType::Int64, false),
        Field::new("l_suppkey", DataType::Int64, false),
        Field::new("l_linenumber", DataType::Int32, false),
        Field::new("l_quantity", dec(), false),
        Field::new("l_extendedprice", dec(), false),
        Field::new("l_discount", dec(), false),
        Field::new("l_tax", dec(), false),
        Field::new("l_returnflag", DataType::Utf8, false),
        Field::new("l_linestatus", DataType::Utf8, false),
        Field::new("l_shipdate", DataType::Date32, false),
        Field::new("l_commitdate", DataType::Date32, false),
        Field::new("l_receiptdate", DataType::Date32, false),
        Field::new("l_shipinstruct", DataType::Utf8, false),
        Field::new("l_shipmode", DataType::Utf8, false),
        Field::new("l_comment", DataType::Utf8, false),
        Field::new("l_trailing", DataType::Utf8, true),
    ]))
}

/// DataFusion's settings for a job of `map_tasks` map tasks: files are cut into that many byte
/// ranges (Parquet: row groups by range), and the shuffle has as many partitions. Ballista's
/// settings are added by the caller.
pub fn configure(config: SessionConfig, map_tasks: usize) -> SessionConfig {
    let mut config = config
        .with_target_partitions(map_tasks.max(1))
        .with_repartition_file_scans(true)
        .with_repartition_file_min_size(1)
        .with_information_schema(false);
    // A DataFusion default (view types for Parquet strings) changes no value; keep it.
    config.options_mut().execution.collect_statistics = false;
    config
}

/// Registers lineitem as a listing table of exactly these files.
pub async fn register_lineitem(ctx: &SessionContext, input: &Lineitem) -> Result<(), ClusterError> {
    let plan = |e: datafusion::error::DataFusionError| ClusterError::Plan(e.to_string());
    let urls = input
        .files
        .iter()
        .map(|f| ListingTableUrl::parse(f.to_string_lossy()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(plan)?;
    let config = ListingTableConfig::new_with_multi_paths(urls);
    let config = match input.format {
        Format::Tbl => config
            .with_listing_options(
                ListingOptions::new(Arc::new(
                    CsvFormat::default()
                        .with_delimiter(b'|')
                        .with_has_header(false),
                ))
                .with_file_extension(".tbl"),
            )
            .with_schema(tbl_schema()),
        Format::Parquet => config
            .with_listing_options(
                ListingOptions::new(Arc::new(ParquetFormat::default()))
                    .with_file_extension(".parquet"),
            )
            .infer_schema(&ctx.state())
            .await
            .map_err(|e| {
                ClusterError::Input(format!(
                    "cannot read the Parquet schema of {}: {e}",
                    input.files[0].display()
                ))
            })?,
    };
    let table = ListingTable::try_new(config).map_err(plan)?;
    ctx.register_table("lineitem", Arc::new(table))
        .map_err(plan)?;
    Ok(())
}

/// Q1's official text (TPC-H 2.4.1) with DELTA substituted, in standard SQL's date arithmetic.
pub fn q1_sql(delta_days: u32) -> String {
    dbscope_tpch::q1::sql_with_cutoff(&format!("date '1998-12-01' - interval '{delta_days}' day"))
}

/// Days from 1970-01-01 to `1998-12-01 - DELTA days` (a Date32).
pub fn cutoff_days(delta_days: u32) -> i32 {
    // 1998-12-01 is day 10561 of the Unix epoch.
    10561 - delta_days as i32
}

/// The map/combine/reduce plan, built operator by operator on a local (non-Ballista) context
/// holding lineitem: DataFusion plans the map side (scan → filter → project), the rest is
/// explicit. Ballista cuts it into stages at the hash repartition.
pub async fn mapreduce_plan(
    ctx: &SessionContext,
    delta_days: u32,
    combiner: bool,
    shuffle_partitions: usize,
) -> Result<Arc<dyn ExecutionPlan>, ClusterError> {
    let plan_err = |e: datafusion::error::DataFusionError| ClusterError::Plan(e.to_string());
    let price = || col("l_extendedprice");
    let disc_price = price() * (lit(1) - col("l_discount"));
    let map_side = ctx
        .table("lineitem")
        .await
        .map_err(plan_err)?
        .filter(col("l_shipdate").lt_eq(lit(ScalarValue::Date32(Some(cutoff_days(delta_days))))))
        .map_err(plan_err)?
        .select(vec![
            col("l_returnflag"),
            col("l_linestatus"),
            col("l_quantity"),
            price(),
            col("l_discount"),
            disc_price.clone().alias("disc_price"),
            (disc_price * (lit(1) + col("l_tax"))).alias("charge"),
        ])
        .map_err(plan_err)?
        .create_physical_plan()
        .await
        .map_err(plan_err)?;
    let rows = map_side.schema();
    let column = |schema: &SchemaRef, name: &str| -> Result<Arc<dyn PhysicalExpr>, ClusterError> {
        Ok(Arc::new(
            Column::new_with_schema(name, schema).map_err(plan_err)?,
        ))
    };
    let group_by = PhysicalGroupBy::new_single(vec![
        (column(&rows, "l_returnflag")?, "l_returnflag".to_string()),
        (column(&rows, "l_linestatus")?, "l_linestatus".to_string()),
    ]);
    let aggregate = |udaf, arg: Arc<dyn PhysicalExpr>, name: &str| {
        AggregateExprBuilder::new(udaf, vec![arg])
            .schema(rows.clone())
            .alias(name)
            .build()
            .map(Arc::new)
            .map_err(plan_err)
    };
    let aggregates: Vec<Arc<AggregateFunctionExpr>> = vec![
        aggregate(sum_udaf(), column(&rows, "l_quantity")?, "sum_qty")?,
        aggregate(
            sum_udaf(),
            column(&rows, "l_extendedprice")?,
            "sum_base_price",
        )?,
        aggregate(sum_udaf(), column(&rows, "disc_price")?, "sum_disc_price")?,
        aggregate(sum_udaf(), column(&rows, "charge")?, "sum_charge")?,
        aggregate(avg_udaf(), column(&rows, "l_quantity")?, "avg_qty")?,
        aggregate(avg_udaf(), column(&rows, "l_extendedprice")?, "avg_price")?,
        aggregate(avg_udaf(), column(&rows, "l_discount")?, "avg_disc")?,
        aggregate(count_udaf(), expressions::lit(1i64), "count_order")?,
    ];
    let filters = vec![None; aggregates.len()];
    let shuffle = |input: Arc<dyn ExecutionPlan>| -> Result<Arc<dyn ExecutionPlan>, ClusterError> {
        let s = input.schema();
        let keys = vec![column(&s, "l_returnflag")?, column(&s, "l_linestatus")?];
        Ok(Arc::new(
            RepartitionExec::try_new(input, Partitioning::Hash(keys, shuffle_partitions.max(1)))
                .map_err(plan_err)?,
        ))
    };
    let reduced: Arc<dyn ExecutionPlan> = if combiner {
        let partial = Arc::new(
            AggregateExec::try_new(
                AggregateMode::Partial,
                group_by.clone(),
                aggregates.clone(),
                filters.clone(),
                map_side,
                rows.clone(),
            )
            .map_err(plan_err)?,
        );
        let shuffled = shuffle(partial)?;
        Arc::new(
            AggregateExec::try_new(
                AggregateMode::FinalPartitioned,
                group_by.as_final(),
                aggregates,
                filters,
                shuffled,
                // The schema the aggregate's arguments refer to: the map side's rows, as in
                // DataFusion's own planner (Ballista rebuilds the aggregates against it).
                rows.clone(),
            )
            .map_err(plan_err)?,
        )
    } else {
        let shuffled = shuffle(map_side)?;
        Arc::new(
            AggregateExec::try_new(
                AggregateMode::SinglePartitioned,
                group_by,
                aggregates,
                filters,
                shuffled,
                rows.clone(),
            )
            .map_err(plan_err)?,
        )
    };
    let out = reduced.schema();
    let ordering = LexOrdering::new(vec![
        PhysicalSortExpr::new_default(column(&out, "l_returnflag")?),
        PhysicalSortExpr::new_default(column(&out, "l_linestatus")?),
    ])
    .ok_or_else(|| ClusterError::Plan("empty sort order".into()))?;
    let sorted =
        Arc::new(SortExec::new(ordering.clone(), reduced).with_preserve_partitioning(true));
    Ok(Arc::new(SortPreservingMergeExec::new(ordering, sorted)))
}

/// A plain (in-process) DataFusion context with the job's settings and lineitem registered: the
/// mapreduce way plans on it, and `--explain` shows the SQL way's plan from it.
pub async fn local_context(
    input: &Lineitem,
    map_tasks: usize,
) -> Result<SessionContext, ClusterError> {
    let state: SessionState = datafusion::execution::SessionStateBuilder::new()
        .with_config(configure(SessionConfig::new(), map_tasks))
        .with_default_features()
        .build();
    let ctx = SessionContext::new_with_state(state);
    register_lineitem(&ctx, input).await?;
    Ok(ctx)
}
