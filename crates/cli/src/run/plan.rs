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
use dbscope_lab::workload::lookup::{LookupConfig, DEFAULT_RESTART_TIMEOUT};
use dbscope_lab::workload::place::Placement;
use dbscope_lab::workload::scan::ScanConfig;

/// `scan`'s table size without --rows: 100,000 rows of 100 bytes, about 12 MB.
const DEFAULT_SCAN_ROWS: u64 = 100_000;

use crate::common::default_run_dir;
use crate::exit::Exit;
use crate::run::args::{RunArgs, WorkloadName};
use crate::run::lab_args::LabArgs;

pub use super::flags::lab_error;

/// The plan `a` asks for: the workload's options parsed, the run directory and target chosen,
/// everything checked that does not need the database.
pub fn build(a: &RunArgs) -> Result<RunPlan, Exit> {
    refuse_what_does_not_apply(a)?;
    let out = match &a.out {
        Some(p) => p.clone(),
        None => default_run_dir(workload_name(a.workload))?,
    };
    let target = TargetPlan {
        spec: a.target.clone(),
        fallback: std::env::var("DATABASE_URL").ok().filter(|u| !u.is_empty()),
        settings: a.settings.clone(),
        key_file: a.key_file.clone(),
    };
    let observe = dbscope_lab::observe::ObserveConfig {
        sample_hz: a.sample_hz,
        snapshot_every: a.snapshot_every,
        waits_history: a.waits == super::args::WaitsMode::History,
    };
    if let WorkloadName::Events = a.workload {
        return events(a, target, observe, out);
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
        explain: a.explain,
    };
    config.validate().map_err(lab_error)?;
    let table = a.table.as_deref();
    let workload = match a.workload {
        WorkloadName::Commit => WorkloadPlan::Commit {
            table: table.unwrap_or("dbscope_commit").to_string(),
            keys: a
                .keys
                .as_deref()
                .unwrap_or("own")
                .parse()
                .map_err(lab_error)?,
            dist: dist(a)?,
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
        WorkloadName::Script => WorkloadPlan::Script(crate::run::script_plan::script(&a.script)?),
        WorkloadName::Scan => WorkloadPlan::Scan(ScanConfig {
            table: table.unwrap_or("dbscope_scan").to_string(),
            rows: a.lab.rows.unwrap_or(DEFAULT_SCAN_ROWS),
            row_bytes: a.lab.row_bytes.unwrap_or(100),
            cache: a
                .lab
                .cache
                .as_deref()
                .unwrap_or("os")
                .parse()
                .map_err(lab_error)?,
            fresh: a.fresh,
        }),
        WorkloadName::Tpcc => WorkloadPlan::Tpcc(crate::run::tpcc_plan::tpcc(a)?),
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

/// The workload-specific options: each flag, whether `a` gives it, and the workloads it applies to.
fn workload_options(a: &RunArgs) -> Vec<(&'static str, bool, &'static [WorkloadName])> {
    use WorkloadName::*;
    let (l, e, sc, tp) = (&a.lab, &a.events, &a.script, &a.tpcc);
    vec![
        // bulkload runs its steps once per session: no schedule to pace, nothing to warm up
        // (every step would start in the warm-up and be left out of the statistics).
        (
            "--rate",
            a.rate.is_some(),
            &[Commit, TpchQ1, Lookup, Events, Script, Scan],
        ),
        (
            "--warmup",
            !a.warmup.is_zero(),
            &[Commit, TpchQ1, Lookup, Events, Script, Scan],
        ),
        ("--keys", a.keys.is_some(), &[Commit]),
        (
            "--table",
            a.table.is_some(),
            &[Commit, Lookup, Bulkload, Scan],
        ),
        // bulkload always loads a new table; tpch-q1 reads what `tpch load` made.
        ("--fresh", a.fresh, &[Commit, Lookup, Events, Scan, Tpcc]),
        ("--delta", a.delta.is_some(), &[TpchQ1]),
        ("--rows", l.rows.is_some(), &[Lookup, Bulkload, Scan]),
        (
            "--row-bytes",
            l.row_bytes.is_some(),
            &[Lookup, Bulkload, Scan],
        ),
        (
            "--tablespace-dir",
            l.tablespace_dir.is_some(),
            &[Lookup, Bulkload],
        ),
        ("--dist", l.dist.is_some(), &[Commit, Lookup, Events]),
        ("--cache", l.cache.is_some(), &[Lookup, Scan]),
        ("--matrix", a.matrix, &[Scan]),
        ("--restart-cmd", l.restart_cmd.is_some(), &[Lookup]),
        ("--restart-timeout", l.restart_timeout.is_some(), &[Lookup]),
        ("--groups", l.groups.is_some(), &[Bulkload]),
        ("--into", l.into.is_some(), &[Bulkload]),
        // Other workloads repeat with --ops or --duration.
        ("--repeat", l.repeat.is_some(), &[Bulkload]),
        ("--clients", e.clients.is_some(), &[Events]),
        ("--connections", e.connections.is_some(), &[Events]),
        ("--elements", e.elements.is_some(), &[Events]),
        ("--payload", e.payload.is_some(), &[Events]),
        ("--strategy", e.strategy.is_some(), &[Events]),
        ("--batch", e.batch.is_some(), &[Events]),
        ("--batch-wait", e.batch_wait.is_some(), &[Events]),
        ("--preallocate", e.preallocate.is_some(), &[Events]),
        ("--iterations", e.iterations, &[Events]),
        ("-f/--file", !sc.files.is_empty(), &[Script]),
        ("-b/--builtin", !sc.builtins.is_empty(), &[Script]),
        ("-D/--define", !sc.defines.is_empty(), &[Script]),
        ("-M/--protocol", sc.protocol.is_some(), &[Script]),
        ("--max-tries", sc.max_tries.is_some(), &[Script, Tpcc]),
        ("--latency-limit", sc.latency_limit.is_some(), &[Script]),
        ("--on-error", sc.on_error.is_some(), &[Script]),
        ("--init", sc.init.is_some(), &[Script]),
        ("--scale", sc.scale.is_some(), &[Script]),
        ("--warehouses", tp.warehouses.is_some(), &[Tpcc]),
        ("--build-sessions", tp.build_sessions.is_some(), &[Tpcc]),
        ("--mix", tp.mix.is_some(), &[Tpcc]),
        ("--no-check", tp.no_check, &[Tpcc]),
        ("--all-warehouses", tp.all_warehouses, &[Tpcc]),
        ("--server-side", tp.server_side, &[Tpcc]),
        ("--per-statement", tp.per_statement, &[Tpcc]),
        ("--keying-thinking", tp.keying_thinking, &[Tpcc]),
    ]
}

/// Refuses a workload's option given to a workload it does not apply to (it was silently
/// ignored: `run tpch-q1 --cache cold`, `run commit --rows N`; issue 34 item 13), naming the
/// workloads it applies to.
fn refuse_what_does_not_apply(a: &RunArgs) -> Result<(), Exit> {
    for (flag, given, applies) in workload_options(a) {
        if given && !applies.contains(&a.workload) {
            let names: Vec<&str> = applies.iter().map(|w| workload_name(*w)).collect();
            let to = match names.as_slice() {
                [one] => format!("the {one} workload only"),
                [init @ .., last] => format!("the {} and {last} workloads", init.join(", ")),
                [] => unreachable!("every option applies to some workload"),
            };
            return Err(
                anyhow!("{flag} applies to {to}, not {}", workload_name(a.workload)).into(),
            );
        }
    }
    if a.lab.restart_timeout.is_some() && a.lab.restart_cmd.is_none() {
        return Err(
            anyhow!("--restart-timeout is the time --restart-cmd may take: give both").into(),
        );
    }
    Ok(())
}

/// `--dist`, uniform when not given (commit's shared keys, events' elements).
fn dist(a: &RunArgs) -> Result<dbscope_lab::workload::keys::KeyDist, Exit> {
    Ok(a.lab
        .dist
        .as_deref()
        .unwrap_or("uniform")
        .parse()
        .map_err(lab_error)?)
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
        dist: a
            .dist
            .as_deref()
            .unwrap_or("uniform")
            .parse()
            .map_err(lab_error)?,
        place: Placement::from_option(a.tablespace_dir.as_deref()).map_err(lab_error)?,
        cache: a
            .cache
            .as_deref()
            .unwrap_or("warm")
            .parse()
            .map_err(lab_error)?,
        restart_cmd: a.restart_cmd.clone(),
        restart_timeout: a.restart_timeout.unwrap_or(DEFAULT_RESTART_TIMEOUT),
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
        groups: a.groups.unwrap_or(4100),
        row_bytes: a.row_bytes.unwrap_or(16),
        into: a
            .into
            .as_deref()
            .unwrap_or("temp")
            .parse()
            .map_err(lab_error)?,
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
        WorkloadName::Script => w_::script::ScriptWorkload::NAME,
        WorkloadName::Scan => w_::scan::ScanWorkload::NAME,
        WorkloadName::Tpcc => w_::tpcc::TpccWorkload::NAME,
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
        false => Some(
            e.strategy
                .as_deref()
                .unwrap_or("batch")
                .parse()
                .map_err(lab_error)?,
        ),
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
        explain: a.explain,
    };
    Ok(RunPlan {
        workload: WorkloadPlan::Events(EventsPlan {
            clients: e.clients.unwrap_or(150),
            connections: e.connections,
            rate,
            arrival,
            elements: e.elements.unwrap_or(10),
            dist: dist(a)?,
            payload: e.payload.unwrap_or(16),
            strategy,
            batch: e.batch.unwrap_or(5000),
            batch_wait: e.batch_wait.unwrap_or(Duration::from_millis(10)),
            preallocate: e.preallocate.unwrap_or(0),
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
    use crate::run::flags::flag;

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
