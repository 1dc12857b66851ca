//! What to do: built-in workloads as seeded, deterministic generators of operations.

pub mod bulkload;
mod commit;
pub mod events;
pub mod lookup;
pub mod place;
pub mod tpch;

use std::collections::BTreeMap;

pub use commit::{CommitWorkload, Keys};

use dbscope_core::Recorder;
use dbscope_db::{Session, Target, TargetError, TargetResult};

use crate::error::Error;

/// A workload: sets up its schema, then gives each session its stream of operations.
pub trait Workload: Send + Sync {
    /// Name, e.g. `commit`.
    fn name(&self) -> &'static str;
    /// Parameters as recorded in the manifest.
    fn params(&self) -> BTreeMap<String, serde_json::Value>;
    /// The event whose latency headlines progress output (e.g. `commit`).
    fn headline_event(&self) -> &'static str;
    /// The tables the workload reads and writes, whose I/O counters the run's snapshots keep.
    fn tables(&self) -> Vec<String> {
        Vec::new()
    }
    /// Creates and fills what the workload needs (idempotent), through one connection.
    fn setup(&self, target: &dyn Target, sessions: u32) -> TargetResult<()>;
    /// The operation stream of one session; `seed` is already specific to the session.
    fn session(&self, session: u32, seed: u64) -> Box<dyn SessionWork>;
    /// Run-level counters the workload kept itself (e.g. `events`' per-event latencies), written
    /// when the sessions have finished; most workloads have none.
    fn counters(&self) -> Option<dbscope_core::CounterSection> {
        None
    }
}

/// One session's share of a workload.
pub trait SessionWork: Send {
    /// Prepares statements on a (new) connection; called again after a reconnect.
    fn prepare(&mut self, sess: &mut dyn Session, rec: &Recorder) -> TargetResult<()>;
    /// Performs one operation, recording an event per statement. On failure the failed event is
    /// already recorded; the error is returned so the runner can count it and recover.
    fn step(&mut self, sess: &mut dyn Session, rec: &mut Recorder) -> Result<(), TargetError>;
    /// True when the session has nothing more to do (a workload with its own schedule, like
    /// `events`, whose clients stop at the end of the run); most workloads never finish.
    fn finished(&self) -> bool {
        false
    }
}

/// Checks a table name: plain lower-case SQL identifier, so it can be spliced into statements.
pub fn check_identifier(name: &str) -> Result<(), Error> {
    let mut chars = name.chars();
    let ok_first = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
    if ok_first
        && name.len() <= 63
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        Ok(())
    } else {
        Err(Error::Config(format!(
            "table name {name:?} must be a lower-case identifier (letters, digits, '_'; at most 63)"
        )))
    }
}
