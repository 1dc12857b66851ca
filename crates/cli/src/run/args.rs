//! Arguments of `dbscope run WORKLOAD` (clap): workload, target, sessions, pacing, recording.
//!
//! The workloads' own options are flattened in from `lab_args` and `events_args`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::parse::parse_duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WorkloadName {
    /// Each session: UPDATE one row, COMMIT; as fast as it can. `update` and `commit` are timed
    /// separately, so commit latency (Oracle's "log file sync", PostgreSQL's WAL flush) shows alone.
    Commit,
    /// TPC-H Query 1 in SQL (official text, DELTA 90 or --delta) on data loaded by `dbscope tpch load`; every
    /// execution's rows are checked against the map/combine/reduce answer (and, at SF 1, the official one).
    TpchQ1,
    /// CERN's PVSS archiver (seed 003): --clients producers each offering --rate events/s open
    /// loop; each event appended to events_history and setting its element in eventlastval, by
    /// --strategy (row-trigger, row, batch, staged, partitioned). Latency from each event's
    /// intended time to its commit (CO-corrected) and service time; backlog per second.
    Events,
    /// Primary-key lookups (seed 001: 200,000 over 1,000,000 keys): --rows, --ops (the run's
    /// total), --dist, --row-bytes, --tablespace-dir, --cache cold|warm. One event per lookup.
    Lookup,
    /// Parallel bulk load then GROUP BY twice (seed 002): --rows, --groups, --into
    /// temp|unlogged|logged, --tablespace-dir; COPY on PostgreSQL; the answer checked exactly.
    Bulkload,
    /// Your own transactions: pgbench scripts run unchanged (-f FILE[@W], -b tpcb-like|
    /// simple-update|select-only, -D, -M, --max-tries, --init tpcb --scale N). Every script
    /// execution is a transaction event named after its script, every command an event named
    /// after its script and line; `report` prints pgbench's figures beside R's.
    Script,
    /// Full scans of one table (seed 000's TDE experiment, docs/tde.md): --rows, --row-bytes,
    /// --cache cold|os|engine; sqlite: or sqlcipher: targets, one session. Events `scan`, `open`
    /// and (SQLCipher) `key_derivation`; per scan: pages read, cache hits, bytes, MB/s.
    Scan,
    /// TPC-C as HammerDB's TPROC-C runs it: --warehouses W built (COPY with --build-sessions
    /// on PostgreSQL; recorded as a run of its own, reused when the shape matches, --fresh to
    /// rebuild), then New-Order, Payment, Order-Status, Delivery and Stock-Level in the --mix
    /// (45,43,4,4,4), a home warehouse per session, --max-tries on 40001/40P01. Each transaction
    /// an event named after its type; `report` prints NOPM and TPM first; the consistency
    /// checks after the run (--no-check to skip).
    Tpcc,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  dbscope run commit --sessions 4 --duration 10s
  dbscope run commit --sessions 20 --ops 200000          # seed 001: 4,000,000 commits
  dbscope run commit --target sqlite:bench.db --set journal_mode=wal --set synchronous=full
  dbscope run commit --target postgres://bench:secret@localhost/bench --set synchronous_commit=off
  dbscope run commit --target null --sessions 1 --ops 5000000   # the harness alone
  dbscope run tpch-q1 --target sqlite:tpch.db --ops 5 --delta 60  # after `tpch load … --delta 60`
  dbscope run commit --rate 2000 --sessions 4            # open loop: 2,000 commits/s in total
  dbscope run events --clients 150 --rate 1000 --duration 60s --strategy staged \
                     --target postgres://bench@/bench --connections 4
  dbscope run events --clients 150 --duration 15s --iterations   # CERN's table, every strategy
  dbscope run lookup --rows 1000000 --ops 200000 --sessions 4 --dist zipf:0.99 --cache cold
  dbscope run bulkload --rows 20000000 --groups 4100 --sessions 4 --into unlogged --target postgres://…
  dbscope run script -b tpcb-like --init tpcb --scale 10 -c 4 -j 2 --duration 60s --target postgres://…
  dbscope run script -f my.sql@3 -f other.sql -M prepared --max-tries 10 --rate 500 -c 8
  DBSCOPE_SQLITE_KEY=… dbscope run scan --target sqlcipher:enc.db --rows 200000 --cache os --ops 10
  dbscope run scan --target sqlcipher:enc.db --key-file key.txt --cache engine --ops 10
  dbscope run tpcc --warehouses 4 --build-sessions 4 -c 16 -d 5m --max-tries 10 --target postgres://…

Ctrl-C stops the run and keeps everything recorded (outcome: interrupted).")]
pub struct RunArgs {
    /// Workload to run.
    #[arg(value_enum)]
    pub workload: WorkloadName,

    /// Database: sqlite:PATH, postgres://[user[:password]@][host][:port][,host[:port]…][/db][?host=/socket/dir&…],
    /// postgres:KEY=VALUE…, or null (measures the harness). PostgreSQL strings follow libpq's rules
    /// (query parameters override, PGHOST/PGPORT/… fill in; no TLS; see docs/targets.md). Default:
    /// $DATABASE_URL, else a SQLite file dbscope.sqlite inside the run directory.
    #[arg(long, short = 't', value_name = "TARGET")]
    pub target: Option<String>,

    /// Setting applied to every session: PostgreSQL parameters (e.g. synchronous_commit=off),
    /// SQLite pragmas (e.g. journal_mode=wal, synchronous=full), MariaDB/MySQL session variables
    /// (SET SESSION, e.g. innodb_lock_wait_timeout=5) or, as global.NAME=VALUE, global
    /// ones (SET GLOBAL, e.g. global.innodb_flush_log_at_trx_commit=2: it stays set after the
    /// run). Repeatable. Read back and recorded.
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = parse_set)]
    pub settings: Vec<(String, String)>,

    /// The key of a sqlcipher:PATH target, read from this file (one trailing newline is not part
    /// of it; x'64 hex digits' is a raw key). Without it: $DBSCOPE_SQLITE_KEY. Never recorded.
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<PathBuf>,

    /// `off`: run in a child process whose OpenSSL has AES-NI, carry-less multiply and VAES
    /// masked (OPENSSL_ia32cap), verified there by OpenSSL's AES rate against this process's;
    /// both rates and the mask go into the manifest (sqlcipher builds; docs/tde.md).
    #[arg(long, value_name = "on|off", default_value = "on", value_parser = ["on", "off"])]
    pub aes_ni: String,

    /// scan: seed 000's table in one command: clear text (sqlite:NAME-clear.EXT beside the
    /// --target sqlcipher: file) and encrypted × AES-NI on/off × --cache cold/os/engine, each a run
    /// in --out DIR, then the median scan times and encrypted's ratio to clear (docs/tde.md).
    #[arg(long)]
    pub matrix: bool,

    /// Concurrent sessions, each with its own connection.
    #[arg(
        long,
        short = 's',
        short_alias = 'c',
        default_value_t = 1,
        value_name = "N"
    )]
    pub sessions: u32,

    /// Client threads the sessions run on (PostgreSQL, and MariaDB/MySQL on a Unix socket):
    /// sessions share threads, each switching to another while it waits for the server, as
    /// pgbench's -j does. Default: one per CPU, at most one per session, on PostgreSQL; a thread
    /// per session on MariaDB/MySQL (docs/targets.md says why). SQLite and null sessions always
    /// get a thread each.
    #[arg(long, short = 'j', value_name = "N")]
    pub threads: Option<u32>,

    /// Operations per session (warm-up ones included); for lookup, the run's total, split over
    /// the sessions. With neither --ops nor --duration: 10s.
    #[arg(long, value_name = "N")]
    pub ops: Option<u64>,

    /// How long to measure after the warm-up, e.g. 30s, 5m, 1h, 500ms.
    #[arg(long, short = 'd', value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// Warm-up period: operations starting in it are recorded (all their events) but flagged and
    /// left out of statistics by default.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "0s")]
    pub warmup: Duration,

    /// Open loop: operations per second offered in total, split evenly over the sessions
    /// (`R/session`: per session). Each operation gets an intended start whether or not the
    /// database kept up; `report` shows latency from it (coordinated-omission corrected) beside
    /// service time, and the backlog. `events`: events per second per client (default 1000).
    /// Default: closed loop (as fast as it can).
    #[arg(long, value_name = "R|R/session")]
    pub rate: Option<String>,

    /// How intended starts are spaced with --rate: `constant` or `poisson` (seeded).
    #[arg(long, default_value = "constant", value_name = "constant|poisson")]
    pub arrival: String,

    /// Seed of every random choice (recorded), so the same command issues the same operations.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Record the plan of each distinct statement of the workload once, after warm-up (after a
    /// session's first operation without one), into the run's plans.json: PostgreSQL's
    /// `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)` inside a transaction that is rolled back,
    /// SQLite's `EXPLAIN QUERY PLAN`. Taken between two operations: no event's time includes it.
    /// `report` shows the plans, `compare` says when one changed.
    #[arg(long)]
    pub explain: bool,

    /// Stop the run (outcome: failed) after more than this many errors.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub max_errors: u64,

    /// Run directory. Default: runs/<UTC timestamp>-<workload>.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// commit: which rows sessions update: `own` (the default: one row per session, no
    /// contention) or `shared:N` (seeded uniform picks from N rows, so sessions contend).
    #[arg(long, value_name = "own|shared:N")]
    pub keys: Option<String>,

    /// Table the workload uses (created and filled if missing). Default: dbscope_commit,
    /// dbscope_lookup, dbscope_bulkload.
    #[arg(long, value_name = "NAME")]
    pub table: Option<String>,

    /// Drop and recreate the table first.
    #[arg(long)]
    pub fresh: bool,

    /// tpch-q1 only: DELTA of Q1 in days (l_shipdate <= date '1998-12-01' - DELTA days). Default 90,
    /// the official one. Rows are checked against the answer `dbscope tpch load --delta DAYS` stored.
    #[arg(long, value_name = "DAYS", value_parser = clap::value_parser!(u32).range(0..=3650))]
    pub delta: Option<u32>,

    /// Active-session samples per second (PostgreSQL): a separate connection reads
    /// pg_stat_activity for the run's sessions (application_name dbscope/<run id>/<session>) and
    /// records each one's state and wait event into samples.jsonl. 0 turns sampling off.
    #[arg(long, default_value_t = 10.0, value_name = "HZ")]
    pub sample_hz: f64,

    /// Besides the start and the end, snapshot the database's and the OS's counters this often
    /// (pg_stat_database, pg_stat_wal, …, /proc/diskstats; see docs/observe.md), e.g. 10s.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub snapshot_every: Option<Duration>,

    /// MariaDB/MySQL: how the run's timed waits are read. summary: per event, from
    /// events_waits_summary_by_thread_by_event_name. history: also each wait, from
    /// events_waits_history_long (consumers and wait/io/file instruments switched on for the run
    /// and restored after it), into waits.jsonl; see docs/observe.md.
    #[arg(long, value_enum, default_value = "summary", value_name = "HOW")]
    pub waits: WaitsMode,
    #[command(flatten)]
    pub lab: crate::run::lab_args::LabArgs,

    /// No progress display and no report at the end; print only the run directory.
    #[arg(long, short = 'q')]
    pub quiet: bool,

    #[command(flatten)]
    pub events: crate::run::events_args::EventsArgs,

    #[command(flatten)]
    pub script: crate::run::script_args::ScriptArgs,

    #[command(flatten)]
    pub tpcc: crate::run::tpcc_args::TpccArgs,
}

fn parse_set(s: &str) -> Result<(String, String), dbscope_db::TargetError> {
    dbscope_db::parse_setting(s)
}

/// How a MariaDB/MySQL run reads its timed waits (`--waits`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum WaitsMode {
    /// Per event, summed over the run's threads.
    Summary,
    /// Also each wait, from the history ring.
    History,
}
