//! What the *Database and OS* section holds: [`ObserveReport`] and its rows.
//!
//! Also the helpers that add a figure to it from a snapshot delta (`sec`, `push`, `ratio`).

use std::collections::BTreeMap;

use dbscope_core::observe::{Section, Snapshot};
use serde::Serialize;

/// The database's and the OS's side of one run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ObserveReport {
    /// `postgres`, `sqlite`, `null`, or `oracle-trace`.
    pub target: String,
    /// Seconds between the first and the last snapshot.
    pub span_s: Option<f64>,
    /// Snapshots read.
    pub snapshots: u64,
    /// Whether the database has a wait interface this report can sample.
    pub wait_interface: bool,
    /// Plain statements about what the report can and cannot show.
    pub notes: Vec<String>,
    /// Top timed events, most time first.
    pub top_events: Option<TopEvents>,
    /// What the per-commit figures divide by.
    pub per_commit_basis: Option<String>,
    /// Counter figures, in display order.
    pub counters: Vec<Figure>,
    /// The statements that took the most execution time over the run (`pg_stat_statements`,
    /// from the first to the last snapshot), most first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top_statements: Vec<StatementRow>,
    /// Blocks read and hit of each table the workload names (`pg_statio_user_tables`, over the
    /// run), by table name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tables: Vec<TableIoRow>,
    /// The counters of each step of a workload that marks its steps (bulkload), in order: the
    /// delta from the step before (the first: from the start) to the snapshot at its end.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepRow>,
    /// What the per-step figures cannot say (SQLite's temporary files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_note: Option<String>,
    /// I/O by file type.
    pub io_by_file_type: Vec<IoRow>,
    /// One row per device holding the database files or the run directory.
    pub disks: Vec<DiskRow>,
    /// Where the files are, from the manifest (`storage`): each place and its device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<dbscope_core::StorageInfo>,
    /// CPU figures: the machine's (% of all CPUs), the client's and the server backends'.
    pub cpu: Vec<Figure>,
    /// Sections that could not be read, and why.
    pub missing: BTreeMap<String, String>,
}

/// Top timed events.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TopEvents {
    /// `pg_stat_activity samples` or `trace waits`.
    pub source: String,
    /// Samples per second (samples only).
    pub hz: Option<f64>,
    /// Samples taken (all states), or waits read.
    pub samples: u64,
    /// DB time: active samples (or the sum of wait time, in seconds, for a trace).
    pub db_time_samples: u64,
    /// DB time in seconds (active samples / Hz, or the waits' total).
    pub db_time_s: f64,
    /// Stretches the sampler lost, and their total length.
    pub gaps: u64,
    /// Total length of the gaps in seconds.
    pub gap_s: f64,
    /// The events.
    pub rows: Vec<TopRow>,
}

/// One wait event (or `CPU*`: active without a wait event).
#[derive(Clone, Debug, Default, Serialize)]
pub struct TopRow {
    /// Event name (`WALSync`, `db file sequential read`, `CPU*`).
    pub event: String,
    /// Its class (`IO`, `LWLock`, `Lock`, … ; `CPU` for CPU*).
    pub class: String,
    /// Samples (trace: waits).
    pub samples: u64,
    /// Estimated seconds: samples / Hz (trace: the waits' total time).
    pub est_s: f64,
    /// Share of DB time, in %.
    pub pct_db_time: f64,
    /// The statement most often seen with it.
    pub top_statement: Option<String>,
    /// The client events in flight when it was sampled (the events of the sample's session whose
    /// span contains the sample's time), most first; `(no client event)` for samples between
    /// them. Empty when the run's events were not read (`compare`) or for a trace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub during: Vec<During>,
}

/// A client event in flight during a share of a wait event's samples.
#[derive(Clone, Debug, Default, Serialize)]
pub struct During {
    /// The client event's name (`commit`, `update`, …).
    pub event: String,
    /// Samples of the wait event taken while it was in flight.
    pub samples: u64,
    /// Their share of the wait event's samples, in %. Nested client events can each claim the
    /// same sample, so the shares can add up to more than 100.
    pub pct: f64,
}

/// Label of the samples taken while the session had no client event in flight.
pub const NO_CLIENT_EVENT: &str = "(no client event)";

/// One statement of `pg_stat_statements` over the run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StatementRow {
    /// The server's query id.
    pub query_id: String,
    /// The start of its normalised text (`UPDATE t SET v = v + $1 WHERE id = $2`).
    pub query: String,
    /// Executions over the run.
    pub calls: f64,
    /// Execution time over the run, in ms.
    pub total_exec_ms: f64,
    /// Mean execution time, in ms.
    pub mean_exec_ms: Option<f64>,
    /// Rows returned or affected.
    pub rows: f64,
    /// Shared blocks hit and read.
    pub shared_blks_hit: f64,
    /// Shared blocks read.
    pub shared_blks_read: f64,
    /// WAL bytes generated.
    pub wal_bytes: f64,
}

/// One table's block I/O over the run (`pg_statio_user_tables`); `None` where the table has no
/// index or no TOAST table.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TableIoRow {
    /// The table's name.
    pub table: String,
    /// Heap blocks read (not found in shared buffers).
    pub heap_blks_read: Option<f64>,
    /// Heap blocks found in shared buffers.
    pub heap_blks_hit: Option<f64>,
    /// Blocks of the table's indexes read.
    pub idx_blks_read: Option<f64>,
    /// Blocks of the table's indexes hit.
    pub idx_blks_hit: Option<f64>,
    /// TOAST blocks read.
    pub toast_blks_read: Option<f64>,
    /// TOAST blocks hit.
    pub toast_blks_hit: Option<f64>,
}

/// One step's counters: from the snapshot that ended the step before (or the start) to the one
/// that ended it. PostgreSQL fills the `pg_*` figures, SQLite the `cache_*` ones.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StepRow {
    /// The step's name, as the workload's own steps table says it (`load`, `group by #1`).
    pub step: String,
    /// Seconds between the two snapshots.
    pub seconds: f64,
    /// Blocks read (`pg_stat_database`, this database).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blks_read: Option<f64>,
    /// Blocks hit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blks_hit: Option<f64>,
    /// Temporary files written (sorts, hashes that spilled; `pg_stat_database`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temp_files: Option<f64>,
    /// Bytes of those temporary files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temp_bytes: Option<f64>,
    /// WAL generated (`pg_stat_wal`, the whole cluster).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wal_bytes: Option<f64>,
    /// Bytes in the temporary-file directories when the step ended (`pg_ls_tmpdir`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temp_dir_bytes: Option<f64>,
    /// SQLite page cache hits (`sqlite3_db_status`, summed over the sessions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_hit: Option<f64>,
    /// SQLite page cache misses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_miss: Option<f64>,
    /// SQLite pages written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
    /// SQLite cache spills.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_spill: Option<f64>,
}

/// A named figure with its unit.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Figure {
    /// Key for machines (`wal_syncs_per_commit`).
    pub key: String,
    /// Label for people.
    pub label: String,
    /// Value.
    pub value: f64,
    /// Unit (`/s`, `B`, `%`, …).
    pub unit: String,
}

/// Reads and writes of one kind of file.
#[derive(Clone, Debug, Default, Serialize)]
pub struct IoRow {
    /// `WAL`, `data`, `temp`, `journal`.
    pub file_type: String,
    /// Read requests (or blocks, see `source`).
    pub reads: Option<f64>,
    /// Bytes read.
    pub read_bytes: Option<f64>,
    /// Write requests (or blocks).
    pub writes: Option<f64>,
    /// Bytes written.
    pub write_bytes: Option<f64>,
    /// Syncs.
    pub syncs: Option<f64>,
    /// Where the figures come from.
    pub source: String,
}

/// iostat -x figures of one device over the run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DiskRow {
    /// What it holds: `data`, `WAL`, `tablespace`, `temp`, `run`, joined by `+` when one device
    /// holds several (`data+WAL+temp+run`).
    pub role: String,
    /// Device name in /proc/diskstats.
    pub device: String,
    /// Reads per second.
    pub r_per_s: f64,
    /// Writes per second.
    pub w_per_s: f64,
    /// kB read per second.
    pub rkb_per_s: f64,
    /// kB written per second.
    pub wkb_per_s: f64,
    /// Average request size in kB.
    pub areq_kb: Option<f64>,
    /// Average read wait in ms.
    pub r_await_ms: Option<f64>,
    /// Average write wait in ms.
    pub w_await_ms: Option<f64>,
    /// Flushes per second.
    pub f_per_s: f64,
    /// Share of the time the device was busy, in %.
    pub util_pct: f64,
}

pub(super) fn sec<'a>(d: &'a Snapshot, name: &str) -> Option<&'a Section> {
    d.sections.get(name).filter(|s| s.missing.is_none())
}

pub(super) fn push(r: &mut Vec<Figure>, key: &str, label: &str, value: Option<f64>, unit: &str) {
    if let Some(v) = value.filter(|v| v.is_finite()) {
        r.push(Figure {
            key: key.into(),
            label: label.into(),
            value: v,
            unit: unit.into(),
        });
    }
}

pub(super) fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}
