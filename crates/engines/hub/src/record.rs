//! A query recorded as a run: one event per source scan partition (`scan:TABLE`, its rows; the
//! SQL sent and the bytes in the `hub` counters' per-partition table), the query's phases
//! (`plan`, `execute`, `output`) and the whole `query`; counters per source table (rows, bytes,
//! what was pushed down); the manifest holds the query, the sources (passwords redacted) and the
//! plan.

use std::collections::BTreeMap;

use dbscope_core::{
    Column, Counter, CounterSection, CounterTable, CounterValue, Event, Manifest, Outcome,
    Recording, WorkloadInfo,
};

use crate::config::{QueryConfig, ScanSummary};
use crate::scanlog::ScanPart;
use crate::Error;

/// The event of the whole query: what two queries have in common for `compare`.
pub const QUERY_EVENT: &str = "query";

pub(crate) fn begin(cfg: &QueryConfig) -> Result<Recording, Error> {
    let params = BTreeMap::from([
        ("query".to_string(), cfg.sql.clone().into()),
        (
            "sources".to_string(),
            cfg.sources
                .iter()
                .map(|s| s.shown())
                .collect::<Vec<_>>()
                .into(),
        ),
        ("scan_connections".to_string(), cfg.scan_connections.into()),
        ("pushdown".to_string(), cfg.pushdown.into()),
    ]);
    let mut params = params;
    params.insert("engine".to_string(), cfg.engine.name().into());
    if let crate::config::Engine::Ballista { scheduler } = &cfg.engine {
        params.insert(
            "scheduler".to_string(),
            dbscope_core::redact::redact(scheduler).into(),
        );
    }
    if cfg.dataflow.is_some() {
        params.insert("dataflow".to_string(), true.into());
    }
    let mut m = Manifest::new(
        "hub",
        WorkloadInfo {
            name: "query".into(),
            params,
        },
        0,
    );
    m.command_line = cfg.command_line.clone();
    m.headline_event = Some(QUERY_EVENT.into());
    Ok(Recording::begin(&cfg.run, m)?)
}

/// A phase of the query: its name, start and end on the run's clock, rows, failed or not.
pub(crate) struct Phase {
    pub name: String,
    pub start_ns: u64,
    pub end_ns: u64,
    pub rows: u64,
    pub failed: bool,
}

pub(crate) struct Finish<'a> {
    pub phases: &'a [Phase],
    pub parts: &'a [ScanPart],
    pub scans: &'a [ScanSummary],
    pub rows: u64,
    pub seconds: f64,
    pub write_seconds: f64,
    pub open_seconds: f64,
    pub plan: String,
    pub cfg: &'a QueryConfig,
}

/// Writes the events and counters, and ends the run with `detail` (failed) or complete.
pub(crate) fn finish(
    mut rec: Recording,
    f: Finish<'_>,
    detail: Option<String>,
    interrupted: bool,
) -> Result<(dbscope_core::RunDir, u64), Error> {
    let failed = rec.names().intern_outcome("failed");
    let rows_u32 = |n: u64| n.min(u32::MAX as u64) as u32;
    let mut events: Vec<Event> = f
        .parts
        .iter()
        .map(|p| Event {
            session: p.partition,
            name: rec.names().intern(&format!("scan:{}", p.label)),
            start_ns: p.start_ns,
            duration_ns: p.end_ns.saturating_sub(p.start_ns).max(1),
            intended_start_ns: None,
            outcome: if p.error.is_some() { failed } else { 0 },
            flags: 0,
            rows: rows_u32(p.rows),
        })
        .collect();
    events.extend(f.phases.iter().map(|p| Event {
        session: 0,
        name: rec.names().intern(&p.name),
        start_ns: p.start_ns,
        duration_ns: p.end_ns.saturating_sub(p.start_ns).max(1),
        intended_start_ns: None,
        outcome: if p.failed { failed } else { 0 },
        flags: 0,
        rows: rows_u32(p.rows),
    }));
    events.sort_by_key(|e| e.start_ns);
    rec.write_block(&events)?;
    let scan_rows: u64 = f.parts.iter().map(|p| p.rows).sum();
    let scan_bytes: u64 = f.parts.iter().map(|p| p.bytes).sum();
    let text = |s: String| CounterValue::Text(s);
    rec.write_counters(CounterSection {
        key: "hub".into(),
        title: "Data hub query".into(),
        final_counts: true,
        counters: vec![
            Counter::new("rows", "result rows", CounterValue::count(f.rows), ""),
            Counter::new("seconds", "elapsed", CounterValue::Float(f.seconds), "s").decimals(3),
            Counter::new(
                "open_seconds",
                "opening the sources (before the clock)",
                CounterValue::Float(f.open_seconds),
                "s",
            )
            .decimals(3),
            Counter::new(
                "scan_rows",
                "rows from sources",
                CounterValue::count(scan_rows),
                "",
            ),
            Counter::new(
                "scan_bytes",
                "bytes from sources",
                CounterValue::count(scan_bytes),
                "",
            ),
            Counter::new(
                "scan_connections",
                "scan connections per PostgreSQL table",
                CounterValue::count(f.cfg.scan_connections as u64),
                "",
            ),
            Counter::new(
                "pushdown",
                "pushdown",
                CounterValue::Bool(f.cfg.pushdown),
                "",
            ),
            Counter::new(
                "write_seconds",
                "of which writing --out",
                CounterValue::Float(f.write_seconds),
                "s",
            )
            .decimals(3),
        ],
        tables: vec![
            CounterTable {
                key: "sources".into(),
                title: "per source table".into(),
                columns: vec![
                    Column::new("table", "table", ""),
                    Column::new("source", "source", ""),
                    Column::new("partitions", "partitions", ""),
                    Column::new("rows", "rows", ""),
                    Column::new("bytes", "bytes", ""),
                    Column::new("columns", "columns read", ""),
                    Column::new("pushed", "filters pushed", ""),
                    Column::new("kept", "filters in DataFusion", ""),
                    Column::new("join_filter", "join's run-time filter sent", ""),
                    Column::new("limit", "limit pushed", ""),
                    Column::new("split", "split", ""),
                ],
                rows: f
                    .scans
                    .iter()
                    .map(|s| {
                        vec![
                            text(s.table.clone()),
                            text(s.source.clone()),
                            CounterValue::count(s.partitions as u64),
                            CounterValue::count(s.rows),
                            CounterValue::count(s.bytes),
                            text(s.columns.join(", ")),
                            text(s.pushed.join(" AND ")),
                            text(s.kept.join(" AND ")),
                            text(s.dynamic.clone().unwrap_or_default()),
                            text(s.limit.map(|l| l.to_string()).unwrap_or_default()),
                            text(s.split.clone()),
                        ]
                    })
                    .collect(),
            },
            CounterTable {
                key: "partitions".into(),
                title: "per scan partition".into(),
                columns: vec![
                    Column::new("table", "table", ""),
                    Column::new("partition", "partition", ""),
                    Column::new("rows", "rows", ""),
                    Column::new("bytes", "bytes", ""),
                    Column::new("seconds", "time", "s").decimals(3),
                    Column::new("sql", "SQL sent", ""),
                    Column::new("error", "error", ""),
                ],
                rows: f
                    .parts
                    .iter()
                    .map(|p| {
                        vec![
                            text(p.label.clone()),
                            CounterValue::count(p.partition as u64),
                            CounterValue::count(p.rows),
                            CounterValue::count(p.bytes),
                            CounterValue::Float(p.end_ns.saturating_sub(p.start_ns) as f64 / 1e9),
                            text(p.sql.clone()),
                            text(match (&p.error, p.stopped_early) {
                                (Some(e), _) => e.clone(),
                                (None, true) => {
                                    "stopped early: the query needed no more rows".into()
                                }
                                (None, false) => String::new(),
                            }),
                        ]
                    })
                    .collect(),
            },
        ],
        notes: Vec::new(),
    })?;
    rec.manifest_mut()
        .workload
        .params
        .insert("plan".into(), f.plan.into());
    let outcome = if interrupted {
        Outcome::Interrupted
    } else if detail.is_some() {
        Outcome::Failed
    } else {
        Outcome::Complete
    };
    let n = events.len() as u64;
    Ok((rec.finish(outcome, detail)?, n))
}
