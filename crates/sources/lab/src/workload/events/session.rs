//! One session's share of the `events` workload: its clients, their due events, each batch's commit.
//!
//! The session takes the events due from its clients (oldest client first), writes them as one
//! transaction (see `write`), records `write` and `commit`, and counts each acknowledged event's
//! latency from its intended time; when it ends it adds its figures to the workload's aggregate.

use std::sync::{Arc, Mutex, PoisonError};

use dbscope_core::stats::LatencyHistogram;
use dbscope_core::{NameId, Recorder};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::counters::Aggregate;
use super::{Dialect, EventsConfig, EventsWorkload, Session, SessionWork, StmtId, Strategy};
use super::{Param, TargetError, TargetResult, HISTORY, LASTVAL};
use crate::pace::Pacer;
use crate::workload::work::timed;

/// One event on its way to the database.
#[derive(Clone, Debug)]
pub(super) struct Ev {
    pub(super) client: u32,
    pub(super) element: u32,
    pub(super) seq: u64,
    pub(super) intended: u64,
    pub(super) value: i64,
}

/// One client: its schedule and its stream of elements and values.
struct Client {
    id: u32,
    pacer: Pacer,
    first: Pacer,
    rng: ChaCha8Rng,
    /// The elements' stream (`--dist`), 1..=elements.
    elements: crate::workload::keys::KeyGen,
    seq: u64,
    acked: u64,
}

impl EventsWorkload {
    pub(super) fn make_session(&self, session: u32) -> EventsSession {
        let c = &self.cfg;
        let n = self.sessions;
        let clients = (0..c.clients)
            .filter(|&k| Self::session_of(k, n) == session)
            .map(|k| {
                let seed = dbscope_core::record::session_seed(c.seed ^ 0x6576_656e_7473, k);
                // Clients start spread over the first gap (phase by client number).
                let pacer = Pacer::new(c.rate, c.arrival, seed, 0, k as f64 / c.clients as f64);
                Client {
                    id: k,
                    first: pacer.clone(),
                    pacer,
                    rng: ChaCha8Rng::seed_from_u64(seed.rotate_left(17)),
                    elements: crate::workload::keys::KeyGen::new(
                        c.dist,
                        c.elements as u64,
                        seed.rotate_left(29),
                    ),
                    seq: 0,
                    acked: 0,
                }
            })
            .collect();
        let payload: String = "pvss-event-value-"
            .chars()
            .cycle()
            .take(c.payload)
            .collect();
        EventsSession {
            cfg: c.clone(),
            sessions: n,
            last_now: 0,
            dialect: self.dialect,
            clients,
            pending: Vec::new(),
            payload,
            stmts: Stmts::default(),
            names: (0, 0),
            co: LatencyHistogram::new(),
            service: LatencyHistogram::new(),
            per_s: Vec::new(),
            batches: 0,
            failed: 0,
            found_committed: 0,
            written_at: 0,
            agg: self.agg.clone(),
            started_at: None,
            sql: String::new(),
            copy_buf: Vec::new(),
        }
    }
}

/// The session's prepared statements (which ones depends on the strategy and the dialect).
#[derive(Default)]
pub(super) struct Stmts {
    pub(super) insert: Option<StmtId>,
    pub(super) upsert: Option<StmtId>,
    pub(super) stage: Option<StmtId>,
    /// `insert`'s and `upsert`'s texts (`--explain`).
    pub(super) insert_sql: String,
    pub(super) upsert_sql: String,
    /// The last event written row by row (`--explain` explains with its values).
    pub(super) last: Option<Ev>,
    /// PostgreSQL's batch: where the history INSERT ends in `sql` (`; ` and the upsert follow).
    pub(super) batch_split: usize,
}

/// One session (connection): the clients it serves, their pending events and what it measured.
pub(super) struct EventsSession {
    pub(super) cfg: EventsConfig,
    /// Sessions sharing the clients (client `c` is this session's client number `c / sessions`).
    sessions: u32,
    /// The latest run-clock time a step saw.
    last_now: u64,
    pub(super) dialect: Dialect,
    clients: Vec<Client>,
    /// Events taken from the clients and not yet acknowledged (resent after a failure).
    pub(super) pending: Vec<Ev>,
    pub(super) payload: String,
    pub(super) stmts: Stmts,
    names: (NameId, NameId),
    co: LatencyHistogram,
    service: LatencyHistogram,
    per_s: Vec<[u64; 3]>,
    batches: u64,
    /// Transactions that failed and whose events were resent.
    failed: u64,
    /// Transactions whose commit's answer was lost but that were found committed after the
    /// reconnect (not resent).
    found_committed: u64,
    /// Run-clock time the latest write of `pending` started.
    written_at: u64,
    agg: Arc<Mutex<Aggregate>>,
    /// Run-clock time the session's clients started (their schedules are offset by it).
    started_at: Option<u64>,
    pub(super) sql: String,
    pub(super) copy_buf: Vec<u8>,
}

/// Adds `n` to column `col` (offered, written, committed) of the second that holds `ns`.
fn bump(per_s: &mut Vec<[u64; 3]>, ns: u64, col: usize, n: u64) {
    let s = (ns / 1_000_000_000) as usize;
    if per_s.len() <= s {
        per_s.resize(s + 1, [0; 3]);
    }
    per_s[s][col] += n;
}

impl EventsSession {
    fn until(&self) -> u64 {
        self.cfg.until_ns.unwrap_or(u64::MAX)
    }

    /// Takes the events due at `now` from the clients into `pending`, oldest client first, at
    /// most `max` in all.
    fn take_due(&mut self, now: u64, max: usize) {
        let until = self.until();
        while self.pending.len() < max {
            let Some(c) = self
                .clients
                .iter_mut()
                .filter(|c| c.pacer.peek() <= now && c.pacer.peek() < until)
                .min_by_key(|c| c.pacer.peek())
            else {
                return;
            };
            // Take this client's due events in order, up to the batch limit.
            while self.pending.len() < max && c.pacer.peek() <= now && c.pacer.peek() < until {
                let intended = c.pacer.next_start();
                let element = (c.elements.next_key() - 1) as u32;
                let value = (c.rng.random::<u64>() >> 1) as i64;
                self.pending.push(Ev {
                    client: c.id,
                    element,
                    seq: c.seq,
                    intended,
                    value,
                });
                c.seq += 1;
                if self.cfg.strategy.per_row() {
                    return;
                }
            }
        }
    }

    /// The earliest intended time of an event not yet taken, before the end.
    fn next_due(&self) -> Option<u64> {
        let until = self.until();
        self.clients
            .iter()
            .map(|c| c.pacer.peek())
            .filter(|&t| t < until)
            .min()
    }

    /// Counts `pending` as committed at `committed` (written from `written`) and empties it: the
    /// one place an event is counted as written and committed, per second and per client, so
    /// that the totals, the per-second columns and the per-client counts agree (issue 34 item 4:
    /// a batch found committed after a lost answer was counted per client only).
    fn acknowledge(&mut self, written: u64, committed: u64) {
        let n = self.pending.len() as u64;
        bump(&mut self.per_s, written, 1, n);
        bump(&mut self.per_s, committed, 2, n);
        for e in self.pending.drain(..) {
            if e.intended >= self.cfg.warmup_ns {
                self.co.record(committed.saturating_sub(e.intended));
                self.service.record(committed.saturating_sub(written));
            }
            if let Some(c) = self.clients.get_mut((e.client / self.sessions) as usize) {
                c.acked += 1;
            }
        }
    }

    /// What makes an INSERT into `eventlastval` an upsert, in the dialect.
    pub(super) fn upsert_clause(&self) -> &'static str {
        match self.dialect {
            Dialect::Mysql => {
                "ON DUPLICATE KEY UPDATE seq = VALUES(seq), ts = VALUES(ts), \
                 value = VALUES(value), payload = VALUES(payload)"
            }
            _ => {
                "ON CONFLICT (client, element) DO UPDATE SET seq = excluded.seq, \
                 ts = excluded.ts, value = excluded.value, payload = excluded.payload"
            }
        }
    }

    /// After a reconnect: whether the pending batch was committed although its commit's answer
    /// was lost (a batch is one transaction, so its first event tells).
    fn pending_was_committed(&self, sess: &mut dyn Session) -> TargetResult<bool> {
        let Some(e) = self.pending.first() else {
            return Ok(false);
        };
        if self.dialect == Dialect::Null {
            return Ok(false);
        }
        let n = sess.query_i64(&format!(
            "SELECT count(*) FROM {HISTORY} WHERE client = {} AND seq = {}",
            e.client, e.seq
        ))?;
        Ok(n.first().copied().unwrap_or(0) > 0)
    }
}

impl SessionWork for EventsSession {
    fn prepare(&mut self, sess: &mut dyn Session, rec: &Recorder) -> TargetResult<()> {
        self.names = (rec.name("write"), rec.name("commit"));
        if self.started_at.is_none() {
            // The clients' schedules start now (after connecting and preparing).
            let now = rec.now();
            for c in &mut self.clients {
                c.pacer.shift(now);
                c.first.shift(now);
            }
            self.started_at = Some(now);
        }
        let ph = |i| self.dialect.placeholder(i);
        let values = format!(
            "({}, {}, {}, {}, {}, {})",
            ph(1),
            ph(2),
            ph(3),
            ph(4),
            ph(5),
            ph(6)
        );
        let upsert = format!(
            "INSERT INTO {LASTVAL} VALUES {values} {}",
            self.upsert_clause()
        );
        self.stmts = Stmts::default();
        if self.pending_was_committed(sess)? {
            // Its commit failed (counted as failed then), but it committed: a transaction, not
            // a resend; acknowledged now, written when its write started.
            let now = rec.now();
            self.acknowledge(self.written_at, now);
            self.batches += 1;
            self.failed = self.failed.saturating_sub(1);
            self.found_committed += 1;
        }
        match (self.dialect, self.cfg.strategy) {
            (Dialect::Null, _) => {
                self.stmts.insert = Some(sess.prepare("insert")?);
            }
            (_, Strategy::RowTrigger) => {
                self.stmts.insert_sql = format!("INSERT INTO {HISTORY} VALUES {values}");
                self.stmts.insert = Some(sess.prepare(&self.stmts.insert_sql)?);
            }
            (_, Strategy::Row) | (Dialect::Sqlite, Strategy::Batch) => {
                self.stmts.insert_sql = format!("INSERT INTO {HISTORY} VALUES {values}");
                self.stmts.insert = Some(sess.prepare(&self.stmts.insert_sql)?);
                self.stmts.upsert = Some(sess.prepare(&upsert)?);
                self.stmts.upsert_sql = upsert;
            }
            (Dialect::Postgres | Dialect::Mysql, Strategy::Batch) => {}
            (Dialect::Sqlite, Strategy::Staged | Strategy::Partitioned) => {
                sess.batch(&format!(
                    "CREATE TEMP TABLE IF NOT EXISTS events_stage AS SELECT * FROM {LASTVAL} WHERE 0"
                ))?;
                self.stmts.stage =
                    Some(sess.prepare(&format!("INSERT INTO temp.events_stage VALUES {values}"))?);
            }
            (Dialect::Mysql, Strategy::Staged | Strategy::Partitioned) => {
                // Filled by LOAD DATA LOCAL INFILE; emptied by DELETE in each transaction (an
                // InnoDB temporary table: a failed transaction's rows go with its rollback).
                sess.batch(
                    "CREATE TEMPORARY TABLE IF NOT EXISTS events_stage (client INTEGER NOT NULL, \
                     element INTEGER NOT NULL, seq BIGINT NOT NULL, ts BIGINT NOT NULL, \
                     value BIGINT NOT NULL, payload TEXT NOT NULL)",
                )?;
            }
            (Dialect::Postgres, Strategy::Staged | Strategy::Partitioned) => {
                // A temporary table is not WAL-logged; ON COMMIT DELETE ROWS empties it for free.
                sess.batch(&format!(
                    "CREATE TEMP TABLE IF NOT EXISTS events_stage (LIKE {LASTVAL} INCLUDING DEFAULTS) \
                     ON COMMIT DELETE ROWS"
                ))?;
            }
        }
        Ok(())
    }

    fn step(&mut self, sess: &mut dyn Session, rec: &mut Recorder) -> Result<(), TargetError> {
        let max = if self.cfg.strategy.per_row() {
            1
        } else {
            self.cfg.batch
        };
        let now = rec.now();
        self.last_now = now;
        self.take_due(now, max);
        if self.pending.is_empty() {
            if let Some(t) = self.next_due() {
                crate::pace::wait_until(rec, t);
            }
            return Ok(());
        }
        // A batch that is not full waits for more events until its oldest has waited long enough.
        if !self.cfg.strategy.per_row() && self.pending.len() < max {
            let oldest = self.pending.iter().map(|e| e.intended).min().unwrap_or(now);
            let flush_at = oldest.saturating_add(self.cfg.batch_wait_ns);
            let more_coming = self.next_due().is_some();
            if now < flush_at && more_coming {
                let next = self.next_due().unwrap_or(flush_at).min(flush_at);
                crate::pace::wait_until(rec, next.max(now));
                return Ok(());
            }
        }
        let n = self.pending.len() as u64;
        let (write, commit) = self.names;
        let t0 = rec.now();
        self.written_at = t0;
        let begin_write = || sess.begin().and_then(|()| self.write(sess));
        let (result, t1) = timed(rec, write, t0, begin_write, |()| Ok(n));
        if let Err(e) = result {
            self.failed += 1;
            return Err(e);
        }
        let (result, t2) = timed(rec, commit, t1, || sess.commit(), |()| Ok(n));
        if let Err(e) = result {
            self.failed += 1;
            return Err(e);
        }
        self.batches += 1;
        self.acknowledge(t0, t2);
        Ok(())
    }

    fn finished(&self) -> bool {
        self.pending.is_empty() && self.next_due().is_none()
    }

    /// Row by row: the INSERT (and the upsert) with the last event's values; PostgreSQL's batch:
    /// its two multi-row statements as last sent. The staged strategies' statements read a
    /// staging table that holds rows only inside their transaction: none named.
    fn statements(&self) -> Vec<crate::workload::Statement> {
        let st = |sql: &str, params: Vec<Param>| crate::workload::Statement {
            event: "write".into(),
            sql: sql.to_string(),
            params,
        };
        match (self.dialect, self.cfg.strategy) {
            (Dialect::Null, _) | (_, Strategy::Staged | Strategy::Partitioned) => Vec::new(),
            (Dialect::Postgres | Dialect::Mysql, Strategy::Batch) => {
                let split = self.stmts.batch_split;
                match (self.sql.get(..split), self.sql.get(split + 2..)) {
                    (Some(history), Some(lastval)) if split > 0 => {
                        vec![st(history, Vec::new()), st(lastval, Vec::new())]
                    }
                    _ => Vec::new(),
                }
            }
            _ => {
                let Some(e) = &self.stmts.last else {
                    return Vec::new();
                };
                let mut v = vec![st(&self.stmts.insert_sql, self.row_params(e).to_vec())];
                if self.stmts.upsert.is_some() {
                    v.push(st(&self.stmts.upsert_sql, self.row_params(e).to_vec()));
                }
                v
            }
        }
    }
}

impl Drop for EventsSession {
    fn drop(&mut self) {
        let mut a = self.agg.lock().unwrap_or_else(PoisonError::into_inner);
        a.co.merge(&self.co);
        a.service.merge(&self.service);
        // Offered: every intended time of every client up to the end (or up to now, when the run
        // stopped early), taken or not.
        let end = self.cfg.until_ns.map_or(u64::MAX, |u| u.saturating_sub(1));
        let end = end.min(self.last_now);
        let mut per_s = std::mem::take(&mut self.per_s);
        for c in &self.clients {
            let due = c.first.due_per_second(end);
            let total: u64 = due.iter().sum();
            for (k, n) in due.into_iter().enumerate() {
                bump(&mut per_s, k as u64 * 1_000_000_000, 0, n);
            }
            a.clients.insert(c.id, (c.acked, total));
        }
        if a.per_s.len() < per_s.len() {
            a.per_s.resize(per_s.len(), [0; 3]);
        }
        for (t, m) in a.per_s.iter_mut().zip(&per_s) {
            for i in 0..3 {
                t[i] += m[i];
            }
        }
        a.batches += self.batches;
        a.failed_batches += self.failed;
        a.found_committed += self.found_committed;
    }
}
