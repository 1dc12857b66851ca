//! [`build`]: the report of a run from one pass over its event files.
//!
//! Per-name accumulators reduced to the event summaries; the active-session samples are joined to
//! the events in the same pass.

use std::collections::{BTreeMap, HashMap};

use dbscope_core::{Error, Event, NameId, NameTable, Outcome, RunDir, TailState};

use super::model::{
    MeasuredReport, ReadReport, Report, ReportOptions, RunReport, SettingRow, TargetReport,
};
use crate::summary::{EventReport, FromIntended, LatencyAcc, MemoryBudget, SessionSpread};

/// Builds the report of a run, reading its event files once.
///
/// A run that recorded no end, event files that end in a torn or damaged block, event files the
/// manifest lists but that are missing, and fewer events than the manifest's `events_written` all
/// give a report with [`Report::incomplete`] set rather than an error; errors are I/O failures while
/// reading.
pub fn build(run: &RunDir, opts: &ReportOptions) -> Result<Report, Error> {
    let m = &run.manifest;

    // Read the files that exist; a missing one is reported, not fatal.
    let mut readable = run.clone();
    let mut missing_files = Vec::new();
    readable.manifest.event_files.retain(|f| {
        let present = run.path.join(f).is_file();
        if !present {
            missing_files.push(f.clone());
        }
        present
    });
    let mut acc = Accumulator::new(opts.include_warmup);
    // Active-session samples are joined to the client events in the same pass.
    let mut join = crate::observe::SampleJoin::load(run);
    let mut pgbench = crate::pgbench::PgbenchAcc::for_run(m, opts.include_warmup);
    let (_, tail) = readable.for_each_block(|names, events| {
        acc.add_block(names, events);
        if let Some(p) = pgbench.as_mut() {
            p.add_block(names, events);
        }
        if let Some(j) = join.as_mut() {
            j.add_block(names, events);
        }
    })?;

    let mut incomplete = incompleteness(run, &tail, &missing_files);
    // Counters the run cannot give are reported like missing data, not as an error: the events
    // may still be worth reading.
    let counters = match run.counters() {
        Ok(c) => c.sections,
        Err(e) => {
            let why = format!("its run-level counters cannot be read ({e})");
            incomplete = Some(match incomplete {
                Some(w) => format!("{w}; {why}"),
                None => why,
            });
            Vec::new()
        }
    };
    let span_ns = match (acc.first_start, acc.last_end) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    let span_s = span_ns.map(|ns| ns as f64 / 1e9);
    let measured = MeasuredReport {
        include_warmup: opts.include_warmup,
        events: acc.names.iter().map(|n| n.durations.len()).sum(),
        errors: acc.names.iter().map(|n| n.errors).sum(),
        warmup_excluded: acc.names.iter().map(|n| n.warmup_excluded).sum(),
        first_start_ns: acc.first_start,
        last_end_ns: acc.last_end,
        span_s,
    };
    let open_loop = acc.backlog.finish().map(|b| b.with_pacing(&counters));
    // An import without start times laid its events end to end on a made-up clock: no
    // throughput comes from that (issue 34).
    let rate_span = if timeless_import(m) { None } else { span_ns };
    let mut events: Vec<EventReport> = acc.names.into_iter().map(|n| n.finish(rate_span)).collect();
    if let Some(r) = &m.runner {
        race_notes(&mut events, &counters, r.sessions);
    }
    let observe = crate::observe::build_or_note_joined(run, &events, join);

    let elapsed_s = m.ended_utc.map(|end| {
        let d = end - m.started_utc;
        d.num_nanoseconds()
            .map(|ns| ns as f64 / 1e9)
            .unwrap_or(d.num_milliseconds() as f64 / 1e3)
    });
    Ok(Report {
        tpcc: crate::tpcc::TpccFigures::from_counters(&counters),
        run: RunReport {
            path: run.path.display().to_string(),
            source: m.source.clone(),
            workload: m.workload.name.clone(),
            params: m.workload.params.clone(),
            seed: m.seed,
            target: m.target.as_ref().map(|t| TargetReport {
                kind: t.kind.clone(),
                location: t.location.clone(),
                server_version: t.server_version.clone(),
            }),
            runner: m.runner.clone(),
            started_utc: m.started_utc,
            ended_utc: m.ended_utc,
            elapsed_s,
            outcome: m.outcome,
            outcome_detail: m.outcome_detail.clone(),
            dbscope_version: m.dbscope_version.clone(),
            format_version: m.format_version.clone(),
            command_line: m.command_line.clone(),
            host: m.host.clone(),
        },
        incomplete,
        settings: settings_rows(run),
        measured,
        read: ReadReport {
            blocks: tail.blocks,
            events: tail.events,
            ignored_bytes: tail.ignored_bytes,
            problem: tail.problem.clone(),
            missing_files,
        },
        pgbench: pgbench.map(|p| p.finish(span_s, m)),
        events,
        open_loop,
        counters,
        observe,
        plans: crate::plans::load(run),
    })
}

/// Why the data of a run may be incomplete, or `None`.
fn incompleteness(run: &RunDir, tail: &TailState, missing: &[String]) -> Option<String> {
    let mut why = Vec::new();
    if run.manifest.outcome == Outcome::Running {
        why.push(format!(
            "the run did not record an end: it was killed or is still running; {} complete blocks read",
            tail.blocks
        ));
    }
    if let Some(problem) = &tail.problem {
        why.push(format!(
            "the event data ends early ({problem}): {} bytes ignored after {} complete blocks",
            tail.ignored_bytes, tail.blocks
        ));
    }
    if !missing.is_empty() {
        why.push(format!("event files missing: {}", missing.join(", ")));
    }
    why.extend(run.unread_events(tail.events));
    (!why.is_empty()).then(|| why.join("; "))
}

/// Requested settings in the order given (a repeated name keeps its last value), then the other
/// effective ones by name.
fn settings_rows(run: &RunDir) -> Vec<SettingRow> {
    let Some(target) = &run.manifest.target else {
        return Vec::new();
    };
    let mut rows: Vec<SettingRow> = Vec::new();
    for (name, value) in &target.settings_requested {
        match rows.iter_mut().find(|r| &r.name == name) {
            Some(row) => row.requested = Some(value.clone()),
            None => rows.push(SettingRow {
                name: name.clone(),
                requested: Some(value.clone()),
                effective: None,
            }),
        }
    }
    for (name, value) in &target.settings_effective {
        match rows.iter_mut().find(|r| &r.name == name) {
            Some(row) => row.effective = Some(value.clone()),
            None => rows.push(SettingRow {
                name: name.clone(),
                requested: None,
                effective: Some(value.clone()),
            }),
        }
    }
    rows
}

/// Per-name accumulation while streaming blocks.
/// True for `import csv` without `--start-column`: the events' times are made up (each session's
/// latencies end to end), so no rate or span of them means anything.
pub(crate) fn timeless_import(m: &dbscope_core::Manifest) -> bool {
    m.source == "import" && !m.workload.params.contains_key("start_column")
}

/// io redo's race (two destinations): the destination writers are not peers sharing work but
/// racers writing the same batches, so the slower one, writing less often, is not "starved". Its
/// `log file parallel write` spread says instead what was measured: each destination's races won
/// of those both completed, and its writes (issue 34). Sessions `0..sessions` commit, `sessions`
/// is the log writer, the destinations follow in order (the run's `sessions_layout`).
fn race_notes(
    events: &mut [EventReport],
    counters: &[dbscope_core::CounterSection],
    sessions: u32,
) {
    use dbscope_core::CounterValue;
    let Some(redo) = counters.iter().find(|s| s.key == "redo") else {
        return;
    };
    let races = redo
        .counters
        .iter()
        .find(|c| c.key == "races")
        .and_then(|c| match c.value {
            CounterValue::Int(n) if n > 0 => Some(n),
            _ => None,
        });
    let (Some(races), Some(table)) = (races, redo.tables.iter().find(|t| t.key == "destinations"))
    else {
        return;
    };
    let col = |key: &str| table.columns.iter().position(|c| c.key == key);
    let (Some(name), Some(first), Some(writes)) = (col("name"), col("first"), col("writes")) else {
        return;
    };
    let text = |v: Option<&CounterValue>| match v {
        Some(CounterValue::Text(t)) => t.clone(),
        Some(CounterValue::Int(n)) => n.to_string(),
        _ => "-".into(),
    };
    for e in events
        .iter_mut()
        .filter(|e| e.name == "log file parallel write")
    {
        let Some(sp) = e.sessions.as_mut() else {
            continue;
        };
        let mut parts = Vec::new();
        let mut won = Vec::new();
        for &s in sp.per_session.keys() {
            let Some(row) = s
                .checked_sub(sessions + 1)
                .and_then(|i| table.rows.get(i as usize))
            else {
                return;
            };
            let n = match row.get(first) {
                Some(CounterValue::Int(n)) => *n,
                _ => 0,
            };
            won.push(n);
            parts.push((text(row.get(name)), s, n, text(row.get(writes))));
        }
        let best = won.iter().copied().max().unwrap_or(0);
        let said: Vec<String> = parts
            .iter()
            .map(|(d, s, n, w)| {
                let slower = if *n < best { "slower: " } else { "" };
                format!("{slower}{d} (session {s}) won {n} of {races} races in {w} writes")
            })
            .collect();
        sp.starved.clear();
        sp.note = Some(said.join("; "));
    }
}

#[derive(Debug)]
struct NameAcc {
    name: String,
    /// Successful measured durations (ns), within the run's memory budget.
    durations: LatencyAcc,
    errors: u64,
    error_classes: BTreeMap<String, u64>,
    warmup_excluded: u64,
    /// Successful measured events per session that recorded this name (errors count the session in
    /// with 0, so a session that only failed shows as starved).
    per_session: BTreeMap<u32, u64>,
    /// End − intended start of the successful events that carry one (open loop), and how many
    /// of them belong to late operations (their session busy at the intended start).
    from_intended: LatencyAcc,
    late: u64,
}

impl NameAcc {
    fn finish(self, span_ns: Option<u64>) -> EventReport {
        let count = self.durations.len();
        let throughput_per_s = span_ns
            .filter(|&ns| ns > 0)
            .map(|ns| count as f64 / (ns as f64 / 1e9));
        let (summary_us, sd_us, percentiles_us) = match self.durations.finish() {
            Some(l) => (Some(l.summary_us), l.sd_us, Some(l.percentiles_us)),
            None => (None, None, None),
        };
        EventReport {
            name: self.name,
            count,
            errors: self.errors,
            error_classes: self.error_classes,
            warmup_excluded: self.warmup_excluded,
            throughput_per_s,
            summary_us,
            sd_us,
            percentiles_us,
            sessions: SessionSpread::of(&self.per_session),
            from_intended: FromIntended::of(self.from_intended, self.late),
        }
    }
}

/// Frees the most durations for the others when the memory budget is spent: the accumulator that
/// keeps the most goes to its HDR histogram, so small names stay exact.
fn spill_largest(names: &mut [NameAcc], budget: &mut MemoryBudget) {
    let largest = names
        .iter_mut()
        .flat_map(|n| [&mut n.durations, &mut n.from_intended])
        .max_by_key(|a| a.kept());
    if let Some(a) = largest {
        a.spill(budget);
    }
}

/// Streams blocks into per-name accumulators.
#[derive(Debug)]
struct Accumulator {
    include_warmup: bool,
    names: Vec<NameAcc>,
    index: HashMap<String, usize>,
    /// Name id of the current block's file to accumulator index (ids are per event file).
    block_ids: HashMap<NameId, usize>,
    /// (accumulator index, outcome id) to count, resolved to class names at the end of each block.
    block_errors: HashMap<(usize, u16), u64>,
    first_start: Option<u64>,
    last_end: Option<u64>,
    backlog: crate::openloop::BacklogAcc,
    /// Durations the accumulators may still keep to sort, over all names.
    budget: MemoryBudget,
}

impl Accumulator {
    fn new(include_warmup: bool) -> Self {
        Accumulator {
            include_warmup,
            names: Vec::new(),
            index: HashMap::new(),
            block_ids: HashMap::new(),
            block_errors: HashMap::new(),
            first_start: None,
            last_end: None,
            backlog: Default::default(),
            budget: MemoryBudget::default(),
        }
    }

    fn add_block(&mut self, names: &NameTable, events: &[Event]) {
        self.block_ids.clear();
        for e in events {
            let i = self.slot(names, e.name);
            let late = self.backlog.add(e);
            let acc = &mut self.names[i];
            if e.is_warmup() && !self.include_warmup {
                acc.warmup_excluded += 1;
                continue;
            }
            let end = e.start_ns.saturating_add(e.duration_ns);
            self.first_start = Some(self.first_start.map_or(e.start_ns, |s| s.min(e.start_ns)));
            self.last_end = Some(self.last_end.map_or(end, |l| l.max(end)));
            let n = acc.per_session.entry(e.session).or_default();
            if e.is_error() {
                acc.errors += 1;
                *self.block_errors.entry((i, e.outcome)).or_default() += 1;
            } else {
                *n += 1;
                if self.budget.is_spent() {
                    spill_largest(&mut self.names, &mut self.budget);
                }
                let acc = &mut self.names[i];
                acc.durations.push(e.duration_ns, &mut self.budget);
                if e.intended_start_ns.is_some() {
                    if self.budget.is_spent() {
                        spill_largest(&mut self.names, &mut self.budget);
                    }
                    let acc = &mut self.names[i];
                    acc.from_intended
                        .push(e.latency_from_intended_ns(), &mut self.budget);
                    acc.late += u64::from(late);
                }
            }
        }
        for ((i, outcome), n) in self.block_errors.drain() {
            *self.names[i]
                .error_classes
                .entry(names.name(outcome as NameId))
                .or_default() += n;
        }
    }

    fn slot(&mut self, names: &NameTable, id: NameId) -> usize {
        if let Some(&i) = self.block_ids.get(&id) {
            return i;
        }
        let name = names.name(id);
        let i = match self.index.get(&name) {
            Some(&i) => i,
            None => {
                self.names.push(NameAcc {
                    name: name.clone(),
                    durations: LatencyAcc::default(),
                    errors: 0,
                    error_classes: BTreeMap::new(),
                    warmup_excluded: 0,
                    per_session: BTreeMap::new(),
                    from_intended: LatencyAcc::default(),
                    late: 0,
                });
                self.index.insert(name, self.names.len() - 1);
                self.names.len() - 1
            }
        };
        self.block_ids.insert(id, i);
        i
    }
}
