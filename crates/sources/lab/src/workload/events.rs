//! The `events` workload (seed 003, CERN's PVSS archiver): many clients each produce monitoring
//! events at a fixed rate, open loop; every event is appended to `events_history` and sets its
//! element's last value in `eventlastval`. The `--strategy` picks one stage of CERN's tuning story:
//! a trigger per row, the client's own two statements per row, client batches, a bulk load into a
//! staging table followed by set-based statements, and the same into a partition per client.
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

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use dbscope_core::counters::{Column, Counter, CounterTable, CounterValue};
use dbscope_core::stats::LatencyHistogram;
use dbscope_core::{CounterSection, NameId, Recorder};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{SessionWork, Workload};
use crate::error::Error;
use crate::pace::{Arrival, Pacer};
use dbscope_db::{Dialect, Param, Session, StmtId, Target, TargetError, TargetResult};

/// The history table (a view over per-client tables with `partitioned` on SQLite).
pub const HISTORY: &str = "events_history";
/// The last value of every element.
pub const LASTVAL: &str = "eventlastval";
/// Columns of both tables, in order.
const COLUMNS: [&str; 6] = ["client", "element", "seq", "ts", "value", "payload"];

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
    fn per_row(&self) -> bool {
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

/// The events workload.
pub struct EventsWorkload {
    cfg: EventsConfig,
    dialect: Dialect,
    sessions: u32,
    agg: Arc<Mutex<Aggregate>>,
}

/// What the sessions measured, merged as each one ends.
#[derive(Default)]
struct Aggregate {
    co: LatencyHistogram,
    service: LatencyHistogram,
    /// Per second: offered (intended), written (write started), committed.
    per_s: Vec<[u64; 3]>,
    /// Per client: events acknowledged (committed), events due by the end.
    clients: BTreeMap<u32, (u64, u64)>,
    batches: u64,
    failed_batches: u64,
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

    fn drop_all(&self, s: &mut dyn Session) -> TargetResult<()> {
        // DROP VIEW refuses a table and DROP TABLE a view: drop what is there.
        let history = match self.existing_shape(s)? {
            Some((kind, _)) if kind == "view" => format!("DROP VIEW {HISTORY}"),
            Some(_) => format!("DROP TABLE {HISTORY}"),
            None => String::new(),
        };
        match self.dialect {
            Dialect::Postgres => s.batch(&format!(
                "{}DROP TABLE IF EXISTS {LASTVAL} CASCADE; \
                 DROP FUNCTION IF EXISTS {LASTVAL}_from_history() CASCADE",
                if history.is_empty() {
                    String::new()
                } else {
                    format!("{history} CASCADE; ")
                }
            )),
            Dialect::Sqlite => {
                let mut sql = format!("{history}; DROP TABLE IF EXISTS {LASTVAL};");
                for row in s.query_rows(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'events_history_c%'",
                    &[],
                )? {
                    if let Some(Some(name)) = row.into_iter().next() {
                        let _ = write!(sql, " DROP TABLE IF EXISTS \"{name}\";");
                    }
                }
                s.batch(&sql)
            }
            Dialect::Null => Ok(()),
        }
    }

    /// What `events_history` is now: `None` when absent, else its kind (`table`, `partitioned`,
    /// `view`) and columns.
    fn existing_shape(&self, s: &mut dyn Session) -> TargetResult<Option<(String, Vec<String>)>> {
        let text = |rows: Vec<Vec<Option<String>>>| -> Vec<String> {
            rows.into_iter()
                .filter_map(|r| r.into_iter().next().flatten())
                .collect()
        };
        let (kind, cols) = match self.dialect {
            Dialect::Postgres => {
                let kind = text(s.query_rows(
                    &format!(
                        "SELECT CASE c.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'partitioned table' \
                         WHEN 'v' THEN 'view' ELSE c.relkind::text END FROM pg_class c \
                         WHERE c.oid = to_regclass('{HISTORY}')"
                    ),
                    &[],
                )?);
                let cols = text(s.query_rows(
                    &format!(
                        "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass('{HISTORY}') \
                         AND attnum > 0 AND NOT attisdropped ORDER BY attnum"
                    ),
                    &[],
                )?);
                (kind, cols)
            }
            Dialect::Sqlite => {
                let kind = text(s.query_rows(
                    &format!("SELECT type FROM sqlite_master WHERE name = '{HISTORY}'"),
                    &[],
                )?);
                let cols = text(s.query_rows(
                    &format!("SELECT name FROM pragma_table_info('{HISTORY}')"),
                    &[],
                )?);
                (kind, cols)
            }
            Dialect::Null => return Ok(None),
        };
        Ok(kind.into_iter().next().map(|k| (k, cols)))
    }

    fn check_shape(&self, s: &mut dyn Session) -> TargetResult<()> {
        let Some((kind, cols)) = self.existing_shape(s)? else {
            return Ok(());
        };
        let want = match (self.cfg.strategy, self.dialect) {
            (Strategy::Partitioned, Dialect::Postgres) => "partitioned table",
            (Strategy::Partitioned, _) => "view",
            _ => "table",
        };
        let explain = |what: String| {
            TargetError::config(format!(
                "{HISTORY} exists from an earlier run with another shape: {what}; \
                 add --fresh to drop and rebuild {HISTORY} and {LASTVAL} (their rows are lost)"
            ))
        };
        if kind != want {
            return Err(explain(format!(
                "it is a {kind}, --strategy {} needs a {want}{}",
                self.cfg.strategy.as_str(),
                if want == "view" {
                    " over a table per client"
                } else {
                    ""
                }
            )));
        }
        if cols != COLUMNS {
            return Err(explain(format!(
                "its columns are ({}), this dbscope writes ({})",
                cols.join(", "),
                COLUMNS.join(", ")
            )));
        }
        Ok(())
    }

    /// CERN's space pre-allocation, as PostgreSQL can have it: each client's partition is grown
    /// by `preallocate` events' worth of rows, which are deleted again; `VACUUM (TRUNCATE false)`
    /// then records the empty pages in the free space map (and `vacuum_truncate = false` keeps
    /// autovacuum from giving them back), so the run's inserts fill pages that exist instead of
    /// extending the file under the relation extension lock.
    fn preallocate(&self, s: &mut dyn Session) -> TargetResult<()> {
        let n = self.cfg.preallocate;
        if n == 0 || self.dialect != Dialect::Postgres || self.cfg.strategy != Strategy::Partitioned
        {
            return Ok(());
        }
        for c in 0..self.cfg.clients {
            let p = format!("{HISTORY}_p{c}");
            s.batch(&format!(
                "ALTER TABLE {p} SET (vacuum_truncate = false); \
                 INSERT INTO {p} SELECT {c}, 0, -g, 0, 0, repeat('x', {}) \
                 FROM generate_series(1, {n}) g; DELETE FROM {p} WHERE seq < 0",
                self.cfg.payload
            ))?;
            s.batch(&format!("VACUUM (TRUNCATE false) {p}"))?;
        }
        Ok(())
    }

    fn create(&self, s: &mut dyn Session) -> TargetResult<()> {
        let cols = "client INTEGER NOT NULL, element INTEGER NOT NULL, seq BIGINT NOT NULL, \
                    ts BIGINT NOT NULL, value BIGINT NOT NULL, payload TEXT NOT NULL";
        let last =
            format!("CREATE TABLE IF NOT EXISTS {LASTVAL} ({cols}, PRIMARY KEY (client, element))");
        let n = self.cfg.clients;
        match (self.dialect, self.cfg.strategy) {
            (Dialect::Null, _) => Ok(()),
            (Dialect::Postgres, Strategy::Partitioned) => {
                let mut sql = format!(
                    "{last}; CREATE TABLE IF NOT EXISTS {HISTORY} ({cols}) PARTITION BY LIST (client);"
                );
                for c in 0..n {
                    let _ = write!(
                        sql,
                        " CREATE TABLE IF NOT EXISTS {HISTORY}_p{c} PARTITION OF {HISTORY} FOR VALUES IN ({c});"
                    );
                }
                s.batch(&sql)
            }
            (Dialect::Sqlite, Strategy::Partitioned) => {
                let mut sql = format!("{last}; DROP VIEW IF EXISTS {HISTORY};");
                let mut view = Vec::new();
                for c in 0..n {
                    let _ = write!(sql, " CREATE TABLE IF NOT EXISTS {HISTORY}_c{c} ({cols});");
                    view.push(format!("SELECT * FROM {HISTORY}_c{c}"));
                }
                // Tables left by a run with more clients stay in the view, so counts stay whole.
                for row in s.query_rows(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'events_history_c%'",
                    &[],
                )? {
                    if let Some(Some(name)) = row.into_iter().next() {
                        let c: u32 = name[HISTORY.len() + 2..].parse().unwrap_or(0);
                        if c >= n {
                            view.push(format!("SELECT * FROM \"{name}\""));
                        }
                    }
                }
                // SQLite joins at most 500 SELECTs in one compound: nest them.
                let chunks: Vec<String> = view
                    .chunks(400)
                    .map(|c| format!("SELECT * FROM ({})", c.join(" UNION ALL ")))
                    .collect();
                let _ = write!(
                    sql,
                    " CREATE VIEW {HISTORY} AS {};",
                    chunks.join(" UNION ALL ")
                );
                s.batch(&sql)
            }
            (d, strategy) => {
                let mut sql = format!("{last}; CREATE TABLE IF NOT EXISTS {HISTORY} ({cols});");
                let trigger = strategy == Strategy::RowTrigger;
                match d {
                    Dialect::Postgres => {
                        sql.push_str(&format!(
                            " DROP TRIGGER IF EXISTS {LASTVAL}_trg ON {HISTORY};"
                        ));
                        if trigger {
                            sql.push_str(&format!(
                                " CREATE OR REPLACE FUNCTION {LASTVAL}_from_history() RETURNS trigger \
                                 LANGUAGE plpgsql AS $f$ BEGIN \
                                 INSERT INTO {LASTVAL} VALUES (NEW.client, NEW.element, NEW.seq, NEW.ts, NEW.value, NEW.payload) \
                                 ON CONFLICT (client, element) DO UPDATE SET seq = EXCLUDED.seq, ts = EXCLUDED.ts, \
                                 value = EXCLUDED.value, payload = EXCLUDED.payload; RETURN NULL; END $f$; \
                                 CREATE TRIGGER {LASTVAL}_trg AFTER INSERT ON {HISTORY} \
                                 FOR EACH ROW EXECUTE FUNCTION {LASTVAL}_from_history();"
                            ));
                        }
                    }
                    _ => {
                        sql.push_str(&format!(" DROP TRIGGER IF EXISTS {LASTVAL}_trg;"));
                        if trigger {
                            sql.push_str(&format!(
                                " CREATE TRIGGER {LASTVAL}_trg AFTER INSERT ON {HISTORY} BEGIN \
                                 INSERT OR REPLACE INTO {LASTVAL} VALUES (NEW.client, NEW.element, NEW.seq, \
                                 NEW.ts, NEW.value, NEW.payload); END;"
                            ));
                        }
                    }
                }
                s.batch(&sql)
            }
        }
    }

    /// The run-level counter section (`events`): CO-corrected latency and service time per
    /// event, totals, the per-second series and the per-client acknowledged counts.
    fn section(&self) -> CounterSection {
        let a = self.agg.lock().unwrap_or_else(|e| e.into_inner());
        let us = |h: &LatencyHistogram, p: f64| {
            CounterValue::float((!h.is_empty()).then(|| h.percentile(p) as f64 / 1000.0))
        };
        let offered: u64 = a.per_s.iter().map(|r| r[0]).sum();
        let committed: u64 = a.per_s.iter().map(|r| r[2]).sum();
        let written: u64 = a.per_s.iter().map(|r| r[1]).sum();
        // The measured span: from the first second with an offered event to the last with a commit.
        let secs = a
            .per_s
            .iter()
            .rposition(|r| r[2] > 0)
            .map_or(0.0, |i| (i + 1) as f64);
        let dur = self.cfg.until_ns.map_or(secs, |u| u as f64 / 1e9).max(1e-9);
        let mut counters = vec![
            Counter::new(
                "offered_per_s",
                "offered",
                CounterValue::float(Some(self.cfg.rate * self.cfg.clients as f64)),
                "ev/s",
            )
            .decimals(0),
            Counter::new(
                "achieved_per_s",
                "achieved (committed)",
                CounterValue::float(Some(committed as f64 / dur)),
                "ev/s",
            )
            .decimals(0),
            Counter::new(
                "offered",
                "events offered",
                CounterValue::count(offered),
                "",
            ),
            Counter::new("written", "written", CounterValue::count(written), ""),
            Counter::new(
                "committed",
                "committed (acknowledged)",
                CounterValue::count(committed),
                "",
            ),
            Counter::new(
                "backlog_at_end",
                "backlog at end (offered, not committed)",
                CounterValue::count(offered.saturating_sub(committed)),
                "",
            ),
            Counter::new(
                "batches",
                "transactions",
                CounterValue::count(a.batches),
                "",
            ),
            Counter::new(
                "failed_batches",
                "failed transactions (events resent)",
                CounterValue::count(a.failed_batches),
                "",
            ),
        ];
        for (key, label, h) in [
            ("co", "latency from intended (CO-corrected)", &a.co),
            ("service", "service (write start to commit)", &a.service),
        ] {
            for (p, pl) in [(50.0, "p50"), (99.0, "p99"), (99.9, "p99.9")] {
                counters.push(
                    Counter::new(
                        &format!("{key}_{}_us", pl.replace('.', "_")),
                        &format!("{label} {pl}"),
                        us(h, p),
                        "µs",
                    )
                    .decimals(0),
                );
            }
        }
        let mut backlog = 0i64;
        let per_second = CounterTable {
            key: "per_second".into(),
            title: "per second: events offered, written, committed; backlog (offered, not written)"
                .into(),
            columns: vec![
                Column::new("second", "second", ""),
                Column::new("offered", "offered", ""),
                Column::new("written", "written", ""),
                Column::new("committed", "committed", ""),
                Column::new("backlog", "backlog", ""),
            ],
            rows: a
                .per_s
                .iter()
                .enumerate()
                .map(|(k, r)| {
                    backlog += r[0] as i64 - r[1] as i64;
                    let c = CounterValue::count;
                    vec![
                        c(k as u64),
                        c(r[0]),
                        c(r[1]),
                        c(r[2]),
                        c(backlog.max(0) as u64),
                    ]
                })
                .collect(),
        };
        let clients = CounterTable {
            key: "clients".into(),
            title: "per client: events acknowledged and due by the end".into(),
            columns: vec![
                Column::new("client", "client", ""),
                Column::new("acknowledged", "acknowledged", ""),
                Column::new("due", "due", ""),
            ],
            rows: a
                .clients
                .iter()
                .map(|(&c, &(ack, due))| {
                    let v = CounterValue::count;
                    vec![v(c as u64), v(ack), v(due)]
                })
                .collect(),
        };
        CounterSection {
            key: "archive".into(),
            title: format!(
                "events: {} clients × {} ev/s, strategy {}",
                self.cfg.clients,
                self.cfg.rate,
                self.cfg.strategy.as_str()
            ),
            final_counts: true,
            counters,
            tables: vec![per_second, clients],
            notes: Vec::new(),
        }
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

    fn setup(&self, target: &dyn Target, _sessions: u32) -> TargetResult<()> {
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
        Some(self.section())
    }
}

/// One event on its way to the database.
#[derive(Clone, Debug)]
struct Ev {
    client: u32,
    element: u32,
    seq: u64,
    intended: u64,
    value: i64,
}

/// One client: its schedule and its stream of elements and values.
struct Client {
    id: u32,
    pacer: Pacer,
    first: Pacer,
    rng: ChaCha8Rng,
    seq: u64,
    acked: u64,
}

impl EventsWorkload {
    /// Sessions share the clients: with this many sessions, session `i` serves clients
    /// `i, i + n, i + 2n, …`. Must be called before the run starts.
    pub fn with_sessions(mut self, n: u32) -> Self {
        self.sessions = n.max(1);
        self
    }

    fn make_session(&self, session: u32) -> EventsSession {
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
            agg: self.agg.clone(),
            started_at: None,
            sql: String::new(),
            copy_buf: Vec::new(),
        }
    }
}

#[derive(Default)]
struct Stmts {
    insert: Option<StmtId>,
    upsert: Option<StmtId>,
    stage: Option<StmtId>,
}

struct EventsSession {
    cfg: EventsConfig,
    /// Sessions sharing the clients (client `c` is this session's client number `c / sessions`).
    sessions: u32,
    /// The latest run-clock time a step saw.
    last_now: u64,
    dialect: Dialect,
    clients: Vec<Client>,
    /// Events taken from the clients and not yet acknowledged (resent after a failure).
    pending: Vec<Ev>,
    payload: String,
    stmts: Stmts,
    names: (NameId, NameId),
    co: LatencyHistogram,
    service: LatencyHistogram,
    per_s: Vec<[u64; 3]>,
    batches: u64,
    failed: u64,
    agg: Arc<Mutex<Aggregate>>,
    /// Run-clock time the session's clients started (their schedules are offset by it).
    started_at: Option<u64>,
    sql: String,
    copy_buf: Vec<u8>,
}

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
                let element = c.rng.random_range(0..self.cfg.elements);
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

    fn row_params(&self, e: &Ev) -> [Param; 6] {
        [
            Param::Int(e.client as i64),
            Param::Int(e.element as i64),
            Param::Int(e.seq as i64),
            Param::Int(e.intended as i64),
            Param::Int(e.value),
            Param::Text(self.payload.clone()),
        ]
    }

    /// The events of `pending` that set each element's last value (the last one per element).
    fn last_per_element(&self) -> Vec<&Ev> {
        let mut last: BTreeMap<(u32, u32), &Ev> = BTreeMap::new();
        for e in &self.pending {
            last.insert((e.client, e.element), e);
        }
        last.into_values().collect()
    }

    fn values_sql(&self, events: &[&Ev]) -> String {
        let mut sql = String::with_capacity(events.len() * (self.payload.len() + 48));
        for (i, e) in events.iter().enumerate() {
            if i > 0 {
                sql.push(',');
            }
            let _ = write!(
                sql,
                "({},{},{},{},{},'{}')",
                e.client, e.element, e.seq, e.intended, e.value, self.payload
            );
        }
        sql
    }

    /// Writes `pending` (inside a transaction the caller commits).
    fn write(&mut self, sess: &mut dyn Session) -> TargetResult<()> {
        let upsert_set = "ON CONFLICT (client, element) DO UPDATE SET seq = excluded.seq, \
                          ts = excluded.ts, value = excluded.value, payload = excluded.payload";
        match (self.dialect, self.cfg.strategy) {
            (Dialect::Null, _) | (_, Strategy::RowTrigger | Strategy::Row) => {
                let insert = self.stmts.insert.ok_or_else(not_prepared)?;
                for e in &self.pending {
                    sess.execute(insert, &self.row_params(e))?;
                }
                if let Some(upsert) = self.stmts.upsert {
                    for e in self.last_per_element() {
                        sess.execute(upsert, &self.row_params(e))?;
                    }
                }
                Ok(())
            }
            (Dialect::Sqlite, Strategy::Batch) => {
                let insert = self.stmts.insert.ok_or_else(not_prepared)?;
                let upsert = self.stmts.upsert.ok_or_else(not_prepared)?;
                for e in &self.pending {
                    sess.execute(insert, &self.row_params(e))?;
                }
                for e in self.last_per_element() {
                    sess.execute(upsert, &self.row_params(e))?;
                }
                Ok(())
            }
            (Dialect::Postgres, Strategy::Batch) => {
                let all: Vec<&Ev> = self.pending.iter().collect();
                let last = self.last_per_element();
                self.sql = format!(
                    "INSERT INTO {HISTORY} VALUES {}; INSERT INTO {LASTVAL} VALUES {} {upsert_set}",
                    self.values_sql(&all),
                    self.values_sql(&last)
                );
                sess.batch(&self.sql)
            }
            (Dialect::Sqlite, Strategy::Staged | Strategy::Partitioned) => {
                let stage = self.stmts.stage.ok_or_else(not_prepared)?;
                for e in &self.pending {
                    sess.execute(stage, &self.row_params(e))?;
                }
                let mut sql = String::new();
                if self.cfg.strategy == Strategy::Partitioned {
                    for c in self.clients_in_pending() {
                        let _ = write!(
                            sql,
                            "INSERT INTO {HISTORY}_c{c} SELECT * FROM temp.events_stage WHERE client = {c}; "
                        );
                    }
                } else {
                    let _ = write!(
                        sql,
                        "INSERT INTO {HISTORY} SELECT * FROM temp.events_stage; "
                    );
                }
                // SQLite's bare columns with max(): each group's values come from its max(seq) row.
                let _ = write!(
                    sql,
                    "INSERT OR REPLACE INTO {LASTVAL} SELECT client, element, max(seq), ts, value, payload \
                     FROM temp.events_stage GROUP BY client, element; DELETE FROM temp.events_stage"
                );
                sess.batch(&sql)
            }
            (Dialect::Postgres, Strategy::Staged | Strategy::Partitioned) => {
                self.copy_buf.clear();
                let pending = std::mem::take(&mut self.pending);
                let mut rows = pending.iter();
                let payload = self.payload.clone();
                let mut fill = |buf: &mut Vec<u8>| -> Result<bool, String> {
                    use std::io::Write as _;
                    for e in rows.by_ref().take(4096) {
                        let _ = writeln!(
                            buf,
                            "{}\t{}\t{}\t{}\t{}\t{payload}",
                            e.client, e.element, e.seq, e.intended, e.value
                        );
                    }
                    Ok(rows.len() > 0)
                };
                let copied = sess.copy_in("COPY events_stage FROM STDIN", &mut fill);
                self.pending = pending;
                copied?;
                let mut sql = String::new();
                if self.cfg.strategy == Strategy::Partitioned {
                    for c in self.clients_in_pending() {
                        let _ = write!(
                            sql,
                            "INSERT INTO {HISTORY}_p{c} SELECT * FROM events_stage WHERE client = {c}; "
                        );
                    }
                } else {
                    let _ = write!(sql, "INSERT INTO {HISTORY} SELECT * FROM events_stage; ");
                }
                let _ = write!(
                    sql,
                    "INSERT INTO {LASTVAL} SELECT DISTINCT ON (client, element) * FROM events_stage \
                     ORDER BY client, element, seq DESC {upsert_set}"
                );
                sess.batch(&sql)
            }
        }
    }

    /// Counts `pending` as committed at `committed` (written from `written`) and empties it.
    fn acknowledge(&mut self, written: u64, committed: u64) {
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

    fn clients_in_pending(&self) -> Vec<u32> {
        let mut c: Vec<u32> = self.pending.iter().map(|e| e.client).collect();
        c.sort_unstable();
        c.dedup();
        c
    }
}

fn not_prepared() -> TargetError {
    TargetError::config("events workload used before prepare")
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
            "INSERT INTO {LASTVAL} VALUES {values} ON CONFLICT (client, element) DO UPDATE SET \
             seq = excluded.seq, ts = excluded.ts, value = excluded.value, payload = excluded.payload"
        );
        self.stmts = Stmts::default();
        if self.pending_was_committed(sess)? {
            let now = rec.now();
            self.acknowledge(now, now);
            self.batches += 1;
        }
        match (self.dialect, self.cfg.strategy) {
            (Dialect::Null, _) => {
                self.stmts.insert = Some(sess.prepare("insert")?);
            }
            (_, Strategy::RowTrigger) => {
                self.stmts.insert =
                    Some(sess.prepare(&format!("INSERT INTO {HISTORY} VALUES {values}"))?);
            }
            (_, Strategy::Row) | (Dialect::Sqlite, Strategy::Batch) => {
                self.stmts.insert =
                    Some(sess.prepare(&format!("INSERT INTO {HISTORY} VALUES {values}"))?);
                self.stmts.upsert = Some(sess.prepare(&upsert)?);
            }
            (Dialect::Postgres, Strategy::Batch) => {}
            (Dialect::Sqlite, Strategy::Staged | Strategy::Partitioned) => {
                sess.batch(&format!(
                    "CREATE TEMP TABLE IF NOT EXISTS events_stage AS SELECT * FROM {LASTVAL} WHERE 0"
                ))?;
                self.stmts.stage =
                    Some(sess.prepare(&format!("INSERT INTO temp.events_stage VALUES {values}"))?);
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
        let result = sess.begin().and_then(|()| self.write(sess));
        let t1 = rec.now();
        if let Err(e) = result {
            rec.error(write, t0, t1, &e.class);
            self.failed += 1;
            return Err(e);
        }
        rec.ok(write, t0, t1, n);
        let result = sess.commit();
        let t2 = rec.now();
        if let Err(e) = result {
            rec.error(commit, t1, t2, &e.class);
            self.failed += 1;
            return Err(e);
        }
        rec.ok(commit, t1, t2, n);
        self.batches += 1;
        bump(&mut self.per_s, t0, 1, n);
        bump(&mut self.per_s, t2, 2, n);
        self.acknowledge(t0, t2);
        Ok(())
    }

    fn finished(&self) -> bool {
        self.pending.is_empty() && self.next_due().is_none()
    }
}

impl Drop for EventsSession {
    fn drop(&mut self) {
        let mut a = self.agg.lock().unwrap_or_else(|e| e.into_inner());
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

    #[test]
    fn clients_map_onto_sessions_round_robin() {
        let owned: Vec<u32> = (0..7).map(|c| EventsWorkload::session_of(c, 3)).collect();
        assert_eq!(owned, [0, 1, 2, 0, 1, 2, 0]);
    }
}
