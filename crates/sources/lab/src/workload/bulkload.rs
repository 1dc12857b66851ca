//! The `bulkload` workload (seed 002's parallel direct-path load into a global temporary table,
//! then `SELECT col, count(*) … GROUP BY col` twice): every session loads its share of `--rows`
//! (COPY on PostgreSQL, LOAD DATA LOCAL INFILE in one transaction on MariaDB/MySQL, one
//! transaction of prepared inserts on SQLite) into a table of kind
//! `--into temp|unlogged|logged`; then session 0 runs the GROUP BY twice and checks its answer
//! exactly (every group, every count). Each step is one event; rows/s and MB/s go to counters.
//! With `repeat` N the whole is done N times in one run, the table emptied in between, so each
//! step is an event per repetition and `compare` has samples.
//!
//! A global temporary table (Oracle's) has one definition shared by all sessions and data private
//! to each. PostgreSQL and SQLite temporary tables are private to one connection, so no second
//! connection can load into them: `--into temp` loads with one session (`--sessions 1`, as the
//! seed's single session whose parallel slaves the server runs), and a parallel load goes into
//! `--into unlogged` (PostgreSQL's closest shared kind: no WAL, emptied after a crash).

use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use dbscope_core::counters::{Column, Counter, CounterSection, CounterTable, CounterValue};
use dbscope_core::{NameId, Recorder};

use super::place::{self, Placement};
use super::work::{check_identifier, SessionWork, Workload};
use crate::error::Error;
use crate::observe::StepMarker;
use dbscope_db::{Dialect, Param, Session, Target, TargetError, TargetResult};

/// The kind of table loaded into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadInto {
    /// A temporary table (one session).
    Temp,
    /// PostgreSQL UNLOGGED; SQLite: journal_mode=OFF, synchronous=OFF for the load.
    Unlogged,
    /// An ordinary table.
    Logged,
}

impl FromStr for LoadInto {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "temp" => Ok(LoadInto::Temp),
            "unlogged" => Ok(LoadInto::Unlogged),
            "logged" => Ok(LoadInto::Logged),
            _ => Err(Error::invalid(
                "into",
                format!("{s:?}: expected temp, unlogged or logged"),
            )),
        }
    }
}

impl std::fmt::Display for LoadInto {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LoadInto::Temp => "temp",
            LoadInto::Unlogged => "unlogged",
            LoadInto::Logged => "logged",
        })
    }
}

/// The bulkload workload's options.
#[derive(Clone, Debug)]
pub struct BulkloadConfig {
    /// Table name.
    pub table: String,
    /// Rows loaded in all (split over the sessions).
    pub rows: u64,
    /// Distinct values of `col` (row `id` has `col = (id - 1) % groups`).
    pub groups: u64,
    /// Bytes of user data per row: 8 (id) + 4 (col) + the pad.
    pub row_bytes: u32,
    /// Table kind.
    pub into: LoadInto,
    /// Where the table lives.
    pub place: Placement,
    /// Sessions loading in parallel.
    pub sessions: u32,
    /// Times the steps are run (load, GROUP BY twice), the table emptied in between (≥ 1).
    pub repeat: u64,
}

/// One timed step's figures.
#[derive(Clone, Debug)]
struct StepResult {
    step: String,
    rows: u64,
    seconds: f64,
}

#[derive(Default)]
struct Shared {
    /// Sessions done with this repetition's load.
    arrived: u32,
    /// Rows the sessions loaded in this repetition.
    loaded: u64,
    /// Per session gone for good (dropped before its last repetition): the first repetition it
    /// misses.
    gone_from: Vec<u64>,
    /// Repetitions whose table is ready to load: session 0 empties it after each one's GROUP BYs.
    ready: u64,
    /// Set when a repetition failed or session 0 left: the others stop instead of waiting.
    stopped: bool,
    steps: Vec<StepResult>,
    checked: Option<String>,
}

impl Shared {
    /// Sessions accounted for in repetition `rep`: arrived, or gone before it.
    fn accounted(&self, rep: u64) -> u32 {
        self.arrived + self.gone_from.iter().filter(|&&k| k <= rep).count() as u32
    }
}

/// The bulkload workload.
pub struct BulkloadWorkload {
    cfg: BulkloadConfig,
    dialect: Dialect,
    shared: Arc<(Mutex<Shared>, Condvar)>,
    tablespace: Mutex<Option<String>>,
    /// Marks each step's end for the run's observer (a snapshot per step).
    marker: Mutex<Option<StepMarker>>,
}

impl BulkloadWorkload {
    /// The name runs record ([`Workload::name`]).
    pub const NAME: &'static str = "bulkload";
    /// The headline event ([`Workload::headline_event`]).
    pub const HEADLINE: &'static str = "load";

    /// Checks the options.
    pub fn new(cfg: BulkloadConfig, dialect: Dialect) -> Result<Self, Error> {
        check_identifier(&cfg.table)?;
        if cfg.rows == 0 {
            return Err(Error::invalid("rows", "must be at least 1"));
        }
        if cfg.rows > i64::MAX as u64 / 2 {
            return Err(Error::invalid("rows", format!("{} is too large", cfg.rows)));
        }
        if cfg.groups == 0 || cfg.groups > i32::MAX as u64 {
            return Err(Error::invalid(
                "groups",
                format!("{}: expected 1 to {}", cfg.groups, i32::MAX),
            ));
        }
        if !(12..=1_000_000).contains(&cfg.row_bytes) {
            return Err(Error::invalid(
                "row_bytes",
                format!(
                    "{}: expected 12 to 1000000 (8 bytes of id, 4 of col, the rest pad)",
                    cfg.row_bytes
                ),
            ));
        }
        if !(1..=1_000_000).contains(&cfg.repeat) {
            return Err(Error::invalid(
                "repeat",
                format!("{}: expected 1 to 1000000", cfg.repeat),
            ));
        }
        if cfg.into == LoadInto::Temp && cfg.sessions > 1 {
            return Err(Error::invalid(
                "into",
                format!(
                    "temp with {{sessions}} {}: a temporary table belongs to one connection on \
                     PostgreSQL and SQLite, so other sessions cannot load into it; load it with \
                     {{sessions}} 1, or load in parallel with {{into}} unlogged (one shared table, \
                     no WAL: the closest to a global temporary table)",
                    cfg.sessions
                ),
            ));
        }
        if cfg.into == LoadInto::Temp
            && dialect == Dialect::Sqlite
            && cfg.place != Placement::Default
        {
            return Err(Error::invalid(
                "into",
                "temp {place} on SQLite: SQLite puts temporary tables in memory or in \
                 SQLITE_TMPDIR (with {settings} temp_store=file); set SQLITE_TMPDIR=DIR instead",
            ));
        }
        if dialect == Dialect::Mysql && cfg.into == LoadInto::Unlogged {
            return Err(Error::invalid(
                "into",
                "unlogged on MariaDB/MySQL: InnoDB has no unlogged tables (every change goes \
                 through its redo log); use {into} logged, or {into} temp with {sessions} 1",
            ));
        }
        if dialect == Dialect::Mysql && cfg.place != Placement::Default {
            return Err(Error::invalid(
                "place",
                "is not supported on MariaDB/MySQL targets yet (InnoDB's DATA DIRECTORY is not \
                 wired up); leave it out",
            ));
        }
        Ok(BulkloadWorkload {
            cfg,
            dialect,
            shared: Arc::new((Mutex::new(Shared::default()), Condvar::new())),
            tablespace: Mutex::new(None),
            marker: Mutex::new(None),
        })
    }

    fn pad_len(&self) -> usize {
        self.cfg.row_bytes as usize - 12
    }

    fn columns(&self) -> &'static str {
        match self.dialect {
            Dialect::Sqlite => "(id INTEGER NOT NULL, col INTEGER NOT NULL, pad TEXT NOT NULL)",
            _ => "(id BIGINT NOT NULL, col INTEGER NOT NULL, pad TEXT NOT NULL)",
        }
    }
}

impl Workload for BulkloadWorkload {
    fn storage_dirs(&self) -> Vec<(String, std::path::PathBuf)> {
        match &self.cfg.place {
            place::Placement::Dir(d) => vec![(
                if self.cfg.into == LoadInto::Temp {
                    "temp"
                } else {
                    "tablespace"
                }
                .to_string(),
                d.clone(),
            )],
            place::Placement::Default => Vec::new(),
        }
    }
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn params(&self) -> BTreeMap<String, serde_json::Value> {
        BTreeMap::from([
            ("table".to_string(), self.cfg.table.clone().into()),
            ("rows".to_string(), self.cfg.rows.into()),
            ("groups".to_string(), self.cfg.groups.into()),
            ("row_bytes".to_string(), self.cfg.row_bytes.into()),
            ("into".to_string(), self.cfg.into.to_string().into()),
            ("placement".to_string(), self.cfg.place.describe().into()),
            ("repeat".to_string(), self.cfg.repeat.into()),
        ])
    }

    fn headline_event(&self) -> &'static str {
        Self::HEADLINE
    }

    fn tables(&self) -> Vec<String> {
        vec![self.cfg.table.clone()]
    }

    fn observe_steps(&self, marker: StepMarker) {
        *self.marker.lock().unwrap_or_else(PoisonError::into_inner) = Some(marker);
    }

    fn setup(
        &self,
        target: &dyn Target,
        _sessions: u32,
        _stop: &dbscope_core::StopSignal,
    ) -> TargetResult<()> {
        let mut s = target.connect()?;
        let t = &self.cfg.table;
        match self.dialect {
            Dialect::Mysql => {
                s.batch(&format!("DROP TABLE IF EXISTS {t}"))?;
                if self.cfg.into == LoadInto::Logged {
                    s.batch(&format!("CREATE TABLE {t} {}", self.columns()))?;
                }
            }
            Dialect::Postgres => {
                let ts = place::pg_tablespace(s.as_mut(), &self.cfg.place)?;
                s.batch(&format!("DROP TABLE IF EXISTS {t}"))?;
                if self.cfg.into != LoadInto::Temp {
                    let kind = if self.cfg.into == LoadInto::Unlogged {
                        "UNLOGGED "
                    } else {
                        ""
                    };
                    let ts_clause = ts
                        .as_ref()
                        .map(|n| format!(" TABLESPACE {n}"))
                        .unwrap_or_default();
                    s.batch(&format!(
                        "CREATE {kind}TABLE {t} {}{ts_clause}",
                        self.columns()
                    ))?;
                }
                *self
                    .tablespace
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = ts;
            }
            Dialect::Sqlite => {
                let prefix = place::sqlite_attach(s.as_mut(), &self.cfg.place, t)?;
                s.batch(&format!("DROP TABLE IF EXISTS {prefix}{t}"))?;
                if self.cfg.into != LoadInto::Temp {
                    s.batch(&format!("CREATE TABLE {prefix}{t} {}", self.columns()))?;
                }
            }
            Dialect::Null => {}
        }
        Ok(())
    }

    fn session(&self, session: u32, _seed: u64) -> Box<dyn SessionWork> {
        let (rows, n) = (self.cfg.rows, self.cfg.sessions as u64);
        let i = session as u64;
        Box::new(BulkSession {
            cfg: self.cfg.clone(),
            dialect: self.dialect,
            session,
            first: i * rows / n + 1,
            last: (i + 1) * rows / n,
            pad_len: self.pad_len(),
            columns: self.columns(),
            tablespace: self
                .tablespace
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
            shared: self.shared.clone(),
            marker: self
                .marker
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
            prefix: String::new(),
            arrived: false,
            rep: 0,
            finished: false,
            names: (0, 0, 0),
        })
    }

    fn counters(&self) -> Option<CounterSection> {
        let sh = self.shared.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mb = |rows: u64| rows as f64 * self.cfg.row_bytes as f64 / 1e6;
        let rows = sh
            .steps
            .iter()
            .map(|st| {
                vec![
                    CounterValue::Text(st.step.clone()),
                    CounterValue::count(st.rows),
                    CounterValue::Float(st.seconds),
                    CounterValue::float((st.seconds > 0.0).then(|| st.rows as f64 / st.seconds)),
                    CounterValue::float((st.seconds > 0.0).then(|| mb(st.rows) / st.seconds)),
                ]
            })
            .collect();
        // Blocks read/hit, temp and WAL bytes per step are the step snapshots' deltas (the
        // report's Database and OS section, "Counters per step").
        Some(CounterSection {
            key: "bulkload".into(),
            title: "bulkload: steps (MB = rows × --row-bytes)".into(),
            final_counts: true,
            counters: vec![
                Counter::new(
                    "rows_loaded",
                    "rows loaded",
                    CounterValue::count(sh.loaded),
                    "rows",
                ),
                Counter::new(
                    "groups",
                    "groups generated",
                    CounterValue::count(self.cfg.groups.min(self.cfg.rows)),
                    "",
                ),
                Counter::new(
                    "check",
                    "GROUP BY answer",
                    CounterValue::Text(sh.checked.clone().unwrap_or_else(|| "not run".into())),
                    "",
                ),
            ],
            tables: vec![CounterTable {
                key: "steps".into(),
                title: "steps".into(),
                columns: vec![
                    Column::new("step", "step", ""),
                    Column::new("rows", "rows", ""),
                    Column::new("seconds", "time", "s").decimals(3),
                    Column::new("rows_per_s", "rows/s", "").decimals(0),
                    Column::new("mb_per_s", "MB/s", "").decimals(1),
                ],
                rows,
            }],
            notes: Vec::new(),
        })
    }
}

struct BulkSession {
    cfg: BulkloadConfig,
    dialect: Dialect,
    session: u32,
    /// First and last id this session loads.
    first: u64,
    last: u64,
    pad_len: usize,
    columns: &'static str,
    tablespace: Option<String>,
    shared: Arc<(Mutex<Shared>, Condvar)>,
    marker: Option<StepMarker>,
    prefix: String,
    /// Arrived in the current repetition.
    arrived: bool,
    /// Repetitions started.
    rep: u64,
    /// Nothing more to do: every repetition done, or the run stopped.
    finished: bool,
    names: (NameId, NameId, NameId),
}

impl BulkSession {
    /// This session's part of the step is over: its statistics go where the step's snapshot
    /// will read them.
    fn settle(&self, sess: &mut dyn Session) {
        if let Some(m) = &self.marker {
            m.settle(self.session, sess);
        }
    }

    /// Every session is done with step `name`: its snapshot is taken.
    fn boundary(&self, name: &str) {
        if let Some(m) = &self.marker {
            m.boundary(name);
        }
    }

    /// Says this session's load of the current repetition is over (done or failed), once.
    fn arrive(&mut self, rows: u64) {
        if self.arrived {
            return;
        }
        self.arrived = true;
        let (m, cv) = &*self.shared;
        let mut sh = m.lock().unwrap_or_else(PoisonError::into_inner);
        sh.arrived += 1;
        sh.loaded += rows;
        cv.notify_all();
    }

    /// Stops the other sessions (a failed repetition): none waits for a table that will not be
    /// ready.
    fn stop_all(&self) {
        let (m, cv) = &*self.shared;
        m.lock().unwrap_or_else(PoisonError::into_inner).stopped = true;
        cv.notify_all();
    }

    /// Session 0, after a repetition's GROUP BYs: empties the table for the next one and lets
    /// the sessions load it.
    fn next_repetition(&mut self, sess: &mut dyn Session) -> TargetResult<()> {
        let t = format!("{}{}", self.prefix, self.cfg.table);
        match self.dialect {
            Dialect::Postgres | Dialect::Mysql => sess.batch(&format!("TRUNCATE {t}"))?,
            Dialect::Sqlite => sess.batch(&format!("DELETE FROM {t}"))?,
            Dialect::Null => {}
        }
        let (m, cv) = &*self.shared;
        let mut sh = m.lock().unwrap_or_else(PoisonError::into_inner);
        sh.arrived = 0;
        sh.loaded = 0;
        sh.ready = self.rep;
        cv.notify_all();
        Ok(())
    }

    fn load(&mut self, sess: &mut dyn Session) -> TargetResult<u64> {
        let t = format!("{}{}", self.prefix, self.cfg.table);
        let (first, last, groups) = (self.first, self.last, self.cfg.groups);
        let src = place::pad_source(self.pad_len, 2);
        let pad = self.pad_len;
        let pad_of = |id: u64| {
            let off = (id as usize).wrapping_mul(7919) % (src.len() - pad);
            &src[off..off + pad]
        };
        // The rows in COPY's text format, which is also LOAD DATA's default.
        let mut next = first;
        let mut col = (first - 1) % groups;
        let mut int = itoa::Buffer::new();
        let mut fill = |buf: &mut Vec<u8>| {
            // Blocks of 256 KiB: the server parses one while the next is made.
            while next <= last && buf.len() < (256 << 10) {
                buf.extend_from_slice(int.format(next).as_bytes());
                buf.push(b'\t');
                buf.extend_from_slice(int.format(col).as_bytes());
                buf.push(b'\t');
                buf.extend_from_slice(pad_of(next));
                buf.push(b'\n');
                next += 1;
                col += 1;
                if col == groups {
                    col = 0;
                }
            }
            Ok(next <= last)
        };
        match self.dialect {
            Dialect::Postgres => {
                sess.copy_in(&format!("COPY {t} (id, col, pad) FROM STDIN"), &mut fill)
            }
            Dialect::Mysql => {
                // One transaction: LOAD DATA runs in chunks, all or nothing together.
                sess.begin()?;
                let loaded = sess
                    .copy_in(
                        &format!(
                            "LOAD DATA LOCAL INFILE 'dbscope-{}' INTO TABLE {t} \
                             CHARACTER SET utf8mb4 (id, col, pad)",
                            self.cfg.table
                        ),
                        &mut fill,
                    )
                    .and_then(|n| sess.commit().map(|()| n));
                if loaded.is_err() {
                    let _ = sess.rollback();
                }
                loaded
            }
            _ => {
                sess.begin()?;
                let ins = sess.prepare(&format!(
                    "INSERT INTO {t} (id, col, pad) VALUES (?1, ?2, ?3)"
                ))?;
                for id in first..=last {
                    let text = String::from_utf8_lossy(pad_of(id)).into_owned();
                    sess.execute(
                        ins,
                        &[
                            Param::Int(id as i64),
                            Param::Int(((id - 1) % groups) as i64),
                            Param::Text(text),
                        ],
                    )?;
                }
                sess.commit()?;
                Ok(last + 1 - first)
            }
        }
    }

    /// Runs the GROUP BY and checks every group's count against what was generated.
    fn group_by(&self, sess: &mut dyn Session) -> TargetResult<u64> {
        let t = format!("{}{}", self.prefix, self.cfg.table);
        let rows = sess.query_rows(&format!("SELECT col, count(*) FROM {t} GROUP BY col"), &[])?;
        let (n, g) = (self.cfg.rows, self.cfg.groups);
        let expect = |col: u64| n / g + u64::from(col < n % g);
        let mut total = 0u64;
        let mut seen = std::collections::HashSet::new();
        for r in &rows {
            let num = |i: usize| -> Option<u64> { r.get(i)?.as_ref()?.parse().ok() };
            let (Some(col), Some(count)) = (num(0), num(1)) else {
                return Err(check_error(format!(
                    "GROUP BY returned an unreadable row {r:?}"
                )));
            };
            if col >= g || !seen.insert(col) || count != expect(col) {
                return Err(check_error(format!(
                    "GROUP BY returned col {col} with count {count}; generated: col 0..{g} once \
                     each, col {col} with {} rows",
                    if col < g { expect(col) } else { 0 }
                )));
            }
            total += count;
        }
        let want_groups = g.min(n);
        if rows.len() as u64 != want_groups || total != n {
            return Err(check_error(format!(
                "GROUP BY returned {} groups summing to {total} rows; generated {want_groups} \
                 groups of {n} rows",
                rows.len()
            )));
        }
        Ok(rows.len() as u64)
    }
}

fn check_error(message: String) -> TargetError {
    TargetError {
        class: "check:groupby".into(),
        sqlstate: None,
        mysql_code: None,
        message: format!("wrong result: {message}"),
        connection_lost: false,
    }
}

impl Drop for BulkSession {
    fn drop(&mut self) {
        // A session that leaves before its last repetition (prepare failed, the run stopped)
        // must not keep session 0 waiting for its loads, nor session 0 the others for a table.
        if self.finished && self.rep >= self.cfg.repeat {
            return;
        }
        let (m, cv) = &*self.shared;
        let mut sh = m.lock().unwrap_or_else(PoisonError::into_inner);
        // Its current repetition is missed unless it already arrived in it.
        let missed = if self.arrived {
            self.rep
        } else {
            self.rep.saturating_sub(1)
        };
        sh.gone_from.push(missed);
        if self.session == 0 {
            sh.stopped = true;
        }
        cv.notify_all();
    }
}

impl SessionWork for BulkSession {
    fn prepare(&mut self, sess: &mut dyn Session, rec: &Recorder) -> TargetResult<()> {
        let t = &self.cfg.table;
        self.names = (rec.name("load"), rec.name("groupby1"), rec.name("groupby2"));
        match self.dialect {
            Dialect::Sqlite => {
                self.prefix = place::sqlite_attach(sess, &self.cfg.place, t)?;
                if self.cfg.into == LoadInto::Unlogged {
                    let schema = if self.prefix.is_empty() {
                        "main"
                    } else {
                        place::SQLITE_PLACE_SCHEMA
                    };
                    sess.batch(&format!(
                        "PRAGMA {schema}.journal_mode = OFF; PRAGMA {schema}.synchronous = OFF"
                    ))?;
                }
                if self.cfg.into == LoadInto::Temp {
                    sess.batch(&format!(
                        "CREATE TEMP TABLE IF NOT EXISTS {t} {}",
                        self.columns
                    ))?;
                }
            }
            Dialect::Mysql if self.cfg.into == LoadInto::Temp => {
                sess.batch(&format!(
                    "CREATE TEMPORARY TABLE IF NOT EXISTS {t} {}",
                    self.columns
                ))?;
            }
            Dialect::Postgres if self.cfg.into == LoadInto::Temp => {
                if let Some(ts) = &self.tablespace {
                    sess.batch(&format!("SET temp_tablespaces = {ts}"))?;
                }
                sess.batch(&format!(
                    "CREATE TEMP TABLE IF NOT EXISTS {t} {}",
                    self.columns
                ))?;
            }
            _ => {}
        }
        Ok(())
    }

    fn finished(&self) -> bool {
        self.finished
    }

    /// Session 0's GROUP BY (the same text for both group-by steps, so under `groupby1`), once it
    /// ran; the load is COPY (PostgreSQL) or a row-by-row INSERT without a plan (SQLite).
    fn statements(&self) -> Vec<super::Statement> {
        if self.session != 0 || self.rep == 0 {
            return Vec::new();
        }
        vec![super::Statement {
            event: "groupby1".into(),
            sql: format!(
                "SELECT col, count(*) FROM {}{} GROUP BY col",
                self.prefix, self.cfg.table
            ),
            params: Vec::new(),
        }]
    }

    fn step(&mut self, sess: &mut dyn Session, rec: &mut Recorder) -> Result<(), TargetError> {
        if self.finished {
            return Ok(());
        }
        // Wait until the table is ready for this repetition (session 0 empties it between).
        let rep = self.rep;
        {
            let (m, cv) = &*self.shared;
            let mut sh = m.lock().unwrap_or_else(PoisonError::into_inner);
            while sh.ready < rep && !sh.stopped {
                sh = cv.wait(sh).unwrap_or_else(PoisonError::into_inner);
            }
            if sh.ready < rep {
                self.finished = true;
                return Ok(());
            }
        }
        self.rep += 1;
        self.arrived = false;
        self.finished = self.rep >= self.cfg.repeat;
        let (load, g1, g2) = self.names;
        let t0 = rec.now();
        let loaded = super::work::timed(rec, load, t0, || self.load(sess), |&n| Ok(n)).0;
        self.settle(sess);
        let loaded = match loaded {
            Ok(n) => n,
            Err(e) => {
                self.arrive(0);
                return Err(e);
            }
        };
        self.arrive(loaded);
        if self.session != 0 {
            return Ok(());
        }
        // Session 0 waits for every load, records the parallel load's span, then aggregates.
        let (m, cv) = &*self.shared;
        let mut sh = m.lock().unwrap_or_else(PoisonError::into_inner);
        while sh.accounted(rep) < self.cfg.sessions {
            sh = cv.wait(sh).unwrap_or_else(PoisonError::into_inner);
        }
        let all_loaded = sh.loaded;
        let load_end = rec.now();
        let label = |step: String| {
            if self.cfg.repeat > 1 {
                format!("{step}, repetition {}", rep + 1)
            } else {
                step
            }
        };
        // The same name whatever the sessions, so two runs' steps line up in `compare`
        // (the sessions are in the manifest).
        let step = label("load".to_string());
        sh.steps.push(StepResult {
            step: step.clone(),
            rows: all_loaded,
            seconds: (load_end - t0) as f64 / 1e9,
        });
        drop(sh);
        // Every session has loaded and settled: the load's snapshot.
        self.boundary(&step);
        if all_loaded != self.cfg.rows {
            let e = check_error(format!(
                "{all_loaded} rows loaded of {} (a session's load failed)",
                self.cfg.rows
            ));
            rec.error(g1, load_end, load_end, &e.class);
            self.stop_all();
            return Err(e);
        }
        for (i, name) in [g1, g2].into_iter().enumerate() {
            let a = rec.now();
            let (result, b) =
                super::work::timed(rec, name, a, || self.group_by(sess), |&groups| Ok(groups));
            let step = label(format!("group by #{}", i + 1));
            self.settle(sess);
            self.boundary(&step);
            match result {
                Ok(groups) => {
                    let mut sh = m.lock().unwrap_or_else(PoisonError::into_inner);
                    sh.steps.push(StepResult {
                        step,
                        rows: all_loaded,
                        seconds: (b - a) as f64 / 1e9,
                    });
                    sh.checked = Some(format!("ok: {groups} groups, counts sum to {all_loaded}"));
                }
                Err(e) => {
                    m.lock().unwrap_or_else(PoisonError::into_inner).checked =
                        Some(e.message.clone());
                    self.stop_all();
                    return Err(e);
                }
            }
        }
        if !self.finished {
            if let Err(e) = self.next_repetition(sess) {
                self.stop_all();
                return Err(e);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> BulkloadConfig {
        BulkloadConfig {
            table: "b".into(),
            rows: 100,
            groups: 7,
            row_bytes: 16,
            into: LoadInto::Logged,
            place: Placement::Default,
            sessions: 2,
            repeat: 1,
        }
    }

    #[test]
    fn options_are_checked() {
        assert!(BulkloadWorkload::new(cfg(), Dialect::Sqlite).is_ok());
        let e = |c: BulkloadConfig| {
            crate::error::as_flags(&BulkloadWorkload::new(c, Dialect::Postgres).err().unwrap())
        };
        assert!(e(BulkloadConfig { rows: 0, ..cfg() }).contains("--rows"));
        assert!(e(BulkloadConfig { groups: 0, ..cfg() }).contains("--groups 0"));
        assert!(e(BulkloadConfig {
            row_bytes: 11,
            ..cfg()
        })
        .contains("--row-bytes 11"));
        assert!(e(BulkloadConfig {
            into: LoadInto::Temp,
            ..cfg()
        })
        .contains("--into unlogged"));
        assert!("global".parse::<LoadInto>().is_err());
        assert!(e(BulkloadConfig { repeat: 0, ..cfg() }).contains("--repeat 0"));
    }
}
