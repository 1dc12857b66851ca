//! `dbscope run tpcc`: the build first, recorded as a run of its own (`<run dir>-build`) when the
//! tables are not there in the shape asked for; then the transactions, recorded as any workload
//! run; then the consistency checks (unless `--no-check`), written into the run as counter
//! section `tpcc_check` and failing the exit code when a condition fails.
//!
//! `dbscope tpcc check --target …` runs the checks alone.

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use clap::{Args, Subcommand};
use dbscope_core::{Counter, CounterSection, CounterValue, Outcome, RunCounters};
use dbscope_db::open_target;
use dbscope_lab::plan::{RunPlan, WorkloadPlan};
use dbscope_lab::runner::RunResult;
use dbscope_lab::workload::tpcc::{
    build_recorded, check, inspect, refuse_target, BuildOptions, Shape, TpccConfig,
};
use dbscope_tpcc::Violation;

use crate::common::{finish_run, redacted_command_line};
use crate::exit::{Exit, EXIT_DATABASE, EXIT_FAILED};

/// `dbscope tpcc …`.
#[derive(Debug, Args)]
pub struct TpccArgs {
    #[command(subcommand)]
    pub command: TpccCommand,
}

#[derive(Debug, Subcommand)]
pub enum TpccCommand {
    /// Run the TPC-C consistency conditions (clause 3.3.2.1–3.3.2.4) on a database built by
    /// `dbscope run tpcc`: each failed condition is printed with its warehouse and district, and
    /// the exit code is 1.
    Check(CheckArgs),
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The database: sqlite:PATH or postgres://… (as `run --target`). Default: $DATABASE_URL.
    #[arg(long, short = 't', value_name = "TARGET")]
    pub target: Option<String>,
}

/// `dbscope tpcc check`.
pub fn cmd_tpcc(a: TpccArgs) -> Result<u8, Exit> {
    match a.command {
        TpccCommand::Check(c) => {
            let spec = c
                .target
                .or_else(|| std::env::var("DATABASE_URL").ok().filter(|u| !u.is_empty()))
                .ok_or_else(|| anyhow!("tpcc check needs --target (or $DATABASE_URL)"))?;
            let target = open_target(&spec, &[])?;
            refuse_target(target.dialect())?;
            let violations = check(target.as_ref())?;
            print_check(&violations);
            Ok(if violations.is_empty() {
                0
            } else {
                EXIT_FAILED
            })
        }
    }
}

fn print_check(violations: &[Violation]) {
    if violations.is_empty() {
        println!(
            "TPC-C consistency: conditions {} hold",
            conditions().join(", ")
        );
    }
    for v in violations {
        println!("{v}");
    }
}

fn conditions() -> Vec<&'static str> {
    dbscope_tpcc::CONDITIONS.iter().map(|c| c.clause).collect()
}

/// The build run's directory beside the run's: `<out>-build`.
fn build_dir(out: &Path) -> PathBuf {
    let mut name = out
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push("-build");
    out.with_file_name(name)
}

/// Runs a tpcc plan: build (recorded) when needed, the run through `record`, the checks.
/// `quiet`: nothing printed but the run directory; `point`: a sweep's point (no check printing).
pub fn run_tpcc(
    plan: &RunPlan,
    cfg: &TpccConfig,
    spec: &str,
    quiet: bool,
    record: impl FnOnce(&RunPlan) -> Result<RunResult, Exit>,
) -> Result<(u8, Outcome), Exit> {
    let target = open_target(spec, &plan.target.settings)?;
    refuse_target(target.dialect())?;
    if cfg.server_side && target.dialect() != dbscope_db::Dialect::Postgres {
        return Err(anyhow!(
            "--server-side installs PL/pgSQL functions: it runs on PostgreSQL targets only"
        )
        .into());
    }
    let mut cfg = cfg.clone();
    if inspect(target.as_ref(), cfg.warehouses, cfg.fresh)? == Shape::Build {
        let dir = build_dir(&plan.out);
        if !quiet {
            eprintln!(
                "dbscope: building TPC-C with {} warehouse(s); the build is recorded in {}",
                cfg.warehouses,
                dir.display()
            );
        }
        let b = build_recorded(
            target.as_ref(),
            &BuildOptions {
                warehouses: cfg.warehouses,
                build_sessions: cfg.build_sessions,
                seed: cfg.seed,
                fresh: cfg.fresh,
            },
            &dir,
            redacted_command_line(),
        )
        .map_err(|e| Exit(crate::exit::EXIT_INPUT, anyhow!(e)))?;
        if let Err(e) = b.result {
            let code = if e.is_database() {
                EXIT_DATABASE
            } else {
                EXIT_FAILED
            };
            return Err(Exit(
                code,
                anyhow!(
                    "the TPC-C build failed ({}); recorded in {}",
                    e.message,
                    b.run.display()
                ),
            ));
        }
        cfg.build_run = Some(b.run.display().to_string());
    }
    cfg.fresh = false;
    let plan = RunPlan {
        workload: WorkloadPlan::Tpcc(cfg.clone()),
        ..plan.clone()
    };
    let result = record(&plan)?;
    let mut failed_check = false;
    if cfg.check && result.outcome != Outcome::Interrupted {
        let section = match check(target.as_ref()) {
            Ok(v) => {
                failed_check = !v.is_empty();
                check_section(&v, None)
            }
            Err(e) => {
                failed_check = true;
                check_section(&[], Some(format!("the checks could not run: {e}")))
            }
        };
        if let Err(e) = add_section(&result.dir, section) {
            eprintln!(
                "dbscope: cannot write the consistency checks into {}: {e}",
                result.dir.display()
            );
            failed_check = true;
        }
    }
    let code = finish_run(
        &result.dir,
        result.outcome,
        result.detail.as_deref(),
        result.events,
        Some(result.errors),
        quiet,
    )?;
    if failed_check {
        eprintln!(
            "dbscope: a TPC-C consistency condition failed after the run (see section tpcc_check of {})",
            result.dir.display()
        );
        return Ok((code.max(EXIT_FAILED), Outcome::Failed));
    }
    Ok((code, result.outcome))
}

/// Section `tpcc_check`: whether every condition held, and each violation named.
fn check_section(v: &[Violation], could_not: Option<String>) -> CounterSection {
    let held = could_not.is_none() && v.is_empty();
    let mut notes: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    notes.extend(could_not);
    CounterSection {
        key: "tpcc_check".into(),
        title: format!(
            "TPC-C consistency conditions {} after the run",
            conditions().join(", ")
        ),
        final_counts: true,
        counters: vec![
            Counter::new("held", "all hold", CounterValue::Bool(held), ""),
            Counter::new(
                "violations",
                "violations",
                CounterValue::count(v.len() as u64),
                "",
            ),
        ],
        tables: Vec::new(),
        notes,
    }
}

/// Adds `section` to the counters of the finished run in `dir`.
fn add_section(dir: &Path, section: CounterSection) -> anyhow::Result<()> {
    let mut c = if dir.join(dbscope_core::files::COUNTERS_FILE).exists() {
        RunCounters::read(dir)?
    } else {
        RunCounters::default()
    };
    c.put(section);
    c.write(dir)?;
    Ok(())
}
