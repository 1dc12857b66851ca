//! The `events` workload's options: the [`Strategy`] (CERN's iterations) and [`EventsConfig`].

use std::str::FromStr;

use crate::error::Error;
use crate::pace::Arrival;

/// How events reach the database: CERN's iterations, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// One INSERT into history per event; a row trigger updates `eventlastval`; commit per event.
    RowTrigger,
    /// The client inserts into history and upserts `eventlastval` itself; commit per event.
    Row,
    /// Every `--batch` events or `--batch-ms`: the batch's rows in one multi-row INSERT
    /// (PostgreSQL) or prepared statement reused (SQLite), one upsert per element, one commit.
    Batch,
    /// The batch bulk-loaded into a temporary staging table (`COPY` on PostgreSQL), then one
    /// `INSERT … SELECT` into history and one set-based upsert of `eventlastval`; one commit.
    Staged,
    /// As `staged`, into a partition of history per client (PostgreSQL: declarative list
    /// partitioning; SQLite: a table per client under a view), each client writing only its own.
    Partitioned,
}

impl Strategy {
    /// Every strategy, in the order of the CERN story (`--iterations` runs them so).
    pub const ALL: [Strategy; 5] = [
        Strategy::RowTrigger,
        Strategy::Row,
        Strategy::Batch,
        Strategy::Staged,
        Strategy::Partitioned,
    ];

    /// The name as given on the command line.
    pub fn as_str(&self) -> &'static str {
        match self {
            Strategy::RowTrigger => "row-trigger",
            Strategy::Row => "row",
            Strategy::Batch => "batch",
            Strategy::Staged => "staged",
            Strategy::Partitioned => "partitioned",
        }
    }

    /// True when every event is its own transaction.
    pub(super) fn per_row(&self) -> bool {
        matches!(self, Strategy::RowTrigger | Strategy::Row)
    }
}

impl FromStr for Strategy {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Strategy::ALL
            .into_iter()
            .find(|x| x.as_str() == s)
            .ok_or_else(|| {
                Error::invalid(
                    "strategy",
                    format!("{s:?}: expected one of row-trigger, row, batch, staged, partitioned"),
                )
            })
    }
}

/// The `events` workload's parameters.
#[derive(Clone, Debug)]
pub struct EventsConfig {
    /// Event producers (CERN: 150).
    pub clients: u32,
    /// Events per second of each client (CERN: 1,000).
    pub rate: f64,
    /// How each client's events are spaced.
    pub arrival: Arrival,
    /// Elements (monitored values) per client.
    pub elements: u32,
    /// How each event's element is drawn from the client's elements.
    pub dist: crate::workload::keys::KeyDist,
    /// Bytes of the payload text of each event.
    pub payload: usize,
    /// How events are written.
    pub strategy: Strategy,
    /// Most events in one batch (batch strategies).
    pub batch: usize,
    /// A batch is written once its oldest event has waited this long, full or not (ns).
    pub batch_wait_ns: u64,
    /// Clients stop producing at this run-clock time (warm-up + duration), when the run has one.
    pub until_ns: Option<u64>,
    /// Events intended before this run-clock time are warm-up: written, not in the latencies.
    pub warmup_ns: u64,
    /// Drop and rebuild the tables first.
    pub fresh: bool,
    /// `partitioned` on PostgreSQL: events' worth of space to allocate in each client's partition
    /// before the run (CERN's space pre-allocation); 0: none.
    pub preallocate: u64,
    /// Run seed (each client's element and value stream derives from it).
    pub seed: u64,
}

impl EventsConfig {
    /// Checks the parameters; messages name the option.
    pub fn validate(&self) -> Result<(), Error> {
        if self.clients == 0 {
            return Err(Error::invalid("clients", "must be at least 1"));
        }
        if self.clients > 100_000 {
            return Err(Error::invalid("clients", ": at most 100,000"));
        }
        if !(self.rate.is_finite() && self.rate > 0.0 && self.rate <= 1e8) {
            return Err(Error::invalid(
                "rate",
                format!(
                    "{}: expected events per second per client above 0 (e.g. 1000)",
                    self.rate
                ),
            ));
        }
        if self.elements == 0 {
            return Err(Error::invalid("elements", "must be at least 1"));
        }
        if self.payload > 1 << 20 {
            return Err(Error::invalid("payload", ": at most 1 MiB"));
        }
        if self.batch == 0 {
            return Err(Error::invalid("batch", "must be at least 1"));
        }
        if self.preallocate > 100_000_000 {
            return Err(Error::invalid(
                "preallocate",
                ": at most 100,000,000 events per partition",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategies_parse_in_story_order() {
        let names: Vec<&str> = Strategy::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(
            names,
            ["row-trigger", "row", "batch", "staged", "partitioned"]
        );
        assert_eq!("staged".parse::<Strategy>().unwrap(), Strategy::Staged);
        assert!("bulk".parse::<Strategy>().is_err());
    }
}
