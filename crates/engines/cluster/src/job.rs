//! Q1 as a job on a Ballista cluster: the SQL way (the client sends the logical plan, the scheduler
//! plans it) or the mapreduce way (the client sends the explicit physical plan), then the result.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use ballista::prelude::{SessionConfigExt, SessionContextExt};
use ballista_core::execution_plans::execute_physical_plan;
use datafusion::execution::SessionStateBuilder;
use datafusion::physical_plan::{displayable, ExecutionPlan};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_proto::protobuf::PhysicalPlanNode;
use std::sync::Arc;

use crate::answer::ClusterAnswer;
use crate::error::ClusterError;
use crate::monitor::{JobReport, Rest};
use crate::node::{parse_addr, runtime};
use crate::plan::{configure, local_context, mapreduce_plan, q1_sql, register_lineitem, Lineitem};

/// How Q1 is planned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    /// The official SQL text, planned by DataFusion on the scheduler ("Hive").
    Sql,
    /// The hand-written job's shape as an explicit physical plan.
    MapReduce,
}

impl Way {
    /// `sql` or `mapreduce`.
    pub fn name(self) -> &'static str {
        match self {
            Way::Sql => "sql",
            Way::MapReduce => "mapreduce",
        }
    }
}

/// A Q1 job on the cluster.
#[derive(Clone, Debug)]
pub struct ClusterQ1Config {
    /// The scheduler: `df://HOST:PORT` (Ballista's form) or `HOST:PORT`.
    pub scheduler: String,
    /// SQL or mapreduce.
    pub way: Way,
    /// Partial aggregation before the shuffle (mapreduce way only; the SQL planner always has it).
    pub combiner: bool,
    /// Q1's DELTA in days.
    pub delta_days: u32,
    /// Map tasks: the files are cut into this many splits; the shuffle has as many partitions.
    pub map_tasks: usize,
}

/// A finished job.
#[derive(Clone, Debug)]
pub struct ClusterQ1Output {
    /// The result.
    pub answer: ClusterAnswer,
    /// From submitting the plan to the last result row, on the client.
    pub elapsed: Duration,
    /// The physical plan (for the SQL way, as DataFusion plans it here; the scheduler plans the
    /// same text with the same settings).
    pub plan: String,
}

/// `df://HOST:PORT` or `HOST:PORT` → `HOST:PORT`.
pub fn scheduler_addr(given: &str) -> &str {
    given
        .strip_prefix("df://")
        .or_else(|| given.strip_prefix("http://"))
        .unwrap_or(given)
        .trim_end_matches('/')
}

/// The plan of the job, without running it (`--explain`).
pub fn explain(input: &Lineitem, cfg: &ClusterQ1Config) -> Result<String, ClusterError> {
    let rt = runtime()?;
    rt.block_on(async {
        let local = local_context(input, cfg.map_tasks).await?;
        let plan = local_plan(&local, cfg).await?;
        let text = displayable(plan.as_ref()).indent(true).to_string();
        Ok(text)
    })
}

async fn local_plan(
    local: &SessionContext,
    cfg: &ClusterQ1Config,
) -> Result<Arc<dyn ExecutionPlan>, ClusterError> {
    match cfg.way {
        Way::MapReduce => mapreduce_plan(local, cfg.delta_days, cfg.combiner, cfg.map_tasks).await,
        Way::Sql => local
            .sql(&q1_sql(cfg.delta_days))
            .await
            .map_err(|e| ClusterError::Plan(e.to_string()))?
            .create_physical_plan()
            .await
            .map_err(|e| ClusterError::Plan(e.to_string())),
    }
}

/// Runs the same plan in this process on plain DataFusion (no scheduler, no shuffle files, no
/// Flight): the baseline that shows what the cluster adds.
pub fn run_q1_in_process(
    input: &Lineitem,
    cfg: &ClusterQ1Config,
) -> Result<ClusterQ1Output, ClusterError> {
    let failed = |e: datafusion::error::DataFusionError| ClusterError::Job {
        scheduler: "(in process)".into(),
        detail: e.to_string(),
    };
    let rt = runtime()?;
    rt.block_on(async {
        let local = local_context(input, cfg.map_tasks).await?;
        let plan = local_plan(&local, cfg).await?;
        let plan_text = displayable(plan.as_ref()).indent(true).to_string();
        let t0 = Instant::now();
        let batches = datafusion::physical_plan::collect(plan, local.task_ctx())
            .await
            .map_err(failed)?;
        let elapsed = t0.elapsed();
        Ok(ClusterQ1Output {
            answer: ClusterAnswer::from_batches(&batches)?,
            elapsed,
            plan: plan_text,
        })
    })
}

fn now_unix_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// A job that ran on the cluster, whether it succeeded or not, with what the scheduler said about it.
#[derive(Debug)]
pub struct ClusterJob {
    /// The answer, or why the job failed.
    pub result: Result<ClusterQ1Output, ClusterError>,
    /// Stages, tasks and executors as the scheduler's REST API gave them.
    pub report: JobReport,
    /// When the plan was submitted (ns since the Unix epoch, this machine's clock).
    pub submitted_unix_ns: i64,
    /// From submitting the plan to the end, success or not, on the client.
    pub elapsed: Duration,
    /// The physical plan as planned on the client.
    pub plan: String,
    /// The unique job name the scheduler lists it under.
    pub job_name: String,
}

/// Checks that the scheduler at `scheduler` (`df://HOST:PORT` or `HOST:PORT`) accepts connections
/// (Ballista's own connection error is a debug dump) and returns its `HOST:PORT`.
pub fn reachable_scheduler(scheduler: &str) -> Result<String, ClusterError> {
    let addr = scheduler_addr(scheduler).to_string();
    let (_, _, sock) = parse_addr("--scheduler", &addr)?;
    TcpStream::connect_timeout(&sock, Duration::from_secs(5)).map_err(|e| {
        ClusterError::Unreachable {
            addr: addr.clone(),
            detail: e.to_string(),
        }
    })?;
    Ok(addr)
}

/// A DataFusion context whose queries run as jobs named `job_name` on the Ballista cluster of
/// `scheduler`: tables registered on it must be ones the scheduler can rebuild (listing tables of
/// Parquet or CSV files the executors can read at the same paths). Call inside a Tokio runtime.
pub async fn remote_context(
    scheduler: &str,
    job_name: &str,
) -> Result<SessionContext, ClusterError> {
    let addr = reachable_scheduler(scheduler)?;
    let config = SessionConfig::new_with_ballista()
        .with_information_schema(false)
        .with_ballista_job_name(job_name);
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .build();
    SessionContext::remote_with_state(&format!("df://{addr}"), state)
        .await
        .map_err(|e| ClusterError::Job {
            scheduler: addr,
            detail: e.to_string(),
        })
}

/// Cancels the job named `job_name` on the scheduler at `scheduler` (a query interrupted on the
/// client: Ballista goes on running a job whose result nobody reads); its id when found. Call
/// inside a Tokio runtime.
pub async fn cancel_job(scheduler: &str, job_name: &str) -> Result<Option<String>, ClusterError> {
    let addr = scheduler_addr(scheduler);
    Rest::new(addr)
        .cancel_named(job_name)
        .await
        .map_err(|e| ClusterError::Job {
            scheduler: addr.to_string(),
            detail: e.to_string(),
        })
}

/// Runs Q1 on the cluster and reads its result, while watching the job on the scheduler's REST
/// API (`progress` gets each new Hadoop-style line). An `Err` means the job could not be
/// submitted (scheduler unreachable, plan invalid); a job that failed on the cluster is an `Ok`
/// whose `result` holds the reason, with the tasks the scheduler reported.
pub fn run_q1(
    input: &Lineitem,
    cfg: &ClusterQ1Config,
    progress: impl FnMut(&str) + Send,
) -> Result<ClusterJob, ClusterError> {
    let addr = reachable_scheduler(&cfg.scheduler)?;
    let job_failed = |e: datafusion::error::DataFusionError| ClusterError::Job {
        scheduler: addr.clone(),
        detail: e.to_string(),
    };
    let submitted = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    // Unique, so the job can be found in the scheduler's list.
    let job_name = format!(
        "dbscope tpch q1 --way {}{} [{}-{submitted}]",
        cfg.way.name(),
        if cfg.combiner { "" } else { " --no-combiner" },
        std::process::id(),
    );
    let session_config = configure(SessionConfig::new_with_ballista(), cfg.map_tasks)
        .with_ballista_job_name(&job_name);
    let rt = runtime()?;
    rt.block_on(async {
        let local = local_context(input, cfg.map_tasks).await?;
        let plan = local_plan(&local, cfg).await?;
        let plan_text = displayable(plan.as_ref()).indent(true).to_string();
        let rest = Rest::new(&addr);
        let (done_tx, done_rx) = tokio::sync::watch::channel(false);
        let watcher = rest.watch(&job_name, done_rx, progress);
        let t0 = Instant::now();
        let t0_unix_ns = now_unix_ns();
        let job = async {
            let batches = match cfg.way {
                Way::Sql => {
                    let state = SessionStateBuilder::new()
                        .with_config(session_config)
                        .with_default_features()
                        .build();
                    let ctx = SessionContext::remote_with_state(&format!("df://{addr}"), state)
                        .await
                        .map_err(job_failed)?;
                    register_lineitem(&ctx, input).await?;
                    ctx.sql(&q1_sql(cfg.delta_days))
                        .await
                        .map_err(|e| ClusterError::Plan(e.to_string()))?
                        .collect()
                        .await
                        .map_err(job_failed)?
                }
                Way::MapReduce => {
                    let codec = session_config.ballista_physical_extension_codec();
                    let ballista = session_config.ballista_config();
                    let session_id = format!("dbscope-{}-{submitted}", std::process::id());
                    let stream = execute_physical_plan::<PhysicalPlanNode>(
                        format!("http://{addr}"),
                        &ballista,
                        plan,
                        codec.as_ref(),
                        session_id,
                        session_config,
                    )
                    .await
                    .map_err(job_failed)?;
                    datafusion::physical_plan::common::collect(stream)
                        .await
                        .map_err(job_failed)?
                }
            };
            Ok::<_, ClusterError>((batches, t0.elapsed()))
        };
        let (outcome, report) = tokio::join!(
            async {
                let r = job.await;
                // Stops the watcher after one last read, whether the job succeeded or not.
                let _ = done_tx.send(true);
                r
            },
            watcher
        );
        let elapsed = t0.elapsed();
        let result = outcome.and_then(|(batches, elapsed)| {
            Ok(ClusterQ1Output {
                answer: ClusterAnswer::from_batches(&batches)?,
                elapsed,
                plan: plan_text.clone(),
            })
        });
        Ok(ClusterJob {
            result,
            report,
            submitted_unix_ns: t0_unix_ns,
            elapsed,
            plan: plan_text,
            job_name,
        })
    })
}
