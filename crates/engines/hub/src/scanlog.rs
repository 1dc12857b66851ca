//! What every source scan reports as it runs, gathered for the run's events and counters and for
//! `--explain`: one entry per scan partition, and per scanned table what was pushed down.

use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use dbscope_core::RunClock;

/// One scan partition's work (one connection's COPY, one SQLite read).
#[derive(Clone, Debug, Default)]
pub(crate) struct ScanPart {
    /// The table as the query names it (`orders`, `pg.orders`).
    pub label: String,
    /// The partition, from 0.
    pub partition: u32,
    /// The SQL sent.
    pub sql: String,
    /// Rows received.
    pub rows: u64,
    /// Bytes received (COPY's data).
    pub bytes: u64,
    /// Start and end on the run's clock.
    pub start_ns: u64,
    pub end_ns: u64,
    /// Why it failed, when it did.
    pub error: Option<String>,
    /// The query stopped reading before the end (a LIMIT met): not an error.
    pub stopped_early: bool,
    /// The join's run-time filter added to the SQL (its short form, as in `sql`).
    pub dynamic: Option<String>,
    /// How long the partition waited for the join's filter (its connection set up meanwhile).
    pub filter_wait_ns: u64,
}

/// One scan of a table as planned: what went to the source and what stayed in DataFusion.
#[derive(Clone, Debug, Default)]
pub(crate) struct ScanPlan {
    /// The table as the query names it.
    pub label: String,
    /// The source, its password redacted.
    pub source: String,
    /// The columns read.
    pub columns: Vec<String>,
    /// Filters sent to the source, as SQL.
    pub pushed: Vec<String>,
    /// Filters DataFusion applies (not translatable, or pushdown off), as DataFusion prints them.
    pub kept: Vec<String>,
    /// The LIMIT sent, if any.
    pub limit: Option<usize>,
    /// How the table was split among connections.
    pub split: String,
    /// The SQL of each partition.
    pub sql: Vec<String>,
}

/// Shared by the sources' scans and the query.
#[derive(Debug, Default)]
pub(crate) struct ScanLog {
    parts: Mutex<Vec<ScanPart>>,
    plans: Mutex<Vec<ScanPlan>>,
    clock: OnceLock<RunClock>,
    /// Scan partitions started and not yet logged (a LIMIT met or a failure elsewhere ends the
    /// query while their threads still stop).
    running: Mutex<usize>,
    done: Condvar,
}

/// Held by a scan partition from `execute` until it has logged its work, or dropped unrun.
#[derive(Debug)]
pub(crate) struct Running(Arc<ScanLog>);

impl Drop for Running {
    fn drop(&mut self) {
        let mut n = self
            .0
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *n = n.saturating_sub(1);
        self.0.done.notify_all();
    }
}

impl ScanLog {
    pub(crate) fn new() -> Arc<ScanLog> {
        Arc::new(ScanLog::default())
    }

    /// The run's clock, once the run has started (0 before).
    pub(crate) fn now_ns(&self) -> u64 {
        self.clock.get().map_or(0, RunClock::now_ns)
    }

    pub(crate) fn set_clock(&self, clock: RunClock) {
        let _ = self.clock.set(clock);
    }

    /// A scan partition starts: the guard ends it.
    pub(crate) fn start(self: &Arc<Self>) -> Running {
        *self.running.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        Running(self.clone())
    }

    /// Waits (up to `limit`) until every started partition has logged its work.
    pub(crate) fn wait_idle(&self, limit: Duration) {
        let end = Instant::now() + limit;
        let mut n = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        while *n > 0 {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            n = self
                .done
                .wait_timeout(n, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    pub(crate) fn part(&self, p: ScanPart) {
        self.parts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(p);
    }

    pub(crate) fn plan(&self, p: ScanPlan) {
        self.plans
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(p);
    }

    pub(crate) fn parts(&self) -> Vec<ScanPart> {
        let mut v = self
            .parts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        v.sort_by(|a, b| (&a.label, a.partition).cmp(&(&b.label, b.partition)));
        v
    }

    pub(crate) fn plans(&self) -> Vec<ScanPlan> {
        self.plans
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}
