//! `dbscope cluster scheduler|executor` and `tpch q1 --engine ballista`, or how to build them.
//!
//! With the `cluster` feature the arguments are turned into dbscope-cluster calls; without it,
//! one error line says how to build it.

pub mod args;

use crate::cluster::args::ClusterArgs;
use crate::exit::Exit;
use crate::tpch::args::Q1Args;

#[cfg(not(feature = "cluster"))]
fn not_built() -> Exit {
    anyhow::anyhow!(
        "this dbscope was built without Ballista; build it with `cargo build --release --features cluster` (see docs/cluster.md)"
    )
    .into()
}

/// Runs a `cluster` subcommand.
#[cfg(not(feature = "cluster"))]
pub fn cmd_cluster(_: ClusterArgs) -> Result<u8, Exit> {
    Err(not_built())
}

/// `tpch q1 --engine ballista`.
#[cfg(not(feature = "cluster"))]
pub fn q1_on_cluster(_: Q1Args) -> Result<u8, Exit> {
    Err(not_built())
}

#[cfg(feature = "cluster")]
pub use with_cluster::{cmd_cluster, q1_on_cluster};

#[cfg(feature = "cluster")]
mod with_cluster {
    use std::io::Write;
    use std::time::Duration;

    use anyhow::Context;
    use dbscope_cluster::record::{record_cluster_q1, RecordSpec, RecordedJob};
    use dbscope_cluster::{
        differences_from_local, run_executor, run_scheduler, ClusterQ1Config, ClusterQ1Output,
        ExecutorOptions, Lineitem, SchedulerOptions, Way, BALLISTA_VERSION, DATAFUSION_VERSION,
    };
    use dbscope_tpch::answer::{compare, official_q1_sf1, SF1_LINEITEM_ROWS};
    use dbscope_tpch::q1::{self, Q1Config, Q1Progress, DEFAULT_DELTA};

    use super::*;
    use crate::cluster::args::ClusterCommand;
    use crate::common::{default_run_dir, redacted_command_line, say_recorded};
    use crate::exit::EXIT_FAILED;
    use crate::tpch::args::{EngineArg, WayArg};

    /// Runs a `cluster` subcommand.
    pub fn cmd_cluster(a: ClusterArgs) -> Result<u8, Exit> {
        match a.command {
            ClusterCommand::Scheduler(s) => {
                run_scheduler(
                    &SchedulerOptions {
                        bind: s.bind,
                        external_host: s.external_host,
                        executor_timeout_s: s.executor_timeout,
                    },
                    |addr| {
                        eprintln!(
                            "Ballista {BALLISTA_VERSION} scheduler (DataFusion {DATAFUSION_VERSION}) listening on {addr}; Ctrl-C stops it"
                        )
                    },
                )?;
            }
            ClusterCommand::Executor(e) => {
                let slots = e.slots;
                let work_dir = e.work_dir.clone();
                run_executor(
                    &ExecutorOptions {
                        scheduler: e.scheduler,
                        bind: e.bind,
                        grpc_port: e.grpc_port,
                        external_host: e.external_host,
                        slots,
                        work_dir: e.work_dir,
                        heartbeat_s: e.heartbeat,
                    },
                    |r| {
                        eprintln!(
                            "Ballista {BALLISTA_VERSION} executor: Arrow Flight on {}, gRPC port {}, {slots} slot(s), work dir {}, scheduler {}; Ctrl-C stops it",
                            r.flight,
                            r.grpc_port,
                            work_dir.display(),
                            r.scheduler
                        )
                    },
                )?;
            }
        }
        Ok(0)
    }

    /// `tpch q1 DIR --engine ballista --scheduler df://HOST:PORT --way sql|mapreduce`.
    pub fn q1_on_cluster(a: Q1Args) -> Result<u8, Exit> {
        let in_process = a.engine == EngineArg::Datafusion;
        let scheduler = match (&a.scheduler, in_process) {
            (Some(s), false) => s.clone(),
            (None, true) => String::new(),
            (None, false) => {
                return Err(anyhow::anyhow!(
                    "--engine ballista needs --scheduler df://HOST:PORT (start one with `dbscope cluster scheduler`)"
                )
                .into())
            }
            (Some(_), true) => {
                return Err(anyhow::anyhow!(
                    "--engine datafusion runs in this process: no --scheduler"
                )
                .into())
            }
        };
        let way = match a.way {
            WayArg::Sql => Way::Sql,
            WayArg::Mapreduce => Way::MapReduce,
        };
        if way == Way::Sql && a.no_combiner {
            return Err(anyhow::anyhow!(
                "--no-combiner applies to --way mapreduce: DataFusion's SQL planner always aggregates before the shuffle"
            )
            .into());
        }
        if a.no_mmap {
            return Err(anyhow::anyhow!(
                "--no-mmap applies to --engine local (DataFusion reads the files itself)"
            )
            .into());
        }
        let map_tasks = a
            .mappers
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
        if map_tasks == 0 || map_tasks > 4096 {
            return Err(anyhow::anyhow!("--mappers must be between 1 and 4096").into());
        }
        let inputs = q1::resolve_inputs(&a.inputs)?;
        let files: Vec<_> = inputs.iter().map(|i| i.path.clone()).collect();
        let lineitem = Lineitem::new(&files)?;
        let config = ClusterQ1Config {
            scheduler,
            way,
            combiner: !a.no_combiner,
            delta_days: a.delta,
            map_tasks,
        };
        if a.explain {
            print!("{}", dbscope_cluster::explain(&lineitem, &config)?);
            return Ok(0);
        }
        let engine = if in_process { "datafusion" } else { "ballista" };
        let show = !a.quiet;
        let started = chrono::Utc::now();
        let mut jobs: Vec<RecordedJob> = Vec::new();
        let mut first: Option<ClusterQ1Output> = None;
        let mut plan = String::new();
        // The reference: dbscope's exact job over the same files, on this machine (run once,
        // after the first cluster job, not timed).
        let mut local: Option<q1::Q1Output> = None;
        let mut failure: Option<Exit> = None;
        for rep in 0..a.repeat {
            let (result, report, submitted_unix_ns, elapsed) = if in_process {
                let at = chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0);
                let t0 = std::time::Instant::now();
                let r = dbscope_cluster::run_q1_in_process(&lineitem, &config);
                let total = t0.elapsed();
                // The job starts after the planning: its event starts there.
                let planning = r
                    .as_ref()
                    .map_or(Duration::ZERO, |o| total.saturating_sub(o.elapsed));
                (r, None, at + planning.as_nanos() as i64, total - planning)
            } else {
                let job = dbscope_cluster::run_q1(&lineitem, &config, |line| {
                    if show {
                        eprintln!("{line}");
                    }
                })?;
                if show {
                    for e in &job.report.unavailable {
                        eprintln!("note: the job's stages and tasks are not fully recorded: {e}");
                    }
                }
                plan.clone_from(&job.plan);
                (
                    job.result,
                    Some(job.report),
                    job.submitted_unix_ns,
                    job.elapsed,
                )
            };
            let mut recorded = RecordedJob {
                submitted_unix_ns,
                elapsed_ns: elapsed.as_nanos() as u64,
                groups: 0,
                failure: None,
                report,
            };
            match result {
                Err(e) => {
                    recorded.failure = Some(e.to_string());
                    jobs.push(recorded);
                    failure = Some(Exit(EXIT_FAILED, e.into()));
                    break;
                }
                Ok(output) => {
                    recorded.groups = output.answer.rows.len() as u64;
                    recorded.elapsed_ns = output.elapsed.as_nanos() as u64;
                    if plan.is_empty() {
                        plan.clone_from(&output.plan);
                    }
                    if local.is_none() {
                        local = Some(
                            q1::run(
                                &files,
                                &Q1Config {
                                    delta_days: a.delta,
                                    combiner: true,
                                    ..Q1Config::default()
                                },
                                &Q1Progress::default(),
                            )
                            .context("the local job (the answer's reference) failed")?,
                        );
                    }
                    let reference = local.as_ref().map(|l| &l.answer);
                    let diffs = reference
                        .map(|l| differences_from_local(&output.answer, l))
                        .unwrap_or_default();
                    if !diffs.is_empty() {
                        let why = format!(
                            "repetition {}: the cluster's answer differs from dbscope's exact local job: {}",
                            rep + 1,
                            diffs.join("; ")
                        );
                        recorded.failure = Some(why.clone());
                        jobs.push(recorded);
                        failure = Some(Exit(EXIT_FAILED, anyhow::anyhow!(why)));
                        first.get_or_insert(output);
                        break;
                    }
                    if show && a.repeat > 1 {
                        eprintln!(
                            "repetition {}/{}: {:.3} s",
                            rep + 1,
                            a.repeat,
                            output.elapsed.as_secs_f64()
                        );
                    }
                    jobs.push(recorded);
                    first.get_or_insert(output);
                }
            }
        }
        let mut out = std::io::stdout().lock();
        let mut official = None;
        if let (Some(output), Some(local)) = (&first, &local) {
            out.write_all(output.answer.to_table().as_bytes())?;
            let mut times: Vec<u64> = jobs
                .iter()
                .filter(|j| j.failure.is_none())
                .map(|j| j.elapsed_ns)
                .collect();
            times.sort_unstable();
            let secs = times.get(times.len() / 2).copied().unwrap_or(0) as f64 / 1e9;
            writeln!(
                out,
                "\n{} rows aggregated in {secs:.3} s{} on {}: way {}, {} map task(s), combiner {}, {} file(s)",
                output.answer.rows_aggregated(),
                if times.len() > 1 {
                    format!(" (median of {})", times.len())
                } else {
                    String::new()
                },
                if in_process {
                    format!("DataFusion {DATAFUSION_VERSION} in this process")
                } else {
                    format!("Ballista at {}", dbscope_cluster::scheduler_addr(&config.scheduler))
                },
                way.name(),
                map_tasks,
                if config.combiner { "on" } else { "off" },
                lineitem.format.name(),
            )?;
            // Hadoop's counters the seed read: what the combiner saved the shuffle, and the
            // job's CPU (here the operators' compute time the executors report).
            if let Some(r) = jobs.iter().rev().find_map(|j| j.report.as_ref()) {
                let shipped: usize = r
                    .stages
                    .iter()
                    .filter(|s| dbscope_cluster::monitor::stage_kind(s) == "map")
                    .map(|s| s.output_rows)
                    .sum();
                let compute = r.ledger.as_ref().map(|l| {
                    format!(
                        "; compute time {:.3} s (DataFusion's elapsed_compute over the tasks)",
                        l.iter().map(|t| t.compute_ns).sum::<u64>() as f64 / 1e9
                    )
                });
                writeln!(
                    out,
                    "{} records shipped from map to reduce ({} rows passed the filter){}",
                    dbscope_analysis::text::thousands(shipped as u64),
                    dbscope_analysis::text::thousands(output.answer.rows_aggregated()),
                    compute.unwrap_or_else(|| {
                        "; no compute time (a stock scheduler keeps no task ledger)".into()
                    })
                )?;
            }
            if failure.is_none() {
                writeln!(
                    out,
                    "dbscope's exact local job: match — sums and counts to the last digit, averages as DataFusion computes them (DECIMAL(19,6), truncated)"
                )?;
                if local.lines == SF1_LINEITEM_ROWS && a.delta == DEFAULT_DELTA {
                    match compare(&output.answer.rounded(), &official_q1_sf1()) {
                        Ok(()) => writeln!(
                            out,
                            "official TPC-H answer (SF 1, DELTA 90, answers/q1.out): match, 40 values to the digit"
                        )?,
                        Err(m) => {
                            let why = format!(
                                "the cluster's answer differs from the official TPC-H SF 1 answer: {m}"
                            );
                            if let Some(j) = jobs.first_mut() {
                                j.failure = Some(why.clone());
                            }
                            official = Some(why);
                        }
                    }
                }
            }
        }
        if let Some(why) = official {
            failure = Some(Exit(EXIT_FAILED, anyhow::anyhow!(why)));
        }
        if let Some(report) = jobs.iter().rev().find_map(|j| j.report.as_ref()) {
            let lost: usize = report
                .stages
                .iter()
                .map(dbscope_cluster::monitor::failed_tasks)
                .sum();
            if lost > 0 {
                writeln!(
                    out,
                    "{lost} task(s) failed on the cluster and were {}; see the run's events",
                    if failure.is_none() {
                        "run again by Ballista (the answer above is checked)"
                    } else {
                        "not recovered"
                    }
                )?;
            }
        }
        if !a.no_record {
            let dir = match &a.out {
                Some(p) => p.clone(),
                None => default_run_dir("tpch-q1")?,
            };
            let spec = RecordSpec {
                engine,
                config: &config,
                input: &lineitem,
                command_line: redacted_command_line(),
                plan: &plan,
                rows_aggregated: first.as_ref().map_or(0, |o| o.answer.rows_aggregated()),
            };
            let run = record_cluster_q1(&dir, &spec, &jobs, started)
                .with_context(|| format!("cannot record the run in {}", dir.display()))?;
            say_recorded(&mut out, &run.path)?;
        }
        match failure {
            Some(Exit(code, e)) => Err(Exit(code, e)),
            None => Ok(0),
        }
    }
}
