//! The report of one run: what was measured and how, then per event name its count, errors,
//! throughput, R's `summary()` of the latencies and HDR percentiles, as text for a terminal and as JSON.
//!
//! [`build`] streams the run's event blocks once, keeping the successful durations of each event name
//! (8 bytes per event), and reduces them to a [`Report`]; [`render_text`] and [`render_json`] print it.
//! The JSON output is the serialization of [`Report`], so its field names are the struct's; the
//! run-level counters of `counters.json` follow the events, each section printed the same way
//! whichever source wrote it (see [`crate::counters`]).
//!
//! Definitions used throughout:
//! - the *measured set* is every event that is not a warm-up event (or every event with
//!   [`ReportOptions::include_warmup`]);
//! - the *measured span* runs from the earliest start to the latest end of all events of the measured
//!   set, across names and including failed events; throughput is successful events over that span;
//! - latencies are the recorded durations of successful events of the measured set, in microseconds.
//!
//! Event names are listed in the order in which they first appear in the event files.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use serde::Serialize;

use dbscope_core::stats::{format_r, r_summary_lines, LatencyHistogram, Summary};
use dbscope_core::{
    CounterSection, Error, Event, HostInfo, NameId, NameTable, Outcome, RunDir, RunnerInfo,
    TailState,
};

use crate::summary::FromIntended;
pub use crate::summary::{EventReport, PercentilesUs, SessionSpread, SummaryUs};
use crate::text::{
    one_line, plural, push_prose, push_wrapped, sig3, span, thousands, thousands_f1, trim_num,
    truncate_middle,
};

/// Width of the label column of the header lines (`run`, `workload`, ...).
const LABEL: usize = 10;

/// What to include in a report.
#[derive(Clone, Debug, Default)]
pub struct ReportOptions {
    /// Count warm-up events as measured events instead of leaving them out.
    pub include_warmup: bool,
}

/// The report of one run; serialized as is for `--json`.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// What the run was: workload, target, runner, period, outcome, host.
    pub run: RunReport,
    /// Why the data may be incomplete (no end recorded, a torn or damaged event file, a missing event
    /// file, fewer events read than the manifest says were written); `None` when the run recorded
    /// an end and every event file was read to its end.
    pub incomplete: Option<String>,
    /// Database settings: those requested with `--set` (in the order given) followed by the other
    /// effective ones (by name).
    pub settings: Vec<SettingRow>,
    /// Totals over the measured set.
    pub measured: MeasuredReport,
    /// What was read from the event files.
    pub read: ReadReport,
    /// One entry per event name, in order of first appearance in the event files.
    pub events: Vec<EventReport>,
    /// Operations due, started and waiting per second, when events carry intended starts
    /// (open-loop runs); see [`crate::openloop`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<crate::openloop::Backlog>,
    /// Run-level counters (`counters.json`), section by section in the order their sources wrote
    /// them. In JSON each section is its [`CounterSection::to_json`] object at the top level under
    /// its key, or under `counters_<key>` when the key is one of the report's own fields (see
    /// [`crate::counters::json_key`]).
    #[serde(flatten, serialize_with = "sections_json")]
    pub counters: Vec<CounterSection>,
    /// The database's and the OS's side (snapshots, samples; see [`crate::observe`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observe: Option<crate::observe::ObserveReport>,
}

/// Serializes the counter sections as a map of JSON key to section object (flattened into the
/// report).
fn sections_json<S: serde::Serializer>(
    sections: &[CounterSection],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_map(crate::counters::sections_json(sections))
}

/// What the run was, from its manifest.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// The run directory.
    pub path: String,
    /// What produced the events: `workload`, `trace` or `import`.
    pub source: String,
    /// Workload name.
    pub workload: String,
    /// Workload parameters (after defaults were applied).
    pub params: BTreeMap<String, serde_json::Value>,
    /// Seed of the workload's random choices.
    pub seed: u64,
    /// The database, when the run had one.
    pub target: Option<TargetReport>,
    /// How sessions were driven, when a runner drove them.
    pub runner: Option<RunnerInfo>,
    /// Wall-clock start (UTC).
    pub started_utc: DateTime<Utc>,
    /// Wall-clock end (UTC), when the run recorded one.
    pub ended_utc: Option<DateTime<Utc>>,
    /// Seconds from start to end, when the run recorded an end.
    pub elapsed_s: Option<f64>,
    /// How the run ended (`running` means no end was recorded).
    pub outcome: Outcome,
    /// Why it ended that way, when recorded.
    pub outcome_detail: Option<String>,
    /// Version of the dbscope that wrote the run.
    pub dbscope_version: String,
    /// Run format version of the manifest.
    pub format_version: String,
    /// Command line that made the run (secrets redacted).
    pub command_line: Vec<String>,
    /// The machine the run was measured on.
    pub host: HostInfo,
}

/// The database a run measured.
#[derive(Clone, Debug, Serialize)]
pub struct TargetReport {
    /// `sqlite`, `postgres` or `null`.
    pub kind: String,
    /// Where (password removed).
    pub location: String,
    /// Server or library version reported by the database.
    pub server_version: String,
}

/// One database setting: what was asked for and what the database reported.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SettingRow {
    /// Setting name.
    pub name: String,
    /// Value requested with `--set`; `None` when left at its default.
    pub requested: Option<String>,
    /// Value read back from the database; `None` when it was not read back.
    pub effective: Option<String>,
}

/// Totals over the measured set, across event names.
#[derive(Clone, Debug, Serialize)]
pub struct MeasuredReport {
    /// Whether warm-up events were counted as measured.
    pub include_warmup: bool,
    /// Successful events in the measured set.
    pub events: u64,
    /// Failed events in the measured set.
    pub errors: u64,
    /// Warm-up events left out (0 with `include_warmup`).
    pub warmup_excluded: u64,
    /// Earliest start of a measured event, in ns since the run's clock origin.
    pub first_start_ns: Option<u64>,
    /// Latest end of a measured event, in ns since the run's clock origin.
    pub last_end_ns: Option<u64>,
    /// The measured span in seconds (`last_end_ns - first_start_ns`); `None` without measured events.
    pub span_s: Option<f64>,
}

/// What was read from the event files.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReadReport {
    /// Complete blocks read (names and events blocks).
    pub blocks: u64,
    /// Events read, warm-up included.
    pub events: u64,
    /// Bytes after the last good block, ignored (a torn write or damage).
    pub ignored_bytes: u64,
    /// Why reading stopped early, when it did.
    pub problem: Option<String>,
    /// Event files the manifest lists that do not exist.
    pub missing_files: Vec<String>,
}

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
    let (_, tail) = readable.for_each_block(|names, events| {
        acc.add_block(names, events);
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
        events: acc.names.iter().map(|n| n.durations.len() as u64).sum(),
        errors: acc.names.iter().map(|n| n.errors).sum(),
        warmup_excluded: acc.names.iter().map(|n| n.warmup_excluded).sum(),
        first_start_ns: acc.first_start,
        last_end_ns: acc.last_end,
        span_s,
    };
    let open_loop = acc.backlog.finish().map(|b| b.with_pacing(&counters));
    let events: Vec<EventReport> = acc.names.into_iter().map(|n| n.finish(span_ns)).collect();
    let observe = crate::observe::build_or_note_joined(run, &events, join);

    let elapsed_s = m.ended_utc.map(|end| {
        let d = end - m.started_utc;
        d.num_nanoseconds()
            .map(|ns| ns as f64 / 1e9)
            .unwrap_or(d.num_milliseconds() as f64 / 1e3)
    });
    Ok(Report {
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
        events,
        open_loop,
        counters,
        observe,
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
    if let Some(written) = run.manifest.events_written {
        if tail.events < written {
            why.push(format!(
                "the manifest records {written} events written but only {} could be read",
                tail.events
            ));
        }
    }
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
#[derive(Debug)]
struct NameAcc {
    name: String,
    durations: Vec<u64>,
    errors: u64,
    error_classes: BTreeMap<String, u64>,
    warmup_excluded: u64,
    /// Successful measured events per session that recorded this name (errors count the session in
    /// with 0, so a session that only failed shows as starved).
    per_session: BTreeMap<u32, u64>,
    /// End − intended start of the successful events that carry one (open loop), and how many
    /// of them started late.
    from_intended: Vec<u64>,
    late: u64,
}

impl NameAcc {
    fn finish(mut self, span_ns: Option<u64>) -> EventReport {
        let count = self.durations.len() as u64;
        let throughput_per_s = span_ns
            .filter(|&ns| ns > 0)
            .map(|ns| count as f64 / (ns as f64 / 1e9));
        let (summary_us, sd_us, percentiles_us) = match Summary::from_values(&mut self.durations) {
            Ok(s) => {
                let mut hist = LatencyHistogram::new();
                for &d in &self.durations {
                    hist.record(d);
                }
                let us = |p: f64| hist.percentile(p) as f64 / 1000.0;
                (
                    Some(SummaryUs::from_six(s.six(1000.0))),
                    (s.n > 1).then_some(s.sd / 1000.0),
                    Some(PercentilesUs {
                        p90: us(90.0),
                        p99: us(99.0),
                        p99_9: us(99.9),
                        p99_99: us(99.99),
                    }),
                )
            }
            Err(_) => (None, None, None),
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
            from_intended: FromIntended::of(&mut self.from_intended, self.late),
        }
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
        }
    }

    fn add_block(&mut self, names: &NameTable, events: &[Event]) {
        self.block_ids.clear();
        for e in events {
            let i = self.slot(names, e.name);
            self.backlog.add(e);
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
                acc.durations.push(e.duration_ns);
                if let Some(intended) = e.intended_start_ns {
                    acc.from_intended.push(e.latency_from_intended_ns());
                    acc.late += u64::from(e.start_ns > intended);
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
                    durations: Vec::new(),
                    errors: 0,
                    error_classes: BTreeMap::new(),
                    warmup_excluded: 0,
                    per_session: BTreeMap::new(),
                    from_intended: Vec::new(),
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

/// Pretty JSON of the report, with a trailing newline.
pub fn render_json(r: &Report) -> String {
    let mut s = serde_json::to_string_pretty(r).unwrap_or_else(|e| {
        serde_json::json!({ "error": format!("cannot encode the report: {e}") }).to_string()
    });
    s.push('\n');
    s
}

/// The report as text for a terminal (lines under 110 characters, apart from R's summary lines of
/// extreme values). Starts with an `INCOMPLETE:`, `INTERRUPTED:` or `FAILED:` line when one applies.
pub fn render_text(r: &Report) -> String {
    let mut out = String::new();
    let run = &r.run;

    if let Some(why) = &r.incomplete {
        push_prose(&mut out, &format!("INCOMPLETE: {why}"));
    }
    match run.outcome {
        Outcome::Interrupted => push_prose(
            &mut out,
            &format!(
                "INTERRUPTED: the run was stopped early{}; the events up to the stop are reported",
                detail_suffix(&run.outcome_detail)
            ),
        ),
        Outcome::Failed => push_prose(
            &mut out,
            &format!(
                "FAILED: the run stopped on an error{}; the events up to the failure are reported",
                detail_suffix(&run.outcome_detail)
            ),
        ),
        Outcome::Running | Outcome::Complete => {}
    }

    let outcome = match run.outcome {
        Outcome::Running => "(running: no end recorded)".to_string(),
        o => format!("({})", o.as_str()),
    };
    push_items(&mut out, "run", &[run.path.clone(), outcome]);

    let mut items = vec![one_line(&run.workload)];
    items.extend(
        run.params
            .iter()
            .map(|(k, v)| one_line(&format!("{k}={}", param_value(v)))),
    );
    items.push(format!("seed {}", run.seed));
    if run.source != "workload" {
        items.push(format!("source {}", one_line(&run.source)));
    }
    push_items(&mut out, "workload", &items);

    if let Some(t) = &run.target {
        let items: Vec<String> = [&t.kind, &t.location, &t.server_version]
            .into_iter()
            .filter(|s| !s.is_empty())
            .map(|s| one_line(s))
            .collect();
        push_items(&mut out, "target", &items);
    }
    if let Some(rn) = &run.runner {
        let mut items = vec![format!("{} sessions", rn.sessions)];
        items.push(match rn.mode.as_str() {
            "closed" | "open" => format!("{} loop", rn.mode),
            m => format!("mode {}", one_line(m)),
        });
        if let Some(t) = rn.threads {
            items.push(format!("on {t} client threads"));
        }
        if let Some(ops) = rn.ops_per_session {
            items.push(format!("{} ops/session", thousands(ops)));
        }
        if let Some(d) = rn.duration_s {
            items.push(format!("duration {d} s"));
        }
        items.push(format!("warm-up {} s", rn.warmup_s));
        items.push(format!("max errors {}", thousands(rn.max_errors)));
        push_items(&mut out, "runner", &items);
    }

    let mut items = vec![format!(
        "{} UTC",
        run.started_utc.format("%Y-%m-%d %H:%M:%S")
    )];
    match (run.elapsed_s, run.ended_utc) {
        (Some(e), Some(end)) => {
            items.push(format!("+ {e:.2} s"));
            items.push(format!("(ended {} UTC)", end.format("%Y-%m-%d %H:%M:%S")));
        }
        _ => items.push("(no end recorded)".into()),
    }
    push_items(&mut out, "period", &items);

    let h = &run.host;
    let mut items = Vec::new();
    if !h.uname.is_empty() {
        items.push(one_line(&h.uname));
    }
    if h.cpus > 0 {
        items.push(format!("{} cpus", h.cpus));
    }
    if h.memory_bytes > 0 {
        items.push(format!(
            "{:.1} GiB memory",
            h.memory_bytes as f64 / (1u64 << 30) as f64
        ));
    }
    let cpu = h.cpu_summary();
    if !cpu.is_empty() {
        items.push(cpu);
    }
    if !items.is_empty() {
        push_items(&mut out, "host", &items);
    }
    push_items(
        &mut out,
        "dbscope",
        &[format!(
            "{} (run format {})",
            one_line(&run.dbscope_version),
            one_line(&run.format_version)
        )],
    );
    push_settings(&mut out, &r.settings);
    push_measured(&mut out, &r.measured);

    if r.events.is_empty() {
        out.push_str("\nno events recorded\n");
    }
    for e in &r.events {
        out.push('\n');
        push_event(&mut out, e);
    }
    if let Some(b) = &r.open_loop {
        crate::openloop::push_backlog_text(&mut out, b);
    }
    for section in &r.counters {
        crate::counters::push_text(&mut out, section);
    }
    if let Some(o) = &r.observe {
        crate::observe::push_text(&mut out, o);
    }
    out
}

fn detail_suffix(detail: &Option<String>) -> String {
    match detail {
        Some(d) if !d.trim().is_empty() => format!(" ({})", one_line(d.trim())),
        _ => String::new(),
    }
}

fn push_settings(out: &mut String, rows: &[SettingRow]) {
    if rows.is_empty() {
        push_items(out, "settings", &["(none recorded)".to_string()]);
        return;
    }
    let cells: Vec<[String; 3]> =
        std::iter::once(["name", "requested", "effective"].map(String::from))
            .chain(rows.iter().map(|r| {
                [
                    truncate_middle(&one_line(&r.name), 30),
                    truncate_middle(&one_line(r.requested.as_deref().unwrap_or("(default)")), 28),
                    truncate_middle(&one_line(r.effective.as_deref().unwrap_or("-")), 36),
                ]
            }))
            .collect();
    let w0 = cells
        .iter()
        .map(|c| c[0].chars().count())
        .max()
        .unwrap_or(0);
    let w1 = cells
        .iter()
        .map(|c| c[1].chars().count())
        .max()
        .unwrap_or(0);
    for (i, [name, req, eff]) in cells.iter().enumerate() {
        let label = if i == 0 { "settings" } else { "" };
        let line = format!("{label:<LABEL$}{name:<w0$}  {req:<w1$}  {eff}");
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

fn push_measured(out: &mut String, m: &MeasuredReport) {
    let mut items = vec![format!(
        "{} ok + {}",
        thousands(m.events),
        plural(m.errors, "error")
    )];
    match m.span_s {
        Some(s) => items.push(format!("in {} (first start to last end)", span(s))),
        None => items.push("(no measured events)".into()),
    }
    if m.include_warmup {
        items.push("warm-up events included".into());
    } else if m.warmup_excluded > 0 {
        items.push(format!(
            "{} left out",
            plural(m.warmup_excluded, "warm-up event")
        ));
    }
    push_items(out, "measured", &items);
}

/// The sessions line of an event, and a plain warning when a session was starved.
fn push_sessions(out: &mut String, sp: &SessionSpread) {
    out.push_str(&format!(
        "   sessions {}: per session min {}  median {}  max {}  fairness (Jain) {:.2}\n",
        sp.per_session.len(),
        thousands(sp.min),
        trim_num((sp.median * 10.0).round() / 10.0),
        thousands(sp.max),
        sp.fairness
    ));
    if !sp.starved.is_empty() {
        let who: Vec<String> = sp
            .starved
            .iter()
            .map(|s| format!("session {s} ({})", thousands(sp.per_session[s])))
            .collect();
        out.push_str(&format!(
            "   WARNING: starved: {}: fewer than a tenth of the mean session's events\n",
            who.join(", ")
        ));
    }
}

fn push_event(out: &mut String, e: &EventReport) {
    // A long name (a captured statement) gets a line of its own.
    let name = if e.name.is_empty() {
        "(no name)".to_string()
    } else if e.name.chars().count() > 60 {
        format!("{}\n ", truncate_middle(&one_line(&e.name), 200))
    } else {
        one_line(&e.name)
    };
    let rate = match e.throughput_per_s {
        Some(t) => format!("{} /s", thousands_f1(t)),
        None => "- /s".into(),
    };
    out.push_str(&format!(
        "{name}   n = {}   errors {}   {rate}\n",
        thousands(e.count),
        thousands(e.errors)
    ));
    match (&e.summary_us, &e.percentiles_us) {
        (Some(s), Some(p)) => {
            let (head, values) = r_summary_lines(s.six());
            out.push_str(&format!("{head}   (µs)\n{values}\n"));
            let mut items = Vec::new();
            if let Some(sd) = e.sd_us {
                let sd = format_r(&[sd], 4).into_iter().next().unwrap_or_default();
                items.push(format!("sd {}", sd.trim()));
            }
            for (label, v) in [
                ("p90", p.p90),
                ("p99", p.p99),
                ("p99.9", p.p99_9),
                ("p99.99", p.p99_99),
            ] {
                items.push(format!("{label} {}", sig3(v)));
            }
            out.push_str(&format!(
                "   {}   (µs; percentiles HDR, 3 digits)\n",
                items.join("   ")
            ));
            if let Some(f) = &e.from_intended {
                crate::openloop::push_event_text(out, f);
            }
        }
        _ => out.push_str("   no successful events: no latency summary\n"),
    }
    if let Some(sp) = &e.sessions {
        push_sessions(out, sp);
    }
    if e.errors > 0 {
        let mut classes: Vec<(&String, &u64)> = e.error_classes.iter().collect();
        classes.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        let classes: Vec<String> = classes
            .into_iter()
            .map(|(c, n)| format!("{} {}", truncate_middle(&one_line(c), 60), thousands(*n)))
            .collect();
        push_wrapped(out, "   errors: ", &classes, ", ");
    }
    if e.warmup_excluded > 0 {
        out.push_str(&format!(
            "   warm-up: {} left out\n",
            plural(e.warmup_excluded, "event")
        ));
    }
}

/// A header line: the label in its column, then the items separated by two spaces, wrapped under
/// the items' column when they do not fit.
fn push_items(out: &mut String, label: &str, items: &[String]) {
    push_wrapped(out, &format!("{label:<LABEL$}"), items, "  ");
}

/// A workload parameter as the user would type it: strings without quotes.
fn param_value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbscope_core::fake::FakeRun;
    use dbscope_core::manifest::{TargetInfo, WorkloadInfo};
    use dbscope_core::{Manifest, EVENT_WARMUP};
    use std::path::Path;

    #[test]
    fn issue_13_a_starved_session_is_shown_and_warned_about() {
        // What the README's first command showed: one session did thousands of commits, three
        // did one each.
        let dir = tempfile::tempdir().unwrap();
        let mut f = FakeRun::new(&dir.path().join("r"));
        let c = f.name("commit");
        let mut evs: Vec<Event> = (0..2000u64)
            .map(|i| FakeRun::event(c, 0, i * 1_000, 500))
            .collect();
        evs.extend((1..4u32).map(|s| FakeRun::event(c, s, 3_000_000_000, 3_000_000_000)));
        f.block(&evs);
        let run = f.finish();
        let r = build(&run, &ReportOptions::default()).unwrap();
        let sp = r.events[0].sessions.as_ref().expect("four sessions");
        assert_eq!((sp.min, sp.median, sp.max), (1, 1.0, 2000));
        // Jain: (2003)² / (4 · (2000² + 3)) = 0.25…
        assert!((sp.fairness - 2003.0f64.powi(2) / (4.0 * 4_000_003.0)).abs() < 1e-12);
        assert_eq!(sp.starved, vec![1, 2, 3]);
        let text = render_text(&r);
        assert!(
            text.contains(
                "sessions 4: per session min 1  median 1  max 2,000  fairness (Jain) 0.25"
            ),
            "{text}"
        );
        assert!(
            text.contains("WARNING: starved: session 1 (1), session 2 (1), session 3 (1)"),
            "{text}"
        );
        let json: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
        assert_eq!(json["events"][0]["sessions"]["per_session"]["0"], 2000);
        assert_eq!(json["events"][0]["sessions"]["starved"][2], 3);
        let page = crate::html::render_run(&run, &Default::default()).unwrap();
        assert!(
            page.html.contains("commit: starved sessions:"),
            "HTML warns too"
        );

        // Fair sessions: a spread, no warning.
        let mut f = FakeRun::new(&dir.path().join("fair"));
        let c = f.name("commit");
        let evs: Vec<Event> = (0..400u64)
            .map(|i| FakeRun::event(c, (i % 4) as u32, i * 1_000, 500))
            .collect();
        f.block(&evs);
        let r = build(&f.finish(), &ReportOptions::default()).unwrap();
        let sp = r.events[0].sessions.as_ref().unwrap();
        assert!(sp.starved.is_empty() && sp.fairness > 0.95, "{sp:?}");
        assert!(!render_text(&r).contains("WARNING: starved"));
    }

    const S: u64 = 1_000_000_000;

    /// Durations in µs of the measured successful `commit` events.
    const COMMIT_US: [f64; 10] = [
        12.0, 20.0, 25.5, 31.0, 18.25, 1020.0, 22.0, 27.0, 19.0, 40.125,
    ];

    fn us(v: f64) -> u64 {
        (v * 1000.0).round() as u64
    }

    fn ev(names: &NameTable, name: &str, start_ns: u64, duration_ns: u64) -> Event {
        Event {
            name: names.intern(name),
            start_ns,
            duration_ns,
            ..Event::default()
        }
    }

    fn err(names: &NameTable, name: &str, class: &str, start_ns: u64) -> Event {
        Event {
            outcome: names.intern_outcome(class),
            ..ev(names, name, start_ns, 5_000)
        }
    }

    fn warm(e: Event) -> Event {
        Event {
            flags: EVENT_WARMUP,
            ..e
        }
    }

    fn manifest(outcome: Outcome) -> Manifest {
        let mut params = BTreeMap::new();
        params.insert("keys".to_string(), serde_json::json!("own"));
        params.insert("table".to_string(), serde_json::json!("dbscope_commit"));
        let mut m = Manifest::new(
            "workload",
            WorkloadInfo {
                name: "commit".into(),
                params,
            },
            1,
        );
        m.target = Some(TargetInfo {
            kind: "sqlite".into(),
            location: "runs/x/dbscope.sqlite".into(),
            server_version: "SQLite 3.50.2".into(),
            settings_requested: vec![("synchronous".into(), "normal".into())],
            settings_effective: [("journal_mode", "delete"), ("synchronous", "1")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        });
        m.runner = Some(RunnerInfo {
            sessions: 4,
            ops_per_session: None,
            duration_s: Some(2.0),
            warmup_s: 0.5,
            max_errors: 0,
            mode: "closed".into(),
            threads: None,
        });
        m.outcome = outcome;
        if outcome != Outcome::Running {
            m.ended_utc = Some(m.started_utc + chrono::Duration::milliseconds(3_250));
        }
        m
    }

    /// The standard test run:
    /// - warm-up: `commit` ok 15 µs at 0.1 s, `commit` error `pg:40P01` at 0.2 s;
    /// - `commit`: the ten [`COMMIT_US`] durations starting at 1.0 s, 1.1 s, ...; errors `pg:40P01`
    ///   twice and `connection` once;
    /// - `scan`: 1, 2, ..., 1000 µs, the last one ending at exactly 3.0 s (measured span 2.0 s);
    /// - `lock_wait`: two `timeout` errors, nothing else.
    fn write_standard(dir: &Path, outcome: Outcome) -> RunDir {
        let mut m = manifest(outcome);
        m.events_written = (outcome != Outcome::Running).then_some(1017);
        let mut w = FakeRun::with_manifest(dir, m);
        let names = w.names().clone();
        w.block(&[
            warm(ev(&names, "commit", S / 10, 15_000)),
            warm(err(&names, "commit", "pg:40P01", S / 5)),
        ]);
        let mut block: Vec<Event> = COMMIT_US
            .iter()
            .enumerate()
            .map(|(i, &d)| ev(&names, "commit", S + i as u64 * S / 10, us(d)))
            .collect();
        block.push(err(&names, "commit", "pg:40P01", S + S / 2));
        block.push(err(&names, "commit", "connection", S + S / 2));
        block.push(err(&names, "commit", "pg:40P01", S + S / 2));
        w.block(&block);
        let scan: Vec<Event> = (1..=1000u64)
            .map(|i| {
                let start = if i == 1000 {
                    3 * S - 1_000_000
                } else {
                    S + i * 1_000_000
                };
                ev(&names, "scan", start, i * 1000)
            })
            .collect();
        w.block(&scan);
        w.block(&[
            err(&names, "lock_wait", "timeout", 2 * S),
            err(&names, "lock_wait", "timeout", 2 * S),
        ]);
        w.finish()
    }

    fn event<'a>(r: &'a Report, name: &str) -> &'a EventReport {
        r.events.iter().find(|e| e.name == name).unwrap()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn counts_errors_throughput_and_summary_match_r() {
        let dir = tempfile::tempdir().unwrap();
        let run = write_standard(dir.path(), Outcome::Complete);
        let r = build(&run, &ReportOptions::default()).unwrap();
        assert_eq!(r.incomplete, None);
        let names: Vec<&str> = r.events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["commit", "scan", "lock_wait"]);
        assert_eq!(r.measured.events, 1010);
        assert_eq!(r.measured.errors, 5);
        assert_eq!(r.measured.warmup_excluded, 2);
        assert_eq!(r.measured.first_start_ns, Some(S));
        assert_eq!(r.measured.last_end_ns, Some(3 * S));
        assert_eq!(r.measured.span_s, Some(2.0));
        assert_eq!(r.read.events, 1017);
        assert!(close(r.run.elapsed_s.unwrap(), 3.25));

        let c = event(&r, "commit");
        assert_eq!(c.count, 10);
        assert_eq!(c.errors, 3);
        assert_eq!(
            c.error_classes,
            BTreeMap::from([("connection".to_string(), 1), ("pg:40P01".to_string(), 2)])
        );
        assert_eq!(c.warmup_excluded, 2);
        assert_eq!(c.throughput_per_s, Some(5.0));
        // R 4.x: x <- c(12, 20, 25.5, 31, 18.25, 1020, 22, 27, 19, 40.125)
        //        print(summary(x), digits = 15); print(sd(x), digits = 15)
        //   12.0000 19.2500 23.7500 123.4875 30.0000 1020.0000; sd 315.097992088264
        let s = c.summary_us.unwrap();
        let want = [12.0, 19.25, 23.75, 123.4875, 30.0, 1020.0];
        for (got, want) in s.six().iter().zip(want) {
            assert!(close(*got, want), "{got} vs {want}");
        }
        assert!((c.sd_us.unwrap() - 315.097992088264).abs() < 1e-9);

        let sc = event(&r, "scan");
        assert_eq!(sc.count, 1000);
        assert_eq!(sc.errors, 0);
        assert_eq!(sc.throughput_per_s, Some(500.0));
        // R: y <- 1:1000; print(summary(y), digits = 15); print(sd(y), digits = 15)
        //   1 250.75 500.5 500.5 750.25 1000; sd 288.819436095749
        let s = sc.summary_us.unwrap();
        for (got, want) in s
            .six()
            .iter()
            .zip([1.0, 250.75, 500.5, 500.5, 750.25, 1000.0])
        {
            assert!(close(*got, want), "{got} vs {want}");
        }
        assert!((sc.sd_us.unwrap() - 288.819436095749).abs() < 1e-9);
        // Nearest-rank percentiles of 1..1000 µs are 900, 990, 999, 1000; HDR keeps 3 significant
        // digits (and p99.9 may land on the next value through rounding of 0.999 * 1000).
        let p = sc.percentiles_us.unwrap();
        for (got, want) in [
            (p.p90, 900.0),
            (p.p99, 990.0),
            (p.p99_9, 999.0),
            (p.p99_99, 1000.0),
        ] {
            assert!((got - want).abs() / want <= 2e-3, "{got} vs {want}");
        }

        let lw = event(&r, "lock_wait");
        assert_eq!((lw.count, lw.errors), (0, 2));
        assert_eq!(lw.error_classes.get("timeout"), Some(&2));
        assert_eq!(lw.throughput_per_s, Some(0.0));
        assert!(lw.summary_us.is_none() && lw.sd_us.is_none() && lw.percentiles_us.is_none());
    }

    #[test]
    fn warmup_included_on_request() {
        let dir = tempfile::tempdir().unwrap();
        let run = write_standard(dir.path(), Outcome::Complete);
        let opts = ReportOptions {
            include_warmup: true,
        };
        let r = build(&run, &opts).unwrap();
        assert_eq!(r.measured.warmup_excluded, 0);
        assert_eq!(r.measured.first_start_ns, Some(S / 10));
        let c = event(&r, "commit");
        assert_eq!((c.count, c.errors, c.warmup_excluded), (11, 4, 0));
        assert_eq!(c.error_classes.get("pg:40P01"), Some(&3));
        assert!(close(c.throughput_per_s.unwrap(), 11.0 / 2.9));
        // R: summary(c(12, 20, 25.5, 31, 18.25, 1020, 22, 27, 19, 40.125, 15))
        //   12.00 18.62 22.00 113.62 29.00 1020.00 (1st Qu. 18.625, Mean 113.625)
        let s = c.summary_us.unwrap();
        for (got, want) in s
            .six()
            .iter()
            .zip([12.0, 18.625, 22.0, 113.625, 29.0, 1020.0])
        {
            assert!(close(*got, want), "{got} vs {want}");
        }
        let text = render_text(&r);
        assert!(text.contains("warm-up events included"), "{text}");
        assert!(!text.contains("warm-up: "), "{text}");
    }

    #[test]
    fn text_has_r_summary_lines_verbatim() {
        let dir = tempfile::tempdir().unwrap();
        let run = write_standard(dir.path(), Outcome::Complete);
        let text = render_text(&build(&run, &ReportOptions::default()).unwrap());
        // R 4.x: summary(c(12, 20, 25.5, 31, 18.25, 1020, 22, 27, 19, 40.125)) prints (trailing
        // spaces aside):
        assert!(text.contains("   Min. 1st Qu.  Median    Mean 3rd Qu.    Max.   (µs)\n  12.00   19.25   23.75  123.49   30.00 1020.00\n"), "{text}");
        // R: summary(1:1000)
        assert!(
            text.contains("\n    1.0   250.8   500.5   500.5   750.2  1000.0\n"),
            "{text}"
        );
        assert!(text.starts_with("run       "), "{text}");
        assert!(
            text.contains("commit   n = 10   errors 3   5.0 /s\n"),
            "{text}"
        );
        assert!(
            text.contains("scan   n = 1,000   errors 0   500.0 /s\n"),
            "{text}"
        );
        assert!(text.contains("   sd 315.1   p90 "), "{text}");
        assert!(
            text.contains("   errors: pg:40P01 2, connection 1\n"),
            "{text}"
        );
        assert!(text.contains("   warm-up: 2 events left out\n"), "{text}");
        assert!(text.contains("lock_wait   n = 0   errors 2   0.0 /s\n   no successful events"));
        assert!(text.contains("workload  commit  keys=own  table=dbscope_commit  seed 1\n"));
        assert!(
            text.contains("settings  name          requested  effective\n"),
            "{text}"
        );
        assert!(
            text.contains("          synchronous   normal     1\n"),
            "{text}"
        );
        assert!(
            text.contains("          journal_mode  (default)  delete\n"),
            "{text}"
        );
        assert!(text.contains("measured  1,010 ok + 5 errors  in 2.000 s (first start to last end)  2 warm-up events left out\n"), "{text}");
        for line in text.lines() {
            assert!(line.chars().count() < 110, "too long: {line}");
        }
    }

    #[test]
    fn json_parses_and_has_the_fields() {
        let dir = tempfile::tempdir().unwrap();
        let run = write_standard(dir.path(), Outcome::Complete);
        let json = render_json(&build(&run, &ReportOptions::default()).unwrap());
        assert!(json.ends_with("}\n"));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["run"]["outcome"], "complete");
        assert_eq!(v["run"]["workload"], "commit");
        assert_eq!(v["run"]["params"]["keys"], "own");
        assert_eq!(v["run"]["target"]["kind"], "sqlite");
        assert_eq!(v["run"]["runner"]["sessions"], 4);
        assert!(v["incomplete"].is_null());
        assert_eq!(v["measured"]["span_s"], 2.0);
        assert_eq!(v["settings"][0]["name"], "synchronous");
        assert_eq!(v["settings"][0]["requested"], "normal");
        assert_eq!(v["settings"][1]["requested"], serde_json::Value::Null);
        let c = &v["events"][0];
        assert_eq!(c["name"], "commit");
        assert_eq!(c["count"], 10);
        assert_eq!(c["errors"], 3);
        assert_eq!(c["error_classes"]["pg:40P01"], 2);
        assert_eq!(c["warmup_excluded"], 2);
        assert_eq!(c["throughput_per_s"], 5.0);
        assert_eq!(c["summary_us"]["median"], 23.75);
        assert_eq!(c["summary_us"]["mean"], 123.4875);
        for k in ["min", "q1", "q3", "max"] {
            assert!(c["summary_us"][k].is_f64(), "{k}");
        }
        assert!(c["sd_us"].is_f64());
        for k in ["p90", "p99", "p99_9", "p99_99"] {
            assert!(c["percentiles_us"][k].is_f64(), "{k}");
        }
        assert!(v["events"][2]["summary_us"].is_null());
        assert!(v["events"][2]["percentiles_us"].is_null());
    }

    #[test]
    fn running_run_is_incomplete() {
        let dir = tempfile::tempdir().unwrap();
        let run = write_standard(dir.path(), Outcome::Running);
        let r = build(&run, &ReportOptions::default()).unwrap();
        let why = r.incomplete.clone().unwrap();
        assert!(why.contains("did not record an end"), "{why}");
        assert!(why.contains("8 complete blocks read"), "{why}");
        assert_eq!(event(&r, "commit").count, 10);
        let text = render_text(&r);
        assert!(
            text.starts_with("INCOMPLETE: the run did not record an end"),
            "{text}"
        );
        assert!(text.contains("(running: no end recorded)"), "{text}");
        assert!(text.contains("(no end recorded)"), "{text}");
    }

    #[test]
    fn torn_tail_is_incomplete() {
        let dir = tempfile::tempdir().unwrap();
        let run = write_standard(dir.path(), Outcome::Complete);
        let path = dir.path().join("events.dsev");
        let len = std::fs::metadata(&path).unwrap().len();
        // Cut inside the last block (the two lock_wait errors), as a SIGKILL during write() could.
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(len - 30).unwrap();
        let r = build(&run, &ReportOptions::default()).unwrap();
        let why = r.incomplete.clone().unwrap();
        assert!(why.contains("torn block"), "{why}");
        assert!(why.contains("bytes ignored"), "{why}");
        assert!(why.contains("1017 events written but only 1015"), "{why}");
        assert!(r.read.ignored_bytes > 0);
        assert!(r.events.iter().all(|e| e.name != "lock_wait"));
        assert_eq!(event(&r, "scan").count, 1000);
        let text = render_text(&r);
        assert!(
            text.starts_with("INCOMPLETE: the event data ends early (torn block"),
            "{text}"
        );
        for line in text.lines() {
            assert!(line.chars().count() < 110, "too long: {line}");
        }
    }

    #[test]
    fn interrupted_and_failed_are_announced() {
        for (outcome, head) in [
            (
                Outcome::Interrupted,
                "INTERRUPTED: the run was stopped early (SIGINT);",
            ),
            (
                Outcome::Failed,
                "FAILED: the run stopped on an error (SIGINT);",
            ),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let mut run = write_standard(dir.path(), outcome);
            run.manifest.outcome_detail = Some("SIGINT".into());
            let r = build(&run, &ReportOptions::default()).unwrap();
            assert_eq!(r.incomplete, None);
            let text = render_text(&r);
            assert!(text.starts_with(head), "{text}");
        }
    }

    #[test]
    fn only_errors_and_zero_events_do_not_panic() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = manifest(Outcome::Complete);
        m.target = None;
        m.runner = None;
        let mut w = FakeRun::with_manifest(dir.path(), m);
        let names = w.names().clone();
        w.block(&[err(&names, "connect", "connection", 7)]);
        let run = w.finish();
        let r = build(&run, &ReportOptions::default()).unwrap();
        assert_eq!(r.events.len(), 1);
        let e = &r.events[0];
        assert_eq!((e.count, e.errors), (0, 1));
        assert_eq!(e.throughput_per_s, Some(0.0));
        let text = render_text(&r);
        assert!(
            text.contains("connect   n = 0   errors 1   0.0 /s\n"),
            "{text}"
        );
        assert!(text.contains("   errors: connection 1\n"), "{text}");
        assert!(text.contains("settings  (none recorded)\n"), "{text}");
        assert!(
            text.contains("measured  0 ok + 1 error  in 5.000 µs (first"),
            "{text}"
        );
        serde_json::from_str::<serde_json::Value>(&render_json(&r)).unwrap();

        // No events at all: an empty event file.
        let dir = tempfile::tempdir().unwrap();
        let run = FakeRun::with_manifest(dir.path(), manifest(Outcome::Complete)).finish();
        let r = build(&run, &ReportOptions::default()).unwrap();
        assert!(r.events.is_empty());
        assert_eq!(r.incomplete, None);
        assert_eq!(r.measured.span_s, None);
        let text = render_text(&r);
        assert!(
            text.contains("measured  0 ok + 0 errors  (no measured events)\n"),
            "{text}"
        );
        assert!(text.ends_with("\nno events recorded\n"), "{text}");
        let v: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
        assert_eq!(v["events"], serde_json::json!([]));
    }

    #[test]
    fn missing_event_file_is_incomplete_not_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let run = FakeRun::with_manifest(dir.path(), manifest(Outcome::Complete)).finish();
        std::fs::remove_file(dir.path().join("events.dsev")).unwrap();
        let r = build(&run, &ReportOptions::default()).unwrap();
        assert_eq!(r.read.missing_files, ["events.dsev"]);
        let text = render_text(&r);
        assert!(
            text.starts_with("INCOMPLETE: event files missing: events.dsev\n"),
            "{text}"
        );
    }

    #[test]
    fn names_resolve_per_event_file() {
        // Each event file interns its own names: id 1 is `a` in one file and `b` in the other.
        let dir = tempfile::tempdir().unwrap();
        let mut w = FakeRun::with_manifest(dir.path(), manifest(Outcome::Complete));
        for (file, first, second) in [("events.dsev", "a", "b"), ("two.dsev", "b", "a")] {
            if file != "events.dsev" {
                w.next_file(file);
            }
            let x = w.name(first);
            let y = w.name(second);
            let e = |name, d| FakeRun::event(name, 0, S, d);
            let d = if first == "a" { 1_000 } else { 2_000 };
            w.block(&[e(x, d), e(x, d), e(y, 3_000 - d)]);
        }
        let run = w.finish();
        let r = build(&run, &ReportOptions::default()).unwrap();
        let a = event(&r, "a");
        let b = event(&r, "b");
        assert_eq!((a.count, b.count), (3, 3));
        assert_eq!(a.summary_us.unwrap().min, 1.0);
        assert_eq!(a.summary_us.unwrap().max, 1.0);
        assert_eq!(b.summary_us.unwrap().min, 2.0);
        assert_eq!(b.summary_us.unwrap().max, 2.0);
        assert_eq!(a.sd_us, Some(0.0));
        // Both files' events start at 1 s; the latest ends 2 µs later.
        assert_eq!(r.measured.span_s, Some(2e-6));
        assert!(close(a.throughput_per_s.unwrap(), 1.5e6));
    }

    #[test]
    fn counter_sections_print_after_the_events_whoever_wrote_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = FakeRun::new(&dir.path().join("run"));
        let c = f.name("commit");
        f.block(&[FakeRun::event(c, 0, S, 20_000)]);
        f.counters(crate::counters::tests::section(1200, 3.0, false));
        let mut clash = crate::counters::tests::section(7, 1.0, true);
        clash.key = "events".into();
        clash.title = "a section named like a report field".into();
        f.counters(clash);
        let run = f.finish();
        let r = build(&run, &ReportOptions::default()).unwrap();
        assert_eq!(r.incomplete, None);
        let v: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
        assert_eq!(v["redo"]["commits_per_write"], 3.0);
        assert_eq!(v["redo"]["final_counts"], false);
        assert_eq!(v["redo"]["destinations"][0]["writes"], 1200);
        assert_eq!(v["counters_events"]["commits"], 7);
        assert_eq!(v["events"][0]["name"], "commit");
        let text = render_text(&r);
        let events = text.find("commit   n = 1").unwrap();
        let redo = text.find("\n\nredo log writer\n").unwrap();
        assert!(events < redo, "{text}");
        assert!(
            text.contains("   commits 1,200   commits per write 3.00   "),
            "{text}"
        );
        assert!(
            text.contains("   name        writes   p99 (µs)\n"),
            "{text}"
        );
        assert!(text.contains("   counters are a snapshot taken while the run was going\n"));
        assert!(text.ends_with("a section named like a report field\n   commits 7   commits per write 1.00   sync fdatasync   outlier -   rate 1,234.5 MB/s\n   per destination\n   name        writes   p99 (µs)\n   fast         1,200       45.2\n   slow-disk        7          -\n   FL_PREVENTED_OUTLIERS counts races the fast log won\n"), "{text}");
        for line in text.lines() {
            assert!(line.chars().count() < 110, "too long: {line}");
        }
    }

    #[test]
    fn unreadable_counters_make_the_report_incomplete_not_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let run = write_standard(dir.path(), Outcome::Complete);
        std::fs::write(dir.path().join("counters.json"), "{").unwrap();
        let r = build(&run, &ReportOptions::default()).unwrap();
        let why = r.incomplete.clone().unwrap();
        assert!(why.contains("run-level counters cannot be read"), "{why}");
        assert!(why.contains("not valid counters"), "{why}");
        assert_eq!(event(&r, "commit").count, 10);
        assert!(r.counters.is_empty());
    }
}
