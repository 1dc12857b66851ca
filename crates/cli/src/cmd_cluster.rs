//! `dbscope cluster scheduler|executor` and `tpch q1 --engine ballista`: the arguments turned into
//! dbscope-cluster calls (with the `cluster` feature), or one error line saying how to build it.

use crate::cluster_args::ClusterArgs;
use crate::exit::Exit;
use crate::tpch_args::Q1Args;

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

    use anyhow::Context;
    use dbscope_cluster::{
        differences_from_local, run_executor, run_scheduler, ClusterQ1Config, ExecutorOptions,
        Lineitem, SchedulerOptions, Way, BALLISTA_VERSION, DATAFUSION_VERSION,
    };
    use dbscope_tpch::answer::{compare, official_q1_sf1, SF1_LINEITEM_ROWS};
    use dbscope_tpch::q1::{self, Q1Config, Q1Progress, DEFAULT_DELTA};

    use super::*;
    use crate::cluster_args::ClusterCommand;
    use crate::exit::EXIT_FAILED;
    use crate::tpch_args::{EngineArg, WayArg};

    /// Runs a `cluster` subcommand.
    pub fn cmd_cluster(a: ClusterArgs) -> Result<u8, Exit> {
        match a.command {
            ClusterCommand::Scheduler(s) => {
                run_scheduler(
                    &SchedulerOptions {
                        bind: s.bind,
                        external_host: s.external_host,
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
        if a.repeat != 1 || a.out.is_some() || a.no_mmap {
            return Err(anyhow::anyhow!(
                "--repeat, --out and --no-mmap apply to --engine local (a Ballista job is not recorded as a run yet)"
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
        let output = if in_process {
            dbscope_cluster::run_q1_in_process(&lineitem, &config)?
        } else {
            dbscope_cluster::run_q1(&lineitem, &config)?
        };
        // The reference: dbscope's exact job over the same files, on this machine.
        let local = q1::run(
            &files,
            &Q1Config {
                delta_days: a.delta,
                combiner: true,
                ..Q1Config::default()
            },
            &Q1Progress::default(),
        )
        .context("the local job (the answer's reference) failed")?;
        let mut out = std::io::stdout().lock();
        out.write_all(output.answer.to_table().as_bytes())?;
        let secs = output.elapsed.as_secs_f64();
        writeln!(
            out,
            "\n{} rows aggregated in {secs:.3} s on {}: way {}, {} map task(s), combiner {}, {} file(s)",
            output.answer.rows_aggregated(),
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
        let diffs = differences_from_local(&output.answer, &local.answer);
        if diffs.is_empty() {
            writeln!(
                out,
                "dbscope's exact local job: match — sums and counts to the last digit, averages as DataFusion computes them (DECIMAL(19,6), truncated)"
            )?;
        }
        let mut official = None;
        if local.lines == SF1_LINEITEM_ROWS && a.delta == DEFAULT_DELTA {
            match compare(&output.answer.rounded(), &official_q1_sf1()) {
                Ok(()) => writeln!(
                    out,
                    "official TPC-H answer (SF 1, DELTA 90, answers/q1.out): match, 40 values to the digit"
                )?,
                Err(m) => official = Some(m),
            }
        }
        if !diffs.is_empty() {
            return Err(Exit(
                EXIT_FAILED,
                anyhow::anyhow!(
                    "the cluster's answer differs from dbscope's exact local job: {}",
                    diffs.join("; ")
                ),
            ));
        }
        if let Some(m) = official {
            return Err(Exit(
                EXIT_FAILED,
                anyhow::anyhow!(
                    "the cluster's answer differs from the official TPC-H SF 1 answer: {m}"
                ),
            ));
        }
        Ok(0)
    }
}
