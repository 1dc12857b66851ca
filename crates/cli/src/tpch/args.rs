//! Arguments of `dbscope tpch gen|q1|load` (clap).
//!
//! Generate TPC-H data, run Query 1 as a map/combine/reduce job, and load the tables into a
//! database.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

/// `dbscope tpch …`.
#[derive(Debug, Args)]
pub struct TpchArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: TpchCommand,
}

/// The `tpch` subcommands.
#[derive(Debug, Subcommand)]
pub enum TpchCommand {
    /// Generate TPC-H tables with tpchgen (identical to dbgen's output), in parallel parts.
    Gen(GenArgs),
    /// TPC-H Query 1 as a parallel map/combine/reduce job over lineitem files, exact to the digit.
    Q1(Q1Args),
    /// Load generated .tbl files into a database (PostgreSQL: COPY; SQLite: prepared multi-row INSERTs).
    Load(LoadArgs),
}

/// Which tables `tpch gen` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TableChoice {
    /// All eight tables.
    All,
    /// lineitem only.
    Lineitem,
    /// orders only.
    Orders,
    /// customer only.
    Customer,
    /// part only.
    Part,
    /// partsupp only.
    Partsupp,
    /// supplier only.
    Supplier,
    /// nation only.
    Nation,
    /// region only.
    Region,
}

/// Output format of `tpch gen`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GenFormatArg {
    /// dbgen's `|`-separated lines, each ending in `|`.
    Tbl,
    /// CSV with a header line.
    Csv,
    /// Apache Parquet, lineitem only (decimals as INT64 DECIMAL(15,2), dates as DATE); `tpch q1` reads it.
    Parquet,
}

/// Where `tpch q1` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EngineArg {
    /// dbscope's own map/combine/reduce job, on this machine.
    Local,
    /// An Apache DataFusion Ballista cluster (--scheduler; needs the `cluster` build feature).
    Ballista,
    /// The same plan as --engine ballista (--way) on DataFusion in this process: the baseline
    /// the cluster is compared with (needs the `cluster` build feature).
    Datafusion,
}

/// How `tpch q1 --engine ballista` plans Q1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WayArg {
    /// The official SQL text, planned by DataFusion on the scheduler (the seed's Hive).
    Sql,
    /// The hand-written job's shape as an explicit plan: partial aggregate (combiner), shuffle by
    /// (l_returnflag, l_linestatus), final aggregate (reducer).
    Mapreduce,
}

/// `dbscope tpch gen`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  dbscope tpch gen --sf 1 --table lineitem --out tpch-sf1      # tpch-sf1/lineitem.tbl, ~760 MB
  dbscope tpch gen --sf 0.01 --out tpch-small                  # all eight tables
  dbscope tpch gen --sf 10 --table lineitem --parts 8 --out sf10   # lineitem.1.tbl … lineitem.8.tbl
  dbscope tpch gen --sf 1 --table lineitem --format parquet --out pq  # for `tpch q1 pq`")]
pub struct GenArgs {
    /// Scale factor: 1 is about 1 GB (6,001,215 lineitem rows); 0.01 for quick tests.
    #[arg(long, default_value_t = 1.0, value_name = "SF")]
    pub sf: f64,
    /// Table to generate.
    #[arg(long, value_enum, default_value = "all")]
    pub table: TableChoice,
    /// Output format.
    #[arg(long, value_enum, default_value = "tbl")]
    pub format: GenFormatArg,
    /// Parts per table, generated in parallel (files TABLE.K.tbl); their concatenation is the whole.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub parts: u32,
    /// Rows per Parquet row group (each row group is one map task of `tpch q1`).
    #[arg(long, default_value_t = 65_536, value_name = "N")]
    pub row_group_rows: usize,
    /// Worker threads. Default: the number of CPUs.
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Output directory (created if missing).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: PathBuf,
    /// No progress bar.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// `dbscope tpch q1`.
#[derive(Debug, Args)]
#[command(
    after_help = "Prints the answer at full precision (sums exact to 2/2/4/6 decimals, averages as the
nearest double), checks it against the official TPC-H answer when the input is SF 1 and DELTA is 90,
and records the job as a run (events map, reduce, finalize, q1) for `dbscope report`.

Examples:
  dbscope tpch q1 tpch-sf1/lineitem.tbl --mappers 2
  dbscope tpch q1 tpch-sf1 --mappers 7 --no-combiner       # same answer, only slower
  dbscope tpch q1 tpch-sf1 --explain                       # the dataflow plan, without running
  dbscope tpch q1 tpch-sf1 -m 1 --repeat 5 -o a; dbscope tpch q1 tpch-sf1 -m 2 --repeat 5 -o b
  dbscope compare a b --event q1                           # did the second mapper help?
  dbscope tpch q1 tpch-sf1 --engine ballista --scheduler df://127.0.0.1:50050 --way sql
  dbscope tpch q1 tpch-sf1 --engine ballista --scheduler df://127.0.0.1:50050 --way mapreduce --no-combiner"
)]
pub struct Q1Args {
    /// lineitem .tbl or Parquet files, or directories holding lineitem*.tbl (or lineitem*.parquet) files.
    #[arg(required = true, value_name = "FILE_OR_DIR")]
    pub inputs: Vec<PathBuf>,
    /// Mapper threads; each file is split into this many byte ranges aligned to line starts.
    /// Default: the number of CPUs. With --engine ballista: the map tasks (splits), and the
    /// shuffle's partitions.
    #[arg(long, short = 'm', value_name = "N")]
    pub mappers: Option<usize>,
    /// Where the job runs: dbscope's own job here, or a Ballista cluster (docs/cluster.md).
    #[arg(long, value_enum, default_value = "local")]
    pub engine: EngineArg,
    /// The Ballista scheduler, with --engine ballista: df://HOST:PORT.
    #[arg(long, value_name = "df://HOST:PORT")]
    pub scheduler: Option<String>,
    /// With --engine ballista: the official SQL planned by DataFusion, or the explicit
    /// map/combine/reduce plan.
    #[arg(long, value_enum, default_value = "sql")]
    pub way: WayArg,
    /// Send every row's values to the reducer instead of per-mapper partial sums and counts.
    #[arg(long)]
    pub no_combiner: bool,
    /// Read .tbl files with read() into buffers instead of parsing them in place through a memory
    /// map (the fallback for files that cannot be mapped; compare the two with --repeat).
    #[arg(long)]
    pub no_mmap: bool,
    /// DELTA of Q1: l_shipdate <= date '1998-12-01' - DELTA days (the official answer uses 90).
    #[arg(long, default_value_t = 90, value_name = "DAYS", value_parser = clap::value_parser!(u32).range(0..=3650))]
    pub delta: u32,
    /// Run the job N times into the same run (N `q1` events, so `dbscope compare` can test a change,
    /// e.g. --mappers 1 against --mappers 2); every repetition's answer must be identical.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// Print the dataflow plan (scan → filter → project → partial aggregate → merge → sort) and stop.
    #[arg(long)]
    pub explain: bool,
    /// Run directory for the job's events. Default: runs/<UTC timestamp>-tpch-q1.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Do not record a run.
    #[arg(long)]
    pub no_record: bool,
    /// No progress lines.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// `dbscope tpch load`.
#[derive(Debug, Args)]
#[command(
    after_help = "Creates the TPC-H tables (dropping them first with --fresh) and loads every TABLE*.tbl
file found in DIR. PostgreSQL: COPY … FROM STDIN, parts in parallel sessions, one transaction per file.
SQLite: prepared multi-row INSERTs in transactions of --commit-every rows.

Examples:
  dbscope tpch load tpch-small --target sqlite:tpch.db
  dbscope tpch load tpch-sf1 --target postgres://bench@/bench?host=/var/run/postgresql --fresh
  dbscope tpch load tpch-small --target sqlite:tpch.db --fresh --delta 90 --delta 60
  dbscope run tpch-q1 --target sqlite:tpch.db --delta 60 --ops 3"
)]
pub struct LoadArgs {
    /// Directory written by `dbscope tpch gen` (.tbl format).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Database: sqlite:PATH, postgres://… or postgres:KEY=VALUE… (libpq's rules; see docs/targets.md).
    #[arg(long, short = 't', value_name = "TARGET")]
    pub target: String,
    /// Setting applied to the loading sessions (PostgreSQL parameters, SQLite pragmas). Repeatable.
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = dbscope_db::parse_setting)]
    pub settings: Vec<(String, String)>,
    /// The key of a sqlcipher:PATH target, read from this file (as `run --key-file`). Without
    /// it: $DBSCOPE_SQLITE_KEY. Never recorded.
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<PathBuf>,
    /// Drop and recreate the tables first.
    #[arg(long)]
    pub fresh: bool,
    /// DELTA (days) of the Q1 answers to store for `dbscope run tpch-q1 --delta DAYS`: the
    /// map/combine/reduce job runs over the loaded lineitem files once per DELTA. Repeatable.
    /// Default: 90, the official one.
    #[arg(long = "delta", value_name = "DAYS", value_parser = clap::value_parser!(u32).range(0..=3650))]
    pub deltas: Vec<u32>,
    /// Rows per transaction (SQLite; PostgreSQL's COPY loads each file in one transaction).
    #[arg(long, default_value_t = 100_000, value_name = "N")]
    pub commit_every: u64,
    /// Run directory recording the load (an event per file, counters per table).
    /// Default: runs/<UTC timestamp>-tpch-load.
    #[arg(long, alias = "out", value_name = "DIR")]
    pub run: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}
