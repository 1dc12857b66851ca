//! Options of the `tpcc` workload, flattened into `dbscope run` (clap). `--max-tries` and
//! `--fresh` are shared with `script` and the table workloads.

use clap::Args;

/// `tpcc` options.
#[derive(Debug, Args)]
pub struct TpccArgs {
    /// tpcc: warehouses (W) to build and run on (default 1). A build of the same W is reused;
    /// another W is refused unless --fresh.
    #[arg(long, value_name = "W", allow_negative_numbers = true)]
    pub warehouses: Option<i64>,

    /// tpcc: connections loading warehouses at once when the tables are built (PostgreSQL, COPY;
    /// at most one per warehouse; SQLite loads with one). Default: one per CPU.
    #[arg(long, value_name = "N")]
    pub build_sessions: Option<u32>,

    /// tpcc: percentages of New-Order, Payment, Order-Status, Delivery and Stock-Level, five
    /// whole numbers adding up to 100 (default 45,43,4,4,4).
    #[arg(long, value_name = "NO,P,OS,D,SL")]
    pub mix: Option<String>,

    /// tpcc: each transaction at a warehouse drawn uniformly from all W (the I/O-heavy variant:
    /// every session touches every warehouse's data), instead of the session's home warehouse.
    #[arg(long)]
    pub all_warehouses: bool,

    /// tpcc (PostgreSQL): the five transactions as PL/pgSQL functions, installed (replaced) in
    /// the database before the run and called once per transaction, as HammerDB does by default
    /// (one round trip per transaction instead of one per statement).
    #[arg(long)]
    pub server_side: bool,

    /// tpcc: each SQL statement of a transaction an event of its own, named
    /// `<type>.<statement>` (`new_order.update_stock`, `payment.commit` …), beside the
    /// transaction's event. Not with --server-side.
    #[arg(long)]
    pub per_statement: bool,

    /// tpcc: the specification's keying time before each transaction (18 s New-Order, 3 s
    /// Payment, 2 s the others) and think time after it (exponential, mean 12/12/10/5/5 s, cut
    /// at 10x the mean), clause 5.2.5; each an event of its own (`new_order.keying`,
    /// `new_order.think`), the transaction's latency without them.
    #[arg(long)]
    pub keying_thinking: bool,

    /// tpcc: skip the consistency checks (clause 3.3.2.1–3.3.2.4) after the run; they run by
    /// default, and a failed condition fails the run's exit code (1).
    #[arg(long)]
    pub no_check: bool,
}
