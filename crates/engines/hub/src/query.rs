//! One query: the sources registered with DataFusion, the SQL planned and run, the result shown
//! and written, everything recorded as a run.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::catalog::MemorySchemaProvider;
use datafusion::datasource::{MemTable, TableProvider};
use datafusion::execution::context::SQLOptions;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::physical_plan::display::DisplayableExecutionPlan;
use datafusion::physical_plan::execute_stream;
use datafusion::prelude::{DataFrame, SessionConfig, SessionContext};
use dbscope_core::Outcome;
use futures::StreamExt;

pub use crate::config::{Engine, QueryConfig, ScanSummary};
use crate::dataflow::{build_step, Step};
use crate::error::one_line;
use crate::my::{MySource, MyTable};
use crate::output::{self, Out};
use crate::pg::{PgSource, PgTable};
use crate::record::{self, Finish, Phase};
use crate::scanlog::ScanLog;
use crate::source::{kind, Kind};
use crate::sqlite::{self, SqliteTable};
use crate::stage::{Seen, Staged};
use crate::{files, Error};

/// What a query did.
#[derive(Debug)]
pub struct QueryResult {
    /// The run directory.
    pub run: PathBuf,
    /// Complete, or failed with why.
    pub outcome: Outcome,
    pub detail: Option<String>,
    /// Result rows (all of them, not only those shown).
    pub rows: u64,
    /// The first rows as a table.
    pub shown: String,
    /// Rows in `shown`.
    pub shown_rows: usize,
    /// The file written, when the query completed and `--out` was given.
    pub out: Option<PathBuf>,
    /// Per table scan: what was sent to the source and what came back.
    pub scans: Vec<ScanSummary>,
    /// What ran in DataFusion (the physical plan with its metrics).
    pub plan: String,
    /// Events recorded.
    pub events: u64,
    /// Elapsed, s.
    pub seconds: f64,
}

enum Held {
    Pg(Arc<PgSource>),
    My(Arc<MySource>),
    Tmp(#[allow(dead_code)] tempfile::TempDir),
}

fn check(cfg: &QueryConfig) -> Result<(), Error> {
    if cfg.scan_connections == 0 {
        return Err(Error::Usage("--scan-connections must be at least 1".into()));
    }
    if cfg.sources.is_empty() {
        return Err(Error::Usage(
            "no sources: give --source NAME=URI (or --sources FILE.toml)".into(),
        ));
    }
    let mut seen = BTreeSet::new();
    for s in &cfg.sources {
        if !seen.insert(&s.name) {
            return Err(Error::Usage(format!("source name {} given twice", s.name)));
        }
    }
    if let Some(o) = &cfg.out {
        output::check(o)?;
    }
    Ok(())
}

/// Creates schema `name` of `ctx`'s default catalog when it has none (for `NAME.table` labels).
fn ensure_schema(ctx: &SessionContext, name: &str) -> Result<(), Error> {
    let df = |e: datafusion::error::DataFusionError| Error::Usage(e.to_string());
    let cat = ctx
        .catalog("datafusion")
        .ok_or_else(|| Error::Usage("DataFusion has no default catalog".into()))?;
    if cat.schema(name).is_none() {
        cat.register_schema(name, Arc::new(MemorySchemaProvider::new()))
            .map_err(df)?;
    }
    Ok(())
}

/// A database table's provider, wrapped for staging when the query runs on a cluster.
fn provider(t: Arc<dyn TableProvider>, label: &str, seen: Option<&Seen>) -> Arc<dyn TableProvider> {
    match seen {
        None => t,
        Some(seen) => Arc::new(Staged {
            inner: t,
            label: label.to_string(),
            seen: seen.clone(),
        }),
    }
}

/// Registers a database table of source `source` as `label` (`source.t` in the source's own
/// schema), wrapped for staging on a cluster.
fn add_table(
    ctx: &SessionContext,
    source: &str,
    label: &str,
    t: Arc<dyn TableProvider>,
    seen: Option<&Seen>,
) -> Result<(), Error> {
    if label.contains('.') {
        ensure_schema(ctx, source)?;
    }
    ctx.register_table(label, provider(t, label, seen))
        .map_err(|e| Error::Usage(e.to_string()))?;
    Ok(())
}

/// Registers every source with `ctx`. On a cluster, database tables record their scans for
/// staging and runs are exported into the stage directory (which the executors read); the runs'
/// exported files are returned by source name.
async fn register(
    ctx: &SessionContext,
    cfg: &QueryConfig,
    log: &Arc<ScanLog>,
    held: &mut Vec<Held>,
    cluster: Option<&Cluster>,
) -> Result<Vec<(String, PathBuf)>, Error> {
    let seen = cluster.map(|c| &c.seen);
    let mut exported = Vec::new();
    for s in &cfg.sources {
        match kind(s)? {
            Kind::Postgres { conn, tables } => {
                let src = PgSource::open(
                    &s.name,
                    &conn,
                    cfg.scan_connections,
                    cfg.pushdown,
                    log.clone(),
                )?;
                held.push(Held::Pg(src.clone()));
                for (label, table) in src.tables(&tables)? {
                    let t = PgTable::open(&src, &label, &table)?;
                    add_table(ctx, &s.name, &label, Arc::new(t), seen)?;
                }
            }
            Kind::MySql { conn, tables } => {
                let src = MySource::open(&s.name, &conn, cfg.pushdown, log.clone())?;
                held.push(Held::My(src.clone()));
                for (label, table) in src.tables(&tables)? {
                    let t = MyTable::open(&src, &label, &table)?;
                    add_table(ctx, &s.name, &label, Arc::new(t), seen)?;
                }
            }
            Kind::Sqlite { path, table } => {
                for t in sqlite::tables(&path, table.as_deref())? {
                    let label = match &table {
                        Some(_) => s.name.clone(),
                        None => format!("{}.{t}", s.name),
                    };
                    let p = SqliteTable::open(&path, &label, &t, log.clone(), cfg.pushdown)?;
                    add_table(ctx, &s.name, &label, Arc::new(p), seen)?;
                }
            }
            Kind::File(path) => {
                files::register(ctx, &s.name, &path).await?;
            }
            Kind::Run(dir) => match cluster {
                Some(c) => {
                    let out = files::register_run(ctx, &s.name, &dir, &c.stage).await?;
                    exported.push((s.name.clone(), out));
                }
                None => {
                    let tmp = tempfile::Builder::new()
                        .prefix("dbscope-hub-run-")
                        .tempdir()
                        .map_err(|e| Error::Input(format!("a temporary directory: {e}")))?;
                    files::register_run(ctx, &s.name, &dir, tmp.path()).await?;
                    held.push(Held::Tmp(tmp));
                }
            },
        }
    }
    Ok(exported)
}

/// DataFusion's settings for the hub. A hash join hands its probe side the list of its build
/// side's keys (not only their bounds) for up to 100,000 distinct keys per join partition
/// (DataFusion's default: 150), so that a PostgreSQL scan on the probe side sends the list with
/// its COPY and the server returns only the rows that can join (dynamic.rs). A file scan prunes
/// with a list as it does with the join's hash table.
fn session_config() -> SessionConfig {
    let mut c = SessionConfig::new();
    let o = &mut c.options_mut().optimizer;
    o.hash_join_inlist_pushdown_max_distinct_values = 100_000;
    o.hash_join_inlist_pushdown_max_size = 8 << 20;
    c
}

/// Runs the query: sources registered, SQL planned (errors here are the user's: no run), then the
/// run recorded around planning the scans, executing and writing.
pub fn run_query(cfg: &QueryConfig) -> Result<QueryResult, Error> {
    check(cfg)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Input(format!("cannot start the query's threads: {e}")))?;
    let log = ScanLog::new();
    let mut held = Vec::new();
    let r = rt.block_on(run(cfg, &log, &mut held));
    for h in &held {
        match h {
            Held::Pg(p) => p.close(),
            Held::My(m) => m.close(),
            Held::Tmp(_) => {}
        }
    }
    drop(held);
    r
}

async fn run(
    cfg: &QueryConfig,
    log: &Arc<ScanLog>,
    held: &mut Vec<Held>,
) -> Result<QueryResult, Error> {
    let state = SessionStateBuilder::new()
        .with_config(session_config())
        .with_default_features()
        .with_physical_optimizer_rule(Arc::new(crate::cheap_first::CheapFiltersFirst))
        .build();
    let ctx = SessionContext::new_with_state(state);
    let opened = std::time::Instant::now();
    // On a cluster: the scheduler answers, the database tables' scans are kept for staging and
    // everything the executors read goes to the stage directory.
    let cluster = match &cfg.engine {
        Engine::Local => None,
        Engine::Ballista { scheduler } => {
            if cfg.dataflow.is_some() {
                return Err(Error::Usage(
                    "--plan runs its steps one by one in this process; --engine ballista runs \
                     SQL only"
                        .into(),
                ));
            }
            reachable(scheduler)?;
            let d = stage_dir(&cfg.run)?;
            let stage = d.path().to_path_buf();
            held.push(Held::Tmp(d));
            Some(Cluster {
                scheduler: scheduler.clone(),
                seen: Seen::default(),
                stage,
            })
        }
    };
    let exported = register(&ctx, cfg, log, held, cluster.as_ref()).await?;
    // Before the run's clock: connecting, the catalog, the splits (a counter, not an event).
    let open_seconds = opened.elapsed().as_secs_f64();
    let df = match &cfg.dataflow {
        None => ctx
            .sql_with_options(&cfg.sql, query_only())
            .await
            .map_err(|e| Error::Usage(format!("the query: {}", one_line(&e))))?,
        // Every step built (not run) first, so an unknown table or column is the user's error
        // before any run is made.
        Some(flow) => {
            let mut dfs = HashMap::new();
            let mut last = None;
            for st in &flow.steps {
                let d = build_step(&ctx, st, &dfs).await.map_err(|e| {
                    Error::Usage(format!(
                        "{} line {}: step {}: {}",
                        flow.file,
                        st.line,
                        st.name,
                        one_line(&e)
                    ))
                })?;
                dfs.insert(st.name.clone(), d.clone());
                last = Some(d);
            }
            last.ok_or_else(|| Error::Usage(format!("{}: no steps", flow.file)))?
        }
    };
    let logical = df.logical_plan().display_indent().to_string();

    let mut rec = record::begin(cfg)?;
    let clock = rec.start_clock()?;
    log.set_clock(clock.clone());
    let mut phases = Vec::new();
    let t0 = clock.now_ns();
    // A dataflow: each step run to its end in order, its result held for the next steps.
    let mut df = df;
    let mut step_error = None;
    let mut interrupted = false;
    if let Some(flow) = &cfg.dataflow {
        let mut done: HashMap<String, DataFrame> = HashMap::new();
        for st in &flow.steps {
            // Ctrl-C between steps (a step itself runs to its end).
            if cfg.stop.as_ref().is_some_and(|s| s.is_set()) {
                interrupted = true;
                step_error = Some("interrupted (Ctrl-C or SIGTERM)".into());
                break;
            }
            let s0 = clock.now_ns();
            let r = run_step(&ctx, st, &done).await;
            phases.push(Phase {
                name: format!("step:{}", st.name),
                start_ns: s0,
                end_ns: clock.now_ns(),
                rows: r.as_ref().map_or(0, |(_, n)| *n),
                failed: r.is_err(),
            });
            match r {
                Ok((d, _)) => {
                    done.insert(st.name.clone(), d.clone());
                    df = d;
                }
                Err(e) => {
                    step_error = Some(format!(
                        "{} line {}: step {}: {}",
                        flow.file,
                        st.line,
                        st.name,
                        one_line(&e)
                    ));
                    break;
                }
            }
        }
    }
    // On a cluster: the database tables staged, then the query planned on the cluster's context.
    let mut exec_ctx = ctx.clone();
    let mut job_name: Option<String> = None;
    if let Some(c) = &cluster {
        let staging = on_cluster(cfg, &ctx, df.clone(), c, &exported, &clock, &mut phases);
        tokio::pin!(staging);
        let r = loop {
            tokio::select! {
                r = &mut staging => break Some(r),
                _ = tokio::time::sleep(std::time::Duration::from_millis(100)) => {
                    if cfg.stop.as_ref().is_some_and(|s| s.is_set()) {
                        break None;
                    }
                }
            }
        };
        match r {
            None => {
                interrupted = true;
                step_error = Some("interrupted (Ctrl-C or SIGTERM)".into());
            }
            Some(Err(e)) => step_error = Some(e),
            Some(Ok((remote, remote_df, job))) => {
                exec_ctx = remote;
                df = remote_df;
                job_name = Some(job);
            }
        }
    }
    let p0 = clock.now_ns();
    let planned = match step_error {
        Some(e) => Err(e),
        None => df
            .create_physical_plan()
            .await
            .map_err(|e| format!("planning the query: {}", one_line(&e))),
    };
    let t1 = clock.now_ns();
    phases.push(Phase {
        name: "plan".into(),
        start_ns: p0,
        end_ns: t1,
        rows: 0,
        failed: planned.is_err(),
    });
    let mut detail: Option<String> = None;
    let mut rows = 0u64;
    let mut first: Vec<RecordBatch> = Vec::new();
    let mut shown_rows = 0usize;
    let mut write_ns = 0u64;
    let mut out_path = None;
    let mut plan_text = format!("logical plan:\n{logical}");
    let mut out_span: Option<(u64, u64)> = None;
    match planned {
        Err(e) => detail = Some(e),
        Ok(plan) => {
            crate::pg::arm(&plan);
            let mut out = match &cfg.out {
                Some(p) => match Out::create(p, &plan.schema()) {
                    Ok(o) => Some(o),
                    Err(e) => {
                        detail = Some(e.to_string());
                        None
                    }
                },
                None => None,
            };
            if detail.is_none() {
                let t2 = clock.now_ns();
                let stream = execute_stream(plan.clone(), exec_ctx.task_ctx());
                match stream {
                    Err(e) => detail = Some(format!("running the query: {}", one_line(&e))),
                    Ok(mut stream) => {
                        loop {
                            // Ctrl-C is looked at every 100 ms, also while an operator (a join's
                            // build side, a sort) holds back the first batch.
                            let next = tokio::time::timeout(
                                std::time::Duration::from_millis(100),
                                stream.next(),
                            )
                            .await;
                            if cfg.stop.as_ref().is_some_and(|s| s.is_set()) {
                                interrupted = true;
                                detail = Some("interrupted (Ctrl-C or SIGTERM)".into());
                                break;
                            }
                            let b = match next {
                                Err(_) => continue,
                                Ok(None) => break,
                                Ok(Some(b)) => b,
                            };
                            let b = match b {
                                Ok(b) => b,
                                Err(e) => {
                                    detail = Some(format!("running the query: {}", one_line(&e)));
                                    break;
                                }
                            };
                            rows += b.num_rows() as u64;
                            if shown_rows < cfg.show && b.num_rows() > 0 {
                                let n = (cfg.show - shown_rows).min(b.num_rows());
                                first.push(b.slice(0, n));
                                shown_rows += n;
                            }
                            if let Some(o) = out.as_mut() {
                                let w0 = clock.now_ns();
                                out_span.get_or_insert((w0, w0));
                                let r = o.write(&b);
                                write_ns += clock.now_ns() - w0;
                                if let Err(e) = r {
                                    detail = Some(format!("writing --out: {e}"));
                                    break;
                                }
                            }
                        }
                    }
                }
                // Partitions a LIMIT left unread stop once their next batch finds no reader.
                log.wait_idle(std::time::Duration::from_secs(10));
                let t3 = clock.now_ns();
                phases.push(Phase {
                    name: "execute".into(),
                    start_ns: t2,
                    end_ns: t3,
                    rows,
                    failed: detail.is_some(),
                });
                // Only a complete result reaches --out; otherwise `out` is dropped and its
                // partial file removed.
                if let (None, Some(o)) = (&detail, out.take()) {
                    let c0 = clock.now_ns();
                    let (s0, _) = out_span.unwrap_or((c0, c0));
                    match o.commit() {
                        Ok(p) => out_path = Some(p),
                        Err(e) => detail = Some(format!("writing --out: {e}")),
                    }
                    let c1 = clock.now_ns();
                    write_ns += c1 - c0;
                    phases.push(Phase {
                        name: "output".into(),
                        start_ns: s0,
                        end_ns: c1,
                        rows,
                        failed: detail.is_some(),
                    });
                }
            }
            plan_text = format!(
                "logical plan:\n{logical}\nphysical plan (with metrics):\n{}",
                DisplayableExecutionPlan::with_metrics(plan.as_ref()).indent(true)
            );
        }
    }
    // An interrupted cluster job goes on running on the cluster unless it is cancelled there.
    if let (true, Some(c), Some(job)) = (interrupted, &cluster, &job_name) {
        let said = match cancel_job(&c.scheduler, job).await {
            Ok(Some(id)) => format!("; job {id} cancelled on the scheduler"),
            Ok(None) => "; the scheduler lists no such job (never submitted)".to_string(),
            Err(e) => format!("; the job could not be cancelled on the scheduler: {e}"),
        };
        if let Some(d) = detail.as_mut() {
            d.push_str(&said);
        }
    }
    let end = clock.now_ns();
    phases.push(Phase {
        name: record::QUERY_EVENT.into(),
        start_ns: t0,
        end_ns: end,
        rows,
        failed: detail.is_some(),
    });
    let parts = log.parts();
    let scans: Vec<ScanSummary> = log
        .plans()
        .into_iter()
        .map(|p| {
            let mine = parts.iter().filter(|x| x.label == p.label);
            // The SQL as sent: with the join's filter when there was one.
            let sent: Vec<String> = p
                .sql
                .iter()
                .enumerate()
                .map(|(i, planned)| {
                    mine.clone()
                        .find(|x| x.partition as usize == i)
                        .map_or_else(|| planned.clone(), |x| x.sql.clone())
                })
                .collect();
            ScanSummary {
                dynamic: mine.clone().find_map(|x| x.dynamic.clone()),
                filter_wait_s: mine
                    .clone()
                    .map(|x| x.filter_wait_ns as f64 / 1e9)
                    .fold(0.0, f64::max),
                rows: mine.clone().map(|x| x.rows).sum(),
                bytes: mine.map(|x| x.bytes).sum(),
                table: p.label,
                source: p.source,
                partitions: p.sql.len(),
                columns: p.columns,
                pushed: p.pushed,
                kept: p.kept,
                limit: p.limit,
                split: p.split,
                sql: sent,
            }
        })
        .collect();
    let seconds = end.saturating_sub(t0) as f64 / 1e9;
    let shown = if first.is_empty() {
        String::new()
    } else {
        pretty_format_batches(&first)
            .map(|t| t.to_string())
            .unwrap_or_else(|e| format!("(cannot show the rows: {e})"))
    };
    let (run, events) = record::finish(
        rec,
        Finish {
            phases: &phases,
            parts: &parts,
            scans: &scans,
            rows,
            seconds,
            write_seconds: write_ns as f64 / 1e9,
            open_seconds,
            plan: plan_text.clone(),
            cfg,
        },
        detail.clone(),
        interrupted,
    )?;
    Ok(QueryResult {
        run: run.path.clone(),
        outcome: if interrupted {
            Outcome::Interrupted
        } else if detail.is_some() {
            Outcome::Failed
        } else {
            Outcome::Complete
        },
        detail,
        rows,
        shown,
        shown_rows,
        out: out_path,
        scans,
        plan: plan_text,
        events,
        seconds,
    })
}

/// Runs one step of a dataflow to its end: its result in memory (a table the next steps read) and
/// its row count.
async fn run_step(
    ctx: &SessionContext,
    st: &Step,
    done: &HashMap<String, DataFrame>,
) -> datafusion::error::Result<(DataFrame, u64)> {
    let d = build_step(ctx, st, done).await?;
    let schema = Arc::new(d.schema().as_arrow().clone());
    let batches = d.collect().await?;
    let rows = batches.iter().map(|b| b.num_rows() as u64).sum();
    let schema = batches.first().map_or(schema, |b| b.schema());
    let table = MemTable::try_new(schema, vec![batches])?;
    Ok((ctx.read_table(Arc::new(table))?, rows))
}

/// One query, no DDL, DML or other statements.
fn query_only() -> SQLOptions {
    SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(false)
}

/// `--engine ballista` in a build without the cluster engine is the user's error; a scheduler
/// that does not answer is named before any run is made.
fn reachable(scheduler: &str) -> Result<(), Error> {
    #[cfg(feature = "ballista")]
    {
        dbscope_cluster::reachable_scheduler(scheduler)
            .map(|_| ())
            .map_err(|e| Error::Source(e.to_string()))
    }
    #[cfg(not(feature = "ballista"))]
    {
        let _ = scheduler;
        Err(Error::Usage(
            "this dbscope was built without the cluster engine (Apache DataFusion Ballista); \
             build it with `cargo build --release --features cluster` for --engine ballista"
                .into(),
        ))
    }
}

/// The stage directory of a cluster run: beside the run directory (so on its file system, which
/// the executors must see at the same path), removed when the query ends.
fn stage_dir(run: &std::path::Path) -> Result<tempfile::TempDir, Error> {
    let parent = match run.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let bad = |e: std::io::Error| {
        Error::Input(format!(
            "{}: cannot make the stage directory: {e}",
            parent.display()
        ))
    };
    std::fs::create_dir_all(&parent).map_err(bad)?;
    let parent = std::fs::canonicalize(&parent).map_err(bad)?;
    tempfile::Builder::new()
        .prefix(".dbscope-stage-")
        .tempdir_in(&parent)
        .map_err(bad)
}

/// A cluster run: the scheduler, the scans the local planning makes (what is staged), and the
/// stage directory the executors read.
struct Cluster {
    scheduler: String,
    seen: Seen,
    stage: PathBuf,
}

/// Stages every database table the query reads (all at once, each by its scan partitions: one
/// `stage:TABLE` phase each), then registers the staged tables, the file sources and the exported
/// runs with a context on the cluster and plans the query there.
async fn on_cluster(
    cfg: &QueryConfig,
    local: &SessionContext,
    local_df: DataFrame,
    c: &Cluster,
    exported: &[(String, PathBuf)],
    clock: &dbscope_core::RunClock,
    phases: &mut Vec<Phase>,
) -> Result<(SessionContext, DataFrame, String), String> {
    // Planning here calls each database table's scan with the projection and filters the query
    // pushes: those scans are what is staged.
    local_df
        .create_physical_plan()
        .await
        .map_err(|e| format!("planning the query: {}", one_line(&e)))?;
    let scans = crate::stage::scans_to_stage(local, &c.seen).await?;
    let runs = scans.into_iter().map(|(label, plan)| async move {
        let dir = c.stage.join(&label);
        let s0 = clock.now_ns();
        let r = crate::stage::stage(local, &label, plan, &dir).await;
        (label, dir, s0, clock.now_ns(), r)
    });
    let mut staged = Vec::new();
    let mut first_err = None;
    for (label, dir, s0, s1, r) in futures::future::join_all(runs).await {
        phases.push(Phase {
            name: format!("stage:{label}"),
            start_ns: s0,
            end_ns: s1,
            rows: r.as_ref().map_or(0, |(rows, _)| *rows),
            failed: r.is_err(),
        });
        match r {
            Ok(_) => staged.push((label, dir)),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    let job = format!(
        "dbscope query [{}-{}]",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    let remote = remote_context(&c.scheduler, &job).await?;
    let reg = |e: datafusion::error::DataFusionError| format!("on the cluster: {}", one_line(&e));
    for (label, dir) in &staged {
        if let Some((schema, _)) = label.split_once('.') {
            ensure_schema(&remote, schema).map_err(|e| e.to_string())?;
        }
        remote
            .register_parquet(
                label.as_str(),
                &dir.to_string_lossy(),
                datafusion::prelude::ParquetReadOptions::default(),
            )
            .await
            .map_err(reg)?;
    }
    for s in &cfg.sources {
        match kind(s).map_err(|e| e.to_string())? {
            Kind::File(path) => {
                // The executors resolve relative paths from their own directory.
                let abs = std::path::absolute(&path)
                    .map_err(|e| format!("{path}: {e}"))?
                    .to_string_lossy()
                    .to_string();
                files::register(&remote, &s.name, &abs)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Kind::Run(_) => {
                let out = exported
                    .iter()
                    .find(|(n, _)| *n == s.name)
                    .map(|(_, p)| p.to_string_lossy().to_string())
                    .ok_or_else(|| format!("run source {} was not exported", s.name))?;
                remote
                    .register_parquet(
                        s.name.as_str(),
                        &out,
                        datafusion::prelude::ParquetReadOptions::default(),
                    )
                    .await
                    .map_err(reg)?;
            }
            Kind::Postgres { .. } | Kind::MySql { .. } | Kind::Sqlite { .. } => {}
        }
    }
    let df = remote
        .sql_with_options(&cfg.sql, query_only())
        .await
        .map_err(|e| format!("planning the query on the cluster: {}", one_line(&e)))?;
    Ok((remote, df, job))
}

#[cfg(feature = "ballista")]
async fn remote_context(scheduler: &str, job: &str) -> Result<SessionContext, String> {
    dbscope_cluster::remote_context(scheduler, job)
        .await
        .map_err(|e| e.to_string())
}

#[cfg(feature = "ballista")]
async fn cancel_job(scheduler: &str, job: &str) -> Result<Option<String>, String> {
    dbscope_cluster::cancel_job(scheduler, job)
        .await
        .map_err(|e| e.to_string())
}

#[cfg(not(feature = "ballista"))]
async fn cancel_job(_scheduler: &str, _job: &str) -> Result<Option<String>, String> {
    Err("this dbscope was built without the cluster engine".into())
}

#[cfg(not(feature = "ballista"))]
async fn remote_context(_scheduler: &str, _job: &str) -> Result<SessionContext, String> {
    Err("this dbscope was built without the cluster engine".into())
}
