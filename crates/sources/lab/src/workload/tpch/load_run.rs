//! `tpch load` recorded as a run (issue 15): one event per file loaded, named by its table
//! (session = the loading session, rows = rows loaded; outcome `load-failed` for the file that
//! failed), one event `TABLE chunk` per chunk the loader sent (1 MiB of COPY data read, checked
//! and sent on PostgreSQL; one 1,000-row INSERT on SQLite), an event `create-tables` for the
//! schema, and counters section `tpch_load` (rows, bytes,
//! rows/s, MB/s, and per table its files, rows, bytes, time, rates and outcome), so `report` and
//! `compare` read a load as they read any run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;

use dbscope_core::{
    Column, Counter, CounterSection, CounterTable, CounterValue, Event, Manifest, Outcome,
    Recording, WorkloadInfo,
};

use super::load::{load_timed, FileLoaded, LoadError, LoadFile, LoadSummary};
use dbscope_db::Target;

/// What `tpch load` was asked to do, besides the files.
pub struct LoadRunConfig<'a> {
    /// Drop and recreate the tables first.
    pub fresh: bool,
    /// Rows per transaction (SQLite).
    pub commit_every: u64,
    /// Sessions loading files in parallel (PostgreSQL).
    pub parallel: usize,
    /// The run directory.
    pub run: &'a Path,
    /// The command line, passwords redacted.
    pub command_line: Vec<String>,
    /// The directory of the files.
    pub dir: &'a Path,
}

/// The recorded load.
pub struct LoadRun {
    /// The run directory.
    pub run: PathBuf,
    /// Events written.
    pub events: u64,
    /// The load's summary, or why it failed (the run then says `failed` with this detail).
    pub result: Result<LoadSummary, LoadError>,
}

/// Loads `files` into `target` as [`super::load::load`] does and records the load in
/// `cfg.run`. Errors here are the run directory's; the load's own are in [`LoadRun::result`].
pub fn load_recorded(
    target: &dyn Target,
    files: &[LoadFile],
    cfg: &LoadRunConfig,
    progress: &AtomicU64,
) -> Result<LoadRun, dbscope_core::Error> {
    let params = BTreeMap::from([
        ("dir".to_string(), cfg.dir.display().to_string().into()),
        ("files".to_string(), (files.len() as u64).into()),
        ("fresh".to_string(), cfg.fresh.into()),
        ("commit_every".to_string(), cfg.commit_every.into()),
    ]);
    let mut m = Manifest::new(
        "tpch",
        WorkloadInfo {
            name: "tpch-load".into(),
            params,
        },
        0,
    );
    m.command_line = cfg.command_line.clone();
    m.target = Some(
        target
            .describe()
            .unwrap_or_else(|_| dbscope_core::TargetInfo {
                kind: target.kind().into(),
                ..Default::default()
            }),
    );
    let mut rec = Recording::begin(cfg.run, m)?;
    let clock = rec.start_clock()?;
    let (timings, result) = load_timed(
        target,
        files,
        cfg.fresh,
        cfg.commit_every,
        cfg.parallel,
        progress,
        &clock,
    );
    if let Some(info) = rec.manifest_mut().target.as_mut() {
        crate::runner::add_table_facts(info, target);
    }
    let failed = rec.names().intern_outcome("load-failed");
    let mut events = Vec::with_capacity(timings.len());
    for t in &timings {
        let name = match files.get(t.file) {
            Some(f) => f.table,
            None => "create-tables",
        };
        events.push(Event {
            session: t.session,
            name: rec.names().intern(name),
            start_ns: t.start_ns,
            duration_ns: t.end_ns.saturating_sub(t.start_ns).max(1),
            intended_start_ns: None,
            outcome: if t.error.is_some() { failed } else { 0 },
            flags: 0,
            rows: t.rows.min(u32::MAX as u64) as u32,
        });
    }
    for t in &timings {
        let Some(f) = files.get(t.file) else { continue };
        let name = rec.names().intern(&format!("{} chunk", f.table));
        for &(start_ns, end_ns, rows) in &t.chunks {
            events.push(Event {
                session: t.session,
                name,
                start_ns,
                duration_ns: end_ns.saturating_sub(start_ns).max(1),
                intended_start_ns: None,
                outcome: 0,
                flags: 0,
                rows: rows.min(u32::MAX as u64) as u32,
            });
        }
    }
    events.sort_by_key(|e| e.start_ns);
    rec.write_block(&events)?;
    rec.write_counters(counters(files, &timings, result.as_ref().ok()))?;
    let (outcome, detail) = match &result {
        Ok(_) => (Outcome::Complete, None),
        Err(e) => (Outcome::Failed, Some(e.to_string())),
    };
    let run = rec.finish(outcome, detail)?;
    Ok(LoadRun {
        run: run.path.clone(),
        events: events.len() as u64,
        result,
    })
}

fn counters(
    files: &[LoadFile],
    timings: &[FileLoaded],
    summary: Option<&LoadSummary>,
) -> CounterSection {
    let rate = |v: u64, ns: u64| (ns > 0).then(|| v as f64 / (ns as f64 / 1e9));
    let loads: Vec<&FileLoaded> = timings.iter().filter(|t| t.file < files.len()).collect();
    let mut tables: Vec<&'static str> = files.iter().map(|f| f.table).collect();
    tables.dedup();
    let rows_of = |t: &str| {
        let mine: Vec<&&FileLoaded> = loads.iter().filter(|l| files[l.file].table == t).collect();
        let start = mine.iter().map(|l| l.start_ns).min();
        let end = mine.iter().map(|l| l.end_ns).max();
        let span = end.zip(start).map_or(0, |(e, s)| e.saturating_sub(s));
        let rows: u64 = mine.iter().map(|l| l.rows).sum();
        let bytes: u64 = mine.iter().map(|l| l.bytes).sum();
        let wanted = files.iter().filter(|f| f.table == t).count();
        let outcome = if mine.iter().any(|l| l.error.is_some()) {
            "failed"
        } else if mine.len() < wanted {
            "not loaded"
        } else {
            "ok"
        };
        vec![
            CounterValue::Text(t.to_string()),
            CounterValue::count(mine.len() as u64),
            CounterValue::count(rows),
            CounterValue::count(bytes),
            CounterValue::Float(span as f64 / 1e9),
            CounterValue::float(rate(rows, span)),
            CounterValue::float(rate(bytes, span).map(|b| b / 1e6)),
            CounterValue::Text(outcome.into()),
        ]
    };
    let table_rows: Vec<Vec<CounterValue>> = tables.iter().map(|t| rows_of(t)).collect();
    let rows: u64 = loads.iter().map(|l| l.rows).sum();
    let bytes: u64 = loads
        .iter()
        .filter(|l| l.error.is_none())
        .map(|l| l.bytes)
        .sum();
    // From the first table created to the last file loaded: the load's wall time.
    let start = timings.iter().map(|t| t.start_ns).min().unwrap_or(0);
    let end = timings.iter().map(|t| t.end_ns).max().unwrap_or(0);
    let span = end.saturating_sub(start);
    CounterSection {
        key: "tpch_load".into(),
        title: "TPC-H load".into(),
        final_counts: true,
        counters: vec![
            Counter::new("rows", "rows", CounterValue::count(rows), ""),
            Counter::new("bytes", "bytes (files)", CounterValue::count(bytes), ""),
            Counter::new(
                "seconds",
                "elapsed",
                CounterValue::Float(span as f64 / 1e9),
                "s",
            )
            .decimals(3),
            Counter::new(
                "rows_per_s",
                "rows/s",
                CounterValue::float(rate(rows, span)),
                "/s",
            )
            .decimals(0),
            Counter::new(
                "mb_per_s",
                "MB/s",
                CounterValue::float(rate(bytes, span).map(|b| b / 1e6)),
                "MB/s",
            )
            .decimals(1),
            Counter::new(
                "sessions",
                "sessions",
                CounterValue::count(summary.map_or(0, |s| s.sessions as u64)),
                "",
            ),
        ],
        tables: vec![CounterTable {
            key: "tables".into(),
            title: "per table".into(),
            columns: vec![
                Column::new("table", "table", ""),
                Column::new("files", "files", ""),
                Column::new("rows", "rows", ""),
                Column::new("bytes", "bytes", ""),
                Column::new("seconds", "time", "s").decimals(3),
                Column::new("rows_per_s", "rows/s", "/s").decimals(0),
                Column::new("mb_per_s", "MB/s", "MB/s").decimals(1),
                Column::new("outcome", "outcome", ""),
            ],
            rows: table_rows,
        }],
        notes: Vec::new(),
    }
}
