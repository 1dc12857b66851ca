//! What every workload shares: the [`Workload`] and [`SessionWork`] traits, the [`Statement`]s a
//! session names for `--explain`, [`timed`] (runs one operation as a recorded event) and
//! [`check_identifier`]. A leaf of `workload`: each workload
//! implements and calls it, and `workload` re-exports it.

use std::collections::BTreeMap;

use dbscope_core::{Counter, CounterValue, Recorder, StopSignal};
use dbscope_db::{Param, Session, Target, TargetError, TargetResult};

use crate::error::Error;

/// A workload: sets up its schema, then gives each session its stream of operations.
pub trait Workload: Send + Sync {
    /// Name, e.g. `commit`.
    fn name(&self) -> &'static str;
    /// Parameters as recorded in the manifest.
    fn params(&self) -> BTreeMap<String, serde_json::Value>;
    /// The event whose latency headlines progress output (e.g. `commit`).
    fn headline_event(&self) -> &str;
    /// The tables the workload reads and writes, whose I/O counters the run's snapshots keep.
    fn tables(&self) -> Vec<String> {
        Vec::new()
    }
    /// The directories the workload put its data on, with their role (`tablespace`, or `temp`
    /// for temp tables): `--tablespace-dir`. The observer records their devices and watches them.
    fn storage_dirs(&self) -> Vec<(String, std::path::PathBuf)> {
        Vec::new()
    }
    /// Hands the workload the marker of its steps' ends, before its sessions are made; a workload
    /// with steps (bulkload) keeps it and marks each one, so the run has a snapshot per step.
    fn observe_steps(&self, _marker: crate::observe::StepMarker) {}
    /// Creates and fills what the workload needs (idempotent), through one connection. A step
    /// that may take long outside the database (lookup's `--restart-cmd`) ends when `stop` is set
    /// (Ctrl-C); setup then returns and the runner records the run as stopped.
    fn setup(&self, target: &dyn Target, sessions: u32, stop: &StopSignal) -> TargetResult<()>;
    /// The operation stream of one session; `seed` is already specific to the session.
    fn session(&self, session: u32, seed: u64) -> Box<dyn SessionWork>;
    /// Called once the sessions have finished (and before [`Workload::counters`]), with the
    /// sessions' measured time: a workload reads what the database counted during the run
    /// (tpcc's `sum(d_next_o_id)` and `pg_stat_database` after the run). Most have nothing to do.
    fn after_sessions(&self, _target: &dyn Target, _elapsed: std::time::Duration) {}
    /// Run-level counters the workload kept itself (e.g. `events`' per-event latencies), written
    /// when the sessions have finished; most workloads have none.
    fn counters(&self) -> Option<dbscope_core::CounterSection> {
        None
    }
    /// True when the workload paces its own operations at a rate (open loop) whatever the
    /// runner's `--rate` says, like `events`' clients; the run then records `open` as its mode.
    fn paces_itself(&self) -> bool {
        false
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
    /// Why the run must stop, failed, after the last step (a script's `--on-error stop`); most
    /// workloads never stop a run themselves.
    fn abort_reason(&self) -> Option<&str> {
        None
    }
    /// The statements this session has run so far, each once, with the parameters it last bound:
    /// what `run --explain` explains after warm-up. A statement is its event and its place among
    /// that event's statements (its text may inline values): the runner explains each once,
    /// whichever session names it first. Empty for workloads with nothing to explain.
    fn statements(&self) -> Vec<Statement> {
        Vec::new()
    }
}

/// A statement a session runs, as `--explain` needs it ([`SessionWork::statements`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    /// The event its executions are recorded under.
    pub event: String,
    /// Its text, with the target's placeholders.
    pub sql: String,
    /// The parameters last bound to the placeholders.
    pub params: Vec<Param>,
}

/// Runs `op` as event `name` of the session and records it: from `start` (ns on the run clock:
/// `rec.now()` just before, or the end of the event just before for back-to-back events) until
/// `op` returns, ok with the rows `rows` counts from its value, or failed with the error's class.
/// `rows` may refuse the value (a wrong answer): the event fails with that error's class, and the
/// check is not in its time. Returns the result and the event's end.
/// The counters saying the shape of the table a workload fills (lookup, scan): its rows and the
/// bytes of each.
pub(crate) fn table_shape_counters(rows: u64, row_bytes: u64) -> [Counter; 2] {
    [
        Counter::new(
            "rows",
            "rows in the table",
            CounterValue::count(rows),
            "rows",
        ),
        Counter::new(
            "row_bytes",
            "bytes per row (id + pad)",
            CounterValue::count(row_bytes),
            "B",
        ),
    ]
}

pub(crate) fn timed<T>(
    rec: &mut Recorder,
    name: dbscope_core::NameId,
    start: u64,
    op: impl FnOnce() -> TargetResult<T>,
    rows: impl FnOnce(&T) -> TargetResult<u64>,
) -> (TargetResult<T>, u64) {
    let result = op();
    let end = rec.now();
    match result.and_then(|v| rows(&v).map(|n| (v, n))) {
        Ok((v, n)) => {
            rec.ok(name, start, end, n);
            (Ok(v), end)
        }
        Err(e) => {
            rec.error(name, start, end, &e.class);
            (Err(e), end)
        }
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use dbscope_core::manifest::{Manifest, WorkloadInfo};
    use dbscope_core::{Pumped, Recording};

    use super::*;

    fn failed(class: &str) -> TargetError {
        TargetError {
            class: class.into(),
            sqlstate: None,
            mysql_code: None,
            message: "no".into(),
            connection_lost: false,
        }
    }

    #[test]
    fn timed_records_the_rows_the_error_class_or_the_refusal() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = Manifest::new("w", WorkloadInfo::default(), 1);
        let mut recording = Recording::begin(&dir.path().join("run"), manifest).unwrap();
        let clock = recording.start_clock().unwrap();
        let (sessions, batches) = recording.sessions(&clock, 0, 4);
        let mut rec = sessions.recorder(0);
        drop(sessions);
        let op = rec.name("op");
        let t0 = rec.now();
        let (r, t1) = timed(&mut rec, op, t0, || Ok(7u64), |&n| Ok(n * 2));
        assert_eq!(r.unwrap(), 7, "the value is handed back");
        let (r, t2) = timed(
            &mut rec,
            op,
            t1,
            || Err(failed("pg:40001")),
            |&n: &u64| Ok(n),
        );
        assert_eq!(r.unwrap_err().class, "pg:40001");
        let (r, t3) = timed(&mut rec, op, t2, || Ok(3u64), |_| Err(failed("check:rows")));
        assert_eq!(r.unwrap_err().class, "check:rows", "a refused value fails");
        let (lost, refused) = (rec.outcome("pg:40001"), rec.outcome("check:rows"));
        drop(rec);
        let mut events = Vec::new();
        recording.pump(batches, Duration::from_millis(10), |p| {
            if let Pumped::Batch(b) = p {
                events.extend_from_slice(b);
            }
        });
        let got: Vec<_> = events
            .iter()
            .map(|e| (e.outcome, e.rows, e.start_ns, e.start_ns + e.duration_ns))
            .collect();
        assert_eq!(
            got,
            [(0, 14, t0, t1), (lost, 0, t1, t2), (refused, 0, t2, t3)]
        );
        assert!(events.iter().all(|e| e.name == op));
        assert!(t0 <= t1 && t1 <= t2 && t2 <= t3);
    }
}
