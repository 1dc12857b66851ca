//! The profile's shape: [`ProfileOptions`] in, [`Profile`] and its rows out (as JSON too).
//!
//! A profile holds the event rows (waits, CPU per call kind, unaccounted-for time), the statement
//! rows with their plans, the call tree, the slowest waits, errors, warnings and filters.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::{FileInfo, PlanLine, Warning};
use crate::reader::Options;

/// Upper bounds (µs, exclusive) of the skew buckets: powers of ten from 1 µs to 1000 s, as mrskew.
pub const SKEW_BOUNDS_US: [u64; 10] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
];

/// What to profile.
#[derive(Clone, Debug)]
pub struct ProfileOptions {
    /// Keep records ending at or after this wall-clock time (Unix µs).
    pub since_us: Option<i64>,
    /// Keep records ending before this wall-clock time (Unix µs).
    pub until_us: Option<i64>,
    /// Keep only calls and waits of this statement (sqlid, or hash value as a number).
    pub sqlid: Option<String>,
    /// Show only these wait events in the event rows, skew and top lists.
    pub events: Vec<String>,
    /// How many slowest waits to list.
    pub top: usize,
    /// Malformed lines are errors.
    pub strict: bool,
    /// Chunk size (streams are cut into chunks of this size too); 0 reads plain files as a stream
    /// ([`Options::chunk_bytes`]).
    pub chunk_bytes: usize,
}

impl Default for ProfileOptions {
    /// Everything, with the 10 slowest waits.
    fn default() -> Self {
        ProfileOptions {
            since_us: None,
            until_us: None,
            sqlid: None,
            events: Vec::new(),
            top: 10,
            strict: false,
            chunk_bytes: Options::default().chunk_bytes,
        }
    }
}

/// One row of the event profile.
#[derive(Clone, Debug, Default, Serialize)]
pub struct EventRow {
    /// Event name, `CPU: <call kind>` or `unaccounted-for within db calls`.
    pub name: String,
    /// Kind: `wait`, `cpu` or `unaccounted`.
    pub kind: &'static str,
    /// Number of waits or calls.
    pub calls: u64,
    /// Total µs (may be negative for `cpu` and `unaccounted` rows).
    pub total_us: i64,
    /// Mean µs per call.
    pub mean_us: f64,
    /// Smallest µs.
    pub min_us: i64,
    /// Largest µs.
    pub max_us: i64,
    /// Share of R, in percent.
    pub pct_r: f64,
    /// For waits: how many happened between calls (not inside one).
    pub between_calls: u64,
    /// For waits: the skew histogram, counts per bucket (see [`SKEW_BOUNDS_US`]; last = ≥ 1000 s).
    pub skew_counts: Vec<u64>,
    /// For waits: total µs per bucket.
    pub skew_us: Vec<u64>,
}

/// One statement.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StatementRow {
    /// SQL id (may be empty before 10g R2).
    pub sqlid: String,
    /// Hash value.
    pub hv: Option<u64>,
    /// Depth it was parsed at.
    pub dep: u32,
    /// Start of its text, or a note when the trace never showed it.
    pub text: String,
    /// Db calls.
    pub calls: u64,
    /// Σ e of its calls, µs (children included, as Oracle reports it).
    pub e_us: u64,
    /// Σ c of its calls, µs (children included).
    pub c_us: u64,
    /// Σ ela of the waits inside its calls, µs (not those of recursive children).
    pub waits_us: u64,
    /// Rows processed.
    pub rows: u64,
    /// Physical reads.
    pub p: u64,
    /// Consistent + current reads.
    pub lio: u64,
    /// Errors (ERROR lines) on its cursor.
    pub errors: u64,
    /// Its execution plan from the STAT lines (first seen), when the trace has one.
    pub plan: Vec<PlanLine>,
}

/// A node of the recursive call tree: a statement and the time its calls took under its parent.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TreeNode {
    /// The statement: sqlid (or `hv N`) and the start of its text; `(unknown cursor)` for calls on
    /// cursors the trace never parsed.
    pub statement: String,
    /// Calls of this statement under this parent.
    pub calls: u64,
    /// Σ e, µs.
    pub e_us: u64,
    /// Children (recursive SQL it ran).
    pub children: Vec<TreeNode>,
}

/// A slow wait.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct TopWait {
    /// Event name.
    pub name: String,
    /// µs.
    pub ela_us: u64,
    /// `file:line`.
    pub at: String,
    /// Statement sqlid (or empty).
    pub sqlid: String,
    /// Wall-clock end (RFC 3339), when anchored.
    pub wall_end: Option<String>,
}

/// The whole profile.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Profile {
    /// Files read.
    pub files: Vec<FileInfo>,
    /// Sessions seen.
    pub sessions: usize,
    /// R, µs: Σ e(root calls) + Σ ela(between-call waits) of the records kept.
    pub r_us: i64,
    /// Σ of the event rows, µs (equals `r_us`).
    pub rows_total_us: i64,
    /// Σ over sessions of (last end − first start) on the `tim` clock, µs, starts clipped to the
    /// session's window (its first `tim`).
    pub wall_span_us: i64,
    /// µs of root calls and between-call waits that lay before their session's window (they began
    /// before the trace's first timestamp) and are left out of R; with `--sqlid`, of the calls' own
    /// time.
    pub clipped_us: i64,
    /// Root calls (with `--sqlid`, calls) clipped.
    pub clipped_calls: u64,
    /// Between-call waits clipped.
    pub clipped_waits: u64,
    /// `wall_span_us − r_us`: time in the file accounted for by no call and no wait.
    pub unaccounted_between_calls_us: i64,
    /// Unaccounted-for time inside db calls, µs.
    pub unaccounted_in_calls_us: i64,
    /// The event profile, largest first.
    pub events: Vec<EventRow>,
    /// Statements, by e descending (each distinct statement once).
    pub statements: Vec<StatementRow>,
    /// The call tree from root calls down.
    pub tree: Vec<TreeNode>,
    /// The slowest waits.
    pub top_waits: Vec<TopWait>,
    /// Db errors by ORA- number.
    pub errors: BTreeMap<String, u64>,
    /// Warnings (malformed lines) counted.
    pub warning_count: u64,
    /// The first warnings, with file:line.
    pub warnings: Vec<Warning>,
    /// Filters applied, as given.
    pub filters: Vec<String>,
}
