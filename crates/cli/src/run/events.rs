//! `dbscope run events`: CERN's PVSS archiver workload, one strategy or all of them in order.
//!
//! `--iterations` runs every strategy, with CERN's table at the end. The iterations directory is
//! itself a run (issue 34 item 11), as a sweep is: one `iteration` event per strategy's run (in
//! DIR/N-STRATEGY), and CERN's table as counters section `iterations`, which `report` shows and
//! `compare` of two iterations directories pairs strategy by strategy.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dbscope_core::record::{Recording, RunClock};
use dbscope_core::{
    Column, CounterSection, CounterTable, CounterValue, Event, Manifest, Outcome, RunDir,
    WorkloadInfo,
};
use dbscope_lab::plan::{strategies_left_out, EventsPlan, RunPlan};
use dbscope_lab::runner::{self, Progress, RunConfig, RunSpec};
use dbscope_lab::workload::events::{EventsConfig, EventsWorkload, Strategy};

use crate::common::{
    finish_run, redacted_command_line, run_progress_bar, show_run_progress, stop_on_ctrl_c,
};
use crate::exit::{Exit, EXIT_USAGE};
use crate::run::plan::lab_error;

/// Runs the events workload of `plan` (`e`, its options); `spec` is the target. The exit code,
/// and how the last strategy's run ended. `point`: a sweep's point, which prints nothing.
pub fn run_events(
    plan: &RunPlan,
    e: &EventsPlan,
    spec: &str,
    quiet: bool,
    point: bool,
) -> Result<(u8, Outcome), Exit> {
    let out = &plan.out;
    let target = dbscope_db::open_target_keyed(
        spec,
        &plan.target.settings,
        plan.target.key_file.as_deref(),
    )?;
    let dialect = target.dialect();
    let clients = e.clients;
    let rate = e.rate;
    let arrival = e.arrival;
    let iterations = e.strategy.is_none();
    let strategies = e.strategies(dialect).map_err(lab_error)?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let connections = e.connections(dialect, cpus).map_err(lab_error)?;
    let c = &plan.config;
    let duration = c.duration.unwrap_or(Duration::from_secs(10));
    let until = c.warmup + duration;

    let mut rows = Vec::new();
    let mut code = 0;
    let mut outcome = Outcome::Complete;
    let mut whole = match iterations {
        true => Some(begin_iterations(plan, e, &strategies, connections)?),
        false => None,
    };
    for (i, strategy) in strategies.iter().enumerate() {
        let started = (
            whole.as_ref().map_or(0, |(_, clock)| clock.now_ns()),
            std::time::Instant::now(),
        );
        let dir: PathBuf = if iterations {
            out.join(format!("{}-{}", i + 1, strategy.as_str()))
        } else {
            out.to_path_buf()
        };
        let cfg = EventsConfig {
            clients,
            rate,
            arrival,
            elements: e.elements,
            dist: e.dist,
            payload: e.payload,
            strategy: *strategy,
            batch: e.batch,
            batch_wait_ns: e.batch_wait.as_nanos() as u64,
            until_ns: Some(until.as_nanos() as u64),
            warmup_ns: c.warmup.as_nanos() as u64,
            // Each iteration starts from empty tables of its own shape.
            fresh: e.fresh || iterations,
            preallocate: if *strategy == Strategy::Partitioned {
                e.preallocate
            } else {
                0
            },
            seed: c.seed,
        };
        let workload = EventsWorkload::new(cfg, dialect)
            .map_err(lab_error)?
            .with_sessions(connections);
        let config = RunConfig {
            sessions: connections,
            ops_per_session: None,
            duration: Some(duration),
            ..c.clone()
        };
        let stop = stop_on_ctrl_c();
        let quiet = quiet || iterations;
        let bar = run_progress_bar(quiet && !iterations);
        let mut on_progress = |p: &Progress| show_run_progress(&bar, p, "commits");
        let result = runner::run(
            RunSpec {
                out: dir.clone(),
                command_line: redacted_command_line(),
                target: target.as_ref(),
                workload: &workload,
                config,
            },
            &stop,
            &mut on_progress,
        );
        if let Some(bar) = &bar {
            bar.finish_and_clear();
        }
        let result = result.map_err(|e: dbscope_lab::Error| Exit(EXIT_USAGE, lab_error(e)))?;
        outcome = result.outcome;
        code = if point {
            crate::common::outcome_code(result.outcome)
        } else {
            finish_run(
                &result.dir,
                result.outcome,
                result.detail.as_deref(),
                result.events,
                Some(result.errors),
                quiet,
            )?
        };
        if let Some((rec, _)) = &mut whole {
            let ev = Event {
                session: i as u32 + 1,
                name: rec.names().intern(ITERATION_EVENT),
                start_ns: started.0,
                duration_ns: (started.1.elapsed().as_nanos() as u64).max(1),
                intended_start_ns: None,
                outcome: match result.outcome {
                    Outcome::Complete | Outcome::Running => 0,
                    _ => rec.names().intern_outcome("iteration-failed"),
                },
                flags: 0,
                rows: result.events.min(u32::MAX as u64) as u32,
            };
            rec.write_block(&[ev])?;
            rows.push(table_row(*strategy, &result.dir)?);
        }
        if code != 0 {
            break;
        }
    }
    if let Some((mut rec, _)) = whole {
        rec.write_counters(section(&rows, clients, rate))?;
        let detail = (outcome != Outcome::Complete).then(|| {
            format!(
                "the iteration of {} ended {}",
                rows.last().map_or("-", |r| r.strategy.as_str()),
                outcome.as_str()
            )
        });
        rec.finish(outcome, detail)?;
        let mut stdout = std::io::stdout().lock();
        write!(stdout, "{}", render_table(&rows, clients, rate))?;
        if let Some(why) = strategies_left_out(dialect) {
            writeln!(stdout, "{why}")?;
        }
    }
    Ok((code, outcome))
}

/// Event of the iterations run, one per strategy's run.
const ITERATION_EVENT: &str = "iteration";

/// Counters section of the iterations run: CERN's table.
pub const ITERATIONS_SECTION: &str = "iterations";

/// Workload name of an iterations run's manifest.
pub const ITERATIONS_WORKLOAD: &str = "events-iterations";

/// Starts recording the iterations directory itself as a run.
fn begin_iterations(
    plan: &RunPlan,
    e: &EventsPlan,
    strategies: &[Strategy],
    connections: u32,
) -> Result<(Recording, RunClock), Exit> {
    let params = std::collections::BTreeMap::from([
        ("clients".to_string(), e.clients.into()),
        ("connections".to_string(), connections.into()),
        ("rate".to_string(), e.rate.into()),
        (
            "strategies".to_string(),
            serde_json::json!(strategies.iter().map(|s| s.as_str()).collect::<Vec<_>>()),
        ),
    ]);
    let mut manifest = Manifest::new(
        "workload",
        WorkloadInfo {
            name: ITERATIONS_WORKLOAD.into(),
            params,
        },
        plan.config.seed,
    );
    manifest.command_line = redacted_command_line();
    let mut rec = Recording::begin(&plan.out, manifest)?;
    let clock = rec.start_clock()?;
    Ok((rec, clock))
}

/// CERN's table as the iterations run's counters section: one row per strategy; `run` is the
/// iteration's directory name inside the iterations directory.
fn section(rows: &[Row], clients: u32, rate: f64) -> CounterSection {
    let f = |r: &Row, k: &str| CounterValue::float(r.values.get(k).copied().flatten());
    CounterSection {
        key: ITERATIONS_SECTION.into(),
        title: format!(
            "events iterations: {clients} clients × {} ev/s, strategies in CERN's order",
            dbscope_analysis::text::thousands(rate as u64)
        ),
        final_counts: true,
        counters: Vec::new(),
        tables: vec![CounterTable {
            key: "strategies".into(),
            title: "latency from each event's intended time to its commit".into(),
            columns: vec![
                Column::new("strategy", "strategy", ""),
                Column::new("offered_per_s", "offered", "ev/s").decimals(0),
                Column::new("achieved_per_s", "achieved", "ev/s").decimals(0),
                Column::new("backlog_at_end", "backlog end", ""),
                Column::new("co_p50_us", "p50", "µs").decimals(0),
                Column::new("co_p99_us", "p99", "µs").decimals(0),
                Column::new("co_p99_9_us", "p99.9", "µs").decimals(0),
                Column::new("top_wait", "top wait (% DB time)", ""),
                Column::new("run", "run", ""),
            ],
            rows: rows
                .iter()
                .map(|r| {
                    vec![
                        CounterValue::Text(r.strategy.as_str().into()),
                        f(r, "offered_per_s"),
                        f(r, "achieved_per_s"),
                        CounterValue::count(
                            r.values
                                .get("backlog_at_end")
                                .copied()
                                .flatten()
                                .map_or(0, |v| v.max(0.0) as u64),
                        ),
                        f(r, "co_p50_us"),
                        f(r, "co_p99_us"),
                        f(r, "co_p99_9_us"),
                        CounterValue::Text(r.top_wait.clone()),
                        CounterValue::Text(
                            r.dir
                                .file_name()
                                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
                        ),
                    ]
                })
                .collect(),
        }],
        notes: Vec::new(),
    }
}

/// One line of CERN's table, from a run's `events` counters.
struct Row {
    strategy: Strategy,
    dir: PathBuf,
    values: std::collections::BTreeMap<String, Option<f64>>,
    /// The iteration's top wait event and its share of DB time, or why there is none.
    top_wait: String,
}

fn table_row(strategy: Strategy, dir: &Path) -> Result<Row, Exit> {
    let run = RunDir::open(dir)?;
    let counters = run.counters()?;
    let mut values = std::collections::BTreeMap::new();
    if let Some(s) = counters.sections.iter().find(|s| s.key == "archive") {
        for c in &s.counters {
            let v = match &c.value {
                CounterValue::Int(n) => Some(*n as f64),
                CounterValue::Float(f) => Some(*f),
                _ => None,
            };
            values.insert(c.key.clone(), v);
        }
    }
    Ok(Row {
        strategy,
        dir: dir.to_path_buf(),
        values,
        top_wait: top_wait(&run),
    })
}

/// CERN's AWR column: the iteration's most sampled wait event (`CPU*` when its sessions were
/// active without one) and its share of DB time, from the run's active-session samples.
fn top_wait(run: &RunDir) -> String {
    use dbscope_analysis::observe;
    let Some(o) = observe::build_or_note(run, &[]) else {
        return "no samples".into();
    };
    if !o.wait_interface {
        return if o.target == "sqlite" || o.target == "null" {
            "no wait interface".into()
        } else {
            o.notes.first().cloned().unwrap_or_else(|| "-".into())
        };
    }
    match o.top_events.as_ref().and_then(|t| t.rows.first()) {
        Some(top) => format!("{} {:.0}%", top.event, top.pct_db_time),
        None => "no active samples".into(),
    }
}

fn render_table(rows: &[Row], clients: u32, rate: f64) -> String {
    use dbscope_analysis::text::{sig3, thousands};
    let mut out = format!(
        "\nevents: {clients} clients × {} ev/s, strategies in CERN's order (latency from each \
         event's intended time to its commit, µs)\n",
        thousands(rate as u64)
    );
    out.push_str(&format!(
        "{:<12} {:>11} {:>11} {:>12} {:>10} {:>10} {:>10}  {:<22} run\n",
        "strategy",
        "offered/s",
        "achieved/s",
        "backlog end",
        "p50",
        "p99",
        "p99.9",
        "top wait (% DB time)"
    ));
    for r in rows {
        let v = |k: &str| r.values.get(k).copied().flatten();
        let n = |k: &str| v(k).map_or("-".into(), |x| thousands(x.round() as u64));
        let us = |k: &str| v(k).map_or("-".into(), sig3);
        out.push_str(&format!(
            "{:<12} {:>11} {:>11} {:>12} {:>10} {:>10} {:>10}  {:<22} {}\n",
            r.strategy.as_str(),
            n("offered_per_s"),
            n("achieved_per_s"),
            n("backlog_at_end"),
            us("co_p50_us"),
            us("co_p99_us"),
            us("co_p99_9_us"),
            r.top_wait,
            r.dir.display()
        ));
    }
    out
}
