//! The `lookup` workload (seed 001's cached vs placed primary-key lookups): one table of `--rows`
//! keys filled once (COPY on PostgreSQL, LOAD DATA LOCAL INFILE on MariaDB/MySQL, one transaction
//! on SQLite) and reused while its shape
//! matches; each session looks up seeded keys, uniform or Zipf-distributed, one event per lookup.
//! Placement (`--tablespace-dir`) and cache state (`--cache cold|warm`) are the experiment's knobs.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use dbscope_core::counters::{Counter, CounterSection, CounterValue};
use dbscope_core::{NameId, Recorder, StopSignal};

use super::keys::KeyGen;
use super::place::{self, Found, Placement, Shape};
use super::restart;
use super::work::{check_identifier, SessionWork, Workload};
use crate::error::Error;
use dbscope_db::{Dialect, Param, Session, StmtId, Target, TargetError, TargetResult};

pub use super::keys::KeyDist;

/// Cache state before the lookups start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheState {
    /// Empty what dbscope can (and say what it could not).
    Cold,
    /// Read everything once first.
    Warm,
}

impl FromStr for CacheState {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "cold" => Ok(CacheState::Cold),
            "warm" => Ok(CacheState::Warm),
            _ => Err(Error::invalid(
                "cache",
                format!("{s:?}: expected `cold` or `warm`"),
            )),
        }
    }
}

/// The lookup workload's options.
#[derive(Clone, Debug)]
pub struct LookupConfig {
    /// Table name.
    pub table: String,
    /// Rows (keys 1..=rows).
    pub rows: u64,
    /// Bytes of user data per row: the 8-byte id plus a text pad of `row_bytes - 8`.
    pub row_bytes: u32,
    /// Key distribution.
    pub dist: KeyDist,
    /// Where the table lives.
    pub place: Placement,
    /// Cache state before the lookups.
    pub cache: CacheState,
    /// `--cache cold` on PostgreSQL: a shell command that restarts the server (empties
    /// shared_buffers).
    pub restart_cmd: Option<String>,
    /// How long `restart_cmd` may take, until the server accepts connections again; at the limit
    /// its process group is ended and the run fails ([`DEFAULT_RESTART_TIMEOUT`] by default).
    pub restart_timeout: Duration,
    /// Drop and refill the table first.
    pub fresh: bool,
}

/// How long a `--restart-cmd` may take by default, until the server accepts connections again.
pub const DEFAULT_RESTART_TIMEOUT: Duration = Duration::from_secs(60);

/// The lookup workload.
pub struct LookupWorkload {
    cfg: LookupConfig,
    dialect: Dialect,
    /// What setup did and found (created or reused, what the cache step could and could not do).
    notes: Mutex<Vec<String>>,
    fill_s: Mutex<Option<f64>>,
}

impl LookupWorkload {
    /// The name runs record ([`Workload::name`]).
    pub const NAME: &'static str = "lookup";
    /// The headline event ([`Workload::headline_event`]).
    pub const HEADLINE: &'static str = "lookup";

    /// Checks the options.
    pub fn new(cfg: LookupConfig, dialect: Dialect) -> Result<Self, Error> {
        check_identifier(&cfg.table)?;
        if cfg.rows == 0 {
            return Err(Error::invalid(
                "rows",
                "must be at least 1 (the table's keys are 1..=rows)",
            ));
        }
        if cfg.rows > i64::MAX as u64 / 2 {
            return Err(Error::invalid("rows", format!("{} is too large", cfg.rows)));
        }
        if cfg.restart_cmd.is_some()
            && (cfg.cache != CacheState::Cold || dialect != Dialect::Postgres)
        {
            return Err(Error::invalid(
                "restart_cmd",
                "empties PostgreSQL's shared_buffers for {cache} cold: it needs a PostgreSQL \
                 target and {cache} cold",
            ));
        }
        if cfg.restart_timeout.is_zero() {
            return Err(Error::invalid(
                "restart_timeout",
                "must be more than 0 (the time the restart may take)",
            ));
        }
        if !(9..=1_000_000).contains(&cfg.row_bytes) {
            return Err(Error::invalid(
                "row_bytes",
                format!(
                    "{}: expected 9 to 1000000 (8 bytes of id plus at least 1 of pad)",
                    cfg.row_bytes
                ),
            ));
        }
        Ok(LookupWorkload {
            cfg,
            dialect,
            notes: Mutex::new(Vec::new()),
            fill_s: Mutex::new(None),
        })
    }

    fn shape(&self) -> String {
        format!(
            "rows={} row_bytes={} place={}",
            self.cfg.rows,
            self.cfg.row_bytes,
            self.cfg.place.describe()
        )
    }

    fn note(&self, s: String) {
        self.notes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(s);
    }

    fn notes(&self) -> Vec<String> {
        self.notes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn pad_len(&self) -> usize {
        self.cfg.row_bytes as usize - 8
    }

    /// The pad's column type on MariaDB/MySQL: a VARCHAR where the row allows one (in any
    /// character set: 4 bytes a character at most, within InnoDB's 65,535-byte row), as
    /// sysbench's `c CHAR(120)` is a plain column. A TEXT column is a BLOB to the server, which
    /// copies it into a buffer of its own on every row read: about 7 % more server CPU a point
    /// select at 188-byte rows (docs/targets.md). Longer pads are MEDIUMTEXT.
    fn mysql_pad_type(&self) -> String {
        match self.pad_len() {
            n if n <= 16_380 => format!("VARCHAR({n})"),
            _ => "MEDIUMTEXT".to_string(),
        }
    }

    fn setup_pg(&self, s: &mut dyn Session) -> TargetResult<()> {
        let t = &self.cfg.table;
        let ts = place::pg_tablespace(s, &self.cfg.place)?;
        if self.cfg.fresh {
            s.batch(&format!("DROP TABLE IF EXISTS {t}"))?;
        }
        let shape = Shape {
            prefix: "",
            table: t,
            want: self.shape(),
        };
        if shape.check(s, Dialect::Postgres)? == Found::Same {
            self.note(format!("table {t} reused ({})", shape.want));
        } else {
            let started = std::time::Instant::now();
            let (ts_table, ts_index) = match &ts {
                Some(n) => (
                    format!(" TABLESPACE {n}"),
                    format!(" USING INDEX TABLESPACE {n}"),
                ),
                None => (String::new(), String::new()),
            };
            s.batch("BEGIN")?;
            let filled = (|| {
                s.batch(&format!(
                    "CREATE TABLE {t} (id BIGINT NOT NULL, pad TEXT NOT NULL){ts_table}"
                ))?;
                let src = place::pad_source(self.pad_len(), 1);
                let (rows, pad) = (self.cfg.rows, self.pad_len());
                let mut next = 1u64;
                let n = s.copy_in(&format!("COPY {t} (id, pad) FROM STDIN"), &mut |buf| {
                    use std::io::Write;
                    while next <= rows && buf.len() < (1 << 20) {
                        let off = (next as usize).wrapping_mul(7919) % (src.len() - pad);
                        let _ = write!(buf, "{next}\t");
                        buf.extend_from_slice(&src[off..off + pad]);
                        buf.push(b'\n');
                        next += 1;
                    }
                    Ok(next <= rows)
                })?;
                if n != rows {
                    return Err(TargetError::config(format!(
                        "COPY loaded {n} rows into {t}, expected {rows}"
                    )));
                }
                s.batch(&format!(
                    "ALTER TABLE {t} ADD CONSTRAINT {t}_pkey PRIMARY KEY (id){ts_index}"
                ))?;
                shape.record(s, Dialect::Postgres)?;
                s.batch("COMMIT")
            })();
            if let Err(e) = filled {
                let _ = s.batch("ROLLBACK");
                return Err(e);
            }
            // Hint bits and the visibility map set now, so the lookups do not write.
            s.batch(&format!("VACUUM ANALYZE {t}"))?;
            *self.fill_s.lock().unwrap_or_else(PoisonError::into_inner) =
                Some(started.elapsed().as_secs_f64());
            self.note(format!(
                "table {t} created and filled by COPY ({}){}",
                shape.want,
                ts.as_ref()
                    .map(|n| format!(", in tablespace {n}"))
                    .unwrap_or_default()
            ));
        }
        let rels = [t.clone(), format!("{t}_pkey")];
        match self.cfg.cache {
            CacheState::Warm => {
                let prewarm = s
                    .batch("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
                    .and_then(|()| {
                        s.query_rows(
                            "SELECT pg_prewarm($1::regclass), pg_prewarm($2::regclass)",
                            &[Param::Text(rels[0].clone()), Param::Text(rels[1].clone())],
                        )
                    });
                match prewarm {
                    Ok(r) => {
                        let blocks = r.first().cloned().unwrap_or_default();
                        self.note(format!(
                            "warm: pg_prewarm read {} blocks of {} and {} of {} into shared_buffers",
                            blocks.first().cloned().flatten().unwrap_or_default(),
                            rels[0],
                            blocks.get(1).cloned().flatten().unwrap_or_default(),
                            rels[1]
                        ));
                    }
                    Err(e) => {
                        s.query_rows(&format!("SELECT count(*), sum(length(pad)) FROM {t}"), &[])?;
                        self.note(format!(
                            "warm: pg_prewarm unavailable ({}); a sequential scan read the table \
                             (a table over a quarter of shared_buffers passes through a small ring \
                             buffer, so it stays mostly in the OS cache), the index was not read",
                            e.message
                        ));
                    }
                }
            }
            CacheState::Cold if self.cfg.restart_cmd.is_some() => {} // after the restart
            CacheState::Cold => {
                for n in place::pg_make_cold(s, &rels, false) {
                    self.note(format!("cold: {n}"));
                }
                self.note(
                    "cold: sessions connect anew (no session state or plans carried over)".into(),
                );
            }
        }
        Ok(())
    }

    /// `--restart-cmd`: restarts the server (the setup session is gone with it), waits until it
    /// accepts connections again, then empties the OS page cache of the table's files. The command
    /// is done when it exits (not when its output closes: a server it started may hold it); the
    /// whole restart has `restart_timeout`, at which the command's process group is ended; a stop
    /// (Ctrl-C) ends it too and returns, noted, for the runner to record the stopped run.
    fn restart_pg(&self, target: &dyn Target, cmd: &str, stop: &StopSignal) -> TargetResult<()> {
        let limit = self.cfg.restart_timeout;
        let secs = limit.as_secs_f64();
        let started = std::time::Instant::now();
        let r = restart::run(cmd, limit, stop)
            .map_err(|e| TargetError::config(format!("--restart-cmd: cannot run sh: {e}")))?;
        let said = |tail: &[String]| match tail.is_empty() {
            true => String::new(),
            false => format!(": {}", tail.join(" / ")),
        };
        match r.ended {
            restart::Ended::Exited { status, .. } if !status.success() => {
                return Err(TargetError::config(format!(
                    "--restart-cmd {cmd:?} failed ({status}){}",
                    said(&r.tail)
                )));
            }
            restart::Ended::Exited { left_running, .. } => {
                if left_running {
                    self.note(format!(
                        "cold: --restart-cmd {cmd:?} left processes running (the server it \
                         started?): their output goes to a discarded file (pg_ctl -l FILE keeps \
                         the server's log)"
                    ));
                }
            }
            restart::Ended::TimedOut => {
                return Err(TargetError::config(format!(
                    "--restart-cmd {cmd:?} did not finish within {secs} s (--restart-timeout): \
                     its process group was ended (SIGTERM, then SIGKILL){}",
                    said(&r.tail)
                )));
            }
            restart::Ended::Stopped => {
                self.note(format!(
                    "cold: --restart-cmd {cmd:?} stopped by the user after {:.1} s: its process \
                     group was ended (SIGTERM, then SIGKILL); the server may be down",
                    r.elapsed.as_secs_f64()
                ));
                return Ok(());
            }
        }
        let mut s = loop {
            match target.connect() {
                Ok(s) => break s,
                Err(_) if stop.is_set() => {
                    self.note(format!(
                        "cold: stopped by the user while waiting for the server after \
                         --restart-cmd {cmd:?}"
                    ));
                    return Ok(());
                }
                Err(_) if started.elapsed() < limit => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(e) => {
                    return Err(TargetError::config(format!(
                        "--restart-cmd {cmd:?} ran, but the server does not accept connections \
                         {secs} s after it started (--restart-timeout): {}",
                        e.message
                    )))
                }
            }
        };
        self.note(format!(
            "cold: server restarted by --restart-cmd {cmd:?} in {:.1} s (shared_buffers emptied)",
            started.elapsed().as_secs_f64()
        ));
        let t = &self.cfg.table;
        let rels = [t.clone(), format!("{t}_pkey")];
        for n in place::pg_make_cold(s.as_mut(), &rels, true) {
            self.note(format!("cold: {n}"));
        }
        self.note("cold: sessions connect anew (no session state or plans carried over)".into());
        Ok(())
    }

    /// MariaDB/MySQL: an InnoDB (the default engine's) table filled by `LOAD DATA LOCAL INFILE`
    /// in one transaction, in primary-key order.
    fn setup_my(&self, s: &mut dyn Session) -> TargetResult<()> {
        let t = &self.cfg.table;
        if let Placement::Dir(d) = &self.cfg.place {
            return Err(TargetError::config(format!(
                "--tablespace-dir {}: not supported on MariaDB/MySQL targets yet (InnoDB's \
                 DATA DIRECTORY is not wired up); leave it out",
                d.display()
            )));
        }
        if self.cfg.fresh {
            s.batch(&format!("DROP TABLE IF EXISTS {t}"))?;
        }
        let pad_type = self.mysql_pad_type();
        let shape = Shape {
            prefix: "",
            table: t,
            // The column type is part of the shape: a table made as TEXT by an older build is
            // not silently reused for a comparison with this layout.
            want: format!("{} pad={pad_type}", self.shape()),
        };
        if shape.check(s, Dialect::Mysql)? == Found::Same {
            self.note(format!("table {t} reused ({})", shape.want));
        } else {
            let started = std::time::Instant::now();
            // CREATE TABLE commits by itself: made before the fill's transaction, so an
            // interrupted fill leaves a table without a recorded shape (refused next time).
            s.batch(&format!(
                "CREATE TABLE {t} (id BIGINT NOT NULL PRIMARY KEY, pad {pad_type} NOT NULL)"
            ))?;
            s.begin()?;
            let filled = (|| {
                let src = place::pad_source(self.pad_len(), 1);
                let (rows, pad) = (self.cfg.rows, self.pad_len());
                let mut next = 1u64;
                let n = s.copy_in(
                    &format!(
                        "LOAD DATA LOCAL INFILE 'dbscope-{t}' INTO TABLE {t} \
                         CHARACTER SET utf8mb4 (id, pad)"
                    ),
                    &mut |buf| {
                        use std::io::Write;
                        while next <= rows && buf.len() < (1 << 20) {
                            let off = (next as usize).wrapping_mul(7919) % (src.len() - pad);
                            let _ = write!(buf, "{next}\t");
                            buf.extend_from_slice(&src[off..off + pad]);
                            buf.push(b'\n');
                            next += 1;
                        }
                        Ok(next <= rows)
                    },
                )?;
                if n != rows {
                    return Err(TargetError::config(format!(
                        "LOAD DATA loaded {n} rows into {t}, expected {rows}"
                    )));
                }
                shape.record(s, Dialect::Mysql)?;
                s.commit()
            })();
            if let Err(e) = filled {
                let _ = s.rollback();
                return Err(e);
            }
            s.query_rows(&format!("ANALYZE TABLE {t}"), &[])?;
            *self.fill_s.lock().unwrap_or_else(PoisonError::into_inner) =
                Some(started.elapsed().as_secs_f64());
            self.note(format!(
                "table {t} created and filled by LOAD DATA LOCAL INFILE ({})",
                shape.want
            ));
        }
        match self.cfg.cache {
            CacheState::Warm => {
                s.query_rows(&format!("SELECT count(*), sum(length(pad)) FROM {t}"), &[])?;
                self.note(
                    "warm: a full scan read the table (its clustered index) into the InnoDB \
                     buffer pool (innodb_buffer_pool_size decides how much of it stays)"
                        .into(),
                );
            }
            CacheState::Cold => {
                for n in place::my_make_cold(s, t) {
                    self.note(format!("cold: {n}"));
                }
            }
        }
        Ok(())
    }

    fn setup_sqlite(&self, s: &mut dyn Session) -> TargetResult<()> {
        let t = &self.cfg.table;
        let prefix = place::sqlite_attach(s, &self.cfg.place, t)?;
        if self.cfg.fresh {
            s.batch(&format!("DROP TABLE IF EXISTS {prefix}{t}"))?;
        }
        let shape = Shape {
            prefix: &prefix,
            table: t,
            want: self.shape(),
        };
        if shape.check(s, Dialect::Sqlite)? == Found::Same {
            self.note(format!("table {t} reused ({})", shape.want));
        } else {
            let started = std::time::Instant::now();
            s.begin()?;
            let filled = (|| {
                s.batch(&format!(
                    "CREATE TABLE {prefix}{t} (id INTEGER PRIMARY KEY, pad TEXT NOT NULL)"
                ))?;
                let ins = s.prepare(&format!(
                    "INSERT INTO {prefix}{t} (id, pad) VALUES (?1, ?2)"
                ))?;
                let src = place::pad_source(self.pad_len(), 1);
                let pad = self.pad_len();
                for id in 1..=self.cfg.rows {
                    let off = (id as usize).wrapping_mul(7919) % (src.len() - pad);
                    let text = String::from_utf8_lossy(&src[off..off + pad]).into_owned();
                    s.execute(ins, &[Param::Int(id as i64), Param::Text(text)])?;
                }
                shape.record(s, Dialect::Sqlite)?;
                s.commit()
            })();
            if let Err(e) = filled {
                let _ = s.rollback();
                return Err(e);
            }
            *self.fill_s.lock().unwrap_or_else(PoisonError::into_inner) =
                Some(started.elapsed().as_secs_f64());
            self.note(format!(
                "table {t} created and filled in one transaction ({})",
                shape.want
            ));
        }
        let schema = if prefix.is_empty() {
            "main"
        } else {
            place::SQLITE_PLACE_SCHEMA
        };
        let file = place::sqlite_file_of(s, schema)?;
        match self.cfg.cache {
            CacheState::Warm => {
                s.query_rows(
                    &format!("SELECT count(*), sum(length(pad)) FROM {prefix}{t}"),
                    &[],
                )?;
                self.note(
                    "warm: setup read the whole table (OS page cache); each session reads it \
                     once more before its first lookup, into its own page cache (cache_size \
                     decides how much of it stays: --set cache_size=-KIB)"
                        .into(),
                );
            }
            CacheState::Cold => match file {
                Some(f) => {
                    for n in place::sqlite_make_cold(&f) {
                        self.note(format!("cold: {n}"));
                    }
                }
                None => self.note("cold: an in-memory database has no file cache to empty".into()),
            },
        }
        Ok(())
    }
}

impl Workload for LookupWorkload {
    fn storage_dirs(&self) -> Vec<(String, std::path::PathBuf)> {
        match &self.cfg.place {
            place::Placement::Dir(d) => vec![("tablespace".to_string(), d.clone())],
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
            ("row_bytes".to_string(), self.cfg.row_bytes.into()),
            ("dist".to_string(), self.cfg.dist.to_string().into()),
            ("placement".to_string(), self.cfg.place.describe().into()),
            (
                "cache".to_string(),
                match self.cfg.cache {
                    CacheState::Cold => "cold",
                    CacheState::Warm => "warm",
                }
                .into(),
            ),
            ("fresh".to_string(), self.cfg.fresh.into()),
            (
                "restart_cmd".to_string(),
                self.cfg
                    .restart_cmd
                    .clone()
                    .map_or(serde_json::Value::Null, Into::into),
            ),
            (
                "restart_timeout_s".to_string(),
                match self.cfg.restart_cmd {
                    Some(_) => self.cfg.restart_timeout.as_secs_f64().into(),
                    None => serde_json::Value::Null,
                },
            ),
            ("setup".to_string(), self.notes().into()),
        ])
    }

    fn headline_event(&self) -> &'static str {
        Self::HEADLINE
    }

    fn tables(&self) -> Vec<String> {
        vec![self.cfg.table.clone()]
    }

    fn setup(&self, target: &dyn Target, _sessions: u32, stop: &StopSignal) -> TargetResult<()> {
        let mut s = target.connect()?;
        match self.dialect {
            Dialect::Postgres => {
                self.setup_pg(s.as_mut())?;
                match (&self.cfg.restart_cmd, self.cfg.cache) {
                    (Some(cmd), CacheState::Cold) => {
                        drop(s);
                        self.restart_pg(target, cmd, stop)
                    }
                    _ => Ok(()),
                }
            }
            Dialect::Sqlite => self.setup_sqlite(s.as_mut()),
            Dialect::Null => Ok(()),
            Dialect::Mysql => self.setup_my(s.as_mut()),
        }
    }

    fn session(&self, _session: u32, seed: u64) -> Box<dyn SessionWork> {
        Box::new(LookupSession {
            table: self.cfg.table.clone(),
            place: self.cfg.place.clone(),
            dialect: self.dialect,
            warm: self.cfg.cache == CacheState::Warm,
            keys: KeyGen::new(self.cfg.dist, self.cfg.rows, seed),
            stmt: None,
            sql: String::new(),
            last_key: None,
            name: 0,
        })
    }

    fn counters(&self) -> Option<CounterSection> {
        // The buffer hits and reads of the table and its index during the run are the snapshots'
        // (pg_statio_user_tables of `tables`, sqlite3_db_status): the report's Database and OS.
        let mut counters = vec![Counter::new(
            "placement",
            "placement",
            CounterValue::Text(self.cfg.place.describe()),
            "",
        )];
        counters.splice(
            0..0,
            super::work::table_shape_counters(self.cfg.rows, self.cfg.row_bytes as u64),
        );
        if let Some(s) = *self.fill_s.lock().unwrap_or_else(PoisonError::into_inner) {
            counters
                .push(Counter::new("fill_s", "fill time", CounterValue::Float(s), "s").decimals(3));
            counters.push(
                Counter::new(
                    "fill_rows_per_s",
                    "fill rate",
                    CounterValue::float((s > 0.0).then(|| self.cfg.rows as f64 / s)),
                    "rows/s",
                )
                .decimals(0),
            );
        }
        Some(CounterSection {
            key: "lookup".into(),
            title: "lookup: table and cache state".into(),
            final_counts: true,
            counters,
            tables: Vec::new(),
            notes: self.notes(),
        })
    }
}

struct LookupSession {
    table: String,
    place: Placement,
    dialect: Dialect,
    warm: bool,
    keys: KeyGen,
    stmt: Option<StmtId>,
    /// The lookup's text on this connection (`--explain`).
    sql: String,
    /// The key looked up last (`--explain` explains with it).
    last_key: Option<u64>,
    name: NameId,
}

impl SessionWork for LookupSession {
    fn prepare(&mut self, sess: &mut dyn Session, rec: &Recorder) -> TargetResult<()> {
        let t = &self.table;
        let prefix = if self.dialect == Dialect::Sqlite {
            let prefix = place::sqlite_attach(sess, &self.place, t)?;
            if !prefix.is_empty() {
                // `--set cache_size` applies to the main schema; the attached file gets the same.
                let size = sess.query_i64("PRAGMA main.cache_size")?;
                if let Some(n) = size.first() {
                    sess.batch(&format!(
                        "PRAGMA {}.cache_size = {n}",
                        place::SQLITE_PLACE_SCHEMA
                    ))?;
                }
            }
            if self.warm {
                sess.query_rows(
                    &format!("SELECT count(*), sum(length(pad)) FROM {prefix}{t}"),
                    &[],
                )?;
            }
            prefix
        } else {
            String::new()
        };
        let p = self.dialect.placeholder(1);
        self.sql = format!("SELECT pad FROM {prefix}{t} WHERE id = {p}");
        self.stmt = Some(sess.prepare(&self.sql)?);
        self.name = rec.name("lookup");
        Ok(())
    }

    fn step(&mut self, sess: &mut dyn Session, rec: &mut Recorder) -> Result<(), TargetError> {
        let stmt = self
            .stmt
            .ok_or_else(|| TargetError::config("lookup workload used before prepare"))?;
        let key = self.keys.next_key();
        self.last_key = Some(key);
        let t0 = rec.now();
        let lookup = || sess.execute(stmt, &[Param::Int(key as i64)]);
        let one_row = |&n: &u64| match n {
            1 => Ok(1),
            n => Err(TargetError {
                class: "check:lookup-rows".into(),
                sqlstate: None,
                mysql_code: None,
                message: format!(
                    "key {key} returned {n} rows from {} (expected exactly 1: was the table \
                     changed outside dbscope?)",
                    self.table
                ),
                connection_lost: false,
            }),
        };
        super::work::timed(rec, self.name, t0, lookup, one_row)
            .0
            .map(|_| ())
    }

    fn statements(&self) -> Vec<super::Statement> {
        self.last_key
            .map(|k| super::Statement {
                event: "lookup".into(),
                sql: self.sql.clone(),
                params: vec![Param::Int(k as i64)],
            })
            .into_iter()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbscope_db::SqliteTarget;

    #[test]
    fn options_parse_and_are_checked() {
        assert_eq!("uniform".parse::<KeyDist>().unwrap(), KeyDist::Uniform);
        assert_eq!("zipf:0.99".parse::<KeyDist>().unwrap(), KeyDist::Zipf(0.99));
        for bad in [
            "zipf:0",
            "zipf:-1",
            "zipf:x",
            "zipf",
            "normal",
            "zipf:NaN",
            "gaussian:1.5",
            "exponential:0",
        ] {
            assert!(bad.parse::<KeyDist>().is_err(), "{bad}");
        }
        assert!("hot".parse::<CacheState>().is_err());
        let cfg = LookupConfig {
            table: "t".into(),
            rows: 0,
            row_bytes: 100,
            dist: KeyDist::Uniform,
            place: Placement::Default,
            cache: CacheState::Warm,
            restart_cmd: None,
            restart_timeout: DEFAULT_RESTART_TIMEOUT,
            fresh: false,
        };
        let e = LookupWorkload::new(cfg.clone(), Dialect::Sqlite)
            .err()
            .unwrap();
        let e = crate::error::as_flags(&e);
        assert!(e.contains("--rows must be at least 1"), "{e}");
        let e = LookupWorkload::new(
            LookupConfig {
                rows: 10,
                row_bytes: 8,
                ..cfg
            },
            Dialect::Sqlite,
        )
        .err()
        .unwrap();
        let e = crate::error::as_flags(&e);
        assert!(e.contains("--row-bytes 8"), "{e}");
    }

    #[test]
    fn sqlite_fill_reuse_and_shape_change() {
        let dir = tempfile::tempdir().unwrap();
        let target = SqliteTarget::new(&dir.path().join("l.db"), &[]).unwrap();
        let cfg = LookupConfig {
            table: "lk".into(),
            rows: 500,
            row_bytes: 40,
            dist: KeyDist::Uniform,
            place: Placement::Default,
            cache: CacheState::Cold,
            restart_cmd: None,
            restart_timeout: DEFAULT_RESTART_TIMEOUT,
            fresh: false,
        };
        let w = LookupWorkload::new(cfg.clone(), Dialect::Sqlite).unwrap();
        w.setup(&target, 1, &StopSignal::new()).unwrap();
        let mut s = target.connect().unwrap();
        assert_eq!(
            s.query_i64("SELECT count(*) FROM lk WHERE length(pad) = 32")
                .unwrap(),
            vec![500]
        );
        assert!(w.notes()[0].contains("created"), "{:?}", w.notes());
        assert!(
            w.notes().iter().any(|n| n.contains("emptied")),
            "{:?}",
            w.notes()
        );
        let w = LookupWorkload::new(cfg.clone(), Dialect::Sqlite).unwrap();
        w.setup(&target, 1, &StopSignal::new()).unwrap();
        assert!(w.notes()[0].contains("reused"), "{:?}", w.notes());
        let other = LookupConfig {
            rows: 600,
            ..cfg.clone()
        };
        let e = LookupWorkload::new(other.clone(), Dialect::Sqlite)
            .unwrap()
            .setup(&target, 1, &StopSignal::new())
            .unwrap_err();
        assert!(e.message.contains("add --fresh"), "{e}");
        let w = LookupWorkload::new(
            LookupConfig {
                fresh: true,
                ..other
            },
            Dialect::Sqlite,
        )
        .unwrap();
        w.setup(&target, 1, &StopSignal::new()).unwrap();
        assert_eq!(s.query_i64("SELECT count(*) FROM lk").unwrap(), vec![600]);
    }
}
