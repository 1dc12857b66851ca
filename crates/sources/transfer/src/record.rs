//! A transfer recorded as a run: the manifest at the start, one event per mapper and the
//! `transfer` counters at the end.

use std::collections::BTreeMap;

use dbscope_core::redact::redact;
use dbscope_core::{
    Column, Counter, CounterSection, CounterTable, CounterValue, Event, Manifest, Outcome,
    Recording, RunClock, TargetInfo, WorkloadInfo,
};

use crate::config::{MapperWork, TransferConfig, TransferResult};
use crate::error::Error;
use crate::split::{self, SplitKind};

pub(crate) fn begin(
    cfg: &TransferConfig,
    workload: &str,
    spec: &str,
    split: Option<SplitKind>,
) -> Result<Recording, Error> {
    let mut params = BTreeMap::from([
        ("table".to_string(), cfg.table.table.clone().into()),
        ("dir".to_string(), cfg.dir.display().to_string().into()),
        ("mappers".to_string(), cfg.mappers.into()),
        ("format".to_string(), cfg.file.format.ext().into()),
    ]);
    if let Some(k) = split {
        params.insert("split".to_string(), k.name().into());
    }
    let mut m = Manifest::new(
        "transfer",
        WorkloadInfo {
            name: workload.into(),
            params,
        },
        0,
    );
    m.command_line = cfg.command_line.clone();
    m.target = Some(TargetInfo {
        kind: "postgres".into(),
        location: redact(spec),
        ..Default::default()
    });
    Ok(Recording::begin(&cfg.run, m)?)
}

/// Writes one event per mapper and the `transfer` counters, and ends the run.
pub(crate) fn finish(
    mut rec: Recording,
    clock: &RunClock,
    event: &str,
    works: &[MapperWork],
    detail: Option<String>,
    split: Option<&split::Plan>,
) -> Result<TransferResult, Error> {
    let name = rec.names().intern(event);
    let failed = rec.names().intern_outcome("mapper-failed");
    let mut events: Vec<Event> = works
        .iter()
        .map(|w| Event {
            session: w.mapper,
            name,
            start_ns: w.start_ns,
            duration_ns: w.end_ns.saturating_sub(w.start_ns).max(1),
            intended_start_ns: None,
            outcome: if w.error.is_some() { failed } else { 0 },
            flags: 0,
            rows: w.rows.min(u32::MAX as u64) as u32,
        })
        .collect();
    events.sort_by_key(|e| e.start_ns);
    rec.write_block(&events)?;
    let rows: u64 = works.iter().map(|w| w.rows).sum();
    let bytes: u64 = works.iter().map(|w| w.bytes).sum();
    let first = works.iter().map(|w| w.start_ns).min().unwrap_or(0);
    let last = works
        .iter()
        .map(|w| w.end_ns)
        .max()
        .unwrap_or(clock.now_ns());
    let seconds = last.saturating_sub(first) as f64 / 1e9;
    let rate = |v: u64, s: f64| (s > 0.0).then(|| v as f64 / s);
    let table_rows = works
        .iter()
        .map(|w| {
            let s = w.end_ns.saturating_sub(w.start_ns) as f64 / 1e9;
            let mut row = vec![
                CounterValue::count(w.mapper as u64),
                CounterValue::count(w.rows),
                CounterValue::count(w.bytes),
                CounterValue::Float(s),
                CounterValue::float(rate(w.rows, s)),
                CounterValue::float(rate(w.bytes, s).map(|b| b / 1e6)),
                CounterValue::Float(w.sync_ns as f64 / 1e9),
                CounterValue::Text(w.files.join(" ")),
                CounterValue::Text(w.error.clone().unwrap_or_default()),
            ];
            if let Some(sp) = split {
                let r = sp.parts.get(w.mapper as usize).map(split::Part::describe);
                row.push(CounterValue::Text(r.unwrap_or_default().to_string()));
            }
            row
        })
        .collect();
    rec.write_counters(CounterSection {
        key: "transfer".into(),
        title: format!("Transfer ({event})"),
        final_counts: true,
        counters: vec![
            Counter::new("rows", "rows", CounterValue::count(rows), ""),
            Counter::new("bytes", "bytes", CounterValue::count(bytes), ""),
            Counter::new("seconds", "elapsed", CounterValue::Float(seconds), "s").decimals(3),
            Counter::new(
                "rows_per_s",
                "rows/s",
                CounterValue::float(rate(rows, seconds)),
                "/s",
            )
            .decimals(0),
            Counter::new(
                "mb_per_s",
                "MB/s",
                CounterValue::float(rate(bytes, seconds).map(|b| b / 1e6)),
                "MB/s",
            )
            .decimals(1),
            Counter::new(
                "verified",
                "verified",
                CounterValue::Bool(detail.is_none()),
                "",
            ),
        ]
        .into_iter()
        .chain(split.map(|sp| {
            Counter::new(
                "split",
                "split",
                CounterValue::Text(sp.kind.name().into()),
                "",
            )
        }))
        .collect(),
        tables: vec![CounterTable {
            key: "mappers".into(),
            title: "per mapper".into(),
            columns: [
                Column::new("mapper", "mapper", ""),
                Column::new("rows", "rows", ""),
                Column::new("bytes", "bytes", ""),
                Column::new("seconds", "time", "s").decimals(3),
                Column::new("rows_per_s", "rows/s", "/s").decimals(0),
                Column::new("mb_per_s", "MB/s", "MB/s").decimals(1),
                Column::new("sync_seconds", "of which fsync", "s").decimals(3),
                Column::new("files", "files", ""),
                Column::new("error", "error", ""),
            ]
            .into_iter()
            .chain(split.map(|_| Column::new("range", "rows where", "")))
            .collect(),
            rows: table_rows,
        }],
        notes: split
            .map(|sp| format!("split: {} ({})", sp.kind.name(), sp.why))
            .into_iter()
            .collect(),
    })?;
    let outcome = if detail.is_some() {
        Outcome::Failed
    } else {
        Outcome::Complete
    };
    let run = rec.finish(outcome, detail.clone())?;
    Ok(TransferResult {
        run: run.path.clone(),
        outcome,
        detail,
        rows,
        bytes,
        seconds,
        events: events.len() as u64,
        split: split.map(|sp| format!("split by {}: {}", sp.kind.name(), sp.why)),
    })
}
