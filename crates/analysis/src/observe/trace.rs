//! The section of an imported Oracle trace: its waits as the top timed events.

use super::model::{ObserveReport, TopEvents, TopRow};
use crate::summary::EventReport;

/// Oracle 10046 database calls (their time includes their waits); every other event is a wait.
const ORACLE_CALLS: [&str; 8] = [
    "PARSE",
    "EXEC",
    "FETCH",
    "CLOSE",
    "UNMAP",
    "SORT UNMAP",
    "LOBREAD",
    "LOBWRITE",
];

pub(super) fn from_trace(events: &[EventReport]) -> ObserveReport {
    let mut t = TopEvents {
        source: "trace waits (time = sum of the waits' ela)".into(),
        ..TopEvents::default()
    };
    let mut rows: Vec<TopRow> = events
        .iter()
        .filter(|e| !ORACLE_CALLS.iter().any(|c| e.name.eq_ignore_ascii_case(c)))
        .filter_map(|e| {
            let mean = e.summary_us.as_ref()?.mean;
            Some(TopRow {
                event: e.name.clone(),
                class: "Oracle wait".into(),
                samples: e.count,
                est_s: mean * e.count as f64 / 1e6,
                ..TopRow::default()
            })
        })
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
    rows.sort_by(|a, b| b.est_s.total_cmp(&a.est_s));
    t.rows = rows;
    ObserveReport {
        target: "oracle-trace".into(),
        wait_interface: true,
        notes: vec!["the wait profile of the imported trace: % of the total wait time (CPU is in the database calls, not shown here)".into()],
        top_events: Some(t),
        ..ObserveReport::default()
    }
}
