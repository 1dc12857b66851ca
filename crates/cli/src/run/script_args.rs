//! Options of the `script` workload (pgbench's script options), flattened into `dbscope run`.
//!
//! `run::plan` reads the scripts and turns these into the run plan's [`ScriptConfig`].
//!
//! [`ScriptConfig`]: dbscope_lab::workload::script::ScriptConfig

use clap::Args;

/// `script` options, named as pgbench names them.
#[derive(Debug, Args)]
pub struct ScriptArgs {
    /// script: a pgbench script file, with its weight in the choice between scripts after `@`
    /// (default 1). Repeatable. The file runs unchanged: SQL, :variables, \set, \sleep, \gset,
    /// \aset, \if/\elif/\else/\endif, \setshell, \shell, \startpipeline/\endpipeline.
    #[arg(long = "file", short = 'f', value_name = "FILE[@WEIGHT]")]
    pub files: Vec<String>,

    /// script: a pgbench built-in script, `tpcb-like`, `simple-update` or `select-only` (a
    /// unique prefix will do), with an optional `@WEIGHT`. Repeatable.
    #[arg(long = "builtin", short = 'b', value_name = "NAME[@WEIGHT]")]
    pub builtins: Vec<String>,

    /// script: a variable for the scripts, as pgbench's -D. Repeatable.
    #[arg(long = "define", short = 'D', value_name = "NAME=VALUE")]
    pub defines: Vec<String>,

    /// script: how SQL is sent, as pgbench's -M: `simple` (text, variables substituted),
    /// `extended` (parameters, parsed each time) or `prepared` (parsed once per connection).
    /// Default: simple.
    #[arg(
        long = "protocol",
        short = 'M',
        value_name = "simple|extended|prepared"
    )]
    pub protocol: Option<String>,

    /// script, tpcc: tries per transaction: one that fails with a serialization failure or deadlock
    /// (40001, 40P01; SQLite busy) runs again from its start with the same random values, up to
    /// N tries in all (pgbench 15's --max-tries). Default 1: no retry.
    #[arg(long, value_name = "N")]
    pub max_tries: Option<u32>,

    /// script: pgbench's --latency-limit (milliseconds, or a duration like 50ms): no retry
    /// after it; with --rate, a transaction already this late when due is skipped (counted).
    #[arg(long, value_name = "MS")]
    pub latency_limit: Option<String>,

    /// script: after a failure that is not retried, `continue` (the transaction is recorded as
    /// failed with its SQLSTATE and the session goes on; the default) or `stop` (the run
    /// stops, failed).
    #[arg(long, value_name = "continue|stop")]
    pub on_error: Option<String>,

    /// script: create and fill pgbench's four tables first, as `pgbench -i` does (drops them if
    /// they exist): `tpcb`. With --scale.
    #[arg(long, value_name = "tpcb")]
    pub init: Option<String>,

    /// script: the scale: with --init, the size of pgbench's tables (100,000 accounts each);
    /// the scripts' :scale (default: read from pgbench_branches when a built-in runs, else 1).
    #[arg(long, value_name = "N")]
    pub scale: Option<u32>,
}
