//! `dbscope run WORKLOAD`: a workload against a target, recorded as a run. The arguments become
//! a run plan in [`plan`]; [`run`] runs a plan (also each point of `sweep`).

pub mod plan;

use anyhow::Context;
use dbscope_db::open_target;
use dbscope_lab::plan::{RunPlan, WorkloadPlan};
use dbscope_lab::runner::{self, Progress, RunSpec};

use crate::args::RunArgs;
use crate::cmd_run::plan::lab_error;
use crate::common::{
    finish_run, redacted_command_line, run_progress_bar, show_run_progress, stop_on_ctrl_c,
};
use crate::exit::{Exit, EXIT_USAGE};

/// What a run prints: progress and the report (`Show::Report`), only the run directory
/// (`--quiet`), or nothing (a `sweep` point; the sweep reads the run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Show {
    /// Progress display and the report at the end.
    Report,
    /// No progress display and no report; only the run directory.
    Quiet,
    /// Nothing at the end.
    Silent,
}

pub fn cmd_run(a: RunArgs) -> Result<u8, Exit> {
    let plan = crate::cmd_run::plan::build(&a)?;
    run(
        &plan,
        match a.quiet {
            true => Show::Quiet,
            false => Show::Report,
        },
    )
}

/// Runs `plan`; the exit code of its outcome.
pub fn run(plan: &RunPlan, show: Show) -> Result<u8, Exit> {
    let out = &plan.out;
    let created_out = !out.exists();
    let spec = plan.target_spec();
    if spec.starts_with("sqlite:") && plan.target.spec.is_none() {
        std::fs::create_dir_all(out)
            .with_context(|| format!("cannot create run directory {}", out.display()))?;
    }
    let result = run_with(plan, &spec, show);
    if result.is_err() && created_out {
        // Nothing was recorded (the run never started): leave no empty run directory behind.
        if !out.join(dbscope_core::run::MANIFEST_FILE).exists() {
            let _ = std::fs::remove_dir_all(out);
        }
    }
    result
}

fn run_with(plan: &RunPlan, spec: &str, show: Show) -> Result<u8, Exit> {
    if let WorkloadPlan::Events(e) = &plan.workload {
        return crate::cmd_events::run_events(plan, e, spec, show != Show::Report);
    }
    let config = plan.run_config().map_err(lab_error)?;
    let target = open_target(spec, &plan.target.settings)?;
    let workload = plan.workload(target.dialect()).map_err(lab_error)?;

    let quiet = show != Show::Report;
    let stop = stop_on_ctrl_c();
    let bar = run_progress_bar(quiet);
    let mut on_progress = |p: &Progress| show_run_progress(&bar, p, p.headline);

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
    let result = result.map_err(|e: dbscope_lab::Error| Exit(EXIT_USAGE, lab_error(e)))?;
    if show == Show::Silent {
        return Ok(crate::common::outcome_code(result.outcome));
    }

    finish_run(
        &result.dir,
        result.outcome,
        result.detail.as_deref(),
        result.events,
        Some(result.errors),
        quiet,
    )
}
