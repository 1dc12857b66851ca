//! The `events` workload (seed 003): CERN's PVSS archiver, clients writing monitoring events.
//!
//! Many clients each produce monitoring events at a fixed rate, open loop; every event is appended
//! to `events_history` and sets its element's last value in `eventlastval`. The `--strategy` picks
//! one stage of CERN's tuning story: a trigger per row, the client's own two statements per row,
//! client batches, a bulk load into a staging table followed by set-based statements, and the same
//! into a partition per client.
//!
//! Clients are not connections: client `c` is served by session (connection) `c % sessions`,
//! which writes the events of all its clients that are due, oldest client first, each client's in
//! order. An event the database has not taken yet simply stays due (its intended time is fixed by
//! the client's schedule), so a slow database shows as backlog and latency, never as a lower
//! offered load. Per event the session records, in histograms, the latency from its intended time
//! to the commit that made it durable (coordinated-omission corrected) and the service time from
//! the start of its write to that commit; per second the events offered, written and committed.
//! The run's events are the database operations (`write`, `commit`, one per batch), with the
//! number of events in `rows`.
//!
//! `config` holds the options; `schema` makes and checks the tables; `session` runs one
//! connection's clients and `write` its batches, strategy by strategy; `counters` merges what the
//! sessions measured into the run's `archive` section.

mod config;
mod counters;
mod schema;
mod session;
mod write;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use dbscope_core::CounterSection;

use super::work::{SessionWork, Workload};
// The database types, imported once here for every submodule (`use super::…`).
use crate::error::Error;
use counters::Aggregate;
use dbscope_db::{Dialect, Param, Session, StmtId, Target, TargetError, TargetResult};

pub use config::{EventsConfig, Strategy};

/// The history table (a view over per-client tables with `partitioned` on SQLite).
pub const HISTORY: &str = "events_history";
/// The last value of every element.
pub const LASTVAL: &str = "eventlastval";
/// Columns of both tables, in order.
const COLUMNS: [&str; 6] = ["client", "element", "seq", "ts", "value", "payload"];

/// The events workload.
pub struct EventsWorkload {
    cfg: EventsConfig,
    dialect: Dialect,
    sessions: u32,
    agg: Arc<Mutex<Aggregate>>,
}

impl EventsWorkload {
    /// The name runs record ([`Workload::name`]).
    pub const NAME: &'static str = "events";
    /// The headline event ([`Workload::headline_event`]).
    pub const HEADLINE: &'static str = "commit";

    /// The workload on `dialect`; refuses a strategy the target cannot do.
    pub fn new(cfg: EventsConfig, dialect: Dialect) -> Result<Self, Error> {
        cfg.validate()?;
        Ok(EventsWorkload {
            cfg,
            dialect,
            sessions: 1,
            agg: Arc::new(Mutex::new(Aggregate::default())),
        })
    }

    /// The session (connection) that serves client `c` with `sessions` sessions.
    pub fn session_of(c: u32, sessions: u32) -> u32 {
        c % sessions
    }

    /// Sessions share the clients: with this many sessions, session `i` serves clients
    /// `i, i + n, i + 2n, …`. Must be called before the run starts.
    pub fn with_sessions(mut self, n: u32) -> Self {
        self.sessions = n.max(1);
        self
    }
}

impl Workload for EventsWorkload {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn params(&self) -> BTreeMap<String, serde_json::Value> {
        let c = &self.cfg;
        BTreeMap::from([
            ("clients".to_string(), c.clients.into()),
            ("rate_per_client_per_s".to_string(), c.rate.into()),
            ("arrival".to_string(), c.arrival.as_str().into()),
            ("elements".to_string(), c.elements.into()),
            ("dist".to_string(), c.dist.to_string().into()),
            ("payload_bytes".to_string(), (c.payload as u64).into()),
            ("strategy".to_string(), c.strategy.as_str().into()),
            ("batch".to_string(), (c.batch as u64).into()),
            (
                "batch_ms".to_string(),
                (c.batch_wait_ns as f64 / 1e6).into(),
            ),
            ("fresh".to_string(), c.fresh.into()),
            ("preallocate".to_string(), c.preallocate.into()),
        ])
    }

    fn headline_event(&self) -> &'static str {
        Self::HEADLINE
    }

    fn tables(&self) -> Vec<String> {
        let mut t = vec![HISTORY.to_string(), LASTVAL.to_string()];
        // A partitioned history keeps its rows in the partitions (PostgreSQL's, one per client;
        // SQLite's tables per client have no pg_statio to read).
        if self.dialect == Dialect::Postgres && self.cfg.strategy == Strategy::Partitioned {
            t.extend((0..self.cfg.clients).map(|c| format!("{HISTORY}_p{c}")));
        }
        t
    }

    fn setup(
        &self,
        target: &dyn Target,
        _sessions: u32,
        _stop: &dbscope_core::StopSignal,
    ) -> TargetResult<()> {
        let mut s = target.connect()?;
        if self.cfg.fresh {
            self.drop_all(s.as_mut())?;
        } else {
            self.check_shape(s.as_mut())?;
        }
        self.create(s.as_mut())?;
        self.preallocate(s.as_mut())
    }

    /// Client streams derive from the run seed and the client number (not the session's seed),
    /// so the same clients produce the same events whatever `--connections` is.
    fn session(&self, session: u32, _seed: u64) -> Box<dyn SessionWork> {
        Box::new(self.make_session(session))
    }

    fn counters(&self) -> Option<CounterSection> {
        Some(counters::section(&self.agg, &self.cfg))
    }

    /// Each client offers its events at `--rate` on its own schedule (open loop).
    fn paces_itself(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_map_onto_sessions_round_robin() {
        let owned: Vec<u32> = (0..7).map(|c| EventsWorkload::session_of(c, 3)).collect();
        assert_eq!(owned, [0, 1, 2, 0, 1, 2, 0]);
    }
}
