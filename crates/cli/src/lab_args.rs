//! Options of the `lookup` and `bulkload` workloads (flattened into `dbscope run`), and turning
//! them into the library's workload options (the run plan's part).

use std::path::PathBuf;

use dbscope_lab::workload::bulkload::BulkloadConfig;
use dbscope_lab::workload::lookup::LookupConfig;
use dbscope_lab::workload::place::Placement;

use crate::cmd_run::plan::lab_error;
use crate::exit::Exit;

use clap::Args;

/// `lookup` / `bulkload` options.
#[derive(Debug, Args)]
pub struct LabArgs {
    /// lookup, bulkload: rows in the table (lookup: keys 1..=N, default 1000000; bulkload: rows
    /// loaded, default 1000000).
    #[arg(long, value_name = "N")]
    pub rows: Option<u64>,

    /// lookup, bulkload: bytes of user data per row: an 8-byte id plus a text pad of the rest
    /// (lookup default 100; bulkload default 16).
    #[arg(long, value_name = "BYTES")]
    pub row_bytes: Option<u32>,

    /// lookup: key distribution, `uniform` or `zipf:S` (e.g. zipf:0.99; key 1 hottest), seeded.
    #[arg(long, default_value = "uniform", value_name = "uniform|zipf:S")]
    pub dist: String,

    /// lookup, bulkload: put the table on this directory: a PostgreSQL tablespace (CREATE
    /// TABLESPACE: the server on this machine, the directory owned by the server's user, a
    /// superuser), or a SQLite database file attached from it.
    #[arg(long, value_name = "DIR")]
    pub tablespace_dir: Option<PathBuf>,

    /// lookup: cache state before the lookups: `warm` reads everything once first; `cold` empties
    /// what dbscope can (new connections, SQLite's page cache, the OS page cache of the table's
    /// files) and records what it could not (PostgreSQL's shared_buffers, unless
    /// --restart-cmd).
    #[arg(long, default_value = "warm", value_name = "cold|warm")]
    pub cache: String,

    /// lookup --cache cold on PostgreSQL: a shell command that restarts the server, which is
    /// what empties shared_buffers (e.g. 'pg_ctl -D /var/lib/postgresql/15/main restart -m fast
    /// -w' or 'systemctl restart postgresql'); dbscope runs it after setup, waits until the
    /// server accepts connections again, and records it.
    #[arg(long, value_name = "CMD")]
    pub restart_cmd: Option<String>,

    /// bulkload: distinct values of the grouped column (row id has col = (id - 1) % N).
    #[arg(long, default_value_t = 4100, value_name = "N")]
    pub groups: u64,

    /// bulkload: table kind: `temp` (one session: a temporary table belongs to its connection),
    /// `unlogged` (PostgreSQL UNLOGGED; SQLite journal_mode=OFF), `logged`.
    #[arg(long, default_value = "temp", value_name = "temp|unlogged|logged")]
    pub into: String,
}

/// `lookup`'s table size without --rows.
const DEFAULT_LOOKUP_ROWS: u64 = 1_000_000;

/// The `lookup` workload's options; `ops` (`--ops`) is the run's total, which the plan splits
/// evenly over the sessions.
pub fn lookup(
    a: &LabArgs,
    table: Option<&str>,
    fresh: bool,
    ops: Option<u64>,
) -> Result<LookupConfig, Exit> {
    if let (Some(ops), None) = (ops, a.rows) {
        // 100 lookups per key of the default table is past any cache experiment: most likely
        // --ops was meant as the table's size.
        if ops > 100 * DEFAULT_LOOKUP_ROWS {
            return Err(anyhow::anyhow!(
                "--ops {ops} is over 100 lookups per key of the default {DEFAULT_LOOKUP_ROWS}-row \
                 table: give --rows for the table you mean (--rows {DEFAULT_LOOKUP_ROWS} to keep \
                 the default), or --duration to run for a time"
            )
            .into());
        }
    }
    Ok(LookupConfig {
        table: table.unwrap_or("dbscope_lookup").to_string(),
        rows: a.rows.unwrap_or(DEFAULT_LOOKUP_ROWS),
        row_bytes: a.row_bytes.unwrap_or(100),
        dist: a.dist.parse().map_err(lab_error)?,
        place: Placement::from_option(a.tablespace_dir.as_deref()).map_err(lab_error)?,
        cache: a.cache.parse().map_err(lab_error)?,
        restart_cmd: a.restart_cmd.clone(),
        fresh,
    })
}

/// The `bulkload` workload's options: each session runs its steps once (one operation), so
/// `--ops` and `--duration` do not apply.
pub fn bulkload(
    a: &LabArgs,
    table: Option<&str>,
    sessions: u32,
    ops_or_duration_given: bool,
) -> Result<BulkloadConfig, Exit> {
    if ops_or_duration_given {
        return Err(anyhow::anyhow!(
            "bulkload runs its steps once: --ops and --duration do not apply (use --rows)"
        )
        .into());
    }
    Ok(BulkloadConfig {
        table: table.unwrap_or("dbscope_bulkload").to_string(),
        rows: a.rows.unwrap_or(1_000_000),
        groups: a.groups,
        row_bytes: a.row_bytes.unwrap_or(16),
        into: a.into.parse().map_err(lab_error)?,
        place: Placement::from_option(a.tablespace_dir.as_deref()).map_err(lab_error)?,
        sessions,
    })
}
