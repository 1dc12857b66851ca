//! What the run's sessions share with the observer ([`SessionProbe`]): their names, the operation
//! each has in flight and SQLite's per-connection counters. A leaf of `observe`: the sessions
//! publish into it, and both the observer and the sampler (`ash`) read it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use dbscope_db::Session;

/// What the run's sessions share with the observer: their names, the operation each has in
/// flight (one relaxed store per operation), and SQLite's per-connection counters (each session
/// publishes its own into its slot about every [`PUBLISH_EVERY_NS`]; a snapshot sums the slots, so
/// periodic snapshots and a killed run's last one are current).
pub struct SessionProbe {
    run_id: String,
    ops: Vec<AtomicU64>,
    status: Vec<Mutex<StatusSlot>>,
    /// The server's ids of every connection the run's sessions opened (MariaDB/MySQL), in order,
    /// with the session that opened it.
    connections: Mutex<Vec<(u32, u64)>>,
    /// Connections kept open after their session ended, until the end snapshot read their
    /// statistics ([`Session::stats_end_with_connection`]).
    parked: Mutex<Vec<Box<dyn Session>>>,
    /// PostgreSQL backends given by pid (pid → session, and whether its connection is still
    /// open) when the sessions are not dbscope's own and so not named by the run (a capture's, a
    /// replay's): `None` selects by name.
    by_pid: Option<Mutex<BTreeMap<u32, (u32, bool)>>>,
}

/// How the observer's queries pick the run's backends out of `pg_stat_activity`: a condition
/// with one text parameter.
pub(super) struct BackendFilter {
    /// `application_name LIKE $1` or `pid = ANY($1::int[])`.
    pub sql: &'static str,
    /// The pattern, or the pids as an array literal (`{101,102}`).
    pub param: String,
}

/// How often (run-clock ns) a session publishes its connection's counters: 100 ms.
pub const PUBLISH_EVERY_NS: u64 = 100_000_000;

/// One session's connection counters: what it grew by since the session's first operation.
#[derive(Default)]
struct StatusSlot {
    /// The connection's values when the session started (or 0 for a replacement connection).
    base: Vec<(&'static str, i64)>,
    /// Totals of the connections the session had before this one.
    carried: BTreeMap<&'static str, i64>,
    /// The current connection's growth, as last published.
    current: BTreeMap<&'static str, i64>,
}

impl StatusSlot {
    fn publish(&mut self, now: Vec<(&'static str, i64)>) {
        for (name, v) in now {
            let base = self
                .base
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(0, |p| p.1);
            self.current.insert(name, v - base);
        }
    }
}

impl SessionProbe {
    /// For `sessions` sessions of run `run_id`.
    pub fn new(run_id: &str, sessions: u32) -> Self {
        SessionProbe {
            run_id: run_id.into(),
            ops: (0..sessions).map(|_| AtomicU64::new(0)).collect(),
            status: (0..sessions).map(|_| Mutex::default()).collect(),
            connections: Mutex::default(),
            parked: Mutex::default(),
            by_pid: None,
        }
    }

    /// For sessions dbscope does not open itself (the clients of a capture proxy, the
    /// connections of a replay): their backends are told by pid ([`SessionProbe::add_backend`]),
    /// as each connection's `BackendKeyData` gives it.
    pub fn by_backend_pid(run_id: &str) -> Self {
        SessionProbe {
            by_pid: Some(Mutex::default()),
            ..SessionProbe::new(run_id, 0)
        }
    }

    /// Session `session`'s backend is `pid` (a reconnected session has several, one after the
    /// other). Ignored when the backends are selected by name.
    pub fn add_backend(&self, session: u32, pid: u32) {
        if let Some(m) = &self.by_pid {
            m.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(pid, (session, true));
        }
    }

    /// The connection of backend `pid` was closed: it is no longer sampled (its pid may be
    /// reused by another backend), and the end snapshot waits for it to be gone.
    pub fn end_backend(&self, pid: u32) {
        if let Some(m) = &self.by_pid {
            if let Some(b) = m
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get_mut(&pid)
            {
                b.1 = false;
            }
        }
    }

    /// Whether the backends are given by pid ([`SessionProbe::by_backend_pid`]).
    pub fn selects_by_pid(&self) -> bool {
        self.by_pid.is_some()
    }

    /// The condition that picks the run's backends out of `pg_stat_activity`: those whose
    /// connection is open, or (`ended_too`, for the end snapshot's wait for them to go) every
    /// one the run had.
    pub(super) fn backend_filter(&self, ended_too: bool) -> BackendFilter {
        match &self.by_pid {
            None => BackendFilter {
                sql: "application_name LIKE $1",
                param: self.pattern(),
            },
            Some(m) => {
                let m = m.lock().unwrap_or_else(PoisonError::into_inner);
                let pids: Vec<String> = m
                    .iter()
                    .filter(|(_, b)| ended_too || b.1)
                    .map(|(pid, _)| pid.to_string())
                    .collect();
                BackendFilter {
                    sql: "pid = ANY($1::int[])",
                    param: format!("{{{}}}", pids.join(",")),
                }
            }
        }
    }

    /// The session of a backend seen in `pg_stat_activity`: by its pid when the backends are
    /// given by pid, else from its `application_name`'s last part (`name_part`).
    pub(super) fn session_of(&self, pid: Option<u32>, name_part: Option<&str>) -> Option<u32> {
        match &self.by_pid {
            Some(m) => m
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&pid?)
                .map(|b| b.0),
            None => name_part?.parse().ok(),
        }
    }

    /// The run id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The `application_name` of session `i`: `dbscope/<run id>/<i>`.
    pub fn label(&self, session: u32) -> String {
        format!("dbscope/{}/{session}", self.run_id)
    }

    /// The `LIKE` pattern matching every session of the run.
    pub fn pattern(&self) -> String {
        format!("dbscope/{}/%", self.run_id)
    }

    /// Notes a connection a session opened (at the start, or replacing a lost one): the observer
    /// reads the server's per-connection statistics by its id.
    pub fn register(&self, session: u32, sess: &dyn Session) {
        if let Some(id) = sess.connection_id() {
            self.connections
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((session, id));
        }
    }

    /// The run's connections so far: (session, the server's connection id).
    pub fn connections(&self) -> Vec<(u32, u64)> {
        self.connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A session ended: its connection is kept open until [`SessionProbe::release`] when the
    /// server would forget its statistics with it; else it closes now.
    pub fn park(&self, sess: Box<dyn Session>) {
        if sess.stats_end_with_connection() {
            self.parked
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(sess);
        }
    }

    /// Closes the connections kept by [`SessionProbe::park`] (after the end snapshot).
    pub fn release(&self) {
        self.parked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Marks operation `seq` (1 = the session's first) as in flight.
    #[inline]
    pub fn begin_op(&self, session: u32, seq: u64) {
        if let Some(a) = self.ops.get(session as usize) {
            a.store(seq, Ordering::Relaxed);
        }
    }

    /// The operation session `i` has in flight (`None` before its first).
    pub fn current_op(&self, session: u32) -> Option<u64> {
        let v = self.ops.get(session as usize)?.load(Ordering::Relaxed);
        (v > 0).then_some(v)
    }

    fn slot(&self, session: u32) -> Option<std::sync::MutexGuard<'_, StatusSlot>> {
        self.status
            .get(session as usize)
            .map(|m| m.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Notes the connection's own counters when session `i` starts its loop: what they grow by
    /// from here on is the session's.
    pub fn session_start(&self, session: u32, sess: &mut dyn Session) {
        let now = sess.status_counters();
        if let Some(mut slot) = self.slot(session) {
            slot.base = now;
            slot.current.clear();
        }
    }

    /// Publishes what session `i`'s connection counters grew by so far (the session calls it
    /// about every [`PUBLISH_EVERY_NS`], and when it ends). Targets without per-connection
    /// counters return at once.
    pub fn publish(&self, session: u32, sess: &mut dyn Session) {
        let now = sess.status_counters();
        if now.is_empty() {
            return;
        }
        if let Some(mut slot) = self.slot(session) {
            slot.publish(now);
        }
    }

    /// Session `i` replaces its connection (after a lost one): what the old one counted is kept,
    /// and the new one counts from zero.
    pub fn connection_replaced(&self, session: u32, old: &mut dyn Session) {
        self.publish(session, old);
        if let Some(mut slot) = self.slot(session) {
            let slot = &mut *slot;
            for (name, v) in std::mem::take(&mut slot.current) {
                *slot.carried.entry(name).or_default() += v;
            }
            slot.base.clear();
        }
    }

    /// The sessions' counters summed, as last published.
    pub(super) fn totals(&self) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for m in &self.status {
            let slot = m.lock().unwrap_or_else(PoisonError::into_inner);
            for (name, v) in slot.carried.iter().chain(slot.current.iter()) {
                *out.entry(name.to_string()).or_insert(0.0) += *v as f64;
            }
        }
        out
    }
}
