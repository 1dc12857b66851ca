//! `dbscope run WORKLOAD`: a workload against a target, recorded as a run.
//!
//! The arguments become a run plan in [`plan`]; [`run`] runs a plan, [`run_point`] one of
//! `sweep`'s.

pub mod aesni;
pub mod args;
pub mod events;
pub mod events_args;
pub mod flags;
pub mod lab_args;
pub mod matrix;
pub mod plan;
pub mod script_args;
pub mod script_plan;
pub mod tpcc;
pub mod tpcc_args;
pub mod tpcc_plan;

use anyhow::Context;
use dbscope_core::Outcome;
use dbscope_db::open_target_keyed;
use dbscope_lab::plan::{RunPlan, WorkloadPlan};
use dbscope_lab::runner::{self, Progress, RunResult, RunSpec};

use crate::common::{
    finish_run, redacted_command_line, run_progress_bar, show_run_progress, stop_on_ctrl_c,
};
use crate::exit::{Exit, EXIT_USAGE};
use crate::run::args::RunArgs;
use plan::lab_error;

pub fn cmd_run(a: RunArgs) -> Result<u8, Exit> {
    if a.matrix {
        return cmd_matrix(&a);
    }
    let plan = plan::build(&a)?;
    if let aesni::AesNi::RanInChild(code) = aesni::handle(a.aes_ni == "off")? {
        return Ok(code);
    }
    run(&plan, a.quiet)
}

/// `run scan --matrix`: the options every cell shares, checked, then the cells ([`matrix`]).
fn cmd_matrix(a: &RunArgs) -> Result<u8, Exit> {
    use anyhow::anyhow;
    if a.workload != args::WorkloadName::Scan {
        return Err(anyhow!("--matrix applies to the scan workload only").into());
    }
    if a.lab.cache.is_some() || a.aes_ni != "on" || a.fresh {
        return Err(anyhow!(
            "--matrix runs every --cache and --aes-ni itself, on the tables as they are (no --fresh)"
        )
        .into());
    }
    // Checked as a plain scan run would be, before twelve of them start.
    plan::build(a)?;
    let target = a
        .target
        .clone()
        .ok_or_else(|| anyhow!("--matrix needs --target sqlcipher:PATH"))?;
    let mut pass_on = Vec::new();
    let mut give = |flag: &str, v: Option<String>| {
        if let Some(v) = v {
            pass_on.extend([flag.to_string(), v]);
        }
    };
    give("--rows", a.lab.rows.map(|v| v.to_string()));
    give("--row-bytes", a.lab.row_bytes.map(|v| v.to_string()));
    give("--ops", a.ops.map(|v| v.to_string()));
    give(
        "--duration",
        a.duration.map(|d| format!("{}ms", d.as_millis())),
    );
    give("--table", a.table.clone());
    give("--seed", Some(a.seed.to_string()));
    let out = match &a.out {
        Some(p) => p.clone(),
        None => crate::common::default_run_dir("scan-matrix")?,
    };
    matrix::run_matrix(&matrix::MatrixArgs {
        target,
        key_file: a.key_file.clone(),
        pass_on,
        out,
    })
}

/// Runs `plan` and says how it went (`quiet`: no progress display and no report, only the run
/// directory); the exit code of its outcome.
pub fn run(plan: &RunPlan, quiet: bool) -> Result<u8, Exit> {
    in_run_dir(plan, |spec| {
        if let WorkloadPlan::Events(e) = &plan.workload {
            return crate::run::events::run_events(plan, e, spec, quiet, false)
                .map(|(code, _)| code);
        }
        if let WorkloadPlan::Tpcc(t) = &plan.workload {
            return crate::run::tpcc::run_tpcc(plan, t, spec, quiet, |p| record(p, spec, quiet))
                .map(|(code, _)| code);
        }
        let result = record(plan, spec, quiet)?;
        finish_run(
            &result.dir,
            result.outcome,
            result.detail.as_deref(),
            result.events,
            Some(result.errors),
            quiet,
        )
    })
}

/// Runs `plan` as a point of a sweep, which reads the run: nothing printed; how it ended.
pub fn run_point(plan: &RunPlan) -> Result<Outcome, Exit> {
    in_run_dir(plan, |spec| {
        if let WorkloadPlan::Events(e) = &plan.workload {
            return crate::run::events::run_events(plan, e, spec, true, true).map(|(_, o)| o);
        }
        if let WorkloadPlan::Tpcc(t) = &plan.workload {
            return crate::run::tpcc::run_tpcc(plan, t, spec, true, |p| record(p, spec, true))
                .map(|(_, o)| o);
        }
        Ok(record(plan, spec, true)?.outcome)
    })
}

/// `f` with the plan's target string, in the plan's run directory: created first for a SQLite
/// file in it, and removed again when `f` fails before anything was recorded.
fn in_run_dir<T>(plan: &RunPlan, f: impl FnOnce(&str) -> Result<T, Exit>) -> Result<T, Exit> {
    let out = &plan.out;
    let created_out = !out.exists();
    let spec = plan.target_spec();
    if spec.starts_with("sqlite:") && plan.target.spec.is_none() {
        std::fs::create_dir_all(out)
            .with_context(|| format!("cannot create run directory {}", out.display()))?;
    }
    let result = f(&spec);
    if result.is_err() && created_out {
        // Nothing was recorded (the run never started): leave no empty run directory behind.
        if !out.join(dbscope_core::run::MANIFEST_FILE).exists() {
            let _ = std::fs::remove_dir_all(out);
        }
    }
    result
}

/// Runs a plan's workload (not `events`: see `events`) against the target `spec`.
fn record(plan: &RunPlan, spec: &str, quiet: bool) -> Result<RunResult, Exit> {
    let config = plan.run_config().map_err(lab_error)?;
    let target = open_target_keyed(spec, &plan.target.settings, plan.target.key_file.as_deref())?;
    let workload = plan.workload(target.dialect()).map_err(lab_error)?;

    let stop = stop_on_ctrl_c();
    let bar = run_progress_bar(quiet);
    let mut on_progress = |p: &Progress| show_run_progress(&bar, p, &p.headline);

    let command_line = redacted_command_line();
    let result = runner::run(
        RunSpec {
            out: plan.out.clone(),
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
    result.map_err(|e: dbscope_lab::Error| Exit(EXIT_USAGE, lab_error(e)))
}
