//! A transfer recorded as a run: the manifest at the start, one event per mapper and one for the
//! whole job ([`JOB_EVENT`]) per repetition, and the `transfer` counters at the end.

use std::collections::BTreeMap;

use dbscope_core::redact::redact;
use dbscope_core::{
    Column, Counter, CounterSection, CounterTable, CounterValue, Event, Manifest, Outcome,
    Recording, RunClock, TargetInfo, WorkloadInfo,
};

use crate::config::{LoadMode, MapperWork, TransferConfig, TransferResult};
use crate::error::Error;
use crate::split::{self, SplitKind};
use crate::stage::LoadWork;

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
        ("repeat".to_string(), cfg.repeat.into()),
    ]);
    if let Some(k) = split {
        params.insert("split".to_string(), k.name().into());
    }
    if workload == "transfer-in" {
        params.insert("mode".to_string(), cfg.mode.name().into());
        if let LoadMode::Upsert(key) = &cfg.mode {
            params.insert("key".to_string(), key.join(",").into());
        }
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
        kind: if spec.starts_with("sqlite:") {
            "sqlite"
        } else if crate::config::is_mysql(spec) {
            "mysql"
        } else {
            "postgres"
        }
        .into(),
        location: redact(spec),
        ..Default::default()
    });
    Ok(Recording::begin(&cfg.run, m)?)
}

/// The event of a whole transfer (one per repetition): from the first mapper's start to the last
/// one's end, rows all mappers moved, failed when one did. What two transfers with different
/// mappers have in common for `compare`.
pub const JOB_EVENT: &str = "transfer";

/// The event of one loader moving staged rows into the table or one of its partitions.
pub const LOAD_EVENT: &str = "load";

/// Writes per repetition one event per mapper (`event`), one per loader ([`LOAD_EVENT`]) and
/// one for the job ([`JOB_EVENT`]), and the `transfer` counters (with `counts`, rows inserted
/// and updated by a transfer in), and ends the run.
pub(crate) fn finish(
    mut rec: Recording,
    clock: &RunClock,
    event: &str,
    (reps, load_reps): (&[Vec<MapperWork>], &[Vec<LoadWork>]),
    detail: Option<String>,
    split: Option<&split::Plan>,
    counts: Option<(u64, u64)>,
) -> Result<TransferResult, Error> {
    let name = rec.names().intern(event);
    let load = rec.names().intern(LOAD_EVENT);
    let job = rec.names().intern(JOB_EVENT);
    let failed = rec.names().intern_outcome("mapper-failed");
    let rows_u32 = |n: u64| n.min(u32::MAX as u64) as u32;
    let mut events: Vec<Event> = Vec::new();
    let no_loads = Vec::new();
    for (rep, works) in reps.iter().enumerate() {
        let loads = load_reps.get(rep).unwrap_or(&no_loads);
        events.extend(loads.iter().map(|w| Event {
            session: w.loader,
            name: load,
            start_ns: w.start_ns,
            duration_ns: w.end_ns.saturating_sub(w.start_ns).max(1),
            intended_start_ns: None,
            outcome: if w.error.is_some() { failed } else { 0 },
            flags: 0,
            rows: rows_u32(w.inserted + w.updated),
        }));
        events.extend(works.iter().map(|w| Event {
            session: w.mapper,
            name,
            start_ns: w.start_ns,
            duration_ns: w.end_ns.saturating_sub(w.start_ns).max(1),
            intended_start_ns: None,
            outcome: if w.error.is_some() { failed } else { 0 },
            flags: 0,
            rows: rows_u32(w.rows),
        }));
        // The job spans the mappers and the loaders after them.
        if let (Some(first), Some(last)) = (
            works.iter().map(|w| w.start_ns).min(),
            works
                .iter()
                .map(|w| w.end_ns)
                .chain(loads.iter().map(|w| w.end_ns))
                .max(),
        ) {
            events.push(Event {
                session: 0,
                name: job,
                start_ns: first,
                duration_ns: last.saturating_sub(first).max(1),
                intended_start_ns: None,
                outcome: if works.iter().any(|w| w.error.is_some())
                    || loads.iter().any(|w| w.error.is_some())
                {
                    failed
                } else {
                    0
                },
                flags: 0,
                rows: rows_u32(works.iter().map(|w| w.rows).sum()),
            });
        }
    }
    events.sort_by_key(|e| e.start_ns);
    rec.write_block(&events)?;
    // The figures of one repetition: the last (all move the same rows); the time, their mean.
    let empty = Vec::new();
    let works = reps.last().unwrap_or(&empty);
    let rows: u64 = works.iter().map(|w| w.rows).sum();
    let bytes: u64 = works.iter().map(|w| w.bytes).sum();
    // From the first mapper's start to the last mapper's or loader's end.
    let span = |ws: &[MapperWork], ls: &[LoadWork]| {
        let first = ws.iter().map(|w| w.start_ns).min().unwrap_or(0);
        let last = ws
            .iter()
            .map(|w| w.end_ns)
            .chain(ls.iter().map(|w| w.end_ns))
            .max()
            .unwrap_or(clock.now_ns());
        last.saturating_sub(first) as f64 / 1e9
    };
    let seconds = if reps.is_empty() {
        span(&[], &[])
    } else {
        reps.iter()
            .enumerate()
            .map(|(i, ws)| span(ws, load_reps.get(i).map_or(&[][..], |l| &l[..])))
            .sum::<f64>()
            / reps.len() as f64
    };
    let load_rows: Vec<Vec<CounterValue>> = load_reps
        .iter()
        .enumerate()
        .flat_map(|(rep, ls)| ls.iter().map(move |w| (rep, w)))
        .map(|(rep, w)| {
            let s = w.end_ns.saturating_sub(w.start_ns) as f64 / 1e9;
            (reps.len() > 1)
                .then(|| CounterValue::count(rep as u64 + 1))
                .into_iter()
                .chain([
                    CounterValue::count(w.loader as u64),
                    CounterValue::Text(w.into.clone()),
                    CounterValue::count(w.inserted),
                    CounterValue::count(w.updated),
                    CounterValue::Float(s),
                    CounterValue::Text(w.error.clone().unwrap_or_default()),
                ])
                .collect()
        })
        .collect();
    let rate = |v: u64, s: f64| (s > 0.0).then(|| v as f64 / s);
    let repeated = reps.len() > 1;
    let table_rows = reps
        .iter()
        .enumerate()
        .flat_map(|(rep, works)| works.iter().map(move |w| (rep, w)))
        .map(|(rep, w)| {
            let s = w.end_ns.saturating_sub(w.start_ns) as f64 / 1e9;
            let mut row: Vec<CounterValue> = repeated
                .then(|| CounterValue::count(rep as u64 + 1))
                .into_iter()
                .collect();
            row.extend([
                CounterValue::count(w.mapper as u64),
                CounterValue::count(w.rows),
                CounterValue::count(w.bytes),
                CounterValue::Float(s),
                CounterValue::float(rate(w.rows, s)),
                CounterValue::float(rate(w.bytes, s).map(|b| b / 1e6)),
                CounterValue::Float(w.sync_ns as f64 / 1e9),
                CounterValue::Text(w.files.join(" ")),
                CounterValue::Text(w.error.clone().unwrap_or_default()),
            ]);
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
            Counter::new(
                "seconds",
                &if repeated {
                    format!("elapsed (mean of {})", reps.len())
                } else {
                    "elapsed".to_string()
                },
                CounterValue::Float(seconds),
                "s",
            )
            .decimals(3),
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
        .chain(repeated.then(|| {
            Counter::new(
                "repetitions",
                "repetitions",
                CounterValue::count(reps.len() as u64),
                "",
            )
        }))
        .chain(counts.into_iter().flat_map(|(ins, upd)| {
            [
                Counter::new("inserted", "rows inserted", CounterValue::count(ins), ""),
                Counter::new("updated", "rows updated", CounterValue::count(upd), ""),
            ]
        }))
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
            columns: repeated
                .then(|| Column::new("repetition", "repetition", ""))
                .into_iter()
                .chain([
                    Column::new("mapper", "mapper", ""),
                    Column::new("rows", "rows", ""),
                    Column::new("bytes", "bytes", ""),
                    Column::new("seconds", "time", "s").decimals(3),
                    Column::new("rows_per_s", "rows/s", "/s").decimals(0),
                    Column::new("mb_per_s", "MB/s", "MB/s").decimals(1),
                    Column::new("sync_seconds", "of which fsync", "s").decimals(3),
                    Column::new("files", "files", ""),
                    Column::new("error", "error", ""),
                ])
                .chain(split.map(|_| Column::new("range", "rows where", "")))
                .collect(),
            rows: table_rows,
        }]
        .into_iter()
        .chain((!load_rows.is_empty()).then(|| {
            CounterTable {
                key: "loaders".into(),
                title: "per loader (staged rows into the table or a partition)".into(),
                columns: repeated
                    .then(|| Column::new("repetition", "repetition", ""))
                    .into_iter()
                    .chain([
                        Column::new("loader", "loader", ""),
                        Column::new("into", "into", ""),
                        Column::new("inserted", "inserted", ""),
                        Column::new("updated", "updated", ""),
                        Column::new("seconds", "time", "s").decimals(3),
                        Column::new("error", "error", ""),
                    ])
                    .collect(),
                rows: load_rows,
            }
        }))
        .collect(),
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
        inserted_updated: counts,
        loaders: load_reps.last().map_or(0, Vec::len),
    })
}
