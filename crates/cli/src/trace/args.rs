//! Arguments of `dbscope trace …`: profile and import Oracle 10046 extended SQL trace files.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// `dbscope trace` and its subcommands.
#[derive(Debug, Args)]
pub struct TraceArgs {
    /// What to do with the trace files.
    #[command(subcommand)]
    pub command: TraceCommand,
}

/// Subcommands of `dbscope trace`.
#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Response-time profile (Method R) of 10046 trace files: by event, by statement, the recursive
    /// call tree, skew histograms and the slowest waits.
    Profile(TraceProfileArgs),
    /// Turn 10046 trace files into a run directory that `report`, `export` and `compare` read.
    Import(TraceImportArgs),
}

/// `dbscope trace profile FILE…`
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  dbscope trace profile prod_ora_1234.trc
  dbscope trace profile a.trc b.trc.gz --event 'log file sync' --top 20
  dbscope trace profile x.trc --since 2024-03-26T18:58:00Z --until '2024-03-26 19:00:00' --json

Files may be gzip-compressed. Times without an offset are UTC. Unit: µs (centiseconds before
Oracle 9i are detected from the header and converted). R is taken within each session's window,
from its first timestamp to its last: the part of a call or wait that began before tracing did is
clipped, and a `clipped:` line says how much.")]
pub struct TraceProfileArgs {
    /// Trace files (.trc, optionally gzip-compressed); profiled together. `-` reads standard input.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Only records that end at or after this wall-clock time (RFC 3339, or `YYYY-MM-DD HH:MM:SS[.f]` as UTC).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Only records that end before this wall-clock time.
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// Only the calls and waits of this statement (sqlid, or hash value).
    #[arg(long, value_name = "SQLID")]
    pub sqlid: Option<String>,
    /// Only this wait event in the event rows, skew and slowest waits (repeatable).
    #[arg(long = "event", value_name = "NAME")]
    pub events: Vec<String>,
    /// How many of the slowest waits to list.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
    /// How many statements the text output lists (JSON lists all).
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub statements: usize,
    /// Show each listed statement's execution plan (its STAT lines) under it.
    #[arg(long)]
    pub plans: bool,
    /// JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Treat a malformed line as an error instead of a warning.
    #[arg(long)]
    pub strict: bool,
}

/// `dbscope trace import FILE… --out RUN`
#[derive(Debug, Args)]
#[command(after_help = "Example:
  dbscope trace import flashon.trc --out runs/flashon && dbscope report runs/flashon

Waits become events named after the wait event, db calls events named PARSE/EXEC/FETCH/…; the
attributes (sqlid, obj#, p1..p3, file:line) go to trace-attrs.jsonl in the run directory. The run
starts at the trace's first timestamp: calls and waits that began before it are clipped to it.")]
pub struct TraceImportArgs {
    /// Trace files (.trc, optionally gzip-compressed); merged into one run. `-` reads standard
    /// input (a pipe is kept in a temporary file: the import reads its input twice).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Run directory to create.
    #[arg(long, short = 'o', value_name = "RUN")]
    pub out: PathBuf,
    /// Treat a malformed line as an error instead of a warning.
    #[arg(long)]
    pub strict: bool,
}
