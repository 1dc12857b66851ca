//! One query: the sources registered with DataFusion, the SQL planned and run, the result shown
//! and written, everything recorded as a run.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::catalog::MemorySchemaProvider;
use datafusion::datasource::MemTable;
use datafusion::execution::context::SQLOptions;
use datafusion::physical_plan::display::DisplayableExecutionPlan;
use datafusion::physical_plan::execute_stream;
use datafusion::prelude::{DataFrame, SessionContext};
use dbscope_core::Outcome;
use futures::StreamExt;

pub use crate::config::{QueryConfig, ScanSummary};
use crate::dataflow::{build_step, Step};
use crate::error::one_line;
use crate::output::{self, Out};
use crate::pg::{PgSource, PgTable};
use crate::record::{self, Finish, Phase};
use crate::scanlog::ScanLog;
use crate::source::{kind, Kind};
use crate::sqlite::{self, SqliteTable};
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

async fn register(
    ctx: &SessionContext,
    cfg: &QueryConfig,
    log: &Arc<ScanLog>,
    held: &mut Vec<Held>,
) -> Result<(), Error> {
    let df = |e: datafusion::error::DataFusionError| Error::Usage(e.to_string());
    let schema = |name: &str| -> Result<(), Error> {
        let cat = ctx
            .catalog("datafusion")
            .ok_or_else(|| Error::Usage("DataFusion has no default catalog".into()))?;
        if cat.schema(name).is_none() {
            cat.register_schema(name, Arc::new(MemorySchemaProvider::new()))
                .map_err(df)?;
        }
        Ok(())
    };
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
                    if label.contains('.') {
                        schema(&s.name)?;
                    }
                    let t = PgTable::open(&src, &label, &table)?;
                    ctx.register_table(label.as_str(), Arc::new(t))
                        .map_err(df)?;
                }
            }
            Kind::Sqlite { path, table } => {
                for t in sqlite::tables(&path, table.as_deref())? {
                    let label = match &table {
                        Some(_) => s.name.clone(),
                        None => {
                            schema(&s.name)?;
                            format!("{}.{t}", s.name)
                        }
                    };
                    let p = SqliteTable::open(&path, &label, &t, log.clone())?;
                    ctx.register_table(label.as_str(), Arc::new(p))
                        .map_err(df)?;
                }
            }
            Kind::File(path) => {
                files::register(ctx, &s.name, &path).await?;
            }
            Kind::Run(dir) => {
                let tmp = tempfile::Builder::new()
                    .prefix("dbscope-hub-run-")
                    .tempdir()
                    .map_err(|e| Error::Input(format!("a temporary directory: {e}")))?;
                files::register_run(ctx, &s.name, &dir, tmp.path()).await?;
                held.push(Held::Tmp(tmp));
            }
        }
    }
    Ok(())
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
        if let Held::Pg(p) = h {
            p.close();
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
    let ctx = SessionContext::new();
    let opened = std::time::Instant::now();
    register(&ctx, cfg, log, held).await?;
    // Before the run's clock: connecting, the catalog, the splits (a counter, not an event).
    let open_seconds = opened.elapsed().as_secs_f64();
    let opts = SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(false);
    let df = match &cfg.dataflow {
        None => ctx
            .sql_with_options(&cfg.sql, opts)
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
                let stream = execute_stream(plan.clone(), ctx.task_ctx());
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
            ScanSummary {
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
                sql: p.sql,
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
