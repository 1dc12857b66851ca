//! What the report of a run holds: [`Report`] and its parts, and its [`ReportOptions`].
//!
//! The parts: the run, its settings, the measured set, and what was read.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use dbscope_core::{CounterSection, HostInfo, Outcome, RunnerInfo};

use crate::summary::EventReport;

/// What to include in a report.
#[derive(Clone, Debug, Default)]
pub struct ReportOptions {
    /// Count warm-up events as measured events instead of leaving them out.
    pub include_warmup: bool,
}

/// The report of one run; serialized as is for `--json`.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// TPC-C's headline figures (NOPM, TPM, tpmC), first, for a `tpcc` run ([`crate::tpcc`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tpcc: Option<crate::tpcc::TpccFigures>,
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
    /// pgbench's figures, for a `script` run ([`crate::pgbench`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pgbench: Option<crate::pgbench::PgbenchFigures>,
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
    /// The plans `run --explain` took (`plans.json`; see [`crate::plans`]), when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plans: Option<crate::plans::PlansReport>,
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
