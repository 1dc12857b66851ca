//! `dbscope run`'s arguments → the library's [`RunPlan`], built and checked once.
//!
//! `run`, the events path and `sweep` all take a plan. The library names a bad value by the plan's
//! field; [`flag`] is the table that says which flag set it, so messages read as they always have.

use std::time::Duration;

use anyhow::anyhow;
use dbscope_lab::pace::{parse_rate, Arrival, Pacing};
use dbscope_lab::plan::{EventsPlan, RunPlan, TargetPlan, WorkloadPlan};
use dbscope_lab::runner::RunConfig;
use dbscope_lab::workload::bulkload::BulkloadConfig;
use dbscope_lab::workload::lookup::LookupConfig;
use dbscope_lab::workload::place::Placement;

use crate::common::default_run_dir;
use crate::exit::Exit;
use crate::run::args::{RunArgs, WorkloadName};
use crate::run::lab_args::LabArgs;

/// The flag that sets a plan's field (`ops_per_session` → `--ops`).
pub fn flag(field: &'static str) -> String {
    match field {
        "ops_per_session" => "--ops".into(),
        "place" => "--tablespace-dir".into(),
        "settings" => "--set".into(),
        f => format!("--{}", f.replace('_', "-")),
    }
}

/// `e` for the command line: a bad field said as its flag; other errors as they are.
pub fn lab_error(e: dbscope_lab::Error) -> anyhow::Error {
    match e {
        dbscope_lab::Error::Invalid { .. } | dbscope_lab::Error::Uneven { .. } => {
            anyhow::Error::msg(e.render(flag))
        }
        e => e.into(),
    }
}

/// The plan `a` asks for: the workload's options parsed, the run directory and target chosen,
/// everything checked that does not need the database.
pub fn build(a: &RunArgs) -> Result<RunPlan, Exit> {
    if a.delta.is_some() && !matches!(a.workload, WorkloadName::TpchQ1) {
        return Err(anyhow!("--delta applies to the tpch-q1 workload only").into());
    }
    let out = match &a.out {
        Some(p) => p.clone(),
        None => default_run_dir(workload_name(a.workload))?,
    };
    let target = TargetPlan {
        spec: a.target.clone(),
        fallback: std::env::var("DATABASE_URL").ok().filter(|u| !u.is_empty()),
        settings: a.settings.clone(),
    };
    let observe = dbscope_lab::observe::ObserveConfig {
        sample_hz: a.sample_hz,
        snapshot_every: a.snapshot_every,
    };
    if let WorkloadName::Events = a.workload {
        return events(a, target, observe, out);
    }
    let e = &a.events;
    if e.clients.is_some() || e.connections.is_some() || e.iterations {
        return Err(anyhow!(
            "--clients, --connections and --iterations apply to the events workload only"
        )
        .into());
    }
    let duration = match (a.ops, a.duration) {
        (None, None) => Some(Duration::from_secs(10)),
        (_, d) => d,
    };
    let config = RunConfig {
        sessions: a.sessions,
        ops_per_session: a.ops,
        duration,
        warmup: a.warmup,
        seed: a.seed,
        max_errors: a.max_errors,
        threads: a.threads,
        observe,
        pacing: pacing(a)?,
    };
    config.validate().map_err(lab_error)?;
    let table = a.table.as_deref();
    if a.lab.repeat.is_some() && !matches!(a.workload, WorkloadName::Bulkload) {
        return Err(anyhow!(
            "--repeat applies to bulkload only (other workloads repeat with --ops or --duration)"
        )
        .into());
    }
    let workload = match a.workload {
        WorkloadName::Commit => WorkloadPlan::Commit {
            table: table.unwrap_or("dbscope_commit").to_string(),
            keys: a.keys.parse().map_err(lab_error)?,
            fresh: a.fresh,
        },
        WorkloadName::TpchQ1 => WorkloadPlan::TpchQ1 {
            delta: a.delta.unwrap_or(dbscope_tpch::q1::DEFAULT_DELTA),
        },
        WorkloadName::Lookup => WorkloadPlan::Lookup(lookup(&a.lab, table, a.fresh, a.ops)?),
        WorkloadName::Bulkload => WorkloadPlan::Bulkload(bulkload(
            &a.lab,
            table,
            a.sessions,
            a.ops.is_some() || a.duration.is_some(),
        )?),
        WorkloadName::Events => unreachable!("returned above"),
    };
    let plan = RunPlan {
        workload,
        target,
        config,
        out,
    };
    plan.validate().map_err(lab_error)?;
    Ok(plan)
}

/// `lookup`'s table size without --rows.
const DEFAULT_LOOKUP_ROWS: u64 = 1_000_000;

/// The `lookup` workload's options; `ops` (`--ops`) is the run's total, which the plan splits
/// evenly over the sessions.
fn lookup(
    a: &LabArgs,
    table: Option<&str>,
    fresh: bool,
    ops: Option<u64>,
) -> Result<LookupConfig, Exit> {
    if let (Some(ops), None) = (ops, a.rows) {
        // 100 lookups per key of the default table is past any cache experiment: most likely
        // --ops was meant as the table's size.
        if ops > 100 * DEFAULT_LOOKUP_ROWS {
            return Err(anyhow::anyhow!(
                "--ops {ops} is over 100 lookups per key of the default {DEFAULT_LOOKUP_ROWS}-row \
                 table: give --rows for the table you mean (--rows {DEFAULT_LOOKUP_ROWS} to keep \
                 the default), or --duration to run for a time"
            )
            .into());
        }
    }
    Ok(LookupConfig {
        table: table.unwrap_or("dbscope_lookup").to_string(),
        rows: a.rows.unwrap_or(DEFAULT_LOOKUP_ROWS),
        row_bytes: a.row_bytes.unwrap_or(100),
        dist: a.dist.parse().map_err(lab_error)?,
        place: Placement::from_option(a.tablespace_dir.as_deref()).map_err(lab_error)?,
        cache: a.cache.parse().map_err(lab_error)?,
        restart_cmd: a.restart_cmd.clone(),
        fresh,
    })
}

/// The `bulkload` workload's options: each session runs its steps once, or `--repeat` times (one
/// operation each), so `--ops` and `--duration` do not apply.
fn bulkload(
    a: &LabArgs,
    table: Option<&str>,
    sessions: u32,
    ops_or_duration_given: bool,
) -> Result<BulkloadConfig, Exit> {
    if ops_or_duration_given {
        return Err(anyhow::anyhow!(
            "bulkload runs its steps once, or --repeat N times: --ops and --duration do not \
             apply (use --rows and --repeat)"
        )
        .into());
    }
    Ok(BulkloadConfig {
        repeat: a.repeat.unwrap_or(1),
        table: table.unwrap_or("dbscope_bulkload").to_string(),
        rows: a.rows.unwrap_or(1_000_000),
        groups: a.groups,
        row_bytes: a.row_bytes.unwrap_or(16),
        into: a.into.parse().map_err(lab_error)?,
        place: Placement::from_option(a.tablespace_dir.as_deref()).map_err(lab_error)?,
        sessions,
    })
}

/// The name of `w`'s runs (the default run directory's suffix).
pub fn workload_name(w: WorkloadName) -> &'static str {
    use dbscope_lab::workload as w_;
    match w {
        WorkloadName::Commit => w_::CommitWorkload::NAME,
        WorkloadName::TpchQ1 => w_::tpch::TpchQ1Workload::NAME,
        WorkloadName::Events => w_::events::EventsWorkload::NAME,
        WorkloadName::Lookup => w_::lookup::LookupWorkload::NAME,
        WorkloadName::Bulkload => w_::bulkload::BulkloadWorkload::NAME,
    }
}

/// The events workload's plan: the run's sessions are its connections, chosen by target when
/// it runs (`events`).
fn events(
    a: &RunArgs,
    target: TargetPlan,
    observe: dbscope_lab::observe::ObserveConfig,
    out: std::path::PathBuf,
) -> Result<RunPlan, Exit> {
    let e = &a.events;
    if a.sessions != 1 {
        return Err(anyhow!(
            "events: clients share connections: use --connections N, not --sessions"
        )
        .into());
    }
    if a.ops.is_some() {
        return Err(anyhow!("events: the clients run for --duration; --ops does not apply").into());
    }
    let rate = match &a.rate {
        None => 1000.0,
        Some(r) => {
            let (r, per_session) = parse_rate(r).map_err(lab_error)?;
            if per_session {
                return Err(anyhow!(
                    "events: --rate is already events per second per client; drop /session"
                )
                .into());
            }
            r
        }
    };
    let arrival: Arrival = a.arrival.parse().map_err(lab_error)?;
    let strategy = match e.iterations {
        true => None,
        false => Some(e.strategy.parse().map_err(lab_error)?),
    };
    let config = RunConfig {
        sessions: a.sessions,
        ops_per_session: None,
        duration: Some(a.duration.unwrap_or(Duration::from_secs(10))),
        warmup: a.warmup,
        seed: a.seed,
        max_errors: a.max_errors,
        threads: a.threads,
        pacing: None,
        observe,
    };
    Ok(RunPlan {
        workload: WorkloadPlan::Events(EventsPlan {
            clients: e.clients.unwrap_or(150),
            connections: e.connections,
            rate,
            arrival,
            elements: e.elements,
            payload: e.payload,
            strategy,
            batch: e.batch,
            batch_wait: e.batch_wait,
            preallocate: e.preallocate,
            fresh: a.fresh,
        }),
        target,
        config,
        out,
    })
}

/// `--rate` and `--arrival` as the runner's pacing; `None` without `--rate` (closed loop).
fn pacing(a: &RunArgs) -> Result<Option<Pacing>, Exit> {
    let arrival: Arrival = a.arrival.parse().map_err(lab_error)?;
    let Some(rate) = &a.rate else {
        if a.arrival != "constant" {
            return Err(anyhow!("--arrival needs --rate (open-loop pacing)").into());
        }
        return Ok(None);
    };
    let (rate, per_session) = parse_rate(rate).map_err(lab_error)?;
    let p = Pacing {
        rate,
        per_session,
        arrival,
    };
    p.validate().map_err(lab_error)?;
    Ok(Some(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_as_flags() {
        let e = lab_error(dbscope_lab::Error::invalid(
            "ops_per_session",
            "must be at least 1",
        ));
        assert_eq!(e.to_string(), "--ops must be at least 1");
        let e = lab_error(dbscope_lab::Error::invalid("clients", ": at most 100,000"));
        assert_eq!(e.to_string(), "--clients: at most 100,000");
        let e = lab_error(dbscope_lab::Error::Uneven {
            field: "ops_per_session",
            total: 100,
            over: "sessions",
            count: 3,
        });
        assert_eq!(
            e.to_string(),
            "--ops 100 is the lookup run's total and must split evenly over --sessions 3 (e.g. --ops 99)"
        );
        assert_eq!(flag("tablespace_dir"), "--tablespace-dir");
        assert_eq!(flag("sample_hz"), "--sample-hz");
    }
}
