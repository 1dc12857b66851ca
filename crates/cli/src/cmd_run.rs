//! `dbscope run WORKLOAD`: a workload against a target, recorded as a run.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use dbscope_db::open_target;
use dbscope_lab::pace::{parse_rate, Arrival, Pacing};
use dbscope_lab::runner::{self, Progress, RunConfig, RunSpec};
use dbscope_lab::workload::{CommitWorkload, Keys};

use crate::args::{RunArgs, WorkloadName};
use crate::common::{
    default_run_dir, finish_run, redacted_command_line, run_progress_bar, show_run_progress,
    stop_on_ctrl_c,
};
use crate::exit::{Exit, EXIT_USAGE};

pub fn cmd_run(a: RunArgs) -> Result<u8, Exit> {
    if a.delta.is_some() && !matches!(a.workload, WorkloadName::TpchQ1) {
        return Err(anyhow::anyhow!("--delta applies to the tpch-q1 workload only").into());
    }
    let out = match &a.out {
        Some(p) => p.clone(),
        None => default_run_dir(match a.workload {
            WorkloadName::Commit => "commit",
            WorkloadName::TpchQ1 => "tpch-q1",
            WorkloadName::Events => "events",
            WorkloadName::Lookup => "lookup",
            WorkloadName::Bulkload => "bulkload",
        })?,
    };
    let created_out = !out.exists();
    let spec = match (&a.target, std::env::var("DATABASE_URL")) {
        (Some(t), _) => t.clone(),
        (None, Ok(url)) if !url.is_empty() => url,
        _ => format!("sqlite:{}", out.join("dbscope.sqlite").display()),
    };
    if spec.starts_with("sqlite:") && a.target.is_none() {
        std::fs::create_dir_all(&out)
            .with_context(|| format!("cannot create run directory {}", out.display()))?;
    }
    let result = run_with(&a, &spec, &out);
    if result.is_err() && created_out {
        // Nothing was recorded (the run never started): leave no empty run directory behind.
        if !out.join(dbscope_core::run::MANIFEST_FILE).exists() {
            let _ = std::fs::remove_dir_all(&out);
        }
    }
    result
}

fn run_with(a: &RunArgs, spec: &str, out: &Path) -> Result<u8, Exit> {
    if let WorkloadName::Events = a.workload {
        return crate::cmd_events::run_events(a, spec, out);
    }
    let e = &a.events;
    if e.clients.is_some() || e.connections.is_some() || e.iterations {
        return Err(anyhow::anyhow!(
            "--clients, --connections and --iterations apply to the events workload only"
        )
        .into());
    }
    let duration = match (a.ops, a.duration) {
        (None, None) => Some(Duration::from_secs(10)),
        (_, d) => d,
    };
    let mut config = RunConfig {
        sessions: a.sessions,
        ops_per_session: a.ops,
        duration,
        warmup: a.warmup,
        seed: a.seed,
        max_errors: a.max_errors,
        threads: a.threads,
        observe: a.observe_config(),
        pacing: pacing(a)?,
    };
    config.validate()?;
    let target = open_target(spec, &a.settings)?;
    let keys: Keys = a.keys.parse().map_err(anyhow::Error::msg)?;
    let workload: Box<dyn dbscope_lab::workload::Workload> = match a.workload {
        WorkloadName::Commit => Box::new(
            CommitWorkload::new(
                a.table.as_deref().unwrap_or("dbscope_commit"),
                keys,
                a.fresh,
                target.dialect(),
            )
            .map_err(anyhow::Error::msg)?,
        ),
        WorkloadName::TpchQ1 => Box::new(dbscope_lab::workload::tpch::TpchQ1Workload::new(
            target.dialect(),
            a.delta.unwrap_or(dbscope_tpch::q1::DEFAULT_DELTA),
        )),
        WorkloadName::Events => return crate::cmd_events::run_events(a, spec, out),
        WorkloadName::Lookup => crate::lab_args::lookup(
            &a.lab,
            a.table.as_deref(),
            a.fresh,
            target.dialect(),
            &mut config,
        )?,
        WorkloadName::Bulkload => crate::lab_args::bulkload(
            &a.lab,
            a.table.as_deref(),
            target.dialect(),
            &mut config,
            a.ops.is_some() || a.duration.is_some(),
        )?,
    };

    let stop = stop_on_ctrl_c();
    let bar = run_progress_bar(a.quiet);
    let mut on_progress = |p: &Progress| show_run_progress(&bar, p, p.headline);

    let command_line = redacted_command_line();
    let result = runner::run(
        RunSpec {
            out: out.to_path_buf(),
            command_line,
            target: target.as_ref(),
            workload: workload.as_ref(),
            config,
        },
        &stop,
        &mut on_progress,
    );
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    // Errors here happen before the first operation (target, setup, run directory): bad input.
    let result = result.map_err(|e: dbscope_lab::Error| Exit(EXIT_USAGE, e.into()))?;
    if a.silent {
        return Ok(crate::common::outcome_code(result.outcome));
    }

    finish_run(
        &result.dir,
        result.outcome,
        result.detail.as_deref(),
        result.events,
        Some(result.errors),
        a.quiet,
    )
}

/// `--rate` and `--arrival` as the runner's pacing; `None` without `--rate` (closed loop).
fn pacing(a: &RunArgs) -> Result<Option<Pacing>, Exit> {
    let arrival: Arrival = a.arrival.parse().map_err(anyhow::Error::msg)?;
    let Some(rate) = &a.rate else {
        if a.arrival != "constant" {
            return Err(anyhow::anyhow!("--arrival needs --rate (open-loop pacing)").into());
        }
        return Ok(None);
    };
    let (rate, per_session) = parse_rate(rate).map_err(anyhow::Error::msg)?;
    let p = Pacing {
        rate,
        per_session,
        arrival,
    };
    p.validate().map_err(anyhow::Error::msg)?;
    Ok(Some(p))
}
