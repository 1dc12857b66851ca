//! Options of the `lookup` and `bulkload` workloads, flattened into `dbscope run` (clap).
//!
//! `run::plan` turns them into the run plan's workload options.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::parse::parse_duration;

/// `lookup` / `bulkload` options.
#[derive(Debug, Args)]
pub struct LabArgs {
    /// lookup, bulkload, scan: rows in the table (lookup: keys 1..=N, default 1000000; bulkload:
    /// rows loaded, default 1000000; scan: default 100000).
    #[arg(long, value_name = "N")]
    pub rows: Option<u64>,

    /// lookup, bulkload, scan: bytes of user data per row: an 8-byte id plus a text pad of the
    /// rest (lookup and scan default 100; bulkload default 16).
    #[arg(long, value_name = "BYTES")]
    pub row_bytes: Option<u32>,

    /// lookup, commit (with --keys shared:N), events (the elements): key distribution, seeded,
    /// drawn as pgbench's random functions draw: `uniform` (the default), `zipf:S` (0 < S ≤
    /// 1000, key 1 hottest; e.g. zipf:0.99), `exponential:P` (P > 0, key 1 most likely) or
    /// `gaussian:P` (P ≥ 2, around the middle key).
    #[arg(long, value_name = "uniform|zipf:S|exponential:P|gaussian:P")]
    pub dist: Option<String>,

    /// lookup, bulkload: put the table on this directory: a PostgreSQL tablespace (CREATE
    /// TABLESPACE: the server on this machine, the directory owned by the server's user, a
    /// superuser), or a SQLite database file attached from it.
    #[arg(long, value_name = "DIR")]
    pub tablespace_dir: Option<PathBuf>,

    /// lookup: cache state before the lookups: `warm` (the default) reads everything once first;
    /// `cold` empties what dbscope can (new connections, SQLite's page cache, the OS page cache
    /// of the table's files) and records what it could not (PostgreSQL's shared_buffers, unless
    /// --restart-cmd). scan: `cold` (OS page cache emptied and a new connection before each
    /// scan), `os` (the default: OS cache warm, SQLite's too small: every scan reads and decrypts
    /// every page) or `engine` (SQLite's cache holds the table: later scans read nothing).
    #[arg(long, value_name = "cold|warm|os|engine")]
    pub cache: Option<String>,

    /// lookup --cache cold on PostgreSQL: a shell command that restarts the server, which is
    /// what empties shared_buffers (e.g. 'pg_ctl -D /var/lib/postgresql/15/main restart -m fast
    /// -w' or 'systemctl restart postgresql'); dbscope runs it after setup, waits for it to exit
    /// (not for its output to close) and until the server accepts connections again, within
    /// --restart-timeout, and records it.
    #[arg(long, value_name = "CMD")]
    pub restart_cmd: Option<String>,

    /// lookup --restart-cmd: how long the restart may take, until the server accepts
    /// connections again (default 60s); at the limit the command's process group is ended and
    /// the run fails.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub restart_timeout: Option<Duration>,

    /// bulkload: distinct values of the grouped column (row id has col = (id - 1) % N; default
    /// 4100).
    #[arg(long, value_name = "N")]
    pub groups: Option<u64>,

    /// bulkload: run the steps (load, GROUP BY twice) N times in this run, the table emptied in
    /// between: each step is an event per repetition, so `compare` has samples to test.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub repeat: Option<u64>,

    /// bulkload: table kind: `temp` (the default; one session: a temporary table belongs to its
    /// connection), `unlogged` (PostgreSQL UNLOGGED; SQLite journal_mode=OFF), `logged`.
    #[arg(long, value_name = "temp|unlogged|logged")]
    pub into: Option<String>,
}
