//! A Q1 job on Ballista (or in-process DataFusion) recorded as a run, like the local job's
//! (`dbscope_tpch::record`): one `q1` event per job on session 0, and one event per task the
//! scheduler reported — `map` for the stages that scan the files, `reduce` for the others — on
//! the session numbered by its stage, with the executor that ran it as `obj` (its number in the
//! manifest's `executors`, from the scheduler's task ledger, `crate::ledger`), the task id, input
//! rows and bytes written as the event's parameters and the output rows as its rows; a task that
//! failed carries Ballista's reason
//! (`ExecutorLost`, `FetchPartitionError`, …) as its outcome. The manifest holds the plan, the
//! cluster's shape and versions; `counters.json` a `cluster` section with tables of stages and
//! executors. So `report`, `compare` and the HTML report apply as to any run.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, Utc};
use dbscope_core::{
    Column, Counter, CounterSection, CounterTable, CounterValue, Event, EventParams, Manifest,
    Outcome, Recording, RunDir, TargetInfo, WorkloadInfo,
};
use serde_json::json;

use crate::job::ClusterQ1Config;
use crate::ledger::LedgerTask;
use crate::monitor::{stage_kind, ExecutorInfo, JobReport, TaskStatus};
use crate::node::{BALLISTA_VERSION, DATAFUSION_VERSION};
use crate::plan::Lineitem;

/// One job (a repetition) to record.
#[derive(Clone, Debug)]
pub struct RecordedJob {
    /// When it was submitted (ns since the Unix epoch).
    pub submitted_unix_ns: i64,
    /// From submission to the end, success or not.
    pub elapsed_ns: u64,
    /// Result groups (0 when it failed).
    pub groups: u64,
    /// Why it failed, if it did (the job's error or a wrong answer).
    pub failure: Option<String>,
    /// What the scheduler said (None in process).
    pub report: Option<JobReport>,
}

/// What the run is about.
#[derive(Clone, Debug)]
pub struct RecordSpec<'a> {
    /// `ballista` or `datafusion`.
    pub engine: &'a str,
    /// The job's configuration.
    pub config: &'a ClusterQ1Config,
    /// The input.
    pub input: &'a Lineitem,
    /// The command line (passwords redacted by the caller).
    pub command_line: Vec<String>,
    /// The plan as planned on the client.
    pub plan: &'a str,
    /// Rows aggregated (from the answer; 0 when no job succeeded).
    pub rows_aggregated: u64,
}

/// Milliseconds since the epoch → ns after `origin_ns`, clamped at 0 (clocks of other nodes may
/// be behind this one's).
fn rel_ns(ms: u64, origin_ns: i64) -> u64 {
    (ms as i128 * 1_000_000 - origin_ns as i128).max(0) as u64
}

/// Writes the run into `out` (which must not hold one yet).
pub fn record_cluster_q1(
    out: &Path,
    spec: &RecordSpec<'_>,
    jobs: &[RecordedJob],
    started: DateTime<Utc>,
) -> dbscope_core::Result<RunDir> {
    let origin_ns = started.timestamp_nanos_opt().unwrap_or(0);
    let cfg = spec.config;
    let last_report = jobs.iter().rev().find_map(|j| j.report.as_ref());
    // The executors listed when the job was submitted, then any the task ledger names that were
    // not (registered later); a task event's `obj` is its executor's number in this list.
    let mut executors: Vec<ExecutorInfo> =
        last_report.map(|r| r.executors.clone()).unwrap_or_default();
    for t in jobs
        .iter()
        .filter_map(|j| j.report.as_ref()?.ledger.as_ref())
        .flatten()
    {
        if !executors.iter().any(|e| e.id == t.executor_id) {
            executors.push(ExecutorInfo {
                id: t.executor_id.clone(),
                host: "?".into(),
                ..ExecutorInfo::default()
            });
        }
    }
    let ledger_missing = jobs
        .iter()
        .any(|j| j.report.as_ref().is_some_and(|r| r.ledger.is_none()));
    // A figure only the task ledger gives: none when a scheduler kept no ledger.
    let from_ledger = |v: i64| {
        if ledger_missing {
            CounterValue::None
        } else {
            CounterValue::Int(v)
        }
    };
    let mut params: BTreeMap<String, serde_json::Value> = BTreeMap::from([
        ("engine".to_string(), spec.engine.into()),
        ("way".to_string(), cfg.way.name().into()),
        ("combiner".to_string(), cfg.combiner.into()),
        ("delta_days".to_string(), cfg.delta_days.into()),
        ("map_tasks".to_string(), (cfg.map_tasks as u64).into()),
        ("format".to_string(), spec.input.format.name().into()),
        (
            "inputs".to_string(),
            spec.input
                .files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .into(),
        ),
        ("repeat".to_string(), (jobs.len() as u64).into()),
        ("rows_aggregated".to_string(), spec.rows_aggregated.into()),
        ("plan".to_string(), spec.plan.into()),
        ("ballista_version".to_string(), BALLISTA_VERSION.into()),
        ("datafusion_version".to_string(), DATAFUSION_VERSION.into()),
    ]);
    if let Some(r) = last_report {
        params.insert(
            "executors".into(),
            executors
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    json!({"number": i + 1, "id": e.id, "host": e.host, "port": e.port,
                           "slots": e.slots})
                })
                .collect::<Vec<_>>()
                .into(),
        );
        params.insert(
            "slots".into(),
            r.executors
                .iter()
                .map(|e| e.slots as u64)
                .sum::<u64>()
                .into(),
        );
        params.insert(
            "job_ids".into(),
            jobs.iter()
                .filter_map(|j| j.report.as_ref().and_then(|r| r.job_id.clone()))
                .collect::<Vec<_>>()
                .into(),
        );
        params.insert(
            "stage_plans".into(),
            r.stages
                .iter()
                .map(|s| json!({"stage": s.stage_id, "kind": stage_kind(s), "plan": s.stage_plan}))
                .collect::<Vec<_>>()
                .into(),
        );
        if !r.unavailable.is_empty() {
            params.insert("scheduler_api_errors".into(), r.unavailable.clone().into());
        }
    }
    let mut manifest = Manifest::new(
        "tpch q1",
        WorkloadInfo {
            name: format!("tpch-q1-{}-{}", spec.engine, cfg.way.name()),
            params,
        },
        0,
    );
    manifest.command_line = spec.command_line.clone();
    manifest.started_utc = started;
    manifest.clock_origin_unix_ns = origin_ns;
    if spec.engine == "ballista" {
        manifest.target = Some(TargetInfo {
            kind: "ballista".into(),
            location: crate::job::scheduler_addr(&cfg.scheduler).to_string(),
            server_version: last_report
                .and_then(|r| r.scheduler_version.clone())
                .unwrap_or_default(),
            ..TargetInfo::default()
        });
    }
    let mut rec = Recording::begin(out, manifest)?;
    let names = rec.names().clone();
    let (q1, task_p, rows_in_p, bytes_p) = (
        names.intern("q1"),
        names.intern("task"),
        names.intern("rows_in"),
        names.intern("bytes_out"),
    );
    // Per executor: tasks, failed tasks, bytes written.
    let mut per_exec = vec![(0i64, 0i64, 0i64); executors.len()];
    let mut events: Vec<(Event, EventParams)> = Vec::new();
    let mut stage_rows: Vec<Vec<CounterValue>> = Vec::new();
    let (mut tasks, mut failed_tasks, mut shuffled_rows, mut shuffled_bytes) =
        (0u64, 0u64, 0u64, 0u64);
    let mut compute_ns = 0u64;
    for (rep, job) in jobs.iter().enumerate() {
        let at = (job.submitted_unix_ns as i128 - origin_ns as i128).max(0) as u64;
        events.push((
            Event {
                session: 0,
                name: q1,
                start_ns: at,
                duration_ns: job.elapsed_ns.max(1),
                intended_start_ns: None,
                outcome: match &job.failure {
                    None => 0,
                    Some(_) => names.intern_outcome("job failed"),
                },
                flags: 0,
                rows: job.groups.min(u32::MAX as u64) as u32,
            },
            EventParams::default(),
        ));
        let Some(report) = &job.report else { continue };
        let ledger: BTreeMap<(u32, u32), &LedgerTask> = report
            .ledger
            .iter()
            .flatten()
            .map(|t| ((t.stage, t.task), t))
            .collect();
        for stage in &report.stages {
            let kind = stage_kind(stage);
            let name = names.intern(kind);
            let stage_id: u32 = stage.stage_id.parse().unwrap_or(0);
            let mut stage_failed = 0u64;
            let mut stage_bytes: Option<u64> = None;
            for t in stage.tasks.iter().flatten() {
                tasks += 1;
                let outcome = match &t.status {
                    TaskStatus::Successful => 0,
                    TaskStatus::Running => names.intern_outcome("unfinished"),
                    TaskStatus::Failed { reason, .. } => {
                        stage_failed += 1;
                        names.intern_outcome(reason)
                    }
                };
                // A task that failed before it started has no execution times.
                let start_ms = [t.start_exec_time, t.launch_time, t.scheduled_time]
                    .into_iter()
                    .find(|&v| v > 0)
                    .unwrap_or(0);
                let end_ms = [t.end_exec_time, t.finish_time]
                    .into_iter()
                    .find(|&v| v > 0)
                    .unwrap_or(start_ms);
                let start_ns = rel_ns(start_ms, origin_ns);
                let noted = ledger.get(&(stage_id, t.id as u32));
                compute_ns += noted.map_or(0, |n| n.compute_ns);
                let exec = noted.and_then(|n| executors.iter().position(|e| e.id == n.executor_id));
                if let (Some(n), Some(x)) = (noted, exec) {
                    per_exec[x].0 += 1;
                    per_exec[x].1 += i64::from(outcome != 0);
                    per_exec[x].2 += n.bytes as i64;
                    *stage_bytes.get_or_insert(0) += n.bytes;
                }
                let p = EventParams {
                    obj: exec.map(|x| x as i64 + 1),
                    p: [
                        Some(t.id as i64),
                        Some(t.input_rows as i64),
                        noted.map(|n| n.bytes as i64),
                    ],
                    p_names: [task_p, rows_in_p, bytes_p],
                };
                events.push((
                    Event {
                        session: stage_id,
                        name,
                        start_ns,
                        duration_ns: rel_ns(end_ms, origin_ns).saturating_sub(start_ns).max(1),
                        intended_start_ns: None,
                        outcome,
                        flags: 0,
                        rows: t.output_rows.min(u32::MAX as usize) as u32,
                    },
                    p,
                ));
            }
            failed_tasks += stage_failed;
            if kind == "map" {
                shuffled_rows += stage.output_rows as u64;
                shuffled_bytes += stage_bytes.unwrap_or(0);
            }
            stage_rows.push(vec![
                CounterValue::Int(rep as i64 + 1),
                CounterValue::Text(stage.stage_id.clone()),
                CounterValue::Text(kind.into()),
                CounterValue::Text(stage.stage_status.clone()),
                CounterValue::Int(stage.tasks.iter().flatten().count() as i64),
                CounterValue::Int(stage_failed as i64),
                CounterValue::Int(stage.input_rows as i64),
                CounterValue::Int(stage.output_rows as i64),
                stage_bytes.map_or(CounterValue::None, |b| CounterValue::Int(b as i64)),
                stage
                    .elapsed_compute
                    .clone()
                    .map_or(CounterValue::None, CounterValue::Text),
            ]);
        }
    }
    events.sort_by_key(|(e, _)| e.start_ns);
    let (evs, ps): (Vec<Event>, Vec<EventParams>) = events.into_iter().unzip();
    rec.write_block_with_params(&evs, &ps)?;
    if let Some(r) = last_report {
        let col = |k: &str, l: &str| Column::new(k, l, "");
        let section = CounterSection {
            key: "cluster".into(),
            title: format!(
                "Ballista cluster at {}",
                crate::job::scheduler_addr(&cfg.scheduler)
            ),
            final_counts: true,
            notes: r
                .unavailable
                .iter()
                .map(|e| format!("not read from the scheduler: {e}"))
                .chain([if ledger_missing {
                    "This scheduler keeps no task ledger (a stock Ballista scheduler: its REST \
                     API does not say which executor ran a task or how many bytes it wrote), so \
                     those are not recorded; `dbscope cluster scheduler` records them."
                        .to_string()
                } else {
                    "Which executor ran each task (the events' obj, numbered as in the \
                     manifest's executors) and the bytes it wrote (bytes_out) are what the \
                     executor reported to dbscope's scheduler at the task's end (its task \
                     ledger); rows in and out are Ballista's REST API's."
                        .to_string()
                }])
                .collect(),
            counters: vec![
                Counter::new(
                    "executors",
                    "executors",
                    CounterValue::Int(r.executors.len() as i64),
                    "",
                ),
                Counter::new(
                    "slots",
                    "task slots",
                    CounterValue::Int(r.executors.iter().map(|e| e.slots as i64).sum()),
                    "",
                ),
                Counter::new("tasks", "tasks", CounterValue::Int(tasks as i64), ""),
                Counter::new(
                    "tasks_failed",
                    "tasks failed (lost, retried)",
                    CounterValue::Int(failed_tasks as i64),
                    "",
                ),
                Counter::new(
                    "shuffled_rows",
                    "rows written to the shuffle by the map stages",
                    CounterValue::Int(shuffled_rows as i64),
                    "rows",
                ),
                Counter::new(
                    "shuffled_bytes",
                    "bytes written to the shuffle by the map stages (Arrow IPC, every attempt)",
                    from_ledger(shuffled_bytes as i64),
                    "bytes",
                ),
                Counter::new(
                    "compute_seconds",
                    "the tasks' compute time (DataFusion's elapsed_compute over every operator of \
                     every task; the seed's Cumulative CPU)",
                    if ledger_missing {
                        CounterValue::None
                    } else {
                        CounterValue::Float(compute_ns as f64 / 1e9)
                    },
                    "s",
                )
                .decimals(3),
                Counter::new(
                    "job_status",
                    "last job's status",
                    r.status
                        .clone()
                        .map_or(CounterValue::None, CounterValue::Text),
                    "",
                ),
            ],
            tables: vec![
                CounterTable {
                    key: "stages".into(),
                    title: "stages (as the scheduler reported them)".into(),
                    columns: vec![
                        col("job", "job"),
                        col("stage", "stage"),
                        col("kind", "kind"),
                        col("status", "status"),
                        col("tasks", "tasks"),
                        col("failed", "failed"),
                        Column::new("input_rows", "rows in", "rows"),
                        Column::new("output_rows", "rows out", "rows"),
                        Column::new("bytes_out", "bytes written", "bytes"),
                        col("elapsed", "elapsed (first task start to last end)"),
                    ],
                    rows: stage_rows,
                },
                CounterTable {
                    key: "executors".into(),
                    title: "executors".into(),
                    columns: vec![
                        col("number", "#"),
                        col("id", "id"),
                        col("address", "address"),
                        col("slots", "slots"),
                        col("tasks", "tasks"),
                        col("failed", "failed"),
                        Column::new("bytes_out", "bytes written", "bytes"),
                    ],
                    rows: executors
                        .iter()
                        .zip(&per_exec)
                        .enumerate()
                        .map(|(i, (e, &(n, failed, bytes)))| {
                            vec![
                                CounterValue::Int(i as i64 + 1),
                                CounterValue::Text(e.id.clone()),
                                CounterValue::Text(if e.port == 0 {
                                    "(not listed when the job was submitted)".into()
                                } else {
                                    format!("{}:{}", e.host, e.port)
                                }),
                                CounterValue::Int(e.slots as i64),
                                from_ledger(n),
                                from_ledger(failed),
                                from_ledger(bytes),
                            ]
                        })
                        .collect(),
                },
            ],
        };
        rec.write_counters(section)?;
    }
    let failure = jobs.iter().find_map(|j| j.failure.clone());
    match failure {
        None => rec.finish(Outcome::Complete, None),
        Some(why) => rec.finish(Outcome::Failed, Some(why)),
    }
}
