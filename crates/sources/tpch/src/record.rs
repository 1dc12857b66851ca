//! Records a map/combine/reduce Q1 job as a run (manifest + events: one `map` per split, `reduce`,
//! `finalize`, and `q1` for the whole job), so `dbscope report` and `compare` apply to it.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::Utc;
use dbscope_core::{
    Column, CounterSection, CounterTable, CounterValue, Event, Manifest, Outcome, Recording,
    RunDir, WorkloadInfo,
};

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
    manifest.headline_event = Some("q1".into());
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
    if !jobs.is_empty() {
        rec.write_counters(job_counters(config, jobs))?;
    }
    match failed {
        None => rec.finish(Outcome::Complete, None),
        Some(why) => rec.finish(Outcome::Failed, Some(why)),
    }
}

/// Key of the run's counters section with the jobs' counters.
pub const JOB_SECTION: &str = "job";

/// Hadoop's job counters for each job (issue 34 item 5): the records the map side read and
/// emitted, what the combiner made of them, the records shipped to the reducer, and the CPU time
/// of the job's threads beside its elapsed time ("Cumulative CPU").
fn job_counters(config: &Q1Config, jobs: &[(u64, Q1Output)]) -> CounterSection {
    let int = |v: u64| CounterValue::Int(v.min(i64::MAX as u64) as i64);
    let ms = |ns: u64| CounterValue::Float(ns as f64 / 1e6);
    let rows = jobs
        .iter()
        .enumerate()
        .map(|(i, (_, o))| {
            let w = &o.work;
            let combine_out = if config.combiner {
                int(w.shipped_records)
            } else {
                CounterValue::None
            };
            vec![
                int(i as u64 + 1),
                int(o.lines),
                int(o.answer.rows_aggregated()),
                combine_out,
                int(w.shipped_records),
                int(w.shipped_messages),
                ms(w.map_cpu_ns),
                ms(w.reduce_cpu_ns),
                ms(w.cpu_ns()),
                ms(o.timings.total),
                CounterValue::float(
                    (o.timings.total > 0).then(|| w.cpu_ns() as f64 / o.timings.total as f64),
                ),
            ]
        })
        .collect();
    let combiner = if config.combiner { "on" } else { "off" };
    CounterSection {
        key: JOB_SECTION.into(),
        title: format!(
            "map/combine/reduce, as Hadoop's job counters ({} mapper(s), combiner {combiner})",
            config.mappers
        ),
        final_counts: true,
        counters: Vec::new(),
        tables: vec![CounterTable {
            key: "jobs".into(),
            title: "records from map to reduce, and the CPU time of the job's threads".into(),
            columns: vec![
                Column::new("job", "job", ""),
                Column::new("map_input_records", "map input records", ""),
                Column::new("map_output_records", "map output records", ""),
                Column::new("combine_output_records", "combine output records", ""),
                Column::new("reduce_input_records", "records shipped to reduce", ""),
                Column::new("shuffle_messages", "shuffle messages", ""),
                Column::new("map_cpu_ms", "map CPU", "ms").decimals(1),
                Column::new("reduce_cpu_ms", "reduce CPU", "ms").decimals(1),
                Column::new("cpu_ms", "cumulative CPU", "ms").decimals(1),
                Column::new("elapsed_ms", "elapsed", "ms").decimals(1),
                Column::new("cpu_per_elapsed", "CPU / elapsed", "").decimals(2),
            ],
            rows,
        }],
        notes: vec![
            "map output records: rows that passed Q1's date filter; with the combiner each map \
             task ships its partial groups instead of them"
                .into(),
        ],
    }
}
