//! Arguments of `dbscope query` (the data hub, issue 32).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// Where `dbscope query` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum QueryEngine {
    /// Apache DataFusion in this process.
    Local,
    /// A job on an Apache DataFusion Ballista cluster (--scheduler).
    Ballista,
}

/// `dbscope query`.
#[derive(Debug, Args)]
#[command(after_help = "Sources (NAME=URI; NAME is what the query calls it):
  postgres://[user@]host[:port]/DB/TABLE      one table, as NAME
  postgres://…/DB?tables=a,b                  listed tables, as NAME.a, NAME.b
  postgres://…/DB[?schema=S]                  every table of schema S (public), as NAME.t
  mysql://[user[:pw]@][host][:port]/DB/TABLE  MariaDB/MySQL (also ?tables=a,b, or the whole DB
                                              as NAME.t; ?socket=PATH)
  sqlite:PATH[?table=T]                       T as NAME, or every table as NAME.t
  file:PATH                                   Parquet, CSV (header line) or TPC-H .tbl, file or directory
  run:DIR                                     a run's events, with `dbscope export`'s columns

Examples:
  dbscope query \"SELECT o_orderpriority, count(*) FROM orders JOIN lineitem ON l_orderkey = o_orderkey
      WHERE l_shipmode IN ('MAIL', 'SHIP') GROUP BY 1 ORDER BY 1\"
      --source orders=postgres://bench@/bench/orders?host=/var/run/postgresql
      --source lineitem=file:tpch/lineitem.parquet --explain --out q12.parquet
  dbscope query \"SELECT event, count(*), avg(duration_ns) FROM r GROUP BY 1\" --source r=run:runs/x
  dbscope query --plan q.dataflow --source …  (steps: NAME = load T | filter IN by EXPR | …)
  dbscope query \"…\" --sources hub.toml          ([sources] table of NAME = \"URI\" lines)
  dbscope query \"…\" --source … --engine ballista --scheduler df://sched:50050   (on a cluster)

docs/hub.md says what is pushed down and how the run is recorded.")]
pub struct QueryArgs {
    /// The SQL (Apache DataFusion's dialect; one query). Or --plan.
    #[arg(required_unless_present = "plan", conflicts_with = "plan")]
    pub sql: Option<String>,

    /// A dataflow instead of SQL: one step a line (load, filter, project, join, group, order,
    /// limit), each naming its input, run in the order written and each step timed (docs/hub.md).
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,

    /// A source NAME=URI (repeatable).
    #[arg(long = "source", value_name = "NAME=URI")]
    pub source: Vec<String>,

    /// A TOML file of sources: a `[sources]` table of `NAME = "URI"` lines.
    #[arg(long, value_name = "FILE.toml")]
    pub sources: Option<PathBuf>,

    /// Connections reading each PostgreSQL table at once (block ranges, one snapshot).
    /// Default: one per CPU of this machine, 2 to 8 (each connection's rows are decoded on a
    /// thread of its own; more connections than CPUs add server processes to the same CPUs).
    #[arg(long, value_name = "N")]
    pub scan_connections: Option<u32>,

    /// Send nothing but the table to PostgreSQL (every column and row read, DataFusion does the
    /// rest): the other side of an A/B with pushdown.
    #[arg(long)]
    pub no_pushdown: bool,

    /// Print per source the SQL sent and what was pushed, and the plan DataFusion ran (with its
    /// metrics).
    #[arg(long)]
    pub explain: bool,

    /// Write the whole result to FILE.parquet or FILE.csv (appears only when the query completed).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// Rows shown on the terminal.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub show: usize,

    /// Where the query runs: `local` (DataFusion in this process) or `ballista` (a job on the
    /// cluster of --scheduler: database tables are scanned here and staged as Parquet beside the
    /// run directory, then every table is read by the executors, which must see that directory and
    /// the file sources at the same paths; build with `--features cluster`).
    #[arg(long, value_enum, default_value_t = QueryEngine::Local)]
    pub engine: QueryEngine,

    /// The Ballista scheduler for --engine ballista: df://HOST:PORT (`dbscope cluster scheduler`).
    #[arg(long, value_name = "df://HOST:PORT")]
    pub scheduler: Option<String>,

    /// Run directory to create (default: runs/<timestamp>-query).
    #[arg(long)]
    pub run: Option<PathBuf>,

    /// Print only the run directory (and errors).
    #[arg(long, short)]
    pub quiet: bool,
}
