//! Arguments of `dbscope report RUN` and `dbscope export RUN` (clap).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run directory.
    pub run: PathBuf,
    /// JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Include warm-up events in the statistics.
    #[arg(long)]
    pub include_warmup: bool,
    /// Also write a self-contained HTML report (inline CSS and SVG plots, no network) to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also write each plot as its own SVG file into DIR (created if missing).
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,
    /// Also list the N slowest events with their session and start time (e.g. --top 10000).
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// With --top: the slowest events of this name only (e.g. --event 'log file sync').
    #[arg(long, value_name = "NAME", requires = "top")]
    pub event: Option<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    /// RFC 4180 CSV with a header line.
    Csv,
    /// Apache Parquet (Snappy), timestamps as TIMESTAMP(NANOS, UTC).
    Parquet,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Columns: session, event, start_utc, start_ns, duration_ns, intended_start_ns,
outcome, rows, warmup, and for imported traces obj, p1, p2, p3, p1_name, p2_name, p3_name (a wait's
obj# and parameters; null when absent) (times in ns; see docs/export.md). Read it with:
  R:      arrow::read_parquet(\"events.parquet\")   or   read.csv(\"events.csv\")
  pandas: pd.read_parquet(\"events.parquet\")
  DuckDB: select event, quantile_cont(duration_ns, 0.99) from 'events.parquet' group by event"
)]
pub struct ExportArgs {
    /// Run directory.
    pub run: PathBuf,
    /// Output format.
    #[arg(long, short = 'f', value_enum, default_value = "csv")]
    pub format: Format,
    /// Output file. Default: events.csv / events.parquet inside the run directory. (`--output`
    /// is accepted too.)
    #[arg(long, short = 'o', alias = "output", value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Exit 0 on a run known to lack events (killed, cut, fewer events than it recorded). Without
    /// it such an export is still written, marked `dbscope.incomplete` (Parquet), and exits 1.
    #[arg(long)]
    pub allow_incomplete: bool,
}
