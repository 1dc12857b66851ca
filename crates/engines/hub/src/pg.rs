//! A PostgreSQL table as a DataFusion table provider: the projection, the exactly translatable
//! filters and (when every filter went) the LIMIT are sent to the server, and the table is read by
//! N connections at once, each `COPY (SELECT cols FROM t WHERE ctid range AND filters) TO STDOUT`
//! (transfer's block ranges, `dbscope_transfer::split_plan`) inside the source's one exported
//! snapshot, COPY's binary format decoded into Arrow batches as it streams (pgbinary.rs).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::config::ConfigOptions;
use datafusion::common::internal_err;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::Statistics;
use datafusion::common::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_expr::expressions::DynamicFilterPhysicalExpr;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::filter_pushdown::{
    ChildPushdownResult, FilterPushdownPhase, FilterPushdownPropagation,
};
use datafusion::physical_plan::stream::RecordBatchReceiverStreamBuilder;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use dbscope_core::redact::redact;
use dbscope_pgwire::{connect_with, WireConn, WireError};
use tokio::sync::mpsc::Sender;

use crate::dynamic::{self, Implied};
use crate::pgbinary::BinaryDecoder;
use crate::pushdown::{sent, support, where_limit, Dialect, PushColumn, Sent};
use crate::scanlog::{ScanLog, ScanPart, ScanPlan};
use crate::source::PgTables;
use crate::Error;

/// Every hub session's settings: the pushed filters' date and timestamp literals read as ISO,
/// in UTC.
const SESSION_SETTINGS: &str = "SET DateStyle = ISO, YMD; SET TimeZone = 'UTC'";

/// What a partition's sink returns when DataFusion stopped reading (a LIMIT met, the query
/// ended): the COPY is abandoned and that is not an error.
const STOPPED: &str = "dbscope-hub: the query needed no more rows";

/// One `postgres://` source: its connection string, and the coordinator connection whose
/// repeatable-read transaction exported the snapshot every scan reads in (held open until the
/// query ends).
pub(crate) struct PgSource {
    name: String,
    conn: String,
    shown: String,
    coord: Mutex<WireConn>,
    snapshot: String,
    version: u32,
    conns: u32,
    pushdown: bool,
    log: Arc<ScanLog>,
}

impl fmt::Debug for PgSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PgSource({} = {})", self.name, self.shown)
    }
}

fn one(c: &mut WireConn, sql: &str) -> Result<Vec<Option<String>>, WireError> {
    Ok(c.simple_query(sql)?.into_iter().next().unwrap_or_default())
}

/// A server's refusal with its SQLSTATE.
fn db(what: &str, e: &WireError) -> String {
    match e {
        WireError::Db { code, .. } => format!("{what}: {e} ({code})"),
        _ => format!("{what}: {e}"),
    }
}

impl PgSource {
    /// Connects, begins the repeatable-read transaction and exports its snapshot.
    pub(crate) fn open(
        name: &str,
        conn: &str,
        conns: u32,
        pushdown: bool,
        log: Arc<ScanLog>,
    ) -> Result<Arc<PgSource>, Error> {
        let shown = redact(conn);
        let (mut c, _) = connect_with(conn, "dbscope/hub", None).map_err(|e| {
            Error::Source(format!(
                "source {name}: cannot connect to {shown}: {}",
                redact(&e.to_string())
            ))
        })?;
        let fail = |what: &str, e: WireError| {
            Error::Source(format!("source {name} ({shown}): {}", db(what, &e)))
        };
        one(&mut c, SESSION_SETTINGS).map_err(|e| fail("SET", e))?;
        one(&mut c, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .map_err(|e| fail("BEGIN", e))?;
        let row = one(
            &mut c,
            "SELECT current_setting('server_version_num'), pg_export_snapshot()",
        )
        .map_err(|e| fail("pg_export_snapshot()", e))?;
        let get = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
        Ok(Arc::new(PgSource {
            name: name.to_string(),
            conn: conn.to_string(),
            shown,
            version: get(0).parse().unwrap_or(0),
            snapshot: get(1),
            coord: Mutex::new(c),
            conns: conns.max(1),
            pushdown,
            log,
        }))
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
            PgTables::Schema(s) => {
                let rows = self
                    .coordinator()
                    .simple_query(&format!(
                        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                         WHERE n.nspname = '{s}' AND c.relkind IN ('r', 'p', 'm', 'v', 'f') ORDER BY 1"
                    ))
                    .map_err(|e| {
                        Error::Source(format!("source {} ({}): {}", self.name, self.shown, db("listing the tables", &e)))
                    })?;
                rows.into_iter()
                    .filter_map(|r| r.into_iter().next().flatten())
                    .map(|t| (format!("{}.{t}", self.name), format!("{s}.{t}")))
                    .collect()
            }
        })
    }

    fn coordinator(&self) -> std::sync::MutexGuard<'_, WireConn> {
        self.coord.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Ends the coordinator's transaction (the snapshot is no longer needed).
    pub(crate) fn close(&self) {
        let _ = one(&mut self.coordinator(), "COMMIT");
    }
}

/// A table name quoted: `"t"` or `"s"."t"`.
fn quoted(table: &str) -> String {
    table
        .split('.')
        .map(|p| format!("\"{p}\""))
        .collect::<Vec<_>>()
        .join(".")
}

/// How a column of a PostgreSQL table is read.
struct Mapped {
    data_type: DataType,
    /// The column in a pushed filter: its quoted name, or a cast with the same meaning.
    sql: String,
    /// The column in the COPY's SELECT, whose binary form pgbinary.rs decodes.
    select: String,
    /// Trailing spaces are dropped by the decoder (char(n): see below).
    trim_end: bool,
}

/// The Arrow type of a catalog type and the expressions that read it; `None` when the hub has no
/// mapping.
fn map_type(col: &str, typ: &str, typmod: i32) -> Option<Mapped> {
    let q = format!("\"{}\"", col.replace('"', "\"\""));
    let plain = |t: DataType| {
        Some(Mapped {
            data_type: t,
            sql: q.clone(),
            select: q.clone(),
            trim_end: false,
        })
    };
    let text = || {
        let cast = format!("{q}::text");
        Some(Mapped {
            data_type: DataType::Utf8,
            sql: cast.clone(),
            select: cast,
            trim_end: false,
        })
    };
    match typ {
        "int2" => plain(DataType::Int16),
        "int4" => plain(DataType::Int32),
        "int8" => plain(DataType::Int64),
        "float4" => plain(DataType::Float32),
        "float8" => plain(DataType::Float64),
        "date" => plain(DataType::Date32),
        "timestamp" => plain(DataType::Timestamp(TimeUnit::Microsecond, None)),
        // Microseconds since 2000-01-01 UTC, whatever the session's time zone.
        "timestamptz" => plain(DataType::Timestamp(
            TimeUnit::Microsecond,
            Some("UTC".into()),
        )),
        "bool" => plain(DataType::Boolean),
        "text" | "varchar" | "name" => plain(DataType::Utf8),
        // char(n) as text drops the padding, as PostgreSQL's own comparisons ignore it. The
        // decoder drops it (a char's binary form is its padded text): the server's `::text` cast
        // allocated a copy of every value, about 0.1 CPU-s per million values here; filters keep
        // the cast, whose meaning they need.
        "bpchar" => Some(Mapped {
            data_type: DataType::Utf8,
            sql: format!("{q}::text"),
            select: q.clone(),
            trim_end: true,
        }),
        "uuid" | "json" | "jsonb" => text(),
        "numeric" if typmod >= 4 => {
            // numeric's typmod: precision in the high 16 bits, the scale (11 bits, signed since
            // PostgreSQL 15) in the low ones, both offset by VARHDRSZ (4).
            let m = typmod - 4;
            let p = (m >> 16) & 0xffff;
            let s = ((m & 0x7ff) ^ 1024) - 1024;
            ((1..=38).contains(&p) && (0..=p).contains(&s))
                .then(|| plain(DataType::Decimal128(p as u8, s as i8)))
                .flatten()
        }
        _ => None,
    }
}

/// A table of a PostgreSQL source.
#[derive(Debug)]
pub(crate) struct PgTable {
    src: Arc<PgSource>,
    label: String,
    table: String,
    schema: SchemaRef,
    /// Each column's SELECT expression in the COPY, and whether the decoder trims it.
    reads: Vec<(String, bool)>,
    /// Each column as a pushed filter names it.
    by_name: HashMap<String, PushColumn>,
    /// The ctid condition of each partition (`None`: the whole table).
    parts: Vec<Option<String>>,
    split: String,
    /// The catalog's row estimate (`pg_class.reltuples`), when it has one.
    reltuples: Option<usize>,
}

impl PgTable {
    /// Reads the table's columns from the catalog and decides its split, in the snapshot.
    pub(crate) fn open(src: &Arc<PgSource>, label: &str, table: &str) -> Result<PgTable, Error> {
        let qt = quoted(table);
        let fail = |what: &str, e: WireError| {
            Error::Source(format!(
                "source {} ({}): table {table}: {}",
                src.name,
                src.shown,
                db(what, &e)
            ))
        };
        let mut c = src.coordinator();
        let rows = c
            .simple_query(&format!(
                "SELECT a.attname, t.typname, a.atttypmod, a.attnotnull, c.relkind::text, \
                 c.reltuples::bigint \
                 FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid \
                 JOIN pg_class c ON c.oid = a.attrelid \
                 WHERE a.attrelid = '{}'::regclass AND a.attnum > 0 AND NOT a.attisdropped \
                 ORDER BY a.attnum",
                qt.replace('\'', "''")
            ))
            .map_err(|e| fail("reading its columns", e))?;
        let mut fields = Vec::new();
        let mut reads = Vec::new();
        let mut by_name = HashMap::new();
        let mut relkind = String::new();
        let mut reltuples = -1i64;
        for r in &rows {
            let get = |i: usize| r.get(i).cloned().flatten().unwrap_or_default();
            let (name, typ) = (get(0), get(1));
            relkind = get(4);
            reltuples = get(5).parse().unwrap_or(-1);
            let Some(m) = map_type(&name, &typ, get(2).parse().unwrap_or(-1)) else {
                return Err(Error::Source(format!(
                    "source {}: table {table}, column {name}: type {typ}{} has no Arrow type in the hub \
                     (mapped: integers, float4/8, numeric(p,s) with p ≤ 38, date, timestamp[tz], bool, \
                     text, varchar, char, name, uuid, json[b]); cast it in a view, or list the tables \
                     without this one",
                    src.name,
                    if typ == "numeric" { " without precision" } else { "" }
                )));
            };
            fields.push(Field::new(&name, m.data_type.clone(), get(3) != "t"));
            reads.push((m.select, m.trim_end));
            by_name.insert(
                name,
                PushColumn {
                    sql: m.sql,
                    data_type: m.data_type,
                },
            );
        }
        let ctid_ok = dbscope_transfer::no_ctid_split(src.version, &relkind);
        let n = if ctid_ok.is_none() { src.conns } else { 1 };
        let plan = dbscope_transfer::split_plan(&mut c, &qt, n, None)
            .map_err(|e| Error::Source(format!("source {}: table {table}: {e}", src.name)))?;
        let split = match (&ctid_ok, src.conns) {
            (_, 1) => plan.why.clone(),
            (Some(why), _) => format!("one connection: {why}"),
            (None, _) => plan.why.clone(),
        };
        Ok(PgTable {
            src: src.clone(),
            label: label.to_string(),
            table: qt,
            schema: Arc::new(Schema::new(fields)),
            reads,
            by_name,
            parts: plan.parts.into_iter().map(|p| p.filter).collect(),
            split,
            // -1: never analysed (PostgreSQL 14+); a view's is 0, meaning nothing.
            reltuples: (relkind != "v" && reltuples >= 0).then_some(reltuples as usize),
        })
    }
}

#[async_trait]
impl TableProvider for PgTable {
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
            Dialect::Postgres,
            self.src.pushdown,
        ))
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let all: Vec<usize> = (0..self.reads.len()).collect();
        let pushdown = self.src.pushdown;
        // Without pushdown every column is read and DataFusion projects.
        let read: Vec<usize> = match projection {
            Some(p) if pushdown => p.clone(),
            _ => all.clone(),
        };
        let Sent {
            pushed,
            kept,
            limit,
        } = sent(filters, &self.by_name, Dialect::Postgres, pushdown, limit);
        let read_schema = Arc::new(self.schema.project(&read)?);
        // No column at all (count(*)): read a constant per row, hand DataFusion row counts.
        let (select, decode_schema, trim_end) = if read.is_empty() {
            (
                "1".to_string(),
                Arc::new(Schema::new(vec![Field::new("one", DataType::Int32, true)])),
                vec![false],
            )
        } else {
            (
                read.iter()
                    .map(|&i| self.reads[i].0.clone())
                    .collect::<Vec<_>>()
                    .join(", "),
                read_schema.clone(),
                read.iter().map(|&i| self.reads[i].1).collect(),
            )
        };
        let heads: Vec<(String, Vec<String>)> = self
            .parts
            .iter()
            .map(|ctid| {
                let conds = ctid.iter().chain(&pushed).cloned().collect();
                (format!("COPY (SELECT {select} FROM {}", self.table), conds)
            })
            .collect();
        let sqls: Vec<String> = heads
            .iter()
            .map(|(head, conds)| copy_sql(head, conds, None, limit))
            .collect();
        self.src.log.plan(ScanPlan {
            label: self.label.clone(),
            source: format!("{} = {}", self.src.name, self.src.shown),
            columns: read
                .iter()
                .map(|&i| self.schema.field(i).name().clone())
                .collect(),
            pushed,
            kept,
            limit,
            split: self.split.clone(),
            sql: sqls,
        });
        // Without pushdown every column is read and each batch is projected here.
        let project = match projection {
            Some(p) if !pushdown => Some(p.clone()),
            _ => None,
        };
        let out_schema = match &project {
            Some(p) => Arc::new(read_schema.project(p)?),
            None => read_schema.clone(),
        };
        let parts: Vec<PgPart> = heads
            .into_iter()
            .enumerate()
            .map(|(i, (head, conds))| PgPart {
                src: self.src.clone(),
                label: self.label.clone(),
                partition: i as u32,
                head,
                conds,
                limit,
                schema: read_schema.clone(),
                decode_schema: decode_schema.clone(),
                trim_end: trim_end.clone(),
                project: project.clone(),
            })
            .collect();
        Ok(Arc::new(PgScanExec::new(
            parts,
            out_schema,
            self.reltuples,
            Arc::new(self.by_name.clone()),
        )))
    }
}

/// `COPY (SELECT … FROM t WHERE conds [AND the join's filter] [LIMIT n]) TO STDOUT (FORMAT binary)`.
fn copy_sql(head: &str, conds: &[String], dynamic: Option<&str>, limit: Option<usize>) -> String {
    let conds = conds.iter().map(String::as_str).chain(dynamic);
    format!(
        "{head}{}) TO STDOUT (FORMAT binary)",
        where_limit(conds, limit)
    )
}

/// A PostgreSQL table's scan: one partition per connection, each a COPY of its block range,
/// with the catalog's row estimate (so that a join builds its table on the smaller side) and, on
/// the probe side of a hash join, the join's run-time filter added to the COPY (dynamic.rs).
#[derive(Debug)]
pub(crate) struct PgScanExec {
    parts: Vec<PgPart>,
    schema: SchemaRef,
    props: Arc<PlanProperties>,
    /// The catalog's row estimate (`pg_class.reltuples`).
    rows: Option<usize>,
    /// Each column as a filter names it.
    cols: Arc<HashMap<String, PushColumn>>,
    /// Run-time filters DataFusion handed down (a join's, a TopK's), read when the scan starts.
    dynamic: Vec<Arc<dyn PhysicalExpr>>,
    /// The ids of the hash joins' filters (set by [`arm`] once the plan is final): a partition
    /// waits for those to be complete before it sends its COPY. Other dynamic filters (a TopK's
    /// threshold) tighten only as this scan's own rows arrive: they are read as they are.
    joins: Arc<Mutex<HashSet<u64>>>,
}

impl PgScanExec {
    fn new(
        parts: Vec<PgPart>,
        schema: SchemaRef,
        rows: Option<usize>,
        cols: Arc<HashMap<String, PushColumn>>,
    ) -> PgScanExec {
        let props = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(parts.len()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        PgScanExec {
            parts,
            schema,
            props,
            rows,
            cols,
            dynamic: Vec::new(),
            joins: Arc::default(),
        }
    }
}

/// Tells every PostgreSQL scan in `plan` which of its run-time filters come from hash joins (a
/// join publishes its filter once its table is built, so a scan on its probe side can wait for
/// it): called on the final physical plan, before it runs.
pub(crate) fn arm(plan: &Arc<dyn ExecutionPlan>) {
    let mut joins = HashSet::new();
    let _ = plan.apply(|n| {
        if n.name() == "HashJoinExec" {
            joins.extend(
                n.dynamic_expressions_produced()
                    .iter()
                    .filter_map(|e| e.expression_id()),
            );
        }
        Ok(TreeNodeRecursion::Continue)
    });
    let _ = plan.apply(|n| {
        if let Some(s) = n.downcast_ref::<PgScanExec>() {
            *s.joins.lock().unwrap_or_else(PoisonError::into_inner) = joins.clone();
        }
        Ok(TreeNodeRecursion::Continue)
    });
}

impl DisplayAs for PgScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let table = self.parts.first().map_or("", |p| p.label.as_str());
        write!(
            f,
            "PgScanExec: table={table}, partitions={}",
            self.parts.len()
        )?;
        if let Some(r) = self.rows {
            write!(f, ", estimated_rows={r}")?;
        }
        // The join's filter as the COPY says it (its lists by length: DataFusion's own
        // rendering prints every key).
        let version = self.parts.first().map_or(0, |p| p.src.version);
        for d in &self.dynamic {
            match dynamic::implied(d, &self.schema, &self.cols, version) {
                Some(i) => write!(f, ", run_time_filter=[{}]", i.shown)?,
                None => write!(f, ", run_time_filter=[nothing to send yet]")?,
            }
        }
        Ok(())
    }
}

impl ExecutionPlan for PgScanExec {
    fn name(&self) -> &str {
        "PgScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        for d in &self.dynamic {
            if f(d)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
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

    fn handle_child_pushdown_result(
        &self,
        _phase: FilterPushdownPhase,
        child: ChildPushdownResult,
        _config: &ConfigOptions,
    ) -> DfResult<FilterPushdownPropagation<Arc<dyn ExecutionPlan>>> {
        // Every filter stays where it is (the join decides what joins; a FilterExec still
        // applies its own): the run-time ones are also kept here, to be said in the COPY. Not
        // with a LIMIT sent: that LIMIT counts rows before any filter added to it.
        let fresh: Vec<Arc<dyn PhysicalExpr>> = child
            .parent_filters
            .iter()
            .map(|f| f.filter.clone())
            .filter(|f| dynamic::is_dynamic(f) && !self.dynamic.iter().any(|d| d == f))
            .collect();
        let no = FilterPushdownPropagation::all_unsupported(child);
        let limited = self.parts.iter().any(|p| p.limit.is_some());
        if fresh.is_empty() || limited || self.parts.iter().any(|p| !p.src.pushdown) {
            return Ok(no);
        }
        let mut dynamic = self.dynamic.clone();
        dynamic.extend(fresh);
        let node = PgScanExec {
            parts: self.parts.clone(),
            schema: self.schema.clone(),
            props: self.props.clone(),
            rows: self.rows,
            cols: self.cols.clone(),
            dynamic,
            joins: self.joins.clone(),
        };
        Ok(no.with_updated_node(Arc::new(node) as Arc<dyn ExecutionPlan>))
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let Some(part) = self.parts.get(partition) else {
            return internal_err!("PgScanExec has no partition {partition}");
        };
        let mut b = RecordBatchReceiverStreamBuilder::new(self.schema.clone(), 2);
        let tx = b.tx();
        let me = part.clone();
        let running = part.src.log.start();
        // The join's filter, once the join has built its table; the connection is opened and
        // the snapshot set meanwhile.
        let (filter_tx, filter_rx) = tokio::sync::oneshot::channel();
        let dynamic = self.dynamic.clone();
        let joins = self
            .joins
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let read_schema = self.schema.clone();
        let cols = self.cols.clone();
        let version = part.src.version;
        b.spawn(async move {
            let t0 = std::time::Instant::now();
            let mut said = Vec::new();
            for d in &dynamic {
                let mut ids = Vec::new();
                dynamic::dynamic_ids(d, &mut ids);
                for (id, e) in ids {
                    if !joins.contains(&id) {
                        continue;
                    }
                    if let Some(f) = e.downcast_ref::<DynamicFilterPhysicalExpr>() {
                        // A join's filter is complete once every partition of the join has
                        // built its table; the bound is a guard against a join that never
                        // does (the scan then goes without it).
                        let _ = tokio::time::timeout(JOIN_FILTER_WAIT, f.wait_complete()).await;
                    }
                }
                if let Some(i) = dynamic::implied(d, &read_schema, &cols, version) {
                    said.push(i);
                }
            }
            let _ = filter_tx.send((said, t0.elapsed()));
            Ok(())
        });
        b.spawn_blocking(move || {
            let r = me.run(tx, filter_rx);
            drop(running);
            r
        });
        Ok(b.build())
    }

    fn partition_statistics(&self, partition: Option<usize>) -> DfResult<Arc<Statistics>> {
        let mut s = Statistics::new_unknown(&self.schema);
        if let Some(rows) = self.rows {
            let parts = self.parts.len().max(1);
            s.num_rows = Precision::Inexact(match partition {
                None => rows,
                Some(_) => rows.div_ceil(parts),
            });
        }
        Ok(Arc::new(s))
    }
}

/// How long a scan waits at most for a join's filter.
const JOIN_FILTER_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

/// What a partition is told before it sends its COPY: the run-time filters as SQL, and how long
/// it waited for them.
type Filters = tokio::sync::oneshot::Receiver<(Vec<Implied>, std::time::Duration)>;

/// One connection's share of a table scan.
#[derive(Debug, Clone)]
struct PgPart {
    src: Arc<PgSource>,
    label: String,
    partition: u32,
    /// `COPY (SELECT cols FROM t`, the conditions (block range, pushed filters) and the LIMIT:
    /// the run-time filter goes with them when the scan starts.
    head: String,
    conds: Vec<String>,
    limit: Option<usize>,
    /// What the COPY returns (the decoder's columns, or none for `count(*)`).
    schema: SchemaRef,
    decode_schema: SchemaRef,
    /// Per decoded column: drop trailing spaces (char(n)).
    trim_end: Vec<bool>,
    /// Without pushdown: the columns DataFusion asked for, projected from every batch.
    project: Option<Vec<usize>>,
}

impl PgPart {
    fn run(&self, tx: Sender<DfResult<RecordBatch>>, filters: Filters) -> DfResult<()> {
        let log = &self.src.log;
        let mut part = ScanPart {
            label: self.label.clone(),
            partition: self.partition,
            sql: copy_sql(&self.head, &self.conds, None, self.limit),
            start_ns: log.now_ns(),
            ..Default::default()
        };
        let r = self.copy(&tx, &mut part, filters);
        part.end_ns = log.now_ns();
        let r = match r {
            Err(e) if e == STOPPED => {
                part.stopped_early = true;
                Ok(())
            }
            Err(e) => {
                let msg = format!(
                    "source {} ({}), table {} partition {}: {e}",
                    self.src.name, self.src.shown, self.label, self.partition
                );
                part.error = Some(msg.clone());
                Err(DataFusionError::External(msg.into()))
            }
            Ok(()) => Ok(()),
        };
        log.part(part);
        r
    }

    fn copy(
        &self,
        tx: &Sender<DfResult<RecordBatch>>,
        part: &mut ScanPart,
        filters: Filters,
    ) -> Result<(), String> {
        let who = format!("dbscope/hub/{}", self.partition);
        let (mut c, _) = connect_with(&self.src.conn, &who, None).map_err(|e| {
            format!(
                "cannot connect to {}: {}",
                self.src.shown,
                redact(&e.to_string())
            )
        })?;
        one(&mut c, SESSION_SETTINGS).map_err(|e| db("SET", &e))?;
        one(&mut c, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .map_err(|e| db("BEGIN", &e))?;
        one(
            &mut c,
            &format!("SET TRANSACTION SNAPSHOT '{}'", self.src.snapshot),
        )
        .map_err(|e| db("SET TRANSACTION SNAPSHOT", &e))?;
        // The query gone before the filter came: nothing to read.
        let (said, waited) = filters.blocking_recv().map_err(|_| STOPPED.to_string())?;
        let sql = if said.is_empty() {
            part.sql.clone()
        } else {
            let all: Vec<&str> = said.iter().map(|i| i.sql.as_str()).collect();
            let shown: Vec<&str> = said.iter().map(|i| i.shown.as_str()).collect();
            let shown = shown.join(" AND ");
            part.sql = copy_sql(&self.head, &self.conds, Some(&shown), self.limit);
            part.dynamic = Some(shown);
            copy_sql(
                &self.head,
                &self.conds,
                Some(&all.join(" AND ")),
                self.limit,
            )
        };
        part.filter_wait_ns = waited.as_nanos() as u64;
        let mut dec = BinaryDecoder::new(self.decode_schema.clone(), 8192, &self.trim_end)?;
        let empty_projection = self.schema.fields().is_empty();
        let schema = self.schema.clone();
        let send = |b: RecordBatch, rows: &mut u64| -> Result<(), String> {
            *rows += b.num_rows() as u64;
            let b = if empty_projection {
                RecordBatch::try_new_with_options(
                    schema.clone(),
                    vec![],
                    &RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
                )
                .map_err(|e| e.to_string())?
            } else {
                b
            };
            let b = match &self.project {
                Some(p) => b.project(p).map_err(|e| e.to_string())?,
                None => b,
            };
            tx.blocking_send(Ok(b)).map_err(|_| STOPPED.to_string())
        };
        let mut rows = 0u64;
        let mut bytes = 0u64;
        // The sink's own error (a value Arrow cannot hold, the query stopped), not the wire's
        // wrapping of it as a protocol error.
        let mut failed = None;
        let r = c.copy_out(&sql, &mut |d: &[u8]| {
            bytes += d.len() as u64;
            dec.feed(d, &mut |b| send(b, &mut rows))
                .inspect_err(|e| failed = Some(e.clone()))
        });
        part.bytes = bytes;
        part.rows = rows;
        match (r, failed) {
            (Err(_), Some(e)) => return Err(e),
            (Err(e), None) => return Err(db("COPY", &e)),
            (Ok(_), _) => {}
        }
        if let Some(b) = dec.finish()? {
            send(b, &mut rows)?;
        }
        part.rows = rows;
        let _ = one(&mut c, "COMMIT");
        Ok(())
    }
}
