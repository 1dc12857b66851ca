//! A PostgreSQL table as a DataFusion table provider: the projection, the exactly translatable
//! filters and (when every filter went) the LIMIT are sent to the server, and the table is read by
//! N connections at once, each `COPY (SELECT cols FROM t WHERE ctid range AND filters) TO STDOUT`
//! (transfer's block ranges, `dbscope_transfer::split_plan`) inside the source's one exported
//! snapshot, COPY's binary format decoded into Arrow batches as it streams (pgbinary.rs).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::stream::RecordBatchReceiverStreamBuilder;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::physical_plan::ExecutionPlan;
use dbscope_core::redact::redact;
use dbscope_pgwire::{connect_with, WireConn, WireError};
use tokio::sync::mpsc::Sender;

use crate::estimate::Estimated;
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
        let sqls: Vec<String> = self
            .parts
            .iter()
            .map(|ctid| {
                let conds = ctid.iter().chain(&pushed).map(String::as_str);
                format!(
                    "COPY (SELECT {select} FROM {}{}) TO STDOUT (FORMAT binary)",
                    self.table,
                    where_limit(conds, limit)
                )
            })
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
            sql: sqls.clone(),
        });
        let partitions: Vec<Arc<dyn PartitionStream>> = sqls
            .into_iter()
            .enumerate()
            .map(|(i, sql)| {
                Arc::new(PgPart {
                    src: self.src.clone(),
                    label: self.label.clone(),
                    partition: i as u32,
                    sql,
                    schema: read_schema.clone(),
                    decode_schema: decode_schema.clone(),
                    trim_end: trim_end.clone(),
                }) as Arc<dyn PartitionStream>
            })
            .collect();
        // With pushdown the partitions return exactly the projection; without, DataFusion projects.
        let exec_projection = if pushdown { None } else { projection };
        let scan: Arc<dyn ExecutionPlan> = Arc::new(StreamingTableExec::try_new(
            read_schema,
            partitions,
            exec_projection,
            [],
            false,
            None,
        )?);
        // The catalog's estimate lets a join build on the smaller side (estimate.rs).
        Ok(match self.reltuples {
            Some(rows) => Arc::new(Estimated { inner: scan, rows }),
            None => scan,
        })
    }
}

/// One connection's share of a table scan.
#[derive(Debug, Clone)]
struct PgPart {
    src: Arc<PgSource>,
    label: String,
    partition: u32,
    sql: String,
    schema: SchemaRef,
    decode_schema: SchemaRef,
    /// Per decoded column: drop trailing spaces (char(n)).
    trim_end: Vec<bool>,
}

impl PartitionStream for PgPart {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let mut b = RecordBatchReceiverStreamBuilder::new(self.schema.clone(), 2);
        let tx = b.tx();
        let me = self.clone();
        let running = self.src.log.start();
        b.spawn_blocking(move || {
            let r = me.run(tx);
            drop(running);
            r
        });
        b.build()
    }
}

impl PgPart {
    fn run(&self, tx: Sender<DfResult<RecordBatch>>) -> DfResult<()> {
        let log = &self.src.log;
        let mut part = ScanPart {
            label: self.label.clone(),
            partition: self.partition,
            sql: self.sql.clone(),
            start_ns: log.now_ns(),
            ..Default::default()
        };
        let r = self.copy(&tx, &mut part);
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

    fn copy(&self, tx: &Sender<DfResult<RecordBatch>>, part: &mut ScanPart) -> Result<(), String> {
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
            tx.blocking_send(Ok(b)).map_err(|_| STOPPED.to_string())
        };
        let mut rows = 0u64;
        let mut bytes = 0u64;
        // The sink's own error (a value Arrow cannot hold, the query stopped), not the wire's
        // wrapping of it as a protocol error.
        let mut failed = None;
        let r = c.copy_out(&self.sql, &mut |d: &[u8]| {
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
