//! Arguments of `dbscope history [DIR]` (clap).

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  dbscope history                                   # every run under ./runs
  dbscope history --workload commit --since 2026-12-01
  dbscope history --where synchronous_commit=off --json
  dbscope history --workload commit --trend p99     # p99 over time as a sparkline
  dbscope history --trend throughput --html trend.html   # … and as an HTML plot
  dbscope history --rebuild                         # recreate the catalogue from the manifests

The catalogue (DIR/.dbscope-history.sqlite) is kept up to date by every source when it starts
and finishes a run; a run that never recorded an end (killed) is listed as incomplete. Headline
figures are those of the most frequent measured event: p50/p99 as R's quantile(type = 7), in ms;
throughput is successful operations per second over the measured span. See docs/notebook.md.")]
pub struct HistoryArgs {
    /// The runs directory.
    #[arg(default_value = "runs")]
    pub dir: PathBuf,
    /// Only runs of this workload.
    #[arg(long, value_name = "NAME")]
    pub workload: Option<String>,
    /// Only runs against this kind of target (sqlite, postgres, null, …).
    #[arg(long, value_name = "KIND")]
    pub target: Option<String>,
    /// Only runs started at or after this UTC time (2026-12-01, 2026-12-01T10:00).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Only runs made with this `--set` setting (repeatable).
    #[arg(long = "where", value_name = "SETTING=VALUE", value_parser = parse_setting)]
    pub settings: Vec<(String, String)>,
    /// Only the runs of this baseline (`dbscope baseline`).
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    /// One figure over time: throughput, p50, p99, errors or ops (a text sparkline).
    #[arg(long, value_name = "FIGURE", value_parser = clap::builder::PossibleValuesParser::new(dbscope_core::catalog::FIGURES))]
    pub trend: Option<String>,
    /// With --trend: also write the trend as a self-contained HTML page (a plot and the runs).
    #[arg(long, value_name = "FILE", requires = "trend")]
    pub html: Option<PathBuf>,
    /// JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Delete the catalogue and recreate it from the run directories' manifests first.
    #[arg(long)]
    pub rebuild: bool,
}

fn parse_setting(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!("expected SETTING=VALUE, got {s:?}")),
    }
}
