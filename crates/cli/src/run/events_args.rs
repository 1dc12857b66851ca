//! Arguments of `dbscope run events` (CERN's PVSS archiver, seed 003), flattened into `run`'s.

use std::time::Duration;

use clap::Args;

use crate::parse::parse_duration;

/// The `events` workload's own options (the other workloads refuse them). Those with a default
/// are `Option`s, defaulted in `run::plan`, so that a value given to another workload is seen.
#[derive(Debug, Args)]
pub struct EventsArgs {
    /// events: event producers; each offers --rate events per second (default 1000), open loop.
    #[arg(long, value_name = "N", help_heading = "events workload")]
    pub clients: Option<u32>,

    /// events: connections (sessions) the clients share; client c writes through connection
    /// c mod N, each client's events in order. Default: PostgreSQL 2 per CPU, SQLite 1 (one
    /// writer at a time), null 1 per CPU; never more than the clients.
    #[arg(long, value_name = "N", help_heading = "events workload")]
    pub connections: Option<u32>,

    /// events: elements (monitored values) per client; each event sets one (seeded choice;
    /// default 10).
    #[arg(long, value_name = "N", help_heading = "events workload")]
    pub elements: Option<u32>,

    /// events: bytes of each event's payload text (default 16).
    #[arg(long, value_name = "BYTES", help_heading = "events workload")]
    pub payload: Option<usize>,

    /// events: how events are written (CERN's iterations): row-trigger, row, batch (the
    /// default), staged, partitioned. See docs/workloads.md.
    #[arg(long, value_name = "NAME", help_heading = "events workload")]
    pub strategy: Option<String>,

    /// events: most events per transaction (batch, staged, partitioned; default 5000).
    #[arg(long, value_name = "N", help_heading = "events workload")]
    pub batch: Option<usize>,

    /// events: a batch that is not full is written once its oldest event has waited this long
    /// (default 10ms).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration,
          help_heading = "events workload")]
    pub batch_wait: Option<Duration>,

    /// events: `partitioned` on PostgreSQL: before the run, allocate space for N events in each
    /// client's partition (rows inserted, deleted and vacuumed without truncation, so the run
    /// fills existing pages instead of extending files). 0 (the default): none. Refused elsewhere.
    #[arg(long, value_name = "EVENTS", help_heading = "events workload")]
    pub preallocate: Option<u64>,

    /// events: run every strategy in order at the same offered load (each into DIR/N-STRATEGY,
    /// tables rebuilt) and print CERN's table: offered and achieved ev/s, backlog, latencies.
    #[arg(long, help_heading = "events workload")]
    pub iterations: bool,
}
