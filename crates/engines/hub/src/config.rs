//! What a query is given and what each of its table scans did: the vocabulary `query` and
//! `record` share (a leaf module, so neither imports the other).

use std::path::PathBuf;
use std::sync::Arc;

use dbscope_core::StopSignal;

use crate::dataflow::Dataflow;
use crate::source::SourceSpec;

/// What `dbscope query` runs.
#[derive(Clone, Debug)]
pub struct QueryConfig {
    /// The SQL (DataFusion's dialect; one query, no DDL or DML).
    pub sql: String,
    /// The sources, by the names the query uses.
    pub sources: Vec<SourceSpec>,
    /// Connections that read each PostgreSQL table at once (ctid block ranges).
    pub scan_connections: u32,
    /// Push projections, filters and LIMIT to PostgreSQL (off: every column and row is read and
    /// DataFusion does it all — the A/B).
    pub pushdown: bool,
    /// Where to write the result (`.parquet` or `.csv`).
    pub out: Option<PathBuf>,
    /// Rows kept for the terminal.
    pub show: usize,
    /// The run directory to create.
    pub run: PathBuf,
    /// The command line (redacted by the recording).
    pub command_line: Vec<String>,
    /// `--plan FILE`: the dataflow run step by step instead of `sql` (which then holds its text).
    pub dataflow: Option<Dataflow>,
    /// Set by Ctrl-C: the query stops, the run ends interrupted, nothing at `--out`.
    pub stop: Option<Arc<StopSignal>>,
    /// Where the query runs.
    pub engine: Engine,
}

/// Where a query runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Engine {
    /// DataFusion in this process.
    #[default]
    Local,
    /// A job on the Ballista cluster of this scheduler (`df://HOST:PORT`): database tables staged
    /// as Parquet here first, every table read by the executors.
    Ballista { scheduler: String },
}

impl Engine {
    /// `local` or `ballista`.
    pub fn name(&self) -> &'static str {
        match self {
            Engine::Local => "local",
            Engine::Ballista { .. } => "ballista",
        }
    }
}

/// What one table scan did.
#[derive(Clone, Debug, Default)]
pub struct ScanSummary {
    /// The table as the query names it.
    pub table: String,
    /// The source (password redacted).
    pub source: String,
    /// Partitions (connections) that read it.
    pub partitions: usize,
    /// Rows and bytes received.
    pub rows: u64,
    pub bytes: u64,
    /// Columns read.
    pub columns: Vec<String>,
    /// Filters sent to the source (SQL) and those DataFusion applied.
    pub pushed: Vec<String>,
    pub kept: Vec<String>,
    /// The LIMIT sent.
    pub limit: Option<usize>,
    /// How it was split.
    pub split: String,
    /// The SQL of each partition as sent (a run-time filter's long lists shown by length).
    pub sql: Vec<String>,
    /// The hash join's run-time filter added to the scan's SQL (its short form), and the
    /// longest a partition waited for it.
    pub dynamic: Option<String>,
    pub filter_wait_s: f64,
}
