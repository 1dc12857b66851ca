//! Issue 34 item 8: the workloads name their tables, so a run's report has `pg_statio_user_tables`
//! rows for them, and bulkload's steps (load, GROUP BY twice) each get their counters from a
//! snapshot at the step's end — on the tests' real PostgreSQL and real SQLite files.

use serde_json::Value;

use crate::cli::*;
use crate::common::argv::Argv;
use crate::common::pg::PgCluster;

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

/// A lookup run's report lists its table's heap and index blocks (read + hit): each of the
/// `ops` lookups reads at least one index block and one heap block of it.
#[test]
fn issue_34_a_lookup_run_reports_its_tables_blocks() {
    let pg = PgCluster::shared();
    let db = pg.create_db("i34statio");
    let dir = tempdir();
    let ops = 1500u64;
    ok(
        dir.path(),
        &Argv::run("lookup")
            .target(pg.uri(&db))
            .rows(5000)
            .ops(ops)
            .sessions(2)
            .opt("--table", "i34_lookup")
            .out("r")
            .quiet()
            .args(),
    );
    let run = join(dir.path(), "r");
    let r = report_json(dir.path(), &run);
    let o = &r["observe"];
    assert!(
        o["missing"].get("pg_statio_user_tables").is_none(),
        "{}",
        o["missing"]
    );
    let tables = o["tables"].as_array().unwrap_or_else(|| panic!("{o}"));
    let t = tables
        .iter()
        .find(|t| t["table"] == "i34_lookup")
        .unwrap_or_else(|| panic!("no row for the lookup table: {tables:?}"));
    let heap = num(t, "heap_blks_read") + num(t, "heap_blks_hit");
    let idx = num(t, "idx_blks_read") + num(t, "idx_blks_hit");
    // --ops counts the lookups of all the sessions.
    let lookups = ops as f64;
    assert!(
        heap >= lookups,
        "{heap} heap blocks for {lookups} lookups: {t}"
    );
    assert!(
        idx >= lookups,
        "{idx} index blocks for {lookups} lookups: {t}"
    );
    let text = ok(dir.path(), &["report", s(&run)]);
    assert!(text.contains("Table I/O (pg_statio_user_tables"), "{text}");
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("i34_lookup "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(!line.contains(" - "), "heap and index figures both: {line}");
    assert!(!text.contains("the workload names no tables"), "{text}");
}

/// An events run (partitioned, on PostgreSQL) names its history, its partitions and its
/// last-value table.
#[test]
fn issue_34_an_events_run_names_its_tables() {
    let pg = PgCluster::shared();
    let db = pg.create_db("i34events");
    let dir = tempdir();
    ok(
        dir.path(),
        &Argv::run("events")
            .target(pg.uri(&db))
            .clients(2)
            .rate(50)
            .duration("1s")
            .strategy("partitioned")
            .out("r")
            .quiet()
            .args(),
    );
    let r = report_json(dir.path(), &join(dir.path(), "r"));
    let names: Vec<&str> = r["observe"]["tables"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", r["observe"]))
        .iter()
        .map(|t| t["table"].as_str().unwrap())
        .collect();
    for want in ["eventlastval", "events_history_p0", "events_history_p1"] {
        assert!(names.contains(&want), "{want} not in {names:?}");
    }
}

/// A bulkload run on PostgreSQL has a row per step, each the delta between the snapshots at the
/// steps' ends: the load of a logged table writes at least its rows' bytes of WAL and no temp
/// file; each GROUP BY with a 64 kB work_mem spills to temp files.
#[test]
fn issue_34_bulkload_reports_counters_per_step_on_postgres() {
    let pg = PgCluster::shared();
    let db = pg.create_db("i34steps");
    let dir = tempdir();
    let (rows, row_bytes) = (60_000u64, 64u64);
    ok(
        dir.path(),
        &Argv::run("bulkload")
            .target(pg.uri(&db))
            .rows(rows)
            .sessions(2)
            .opt("--row-bytes", row_bytes)
            .opt("--into", "logged")
            .opt("--table", "i34_bulk")
            .set("work_mem=64kB")
            .out("r")
            .quiet()
            .args(),
    );
    let run = join(dir.path(), "r");
    let r = report_json(dir.path(), &run);
    let o = &r["observe"];
    let steps = o["steps"].as_array().unwrap_or_else(|| panic!("{o}"));
    let names: Vec<&str> = steps.iter().map(|s| s["step"].as_str().unwrap()).collect();
    assert_eq!(names, ["load", "group by #1", "group by #2"], "{o}");
    let load = &steps[0];
    assert!(
        num(load, "wal_bytes") >= (rows * row_bytes) as f64,
        "the load writes its rows to the WAL: {load}"
    );
    assert_eq!(
        num(load, "temp_bytes"),
        0.0,
        "a COPY spills nothing: {load}"
    );
    for g in &steps[1..] {
        assert!(num(g, "temp_bytes") > 0.0, "work_mem 64kB: {g}");
        assert!(num(g, "temp_files") >= 1.0, "{g}");
        assert!(num(g, "seconds") > 0.0, "{g}");
    }
    assert!(
        o["tables"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["table"] == "i34_bulk")),
        "{o}"
    );
    let text = ok(dir.path(), &["report", s(&run)]);
    assert!(text.contains("Counters per step"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("group by #2 ")),
        "{text}"
    );
}

/// On SQLite the steps get the page cache counters, and the report says that SQLite cannot
/// count its temporary files.
#[test]
fn issue_34_bulkload_reports_counters_per_step_on_sqlite() {
    let dir = tempdir();
    let target = format!("sqlite:{}", s(&join(dir.path(), "b.db")));
    ok(
        dir.path(),
        &Argv::run("bulkload")
            .target(&target)
            .rows(20_000)
            .sessions(2)
            .opt("--into", "logged")
            .out("r")
            .quiet()
            .args(),
    );
    let run = join(dir.path(), "r");
    let r = report_json(dir.path(), &run);
    let o = &r["observe"];
    let steps = o["steps"].as_array().unwrap_or_else(|| panic!("{o}"));
    assert_eq!(steps.len(), 3, "{o}");
    assert!(
        num(&steps[0], "cache_write") > 0.0,
        "the load writes pages: {o}"
    );
    assert!(steps[0].get("temp_bytes").is_none(), "{o}");
    assert!(
        o["steps_note"]
            .as_str()
            .is_some_and(|n| n.contains("SQLite does not count its temporary files")),
        "{o}"
    );
}
