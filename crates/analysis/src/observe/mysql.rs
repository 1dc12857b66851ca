//! MariaDB/MySQL's figures from a snapshot delta: `SHOW GLOBAL STATUS` per second and per commit
//! (redo, fsyncs, buffer pool, row locks, binlog group commit), I/O by file type from
//! `file_summary_by_event_name`, and the run's threads' measured waits as the top timed events.

use dbscope_core::observe::{Section, Snapshot};

use std::collections::BTreeMap;

use super::join::{shares, JoinedWaits};
use super::model::{push, ratio, sec, IoRow, ObserveReport, TopEvents, TopRow};

/// performance_schema's instrument for a thread waiting for its client.
const IDLE: &str = "idle";

/// The class of a performance_schema wait: `wait/io/file/innodb/innodb_data_file` → `io/file`.
fn class_of(event: &str) -> String {
    let mut parts = event.split('/').skip(1);
    match (parts.next(), parts.next()) {
        (Some(a), Some(b)) => format!("{a}/{b}"),
        (Some(a), None) => a.to_string(),
        _ => String::new(),
    }
}

/// The timed waits of the run's threads, most time first.
fn top_waits(w: &Section) -> TopEvents {
    let mut t = TopEvents {
        source: "performance_schema waits of the run's threads, measured".into(),
        ..TopEvents::default()
    };
    let mut rows: Vec<TopRow> = w
        .rows
        .iter()
        .map(|(ev, r)| TopRow {
            event: ev.clone(),
            class: class_of(ev),
            samples: r.get("count").copied().unwrap_or(0.0).max(0.0) as u64,
            est_s: r.get("wait_s").copied().unwrap_or(0.0),
            ..TopRow::default()
        })
        // `idle` is the thread waiting for the client's next statement (Oracle's "SQL*Net
        // message from client"): time outside the server, said apart from the waits.
        .filter(|r| r.samples > 0 && r.event != IDLE)
        .collect();
    t.samples = rows.iter().map(|r| r.samples).sum();
    t.db_time_s = rows.iter().map(|r| r.est_s).sum();
    for r in &mut rows {
        r.pct_db_time = if t.db_time_s > 0.0 {
            100.0 * r.est_s / t.db_time_s
        } else {
            0.0
        };
    }
    rows.sort_by(|a, b| b.est_s.total_cmp(&a.est_s).then(b.samples.cmp(&a.samples)));
    t.rows = rows;
    t
}

/// The file type of a performance_schema file instrument.
fn file_type(event: &str) -> &'static str {
    let e = event.to_ascii_lowercase();
    if e.contains("innodb_log_file") || e.contains("redo") || e.contains("aria_log") {
        "redo"
    } else if e.contains("binlog") || e.contains("relaylog") {
        "binlog"
    } else if e.contains("temp") || e.contains("tmp") {
        "temp"
    } else if e.contains("innodb_data_file") || e.contains("/data") || e.contains("myisam") {
        "data"
    } else {
        "other"
    }
}

pub(super) fn my_figures(r: &mut ObserveReport, d: &Snapshot, span: f64, client: Option<f64>) {
    let st = sec(d, "mysql.status");
    let c = |k: &str| st.and_then(|s| s.counter(k));
    let server_commits = c("Com_commit");
    let commits = client.or(server_commits);
    r.per_commit_basis = Some(match client {
        Some(n) => format!("the client's {} commits", crate::text::format_num(n)),
        None => "SHOW GLOBAL STATUS Com_commit (explicit COMMIT statements)".into(),
    });
    let f = &mut r.counters;
    push(
        f,
        "commits_per_s",
        "commits/s",
        commits.map(|n| n / span),
        "/s",
    );
    push(
        f,
        "handler_commit_per_s",
        "storage engine commits/s (Handler_commit)",
        c("Handler_commit").map(|n| n / span),
        "/s",
    );
    push(
        f,
        "rollbacks",
        "rollbacks (Com_rollback)",
        c("Com_rollback"),
        "",
    );
    push(
        f,
        "redo_bytes_per_commit",
        "redo bytes per commit (Innodb_os_log_written)",
        ratio(c("Innodb_os_log_written"), commits),
        "B",
    );
    push(
        f,
        "redo_writes_per_commit",
        "redo writes per commit (Innodb_log_writes)",
        ratio(c("Innodb_log_writes"), commits),
        "",
    );
    push(
        f,
        "redo_write_requests_per_commit",
        "redo write requests per commit",
        ratio(c("Innodb_log_write_requests"), commits),
        "",
    );
    push(
        f,
        "redo_fsyncs_per_commit",
        "redo fsyncs per commit (Innodb_os_log_fsyncs)",
        ratio(c("Innodb_os_log_fsyncs"), commits),
        "",
    );
    push(
        f,
        "fsyncs_per_commit",
        "InnoDB fsyncs per commit (Innodb_data_fsyncs: every file)",
        ratio(c("Innodb_data_fsyncs"), commits),
        "",
    );
    push(
        f,
        "fsyncs_per_s",
        "InnoDB fsyncs/s",
        c("Innodb_data_fsyncs").map(|n| n / span),
        "/s",
    );
    push(
        f,
        "log_waits",
        "redo log buffer waits (Innodb_log_waits)",
        c("Innodb_log_waits"),
        "",
    );
    let (req, reads) = (
        c("Innodb_buffer_pool_read_requests"),
        c("Innodb_buffer_pool_reads"),
    );
    push(
        f,
        "buffer_hit_pct",
        "buffer pool hit ratio",
        ratio(req.zip(reads).map(|(q, r)| 100.0 * (q - r).max(0.0)), req),
        "%",
    );
    push(
        f,
        "buffer_pool_reads_per_s",
        "buffer pool reads from disk/s",
        reads.map(|n| n / span),
        "/s",
    );
    push(
        f,
        "buffer_pool_read_requests_per_s",
        "buffer pool read requests/s",
        req.map(|n| n / span),
        "/s",
    );
    push(
        f,
        "pages_flushed",
        "buffer pool pages flushed",
        c("Innodb_buffer_pool_pages_flushed"),
        "",
    );
    push(
        f,
        "row_lock_waits",
        "row lock waits",
        c("Innodb_row_lock_waits"),
        "",
    );
    push(
        f,
        "row_lock_ms_per_wait",
        "row lock time per wait",
        ratio(c("Innodb_row_lock_time"), c("Innodb_row_lock_waits")),
        "ms",
    );
    push(f, "deadlocks", "deadlocks", c("Innodb_deadlocks"), "");
    push(
        f,
        "binlog_commits_per_group",
        "binlog commits per group commit",
        ratio(c("Binlog_commits"), c("Binlog_group_commits")),
        "",
    );
    let mut io: Vec<IoRow> = Vec::new();
    if let Some(files) = sec(d, "mysql.file_io") {
        for (ev, row) in &files.rows {
            let t = file_type(ev);
            let v = |k: &str| row.get(k).copied();
            let at = match io.iter().position(|x| x.file_type == t) {
                Some(i) => i,
                None => {
                    io.push(IoRow {
                        file_type: t.into(),
                        reads: Some(0.0),
                        read_bytes: Some(0.0),
                        writes: Some(0.0),
                        write_bytes: Some(0.0),
                        syncs: Some(0.0),
                        source: "performance_schema.file_summary_by_event_name (the whole \
                                 server; syncs: other operations, fsyncs among them)"
                            .into(),
                    });
                    io.len() - 1
                }
            };
            let x = &mut io[at];
            let add = |acc: &mut Option<f64>, v: Option<f64>| {
                *acc = Some(acc.unwrap_or(0.0) + v.unwrap_or(0.0));
            };
            add(&mut x.reads, v("reads"));
            add(&mut x.read_bytes, v("read_bytes"));
            add(&mut x.writes, v("writes"));
            add(&mut x.write_bytes, v("write_bytes"));
            add(&mut x.syncs, v("misc"));
        }
        io.retain(|x| {
            x.reads.unwrap_or(0.0) + x.writes.unwrap_or(0.0) + x.syncs.unwrap_or(0.0) > 0.0
        });
    }
    if !io.iter().any(|x| x.file_type == "redo") && st.is_some() {
        io.push(IoRow {
            file_type: "redo".into(),
            writes: c("Innodb_log_writes"),
            write_bytes: c("Innodb_os_log_written"),
            syncs: c("Innodb_os_log_fsyncs"),
            source: "SHOW GLOBAL STATUS (Innodb_log_writes, Innodb_os_log_written; this server \
                     has no performance_schema file instrument for its redo log)"
                .into(),
            ..IoRow::default()
        });
    }
    r.io_by_file_type.extend(io);
    match sec(d, "mysql.waits") {
        Some(w) => {
            let top = top_waits(w);
            if top.rows.is_empty() {
                r.notes.push(format!(
                    "no timed waits of the run's threads were counted ({})",
                    w.text.get("instruments").cloned().unwrap_or_default()
                ));
            } else if !top.rows.iter().any(|r| r.event.contains("log")) {
                r.notes.push(
                    "the timed waits hold no redo log wait: this server's performance_schema has \
                     no instrument for it (MariaDB 10.8+ has no wait/io/file/innodb/\
                     innodb_log_file); its redo writes and fsyncs are in the counters below"
                        .into(),
                );
            }
            r.notes.push(
                "top timed events: measured wait time of the run's own threads (not samples; \
                 the samples column is the number of waits, CPU is not in it)"
                    .into(),
            );
            if let Some(idle) = w.rows.get(IDLE) {
                let v = |k: &str| idle.get(k).copied().unwrap_or(0.0);
                r.notes.push(format!(
                    "idle (the run's threads waiting for the client's next statement, like \
                     Oracle's SQL*Net message from client): {} waits, {:.3} s, not in the waits' \
                     total",
                    crate::text::format_num(v("count")),
                    v("wait_s")
                ));
            }
            r.top_events = Some(top);
        }
        None => {
            let why = d
                .sections
                .get("mysql.waits")
                .and_then(|s| s.missing.clone())
                .unwrap_or_else(|| "not recorded".into());
            r.notes.push(format!("no timed waits: {why}"));
        }
    }
}

/// `--waits history` (the end snapshot's `mysql.waits_history`, totals of the run): the waits
/// read against the summary's count, the timer calibration, and the waits joined to the client
/// events in flight: each top timed event's `during`, and per client event its waits and their
/// time.
pub(super) fn history_figures(r: &mut ObserveReport, h: &Section, waits: Option<&JoinedWaits>) {
    if let Some(why) = &h.missing {
        r.notes.push(format!("no waits history: {why}"));
        return;
    }
    let g = |k: &str| h.gauges.get(k).copied();
    let c = |k: &str| h.counters.get(k).copied().unwrap_or(0.0);
    r.notes.push(format!(
        "--waits history: {} waits of the run's threads read from events_waits_history_long, {} \
         counted by events_waits_summary_by_thread_by_event_name for the same threads (ring: {} \
         waits of the whole server)",
        c("read"),
        c("summary"),
        g("ring_size").map_or("?".into(), |n| n.to_string())
    ));
    if let Some(w) = h.text.get("warning") {
        r.notes.push(w.clone());
    }
    match (g("calibration_uncertainty_us"), h.text.get("calibration")) {
        (Some(u), _) => r.notes.push(format!(
            "the server's timer is placed on the run's clock within ±{u:.0} µs{}",
            match (
                g("calibrations"),
                g("calibration_drift_us"),
                g("calibration_interval_s"),
            ) {
                (Some(n), Some(d), Some(s)) => format!(
                    " ({n} calibrations; the largest move from one to the next {d:+.0} µs, \
                     at most {s:.1} s apart)"
                ),
                _ => String::new(),
            }
        )),
        (None, Some(e)) => r.notes.push(e.clone()),
        (None, None) => {}
    }
    if let Some(t) = h.text.get("timers") {
        r.notes.push(t.clone());
    }
    let Some((waits, during, names, unplaced)) = waits else {
        return;
    };
    // Per wait event: the client events in flight (by name id) and the waits outside any.
    #[derive(Default)]
    struct ByWait {
        n: u64,
        during: BTreeMap<u32, u64>,
        outside: u64,
    }
    let mut by_wait: BTreeMap<&str, ByWait> = BTreeMap::new();
    // Per client event: waits and picoseconds, and per wait event its count.
    let mut by_client: BTreeMap<u32, (u64, u64, BTreeMap<&str, u64>)> = BTreeMap::new();
    for (w, d) in waits.iter().zip(during) {
        if w.name == IDLE {
            continue;
        }
        let a = by_wait.entry(w.name.as_str()).or_default();
        a.n += 1;
        if d.is_empty() {
            a.outside += 1;
        }
        for &id in d {
            *a.during.entry(id).or_default() += 1;
            let e = by_client.entry(id).or_default();
            e.0 += 1;
            e.1 += w.wait_ps.unwrap_or(0);
            *e.2.entry(w.name.as_str()).or_default() += 1;
        }
    }
    if let Some(top) = r.top_events.as_mut() {
        for row in &mut top.rows {
            let Some(a) = by_wait.get(row.event.as_str()) else {
                continue;
            };
            row.during = shares(&a.during, a.outside, a.n, names);
        }
    }
    let placed: u64 = by_wait.values().map(|a| a.n).sum();
    let outside: u64 = by_wait.values().map(|a| a.outside).sum();
    r.notes.push(format!(
        "waits joined to the client event in flight in their session (its span holds the wait's \
         start): {} of {placed} waits (idle left out){}",
        placed - outside,
        if *unplaced > 0 {
            format!("; {unplaced} not placed on the run's clock")
        } else {
            String::new()
        }
    ));
    for (id, (n, ps, per)) in by_client {
        let top = per
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map(|(name, k)| format!("; most: {name} ({k})"))
            .unwrap_or_default();
        r.notes.push(format!(
            "  during {}: {n} wait{}, {} s waited{top}",
            names[id as usize],
            if n == 1 { "" } else { "s" },
            crate::text::sig3(ps as f64 / 1e12)
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn waits_are_ranked_by_measured_time_with_their_class() {
        let mut w = Section::default();
        for (ev, n, s) in [
            ("wait/io/table/sql/handler", 900.0, 0.010),
            ("wait/io/file/innodb/innodb_data_file", 3.0, 0.030),
            ("wait/lock/table/sql/handler", 0.0, 0.0),
            ("idle", 5000.0, 9.0),
        ] {
            w.rows.insert(
                ev.into(),
                BTreeMap::from([("count".into(), n), ("wait_s".into(), s)]),
            );
        }
        let t = top_waits(&w);
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.rows[0].event, "wait/io/file/innodb/innodb_data_file");
        assert_eq!(t.rows[0].class, "io/file");
        assert_eq!(t.samples, 903);
        assert!((t.rows[0].pct_db_time - 75.0).abs() < 1e-9);
        assert_eq!(file_type("wait/io/file/innodb/innodb_log_file"), "redo");
        assert_eq!(file_type("wait/io/file/sql/binlog"), "binlog");
        assert_eq!(file_type("wait/io/file/innodb/innodb_temp_file"), "temp");
        assert_eq!(file_type("wait/io/file/innodb/innodb_data_file"), "data");
    }

    #[test]
    fn history_waits_are_joined_to_the_client_events_in_flight() {
        use dbscope_core::observe::TimedWait;
        let wait = |name: &str, ps: u64| TimedWait {
            conn: 7,
            thread: 70,
            event_id: 1,
            name: name.into(),
            timer_start_ps: Some(0),
            wait_ps: Some(ps),
            operation: None,
            object: None,
            session: Some(0),
            start_ns: Some(1),
        };
        let names = vec!["update".to_string(), "commit".to_string()];
        let waits = vec![
            wait("wait/io/file/innodb/innodb_log_file", 2_000_000_000_000),
            wait("wait/io/file/innodb/innodb_log_file", 1_000_000_000_000),
            wait("wait/io/file/innodb/innodb_log_file", 500_000_000_000),
            wait("wait/io/table/sql/handler", 10_000_000_000),
            wait("idle", 9_000_000_000_000),
        ];
        // In flight: commit, commit, none, update, (idle: left out).
        let during = vec![vec![1], vec![1], vec![], vec![0], vec![]];
        let mut h = Section::default();
        h.counters.insert("read".into(), 5.0);
        h.counters.insert("summary".into(), 6.0);
        h.gauges.insert("ring_size".into(), 1000.0);
        h.gauges.insert("calibration_uncertainty_us".into(), 42.0);
        let mut r = ObserveReport {
            top_events: Some(TopEvents {
                rows: vec![TopRow {
                    event: "wait/io/file/innodb/innodb_log_file".into(),
                    samples: 3,
                    ..TopRow::default()
                }],
                ..TopEvents::default()
            }),
            ..ObserveReport::default()
        };
        history_figures(&mut r, &h, Some(&(waits, during, names, 2)));
        let shares: Vec<(&str, u64)> = r.top_events.as_ref().unwrap().rows[0]
            .during
            .iter()
            .map(|d| (d.event.as_str(), d.samples))
            .collect();
        assert_eq!(
            shares,
            [("commit", 2), (super::super::model::NO_CLIENT_EVENT, 1)]
        );
        let notes = r.notes.join("\n");
        assert!(
            notes.contains("5 waits of the run's threads read"),
            "{notes}"
        );
        assert!(notes.contains("within ±42 µs"), "{notes}");
        assert!(
            notes.contains("3 of 4 waits (idle left out); 2 not placed"),
            "{notes}"
        );
        assert!(
            notes.contains("during commit: 2 waits, 3.00 s waited; most: wait/io/file/innodb/innodb_log_file (2)"),
            "{notes}"
        );
        assert!(notes.contains("during update: 1 wait, 0.010 s"), "{notes}");
    }
}
