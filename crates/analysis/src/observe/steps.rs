//! The counters of each step of a run whose workload marks its steps (bulkload): one [`StepRow`]
//! per `step:<name>` snapshot, the delta from the snapshot that ended the step before.

use dbscope_core::observe::Snapshot;

use super::model::{sec, ObserveReport, StepRow};

/// How a step's snapshot label begins (`dbscope_lab::observe::STEP_PREFIX`).
const STEP_PREFIX: &str = "step:";

/// Fills `r.steps` from the run's snapshots, in order. The first step runs from the start
/// snapshot; periodic snapshots in between are passed over.
pub(super) fn step_rows(r: &mut ObserveReport, snaps: &[Snapshot]) {
    let mut from: Option<&Snapshot> = None;
    for s in snaps {
        let name = s.label.strip_prefix(STEP_PREFIX);
        match (name, from) {
            (Some(name), Some(prev)) => r.steps.push(row(name, &s.delta(prev))),
            // A step snapshot without a start before it (a torn file): no delta to make.
            (Some(_), None) => {}
            (None, _) if s.label != "start" => continue,
            (None, _) => {}
        }
        from = Some(s);
    }
    if !r.steps.is_empty() && r.target == "sqlite" {
        r.steps_note = Some(
            "SQLite does not count its temporary files (it unlinks them as it opens them, in \
             SQLITE_TMPDIR or memory by temp_store): no temp bytes per step; the page cache \
             figures are the sessions' sqlite3_db_status"
                .into(),
        );
    }
}

fn row(name: &str, d: &Snapshot) -> StepRow {
    let c = |section: &str, k: &str| sec(d, section).and_then(|s| s.counter(k));
    let g = |section: &str, k: &str| sec(d, section).and_then(|s| s.gauges.get(k).copied());
    StepRow {
        step: name.to_string(),
        seconds: d.span_ns.unwrap_or(0) as f64 / 1e9,
        blks_read: c("pg_stat_database", "blks_read"),
        blks_hit: c("pg_stat_database", "blks_hit"),
        temp_files: c("pg_stat_database", "temp_files"),
        temp_bytes: c("pg_stat_database", "temp_bytes"),
        wal_bytes: c("pg_stat_wal", "wal_bytes"),
        temp_dir_bytes: g("pg_ls_tmpdir", "temp_dir_bytes"),
        cache_hit: c("sqlite.db_status", "cache_hit"),
        cache_miss: c("sqlite.db_status", "cache_miss"),
        cache_write: c("sqlite.db_status", "cache_write"),
        cache_spill: c("sqlite.db_status", "cache_spill"),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use dbscope_core::observe::Section;

    use super::*;

    fn snap(label: &str, t_s: u64, temp_bytes: f64) -> Snapshot {
        let db = Section {
            counters: BTreeMap::from([("temp_bytes".to_string(), temp_bytes)]),
            ..Section::default()
        };
        Snapshot {
            label: label.into(),
            t_ns: t_s * 1_000_000_000,
            span_ns: None,
            sections: BTreeMap::from([("pg_stat_database".to_string(), db)]),
        }
    }

    #[test]
    fn each_step_is_the_delta_from_the_step_before_periodic_ones_passed_over() {
        let snaps = [
            snap("start", 0, 100.0),
            snap("periodic", 1, 150.0),
            snap("step:load", 2, 200.0),
            snap("step:group by #1", 5, 1200.0),
            snap("periodic", 6, 1300.0),
            snap("step:group by #2", 9, 3200.0),
            snap("end", 10, 3300.0),
        ];
        let mut r = ObserveReport {
            target: "postgres".into(),
            ..ObserveReport::default()
        };
        step_rows(&mut r, &snaps);
        let got: Vec<_> = r
            .steps
            .iter()
            .map(|s| (s.step.as_str(), s.seconds, s.temp_bytes))
            .collect();
        assert_eq!(
            got,
            [
                ("load", 2.0, Some(100.0)),
                ("group by #1", 3.0, Some(1000.0)),
                ("group by #2", 4.0, Some(2000.0)),
            ]
        );
        assert!(r.steps_note.is_none());
    }

    #[test]
    fn a_run_without_step_snapshots_has_no_steps() {
        let mut r = ObserveReport::default();
        step_rows(&mut r, &[snap("start", 0, 1.0), snap("end", 1, 2.0)]);
        assert!(r.steps.is_empty());
        step_rows(&mut r, &[snap("step:load", 0, 1.0)]);
        assert!(r.steps.is_empty(), "no start: nothing to subtract from");
    }
}
