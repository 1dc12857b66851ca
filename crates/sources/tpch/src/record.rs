//! Records a map/combine/reduce Q1 job as a run (manifest + events: one `map` per split, `reduce`,
//! `finalize`, and `q1` for the whole job), so `dbscope report` and `compare` apply to it.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::Utc;
use dbscope_core::{Event, Manifest, Outcome, Recording, RunDir, WorkloadInfo};

use crate::q1::{Q1Config, Q1Output};

/// Writes the run of one or more repetitions of a finished job into `out` (which must not hold a
/// run yet). `started` is when the first job started (UTC); `jobs` holds each job's start (ns after
/// `started`) and output, so event times are offsets from `started`.
pub fn record_q1(
    out: &Path,
    command_line: Vec<String>,
    config: &Q1Config,
    inputs: &[String],
    jobs: &[(u64, Q1Output)],
    started: chrono::DateTime<Utc>,
) -> dbscope_core::Result<RunDir> {
    if jobs.is_empty() {
        return Err(dbscope_core::Error::Format {
            path: out.to_owned(),
            msg: "no Q1 job to record".into(),
        });
    }
    record(out, command_line, config, inputs, jobs, started, None)
}

/// Writes the run of a job that failed (`why`: the input changed while it was read, a line that
/// cannot be parsed, …) with the repetitions that finished before it, as a failed run (issue 27:
/// a failed job recorded nothing).
pub fn record_q1_failed(
    out: &Path,
    command_line: Vec<String>,
    config: &Q1Config,
    inputs: &[String],
    jobs: &[(u64, Q1Output)],
    started: chrono::DateTime<Utc>,
    why: String,
) -> dbscope_core::Result<RunDir> {
    record(out, command_line, config, inputs, jobs, started, Some(why))
}

fn record(
    out: &Path,
    command_line: Vec<String>,
    config: &Q1Config,
    inputs: &[String],
    jobs: &[(u64, Q1Output)],
    started: chrono::DateTime<Utc>,
    failed: Option<String>,
) -> dbscope_core::Result<RunDir> {
    let mut params: BTreeMap<String, serde_json::Value> = BTreeMap::from([
        ("mappers".to_string(), (config.mappers as u64).into()),
        ("combiner".to_string(), config.combiner.into()),
        ("delta_days".to_string(), config.delta_days.into()),
        ("inputs".to_string(), inputs.to_vec().into()),
        ("repeat".to_string(), (jobs.len() as u64).into()),
    ]);
    if let Some((_, output)) = jobs.first() {
        params.extend([
            ("splits".to_string(), (output.splits as u64).into()),
            ("bytes".to_string(), output.bytes.into()),
            ("lines".to_string(), output.lines.into()),
            (
                "rows_aggregated".to_string(),
                output.answer.rows_aggregated().into(),
            ),
        ]);
    }
    let mut manifest = Manifest::new(
        "tpch q1",
        WorkloadInfo {
            name: "tpch-q1-mapreduce".into(),
            params,
        },
        0,
    );
    manifest.command_line = command_line;
    manifest.started_utc = started;
    manifest.clock_origin_unix_ns = started.timestamp_nanos_opt().unwrap_or(0);
    let mut rec = Recording::begin(out, manifest)?;
    let names = rec.names().clone();
    let (map, reduce, finalize, q1) = (
        names.intern("map"),
        names.intern("reduce"),
        names.intern("finalize"),
        names.intern("q1"),
    );
    let ev = |session: u32, name, start: u64, end: u64, rows: u64| Event {
        session,
        name,
        start_ns: start,
        duration_ns: end.saturating_sub(start).max(1),
        intended_start_ns: None,
        outcome: 0,
        flags: 0,
        rows: rows.min(u32::MAX as u64) as u32,
    };
    // Session 0 is the driver and reducer; mapper threads are sessions 1…N.
    let mut events: Vec<Event> = Vec::new();
    for (at, output) in jobs {
        let t = &output.timings;
        events.extend(
            t.map
                .iter()
                .map(|m| ev(m.mapper + 1, map, at + m.start, at + m.end, m.lines)),
        );
        let groups = output.answer.rows.len() as u64;
        let (r, f) = (t.reduce, t.finish);
        events.push(ev(0, reduce, at + r.start, at + r.end, groups));
        events.push(ev(0, finalize, at + f.start, at + f.end, groups));
        events.push(ev(0, q1, *at, at + t.total, groups));
    }
    events.sort_by_key(|e| e.start_ns);
    if !events.is_empty() {
        rec.write_block(&events)?;
    }
    match failed {
        None => rec.finish(Outcome::Complete, None),
        Some(why) => rec.finish(Outcome::Failed, Some(why)),
    }
}
