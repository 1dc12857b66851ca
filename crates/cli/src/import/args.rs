//! Arguments of `dbscope import csv FILE` (clap): latencies measured elsewhere become a run.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use crate::parse::parse_delimiter;

#[derive(Debug, Args)]
pub struct ImportArgs {
    #[command(subcommand)]
    pub source: ImportSource,
}

#[derive(Debug, Subcommand)]
pub enum ImportSource {
    /// A CSV file with a column of latencies (with or without a header line).
    Csv(ImportCsvArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum UnitArg {
    /// Nanoseconds.
    Ns,
    /// Microseconds.
    Us,
    /// Milliseconds.
    Ms,
    /// Seconds.
    S,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  dbscope import csv waits.csv --event 'log file sync' --unit us --out runs/waits-a
  dbscope import csv lat.csv --event commit --column latency_ms --unit ms --session-column sid \\
                     --out runs/prod
  dbscope compare runs/waits-a runs/waits-b

Every data row becomes one successful event. Without --start-column, each session's events are laid
end to end from 0. A bad row stops the import with its line number, or with --lenient is skipped and
counted (in the manifest's workload parameters).")]
pub struct ImportCsvArgs {
    /// The CSV file.
    pub file: PathBuf,
    /// Event name for every row, e.g. 'log file sync'.
    #[arg(long, value_name = "NAME")]
    pub event: String,
    /// Column with the latencies: a header name or a number (1 = first). Needed when the file has
    /// more than one column.
    #[arg(long, value_name = "C")]
    pub column: Option<String>,
    /// Unit of the latencies (and of --start-column).
    #[arg(long, value_enum, default_value = "us")]
    pub unit: UnitArg,
    /// Column with session numbers (0, 1, 2, …).
    #[arg(long, value_name = "C")]
    pub session_column: Option<String>,
    /// Column with start offsets, in --unit, from any origin.
    #[arg(long, value_name = "C")]
    pub start_column: Option<String>,
    /// Field delimiter: one ASCII character, e.g. ';', or a C escape: '\t', '\x1f'.
    #[arg(long, default_value = ",", value_name = "CHAR", value_parser = parse_delimiter)]
    pub delimiter: u8,
    /// Skip bad rows and count them instead of stopping at the first.
    #[arg(long)]
    pub lenient: bool,
    /// Run directory to create.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: PathBuf,
}
