//! The top-level command line: clap's `Cli` and its `Command`, one variant per subcommand.
//!
//! Each subcommand's arguments live in its folder (`run/args.rs`, …); `main.rs` dispatches them.

use clap::{Parser, Subcommand};

/// dbscope — did this change make the database faster, and can you prove it?
///
/// Runs seeded workloads against real databases, times every operation, and records each run in a
/// directory (manifest.json + event blocks) that `report` and `export` read.
#[derive(Debug, Parser)]
#[command(
    name = "dbscope",
    version,
    propagate_version = true,
    max_term_width = 100
)]
#[command(after_help = "Start here:
  dbscope run commit --sessions 4 --duration 10s        # SQLite file in the run directory
  dbscope report runs/<timestamp>-commit                # R-style summary per event
  dbscope run commit --target postgres://bench@/bench?host=/var/run/postgresql \\
                     --set synchronous_commit=off --sessions 20 --ops 200000
  dbscope export runs/<timestamp>-commit --format parquet")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a workload against a database and record every operation.
    Run(Box<crate::run::args::RunArgs>),
    /// Summarise a recorded run: per event count, errors, throughput, R's summary(), percentiles.
    Report(crate::report::args::ReportArgs),
    /// Write a run's events as CSV or Parquet for R, pandas or DuckDB.
    Export(crate::report::args::ExportArgs),
    /// Is B faster than A, by how much, and how sure are we? Welch and rank tests, quantile CIs,
    /// a verdict, and what differs between the manifests.
    Compare(crate::compare::args::CompareArgs),
    /// The lab notebook: every run under a runs directory with its outcome and headline figures,
    /// filtered (`--workload`, `--target`, `--since`, `--where k=v`), as JSON, or as a trend.
    History(crate::history::args::HistoryArgs),
    /// Named baselines: `baseline set NAME RUN…`, `list`, `show NAME`; then `compare --baseline
    /// NAME RUN` compares a run (or several, pooled) against the baseline's runs.
    Baseline(crate::baseline::args::BaselineArgs),
    /// Is B faster than A, for sure? Runs two plans alternately (ABBA), each round ordinary runs,
    /// until a sequential interval decides: B slower, B faster, no difference larger than X%, or
    /// undecided after --max-rounds.
    Ab(crate::ab::args::AbArgs),
    /// Turn latencies measured elsewhere into a run: `import csv FILE --event NAME --out DIR`.
    Import(crate::import::args::ImportArgs),
    /// Oracle 10046 extended SQL trace files: response-time profile, import as a run.
    Trace(crate::trace::args::TraceArgs),
    /// Storage I/O tests without a database: `io redo` (a redo log writer on real files) and
    /// `io redo verify`.
    Io(crate::io::args::IoArgs),
    /// TPC-H: `tpch gen` (tpchgen data), `tpch q1` (Query 1 as a parallel map/combine/reduce job,
    /// exact), `tpch load` (tables into a database for `run tpch-q1`).
    Tpch(crate::tpch::args::TpchArgs),
    /// TPC-C: `tpcc check --target …` runs the consistency conditions on a database that
    /// `dbscope run tpcc` built and ran (the run itself: `dbscope run tpcc`).
    Tpcc(crate::run::tpcc::TpccArgs),
    /// Capture what an application does to PostgreSQL: `capture proxy` (a wire-protocol proxy
    /// that records every call), `capture info` (what a capture holds).
    Capture(crate::capture::args::CaptureArgs),
    /// Replay a capture against a (changed) system with its timing and concurrency, and count
    /// where the answers diverge.
    Replay(crate::capture::args::ReplayArgs),
    /// Restore points of a PostgreSQL database: take one before a capture, reset to it before
    /// each replay.
    RestorePoint(crate::capture::args::RestorePointArgs),
    /// Run a workload at several concurrencies (`sweep --sessions 1,2,4,8 -- run commit …`) and
    /// fit the Universal Scalability Law: contention σ, coherency κ, the peak.
    Sweep(crate::sweep::args::SweepArgs),
    /// Move a PostgreSQL table to files or files into a table, SQOOP-style: one connection per
    /// mapper over block (ctid) or key ranges, COPY, row counts and a checksum verified end to end.
    Transfer(crate::transfer::args::TransferArgs),
    /// Apache DataFusion Ballista, embedded: `cluster scheduler`, `cluster executor` (for
    /// `tpch q1 --engine ballista`; needs the `cluster` build feature, docs/cluster.md).
    Cluster(crate::cluster::args::ClusterArgs),
    /// The data hub: one SQL query across PostgreSQL tables (parallel COPY scans, filters pushed
    /// down), SQLite, Parquet/CSV/TPC-H files and runs, on Apache DataFusion, recorded as a run
    /// (needs the `hub` build feature, docs/hub.md).
    Query(crate::query::args::QueryArgs),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
