//! MariaDB/MySQL counter snapshots: `SHOW GLOBAL STATUS` (redo, fsyncs, buffer pool, row locks,
//! binlog group commit), `information_schema.INNODB_METRICS` (the enabled ones), the timed waits
//! of the run's own threads (`performance_schema.events_waits_summary_by_thread_by_event_name`,
//! found by connection id) and I/O by file (`performance_schema.file_summary_by_event_name`).
//! Each is a [`Section`]; one that cannot be read is missing, with the privilege or setting that
//! would enable it.

use std::collections::BTreeMap;

use dbscope_core::observe::{Section, TimedWait, WaitLine};
use dbscope_db::{Session, TargetError};

/// `SHOW GLOBAL STATUS` variables read: cumulative counters.
pub const STATUS_COUNTERS: [&str; 30] = [
    "Com_commit",
    "Com_rollback",
    "Handler_commit",
    "Handler_rollback",
    "Questions",
    "Innodb_log_writes",
    "Innodb_log_write_requests",
    "Innodb_log_waits",
    "Innodb_os_log_written",
    "Innodb_os_log_fsyncs",
    "Innodb_data_fsyncs",
    "Innodb_data_reads",
    "Innodb_data_writes",
    "Innodb_data_read",
    "Innodb_data_written",
    "Innodb_buffer_pool_read_requests",
    "Innodb_buffer_pool_reads",
    "Innodb_buffer_pool_write_requests",
    "Innodb_buffer_pool_pages_flushed",
    "Innodb_row_lock_waits",
    "Innodb_row_lock_time",
    "Innodb_deadlocks",
    "Innodb_rows_read",
    "Innodb_rows_inserted",
    "Innodb_rows_updated",
    "Innodb_rows_deleted",
    "Binlog_commits",
    "Binlog_group_commits",
    "Binlog_bytes_written",
    "Innodb_dblwr_writes",
];

/// `SHOW GLOBAL STATUS` variables that are levels, not counters.
pub const STATUS_GAUGES: [&str; 3] = [
    "Innodb_row_lock_current_waits",
    "Innodb_buffer_pool_pages_dirty",
    "Threads_running",
];

/// What a refused or failed read says, with what would enable it.
fn why(what: &str, e: &TargetError, fix: &str) -> String {
    match e.mysql_code {
        // 1142/1143: SELECT denied on a table/column; 1227: a privilege is needed.
        Some(1142 | 1143 | 1227 | 1044) => format!("{what}: {} ({fix})", e.message),
        _ => format!("{what}: {}", e.message),
    }
}

fn num(v: &Option<String>) -> Option<f64> {
    v.as_deref()?.parse().ok()
}

/// `SHOW GLOBAL STATUS` (needs no privilege).
pub fn global_status(s: &mut dyn Session) -> Section {
    let names: Vec<String> = STATUS_COUNTERS
        .iter()
        .chain(STATUS_GAUGES.iter())
        .map(|n| format!("'{n}'"))
        .collect();
    let sql = format!(
        "SHOW GLOBAL STATUS WHERE Variable_name IN ({})",
        names.join(", ")
    );
    match s.query_rows(&sql, &[]) {
        Ok(rows) => {
            let mut sec = Section::default();
            for r in rows {
                let (Some(Some(name)), Some(v)) = (r.first(), r.get(1).and_then(num)) else {
                    continue;
                };
                if STATUS_GAUGES.contains(&name.as_str()) {
                    sec.gauges.insert(name.clone(), v);
                } else {
                    sec.counters.insert(name.clone(), v);
                }
            }
            sec
        }
        Err(e) => Section::missing(format!("SHOW GLOBAL STATUS: {}", e.message)),
    }
}

/// The enabled `information_schema.INNODB_METRICS` (needs the PROCESS privilege): counters,
/// and levels (`TYPE = 'value'`) as gauges.
pub fn innodb_metrics(s: &mut dyn Session) -> Section {
    // MariaDB says ENABLED = 1; MySQL 8 says STATUS = 'enabled'.
    let mut r = s.query_rows(
        "SELECT NAME, COUNT, TYPE FROM information_schema.INNODB_METRICS WHERE ENABLED = 1",
        &[],
    );
    if r.as_ref().is_err_and(|e| e.mysql_code == Some(1054)) {
        r = s.query_rows(
            "SELECT NAME, COUNT, TYPE FROM information_schema.INNODB_METRICS \
             WHERE STATUS = 'enabled'",
            &[],
        );
    }
    match r {
        Ok(rows) if rows.is_empty() => Section::missing(
            "information_schema.INNODB_METRICS: no row (it needs the PROCESS privilege: \
             GRANT PROCESS ON *.* TO the user; or no metric is enabled: \
             SET GLOBAL innodb_monitor_enable = 'all')",
        ),
        Ok(rows) => {
            let mut sec = Section::default();
            for r in rows {
                let (Some(Some(name)), Some(v)) = (r.first(), r.get(1).and_then(num)) else {
                    continue;
                };
                if r.get(2).cloned().flatten().as_deref() == Some("value") {
                    sec.gauges.insert(name.clone(), v);
                } else {
                    sec.counters.insert(name.clone(), v);
                }
            }
            sec
        }
        Err(e) => Section::missing(why(
            "information_schema.INNODB_METRICS",
            &e,
            "needs the PROCESS privilege: GRANT PROCESS ON *.* TO the user",
        )),
    }
}

/// One thread's waits as last read: event → (count, seconds).
pub type ThreadWaits = BTreeMap<String, (f64, f64)>;

/// The run's threads' timed waits, read by connection id and kept per connection: a connection
/// that went away (a session that reconnected) keeps its last reading.
#[derive(Default)]
pub struct RunWaits {
    /// Per connection id, the waits last read.
    by_conn: BTreeMap<u64, ThreadWaits>,
    /// Why the waits cannot be read (set once, from the first failure that will not pass).
    unavailable: Option<String>,
    /// Wait instruments enabled and timed, and all of them (read once).
    instruments: Option<(u64, u64)>,
}

impl RunWaits {
    /// Reads the waits of the connections `ids` now.
    pub fn read(&mut self, s: &mut dyn Session, ids: &[u64]) {
        if self.unavailable.is_some() || ids.is_empty() {
            return;
        }
        if self.instruments.is_none() {
            match s.query_rows("SELECT @@performance_schema", &[]) {
                Ok(r) if num(r.first().and_then(|r| r.first()).unwrap_or(&None)) == Some(0.0) => {
                    self.unavailable = Some(
                        "performance_schema is OFF on the server: start it with \
                         performance_schema=ON (it cannot be switched on while it runs)"
                            .into(),
                    );
                    return;
                }
                Ok(_) => {}
                Err(e) => {
                    self.unavailable = Some(format!("@@performance_schema: {}", e.message));
                    return;
                }
            }
            match s.query_rows(
                "SELECT SUM(ENABLED = 'YES' AND TIMED = 'YES'), COUNT(*) \
                 FROM performance_schema.setup_instruments WHERE NAME LIKE 'wait/%'",
                &[],
            ) {
                Ok(r) => {
                    let r = r.into_iter().next().unwrap_or_default();
                    let get = |i: usize| r.get(i).and_then(num).unwrap_or(0.0) as u64;
                    self.instruments = Some((get(0), get(1)));
                }
                Err(e) => {
                    self.unavailable = Some(why(
                        "performance_schema",
                        &e,
                        "needs SELECT on performance_schema: GRANT SELECT ON \
                         performance_schema.* TO the user",
                    ));
                    return;
                }
            }
        }
        let list: Vec<String> = ids.iter().map(u64::to_string).collect();
        let sql = format!(
            "SELECT t.PROCESSLIST_ID, w.EVENT_NAME, w.COUNT_STAR, w.SUM_TIMER_WAIT \
             FROM performance_schema.threads t \
             JOIN performance_schema.events_waits_summary_by_thread_by_event_name w \
             ON w.THREAD_ID = t.THREAD_ID \
             WHERE t.PROCESSLIST_ID IN ({}) AND w.COUNT_STAR > 0",
            list.join(", ")
        );
        match s.query_rows(&sql, &[]) {
            Ok(rows) => {
                let mut now: BTreeMap<u64, ThreadWaits> = BTreeMap::new();
                for r in rows {
                    let (Some(id), Some(Some(ev)), Some(n), Some(ps)) = (
                        r.first().and_then(num),
                        r.get(1),
                        r.get(2).and_then(num),
                        r.get(3).and_then(num),
                    ) else {
                        continue;
                    };
                    now.entry(id as u64)
                        .or_default()
                        .insert(ev.clone(), (n, ps / 1e12));
                }
                // A connection still there replaces its reading; one gone keeps its last.
                self.by_conn.extend(now);
            }
            Err(e) => {
                self.unavailable = Some(why(
                    "performance_schema.events_waits_summary_by_thread_by_event_name",
                    &e,
                    "needs SELECT on performance_schema: GRANT SELECT ON performance_schema.* \
                     TO the user",
                ))
            }
        }
    }

    /// The section: one row per wait event (count, seconds), summed over the run's connections.
    pub fn section(&self, ids: &[u64]) -> Section {
        if let Some(why) = &self.unavailable {
            return Section::missing(why.clone());
        }
        let mut sec = Section::default();
        for waits in self.by_conn.values() {
            for (ev, (n, secs)) in waits {
                let row = sec.rows.entry(ev.clone()).or_default();
                *row.entry("count".into()).or_default() += n;
                *row.entry("wait_s".into()).or_default() += secs;
            }
        }
        sec.counters.insert(
            "count".into(),
            sec.rows.values().map(|r| r["count"]).sum::<f64>(),
        );
        sec.counters.insert(
            "wait_s".into(),
            sec.rows.values().map(|r| r["wait_s"]).sum::<f64>(),
        );
        sec.gauges.insert("connections".into(), ids.len() as f64);
        sec.text.insert(
            "source".into(),
            "performance_schema.events_waits_summary_by_thread_by_event_name of the run's own \
             connections (found by connection id in performance_schema.threads): measured wait \
             time, not sampled"
                .into(),
        );
        if let Some((on, all)) = self.instruments {
            sec.text.insert(
                "instruments".into(),
                format!(
                    "{on} of {all} wait instruments enabled and timed (the rest are not \
                     counted: UPDATE performance_schema.setup_instruments SET ENABLED = 'YES', \
                     TIMED = 'YES' WHERE NAME LIKE 'wait/%' enables them all)"
                ),
            );
        }
        sec
    }
}

/// I/O by file kind from `performance_schema.file_summary_by_event_name` (the whole server):
/// one row per instrument with reads, writes (and their bytes), other operations (fsyncs among
/// them), and their time in seconds.
pub fn file_io(s: &mut dyn Session) -> Section {
    let sql = "SELECT EVENT_NAME, COUNT_READ, SUM_NUMBER_OF_BYTES_READ, COUNT_WRITE, \
               SUM_NUMBER_OF_BYTES_WRITE, COUNT_MISC, SUM_TIMER_READ, SUM_TIMER_WRITE, \
               SUM_TIMER_MISC FROM performance_schema.file_summary_by_event_name \
               WHERE COUNT_STAR > 0";
    match s.query_rows(sql, &[]) {
        Ok(rows) => {
            let mut sec = Section::default();
            let cols = [
                "reads",
                "read_bytes",
                "writes",
                "write_bytes",
                "misc",
                "read_s",
                "write_s",
                "misc_s",
            ];
            for r in rows {
                let Some(Some(name)) = r.first() else {
                    continue;
                };
                let mut row = BTreeMap::new();
                for (i, c) in cols.iter().enumerate() {
                    if let Some(v) = r.get(i + 1).and_then(num) {
                        // Timers are picoseconds.
                        let v = if c.ends_with("_s") { v / 1e12 } else { v };
                        row.insert(c.to_string(), v);
                    }
                }
                sec.rows.insert(name.clone(), row);
            }
            sec.text.insert(
                "source".into(),
                "performance_schema.file_summary_by_event_name (the whole server; misc \
                 includes fsyncs)"
                    .into(),
            );
            sec
        }
        Err(e) => Section::missing(why(
            "performance_schema.file_summary_by_event_name",
            &e,
            "needs SELECT on performance_schema: GRANT SELECT ON performance_schema.* TO the \
             user; and performance_schema=ON",
        )),
    }
}

/// The server process's id from `@@pid_file`, when the file is readable here (a local server).
pub fn server_pid(s: &mut dyn Session) -> Result<u32, String> {
    let file = s
        .query_rows("SELECT @@pid_file", &[])
        .map_err(|e| format!("@@pid_file: {}", e.message))?
        .into_iter()
        .next()
        .and_then(|r| r.into_iter().next().flatten())
        .ok_or("@@pid_file is empty")?;
    let text = std::fs::read_to_string(&file).map_err(|e| {
        format!("the server's pid file {file} cannot be read here ({e}): a remote server, or no permission")
    })?;
    text.trim()
        .parse()
        .map_err(|_| format!("the server's pid file {file} holds no pid"))
}

/// The run file `--waits history` writes: one `{"wait":{…}}` line per wait of the run's threads.
pub use dbscope_core::observe::WAITS_FILE;

/// The consumers `--waits history` switches on (and restores); the statements' current event
/// is the timer calibration's.
const HISTORY_CONSUMERS: [&str; 5] = [
    "global_instrumentation",
    "thread_instrumentation",
    "events_waits_current",
    "events_waits_history_long",
    "events_statements_current",
];

/// The instruments `--waits history` enables and times (and restores): file I/O, the redo log's
/// writes and syncs among them, and the calibration's own `SELECT`.
const HISTORY_INSTRUMENTS: &str = "NAME LIKE 'wait/io/file/%' OR NAME = 'statement/sql/select'";

/// The timer classes `--waits history` sets to `NANOSECOND` where `setup_timers` exists
/// (MariaDB; MySQL 8 has fixed timers): one time base for the waits and the calibration. Not
/// `idle`: the sessions sit in an idle wait when the timers change, and a wait timed by two
/// timers is nonsense (the summaries keep raw timer units and convert them with the class's
/// timer at the time they are read). Idle waits get a `start_ns` only when their timer already
/// is `NANOSECOND`.
const HISTORY_TIMERS: [&str; 2] = ["wait", "statement"];

/// The calibration: this many timed `SELECT`s, the one with the shortest round trip kept.
const CALIBRATION_TRIES: usize = 8;

/// How often the poll calibrates again (run-clock ns). The run's clock is the system's monotonic
/// clock, which the server's timer follows to some µs a second at most (the drift the section
/// reports), so each poll maps with a calibration at most this old.
const CALIBRATE_EVERY_NS: u64 = 1_000_000_000;

/// The calibration's statement: its own `TIMER_START`, read while it runs.
const CALIBRATION_SQL: &str =
    "SELECT s.TIMER_START FROM performance_schema.events_statements_current s \
     JOIN performance_schema.threads t ON t.THREAD_ID = s.THREAD_ID \
     WHERE t.PROCESSLIST_ID = CONNECTION_ID()";

/// A point of the server's timer on the run's clock: a statement's `TIMER_START` and the middle
/// of the client's round trip around it, whose half is the point's uncertainty.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibration {
    /// The server's timer, picoseconds.
    pub timer_ps: u64,
    /// The run's clock, ns since its origin.
    pub clock_ns: u64,
    /// Half the round trip, ns.
    pub half_rtt_ns: u64,
}

impl Calibration {
    /// The run-clock time of the server timer `ps` (`None` before the clock's origin).
    pub fn map(&self, ps: u64) -> Option<u64> {
        // Picoseconds to the nearest ns.
        let t = self.clock_ns as i128 + (ps as i128 - self.timer_ps as i128 + 500).div_euclid(1000);
        u64::try_from(t).ok()
    }
}

/// Of the timed round trips `(client before, server timer, client after)`, the one with the
/// shortest round trip as a [`Calibration`].
pub fn best_calibration(tries: &[(u64, u64, u64)]) -> Option<Calibration> {
    tries
        .iter()
        .filter(|(a, _, b)| b >= a)
        .min_by_key(|(a, _, b)| b - a)
        .map(|&(a, ps, b)| Calibration {
            timer_ps: ps,
            clock_ns: a + (b - a) / 2,
            half_rtt_ns: (b - a).div_ceil(2),
        })
}

/// `--waits history` on MariaDB/MySQL: switches on the waits history consumers and the file
/// I/O instruments for the run, polls `events_waits_history_long` for the run's threads
/// (`EVENT_ID` above the last one read, per thread), writes each wait to `waits.jsonl`, and
/// at the end compares the count read with the summary's count delta for the same threads and
/// events. [`WaitsHistory::restore`] puts the setup rows back as they were.
#[derive(Default)]
pub struct WaitsHistory {
    /// The setup rows as they were: consumers (name, enabled), instruments (name, enabled, timed).
    saved_consumers: Vec<(String, String)>,
    saved_instruments: Vec<(String, String, String)>,
    /// The timers as they were (class, timer); empty where `setup_timers` does not exist.
    saved_timers: Vec<(String, String)>,
    /// Why the timers could not be unified (MySQL 8: no `setup_timers`).
    timers_note: Option<String>,
    /// Whether idle waits are timed by the calibrated timer (`NANOSECOND`).
    idle_calibrated: bool,
    /// The calibrations, in order: at the clock's start, about every second while the run goes
    /// ([`CALIBRATE_EVERY_NS`]), at the end. Each poll maps with the latest.
    calibrations: Vec<Calibration>,
    /// Why there is no calibration.
    calibration_error: Option<String>,
    ring_size: Option<f64>,
    /// Per thread: its connection id and the last `EVENT_ID` read.
    last: BTreeMap<u64, (u64, u64)>,
    /// Per (thread, event): the summary's count when the thread was first seen.
    base: BTreeMap<(u64, String), f64>,
    /// Per (thread, event): the summary's count at the last [`WaitsHistory::compare`].
    now: BTreeMap<(u64, String), f64>,
    /// Per (thread, event): waits read from the ring.
    read: BTreeMap<(u64, String), f64>,
    /// Per thread: its connection id.
    conn: BTreeMap<u64, u64>,
    out: Option<dbscope_core::observe::JsonLines>,
    error: Option<String>,
    restored: bool,
}

impl WaitsHistory {
    /// Saves the setup rows and switches the consumers and instruments on; writes to `run_dir`.
    pub fn enable(s: &mut dyn Session, run_dir: &std::path::Path) -> WaitsHistory {
        let mut h = WaitsHistory::default();
        if let Err(e) = h.try_enable(s) {
            h.error = Some(e);
            h.restore(s);
            return h;
        }
        match dbscope_core::observe::JsonLines::create(run_dir, WAITS_FILE) {
            Ok(o) => h.out = Some(o),
            Err(e) => h.error = Some(format!("{WAITS_FILE}: {e}")),
        }
        h
    }

    /// A reader that could not start (the section says why).
    pub fn failed(why: String) -> WaitsHistory {
        WaitsHistory {
            error: Some(why),
            restored: true,
            ..WaitsHistory::default()
        }
    }

    fn try_enable(&mut self, s: &mut dyn Session) -> Result<(), String> {
        let fix = "needs SELECT and UPDATE on performance_schema (GRANT SELECT, UPDATE ON \
                   performance_schema.* TO the user) and performance_schema=ON";
        let consumers: Vec<String> = HISTORY_CONSUMERS.iter().map(|c| format!("'{c}'")).collect();
        let rows = s
            .query_rows(
                &format!(
                    "SELECT NAME, ENABLED FROM performance_schema.setup_consumers \
                     WHERE NAME IN ({})",
                    consumers.join(", ")
                ),
                &[],
            )
            .map_err(|e| why("performance_schema.setup_consumers", &e, fix))?;
        for r in rows {
            if let (Some(Some(n)), Some(Some(e))) = (r.first(), r.get(1)) {
                self.saved_consumers.push((n.clone(), e.clone()));
            }
        }
        let rows = s
            .query_rows(
                &format!(
                    "SELECT NAME, ENABLED, TIMED FROM performance_schema.setup_instruments \
                     WHERE {HISTORY_INSTRUMENTS}"
                ),
                &[],
            )
            .map_err(|e| why("performance_schema.setup_instruments", &e, fix))?;
        for r in rows {
            if let (Some(Some(n)), Some(Some(e)), Some(Some(t))) = (r.first(), r.get(1), r.get(2)) {
                self.saved_instruments
                    .push((n.clone(), e.clone(), t.clone()));
            }
        }
        self.ring_size = s
            .query_rows(
                "SELECT @@performance_schema_events_waits_history_long_size",
                &[],
            )
            .ok()
            .and_then(|r| num(r.first()?.first()?));
        s.batch(&format!(
            "UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' WHERE NAME IN ({})",
            consumers.join(", ")
        ))
        .map_err(|e| why("UPDATE performance_schema.setup_consumers", &e, fix))?;
        s.batch(&format!(
            "UPDATE performance_schema.setup_instruments SET ENABLED = 'YES', TIMED = 'YES' \
             WHERE {HISTORY_INSTRUMENTS}"
        ))
        .map_err(|e| why("UPDATE performance_schema.setup_instruments", &e, fix))?;
        self.unify_timers(s);
        Ok(())
    }

    /// One time base for the waits and the calibration's statement: `NANOSECOND` for every
    /// class that `setup_timers` has (MariaDB's default for waits is `CYCLE`, whose picoseconds
    /// drift from the statements' by the error of its frequency estimate).
    fn unify_timers(&mut self, s: &mut dyn Session) {
        let classes: Vec<String> = HISTORY_TIMERS.iter().map(|c| format!("'{c}'")).collect();
        let rows = match s.query_rows(
            &format!(
                "SELECT NAME, TIMER_NAME FROM performance_schema.setup_timers WHERE NAME IN ({}, \
                 'idle')",
                classes.join(", ")
            ),
            &[],
        ) {
            Ok(r) => r,
            Err(e) => {
                self.timers_note = Some(format!(
                    "the timers could not be set ({}): the calibration assumes the wait and \
                     statement timers agree",
                    e.message
                ));
                return;
            }
        };
        for r in rows {
            if let (Some(Some(n)), Some(Some(t))) = (r.first(), r.get(1)) {
                if n == "idle" {
                    self.idle_calibrated = t == "NANOSECOND";
                } else {
                    self.saved_timers.push((n.clone(), t.clone()));
                }
            }
        }
        if let Err(e) = s.batch(&format!(
            "UPDATE performance_schema.setup_timers SET TIMER_NAME = 'NANOSECOND' \
             WHERE NAME IN ({})",
            classes.join(", ")
        )) {
            self.timers_note = Some(format!(
                "UPDATE performance_schema.setup_timers: {}: the calibration assumes the wait and \
                 statement timers agree",
                e.message
            ));
        }
    }

    /// Places the server's timer on the run's clock: [`CALIBRATION_TRIES`] timed `SELECT`s of
    /// their own `TIMER_START`, the shortest round trip kept. The latest calibration maps the
    /// waits a poll reads; each next one measures how far the mapping drifted meanwhile.
    pub fn calibrate(&mut self, s: &mut dyn Session, clock: &dbscope_core::RunClock) {
        if self.error.is_some() || self.restored || self.calibration_error.is_some() {
            return;
        }
        let mut tries = Vec::with_capacity(CALIBRATION_TRIES);
        for _ in 0..CALIBRATION_TRIES {
            let a = clock.now_ns();
            let r = s.query_rows(CALIBRATION_SQL, &[]);
            let b = clock.now_ns();
            match r {
                Ok(rows) => {
                    if let Some(ps) = rows.first().and_then(|r| r.first()).and_then(num) {
                        tries.push((a, ps as u64, b));
                    }
                }
                Err(e) => {
                    self.calibration_error = Some(format!(
                        "the timer calibration (performance_schema.events_statements_current): {}",
                        e.message
                    ));
                    return;
                }
            }
        }
        match best_calibration(&tries) {
            Some(c) => self.calibrations.push(c),
            None => {
                self.calibration_error = Some(
                    "the timer calibration read no TIMER_START of its own statement \
                     (statement/sql/select not timed?)"
                        .into(),
                )
            }
        }
    }

    /// Puts the setup rows back as they were before [`WaitsHistory::enable`] (once).
    pub fn restore(&mut self, s: &mut dyn Session) {
        if self.restored {
            return;
        }
        self.restored = true;
        let mut failed = Vec::new();
        for (name, enabled) in &self.saved_consumers {
            let sql = format!(
                "UPDATE performance_schema.setup_consumers SET ENABLED = '{}' WHERE NAME = '{}'",
                quote(enabled),
                quote(name)
            );
            if let Err(e) = s.batch(&sql) {
                failed.push(format!("{name}: {}", e.message));
            }
        }
        // One UPDATE per (enabled, timed) pair.
        let mut groups: BTreeMap<(&str, &str), Vec<String>> = BTreeMap::new();
        for (n, e, t) in &self.saved_instruments {
            groups
                .entry((e.as_str(), t.as_str()))
                .or_default()
                .push(format!("'{}'", quote(n)));
        }
        for ((e, t), names) in groups {
            let sql = format!(
                "UPDATE performance_schema.setup_instruments SET ENABLED = '{}', TIMED = '{}' \
                 WHERE NAME IN ({})",
                quote(e),
                quote(t),
                names.join(", ")
            );
            if let Err(err) = s.batch(&sql) {
                failed.push(format!("setup_instruments: {}", err.message));
            }
        }
        for (class, timer) in &self.saved_timers {
            let sql = format!(
                "UPDATE performance_schema.setup_timers SET TIMER_NAME = '{}' WHERE NAME = '{}'",
                quote(timer),
                quote(class)
            );
            if let Err(e) = s.batch(&sql) {
                failed.push(format!("setup_timers {class}: {}", e.message));
            }
        }
        if !failed.is_empty() {
            eprintln!(
                "dbscope: warning: the performance_schema setup could not be restored after \
                 --waits history: {}",
                failed.join("; ")
            );
        }
    }

    /// Reads the ring's new waits of the connections `ids` and writes them out. The first time a
    /// thread is seen, its summary counts and the last `EVENT_ID` in the ring are its baseline.
    /// `conns` are the run's connections as (session, connection id).
    pub fn poll(
        &mut self,
        s: &mut dyn Session,
        conns: &[(u32, u64)],
        clock: &dbscope_core::RunClock,
    ) {
        if self.error.is_some() || conns.is_empty() || self.restored {
            return;
        }
        if self
            .calibrations
            .last()
            .is_some_and(|c| clock.now_ns().saturating_sub(c.clock_ns) >= CALIBRATE_EVERY_NS)
        {
            self.calibrate(s, clock);
        }
        let session_of: BTreeMap<u64, u32> = conns.iter().map(|&(s, c)| (c, s)).collect();
        let calib = self.calibrations.last().copied();
        let list: Vec<String> = conns.iter().map(|c| c.1.to_string()).collect();
        let list = list.join(", ");
        let sql = format!(
            "SELECT h.THREAD_ID, t.PROCESSLIST_ID, h.EVENT_ID, h.EVENT_NAME, h.TIMER_START, \
             h.TIMER_WAIT, h.OPERATION, h.OBJECT_NAME \
             FROM performance_schema.events_waits_history_long h \
             JOIN performance_schema.threads t ON t.THREAD_ID = h.THREAD_ID \
             WHERE t.PROCESSLIST_ID IN ({list}) ORDER BY h.THREAD_ID, h.EVENT_ID"
        );
        let rows = match s.query_rows(&sql, &[]) {
            Ok(r) => r,
            Err(e) => {
                self.error = Some(format!(
                    "performance_schema.events_waits_history_long: {}",
                    e.message
                ));
                return;
            }
        };
        let int = |v: Option<&Option<String>>| v.and_then(num).map(|f| f as u64);
        let mut lines = Vec::new();
        let mut newest: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        for r in &rows {
            let (Some(thread), Some(conn), Some(id), Some(Some(name))) =
                (int(r.first()), int(r.get(1)), int(r.get(2)), r.get(3))
            else {
                continue;
            };
            self.conn.insert(thread, conn);
            let e = newest.entry(thread).or_insert((conn, 0));
            e.1 = e.1.max(id);
            let Some(&(_, last)) = self.last.get(&thread) else {
                continue; // a thread seen for the first time: its baseline, below
            };
            if id <= last {
                continue;
            }
            *self.read.entry((thread, name.clone())).or_default() += 1.0;
            let timer_start_ps = int(r.get(4));
            lines.push(WaitLine::Wait(TimedWait {
                conn,
                thread,
                event_id: id,
                name: name.clone(),
                timer_start_ps,
                wait_ps: int(r.get(5)),
                operation: r.get(6).cloned().flatten(),
                object: r.get(7).cloned().flatten(),
                session: session_of.get(&conn).copied(),
                start_ns: calib
                    .filter(|_| name != "idle" || self.idle_calibrated)
                    .zip(timer_start_ps)
                    .and_then(|(c, ps)| c.map(ps)),
            }));
        }
        // Threads seen for the first time (with or without waits in the ring): their baseline.
        let fresh: Vec<u64> = match self.summary(s, &list) {
            Ok(sum) => {
                let threads: std::collections::BTreeSet<u64> =
                    sum.keys().map(|(t, _)| *t).collect();
                let fresh: Vec<u64> = threads
                    .iter()
                    .chain(newest.keys())
                    .filter(|t| !self.last.contains_key(t))
                    .copied()
                    .collect();
                for ((t, ev), n) in sum {
                    if fresh.contains(&t) {
                        self.base.insert((t, ev), n);
                    }
                }
                fresh
            }
            Err(e) => {
                self.error = Some(e);
                return;
            }
        };
        for t in fresh {
            let (conn, id) = newest.get(&t).copied().unwrap_or((0, 0));
            self.last.insert(t, (conn, id));
        }
        for (t, (conn, id)) in newest {
            let e = self.last.entry(t).or_insert((conn, id));
            e.1 = e.1.max(id);
        }
        if let Some(out) = self.out.as_mut() {
            if let Err(e) = out.append(&lines) {
                self.error = Some(format!("{WAITS_FILE}: {e}"));
            }
        }
    }

    /// The summary's counts of the connections in `list`, per (thread, event); notes each
    /// thread's connection id.
    fn summary(
        &mut self,
        s: &mut dyn Session,
        list: &str,
    ) -> Result<BTreeMap<(u64, String), f64>, String> {
        let sql = format!(
            "SELECT w.THREAD_ID, w.EVENT_NAME, w.COUNT_STAR, t.PROCESSLIST_ID \
             FROM performance_schema.events_waits_summary_by_thread_by_event_name w \
             JOIN performance_schema.threads t ON t.THREAD_ID = w.THREAD_ID \
             WHERE t.PROCESSLIST_ID IN ({list})"
        );
        let rows = s.query_rows(&sql, &[]).map_err(|e| {
            format!(
                "performance_schema.events_waits_summary_by_thread_by_event_name: {}",
                e.message
            )
        })?;
        let mut out = BTreeMap::new();
        for r in rows {
            if let (Some(t), Some(Some(ev)), Some(n)) =
                (r.first().and_then(num), r.get(1), r.get(2).and_then(num))
            {
                if let Some(c) = r.get(3).and_then(num) {
                    self.conn.insert(t as u64, c as u64);
                }
                out.insert((t as u64, ev.clone()), n);
            }
        }
        Ok(out)
    }

    /// Reads the summary now for the threads seen (after a last [`WaitsHistory::poll`]).
    pub fn compare(&mut self, s: &mut dyn Session) {
        if self.error.is_some() || self.last.is_empty() || self.restored {
            return;
        }
        let conns: Vec<String> = self
            .last
            .keys()
            .filter_map(|t| self.conn.get(t))
            .map(u64::to_string)
            .collect();
        match self.summary(s, &conns.join(", ")) {
            Ok(sum) => {
                for (k, n) in sum {
                    if self.last.contains_key(&k.0) {
                        self.now.insert(k, n);
                    }
                }
            }
            Err(e) => self.error = Some(e),
        }
    }

    /// The section: per event, the waits read from the ring and the summary's count delta for the
    /// same threads; `short` (and a warning) when the ring lost some.
    pub fn section(&self) -> Section {
        if let Some(e) = &self.error {
            return Section::missing(format!("--waits history: {e}"));
        }
        let mut sec = Section::default();
        for (k, n) in &self.read {
            let row = sec.rows.entry(k.1.clone()).or_default();
            *row.entry("read".into()).or_default() += n;
        }
        for (k, n) in &self.now {
            let delta = n - self.base.get(k).copied().unwrap_or(0.0);
            if delta > 0.0 {
                let row = sec.rows.entry(k.1.clone()).or_default();
                *row.entry("summary".into()).or_default() += delta;
            }
        }
        let total = |c: &str| sec.rows.values().filter_map(|r| r.get(c)).sum::<f64>();
        let (read, summary) = (total("read"), total("summary"));
        sec.counters.insert("read".into(), read);
        sec.counters.insert("summary".into(), summary);
        if let Some(n) = self.ring_size {
            sec.gauges.insert("ring_size".into(), n);
        }
        sec.gauges.insert("threads".into(), self.last.len() as f64);
        sec.text.insert(
            "source".into(),
            format!(
                "performance_schema.events_waits_history_long of the run's threads, polled about \
                 4 times a second; each wait in {WAITS_FILE} with its session and its start on \
                 the run's clock (start_ns), the server's timer placed by a calibration"
            ),
        );
        let cal = &self.calibrations;
        if !cal.is_empty() {
            // The worst of them: half the longest kept round trip, and the largest move of the
            // mapping from one calibration to the next (where a calibration puts the next one's
            // timer, against where the next one was).
            let u = cal.iter().map(|c| c.half_rtt_ns).max().unwrap_or(0);
            sec.gauges
                .insert("calibration_uncertainty_us".into(), u as f64 / 1e3);
            sec.gauges.insert("calibrations".into(), cal.len() as f64);
            let drifts: Vec<f64> = cal
                .windows(2)
                .filter_map(|w| Some(w[0].map(w[1].timer_ps)? as f64 - w[1].clock_ns as f64))
                .collect();
            if let Some(d) = drifts
                .iter()
                .copied()
                .max_by(|a, b| a.abs().total_cmp(&b.abs()))
            {
                sec.gauges.insert("calibration_drift_us".into(), d / 1e3);
                let longest = cal
                    .windows(2)
                    .map(|w| w[1].clock_ns.saturating_sub(w[0].clock_ns))
                    .max()
                    .unwrap_or(0);
                sec.gauges
                    .insert("calibration_interval_s".into(), longest as f64 / 1e9);
            }
        }
        if let Some(e) = &self.calibration_error {
            sec.text.insert(
                "calibration".into(),
                format!("{e}: the waits have no start_ns"),
            );
        }
        if let Some(n) = &self.timers_note {
            sec.text.insert("timers".into(), n.clone());
        } else if !self.saved_timers.is_empty() {
            let was: Vec<String> = self
                .saved_timers
                .iter()
                .map(|(c, t)| format!("{c} {t}"))
                .collect();
            sec.text.insert(
                "timers".into(),
                format!(
                    "setup_timers set to NANOSECOND for the run (was: {}), restored after{}",
                    was.join(", "),
                    if self.idle_calibrated {
                        ""
                    } else {
                        "; idle waits keep their own timer and have no start_ns"
                    }
                ),
            );
        }
        // A wait already under way when the history was switched on (a session idle between
        // statements: `idle`) is counted by the summary when it ends but never enters the ring:
        // at most one per thread.
        let in_flight = self.last.len() as f64;
        sec.gauges.insert("in_flight_at_start".into(), in_flight);
        if !self.now.is_empty() && read + in_flight < summary {
            sec.text.insert(
                "warning".into(),
                format!(
                    "the ring lost waits: {read} read of {summary} counted by \
                     events_waits_summary_by_thread_by_event_name for the same threads \
                     ({in_flight} of them may have been under way when the history was \
                     switched on; the ring holds {} waits of the whole server: raise \
                     performance_schema_events_waits_history_long_size)",
                    self.ring_size.map_or("?".into(), |n| n.to_string())
                ),
            );
        }
        sec
    }

    /// Whether the ring lost waits (known after [`WaitsHistory::compare`]).
    pub fn short(&self) -> Option<String> {
        self.section().text.get("warning").cloned()
    }
}

/// A value inside single quotes.
fn quote(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\'', "''")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calibration_keeps_the_shortest_round_trip_and_maps_both_ways() {
        // (client before, server timer ps, client after): the second is the tightest.
        let c = best_calibration(&[
            (1_000, 5_000_000_000, 3_000),
            (10_000, 14_000_000_000, 10_400),
            (20_000, 24_500_000_000, 21_000),
        ])
        .unwrap();
        assert_eq!(
            c,
            Calibration {
                timer_ps: 14_000_000_000,
                clock_ns: 10_200,
                half_rtt_ns: 200,
            }
        );
        // 1 µs of server timer later is 1 µs later on the run's clock (both keep real time),
        // to the nearest ns either side; before the clock's origin there is no time.
        assert_eq!(c.map(14_001_000_000), Some(11_200));
        assert_eq!(c.map(13_999_990_000), Some(10_190));
        assert_eq!(c.map(14_000_001_499), Some(10_201));
        assert_eq!(c.map(14_000_001_500), Some(10_202));
        assert_eq!(c.map(13_999_998_501), Some(10_199));
        assert_eq!(c.map(13_999_998_499), Some(10_198));
        assert_eq!(c.map(1_014_000_000_000), Some(1_000_010_200));
        assert_eq!(c.map(0), None);
        assert_eq!(best_calibration(&[]), None);
        // A clock that went backwards is not a round trip.
        assert_eq!(best_calibration(&[(5, 1, 4)]), None);
    }
}
