//! A TPC-C build recorded as a run of its own (workload `tpcc-build`), so its time is measured
//! like any run's: one event per step ([`BuildStep`]: `create-tables`, `load` per build session
//! with its rows, `create-indexes`, `analyze`), counter section `tpcc_build` (rows per table,
//! elapsed, rows/s), outcome `failed` with the reason when the build failed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dbscope_core::{
    Column, Counter, CounterSection, CounterTable, CounterValue, Event, Manifest, Outcome,
    Recording, WorkloadInfo,
};
use dbscope_db::{Target, TargetError};

use super::build::{build_timed, BuildOptions, BuildStep, Built};

/// The recorded build.
pub struct BuildRun {
    /// The run directory.
    pub run: PathBuf,
    /// What the build did, or why it failed (the run then says `failed`).
    pub result: Result<Built, TargetError>,
}

/// Builds as [`super::build`] does, recording the build in `dir`. Errors here are the run
/// directory's; the build's own are in [`BuildRun::result`].
pub fn build_recorded(
    target: &dyn Target,
    opts: &BuildOptions,
    dir: &Path,
    command_line: Vec<String>,
) -> Result<BuildRun, dbscope_core::Error> {
    let params = BTreeMap::from([
        ("warehouses".to_string(), opts.warehouses.into()),
        ("build_sessions".to_string(), opts.build_sessions.into()),
        ("fresh".to_string(), opts.fresh.into()),
    ]);
    let mut m = Manifest::new(
        "workload",
        WorkloadInfo {
            name: "tpcc-build".into(),
            params,
        },
        opts.seed,
    );
    m.command_line = command_line;
    m.target = Some(
        target
            .describe()
            .unwrap_or_else(|_| dbscope_core::TargetInfo {
                kind: target.kind().into(),
                ..Default::default()
            }),
    );
    let mut rec = Recording::begin(dir, m)?;
    let clock = rec.start_clock()?;
    let (result, steps) = build_timed(target, opts, &|| clock.now_ns());
    if let Some(info) = rec.manifest_mut().target.as_mut() {
        crate::runner::add_table_facts(info, target);
    }
    let mut events: Vec<Event> = steps
        .iter()
        .map(|s| Event {
            session: s.session,
            name: rec.names().intern(s.name),
            start_ns: s.start_ns,
            duration_ns: s.end_ns.saturating_sub(s.start_ns).max(1),
            intended_start_ns: None,
            outcome: match &s.error {
                Some(class) => rec.names().intern_outcome(class).max(1),
                None => 0,
            },
            flags: 0,
            rows: s.rows.min(u32::MAX as u64) as u32,
        })
        .collect();
    events.sort_by_key(|e| e.start_ns);
    rec.write_block(&events)?;
    if let Ok(b) = &result {
        rec.write_counters(section(b, &steps))?;
    }
    let (outcome, detail) = match &result {
        Ok(_) => (Outcome::Complete, None),
        Err(e) => (
            Outcome::Failed,
            Some(format!("the build failed: {} ({})", e.message, e.class)),
        ),
    };
    let run = rec.finish(outcome, detail)?;
    Ok(BuildRun {
        run: run.path.clone(),
        result,
    })
}

fn section(b: &Built, steps: &[BuildStep]) -> CounterSection {
    let start = steps.iter().map(|s| s.start_ns).min().unwrap_or(0);
    let end = steps.iter().map(|s| s.end_ns).max().unwrap_or(0);
    let secs = end.saturating_sub(start) as f64 / 1e9;
    let rows: u64 = b.rows.iter().map(|(_, n)| n).sum();
    CounterSection {
        key: "tpcc_build".into(),
        title: "TPC-C build".into(),
        final_counts: true,
        counters: vec![
            Counter::new("rows", "rows", CounterValue::count(rows), ""),
            Counter::new("seconds", "elapsed", CounterValue::Float(secs), "s").decimals(3),
            Counter::new(
                "rows_per_s",
                "rows/s",
                CounterValue::float((secs > 0.0).then(|| rows as f64 / secs)),
                "",
            )
            .decimals(0),
            Counter::new(
                "sessions",
                "build sessions",
                CounterValue::count(b.sessions as u64),
                "",
            ),
        ],
        tables: vec![CounterTable {
            key: "tables".into(),
            title: "rows loaded".into(),
            columns: vec![
                Column::new("table", "table", ""),
                Column::new("rows", "rows", ""),
            ],
            rows: b
                .rows
                .iter()
                .map(|(t, n)| vec![CounterValue::Text(t.to_string()), CounterValue::count(*n)])
                .collect(),
        }],
        notes: Vec::new(),
    }
}
