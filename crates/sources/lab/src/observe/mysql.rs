//! MariaDB/MySQL counter snapshots: `SHOW GLOBAL STATUS` (redo, fsyncs, buffer pool, row locks,
//! binlog group commit), `information_schema.INNODB_METRICS` (the enabled ones), the timed waits
//! of the run's own threads (`performance_schema.events_waits_summary_by_thread_by_event_name`,
//! found by connection id) and I/O by file (`performance_schema.file_summary_by_event_name`).
//! Each is a [`Section`]; one that cannot be read is missing, with the privilege or setting that
//! would enable it.

use std::collections::BTreeMap;

use dbscope_core::observe::Section;
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
